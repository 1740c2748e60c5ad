#!/bin/bash
# Host test (issue 20 item 3): RAUC's system.conf is found where RAUC finds it - the first of
# /etc/rauc, /run/rauc, /usr/lib/rauc that has one - while the configuration leaves
# rauc_system_conf at its default. A btrfs loop device named as slot B's device= gets
# BTRFS_SCAN_GATE_SLOT=B from each place in turn, /etc/rauc wins over /run/rauc, /run/rauc over
# /usr/lib/rauc, and an explicit rauc_system_conf= is read alone. Runs in a private mount namespace:
# /run is a tmpfs, /etc and /usr/lib are overlays whose changes vanish with it.
# env: BSG_HELPER (the test build: BTRFS_SCAN_GATE_CONFIG seam), TMPDIR.
set -euo pipefail
helper=${BSG_HELPER:?BSG_HELPER must name the helper binary (test build)}
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root (loop device, mount namespace)"; exit 77; }
for t in losetup mkfs.btrfs unshare mount; do
    command -v "$t" >/dev/null || fail "$t not installed (scripts/setup.sh)"
done
if [ -z "${BSG_RAUC_SEARCH_IN_NS:-}" ]; then
    BSG_RAUC_SEARCH_IN_NS=1 exec unshare --mount --propagation private -- "$0" "$@"
fi
work=$(mktemp -d "${TMPDIR:-/var/tmp}/rauc-search.XXXXXX")
loop=
cleanup() {
    [ -z "$loop" ] || losetup -d "$loop" || true
    umount -l /etc 2>/dev/null || true
    umount -l /usr/lib 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
mount -t tmpfs -o mode=0755 bsg-rauc-run /run
. "$(dirname "$0")/by-path.sh"
BSG_BY_PATH_NS=1 bsg_by_path_ns
for d in etc usr-lib; do mkdir -p "$work/$d/upper" "$work/$d/work"; done
mount -t overlay bsg-etc -o "lowerdir=/etc,upperdir=$work/etc/upper,workdir=$work/etc/work" /etc
mount -t overlay bsg-usrlib -o "lowerdir=/usr/lib,upperdir=$work/usr-lib/upper,workdir=$work/usr-lib/work" /usr/lib
rm -rf /etc/rauc /usr/lib/rauc # in the overlays only

truncate -s 120M "$work/fs.img"
mkfs.btrfs -f "$work/fs.img" >"$work/mkfs.log" 2>&1 || fail "mkfs.btrfs"
loop=$(losetup --show -f "$work/fs.img") || { echo "SKIP: no free loop device"; exit 77; }
# loop devices are untrusted unless the configuration names them (issue 18): this one stands in for
# internal storage
printf 'trusted_disk=%s\n' "$(bsg_by_path "$loop")" >"$work/gate.conf"

conf() { # conf DIR BOOTNAME: a system.conf in DIR naming the loop device slot BOOTNAME
    mkdir -p "$1"
    printf '[system]\ncompatible=test\nbootloader=efi\n\n[slot.rootfs.0]\ndevice=%s\ntype=raw\nbootname=%s\n' \
        "$loop" "$2" >"$1/system.conf"
}
slot() { # the slot the helper gives the loop device (dry run, a configuration naming only the loop device trusted)
    BTRFS_SCAN_GATE_CONFIG=${1:-$work/gate.conf} BTRFS_SCAN_GATE_RUNDIR=$work/run BTRFS_SCAN_GATE_LOG=stderr \
        "$helper" --dry-run udev "$loop" 2>>"$work/helper.err" | sed -n 's/^BTRFS_SCAN_GATE_SLOT=//p'
}
expect() { # expect WHAT SLOT [CONFIG]
    local got
    got=$(slot "${3:-}")
    [ "$got" = "$2" ] || { cat "$work/helper.err"; fail "$1: slot '$got', expected '$2'"; }
    echo "ok: $1: slot '$got'"
}
expect "no system.conf anywhere" ""
conf /usr/lib/rauc B
expect "/usr/lib/rauc/system.conf" B
conf /run/rauc A
expect "/run/rauc wins over /usr/lib/rauc" A
rm /run/rauc/system.conf
expect "/usr/lib/rauc again" B
conf /etc/rauc A
conf /run/rauc B
expect "/etc/rauc wins over /run/rauc" A
printf 'rauc_system_conf=/run/rauc/system.conf\ntrusted_disk=%s\n' "$(bsg_by_path "$loop")" >"$work/explicit.conf"
expect "an explicit rauc_system_conf= is read alone" B "$work/explicit.conf"
echo "PASS: system.conf found in RAUC's order (/etc/rauc, /run/rauc, /usr/lib/rauc); an explicit path read alone"
