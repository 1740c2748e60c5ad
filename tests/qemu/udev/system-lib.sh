# Sourced by the whole-system cases (tests/qemu/udev/cases/) inside the guest, after
# /lib/guest-lib.sh. busybox sh. The disks are the harness's `steamos`/`steamos-ab` layouts.
ROOT_FSID=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a02
VAR_FSID=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a03
HOME_FSID=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a04
SYS_LABELS="esp rootfs-A rootfs-B var-A var-B home"
SYS_CLONES="rootfs-A rootfs-B var-A var-B"

# runs what btrfs-scan-gate.service runs (its ExecStart=), as systemd would before the trigger
sys_gate_boot() {
    cmd=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/btrfs-scan-gate.service)
    [ -n "$cmd" ] || fail "no ExecStart= in the staged btrfs-scan-gate.service"
    log "btrfs-scan-gate.service: $cmd"
    $cmd >/tmp/gate-boot.log 2>&1
    rc=$?
    sed 's/^/guest: boot: /' /tmp/gate-boot.log
    return $rc
}

# starts Debian's systemd-udevd and replays the coldplug events, as systemd-udev-trigger.service
sys_udev_coldplug() {
    mkdir -p /run/udev /etc/udev
    /lib/systemd/systemd-udevd --daemon >/tmp/udevd.log 2>&1 || { cat /tmp/udevd.log; fail "systemd-udevd did not start"; }
    tlog "udevd started"
    must udevadm trigger --type=subsystems --action=add
    must udevadm trigger --type=devices --action=add
    must udevadm settle --timeout=60
    tlog "coldplug settled"
}

# asks the host for disk ID ("HOTPLUG-REQUEST: dN", which run-udev-case.sh answers with
# device_add), waits until udev has named the partitions LABEL... and settles
sys_hotplug() {
    id=$1
    shift
    log "hotplug: requesting $id (expecting $*)"
    echo "HOTPLUG-REQUEST: $id"
    n=0
    for l in "$@"; do
        while [ ! -e "/dev/disk/by-partlabel/$l" ]; do
            n=$((n + 1))
            [ $n -lt 300 ] || fail "hotplug $id: /dev/disk/by-partlabel/$l did not appear in 60 s"
            sleep 0.2
        done
    done
    must udevadm settle --timeout=60
    # events the rules replay from RUN+= (udevadm trigger) may reach udevd just after the queue
    # emptied: settle once more after a moment
    sleep 1
    must udevadm settle --timeout=60
    log "hotplug: $id attached, udev settled"
}

# Process starts are expensive under TCG (0.05-0.5 s each): the helpers below read files with the
# shell's `read` and keep what they learnt in variables.

# sys_map: "name=label" of every partition from sysfs (not from udev's links), in SYS_MAP
sys_map() {
    SYS_MAP=
    for u in /sys/class/block/*/uevent; do
        dn='' pn=''
        while IFS='=' read -r k v; do
            case $k in DEVNAME) dn=$v ;; PARTNAME) pn=$v ;; esac
        done <"$u"
        [ -n "$pn" ] && SYS_MAP="$SYS_MAP $dn=$pn"
    done
}

# device node of the partition labelled $1
sys_dev() {
    [ -n "${SYS_MAP:-}" ] || sys_map
    for e in $SYS_MAP; do
        [ "${e#*=}" = "$1" ] && { echo "/dev/${e%%=*}"; return 0; }
    done
    sys_map     # a hot-plugged disk: look again
    for e in $SYS_MAP; do
        [ "${e#*=}" = "$1" ] && { echo "/dev/${e%%=*}"; return 0; }
    done
    return 1
}

# the device node of the USB partition (its sysfs path goes through usb) named $1 into SYS_USB_PART,
# waiting up to 30 s for the hot-plugged stick; fails the case if there is none
sys_usb_part() {
    n=0
    while [ $n -lt 300 ]; do
        for u in /sys/class/block/sd*[0-9]; do
            [ -e "$u/uevent" ] || continue
            grep -qx "PARTNAME=$1" "$u/uevent" &&
                case $(readlink -f "$u") in */usb*) SYS_USB_PART=/dev/${u##*/}; return 0 ;; esac
        done
        n=$((n + 1))
        sleep 0.1
    done
    fail "no USB partition $1 after 30 s: $(ls /sys/class/block | tr '\n' ' ')"
}

# change events in two orders: sys_change_first DEV (DEV's, then every virtio disk's and partition's)
# and sys_change_last DEV (the other way round), each settled
sys_change_first() {
    must udevadm trigger --action=change "/sys/class/block/${1#/dev/}"
    must udevadm settle --timeout=60
    must udevadm trigger --action=change --subsystem-match=block --sysname-match='vd*'
    must udevadm settle --timeout=60
}
sys_change_last() {
    must udevadm trigger --action=change --subsystem-match=block --sysname-match='vd*'
    must udevadm settle --timeout=60
    must udevadm trigger --action=change "/sys/class/block/${1#/dev/}"
    must udevadm settle --timeout=60
}

