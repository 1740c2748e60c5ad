#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=raid-2disk timeout=300 rules=gate append='root=PARTUUID=5c1a6e2f-0d3b-4c1e-9a7f-000000000002'
# A multi-device root over two internal disks still assembles (issue 18 item 1: "a multi-device
# internal root must still assemble at boot"): a btrfs raid1 over vda2 (root1, devid 1) and vdb1
# (root2, devid 2); root=PARTUUID= names vda2, so vda is the disk that booted and vdb is not named
# by the boot nor by trusted_disk=. After the unit's `boot` and coldplug, and after change events
# with vdb first and last: both members are trusted (vdb1 as "a member of a multi-device filesystem
# on the disk that booted"), decided scan, registered, not in skip_scan; vda2 mounts with both
# devices and no `degraded`. Fails without trust_members_of_booted() (helper/trust.c; e640833 had
# none): "coldplug: /dev/vdb1 is not trusted" (measured).
. /lib/guest-lib.sh
. /lib/system-lib.sh

RAID_FSID=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a05
[ -b /dev/vda2 ] && [ -b /dev/vdb1 ] || fail "partitions: $(ls /sys/class/block | tr '\n' ' ')"
[ "$(blkid -s PARTUUID -o value /dev/vda2)" = 5c1a6e2f-0d3b-4c1e-9a7f-000000000002 ] ||
    fail "/dev/vda2 is not the PARTUUID of root="

check() {
    what=$1
    for d in /dev/vda2 /dev/vdb1; do
        sys_props "$d"
        reg=$(sys_registered "$d")
        log "$what: $d decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON trusted=$P_BTRFS_SCAN_GATE_TRUSTED source=$P_BTRFS_SCAN_GATE_TRUST_SOURCE registered=$reg"
        [ "$P_BTRFS_SCAN_GATE_TRUST_SOURCE" = boot-disk ] || fail "$what: $d trust source $P_BTRFS_SCAN_GATE_TRUST_SOURCE"
        [ "$P_BTRFS_SCAN_GATE_TRUSTED" = 1 ] || fail "$what: $d is not trusted"
        [ "$P_BTRFS_SCAN_GATE_DECISION" = scan ] || fail "$what: $d decision $P_BTRFS_SCAN_GATE_DECISION"
        [ "$reg" = yes ] || fail "$what: $d is not registered with the kernel ($reg)"
    done
    case ",$(cat /sys/module/btrfs/parameters/skip_scan)," in
    *,/dev/vda2,* | *,/dev/vdb1,*) fail "$what: a member is in skip_scan: $(cat /sys/module/btrfs/parameters/skip_scan)" ;;
    esac
    tlog "$what: both members trusted and registered"
}

[ -w /sys/module/btrfs/parameters/skip_scan ] || fail "patched module without a writable skip_scan"
must sys_gate_boot
sys_udev_coldplug
check coldplug
btrfs-scan-gate -v status >/tmp/status.txt 2>&1
sed 's/^/guest: status: /' /tmp/status.txt
grep -q '^trust: from the boot' /tmp/status.txt || fail "status does not say that trust came from the boot"
grep -q 'trust: /dev/vdb1 trusted (a member of a multi-device filesystem on the disk that booted' /tmp/status.txt ||
    fail "status does not say why /dev/vdb1 is trusted"
sys_change_first /dev/vdb1
check second-disk-first
sys_change_last /dev/vdb1
check second-disk-last

mkdir -p /mnt/r
must mount /dev/vda2 /mnt/r
btrfs filesystem show /mnt/r >/tmp/show.txt 2>&1
sed 's/^/guest: show: /' /tmp/show.txt
grep -q 'Total devices 2' /tmp/show.txt || fail "the mounted root does not have two devices"
if grep -q -i missing /tmp/show.txt; then fail "a member is missing"; fi
grep -q "$RAID_FSID" /tmp/show.txt || fail "not the raid's fsid"
must umount /mnt/r
pass
