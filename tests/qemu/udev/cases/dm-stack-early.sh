#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos-verity timeout=420 rules=gate kmods='dm-mod dm-bufio reed_solomon dm-verity' append='root=/dev/mapper/root'
# Issue 18 case 10, the three orders dm-verity-root does not cover, on Debian's 6.1 with the series:
# - dm devices created before udevd starts (as the kernel's dm-mod.create= builds them without an
#   initramfs, or dmsetup in early boot): `dmsetup --noudevsync` before systemd-udevd runs, the
#   /dev/mapper nodes then deleted (dm-mod.create= makes none), so the first coldplug sees the dm
#   devices and their slaves with no earlier event and no udev database; Debian's 55-dm.rules then
#   disables the other rules on the dm devices' `add` (and, from the database, on their later
#   `change`). (dm-mod.create= itself cannot run here: Debian builds dm-mod as a module, and
#   dm-init needs it built in.)
# - dm on dm: `root` = dm-linear over `vroot` = dm-verity over rootfs-A (hash tree on the verity
#   disk); root=/dev/mapper/root. `home` = dm-linear over the home partition, `espmap` = dm-linear
#   over the esp (vfat: the gate's rules probe it and keep nothing: no ID_FS_TYPE, no decision).
# - the dm devices removed while udevd runs (`dmsetup remove`, top first): their former slaves must
#   end as a change event of everything gives them, without any event but the removal's.
# Expected after the coldplug, and after change events with the partitions first and the dm devices
# first: rootfs-A and vroot `skip held` (never registered, no slot), root `skip clone SLOT=A
# SLOT_ACTIVE=1` owning by-uuid, by-label and by-slot/active/rootfs, rootfs-B the inactive slot
# (by-slot/other/rootfs), home's dm device `scan unique` and registered, the home partition held.
# After `dmsetup remove root`: vroot is decided on its own (no longer held) with no event but the
# removal's; after removing vroot and home, rootfs-A and home likewise (home registered again); each
# time the state equals what a change event of every block device then gives.
# Every failed expectation is logged (CHECK-FAILED:) and the case fails at the end.
# Fails on e640833 (measured 2026-12-06): 56 failed checks. With only one of the three changes left
# out: without the rules' early-dm block 43 (in every step before the removals: the dm devices
# undecided, no ID_FS_TYPE, by-uuid and by-label of rootfs on rootfs-B, home's by-uuid on the held
# partition, no by-slot links), without stack_bottom() 26 (root has no slot, status "active slot:
# (unknown)", rootfs-B no SLOT_ACTIVE, no by-slot links), without the remove event's re-announce 7
# (vroot, then rootfs-A and the home partition still `skip held` after the removals; home
# unregistered).
. /lib/guest-lib.sh
. /lib/system-lib.sh

