#!/bin/bash
# Long fuzzing runs: every target for RUNS executions (default 10 million), one after the other,
# one process each (-jobs/-workers 1, nice 19) so the machine stays usable.
#   fuzz/long-run.sh BUILD_DIR [RUNS] [TARGET...]
# Prints and appends to BUILD_DIR/fuzz/long-run.txt one line per target:
#   target, rc, seconds, total execs, execs/s, crash/leak/timeout artifacts, corpus size.
# The logs are BUILD_DIR/fuzz/long/<target>/fuzz.log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: $0 BUILD_DIR [RUNS] [TARGET...]}
runs=${2:-10000000}
shift 2 2>/dev/null || shift $#
fz=$build/fuzz
if [ $# -eq 0 ]; then
    set -- $(cd "$fz" && ls fuzz-* 2>/dev/null | grep -v '\.' | sed 's/^fuzz-//')
fi
[ $# -gt 0 ] || { echo "no fuzz-* binaries in $fz (configure with -DBSG_FUZZ=ON and build)"; exit 1; }
out=$fz/long-run.txt
fail=0
echo "# $(date -u +%FT%TZ) runs=$runs host=$(uname -r)" | tee -a "$out"
for t in "$@"; do
    line=$(nice -n 19 "$here/run-fuzz.sh" "$fz/fuzz-$t" "$fz/seeds/$t" "$fz/long/$t" --runs "$runs" \
        "$here/regressions/$t" | grep "^target=" | tail -n 1)
    [[ $line == target=* ]] || { line="target=fuzz-$t FAILED: $line"; fail=1; }
    [[ $line == *" rc=0 "*"artifacts=0 "* ]] || fail=1
    echo "$line" | tee -a "$out"
done
exit $fail
