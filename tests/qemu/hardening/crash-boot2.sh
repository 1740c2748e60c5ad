#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=150
#
# Boot 2 of the crash-safety test, on the disk files boot 1 left behind when it was killed.
# crash-safety.sh inserts after the guest-lib line: EXPECT_FSID=<32 hex digits> (the fsid of the
# images before boot 1), SYNCED_A=<n> SYNCED_B=<n> (the last persistent file of each clone whose
# sync completed before the kill, from boot 1's console).
. /lib/guest-lib.sh

[ -n "$EXPECT_FSID" ] || fail "EXPECT_FSID not set by the driver"
mkdir -p /a /b
hexat() { # hexat DEV OFFSET LEN: bytes as lowercase hex
	dd if="$1" bs=1 skip="$2" count="$3" 2>>/tmp/dd.log | od -An -v -tx1 | tr -d ' \n'
}
check_sb() { # check_sb DEV WHEN: raw primary superblock: original fsid, no METADATA_UUID
	fsid=$(hexat /dev/$1 $((65536 + 32)) 16)
	[ "$fsid" = "$EXPECT_FSID" ] || fail "$1 $2: on-disk fsid $fsid, expected $EXPECT_FSID"
	inc=$(hexat /dev/$1 $((65536 + 188)) 8)
	# byte 1 of the little-endian incompat flags holds bit 10 (0x400, METADATA_UUID) as 0x04
	b1=$(printf '%d' "0x$(echo "$inc" | cut -c3-4)")
	[ $((b1 & 4)) -eq 0 ] || fail "$1 $2: incompat flags $inc carry METADATA_UUID (0x400)"
	log "$1 $2: on-disk fsid $fsid, incompat (le) $inc: ok"
}
for d in vda vdb; do
	check_sb $d "after the kill"
	btrfs check --readonly /dev/$d >/tmp/check-$d.log 2>&1 || { cat /tmp/check-$d.log; fail "btrfs check $d after the kill"; }
	log "$d: btrfs check --readonly clean after the kill"
done
must mount -t btrfs -o virtual_fsid /dev/vda /a
must mount -t btrfs -o virtual_fsid /dev/vdb /b
[ "$(stat -c %d /a)" != "$(stat -c %d /b)" ] || fail "clones share one superblock"
for t in a b; do
	[ "$(cat /$t/WHO)" = "$t" ] || fail "/$t shows the other clone's data"
	(cd /$t/ref && sha256sum -c /$t/SUMS) >/tmp/sums-$t.log 2>&1 || { cat /tmp/sums-$t.log; fail "$t: reference set damaged"; }
	eval "n=\$SYNCED_$(echo $t | tr ab AB)"
	k=1
	while [ "$k" -le "$n" ]; do
		line=$(grep " p$k\$" /$t/PSUMS) || fail "$t: PSUMS has no entry for p$k (synced before the kill)"
		(cd /$t/persist && echo "$line" | sha256sum -c) >>/tmp/psums-$t.log 2>&1 ||
			{ cat /tmp/psums-$t.log; fail "$t: persistent file p$k synced before the kill is damaged"; }
		k=$((k + 1))
	done
	log "$t: reference set and $n persistent files synced before the kill verified; $(ls /$t/churn | wc -l) churn files, $(ls /$t/persist | wc -l) persistent files on disk"
done
# still writable after the crash
for t in a b; do
	dd if=/dev/urandom of=/$t/after bs=4096 count=16 2>>/tmp/dd.log || fail "write after crash"
done
must sync
must umount /a
must umount /b
for d in vda vdb; do
	btrfs check --readonly /dev/$d >/tmp/check2-$d.log 2>&1 || { cat /tmp/check2-$d.log; fail "btrfs check $d after writing again"; }
	check_sb $d "after writing again"
done
pass
