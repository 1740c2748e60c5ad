#!/bin/bash
# lintian.sh DEBDIR_FILE: lintian --pedantic of both binary packages (the .changes of the build)
# and of the source package (dpkg-source -b of this tree, as build-debs.sh copies it). Every tag up
# to pedantic must be fixed or overridden with its reason (debian/source/lintian-overrides,
# debian/*.lintian-overrides); experimental tags (X:) are printed, not counted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
command -v lintian >/dev/null || fail "lintian not installed (scripts/setup.sh)"
dir=$(cat "$1")
changes=$(ls "$dir"/*.changes)
work=$(mktemp -d "${TMPDIR:-/var/tmp}/lintian.XXXXXX")
trap 'rm -rf "$work"' EXIT
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
mkdir "$work/btrfs-scan-gate-$version"
(cd "$src" && git ls-files --cached --others --exclude-standard | while read -r f; do [ -f "$f" ] && echo "$f"; done |
    tar -cf - -T -) | tar -C "$work/btrfs-scan-gate-$version" -xf -
(cd "$work" && dpkg-source -b "btrfs-scan-gate-$version") >"$work/dpkg-source.log" 2>&1 ||
    { cat "$work/dpkg-source.log"; fail "dpkg-source -b"; }
# the report, overrides and experimental tags shown (lintian then exits 2 whatever it found)
# lintian runs as root here (root-only machine); that is its only complaint about the environment
lintian --pedantic --display-info --display-experimental --show-overrides \
    "$changes" "$work"/*.dsc >"$work/lintian.log" 2>&1 || true
# the verdict: any tag up to pedantic that is not overridden
rc=0
lintian --pedantic --fail-on error,warning,info,pedantic "$changes" "$work"/*.dsc >"$work/verdict.log" 2>&1 || rc=$?
grep -v 'running with root privileges' "$work/lintian.log" | tee "$dir/lintian.log" || true
count() { grep -c "^$1: " "$dir/lintian.log" || true; }
echo "lintian $(lintian --version | awk '{print $2}'): E $(count E) W $(count W) I $(count I) P $(count P) X $(count X), overridden $(count O)"
[ "$rc" = 0 ] || { cat "$work/verdict.log"; fail "lintian --pedantic reports tags that are neither fixed nor overridden (exit $rc)"; }
echo "PASS: lintian --pedantic clean on the binaries and the source (overrides explained in debian/)"
