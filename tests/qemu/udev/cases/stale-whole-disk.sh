#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos-stale timeout=240 rules=gate append='root=PARTLABEL=rootfs-A'
# Crafted media (issue 10 item 3, docs/SECURITY.md row 3b) on a real kernel: the SteamOS-like disk
# plus two fixed disks with a GPT (one empty partition each) whose whole-disk bytes still carry a
# btrfs superblock at 64 KiB: on the first a copy of rootfs's, generation 5 higher; on the second
# one of a filesystem that nothing else carries (only the partitioned-disk rule keeps it out: as a
# lone copy it would be `scan unique`). udev's blkid calls both disks btrfs (beside PTTYPE=gpt).
# In every order (boot then coldplug; change events of the disks and their partitions first, and
# last; the helper's own event for each disk) both are `skip partitioned-disk` (status and udev),
# listed in skip_scan, never registered (not even by an explicit `btrfs device scan` of them),
# SYSTEMD_READY=0 and UDISKS_IGNORE=1; the first owns no link of rootfs; the internal rootfs-A
# mounts plainly (a registered higher-generation copy would refuse it: "already registered with a
# higher generation").
. /lib/guest-lib.sh
. /lib/system-lib.sh

# disk_of PARTNAME: the disk holding the partition of that name
disk_of() {
    for u in /sys/class/block/vd*[0-9]; do
        grep -qx "PARTNAME=$1" "$u/uevent" 2>/dev/null || continue
        p=$(readlink -f "$u/..")
        echo "/dev/${p##*/}"
        return
    done
}
n=0
while { [ -z "$(disk_of data)" ] || [ -z "$(disk_of data2)" ]; } && [ $n -lt 300 ]; do
    n=$((n + 1))
    sleep 0.1
done
STALE=$(disk_of data)
STALE2=$(disk_of data2)
[ -n "$STALE" ] && [ -n "$STALE2" ] || fail "no partitions data and data2: $(ls /sys/class/block | tr '\n' ' ')"
INT=
for u in /sys/class/block/vd*[0-9]; do
    grep -qx 'PARTNAME=rootfs-A' "$u/uevent" && INT=/dev/${u##*/}
done
[ -n "$INT" ] || fail "no internal rootfs-A"
sb() { btrfs inspect-internal dump-super "$1" | awk -v k="$2" '$1 == k { print $2 }'; }
log "internal rootfs-A: $INT (generation $(sb "$INT" generation)); stale disks: $STALE (fsid $(sb "$STALE" fsid), generation $(sb "$STALE" generation)), $STALE2 (fsid $(sb "$STALE2" fsid))"
[ "$(sb "$STALE" fsid)" = "$ROOT_FSID" ] || fail "the stale superblock of $STALE is not rootfs's"
[ "$(sb "$STALE" generation)" -gt "$(sb "$INT" generation)" ] || fail "the stale generation is not above rootfs-A's"

stale_check() {
    what=$1
    btrfs-scan-gate status >/tmp/status.txt 2>&1
    for d in $STALE $STALE2; do
        grep -q "$d\(,\|$\)" /sys/module/btrfs/parameters/skip_scan ||
            fail "$what: $d not in skip_scan: $(cat /sys/module/btrfs/parameters/skip_scan)"
        [ "$(sys_registered "$d")" = no ] || fail "$what: $d is registered with the kernel"
        grep -q "^$d .* skip *partitioned-disk" /tmp/status.txt ||
            { sed 's/^/guest: status: /' /tmp/status.txt; fail "$what: status does not say skip partitioned-disk for $d"; }
        sys_props "$d"
        [ "$P_BTRFS_SCAN_GATE_REASON" = partitioned-disk ] || fail "$what: $d: udev reason $P_BTRFS_SCAN_GATE_REASON"
        [ "$P_SYSTEMD_READY" = 0 ] || fail "$what: $d: SYSTEMD_READY=$P_SYSTEMD_READY"
        [ "$P_UDISKS_IGNORE" = 1 ] || fail "$what: $d: UDISKS_IGNORE=$P_UDISKS_IGNORE"
    done
    for link in by-uuid/$ROOT_FSID by-label/rootfs; do
        [ "$(target "/dev/disk/$link")" = "$STALE" ] && fail "$what: /dev/disk/$link -> the stale disk"
    done
    tlog "$what: stale disks gated (ID_FS_TYPE=$P_ID_FS_TYPE)"
}

# 1. the unit's boot, then coldplug in udev's own order
[ -w /sys/module/btrfs/parameters/skip_scan ] || fail "patched module without a writable skip_scan"
must sys_gate_boot
sys_udev_coldplug
stale_check coldplug

# 2. the stale disks and their partitions first, then every other partition
sysfs() { for d in "$@"; do echo "/sys/class/block/${d#/dev/}"; done; }
must udevadm trigger --action=change $(sysfs "$STALE" "$STALE2" "${STALE}1" "${STALE2}1")
must udevadm settle --timeout=60
must udevadm trigger --action=change --subsystem-match=block --sysname-match='vda*'
must udevadm settle --timeout=60
stale_check disks-first

# 3. the other partitions first, the stale disks last
must udevadm trigger --action=change --subsystem-match=block --sysname-match='vda*'
must udevadm settle --timeout=60
must udevadm trigger --action=change $(sysfs "${STALE}1" "${STALE2}1" "$STALE" "$STALE2")
must udevadm settle --timeout=60
stale_check disks-last

# 4. the helper's own event for each disk, run by hand
for d in $STALE $STALE2; do
    btrfs-scan-gate udev "$d" >/tmp/udev-stale.txt 2>&1
    sed 's/^/guest: udev-stale: /' /tmp/udev-stale.txt
    grep -qx 'BTRFS_SCAN_GATE_DECISION=skip' /tmp/udev-stale.txt || fail "$d's own event did not decide skip"
    grep -qx 'BTRFS_SCAN_GATE_REASON=partitioned-disk' /tmp/udev-stale.txt || fail "$d's own event: not partitioned-disk"
done
stale_check own-events

# nothing registers them, not even an explicit scan (skip_scan refuses it) or one of everything
btrfs device scan "$STALE" "$STALE2" >/tmp/scan-stale.log 2>&1
btrfs device scan >>/tmp/scan-stale.log 2>&1
sed 's/^/guest: scan: /' /tmp/scan-stale.log
for d in $STALE $STALE2; do
    [ "$(sys_registered "$d")" = no ] || fail "btrfs device scan registered $d"
done

# the internal rootfs-A mounts plainly by its shared name, from the internal partition
mkdir -p /ra
must mount /dev/disk/by-uuid/$ROOT_FSID /ra
src=$(readlink -f "$(awk '$2 == "/ra" { print $1 }' /proc/mounts)")
log "mounted /ra from $src"
[ "$src" = "$INT" ] || fail "/ra mounted from $src, expected $INT"
grep -q steamos /ra/etc/os-release || fail "rootfs-A content"
[ "$(sys_registered "$STALE")" = no ] || fail "$STALE registered after the mount"
must umount /ra
pass
