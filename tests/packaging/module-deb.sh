#!/bin/bash
# module-deb.sh WORK: packaging/build-module-deb.sh for the QEMU harness's 6.1 ABI
# ($BSG_CACHE/kernel-6.1.env), reusing the harness's module build of the same series and source
# version when it is cached (else the script builds it, 1-2 minutes). Checks:
#  - signing: without --sign-key/--sign-cert or --unsigned the script refuses; with a key made here
#    the module is signed by it (modinfo signer); an --unsigned package's preinst refuses a running
#    system with Secure Boot on (fake EFI variable) and accepts one without, or an image build;
#  - dpkg-deb -I: the package's name carries the ABI, it Depends on that kernel's image at exactly
#    the source's version, conflicts with btrfs-scan-gate-dkms;
#  - dpkg-deb -c: /lib/modules/ABI/updates/btrfs.ko and its docs, nothing else; the module's
#    vermagic equals the stock module's, it has skip_scan, it carries no debug information;
#  - installed with `dpkg --root` into a throw-away Debian 12 root next to a stand-in
#    linux-image-ABI package (the stock btrfs.ko of the image under kernel/fs/btrfs): its postinst's
#    depmod makes modprobe pick updates/btrfs.ko; removed, depmod is back on the in-tree module and
#    no file of the package is left; the same from outside the root (--force-script-chrootless,
#    DPKG_ROOT set): depmod on the root only, this machine's modules.dep untouched.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$1
cache=${BSG_CACHE:-/var/cache/btrfs-scan-gate}
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (dpkg --root runs the maintainer scripts chrooted)"
env=$cache/kernel-6.1.env
[ -e "$env" ] || fail "no $env (scripts/setup.sh runs tests/qemu/setup.sh, which writes it)"
# shellcheck disable=SC1090 # written by tests/qemu/setup.sh
. "$env"
[ -e "/usr/src/linux-headers-$ABI/Makefile" ] || fail "linux-headers-$ABI not installed (tests/qemu/setup.sh)"
stock=$(find "$cache/image-$SRCVER/root/lib/modules/$ABI" -name 'btrfs.ko*' | head -n 1)
[ -n "$stock" ] || fail "no stock btrfs.ko of $ABI under $cache/image-$SRCVER"
rm -rf "$work"
mkdir -p "$work/out"

# the harness's build of this series for this source version, if cached
# shellcheck disable=SC1091 # the QEMU harness's library (qemu_series_hash)
. "$here/../qemu/lib.sh"
ko=$cache/btrfs-$SRCVER-$(qemu_series_hash)/btrfs.ko
args=()
if [ -e "$ko" ]; then
    args=(--ko "$ko")
    echo "reusing the harness's module $ko"
else
    echo "no cached module of this series ($ko): build-module-deb.sh builds it"
fi
if "$here/../../packaging/build-module-deb.sh" "${args[@]}" "$ABI" "$work/refused" >"$work/refused.log" 2>&1; then
    fail "build-module-deb.sh built without a named key or --unsigned"
fi
grep -q 'name the signing key and its certificate' "$work/refused.log" || { cat "$work/refused.log"; fail "no refusal message"; }
echo "ok: no key named, no --unsigned: refused ($(head -c 100 "$work/refused.log"))"
mkdir -p "$work/keys"
openssl req -new -x509 -nodes -days 1 -subj "/CN=btrfs-scan-gate module-deb test key" -newkey rsa:2048 \
    -keyout "$work/keys/k.pem" -outform DER -out "$work/keys/k.der" >"$work/openssl.log" 2>&1 || { cat "$work/openssl.log"; fail "openssl"; }
start=$(date +%s)
deb=$("$here/../../packaging/build-module-deb.sh" --sign-key "$work/keys/k.pem" --sign-cert "$work/keys/k.der" \
    "${args[@]}" "$ABI" "$work/out" 2>"$work/build.log") ||
    { cat "$work/build.log"; fail "build-module-deb.sh"; }
echo "built $deb in $(( $(date +%s) - start )) s"
# the unsigned variant and its preinst
udeb=$("$here/../../packaging/build-module-deb.sh" --unsigned "${args[@]}" "$ABI" "$work/unsigned" 2>"$work/build-unsigned.log") ||
    { cat "$work/build-unsigned.log"; fail "build-module-deb.sh --unsigned"; }
