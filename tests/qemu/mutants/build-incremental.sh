#!/bin/bash
# build-incremental.sh MUTANT...: builds the named mutant modules from one kept build tree of the
# series and stores each where the harness looks for it (the cache directory named by the series
# and mutant hash, as qemu_build_patched would), so that run.sh boots it without a build of its own.
# The tree ($BSG_MUTANT_WORK/tree) is built in full once per series; after that a mutant
# recompiles only the files its sed changes (and the next one recompiles them back). The module is
# the one qemu_build_patched makes: the same sources, the mutant's sed, make M=fs/btrfs.
# qemu_build_patched still checks every prefix and checkpatch for the unmutated series.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"
qemu_kernel 6.1
work=${BSG_MUTANT_WORK:-/var/tmp/btrfs-scan-gate-mutants}
tree=$work/tree
series=$QEMU_REPO/kernel-patches/6.1
hash=$(BSG_MUTANT='' qemu_series_hash)
# kmake [strict]: strict, a compiler warning fails (the series); a mutant may leave a helper unused
kmake() {
    make -C "/usr/src/linux-headers-$ABI" M="$tree/fs/btrfs" -j"$(nproc)" modules >"$tree/build.log" 2>&1 ||
        { tail -n 40 "$tree/build.log" >&2; return 1; }
    if [ "${1:-}" = strict ] && grep -q 'warning:' "$tree/build.log"; then
        grep -A3 'warning:' "$tree/build.log" >&2
        return 1
    fi
}

mkdir -p "$work"
exec 9>"$work/tree.lock"
flock -w 3600 9
if [ "$(cat "$tree/.series-hash" 2>/dev/null)" != "$hash" ]; then
    qemu_log "mutants: full build of series $hash in $tree"
    rm -rf "$tree" && mkdir -p "$tree"
    cp -a "$(qemu_source_tree)/." "$tree/"
    while read -r p; do
        case $p in ''|'#'*) continue ;; esac
        patch -d "$tree" -p1 --batch --forward -s <"$series/$p"
    done <"$series/series"
    cp -a "$tree/fs/btrfs" "$tree/.pristine"
    kmake strict
    echo "$hash" >"$tree/.series-hash"
fi
for m in "$@"; do
    out=$BSG_CACHE/btrfs-$SRCVER-$(BSG_MUTANT=$m qemu_series_hash)
    if [ -e "$out/btrfs.ko" ]; then
        echo "mutants: $m: cached $out/btrfs.ko"
        continue
    fi
    (cd "$tree/fs/btrfs" && sh "$here/$m.sh")
    changed=$(cd "$tree/.pristine" && for f in *.[ch]; do cmp -s "$f" "../fs/btrfs/$f" || echo "$f"; done)
    [ -n "$changed" ] || { qemu_log "mutant $m changed nothing (stale pattern?)"; exit 1; }
    ok=0
    kmake && ok=1
    # back to the series: a fresh mtime, so the next build recompiles what the mutant touched
    for f in $changed; do cp "$tree/.pristine/$f" "$tree/fs/btrfs/$f"; done
    [ $ok = 1 ] || { qemu_log "mutant $m does not build"; exit 1; }
    mkdir -p "$out"
    cp "$tree/fs/btrfs/btrfs.ko" "$out/"
    { echo "== series $hash, mutant $m ($changed), incremental"; cat "$tree/build.log"; } >"$out/build.log"
    echo "mutants: $m: built $out/btrfs.ko ($changed)"
done
