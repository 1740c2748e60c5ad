#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=150
# Patched 6.1: the same block device mounted again (second mount point, -o subvol=, a bind
# mount) joins the mounted instance: first mount with virtual_fsid and the others without it,
# and all plain. The twin clone vdb, mounted next to it (plain in one round, virtual_fsid in
# the other), stays a separate instance. One rule for the option on a filesystem mounted
# without it (issue 19, bug 4): `mount -o virtual_fsid` of a device open in a plain mount is
# refused (EINVAL, one line), as `mount -o remount,virtual_fsid` of that mount is; v3 joined
# and logged "virtual_fsid ignored". A plain mount of the twin while vda is mounted with
# virtual_fsid is refused with EEXIST (the pair could be one storage under two device numbers). Proof: one st_dev per instance (and per subvolume), the /sys/fs/btrfs entry count,
# files written through each mount are visible through the others and after a remount, and
# `btrfs check` is clean afterwards.
. /lib/guest-lib.sh
mkdir -p /a /b /s /bind /v
QFSID=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a01
ninst() { ls /sys/fs/btrfs | grep -c -- '-'; }
dev() { stat -c %d "$1"; }
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }

# a subvolume to mount with -o subvol=, created with a plain mount
must mount -t btrfs /dev/vda /a
must btrfs subvolume create /a/sv
must umount /a

# round OPT_FIRST OPT_AGAIN OPT_TWIN
round() {
	o1=$1 o2=$2 ot=$3
	log "round: vda first -o ${o1:-<none>}, again -o ${o2:-<none>}; twin vdb -o ${ot:-<none>}"
	mark
	must mount -t btrfs ${o1:+-o $o1} /dev/vda /a
	if [ "$o1" = virtual_fsid ]; then
		# a copy of a mounted virtual_fsid filesystem is mounted only with the option
		# (it could be the same storage under another device number): EEXIST, one line
		mark
		if mount -t btrfs /dev/vdb /v 2>/tmp/err; then
			umount /v
			fail "plain mount of the twin vdb while vda is mounted with virtual_fsid succeeded"
		fi
		cat /tmp/err
		grep -q 'File exists' /tmp/err || fail "plain mount of the twin vdb: not EEXIST"
		n=$(since | grep -c "BTRFS error: device /dev/vdb is devid 1 of the mounted virtual_fsid filesystem")
		[ "$n" -eq 1 ] || fail "$n refusal lines for the plain twin vdb, expected 1"
	fi
	must mount -t btrfs ${ot:+-o $ot} /dev/vdb /v
	must mount -t btrfs ${o2:+-o $o2} /dev/vda /b
	must mount -t btrfs -o subvol=sv${o2:+,$o2} /dev/vda /s
	must mount --bind /a /bind
	cat /proc/self/mounts
	ls /sys/fs/btrfs
	[ "$(ninst)" -eq 2 ] || fail "$(ninst) instances in /sys/fs/btrfs, expected 2 (vda's and vdb's)"
	[ "$(dev /b)" = "$(dev /a)" ] || fail "second mount of vda is another instance (st_dev $(dev /b) != $(dev /a))"
	[ "$(dev /bind)" = "$(dev /a)" ] || fail "bind mount has another st_dev"
	[ "$(dev /s)" = "$(dev /a/sv)" ] || fail "subvol mount is another instance (st_dev $(dev /s) != $(dev /a/sv))"
	[ "$(dev /v)" != "$(dev /a)" ] || fail "the twin vdb joined vda's instance"
	# a file written through each mount, read through every other
	tag="$o1-$o2"
	echo "a $tag" >/a/fa
	echo "b $tag" >/b/fb
	echo "bind $tag" >/bind/fbind
	echo "s $tag" >/s/fs
	echo "v $tag" >/v/fv
	must sync
	for m in /a /b /bind; do
		[ "$(cat $m/fa)" = "a $tag" ] || fail "$m does not see /a's file"
		[ "$(cat $m/fb)" = "b $tag" ] || fail "$m does not see /b's file"
		[ "$(cat $m/fbind)" = "bind $tag" ] || fail "$m does not see /bind's file"
		[ "$(cat $m/sv/fs)" = "s $tag" ] || fail "$m does not see the file written through the subvol mount"
		[ ! -e $m/fv ] || fail "$m shows the twin's file"
	done
	[ ! -e /v/fa ] || fail "the twin shows vda's file"
	must umount /bind
	must umount /s
	must umount /b
	must umount /a
	must umount /v
	must btrfs check --readonly /dev/vda
	must btrfs check --readonly /dev/vdb
	# from disk: everything written through the four mounts is there (forget the twin first:
	# plain mounts of two clones with different generations collide, as on stock 6.1)
	must btrfs device scan --forget
	must mount -t btrfs /dev/vda /a
	for f in fa fb fbind sv/fs; do [ -s /a/$f ] || fail "$f lost after remount"; done
	rm -f /a/fa /a/fb /a/fbind /a/sv/fs
	must umount /a
	must btrfs device scan --forget
}

round virtual_fsid "" virtual_fsid
round "" "" virtual_fsid

log "virtual_fsid for a device open in a plain mount: refused, as the remount is"
must mount -t btrfs /dev/vda /a
for how in "mount /b" "remount /a"; do
	mark
	if [ "$how" = "mount /b" ]; then
		mount -t btrfs -o virtual_fsid /dev/vda /b 2>/tmp/err && ok=1 || ok=0
		want="virtual_fsid refused for /dev/vda: mounted without it"
	else
		mount -o remount,virtual_fsid /a 2>/tmp/err && ok=1 || ok=0
		want="virtual_fsid cannot be set by a remount"
	fi
	cat /tmp/err
	since
	[ "$ok" -eq 0 ] || fail "-o virtual_fsid ($how) of vda, mounted plain on /a, succeeded"
	grep -q 'Invalid argument' /tmp/err || fail "-o virtual_fsid ($how): not EINVAL"
	n=$(since | grep -c "BTRFS error.*$want")
	[ "$n" -eq 1 ] || fail "-o virtual_fsid ($how): $n '$want' lines, expected 1"
done
grep -q ' /b ' /proc/self/mounts && fail "/b is mounted after the refusal"
grep ' /a ' /proc/self/mounts | grep -q virtual_fsid && fail "/a shows virtual_fsid"
must touch /a/after-refusals
must umount /a
must btrfs check --readonly /dev/vda
pass
