#!/bin/sh
# qemu-case: kernel=6.1 module=stock disks=refusals timeout=150
# Stock 6.1, the reference for patched-fsid-change-mounts: a single-device filesystem with
# CHANGING_FSID_V2 left set (an interrupted `btrfstune -m`, vde) mounts by name and the mount
# clears the flag; Debian 12's btrfstune cannot finish the change, so this is its only recovery.
# A non-mount scan registers it (the series refuses that scan).
. /lib/guest-lib.sh
mkdir -p /m
v2() { dd if=/dev/vde bs=1 skip=$((65536 + 0x3c)) count=1 2>/dev/null | od -An -tu1 | tr -d ' '; }
b=$(v2); [ $((b & 16)) -ne 0 ] || fail "vde lacks CHANGING_FSID_V2 before the test (flags byte $b)"
must btrfs device scan /dev/vde
must btrfs device scan --forget /dev/vde
must mount -t btrfs /dev/vde /m
must touch /m/written
must umount /m
b=$(v2); [ $((b & 16)) -eq 0 ] || fail "CHANGING_FSID_V2 still set after the mount (flags byte $b)"
must btrfs check --readonly /dev/vde
pass
