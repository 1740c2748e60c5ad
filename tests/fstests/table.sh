#!/bin/bash
# table.sh STOCK_DIR PATCHED_DIR VIRTUAL_DIR: prints the table of the three runs (run.sh's
# results.tsv in each directory) as Markdown, one row per test, and judges it:
#   - a test that passes on the stock module passes on the patched one (else REGRESSION);
#   - the project's own tests (bsg/NNN) pass on the patched module, with and without
#     -o virtual_fsid (else OWN TEST FAILS; they are notrun on the stock module, which lacks the
#     option);
#   - every difference between `patched` and `patched-virtual` is listed in
#     expected-virtual_fsid with that result (else UNEXPLAINED), the refusal it is listed for is
#     in the test's output under -o virtual_fsid (its .out.bad, .full or kernel log .kmsg in
#     VIRTUAL_DIR/out/results/; else UNPROVEN: it failed, but not for that reason), and a bullet
#     of the section "Expected differences under -o virtual_fsid" of tests/fstests/README.md names
#     the test in bold (else UNEXPLAINED; the README's tables do not count); a listed difference
#     that did not happen is STALE (the list must say what happens);
#   - every test has a result in every configuration (else MISSING).
# Exit 0 when the bar is met, 1 otherwise; the verdict lines start with "fstests-gate:".
# BSG_FSTESTS_EXPECTED and BSG_FSTESTS_README replace the two files (tests/fstests/table-test.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# = 3 ] || { echo "usage: table.sh STOCK_DIR PATCHED_DIR VIRTUAL_DIR" >&2; exit 2; }
expected=${BSG_FSTESTS_EXPECTED:-$here/expected-virtual_fsid}
readme=${BSG_FSTESTS_README:-$here/README.md}
for d in "$@"; do
    [ -f "$d/results.tsv" ] || { echo "fstests-gate: no results.tsv in $d" >&2; exit 1; }
done
[ -f "$expected" ] || { echo "fstests-gate: no $expected" >&2; exit 1; }
[ -f "$readme" ] || { echo "fstests-gate: no $readme" >&2; exit 1; }

# the tests the README explains: bold names in the bullets of its section
explained=$(awk '
    /^## / { on = ($0 ~ /^## Expected differences under `?-o virtual_fsid`?/) ; next }
    on && /^- / { bullet = 1 }
    on && /^[^ -]/ { bullet = 0 }
    on && bullet {
        s = $0
        while (match(s, /\*\*[^*]+\*\*/)) { print substr(s, RSTART + 2, RLENGTH - 4); s = substr(s, RSTART + RLENGTH) }
    }' "$readme" | sort -u)

# the expected list: TEST | RESULT | REFUSAL (extended regular expression) | REASON
declare -A exp_res=() exp_msg=() exp_why=()
while IFS= read -r line; do
    case $line in '#'* | '') continue ;; esac
    IFS='|' read -r t r m w <<<"$line"
    t=$(echo "$t" | xargs) r=$(echo "$r" | xargs)
    m=$(echo "$m" | sed -e 's/^ *//' -e 's/ *$//') w=$(echo "$w" | sed -e 's/^ *//' -e 's/ *$//')
    if [ -z "$t" ] || [ -z "$r" ] || [ -z "$m" ] || [ -z "$w" ]; then
        echo "fstests-gate: FAIL: $expected: a line without TEST | RESULT | REFUSAL | REASON: $line"
        exit 1
    fi
    exp_res[$t]=$r exp_msg[$t]=$m exp_why[$t]=$w
done <"$expected"

# VIRTUAL_DIR's output of test T holds the refusal ERE M
refusal_shown() {
    local base=$3/out/results/$1 f
    for f in "$base.out.bad" "$base.full" "$base.kmsg"; do
        [ -f "$f" ] && grep -Eq -- "$2" "$f" && return 0
    done
    return 1
}

declare -A pa=() vi=()
while IFS=$'\t' read -r t r _; do pa[$t]=$r; done <"$2/results.tsv"
while IFS=$'\t' read -r t r _; do vi[$t]=$r; done <"$3/results.tsv"
msgs=()
echo "| test | stock | patched | patched, \`-o virtual_fsid\` | note |"
echo "|---|---|---|---|---|"
while IFS=$'\t' read -r t s _; do
    p=${pa[$t]:-missing} v=${vi[$t]:-missing} note=()
    if [ "$s" = missing ] || [ "$p" = missing ] || [ "$v" = missing ]; then
        note+=("MISSING result"); msgs+=("$t: a configuration has no result")
    elif [ "$s" = pass ] && [ "$p" != pass ]; then
        note+=("REGRESSION"); msgs+=("$t: passes on stock, $p on patched")
    elif [ "$s" != pass ] && [ "$p" = pass ]; then
        note+=("passes on patched only")
    fi
    case $t in
    bsg/*)
        if [ "$p" != pass ] || [ "$v" != pass ]; then
            note+=("OWN TEST FAILS"); msgs+=("$t: the project's own test is $p on patched, $v under -o virtual_fsid (it must pass in both)")
        fi ;;
    esac
    if [ "$p" != missing ] && [ "$v" != missing ]; then
        if [ "$p" != "$v" ]; then
            if [ -z "${exp_res[$t]:-}" ]; then
                note+=("UNEXPLAINED"); msgs+=("$t: $p on patched, $v under -o virtual_fsid, not in $expected")
            elif [ "${exp_res[$t]}" != "$v" ]; then
                note+=("UNEXPLAINED"); msgs+=("$t: $v under -o virtual_fsid, the expected list says ${exp_res[$t]}")
            elif ! refusal_shown "$t" "${exp_msg[$t]}" "$3"; then
                note+=("UNPROVEN"); msgs+=("$t: $v under -o virtual_fsid, but its output (.out.bad, .full, .kmsg) lacks the refusal it is expected for: ${exp_msg[$t]}")
            elif ! grep -qxF -- "$t" <<<"$explained"; then
                note+=("UNEXPLAINED"); msgs+=("$t: listed as expected but no bullet of \"Expected differences under -o virtual_fsid\" in $readme names it")
            else
                note+=("expected: ${exp_why[$t]}")
            fi
        elif [ -n "${exp_res[$t]:-}" ]; then
            note+=("STALE expectation"); msgs+=("$t: the expected list says ${exp_res[$t]} under -o virtual_fsid, but it is $v as on patched")
        fi
    fi
    n=$(IFS=';'; echo "${note[*]:-}" | sed 's/;/; /g')
    echo "| $t | $s | $p | $v | $n |"
done <"$1/results.tsv"
echo
for m in "${msgs[@]}"; do echo "fstests-gate: FAIL: $m"; done
if [ ${#msgs[@]} -gt 0 ]; then
    exit 1
fi
echo "fstests-gate: PASS: no stock pass fails on patched; the project's own tests pass; every -o virtual_fsid difference is expected, shown by its refusal and explained"
