#!/bin/bash
# CTest fixture: fetch the kernels (setup.sh) and build the patched module once per ctest run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
if ! "$here/setup.sh"; then
    echo "prepare: tests/qemu/setup.sh failed" >&2
    exit 1
fi
qemu_kernel 6.1
start=$(date +%s)
ko=$(qemu_build_patched)
echo "prepare: patched module $ko ($(modinfo -F vermagic "$ko")) ready after $(( $(date +%s) - start )) s"
stock=$(qemu_btrfs_ko stock)
want=$(modinfo -F vermagic "$stock")
got=$(modinfo -F vermagic "$ko")
[ "$want" = "$got" ] || { echo "prepare: vermagic '$got' of the patched module is not the image's '$want'" >&2; exit 1; }
echo "prepare: vermagic matches the image's own btrfs.ko; build log and checkpatch report: $(dirname "$ko")"
