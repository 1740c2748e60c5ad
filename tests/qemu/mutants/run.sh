#!/bin/bash
# run.sh [MUTANT...]: every case listed for a mutant in ./expect must FAIL against it (README.md)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${BSG_MUTANT_WORK:-/var/tmp/btrfs-scan-gate-mutants}
want=" $* "
bad=0
while read -r mutant cases; do
    case $mutant in ''|'#'*) continue ;; esac
    [ $# -eq 0 ] || [[ $want == *" $mutant "* ]] || continue
    for c in $cases; do
        f=$here/../cases/$c.sh
        if [ ! -f "$f" ]; then
            echo "mutants: $mutant: no case $c (not written yet?)"
            bad=1
            continue
        fi
        BSG_MUTANT=$mutant "$here/../run-case.sh" "$f" "$work/$mutant/$c" >"$work-$mutant-$c.log" 2>&1
        rc=$?
        why=$(grep -a -m1 'CASE-RESULT' "$work/$mutant/$c/console.log" 2>/dev/null)
        case $rc in
        0) echo "mutants: $mutant: $c PASSED: the case does not detect this breakage"; bad=1 ;;
        1) echo "mutants: $mutant: $c failed as it must: ${why:-no verdict}" ;;
        *) echo "mutants: $mutant: $c: harness error $rc (see $work-$mutant-$c.log)"; bad=1 ;;
        esac
    done
done <"$here/expect"
exit $bad
