#!/bin/bash
# Crash safety of virtual_fsid (issue 5): boot 1 mounts both clones with virtual_fsid and keeps
# writing; the host kills the VM (QMP "quit", then a second round with SIGKILL of QEMU); boot 2
# runs on the same disk files and checks each clone's on-disk fsid and incompat flags, runs
# `btrfs check` on both, mounts both and verifies the synced reference data.
#
#   crash-safety.sh [--mode qmp|sigkill|both] [--workdir DIR]
#
# One case file cannot do this (the harness boots once per case), so this driver runs two boots
# itself. It uses the harness (tests/qemu/lib/) for the kernel, the module, the initramfs and the
# clone2 disks; see harness_* below. Exit status: 0 pass, 1 fail, 77 prerequisite missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
qemu_dir=$(cd "$here/.." && pwd)
mode=both
work=${BSG_HARDENING_WORKDIR:-/var/tmp/hardening/crash.$$}
kill_delay=${BSG_CRASH_KILL_DELAY:-6}
boot_timeout=${BSG_CRASH_BOOT_TIMEOUT:-300}
boot1=${BSG_CRASH_BOOT1:-$here/crash-boot1.sh}   # overridable for trying the driver itself
boot2=${BSG_CRASH_BOOT2:-$here/crash-boot2.sh}

while [ $# -gt 0 ]; do
	case $1 in
	--mode) mode=$2; shift 2 ;;
	--workdir) work=$2; shift 2 ;;
	*) echo "usage: $0 [--mode qmp|sigkill|both] [--workdir DIR]" >&2; exit 2 ;;
	esac
done

say() { echo "crash-safety: $*"; }
skip() { say "SKIP: $*"; exit 77; }

. "$here/harness-adapter.sh"

# fsid of the primary superblock (64 KiB + 32, 16 bytes) as 32 lowercase hex digits
fsid_of() {
	od -An -v -tx1 -j $((65536 + 32)) -N 16 "$1" | tr -d ' \n'
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
	/usr/bin/python3 - "$1" <<'EOF'
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

# one_round MODE: boot 1, kill, boot 2; returns 0 when boot 2 passed
one_round() {
	local kmode=$1 d=$work/$1 fsid qpid rc
	mkdir -p "$d"
	harness_make_disks "$d" >"$d/disks.log" 2>&1 || { cat "$d/disks.log"; say "making disks failed"; return 1; }
	fsid=$(fsid_of "$d/$(harness_disk_name 0)")
	[ ${#fsid} -eq 32 ] || { say "cannot read the fsid of the fresh image"; return 1; }
	say "[$kmode] fsid of both clones before boot 1: $fsid"

	harness_initramfs "$boot1" "$d/boot1.cpio.gz" >"$d/ir1.log" 2>&1 ||
		{ cat "$d/ir1.log"; say "initramfs for boot 1 failed"; return 1; }
	rm -f "$d/qemu.pid"
	harness_qemu "$d" "$d/boot1.cpio.gz" "$d/console1.log" \
		-qmp "unix:$d/qmp.sock,server=on,wait=off" -pidfile "$d/qemu.pid" &
	qpid=$!
	if ! wait_for_line "$d/console1.log" HARDENING-CRASH-WRITING "$boot_timeout" "$qpid"; then
		kill -9 "$qpid" 2>>"$d/kill.log" || true
		wait "$qpid" 2>>"$d/kill.log" || true
		tail -n 40 "$d/console1.log"
		say "[$kmode] boot 1 did not reach the writing phase"
		return 1
	fi
	sleep "$kill_delay"
	case $kmode in
	qmp) qmp_quit "$d/qmp.sock" >"$d/qmp.log" 2>&1 || { cat "$d/qmp.log"; kill -9 "$qpid"; } ;;
	sigkill) kill -9 "$(cat "$d/qemu.pid")" ;;
	esac
	rc=0
	wait "$qpid" || rc=$?
	say "[$kmode] boot 1 killed after ${kill_delay}s of writing (runner exit $rc)"
	grep -aq CASE-RESULT "$d/console1.log" && grep -a CASE-RESULT "$d/console1.log" && return 1

	# boot 2: the same disk files; the expected fsid goes in after the header lines
	{ sed -n '1,/^\. \/lib\/guest-lib.sh/p' "$boot2"
	  echo "EXPECT_FSID=$fsid"
	  sed '1,/^\. \/lib\/guest-lib.sh/d' "$boot2"; } >"$d/boot2.sh"
	harness_initramfs "$d/boot2.sh" "$d/boot2.cpio.gz" >"$d/ir2.log" 2>&1 ||
		{ cat "$d/ir2.log"; say "initramfs for boot 2 failed"; return 1; }
	rc=0
	harness_qemu "$d" "$d/boot2.cpio.gz" "$d/console2.log" || rc=$?
	grep -a -E 'guest:|ok$|FAIL|PASS|error|Checking filesystem|no error found' "$d/console2.log" | tail -n 60
	if [ $rc -ne 0 ] || ! harness_passed "$d/console2.log"; then
		say "[$kmode] boot 2 FAILED (runner exit $rc), console: $d/console2.log"
		return 1
	fi
	say "[$kmode] boot 2 passed"
	return 0
}

harness_prereqs || skip "$HARNESS_MISSING"
mkdir -p "$work"
say "work directory $work"
start=$(date +%s)
status=0
case $mode in
both) one_round qmp || status=1; one_round sigkill || status=1 ;;
qmp | sigkill) one_round "$mode" || status=1 ;;
*) echo "unknown mode $mode" >&2; exit 2 ;;
esac
say "finished in $(($(date +%s) - start)) s: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
