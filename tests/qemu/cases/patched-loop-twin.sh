#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=single timeout=150 kmods='loop'
# Patched 6.1: one storage under two device numbers (loop0 and loop1 over vda). With loop0
# mounted -o virtual_fsid, a plain mount of loop1 is refused with EEXIST (stock 6.1 refuses the
# second plain mount the same way) and one line; `btrfs check` is clean afterwards.
. /lib/guest-lib.sh
mkdir -p /a /b
must losetup /dev/loop0 /dev/vda
must losetup /dev/loop1 /dev/vda
must mount -t btrfs -o virtual_fsid /dev/loop0 /a
n0=$(dmesg | wc -l)
if mount -t btrfs /dev/loop1 /b 2>/tmp/err; then
	umount /b
	fail "plain mount of /dev/loop1 (the storage of the virtual_fsid mount /a) succeeded"
fi
cat /tmp/err
grep -q 'File exists' /tmp/err || fail "plain mount of loop1: not EEXIST"
n=$(dmesg | tail -n +$((n0 + 1)) | grep -c "device /dev/loop1 is devid 1 of the mounted virtual_fsid filesystem")
[ "$n" -eq 1 ] || fail "$n refusal lines for loop1, expected 1"
must dd if=/dev/zero of=/a/data bs=1M count=8
must sync
must umount /a
must losetup -d /dev/loop0
must losetup -d /dev/loop1
must btrfs check --readonly /dev/vda
pass
