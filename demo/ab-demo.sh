#!/bin/bash
# ab-demo.sh [BUILD_DIR] (or BSG_BUILD_DIR): the A/B demo. Boots Debian's 6.1 kernel in QEMU on a
# SteamOS-like disk (GPT: esp, rootfs-A/B, var-A/B, home; the A and B partitions byte-identical
# btrfs clones) twice, both times under Debian's real systemd-udevd:
#   1. the patched btrfs module with the gate: the unit's `btrfs-scan-gate boot`, the installed
#      rules and helper. Prints what was decided per partition and why, mounts both slots at once,
#      lets an "update" write slot B and shows both slots still mount.
#   2. the stock module with systemd's stock 64-btrfs.rules (builtin `btrfs ready`): every clone
#      is registered in event order, the second slot cannot mount (EEXIST), and once slot B has a
#      higher generation the active slot A cannot be mounted at all.
# Needs a built tree (scripts/demo.sh builds one) and the QEMU harness's kernels
# (tests/qemu/setup.sh, run here). Logs and consoles: ${TMPDIR:-/var/tmp}/bsg-demo/.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-${BSG_BUILD_DIR:-$here/build}}")
work=${TMPDIR:-/var/tmp}/bsg-demo
mkdir -p "$work"
t0=$(date +%s)

step() { printf '\n== %s ==\n' "$*"; }
if [ -x "$here/tests/qemu/setup.sh" ]; then
    "$here/tests/qemu/setup.sh" >"$work/setup.log" 2>&1 ||
        { tail -n 20 "$work/setup.log"; echo "ab-demo: tests/qemu/setup.sh failed (log: $work/setup.log)"; exit 1; }
fi
rm -rf "$work/stage"
DESTDIR=$work/stage cmake --install "$build" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; echo "ab-demo: cmake --install $build failed"; exit 1; }

# ---- the guest scenarios (busybox sh; /lib/system-lib.sh is tests/qemu/udev/system-lib.sh) ----
cat >"$work/gate.sh" <<'EOF'
#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos timeout=150 rules=gate append='root=PARTLABEL=rootfs-A'
. /lib/guest-lib.sh
. /lib/system-lib.sh
. /lib/demo-lib.sh
must sys_gate_boot
say "btrfs-scan-gate boot (btrfs-scan-gate.service, before udev coldplug) wrote skip_scan: $(cat /sys/module/btrfs/parameters/skip_scan)"
sys_udev_coldplug
btrfs-scan-gate status >/tmp/status.txt 2>&1
sed -n '1,4s/^/DEMO: helper status: /p' /tmp/status.txt
table
links
ok=1
for l in $SYS_CLONES; do
    [ "$(sys_registered "$(sys_dev $l)")" = no ] || { say "WRONG: $l is registered with the kernel"; ok=0; }
done
mkdir -p /ra /rb /va /vb
for p in "rootfs-A /ra" "rootfs-B /rb" "var-A /va" "var-B /vb"; do
    set -- $p
    try_mount "$1" "$2" -o virtual_fsid || ok=0
done
say "mounted now: $(grep -c ' btrfs ' /proc/mounts) btrfs filesystems: $(awk '$3 == "btrfs" { printf "%s ", $2 }' /proc/mounts)"
say "an update writes slot B (the inactive one) while both are mounted; then both are unmounted"
update /rb
for m in /ra /rb /va /vb; do umount $m 2>/dev/null; done
udevadm trigger --action=change --subsystem-match=block >/dev/null 2>&1
udevadm settle --timeout=60
say "after the update and a replay of every udev event: rootfs-B generation $(gen rootfs-B), rootfs-A $(gen rootfs-A)"
try_mount rootfs-A /ra -o virtual_fsid || ok=0
try_mount rootfs-B /rb -o virtual_fsid || ok=0
[ -e /rb/etc/updated ] && say "rootfs-B has the update, rootfs-A does not: $( [ -e /ra/etc/updated ] && echo WRONG || echo right)"
umount /ra 2>/dev/null; umount /rb 2>/dev/null
[ $ok = 1 ] && say "RESULT: both slots of rootfs and of var mounted at the same time" || say "RESULT: a slot did NOT mount"
[ $ok = 1 ] || exit 1
exit 0
EOF