mkdir -p "$work/uctl" "$work/efi/efivars"
dpkg-deb -e "$udeb" "$work/uctl"
[ -x "$work/uctl/preinst" ] || fail "the --unsigned package has no preinst"
if dpkg-deb --ctrl-tarfile "$deb" | tar -t | grep -q preinst; then fail "the signed package has a preinst"; fi
printf '\007\000\000\000\001' >"$work/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
if BSG_EFI_DIR=$work/efi BSG_PID1_ROOT=/ DPKG_ROOT= sh "$work/uctl/preinst" install >"$work/preinst-sb.log" 2>&1; then
    fail "unsigned preinst accepted Secure Boot on"
fi
grep -q 'unsigned and Secure Boot is on' "$work/preinst-sb.log" || { cat "$work/preinst-sb.log"; fail "unsigned preinst: no message"; }
BSG_EFI_DIR=$work/no-efi BSG_PID1_ROOT=/ DPKG_ROOT= sh "$work/uctl/preinst" install || fail "unsigned preinst refused a machine without EFI"
BSG_EFI_DIR=$work/efi DPKG_ROOT=/srv/image sh "$work/uctl/preinst" install || fail "unsigned preinst refused an image build"
echo "ok: --unsigned: preinst refuses Secure Boot on ($(head -c 90 "$work/preinst-sb.log")), accepts no EFI and image builds"
pkg=btrfs-scan-gate-modules-$ABI

# the control fields
dpkg-deb -I "$deb" >"$work/info.txt"
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = "$pkg" ] || fail "Package: $(field Package)"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] || fail "Architecture: $(field Architecture)"
[ "$(field Depends)" = "linux-image-$ABI (= $SRCVER) | linux-image-$ABI-unsigned (= $SRCVER)" ] ||
    fail "Depends: $(field Depends)"
[ "$(field Conflicts)" = btrfs-scan-gate-dkms ] || fail "Conflicts: $(field Conflicts)"
for s in postinst postrm; do
    grep -Eq "depmod (-b [^ ]+ )?-a $ABI" <(dpkg-deb --ctrl-tarfile "$deb" | tar -xO "./$s") || fail "$s does not run depmod -a $ABI"
done
# the files
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $6 }' | sort >"$work/files.txt"
printf '%s\n' "./lib/modules/$ABI/updates/btrfs.ko" "./usr/share/doc/$pkg/README" "./usr/share/doc/$pkg/copyright" |
    sort | diff -u - "$work/files.txt" || fail "unexpected file list"
dpkg-deb -x "$deb" "$work/x"
m=$work/x/lib/modules/$ABI/updates/btrfs.ko
[ "$(modinfo -F vermagic "$m")" = "$(modinfo -F vermagic "$stock")" ] ||
    fail "vermagic '$(modinfo -F vermagic "$m")' differs from the stock module's"
modinfo -F parm "$m" | grep -q '^skip_scan:' || fail "the packaged module has no skip_scan parameter"
if readelf -S "$m" | grep -q '\.debug_info'; then fail "the packaged module still has debug information"; fi
[ "$(modinfo -F signer "$m")" = "btrfs-scan-gate module-deb test key" ] || fail "the packaged module's signer is '$(modinfo -F signer "$m")'"
echo "ok: dpkg-deb -I/-c: $pkg $(field Version), Depends: $(field Depends), $(stat -c %s "$m") bytes"

# install and remove in a throw-away root (dpkg --root: maintainer scripts run chrooted there)
tarball=$("$here/throwaway-root.sh") || fail "no throw-away root"
root=$work/root
mkdir -p "$root"
trap 'rm -rf "$root"' EXIT
tar -C "$root" -xf "$tarball"
command -v depmod >/dev/null || fail "depmod not installed (kmod; scripts/setup.sh)"
[ -x "$root/sbin/depmod" ] || [ -x "$root/usr/sbin/depmod" ] || fail "the throw-away root has no depmod"
# a stand-in for linux-image-ABI: the stock btrfs.ko where the image has it, no scripts
img=$work/image
mkdir -p "$img/DEBIAN" "$img/lib/modules/$ABI/kernel/fs/btrfs"
cp "$stock" "$img/lib/modules/$ABI/kernel/fs/btrfs/"
for f in modules.order modules.builtin modules.builtin.modinfo; do
    [ ! -e "$cache/image-$SRCVER/root/lib/modules/$ABI/$f" ] || cp "$cache/image-$SRCVER/root/lib/modules/$ABI/$f" "$img/lib/modules/$ABI/"
