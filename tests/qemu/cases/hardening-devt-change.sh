#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=180
#
# Regression guard modelled on upstream 9f7eb8405dcb ("btrfs: validate device maj:min during
# open", xfstests btrfs/318): a device is scanned under a path, then the path starts pointing at
# a different block device (here: the node is recreated with another major:minor), so the dev_t
# cached at scan time is stale. Upstream, the stale dev_t made temp_fsid take the same device for
# a clone and mount it twice as two independent instances (corruption). The series matches
# "same device mounted again" by dev_t, so it must use the device actually opened:
#   - /dev/slot (now vdb) and /dev/vdb mounted with virtual_fsid are ONE instance,
#   - /dev/vda mounted with virtual_fsid is a different one and does not see vdb's files,
#   - btrfs check is clean on both afterwards.
. /lib/guest-lib.sh

mkdir -p /a /b /c
devnum() { cat "/sys/class/block/$1/dev"; }
mkalias() {
	rm -f "$1"
	must mknod "$1" b "$(devnum "$2" | cut -d: -f1)" "$(devnum "$2" | cut -d: -f2)"
}
sbdev() { stat -c %d "$1"; }

for opts in virtual_fsid ""; do
	log "round: -o ${opts:-<none>}"
	mkalias /dev/slot vda
	must btrfs device scan /dev/slot          # cached: path /dev/slot, dev_t of vda
	mkalias /dev/slot vdb                     # same path, now another device
	must mount -t btrfs ${opts:+-o $opts} /dev/slot /b
	echo "written-through-slot" >/b/slot-marker
	must sync
	if [ -n "$opts" ]; then
		# vdb again under its own name: must join the instance of /b
		must mount -t btrfs -o "$opts" /dev/vdb /c
		[ "$(sbdev /b)" = "$(sbdev /c)" ] || fail "vdb mounted twice as two instances (stale dev_t)"
		[ "$(cat /c/slot-marker 2>&1)" = written-through-slot ] || fail "/c does not see /b's file"
		# vda with virtual_fsid: its own instance, not vdb's
		must mount -t btrfs -o "$opts" /dev/vda /a
		[ "$(sbdev /a)" != "$(sbdev /b)" ] || fail "vda joined vdb's instance (stale dev_t)"
		[ ! -e /a/slot-marker ] || fail "vda shows vdb's file: wrong device behind /a"
		n=$(ls /sys/fs/btrfs | grep -c -- '-')
		[ "$n" -eq 2 ] || { ls /sys/fs/btrfs; fail "$n btrfs instances in /sys/fs/btrfs, expected 2"; }
		must umount /a
		must umount /c
	else
		# plain mount: vda is a clone of the mounted fs; it must be refused, never mounted
		# as another name of vdb's instance
		if mount -t btrfs /dev/vda /a; then
			same=no
			[ "$(sbdev /a)" = "$(sbdev /b)" ] && same=yes
			seen=no
			[ -e /a/slot-marker ] && seen=yes
			btrfs filesystem show /b 2>&1
			fail "/dev/vda mounted next to its mounted clone (same instance as vdb's: $same, shows vdb's file: $seen): stale dev_t, what 9f7eb8405dcb fixes upstream"
		fi
		grep -q ' /a ' /proc/self/mounts && fail "/dev/vda mounted on /a next to its clone"
		klog_has "device /dev/slot maj:min changed from [0-9]+:[0-9]+ to [0-9]+:[0-9]+" \
			"the dev_t refresh at open did not run"
	fi
	must umount /b
	must btrfs check --readonly /dev/vda
	must btrfs check --readonly /dev/vdb
	# leave a clean slate for the next round
	must btrfs device scan --forget
	mkalias /dev/slot vdb
	must mount -t btrfs /dev/slot /b
	rm -f /b/slot-marker
	must umount /b
	rm -f /dev/slot
done
pass
