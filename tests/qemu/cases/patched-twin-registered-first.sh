#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=150
# Patched 6.1, the order udev produces: both clones registered by scans first, then vda
# mounted -o virtual_fsid and vdb plainly. The plain mount is refused (EEXIST, one line), as
# on stock; vdb mounts with the option.
. /lib/guest-lib.sh
mkdir -p /a /b
must btrfs device scan /dev/vda
must btrfs device scan /dev/vdb
must mount -t btrfs -o virtual_fsid /dev/vda /a
n0=$(dmesg | wc -l)
if mount -t btrfs /dev/vdb /b 2>/tmp/err; then
	umount /b
	fail "plain mount of vdb (registered first) while vda is mounted with virtual_fsid succeeded"
fi
cat /tmp/err
grep -q 'File exists' /tmp/err || fail "plain mount of vdb: not EEXIST"
n=$(dmesg | tail -n +$((n0 + 1)) | grep -c "device /dev/vdb is devid 1 of the mounted virtual_fsid filesystem")
[ "$n" -eq 1 ] || fail "$n refusal lines for vdb, expected 1"
must mount -t btrfs -o virtual_fsid /dev/vdb /b
must umount /b
must umount /a
must btrfs check --readonly /dev/vda
must btrfs check --readonly /dev/vdb
pass
