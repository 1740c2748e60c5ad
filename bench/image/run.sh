#!/bin/bash
# bench/image/run.sh [BUILD_DIR] [--rounds N]: time to multi-user.target of the A/B image
# (tests/image/), slot A cold boot, the gate (patched module, the project's rules, unit and
# initramfs hook) against the same root with systemd's stock 64-btrfs.rules, btrfs-progs'
# initramfs scan and the stock module. N rounds (default 5), the two alternating, in one run;
# prints each boot and the medians and their ratio. Not a test: it never fails on a time.
# The guest's number is systemd's ActiveEnterTimestampMonotonic of multi-user.target (since the
# kernel started); the host's is qemu start to the guest's report line.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BSG_BUILD_DIR:-$here/build}
rounds=5
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    *) build=$1; shift ;;
    esac
done
. "$here/tests/image/lib.sh"
IMG_DIR=$("$here/tests/image/build-image.sh" "$build")
out=${TMPDIR:-/var/tmp}/bsg-bench-image
mkdir -p "$out"
declare -A T=()
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
for r in $(seq 1 "$rounds"); do
    for v in gate stock; do
        image_disks "$v" "$out/disks"
        t=$(date +%s.%N)
        IMG_VARIANT=$v image_boot "$out/disks" "$out/$v-$r.log" 6.1 A bench "sys a b" || true
        wall=$(awk -v a="$(date +%s.%N)" -v b="$t" 'BEGIN { printf "%.1f", a - b }')
        mu=$(grep -ao 'multi-user.target reached at [0-9.]* s' "$out/$v-$r.log" | awk '{print $4}' || true)
        [ -n "$mu" ] || { echo "bench: round $r $v: no report (console $out/$v-$r.log)"; continue; }
        printf 'round %d %-5s multi-user.target at %6.2f s guest, %6.1f s wall\n' "$r" "$v" "$mu" "$wall"
        T[$v]="${T[$v]:-} $mu"
        T[$v-wall]="${T[$v-wall]:-} $wall"
    done
done
rm -rf "$out/disks"
g=$(tr ' ' '\n' <<<"${T[gate]:-}" | grep . | median)
s=$(tr ' ' '\n' <<<"${T[stock]:-}" | grep . | median)
gw=$(tr ' ' '\n' <<<"${T[gate-wall]:-}" | grep . | median)
sw=$(tr ' ' '\n' <<<"${T[stock-wall]:-}" | grep . | median)
echo "median time to multi-user.target (guest, since kernel start): gate $g s, stock $s s, ratio $(awk -v a="$g" -v b="$s" 'BEGIN { printf "%.3f", a / b }')"
echo "median wall time to the report (host): gate $gw s, stock $sw s, ratio $(awk -v a="$gw" -v b="$sw" 'BEGIN { printf "%.3f", a / b }')"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared; consoles in $out)"
