#!/bin/sh
# qemu-case: kernel=6.1 module=stock disks=clone2 timeout=120
# Stock 6.1: the second byte-identical clone cannot be mounted while the first is.
. /lib/guest-lib.sh
mkdir -p /a /b
must mount /dev/vda /a
must_fail mount /dev/vdb /b
dmesg | grep -q 'duplicate device /dev/vdb' || fail "no 'duplicate device' line in dmesg"
umount /a
pass
