#!/bin/bash
# Host test: the real helper against the real kernel (as root), on loop devices.
#   1. single-device clones: a 120 MiB btrfs made by mkfs.btrfs, dd-cloned; slot A and slot B
#   2. a RAID1 pair (slot A) plus a dd clone of member 1 (slot B)
#   3. `boot` on a clean kernel registry, `status`, `status --json`
# The kernel's answers are observed through what it reports: DEVICES_READY (ID_BTRFS_READY), the
# registrations it logs ("BTRFS: device fsid ... scanned by ..."), /sys/fs/btrfs/<fsid>/devices/
# and `btrfs filesystem show` of a mounted filesystem.
#
# This host kernel parses no GPT (measured: `losetup -P` on a GPT image creates no partitions) and
# runs no udevd, so the devices are whole loop devices and the partition name udev would know
# (ID_PART_ENTRY_NAME) is given both in the helper's environment, as IMPORT{program} would give it,
# and in a udev database entry under a private tmpfs /run (the helper reads the other devices' names
# from the database).
#
# env: BSG_HELPER (helper binary), BSG_HELPER_WRAPPER (command prefix, e.g. valgrind ...),
#      TMPDIR (scratch). Exit 77 (skip) only when not root or without loop support.
set -euo pipefail

helper=${BSG_HELPER:?BSG_HELPER must name the helper binary}
read -r -a wrapper <<<"${BSG_HELPER_WRAPPER:-}"

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: not root (loop devices and the real btrfs ioctls need root)"
    exit 77
fi
for tool in losetup mkfs.btrfs btrfs mount umount dmesg; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done

# A private mount namespace with a tmpfs on /run: the udev database entries this test writes for
# its loop devices (the partition names udev would have stored) and any mount stay invisible to
# the host, and vanish with the namespace.
if [ -z "${BSG_HOST_IN_NS:-}" ]; then
    command -v unshare >/dev/null || { echo "SKIP: unshare (util-linux) not installed"; exit 77; }
    BSG_HOST_IN_NS=1 exec unshare --mount --propagation private -- "$0" "$@"
fi
mount -t tmpfs -o mode=0755 bsg-host-run /run
. "$(dirname "$0")/by-path.sh"
BSG_BY_PATH_NS=1 bsg_by_path_ns
mkdir -p /run/udev/data

work=$(mktemp -d "${TMPDIR:-/var/tmp}/bsg-host.XXXXXX")
log=$work/tools.log
: >"$log"
echo "host test: scratch $work, tool output in $log"

modprobe loop >>"$log" 2>&1 || true
if [ ! -e /dev/loop-control ]; then
    echo "SKIP: no loop support (/dev/loop-control missing, modprobe loop failed)"
    rm -rf "$work"
    exit 77
fi
modprobe btrfs >>"$log" 2>&1 || true

loops=()
mnt=$work/mnt
failed=0
cleanup() {
    local rc=$?
    if mountpoint -q "$mnt" 2>/dev/null; then
        umount "$mnt" >>"$log" 2>&1 || umount -l "$mnt" >>"$log" 2>&1 || true
    fi
    for l in "${loops[@]}"; do
        btrfs device scan --forget "$l" >>"$log" 2>&1 || true
        losetup -d "$l" >>"$log" 2>&1 || true
    done
    if [ "$rc" -ne 0 ]; then
        echo "---- last tool output ($log)"
        tail -n 40 "$log" || true
        echo "host test FAILED (rc $rc); scratch kept in $work"
    else
        rm -rf "$work"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
    echo "FAIL: $*"
    failed=$((failed + 1))
}
check() { # check DESCRIPTION CMD...: records a failure when CMD fails
    local what=$1
    shift
    if "$@"; then
        echo "ok: $what"
    else
        fail "$what"
    fi
}

[ -e /dev/btrfs-control ] || { echo "FAIL: no /dev/btrfs-control after modprobe btrfs"; exit 1; }
if [ -e /sys/module/btrfs/parameters/skip_scan ]; then
    skip_scan_param=yes
else
    skip_scan_param=no
fi
temp_fsid=no
[ -e /sys/fs/btrfs/features/temp_fsid ] && temp_fsid=yes
echo "host kernel $(uname -r): skip_scan parameter: $skip_scan_param, temp_fsid: $temp_fsid"

