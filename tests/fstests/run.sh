#!/bin/bash
# run.sh CONFIG LIST [WORKDIR]: runs the fstests of LIST in Debian's 6.1 kernel under QEMU (TCG)
# in one configuration and writes WORKDIR/results.tsv ("test<TAB>pass|fail|notrun|missing<TAB>
# seconds", in the list's order). CONFIG:
#   stock            the image's own btrfs.ko
#   patched          the btrfs.ko built with kernel-patches/6.1/series (tests/qemu/lib.sh)
#   patched-virtual  the same with MOUNT_OPTIONS="-o virtual_fsid" (fstests' scratch mounts)
# The project's own tests (tests/<dir>/NNN beside this script, e.g. bsg/001) go to the guest with
# the list and are installed into the fstests tree there. After the run, the guest's kernel log
# is cut into one file per test, WORKDIR/out/results/<test>.kmsg (from fstests' "run fstests
# <test> at" line to the next), which table.sh searches for the refusal an expected failure is for.
# Exit: 0 every test of the list has a result (whatever it is), 1 the run is incomplete or broken
# (no results from the guest, a test without a result, the wrong module loaded), 77 a
# prerequisite is missing (1 instead when CI=true). Stock results are cached (see README.md).
# Environment: BSG_FSTESTS_SRC (see lib.sh), BSG_FSTESTS_NOCACHE=1 (run stock even if cached),
# BSG_FSTESTS_TIMEOUT (seconds for the whole boot; default 600 + 300 per test).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

usage() { echo "usage: run.sh stock|patched|patched-virtual LIST [WORKDIR]" >&2; exit 2; }
[ $# -ge 2 ] || usage
config=$1
list=$(realpath "$2")
case $config in stock) module=stock ;; patched | patched-virtual) module=patched ;; *) usage ;; esac
[ -f "$list" ] || { echo "run.sh: no list file $2" >&2; exit 2; }
work=${3:-${TMPDIR:-/var/tmp}/bsg-fstests/$(basename "$list")-$config}

prereq_missing() {
    echo "fstests: prerequisite missing: $*" >&2
    [ "${CI:-}" = true ] && { echo "fstests: CI=true: a missing prerequisite is a failure" >&2; exit 1; }
    exit 77
}
fst_locate_src || prereq_missing "$FST_MISSING"
for t in qemu-system-x86_64 busybox mmdebstrap mkfs.ext4 mkfs.btrfs; do
    command -v "$t" >/dev/null || prereq_missing "$t"
done
qemu_kernel 6.1 || prereq_missing "the 6.1 kernel image (run tests/qemu/setup.sh)"

