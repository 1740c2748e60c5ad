#!/bin/bash
# gate.sh [LIST [WORKDIR]]: the fstests gate (CTest `fstests/gate` runs it with lists/ci): runs
# LIST on the stock module (cached after the first run), the patched module and the patched module
# with MOUNT_OPTIONS="-o virtual_fsid", the three at once, prints the table and judges it
# (table.sh). Exit 0 the bar is met, 1 it is not or a run is incomplete, 77 a prerequisite is
# missing (1 with CI=true; run.sh says which).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
list=$(realpath "${1:-$here/lists/ci}")
work=${2:-${TMPDIR:-/var/tmp}/bsg-fstests/gate-$(basename "$list")}
mkdir -p "$work"
t0=$(date +%s)
# the root image first, once (the three runs would otherwise queue on its build lock), then the
# three runs at once: each guest is mostly waiting (fstests' own sleeps, guest I/O), so together
# they take little more than the slowest alone
"$here/build-root.sh" >/dev/null
rc=$?
[ $rc = 0 ] || { [ $rc = 77 ] && exec "$here/run.sh" stock "$list" "$work/stock"; exit 1; }
declare -A pid
for c in stock patched patched-virtual; do
    ( s=$(date +%s); "$here/run.sh" "$c" "$list" "$work/$c" >"$work/$c.log" 2>&1; rc=$?
      echo "fstests-gate: $c: exit $rc after $(( $(date +%s) - s )) s" >>"$work/$c.log"; exit $rc ) &
    pid[$c]=$!
done
bad=0
for c in stock patched patched-virtual; do
    wait "${pid[$c]}"
    rc=$?
    cat "$work/$c.log"
    case $rc in
    0) ;;
    77) exit 77 ;;
    *) echo "fstests-gate: FAIL: the $c run is incomplete (see $work/$c/console.log)"; bad=1 ;;
    esac
done
[ $bad = 0 ] || exit 1
echo
"$here/table.sh" "$work/stock" "$work/patched" "$work/patched-virtual" | tee "$work/table.md"
rc=${PIPESTATUS[0]}
echo "fstests-gate: $(basename "$list"): $(( $(date +%s) - t0 )) s in all; table: $work/table.md"
exit "$rc"