export BTRFS_SCAN_GATE_RUNDIR=$work/run
export BTRFS_SCAN_GATE_CONFIG=$work/btrfs-scan-gate.conf
export BTRFS_SCAN_GATE_CMDLINE=$work/cmdline
mkdir -p "$BTRFS_SCAN_GATE_RUNDIR" "$mnt"
printf 'active_slot=A\nslot_suffixes=-A,-B\n' >"$BTRFS_SCAN_GATE_CONFIG"
echo "BOOT_IMAGE=/boot/vmlinuz root=PARTLABEL=rootfs-A rw" >"$BTRFS_SCAN_GATE_CMDLINE"

attach() { # attach VAR FILE: VAR=the loop device (recorded for the cleanup)
    local l
    l=$(losetup --find --show "$2")
    loops+=("$l")
    # the loop devices stand in for internal storage: the configuration names them (issue 18)
    echo "trusted_disk=$(bsg_by_path "$l")" >>"$BTRFS_SCAN_GATE_CONFIG"
    printf -v "$1" '%s' "$l"
}

# udev_db DEVNODE PARTLABEL: the udev database entry udev would have written for a partition
udev_db() {
    local maj min
    maj=$((0x$(stat -c %t "$1")))
    min=$((0x$(stat -c %T "$1")))
    printf 'E:ID_PART_ENTRY_NAME=%s\nE:ID_PART_ENTRY_SCHEME=gpt\nE:ID_FS_TYPE=btrfs\n' "$2" >"/run/udev/data/b$maj:$min"
}

# helper_udev DEVNODE PARTLABEL OUTFILE: the `udev` call with the environment udev would give it
helper_udev() {
    local dev=$1 label=$2 out=$3 name
    name=$(basename "$dev")
    local -a env=(ACTION=add SUBSYSTEM=block DEVNAME="$dev" DEVTYPE=disk
        DEVPATH="/devices/virtual/block/$name" MAJOR="$((0x$(stat -c %t "$dev")))"
        MINOR="$((0x$(stat -c %T "$dev")))" PARTNAME="$label" ID_PART_ENTRY_NAME="$label"
        ID_PART_ENTRY_SCHEME=gpt)
    while IFS= read -r kv; do
        [ -n "$kv" ] && env+=("$kv")
    done < <(blkid -p -o udev "$dev" 2>>"$log")
    local rc=0
    env "${env[@]}" "${wrapper[@]}" "$helper" udev "$dev" >"$out" 2>"$out.err" || rc=$?
    cat "$out.err" >>"$log"
    echo "udev $dev ($label): exit $rc: $(tr '\n' ' ' <"$out")"
    [ "$rc" -eq 0 ] || fail "udev $dev exited $rc"
}

val() { # val OUTFILE KEY
    sed -n "s/^$2=//p" "$1" | tail -n 1
}

expect() { # expect OUTFILE KEY VALUE
    local got
    got=$(val "$1" "$2")
    if [ "$got" = "$3" ]; then
        echo "ok: $(basename "$1"): $2=$3"
    else
        fail "$(basename "$1"): $2 is '$got', expected '$3'"
    fi
}

# A line of its own in the kernel log, and what came after it. (Not a line count: once the ring
# buffer is full, `dmesg | wc -l` stays the same and a count marks the wrong place.)
dmesg_mark() {
    local m="btrfs-scan-gate host test mark $$-$RANDOM-$(date +%s%N)"
    echo "$m" >/dev/kmsg
    echo "$m"
}
dmesg_since() { # dmesg_since MARK
    dmesg | awk -v m="$1" 'found { print } index($0, m) { found = 1 }'
}

# ---- 1. single-device clones -------------------------------------------------------------------
fsid=$(cat /proc/sys/kernel/random/uuid)
truncate -s 120M "$work/a.img"
mkfs.btrfs -f -U "$fsid" -L bsg-host "$work/a.img" >>"$log" 2>&1
dd if="$work/a.img" of="$work/b.img" bs=1M conv=sparse status=none
cmp "$work/a.img" "$work/b.img" || { echo "FAIL: the clone differs"; exit 1; }
attach A "$work/a.img"
attach B "$work/b.img"
udev_db "$A" rootfs-A
udev_db "$B" rootfs-B
btrfs device scan --forget "$A" "$B" >>"$log" 2>&1 || true
echo "== single-device clones: $A (rootfs-A) and $B (rootfs-B), fsid $fsid"

