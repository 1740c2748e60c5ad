#!/bin/bash
# Host test (issue 18 item 1, docs/SECURITY.md row 18.1h): out of memory never widens trust to the
# fallback while the boot names a disk. Sibling of test-enomem.sh, same injector
# (tests/host/enomem-shim.c: the Nth malloc/calloc/realloc of the process fails, N = 1, 2, ... until
# no process reaches N).
#
# Layout: the loop device A carries a btrfs; RAUC's system.conf names it as slot A's device= (by its
# kernel name) and the mountinfo seam says the root is mounted from it (a loop device is
# hot-pluggable by class: only the disk the root is mounted from makes it a candidate), so the boot
# names A's disk: the anchor. F is a fixed disk of this host (the first whose `trust` answer from the
# fallback is 1: the fallback trusts it, the anchor does not). No trusted_disk=.
# For every N, in each situation (`trust` without an inventory answers from the fallback by design:
# SECURITY.md, Known gaps)
#   trust-after-boot  `trust F` after a clean `boot`
#   udev-cold         a `change` event of A with no inventory
#   udev-after-boot   the same after a clean `boot`
#   boot              `boot` with no inventory
# no signal; F is never answered trusted, no answer names the trust source `fallback`, F is never
# handed to the (fake) control node, and stderr never says "trust: from the fallback". The host's
# registry is never touched (the control node is a regular file), nor is F opened for writing.
#
# env: BSG_HELPER (plain helper with test seams), BSG_ENOMEM_SHIM, BSG_SHIM (badinput-shim.so),
#      TMPDIR. Exit 77 (skip) when not root, without loop devices, or when the host has no disk the
#      fallback trusts (then there is nothing the fallback would widen to).
set -euo pipefail

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

work=$(mktemp -d "${TMPDIR:-/var/tmp}/bsg-enomem-anchor.XXXXXX")
log=$work/tools.log
: >"$log"
echo "enomem-anchor: scratch $work"
loop=
cleanup() {
    local rc=$?
    [ -z "$loop" ] || losetup -d "$loop" >>"$log" 2>&1 || true
    [ "$rc" -ne 0 ] && { echo "--- $log"; tail -n 30 "$log"; }
    [ -n "${BSG_KEEP:-}" ] || rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT

truncate -s 128M "$work/a.img"
mkfs.btrfs -q -f "$work/a.img" >>"$log" 2>&1
loop=$(losetup -f --show "$work/a.img")
A=$loop
command -v udevadm >/dev/null && { udevadm settle --timeout=30 >>"$log" 2>&1 || true; }
majmin=$(cat "/sys/class/block/${A#/dev/}/dev")
echo "enomem-anchor: anchor $A ($majmin)"

cat >"$work/system.conf" <<EOF
[system]
compatible=bsg-test
bootloader=custom

[slot.rootfs.0]
device=$A
bootname=A
EOF
printf 'rauc_system_conf=%s\n' "$work/system.conf" >"$work/anchored.conf"
: >"$work/fallback.conf"
printf '21 1 0:20 / /proc rw - proc proc rw\n30 1 %s / / rw,relatime shared:1 - ext4 %s rw\n' \
    "$majmin" "$A" >"$work/mountinfo"
: >"$work/control"
echo "BOOT_IMAGE=/vmlinuz root=$A rauc.slot=A" >"$work/cmdline"

# run CONFIG VERB ARGS... with the injector at $N (0: off); DEVNAME is the verb's device; stdout to
# $work/out, stderr to $work/err
run() {
    local conf=$1
    shift
    : >"$work/skip_scan"
    env -i PATH="$PATH" ACTION=change SUBSYSTEM=block DEVTYPE=disk DEVNAME="$devname" \
        BTRFS_SCAN_GATE_RUNDIR="$work/run" BTRFS_SCAN_GATE_CONFIG="$work/$conf.conf" \
        BTRFS_SCAN_GATE_CMDLINE="$work/cmdline" BTRFS_SCAN_GATE_CONTROL="$work/control" \
        BTRFS_SCAN_GATE_MOUNTINFO="$work/mountinfo" BTRFS_SCAN_GATE_EFIVARS="$work/no-efivars" \
        BTRFS_SCAN_GATE_LOG=stderr \
        BSG_SHIM_REDIRECT="/sys/module/btrfs/parameters/skip_scan=$work/skip_scan" \
        BSG_SHIM_REDIRECT2="/sys/fs/btrfs/features/temp_fsid=$work/no-temp-fsid" \
        LD_PRELOAD="$enomem $shim" BSG_ENOMEM_AT="$N" BSG_ENOMEM_LOG="$work/enomem.log" \
        "$helper" "$@" >"$work/out" 2>"$work/err"
}
val() { sed -n "s/^BTRFS_SCAN_GATE_$1=//p" "$work/out"; }

# the fixed disk: the first the fallback trusts
N=0
F=
for d in /sys/block/*; do
    name=${d##*/}
    case $name in loop* | ram* | zram* | dm-* | md* | nbd* | sr*) continue ;; esac
    devname=/dev/$name
    [ -b "$devname" ] || continue
    rm -rf "$work/run"
    run fallback trust "$devname" || true
    if [ "$(val TRUSTED)" = 1 ] && [ "$(val TRUST_SOURCE)" = fallback ]; then
        F=$devname
        break
    fi
