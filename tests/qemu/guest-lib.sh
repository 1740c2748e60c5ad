# Sourced by every case script inside the guest (busybox sh). See docs/CONTRACT.md.
log() { echo "guest: $*"; }
# the kernel's btrfs lines go to the console on every verdict, so a passing run shows them too
klog() { echo "---- kernel log (btrfs) ----"; dmesg | grep -i btrfs | tail -n 40; }
pass() { echo "CASE-RESULT: PASS"; klog; exit 0; }
fail() { echo "CASE-RESULT: FAIL: $*"; dmesg | tail -n 30; exit 1; }
# klog_has PATTERN WHY: the kernel log (since boot) must match the extended regex
klog_has() { dmesg | grep -Eq -- "$1" || fail "kernel log lacks /$1/: $2"; }
must() { "$@" || fail "must: $* (exit $?)"; }
must_fail() { if "$@"; then fail "must_fail: succeeded: $*"; fi; }
# superblock fsid of a device as a uuid string, read raw (bytes 32..47 of the sb at 64 KiB)
raw_fsid() {
    dd if="$1" bs=1 skip=$((65536 + 32)) count=16 2>/dev/null | od -An -tx1 | tr -d ' \n' |
        sed 's/^\(........\)\(....\)\(....\)\(....\)\(............\)$/\1-\2-\3-\4-\5/'
}
