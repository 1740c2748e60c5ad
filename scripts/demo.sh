#!/bin/bash
# The main job: installs what is missing, builds the helper, then boots the SteamOS-like A/B disk in
# QEMU (Debian's 6.1 kernel with the patched btrfs module, the rules and the helper under a real
# systemd-udevd) and shows what was decided per partition, that both slots mount, and what the same
# boot does with the stock rules and module.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BSG_BUILD_DIR:-$here/build}

"$here/scripts/setup.sh"
cmake -S "$here" -B "$build"
cmake --build "$build" -j"$(nproc)" --target btrfs-scan-gate
exec "$here/demo/ab-demo.sh" "$build"
