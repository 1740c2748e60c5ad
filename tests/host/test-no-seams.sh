#!/bin/bash
# The installed helper honours no test seam (issue 10 item 6): BTRFS_SCAN_GATE_CONFIG, _RUNDIR, _EFIVARS,
# _CMDLINE, _MOUNTINFO and _CONTROL in its environment (udev's) change nothing; the test build does
# follow them (so this test can fail). args: PRODUCTION_HELPER TEST_HELPER. Needs nothing but /tmp.
set -euo pipefail
prod=${1:?usage: test-no-seams.sh PRODUCTION_HELPER TEST_HELPER}
testh=${2:?usage: test-no-seams.sh PRODUCTION_HELPER TEST_HELPER}
work=$(mktemp -d "${TMPDIR:-/var/tmp}/no-seams.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

printf 'this line has no equals sign\n' >"$work/evil.conf"
printf 'root=PARTLABEL=evil-A steamos.efi=PARTUUID=00000000-0000-0000-0000-000000000000\n' >"$work/cmdline"
seams=(BTRFS_SCAN_GATE_LOG=stderr BTRFS_SCAN_GATE_CONFIG="$work/evil.conf" BTRFS_SCAN_GATE_RUNDIR="$work/run"
    BTRFS_SCAN_GATE_CMDLINE="$work/cmdline" BTRFS_SCAN_GATE_MOUNTINFO="$work/none"
    BTRFS_SCAN_GATE_CONTROL="$work/control" BTRFS_SCAN_GATE_EFIVARS="$work/efivars")
# a LoaderDevicePartUUID that is not a GUID: the test build says so, naming the file
mkdir -p "$work/efivars"
printf '\007\000\000\000e\000v\000i\000l\000' >"$work/efivars/LoaderDevicePartUUID-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"
run() { # HELPER NAME: status under the seams' environment
    env "${seams[@]}" "$1" --dry-run status >"$work/$2.out" 2>"$work/$2.err" || true
}

run "$testh" test
grep -q "$work/evil.conf:1:" "$work/test.err" || { cat "$work/test.err"; fail "the test build ignored BTRFS_SCAN_GATE_CONFIG (this test proves nothing)"; }
grep -q 'control absent' "$work/test.out" || { cat "$work/test.out"; fail "the test build ignored BTRFS_SCAN_GATE_CONTROL"; }
grep -q "$work/efivars/LoaderDevicePartUUID" "$work/test.err" || { cat "$work/test.err"; fail "the test build ignored BTRFS_SCAN_GATE_EFIVARS"; }

run "$prod" prod
if grep -q "$work" "$work/prod.out" "$work/prod.err"; then
    cat "$work/prod.out" "$work/prod.err"
    fail "the installed helper followed a BTRFS_SCAN_GATE_* path from its environment"
fi
[ ! -e "$work/run" ] || fail "the installed helper created BTRFS_SCAN_GATE_RUNDIR"
if [ -e /dev/btrfs-control ]; then
    grep -q 'control present' "$work/prod.out" || { cat "$work/prod.out"; fail "the installed helper did not look at /dev/btrfs-control"; }
fi
grep -q 'evil' "$work/prod.out" && fail "the installed helper read BTRFS_SCAN_GATE_CMDLINE"
echo "PASS: the installed helper ignores every BTRFS_SCAN_GATE_* seam; the test build follows them"
