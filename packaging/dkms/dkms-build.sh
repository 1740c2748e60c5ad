#!/bin/bash
# dkms-build.sh KERNELVER KERNEL_SOURCE_DIR: builds build/fs/btrfs/btrfs.ko for KERNELVER from
# fs/btrfs of linux-source-6.1 of exactly KERNELVER's package version (source.sh extract: shipped
# in this package or kept by the administrator; nothing is downloaded) with patches/series applied.
# dkms.conf has already skipped kernels whose source is not here and builds that could not be
# loaded or signed. Run by dkms from its build directory (MAKE in dkms.conf); dkms strips the module
# and signs it with the key named in /etc/btrfs-scan-gate/module-signing.conf, if any.
set -euo pipefail
kver=$1 kdir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fail() { echo "btrfs-scan-gate-dkms: $*" >&2; exit 1; }

ver=$(bash "$here/source.sh" version "$kver") || exit 1
[ -e "$kdir/Makefile" ] || fail "no kernel build tree at $kdir (install linux-headers-$kver)"
# a named certificate that this machine's Secure Boot does not trust: the module would be refused at
# load, with no fallback to the in-tree one (a btrfs root would not boot); say so rather than install
conf=/etc/btrfs-scan-gate/module-signing.conf
cert=$( { sed -n 's/^cert=//p' "$conf" 2>/dev/null || true; } | tail -n 1)
if [ -n "$cert" ] && [ /proc/1/root/. -ef /. ] && command -v mokutil >/dev/null 2>&1 &&
    mokutil --sb-state 2>/dev/null | grep -q 'SecureBoot enabled' &&
    mokutil --test-key "$cert" 2>&1 | grep -q 'is not enrolled'; then
    fail "Secure Boot is on and $cert (named in $conf) is not enrolled: mokutil --import $cert, reboot and enroll it, then dkms autoinstall"
fi
rm -rf build
bash "$here/source.sh" extract "$kver" build || exit 1
echo "btrfs-scan-gate-dkms: fs/btrfs of linux-source-6.1 $ver for $kver"
while read -r p; do
    case $p in ''|'#'*) continue ;; esac
    echo "btrfs-scan-gate-dkms: applying $p"
    patch -d build -p1 --batch --forward --quiet <"$here/patches/$p" ||
        fail "$p does not apply to fs/btrfs of linux-source-6.1 $ver"
done <"$here/patches/series"
make -C "$kdir" M="$PWD/build/fs/btrfs" -j"$(nproc)" modules
