#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=180 modparams='skip_scan=/dev/vda'
# Patched 6.1: vda is a seed (listed in skip_scan), vdc its sprout. While the sprout is mounted
# a scan of the listed seed is not skipped (it is open in the sprout): it answers ready (0, as
# stock) and does not forget the seed's registration, so the sprout mounts again.
. /lib/guest-lib.sh
mkdir -p /a /s
must btrfstune -S 1 /dev/vda
must mount -t btrfs -o ro,device=/dev/vda /dev/vda /a
must btrfs device add -f /dev/vdc /a
must umount /a
must mount -t btrfs -o device=/dev/vda /dev/vdc /s
must touch /s/sprout-file
n0=$(dmesg | wc -l)
must btrfs device scan /dev/vda
btrfs device ready /dev/vda; rc=$?
dmesg | tail -n +$((n0 + 1))
[ "$rc" -eq 0 ] || fail "btrfs device ready of the listed seed of the mounted sprout: exit $rc, expected 0"
dmesg | tail -n +$((n0 + 1)) | grep -q "skip_scan: not registering /dev/vda" &&
	fail "the scan of the seed of the mounted sprout was skipped"
must umount /s
mount -t btrfs /dev/vdc /s 2>/tmp/err || { cat /tmp/err; fail "the sprout does not mount again: its seed's registration was freed"; }
[ -e /s/sprout-file ] || fail "the sprout's file is gone"
must umount /s
pass
