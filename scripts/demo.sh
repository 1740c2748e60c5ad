#!/bin/bash
# The main job: installs what is missing, builds the helper, then boots the A/B system image
# (tests/image/: Debian 12 booted by systemd from a SteamOS-like disk set, Debian's 6.1 kernel with
# the patched btrfs module) in QEMU: cold boot of slot A, update of slot B, reboot into B, rollback
# to A, then the same rollback on the stock system, printing per boot what the gate decided and
# what is mounted from where. `--udev` runs the earlier, lighter demo instead (busybox init
# starting Debian's systemd-udevd by hand: demo/ab-demo.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BSG_BUILD_DIR:-$here/build}

"$here/scripts/setup.sh"
cmake -S "$here" -B "$build"
cmake --build "$build" -j"$(nproc)" --target btrfs-scan-gate
if [ "${1:-}" = --udev ]; then
    exec "$here/demo/ab-demo.sh" "$build"
fi
exec "$here/demo/image-demo.sh" "$build"