# the default clone policy (skip-all, the issue's rule): neither copy is scanned
helper_udev "$A" rootfs-A "$work/udev-a"
expect "$work/udev-a" BTRFS_SCAN_GATE_DECISION skip
expect "$work/udev-a" BTRFS_SCAN_GATE_REASON clone
expect "$work/udev-a" BTRFS_SCAN_GATE_FSID "$fsid"
expect "$work/udev-a" BTRFS_SCAN_GATE_SLOT A
expect "$work/udev-a" BTRFS_SCAN_GATE_SLOT_ACTIVE 1
expect "$work/udev-a" UDISKS_IGNORE ""

helper_udev "$B" rootfs-B "$work/udev-b"
expect "$work/udev-b" BTRFS_SCAN_GATE_DECISION skip
expect "$work/udev-b" BTRFS_SCAN_GATE_REASON clone
expect "$work/udev-b" BTRFS_SCAN_GATE_SLOT_ACTIVE 0
expect "$work/udev-b" UDISKS_IGNORE 1
if [ "$skip_scan_param" = no ] && [ "$temp_fsid" = no ]; then
    # the helper must say that this kernel cannot keep other scanners away from the clone
    check "helper reports the missing skip_scan parameter" \
        grep -qE 'skip_scan|BTRFS_SCAN_GATE_ERROR=' "$work/udev-b" "$work/udev-b.err"
elif [ "$skip_scan_param" = no ]; then
    # upstream temp-fsid (6.7+) needs no skip list: the gate stays quiet about it (issue 13 case 6)
    if grep -qE 'skip_scan|skip-scan' "$work/udev-b" "$work/udev-b.err"; then
        check "no skip_scan noise on a temp_fsid kernel" false
    fi
fi

# clone_policy=active: the active slot's copy is scanned (a real DEVICES_READY), the other not
sed -i 's/^clone_policy=.*//' "$BTRFS_SCAN_GATE_CONFIG"   # keeps the trusted_disk= lines
echo clone_policy=active >>"$BTRFS_SCAN_GATE_CONFIG"
rm -rf "$BTRFS_SCAN_GATE_RUNDIR"
mkdir -p "$BTRFS_SCAN_GATE_RUNDIR"
helper_udev "$A" rootfs-A "$work/udev-a2"
expect "$work/udev-a2" BTRFS_SCAN_GATE_DECISION scan
expect "$work/udev-a2" BTRFS_SCAN_GATE_REASON clone
expect "$work/udev-a2" ID_BTRFS_READY 1
helper_udev "$B" rootfs-B "$work/udev-b2"
expect "$work/udev-b2" BTRFS_SCAN_GATE_DECISION skip
expect "$work/udev-b2" UDISKS_IGNORE 1
check "the active copy stays registered (no forget of $A)" bash -c "! grep -q 'ACTION=.*forgot:$A' '$work/udev-b2'"

mount -t btrfs "$A" "$mnt" >>"$log" 2>&1 || fail "mount $A"
check "/sys/fs/btrfs/$fsid/devices lists $(basename "$A")" test -e "/sys/fs/btrfs/$fsid/devices/$(basename "$A")"
check "/sys/fs/btrfs/$fsid/devices does not list $(basename "$B")" \
    test ! -e "/sys/fs/btrfs/$fsid/devices/$(basename "$B")"
btrfs filesystem show "$mnt" >"$work/show-1" 2>>"$log" || fail "btrfs filesystem show $mnt"
cat "$work/show-1" >>"$log"
check "btrfs filesystem show lists $A" grep -q "path $A\$" "$work/show-1"
check "btrfs filesystem show does not list $B" bash -c "! grep -q 'path $B\$' '$work/show-1'"
umount "$mnt" >>"$log" 2>&1 || fail "umount $mnt"

# ---- 2. RAID1 pair plus a clone of member 1 ------------------------------------------------------
rfsid=$(cat /proc/sys/kernel/random/uuid)
truncate -s 256M "$work/r1.img" "$work/r2.img"
mkfs.btrfs -f -U "$rfsid" -L bsg-raid -d raid1 -m raid1 "$work/r1.img" "$work/r2.img" >>"$log" 2>&1
dd if="$work/r1.img" of="$work/r3.img" bs=1M conv=sparse status=none
attach R1 "$work/r1.img"
attach R2 "$work/r2.img"
attach R3 "$work/r3.img"
udev_db "$R1" data-A
udev_db "$R2" data-A
udev_db "$R3" data-B
btrfs device scan --forget "$R1" "$R2" "$R3" >>"$log" 2>&1 || true
echo "== RAID1 $R1 + $R2 (data-A), clone of member 1 $R3 (data-B), fsid $rfsid"
mark=$(dmesg_mark)

