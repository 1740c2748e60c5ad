#!/bin/bash
# deb-install.sh DEBDIR WORK: installs btrfs-scan-gate and btrfs-scan-gate-dkms from DEBDIR into a
# throw-away Debian 12 root (throwaway-root.sh), then checks:
#  - the stock 64-btrfs.rules / 64-btrfs-dm.rules are diverted, the package's files are in their
#    place, the unit is enabled (sysinit.target.wants), the dkms sources are registered;
#  - `udevadm test` of a btrfs loop device, run in the root, imports the helper's answer and does
#    not run the builtin `btrfs ready` (before installation and after purge it does run it);
#  - remove, then purge: the diversions are gone, the stock rules are back byte for byte, and the
#    root's file list equals the one before installation (dpkg's own database and logs aside).
# Everything runs in a private mount namespace: the root's /run is a tmpfs, its /dev an overlay over
# the host's (udevadm test creates links for real), so the host's /run and /dev are untouched.
set -euo pipefail
debdir=$(realpath "$1") work=$2
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, loop devices, mount namespace)"
for t in losetup mkfs.btrfs unshare chroot btrfs; do
    command -v "$t" >/dev/null || fail "$t not installed (scripts/setup.sh installs it)"
done
grep -qw btrfs /proc/filesystems || modprobe btrfs || skip "no btrfs in this kernel"
ls "$debdir"/btrfs-scan-gate_*.deb "$debdir"/btrfs-scan-gate-dkms_*.deb >/dev/null ||
    fail "no .debs in $debdir"

tarball=$("$here/throwaway-root.sh") || fail "no throw-away root"
rm -rf "$work"
mkdir -p "$work/root" "$work/logs"
tar -C "$work/root" -xf "$tarball"
cp "$debdir"/btrfs-scan-gate_*.deb "$debdir"/btrfs-scan-gate-dkms_*.deb "$work/root/tmp/"

truncate -s 120M "$work/fs.img"
mkfs.btrfs -f -L bsgpkg "$work/fs.img" >"$work/logs/mkfs.log" 2>&1 || fail "mkfs.btrfs"
loop=$(losetup --show -f "$work/fs.img") || skip "losetup failed (no free loop device?)"
cleanup() {
    btrfs device scan --forget "$loop" >>"$work/logs/cleanup.log" 2>&1 || true
    losetup -d "$loop" >>"$work/logs/cleanup.log" 2>&1 || true
    rm -rf "$work/root"
}
trap cleanup EXIT
echo "throw-away root: $work/root (from $tarball); btrfs loop device: $loop"

# the steps below run in the root, in one private mount namespace
# shellcheck disable=SC2016 # the inner script expands its own variables
unshare -m /bin/bash -c '
set -euo pipefail
root=$1 logs=$2 loop=$3
name=${loop#/dev/}
mount --make-rprivate /
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount -t tmpfs -o mode=0755 bsg-run "$root/run"
mkdir -p "$root/run/bsg-dev/upper" "$root/run/bsg-dev/work"
mount -t overlay bsg-dev -o "lowerdir=/dev,upperdir=$root/run/bsg-dev/upper,workdir=$root/run/bsg-dev/work" "$root/dev"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }
snapshot() { # the root'"'"'s files, but for dpkg'"'"'s database and logs and the mounts
    (cd "$root" && find . -xdev \( -path ./var/lib/dpkg -o -path ./var/log -o -path ./var/cache/debconf \
        -o -path ./run -o -path ./tmp -o -path ./dev -o -path ./proc -o -path ./sys \) -prune \
        -o -printf "%y %p\n" | LC_ALL=C sort)
}
udev_test() { # udev_test TAG: udevadm test of the loop device with the root'"'"'s rules
    rm -rf "$root/run/udev"
    in_root udevadm test --action=add "/sys/class/block/$name" >"$logs/udevadm-$1.log" 2>&1 ||
        { tail -n 30 "$logs/udevadm-$1.log"; echo "udevadm test ($1) failed"; exit 1; }
}
rules=$(in_root pkg-config --variable=udevdir udev 2>/dev/null || echo /lib/udev)/rules.d
[ -e "$root$rules/64-btrfs.rules" ] || rules=/lib/udev/rules.d
sha256sum "$root$rules/64-btrfs.rules" "$root$rules/64-btrfs-dm.rules" 2>/dev/null >"$logs/stock-rules.sha256" || true
echo "stock rules: $(wc -l <"$logs/stock-rules.sha256") file(s) in $rules"
snapshot >"$logs/before.files"
udev_test stock-before

