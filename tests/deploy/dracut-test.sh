#!/bin/bash
# Builds a real dracut image (no kernel, shell initrd) with the staging root's 90btrfs-scan-gate
# module into a temp file and checks what landed in it. As in mkinitramfs-test.sh the staging root
# is laid over /etc and /usr with read-only overlays in a private mount namespace.
# Usage: dracut-test.sh STAGE WORK HELPER_PATH RULESDIR DRACUTMODULESDIR
set -euo pipefail
stage=$1 work=$2 helper=$3 rulesdir=$4 moddir=$5
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (mount namespace)"
command -v dracut >/dev/null || skip "dracut not installed (apt-get install dracut-core)"
command -v lsinitrd >/dev/null || skip "lsinitrd not installed"
command -v btrfs >/dev/null || skip "btrfs-progs not installed (dracut's btrfs module needs it)"
grep -qw overlay /proc/filesystems || modprobe overlay || skip "no overlayfs"
[ -f "$stage$moddir/90btrfs-scan-gate/module-setup.sh" ] || fail "module not in staging root (deploy/install-tree)"
[ -x "$stage$helper" ] || skip "helper not installed in the staging root (no helper target)"

rm -rf "$work"
mkdir -p "$work/conf.d" "$work/tmp"
# opt-in, as documented (dracut --add): check() answers 255 ("only when asked for") when its
# binaries are there, 1 when the helper is missing; never 0, which would pull it into every image
# shellcheck disable=SC2016 # expanded by the inner bash
check_rc() { bash -c 'require_binaries() { [ "$1" = "$STUB_OK" ]; }; . "$1"; check; echo $?' sh \
    "$stage$moddir/90btrfs-scan-gate/module-setup.sh" 2>&1 | tail -n 1; }
rc=$(STUB_OK=$helper check_rc)
[ "$rc" = 255 ] || fail "module-setup.sh check() returned $rc with the helper present, not 255 (opt-in)"
rc=$(STUB_OK=/nonexistent check_rc)
[ "$rc" = 1 ] || fail "module-setup.sh check() returned $rc without the helper, not 1"
echo "ok: check() 255 (only with --add / -m), 1 without the helper"
mkdir -p "$stage/etc" "$stage/usr"
# shellcheck disable=SC2016 # the inner script expands its own arguments
unshare -m /bin/sh -c '
    set -e
    mount --make-rprivate /
    mount -t overlay bsg-etc -o "lowerdir=$1/etc:/etc" /etc
    mount -t overlay bsg-usr -o "lowerdir=$1/usr:/usr" /usr
    dracut --no-kernel --no-hostonly --force --conf /dev/null --confdir "$2/conf.d" \
        --tmpdir "$2/tmp" -m "bash udev-rules btrfs btrfs-scan-gate" "$2/initrd.img" 0.0.0-bsgtest
' sh "$stage" "$work" >"$work/dracut.log" 2>&1 ||
    { tail -30 "$work/dracut.log"; fail "dracut failed, see $work/dracut.log"; }
lsinitrd "$work/initrd.img" > "$work/list.txt" 2>&1 || fail "lsinitrd"
echo "image: $(wc -l < "$work/list.txt") entries"
# unpack it (lsinitrd -f shows hardlinked files as empty)
mkdir -p "$work/root"
(cd "$work/root" && lsinitrd --unpack "$work/initrd.img") >"$work/unpack.log" 2>&1 || fail "lsinitrd --unpack"
root=$work/root
show() { cat "$root/$1"; }

for f in "${helper#/}" etc/udev/rules.d/64-btrfs.rules etc/udev/rules.d/64-btrfs-dm.rules \
         lib/dracut/hooks/pre-udev/30-btrfs-scan-gate-boot.sh; do
    [ -e "$root/$f" ] || fail "$f not in the image"
    echo "ok: $f"
done
show etc/udev/rules.d/64-btrfs.rules > "$work/64-btrfs.rules"
cmp "$work/64-btrfs.rules" "$stage$rulesdir/64-btrfs.rules" || fail "64-btrfs.rules in the image differs"
show lib/dracut/hooks/pre-udev/30-btrfs-scan-gate-boot.sh | grep -q "'$helper' boot" ||
    fail "the pre-udev hook does not run '$helper boot'"
# 90btrfs's ungated initqueue/timeout scan is replaced by the gate
t=lib/dracut/hooks/initqueue/timeout/10-btrfs_timeout.sh
[ -e "$root/$t" ] || fail "$t not in the image (dracut's 90btrfs changed?)"
show "$t" > "$work/timeout.sh"
if grep -q 'btrfs device scan' "$work/timeout.sh"; then fail "$t still runs 'btrfs device scan'"; fi
grep -q "'$helper' boot" "$work/timeout.sh" || fail "$t does not run the gate"
echo "ok: $t runs the gate"
echo PASS
