#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos timeout=150
# Patched 6.1 (issue 19, bug 6): a starred whole-disk skip_scan entry (`/dev/vda*`) covers the
# disk and its partitions, so one entry keeps every partition of an untrusted disk from being
# registered; a bare whole-disk entry (`/dev/vda`) names that one device only. The udev helper
# lists a bare disk that carries a stale whole-disk superblock beside its GPT partitions
# (`skip partitioned-disk`, tests/qemu/udev/cases/stale-whole-disk.sh); its partitions, e.g. the
# internal rootfs, must still be registered and answer ready. Disk (layout steamos, one GPT disk
# vda): vda2 rootfs-A, vda3 rootfs-B (clone of A), vda6 home.
#  - `/dev/vda*`: scans and ready of vda, vda2, vda3 and vda6 are skipped ("listed as
#    /dev/vda*") and register nothing (v3 compared the entry with the partition only);
#  - `/dev/vda`: scans of vda are skipped, vda2, vda3 and vda6 are registered by a scan and by
#    ready, which answers ready (the v4 patch 11 made every whole-disk entry cover them);
#  - `/dev/vda3` covers neither vda2 nor vda6; a '*' inside a path is refused.
. /lib/guest-lib.sh
P=/sys/module/btrfs/parameters/skip_scan
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }
# registered DEV: DEV is registered (BTRFS_IOC_FORGET_DEV finds it; forgets it too)
registered() { btrfs device scan --forget "$1" >/dev/null 2>&1; }
# skipped_lines DEV ENTRY: how many 'not registering DEV (listed as ENTRY)' lines since mark
skipped_lines() { since | grep -cF "skip_scan: not registering $1 (listed as $2)"; }

log "'/dev/vda*' covers the disk and its partitions"
echo '/dev/vda*' >$P || fail "cannot set skip_scan to '/dev/vda*'"
for p in vda2 vda3 vda6; do
	mark
	btrfs device scan /dev/$p || fail "btrfs device scan /dev/$p: exit $?"
	btrfs device ready /dev/$p || fail "btrfs device ready /dev/$p (single device): exit $?"
	since
	registered /dev/$p && fail "/dev/$p was registered although its disk is listed as /dev/vda*"
	n=$(skipped_lines /dev/$p '/dev/vda*')
	[ "$n" -eq 2 ] || fail "$n 'not registering /dev/$p (listed as /dev/vda*)' lines, expected 2"
done
mark
btrfs device scan /dev/vda || fail "btrfs device scan /dev/vda (listed as /dev/vda*): exit $?"
n=$(skipped_lines /dev/vda '/dev/vda*')
[ "$n" -eq 1 ] || fail "$n 'not registering /dev/vda (listed as /dev/vda*)' lines, expected 1"

log "bare '/dev/vda' names the disk only: its partitions are registered and ready"
echo /dev/vda >$P || fail "cannot set skip_scan to /dev/vda"
for p in vda2 vda3 vda6; do
	mark
	btrfs device scan /dev/$p || fail "btrfs device scan /dev/$p (disk listed bare): exit $?"
	registered /dev/$p || fail "/dev/$p not registered by a scan although only its disk /dev/vda is listed"
	btrfs device ready /dev/$p || fail "btrfs device ready /dev/$p (disk listed bare): exit $?, expected 0 (ready)"
	registered /dev/$p || fail "/dev/$p not registered by ready although only its disk /dev/vda is listed"
	since
	since | grep -q "skip_scan: not registering /dev/$p " &&
		fail "/dev/$p skipped although only its disk /dev/vda is listed"
done
mark
btrfs device scan /dev/vda || fail "btrfs device scan /dev/vda (listed): exit $?"
n=$(skipped_lines /dev/vda /dev/vda)
[ "$n" -eq 1 ] || fail "$n 'not registering /dev/vda (listed as /dev/vda)' lines, expected 1"

log "control: /dev/vda3 listed covers neither vda2 nor vda6"
echo /dev/vda3 >$P || fail "cannot set skip_scan"
must btrfs device scan /dev/vda2
must btrfs device scan /dev/vda6
registered /dev/vda2 || fail "/dev/vda2 not registered with only /dev/vda3 listed"
registered /dev/vda6 || fail "/dev/vda6 not registered with only /dev/vda3 listed"
must btrfs device scan /dev/vda3
registered /dev/vda3 && fail "/dev/vda3 registered although listed"

log "a '*' other than at the end of a path is refused, the list stays"
for bad in '/dev/vd*a' '/dev/vda**' '/dev/vda*,/dev/v*db'; do
	mark
	sh -c "echo '$bad' >$P" 2>/dev/null && fail "skip_scan accepted '$bad'"
	since | grep -q "skip_scan: invalid entry .*'\\*' other than at the end" ||
		fail "no 'other than at the end' line for '$bad'"
	[ "$(cat $P)" = /dev/vda3 ] || fail "list changed by the refused '$bad': $(cat $P)"
done
pass
