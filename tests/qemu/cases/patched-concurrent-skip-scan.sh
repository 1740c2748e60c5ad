#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=120
# Patched 6.1: skip_scan rewritten in two tight loops (valid and refused values) while two loops
# scan, ready and forget both clones and a reader checks every read-back is one of the
# values written (no torn or freed list), for RACE_SECONDS. Afterwards: no WARNING, BUG, Oops,
# lockdep or list-corruption report in the kernel log, and the parameter still works.
# (Debian's 6.1 config has no PROVE_LOCKING, so a lockdep splat can only appear on a debug kernel;
# DEBUG_LIST and BUG_ON_DATA_CORRUPTION are on.)
. /lib/guest-lib.sh
RACE_SECONDS=${RACE_SECONDS:-10}
P=/sys/module/btrfs/parameters/skip_scan
W=/tmp/race
mkdir -p $W

writer() { # writer TAG VALUE...: write the values in turn, invalid ones included
	tag=$1
	shift
	n=0
	while [ ! -e $W/stop ]; do
		for v in "$@"; do
			echo "$v" >$P 2>>$W/w-$tag.err
		done
		n=$((n + 1))
	done
	echo $n >$W/iter-w$tag
}
reader() {
	n=0
	while [ ! -e $W/stop ]; do
		v=$(cat $P)
		case "$v" in
		'' | /dev/vda | /dev/vdb | /dev/vda,/dev/vdb | /dev/vdb,/dev/vda | /dev/nonexistent) ;;
		*) echo "torn read: '$v'" >>$W/reader.err ;;
		esac
		n=$((n + 1))
	done
	echo $n >$W/iter-r
}
scanner() { # scanner TAG
	n=0
	while [ ! -e $W/stop ]; do
		# one process, many BTRFS_IOC_SCAN_DEV calls (fork+exec is what costs under TCG)
		btrfs device scan /dev/vda /dev/vdb /dev/vda /dev/vdb /dev/vda /dev/vdb /dev/vda /dev/vdb \
			>>$W/scan-$1.log 2>&1
		btrfs device ready /dev/vdb >>$W/scan-$1.log 2>&1
		btrfs device scan --forget >>$W/scan-$1.log 2>&1
		n=$((n + 1))
	done
	echo $n >$W/iter-s$1
}

dmesg >$W/dmesg.before
writer 1 /dev/vda /dev/vda,/dev/vdb "" relative /dev/vdb &
p1=$!
writer 2 /dev/vdb,/dev/vda /a,,/b /dev/nonexistent "" &
p2=$!
reader &
p3=$!
scanner 1 &
p4=$!
scanner 2 &
p5=$!
log "racing for $RACE_SECONDS s"
sleep $RACE_SECONDS
touch $W/stop
wait $p1 $p2 $p3 $p4 $p5
log "iterations: writer1 $(cat $W/iter-w1) writer2 $(cat $W/iter-w2) reader $(cat $W/iter-r) scanners $(cat $W/iter-s1) $(cat $W/iter-s2)"
log "refused writes: $(cat $W/w-1.err $W/w-2.err | grep -c 'Invalid argument')"
log "skip lines: $(dmesg | grep -c 'skip_scan: not registering'), scan logs $(cat $W/scan-*.log | wc -l) lines"
[ $(($(cat $W/iter-s1) + $(cat $W/iter-s2))) -gt 10 ] || fail "the scanners hardly ran"
[ ! -s $W/reader.err ] || { head $W/reader.err; fail "read back a value never written"; }
if dmesg | grep -E 'WARNING:|BUG:|kernel BUG|Oops|general protection|lockdep|possible circular|possible recursive|list_add corruption|list_del corruption|INFO: task .* blocked'; then
	fail "kernel log reports a problem (above)"
fi
# still works
echo /dev/vdb >$P || fail "skip_scan not writable after the race"
must btrfs device scan --forget
must btrfs device scan /dev/vdb
if btrfs device scan --forget /dev/vdb >>$W/scan-1.log 2>&1; then fail "listed vdb registered after the race"; fi
pass
