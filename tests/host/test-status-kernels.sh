#!/bin/bash
# Host test (issue 20 item 2): `status` says, for every installed kernel, which btrfs module it would
# load: btrfs-scan-gate-dkms's patched one from updates/dkms, btrfs-scan-gate-modules-ABI's from updates/, the in-tree one, or btrfs built in;
# newest kernel first, the running one marked; a directory of headers only (build/ and source/ links, as
# linux-headers-* leaves it) is no kernel, and the running kernel is listed even without a directory. The kernels are fake directories in an overlay over
# the module directory, in a private mount namespace (the host's /lib/modules is untouched).
# env: BSG_HELPER, TMPDIR.
set -euo pipefail
helper=${BSG_HELPER:?BSG_HELPER must name the helper binary}
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root (mount namespace)"; exit 77; }
for t in unshare mount python3; do command -v "$t" >/dev/null || fail "$t not installed (scripts/setup.sh)"; done
if [ -z "${BSG_STATUS_KERNELS_IN_NS:-}" ]; then
    BSG_STATUS_KERNELS_IN_NS=1 exec unshare --mount --propagation private -- "$0" "$@"
fi
work=$(mktemp -d "${TMPDIR:-/var/tmp}/status-kernels.XXXXXX")
lib=$(readlink -f /lib) # /usr/lib on a merged /usr
cleanup() { umount -l "$lib" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mount -t tmpfs -o mode=0755 bsg-status-run /run
mkdir -p "$work/upper" "$work/work"
mount -t overlay bsg-lib -o "lowerdir=$lib,upperdir=$work/upper,workdir=$work/work" "$lib"
rm -rf /lib/modules
mkdir -p /lib/modules/6.1.0-99-amd64/updates/dkms /lib/modules/6.1.0-99-amd64/kernel/fs/btrfs \
    /lib/modules/6.1.0-97-amd64/updates /lib/modules/6.1.0-97-amd64/kernel/fs/btrfs \
    /lib/modules/6.1.0-98-amd64/kernel/fs/btrfs /lib/modules/6.12.0-1-amd64 /lib/modules/5.10.0-1-amd64
touch /lib/modules/6.1.0-99-amd64/updates/dkms/btrfs.ko /lib/modules/6.1.0-99-amd64/kernel/fs/btrfs/btrfs.ko \
    /lib/modules/6.1.0-98-amd64/kernel/fs/btrfs/btrfs.ko.xz \
    /lib/modules/6.1.0-97-amd64/updates/btrfs.ko /lib/modules/6.1.0-97-amd64/kernel/fs/btrfs/btrfs.ko
printf 'kernel/fs/ext4/ext4.ko\nkernel/fs/btrfs/btrfs.ko\n' >/lib/modules/6.12.0-1-amd64/modules.builtin
: >/lib/modules/5.10.0-1-amd64/modules.order # installed, no btrfs module
mkdir -p /lib/modules/6.1.0-96-amd64 # headers only
ln -s /usr/src/linux-headers-6.1.0-96-amd64 /lib/modules/6.1.0-96-amd64/build
ln -s /usr/src/linux-headers-6.1.0-96-common /lib/modules/6.1.0-96-amd64/source
mkdir -p "/lib/modules/$(uname -r)/kernel" # the running kernel, no btrfs module file

rc=0
BTRFS_SCAN_GATE_LOG=stderr "$helper" status --json >"$work/status.json" 2>"$work/status.err" || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat "$work/status.err"; fail "status --json exited $rc"; }
python3 - "$work/status.json" "$(uname -r)" <<'PY' || { cat "$work/status.json"; fail "status --json kernels are wrong"; }
import json, sys
k = json.load(open(sys.argv[1]))["kernels"]
got = {e["release"]: (e["btrfs_module"], e["running"]) for e in k}
want = {"6.1.0-99-amd64": ("dkms", False), "6.1.0-98-amd64": ("in-tree", False),
        "6.1.0-97-amd64": ("updates", False),
        "6.12.0-1-amd64": ("built-in", False), "5.10.0-1-amd64": (None, False)}
for r, v in want.items():
    assert got.get(r) == v, "%s: %r, expected %r" % (r, got.get(r), v)
assert got[sys.argv[2]][1] is True, "the running kernel is not marked running"
assert "6.1.0-96-amd64" not in got, "a headers-only directory is listed as a kernel"
order = [e["release"] for e in k if e["release"] in want]
assert order == ["6.12.0-1-amd64", "6.1.0-99-amd64", "6.1.0-98-amd64", "6.1.0-97-amd64", "5.10.0-1-amd64"], "order %r" % order
PY
BTRFS_SCAN_GATE_LOG=stderr "$helper" status >"$work/status.txt" 2>>"$work/status.err" || true
grep -q '6.1.0-99-amd64: btrfs from updates/dkms (btrfs-scan-gate-dkms: patched)' "$work/status.txt" ||
    { cat "$work/status.txt"; fail "text: the dkms kernel is not named patched"; }
grep -q '6.1.0-97-amd64: btrfs from updates (btrfs-scan-gate-modules: patched)' "$work/status.txt" ||
    { cat "$work/status.txt"; fail "text: the prebuilt module's kernel is not named patched"; }
grep -q '6.1.0-98-amd64: in-tree btrfs (unpatched' "$work/status.txt" || { cat "$work/status.txt"; fail "text: in-tree kernel"; }
grep -q "$(uname -r) (running)" "$work/status.txt" || { cat "$work/status.txt"; fail "text: running kernel not marked"; }
grep -q '6.1.0-96-amd64' "$work/status.txt" && { cat "$work/status.txt"; fail "text: a headers-only directory is listed"; }
# the running kernel without a module directory (a kernel booted from elsewhere) is still listed
rm -rf "/lib/modules/$(uname -r)"
BTRFS_SCAN_GATE_LOG=stderr "$helper" status --json >"$work/status2.json" 2>>"$work/status.err" || true
python3 - "$work/status2.json" "$(uname -r)" <<'PY' || { cat "$work/status2.json"; fail "the running kernel without /lib/modules/RELEASE is not listed"; }
import json, sys
k = [e for e in json.load(open(sys.argv[1]))["kernels"] if e["release"] == sys.argv[2]]
assert len(k) == 1 and k[0]["running"] is True and k[0]["modules_installed"] is False and k[0]["btrfs_module"] is None, k
PY
BTRFS_SCAN_GATE_LOG=stderr "$helper" status >"$work/status2.txt" 2>>"$work/status.err" || true
grep -q "$(uname -r) (running): no modules installed" "$work/status2.txt" || { cat "$work/status2.txt"; fail "text: running kernel without modules not listed"; }
echo "PASS: status names each installed kernel's btrfs module (dkms patched, in-tree, built in, none), newest first, running marked (also without its directory), headers-only directories left out"
