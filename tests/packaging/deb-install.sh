#!/bin/bash
# deb-install.sh DEBDIR WORK: installs btrfs-scan-gate and btrfs-scan-gate-dkms from DEBDIR into a
# throw-away Debian 12 root (throwaway-root.sh), then checks:
#  - the stock 64-btrfs.rules / 64-btrfs-dm.rules are diverted, the package's files are in their
#    place, the unit is enabled (sysinit.target.wants), the dkms sources are registered;
#  - `udevadm test` of a btrfs loop device, run in the root, imports the helper's answer and does
#    not run the builtin `btrfs ready` (before installation and after purge it does run it);
#  - udev upgraded to the /usr layout (a fake udev .deb of a higher version with every file moved
#    from /lib, /bin, /sbin under /usr, as trixie's): the gate's rules still win, udev's new
#    /usr/lib/udev/rules.d/64-btrfs.rules is diverted aside byte for byte (issue 20 item 1);
#  - remove, then purge: the diversions are gone, the stock rules are back byte for byte,
#    `dpkg --verify udev` is clean, and the root's file list equals the one before installation
#    (dpkg's own database and logs aside).
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
# the unit'"'"'s Documentation= names what the package really ships (dh_compress gzips README.md)
unit=$(in_root dpkg-query -L btrfs-scan-gate | grep "/btrfs-scan-gate.service\$" | head -n 1)
: >"$logs/documentation.txt"
for doc in $(sed -n "s/^Documentation=//p" "$root$unit"); do
    case $doc in
    man:*) n=${doc#man:}; sec=${n##*(}; sec=${sec%)}; n=${n%(*}
        f=/usr/share/man/man$sec/$n.$sec.gz ;;
    file:*) f=${doc#file:} ;;
    *) f= ;;
    esac
    if [ -n "$f" ] && [ -e "$root$f" ]; then echo "ok $doc $f"; else echo "missing $doc ${f:-?}"; fi >>"$logs/documentation.txt"
done

