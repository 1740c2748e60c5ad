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
        [ -n "$d" ] && sys_label "$d"
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
