#!/bin/bash
# autopkgtest.sh DEBDIR_FILE WORK: debian/tests (autopkgtest) of this source tree against the built
# .debs, run by `autopkgtest` with its chroot virtualisation server in a throw-away Debian 12 root
# (throwaway-root.sh unpack) in a private mount namespace: /proc, /sys and /dev (loop devices) from this
# machine, a tmpfs /run, the archive as this machine sees it (test dependencies come from it, the
# downloads are kept in $BSG_CACHE/apt-archives). Every test must pass; a skipped test fails this one
# (the root has what they need).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, loop devices, mount namespace)"
command -v autopkgtest >/dev/null || fail "autopkgtest not installed (scripts/setup.sh)"
[ -e /etc/apt/sources.list.d/debian.sources ] || skip "no /etc/apt/sources.list.d/debian.sources to give the root the archive"
debfile=$1 work=$2
if [ -z "${BSG_AUTOPKGTEST_NS:-}" ]; then
    exec unshare -m env BSG_AUTOPKGTEST_NS=1 "$0" "$@"
fi
debdir=$(cat "$debfile")
arch=$(dpkg --print-architecture)
debs=("$(ls "$debdir"/btrfs-scan-gate_*_"$arch".deb)") || fail "no btrfs-scan-gate .deb in $debdir"
rm -rf "$work"
root=$work/root
mkdir -p "$work/out"
trap '"$here/throwaway-root.sh" remove "$root"' EXIT
# the root a mount point of its own: the host tests' `unshare --propagation private` needs one
"$here/throwaway-root.sh" unpack "$root" --own-mount --sys --archive || fail "no throw-away root"

# the source tree as git knows it (tracked and untracked, not ignored), as build-debs.sh copies it
mkdir "$work/src"
(cd "$src" && git ls-files --cached --others --exclude-standard | while read -r f; do [ -f "$f" ] && echo "$f"; done |
    tar -C "$src" -cf - -T -) | tar -C "$work/src" -xf -
start=$(date +%s)
rc=0
TMPDIR=/tmp autopkgtest --output-dir "$work/out" "$work/src" "${debs[@]}" -- chroot "$root" >"$work/autopkgtest.log" 2>&1 || rc=$?
echo "autopkgtest exit $rc in $(( $(date +%s) - start )) s; summary:"
cat "$work/out/summary" 2>/dev/null || { tail -n 40 "$work/autopkgtest.log"; fail "autopkgtest wrote no summary"; }
[ "$rc" = 0 ] || { tail -n 60 "$work/autopkgtest.log"; fail "autopkgtest exit $rc"; }
for t in installed-layout host-status; do
    grep -qE "^$t +PASS" "$work/out/summary" || fail "$t did not pass"
done
grep -h 'host tests against the installed helper' "$work/out"/*-stdout 2>/dev/null || true
echo "PASS: autopkgtest (chroot virt server, throw-away root): every debian/tests test passed against the installed package"
