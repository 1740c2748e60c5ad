#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=300
# Booted by check-integrity-build.sh (not a case of its own: the module it needs is the one that
# script builds with CONFIG_BTRFS_FS_CHECK_INTEGRITY, handed over as BSG_BTRFS_KO).
# The integrity checker on: vda mounted -o check_int,check_int_print_mask=1 (the mask prints one
# "btrfsic: got new superblock" line per superblock write it checked), files written and synced;
# its clone vdb mounted -o virtual_fsid,check_int beside it, written and synced; both unmounted.
# The checker must have checked superblock writes of both devices, and the kernel log must hold
# none of its complaints ("btrfs: attempt ...", "btrfsic: ... failed/error"), no WARNING or BUG.
# On a virtual_fsid mount the checker tells metadata blocks by the on-disk fsid
# (btrfs_ondisk_fsid()); with the random fsid every tree block would be taken for data.
. /lib/guest-lib.sh
mkdir -p /a /b
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }

# write_some DIR: files, a sync, a rewrite, a delete, a sync
write_some() {
	must dd if=/dev/urandom of="$1/f1" bs=64k count=64 2>/dev/null
	must cp "$1/f1" "$1/f2"
	must mkdir -p "$1/d"
	i=0
	while [ $i -lt 50 ]; do echo $i >"$1/d/$i" || fail "write $1/d/$i"; i=$((i + 1)); done
	must sync
	must dd if=/dev/urandom of="$1/f1" bs=64k count=16 conv=notrunc 2>/dev/null
	must rm "$1/f2"
	must sync
}

mark
must mount -t btrfs -o check_int,check_int_print_mask=1 /dev/vda /a
since | grep -q 'enabling check integrity' || fail "no 'enabling check integrity' line: check_int not active"
write_some /a
must mount -t btrfs -o virtual_fsid,check_int,check_int_print_mask=1 /dev/vdb /b
grep ' /b ' /proc/self/mounts | grep -q virtual_fsid || fail "/b is not a virtual_fsid mount"
write_some /b
must umount /b
must umount /a
since >/tmp/new
for d in vda vdb; do
	n=$(grep -c "btrfsic: got new superblock @[0-9]* ($d/" /tmp/new)
	log "$d: $n superblock writes checked"
	[ "$n" -gt 0 ] || fail "the checker saw no superblock write of $d"
done
if grep -E 'btrfs: attempt|btrfsic: .*(fail|error|out of bounce|no superblock|cannot)|WARNING|BUG|Call Trace' /tmp/new; then
	fail "check_int reported a problem (lines above)"
fi
must btrfs check --readonly /dev/vda
must btrfs check --readonly /dev/vdb
pass
