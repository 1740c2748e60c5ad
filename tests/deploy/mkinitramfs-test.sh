#!/bin/bash
# Builds a real initramfs with Debian's mkinitramfs from the staging root's hook and script, into a
# temp file (never /boot), and checks what landed in it. The staging root is laid over /etc and
# /usr with read-only overlays inside a private mount namespace, so the host is not changed.
# Usage: mkinitramfs-test.sh STAGE WORK HELPER_PATH RULESDIR INITRAMFSTOOLSDIR
set -euo pipefail
stage=$1 work=$2 helper=$3 rulesdir=$4 itdir=$5
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (mount namespace)"
command -v mkinitramfs >/dev/null || skip "initramfs-tools not installed (apt-get install initramfs-tools)"
command -v unmkinitramfs >/dev/null || skip "unmkinitramfs not installed"
grep -qw overlay /proc/filesystems || modprobe overlay || skip "no overlayfs"
[ -f "$stage$itdir/hooks/btrfs-scan-gate" ] || fail "hook not in staging root (deploy/install-tree)"

rm -rf "$work"
mkdir -p "$work/extra/usr/lib/modules" "$work/conf" "$work/unpacked"
ver=0.0.0-bsgtest
# an empty module tree for a made-up kernel version: no kernel is needed for this test
mkdir -p "$work/extra/usr/lib/modules/$ver"
: > "$work/extra/usr/lib/modules/$ver/modules.dep"
# btrfs built in (as with the --print-cmdline fallback), so manual_add_modules btrfs has an answer
echo kernel/fs/btrfs/btrfs.ko > "$work/extra/usr/lib/modules/$ver/modules.builtin"
: > "$work/extra/usr/lib/modules/$ver/modules.order"
# mkinitramfs checks /boot/config-<version> for the compressor: overlaid below, /boot is untouched
mkdir -p "$work/extra/boot"
printf 'CONFIG_RD_GZIP=y\nCONFIG_BLK_DEV_INITRD=y\n' > "$work/extra/boot/config-$ver"
if [ ! -x "$stage$helper" ]; then
    # an ELF stand-in: copy_exec runs ldd on it
    echo "NOTE: helper not installed in the staging root; using /bin/true as a stand-in"
    mkdir -p "$work/extra$(dirname "$helper")"
    cp /bin/true "$work/extra$helper"
fi
mkdir -p "$stage/etc" "$stage/usr"
cp -r /etc/initramfs-tools/. "$work/conf/"
sed -i 's/^MODULES=.*/MODULES=list/; s/^COMPRESS=.*/COMPRESS=gzip/' "$work/conf/initramfs.conf"
# the rules files may live under /etc or under /usr: both are overlaid

# shellcheck disable=SC2016 # the inner script expands its own arguments
unshare -m /bin/sh -c '
    set -e
    mount --make-rprivate /
    mount -t overlay bsg-etc -o "lowerdir=$1/etc:/etc" /etc
    mount -t overlay bsg-usr -o "lowerdir=$2/extra/usr:$1/usr:/usr" /usr
    mount -t overlay bsg-boot -o "lowerdir=$2/extra/boot:/boot" /boot
    ls -l "$4"
    mkinitramfs -v -d "$2/conf" -o "$2/initrd.img" "$3"
' sh "$stage" "$work" "$ver" "$rulesdir" >"$work/mkinitramfs.log" 2>&1 ||
    { tail -30 "$work/mkinitramfs.log"; fail "mkinitramfs failed, see $work/mkinitramfs.log"; }
lsinitramfs "$work/initrd.img" > "$work/list.txt"
unmkinitramfs "$work/initrd.img" "$work/unpacked" >"$work/unmkinitramfs.log" 2>&1 || fail "unmkinitramfs"
root=$work/unpacked
[ -d "$root/main" ] && root=$root/main
echo "initramfs: $(wc -l < "$work/list.txt") entries"

for f in "${helper#/}" etc/udev/rules.d/64-btrfs.rules etc/udev/rules.d/64-btrfs-dm.rules \
         scripts/init-top/btrfs-scan-gate; do
    [ -e "$root/$f" ] || fail "$f not in the initramfs"
    echo "ok: $f"
done
cmp "$root/etc/udev/rules.d/64-btrfs.rules" "$stage$rulesdir/64-btrfs.rules" || fail "64-btrfs.rules differs"
grep -q "IMPORT{program}=\"$helper udev" "$root/etc/udev/rules.d/64-btrfs.rules" || fail "rules don't call $helper"
# init-top: ours must run before udev's (which starts udevd and triggers)
order=$root/scripts/init-top/ORDER
[ -f "$order" ] || fail "no scripts/init-top/ORDER"
cat "$order"
ours=$(grep -n '/scripts/init-top/btrfs-scan-gate' "$order" | head -1 | cut -d: -f1)
udev=$(grep -n '/scripts/init-top/udev' "$order" | head -1 | cut -d: -f1)
if [ -z "$ours" ] || [ -z "$udev" ]; then fail "init-top ORDER lacks btrfs-scan-gate or udev"; fi
[ "$ours" -lt "$udev" ] || fail "init-top/btrfs-scan-gate runs after init-top/udev"
echo "ok: init-top/btrfs-scan-gate (line $ours) before init-top/udev (line $udev)"
# btrfs-progs' full `btrfs device scan` is replaced by the gate
if [ -f "$root/scripts/local-premount/btrfs" ]; then
    if grep -q 'btrfs device scan' "$root/scripts/local-premount/btrfs"; then
        fail "local-premount/btrfs still runs 'btrfs device scan'"
    fi
    grep -q "$helper' boot" "$root/scripts/local-premount/btrfs" || fail "local-premount/btrfs does not call boot"
    echo "ok: local-premount/btrfs calls the gate"
fi
echo PASS