cat >"$work/stock.sh" <<'EOF'
#!/bin/sh
# qemu-case: kernel=6.1 module=stock disks=steamos timeout=150 rules=stock append='root=PARTLABEL=rootfs-A'
. /lib/guest-lib.sh
. /lib/system-lib.sh
. /lib/demo-lib.sh
sys_udev_coldplug
say "systemd's 64-btrfs.rules ran IMPORT{builtin}=\"btrfs ready \$devnode\" for every btrfs partition; the kernel log:"
dmesg | grep -E 'BTRFS.*(scanned by|changed to)' | sed 's/^\[[ 0-9.]*\] //' | while read -r line; do
    for e in $SYS_MAP; do line=$(echo "$line" | sed "s|/dev/${e%%=*} |/dev/${e%%=*} (${e#*=}) |"); done
    say "  $line"
done
table
links
mkdir -p /ra /rb
try_mount rootfs-A /ra
try_mount rootfs-B /rb
umount /ra 2>/dev/null
say "an update writes slot B (the inactive one): mount it alone, write, unmount"
try_mount rootfs-B /rb && { update /rb; umount /rb; }
udevadm trigger --action=change --subsystem-match=block >/dev/null 2>&1
udevadm settle --timeout=60
say "after the update and a replay of every udev event: rootfs-B generation $(gen rootfs-B), rootfs-A $(gen rootfs-A)"
try_mount rootfs-A /ra && umount /ra
exit 0
EOF

cat >"$work/demo-lib.sh" <<'EOF'
say() { echo "DEMO: $*"; }
# an update: three transactions on the slot mounted at $1 (its generation moves ahead)
update() { for i in 1 2 3; do echo "update $i" >>"$1/etc/updated"; sync; done; }
gen() { btrfs inspect-internal dump-super "$(sys_dev "$1")" 2>/dev/null | awk '$1 == "generation" { print $2 }'; }
why() {
    case $1 in
    clone) echo "a byte-identical copy exists (same fsid and devid): no copy is scanned; mount with -o virtual_fsid" ;;
    unique) echo "the only device with its fsid: scanned (registered) as usual" ;;
    -) echo "no gate decision (stock rules)" ;;
    *) echo "see btrfs-scan-gate(8), REASONS" ;;
    esac
}
# one line per partition: what udev and the kernel know of it
table() {
    skip=$(sys_skip_labels)
    say ""
    say "$(printf '%-9s %-10s %-5s %-4s %-6s %-7s %-10s %-10s %-13s %s' PARTITION DEVICE GEN SLOT DECIDE REASON SKIP_SCAN REGISTERED UDISKS_IGNORE WHY)"
    for l in $SYS_LABELS; do
        d=$(sys_dev "$l")
        sys_props "$d"
        if [ "$P_ID_FS_TYPE" != btrfs ]; then
            say "$(printf '%-9s %-10s %s' "$l" "$d" "$P_ID_FS_TYPE, not btrfs: ignored")"
            continue
        fi
        case " $skip " in *" $l "*) in=listed ;; *) in=- ;; esac
        [ "$skip" = "(absent)" ] && in="(absent)"
        say "$(printf '%-9s %-10s %-5s %-4s %-6s %-7s %-10s %-10s %-13s %s' "$l" "$d" "$(gen "$l")" \
            "$P_BTRFS_SCAN_GATE_SLOT" "$P_BTRFS_SCAN_GATE_DECISION" "$P_BTRFS_SCAN_GATE_REASON" "$in" \
            "$(sys_registered "$d")" "$P_UDISKS_IGNORE" "$(why "$P_BTRFS_SCAN_GATE_REASON")")"
    done
    say "(GEN: superblock generation; REGISTERED: the kernel holds this device for its fsid, i.e."
    say " BTRFS_IOC_FORGET_DEV finds it; a non-mount scan of a clone would register it there)"
    say ""
}
links() {
    for link in /dev/disk/by-uuid/$ROOT_FSID /dev/disk/by-slot/active/rootfs /dev/disk/by-slot/other/rootfs \
        /dev/disk/by-uuid/$VAR_FSID; do
        if [ -e "$link" ]; then say "link ${link#/dev/disk/} -> $(readlink -f "$link") ($(sys_label "$link"))"
        else say "link ${link#/dev/disk/}: none"; fi
    done
}
# try_mount LABEL DIR [OPTIONS]: mounts and says how it went (the kernel's reason on failure)
try_mount() {
    l=$1 m=$2
    shift 2
    mkdir -p "$m"
    dmesg -c >/dev/null
    if mount "$@" "$(sys_dev "$l")" "$m" 2>/tmp/mount.err; then
        say "mount $* $l ($(sys_dev "$l")) on $m: OK"
        return 0
    fi
    k=$(dmesg | grep -E 'BTRFS (error|warning)|duplicate|already registered' | tail -n 1 | sed 's/^\[[ 0-9.]*\] //')
    say "mount $* $l ($(sys_dev "$l")) on $m: FAILED: $(cat /tmp/mount.err | sed 's/^mount: //')${k:+; kernel: $k}"
    return 1
}
EOF

