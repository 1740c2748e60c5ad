#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=raid-2disk timeout=300 rules=gate append='root=PARTUUID=5c1a6e2f-0d3b-4c1e-9a7f-000000000002'
# A multi-device root over two internal disks (issue 18 item 1): a btrfs raid1 over vda2 (root1,
# devid 1) and vdb1 (root2, devid 2); root=PARTUUID= names vda2, so vda is the disk that booted. The
# boot does not name vdb, so the second member is trusted only when trusted_disk= names its disk
# (a superblock's fsid is what any media can copy, and a disk that looks fixed may be an eSATA or a
# hot-swap bay). With trusted_disk=/dev/disk/by-path/<vdb's PCI path> in the configuration before
# boot (its link exists only once udevd ran: `boot` cannot resolve it, coldplug does): after coldplug
# and change events in both orders both members are trusted, decided scan, registered, not in
# skip_scan, and vda2 mounts with both devices. Without the line (removed, then change events):
# vdb1 is untrusted, skip, listed, and its event says why and names trusted_disk= by-path.
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
# vdb's place: its PCI function, as udev's path_id names it (pci-0000:00:NN.N)
pci=$(readlink -f /sys/class/block/vdb | sed -n 's|.*/\(0000:[0-9a-f:.]*\)/virtio[0-9]*/block/vdb$|\1|p')
[ -n "$pci" ] || fail "no PCI address for vdb: $(readlink -f /sys/class/block/vdb)"
echo "trusted_disk=/dev/disk/by-path/pci-$pci" >/etc/btrfs-scan-gate.conf
log "configuration: $(cat /etc/btrfs-scan-gate.conf)"
must sys_gate_boot
sys_udev_coldplug
[ "$(readlink -f "/dev/disk/by-path/pci-$pci")" = /dev/vdb ] || fail "/dev/disk/by-path/pci-$pci is not vdb"
check coldplug
btrfs-scan-gate -v status >/tmp/status.txt 2>&1
sed 's/^/guest: status: /' /tmp/status.txt
grep -q '^trust: from the boot' /tmp/status.txt || fail "status does not say that trust came from the boot"
grep -q 'trust: /dev/vdb1 trusted (named by trusted_disk=)' /tmp/status.txt || fail "status does not say why /dev/vdb1 is trusted"
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

# without the line: the second member is untrusted storage, and its event says what to do
: >/etc/btrfs-scan-gate.conf
dmesg -c >/dev/null
sys_change_last /dev/vdb1
sys_props /dev/vdb1
log "unconfigured: /dev/vdb1 decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON trusted=$P_BTRFS_SCAN_GATE_TRUSTED registered=$(sys_registered /dev/vdb1)"
[ "$P_BTRFS_SCAN_GATE_TRUSTED" = 0 ] || fail "unconfigured: /dev/vdb1 is trusted"
[ "$P_BTRFS_SCAN_GATE_DECISION" = skip ] || fail "unconfigured: /dev/vdb1 decision $P_BTRFS_SCAN_GATE_DECISION"
case ",$(cat /sys/module/btrfs/parameters/skip_scan)," in
*,/dev/vdb1,*) ;;
*) fail "unconfigured: /dev/vdb1 is not in skip_scan: $(cat /sys/module/btrfs/parameters/skip_scan)" ;;
esac
dmesg | grep 'btrfs-scan-gate' | sed 's/^/guest: dmesg: /'
dmesg | grep -q "/dev/vdb1: a member of /dev/vda2's multi-device filesystem $RAID_FSID, on a disk neither the boot nor trusted_disk= names" ||
    fail "unconfigured: no message saying why /dev/vdb1 is not scanned"
pass
