#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos timeout=150
# Patched 6.1 (issue 19, bug 6): a whole-disk skip_scan entry covers the disk's partitions, so
# one entry keeps every partition of an untrusted disk from being registered. Disk (layout
# steamos, one GPT disk vda): vda2 rootfs-A, vda3 rootfs-B (clone of A), vda6 home.
# With `/dev/vda` listed, scans and ready of vda2, vda3 and vda6 are skipped ("listed as
# /dev/vda") and register nothing; v3 compared the entry with the partition only and
# registered them. A partition entry does not cover its disk's other partitions (control).
. /lib/guest-lib.sh
P=/sys/module/btrfs/parameters/skip_scan
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }
# registered DEV: DEV is registered (BTRFS_IOC_FORGET_DEV finds it; forgets it too)
registered() { btrfs device scan --forget "$1" >/dev/null 2>&1; }

echo /dev/vda >$P || fail "cannot set skip_scan"
for p in vda2 vda3 vda6; do
	mark
	btrfs device scan /dev/$p || fail "btrfs device scan /dev/$p: exit $?"
	btrfs device ready /dev/$p || fail "btrfs device ready /dev/$p (single device): exit $?"
	since
	registered /dev/$p && fail "/dev/$p was registered although its disk /dev/vda is listed"
	n=$(since | grep -c "skip_scan: not registering /dev/$p (listed as /dev/vda)")
	[ "$n" -eq 2 ] || fail "$n 'not registering /dev/$p (listed as /dev/vda)' lines, expected 2"
done
log "control: /dev/vda3 listed covers neither vda2 nor vda6"
echo /dev/vda3 >$P || fail "cannot set skip_scan"
must btrfs device scan /dev/vda2
must btrfs device scan /dev/vda6
registered /dev/vda2 || fail "/dev/vda2 not registered with only /dev/vda3 listed"
registered /dev/vda6 || fail "/dev/vda6 not registered with only /dev/vda3 listed"
must btrfs device scan /dev/vda3
registered /dev/vda3 && fail "/dev/vda3 registered although listed"
pass
