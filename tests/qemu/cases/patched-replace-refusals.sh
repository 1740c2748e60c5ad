#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=replace timeout=400 kmods='dm-mod dm-flakey' bins='dmsetup'
# Patched 6.1: -o virtual_fsid is refused, with EINVAL and its log line, for both devices of an
# interrupted device replace: the target, whose superblock carries devid 0 ("target of an
# unfinished device replace", one BTRFS line), and the source, whose dev_replace item is still
# STARTED ("a device replace is not finished, mount without it"), with and without degraded
# (which lets stock 6.1 mount without the target); then the replace continued by a plain mount and
# that mount unmounted while the copy runs (the item written SUSPENDED): the source again. The
# interruption is a power cut made as fstests makes one: vda and vdb under dm-flakey, the replace running (QEMU throttles
# vdb's writes, so the copy lasts), then both tables switched to drop_writes; the replace goes on
# in memory, nothing more reaches the disks. Controls: without the option vda mounts and the
# replace continues ("continuing dev_replace"); once cancelled, vda mounts -o virtual_fsid.
. /lib/guest-lib.sh
export DM_DISABLE_UDEV=1
mkdir -p /a /m
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }

# flakey DEV up|drop: a dm-flakey table over all of DEV, writes passed or dropped
flakey() {
	sz=$(blockdev --getsz "$1")
	case $2 in
	up) echo "0 $sz flakey $1 0 180 0" ;;
	drop) echo "0 $sz flakey $1 0 0 180 1 drop_writes" ;;
	esac
}

must dmsetup create src --noudevsync --table "$(flakey /dev/vda up)"
must dmsetup create tgt --noudevsync --table "$(flakey /dev/vdb up)"
must mount -t btrfs /dev/mapper/src /a
log "replace start devid 1 -> /dev/mapper/tgt (runs in the background)"
must btrfs replace start -f 1 /dev/mapper/tgt /a
# the replace is committed (item STARTED, the target's superblock written) before the copy
# starts: wait until the target shows a btrfs superblock with devid 0, then a little longer
i=0
until btrfs inspect-internal dump-super /dev/mapper/tgt 2>/dev/null | grep -q '^dev_item.devid[[:space:]]*0$'; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "the replace target never got a superblock with devid 0"
	sleep 0.2
done
sleep 2
btrfs replace status -1 /a >/tmp/st 2>&1
cat /tmp/st
grep -q '% done' /tmp/st || fail "the replace is not running when the power is cut: $(cat /tmp/st)"
log "power cut: both devices drop every write from now on"
for d in src tgt; do must dmsetup suspend --nolockfs --noudevsync $d; done
must dmsetup load src --table "$(flakey /dev/vda drop)"
must dmsetup load tgt --table "$(flakey /dev/vdb drop)"
for d in src tgt; do must dmsetup resume --noudevsync $d; done
btrfs replace status /a >/tmp/st 2>&1   # until the in-memory replace ends
cat /tmp/st
must umount /a
must dmsetup remove --noudevsync src
must dmsetup remove --noudevsync tgt
must btrfs device scan --forget
btrfs inspect-internal dump-super /dev/vdb >/tmp/sb 2>&1
grep -E '^(fsid|generation|dev_item.devid|num_devices)' /tmp/sb
grep -q '^dev_item.devid[[:space:]]*0$' /tmp/sb || fail "vdb's superblock does not have devid 0"
btrfs inspect-internal dump-tree -t dev /dev/vda 2>&1 | grep -A2 DEV_REPLACE

log "virtual_fsid on the replace target /dev/vdb"
mark
if mount -t btrfs -o virtual_fsid /dev/vdb /m 2>/tmp/err; then
	umount /m
	fail "mount -o virtual_fsid /dev/vdb (replace target, devid 0) succeeded"
