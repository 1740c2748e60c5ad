#!/bin/sh
# qemu-case: kernel=6.1 module=stock disks=clone2 timeout=120
# Stock 6.1: after slot A was written (higher generation), a scan of A makes the lower-generation
# slot B unmountable ("already registered with a higher generation", EEXIST) until it is forgotten.
. /lib/guest-lib.sh
mkdir -p /a /b
must mount /dev/vda /a
echo data >/a/f
must sync
must umount /a
must btrfs device scan /dev/vda
must_fail mount /dev/vdb /b
dmesg | grep -q 'already registered with a higher generation' || fail "no generation line in dmesg"
must btrfs device scan --forget
must mount /dev/vdb /b
umount /b
pass
