#!/bin/bash
# ab-demo.sh [BUILD_DIR] (or BSG_BUILD_DIR): boots Debian's 6.1 kernel in QEMU with a real
# systemd-udevd, the gate rules and the helper from BUILD_DIR on two byte-identical btrfs clones,
# and prints what the helper decided per device and why.
# INCOMPLETE: this first version uses the stock module and the contract's clone2 disks; the
# patched-module A/B comparison on the SteamOS-like GPT disk is not written yet.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-${BSG_BUILD_DIR:-$here/build}}")
work=${TMPDIR:-/var/tmp}/bsg-demo
mkdir -p "$work"
[ -x "$here/tests/qemu/setup.sh" ] && "$here/tests/qemu/setup.sh" >"$work/setup.log" 2>&1
rm -rf "$work/stage"
DESTDIR=$work/stage cmake --install "$build" >"$work/install.log" 2>&1
rc=0
"$here/tests/qemu/udev/run-udev-case.sh" "$here/tests/qemu/udev/cases/udevd-coldplug.sh" \
    "$work/stage" "$work/coldplug" >"$work/coldplug.log" 2>&1 || rc=$?
echo "== btrfs-scan-gate status in the guest (real systemd-udevd, stock 6.1 module) =="
grep -a '^guest: status:' "$work/coldplug/console.log" | sed 's/^guest: status: /  /' || true
echo "== per-device udev decision =="
grep -a -E '^guest: vd[ab]: E: BTRFS_SCAN_GATE_(DECISION|REASON|ACTION|ERROR)' \
    "$work/coldplug/console.log" | sed 's/^guest: /  /' || true
echo "== summary =="
if [ "$rc" = 0 ]; then
    echo "  the gate rules ran under systemd-udevd for both clones; the active clone mounted by uuid."
else
    echo "  the guest case FAILED (exit $rc); see $work/coldplug.log"
fi
echo "  not shown yet: the patched module (skip_scan, both slots with -o virtual_fsid) and the stock-rules race."
exit "$rc"
