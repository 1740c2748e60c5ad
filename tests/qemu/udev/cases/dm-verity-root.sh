#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos-verity timeout=360 rules=gate kmods='dm-mod dm-bufio reed_solomon dm-verity' append='root=/dev/mapper/rootA'
# Issue 18 case 10 on Debian's 6.1 with the series: rootfs-A opened through dm-verity (`rootA`, the
# first dm device, over the rootfs-A partition, hash tree on the second disk, built on the host by
# veritysetup), a dm-linear `home` over the home partition (a unique btrfs) and a dm-linear `data` over
# a whole disk (serial data, no partition table, a unique btrfs), root=/dev/mapper/rootA.
# Orders: (1) the dm devices created with udev sync while udevd runs (as an initramfs leaves them),
# then the unit's boot and udevd's coldplug (trigger --action=add); (2) change events
# of the partitions first, then of the dm devices; (3) the dm devices first; (4) the dm devices
# removed, the partitions' events, then created again while udevd runs (udev sync); (5) with
# clone_policy=active, partitions first and dm first: rootA is then `scan clone`, registered.
# In each: the partitions under dm are `skip held` (listed), never registered, get no slot; rootA is
# decided (skip clone of rootfs-B, SLOT_ACTIVE=1) and owns by-uuid, by-label and
# by-slot/active/rootfs; rootfs-B is the inactive slot; home's and data's dm devices are `scan
# unique`, registered, and own by-uuid of their filesystems (a dm-linear over a trusted disk is the
# same storage, never a clone of its slave). Then rootA mounts read-only, rootfs-B with virtual_fsid,
# home and data plainly, all at once.
# Fails on main 683add4 (measured 2026-12-06 with this case: 58 failed checks, in all six steps; 36
# in the four steps of the first version, without the data disk and step 5): rootA gets no slot
# (SLOT=-, SLOT_ACTIVE unset: dm-verity has two slaves, the data partition and the hash disk, and a
# slot came only from a sole slave), status says "active slot: (unknown) (from none)" with
# root=/dev/mapper/rootA (the path was compared with /dev/dm-0), rootfs-B has no SLOT_ACTIVE, no
# by-slot link exists; with the dm devices' events first, by-uuid and by-label of rootfs go to
# rootfs-B; when the dm devices are created while udevd runs, the partitions keep their earlier
# decisions (rootfs-A `skip clone SLOT=A`, home and the data disk `scan unique`); with
# clone_policy=active rootA is `skip clone`, listed and unregistered. Passes since the helper reads the dm
# table (DM_TABLE_STATUS: verity's data device gives the slot), matches root=/dev/mapper/NAME by
# device number or sysfs dm/name, and re-announces members and copies whose udev record is stale.
# Not covered: dm devices created before udevd starts (no udev sync: Debian's 55-dm.rules disables
# the other rules on their coldplug `add`; real systems carry the initramfs's udev database over).
. /lib/guest-lib.sh
. /lib/system-lib.sh

