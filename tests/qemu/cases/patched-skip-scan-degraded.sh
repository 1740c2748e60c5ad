#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=raid1clone timeout=150 modparams='skip_scan=/dev/vdb'
# Patched 6.1: a raid1 (vda+vdb) mounted degraded without its listed member vdb; when vdb is
# scanned again, the scan records it in the mounted filesystem as stock does (path, MISSING
# cleared) instead of skipping it.
. /lib/guest-lib.sh
mkdir -p /a
must mount -t btrfs -o degraded,ro /dev/vda /a
btrfs filesystem show /a
btrfs filesystem show /a | grep -qi missing || fail "vdb is not missing after the degraded mount (setup)"
n0=$(dmesg | wc -l)
must btrfs device scan /dev/vdb
btrfs filesystem show /a
dmesg | tail -n +$((n0 + 1))
dmesg | tail -n +$((n0 + 1)) | grep -q "skip_scan: not registering /dev/vdb" &&
	fail "the scan of vdb, the member the degraded mount misses, was skipped"
btrfs filesystem show /a | grep -q "/dev/vdb" || fail "vdb is not recorded in the mounted filesystem"
btrfs filesystem show /a | grep -qi missing && fail "/a still has a missing device"
must umount /a
pass
