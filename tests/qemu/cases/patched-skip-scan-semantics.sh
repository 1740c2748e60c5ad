#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=150 modparams='skip_scan=/dev/vdb'
# Patched 6.1, the skip_scan parameter:
#  - given at insmod (modparams above) it reads back; the sysfs file is 0644 and writable;
#  - BTRFS_IOC_SCAN_DEV (`btrfs device scan DEV`) and BTRFS_IOC_DEVICES_READY (`btrfs device
#    ready DEV`) of a listed device return 0, log one line, and register nothing;
#  - matching is by device identity: a listed symlink matches a scan of the node, a listed node
#    matches a scan through another node with the same major:minor, and vice versa; an unlisted
#    device is still registered; a path listed before it exists matches once it does; a listed
#    path the kernel cannot resolve (node on a nodev tmpfs, no such file) fails as on stock;
#  - a mount of a listed device still scans and mounts it;
#  - bad values are refused with EINVAL, one log line, and the previous list kept: empty
#    entries ("/a,,/b", ",", "a,,b"), relative paths, a value over 4095 bytes, an entry over
#    BTRFS_PATH_NAME_MAX (4087); the limits themselves are accepted, also a 4095-byte value with
#    the newline echo adds; a newline clears the list;
#  - the "not registering" line is rate limited (40 scans in a row log fewer than 40 lines).
# "Registered" is probed with BTRFS_IOC_FORGET_DEV (`btrfs device scan --forget DEV`), which fails
# with ENOENT for an unregistered device: /sys/fs/btrfs shows only mounted filesystems, and
# `btrfs filesystem show` probes the disks itself.
. /lib/guest-lib.sh
P=/sys/module/btrfs/parameters/skip_scan
mkdir -p /b /nd
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }
registered() { btrfs device scan --forget "$1" >>/tmp/forget.log 2>&1; }
# setp VALUE: write VALUE (no newline added) with one write(2); exit status of the write
setp() { printf '%s' "$1" >/tmp/v; dd if=/tmp/v of=$P bs=16384 count=1 2>/tmp/setp.err; }
str() { head -c "$1" /dev/zero | tr '\0' "$2"; }
majmin() { cat /sys/class/block/$1/dev | tr : ' '; }

# skipped DEV LISTED [CMD]: CMD (scan, default) of DEV returns 0, logs one line, registers nothing
skipped() {
	sleep 0.6	# the line is rate limited (10 per 5 s): stay below it
	mark
	if [ "${3:-scan}" = ready ]; then
		btrfs device ready "$1" || fail "btrfs device ready $1 (listed as $2): exit $?"
	else
		btrfs device scan "$1" || fail "btrfs device scan $1 (listed as $2): exit $?"
	fi
	since >/tmp/new
	cat /tmp/new
	n=$(grep -c "BTRFS info: skip_scan: not registering $1 (listed as $2)" /tmp/new)
	[ "$n" -eq 1 ] || fail "${3:-scan} $1: $n 'not registering $1 (listed as $2)' lines, expected 1"
	n=$(grep -c BTRFS /tmp/new)
	[ "$n" -eq 1 ] || fail "${3:-scan} $1: $n BTRFS lines, expected 1"
	if registered "$1"; then fail "${3:-scan} of $1 registered it although $2 is listed"; fi
}

# refused VALUE WHAT: writing VALUE fails with EINVAL, one log line, the list stays
refused() {
	before=$(cat $P)
	mark
	if setp "$1"; then fail "skip_scan accepted $2"; fi
	grep -q 'Invalid argument' /tmp/setp.err || { cat /tmp/setp.err; fail "$2: not EINVAL"; }
	since >/tmp/new
	cat /tmp/new
	n=$(grep -c 'BTRFS error: skip_scan: .*list unchanged' /tmp/new)
	[ "$n" -eq 1 ] || fail "$2: $n refusal lines, expected 1"
	[ "$(cat $P)" = "$before" ] || fail "$2 replaced the list: now '$(cat $P | head -c 80)'"
}

log "insmod parameter"
[ "$(cat $P)" = /dev/vdb ] || fail "skip_scan from insmod reads '$(cat $P)'"
[ "$(stat -c %a $P)" = 644 ] || fail "$P mode $(stat -c %a $P), expected 644"

log "the probe: an unlisted device is registered by a scan, and forgotten once"
must btrfs device scan /dev/vda
registered /dev/vda || fail "probe: scanned vda is not registered"
if registered /dev/vda; then fail "probe: vda still registered after --forget"; fi

log "listed device: scan and ready return 0 and register nothing"
skipped /dev/vdb /dev/vdb
skipped /dev/vdb /dev/vdb ready

