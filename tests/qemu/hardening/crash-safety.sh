#!/bin/bash
# Crash safety of virtual_fsid (issue 5), CTest qemu/hardening-crash-safety.
#
# Boot 1 (crash-boot1.sh) mounts both clones with virtual_fsid, writes and syncs a reference set on
# each, then keeps writing both; every few iterations it syncs a persistent file and prints
# "HARDENING-SYNCED <clone> <n>" once sync has returned. The host waits for HARDENING-CRASH-WRITING,
# lets the writes run BSG_CRASH_KILL_DELAY seconds and kills QEMU (QMP "quit", or SIGKILL of the
# QEMU process). Boot 2 (crash-boot2.sh) runs on the SAME disk files: the raw on-disk fsid of each
# clone is still the original one and METADATA_UUID is not set, `btrfs check --readonly` is clean
# on each, both mount with virtual_fsid as two instances, the reference set and every persistent
# file whose sync the console showed before the kill are there with their sha256, and both are
# still writable (then checked again). The host also reads the fsid from the image files and
# requires the generation to have moved during boot 1 (the kill really hit a written fs).
#
#   crash-safety.sh [--mode qmp|sigkill|both] [--workdir DIR]
#
# Environment: BSG_CRASH_KILL_DELAY (s, default 4), BSG_CRASH_BOOT_TIMEOUT (s per boot, default 150),
# BSG_CRASH_EXPECT_FSID (32 hex digits; default: the fsid of the fresh images. Setting a wrong one
# shows the test failing; so does BSG_MUTANT=virtual-fsid-on-disk, see tests/qemu/mutants/),
# BSG_CRASH_MODULE (patched|stock, default patched: the stock module cannot mount the second clone,
# so boot 1 fails).
# A kill of QEMU loses what the guest had not yet handed to the virtual disk (the guest's page cache
# and anything in flight); what QEMU already wrote to the image file stays, as on a disk whose
# write cache survived. Exit status: 0 pass, 1 fail, 77 prerequisite missing (1 with CI=true).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
qemu_dir=$(cd "$here/.." && pwd)
. "$qemu_dir/lib.sh"

mode=both
work=/var/tmp/hardening/crash.$$
kill_delay=${BSG_CRASH_KILL_DELAY:-4}
boot_timeout=${BSG_CRASH_BOOT_TIMEOUT:-150}
module=${BSG_CRASH_MODULE:-patched}

while [ $# -gt 0 ]; do
	case $1 in
	--mode) mode=$2; shift 2 ;;
	--workdir) work=$2; shift 2 ;;
	*) echo "usage: $0 [--mode qmp|sigkill|both] [--workdir DIR]" >&2; exit 2 ;;
	esac
done
case $mode in qmp | sigkill | both) ;; *) echo "unknown mode $mode" >&2; exit 2 ;; esac

say() { echo "crash-safety: $*"; }
prereq_missing() {
	say "prerequisite missing: $*"
	if [ "${CI:-}" = true ]; then exit 1; fi
	exit 77
}
for t in qemu-system-x86_64 busybox mkfs.btrfs btrfs python3 od; do
	command -v "$t" >/dev/null || prereq_missing "$t (run tests/qemu/setup.sh)"
done
[ -e /usr/src/linux-source-6.1.tar.xz ] || prereq_missing "linux-source-6.1 (run tests/qemu/setup.sh)"
qemu_kernel 6.1 || prereq_missing "kernel 6.1 (run tests/qemu/setup.sh)"

# le64 at OFFSET of the primary superblock (64 KiB) of an image file, in decimal
sb_le64() {
	od -An -v -tu8 --endian=little -j $((65536 + $2)) -N 8 "$1" | tr -d ' '
}
# fsid of the primary superblock (64 KiB + 32, 16 bytes) as 32 lowercase hex digits; with a second
# argument, of the superblock copy at that byte offset (the 256 MiB images have one at 64 MiB)
sb_fsid() {
	od -An -v -tx1 -j $((${2:-65536} + 32)) -N 16 "$1" | tr -d ' \n'
}

# wait_for_line FILE PATTERN SECONDS PID: 0 when PATTERN shows up, 1 on timeout or QEMU exit
wait_for_line() {
	local file=$1 pat=$2 left=$(($3 * 10)) pid=$4
	while [ $left -gt 0 ]; do
		grep -aq -- "$pat" "$file" 2>>"$work/grep.log" && return 0
		kill -0 "$pid" 2>>"$work/grep.log" || return 1
		sleep 0.1
		left=$((left - 1))
	done
	return 1
}

qmp_quit() { # qmp_quit SOCKET: the QMP handshake, then "quit"
	python3 - "$1" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
f = s.makefile("rw")
print("qmp greeting:", f.readline().strip())
for cmd in ({"execute": "qmp_capabilities"}, {"execute": "quit"}):
    f.write(json.dumps(cmd) + "\n")
    f.flush()
    print("qmp reply:", f.readline().strip())
EOF
}