# the guest's side of the run: what the results depend on besides kernel, module, list, fstests
FST_POOL=5 FST_DISK_SIZE=6G FST_SMP=2 FST_MEM=2048
# log_buf_len: the whole run's kernel log must fit (the per-test .kmsg files come from it)
FST_APPEND="console=ttyS0 quiet panic=-1 no_timer_check log_buf_len=16M"
mount_opts=
[ "$config" = patched-virtual ] && mount_opts="-o virtual_fsid"
mapfile -t tests < <(fst_list_tests "$list")
[ ${#tests[@]} -gt 0 ] || { echo "run.sh: $list names no test" >&2; exit 2; }

ko=$(qemu_btrfs_ko "$module") && [ -n "$ko" ] || { fst_log "no $module btrfs.ko (build failed?)"; exit 1; }
root_img=$("$here/build-root.sh") || { rc=$?; [ $rc = 77 ] && prereq_missing "the fstests source"; exit 1; }

# stock results depend only on the kernel, the stock module, the list, fstests and the guest side
guest_key() {
    {
        echo "$QK_KVER"
        sha256sum "$ko" | cut -c1-64
        printf '%s\n' "${tests[@]}"
        fst_src_hash
        basename "$(dirname "$root_img")"
        cat "$here/guest/init" "$here/guest/run-fstests.sh"
        (cd "$here" && find tests -type f -print0 | sort -z | xargs -0 sha256sum)
        echo "$FST_POOL $FST_DISK_SIZE $FST_SMP $FST_MEM $mount_opts $FST_APPEND"
    } | sha256sum | cut -c1-16
}
key=$(guest_key)
cache=$BSG_CACHE/fstests-stock-$key
rm -rf "$work"
mkdir -p "$work"
if [ "$config" = stock ] && [ -e "$cache/.done" ] && [ -z "${BSG_FSTESTS_NOCACHE:-}" ]; then
    cp -a "$cache/." "$work/"
    fst_log "stock: cached results $cache (from $(cat "$cache/date")), list $(basename "$list")"
    cat "$work/results.tsv"
    exit 0
fi

# disks: root (snapshot of the cached image), input (tar), output (tar written by the guest),
# TEST_DEV and the scratch pool, sparse
d=$work/disks
mkdir -p "$d/in"
cp "$here/guest/run-fstests.sh" "$d/in/"
cp -r "$here/tests" "$d/in/tests"
case $ko in
*.xz) xz -dc "$ko" >"$d/in/btrfs.ko" ;;
*.zst) zstd -qdc "$ko" >"$d/in/btrfs.ko" ;;
*) cp "$ko" "$d/in/btrfs.ko" ;;
esac
printf '%s\n' "${tests[@]}" >"$d/in/list"
printf 'FST_CONFIG=%s\nFST_POOL=%s\nFST_MOUNT_OPTIONS=%q\n' "$config" "$FST_POOL" "$mount_opts" >"$d/in/config"
tar -C "$d/in" -cf "$d/in.tar" .
truncate -s 512M "$d/out.img"
truncate -s "$FST_DISK_SIZE" "$d/test.img"
args=(-drive "file=$root_img,format=raw,if=none,id=root,snapshot=on" -device virtio-blk-pci,drive=root,serial=fst-root
    -drive "file=$d/in.tar,format=raw,if=none,id=in,readonly=on" -device virtio-blk-pci,drive=in,serial=fst-in
    -drive "file=$d/out.img,format=raw,if=none,id=out" -device virtio-blk-pci,drive=out,serial=fst-out
    -drive "file=$d/test.img,format=raw,if=none,id=test" -device virtio-blk-pci,drive=test,serial=fst-test)
for i in $(seq 1 $FST_POOL); do
    truncate -s "$FST_DISK_SIZE" "$d/scratch$i.img"
    args+=(-drive "file=$d/scratch$i.img,format=raw,if=none,id=s$i" -device "virtio-blk-pci,drive=s$i,serial=fst-scratch$i")
done
ndisks=$((4 + FST_POOL))

