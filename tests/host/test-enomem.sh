#!/bin/bash
# Host test (issue 10 item 4, docs/SECURITY.md row 4): out of memory fails closed, wherever it hits.
#
# Loop devices L1 and L2 hold byte-identical copies of one btrfs (clones); L3, a filesystem of its
# own, shows in a first run without faults that a scan is seen, then goes. The helper (plain build,
# test seams) runs with an allocation-failure injector (tests/host/enomem-shim.c) that fails one
# allocation per run, the Nth malloc/calloc/realloc of the process, for N = 1, 2, ... 200, then
# every third (BSG_ENOMEM_EVERY=1: every one) until no process reaches N, in four situations:
#   cold       a `change` event of L1 with no inventory (the event reads and sweeps everything)
#   after-boot a `change` event of L1 after a clean `boot` (every other device from the inventory)
#   boot       `boot` with no inventory
#   reconcile  `reconcile` after a clean `boot`
# The kernel's list beforehand names both clones (as after a boot, or from --write-modprobe's
# options). For every N: no signal; the udev verb exits 0 (boot and reconcile may exit 1); the
# event decides L1 `skip` or nothing; neither clone is handed to the kernel (the control node is a
# regular file here, so every scan ioctl shows as "scan failed" on stderr: none may name L1 or L2);
# a skip list written keeps both clones, and a run that reported no problem (no ERROR=, no
# "memory" on stderr) wrote them too. The host's registry is never touched (no real control
# node); skip_scan is a file (the fault shim redirects it; temp_fsid is hidden as on 6.1).
#
# env: BSG_HELPER (plain helper with test seams), BSG_ENOMEM_SHIM, BSG_SHIM (badinput-shim.so),
#      TMPDIR. Exit 77 (skip) only when not root or without loop devices.
set -euo pipefail
. "$(dirname "$0")/by-path.sh"
bsg_by_path_ns "$@"

helper=${BSG_HELPER:?BSG_HELPER must name the helper binary}
enomem=${BSG_ENOMEM_SHIM:?BSG_ENOMEM_SHIM must name enomem-shim.so}
shim=${BSG_SHIM:?BSG_SHIM must name badinput-shim.so}

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: not root (loop devices need root)"
    exit 77
fi
for tool in losetup mkfs.btrfs; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool not installed (scripts/setup.sh installs it)"; exit 1; }
done
modprobe loop >/dev/null 2>&1 || true
if [ ! -e /dev/loop-control ]; then
    echo "SKIP: no loop support (/dev/loop-control)"
    exit 77
fi

