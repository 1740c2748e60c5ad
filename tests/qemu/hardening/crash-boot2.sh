#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=300
#
# Boot 2 of the crash-safety test, on the disk files boot 1 left behind when it was killed.
# crash-safety.sh prepends EXPECT_FSID=<32 hex digits>, the fsid of the images before boot 1.
. /lib/guest-lib.sh

[ -n "$EXPECT_FSID" ] || fail "EXPECT_FSID not set by the driver"
mkdir -p /a /b
hexat() { # hexat DEV OFFSET LEN: bytes as lowercase hex
	dd if="$1" bs=1 skip="$2" count="$3" 2>>/tmp/dd.log | od -An -v -tx1 | tr -d ' \n'
}
for d in vda vdb; do
	# primary superblock at 64 KiB: fsid at +32 (16 bytes), incompat_flags at +188 (le64)
	fsid=$(hexat /dev/$d $((65536 + 32)) 16)
	[ "$fsid" = "$EXPECT_FSID" ] || fail "$d: on-disk fsid $fsid, expected $EXPECT_FSID"
	inc=$(hexat /dev/$d $((65536 + 188)) 8)
	# byte 1 of the little-endian flags holds bit 10 (0x400, METADATA_UUID) as 0x04
	b1=$(printf '%d' "0x$(echo "$inc" | cut -c3-4)")
	[ $((b1 & 4)) -eq 0 ] || fail "$d: incompat flags $inc carry METADATA_UUID (0x400)"
	log "$d: fsid $fsid, incompat (le) $inc: ok"
	must btrfs check --readonly /dev/$d
done
must mount -t btrfs -o virtual_fsid /dev/vda /a
must mount -t btrfs -o virtual_fsid /dev/vdb /b
[ "$(stat -c %d /a)" != "$(stat -c %d /b)" ] || fail "clones share one superblock"
for t in a b; do
	[ "$(cat /$t/WHO)" = "$t" ] || fail "/$t shows the other clone's data"
	(cd /$t/ref && sha256sum -c /$t/SUMS) || fail "$t: reference set damaged"
	log "$t: $(ls /$t/churn | wc -l) churn files survived"
done
# still writable after the crash
for t in a b; do
	dd if=/dev/urandom of=/$t/after bs=4096 count=16 2>>/tmp/dd.log || fail "write after crash"
done
must sync
must umount /a
must umount /b
must btrfs check --readonly /dev/vda
must btrfs check --readonly /dev/vdb
for d in vda vdb; do
	fsid=$(hexat /dev/$d $((65536 + 32)) 16)
	[ "$fsid" = "$EXPECT_FSID" ] || fail "$d: fsid $fsid after the post-crash mount"
done
pass
