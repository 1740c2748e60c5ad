#!/bin/bash
# Host test (issue 10 item 5, issue 9's reads): the check after a scan reads the superblock the kernel
# read, not the device a second time.
#
# A two-faced device: loop device L over copy B of member 1 of a two-device btrfs (generation g+1),
# and every read the helper sends to L answered with copy A (generation g) by the fault shim
# (tests/badinput/shim.c, BSG_SHIM_FACE_PATH/FILE). The helper decides from A; the kernel's scan
# reads B. The check after the ioctl reads, with RWF_NOWAIT through a descriptor held across the
# ioctl, the page the kernel read (B): it must say so and forget L again (BTRFS_SCAN_GATE_ERROR has
# kernel-read-differs). A check that reads the device again gets A from the shim, as a hostile
# device would answer, and leaves B registered: that is what it did before. (What the forget does to
# the registry is unit/executor's: this host's kernel answers BTRFS_IOC_FORGET_DEV with 0 whether or
# not the device was registered, so the registry cannot be probed here.)
# Issue 18 case 7: the check compares the whole block: a second face that differs from B only in its
# label (fsid, devid and generation equal) is kernel-read-differs too (before, it was scanned); and a
# page no longer cached (RWF_NOWAIT answers EAGAIN, injected by the shim) is a difference, never a
# second read of the device (before, it read the device again and scanned).
# Control: the same device without the second face is scanned, with no error.
#
# env: BSG_HELPER (helper with test seams), BSG_HELPER_WRAPPER (command prefix, e.g. valgrind ...),
#      BSG_SHIM (badinput-shim.so), TMPDIR. Exit 77 (skip) only when not root or without loop devices.
set -euo pipefail
. "$(dirname "$0")/by-path.sh"
bsg_by_path_ns "$@"

helper=${BSG_HELPER:?BSG_HELPER must name the helper binary}
shim=${BSG_SHIM:?BSG_SHIM must name badinput-shim.so}
read -r -a wrapper <<<"${BSG_HELPER_WRAPPER:-}"

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: not root (loop devices and the real btrfs ioctls need root)"
    exit 77
fi
for tool in losetup mkfs.btrfs btrfs python3; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool not installed (scripts/setup.sh installs it)"; exit 1; }
done
modprobe loop >/dev/null 2>&1 || true
modprobe btrfs >/dev/null 2>&1 || true
if [ ! -e /dev/loop-control ] || [ ! -e /dev/btrfs-control ]; then
    echo "SKIP: no loop support or no btrfs (/dev/loop-control, /dev/btrfs-control)"
    exit 77
fi