work=$(mktemp -d "${TMPDIR:-/var/tmp}/bsg-enomem.XXXXXX")
log=$work/tools.log
: >"$log"
echo "enomem: scratch $work"
loops=()
cleanup() {
    local rc=$?
    for l in "${loops[@]}"; do
        losetup -d "$l" >>"$log" 2>&1 || true
    done
    [ "$rc" -ne 0 ] && { echo "--- $log"; tail -n 30 "$log"; }
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT

truncate -s 128M "$work/a.img" "$work/c.img"
mkfs.btrfs -q -f "$work/a.img" >>"$log" 2>&1
cp --sparse=always "$work/a.img" "$work/b.img"
mkfs.btrfs -q -f "$work/c.img" >>"$log" 2>&1
for f in a b c; do
    loops+=("$(losetup -f --show "$work/$f.img")")
done
L1=${loops[0]} L2=${loops[1]} L3=${loops[2]}
echo "enomem: clones $L1 $L2, unique $L3"
command -v udevadm >/dev/null && { udevadm settle --timeout=30 >>"$log" 2>&1 || true; }

# the loop devices stand in for internal storage: the configuration names them (issue 18)
for l in "${loops[@]}"; do printf 'trusted_disk=%s\n' "$(bsg_by_path "$l")"; done >"$work/empty.conf"
: >"$work/control"
echo "BOOT_IMAGE=/vmlinuz root=/dev/nonexistent" >"$work/cmdline"

# run VERB ARGS... with the injector at $N (0: off); stdout to $work/out, stderr to $work/err; the
# kernel's skip list beforehand is $held (after a boot: both clones)
held=
run() {
    printf '%s\n' "$held" >"$work/skip_scan"
    env -i PATH="$PATH" ACTION=change SUBSYSTEM=block DEVTYPE=disk DEVNAME="$L1" \
        BTRFS_SCAN_GATE_RUNDIR="$work/run" BTRFS_SCAN_GATE_CONFIG="$work/empty.conf" \
        BTRFS_SCAN_GATE_CMDLINE="$work/cmdline" BTRFS_SCAN_GATE_CONTROL="$work/control" \
        BTRFS_SCAN_GATE_LOG=stderr \
        BSG_SHIM_REDIRECT="/sys/module/btrfs/parameters/skip_scan=$work/skip_scan" \
        BSG_SHIM_REDIRECT2="/sys/fs/btrfs/features/temp_fsid=$work/no-temp-fsid" \
        LD_PRELOAD="$enomem $shim" BSG_ENOMEM_AT="$N" BSG_ENOMEM_LOG="$work/enomem.log" \
        "$helper" "$@" >"$work/out" 2>"$work/err"
}

fail=0
bad() {
    echo "FAIL: $situation, allocation $N: $*"
    sed 's/^/  out: /' "$work/out"
    head -n 20 "$work/err" | sed 's/^/  err: /'
    fail=1
}

# checks the run just made; $1: its exit status
check() {
    local rc=$1 l
    if [ "$rc" -ge 128 ]; then
        bad "killed by signal $((rc - 128))"
    elif [ "$situation" != boot ] && [ "$situation" != reconcile ] && [ "$rc" -ne 0 ]; then
        bad "exit status $rc (udev always exits 0)"
    fi
    local d
    d=$(sed -n 's/^BTRFS_SCAN_GATE_DECISION=//p' "$work/out")
    [ -z "$d" ] || [ "$d" = skip ] || bad "the clone $L1 decided $d"
    for l in "$L1" "$L2"; do
        grep -q "^btrfs-scan-gate: $l: scan failed" "$work/err" && bad "$l handed to the kernel's scan"
    done
    # a list written keeps what the kernel held (a run that could not see a device must not release
    # it); a run that reports no problem wrote the whole list
    local list want=$held
    list=$(cat "$work/skip_scan")
    if ! grep -q 'ERROR=\|memory' "$work/out" "$work/err"; then
        want="$L1,$L2"
    elif [ "$list" = "$held" ]; then
        want=
    fi
    # (by itself, or by its whole disk in the starred form: a run that lost trust in it, untrusted
    # hot-pluggable storage)
    for l in ${want//,/ }; do
        grep -q "\(^\|,\)$l\*\{0,1\}\(,\|$\)" <<<"$list" || bad "skip list without $l: '$list' (held before: '$held')"
    done
    return 0
}

# the control: without a fault the clones are skipped and listed, the unique one is scanned
N=0
rm -rf "$work/run"
run udev "$L1" && rc=0 || rc=$?
situation=control
check "$rc"
grep -qx 'BTRFS_SCAN_GATE_REASON=clone' "$work/out" || bad "no fault: $L1 is not skip clone"
grep -q "$L1" "$work/skip_scan" || bad "no fault: no skip list written"
grep -q "^btrfs-scan-gate: $L3: scan failed" "$work/err" ||
    bad "no fault: the unique $L3 was not handed to the (fake) control node: the check for scans sees nothing"
# L3 has shown that a scan is seen; without it nothing is to be scanned (the fake control node
# fails every scan), so the boot below is a clean one
losetup -d "$L3" >>"$log" 2>&1
unset 'loops[2]'
command -v udevadm >/dev/null && { udevadm settle --timeout=30 >>"$log" 2>&1 || true; }
rm -rf "$work/run"
run boot && rc=0 || rc=$?
check "$rc"
# the copies are hard links: the helper replaces files by rename, never in place
mv "$work/run" "$work/run-booted"
[ "$fail" = 0 ] || exit 1
booted_sum=$({ cat "$work/run-booted/devices" 2>/dev/null || true; } | md5sum)

for situation in cold after-boot boot reconcile; do
    N=1
    # the kernel's list beforehand: both clones (after a boot, or from --write-modprobe's options)
    held="$L1,$L2"
    while :; do
        rm -rf "$work/run" "$work/enomem.log"
        case $situation in after-boot | reconcile) cp -al "$work/run-booted" "$work/run" ;; esac
        case $situation in
        boot | reconcile) run "$situation" && rc=0 || rc=$? ;;
        *) run udev "$L1" && rc=0 || rc=$? ;;
        esac
        check "$rc"
        [ -s "$work/enomem.log" ] || break
        # every allocation of the first 200 (the helper's own set-up, the event's device and the
        # decision's start), then every third: later ones repeat the same code for the next device
        # (BSG_ENOMEM_EVERY=1: every one)
        if [ "$N" -lt 200 ] || [ "${BSG_ENOMEM_EVERY:-0}" = 1 ]; then N=$((N + 1)); else N=$((N + 3)); fi
    done
    echo "enomem: $situation: allocations 1-200 and every third after, of about $((N - 1)), failed in turn"
    [ "$N" -gt 20 ] || { echo "FAIL: $situation: only $((N - 1)) allocations: the injector is not in effect"; fail=1; }
done
[ "$({ cat "$work/run-booted/devices" 2>/dev/null || true; } | md5sum)" = "$booted_sum" ] ||
    { echo "FAIL: the booted inventory changed through a hard link: the runs did not start alike"; fail=1; }
exit "$fail"