log "runtime list"
must setp /dev/vda,/dev/vdb
[ "$(cat $P)" = /dev/vda,/dev/vdb ] || fail "readback '$(cat $P)'"
skipped /dev/vda /dev/vda
skipped /dev/vdb /dev/vdb

log "identity: symlink, second node, not-yet-present path, string fallback"
ln -s /dev/vdb /dev/slot-b
must mknod /dev/alias-b b $(majmin vdb)
must setp /dev/slot-b
skipped /dev/vdb /dev/slot-b
must setp /dev/alias-b
skipped /dev/vdb /dev/alias-b
must setp /dev/vdb
skipped /dev/alias-b /dev/vdb
# an unlisted device next to a listed one is registered
must setp /dev/vda
must btrfs device scan /dev/vdb
registered /dev/vdb || fail "unlisted vdb not registered while only vda is listed"
# listed before the node exists
must setp /dev/late-b
must mknod /dev/late-b b $(majmin vdb)
skipped /dev/late-b /dev/late-b
must setp /dev/vdb
skipped /dev/late-b /dev/vdb
# a listed path that is no block device the kernel can look up (a node on a nodev mount, a
# path that does not exist) is scanned as without the list: it fails as on stock, not skipped
must mount -t tmpfs -o nodev nd /nd
must mknod /nd/b b $(majmin vdb)
for p in /nd/b /dev/does-not-exist; do
	must setp $p
	sleep 0.6
	mark
	if btrfs device scan $p; then
		since
		fail "scan of the listed $p succeeded: it is no block device (stock fails)"
	fi
	since | grep -q 'skip_scan: not registering' && fail "scan of the listed $p was skipped"
done
must setp /dev/vdb
mark
if btrfs device scan /nd/b; then
	since
	fail "scan of /nd/b (nodev) succeeded while only /dev/vdb is listed: matched without a lookup?"
fi
since | grep -q 'skip_scan: not registering' && fail "/nd/b matched /dev/vdb without a device lookup"

log "mount-time scans are not skipped"
must setp /dev/vdb
must mount -t btrfs /dev/vdb /b
must umount /b
must btrfs device scan --forget

log "bad values"
must setp /dev/vda,/dev/vdb
refused "/dev/vda,,/dev/vdb" "an empty entry"
refused "," "two empty entries"
refused "a,,b" "relative entries with an empty one"
refused "dev/vdb" "a relative path"
refused "/dev/vda,vdb" "a relative second entry"
refused "/dev/vda," "a trailing empty entry"
long=$(str 4095 a)
refused "/$long,/dev/vda" "a value over 4095 bytes"
refused "/$(str 4087 a)" "a 4088-byte entry (over BTRFS_PATH_NAME_MAX)"
e4087="/$(str 4086 a)"
must setp "$e4087"
[ "$(cat $P)" = "$e4087" ] || fail "4087-byte entry not read back"
v4095="/$(str 2046 a),/$(str 2046 b)"
[ ${#v4095} -eq 4095 ] || fail "test bug: ${#v4095}"
must setp "$v4095"
[ "$(cat $P)" = "$v4095" ] || fail "4095-byte value not read back"
refused "${v4095}c" "a 4096-byte value"
# what `echo` writes: the 4095-byte value and a newline (4096 bytes in one write)
must setp /dev/vda
must sh -c "echo '$v4095' >$P"
[ "$(cat $P)" = "$v4095" ] || fail "4095-byte value with echo's newline not taken"
must setp /dev/vda
# clearing: a lone newline (what `echo >FILE` writes) clears
must sh -c "echo >$P"
[ -z "$(cat $P)" ] || fail "newline did not clear the list: '$(cat $P)'"
must btrfs device scan /dev/vda
registered /dev/vda || fail "vda not registered after the list was cleared"
log "the skip line is rate limited"
must setp /dev/vdb
sleep 6
mark
i=0
while [ $i -lt 40 ]; do btrfs device scan /dev/vdb >/dev/null || fail "scan $i"; i=$((i + 1)); done
n=$(since | grep -c 'skip_scan: not registering /dev/vdb')
log "40 skipped scans: $n log lines"
# 10 lines per 5 s (btrfs_info_rl): fewer lines than scans unless the loop took over 20 s
[ "$n" -ge 1 ] && [ "$n" -lt 40 ] || fail "40 skipped scans logged $n lines: not rate limited"
# zero-byte write: sysfs never calls the parameter's setter for it (reported, not asserted)
must setp /dev/vda
: >$P
log "note: after an open(O_TRUNC) without write(2) the list reads '$(cat $P)'"
pass
