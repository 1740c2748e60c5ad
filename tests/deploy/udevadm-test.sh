#!/bin/bash
# `udevadm test` of the gate's rules against real loop devices that carry a cloned btrfs image.
# Usage: udevadm-test.sh stub|helper STATE_DIR TEST_RULES_DIR [HELPER]
# STATE_DIR is where helper-wrapper.sh (which the test rules call) logs and finds its target.
# The rules are shown to udevadm through a tmpfs over /etc/udev/rules.d in a private mount
# namespace (systemd 252's `udevadm test` has no rules-directory option). `udevadm test` also writes
# the udev db (/run/udev) and creates the /dev/disk links for real, so /run gets a tmpfs and /dev an
# overlay there too: the host's /etc, /run and /dev are never changed. IMPORT{program} runs for
# real under `udevadm test`; RUN+= is only listed. Checked: the helper is called and the builtin
# `btrfs ready` is not (it is with the stock rules), the imported KEY=VALUE lines, the db entries
# (L: link priority, E:UDISKS_IGNORE=1), the links in both event orders, and (stub) a waiting
# device being asked again on the re-trigger's change event.
set -euo pipefail
mode=$1 state=$2 rules=$3 helper=${4:-}
here=$(cd "$(dirname "$0")" && pwd)

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (loop devices, mount namespace)"
for t in losetup mkfs.btrfs udevadm unshare btrfs; do
    command -v "$t" >/dev/null || skip "$t not installed"
done
[ -e /dev/loop-control ] || skip "no /dev/loop-control"
grep -qw btrfs /proc/filesystems || modprobe btrfs >>"$state/modprobe.log" 2>&1 || skip "no btrfs in this kernel"

rm -rf "$state/run" "$state/calls.log" "$state/ab" "$state/ba" "$state/stock" "$state/wait"
mkdir -p "$state/run"
work=$(mktemp -d "$state/work.XXXXXX")
loops=()
cleanup() {
    local l
    for l in "${loops[@]}"; do
        btrfs device scan --forget "$l" >>"$state/cleanup.log" 2>&1 || true
        losetup -d "$l" >>"$state/cleanup.log" 2>&1 || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

# slot A: a fresh 120 MiB btrfs; slot B: its byte-identical clone (same fsid, devid, generation)
truncate -s 120M "$work/a.img"
mkfs.btrfs -f -L bsgtest "$work/a.img" >"$state/mkfs.log" 2>&1 || fail "mkfs.btrfs, see $state/mkfs.log"
dd if="$work/a.img" of="$work/b.img" bs=1M conv=sparse status=none
a=$(losetup --show -f "$work/a.img") || skip "losetup failed (no free loop device?)"
loops+=("$a")
b=$(losetup --show -f "$work/b.img") || skip "losetup failed (no free loop device?)"
loops+=("$b")
# issue 18 case 4: untrusted storage (a loop device the configuration does not name) carrying another
# filesystem with the slots' label and partition name: it must take none of their links
truncate -s 32M "$work/c.img"
mkfs.ext4 -q -F -L bsgtest "$work/c.img" >>"$state/mkfs.log" 2>&1 || fail "mkfs.ext4, see $state/mkfs.log"
c=$(losetup --show -f "$work/c.img") || skip "losetup failed (no free loop device?)"
loops+=("$c")
echo "slot A: $a, slot B (clone): $b, untrusted ext4 named like B: $c"

# loop devices have no partition table here: a test-only rule gives them partition labels, as
# 60-persistent-storage.rules would for GPT partitions (the helper reads ID_PART_ENTRY_NAME)
mkdir -p "$state/rules-extra"
printf 'KERNEL=="%s", ENV{ID_PART_ENTRY_NAME}="bsgtest-A"\nKERNEL=="%s", ENV{ID_PART_ENTRY_NAME}="bsgtest-B"\nKERNEL=="%s", ENV{ID_PART_ENTRY_NAME}="bsgtest-B"\n' \
    "$(basename "$a")" "$(basename "$b")" "$(basename "$c")" > "$state/rules-extra/63-bsgtest-partlabel.rules"

case $mode in
stub)
    printf '%s scan A bsgtest 1 1\n%s skip B bsgtest 0 0\n%s withheld\n' "$a" "$b" "$c" > "$state/table"
    printf 'target="%s %s"\n' "$here/stub-helper.sh" "$state/table" > "$state/target.sh"
    ;;