# partition label of a device node or link (its name when it has none)
sys_label() {
    case $1 in /dev/disk/*) n=$(readlink -f "$1") ;; *) n=$1 ;; esac
    n=${n#/dev/}
    [ -n "${SYS_MAP:-}" ] || sys_map
    for e in $SYS_MAP; do
        [ "${e%%=*}" = "$n" ] && { echo "${e#*=}"; return 0; }
    done
    echo "$n"
}

# udev properties of device $1 into P_<KEY> variables (the ones the cases look at; "-" unset)
sys_props() {
    udevadm info -q property -n "$1" >/tmp/props 2>&1
    for k in ID_FS_TYPE ID_BTRFS_READY SYSTEMD_READY UDISKS_IGNORE BTRFS_SCAN_GATE_DECISION \
        BTRFS_SCAN_GATE_REASON BTRFS_SCAN_GATE_SLOT BTRFS_SCAN_GATE_SLOT_BASE \
        BTRFS_SCAN_GATE_SLOT_ACTIVE BTRFS_SCAN_GATE_ERROR BTRFS_SCAN_GATE_ACTION BTRFS_SCAN_GATE_GENERATION; do
        eval "P_$k=-"
    done
    while IFS='=' read -r k v; do
        case $k in
        ID_FS_TYPE | ID_BTRFS_READY | SYSTEMD_READY | UDISKS_IGNORE | BTRFS_SCAN_GATE_*) eval "P_$k=\$v" ;;
        esac
    done </tmp/props
}

# udev property $2 of device $1 ("-" when unset)
sys_prop() {
    sys_props "$1"
    eval "echo \${P_$2:--}"
}

# log with the guest's uptime
tlog() { read -r up _ </proc/uptime; log "[$up] $*"; }

# sys_listed DEV: DEV is in the kernel's skip_scan, by its own entry or by the starred entry of its
# whole disk (/dev/sda* covers the disk and its partitions: hot-pluggable media is listed so)
sys_listed() {
    local dev=$1 name disk
    name=${dev#/dev/}
    disk=$name
    [ -e "/sys/class/block/$name/partition" ] && disk=$(basename "$(readlink -f "/sys/class/block/$name/..")")
    case ",$(cat /sys/module/btrfs/parameters/skip_scan)," in
    *",$dev,"* | *",/dev/$disk*,"*) return 0 ;;
    esac
    return 1
}

# is $1 registered with the kernel (and not mounted)? On 6.1 BTRFS_IOC_FORGET_DEV by path
# succeeds only for a registered device (ENOENT otherwise); a device it forgot is scanned again at
# once, so the probe changes nothing (a skip_scan-listed device could not be scanned again: the
# case fails on it anyway). Later kernels (6.12) answer 0 for an unknown device: "n/a" there.
sys_registered() {
    if [ -e /sys/fs/btrfs/features/temp_fsid ]; then
        echo n/a
        return
    fi
    if btrfs device scan --forget "$1" >>/tmp/forget.log 2>&1; then
        btrfs device scan "$1" >>/tmp/forget.log 2>&1
        echo yes
    elif tail -n 1 /tmp/forget.log | grep -q 'busy'; then
        echo busy
    else
        echo no
    fi
}

# the skip_scan list as sorted labels ("(absent)" on an unpatched module)
sys_skip_labels() {
    [ -e /sys/module/btrfs/parameters/skip_scan ] || { echo "(absent)"; return; }
    l=$(tr ',' '\n' </sys/module/btrfs/parameters/skip_scan | while read -r d; do
        case $d in
        "") ;;
        *'*')
            # a whole disk, starred: the disk's partitions
            disk=${d#/dev/}
            disk=${disk%'*'}
            for p in /sys/class/block/"$disk"/"$disk"*; do
                [ -e "$p/partition" ] && sys_label "/dev/${p##*/}"
            done
            ;;
        *) sys_label "$d" ;;
        esac
    done | sort | tr '\n' ' ')
    echo "${l% }"
}

