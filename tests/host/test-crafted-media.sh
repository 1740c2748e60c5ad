#!/bin/bash
# Host test of issue 10's crafted-media cases on real loop devices and the host kernel (root):
#   same-storage (item 8, issue 11 item 6): two loop devices over ONE image file are two names of
#     one storage, not a clone pair: the second name is `skip same-storage` (listed, never scanned,
#     UDISKS_IGNORE=1, no slot), the first stays scannable (`unique`), never both offered as clones.
#     The same file behind two loop devices at different offsets stays a clone pair.
#   fake multi-device copy (item 1): `mkfs.btrfs -U <fsid of the clones> f1 f2` beside a clone
#     pair: every copy of the fsid is `skip inconsistent-copies`, f2 is no longer `scan multi-device`.
#   invalid superblock (item 3): one flipped checksum byte: `skip invalid-superblock`, in skip_scan.
# Everything runs with --dry-run (no ioctl, no skip list written, no state), so the host's kernel
# registry is not touched. Decisions are read from `boot --dry-run -v` ("DEVNODE DECISION REASON"
# lines and "skip_scan=...") and `udev --dry-run DEVNODE` (KEY=VALUE).
# env: BSG_HELPER (helper binary), BSG_HELPER_WRAPPER (command prefix, e.g. valgrind ...), TMPDIR.
set -euo pipefail
. "$(dirname "$0")/by-path.sh"
bsg_by_path_ns "$@"

helper=${BSG_HELPER:?BSG_HELPER must name the helper binary}
read -r -a wrapper <<<"${BSG_HELPER_WRAPPER:-}"

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: not root (loop devices need root)"
    exit 77
