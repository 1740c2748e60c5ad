#!/bin/bash
# table.sh STOCK_DIR PATCHED_DIR VIRTUAL_DIR: prints the table of the three runs (run.sh's
# results.tsv in each directory) as Markdown, one row per test, and judges it by the bar of
# issue 19:
#   - a test that passes on the stock module passes on the patched one (else REGRESSION);
#   - every difference between `patched` and `patched-virtual` is listed in
#     tests/fstests/expected-virtual_fsid with that result, and the test is explained in
#     kernel-patches/README.md (else UNEXPLAINED); a listed difference that did not happen is
#     STALE (the list must say what happens);
#   - every test has a result in every configuration (else MISSING).
# Exit 0 when the bar is met, 1 otherwise; the verdict lines start with "fstests-gate:".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ $# = 3 ] || { echo "usage: table.sh STOCK_DIR PATCHED_DIR VIRTUAL_DIR" >&2; exit 2; }
expected=${BSG_FSTESTS_EXPECTED:-$here/expected-virtual_fsid}
readme=$repo/kernel-patches/README.md
for d in "$@"; do
    [ -f "$d/results.tsv" ] || { echo "fstests-gate: no results.tsv in $d" >&2; exit 1; }
done

awk -F'\t' -v expfile="$expected" -v readme="$readme" '
    BEGIN {
        while ((getline line < expfile) > 0) {
            if (line ~ /^[[:space:]]*(#|$)/) continue
            split(line, f, /[[:space:]]+/)
            exp_res[f[1]] = f[2]
            why = line; sub(/^[^[:space:]]+[[:space:]]+[^[:space:]]+[[:space:]]*/, "", why)
            exp_why[f[1]] = why
        }
        while ((getline line < readme) > 0) readme_text = readme_text "\n" line
    }
    FILENAME == ARGV[1] { order[++n] = $1; st[$1] = $2; ts[$1] = $3; next }
    FILENAME == ARGV[2] { pa[$1] = $2; tp[$1] = $3; next }
    { vi[$1] = $2; tv[$1] = $3 }
    END {
        print "| test | stock | patched | patched, `-o virtual_fsid` | note |"
        print "|---|---|---|---|---|"
        bad = 0
        for (i = 1; i <= n; i++) {
            t = order[i]; s = st[t]; p = (t in pa) ? pa[t] : "missing"; v = (t in vi) ? vi[t] : "missing"
            note = ""
            if (s == "missing" || p == "missing" || v == "missing") {
                note = "MISSING result"; msg[++m] = t ": a configuration has no result"; bad = 1
            } else if (s == "pass" && p != "pass") {
                note = "REGRESSION"; msg[++m] = t ": passes on stock, " p " on patched"; bad = 1
            } else if (s != "pass" && p == "pass") {
                note = "passes on patched only"
            }
            if (p != "missing" && v != "missing") {
                if (p != v) {
                    if (!(t in exp_res)) {
                        note = note (note ? "; " : "") "UNEXPLAINED"
                        msg[++m] = t ": " p " on patched, " v " under -o virtual_fsid, not in " expfile; bad = 1
                    } else if (exp_res[t] != v) {
                        note = note (note ? "; " : "") "UNEXPLAINED"
                        msg[++m] = t ": " v " under -o virtual_fsid, the expected list says " exp_res[t]; bad = 1
                    } else if (index(readme_text, t) == 0) {
                        note = note (note ? "; " : "") "UNEXPLAINED"
                        msg[++m] = t ": listed as expected but not explained in " readme; bad = 1
                    } else {
                        note = note (note ? "; " : "") "expected: " exp_why[t]
                    }
                } else if (t in exp_res) {
                    note = note (note ? "; " : "") "STALE expectation"
                    msg[++m] = t ": the expected list says " exp_res[t] " under -o virtual_fsid, but it is " v " as on patched"; bad = 1
                }
            }
            printf "| %s | %s | %s | %s | %s |\n", t, s, p, v, note
        }
        print ""
        for (k = 1; k <= m; k++) print "fstests-gate: FAIL: " msg[k]
        if (!bad) print "fstests-gate: PASS: no stock pass fails on patched; every -o virtual_fsid difference is expected and explained"
        exit bad
    }' "$1/results.tsv" "$2/results.tsv" "$3/results.tsv"
