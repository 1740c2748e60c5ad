#!/bin/bash
# build-module-deb.sh [--ko BTRFS_KO] ABI [OUTDIR]: the prebuilt-module package for image builders.
# Builds btrfs.ko of Debian's 6.1 kernel ABI (e.g. 6.1.0-57-amd64) from the tree: fs/btrfs of
# linux-source-6.1 of exactly that kernel's version (packaging/dkms/source.sh: the installed
# package, or that version fetched from the apt archive) with kernel-patches/6.1/series, against
# /usr/src/linux-headers-ABI (which must be installed: apt-get install linux-headers-ABI), and wraps
# it into OUTDIR/btrfs-scan-gate-modules-ABI_VERSION_ARCH.deb (default OUTDIR: the current
# directory); prints the .deb's path.
#
# The package holds /lib/modules/ABI/updates/btrfs.ko (updates/ comes before kernel/ in depmod's
# search order, so it overrides the in-tree module), Depends on that kernel's image at exactly the
# version it was built for, runs depmod (and update-initramfs where the kernel has an initramfs)
# after installation and removal, and conflicts with btrfs-scan-gate-dkms (one source of the module
# per system). The module is not signed: with Secure Boot on, sign it or use the dkms package's
# enrolled key (debian/README.Debian).
#
# --ko BTRFS_KO: package this already built module instead of building (its vermagic must name ABI
# and it must have the series' skip_scan parameter); tests/packaging/module-deb hands over the QEMU
# harness's build of the same series and source version.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "build-module-deb: $*" >&2; exit 1; }
usage() { echo "usage: build-module-deb.sh [--ko BTRFS_KO] ABI [OUTDIR]" >&2; exit 2; }
ko=
while [ $# -gt 0 ]; do
    case $1 in
    --ko) [ $# -ge 2 ] || usage; ko=$2; shift 2 ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) break ;;
    esac
done
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
abi=$1 out=${2:-.}
case $abi in 6.1.*) ;; *) fail "$abi is not a 6.1 kernel ABI: the series is for Linux 6.1 only" ;; esac
for t in dpkg-deb modinfo patch make strip; do
    command -v "$t" >/dev/null || fail "$t is not installed"
done
headers=/usr/src/linux-headers-$abi
[ -e "$headers/Makefile" ] || fail "$headers is missing: apt-get install linux-headers-$abi"
kver=$(bash "$src/packaging/dkms/source.sh" version "$abi") || fail "cannot tell the version of kernel $abi"
upstream=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
upstream=${upstream%%-*}
arch=$(dpkg --print-architecture)
pkg=btrfs-scan-gate-modules-$abi
version=$upstream+linux${kver//-/.}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/var/tmp}/build-module-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ -z "$ko" ]; then
    start=$(date +%s)
    bash "$src/packaging/dkms/source.sh" fetch "$abi" "$work/tree" || fail "no fs/btrfs source for $abi"
    while read -r p; do
        case $p in ''|'#'*) continue ;; esac
        patch -d "$work/tree" -p1 --batch --forward --quiet <"$src/kernel-patches/6.1/$p" ||
            fail "$p does not apply to fs/btrfs of linux-source-6.1 $kver"
    done <"$src/kernel-patches/6.1/series"
    echo "build-module-deb: building btrfs.ko against $headers" >&2
    make -C "$headers" M="$work/tree/fs/btrfs" -j"$(nproc)" modules >"$work/build.log" 2>&1 ||
        { tail -n 40 "$work/build.log" >&2; fail "the module build failed"; }
    ko=$work/tree/fs/btrfs/btrfs.ko
    echo "build-module-deb: built in $(( $(date +%s) - start )) s" >&2
fi
[ -s "$ko" ] || fail "$ko does not exist"
vermagic=$(modinfo -F vermagic "$ko")
[ "${vermagic%% *}" = "$abi" ] || fail "$ko is for '${vermagic%% *}', not $abi"
modinfo -F parm "$ko" | grep -q '^skip_scan:' || fail "$ko has no skip_scan parameter: not built with the series"

root=$work/pkg
install -d "$root/DEBIAN" "$root/lib/modules/$abi/updates" "$root/usr/share/doc/$pkg"
install -m0644 "$ko" "$root/lib/modules/$abi/updates/btrfs.ko"
# as dkms does (STRIP): debug information out, symbols and modversions kept
strip --strip-debug "$root/lib/modules/$abi/updates/btrfs.ko"
install -m0644 "$src/debian/copyright" "$root/usr/share/doc/$pkg/copyright"
cat >"$root/usr/share/doc/$pkg/README" <<EOF
btrfs.ko of Linux $abi (linux-source-6.1 $kver) with btrfs-scan-gate's kernel series
(kernel-patches/6.1/series: $(grep -c '^[^#]' "$src/kernel-patches/6.1/series") patches), built by packaging/build-module-deb.sh of
btrfs-scan-gate $upstream. vermagic: $vermagic
It overrides the in-tree module from /lib/modules/$abi/updates/; modinfo -k $abi -n btrfs shows
which one modprobe loads.
EOF
cat >"$root/DEBIAN/control" <<EOF
Package: $pkg
Source: btrfs-scan-gate
Version: $version
Architecture: $arch
Maintainer: $(sed -n 's/^Maintainer: //p' "$src/debian/control" | head -n 1)
Section: kernel
Priority: optional
Depends: linux-image-$abi (= $kver) | linux-image-$abi-unsigned (= $kver)
Conflicts: btrfs-scan-gate-dkms
Recommends: btrfs-scan-gate
Installed-Size: $(du -sk "$root" | cut -f1)
Description: patched btrfs module for Linux $abi (prebuilt)
 btrfs.ko of Debian's kernel $abi (linux-source-6.1 $kver) with
 btrfs-scan-gate's kernel series (virtual_fsid mount option, skip_scan module
 parameter), installed under /lib/modules/$abi/updates/ where it overrides
 the in-tree module. For image builders; on a running system the
 btrfs-scan-gate-dkms package builds the module for every installed kernel.
EOF
for s in postinst postrm; do
    cat >"$root/DEBIAN/$s" <<EOF
#!/bin/sh
# $s of $pkg: modprobe must see the module the package brought or took away, and a btrfs root
# loads btrfs from the initramfs
set -e
case "\$1" in
configure|remove|purge|abort-install|abort-upgrade)
    if command -v depmod >/dev/null 2>&1 && [ -d /lib/modules/$abi ]; then
        depmod -a $abi
    fi
    if [ -e /boot/initrd.img-$abi ] && command -v update-initramfs >/dev/null 2>&1; then
        update-initramfs -u -k $abi
    fi
    ;;
esac
exit 0
EOF
    chmod 0755 "$root/DEBIAN/$s"
done
deb=$out/${pkg}_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >&2
echo "$deb"