done
printf 'Package: linux-image-%s\nVersion: %s\nArchitecture: %s\nMaintainer: test <t@example.org>\nDescription: stand-in\n' \
    "$ABI" "$SRCVER" "$(dpkg --print-architecture)" >"$img/DEBIAN/control"
dpkg-deb --root-owner-group -Zgzip --build "$img" "$work/image.deb" >/dev/null
dpkg --root="$root" -i "$work/image.deb" >"$work/dpkg-image.log" 2>&1 || { cat "$work/dpkg-image.log"; fail "stand-in image"; }
depmod -b "$root" "$ABI"
chosen() { modinfo -b "$root" -k "$ABI" -n btrfs | sed "s|^$root||"; }
[ "$(chosen)" = "/lib/modules/$ABI/kernel/fs/btrfs/btrfs.ko" ] || fail "before: depmod picks $(chosen)"
dpkg --root="$root" -i "$deb" >"$work/dpkg-install.log" 2>&1 || { cat "$work/dpkg-install.log"; fail "dpkg -i $pkg"; }
[ "$(chosen)" = "/lib/modules/$ABI/updates/btrfs.ko" ] || fail "installed: depmod picks $(chosen), not updates/btrfs.ko"
modinfo -b "$root" -k "$ABI" -F parm btrfs | grep -q '^skip_scan:' || fail "installed: modprobe's btrfs has no skip_scan"
echo "ok: installed: modprobe btrfs for $ABI loads $(chosen)"
dpkg --root="$root" -P "$pkg" >"$work/dpkg-purge.log" 2>&1 || { cat "$work/dpkg-purge.log"; fail "dpkg -P $pkg"; }
[ ! -e "$root/lib/modules/$ABI/updates/btrfs.ko" ] || fail "purged: updates/btrfs.ko left behind"
[ "$(chosen)" = "/lib/modules/$ABI/kernel/fs/btrfs/btrfs.ko" ] || fail "purged: depmod picks $(chosen)"
echo "ok: purged: back on $(chosen)"
# the same from outside the root, as image builders and mmdebstrap's chrootless mode install
# (DPKG_ROOT set): depmod works on the root, never on this machine's /lib/modules, and the
# initramfs the root has is named as not rebuilt
host_dep=/lib/modules/$ABI/modules.dep
host_sum=$(sha256sum "$host_dep" 2>/dev/null || echo none)
touch "$root/boot/initrd.img-$ABI"
dpkg --root="$root" --force-script-chrootless -i "$deb" >"$work/dpkg-chrootless.log" 2>&1 ||
    { cat "$work/dpkg-chrootless.log"; fail "dpkg --root --force-script-chrootless -i $pkg"; }
[ "$(chosen)" = "/lib/modules/$ABI/updates/btrfs.ko" ] || fail "chrootless install: depmod picks $(chosen) in the root"
grep -q "initramfs of $ABI in $root was not rebuilt" "$work/dpkg-chrootless.log" ||
    { cat "$work/dpkg-chrootless.log"; fail "chrootless install: no word that the root's initramfs was not rebuilt"; }
dpkg --root="$root" --force-script-chrootless -P "$pkg" >>"$work/dpkg-chrootless.log" 2>&1 ||
    { cat "$work/dpkg-chrootless.log"; fail "dpkg --root --force-script-chrootless -P $pkg"; }
[ "$(chosen)" = "/lib/modules/$ABI/kernel/fs/btrfs/btrfs.ko" ] || fail "chrootless purge: depmod picks $(chosen)"
[ "$(sha256sum "$host_dep" 2>/dev/null || echo none)" = "$host_sum" ] || fail "chrootless: this machine's $host_dep changed"
echo "ok: chrootless (DPKG_ROOT): depmod ran on the root only, the root's initramfs named as not rebuilt"
echo "PASS: $pkg: Depends on linux-image-$ABI (= $SRCVER), /lib/modules/$ABI/updates/btrfs.ko with the series, chosen by depmod once installed, gone after purge"