helper_udev "$R1" data-A "$work/udev-r1"
expect "$work/udev-r1" BTRFS_SCAN_GATE_DECISION scan
expect "$work/udev-r1" BTRFS_SCAN_GATE_DEVID 1
expect "$work/udev-r1" ID_BTRFS_READY 0
helper_udev "$R3" data-B "$work/udev-r3"
expect "$work/udev-r3" BTRFS_SCAN_GATE_DECISION skip
expect "$work/udev-r3" BTRFS_SCAN_GATE_REASON raid-clone-inactive
check "the active RAID member stays registered (no forget of $R1)" bash -c "! grep -q 'ACTION=.*forgot:$R1' '$work/udev-r3'"
helper_udev "$R2" data-A "$work/udev-r2"
expect "$work/udev-r2" BTRFS_SCAN_GATE_DECISION scan
expect "$work/udev-r2" BTRFS_SCAN_GATE_DEVID 2
expect "$work/udev-r2" ID_BTRFS_READY 1

dmesg_since "$mark" >"$work/dmesg-raid"
cat "$work/dmesg-raid" >>"$log"
# "BTRFS: device label L devid N transid T /dev/X (maj:min) scanned by COMM (PID)"; "fsid U" if no label
check "kernel registered devid 1 at $R1" grep -qE "device (fsid $rfsid|label bsg-raid) devid 1 .* $R1 " "$work/dmesg-raid"
check "kernel registered devid 2 at $R2" grep -qE "device (fsid $rfsid|label bsg-raid) devid 2 .* $R2 " "$work/dmesg-raid"
check "kernel never saw $R3" bash -c "! grep -qE '$R3( |\$)' '$work/dmesg-raid'"

mount -t btrfs "$R1" "$mnt" >>"$log" 2>&1 || fail "mount $R1"
for l in "$R1" "$R2"; do
    check "/sys/fs/btrfs/$rfsid/devices lists $(basename "$l")" test -e "/sys/fs/btrfs/$rfsid/devices/$(basename "$l")"
done
check "/sys/fs/btrfs/$rfsid/devices does not list $(basename "$R3")" \
    test ! -e "/sys/fs/btrfs/$rfsid/devices/$(basename "$R3")"
btrfs filesystem show "$mnt" >"$work/show-2" 2>>"$log" || fail "btrfs filesystem show $mnt"
cat "$work/show-2" >>"$log"
check "btrfs filesystem show lists $R1" grep -q "path $R1\$" "$work/show-2"
check "btrfs filesystem show lists $R2" grep -q "path $R2\$" "$work/show-2"
check "btrfs filesystem show does not list $R3" bash -c "! grep -q 'path $R3\$' '$work/show-2'"
umount "$mnt" >>"$log" 2>&1 || fail "umount $mnt"

# ---- 3. boot, status -----------------------------------------------------------------------------
btrfs device scan --forget "${loops[@]}" >>"$log" 2>&1 || true
rm -rf "$BTRFS_SCAN_GATE_RUNDIR"
mkdir -p "$BTRFS_SCAN_GATE_RUNDIR"
rc=0
"${wrapper[@]}" "$helper" boot >"$work/boot" 2>"$work/boot.err" || rc=$?
cat "$work/boot" "$work/boot.err" >>"$log"
echo "boot: exit $rc"
check "boot exits 0" test "$rc" -eq 0

rc=0
"${wrapper[@]}" "$helper" status >"$work/status" 2>"$work/status.err" || rc=$?
cat "$work/status" "$work/status.err" >>"$log"
echo "status: exit $rc"
check "status exits 0" test "$rc" -eq 0
check "status mentions skip_scan" grep -q skip_scan "$work/status"
if [ "$temp_fsid" = yes ]; then
    check "status mentions temp_fsid" grep -q temp_fsid "$work/status"
fi

rc=0
"${wrapper[@]}" "$helper" status --json >"$work/status.json" 2>"$work/status-json.err" || rc=$?
cat "$work/status.json" "$work/status-json.err" >>"$log"
check "status --json exits 0" test "$rc" -eq 0
if command -v python3 >/dev/null; then
    check "status --json is JSON" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/status.json"
fi

# the run dir seam held: the host's own run dir was not created by this test

for f in "$work"/*.err; do
    if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f"; then
        fail "sanitizer report in $(basename "$f")"
        cat "$f"
    fi
done

if [ "$failed" -ne 0 ]; then
    echo "host test: $failed check(s) failed"
    exit 1
fi
echo "host test: all checks passed"
