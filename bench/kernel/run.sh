#!/bin/bash
# bench/kernel/run.sh [OUTDIR]: the kernel part of bench/run.sh (a benchmark, not a test).
# Boots the patched 6.1 guest once (tests/qemu/lib.sh: TCG, disks=clone2) with kbench in the
# initramfs, runs guest-bench.sh and writes the guest's RESULT/RATIO lines to OUTDIR/results.txt
# (console: OUTDIR/console.log). Rounds: N_MOUNT (default 30), N_SCAN (default 60).
# KBENCH_QEMU_ARGS: extra qemu arguments (tried here: "-icount shift=0,sleep=off", for guest time
# counted in instructions, did not get past the BIOS within 200 s).
# Exit: 0, 77 when a prerequisite is missing (says which), 1 when the guest run failed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$repo/tests/qemu/lib.sh"

out=${1:-/var/tmp/bench/kernel}
N_MOUNT=${N_MOUNT:-30}
N_SCAN=${N_SCAN:-60}
mkdir -p "$out"
out=$(cd "$out" && pwd)

for t in qemu-system-x86_64 busybox mkfs.btrfs btrfs gcc; do
    command -v "$t" >/dev/null || { echo "bench/kernel: prerequisite missing: $t (run tests/qemu/setup.sh)"; exit 77; }
done
[ -e /usr/lib/x86_64-linux-gnu/libc.a ] || { echo "bench/kernel: prerequisite missing: libc6-dev (static libc)"; exit 77; }
qemu_kernel 6.1 || { echo "bench/kernel: prerequisite missing: the 6.1 kernel (run tests/qemu/setup.sh)"; exit 77; }

gcc -static -O2 -Wall -Wextra -o "$out/kbench" "$here/kbench.c" >"$out/kbench-build.log" 2>&1 ||
    { cat "$out/kbench-build.log"; exit 1; }
ko=$(qemu_btrfs_ko patched) || { echo "bench/kernel: the patched module does not build"; exit 1; }
qemu_make_disks clone2 "$out/disks" >"$out/mkfs.log" 2>&1 || { cat "$out/mkfs.log"; exit 1; }
sed -e "s/^N_MOUNT=.*/N_MOUNT=$N_MOUNT/" -e "s/^N_SCAN=.*/N_SCAN=$N_SCAN/" "$here/guest-bench.sh" >"$out/guest-bench.sh"
QEMU_DISKDIR=$out/disks QEMU_EXTRA_FILES="$out/kbench:/bin/kbench" \
    qemu_initramfs "$out/guest-bench.sh" "$out/initrd.gz" "$ko" ""

echo "bench/kernel: kernel $QK_KVER, patched module $ko, N_MOUNT=$N_MOUNT N_SCAN=$N_SCAN"
start=$(date +%s)
QEMU_TIMEOUT=${KBENCH_TIMEOUT:-300} qemu_boot "$out/initrd.gz" "$out/console.log" "$out/disks" ${KBENCH_QEMU_ARGS:-} || true
rc=$(qemu_verdict "$out/console.log")
echo "bench/kernel: guest exit $rc after $(($(date +%s) - start)) s; console: $out/console.log"
grep -a -E '^(RESULT|RATIO) ' "$out/console.log" | tr -d '\r' >"$out/results.txt" || true
cat "$out/results.txt"
if [ "$rc" != 0 ]; then
    echo "---- console tail ----"
    tail -n 30 "$out/console.log"
    exit 1
fi