done
if [ -z "$F" ]; then
    echo "SKIP: no disk on this host that the fallback trusts (nothing it could widen trust to)"
    exit 77
fi
echo "enomem-anchor: fixed disk $F (the fallback trusts it)"

fail=0
bad() {
    echo "FAIL: $situation, allocation $N: $*"
    sed 's/^/  out: /' "$work/out"
    head -n 20 "$work/err" | sed 's/^/  err: /'
    fail=1
}

# checks the run just made; $1: its exit status
check() {
    local rc=$1 s
    [ "$rc" -lt 128 ] || bad "killed by signal $((rc - 128))"
    case $situation in trust* | udev*) [ "$rc" -eq 0 ] || bad "exit status $rc (udev verbs always exit 0)" ;; esac
    s=$(val TRUST_SOURCE)
    [ "$s" != fallback ] || bad "trust source fallback while the boot names $A's disk"
    grep -q "trust: from the fallback" "$work/err" && bad "stderr says trust from the fallback"
    case $situation in trust*) [ "$(val TRUSTED)" != 1 ] || bad "$F answered trusted" ;; esac
    grep -q "^btrfs-scan-gate: $F[0-9p]*: scan failed" "$work/err" && bad "$F handed to the kernel's scan"
    return 0
}

# the control: without a fault the anchor is A's disk, A is trusted, F untrusted
situation=control
rm -rf "$work/run"
devname=$A
run anchored udev "$A" && rc=0 || rc=$?
check "$rc"
[ "$(val TRUSTED)" = 1 ] && [ "$(val TRUST_SOURCE)" = boot-disk ] ||
    bad "no fault: $A not trusted from the boot disk (the layout does not anchor)"
rm -rf "$work/run"
run anchored boot && rc=0 || rc=$?
check "$rc"
devname=$F
run anchored trust "$F" && rc=0 || rc=$?
check "$rc"
[ "$(val TRUSTED)" = 0 ] && [ "$(val TRUST_SOURCE)" = boot-disk ] ||
    bad "no fault: $F is not untrusted from the boot disk"
mv "$work/run" "$work/run-booted"
[ "$fail" = 0 ] || exit 1

for situation in trust-after-boot udev-cold udev-after-boot boot; do
    N=1
    case $situation in trust*) devname=$F ;; *) devname=$A ;; esac
    while :; do
        rm -rf "$work/run" "$work/enomem.log"
        case $situation in *after-boot) cp -al "$work/run-booted" "$work/run" ;; esac
        case $situation in
        trust*) run anchored trust "$F" && rc=0 || rc=$? ;;
        udev*) run anchored udev "$A" && rc=0 || rc=$? ;;
        boot) run anchored boot && rc=0 || rc=$? ;;
        esac
        check "$rc"
        [ -s "$work/enomem.log" ] || break
        N=$((N + 1))
    done
    echo "enomem-anchor: $situation: every one of the $((N - 1)) allocations failed in turn"
    [ "$N" -gt 20 ] || { echo "FAIL: $situation: only $((N - 1)) allocations: the injector is not in effect"; fail=1; }
done
exit "$fail"