fi
for tool in losetup mkfs.btrfs btrfs dd; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
modprobe loop >/dev/null 2>&1 || true
[ -e /dev/loop-control ] || { echo "SKIP: no loop support (/dev/loop-control missing)"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/bsg-crafted.XXXXXX")
log=$work/tools.log
: >"$log"
echo "crafted-media test: scratch $work, tool output in $log"
failed=0
cleanup() {
    local rc=$? l
    [ -n "${dm_name:-}" ] && dmsetup remove "$dm_name" >>"$log" 2>&1
    # every loop device this test attached (attach() runs in $(...), so a file, not an array)
    for l in $(cat "$work/loops" 2>/dev/null); do
        losetup -d "$l" >>"$log" 2>&1 || true
    done
    if [ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "scratch kept: $work"; fi
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; failed=1; }
attach() { # attach FILE [OFFSET] -> prints the loop device
    local l
    l=$(losetup --show -f ${2:+--offset "$2"} "$1") || { echo "SKIP: losetup failed (no free loop device?)" >&2; exit 77; }
    echo "$l" >>"$work/loops"
    # the loop devices stand in for internal storage: the configuration names them (issue 18)
    echo "trusted_disk=$(bsg_by_path "$l")" >>"$work/gate.conf"
    echo "$l"
}

# a private config and run directory: the host's /etc/btrfs-scan-gate.conf does not count
printf 'clone_policy=skip-all\n' >"$work/gate.conf"
export BTRFS_SCAN_GATE_CONFIG=$work/gate.conf BTRFS_SCAN_GATE_RUNDIR=$work/run
# the boot names no disk here (not the host's: its command line and EFI variables would anchor trust
# on the host's disk, and the cases below are about the fallback)
printf 'BOOT_IMAGE=/vmlinuz root=UUID=00000000-0000-0000-0000-000000000000 ro\n' >"$work/cmdline"
mkdir -p "$work/efivars"
export BTRFS_SCAN_GATE_CMDLINE=$work/cmdline BTRFS_SCAN_GATE_EFIVARS=$work/efivars
mkdir -p "$work/run"

boot_dry() { # boot_dry OUT: the decisions of every device
    "${wrapper[@]}" "$helper" --dry-run -v boot >"$1" 2>"$1.err" || { cat "$1.err"; fail "boot --dry-run failed"; }
}
verdict() { # verdict OUT DEVNODE -> "DECISION REASON"
    awk -v d="$2" '$1 == d { print $2, $3 }' "$1"
}
expect_verdict() { # expect_verdict OUT DEVNODE "DECISION REASON" WHY
    local got
    got=$(verdict "$1" "$2")
    if [ "$got" = "$3" ]; then echo "ok: $2 $got ($4)"; else fail "$2: '$got', expected '$3' ($4)"; fi
}
skip_list() { sed -n 's/^skip_scan=//p' "$1"; }
listed() { # listed OUT DEVNODE: is DEVNODE in the skip list (itself, or its whole disk starred)
    case ",$(skip_list "$1")," in *",$2,"* | *",$2*,"*) return 0 ;; esac
    return 1
}

truncate -s 120M "$work/fs.img"
mkfs.btrfs -f -L crafted "$work/fs.img" >>"$log" 2>&1 || { echo "FAIL: mkfs.btrfs"; exit 1; }
fsid=$(btrfs inspect-internal dump-super "$work/fs.img" | awk '$1 == "fsid" { print $2 }')
[ -n "$fsid" ] || { echo "FAIL: no fsid"; exit 1; }
# the fake two-device copy, made on files before any device carries the fsid (mkfs.btrfs -U refuses
# an fsid that blkid finds on a block device); a private blkid cache
truncate -s 120M "$work/f1.img" "$work/f2.img"
BLKID_FILE=$work/blkid.tab mkfs.btrfs -f -U "$fsid" -d single -m single "$work/f1.img" "$work/f2.img" >>"$log" 2>&1 ||
    { echo "FAIL: mkfs.btrfs -U, see $log"; exit 1; }

# --- same storage: two loop devices over one file ------------------------------------------------
s1=$(attach "$work/fs.img")
s2=$(attach "$work/fs.img")
boot_dry "$work/same.out"
first=$s1 second=$s2
[[ "$s2" < "$s1" ]] && first=$s2 second=$s1
expect_verdict "$work/same.out" "$first" "scan unique" "first name of one storage"
expect_verdict "$work/same.out" "$second" "skip same-storage" "second name of one storage"
listed "$work/same.out" "$second" || fail "$second not in the skip list: $(skip_list "$work/same.out")"
! listed "$work/same.out" "$first" || fail "$first is in the skip list: $(skip_list "$work/same.out")"
DEVNAME=$second ID_PART_ENTRY_NAME=crafted-B "${wrapper[@]}" "$helper" --dry-run udev "$second" \
    >"$work/same-udev.out" 2>"$work/same-udev.err" || fail "udev --dry-run $second failed"
for want in BTRFS_SCAN_GATE_DECISION=skip BTRFS_SCAN_GATE_REASON=same-storage UDISKS_IGNORE=1 BTRFS_SCAN_GATE_SLOT=; do
    grep -qx "$want" "$work/same-udev.out" || fail "udev $second: no '$want' in $(tr '\n' ' ' <"$work/same-udev.out")"
done
if grep -q '^BTRFS_SCAN_GATE_SLOT_ACTIVE=' "$work/same-udev.out"; then fail "udev $second: a slot for a second name"; fi
# the same file at another offset is other storage: the two are a real clone pair
dd if="$work/fs.img" of="$work/shifted.img" bs=1M seek=1 conv=sparse status=none
o1=$(attach "$work/shifted.img" 1048576)
losetup -d "$s2" >>"$log" 2>&1
boot_dry "$work/offset.out"
expect_verdict "$work/offset.out" "$s1" "skip clone" "a copy of the image in another file, at offset 1 MiB"
expect_verdict "$work/offset.out" "$o1" "skip clone" "the copy at offset 1 MiB is a clone"
losetup -d "$o1" >>"$log" 2>&1

# --- a fake multi-device copy beside a clone pair ----------------------------------------------
cp --sparse=always "$work/fs.img" "$work/clone.img"
c2=$(attach "$work/clone.img")
f1=$(attach "$work/f1.img")
f2=$(attach "$work/f2.img")
boot_dry "$work/fake.out"
for d in "$s1" "$c2" "$f1" "$f2"; do
    expect_verdict "$work/fake.out" "$d" "skip inconsistent-copies" "fake multi-device copy of $fsid present"
    listed "$work/fake.out" "$d" || fail "$d not in the skip list: $(skip_list "$work/fake.out")"
done
losetup -d "$f1" "$f2" >>"$log" 2>&1

# --- one flipped checksum byte ------------------------------------------------------------------
cp --sparse=always "$work/fs.img" "$work/bad.img"
printf '\xff' | dd of="$work/bad.img" bs=1 seek=65536 conv=notrunc status=none
bad=$(attach "$work/bad.img")
boot_dry "$work/bad.out"
expect_verdict "$work/bad.out" "$bad" "skip invalid-superblock" "btrfs magic, checksum broken"
listed "$work/bad.out" "$bad" || fail "$bad not in the skip list: $(skip_list "$work/bad.out")"

# --- a loop device the configuration does not name is untrusted storage; trust arbitrates
# collisions only, so a filesystem nothing else carries is scanned on it as with systemd's rules
# (before: `skip untrusted`, so a USB RAID enclosure or a second disk assembled nowhere)
truncate -s 120M "$work/u.img"
mkfs.btrfs -f -L untrusted-B "$work/u.img" >>"$log" 2>&1 || { echo "FAIL: mkfs.btrfs"; exit 1; }
u1=$(attach "$work/u.img")
printf 'clone_policy=skip-all\nactive_slot=B\n' >"$work/gate.conf" # names no disk
boot_dry "$work/untrusted.out"
expect_verdict "$work/untrusted.out" "$u1" "scan unique" "a loop device no trusted_disk= names, colliding with nothing"
listed "$work/untrusted.out" "$u1" && fail "$u1 in the skip list: $(skip_list "$work/untrusted.out")"
"${wrapper[@]}" "$helper" -v status >"$work/untrusted-status.out" 2>&1 || fail "status failed"
grep -q "^trust: $u1 untrusted (virtual device" "$work/untrusted-status.out" ||
    fail "status -v does not say why $u1 is untrusted: $(grep '^trust' "$work/untrusted-status.out" | head -3)"
grep -q "^trust: from the fallback (the boot names no disk.*): 0 disk(s) named by trusted_disk=" "$work/untrusted-status.out" ||
    fail "status -v does not say that trust came from the fallback"
DEVNAME=$u1 ID_PART_ENTRY_NAME=rootfs-B "${wrapper[@]}" "$helper" --dry-run udev "$u1" \
    >"$work/untrusted-udev.out" 2>"$work/untrusted-udev.err" || fail "udev --dry-run $u1 failed"
for want in BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_TRUSTED=0 BTRFS_SCAN_GATE_SLOT=; do
    grep -qx "$want" "$work/untrusted-udev.out" || fail "udev $u1: no '$want' in $(tr '\n' ' ' <"$work/untrusted-udev.out")"
done
# named, the same device is trusted: a unique filesystem, scanned
printf 'clone_policy=skip-all\ntrusted_disk=%s\n' "$(bsg_by_path "$u1")" >"$work/gate.conf"
boot_dry "$work/named.out"
expect_verdict "$work/named.out" "$u1" "scan unique" "the same loop device named by trusted_disk="
# a dm device is trusted only over trusted storage (its slaves), and its slave is its member
if command -v dmsetup >/dev/null && dmsetup version >>"$log" 2>&1; then
    dm_name=bsg-crafted-$$
    if dmsetup create "$dm_name" --table "0 $(blockdev --getsz "$u1") linear $u1 0" >>"$log" 2>&1; then
        dm=$(readlink -f "/dev/mapper/$dm_name")
        boot_dry "$work/dm-named.out"
        expect_verdict "$work/dm-named.out" "$dm" "scan unique" "dm-linear over a named loop device"
        printf 'clone_policy=skip-all\n' >"$work/gate.conf"
        boot_dry "$work/dm-untrusted.out"
        expect_verdict "$work/dm-untrusted.out" "$dm" "scan unique" "dm-linear over an unnamed loop device, colliding with nothing"
        dmsetup remove "$dm_name" >>"$log" 2>&1 && dm_name=
    else
        echo "note: dmsetup create failed (no device-mapper here?): the dm part was not run"
    fi
else
    echo "note: no dmsetup: the dm part was not run"
fi

# a byte copy of the named device on a device nobody names: the higher rank takes part, the copy is
# withheld (`skip outranked`, listed), whatever the order
cp --sparse=always "$work/u.img" "$work/u2.img"
u2=$(attach "$work/u2.img")
printf 'clone_policy=skip-all\ntrusted_disk=%s\n' "$(bsg_by_path "$u1")" >"$work/gate.conf"
boot_dry "$work/outranked.out"
expect_verdict "$work/outranked.out" "$u1" "scan unique" "the named loop device beside an untrusted copy"
expect_verdict "$work/outranked.out" "$u2" "skip outranked" "an untrusted copy of a named loop device"
listed "$work/outranked.out" "$u2" || fail "$u2 not in the skip list: $(skip_list "$work/outranked.out")"

if [ "$failed" -ne 0 ]; then exit 1; fi
echo "PASS"
