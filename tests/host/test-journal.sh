#!/bin/bash
# Host test of the journal lines (helper/log.c), on a real btrfs loop device:
#  - syslog: `udev DEV` logs one line "DEV: scan (unique), fsid F" tagged btrfs-scan-gate at
#    daemon.notice; the same event again logs nothing (decision unchanged); a bad config line is
#    logged at daemon.warning; BTRFS_SCAN_GATE_LOG=stderr sends nothing;
#  - kmsg (the initramfs' sink): the decision line appears in the kernel log (dmesg).
# Runs in a private mount namespace: tmpfs /run (the helper's state and remembered decisions),
# an overlay /dev whose /dev/log is this test's datagram socket (a python3 reader) instead of the
# host's. env: BSG_HELPER, TMPDIR.
set -euo pipefail
helper=${BSG_HELPER:?BSG_HELPER must name the helper binary}
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root"; exit 77; }
for t in losetup mkfs.btrfs btrfs unshare python3 dmesg; do
    command -v "$t" >/dev/null || fail "$t not installed (scripts/setup.sh)"
done
if [ -z "${BSG_JOURNAL_IN_NS:-}" ]; then
    BSG_JOURNAL_IN_NS=1 exec unshare --mount --propagation private -- "$0" "$@"
fi
work=$(mktemp -d "${TMPDIR:-/var/tmp}/journal.XXXXXX")
loop=
reader=
cleanup() {
    [ -z "$reader" ] || kill "$reader" 2>/dev/null || true
    if [ -n "$loop" ]; then
        btrfs device scan --forget "$loop" >/dev/null 2>&1 || true
        losetup -d "$loop" || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
mount -t tmpfs -o mode=0755 bsg-journal-run /run
mkdir -p "$work/upper" "$work/wk"
mount -t overlay bsg-journal-dev -o "lowerdir=/dev,upperdir=$work/upper,workdir=$work/wk" /dev
. "$(dirname "$0")/by-path.sh"
BSG_BY_PATH_NS=1 bsg_by_path_ns

truncate -s 120M "$work/fs.img"
mkfs.btrfs -f "$work/fs.img" >"$work/mkfs.log" 2>&1 || fail "mkfs.btrfs"
loop=$(losetup --show -f "$work/fs.img") || { echo "SKIP: no free loop device"; exit 77; }
fsid=$(blkid -o value -s UUID "$loop")

python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
open(sys.argv[1] + ".ready", "w").close()
with open(sys.argv[2], "ab", buffering=0) as out:
    while True:
        out.write(s.recv(4096).rstrip(b"\0") + b"\n")
' "$work/log.sock" "$work/journal.txt" &
reader=$!
for _ in $(seq 50); do [ -e "$work/log.sock.ready" ] && break; sleep 0.1; done
[ -e "$work/log.sock.ready" ] || fail "the syslog reader did not start"
rm -f /dev/log
ln -s "$work/log.sock" /dev/log
: >"$work/journal.txt"

# the loop device stands in for internal storage: the configuration names it (issue 18)
printf 'trusted_disk=%s\n' "$(bsg_by_path "$loop")" >"$work/gate.conf"
export BTRFS_SCAN_GATE_CONFIG=$work/gate.conf

run() { # run NAME ENV... -- ARGS...: the helper with ENV, output in $work/NAME.{out,err}
    local name=$1 envs=()
    shift
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" "$helper" "$@" >"$work/$name.out" 2>"$work/$name.err" || true
    sleep 0.3   # the datagrams are in the socket already; let the reader write them out
}
lines() { grep -c "$1" "$work/journal.txt" || true; }

run first BTRFS_SCAN_GATE_LOG=auto -- udev "$loop"
grep -q '^BTRFS_SCAN_GATE_DECISION=scan$' "$work/first.out" || { cat "$work/first.out" "$work/first.err"; fail "expected a scan decision"; }
want="btrfs-scan-gate\[[0-9]*\]: $loop: scan (unique), fsid $fsid"
[ "$(lines "$want")" = 1 ] || { cat "$work/journal.txt"; fail "expected one decision line '$want'"; }
grep -q "^<29>.*$want" "$work/journal.txt" || { cat "$work/journal.txt"; fail "not at daemon.notice (<29>)"; }

run again -- udev "$loop"
[ "$(lines "$loop: scan")" = 1 ] || { cat "$work/journal.txt"; fail "an unchanged decision was logged again"; }

printf 'no equals sign here\n' >"$work/bad.conf"
run badconf -- --config "$work/bad.conf" udev "$loop"
grep -q "^<28>.*btrfs-scan-gate\[[0-9]*\]: $work/bad.conf:1: .*ignoring line" "$work/journal.txt" ||
    { cat "$work/journal.txt" "$work/badconf.err"; fail "the bad config line is not in the journal at daemon.warning (<28>)"; }
grep -q "$work/bad.conf:1:" "$work/badconf.err" || fail "the bad config line is no longer on stderr"

before=$(wc -l <"$work/journal.txt")
rm -rf /run/btrfs-scan-gate/logged
run quiet BTRFS_SCAN_GATE_LOG=stderr -- --config "$work/bad.conf" udev "$loop"
[ "$(wc -l <"$work/journal.txt")" = "$before" ] || { cat "$work/journal.txt"; fail "BTRFS_SCAN_GATE_LOG=stderr still logged"; }

rm -rf /run/btrfs-scan-gate/logged
run kmsg BTRFS_SCAN_GATE_LOG=kmsg -- udev "$loop"
[ "$(wc -l <"$work/journal.txt")" = "$before" ] || fail "the kmsg sink wrote to syslog"
dmesg | grep -q "btrfs-scan-gate\[[0-9]*\]: $loop: scan (unique), fsid $fsid" ||
    { dmesg | tail -n 5; fail "the decision line is not in the kernel log"; }
echo "PASS: decision logged once (daemon.notice), unchanged decision not repeated, config error logged (daemon.warning), stderr sink silent, kmsg sink in dmesg"
cat "$work/journal.txt"
