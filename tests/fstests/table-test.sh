#!/bin/bash
# table-test.sh [WORKDIR]: table.sh judged on canned results (no QEMU, no fstests): each case
# writes three results directories, an expected list and a README, runs table.sh and checks its
# exit status and the verdict line it must print. CTest fstests/table runs it.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/bsg-table-test.XXXXXX")}
rm -rf "$work" && mkdir -p "$work"
fails=0 n=0

# results DIR "TEST RESULT" ...: a run.sh work directory with results.tsv
results() {
    local d=$1 x
    shift
    mkdir -p "$d/out/results"
    : >"$d/results.tsv"
    for x in "$@"; do
        set -- $x
        printf '%s\t%s\t10\n' "$1" "$2" >>"$d/results.tsv"
    done
}

# output DIR TEST EXT TEXT: a file of the test's output in a results directory
output() {
    mkdir -p "$(dirname "$1/out/results/$2")"
    printf '%s\n' "$4" >"$1/out/results/$2.$3"
}

readme_ok() {
    cat >"$1" <<'EOR'
# fstests
| test | stock | patched | patched, `-o virtual_fsid` | note |
|---|---|---|---|---|
| btrfs/020 | pass | pass | fail | expected |
| btrfs/244 | pass | pass | fail | expected |

## Expected differences under `-o virtual_fsid`
- **btrfs/020** (raid1 of the pool): the mount with the option is refused,
  a multi-device filesystem.
- **btrfs/244**: device remove is refused on a virtual_fsid mount.

## Next section
EOR
}

expected_list() {
    cat >"$1" <<'EOE'
# test list
btrfs/020 | fail | virtual_fsid refused for /dev/[a-z0-9]+: multi-device filesystem | multi-device refused
btrfs/244 | fail | device remove not supported on a virtual_fsid mount | remove refused
EOE
}

# a case: the three directories under $c/{stock,patched,virtual}, then judge
setup_case() {
    c=$work/$1
    mkdir -p "$c"
    expected_list "$c/expected"
    readme_ok "$c/README.md"
    results "$c/stock" "btrfs/020 pass" "btrfs/244 pass" "generic/002 pass" "bsg/001 notrun"
    results "$c/patched" "btrfs/020 pass" "btrfs/244 pass" "generic/002 pass" "bsg/001 pass"
    results "$c/virtual" "btrfs/020 fail" "btrfs/244 fail" "generic/002 pass" "bsg/001 pass"
    output "$c/virtual" btrfs/020 kmsg "[  10.1] BTRFS error: virtual_fsid refused for /dev/vdf: multi-device filesystem"
    output "$c/virtual" btrfs/020 out.bad "mount: /mnt/scratch: wrong fs type, bad option, bad superblock on /dev/vde"
    output "$c/virtual" btrfs/244 out.bad "ERROR: error removing devid 3: Invalid argument"
    output "$c/virtual" btrfs/244 kmsg "[  12.0] BTRFS error (device vde): device remove not supported on a virtual_fsid mount"
}

# judge NAME WANT_EXIT WANT_LINE: runs table.sh on case $c
judge() {
    local name=$1 want=$2 line=$3 rc
    n=$((n + 1))
    BSG_FSTESTS_EXPECTED=$c/expected BSG_FSTESTS_README=$c/README.md \
        "$here/table.sh" "$c/stock" "$c/patched" "$c/virtual" >"$c/table.out" 2>&1
    rc=$?
    if [ "$rc" = "$want" ] && grep -qF -- "$line" "$c/table.out"; then
        echo "ok $n - $name"
    else
        echo "not ok $n - $name (exit $rc, want $want and a line with '$line'):"
        sed 's/^/#   /' "$c/table.out"
        fails=$((fails + 1))
    fi
}

setup_case pass
judge "expected failures with their refusals, explained: PASS" 0 "fstests-gate: PASS:"

setup_case no-refusal
output "$c/virtual" btrfs/020 kmsg "[  10.1] BTRFS critical (device vde): corrupt leaf: root=1 block=30408704 slot=0"
judge "an expected failure whose output lacks its refusal: UNPROVEN" 1 \
    "fstests-gate: FAIL: btrfs/020: fail under -o virtual_fsid, but its output (.out.bad, .full, .kmsg) lacks the refusal"

setup_case no-output
rm -f "$c/virtual/out/results/btrfs/244".*
judge "an expected failure without any output: UNPROVEN" 1 "fstests-gate: FAIL: btrfs/244: fail under -o virtual_fsid, but its output"