helper)
    [ -x "$helper" ] || fail "helper $helper not built"
    printf 'target="%s"\n' "$helper" > "$state/target.sh"
    # the slots' loop devices stand in for internal storage: the configuration names them ($c not)
    printf 'active_slot=A\nslot_suffixes=-A,-B\nclone_policy=active\ntrusted_disk=/dev/disk/by-path/bsgtest-%s\ntrusted_disk=/dev/disk/by-path/bsgtest-%s\n' \
        "$(basename "$a")" "$(basename "$b")" \
        > "$state/btrfs-scan-gate.conf"
    ;;
*) fail "unknown mode $mode" ;;
esac

# in_private_udev RULES_DIR OUTDIR DEV...: `udevadm test` of each DEV in turn (change:DEV: a
# change event, logs named <dev>.change.*), in one private mount
# namespace: tmpfs over /run (udev's db and link stacks), an overlay over /dev (the links udevadm
# creates), RULES_DIR's files and the test-only partition-label rule over /etc/udev/rules.d
# (RULES_DIR empty: the stock rules alone). Per device it
# leaves OUTDIR/<dev>.udevadm.log and OUTDIR/<dev>.db (the udev db entry), and OUTDIR/links.
in_private_udev() {
    local rules=$1 out=$2
    shift 2
    mkdir -p "$out"
    # shellcheck disable=SC2016 # the inner script expands its own arguments
    unshare -m /bin/sh -c '
        set -e
        rules=$1 out=$2 extra=$3
        shift 3
        mount --make-rprivate /
        mount -t tmpfs -o mode=0755 bsg-run /run
        mkdir -p /run/bsg-dev/upper /run/bsg-dev/work
        mount -t overlay bsg-dev -o lowerdir=/dev,upperdir=/run/bsg-dev/upper,workdir=/run/bsg-dev/work /dev
        mount -t tmpfs -o mode=0755 bsg-rules /etc/udev/rules.d
        if [ -n "$rules" ]; then cp "$rules"/*.rules "$extra"/*.rules /etc/udev/rules.d/; fi
        # trusted_disk= takes by-path names only; udev makes none for a loop device
        mkdir -p /dev/disk/by-path
        for dev in "$@"; do name=${dev#*:}; name=${name#/dev/}; ln -sfn "/dev/$name" "/dev/disk/by-path/bsgtest-$name"; done
        for dev in "$@"; do
            action=add
            case $dev in change:* | remove:*) action=${dev%%:*} dev=${dev#*:} ;; esac
            name=${dev#/dev/}
            log=$out/$name.udevadm.log db=$out/$name.db
            if [ "$action" != add ]; then log=$out/$name.$action.udevadm.log db=$out/$name.$action.db; fi
            udevadm test --action="$action" "/sys/class/block/$name" >"$log" 2>&1 ||
                { echo "udevadm test $dev failed, see $log"; exit 1; }
            cat "/run/udev/data/b$(cat "/sys/class/block/$name/dev")" >"$db" 2>/dev/null || [ "$action" = remove ]
        done
        for l in /dev/disk/by-uuid/* /dev/disk/by-label/* /dev/disk/by-slot/*/*; do
            if [ -L "$l" ]; then echo "$l -> $(readlink -f "$l")"; fi
        done >"$out/links"
        exit 0
    ' sh "$rules" "$out" "$state/rules-extra" "$@" >"$out/ns.log" 2>&1 || { cat "$out/ns.log"; fail "private udev run failed"; }
}

an=$(basename "$a") bn=$(basename "$b") cn=$(basename "$c")
in_private_udev "$rules" "$state/ab" "$a" "$b" "$c" "remove:$c"
in_private_udev "$rules" "$state/ba" "$c" "$b" "$a"
# the contrast: the stock rules do run the builtin (so the check below can see it)
in_private_udev "" "$state/stock" "$a"

la=$state/ab/$an.udevadm.log lb=$state/ab/$bn.udevadm.log
# the remove event of a device that is not btrfs (or whose reads stall: udev could not probe it)
# runs the helper too, so that an inventory record of it goes with it
grep -q "^run: '.*helper-wrapper.sh udev /dev/$cn'" "$state/ab/$cn.remove.udevadm.log" ||
    fail "the remove event of $c (ext4) does not run the helper: see $state/ab/$cn.remove.udevadm.log"
builtin_re="builtin.*'btrfs ready"
grep -q "$builtin_re" "$state/stock/$an.udevadm.log" ||
    fail "the stock rules' builtin call is not visible in $state/stock/$an.udevadm.log: check broken"