# issue 20 item 1: udev upgraded to the /usr layout (trixie: /usr/lib/udev/rules.d/64-btrfs.rules,
# with /lib -> usr/lib). A fake udev of a higher version, built here from the installed one: every
# file of it, /lib, /bin, /sbin moved under /usr, no maintainer scripts.
[ -L "$root/lib" ] || { echo "the throw-away root is not usr-merged (/lib is no symlink)"; exit 1; }
fake=$root/tmp/fake-udev
rm -rf "$fake"
mkdir -p "$fake/DEBIAN"
in_root dpkg-query -L udev | grep "^/" | while read -r f; do
    case $f in /. | /lib | /bin | /sbin) continue ;; /lib/* | /bin/* | /sbin/*) to=/usr$f ;; *) to=$f ;; esac
    real=$(in_root dpkg-divert --truename "$f") # udev'"'"'s own 64-btrfs.rules is diverted aside
    if [ -L "$root$real" ]; then
        mkdir -p "$fake$(dirname "$to")"
        cp -P "$root$real" "$fake$to"
    elif [ -d "$root$real" ]; then
        mkdir -p "$fake$to"
    elif [ -f "$root$real" ]; then
        mkdir -p "$fake$(dirname "$to")"
        cp -p "$root$real" "$fake$to"
    fi
done
cmp -s "$fake/usr/lib/udev/rules.d/64-btrfs.rules" "$root/lib/udev/rules.d/64-btrfs.rules.btrfs-scan-gate-distrib" ||
    { echo "fake udev: its 64-btrfs.rules is not udev'"'"'s"; exit 1; }
[ -f "$fake/usr/lib/udev/rules.d/64-btrfs.rules" ] || { echo "fake udev: no 64-btrfs.rules under /usr/lib"; exit 1; }
ver=$(in_root dpkg-query -W -f="\${Version}" udev)
arch=$(in_root dpkg-query -W -f="\${Architecture}" udev)
deps=$(in_root dpkg-query -W -f="\${Depends}" udev)
printf "Package: udev\nVersion: %s+usrmove1\nArchitecture: %s\nMaintainer: test <test@example.invalid>\nDepends: %s\nDescription: udev, files moved to /usr (btrfs-scan-gate packaging test)\n" \
    "$ver" "$arch" "$deps" >"$fake/DEBIAN/control"
in_root dpkg-query -W -f="\${Conffiles}\n" udev | awk "NF>=2 {print \$1}" >"$fake/DEBIAN/conffiles"
[ -s "$fake/DEBIAN/conffiles" ] || rm -f "$fake/DEBIAN/conffiles"
(cd "$fake" && find . -path ./DEBIAN -prune -o -type f -printf "%P\0" | xargs -0 md5sum >DEBIAN/md5sums)
dpkg-deb --root-owner-group -b "$fake" "$root/tmp/udev-usrmove.deb" >"$logs/fake-udev-build.log" 2>&1 ||
    { cat "$logs/fake-udev-build.log"; echo "dpkg-deb of the fake udev failed"; exit 1; }
in_root dpkg -i /tmp/udev-usrmove.deb >"$logs/dpkg-udev-upgrade.log" 2>&1 ||
    { cat "$logs/dpkg-udev-upgrade.log"; echo "dpkg -i of the fake udev failed"; exit 1; }
in_root dpkg-query -L udev | grep -c "^/usr/lib/udev/rules.d/" >"$logs/udev-usr-rules.count"
in_root dpkg-divert --list "*64-btrfs*" >"$logs/diversions-upgraded.txt"
cp "$root/usr/lib/udev/rules.d/64-btrfs.rules" "$logs/upgraded-64-btrfs.rules"
sha256sum "$root/usr/lib/udev/rules.d/64-btrfs.rules.btrfs-scan-gate-distrib-usr" >"$logs/upgraded-distrib.sha256" 2>&1 || true
udev_test upgraded
# the package upgraded (reinstalled) on the moved udev: preinst upgrade with its diversions in place
in_root dpkg -i /tmp/$(cd "$root/tmp" && ls btrfs-scan-gate_*.deb) >"$logs/dpkg-reinstall.log" 2>&1 ||
    { cat "$logs/dpkg-reinstall.log"; echo "dpkg -i (upgrade over itself) failed"; exit 1; }
in_root dpkg-divert --list "*64-btrfs*" >"$logs/diversions-reinstalled.txt"
cmp -s "$root/usr/lib/udev/rules.d/64-btrfs.rules" "$logs/upgraded-64-btrfs.rules" ||
    { echo "after the package upgrade: 64-btrfs.rules is not the gate'"'"'s"; exit 1; }
sha256sum "$root/usr/lib/udev/rules.d/64-btrfs.rules.btrfs-scan-gate-distrib-usr" >"$logs/reinstalled-distrib.sha256" 2>&1 || true
in_root dpkg -r btrfs-scan-gate btrfs-scan-gate-dkms >"$logs/dpkg-remove.log" 2>&1 ||
    { cat "$logs/dpkg-remove.log"; echo "dpkg -r failed"; exit 1; }
in_root dpkg-divert --list "*64-btrfs*" >"$logs/diversions-removed.txt"
in_root dpkg -P btrfs-scan-gate btrfs-scan-gate-dkms >"$logs/dpkg-purge.log" 2>&1 ||
    { cat "$logs/dpkg-purge.log"; echo "dpkg -P failed"; exit 1; }
in_root dpkg-query -W -f="\${db:Status-Abbrev} \${Package}\n" btrfs-scan-gate btrfs-scan-gate-dkms \
    >"$logs/status-purged.txt" 2>&1 || true
snapshot >"$logs/after.files"
in_root dpkg --verify udev >"$logs/verify-udev.txt" 2>&1 || true
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
[ -s "$L/documentation.txt" ] || fail "the unit has no Documentation="
if grep '^missing' "$L/documentation.txt"; then fail "the unit's Documentation= names a file the package does not ship"; fi
# udev upgraded to the /usr layout: the gate's rules still win, udev's new file is diverted aside
grep -q 'btrfs-scan-gate' "$L/upgraded-64-btrfs.rules" ||
    fail "after the udev upgrade to /usr/lib/udev, 64-btrfs.rules is udev's, not the gate's"
for f in 64-btrfs.rules 64-btrfs-dm.rules; do
    for d in /lib/udev/rules.d /usr/lib/udev/rules.d; do
        grep -qE "diversion of $d/$f to $d/$f.btrfs-scan-gate-distrib(-usr)? by btrfs-scan-gate" "$L/diversions-upgraded.txt" ||
            { cat "$L/diversions-upgraded.txt"; fail "$d/$f not diverted"; }
    done
done
[ "$(cat "$L/udev-usr-rules.count")" -gt 0 ] || fail "the fake udev ships nothing under /usr/lib/udev/rules.d"
if grep -n "$builtin_re" "$L/udevadm-upgraded.log"; then fail "after the udev upgrade: the builtin 'btrfs ready' ran"; fi
grep -q "Importing properties from results of '/usr/bin/btrfs-scan-gate udev $loop'" "$L/udevadm-upgraded.log" ||
    fail "after the udev upgrade: the rules did not run the helper (udevadm-upgraded.log)"
stock=$(awk '{print $1; exit}' "$L/stock-rules.sha256")
grep -q "^$stock " "$L/upgraded-distrib.sha256" ||
    { cat "$L/upgraded-distrib.sha256"; fail "udev's new 64-btrfs.rules is not the stock file under .btrfs-scan-gate-distrib-usr"; }
cmp -s "$L/diversions-upgraded.txt" "$L/diversions-reinstalled.txt" ||
    { diff "$L/diversions-upgraded.txt" "$L/diversions-reinstalled.txt"; fail "the package upgrade changed the diversions"; }
grep -q "^$stock " "$L/reinstalled-distrib.sha256" || fail "the package upgrade lost udev's diverted 64-btrfs.rules"
# removed, purged
[ ! -s "$L/verify-udev.txt" ] || { cat "$L/verify-udev.txt"; fail "dpkg --verify udev after purge: udev's files are not as udev shipped them"; }
[ ! -s "$L/diversions-removed.txt" ] || { cat "$L/diversions-removed.txt"; fail "diversions left after remove"; }
grep -q "$builtin_re" "$L/udevadm-stock-after.log" || fail "after purge: the builtin 'btrfs ready' does not run"
if grep -q 'btrfs-scan-gate' "$L/udevadm-stock-after.log"; then fail "after purge: the helper still runs"; fi
if grep -q '^[a-z][a-zA-Z] ' "$L/status-purged.txt" && ! grep -q '^un ' "$L/status-purged.txt"; then
    cat "$L/status-purged.txt"; fail "packages not purged"
fi
if ! diff -u "$L/before.files" "$L/after.files" >"$L/files.diff"; then
    cat "$L/files.diff"; fail "files left behind after purge (- before installation, + after purge)"
fi
echo "PASS: installed (rules diverted, unit enabled, dkms registered, helper instead of the builtin), udev moved to /usr (gate's rules kept), removed, purged (dpkg --verify udev clean): stock rules back ($(wc -l <"$L/stock-rules.sha256") checked), $(wc -l <"$L/before.files") paths as before"
