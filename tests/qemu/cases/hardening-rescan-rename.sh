#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=180
#
# Regression guard for kernel bugzilla 218353 (fixed upstream by d565fffa6856 "btrfs: do not skip
# re-registration for the mounted device"): 6.7's temp_fsid skipped the scan of a mounted
# single-device fs, so a root mounted as /dev/root kept that name forever and grub-probe failed.
# Here: mount a clone through a node that then disappears (like /dev/root without initrd),
# rescan it under its real name, and require that the kernel now reports the real name
# (/proc/self/mounts and `btrfs filesystem show`), for a plain mount and for a virtual_fsid
# mount while the twin clone is mounted too, and that mounting still works afterwards.
. /lib/guest-lib.sh

mkdir -p /a /b /a2
devnum() { cat "/sys/class/block/$1/dev"; }
mkalias() { # mkalias NODE DEV: block node NODE with the major:minor of DEV
	rm -f "$1"
	must mknod "$1" b "$(devnum "$2" | cut -d: -f1)" "$(devnum "$2" | cut -d: -f2)"
}
mount_src() { awk -v m="$1" '$2 == m { print $1 }' /proc/self/mounts; }

# one_round OPTS: mount vda as /dev/root, drop the node, rescan as /dev/vda, check names
one_round() {
	opts=$1
	log "round: -o ${opts:-<none>}"
	mkalias /dev/root vda
	must mount -t btrfs ${opts:+-o $opts} /dev/root /a
	if [ -n "$opts" ]; then
		must mount -t btrfs -o "$opts" /dev/vdb /b
	fi
	[ "$(mount_src /a)" = /dev/root ] || log "note: source right after mount: $(mount_src /a)"
	rm -f /dev/root
	must btrfs device scan /dev/vda
	src=$(mount_src /a)
	[ "$src" = /dev/vda ] || fail "/proc/self/mounts still says $src for /a after rescan as /dev/vda"
	btrfs filesystem show /a >/tmp/show.log 2>&1 || { cat /tmp/show.log; fail "btrfs filesystem show /a failed"; }
	cat /tmp/show.log
	grep -q 'path /dev/vda$' /tmp/show.log || fail "btrfs filesystem show /a does not list /dev/vda"
	! grep -q 'path /dev/root' /tmp/show.log || fail "btrfs filesystem show /a lists the stale /dev/root"
	if [ -n "$opts" ]; then
		# the twin must not have been renamed or taken over by the rescan of vda
		[ "$(mount_src /b)" = /dev/vdb ] || fail "/b now reports $(mount_src /b)"
		btrfs filesystem show /b >/tmp/showb.log 2>&1 || { cat /tmp/showb.log; fail "btrfs filesystem show /b failed"; }
		grep -q 'path /dev/vdb$' /tmp/showb.log || { cat /tmp/showb.log; fail "/b lost /dev/vdb"; }
		[ "$(stat -c %d /a)" != "$(stat -c %d /b)" ] || fail "clones share one superblock"
	fi
	# mounting still works: the same device again joins the same instance
	must mount -t btrfs ${opts:+-o $opts} /dev/vda /a2
	[ "$(stat -c %d /a)" = "$(stat -c %d /a2)" ] || fail "second mount of /dev/vda is a different instance"
	echo "round-$opts" >/a/marker
	must sync
	[ "$(cat /a2/marker)" = "round-$opts" ] || fail "write through /a not seen through /a2"
	must umount /a2
	must umount /a
	[ -z "$opts" ] || must umount /b
	must mount -t btrfs ${opts:+-o $opts} /dev/vda /a
	[ "$(cat /a/marker)" = "round-$opts" ] || fail "marker lost after remount"
	must umount /a
}

one_round ""
one_round virtual_fsid
must btrfs check --readonly /dev/vda
must btrfs check --readonly /dev/vdb
pass
