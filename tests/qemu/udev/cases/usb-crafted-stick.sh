#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos-usbcraft timeout=300 rules=gate append='root=PARTLABEL=rootfs-A'
# Issue 18 case 1 on Debian's 6.1 with the series: the SteamOS-like disk plus a USB mass-storage
# stick present at power-on (qemu-xhci + usb-storage, removable=off) whose partitions stick1 and
# stick2 each hold a fresh filesystem with its superblock crafted to claim rootfs (METADATA_UUID,
# metadata_uuid = dev_item.fsid = rootfs's fsid, rootfs's dev_item.uuid, CHANGING_FSID_V2,
# generation 999999; stick2 as devid 2 of 2). Once the kernel has scanned such a superblock, a
# plain mount of rootfs fails ("already registered with a higher generation"; with devid 2 the
# mount opens the stick's superblock). After the unit's boot, coldplug with udevd and change
# events with the stick first and last, both stick partitions are skipped for their identity
# (fsid-changing or untrusted-metadata-uuid), listed in skip_scan, never registered, without a slot
# and owning no link of rootfs; the steamos gated state holds (sys_check_gated_state: `btrfs device
# scan` of every device, then both slots of rootfs and var mounted at once with virtual_fsid);
# after a second scan of everything, rootfs-A and then rootfs-B mount plainly from the internal disk.
. /lib/guest-lib.sh
. /lib/system-lib.sh

