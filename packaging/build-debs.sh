#!/bin/bash
# build-debs.sh [OUTDIR]: builds btrfs-scan-gate and btrfs-scan-gate-dkms with
# `dpkg-buildpackage -us -uc -b` from a copy of this source tree (git's tracked and untracked,
# not ignored, files as they are in the worktree) and prints the directory holding the .debs.
# Cached: OUTDIR defaults to /var/cache/btrfs-scan-gate/debs/<hash of the inputs>; when that
# directory is complete, nothing is built. Concurrent calls for the same inputs wait on a lock.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cache=${BSG_CACHE:-/var/cache/btrfs-scan-gate}

cd "$src"
files=$(git ls-files --cached --others --exclude-standard | while read -r f; do [ -f "$f" ] && echo "$f"; done | LC_ALL=C sort)
key=$( { printf '%s\n' "$files" | xargs -d '\n' sha256sum; dpkg-query -W debhelper dh-dkms cmake gcc libudev-dev libblkid-dev; } |
    sha256sum | cut -c1-16)
out=${1:-$cache/debs/$key}
[ $# -eq 0 ] || rm -f "$out/.done"    # an explicit OUTDIR is always built afresh
mkdir -p "$out" "$cache/locks"
exec 9>"$cache/locks/debs-$key"
flock -w 1800 9 || { echo "build-debs: timed out waiting for another build of $key" >&2; exit 1; }
if [ -e "$out/.done" ]; then
    echo "$out"
    exit 0
fi
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
work=$(mktemp -d "$cache/debbuild.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/btrfs-scan-gate-$version"
printf '%s\n' "$files" | tar -C "$src" -cf - -T - | tar -C "$work/btrfs-scan-gate-$version" -xf -
start=$(date +%s)
if ! (cd "$work/btrfs-scan-gate-$version" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
    tail -n 40 "$out/build.log" >&2
    echo "build-debs: dpkg-buildpackage failed (log: $out/build.log)" >&2
    exit 1
fi
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out/"
echo "build-debs: built in $(( $(date +%s) - start )) s: $(cd "$out" && echo *.deb)" >&2
touch "$out/.done"
echo "$out"
