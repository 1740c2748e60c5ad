#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=refusals timeout=150 modparams='skip_scan=/dev/vda,/dev/vdb,/dev/vdc,/dev/vdf'
# Patched 6.1: BTRFS_IOC_DEVICES_READY (`btrfs device ready`, what udev's btrfs builtin asks to
# set ID_BTRFS_READY) of a skip_scan-listed device reads its superblock without registering it
# and answers "ready" only for a filesystem that needs no other device. vda: single-device,
# ready; vdf: one member of a two-device raid1, not ready (udev must wait: systemd would mount
# an incomplete filesystem); vdc: a seed device (a sprout needs it and more), not ready; vdb: no
# btrfs at all, an error. None of them is registered (BTRFS_IOC_FORGET_DEV fails with ENOENT).
# Control: unlisted, vdg (the other raid1 member) is registered and, with vdf still skipped,
# still not ready.
. /lib/guest-lib.sh
registered() { btrfs device scan --forget "$1" >>/tmp/forget.log 2>&1; }
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }

# ready DEV WANT: `btrfs device ready DEV` exits WANT (0 ready, 1 not ready or error)
ready() {
	mark
	btrfs device ready "$1" >/tmp/ready.out 2>&1
	rc=$?
	cat /tmp/ready.out
	since
	[ "$rc" = "$2" ] || fail "btrfs device ready $1 ($3): exit $rc, expected $2"
	since | grep -q "skip_scan: not registering $1" || fail "ready $1: no skip_scan log line"
	if registered "$1"; then fail "ready $1 registered it although it is listed"; fi
}

ready /dev/vda 0 "single device"
ready /dev/vdf 1 "raid1 member"
ready /dev/vdc 1 "seed device"
ready /dev/vdb 1 "no btrfs"
grep -q 'unable to determine' /tmp/ready.out || fail "ready /dev/vdb: no error reported"

log "control: the unlisted raid1 member"
must btrfs device scan /dev/vdg
if btrfs device ready /dev/vdg; then fail "vdg reported ready while vdf is skipped"; fi
registered /dev/vdg || fail "unlisted vdg is not registered"
log "control: vda, once unlisted, is ready and registered"
echo >/sys/module/btrfs/parameters/skip_scan
must btrfs device ready /dev/vda
registered /dev/vda || fail "unlisted vda is not registered after device ready"
pass