# the stick's partitions, found by name through a sysfs path that goes through usb
n=0
S1='' S2=''
while { [ -z "$S1" ] || [ -z "$S2" ]; } && [ $n -lt 300 ]; do
    for u in /sys/class/block/sd*[0-9]; do
        [ -e "$u/uevent" ] || continue
        case $(readlink -f "$u") in */usb*) ;; *) continue ;; esac
        grep -qx 'PARTNAME=stick1' "$u/uevent" && S1=/dev/${u##*/}
        grep -qx 'PARTNAME=stick2' "$u/uevent" && S2=/dev/${u##*/}
    done
    { [ -n "$S1" ] && [ -n "$S2" ]; } || { n=$((n + 1)); sleep 0.1; }
done
[ -n "$S1" ] && [ -n "$S2" ] || fail "no USB partitions stick1/stick2 after 30 s: $(ls /sys/class/block | tr '\n' ' ')"
INT=$(sys_dev rootfs-A) || fail "no internal rootfs-A"
sb() { btrfs inspect-internal dump-super "$1" | awk -v k="$2" '$1 == k { print $2 }'; }
for s in $S1 $S2; do
    log "stick $s: fsid $(sb "$s" fsid) metadata_uuid $(sb "$s" metadata_uuid) flags $(sb "$s" flags) generation $(sb "$s" generation) devid $(sb "$s" dev_item.devid)"
    [ "$(sb "$s" metadata_uuid)" = "$ROOT_FSID" ] || fail "$s: metadata_uuid is not rootfs's fsid"
    [ "$(sb "$s" generation)" = 999999 ] || fail "$s: not the crafted generation"
done
[ "$(sb "$S2" dev_item.devid)" = 2 ] || fail "$S2 is not devid 2"

stick_check() {
    what=$1
    btrfs-scan-gate status >/tmp/status.txt 2>&1
    for s in $S1 $S2; do
        sys_props "$s"
        log "$what: $s: fs=$P_ID_FS_TYPE decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON slot=$P_BTRFS_SCAN_GATE_SLOT udisks-ignore=$P_UDISKS_IGNORE systemd-ready=$P_SYSTEMD_READY"
        [ "$P_BTRFS_SCAN_GATE_DECISION" = skip ] || fail "$what: $s decision $P_BTRFS_SCAN_GATE_DECISION"
        case $P_BTRFS_SCAN_GATE_REASON in
        fsid-changing | untrusted-metadata-uuid) ;;
        *) fail "$what: $s reason $P_BTRFS_SCAN_GATE_REASON, expected fsid-changing or untrusted-metadata-uuid" ;;
        esac
        case "$P_BTRFS_SCAN_GATE_SLOT" in - | "") ;; *) fail "$what: $s has slot $P_BTRFS_SCAN_GATE_SLOT" ;; esac
        [ "$P_BTRFS_SCAN_GATE_SLOT_ACTIVE" = - ] || fail "$what: $s has SLOT_ACTIVE=$P_BTRFS_SCAN_GATE_SLOT_ACTIVE"
        [ "$P_SYSTEMD_READY" = 0 ] || fail "$what: $s SYSTEMD_READY=$P_SYSTEMD_READY"
        sys_listed "$s" ||
            fail "$what: $s not in skip_scan: $(cat /sys/module/btrfs/parameters/skip_scan)"
        [ "$(sys_registered "$s")" = no ] || fail "$what: $s is registered with the kernel"
        grep -q "^$s .* skip *\(fsid-changing\|untrusted-metadata-uuid\)" /tmp/status.txt ||
            { sed 's/^/guest: status: /' /tmp/status.txt; fail "$what: status does not skip $s for its identity"; }
    done
    for link in /dev/disk/by-uuid/$ROOT_FSID /dev/disk/by-label/rootfs /dev/disk/by-slot/*/*; do
        t=$(target "$link")
        [ "$t" = "$S1" ] || [ "$t" = "$S2" ] && fail "$what: $link points at the stick ($t)"
    done
    [ "$(target /dev/disk/by-uuid/$ROOT_FSID)" = "$INT" ] || fail "$what: by-uuid/$ROOT_FSID -> $(target /dev/disk/by-uuid/$ROOT_FSID)"
    tlog "$what: stick gated"
}

# 1. the unit's boot (before udev), then coldplug in udev's own order
[ -w /sys/module/btrfs/parameters/skip_scan ] || fail "patched module without a writable skip_scan"
sys_gate_boot || log "boot exited $?"
for s in $S1 $S2; do
    sys_listed "$s" || fail "boot: $s not in skip_scan: $(cat /sys/module/btrfs/parameters/skip_scan)"
done
sys_udev_coldplug
stick_check coldplug

# 2. the stick first, then every internal partition; 3. the internal partitions first, the stick last
must udevadm trigger --action=change "/sys/class/block/${S1#/dev/}" "/sys/class/block/${S2#/dev/}"
must udevadm settle --timeout=60
must udevadm trigger --action=change --subsystem-match=block --sysname-match='vd*'
must udevadm settle --timeout=60
stick_check stick-first
must udevadm trigger --action=change --subsystem-match=block --sysname-match='vd*'
must udevadm settle --timeout=60
must udevadm trigger --action=change "/sys/class/block/${S1#/dev/}" "/sys/class/block/${S2#/dev/}"
must udevadm settle --timeout=60
stick_check stick-last

# the steamos state with the stick listed too; `btrfs device scan` of every device, both slots
# of rootfs and var mounted at once with virtual_fsid
SYS_SKIP_EXPECTED="rootfs-A rootfs-B stick1 stick2 var-A var-B"
sys_state_dump
sys_check_gated_state A
for s in $S1 $S2; do [ "$(sys_registered "$s")" = no ] || fail "$s registered after the scan of everything"; done

# every device scanned again; the root, then the other slot, mount plainly from the internal disk
btrfs device scan >/tmp/scan-all2.log 2>&1
sed 's/^/guest: scan-all-2: /' /tmp/scan-all2.log
for s in $S1 $S2; do [ "$(sys_registered "$s")" = no ] || fail "$s registered by the second scan"; done
mkdir -p /ra
for l in A B; do
    dev=$(sys_dev rootfs-$l)
    must mount "$dev" /ra
    src=$(readlink -f "$(awk '$2 == "/ra" { print $1 }' /proc/mounts)")
    log "plain mount of rootfs-$l: /ra from $src"
    [ "$src" = "$dev" ] || fail "rootfs-$l mounted from $src, expected $dev"
    grep -q steamos /ra/etc/os-release || fail "rootfs-$l content"
    must umount /ra
    # the next plain mount by path takes the device over (the kernel allows it for an unmounted
    # filesystem); the stick stays out
    for s in $S1 $S2; do [ "$(sys_registered "$s")" = no ] || fail "$s registered after mounting rootfs-$l"; done
done
# the root by its shared name, plainly
must mount /dev/disk/by-uuid/$ROOT_FSID /ra
[ "$(readlink -f "$(awk '$2 == "/ra" { print $1 }' /proc/mounts)")" = "$INT" ] || fail "by-uuid/$ROOT_FSID did not mount $INT"
must umount /ra
dmesg | grep -i 'higher generation\|metadata UUID change' && fail "the kernel saw the crafted superblock"
pass
