#!/bin/bash
# check-integrity-build.sh [WORKDIR]: issue 19 bug 5. Debian's 6.1 has CONFIG_BTRFS_FS_CHECK_INTEGRITY
# off, so the normal build never compiles check-integrity.c. This builds the patched fs/btrfs out of
# tree with the symbol on (check-integrity.o added through the Makefile's
# btrfs-$(CONFIG_BTRFS_FS_CHECK_INTEGRITY), the #ifdefs through -DCONFIG_BTRFS_FS_CHECK_INTEGRITY=1):
#   1. the whole module builds with no compiler warning;
#   2. the object code of check-integrity.o, compiled with -fno-inline so that the static inline
#      btrfs_ondisk_fsid() stays a function of its own, calls btrfs_ondisk_fsid() from
#      btrfsic_test_for_metadata(), the tree-block fsid check;
#   3. the same object compiled from the unpatched source (kbuild's recorded command for the
#      patched object, run on the unpatched file) has no such call: the proof can fail;
#   4. that module boots in Debian's 6.1 guest and runs check-integrity-case.sh: -o check_int on a
#      plain mount and on a virtual_fsid mount of its clone, writes, unmounts, a clean kernel log.
# Proof from the compiler's output and a boot, not from reading the source. Exit 0 all four, 1 otherwise.
# A pass depends only on the series, the source, the headers and this script: it is kept as
# $BSG_CACHE/check-integrity-<hash of them>.log and shown again instead of building (a failure is
# never kept).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
work=${1:-${TMPDIR:-/var/tmp}/bsg-check-integrity}
for t in make gcc objdump nm patch; do
    command -v "$t" >/dev/null || { echo "check-integrity: prerequisite missing: $t" >&2; exit 77; }
done
qemu_kernel 6.1 || { echo "check-integrity: prerequisite missing: the 6.1 kernel (run tests/qemu/setup.sh)" >&2; exit 77; }
kdir=/usr/src/linux-headers-$ABI
[ -d "$kdir" ] || { echo "check-integrity: prerequisite missing: $kdir (run tests/qemu/setup.sh)" >&2; exit 77; }
cache=${BSG_CACHE:-/var/cache/btrfs-scan-gate}
key=$( { qemu_series_hash; echo "$SRCVER $ABI"; cat "$0" "$here/check-integrity-case.sh"; } | sha256sum | cut -c1-16)
passed=$cache/check-integrity-$key.log
if [ -s "$passed" ]; then
    cat "$passed"
    echo "check-integrity: (the verdict of $passed: series, source, headers and this script unchanged)"
    exit 0
fi
src=$(qemu_source_tree)
rm -rf "$work" && mkdir -p "$work"
exec 3>&1 > >(tee "$work/verdict.log")
teepid=$!
cp -a "$src/." "$work/patched/"
cp -a "$src/." "$work/stock/"
dir=$QEMU_REPO/kernel-patches/6.1
while read -r p; do
    case $p in '' | '#'*) continue ;; esac
    patch -d "$work/patched" -p1 --batch --forward <"$dir/$p" >>"$work/patch.log" 2>&1 ||
        { cat "$work/patch.log" >&2; echo "check-integrity: $p does not apply" >&2; exit 1; }
done <"$dir/series"

kmake() { # TREE TARGET LOG [VAR=VALUE...]
    local tree=$1 target=$2 log=$3
    shift 3
    make -C "$kdir" M="$tree/fs/btrfs" -j"$(nproc)" CONFIG_BTRFS_FS_CHECK_INTEGRITY=y \
        KCFLAGS=-DCONFIG_BTRFS_FS_CHECK_INTEGRITY=1 "$@" "$target" >"$log" 2>&1
}
fail=0
# 1. the module, check-integrity.o compiled with -fno-inline
t0=$(date +%s)
if ! kmake "$work/patched" modules "$work/module.log" 'CFLAGS_check-integrity.o=-fno-inline'; then
    tail -n 40 "$work/module.log" >&2
    echo "check-integrity: FAIL: the patched module does not build with CONFIG_BTRFS_FS_CHECK_INTEGRITY"
    exit 1
