#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=300
# Patched 6.1: virtual_fsid changes nothing on disk and nothing in the block device's page cache.
# Both clones are mounted with virtual_fsid, written, synced and unmounted three times. While
# mounted, `blkid -p`, a raw buffered read (dd, through the page cache) and dump-super still show
# the real fsid. Afterwards, on both clones: primary and mirror superblocks keep the original
# fsid, metadata_uuid equals it, incompat_flags are those a plain mount leaves and METADATA_UUID (bit 10, byte
# 0x10000 + 0xbc + 1, mask 0x04) is clear, checksums match, the generation moved on (superblocks
# were written), `btrfs check --readonly` is clean and the data reads back.
. /lib/guest-lib.sh
fsid=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a01
mkdir -p /a /b /tmp/sb
sb() { btrfs inspect-internal dump-super "$@" 2>&1; }
field() { awk -v k="$1" '$1 == k { print $2 }'; }
# byte 1 of incompat_flags (u64 LE at 0xbc in the superblock at 64 KiB), read raw
incompat_byte1() { dd if="$1" bs=1 skip=$((65536 + 0xbc + 1)) count=1 2>/dev/null | od -An -tu1 | tr -d ' '; }

# A plain mount first: stock 6.1 sets BIG_METADATA (incompat bit 5, nodesize > PAGE_SIZE) at the
# first commit of a fresh mkfs image; virtual_fsid mounts must add nothing beyond that.
for d in vda vdb; do
	must btrfs device scan --forget
	must mount -t btrfs /dev/$d /a
	must umount /a
	sb /dev/$d >/tmp/sb/$d.before
	[ "$(field fsid </tmp/sb/$d.before)" = $fsid ] || fail "$d: unexpected fsid before the case"
done
gen0=$(field generation </tmp/sb/vda.before)
incompat0=$(field incompat_flags </tmp/sb/vda.before)
log "before: generation $gen0 incompat_flags $incompat0"

# check_live DEV: the device as seen while it is mounted with virtual_fsid
check_live() {
	got=$(blkid -p -o value -s UUID "$1")
	[ "$got" = $fsid ] || fail "blkid -p $1 shows $got while mounted, expected $fsid"
	got=$(raw_fsid "$1")
	[ "$got" = $fsid ] || fail "raw read of $1 shows fsid $got while mounted (page cache modified?)"
	sb "$1" >/tmp/sb/live
	[ "$(field fsid </tmp/sb/live)" = $fsid ] || fail "dump-super $1 shows another fsid while mounted"
	grep -q '^csum.*\[match\]' /tmp/sb/live || { cat /tmp/sb/live; fail "$1: csum mismatch while mounted"; }
}

for i in 1 2 3; do
	must mount -t btrfs -o virtual_fsid /dev/vda /a
	must mount -t btrfs -o virtual_fsid /dev/vdb /b
	[ ! -e /sys/fs/btrfs/$fsid ] || fail "a virtual_fsid mount registered the on-disk fsid in sysfs"
	for m in /a /b; do
		rm -rf $m/r$((i - 1))
		mkdir $m/r$i
		must dd if=/dev/urandom of=$m/r$i/data bs=64k count=4 2>/dev/null
		sha256sum $m/r$i/data | cut -d' ' -f1 >/tmp/sb/sum-${m#/}
		must btrfs subvolume create $m/r$i/sv
	done
	must sync
	check_live /dev/vda
	check_live /dev/vdb
	must umount /a
	must umount /b
done

for d in vda vdb; do
	sb /dev/$d >/tmp/sb/$d.after
	sb -s 1 /dev/$d >/tmp/sb/$d.mirror
	for f in /tmp/sb/$d.after /tmp/sb/$d.mirror; do
		[ "$(field fsid <$f)" = $fsid ] || { cat $f; fail "$d: fsid changed on disk ($f)"; }
		[ "$(field metadata_uuid <$f)" = $fsid ] || { cat $f; fail "$d: metadata_uuid changed on disk ($f)"; }
		[ "$(field incompat_flags <$f)" = "$incompat0" ] || { cat $f; fail "$d: incompat_flags changed ($f)"; }
		grep -q METADATA_UUID $f && { cat $f; fail "$d: METADATA_UUID set on disk ($f)"; }
		grep -q '^csum.*\[match\]' $f || { cat $f; fail "$d: superblock checksum does not match ($f)"; }
		grep -q '^dev_item.fsid.*\[match\]' $f || { cat $f; fail "$d: dev_item.fsid does not match ($f)"; }
	done
	gen=$(field generation </tmp/sb/$d.after)
	[ "$gen" -gt "$gen0" ] || fail "$d: generation $gen not above $gen0: nothing was written?"
	[ "$(raw_fsid /dev/$d)" = $fsid ] || fail "$d: raw fsid changed"
	b=$(incompat_byte1 /dev/$d)
	[ $((b & 4)) -eq 0 ] || fail "$d: METADATA_UUID bit (incompat bit 10) set, byte 1 is $b"
	log "$d after: generation $gen, incompat byte 1 = $b, fsid $(raw_fsid /dev/$d)"
	must btrfs check --readonly /dev/$d
done

# the data of the last round reads back through a plain mount
for d in a b; do
	must btrfs device scan --forget
	must mount -t btrfs /dev/vd$d /a
	[ "$(sha256sum /a/r3/data | cut -d' ' -f1)" = "$(cat /tmp/sb/sum-$d)" ] || fail "vd$d: data differs after remount"
	must umount /a
done
pass