for log in "$la" "$lb" "$state/ba/$an.udevadm.log" "$state/ba/$bn.udevadm.log"; do
    grep -q '/etc/udev/rules.d/64-btrfs.rules' "$log" || fail "$log: the gate's rules were not read"
    if grep -n "$builtin_re" "$log"; then fail "$log: the builtin 'btrfs ready' ran"; fi
    grep -q "64-btrfs.rules:[0-9]* Importing properties from results of '.*helper-wrapper.sh udev /dev/" "$log" ||
        fail "$log: the rules did not import the helper's output"
    grep -q "^BTRFS_SCAN_GATE_DECISION=" "$log" || fail "$log: no BTRFS_SCAN_GATE_DECISION imported"
    grep -q "^ID_BTRFS_READY=" "$log" || fail "$log: no ID_BTRFS_READY imported"
done
grep -qx "called: udev $a" "$state/calls.log" || fail "helper not called for $a (calls.log)"
grep -qx "called: udev $b" "$state/calls.log" || fail "helper not called for $b (calls.log)"

expect() { grep -q -- "$2" "$1" || fail "$1: expected '$2'"; }
expect_not() { if grep -n -- "$2" "$1"; then fail "$1: unexpected '$2'"; fi; }
fsid=$(sed -n 's/^BTRFS_SCAN_GATE_FSID=//p' "$la")
[ -n "$fsid" ] || fail "no fsid"
for order in ab ba; do
    da=$state/$order/$an.db db=$state/$order/$bn.db links=$state/$order/links
    cat "$links"
    # in the udev db, where udisks and systemd read them
    expect "$da" '^E:BTRFS_SCAN_GATE_DECISION=scan$'
    expect "$da" '^L:20$'
    expect_not "$da" '^E:UDISKS_IGNORE='
    expect "$db" '^E:BTRFS_SCAN_GATE_DECISION=skip$'
    expect "$db" '^E:UDISKS_IGNORE=1$'
    # trusted storage is never below 0: the inactive slot still wins over untrusted storage
    expect "$db" '^L:10$'
    # untrusted storage without btrfs: asked (trust); a link priority does not withhold (none set)
    dc=$state/$order/$cn.db
    expect "$dc" '^E:BTRFS_SCAN_GATE_TRUSTED=0$'
    expect_not "$dc" '^L:-100$'
    expect "$state/$order/$cn.udevadm.log" "Importing properties from results of '.*helper-wrapper.sh trust $c'"
    # a skipped clone keeps SYSTEMD_READY
    expect_not "$db" '^E:SYSTEMD_READY=0$'
    # stable names, whichever device udev saw first
    expect "$links" "^/dev/disk/by-uuid/$fsid -> $a\$"
    expect "$links" "^/dev/disk/by-label/bsgtest -> $a\$"
    expect "$links" "^/dev/disk/by-slot/active/bsgtest -> $a\$"
    expect "$links" "^/dev/disk/by-slot/other/bsgtest -> $b\$"
    expect_not "$links" "by-label/bsgtest -> $c\$"
done
# it carries the label and partition name of trusted storage (in the order where the trusted devices
# are in udev's database first; the stub says so in both): withheld, not only hidden from udisks: not
# ready, and none of the links 60-persistent-storage.rules gave it (SYMLINK= drops them)
orders=ab
if [ "$mode" = stub ]; then orders="ab ba"; fi
for order in $orders; do
    dc=$state/$order/$cn.db
    expect "$dc" '^E:BTRFS_SCAN_GATE_WITHHELD=1$'
    expect "$dc" '^E:UDISKS_IGNORE=1$'
    expect "$dc" '^E:SYSTEMD_READY=0$'
    expect_not "$dc" '^S:disk/by-label/'
    expect_not "$dc" '^S:disk/by-uuid/'
    expect_not "$dc" '^S:disk/by-partlabel/'
    expect_not "$state/$order/links" " -> $c\$"
done
# the contrast: the stock rules give the same device its by-label link
in_private_udev "" "$state/stock-c" "$c"
expect "$state/stock-c/$cn.db" '^S:disk/by-label/bsgtest$'
# the scanned, complete device re-triggers waiting ones; the skipped clone triggers nothing
expect "$la" "^run: '/bin/udevadm trigger -s block -p ID_BTRFS_READY=0'"
expect_not "$lb" "trigger -s block"
# SteamOS (issue 20 item 3): its generated /run/udev/rules.d/90-steamos-partsets-<set>.rules run
# after the gate's 64- rules and set UDISKS_IGNORE="0" by PARTUUID, which a dd copy of a slot
# carries too. Rule files of that shape (one line per partition of the set), both loop devices
# with slot A's PARTUUID (B as the copy): the skipped copy must keep UDISKS_IGNORE=1 - through the
# gate's 99-btrfs-scan-gate-late.rules; without it (the contrast) SteamOS's 0 would win.
partuuid=5eed5eed-0000-4000-8000-00000000000a
printf 'KERNEL=="%s|%s", ENV{ID_PART_ENTRY_SCHEME}="gpt", ENV{ID_PART_ENTRY_UUID}="%s"\n' "$an" "$bn" "$partuuid" \
    >"$state/rules-extra/63-bsgtest-partuuid.rules"