PA=$(sys_dev rootfs-A) || fail "no rootfs-A partition"
PB=$(sys_dev rootfs-B) || fail "no rootfs-B partition"
PH=$(sys_dev home) || fail "no home partition"
HASHDEV=
for d in /sys/block/vd*; do
    [ "$(cat "$d/serial" 2>/dev/null)" = verity ] && HASHDEV=/dev/${d##*/}
done
[ -n "$HASHDEV" ] || fail "no disk with serial verity"
DATADISK=
for d in /sys/block/vd*; do
    [ "$(cat "$d/serial" 2>/dev/null)" = data ] && DATADISK=/dev/${d##*/}
done
[ -n "$DATADISK" ] || fail "no disk with serial data"
DATA_FSID=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a0d
read -r magic ROOTHASH SALT BLOCKS <<EOF
$(dd if="$HASHDEV" bs=1M skip=4 count=1 2>/dev/null | head -n 1)
EOF
[ "$magic" = bsg-verity ] && [ -n "$BLOCKS" ] || fail "no verity parameters on $HASHDEV"
SECT=$(cat "/sys/class/block/${PA#/dev/}/size")
[ "$SECT" = $((BLOCKS * 8)) ] || fail "rootfs-A has $SECT sectors, the hash tree covers $BLOCKS blocks"
VTABLE="0 $SECT verity 1 $PA $HASHDEV 4096 4096 $BLOCKS 0 sha256 $ROOTHASH $SALT"
LTABLE="0 $(cat "/sys/class/block/${PH#/dev/}/size") linear $PH 0"
DTABLE="0 $(cat "/sys/class/block/${DATADISK#/dev/}/size") linear $DATADISK 0"
log "rootfs-A $PA, rootfs-B $PB, home $PH, hash $HASHDEV, data disk $DATADISK; verity: $VTABLE"

dm_node() {
    for s in /sys/block/dm-*; do
        [ -e "$s/dm/name" ] && [ "$(cat "$s/dm/name")" = "$1" ] && { echo "/dev/${s##*/}"; return 0; }
    done
    return 1
}
dm_up() { # dmsetup options: both devices
    timeout 60 dmsetup "$@" create rootA --readonly --table "$VTABLE" >/tmp/dm.log 2>&1 || { cat /tmp/dm.log; fail "dmsetup create rootA"; }
    timeout 60 dmsetup "$@" create home --table "$LTABLE" >/tmp/dm.log 2>&1 || { cat /tmp/dm.log; fail "dmsetup create home"; }
    timeout 60 dmsetup "$@" create data --table "$DTABLE" >/tmp/dm.log 2>&1 || { cat /tmp/dm.log; fail "dmsetup create data"; }
    VD=$(dm_node rootA) || fail "no dm device rootA"
    HD=$(dm_node home) || fail "no dm device home"
    DD=$(dm_node data) || fail "no dm device data"
    log "rootA = $VD ($(dmsetup status rootA)), home = $HD, data = $DD"
}


verity_check() {
    what=$1
    btrfs-scan-gate status >/tmp/status.txt 2>&1
    skip=$(cat /sys/module/btrfs/parameters/skip_scan)
    sys_check_held $PA $PH $DATADISK
    dev=$VD
    sys_props "$dev"
    log "$what: $dev (rootA): fs=$P_ID_FS_TYPE decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON slot=$P_BTRFS_SCAN_GATE_SLOT base=$P_BTRFS_SCAN_GATE_SLOT_BASE slot-active=$P_BTRFS_SCAN_GATE_SLOT_ACTIVE udisks-ignore=$P_UDISKS_IGNORE"
    want ID_FS_TYPE btrfs
    want BTRFS_SCAN_GATE_DECISION $ROOTA_DECISION
    want BTRFS_SCAN_GATE_REASON clone
    want BTRFS_SCAN_GATE_SLOT A
    want BTRFS_SCAN_GATE_SLOT_ACTIVE 1
    want UDISKS_IGNORE -
    if [ "$ROOTA_DECISION" = skip ]; then
        case ",$skip," in *",$VD,"* | *",/dev/mapper/rootA,"*) ;; *) bad "$what: $VD not in skip_scan: $skip" ;; esac
        [ "$(sys_registered "$VD")" = no ] || bad "$what: $VD (rootA) is registered"
    else
        # clone_policy=active: the active copy is scanned, and it is the verity device
        case ",$skip," in *",$VD,"* | *",/dev/mapper/rootA,"*) bad "$what: $VD in skip_scan: $skip" ;; esac
        [ "$(sys_registered "$VD")" = yes ] || bad "$what: $VD (rootA) is not registered"
    fi
    dev=$PB
    sys_props "$dev"
    want BTRFS_SCAN_GATE_DECISION skip
    want BTRFS_SCAN_GATE_REASON clone
    want BTRFS_SCAN_GATE_SLOT B
    want BTRFS_SCAN_GATE_SLOT_ACTIVE 0
    [ "$(sys_registered "$PB")" = no ] || bad "$what: $PB (rootfs-B) is registered"
    for dev in $HD $DD; do
        sys_props "$dev"
        log "$what: $dev (dm-linear): decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON"
        want BTRFS_SCAN_GATE_DECISION scan
        want BTRFS_SCAN_GATE_REASON unique
        want BTRFS_SCAN_GATE_SLOT -
        [ "$(sys_registered "$dev")" = yes ] || bad "$what: $dev (dm-linear) is not registered"
    done
    for l in "by-uuid/$ROOT_FSID $VD" "by-label/rootfs $VD" "by-slot/active/rootfs $VD" \
        "by-slot/other/rootfs $PB" "by-uuid/$HOME_FSID $HD" "by-uuid/$DATA_FSID $DD"; do
        t=$(target "/dev/disk/${l% *}")
        log "$what: ${l% *} -> $t"
        [ "$t" = "${l#* }" ] || bad "$what: /dev/disk/${l% *} -> $t, expected ${l#* }"
    done
    for link in /dev/disk/by-slot/*/*; do
        case $(target "$link") in "$PA" | "$PH" | "$DATADISK") bad "$what: $link points at a device under dm" ;; esac
    done
    grep -q "^$VD .* A *$ROOTA_DECISION *clone" /tmp/status.txt || bad "$what: status: $(grep "^$VD " /tmp/status.txt), expected slot A $ROOTA_DECISION clone"
    grep -q "^active slot: A" /tmp/status.txt || bad "$what: status: $(grep '^active slot' /tmp/status.txt), expected A"
    tlog "$what: checked ($(wc -l </tmp/bad) failed checks so far)"
}

ROOTA_DECISION=skip # clone_policy skip-all (the default) until step 5

# 1. as an initramfs leaves them: udevd runs and the dm devices are created with udev sync (their
# udev records carry DM_UDEV_PRIMARY_SOURCE_FLAG, without which Debian's 55-dm.rules disables the
# other rules on a coldplug `add`); then the unit's boot and the coldplug of every device
[ -w /sys/module/btrfs/parameters/skip_scan ] || fail "patched module without a writable skip_scan"
mkdir -p /run/udev /etc/udev
/lib/systemd/systemd-udevd --daemon >/tmp/udevd.log 2>&1 || { cat /tmp/udevd.log; fail "systemd-udevd did not start"; }
dm_up
must udevadm settle --timeout=60
sys_gate_boot || log "boot exited $?"
must udevadm trigger --type=subsystems --action=add
must udevadm trigger --type=devices --action=add
must udevadm settle --timeout=60
tlog "coldplug settled"
verity_check coldplug

# 2. the partitions' events first, then the dm devices'; 3. the dm devices first
must udevadm trigger --action=change --subsystem-match=block --sysname-match='vd*'
must udevadm settle --timeout=60
must udevadm trigger --action=change --subsystem-match=block --sysname-match='dm-*'
must udevadm settle --timeout=60
verity_check partitions-first
must udevadm trigger --action=change --subsystem-match=block --sysname-match='dm-*'
must udevadm settle --timeout=60
must udevadm trigger --action=change --subsystem-match=block --sysname-match='vd*'
must udevadm settle --timeout=60
verity_check dm-first

# 4. the dm devices removed (the partitions are decided on their own again), then created again
# while udevd runs, with udev sync
must timeout 60 dmsetup remove rootA
must timeout 60 dmsetup remove home
must timeout 60 dmsetup remove data
must udevadm trigger --action=change --subsystem-match=block --sysname-match='vd*'
must udevadm settle --timeout=60
sys_props "$PA"
log "without dm: $PA decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON slot-active=$P_BTRFS_SCAN_GATE_SLOT_ACTIVE"
[ "$P_BTRFS_SCAN_GATE_REASON" != held ] || fail "$PA still held after dmsetup remove"
dm_up
must udevadm settle --timeout=60
sleep 1
must udevadm settle --timeout=60
# (observation: the dm devices' events sent change events to the stale members and copies)
log "dm-created-late: rootA's event: $(sys_prop "$VD" BTRFS_SCAN_GATE_ACTION), home's: $(sys_prop "$HD" BTRFS_SCAN_GATE_ACTION), data's: $(sys_prop "$DD" BTRFS_SCAN_GATE_ACTION)"
verity_check dm-created-late

# 5. clone_policy=active (the issue's report: the raw partition was scanned as the active copy): the
# verity device is the active copy and is scanned; the partition under it still never is; the
# partitions' events first, then the dm devices', then the dm devices first
echo "clone_policy=active" >/etc/btrfs-scan-gate.conf
ROOTA_DECISION=scan
must udevadm trigger --action=change --subsystem-match=block --sysname-match='vd*'
must udevadm settle --timeout=60
must udevadm trigger --action=change --subsystem-match=block --sysname-match='dm-*'
must udevadm settle --timeout=60
verity_check active-partitions-first
must udevadm trigger --action=change --subsystem-match=block --sysname-match='dm-*'
must udevadm settle --timeout=60
must udevadm trigger --action=change --subsystem-match=block --sysname-match='vd*'
must udevadm settle --timeout=60
verity_check active-dm-first

# rootA (read-only), rootfs-B (virtual_fsid) and home, at once
mkdir -p /ra /rb /home /data
must mount -o ro /dev/mapper/rootA /ra
must mount -o virtual_fsid "$PB" /rb
must mount "$HD" /home
must mount "$DD" /data
log "mounted: $(grep btrfs /proc/mounts | tr '\n' ';')"
grep -q steamos /ra/etc/os-release || fail "rootA content"
grep -q steamos /rb/etc/os-release || fail "rootfs-B content"
[ "$(readlink -f "$(awk '$2 == "/ra" { print $1 }' /proc/mounts)")" = "$VD" ] ||
    [ "$(awk '$2 == "/ra" { print $1 }' /proc/mounts)" = /dev/mapper/rootA ] || fail "/ra is not from rootA"
[ "$(sys_registered "$PA")" = no ] || fail "$PA registered after the mounts"
log "dmsetup status rootA: $(dmsetup status rootA)"
dmsetup status rootA | grep -q ' V$' || fail "verity reports corruption"
must umount /ra
must umount /rb
must umount /home
must umount /data
# observation only (not asserted): an explicit `btrfs device scan` of every device and the held partition
btrfs device scan >/tmp/scan-all.log 2>&1
sed 's/^/guest: scan-all: /' /tmp/scan-all.log
log "after btrfs device scan of everything: $PA registered=$(sys_registered "$PA"), $PH registered=$(sys_registered "$PH") (held partitions are not in skip_scan: $(cat /sys/module/btrfs/parameters/skip_scan))"
sys_bad_verdict
pass
