#!/bin/bash
# Installs everything btrfs-scan-gate's build, tests, demo and benchmarks need on Debian 12, then
# lets the QEMU harness fetch its kernels (cached under /var/cache/btrfs-scan-gate/).
# Idempotent: a second run installs nothing and downloads nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

packages=(
    build-essential cmake pkg-config git
    libudev-dev libblkid-dev libglib2.0-dev umockdev libumockdev-dev
    btrfs-progs util-linux udev systemd gdisk dosfstools xfsprogs
    busybox-static cpio zstd qemu-system-x86
    valgrind strace hyperfine clang libfuzzer-14-dev libclang-rt-14-dev
)

if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: must run as root (apt-get, loop devices)" >&2
    exit 1
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup.sh: installing: ${missing[*]}"
    stamp=/var/cache/btrfs-scan-gate/apt-updated
    mkdir -p /var/cache/btrfs-scan-gate
    if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +720)" ]; then
        apt-get update
        touch "$stamp"
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

if [ -x "$here/tests/qemu/setup.sh" ]; then
    "$here/tests/qemu/setup.sh"
fi