fi
o=$work/patched/fs/btrfs/check-integrity.o
[ -e "$o" ] ||
    { echo "check-integrity: FAIL: check-integrity.o was not built (the symbol did not reach the Makefile)"; exit 1; }
if grep -q 'warning:' "$work/module.log"; then
    grep -A3 'warning:' "$work/module.log"
    echo "check-integrity: FAIL: compiler warnings with CONFIG_BTRFS_FS_CHECK_INTEGRITY"
    fail=1
else
    echo "check-integrity: ok: the patched btrfs.ko builds with CONFIG_BTRFS_FS_CHECK_INTEGRITY, no warning ($(( $(date +%s) - t0 )) s)"
fi

# 2. and 3. who btrfsic_test_for_metadata() calls, in the object code
calls() { # OBJECT: the call targets of btrfsic_test_for_metadata
    objdump -d --no-show-raw-insn --disassemble=btrfsic_test_for_metadata "$1" |
        sed -n 's/.*call.*<\([^>+]*\)\(+0x[0-9a-f]*\)\{0,1\}>.*/\1/p' | sort -u
}
pc=$(calls "$o")
# the unpatched object: kbuild's command for the patched one, on the unpatched tree (a single-object
# build of an external module does not read the kernel's configuration)
cmd=$(sed -n 's/^cmd_[^ ]* := //p' "$work/patched/fs/btrfs/.check-integrity.o.cmd")
[ -n "$cmd" ] || { echo "check-integrity: FAIL: no recorded compile command for check-integrity.o"; exit 1; }
(cd "$kdir" && sh -c "${cmd//$work\/patched\//$work/stock/}") >"$work/stock-obj.log" 2>&1 ||
    { cat "$work/stock-obj.log" >&2; echo "check-integrity: FAIL: compiling the unpatched check-integrity.c failed"; exit 1; }
sc=$(calls "$work/stock/fs/btrfs/check-integrity.o")
echo "check-integrity: btrfsic_test_for_metadata() calls, patched: $(echo $pc)"
echo "check-integrity: btrfsic_test_for_metadata() calls, stock:   $(echo $sc)"
if printf '%s\n' $pc | grep -qx btrfs_ondisk_fsid; then
    echo "check-integrity: ok: patched btrfsic_test_for_metadata() takes the fsid from btrfs_ondisk_fsid()"
else
    echo "check-integrity: FAIL: patched btrfsic_test_for_metadata() does not call btrfs_ondisk_fsid()"
    fail=1
fi
if printf '%s\n' $sc | grep -qx btrfs_ondisk_fsid; then
    echo "check-integrity: FAIL: the stock object calls btrfs_ondisk_fsid() too: the proof proves nothing"
    fail=1
fi
# 4. the module in the guest (only a module that passed 1 to 3)
if [ "$fail" = 0 ]; then
    t0=$(date +%s)
    if BSG_BTRFS_KO=$work/patched/fs/btrfs/btrfs.ko "$here/run-case.sh" "$here/check-integrity-case.sh" \
        "$work/boot" >"$work/boot.log" 2>&1; then
        grep -a '^guest: ' "$work/boot/console.log" || true
        echo "check-integrity: ok: the module loads in Debian's 6.1 guest; check_int on a plain and a virtual_fsid mount, kernel log clean ($(( $(date +%s) - t0 )) s)"
    else
        tail -n 60 "$work/boot.log"
        echo "check-integrity: FAIL: check-integrity-case.sh in the guest (see $work/boot.log)"
        fail=1
    fi
fi
exec >&3 3>&-
wait "$teepid" || true
[ "$fail" != 0 ] || { mkdir -p "$cache" && cp "$work/verdict.log" "$passed.tmp" && mv "$passed.tmp" "$passed"; }
exit $fail
