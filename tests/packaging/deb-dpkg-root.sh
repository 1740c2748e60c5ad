#!/bin/bash
# deb-dpkg-root.sh DEBDIR_FILE WORK: btrfs-scan-gate installed and removed the way image builders
# and mmdebstrap's chrootless mode do it, `dpkg --root R --force-script-chrootless`: the maintainer
# scripts run on this machine with DPKG_ROOT=R. In a throw-away Debian 12 root (throwaway-root.sh),
# twice:
#  - bookworm layout (udev's rules in /lib/udev, /lib -> usr/lib): install (the stock 64-btrfs*.rules
#    diverted in R), remove: no diversion left in R, the stock files back byte for byte,
#    `dpkg --verify udev btrfs-progs` in R clean; purge: the unit's enablement link gone;
#  - after the /usr move: install, then a udev of a higher version with every file under /usr (built
#    here from R's udev, as trixie's), then remove: the same checks.
# Before the postrm looked under $DPKG_ROOT, remove left udev's 64-btrfs*.rules diverted away in R
# (it tested this machine's paths).
# btrfs-scan-gate-dkms the same way: dkms cannot work on a root from outside it, so its scripts run
# no dkms at all (a `dkms` first in PATH records any call; this machine's /var/lib/dkms must not
# change): install says the module was neither registered nor built and how to do it inside R, and
# leaves R's dkms tree empty; remove succeeds; once dkms inside R has registered the module, remove
# from outside is refused, saying so, and the package stays; after dkms removed it inside R, remove
# succeeds. Before the scripts looked at DPKG_ROOT, dkms's own postinst and prerm asked this
# machine's dkms (and removed this machine's module of the same version).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (dpkg --root of a root-owned tree)"
debdir=$(cat "$1") work=$2
deb=$(ls "$debdir"/btrfs-scan-gate_*_"$(dpkg --print-architecture)".deb) || fail "no btrfs-scan-gate .deb in $debdir"
dkmsdeb=$(ls "$debdir"/btrfs-scan-gate-dkms_*_all.deb) || fail "no btrfs-scan-gate-dkms .deb in $debdir"
tarball=$("$here/throwaway-root.sh") || fail "no throw-away root"
rm -rf "$work"
mkdir -p "$work"
R=$work/root
trap 'rm -rf "$R"' EXIT
d() { dpkg --root="$R" --force-script-chrootless "$@"; }

