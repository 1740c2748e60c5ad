#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=refusals timeout=150
# Patched 6.1: a single-device filesystem whose metadata_uuid change was interrupted
# (CHANGING_FSID_V2 left set in the primary superblock and its first mirror, vde) is not
# registered by a non-mount scan (EAGAIN, one line), and mounts by name as on stock 6.1: the
# mount clears the flag, `btrfs check` is clean. Debian 12's btrfstune cannot finish it.
. /lib/guest-lib.sh
mkdir -p /m
v2() { dd if=/dev/vde bs=1 skip=$((65536 + 0x3c)) count=1 2>/dev/null | od -An -tu1 | tr -d ' '; }
b=$(v2); [ $((b & 16)) -ne 0 ] || fail "vde lacks CHANGING_FSID_V2 before the test (flags byte $b)"
n0=$(dmesg | wc -l)
log "non-mount scan of vde"
btrfs device scan /dev/vde && fail "btrfs device scan /dev/vde (CHANGING_FSID_V2) succeeded"
n=$(dmesg | tail -n +$((n0 + 1)) | grep -c "device /dev/vde has incomplete metadata_uuid change, not registered")
log "plain mount of vde by name"
mount -t btrfs /dev/vde /m 2>/tmp/err || { cat /tmp/err; fail "mount /dev/vde (interrupted btrfstune -m) failed; stock 6.1 mounts it"; }
[ "$n" -eq 1 ] || fail "$n 'incomplete metadata_uuid change' lines for the scan, expected 1"
must touch /m/written
must umount /m
b=$(v2); [ $((b & 16)) -eq 0 ] || fail "CHANGING_FSID_V2 still set after the mount (flags byte $b)"
must btrfs check --readonly /dev/vde
must btrfs device scan /dev/vde
must mount -t btrfs /dev/vde /m
[ -e /m/written ] || fail "the file written at the first mount is gone"
must umount /m
pass
