#!/bin/sh
# qemu-case: kernel=6.12 module=stock disks=clone2 timeout=180
# Stock 6.12 (upstream temp-fsid): both clones mount at once without any option.
. /lib/guest-lib.sh
mkdir -p /a /b
must mount /dev/vda /a
must mount /dev/vdb /b
[ -e /sys/fs/btrfs/features/temp_fsid ] || fail "no temp_fsid feature"
umount /b; umount /a
pass
