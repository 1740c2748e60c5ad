#!/bin/bash
# install-prefix.sh CASE SOURCE_DIR WORK: a packager's staged install. Configures the source in
# WORK/build for CASE (below), builds it, runs `DESTDIR=WORK/root cmake --install`, and compares the
# file list with the literal list expected-install-CASE.txt beside this script. Then: the unit's
# ExecStart=, the rules and the hooks call the helper where the install put it.
# pkg-config sees only the host's library .pc files (libudev, blkid) plus, in the *-debian12 cases,
# an udev.pc and a systemd.pc that answer as Debian 12's (udevdir=/lib/udev,
# systemdsystemunitdir=${rootprefix}/lib/systemd/system with rootprefix empty); in the *-nopc cases
# none (the usr-merged fallbacks). No dracut.pc in any.
#   usr-debian12       prefix /usr, as debian/rules configures: -DBSG_RULES_OVERRIDE=udevdir,
#                      -DBSG_INITRAMFS="initramfs-tools;dracut"
#   usr-nopc           prefix /usr, defaults but -DBSG_INITRAMFS="initramfs-tools;dracut;mkinitcpio"
#   usrlocal-debian12  prefix /usr/local (CMake's default), defaults but -DBSG_INITRAMFS=none
set -euo pipefail
case=$1 src=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
expected=$here/expected-install-$case.txt
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$expected" ] || fail "no $expected"
command -v pkg-config >/dev/null || fail "pkg-config not installed (scripts/setup.sh)"

case $case in
usr-debian12) pc=debian12 args=(-DCMAKE_INSTALL_PREFIX=/usr -DBSG_RULES_OVERRIDE=udevdir "-DBSG_INITRAMFS=initramfs-tools;dracut") ;;
usr-nopc) pc=none args=(-DCMAKE_INSTALL_PREFIX=/usr "-DBSG_INITRAMFS=initramfs-tools;dracut;mkinitcpio") ;;
usrlocal-debian12) pc=debian12 args=(-DBSG_INITRAMFS=none) ;;
*) fail "unknown case $case" ;;
esac

rm -rf "$work"
mkdir -p "$work/pc"
# the host's .pc files but udev's, systemd's and dracut's
IFS=: read -ra dirs <<<"$(pkg-config --variable pc_path pkg-config)"
for d in "${dirs[@]}"; do
    for f in "$d"/*.pc; do
        [ -e "$f" ] || continue
        case ${f##*/} in udev.pc | systemd.pc | dracut.pc) continue ;; esac
        [ -e "$work/pc/${f##*/}" ] || ln -s "$f" "$work/pc/${f##*/}"
    done
done
for f in libudev.pc blkid.pc; do [ -e "$work/pc/$f" ] || fail "$f not found on this host"; done
if [ "$pc" = debian12 ]; then
    # shellcheck disable=SC2016 # pkg-config expands these
    printf 'Name: udev\nDescription: udev\nVersion: 252\n\nudev_dir=/lib/udev\nudevdir=${udev_dir}\n' >"$work/pc/udev.pc"
    # shellcheck disable=SC2016 # pkg-config expands these
    printf '%s\n' 'prefix=/usr' 'root_prefix=' 'rootprefix=${root_prefix}' \
        'systemdsystemunitdir=${rootprefix}/lib/systemd/system' \
        'Name: systemd' 'Description: systemd System and Service Manager' 'Version: 252' >"$work/pc/systemd.pc"
fi
export PKG_CONFIG_LIBDIR=$work/pc PKG_CONFIG_PATH=

cmake -S "$src" -B "$work/build" -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=None "${args[@]}" >"$work/configure.log" 2>&1 ||
    { tail -n 20 "$work/configure.log"; fail "configure"; }
grep 'btrfs-scan-gate: helper' "$work/configure.log" || fail "configure did not report the layout"
cmake --build "$work/build" -j2 >"$work/build.log" 2>&1 || { tail -n 20 "$work/build.log"; fail "build"; }
DESTDIR=$work/root cmake --install "$work/build" >"$work/install.log" 2>&1 ||
    { tail -n 20 "$work/install.log"; fail "cmake --install"; }
(cd "$work/root" && find . \( -type f -o -type l \) | sed 's|^\.||' | sort) >"$work/files"
sort "$expected" >"$work/expected"
diff -u "$work/expected" "$work/files" || fail "installed files differ from ${expected##*/} (- expected, + installed)"

# every caller names the installed helper
helper=$(grep '/btrfs-scan-gate$' "$work/files" | grep '/bin/')
unit=$(grep '/btrfs-scan-gate.service$' "$work/files")
grep -qx "ExecStart=$helper boot" "$work/root$unit" || fail "$unit: ExecStart= is not $helper boot"
grep -q "IMPORT{program}=\"$helper udev \$devnode\"" "$work/root$(grep '/64-btrfs.rules$' "$work/files")" ||
    fail "64-btrfs.rules does not call $helper"
while read -r f; do
    case $f in */hooks/* | */scripts/init-top/* | */install/* | */module-setup.sh)
        grep -q "'$helper'" "$work/root$f" || fail "$f does not call $helper" ;;
    esac
done <"$work/files"
if grep -rn '@[A-Z_]*@' "$work/root" --exclude=btrfs-scan-gate --exclude='*.8'; then
    fail "unexpanded @VARIABLE@ in the staged tree"
fi
# an install prefix changed at install time would break those paths: refused
if DESTDIR=$work/root2 cmake --install "$work/build" --prefix /opt/elsewhere >"$work/install2.log" 2>&1; then
    fail "cmake --install --prefix /opt/elsewhere was accepted"
fi
grep -q 'configured for the prefix' "$work/install2.log" || fail "no clear error for cmake --install --prefix"
echo "PASS: $case: $(wc -l <"$work/files") files as ${expected##*/}; unit, rules and hooks call $helper"
