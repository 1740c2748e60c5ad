#!/bin/bash
# Host test: protection that cannot lapse unseen. `status` starts with a one-line verdict and `boot`
# exits with a code the unit judges:
#   - a stock module and no patched one installed: "helper only", a stated mode; boot's exit code is
#     0 or 3, both success for the unit (SuccessExitStatus=3);
#   - the patched module installed for the running kernel, or only for another installed kernel (a
#     dkms build refused after a kernel update), while the running btrfs has no skip_scan: status's
#     first line is "NOT PROTECTED: ..." with a "fix:" line, status and boot exit 4, which the unit
#     file does not declare a success: the unit fails (`systemctl --failed` lists it);
#   - skip_scan present but lacking a device decided skip: "NOT PROTECTED", exit 4; with it: protected;
#   - btrfs-scan-gate-dkms installed but built for no kernel: NOT PROTECTED, exit 4;
#   - a kernel with temp-fsid (6.7+): protected, whatever modules are installed.
# The unit is judged from its declared success codes (SuccessExitStatus= in the built unit file),
# not by starting it: this host does not run systemd as PID 1. boot runs with --dry-run (the host's
# kernel registry is left alone; the verdict and the exit code are the same).
# Runs in a private mount namespace: /run a tmpfs, /lib/modules an overlay, /sys/fs/btrfs/features
# and /sys/module replaced by directories the test fills, /usr/src a tmpfs for one case (the host's are
# untouched).
# env: BSG_HELPER, BSG_UNIT (the built btrfs-scan-gate.service), TMPDIR.
set -euo pipefail
helper=${BSG_HELPER:?BSG_HELPER must name the helper binary}
unit=${BSG_UNIT:?BSG_UNIT must name the built btrfs-scan-gate.service}
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root (mount namespace)"; exit 77; }
for t in unshare mount losetup mkfs.btrfs python3; do command -v "$t" >/dev/null || fail "$t not installed (scripts/setup.sh)"; done
[ -f "$unit" ] || fail "$unit not built"
if [ -z "${BSG_STATUS_VERDICT_IN_NS:-}" ]; then
    BSG_STATUS_VERDICT_IN_NS=1 exec unshare --mount --propagation private -- "$0" "$@"
fi
work=$(mktemp -d "${TMPDIR:-/var/tmp}/status-verdict.XXXXXX")
loop= loop2=
cleanup() {
    [ -z "$loop" ] || losetup -d "$loop" || true
    [ -z "$loop2" ] || losetup -d "$loop2" || true
    rm -rf "$work"
}
trap cleanup EXIT
rel=$(uname -r)
lib=$(readlink -f /lib) # /usr/lib on a merged /usr
mount -t tmpfs -o mode=0755 bsg-verdict-run /run
mkdir -p "$work/upper" "$work/work" "$work/features" "$work/features-temp"
mount -t overlay bsg-verdict-lib -o "lowerdir=$lib,upperdir=$work/upper,workdir=$work/work" "$lib"
# the kernel as the test says: no temp_fsid (a 6.1 kernel), no btrfs parameters (the stock module)
: >"$work/features-temp/temp_fsid"
[ -d /sys/fs/btrfs/features ] || fail "/sys/fs/btrfs/features absent: btrfs is not loaded on this host"
mount --bind "$work/features" /sys/fs/btrfs/features
mount -t tmpfs -o mode=0755 bsg-verdict-module /sys/module

# the unit's success codes: 0 and what SuccessExitStatus= adds
success=" 0 $(sed -n 's/^SuccessExitStatus=//p' "$unit" | tr '\n' ' ') "
unit_ok() { case "$success" in *" $1 "*) return 0 ;; esac; return 1; }

kernels() { # kernels RELEASE:MODULE... (MODULE: dkms, updates, in-tree)
    rm -rf /lib/modules
    mkdir -p /lib/modules
    for k in "$@"; do
        r=${k%%:*} m=${k#*:}
        mkdir -p "/lib/modules/$r/kernel/fs/btrfs"
        : >"/lib/modules/$r/kernel/fs/btrfs/btrfs.ko"
        case $m in
        dkms) mkdir -p "/lib/modules/$r/updates/dkms"; : >"/lib/modules/$r/updates/dkms/btrfs.ko.xz" ;;
        updates) mkdir -p "/lib/modules/$r/updates"; : >"/lib/modules/$r/updates/btrfs.ko" ;;
        esac
    done
}
run() { # run NAME ARGS...: exit code in $rc, output in $work/NAME.{out,err}
    local name=$1
    shift
    rc=0
    BTRFS_SCAN_GATE_LOG=stderr "$helper" "$@" >"$work/$name.out" 2>"$work/$name.err" || rc=$?
}
show() { echo "--- $1.out"; cat "$work/$1.out"; echo "--- $1.err"; cat "$work/$1.err"; }
first_line() { # first_line NAME PATTERN
    head -n1 "$work/$1.out" | grep -qE "$2" || { show "$1"; fail "$1: the first line of status is not /$2/"; }
}
json_state() { # json_state NAME STATE OK
    python3 - "$work/$1.out" "$2" "$3" <<'PY' || { show "$1"; fail "$1: --json verdict is not $2"; }
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
assert v["state"] == sys.argv[2] and v["ok"] == (sys.argv[3] == "true"), v
assert (v["fix"] is None) == v["ok"], v
PY
}

