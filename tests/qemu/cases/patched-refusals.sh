#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=refusals timeout=150
# Patched 6.1: -o virtual_fsid is refused with EINVAL and exactly one kernel log line for a
# seed device (vdc), a filesystem with METADATA_UUID (vdd) and a multi-device raid1 (vdf+vdg);
# each still mounts without the option, so the refusal is the option's. A filesystem with an
# fsid change in progress (vde, CHANGING_FSID_V2 set by the harness) is not registered at all,
# with or without the option (EAGAIN and one line, as upstream 6.7). On a virtual_fsid mount of vda,
# device add, device remove and replace start are refused the same way; on a plain mount of
# the same filesystem device add works. Replace status and cancel are allowed on a virtual_fsid
# mount; `mount -o remount,virtual_fsid` is accepted there and refused (EINVAL, one line) on a
# plain mount, which stays as it was.
. /lib/guest-lib.sh
mkdir -p /a /m
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }

# one_line PATTERN WHAT: the kernel log since the mark has exactly one BTRFS line, matching PATTERN
one_line() {
	since >/tmp/new
	cat /tmp/new
	n=$(grep -c -- "$1" /tmp/new)
	[ "$n" -eq 1 ] || fail "$2: $n kernel log lines matching '$1', expected 1"
	n=$(grep -c BTRFS /tmp/new)
	[ "$n" -eq 1 ] || fail "$2: $n BTRFS lines in the kernel log, expected the one refusal line"
}

# refuse_mount DEV WHY: mount -o virtual_fsid DEV fails with EINVAL and logs the reason once
refuse_mount() {
	log "virtual_fsid on $1 ($2)"
	mark
	if mount -t btrfs -o virtual_fsid "$1" /m 2>/tmp/err; then
		umount /m
		fail "mount -o virtual_fsid $1 ($2) succeeded"
	fi
	cat /tmp/err
	grep -q 'Invalid argument' /tmp/err || fail "mount -o virtual_fsid $1: not EINVAL"
	grep -q " /m " /proc/self/mounts && fail "$1 mounted on /m after a refusal"
	one_line "BTRFS error: virtual_fsid refused for $1: $2\$" "$1"
}

# refuse_ioctl OP CMD...: CMD (a btrfs-progs call on the virtual_fsid mount /a) fails with EINVAL
refuse_ioctl() {
	op=$1
	shift
	log "$op on the virtual_fsid mount: $*"
	mark
	if "$@" >/tmp/err 2>&1; then
		cat /tmp/err
		fail "$op succeeded on a virtual_fsid mount: $*"
	fi
	cat /tmp/err
	grep -q 'Invalid argument' /tmp/err || fail "$op: not EINVAL"
	one_line "device $op not supported on a virtual_fsid mount" "$op"
}

refuse_mount /dev/vdc "seed device"
refuse_mount /dev/vdd "filesystem has a metadata_uuid"
# vde: a metadata_uuid change in progress (CHANGING_FSID_V2) is refused with the option; a
# plain mount of it works as on stock 6.1 (patched-fsid-change-mounts)
refuse_mount /dev/vde "metadata_uuid change in progress"
refuse_mount /dev/vdf "multi-device filesystem"

# controls: without the option the same filesystems mount
must mount -t btrfs -o ro /dev/vdc /m
must umount /m
must mount -t btrfs /dev/vdd /m
must umount /m
must btrfs device scan /dev/vdg
must mount -t btrfs /dev/vdf /m
must umount /m

must mount -t btrfs -o virtual_fsid /dev/vda /a
grep ' /a ' /proc/self/mounts | grep -q virtual_fsid || fail "/a is not a virtual_fsid mount"
refuse_ioctl add btrfs device add -f /dev/vdb /a
refuse_ioctl remove btrfs device remove 1 /a
refuse_ioctl replace btrfs replace start -B -f 1 /dev/vdb /a
log "replace status and cancel are not refused"
for c in "status -1" cancel; do
	mark
	btrfs replace $c /a >/tmp/err 2>&1
	cat /tmp/err
	grep -q 'Invalid argument' /tmp/err && fail "btrfs replace $c on a virtual_fsid mount: EINVAL"
	since | grep -q 'not supported on a virtual_fsid mount' && fail "btrfs replace $c was refused"
done
btrfs replace status -1 /a | grep -q "Never started" ||
	fail "btrfs replace status /a does not report 'Never started'"
log "remount with virtual_fsid: accepted on a virtual_fsid mount"
must mount -o remount,virtual_fsid /a
[ "$(btrfs filesystem show /a | grep -c 'devid ')" -eq 1 ] || fail "/a no longer has one device"
must umount /a
must btrfs check --readonly /dev/vda

# control: on a plain mount of the same filesystem, device add is not refused
must mount -t btrfs /dev/vda /a
log "remount,virtual_fsid of a plain mount: refused"
mark
if mount -o remount,virtual_fsid /a 2>/tmp/err; then fail "remount,virtual_fsid of a plain mount succeeded"; fi
cat /tmp/err
one_line "virtual_fsid cannot be set by a remount" "remount,virtual_fsid"
grep ' /a ' /proc/self/mounts | grep -q virtual_fsid && fail "/a shows virtual_fsid after the refused remount"
touch /a/still-writable || fail "/a not writable after the refused remount"
must btrfs device add -f /dev/vdb /a
[ "$(btrfs filesystem show /a | grep -c 'devid ')" -eq 2 ] || fail "device add on a plain mount did not add"
must umount /a
pass
