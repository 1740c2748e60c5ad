#!/bin/bash
# `cmake --install` with DESTDIR into a fresh staging root; the file list must equal the expected
# list (which includes what helper/ installs: the helper where the rules call it, its man page),
# no @VAR@ may be left unexpanded,
# and the hooks the generators execute must be executable. Then the initramfs-tools and dracut
# components (whatever BSG_INITRAMFS selected) are added, for the mkinitramfs and dracut tests.
# Usage: install-tree.sh BUILD_DIR STAGE EXPECTED HELPER_PATH HAVE_HELPER
set -euo pipefail
build=$1 stage=$2 expected=$3 helper=$4 have_helper=$5
fail() { echo "FAIL: $*"; exit 1; }

rm -rf "$stage"
DESTDIR=$stage cmake --install "$build" >"$stage.install.log" 2>&1 || { cat "$stage.install.log"; fail "cmake --install"; }
cat "$stage.install.log"
(cd "$stage" && find . \( -type f -o -type l \) | sed 's|^\.||' | sort) > "$stage.files"
if [ "$have_helper" = 1 ]; then
    cp "$stage.files" "$stage.files.mine"
else
    echo "NOTE: no helper target in this build; only the deployment files were checked"
    grep -vx -e "$helper" -e '.*/man8/btrfs-scan-gate.8' "$stage.files" > "$stage.files.mine" || true
fi
sort "$expected" > "$stage.expected"
if ! diff -u "$stage.expected" "$stage.files.mine"; then
    fail "installed files differ from $expected (- expected, + installed)"
fi
if grep -rn '@[A-Z_]*@' "$stage" --exclude="$(basename "$helper")"; then
    fail "unexpanded @VARIABLE@ in the staging tree"
fi
while read -r f; do
    case $f in
    */90btrfs-scan-gate/*|*/initramfs-tools/*)
        [ -x "$stage$f" ] || fail "$f is not executable" ;;
    esac
done < "$stage.expected"
if [ "$have_helper" = 1 ]; then
    [ -x "$stage$helper" ] || fail "the rules call $helper, but the install did not put the helper there"
fi
n=$(wc -l < "$stage.files")
for c in initramfs-tools dracut; do
    DESTDIR=$stage cmake --install "$build" --component "$c" >>"$stage.install.log" 2>&1 ||
        { cat "$stage.install.log"; fail "cmake --install --component $c"; }
done
echo "PASS: $n files installed into $stage (then the initramfs-tools and dracut components)"
