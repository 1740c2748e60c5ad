#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=180
# Patched 6.1: both clones mount with virtual_fsid, the disk keeps its fsid, the same device
# mounted again joins the instance, and a listed device is not registered by a scan.
. /lib/guest-lib.sh
fsid=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a01
mkdir -p /a /b /c
[ -e /sys/fs/btrfs/features/virtual_fsid ] || fail "no virtual_fsid feature"
must mount -o virtual_fsid /dev/vda /a
must mount -o virtual_fsid /dev/vdb /b
[ "$(raw_fsid /dev/vda)" = $fsid ] || fail "on-disk fsid of vda changed while mounted"
must mount -o virtual_fsid /dev/vda /c
echo joined >/a/file
must sync
[ "$(cat /c/file)" = joined ] || fail "second mount of vda is a separate instance"
must umount /c; must umount /b; must umount /a
must btrfs check /dev/vda
[ "$(raw_fsid /dev/vdb)" = $fsid ] || fail "on-disk fsid of vdb changed"
must btrfs device scan --forget
echo /dev/vdb >/sys/module/btrfs/parameters/skip_scan || fail "skip_scan not writable"
[ "$(cat /sys/module/btrfs/parameters/skip_scan)" = /dev/vdb ] || fail "skip_scan readback"
must btrfs device scan /dev/vdb
# registered? BTRFS_IOC_FORGET_DEV fails (ENOENT) for a device the kernel does not know.
# (`btrfs filesystem show` probes the disks itself and can't tell.)
if btrfs device scan --forget /dev/vdb; then fail "listed device was registered"; fi
dmesg | grep -q 'skip_scan: not registering /dev/vdb' || fail "no skip_scan log line"
must_fail sh -c 'echo relative >/sys/module/btrfs/parameters/skip_scan'
[ "$(cat /sys/module/btrfs/parameters/skip_scan)" = /dev/vdb ] || fail "bad value replaced the list"
pass
