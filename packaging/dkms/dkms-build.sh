#!/bin/bash
# dkms-build.sh KERNELVER KERNEL_SOURCE_DIR: builds build/fs/btrfs/btrfs.ko for KERNELVER from
# fs/btrfs of /usr/src/linux-source-6.1.tar.xz with patches/series applied. The module has to be
# the running kernel's own btrfs plus the series, so the source package must have exactly the
# version of KERNELVER's image (or headers) package; otherwise this fails and says which differ.
# Run by dkms from its build directory (MAKE in dkms.conf).
set -euo pipefail
kver=$1 kdir=$2
tarball=${BSG_LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
fail() { echo "btrfs-scan-gate-dkms: $*" >&2; exit 1; }

case $kver in
6.1.*) ;;
*) fail "kernel $kver is not a 6.1 kernel: the patch series is for Linux 6.1 only" ;;
esac

installed_version() { # PACKAGE: its version if it is installed, else nothing
    { dpkg-query -W -f='${db:Status-Status} ${Version}\n' "$1" 2>/dev/null || true; } |
        awk '$1 == "installed" { print $2 }'
}
srcver=$(installed_version linux-source-6.1)
[ -n "$srcver" ] || fail "linux-source-6.1 is not installed (apt-get install linux-source-6.1)"
[ -r "$tarball" ] || fail "$tarball is missing (reinstall linux-source-6.1)"
found=0
for pkg in "linux-image-$kver" "linux-image-$kver-unsigned" "linux-headers-$kver"; do
    v=$(installed_version "$pkg")
    [ -n "$v" ] || continue
    found=1
    if [ "$v" != "$srcver" ]; then
        fail "$pkg is version $v but linux-source-6.1 is $srcver: the module would not be this kernel's btrfs; install linux-source-6.1=$v (or upgrade the kernel to $srcver)"
    fi
done
[ "$found" = 1 ] || fail "no installed linux-image-$kver or linux-headers-$kver package: cannot tell the kernel's version"
[ -e "$kdir/Makefile" ] || fail "no kernel build tree at $kdir (install linux-headers-$kver)"

echo "btrfs-scan-gate-dkms: fs/btrfs of linux-source-6.1 $srcver for $kver"
rm -rf build
mkdir build
tar -C build --strip-components=1 -xJf "$tarball" --wildcards \
    'linux-source-6.1/fs/btrfs/*' 'linux-source-6.1/Documentation/filesystems/btrfs.rst'
while read -r p; do
    case $p in ''|'#'*) continue ;; esac
    echo "btrfs-scan-gate-dkms: applying $p"
    patch -d build -p1 --batch --forward --quiet <"patches/$p" ||
        fail "$p does not apply to linux-source-6.1 $srcver"
done <patches/series
make -C "$kdir" M="$PWD/build/fs/btrfs" -j"$(nproc)" modules
