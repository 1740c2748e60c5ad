#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos-usb timeout=240 rules=gate append='root=PARTLABEL=rootfs-A'
# Crafted media (issue 10 item 2, docs/SECURITY.md): the SteamOS-like disk plus a real USB
# mass-storage disk (qemu-xhci + usb-storage, removable=off: only its sysfs path says usb) present at
# boot, whose one GPT partition is also named rootfs-A and holds a copy of rootfs-A with a superblock
# generation 5 higher. In every event order (the unit's `boot` then coldplug; then change events
# with the stick first, and with the stick last) the stick is `skip outranked`, listed in
# skip_scan, never registered (not even by `btrfs device scan` of everything), has no slot and no
# SLOT_ACTIVE, gets UDISKS_IGNORE=1 and SYSTEMD_READY=0, and owns none of by-uuid, by-label,
# by-partlabel/rootfs-A, by-slot; the internal rootfs-A mounts (a plain mount, which a registered
# higher-generation copy would refuse: "already registered with a higher generation").
. /lib/guest-lib.sh
. /lib/system-lib.sh

# the stick: a partition labelled rootfs-A whose sysfs path goes through usb
sys_usb_part rootfs-A
USB=$SYS_USB_PART
INT=
for u in /sys/class/block/vd*[0-9]; do
    grep -qx 'PARTNAME=rootfs-A' "$u/uevent" && INT=/dev/${u##*/}
done
[ -n "$INT" ] || fail "no internal rootfs-A"
log "internal rootfs-A: $INT, USB copy: $USB ($(readlink -f /sys/class/block/${USB#/dev/}))"
usb_gen=$(btrfs inspect-internal dump-super "$USB" | awk '$1 == "generation" { print $2 }')
int_gen=$(btrfs inspect-internal dump-super "$INT" | awk '$1 == "generation" { print $2 }')
[ "$usb_gen" -gt "$int_gen" ] || fail "the USB copy's generation $usb_gen is not above $int_gen"

usb_check() {
    what=$1
    sys_props "$USB"
    log "$what: USB $USB: decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON slot=$P_BTRFS_SCAN_GATE_SLOT slot-active=$P_BTRFS_SCAN_GATE_SLOT_ACTIVE udisks-ignore=$P_UDISKS_IGNORE systemd-ready=$P_SYSTEMD_READY"
    [ "$P_BTRFS_SCAN_GATE_DECISION" = skip ] || fail "$what: USB decision $P_BTRFS_SCAN_GATE_DECISION"
    [ "$P_BTRFS_SCAN_GATE_REASON" = outranked ] || fail "$what: USB reason $P_BTRFS_SCAN_GATE_REASON"
    case "$P_BTRFS_SCAN_GATE_SLOT" in - | "") ;; *) fail "$what: USB has slot $P_BTRFS_SCAN_GATE_SLOT" ;; esac
    [ "$P_BTRFS_SCAN_GATE_SLOT_ACTIVE" = - ] || fail "$what: USB has SLOT_ACTIVE=$P_BTRFS_SCAN_GATE_SLOT_ACTIVE"
    [ "$P_UDISKS_IGNORE" = 1 ] || fail "$what: USB UDISKS_IGNORE=$P_UDISKS_IGNORE"
    [ "$P_SYSTEMD_READY" = 0 ] || fail "$what: USB SYSTEMD_READY=$P_SYSTEMD_READY"
    sys_listed "$USB" || fail "$what: $USB not in skip_scan: $(cat /sys/module/btrfs/parameters/skip_scan)"
    [ "$(sys_registered "$USB")" = no ] || fail "$what: $USB is registered with the kernel"
    sys_props "$INT"
    [ "$P_BTRFS_SCAN_GATE_SLOT_ACTIVE" = 1 ] || fail "$what: internal rootfs-A SLOT_ACTIVE=$P_BTRFS_SCAN_GATE_SLOT_ACTIVE"
    [ "$P_UDISKS_IGNORE" = - ] || fail "$what: internal rootfs-A UDISKS_IGNORE=$P_UDISKS_IGNORE"
    for link in by-uuid/$ROOT_FSID by-label/rootfs by-partlabel/rootfs-A by-slot/active/rootfs; do
        t=$(target "/dev/disk/$link")
        log "$what: $link -> $t"
        [ "$t" = "$INT" ] || fail "$what: /dev/disk/$link -> $t, expected the internal $INT"
    done
    for link in /dev/disk/by-slot/*/*; do
        [ "$(target "$link")" = "$USB" ] && fail "$what: $link points at the USB copy"
    done
    btrfs-scan-gate status >/tmp/status.txt 2>&1
    grep -q "^$USB .* skip *outranked" /tmp/status.txt ||
        { sed 's/^/guest: status: /' /tmp/status.txt; fail "$what: status does not say skip outranked for $USB"; }
    tlog "$what: stick gated"
}

# 1. the unit's boot, then coldplug in udev's own order
[ -w /sys/module/btrfs/parameters/skip_scan ] || fail "patched module without a writable skip_scan"
must sys_gate_boot
sys_listed "$USB" || fail "boot: $USB not in skip_scan"
sys_udev_coldplug
usb_check coldplug

# 2. events again, the stick first, then every internal partition
sys_change_first "$USB"
usb_check stick-first

# 3. the internal partitions first, the stick last
sys_change_last "$USB"
usb_check stick-last

# nothing registers the stick, not even a scan of every device
btrfs device scan >/tmp/scan-all.log 2>&1
sed 's/^/guest: scan-all: /' /tmp/scan-all.log
[ "$(sys_registered "$USB")" = no ] || fail "btrfs device scan registered $USB"

# the internal rootfs-A mounts, plainly, by its shared names; the source is the internal partition
mkdir -p /ra
must mount /dev/disk/by-uuid/$ROOT_FSID /ra
src=$(awk '$2 == "/ra" { print $1 }' /proc/mounts)
log "mounted /ra from $src"
[ "$(readlink -f "$src")" = "$INT" ] || fail "/ra mounted from $src, expected $INT"
grep -q steamos /ra/etc/os-release || fail "rootfs-A content"
[ "$(sys_registered "$USB")" = no ] || fail "$USB registered after the mount"
must umount /ra
must mount /dev/disk/by-slot/active/rootfs /ra
[ "$(readlink -f "$(awk '$2 == "/ra" { print $1 }' /proc/mounts)")" = "$INT" ] || fail "by-slot/active/rootfs is not $INT"
must umount /ra
pass