work=$(mktemp -d "${TMPDIR:-/var/tmp}/bsg-readcheck.XXXXXX")
log=$work/tools.log
: >"$log"
echo "kernel-read-check: scratch $work, tool output in $log"
loop=
cleanup() {
    local rc=$?
    if [ -n "$loop" ]; then
        btrfs device scan --forget "$loop" >>"$log" 2>&1 || true
        losetup -d "$loop" >>"$log" 2>&1 || true
    fi
    [ "$rc" -ne 0 ] && { echo "--- $log"; tail -n 30 "$log"; }
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT

truncate -s 128M "$work/a1.img" "$work/a2.img"
mkfs.btrfs -q -f -m raid1 -d raid1 "$work/a1.img" "$work/a2.img" >>"$log" 2>&1
# B: member 1 with its superblock's generation moved on (checksum recomputed); A stays as made
python3 - "$work/a1.img" "$work/b1.img" <<'EOF'
import shutil, struct, sys
src, dst = sys.argv[1], sys.argv[2]
shutil.copyfile(src, dst)
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF
with open(dst, "r+b") as f:
    f.seek(65536)
    sb = bytearray(f.read(4096))
    gen = struct.unpack_from("<Q", sb, 0x48)[0]
    struct.pack_into("<Q", sb, 0x48, gen + 1)
    struct.pack_into("<I", sb, 0, crc32c(bytes(sb[32:])))
    f.seek(65536)
    f.write(sb)
EOF
# B': B with another label, checksum recomputed (what a device could show the helper instead of B)
python3 - "$work/b1.img" "$work/b1-label.img" <<'EOF'
import shutil, struct, sys
src, dst = sys.argv[1], sys.argv[2]
shutil.copyfile(src, dst)
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF
with open(dst, "r+b") as f:
    f.seek(65536)
    sb = bytearray(f.read(4096))
    sb[0x12b:0x12b + 8] = b"relabel\0"
    struct.pack_into("<I", sb, 0, crc32c(bytes(sb[32:])))
    f.seek(65536)
    f.write(sb)
EOF
loop=$(losetup -f --show "$work/b1.img")
echo "kernel-read-check: $loop holds B (generation+1); the helper is shown A"
# a running udevd registers the new loop device itself (64-btrfs.rules): let it finish, then start
# from an unregistered device
if command -v udevadm >/dev/null; then
    udevadm settle --timeout=30 >>"$log" 2>&1 || true
fi
btrfs device scan --forget "$loop" >>"$log" 2>&1 || true
# the loop device stands in for internal storage: the configuration names it (issue 18)
echo "trusted_disk=$(bsg_by_path "$loop")" >"$work/empty.conf"
echo "BOOT_IMAGE=/vmlinuz root=/dev/nonexistent" >"$work/cmdline"

# udev's `change` event of $loop, with the shim; $1: "face" (A for the helper's reads), "label" (B'
# for the helper's reads), "eagain" (the check's RWF_NOWAIT read finds no cached page) or "plain"
event() {
    local face=()
    btrfs device scan --forget "$loop" >>"$log" 2>&1 || true
    [ "$1" = face ] && face=(BSG_SHIM_FACE_PATH="$loop" BSG_SHIM_FACE_FILE="$work/a1.img")
    [ "$1" = label ] && face=(BSG_SHIM_FACE_PATH="$loop" BSG_SHIM_FACE_FILE="$work/b1-label.img")
    [ "$1" = eagain ] && face=(BSG_SHIM_NOWAIT_EAGAIN_PATH="$loop")
    rm -rf "$work/run"
    env ACTION=change SUBSYSTEM=block DEVTYPE=disk DEVNAME="$loop" \
        BTRFS_SCAN_GATE_RUNDIR="$work/run" BTRFS_SCAN_GATE_CONFIG="$work/empty.conf" \
        BTRFS_SCAN_GATE_CMDLINE="$work/cmdline" BTRFS_SCAN_GATE_LOG=stderr \
        LD_PRELOAD="$shim" BSG_SHIM_LOG="$work/shim.log" "${face[@]}" \
        "${wrapper[@]}" "$helper" udev "$loop" 2>>"$log"
}

fail=0
out=$(event face)
echo "$out" >>"$log"
grep -q '^face ' "$work/shim.log" || { echo "FAIL: the shim never answered for $loop"; fail=1; }
if ! grep -q '^BTRFS_SCAN_GATE_DECISION=scan$' <<<"$out"; then
    echo "FAIL: the helper did not decide scan for $loop:"; echo "$out"; fail=1
fi
if grep -q '^BTRFS_SCAN_GATE_ERROR=.*kernel-read-differs' <<<"$out"; then
    echo "ok: two faces: kernel-read-differs"
else
    echo "FAIL: two faces: no kernel-read-differs (the check did not read what the kernel read):"; echo "$out"; fail=1
fi

out=$(event label)
echo "$out" >>"$log"
if grep -q '^BTRFS_SCAN_GATE_ERROR=.*kernel-read-differs' <<<"$out"; then
    echo "ok: two faces differing only in the label: kernel-read-differs"
else
    echo "FAIL: two faces differing only in the label: no kernel-read-differs (not the whole block compared):"
    echo "$out"; fail=1
fi

: >"$work/shim.log"
out=$(event eagain)
echo "$out" >>"$log"
grep -q '^eagain ' "$work/shim.log" || { echo "FAIL: the check's RWF_NOWAIT read was never made for $loop"; fail=1; }
if grep -q '^BTRFS_SCAN_GATE_ERROR=.*kernel-read-differs' <<<"$out"; then
    echo "ok: page not cached (EAGAIN): kernel-read-differs"
else
    echo "FAIL: page not cached (EAGAIN): no kernel-read-differs (the device was read again):"; echo "$out"; fail=1
fi

out=$(event plain)
echo "$out" >>"$log"
if grep -q '^BTRFS_SCAN_GATE_ERROR=' <<<"$out" || ! grep -q '^BTRFS_SCAN_GATE_ACTION=scanned$' <<<"$out"; then
    echo "FAIL: one face: not scanned without an error, for a device that answers everyone the same:"; echo "$out"; fail=1
else
    echo "ok: one face: scanned, no error"
fi
exit "$fail"
