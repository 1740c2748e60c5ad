#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=150
# Patched 6.1: the same block device mounted again (second mount point, -o subvol=, a bind
# mount) joins the mounted instance, in both orders: first mount with virtual_fsid and the
# others without it, and first mount plain and the others with virtual_fsid. The twin clone
# vdb, mounted next to it (plain in one round, virtual_fsid in the other), stays a separate
# instance. Proof: one st_dev per instance (and per subvolume), the /sys/fs/btrfs entry count,
# files written through each mount are visible through the others and after a remount, and
# `btrfs check` is clean afterwards.
. /lib/guest-lib.sh
mkdir -p /a /b /s /bind /v
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
	if [ -n "$o2" ] && [ -z "$o1" ]; then
		since | grep -q "virtual_fsid ignored for /dev/vda" ||
			fail "no 'virtual_fsid ignored' line for the join"
	fi
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

round virtual_fsid "" ""
round "" virtual_fsid virtual_fsid
must btrfs check --readonly /dev/vda
pass