stock_sums() { # the stock rules as dpkg's md5sums of udev and btrfs-progs record them
    cat "$R/var/lib/dpkg/info/udev.md5sums" "$R/var/lib/dpkg/info/btrfs-progs.md5sums" |
        grep -E ' (usr/)?lib/udev/rules.d/64-btrfs(-dm)?\.rules$' | sort -k2
}
check_removed() { # TAG
    local tag=$1 sum f
    if dpkg-divert --root="$R" --list | grep btrfs-scan-gate; then fail "$tag: diversions left in R after dpkg -r"; fi
    stock_sums >"$work/$tag.stock"
    [ "$(wc -l <"$work/$tag.stock")" = 2 ] || { cat "$work/$tag.stock"; fail "$tag: expected udev's and btrfs-progs' 64-btrfs*.rules in dpkg's md5sums"; }
    while read -r sum f; do
        [ -f "$R/$f" ] || fail "$tag: /$f is missing in R after dpkg -r"
        [ "$(md5sum <"$R/$f" | cut -d' ' -f1)" = "$sum" ] || fail "$tag: /$f in R is not the stock file"
    done <"$work/$tag.stock"
    if ls "$R"/usr/lib/udev/rules.d/*btrfs-scan-gate* 2>/dev/null; then fail "$tag: files of btrfs-scan-gate left in R"; fi
    d --verify udev btrfs-progs >"$work/$tag.verify" 2>&1 || true
    [ ! -s "$work/$tag.verify" ] || { cat "$work/$tag.verify"; fail "$tag: dpkg --verify udev btrfs-progs in R"; }
    echo "ok: $tag: removed chrootless: no diversion left, $(awk '{printf "/%s ", $2}' "$work/$tag.stock")back (dpkg --verify clean)"
}
install_gate() { # TAG
    d -i "$deb" >"$work/$1-install.log" 2>&1 || { cat "$work/$1-install.log"; fail "$1: dpkg --root -i"; }
    [ "$(dpkg-divert --root="$R" --list | grep -c 'by btrfs-scan-gate')" = 4 ] ||
        { dpkg-divert --root="$R" --list; fail "$1: expected 4 diversions in R"; }
    grep -q btrfs-scan-gate "$R/usr/lib/udev/rules.d/64-btrfs.rules" || fail "$1: 64-btrfs.rules in R is not the gate's"
    [ -L "$R/etc/systemd/system/sysinit.target.wants/btrfs-scan-gate.service" ] || fail "$1: the unit is not enabled in R"
}

# bookworm layout
mkdir -p "$R" && tar -C "$R" -xf "$tarball"
[ -L "$R/lib" ] || fail "the throw-away root is not usr-merged"
install_gate bookworm
d -r btrfs-scan-gate >"$work/bookworm-remove.log" 2>&1 || { cat "$work/bookworm-remove.log"; fail "bookworm: dpkg --root -r"; }
check_removed bookworm
d -P btrfs-scan-gate >"$work/bookworm-purge.log" 2>&1 || { cat "$work/bookworm-purge.log"; fail "bookworm: dpkg --root -P"; }
[ ! -e "$R/etc/systemd/system/sysinit.target.wants/btrfs-scan-gate.service" ] || fail "bookworm: the unit's link left after purge"

# after the /usr move
rm -rf "$R"
mkdir -p "$R" && tar -C "$R" -xf "$tarball"
install_gate usrmove
fake=$work/fake-udev
rm -rf "$fake"
mkdir -p "$fake/DEBIAN"
dpkg-query --root="$R" -L udev | grep '^/' | while read -r f; do
    case $f in /. | /lib | /bin | /sbin) continue ;; /lib/* | /bin/* | /sbin/*) to=/usr$f ;; *) to=$f ;; esac
    real=$(dpkg-divert --root="$R" --truename "$f")
    if [ -L "$R$real" ]; then
        mkdir -p "$fake$(dirname "$to")"; cp -P "$R$real" "$fake$to"
    elif [ -d "$R$real" ]; then
        mkdir -p "$fake$to"
    elif [ -f "$R$real" ]; then
        mkdir -p "$fake$(dirname "$to")"; cp -p "$R$real" "$fake$to"
    fi
done
[ -f "$fake/usr/lib/udev/rules.d/64-btrfs.rules" ] || fail "fake udev: no 64-btrfs.rules under /usr/lib"
# shellcheck disable=SC2016 # dpkg-query formats
printf 'Package: udev\nVersion: %s+usrmove1\nArchitecture: %s\nMaintainer: test <test@example.invalid>\nDepends: %s\nDescription: udev, files moved to /usr (packaging test)\n' \
    "$(dpkg-query --root="$R" -W -f='${Version}' udev)" "$(dpkg-query --root="$R" -W -f='${Architecture}' udev)" \
    "$(dpkg-query --root="$R" -W -f='${Depends}' udev)" >"$fake/DEBIAN/control"
dpkg-query --root="$R" -W -f='${Conffiles}\n' udev | awk 'NF>=2 {print $1}' >"$fake/DEBIAN/conffiles"
[ -s "$fake/DEBIAN/conffiles" ] || rm -f "$fake/DEBIAN/conffiles"
(cd "$fake" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | xargs -0 md5sum >DEBIAN/md5sums)
dpkg-deb --root-owner-group -b "$fake" "$work/udev-usrmove.deb" >"$work/fake-udev.log" 2>&1 || { cat "$work/fake-udev.log"; fail "dpkg-deb of the fake udev"; }
d -i "$work/udev-usrmove.deb" >"$work/usrmove-udev.log" 2>&1 || { cat "$work/usrmove-udev.log"; fail "usrmove: dpkg --root -i of the moved udev"; }
grep -q btrfs-scan-gate "$R/usr/lib/udev/rules.d/64-btrfs.rules" || fail "usrmove: after udev's move 64-btrfs.rules in R is not the gate's"
d -r btrfs-scan-gate >"$work/usrmove-remove.log" 2>&1 || { cat "$work/usrmove-remove.log"; fail "usrmove: dpkg --root -r"; }
grep -q ' usr/lib/udev/rules.d/64-btrfs.rules$' "$R/var/lib/dpkg/info/udev.md5sums" || fail "usrmove: udev does not ship /usr/lib/udev/rules.d/64-btrfs.rules"
check_removed usrmove

# btrfs-scan-gate-dkms, chrootless
rm -rf "$R"
mkdir -p "$R" "$work/stub" && tar -C "$R" -xf "$tarball"
printf '#!/bin/sh\necho "dkms $*" >>"%s"\n' "$work/dkms-calls.log" >"$work/stub/dkms"
chmod 0755 "$work/stub/dkms"
rm -f "$work/dkms-calls.log"
host_dkms() { find /var/lib/dkms -maxdepth 3 2>/dev/null | sort; }
host_dkms >"$work/host-dkms.before"
dk() { PATH=$work/stub:$PATH dpkg --root="$R" --force-script-chrootless "$@"; }
no_dkms_here() { # TAG: no dkms ran on this machine, its dkms tree is as it was
    if [ -s "$work/dkms-calls.log" ]; then cat "$work/dkms-calls.log"; fail "$1: dkms ran on this machine"; fi
    host_dkms | cmp -s - "$work/host-dkms.before" || fail "$1: this machine's /var/lib/dkms changed"
}
status_in_r() { dpkg-query --root="$R" -W -f='${Status}' btrfs-scan-gate-dkms 2>/dev/null || true; }
dk -i "$dkmsdeb" >"$work/dkms-install.log" 2>&1 || { cat "$work/dkms-install.log"; fail "dkms: dpkg --root -i"; }
no_dkms_here "dkms install"
grep -q "btrfs-scan-gate-dkms: installed with DPKG_ROOT=$R .*the module was neither registered nor built; inside it, run dpkg-reconfigure btrfs-scan-gate-dkms" \
    "$work/dkms-install.log" || { cat "$work/dkms-install.log"; fail "dkms install: the postinst does not say that dkms did not run, and what to do"; }
[ "$(status_in_r)" = "install ok installed" ] || fail "dkms install: status in R is '$(status_in_r)'"
src=$(cd "$R" && ls -d usr/src/btrfs-scan-gate-*) || fail "dkms install: no /usr/src/btrfs-scan-gate-* in R"
[ -e "$R/$src/dkms.conf" ] || fail "dkms install: no dkms.conf in R's /$src"
[ ! -e "$R/var/lib/dkms/btrfs-scan-gate" ] || fail "dkms install: R's dkms tree has the module (registered from outside?)"
echo "ok: dkms: installed chrootless: no dkms ran here, R's dkms tree untouched; the postinst says: $(grep -o 'dkms cannot run[^;]*' "$work/dkms-install.log")"
dk -r btrfs-scan-gate-dkms >"$work/dkms-remove.log" 2>&1 || { cat "$work/dkms-remove.log"; fail "dkms: dpkg --root -r (nothing registered in R)"; }
no_dkms_here "dkms remove"
[ ! -e "$R/$src" ] || fail "dkms remove: /$src left in R"
echo "ok: dkms: removed chrootless (nothing registered in R): no dkms ran here"
# registered by dkms inside R, as configuring the package there does (dkms warns that /proc is
# not mounted: registering and removing need none)
in_r() { chroot "$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
dk -i "$dkmsdeb" >"$work/dkms-install2.log" 2>&1 || { cat "$work/dkms-install2.log"; fail "dkms: dpkg --root -i (again)"; }
mver=${src#usr/src/btrfs-scan-gate-}
in_r dkms add -m btrfs-scan-gate -v "$mver" >"$work/dkms-add.log" 2>&1 || { cat "$work/dkms-add.log"; fail "dkms add inside R"; }
[ -L "$R/var/lib/dkms/btrfs-scan-gate/$mver/source" ] || fail "dkms add inside R registered nothing (the refusal below would prove nothing)"
rc=0
dk -r btrfs-scan-gate-dkms >"$work/dkms-remove-refused.log" 2>&1 || rc=$?
no_dkms_here "dkms remove (registered in R)"
[ "$rc" != 0 ] || { cat "$work/dkms-remove-refused.log"; fail "dkms: remove from outside succeeded with the module registered in R"; }
grep -q "which dkms cannot remove from outside it (DPKG_ROOT=$R): not removed; .*dkms remove btrfs-scan-gate/$mver --all" "$work/dkms-remove-refused.log" ||
    { cat "$work/dkms-remove-refused.log"; fail "dkms: the refusal does not say why and what to do"; }
# dpkg keeps the wish to remove it ("deinstall"), the package itself stays installed
case $(status_in_r) in *" ok installed") ;; *) fail "dkms: after the refused remove, status in R is '$(status_in_r)'" ;; esac
[ -e "$R/$src/dkms.conf" ] || fail "dkms: after the refused remove, /$src/dkms.conf is gone from R"
echo "ok: dkms: registered inside R: remove from outside refused (exit $rc), the package kept: $(grep -o 'not removed;.*' "$work/dkms-remove-refused.log")"
in_r dkms remove -m btrfs-scan-gate -v "$mver" --all >"$work/dkms-remove-inside.log" 2>&1 ||
    { cat "$work/dkms-remove-inside.log"; fail "dkms remove inside R"; }
dk -P btrfs-scan-gate-dkms >"$work/dkms-purge.log" 2>&1 || { cat "$work/dkms-purge.log"; fail "dkms: dpkg --root -P after dkms remove inside R"; }
no_dkms_here "dkms purge"
[ -z "$(status_in_r)" ] || [ "$(status_in_r)" = "unknown ok not-installed" ] || fail "dkms: after purge, status in R is '$(status_in_r)'"
echo "ok: dkms: after dkms remove inside R, purged chrootless"
echo "PASS: dpkg --root --force-script-chrootless: install diverts the stock rules in R; remove brings them back in R, in the bookworm layout and after the /usr move; the dkms package runs no dkms outside R, says so, and refuses to remove a module R's dkms holds"
