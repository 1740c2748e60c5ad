#!/bin/bash
# make-dist.sh [OUTDIR]: the source tarball btrfs-scan-gate-<version>.tar.gz (version from
# CMakeLists.txt's project()) of this tree - git's tracked and untracked, not ignored, files as they
# are in the worktree, under btrfs-scan-gate-<version>/ - and beside it a PKGBUILD:
# packaging/arch/PKGBUILD with the tarball's sha256sum filled in. OUTDIR defaults to ./dist.
# The tarball is reproducible: sorted names, owner 0, the mtime of the last commit, gzip -n.
# Also `cmake --build BUILD --target dist` (writes BUILD/dist). Prints the tarball's path.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)
version=$(sed -n 's/^project(btrfs-scan-gate VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || { echo "make-dist: no version in $src/CMakeLists.txt" >&2; exit 1; }
name=btrfs-scan-gate-$version
epoch=$(git -C "$src" log -1 --format=%ct 2>/dev/null || echo 0)
stage=$(mktemp -d "${TMPDIR:-/tmp}/make-dist.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
(cd "$src" && git ls-files --cached --others --exclude-standard) |
    while read -r f; do [ -f "$src/$f" ] && echo "$f"; done | tar -C "$src" -cf - -T - | tar -C "$stage/$name" -xf -
tar -C "$stage" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=gnu -cf - "$name" |
    gzip -n -9 >"$out/$name.tar.gz.tmp"
mv "$out/$name.tar.gz.tmp" "$out/$name.tar.gz"
sum=$(sha256sum "$out/$name.tar.gz" | cut -d' ' -f1)
sed -e "s/^pkgver=.*/pkgver=$version/" -e "s/^sha256sums=.*/sha256sums=('$sum')/" \
    "$src/packaging/arch/PKGBUILD" >"$out/PKGBUILD"
grep -q "^sha256sums=('$sum')" "$out/PKGBUILD" || { echo "make-dist: PKGBUILD has no sha256sums= line" >&2; exit 1; }
echo "$out/$name.tar.gz"