run_boot() { # NAME: boots $work/NAME.sh, prints its DEMO lines
    local name=$1 rc=0
    BSG_SYSTEM_EXTRA_FILES="$work/demo-lib.sh:/lib/demo-lib.sh" \
        "$here/tests/qemu/udev/run-udev-case.sh" "$work/$name.sh" "$work/stage" "$work/$name" \
        >"$work/$name.log" 2>&1 || rc=$?
    grep -a '^DEMO: ' "$work/$name/console.log" 2>/dev/null | tr -d '\r' | sed 's/^DEMO: /  /' || true
    return $rc
}

step "1/2: patched btrfs module + btrfs-scan-gate (unit, rules, helper) under systemd-udevd"
echo "  disk: GPT esp, rootfs-A, rootfs-B, var-A, var-B, home; A and B partitions are byte-identical"
echo "  btrfs clones; the active slot is A (kernel command line root=PARTLABEL=rootfs-A)."
rc1=0
run_boot gate || rc1=$?
[ "$rc1" = 0 ] || { echo "  the gate boot FAILED (exit $rc1); log: $work/gate.log, console: $work/gate/console.log"; tail -n 30 "$work/gate.log"; }

step "2/2: the same disk and boot with the stock btrfs module and systemd's stock 64-btrfs.rules"
rc2=0
run_boot stock || rc2=$?
[ "$rc2" = 0 ] || { echo "  the stock boot FAILED (exit $rc2); log: $work/stock.log"; tail -n 30 "$work/stock.log"; }

step "summary ($(($(date +%s) - t0)) s; consoles under $work)"
if [ "$rc1" = 0 ]; then
    echo "  with the gate: no clone was registered by udev, skip_scan holds the four clones, the links"
    echo "  name the active slot, and both slots of rootfs and var mount at once, also after an update."
else
    echo "  with the gate: FAILED, see above"
fi
stock=$(grep -a '^DEMO: ' "$work/stock/console.log" 2>/dev/null | tr -d '\r' || true)
if printf '%s\n' "$stock" | grep -q 'rootfs-B .* FAILED: .*File exists'; then
    echo "  with the stock rules: udev registered the clones in event order (the kernel keeps one copy"
    echo "  per fsid), and the second slot cannot be mounted (File exists)."
fi
if printf '%s\n' "$stock" | grep -q 'rootfs-A .* FAILED: .*higher generation'; then
    echo "  After slot B was written, the ACTIVE slot A is refused (\"already registered with a higher"
    echo "  generation\"): the race the gate removes."
fi
[ "$rc1" = 0 ] && [ "$rc2" = 0 ]