# initramfs: busybox, virtio and ext4 modules of the image, guest/init
r=$work/initramfs
mkdir -p "$r"/{bin,proc,sys,dev,newroot,modules}
cp "$(command -v busybox)" "$r/bin/busybox"
for b in $("$r/bin/busybox" --list); do [ -e "$r/bin/$b" ] || ln -s busybox "$r/bin/$b"; done
dep=$QK_ROOT/lib/modules/$QK_KVER/modules.dep
declare -A seen=()
visit() {
    local m=$1 x
    [ -n "${seen[$m]:-}" ] && return
    seen[$m]=1
    for x in $(awk -v m="$m" -F': *' '$1 == m { print $2 }' "$dep"); do visit "$x"; done
    cp "$QK_ROOT/lib/modules/$QK_KVER/$m" "$r/modules/"
    b=${m##*/}
    echo "${b%.ko}" >>"$r/modules/order"
}
: >"$r/modules/order"
for want in virtio_pci virtio_blk crc32c_generic ext4; do
    m=$(grep -oE "^[^:]*/$want\.ko:" "$dep" | tr -d :) || true
    [ -z "$m" ] || visit "$m"
done
echo "$ndisks" >"$r/modules/ndisks"
cp "$here/guest/init" "$r/init"
(cd "$r" && find . | "$r/bin/busybox" cpio -o -H newc 2>/dev/null | gzip -1) >"$work/initrd.gz"
rm -rf "$r"

timeout=${BSG_FSTESTS_TIMEOUT:-$((600 + 300 * ${#tests[@]}))}
fst_log "$config: ${#tests[@]} tests of $(basename "$list"), module $ko, kernel $QK_KVER, timeout ${timeout} s; console $work/console.log"
start=$(date +%s)
timeout --foreground -k 10 "$timeout" qemu-system-x86_64 -cpu max -smp $FST_SMP -m $FST_MEM -nographic \
    -no-reboot -nic none -kernel "$QK_KERNEL" -initrd "$work/initrd.gz" \
    -append "$FST_APPEND" "${args[@]}" >"$work/console.log" 2>&1 </dev/null || true
elapsed=$(( $(date +%s) - start ))
echo "$elapsed" >"$work/seconds"
fst_log "$config: guest ended after $elapsed s"

# results: the tar the guest wrote on the output disk
bad=
mkdir -p "$work/out"
if grep -aq '^FSTESTS-RESULTS-WRITTEN' "$work/console.log"; then
    tar -C "$work/out" -xf "$d/out.img" || bad="the output disk does not hold a readable tar"
else
    bad="the guest wrote no results (console: $work/console.log)"
fi
modline=$(grep -a '^FSTESTS-MODULE:' "$work/console.log" | tail -n 1 || true)
case $config:$modline in
stock:*virtual_fsid=no* | patched*:*virtual_fsid=yes*) ;;
*) bad="${bad:+$bad; }module check: '$modline' is not what $config boots" ;;
esac
rm -rf "$d"
# the kernel log of each test: from fstests' "run fstests T at ..." to the next such line
if [ -f "$work/out/results/dmesg.log" ]; then
    for t in "${tests[@]}"; do mkdir -p "$work/out/results/$(dirname "$t")"; done
    awk -v dir="$work/out/results" '
        match($0, /run fstests [^ ]+ at /) {
            if (f) close(f)
            t = substr($0, RSTART + 12, RLENGTH - 16); f = dir "/" t ".kmsg" }
        f { print > f }' "$work/out/results/dmesg.log"
fi
xml=$work/out/results/result.xml
: >"$work/results.tsv"
for t in "${tests[@]}"; do
    st=missing secs=-
    if [ -e "$xml" ]; then
        # one <testcase .. name="T" time="S"> element, then <skipped>/<failure> before </testcase>
        read -r st secs < <(awk -v t="$t" '
            /<testcase / && index($0, "name=\"" t "\"") {
                on = 1; st = "pass"; s = $0; sub(/.*time="/, "", s); sub(/".*/, "", s); next }
            on && /<skipped/ { st = "notrun" }
            on && /<failure/ { st = "fail" }
            on && /<\/testcase>/ { print st, s; found = 1; exit }
            END { if (!found) print "missing -" }' "$xml") || true
    fi
    printf '%s\t%s\t%s\n' "$t" "$st" "$secs" >>"$work/results.tsv"
done
grep -a '^FST: ' "$work/console.log" | sed 's/^FST: //' >"$work/check.out" || true
cat "$work/results.tsv"
if grep -q $'\tmissing\t' "$work/results.tsv"; then
    bad="${bad:+$bad; }tests without a result: $(awk -F'\t' '$2 == "missing" { printf "%s ", $1 }' "$work/results.tsv")"
fi
if [ -n "$bad" ]; then
    tail -n 30 "$work/console.log" >&2
    fst_log "$config: INCOMPLETE: $bad"
    exit 1
fi
date -u '+%F %T UTC' >"$work/date"
if [ "$config" = stock ]; then
    rm -rf "$cache.tmp" && mkdir -p "$cache.tmp"
    cp -a "$work/results.tsv" "$work/console.log" "$work/check.out" "$work/seconds" "$work/date" "$cache.tmp/"
    tar -C "$work/out" -cJf "$cache.tmp/results.tar.xz" results
    rm -rf "$cache" && mv "$cache.tmp" "$cache" && touch "$cache/.done"
    fst_log "stock results cached in $cache"
fi
fst_log "$config: done in $elapsed s"
