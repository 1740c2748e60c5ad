#!/bin/bash
# The project's test command: installs what is missing, builds everything in build/, runs every CTest
# test (unit, umockdev, host, deploy, fuzz smoke runs, QEMU-booted kernels; plain, ASan+UBSan and
# valgrind variants). CTest's summary line is the verdict.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BSG_BUILD_DIR:-$here/build}

"$here/scripts/setup.sh"
# fuzz smoke runs of 8 s per target here (after the regressions replayed) (the long runs: fuzz/README.md)
cmake -S "$here" -B "$build" -DBSG_FUZZ=ON -DBSG_FUZZ_SECONDS=8 -DBSG_SANITIZERS=ON -DBSG_VALGRIND=ON -DBSG_QEMU_TESTS=ON
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