# The canonical state, in labels rather than device names so that every disk layout and event
# order can be compared: per partition the gate's udev properties, skip_scan membership and kernel
# registration; the shared and per-slot links. Lines start "STATE: ". Call before mounting.
sys_state_dump() {
    sys_state_dump_ >/tmp/state.txt
    cat /tmp/state.txt
}
sys_state_dump_() {
    skip=$(sys_skip_labels)
    echo "STATE: skip_scan: $skip"
    for l in $SYS_LABELS; do
        d=$(sys_dev "$l") || { echo "STATE: $l: absent"; continue; }
        sys_props "$d"
        p="fs=$P_ID_FS_TYPE decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON"
        p="$p slot=$P_BTRFS_SCAN_GATE_SLOT slot-base=$P_BTRFS_SCAN_GATE_SLOT_BASE"
        p="$p slot-active=$P_BTRFS_SCAN_GATE_SLOT_ACTIVE error=$P_BTRFS_SCAN_GATE_ERROR"
        p="$p btrfs-ready=$P_ID_BTRFS_READY systemd-ready=$P_SYSTEMD_READY udisks-ignore=$P_UDISKS_IGNORE"
        case " $skip " in *" $l "*) p="$p in-skip-scan=yes" ;; *) p="$p in-skip-scan=no" ;; esac
        [ "$P_ID_FS_TYPE" = btrfs ] && p="$p registered=$(sys_registered "$d")"
        echo "STATE: $l: $p"
    done
    for f in $ROOT_FSID $VAR_FSID $HOME_FSID; do
        [ -e "/sys/fs/btrfs/$f" ] && echo "STATE: /sys/fs/btrfs/$f exists"
    done
    for link in /dev/disk/by-uuid/$ROOT_FSID /dev/disk/by-uuid/$VAR_FSID /dev/disk/by-uuid/$HOME_FSID \
        /dev/disk/by-label/rootfs /dev/disk/by-label/var /dev/disk/by-slot/*/*; do
        if [ -e "$link" ]; then
            echo "STATE: link ${link#/dev/disk/} -> $(sys_label "$link")"
        else
            echo "STATE: link ${link#/dev/disk/} missing"
        fi
    done
    # the helper's own view (status changes nothing)
    btrfs-scan-gate status >/tmp/status.txt 2>&1
    sed -n 's/^active slot: /STATE: active slot: /p' /tmp/status.txt
    awk '$1 ~ /^\/dev\// { print $1, $6, $7 }' /tmp/status.txt | while read -r d dec why; do
        echo "$(sys_label "$d") $dec $why"
    done | sort | sed 's/^/STATE: status: /'
}

# fails unless the clones are neither registered (forget probe) nor in the kernel's mounted view
sys_assert_clones_unregistered() {
    btrfs filesystem show --mounted >/tmp/fi-show.txt 2>&1
    for l in $SYS_CLONES; do
        d=$(sys_dev "$l") || fail "$l absent"
        [ "$(sys_registered "$d")" = no ] || fail "$l ($d) is registered with the kernel"
        # (plain `btrfs filesystem show` reads the disks itself and lists unregistered clones too:
        # only its --mounted view comes from the kernel)
        grep -q "path $d\$" /tmp/fi-show.txt && fail "btrfs filesystem show --mounted lists $l ($d)"
    done
    for f in $ROOT_FSID $VAR_FSID; do [ -e /sys/fs/btrfs/$f ] && fail "/sys/fs/btrfs/$f exists"; done
    return 0
}

# the dump (/tmp/state.txt) has the line "STATE: $1" (a grep pattern, whole line)
sys_expect() {
    grep -qx "STATE: $1" /tmp/state.txt || fail "state: no line 'STATE: $1'"
}

# The state every case must reach with the gate on the patched module, active slot $1 (default A,
# the other one B): checked from the dump, then `btrfs device scan` of every device, then both
# slots mounted at once.
sys_check_gated_state() {
    a=${1:-A}
    o=$([ "$a" = A ] && echo B || echo A)
    # SYS_SKIP_EXPECTED: the whole skip_scan line when a case adds listed devices (crafted media)
    sys_expect "skip_scan: ${SYS_SKIP_EXPECTED:-rootfs-A rootfs-B var-A var-B}"
    for l in $SYS_CLONES; do
        sys_expect "$l: fs=btrfs decision=skip reason=clone .* in-skip-scan=yes registered=no"
    done
    sys_expect "home: fs=btrfs decision=scan reason=unique .* in-skip-scan=no registered=yes"
    sys_expect "rootfs-$a: .* slot-active=1 .* udisks-ignore=- .*"
    sys_expect "var-$a: .* slot-active=1 .* udisks-ignore=- .*"
    sys_expect "rootfs-$o: .* slot-active=0 .* udisks-ignore=1 .*"
    sys_expect "var-$o: .* slot-active=0 .* udisks-ignore=1 .*"
    sys_expect "link by-uuid/$ROOT_FSID -> rootfs-$a"
    sys_expect "link by-uuid/$VAR_FSID -> var-$a"
    sys_expect "link by-label/rootfs -> rootfs-$a"
    sys_expect "link by-uuid/$HOME_FSID -> home"
    sys_expect "link by-slot/active/rootfs -> rootfs-$a"
    sys_expect "link by-slot/other/rootfs -> rootfs-$o"
    sys_expect "link by-slot/active/var -> var-$a"
    sys_expect "link by-slot/other/var -> var-$o"
    sys_expect "active slot: $a .*"
    tlog "btrfs device scan (every device)"
    btrfs device scan >/tmp/scan-all.log 2>&1
    sed 's/^/guest: scan-all: /' /tmp/scan-all.log
    sys_assert_clones_unregistered
    mkdir -p /ra /rb /va /vb /home
    must mount -o virtual_fsid /dev/disk/by-slot/active/rootfs /ra
    must mount -o virtual_fsid /dev/disk/by-slot/other/rootfs /rb
    must mount -o virtual_fsid /dev/disk/by-slot/active/var /va
    must mount -o virtual_fsid /dev/disk/by-slot/other/var /vb
    must mount /dev/disk/by-uuid/$HOME_FSID /home
    grep -q steamos /ra/etc/os-release || fail "rootfs-$a content"
    grep -q steamos /rb/etc/os-release || fail "rootfs-$o content"
    log "mounted: $(grep btrfs /proc/mounts | tr '\n' ';')"
    must umount /ra
    must umount /rb
    must umount /va
    must umount /vb
    must umount /home
    tlog "both slots of rootfs and var mounted at once and unmounted"
}

# link target of $1, or "missing"
target() { if [ -e "$1" ]; then readlink -f "$1"; else echo missing; fi; }

# Soft checks: a failed expectation is logged and counted in /tmp/bad; the case fails at its end
# with all of them listed (sys_bad_verdict), so one run shows every wrong decision, in every order.
: >/tmp/bad
bad() { echo "guest: CHECK-FAILED: $*"; echo "$*" >>/tmp/bad; }
# has KEY=VALUE among the P_ variables of the last sys_props ($what and $dev name the check)
want() { eval "v=\$P_$1"; [ "$v" = "$2" ] || bad "$what: $dev: $1=$v, expected $2"; }
sys_bad_verdict() {
    [ -s /tmp/bad ] || return 0
    sed 's/^/guest: failed: /' /tmp/bad
    fail "$(wc -l </tmp/bad) checks failed (listed above)"
}

# sys_check_held DEV...: each a member of a stacked device (issue 18 case 10): `skip held`, no
# slot, not registered, and `status` (in /tmp/status.txt) never decides it otherwise. Soft checks.
sys_check_held() {
    for dev in "$@"; do
        sys_props "$dev"
        log "$what: $dev (held): fs=$P_ID_FS_TYPE decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON slot=$P_BTRFS_SCAN_GATE_SLOT slot-active=$P_BTRFS_SCAN_GATE_SLOT_ACTIVE"
        want BTRFS_SCAN_GATE_DECISION skip
        want BTRFS_SCAN_GATE_REASON held
        want BTRFS_SCAN_GATE_SLOT -
        want BTRFS_SCAN_GATE_SLOT_ACTIVE -
        [ "$(sys_registered "$dev")" = no ] || bad "$what: $dev (held) is registered with the kernel"
        # a held device is listed as `skip held`, or not at all; never as a copy
        grep "^$dev " /tmp/status.txt | grep -qv " held " && bad "$what: status decides $dev (held): $(grep "^$dev " /tmp/status.txt)"
    done
}

# Counted checks: every expectation is a check that passes (/tmp/good) or fails (`bad`, /tmp/bad),
# grouped in steps; sys_count_verdict prints the counts, the steps and the failed checks, and fails
# the case when one failed. Nothing stops at the first failure: one run shows every wrong answer.
: >/tmp/good
: >/tmp/steps
good() { echo "$*" >>/tmp/good; }
# expect DESC CMD...: the check DESC passes when CMD succeeds
expect() {
    _expect_what=$1
    shift
    if "$@"; then good "$_expect_what"; else bad "$_expect_what"; fi
}
step_begin() {
    STEP=$1
    STEP_BAD=$(wc -l </tmp/bad)
    tlog "step $STEP"
}
step_end() {
    if [ "$(wc -l </tmp/bad)" = "$STEP_BAD" ]; then r=PASS; else r=FAIL; fi
    echo "$STEP $r" >>/tmp/steps
    log "STEP-RESULT: $STEP $r"
}
sys_count_verdict() {
    np=$(wc -l </tmp/good)
    nf=$(wc -l </tmp/bad)
    if [ -s /tmp/steps ]; then
        log "STEPS: $(grep -c ' PASS$' /tmp/steps) of $(wc -l </tmp/steps) passed"
        sed 's/^/guest: step: /' /tmp/steps
    fi
    log "CHECKS: $np passed, $nf failed"
    [ "$nf" = 0 ] && pass
    sed 's/^/guest: failed: /' /tmp/bad
    fail "$nf of $((np + nf)) checks failed (listed above)"
}
# in_skip_scan DEV: the kernel's skip list names DEV, or its whole disk in the starred form
in_skip_scan() {
    w=$(readlink -f /sys/class/block/${1#/dev/}/..)
    case ",$(cat /sys/module/btrfs/parameters/skip_scan)," in
    *",$1,"* | *",$1*,"* | *",/dev/${w##*/}*,"*) return 0 ;;
    esac
    return 1
}
# registration of DEV without disturbing it: a device in skip_scan is not probed (the probe's scan
# again would be refused, and the probe would have unregistered it): "listed"
sys_registered_unlisted() {
    if [ -e /sys/module/btrfs/parameters/skip_scan ] && in_skip_scan "$1"; then echo listed; else sys_registered "$1"; fi
}
# not_ready_0 DEV: udev does not hold DEV back (SYSTEMD_READY unset or 1)
not_ready_0() { [ "$(sys_prop "$1" SYSTEMD_READY)" != 0 ]; }
is_ready_0() { [ "$(sys_prop "$1" SYSTEMD_READY)" = 0 ]; }
# mounts_rw DEV DIR: DEV mounts at DIR (mount output to the log) and unmounts
mounts_rw() {
    mkdir -p "$2"
    if mount -t btrfs "$1" "$2" >/tmp/mount.log 2>&1; then
        umount "$2"
        return 0
    fi
    sed "s|^|guest: mount $1: |" /tmp/mount.log
    dmesg | grep -i btrfs | tail -n 5 | sed 's/^/guest: dmesg: /'
    return 1
}