# one_round MODE: boot 1, kill, boot 2; returns 0 when every check passed
one_round() {
	local kmode=$1 d=$work/$1 fsid expect gen0 gen1 qpid rc t n a b s0
	rm -rf "$d" && mkdir -p "$d"
	qemu_make_disks clone2 "$d/disks" >"$d/mkfs.log" 2>&1 || { cat "$d/mkfs.log"; say "making disks failed"; return 1; }
	fsid=$(sb_fsid "$d/disks/disk0.img")
	[ "$fsid" = "$(sb_fsid "$d/disks/disk1.img")" ] || { say "the fresh images are not clones"; return 1; }
	expect=${BSG_CRASH_EXPECT_FSID:-$fsid}
	gen0=$(sb_le64 "$d/disks/disk0.img" 72)
	say "[$kmode] fsid of both clones before boot 1: $fsid (generation $gen0); boot 2 expects $expect"

	QEMU_DISKDIR=$d/disks qemu_initramfs "$here/crash-boot1.sh" "$d/boot1.gz" "$ko" >"$d/ir1.log" 2>&1 ||
		{ cat "$d/ir1.log"; say "initramfs for boot 1 failed"; return 1; }
	s0=$(date +%s)
	QEMU_TIMEOUT=$boot_timeout qemu_boot "$d/boot1.gz" "$d/console1.log" "$d/disks" \
		-qmp "unix:$d/qmp.sock,server=on,wait=off" -pidfile "$d/qemu.pid" &
	qpid=$!
	if ! wait_for_line "$d/console1.log" HARDENING-CRASH-WRITING "$boot_timeout" "$qpid"; then
		[ -s "$d/qemu.pid" ] && kill -9 "$(cat "$d/qemu.pid")" 2>>"$d/kill.log"
		wait "$qpid" 2>>"$d/kill.log" || true
		tail -n 40 "$d/console1.log"
		say "[$kmode] boot 1 did not reach the writing phase (console: $d/console1.log)"
		return 1
	fi
	say "[$kmode] boot 1 writing after $(($(date +%s) - s0)) s; killing in $kill_delay s"
	sleep "$kill_delay"
	case $kmode in
	qmp) qmp_quit "$d/qmp.sock" >"$d/qmp.log" 2>&1 || { cat "$d/qmp.log"; kill -9 "$(cat "$d/qemu.pid")"; } ;;
	sigkill) kill -9 "$(cat "$d/qemu.pid")" ;;
	esac
	rc=0
	wait "$qpid" || rc=$?
	say "[$kmode] QEMU gone (qemu_boot exit $rc) after $(($(date +%s) - s0)) s"
	if grep -aq -e CASE-RESULT -e CASE-EXIT "$d/console1.log"; then
		grep -a -e 'guest:' -e CASE-RESULT "$d/console1.log" | tail -n 20
		say "[$kmode] boot 1 ended on its own before the kill"
		return 1
	fi
	# the persistent files whose sync completed before the kill, per clone
	a=$(grep -ao 'HARDENING-SYNCED a [0-9]*' "$d/console1.log" | tail -n 1 | awk '{print $3}')
	b=$(grep -ao 'HARDENING-SYNCED b [0-9]*' "$d/console1.log" | tail -n 1 | awk '{print $3}')
	n=$(grep -ac 'HARDENING-SYNCED' "$d/console1.log" || true)
	say "[$kmode] syncs completed before the kill: $n (last persistent file a=${a:-none} b=${b:-none})"
	for t in 0 1; do
		gen1=$(sb_le64 "$d/disks/disk$t.img" 72)
		[ "$gen1" -gt "$gen0" ] || { say "[$kmode] disk$t: generation $gen1 did not move from $gen0 during boot 1"; return 1; }
		say "[$kmode] disk$t after the kill: fsid $(sb_fsid "$d/disks/disk$t.img"), generation $gen1"
	done

	# boot 2 on the same disk files; the expectations go in after the header
	{ sed -n '1,/^\. \/lib\/guest-lib.sh/p' "$here/crash-boot2.sh"
	  echo "EXPECT_FSID=$expect SYNCED_A=${a:-0} SYNCED_B=${b:-0}"
	  sed '1,/^\. \/lib\/guest-lib.sh/d' "$here/crash-boot2.sh"; } >"$d/boot2.sh"
	QEMU_DISKDIR=$d/disks qemu_initramfs "$d/boot2.sh" "$d/boot2.gz" "$ko" >"$d/ir2.log" 2>&1 ||
		{ cat "$d/ir2.log"; say "initramfs for boot 2 failed"; return 1; }
	s0=$(date +%s)
	QEMU_TIMEOUT=$boot_timeout qemu_boot "$d/boot2.gz" "$d/console2.log" "$d/disks" || true
	rc=$(qemu_verdict "$d/console2.log")
	grep -a -e '^guest:' -e 'CASE-RESULT' -e 'BTRFS' -e 'no error found' -e 'ERROR' "$d/console2.log" | tail -n 40
	say "[$kmode] boot 2: exit $rc after $(($(date +%s) - s0)) s"
	[ "$rc" = 0 ] || { tail -n 30 "$d/console2.log"; say "[$kmode] boot 2 FAILED, console: $d/console2.log"; return 1; }
	for t in 0 1; do
		for off in 65536 67108864; do
			[ "$(sb_fsid "$d/disks/disk$t.img" $off)" = "$expect" ] ||
				{ say "[$kmode] disk$t: fsid $(sb_fsid "$d/disks/disk$t.img" $off) of the superblock at $off after boot 2, expected $expect"; return 1; }
		done
	done
	say "[$kmode] host: primary and 64 MiB superblock copies of both images carry fsid $expect"
	say "[$kmode] PASS: both clones survived the kill with fsid $expect"
}

ko=$(qemu_btrfs_ko "$module") || { say "no $module btrfs.ko"; exit 1; }
rm -rf "$work" && mkdir -p "$work"
say "work directory $work; kernel $QK_KVER, module $module ($ko), mode $mode"
start=$(date +%s)
status=0
case $mode in
both) one_round qmp || status=1; one_round sigkill || status=1 ;;
*) one_round "$mode" || status=1 ;;
esac
say "finished in $(($(date +%s) - start)) s: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