fi
cat /tmp/err
since >/tmp/new
cat /tmp/new
grep -q 'Invalid argument' /tmp/err || fail "mount -o virtual_fsid /dev/vdb: not EINVAL"
n=$(grep -c 'BTRFS error: virtual_fsid refused for /dev/vdb: target of an unfinished device replace$' /tmp/new)
[ "$n" -eq 1 ] || fail "vdb: $n 'target of an unfinished device replace' lines, expected 1"
n=$(grep -c BTRFS /tmp/new)
[ "$n" -eq 1 ] || fail "vdb: $n BTRFS lines in the kernel log, expected the one refusal line"

log "virtual_fsid,degraded on the replace source /dev/vda (replace item not finished)"
# with degraded, stock 6.1 lets a mount go on without the replace target (the check that it is
# missing is skipped): still refused
mark
if mount -t btrfs -o virtual_fsid,degraded /dev/vda /m 2>/tmp/err; then
	umount /m
	fail "mount -o virtual_fsid,degraded /dev/vda (source of an unfinished replace) succeeded"
fi
cat /tmp/err
since >/tmp/new
cat /tmp/new
n=$(grep -c 'virtual_fsid refused: a device replace is not finished, mount without it$' /tmp/new)
[ "$n" -eq 1 ] || fail "vda, degraded: $n 'device replace is not finished' lines, expected 1"
grep -q " /m " /proc/self/mounts && fail "/dev/vda mounted on /m after a refusal"

log "virtual_fsid on the replace source /dev/vda (replace item not finished), without degraded"
mark
if mount -t btrfs -o virtual_fsid /dev/vda /m 2>/tmp/err; then
	umount /m
	fail "mount -o virtual_fsid /dev/vda (source of an unfinished replace) succeeded"
fi
cat /tmp/err
since >/tmp/new
cat /tmp/new
grep -q " /m " /proc/self/mounts && fail "/dev/vda mounted on /m after a refusal"
grep -q 'Invalid argument' /tmp/err || fail "mount -o virtual_fsid /dev/vda: not EINVAL"
n=$(grep -c 'virtual_fsid refused: a device replace is not finished, mount without it$' /tmp/new)
[ "$n" -eq 1 ] || fail "vda: $n 'device replace is not finished' lines, expected 1"

log "control: without the option the replace continues"
must btrfs device scan /dev/vdb
mark
must mount -t btrfs /dev/vda /a
sleep 1
since | grep -q 'continuing dev_replace' || fail "no 'continuing dev_replace' line: the replace was not unfinished"
btrfs replace status -1 /a >/tmp/st 2>&1
cat /tmp/st
grep -q '% done' /tmp/st || fail "the continued replace is not running: $(cat /tmp/st)"
# unmounted while its kernel thread copies, the replace is suspended: its item is written SUSPENDED
# (the other unfinished state the option refuses)
log "unmount during the continued replace (item SUSPENDED), then virtual_fsid on /dev/vda"
must umount /a
must btrfs device scan --forget
mark
if mount -t btrfs -o virtual_fsid /dev/vda /m 2>/tmp/err; then
	umount /m
	fail "mount -o virtual_fsid /dev/vda (source of a suspended replace) succeeded"
fi
cat /tmp/err
since >/tmp/new
cat /tmp/new
grep -q 'Invalid argument' /tmp/err || fail "mount -o virtual_fsid /dev/vda, suspended: not EINVAL"
n=$(grep -c 'virtual_fsid refused: a device replace is not finished, mount without it$' /tmp/new)
[ "$n" -eq 1 ] || fail "vda, suspended: $n 'device replace is not finished' lines, expected 1"
must btrfs device scan /dev/vdb
mark
must mount -t btrfs /dev/vda /a
sleep 1
since | grep -q 'continuing dev_replace' || fail "no 'continuing dev_replace' line after the suspend"
must btrfs replace cancel /a
must umount /a
must btrfs check --readonly /dev/vda
must btrfs device scan --forget
log "control: with the replace cancelled, -o virtual_fsid mounts vda"
must mount -t btrfs -o virtual_fsid /dev/vda /m
grep ' /m ' /proc/self/mounts | grep -q virtual_fsid || fail "/m is not a virtual_fsid mount"
must umount /m
pass
