#!/bin/bash
# Bounded run of one libFuzzer target, used by CTest (label "fuzz") and by long-run.sh.
#   run-fuzz.sh BINARY SEED_DIR WORK_DIR (--seconds N | --runs N) [REGRESSION_DIR]
# First replays every file in REGRESSION_DIR (inputs that once crashed), then fuzzes with
# WORK_DIR/corpus as the writable corpus and SEED_DIR as read-only seeds. Exit status is
# libFuzzer's: 0 = no crash, leak, UB report or timeout. The full log is WORK_DIR/fuzz.log.
set -euo pipefail
bin=$1 seeds=$2 work=$3 mode=$4 count=$5 regress=${6:-}
[ -x "$bin" ] || { echo "fuzzer binary $bin missing"; exit 1; }
[ -d "$seeds" ] || { echo "seed corpus $seeds missing"; exit 1; }
rm -rf "$work/corpus" "$work/artifacts"
mkdir -p "$work/corpus" "$work/artifacts"
log=$work/fuzz.log
: >"$log"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

if [ -n "$regress" ] && [ -d "$regress" ] && [ -n "$(ls -A "$regress")" ]; then
    echo "replaying $(ls -A "$regress" | wc -l) regression inputs from $regress" | tee -a "$log"
    if ! "$bin" -runs=1 "$regress"/* >>"$log" 2>&1; then
        echo "FAIL: a regression input crashes again; see $log"
        tail -n 40 "$log"
        exit 1
    fi
fi

case $mode in
--seconds) limit=(-max_total_time="$count") ;;
--runs) limit=(-runs="$count") ;;
*) echo "usage: $0 BINARY SEED_DIR WORK_DIR --seconds N|--runs N [REGRESSION_DIR]"; exit 2 ;;
esac
start=$(date +%s)
set +e
"$bin" "${limit[@]}" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds" >>"$log" 2>&1
rc=$?
set -e
end=$(date +%s)
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
crashes=$(find "$work/artifacts" -type f | wc -l)
echo "target=$(basename "$bin") rc=$rc seconds=$((end - start)) execs=${execs:-?} execs_per_sec=${rate:-?} artifacts=$crashes corpus=$(ls "$work/corpus" | wc -l)"
if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    echo "FAIL: see $log; artifacts in $work/artifacts:"
    ls -l "$work/artifacts"
    grep -E 'ERROR:|runtime error|SUMMARY' "$log" | head -n 20
    [ "$rc" -ne 0 ] || rc=1
    exit "$rc"
fi
