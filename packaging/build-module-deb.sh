#!/bin/bash
# build-module-deb.sh (--sign-key KEY --sign-cert CERT | --unsigned) [--ko BTRFS_KO] ABI [OUTDIR]:
# the prebuilt-module package for image builders.
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
# per system).
#
# Signing: the builder names the key: --sign-key KEY (a PEM private key or a pkcs11: URI) and
# --sign-cert CERT (its certificate, enrolled where the module will load) sign the module with the
# kernel's sign-file after stripping; --unsigned states that the target has no Secure Boot. Neither:
# refused. No key is ever made here. The package's preinst refuses an unsigned module on a running
# system with Secure Boot on (modprobe would pick it over the signed in-tree one, and the kernel
# would refuse it: no btrfs); in an image build (chroot, DPKG_ROOT) the builder's word stands.
#
# --ko BTRFS_KO: package this already built module instead of building (its vermagic must name ABI
# and it must have the series' skip_scan parameter); tests/packaging/module-deb hands over the QEMU
# harness's build of the same series and source version.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "build-module-deb: $*" >&2; exit 1; }
usage() { echo "usage: build-module-deb.sh (--sign-key KEY --sign-cert CERT | --unsigned) [--ko BTRFS_KO] ABI [OUTDIR]" >&2; exit 2; }
ko= key= cert= unsigned=0
while [ $# -gt 0 ]; do
    case $1 in
    --ko) [ $# -ge 2 ] || usage; ko=$2; shift 2 ;;
    --sign-key) [ $# -ge 2 ] || usage; key=$2; shift 2 ;;
    --sign-cert) [ $# -ge 2 ] || usage; cert=$2; shift 2 ;;
    --unsigned) unsigned=1; shift ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) break ;;
    esac
done
if [ $# -lt 1 ] || [ $# -gt 2 ]; then usage; fi
if [ "$unsigned" = 1 ]; then
    [ -z "$key$cert" ] || fail "--unsigned and --sign-key/--sign-cert exclude each other"
elif [ -z "$key" ] || [ -z "$cert" ]; then
    fail "name the signing key and its certificate (--sign-key KEY --sign-cert CERT), or say --unsigned for a target without Secure Boot: a module the target's Secure Boot does not trust is refused at load, and modprobe does not fall back to the in-tree btrfs"
else
    case $key in pkcs11:*) ;; *) [ -r "$key" ] || fail "--sign-key $key is not readable" ;; esac
    [ -r "$cert" ] || fail "--sign-cert $cert is not readable"
fi
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
# as dkms does (STRIP): debug information out, symbols and modversions kept; then signed (strip
# would drop a signature appended before it)
strip --strip-debug "$root/lib/modules/$abi/updates/btrfs.ko"
signed=no
if [ "$unsigned" = 0 ]; then
    sign_file=/usr/lib/linux-kbuild-6.1/scripts/sign-file
    [ -x "$sign_file" ] || sign_file=$headers/scripts/sign-file
    [ -x "$sign_file" ] || fail "no sign-file for $abi (linux-kbuild-6.1 comes with linux-headers-$abi)"
    hash=$(sed -n 's/^CONFIG_MODULE_SIG_HASH="\(.*\)"/\1/p' "$headers/.config" 2>/dev/null || true)
    "$sign_file" "${hash:-sha256}" "$key" "$cert" "$root/lib/modules/$abi/updates/btrfs.ko" ||
        fail "sign-file failed"
    signed="yes, by $(modinfo -F signer "$root/lib/modules/$abi/updates/btrfs.ko")"
    echo "build-module-deb: signed: $signed" >&2
fi
install -m0644 "$src/debian/copyright" "$root/usr/share/doc/$pkg/copyright"
cat >"$root/usr/share/doc/$pkg/README" <<EOF
btrfs.ko of Linux $abi (linux-source-6.1 $kver) with btrfs-scan-gate's kernel series
(kernel-patches/6.1/series: $(grep -c '^[^#]' "$src/kernel-patches/6.1/series") patches), built by packaging/build-module-deb.sh of
btrfs-scan-gate $upstream. vermagic: $vermagic
It overrides the in-tree module from /lib/modules/$abi/updates/; modinfo -k $abi -n btrfs shows
which one modprobe loads. Signed: $signed.
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
# loads btrfs from the initramfs. Installed from outside the root (dpkg --root with
# --force-script-chrootless: DPKG_ROOT set) depmod works on that root; update-initramfs cannot.
set -e
case "\$1" in
configure|remove|purge|abort-install|abort-upgrade)
    if command -v depmod >/dev/null 2>&1 && [ -d "\$DPKG_ROOT/lib/modules/$abi" ]; then
        depmod -b "\${DPKG_ROOT:-/}" -a $abi
    fi
    if [ -e "\$DPKG_ROOT/boot/initrd.img-$abi" ]; then
        if [ -n "\$DPKG_ROOT" ]; then
            echo "$pkg: the initramfs of $abi in \$DPKG_ROOT was not rebuilt (update-initramfs works only inside its root): run update-initramfs -u -k $abi there before it boots" >&2
        elif command -v update-initramfs >/dev/null 2>&1; then
            update-initramfs -u -k $abi
        fi
    fi
    ;;
esac
exit 0
EOF
    chmod 0755 "$root/DEBIAN/$s"
done
if [ "$signed" = no ]; then
    # an unsigned module on a running system with Secure Boot on would be refused at load, and
    # modprobe would not fall back to the in-tree btrfs: do not install it there
    cat >"$root/DEBIAN/preinst" <<'EOF'
#!/bin/sh
# preinst of an unsigned btrfs-scan-gate-modules package (built with --unsigned)
set -e
if [ "$1" = install ] || [ "$1" = upgrade ]; then
    # an image build: the machine installing is not the target; the builder said it has no Secure Boot
    if [ -n "$DPKG_ROOT" ] || ! [ "${BSG_PID1_ROOT:-/proc/1/root}/." -ef /. ]; then
        exit 0
    fi
    v=${BSG_EFI_DIR:-/sys/firmware/efi}/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
    if [ -d "${BSG_EFI_DIR:-/sys/firmware/efi}" ]; then
        sb=$(od -An -t u1 -j 4 -N 1 "$v" 2>/dev/null | tr -d ' ') || sb=
        if [ "$sb" != 0 ]; then
            state="not known to be off"
            [ -z "$sb" ] || state=on
            echo "btrfs-scan-gate-modules: this btrfs.ko is unsigned and Secure Boot is $state here: the kernel would refuse it and modprobe would not fall back to the in-tree btrfs. Build the package with --sign-key and --sign-cert (a key this machine trusts)." >&2
            exit 1
        fi
    fi
fi
exit 0
EOF
    chmod 0755 "$root/DEBIAN/preinst"
fi
deb=$out/${pkg}_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >&2
echo "$deb"
