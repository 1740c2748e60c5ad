#!/bin/bash
# deploy-steps.sh DEBDIR_FILE WORK: the Debian deployment steps as the README gives them, run word
# for word in a throw-away Debian 12 root (throwaway-root.sh; chroot in a private mount namespace:
# this machine's /sys and /dev, a tmpfs /run):
#   1. install:   apt-get install -y ./btrfs-scan-gate_<ver>_<arch>.deb ./btrfs-scan-gate-dkms_<ver>_all.deb
#   2. verify:    btrfs-scan-gate status; echo $?       (exit 0 or 3 and a first line, the verdict)
#                 dpkg-divert --list '*64-btrfs*'       (the stock rules diverted by btrfs-scan-gate)
#   3. uninstall: apt-get purge -y btrfs-scan-gate btrfs-scan-gate-dkms
#                 dpkg --verify udev btrfs-progs        (prints nothing: the stock rules are back)
# and checks each step's outcome, and that the stock 64-btrfs*.rules are back byte for byte.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, mount namespace)"
debfile=$1 work=$2
if [ -z "${BSG_DEPLOY_STEPS_NS:-}" ]; then
    exec unshare -m env BSG_DEPLOY_STEPS_NS=1 "$0" "$@"
fi
debdir=$(cat "$debfile")
arch=$(dpkg --print-architecture)
gate=$(cd "$debdir" && ls btrfs-scan-gate_*_"$arch".deb) || fail "no btrfs-scan-gate .deb in $debdir"
dkms=$(cd "$debdir" && ls btrfs-scan-gate-dkms_*_all.deb) || fail "no btrfs-scan-gate-dkms .deb in $debdir"
rm -rf "$work"
root=$work/root logs=$work/logs
mkdir -p "$logs"
trap '"$here/throwaway-root.sh" remove "$root"' EXIT
"$here/throwaway-root.sh" unpack "$root" --sys || fail "no throw-away root"
cp "$debdir/$gate" "$debdir/$dkms" "$root/root/"
# the steps run from root's home; everything the packages depend on is in the root already
step() { # LOG COMMAND: one step as a shell line, in the root
    chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root DEBIAN_FRONTEND=noninteractive \
        sh -c "cd /root && $2" >"$logs/$1.log" 2>&1
}
md5sum "$root"/usr/lib/udev/rules.d/64-btrfs.rules "$root"/usr/lib/udev/rules.d/64-btrfs-dm.rules | sed "s|$root||" >"$logs/stock.md5"

step 1-install "apt-get install -y ./$gate ./$dkms" ||
    { tail -n 30 "$logs/1-install.log"; fail "step 1: apt-get install"; }
echo "1. install: $(grep -c '^Setting up' "$logs/1-install.log") packages set up"
step 2-status 'btrfs-scan-gate status; echo "exit $?"' || true
rc=$(sed -n 's/^exit //p' "$logs/2-status.log" | tail -n 1)
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat "$logs/2-status.log"; fail "step 2: btrfs-scan-gate status exited '$rc'"; }
# the first line of its report (messages on stderr start with "btrfs-scan-gate: ")
verdict=$(grep -v "^btrfs-scan-gate: " "$logs/2-status.log" | head -n 1)
[ -n "$verdict" ] && [ "$verdict" != "exit $rc" ] || fail "step 2: status printed nothing"
echo "2. verify: btrfs-scan-gate status exit $rc, first line: $verdict"
step 2-diversions "dpkg-divert --list '*64-btrfs*'" || fail "step 2: dpkg-divert --list"
[ "$(grep -c 'by btrfs-scan-gate$' "$logs/2-diversions.log")" = 4 ] || { cat "$logs/2-diversions.log"; fail "step 2: expected 4 diversions by btrfs-scan-gate"; }
echo "   dpkg-divert --list: $(grep -c 'by btrfs-scan-gate$' "$logs/2-diversions.log") diversions by btrfs-scan-gate"
step 3-purge "apt-get purge -y btrfs-scan-gate btrfs-scan-gate-dkms" || { tail -n 30 "$logs/3-purge.log"; fail "step 3: apt-get purge"; }
step 3-verify "dpkg --verify udev btrfs-progs" || true
[ ! -s "$logs/3-verify.log" ] || { cat "$logs/3-verify.log"; fail "step 3: dpkg --verify udev btrfs-progs printed something"; }
(cd "$root" && sed 's|  /|  |' "$logs/stock.md5" | md5sum -c --quiet) || fail "step 3: the stock rules are not back byte for byte"
if chroot "$root" dpkg-divert --list | grep -q btrfs-scan-gate; then fail "step 3: diversions left"; fi
echo "3. uninstall: purged; dpkg --verify udev btrfs-progs clean; stock 64-btrfs.rules and 64-btrfs-dm.rules back"
echo "PASS: the Debian deployment steps (install, verify, uninstall) run as written"