PA=$(sys_dev rootfs-A) || fail "no rootfs-A partition"
PB=$(sys_dev rootfs-B) || fail "no rootfs-B partition"
PH=$(sys_dev home) || fail "no home partition"
PE=$(sys_dev esp) || fail "no esp partition"
HASHDEV=
for d in /sys/block/vd*; do
    [ "$(cat "$d/serial" 2>/dev/null)" = verity ] && HASHDEV=/dev/${d##*/}
done
[ -n "$HASHDEV" ] || fail "no disk with serial verity"
read -r magic ROOTHASH SALT BLOCKS <<EOF
$(dd if="$HASHDEV" bs=1M skip=4 count=1 2>/dev/null | head -n 1)
EOF
[ "$magic" = bsg-verity ] && [ -n "$BLOCKS" ] || fail "no verity parameters on $HASHDEV"
SECT=$(cat "/sys/class/block/${PA#/dev/}/size")
[ "$SECT" = $((BLOCKS * 8)) ] || fail "rootfs-A has $SECT sectors, the hash tree covers $BLOCKS blocks"
VTABLE="0 $SECT verity 1 $PA $HASHDEV 4096 4096 $BLOCKS 0 sha256 $ROOTHASH $SALT"
LTABLE="0 $(cat "/sys/class/block/${PH#/dev/}/size") linear $PH 0"

dm_node() {
    for s in /sys/block/dm-*; do
        [ -e "$s/dm/name" ] && [ "$(cat "$s/dm/name")" = "$1" ] && { echo "/dev/${s##*/}"; return 0; }
    done
    return 1
}
dmc() { timeout 60 dmsetup "$@" >/tmp/dm.log 2>&1 || { cat /tmp/dm.log; fail "dmsetup $*"; }; }


stack_check() {
    what=$1
    btrfs-scan-gate status >/tmp/status.txt 2>&1
    skip=$(cat /sys/module/btrfs/parameters/skip_scan)
    sys_check_held $PA $VR $PH
    dev=$TOP
    sys_props "$dev"
    log "$what: $dev (root, linear over verity): fs=$P_ID_FS_TYPE decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON slot=$P_BTRFS_SCAN_GATE_SLOT active=$P_BTRFS_SCAN_GATE_SLOT_ACTIVE"
    want ID_FS_TYPE btrfs
    want BTRFS_SCAN_GATE_DECISION skip
    want BTRFS_SCAN_GATE_REASON clone
    want BTRFS_SCAN_GATE_SLOT A
    want BTRFS_SCAN_GATE_SLOT_BASE rootfs
    want BTRFS_SCAN_GATE_SLOT_ACTIVE 1
    case ",$skip," in *",$TOP,"* | *",/dev/mapper/root,"*) ;; *) bad "$what: $TOP not in skip_scan: $skip" ;; esac
    [ "$(sys_registered "$TOP")" = no ] || bad "$what: $TOP (root) is registered"
    dev=$PB
    sys_props "$dev"
    want BTRFS_SCAN_GATE_DECISION skip
    want BTRFS_SCAN_GATE_REASON clone
    want BTRFS_SCAN_GATE_SLOT B
    want BTRFS_SCAN_GATE_SLOT_ACTIVE 0
    [ "$(sys_registered "$PB")" = no ] || bad "$what: $PB (rootfs-B) is registered"
    dev=$HD
    sys_props "$dev"
    log "$what: $dev (home, linear): fs=$P_ID_FS_TYPE decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON"
    want BTRFS_SCAN_GATE_DECISION scan
    want BTRFS_SCAN_GATE_REASON unique
    [ "$(sys_registered "$HD")" = yes ] || bad "$what: $HD (home) is not registered"
    for l in "by-uuid/$ROOT_FSID $TOP" "by-label/rootfs $TOP" "by-slot/active/rootfs $TOP" \
        "by-slot/other/rootfs $PB" "by-uuid/$HOME_FSID $HD"; do
        t=$(target "/dev/disk/${l% *}")
        log "$what: ${l% *} -> $t"
        [ "$t" = "${l#* }" ] || bad "$what: /dev/disk/${l% *} -> $t, expected ${l#* }"
    done
    for link in /dev/disk/by-slot/*/*; do
        case $(target "$link") in "$PA" | "$VR" | "$PH") bad "$what: $link points at a held device" ;; esac
    done
    grep -q "^active slot: A" /tmp/status.txt || bad "$what: status: $(grep '^active slot' /tmp/status.txt), expected A"
    dev=$ED
    sys_props "$dev"
    want ID_FS_TYPE -
    want BTRFS_SCAN_GATE_DECISION -
    tlog "$what: checked ($(wc -l </tmp/bad) failed checks so far)"
}

# the decision, slot, registration and links of DEVS..., one line each, into file $1
snap() {
    out=$1
    shift
    : >"$out"
    for dev in "$@"; do
        sys_props "$dev"
        echo "$dev decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON slot=$P_BTRFS_SCAN_GATE_SLOT active=$P_BTRFS_SCAN_GATE_SLOT_ACTIVE registered=$(sys_registered "$dev")" >>"$out"
    done
    # (not rootfs's by-uuid and by-label: with root='s device gone no slot is active, the copies have
    # one link priority, and udev gives the link to the last event of them, by design)
    echo "link by-uuid/$HOME_FSID -> $(target "/dev/disk/by-uuid/$HOME_FSID")" >>"$out"
    for link in /dev/disk/by-slot/*/*; do [ -e "$link" ] && echo "link ${link#/dev/disk/} -> $(target "$link")" >>"$out"; done
}
# after a dm removal and its settle: DEVS (the former slaves first) must not be held, and a change
# event of every block device must change nothing
removed_check() {
    what=$1
    shift
    snap /tmp/after-remove "$@"
    sed "s/^/guest: $what: after the removal: /" /tmp/after-remove
    for dev in $FORMER; do
        grep -q "^$dev .*reason=held" /tmp/after-remove && bad "$what: $dev still held after the removal: $(grep "^$dev " /tmp/after-remove)"
    done
    # no link of rootfs on a device still held
    for l in by-uuid/$ROOT_FSID by-label/rootfs; do
        t=$(target "/dev/disk/$l")
        log "$what: $l -> $t"
        grep -q "^$t .*reason=held" /tmp/after-remove && bad "$what: /dev/disk/$l -> $t, a held device"
    done
    must udevadm trigger --action=change --subsystem-match=block
    must udevadm settle --timeout=60
    snap /tmp/after-change "$@"
    if ! cmp -s /tmp/after-remove /tmp/after-change; then
        diff /tmp/after-remove /tmp/after-change | sed "s/^/guest: $what: differs from a change of everything: /"
        bad "$what: the state after the removal differs from the one a change event of every device gives"
    fi
    tlog "$what: checked ($(wc -l </tmp/bad) failed checks so far)"
}