in_root dpkg -i /tmp/$(cd "$root/tmp" && ls btrfs-scan-gate_*.deb) /tmp/$(cd "$root/tmp" && ls btrfs-scan-gate-dkms_*.deb) \
    >"$logs/dpkg-install.log" 2>&1 || { cat "$logs/dpkg-install.log"; echo "dpkg -i failed"; exit 1; }
in_root dpkg-divert --list "*64-btrfs*" >"$logs/diversions-installed.txt"
in_root dkms status >"$logs/dkms-status.txt" 2>&1 || true
ls -l "$root/etc/systemd/system/sysinit.target.wants/" >"$logs/wants.txt" 2>&1 || true
cp "$root$rules/64-btrfs.rules" "$logs/installed-64-btrfs.rules"
udev_test installed
in_root dpkg -r btrfs-scan-gate btrfs-scan-gate-dkms >"$logs/dpkg-remove.log" 2>&1 ||
    { cat "$logs/dpkg-remove.log"; echo "dpkg -r failed"; exit 1; }
in_root dpkg-divert --list "*64-btrfs*" >"$logs/diversions-removed.txt"
in_root dpkg -P btrfs-scan-gate btrfs-scan-gate-dkms >"$logs/dpkg-purge.log" 2>&1 ||
    { cat "$logs/dpkg-purge.log"; echo "dpkg -P failed"; exit 1; }
in_root dpkg-query -W -f="\${db:Status-Abbrev} \${Package}\n" btrfs-scan-gate btrfs-scan-gate-dkms \
    >"$logs/status-purged.txt" 2>&1 || true
snapshot >"$logs/after.files"
sha256sum -c "$logs/stock-rules.sha256" >"$logs/stock-rules.check" 2>&1 || { cat "$logs/stock-rules.check"; echo "stock rules differ after purge"; exit 1; }
udev_test stock-after
' sh "$work/root" "$work/logs" "$loop" >"$work/logs/ns.log" 2>&1 || { cat "$work/logs/ns.log"; fail "the run in the throw-away root failed"; }
cat "$work/logs/ns.log"
L=$work/logs

# installed
grep -q 'btrfs-scan-gate' "$L/installed-64-btrfs.rules" || fail "64-btrfs.rules in the root is not the gate's"
for f in 64-btrfs.rules 64-btrfs-dm.rules; do
    grep -q "diversion of .*/$f to .*/$f.btrfs-scan-gate-distrib by btrfs-scan-gate" "$L/diversions-installed.txt" ||
        { cat "$L/diversions-installed.txt"; fail "$f not diverted"; }
done
grep -q 'btrfs-scan-gate.service' "$L/wants.txt" || { cat "$L/wants.txt"; fail "unit not enabled"; }
grep -q 'btrfs-scan-gate/0\|btrfs-scan-gate, ' "$L/dkms-status.txt" ||
    { cat "$L/dkms-status.txt"; fail "dkms does not know btrfs-scan-gate"; }
builtin_re="builtin.*'btrfs ready"
grep -q "$builtin_re" "$L/udevadm-stock-before.log" ||
    fail "stock rules: the builtin 'btrfs ready' is not visible in udevadm-stock-before.log (check broken)"
if grep -n "$builtin_re" "$L/udevadm-installed.log"; then fail "installed: the builtin 'btrfs ready' ran"; fi
grep -q "64-btrfs.rules:[0-9]* Importing properties from results of '/usr/bin/btrfs-scan-gate udev $loop'" \
    "$L/udevadm-installed.log" || fail "installed: the rules did not run the helper (udevadm-installed.log)"
grep -q '^BTRFS_SCAN_GATE_DECISION=' "$L/udevadm-installed.log" || fail "installed: no decision imported"
# removed, purged
[ ! -s "$L/diversions-removed.txt" ] || { cat "$L/diversions-removed.txt"; fail "diversions left after remove"; }
grep -q "$builtin_re" "$L/udevadm-stock-after.log" || fail "after purge: the builtin 'btrfs ready' does not run"
if grep -q 'btrfs-scan-gate' "$L/udevadm-stock-after.log"; then fail "after purge: the helper still runs"; fi
if grep -q '^[a-z][a-zA-Z] ' "$L/status-purged.txt" && ! grep -q '^un ' "$L/status-purged.txt"; then
    cat "$L/status-purged.txt"; fail "packages not purged"
fi
if ! diff -u "$L/before.files" "$L/after.files" >"$L/files.diff"; then
    cat "$L/files.diff"; fail "files left behind after purge (- before installation, + after purge)"
fi
echo "PASS: installed (rules diverted, unit enabled, dkms registered, helper instead of the builtin), removed, purged: stock rules back ($(wc -l <"$L/stock-rules.sha256") checked), $(wc -l <"$L/before.files") paths as before"
