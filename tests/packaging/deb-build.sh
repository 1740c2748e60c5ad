#!/bin/bash
# deb-build.sh OUTFILE: builds both .debs (packaging/build-debs.sh: dpkg-buildpackage -us -uc -b in
# a copy of the tree, cached by the hash of its inputs) and writes the directory holding them to
# OUTFILE for the other packaging tests.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$1
rm -f "$out"
dir=$("$here/../../packaging/build-debs.sh") || { echo "FAIL: build-debs.sh"; exit 1; }
for p in btrfs-scan-gate_ btrfs-scan-gate-dkms_; do
    ls "$dir/$p"*.deb >/dev/null 2>&1 || { echo "FAIL: no $p*.deb in $dir"; exit 1; }
done
echo "$dir" >"$out"
echo "PASS: $(cd "$dir" && echo *.deb) in $dir"
