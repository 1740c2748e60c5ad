#!/bin/bash
# dkms-build.sh KERNELVER KERNEL_SOURCE_DIR: builds build/fs/btrfs/btrfs.ko for KERNELVER from
# fs/btrfs of linux-source-6.1 of exactly KERNELVER's package version (source.sh: the installed
# package, or that version fetched from the apt archive) with patches/series applied. The module
# has to be the kernel's own btrfs plus the series; when that source cannot be had, this fails and
# says why. Run by dkms from its build directory (MAKE in dkms.conf).
set -euo pipefail
kver=$1 kdir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fail() { echo "btrfs-scan-gate-dkms: $*" >&2; exit 1; }

ver=$(bash "$here/source.sh" version "$kver") || exit 1
[ -e "$kdir/Makefile" ] || fail "no kernel build tree at $kdir (install linux-headers-$kver)"
rm -rf build
bash "$here/source.sh" fetch "$kver" build || exit 1
echo "btrfs-scan-gate-dkms: fs/btrfs of linux-source-6.1 $ver for $kver"
while read -r p; do
    case $p in ''|'#'*) continue ;; esac
    echo "btrfs-scan-gate-dkms: applying $p"
    patch -d build -p1 --batch --forward --quiet <"$here/patches/$p" ||
        fail "$p does not apply to fs/btrfs of linux-source-6.1 $ver"
done <"$here/patches/series"
make -C "$kdir" M="$PWD/build/fs/btrfs" -j"$(nproc)" modules