printf 'ENV{ID_PART_ENTRY_SCHEME}=="gpt", ENV{ID_PART_ENTRY_UUID}=="%s", SYMLINK+="disk/by-partsets/A/rootfs", ENV{UDISKS_IGNORE}="0"\n' \
    "$partuuid" >"$state/rules-extra/90-steamos-partsets-A.rules"
rm -rf "$state/rules-nolate" "$state/steamos" "$state/steamos-nolate"
mkdir -p "$state/rules-nolate"
cp "$rules"/*.rules "$state/rules-nolate/"
rm "$state/rules-nolate/99-btrfs-scan-gate-late.rules"
[ -e "$rules/99-btrfs-scan-gate-late.rules" ] || fail "$rules has no 99-btrfs-scan-gate-late.rules"
in_private_udev "$rules" "$state/steamos" "$a" "$b"
in_private_udev "$state/rules-nolate" "$state/steamos-nolate" "$a" "$b"
rm "$state/rules-extra/63-bsgtest-partuuid.rules" "$state/rules-extra/90-steamos-partsets-A.rules"
grep -q '90-steamos-partsets-A.rules' "$state/steamos/$bn.udevadm.log" || fail "the SteamOS-shaped rule was not read"
expect "$state/steamos-nolate/$bn.db" '^E:UDISKS_IGNORE=0$' # the contrast: SteamOS's rule undoes the gate's 1
expect "$state/steamos/$bn.db" '^E:BTRFS_SCAN_GATE_DECISION=skip$'
expect "$state/steamos/$bn.db" '^E:UDISKS_IGNORE=1$'
expect "$state/steamos/$an.db" '^E:UDISKS_IGNORE=0$' # a device the gate trusts keeps SteamOS's value
expect "$state/steamos/$bn.db" '^L:10$'            # and the copy loses the partset link to slot A (20)
expect "$state/steamos/$an.db" '^L:20$'

if [ "$mode" = stub ]; then
    # a scanned device of an incomplete multi-device fs waits (SYSTEMD_READY=0), and the change event
    # that re-trigger sends asks the helper again: SYSTEMD_READY=0 from the db does not reach the
    # rules' guard (systemd 252 starts each event from the uevent's properties)
    printf '%s scan A bsgtest 1 0\n' "$a" > "$state/table"
    : > "$state/calls.log"
    in_private_udev "$rules" "$state/wait" "$a" "change:$a"
    expect "$state/wait/$an.db" '^E:SYSTEMD_READY=0$'
    expect_not "$state/wait/$an.udevadm.log" "^run: .*trigger -s block"
    expect "$state/wait/$an.change.udevadm.log" "Importing properties from results of '.*helper-wrapper.sh udev $a'"
    [ "$(grep -c "called: udev $a" "$state/calls.log")" -eq 2 ] || fail "helper not asked again on change"
    expect "$state/wait/$an.change.db" '^E:SYSTEMD_READY=0$'
    # a device the helper could not read in time (in doubt) may carry whatever udev's own probe saw:
    # withheld unless trusted (not ready, no shared link); trusted storage in doubt keeps its links
    for t in 0 1; do
        printf '%s skip - - - - in-doubt %s\n' "$b" "$t" > "$state/table"
        in_private_udev "$rules" "$state/doubt$t" "$b"
    done
    expect "$state/doubt0/$bn.db" '^E:SYSTEMD_READY=0$'
    expect_not "$state/doubt0/$bn.db" '^S:disk/by-label/'
    expect_not "$state/doubt0/$bn.db" '^S:disk/by-uuid/'
    expect "$state/doubt1/$bn.db" '^S:disk/by-label/bsgtest$'
    expect_not "$state/doubt1/$bn.db" '^E:SYSTEMD_READY=0$'
fi

grep -H '^BTRFS_SCAN_GATE_\|^ID_BTRFS_READY\|^UDISKS_IGNORE\|^DEVLINKS\|^SYSTEMD_READY' "$la" "$lb"
echo "PASS"