# 1. the dm devices before udevd (no udev: no sync, no database), /dev/mapper names deleted as
# dm-mod.create= makes none
[ -w /sys/module/btrfs/parameters/skip_scan ] || fail "patched module without a writable skip_scan"
[ -e /run/udev/control ] && fail "udevd runs already"
dmc --noudevsync create vroot --readonly --table "$VTABLE"
VR=$(dm_node vroot) || fail "no dm device vroot"
dmc --noudevsync create root --readonly --table "0 $SECT linear $VR 0"
dmc --noudevsync create home --table "$LTABLE"
# and one without btrfs (vfat): the gate's probe of it is not kept, nothing decides it
dmc --noudevsync create espmap --table "0 $(cat "/sys/class/block/${PE#/dev/}/size") linear $PE 0"
TOP=$(dm_node root) || fail "no dm device root"
HD=$(dm_node home) || fail "no dm device home"
ED=$(dm_node espmap) || fail "no dm device espmap"
rm -f /dev/mapper/vroot /dev/mapper/root /dev/mapper/home /dev/mapper/espmap
log "before udevd: vroot = $VR (slaves: $(ls /sys/block/${VR#/dev/}/slaves | tr '\n' ' ')), root = $TOP (slaves: $(ls /sys/block/${TOP#/dev/}/slaves | tr '\n' ' ')), home = $HD; rootfs-A $PA, rootfs-B $PB, home $PH, hash $HASHDEV"
sys_gate_boot || log "boot exited $?"
sys_udev_coldplug
log "coldplug: root's DM flags: $(udevadm info -q property -n "$TOP" | grep -E '^DM_UDEV_(DISABLE_OTHER|PRIMARY)' | tr '\n' ' ')"
stack_check early-coldplug

# 2. change events: the partitions first, then the dm devices; the dm devices first
must udevadm trigger --action=change --subsystem-match=block --sysname-match='vd*'
must udevadm settle --timeout=60
must udevadm trigger --action=change --subsystem-match=block --sysname-match='dm-*'
must udevadm settle --timeout=60
stack_check early-partitions-first
must udevadm trigger --action=change --subsystem-match=block --sysname-match='dm-*'
must udevadm settle --timeout=60
must udevadm trigger --action=change --subsystem-match=block --sysname-match='vd*'
must udevadm settle --timeout=60
stack_check early-dm-first

# 3. removals while udevd runs: root (vroot's holder), then vroot and home (the partitions' holders)
FORMER=$VR
must timeout 60 dmsetup remove root
must udevadm settle --timeout=60
sleep 1
must udevadm settle --timeout=60
removed_check removed-root "$VR" "$PA" "$PB" "$HD" "$PH"
FORMER="$PA $PH"
must timeout 60 dmsetup remove vroot
must timeout 60 dmsetup remove home
must timeout 60 dmsetup remove espmap
must udevadm settle --timeout=60
sleep 1
must udevadm settle --timeout=60
removed_check removed-all "$PA" "$PB" "$PH"
grep -q "^$PH decision=scan reason=unique .*registered=yes" /tmp/after-remove || bad "removed-all: $PH: $(grep "^$PH " /tmp/after-remove), expected scan unique registered"
grep -q "^$PA decision=skip reason=clone slot=A " /tmp/after-remove || bad "removed-all: $PA: $(grep "^$PA " /tmp/after-remove), expected skip clone slot A"

sys_bad_verdict
pass
