#!/bin/bash
# dkms-build.sh DEBDIR_FILE KO_FILE: `dkms build` (and `dkms install` into a scratch install tree)
# of btrfs-scan-gate-dkms, unpacked from its .deb, against the installed linux-headers of the
# cached 6.1 ABI (tests/qemu/setup.sh, $BSG_CACHE/kernel-6.1.env). Checks the module's vermagic
# equals the stock module's of that kernel image, that it has the series' skip_scan parameter,
# that dkms installs it under updates/dkms and that depmod then picks it over the in-tree
# kernel/fs/btrfs/btrfs.ko. Writes the module's path to KO_FILE (for packaging/dkms-qemu-smoke).
# The module is cached in $BSG_CACHE/dkms-<hash of the .deb, source version and ABI>/.
set -euo pipefail
debfile=$1 kofile=$2
cache=${BSG_CACHE:-/var/cache/btrfs-scan-gate}
fail() { echo "FAIL: $*"; exit 1; }
rm -f "$kofile"
env=$cache/kernel-6.1.env
[ -e "$env" ] || fail "no $env (scripts/setup.sh runs tests/qemu/setup.sh, which writes it)"
# shellcheck disable=SC1090 # written by tests/qemu/setup.sh
. "$env"
deb=$(ls "$(cat "$debfile")"/btrfs-scan-gate-dkms_*_all.deb)
[ -e "/usr/src/linux-headers-$ABI/Makefile" ] || fail "linux-headers-$ABI not installed (tests/qemu/setup.sh)"
stock=$(find "$cache/image-$SRCVER/root/lib/modules/$ABI" -name 'btrfs.ko*' | head -n 1)
[ -n "$stock" ] || fail "no stock btrfs.ko of $ABI under $cache/image-$SRCVER"
# this machine may not let root look at PID 1's root (a container), which dkms.conf takes for an
# image build: say, as an image builder does, that the module is not to be signed (key=none; the
# module is only loaded in the test's QEMU guest, which has no Secure Boot)
signing=$(mktemp "${TMPDIR:-/var/tmp}/module-signing.XXXXXX")
echo key=none >"$signing"
export BSG_SIGNING_CONF=$signing
key=$( { sha256sum <"$deb"; echo "$SRCVER $ABI"; } | sha256sum | cut -c1-16)
out=$cache/dkms-$key
mkdir -p "$cache/locks"
exec 9>"$cache/locks/dkms-$key"
flock -w 1800 9 || fail "timed out waiting for another dkms build of $key"
ver=
if [ ! -e "$out/btrfs.ko" ]; then
    rm -rf "$out"
    work=$(mktemp -d "$cache/dkms-build.XXXXXX")
    trap 'rm -rf "$work" "$signing"' EXIT
    dpkg-deb -x "$deb" "$work/pkg"
    ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$work/pkg"/usr/src/btrfs-scan-gate-*/dkms.conf)
    mkdir -p "$work/dkms"
    start=$(date +%s)
    dkms --dkmstree "$work/dkms" --sourcetree "$work/pkg/usr/src" -m btrfs-scan-gate -v "$ver" -k "$ABI" build \
        >"$work/dkms-build.log" 2>&1 ||
        { tail -n 40 "$work/dkms-build.log"; tail -n 40 "$work/dkms/btrfs-scan-gate/$ver/build/make.log"; fail "dkms build"; }
    echo "dkms build: $(( $(date +%s) - start )) s"
    built=$(find "$work/dkms/btrfs-scan-gate/$ver/$ABI" -name 'btrfs.ko*' | head -n 1)
    [ -e "$built" ] || fail "dkms build left no btrfs.ko"
    # keep the unpacked package and dkms' tree: `dkms install` below needs them
    rm -rf "$work/dkms/btrfs-scan-gate/$ver/build"
    mv "$work" "$out"
    trap - EXIT
    ln -sfn "$out/pkg/usr/src/btrfs-scan-gate-$ver" "$out/dkms/btrfs-scan-gate/$ver/source"
    cp "${built/$work/$out}" "$out/btrfs.ko.tmp" && mv "$out/btrfs.ko.tmp" "$out/btrfs.ko"
fi
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$out"/pkg/usr/src/btrfs-scan-gate-*/dkms.conf)
# the package makes dkms override the in-tree module's equal (empty) version
force=$out/pkg/usr/share/dkms/modules_to_force_install/btrfs-scan-gate
grep -qx 'btrfs-scan-gate_version-override' "$force" || fail "the package lacks $force (dkms would refuse to install)"
# dkms install into a scratch tree holding the stock module: where does it go, does depmod prefer it?
# (--force-version-override: what $force does on a system where the package is installed)
inst=$(mktemp -d "${TMPDIR:-/var/tmp}/dkms-install.XXXXXX")
trap 'rm -rf "$inst" "$signing"' EXIT
mkdir -p "$inst/lib/modules/$ABI/kernel/fs/btrfs"
cp "$stock" "$inst/lib/modules/$ABI/kernel/fs/btrfs/"
dkms --dkmstree "$out/dkms" --sourcetree "$out/pkg/usr/src" --installtree "$inst/lib/modules" --no-depmod \
    --force-version-override -m btrfs-scan-gate -v "$ver" -k "$ABI" install >"$inst/dkms-install.log" 2>&1 ||
    { tail -n 30 "$inst/dkms-install.log"; fail "dkms install"; }
find "$inst" -name 'btrfs.ko*' | sed "s|$inst||" | sort >"$out/installed.txt"
depmod -b "$inst" "$ABI" 2>"$inst/depmod.log" || { cat "$inst/depmod.log"; fail "depmod"; }
modinfo -b "$inst" -k "$ABI" -n btrfs >"$out/depmod-choice.txt"
# dkms' own install state for the scratch tree is not wanted in the cache
dkms --dkmstree "$out/dkms" --sourcetree "$out/pkg/usr/src" --installtree "$inst/lib/modules" --no-depmod \
    -m btrfs-scan-gate -v "$ver" -k "$ABI" uninstall >>"$inst/dkms-install.log" 2>&1 || true
cat "$out/installed.txt"
echo "depmod picks: $(sed "s|$inst||" "$out/depmod-choice.txt")"
grep -q "/lib/modules/$ABI/updates/dkms/btrfs.ko" "$out/installed.txt" || fail "dkms did not install under updates/dkms"
grep -q "/lib/modules/$ABI/updates/dkms/btrfs.ko" "$out/depmod-choice.txt" ||
    fail "depmod prefers $(cat "$out/depmod-choice.txt") over updates/dkms/btrfs.ko"
vm_new=$(modinfo -F vermagic "$out/btrfs.ko") vm_stock=$(modinfo -F vermagic "$stock")
[ "$vm_new" = "$vm_stock" ] || fail "vermagic '$vm_new' differs from the stock module's '$vm_stock'"
modinfo -F parm "$out/btrfs.ko" | grep -q '^skip_scan:' || fail "the built module has no skip_scan parameter"
modinfo -F parm "$stock" | grep -q '^skip_scan:' && fail "the stock module has skip_scan too: check broken"
echo "$out/btrfs.ko" >"$kofile"
echo "PASS: dkms built $out/btrfs.ko for $ABI (linux-source-6.1 $SRCVER): vermagic '$vm_new', skip_scan present, installed under updates/dkms and chosen by depmod"
