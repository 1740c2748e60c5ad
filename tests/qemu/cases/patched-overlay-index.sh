#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=180 kmods='overlay'
# Patched 6.1: a virtual_fsid mount keeps the identity others store about it. /etc as an
# overlayfs with index=on (as an A/B image whose /etc is an overlay does), its lower layer on the
# rootfs clone A mounted with -o virtual_fsid while clone B is mounted too, its upper on a var
# filesystem (vdc). Everything is unmounted and mounted again (new random fsid): the overlay must
# mount again and keep what was written through it. overlayfs stores the lower filesystem's
# s_uuid in the upper layer and refuses a changed one ("failed to verify upper root origin"), so
# this needs s_uuid to be the on-disk fsid. Also: statfs' f_fsid of a virtual_fsid mount is the
# same at the next mount of the same device and differs between the two mounted clones.
. /lib/guest-lib.sh
mkdir -p /a /b /v /e
fsid() { stat -f -c %i "$1"; }

grep -qw overlay /proc/filesystems || fail "overlay.ko did not load"
must mkfs.btrfs -q -f -L var /dev/vdc
# the rootfs content of clone A (a plain mount); clone B keeps the image as it was
must mount -t btrfs /dev/vda /a
must mkdir -p /a/etc
echo lower >/a/etc/from-lower
must umount /a
must btrfs device scan --forget

mount_all() {
	must mount -t btrfs -o virtual_fsid /dev/vdb /b
	must mount -t btrfs -o virtual_fsid,ro /dev/vda /a
	must mount -t btrfs /dev/vdc /v
	mkdir -p /v/upper /v/work
	if ! mount -t overlay -o lowerdir=/a/etc,upperdir=/v/upper,workdir=/v/work,index=on \
		etc /e 2>/tmp/ovl.err; then
		cat /tmp/ovl.err
		dmesg | grep -i overlayfs | tail -n 5
		fail "overlay mount ($1) failed"
	fi
}
umount_all() {
	must umount /e
	must umount /v
	must umount /a
	must umount /b
	must btrfs device scan --forget
}

log "first mount"
mount_all first
[ "$(cat /e/from-lower)" = lower ] || fail "lower file not seen through the overlay"
echo upper >/e/from-upper
echo changed >/e/from-lower
a1=$(fsid /a) b1=$(fsid /b)
log "f_fsid: /a $a1, /b $b1"
[ "$a1" != "$b1" ] || fail "the two mounted clones have the same f_fsid $a1"
umount_all

log "second mount (new random fsid)"
mount_all second
[ "$(cat /e/from-upper)" = upper ] || fail "file written through the overlay is gone"
[ "$(cat /e/from-lower)" = changed ] || fail "copied-up change is gone"
a2=$(fsid /a) b2=$(fsid /b)
log "f_fsid: /a $a2, /b $b2"
[ "$a2" = "$a1" ] || fail "f_fsid of clone A changed across mounts: $a1 -> $a2"
[ "$b2" = "$b1" ] || fail "f_fsid of clone B changed across mounts: $b1 -> $b2"
umount_all
must btrfs check --readonly /dev/vda
pass
