#!/bin/bash
# image-demo.sh [BUILD_DIR] (or BSG_BUILD_DIR): the main demo. Boots the A/B system image of
# tests/image/ (Debian 12 booted by systemd from a SteamOS-like disk set, Debian's 6.1 kernel with
# the patched btrfs module, the project installed with its udev rules, unit and initramfs hook)
# under QEMU/TCG:
#   1. cold boot of slot A; from the running A, slot B is written raw with an update (higher
#      generation) and the updater hook runs;
#   2. reboot into B; 3. roll back: reboot into A although B's generation is ahead;
#   4. the same rollback on the same root with systemd's stock rules and the stock module: it
#      does not boot (the problem the project solves).
# Per boot it prints what the gate decided per partition, the skip list, what is mounted from where
# and the checks. Full consoles: ${TMPDIR:-/var/tmp}/bsg-image-demo/.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-${BSG_BUILD_DIR:-$here/build}}")
work=${TMPDIR:-/var/tmp}/bsg-image-demo
mkdir -p "$work"
t0=$(date +%s)
export IMAGE_TIMEOUT=${IMAGE_TIMEOUT:-600}   # one boot; 60-190 s measured on a loaded 2-core machine
"$here/tests/qemu/setup.sh" >"$work/setup.log" 2>&1 ||
    { tail -n 20 "$work/setup.log"; echo "image-demo: tests/qemu/setup.sh failed"; exit 1; }
echo "== building or finding the image (cold: about 4 minutes for the Debian root, 3 for the image)"
dir=$("$here/tests/image/build-image.sh" "$build" 2>"$work/build.log") ||
    { tail -n 30 "$work/build.log"; echo "image-demo: the image did not build"; exit 1; }
echo "   $dir (after $(( $(date +%s) - t0 )) s)"
show() { # the lines that tell the story
    grep -E --line-buffered -e '^== ' -e '^(PASS|FAIL)' -e '^baseline' -e 'IMAGE-FAIL' \
        -e 'IMAGE: (multi-user|mount: |udev: |skip_scan|link: by-(uuid|label|slot)|updater hook|after the update|reconcile|checks done)' \
        -e 'IMAGE: ok: (image version|/etc is writable|/mnt/other has)' -e 'etc-overlay:' |
        sed -e 's/^IMAGE: /   /' -e 's/^etc-overlay: /   initramfs: /'
}
rc=0
echo
echo "== gated image: boot A, update B, boot B, roll back to A"
IMG_DIR=$dir "$here/tests/image/run-case.sh" update-rollback:sys,a,b "$work/gate" | show || rc=1
echo
echo "== the same on the stock system (systemd's 64-btrfs.rules, stock btrfs module): cold boot of A, then the rollback"
IMG_DIR=$dir "$here/tests/image/run-case.sh" stock-rollback "$work/stock" | show || rc=1
echo
echo "image-demo: done in $(( $(date +%s) - t0 )) s; consoles in $work/gate and $work/stock"
exit $rc