# systemd's TEST-64-UDEV-STORAGE testcase_btrfs_basic, re-expressed for udevd without systemd on
# the `basic-sata` disks (four blank SATA disks the boot does not name), plus what its test leaves
# to the rest of the suite: readiness of a raid1 whose partner is plugged later, and registration
# by the events udev sees after `btrfs device scan --forget`. The same steps with the gate and with
# systemd's stock 64-btrfs.rules: both must give the same answers.
sys_btrfs_basic() {
    B=/dev/disk/by-id/ata-QEMU_HARDDISK_btrfsbasic
    n=0
    while [ ! -e ${B}3 ] && [ $n -lt 300 ]; do n=$((n + 1)); sleep 0.1; done
    [ -e ${B}3 ] || fail "no $B{0..3} links: $(ls /dev/disk/by-id 2>&1 | tr '\n' ' ')"
    D0=${B}0 D1=${B}1 D2=${B}2 D3=${B}3
    S0=$(readlink -f $D0) S1=$(readlink -f $D1) S2=$(readlink -f $D2) S3=$(readlink -f $D3)
    log "SATA disks: $S0 $S1 $S2 $S3 ($(readlink -f /sys/block/${S0#/dev/}))"
    uuidp=5c1a6e2f-0d3b-4c1e-9a7f-0000000bb00

    step_begin 1-single-device
    must udevadm lock --device=$D0 mkfs.btrfs -f -L btrfs_root -U ${uuidp}0 $D0 >/tmp/mkfs.log 2>&1
    expect "single: by-uuid and by-label links appear" \
        udevadm wait --settle --timeout=30 $D0 /dev/disk/by-uuid/${uuidp}0 /dev/disk/by-label/btrfs_root
    expect "single: by-uuid -> $S0" [ "$(target /dev/disk/by-uuid/${uuidp}0)" = "$S0" ]
    expect "single: $S0 SYSTEMD_READY is not 0" not_ready_0 $S0
    expect "single: mount /dev/disk/by-uuid/${uuidp}0" mounts_rw /dev/disk/by-uuid/${uuidp}0 /mnt/b
    step_end

    step_begin 2-partitions-data-single-metadata-raid1
    must udevadm lock --device=$D0 wipefs -a -f $D0 >/tmp/wipefs.log 2>&1
    must udevadm lock --device=$D0 sgdisk -o -n 1:0:+85M -c 1:diskpart1 -n 2:0:+85M -c 2:diskpart2 \
        -n 3:0:+85M -c 3:diskpart3 -n 4:0:+85M -c 4:diskpart4 $D0 >/tmp/sgdisk.log 2>&1
    P=/dev/disk/by-partlabel/diskpart
    must udevadm wait --settle --timeout=30 ${P}1 ${P}2 ${P}3 ${P}4
    must udevadm lock --device=$D0 mkfs.btrfs -f -d single -m raid1 -L btrfs_mpart -U ${uuidp}1 \
        ${P}1 ${P}2 ${P}3 ${P}4 >/tmp/mkfs.log 2>&1
    expect "partitions: by-uuid and by-label links appear" \
        udevadm wait --settle --timeout=30 /dev/disk/by-uuid/${uuidp}1 /dev/disk/by-label/btrfs_mpart
    for p in ${P}1 ${P}2 ${P}3 ${P}4; do
        expect "partitions: $(readlink -f $p) SYSTEMD_READY is not 0" not_ready_0 $p
    done
    expect "partitions: mount /dev/disk/by-uuid/${uuidp}1 (all four registered)" \
        mounts_rw /dev/disk/by-uuid/${uuidp}1 /mnt/b
    must udevadm lock --device=$D0 wipefs -a -f $D0 >/tmp/wipefs.log 2>&1
    must udevadm wait --settle --timeout=30 --removed ${P}1 ${P}2 ${P}3 ${P}4
    log "after wipefs: kernel partitions of $S0: $(ls /sys/block/${S0#/dev/} | grep "^${S0#/dev/}" | tr '\n' ' ')"
    step_end

    step_begin 3-disks-raid10-mixed
    must udevadm lock --device=$D0 --device=$D1 --device=$D2 --device=$D3 \
        mkfs.btrfs -f -M -d raid10 -m raid10 -L btrfs_mdisk -U ${uuidp}2 $D0 $D1 $D2 $D3 >/tmp/mkfs.log 2>&1
    expect "raid10: by-uuid and by-label links appear" \
        udevadm wait --settle --timeout=30 /dev/disk/by-uuid/${uuidp}2 /dev/disk/by-label/btrfs_mdisk
    log "raid10: links $(ls -l /dev/disk/by-uuid/${uuidp}2 /dev/disk/by-label/btrfs_mdisk 2>&1 | tr '\n' ' ')"
    read -r t0 _ </proc/uptime
    udevadm settle --timeout=120
    read -r t1 _ </proc/uptime
    log "raid10: udev settled $t1 (waited from $t0)"
    for s in $S0 $S1 $S2 $S3; do expect "raid10: $s SYSTEMD_READY is not 0" not_ready_0 $s; done
    # the state the gate decided in: the partitions the kernel still has of $S0 (step 2 partitioned
    # it), the table udev's blkid found on the disk's own bytes, the verdict
    for s in $S0 $S1 $S2 $S3; do
        sys_props $s
        log "raid10: $s: kernel partitions: $(ls /sys/block/${s#/dev/} | grep "^${s#/dev/}" | tr '\n' ' ')" \
            "table: $(udevadm info -q property -n $s | sed -n 's/^ID_PART_TABLE_TYPE=//p')" \
            "gate: $P_BTRFS_SCAN_GATE_DECISION $P_BTRFS_SCAN_GATE_REASON registered: $(sys_registered_unlisted $s)"
    done
    mkdir -p /mnt/r10
    if mount -t btrfs /dev/disk/by-uuid/${uuidp}2 /mnt/r10 >/tmp/mount.log 2>&1; then
        good "raid10: mount /dev/disk/by-uuid/${uuidp}2 (all four registered)"
        echo "hello there" >/mnt/r10/test
        umount /mnt/r10
    else
        bad "raid10: mount /dev/disk/by-uuid/${uuidp}2 (all four registered): $(cat /tmp/mount.log)"
        # write the file the next step reads through the devices named explicitly
        mount -t btrfs -o device=$S0,device=$S1,device=$S2,device=$S3 $S0 /mnt/r10 &&
            { echo "hello there" >/mnt/r10/test; umount /mnt/r10; }
    fi
    step_end

    step_begin 4-fstab-device-option
    # what registers the members is the mount's own device= list, as after an initrd that did not scan
    btrfs device scan --forget >/tmp/forget.log 2>&1
    echo "$D0 /mnt/fstab btrfs device=$D0,device=$D1,device=$D2,device=$D3 0 2" >>/etc/fstab
    mkdir -p /mnt/fstab
    if mount /mnt/fstab >/tmp/mount.log 2>&1; then
        good "fstab: mount /mnt/fstab with device= of the four disks"
        expect "fstab: the file written before reads back" grep -q "hello there" /mnt/fstab/test
        umount /mnt/fstab
    else
        bad "fstab: mount /mnt/fstab with device= of the four disks: $(cat /tmp/mount.log)"
    fi
    sed -i '/\/mnt\/fstab/d' /etc/fstab
    step_end

    for action in add change; do
        step_begin "$([ $action = add ] && echo 5 || echo 6)-forget-then-$action-events"
        must btrfs device scan --forget
        must udevadm trigger --action=$action /sys/class/block/${S0#/dev/} /sys/class/block/${S1#/dev/} \
            /sys/class/block/${S2#/dev/} /sys/class/block/${S3#/dev/}
        expect "forget+$action: udev settles within 60 s" udevadm settle --timeout=60
        sleep 1     # the rules' own `udevadm trigger` of the devices still waiting
        expect "forget+$action: udev settles again within 60 s" udevadm settle --timeout=60
        for s in $S0 $S1 $S2 $S3; do
            r=$(sys_registered_unlisted $s)
            expect "forget+$action: $s registered again (got $r)" [ "$r" = yes ]
            expect "forget+$action: $s SYSTEMD_READY is not 0" not_ready_0 $s
        done
        expect "forget+$action: mount UUID=${uuidp}2 (/dev/disk/by-uuid)" mounts_rw /dev/disk/by-uuid/${uuidp}2 /mnt/r10
        step_end
    done

    step_begin 7-raid1-partner-plugged-later
    must udevadm lock --device=$D2 --device=$D3 \
        mkfs.btrfs -f -d raid1 -m raid1 -L btrfs_r1 -U ${uuidp}3 $D2 $D3 >/tmp/mkfs.log 2>&1
    expect "raid1: by-uuid link appears" udevadm wait --settle --timeout=30 /dev/disk/by-uuid/${uuidp}3
    # unplug the partner (SATA hot-unplug), forget every registration, replay the lone member's event
    host=$(readlink -f /sys/block/${S3#/dev/} | sed -n 's|.*/\(host[0-9]*\)/target.*|\1|p')
    [ -n "$host" ] || fail "no SCSI host for $S3: $(readlink -f /sys/block/${S3#/dev/})"
    must sh -c "echo 1 >/sys/block/${S3#/dev/}/device/delete"
    must udevadm wait --settle --timeout=30 --removed $D3
    must btrfs device scan --forget
    must udevadm trigger --action=add /sys/class/block/${S2#/dev/}
    expect "raid1 alone: udev settles within 60 s" udevadm settle --timeout=60
    expect "raid1 alone: $S2 SYSTEMD_READY=0 (its partner is absent)" is_ready_0 $S2
    log "raid1 alone: $S2: $(udevadm info -q property -n $S2 | grep -E 'SYSTEMD_READY|BTRFS' | tr '\n' ' ')"
    # plug it again: the SCSI host rescans its port
    must sh -c "echo '- - -' >/sys/class/scsi_host/$host/scan"
    expect "raid1: the partner is back" udevadm wait --settle --timeout=30 $D3
    sleep 1
    expect "raid1: udev settles within 60 s" udevadm settle --timeout=60
    S3=$(readlink -f $D3)
    expect "raid1 complete: $S2 SYSTEMD_READY is not 0" not_ready_0 $S2
    expect "raid1 complete: $S3 SYSTEMD_READY is not 0" not_ready_0 $S3
    expect "raid1 complete: mount /dev/disk/by-uuid/${uuidp}3" mounts_rw /dev/disk/by-uuid/${uuidp}3 /mnt/r1
    step_end
    btrfs-scan-gate status >/tmp/status.txt 2>&1 && sed 's/^/guest: status: /' /tmp/status.txt
    sys_count_verdict
}

# A USB stick carrying a copy of an internal disk (layout `usb-before-disk`) is present at power-on;
# the internal disk appears only after udevd's coldplug (its PCI function removed before the unit's
# `boot`, `echo 1 >/sys/bus/pci/rescan` later), as a slow controller or a late storage module makes
# it. The boot names the internal filesystem (root=UUID= or root=PARTUUID=, the case's append=):
# nothing the stick carries may resolve a name of it, before the internal disk exists or after.
# /dev/disk/by-uuid, by-label, by-partuuid and by-partlabel are sampled every 0.2 s from before
# udevd starts until the internal disk is settled.
sys_usb_copy_before_disk() {
    fsid=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a11
    puuid=5c1a6e2f-0d3b-4c1e-9a7f-0000000c0001
    links="/dev/disk/by-uuid/$fsid /dev/disk/by-label/sysroot /dev/disk/by-partuuid/$puuid /dev/disk/by-partlabel/sysroot"
    [ -b /dev/vda1 ] || fail "no internal /dev/vda1: $(ls /sys/class/block | tr '\n' ' ')"
    bdf=$(readlink -f /sys/class/block/vda | sed -n 's|.*/\(0000:[0-9a-f:.]*\)/virtio[0-9]*/block/vda$|\1|p')
    [ -n "$bdf" ] || fail "no PCI function for vda: $(readlink -f /sys/class/block/vda)"
    # the internal disk goes before anything looks at it; the stick stays
    echo 1 >/sys/bus/pci/devices/$bdf/remove || fail "PCI remove of $bdf"
    n=0
    while [ -e /sys/class/block/vda ] && [ $n -lt 100 ]; do n=$((n + 1)); sleep 0.1; done
    [ -e /sys/class/block/vda ] && fail "vda still there after the PCI remove of $bdf"
    sys_usb_part sysroot
    STICK=$SYS_USB_PART
    stick_disk=$(readlink -f /sys/class/block/${STICK#/dev/}/..)
    stick_disk=${stick_disk##*/}
    tlog "internal disk (PCI $bdf) removed; the stick's copy is $STICK"

    sys_gate_boot || log "boot exited $?"
    # the sampler: one `ls -l` of the four links every 0.2 s, each line "uptime phase link -> target"
    : >/tmp/phase
    (
        while [ ! -e /tmp/sampler.stop ]; do
            read -r up _ </proc/uptime
            read -r ph </tmp/phase
            ls -l $links 2>/dev/null | awk -v t="$up" -v p="${ph:-before-udevd}" '{ print t, p, $(NF-2), $NF }'
            echo "$up ${ph:-before-udevd} sample"
            sleep 0.2
        done
    ) >/tmp/samples 2>&1 &
    sampler=$!
    echo coldplug >/tmp/phase
    sys_udev_coldplug
    echo window >/tmp/phase
    # the window between the stick's events and the internal disk's: a few seconds of steady state
    sleep 5
    echo internal-attached >/tmp/phase
    tlog "PCI rescan: the internal disk comes"
    echo 1 >/sys/bus/pci/rescan || fail "PCI rescan"
    expect "the internal disk appears after the rescan" udevadm wait --settle --timeout=60 /dev/vda1
    sleep 1
    must udevadm settle --timeout=60
    sleep 1
    touch /tmp/sampler.stop
    wait $sampler
    INT=/dev/vda1
    nwin=$(grep -c ' window sample$' /tmp/samples)
    nall=$(grep -c ' sample$' /tmp/samples)
    log "samples: $nall, $nwin in the window between the stick's coldplug and the internal disk"
    expect "at least 5 samples in the window (got $nwin)" [ "$nwin" -ge 5 ]
    for l in $links; do
        # a target of the stick: its partition or its whole disk
        hits=$(grep " $l " /tmp/samples | awk -v s="$stick_disk" '{ t = $4; sub(".*/", "", t); if (index(t, s) == 1) print }')
        nhit=$(printf '%s' "$hits" | grep -c .)
        if [ "$nhit" = 0 ]; then
            good "$l never resolved to the stick"
        else
            bad "$l resolved to the stick in $nhit samples, first: $(printf '%s\n' "$hits" | head -n 1)"
        fi
        log "$l: $(grep " $l " /tmp/samples | awk '{ print $2 "->" $4 }' | uniq -c | tr '\n' ' ' | tr -s ' ')"
    done
    # once both are there: the names are the internal disk's, the stick is withheld
    for l in $links; do
        expect "end: $l -> $INT" [ "$(target $l)" = "$INT" ]
    done
    sys_props $STICK
    log "stick $STICK: decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON systemd-ready=$P_SYSTEMD_READY udisks-ignore=$P_UDISKS_IGNORE"
    expect "end: the stick $STICK is SYSTEMD_READY=0" [ "$P_SYSTEMD_READY" = 0 ]
    r=$(sys_registered_unlisted $STICK)
    expect "end: the stick $STICK is not registered (got $r)" [ "$r" != yes ]
    expect "end: the stick $STICK is in skip_scan" in_skip_scan $STICK
    sys_props $INT
    log "internal $INT: decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON systemd-ready=$P_SYSTEMD_READY"
    r=$(sys_registered_unlisted $INT)
    expect "end: the internal $INT is registered (got $r)" [ "$r" = yes ]
    mkdir -p /mnt/sys
    if mount /dev/disk/by-uuid/$fsid /mnt/sys >/tmp/mount.log 2>&1; then
        src=$(readlink -f "$(awk '$2 == "/mnt/sys" { print $1 }' /proc/mounts)")
        expect "end: mount UUID=$fsid mounts the internal disk (got $src)" [ "$src" = "$INT" ]
        umount /mnt/sys
    else
        bad "end: mount /dev/disk/by-uuid/$fsid: $(cat /tmp/mount.log)"
    fi
    log "skip_scan: $(cat /sys/module/btrfs/parameters/skip_scan)"
    btrfs-scan-gate status >/tmp/status.txt 2>&1
    sed 's/^/guest: status: /' /tmp/status.txt
    sys_count_verdict
}