setup_case refusal-in-full
rm -f "$c/virtual/out/results/btrfs/244".*
output "$c/virtual" btrfs/244 full "device remove not supported on a virtual_fsid mount"
judge "the refusal in the .full file counts" 0 "fstests-gate: PASS:"

setup_case readme-table-only
readme_ok "$c/README.md"
sed -i '/^- \*\*btrfs\/244\*\*/d' "$c/README.md"
judge "a test named only in the README's table: UNEXPLAINED" 1 \
    "fstests-gate: FAIL: btrfs/244: listed as expected but no bullet"

setup_case readme-other-section
cat >"$c/README.md" <<'EOR'
## Other
- **btrfs/020** and **btrfs/244** mentioned elsewhere.

## Expected differences under `-o virtual_fsid`
- **btrfs/020**: refused.
EOR
judge "a test explained outside the section: UNEXPLAINED" 1 "fstests-gate: FAIL: btrfs/244: listed as expected but no bullet"

setup_case not-listed
results "$c/virtual" "btrfs/020 fail" "btrfs/244 fail" "generic/002 fail" "bsg/001 pass"
judge "a difference not in the expected list: UNEXPLAINED" 1 \
    "fstests-gate: FAIL: generic/002: pass on patched, fail under -o virtual_fsid, not in"

setup_case wrong-result
results "$c/virtual" "btrfs/020 notrun" "btrfs/244 fail" "generic/002 pass" "bsg/001 pass"
judge "a listed test with another result: UNEXPLAINED" 1 \
    "fstests-gate: FAIL: btrfs/020: notrun under -o virtual_fsid, the expected list says fail"

setup_case stale
results "$c/virtual" "btrfs/020 pass" "btrfs/244 fail" "generic/002 pass" "bsg/001 pass"
judge "a listed difference that did not happen: STALE" 1 "fstests-gate: FAIL: btrfs/020: the expected list says fail"

setup_case regression
results "$c/patched" "btrfs/020 pass" "btrfs/244 pass" "generic/002 fail" "bsg/001 pass"
results "$c/virtual" "btrfs/020 fail" "btrfs/244 fail" "generic/002 fail" "bsg/001 pass"
judge "a stock pass failing on patched: REGRESSION" 1 "fstests-gate: FAIL: generic/002: passes on stock, fail on patched"

setup_case own-test
results "$c/virtual" "btrfs/020 fail" "btrfs/244 fail" "generic/002 pass" "bsg/001 fail"
expected_list "$c/expected"
echo "bsg/001 | fail | . | anything" >>"$c/expected"
judge "an own test failing under -o virtual_fsid, even when listed: FAIL" 1 \
    "fstests-gate: FAIL: bsg/001: the project's own test is pass on patched, fail under -o virtual_fsid"

setup_case own-notrun
results "$c/patched" "btrfs/020 pass" "btrfs/244 pass" "generic/002 pass" "bsg/001 notrun"
results "$c/virtual" "btrfs/020 fail" "btrfs/244 fail" "generic/002 pass" "bsg/001 notrun"
judge "an own test notrun on patched: FAIL" 1 "fstests-gate: FAIL: bsg/001: the project's own test is notrun on patched"

setup_case missing
results "$c/patched" "btrfs/020 pass" "btrfs/244 pass" "generic/002 missing" "bsg/001 pass"
judge "a test without a result: MISSING" 1 "fstests-gate: FAIL: generic/002: a configuration has no result"

setup_case bad-list
echo "btrfs/151 fail no separators" >>"$c/expected"
judge "an expected-list line without its four fields is refused" 1 "a line without TEST | RESULT | REFUSAL | REASON"

n=$((n + 1))
# the repository's own expected list and README: every listed test has a bullet (so a gate run
# that shows the refusals passes), and every line parses
missing=$(sed -e '/^#/d' -e '/^$/d' -e 's/ *|.*//' "$here/expected-virtual_fsid" | while read -r t; do
    awk '/^## / { on = ($0 ~ /^## Expected differences under/); next } on && /^- /' "$here/README.md" |
        grep -qF "**$t**" || echo "$t"
done)
if [ -z "$missing" ]; then
    echo "ok $n - every test of expected-virtual_fsid has a bullet in README.md"
else
    echo "not ok $n - no bullet in README.md for: $missing"
    fails=$((fails + 1))
fi

echo "table-test: $((n - fails))/$n passed"
[ $fails = 0 ]
