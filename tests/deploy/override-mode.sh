#!/bin/bash
# BSG_RULES_OVERRIDE=udevdir (distribution packages): a configure-only build of the project must
# install both rules files into <udevdir>/rules.d and template that path into the initramfs hooks;
# a value other than etc|udevdir|empty must be refused. Prefix /usr, udevdir given (/usr/lib/udev).
# Usage: override-mode.sh SOURCE_DIR WORK
set -euo pipefail
src=$1 work=$2 udevdir=/usr/lib/udev
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work"
cmake -S "$src" -B "$work/udevdir" -DBSG_RULES_OVERRIDE=udevdir -DCMAKE_INSTALL_PREFIX=/usr -DBSG_UDEVDIR=$udevdir -DBSG_QEMU_TESTS=OFF \
    -DBSG_SANITIZERS=OFF -DBSG_VALGRIND=OFF >"$work.udevdir.log" 2>&1 ||
    { tail -20 "$work.udevdir.log"; fail "configure with BSG_RULES_OVERRIDE=udevdir"; }
inst=$work/udevdir/rules.d/cmake_install.cmake
[ -e "$inst" ] || fail "no $inst"
grep -F "\"$udevdir/rules.d\"" "$inst" || fail "$inst does not install into $udevdir/rules.d"
if grep -F '/etc/udev/rules.d"' "$inst"; then fail "$inst still installs into /etc/udev/rules.d"; fi
for f in mkinitcpio/install/btrfs-scan-gate dracut/90btrfs-scan-gate/module-setup.sh \
         initramfs-tools/hooks/btrfs-scan-gate; do
    grep -q "$udevdir/rules.d/\(64-btrfs.rules\|\$rules\)" "$work/udevdir/udev/$f" ||
        fail "$f does not copy the rules from $udevdir/rules.d"
    echo "ok: $f"
done
if cmake -S "$src" -B "$work/bad" -DBSG_RULES_OVERRIDE=usr -DBSG_QEMU_TESTS=OFF \
    -DBSG_SANITIZERS=OFF -DBSG_VALGRIND=OFF >"$work.bad.log" 2>&1; then
    fail "BSG_RULES_OVERRIDE=usr was accepted"
fi
grep -q "BSG_RULES_OVERRIDE must be" "$work.bad.log" || fail "no clear error for a bad BSG_RULES_OVERRIDE"
echo PASS