# 1. the helper alone on a stock kernel: a stated mode, not a failure
kernels "$rel:in-tree" "6.1.0-98-amd64:in-tree"
run stock status
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { show stock; fail "stock: status exited $rc"; }
first_line stock '^helper only: '
run stock-json status --json
json_state stock-json helper-only true
run stock-boot --dry-run boot
unit_ok "$rc" || { show stock-boot; fail "stock: boot exited $rc, which fails the unit (success: $success)"; }

# 2. the patched module installed for the running kernel, but the loaded btrfs is the in-tree one
kernels "$rel:dkms"
run running status
[ "$rc" = 4 ] || { show running; fail "patched module installed, not loaded: status exited $rc, not 4"; }
first_line running "^NOT PROTECTED: the patched btrfs module is installed for the running kernel $rel"
sed -n 2p "$work/running.out" | grep -q '^fix: .*update-initramfs' || { show running; fail "no fix line"; }
run running-json status --json
[ "$rc" = 4 ] || fail "status --json exited $rc, not 4"
json_state running-json module-not-running false
run running-boot --dry-run boot
[ "$rc" = 4 ] || { show running-boot; fail "boot exited $rc, not 4"; }
unit_ok "$rc" && fail "boot's exit $rc is a success for the unit ($success): the lapse would not show"
grep -q 'NOT PROTECTED' "$work/running-boot.err" || { show running-boot; fail "boot does not say why"; }

# 3. the patched module only for another kernel (the running one's dkms build was refused)
kernels "6.1.0-99-amd64:dkms" "$rel:in-tree"
run other status
[ "$rc" = 4 ] || { show other; fail "patched module for another kernel only: status exited $rc, not 4"; }
first_line other "^NOT PROTECTED: the patched btrfs module is installed for 6.1.0-99-amd64 but not for the running kernel $rel"
grep -q "^fix: .*dkms autoinstall -k $rel" "$work/other.out" || { show other; fail "no dkms fix"; }
run other-boot --dry-run boot
[ "$rc" = 4 ] && ! unit_ok "$rc" || { show other-boot; fail "boot exited $rc: the unit would not fail"; }
# the prebuilt module package counts the same
kernels "6.1.0-97-amd64:updates" "$rel:in-tree"
run prebuilt status
[ "$rc" = 4 ] || { show prebuilt; fail "prebuilt module for another kernel: status exited $rc, not 4"; }

# 3b. btrfs-scan-gate-dkms installed (its source under /usr/src) but built for no kernel: every
# refused build (Secure Boot without a key, no headers) ends so
kernels "$rel:in-tree" "6.1.0-98-amd64:in-tree"
mount -t tmpfs -o mode=0755 bsg-verdict-src /usr/src
mkdir -p /usr/src/btrfs-scan-gate-9.9
: >/usr/src/btrfs-scan-gate-9.9/dkms.conf
run dkms-none status
[ "$rc" = 4 ] || { show dkms-none; fail "dkms installed, no module built: status exited $rc, not 4"; }
first_line dkms-none "^NOT PROTECTED: btrfs-scan-gate-dkms is installed but built no patched btrfs module for the running kernel $rel"
grep -q '^fix: `/usr/src/btrfs-scan-gate-9.9/kernels.sh`' "$work/dkms-none.out" || { show dkms-none; fail "no kernels.sh fix"; }
run dkms-none-boot --dry-run boot
[ "$rc" = 4 ] && ! unit_ok "$rc" || { show dkms-none-boot; fail "boot exited $rc: the unit would not fail"; }
umount /usr/src

# 4. upstream temp-fsid: protected whatever is installed
mount --bind "$work/features-temp" /sys/fs/btrfs/features
kernels "6.1.0-99-amd64:dkms" "$rel:in-tree"
run upstream status
[ "$rc" = 0 ] || { show upstream; fail "temp-fsid: status exited $rc, not 0"; }
first_line upstream "^protected: kernel $rel has temp-fsid"
umount /sys/fs/btrfs/features

# 5. the patched module running: the list in force, or not
mkdir -p /sys/module/btrfs/parameters
: >/sys/module/btrfs/parameters/skip_scan
kernels "$rel:dkms"
truncate -s 120M "$work/fs.img"
mkfs.btrfs -f "$work/fs.img" >"$work/mkfs.log" 2>&1 || fail "mkfs.btrfs"
loop=$(losetup --show -f "$work/fs.img") || { echo "SKIP: no free loop device"; exit 77; }
# a byte copy on a second loop device: the two are clones, each decided skip and listed
cp --sparse=always "$work/fs.img" "$work/fs2.img"
loop2=$(losetup --show -f "$work/fs2.img") || { echo "SKIP: no free loop device"; exit 77; }
run short status
grep -q "^skip_scan (computed): .*$loop" "$work/short.out" || { show short; fail "$loop is not in the computed list"; }
[ "$rc" = 4 ] || { show short; fail "skip_scan lacks $loop: status exited $rc, not 4"; }
first_line short "^NOT PROTECTED: the kernel's skip list lacks [0-9]+ of"
computed=$(sed -n 's/^skip_scan (computed): //p' "$work/short.out")
printf '%s\n' "$computed" >/sys/module/btrfs/parameters/skip_scan
run enforced status
[ "$rc" = 0 ] || { show enforced; fail "skip list in force: status exited $rc, not 0"; }
first_line enforced '^protected: the patched btrfs module enforces the skip list'
echo "PASS: status leads with the verdict; helper only is a success for the unit, a patched module installed but not running and a short skip list exit 4, which fails it"
