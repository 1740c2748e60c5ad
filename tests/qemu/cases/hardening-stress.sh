#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=420
#
# Stress: both clones mounted with virtual_fsid and written concurrently for STRESS_SECONDS while
# `btrfs device scan` (single devices and all) and rewrites of the skip_scan parameter run in a
# loop. Afterwards: no WARNING/BUG/Oops/lockdep/"general protection"/"BTRFS critical" in the
# kernel log, every surviving file matches its sha256 after a remount (read from disk, not from
# the page cache of the first mount), and `btrfs check` is clean on both clones.
#
# Debian's 6.1 config (config-6.1.0-57-amd64, checked) has no CONFIG_PROVE_LOCKING,
# DEBUG_LOCK_ALLOC, KASAN, UBSAN or BTRFS_ASSERT, so the lockdep patterns can only match on a
# debug kernel. It does have DEBUG_LIST, BUG_ON_DATA_CORRUPTION, SLUB_DEBUG (slub_debug= on the
# command line) and DETECT_HUNG_TASK (timeout lowered below); WARNING/BUG/Oops catch WARN_ON,
# BUG_ON and list corruption.
. /lib/guest-lib.sh

STRESS_SECONDS=${STRESS_SECONDS:-60}
PARAM=/sys/module/btrfs/parameters/skip_scan
W=/tmp/stress
mkdir -p "$W" /a /b

[ -w "$PARAM" ] || fail "$PARAM missing or not writable: not the patched module"
must mount -t btrfs -o virtual_fsid /dev/vda /a
must mount -t btrfs -o virtual_fsid /dev/vdb /b
# the two clones must be two instances
[ "$(stat -c %d /a)" != "$(stat -c %d /b)" ] || fail "clones share one superblock"

# report a task stuck for 30 s instead of the default 120 s (CONFIG_DETECT_HUNG_TASK=y in Debian)
echo 30 >/proc/sys/kernel/hung_task_timeout_secs || log "hung_task_timeout_secs not writable"
dmesg >"$W/dmesg.before"

# writer TAG MNT: create files of random content and size, copy them, delete old ones, sync
# now and then; the sha256 of each live file is kept in $W/sum-TAG/<name> (tmpfs, outside btrfs)
writer() {
	tag=$1 mnt=$2 sums=$W/sum-$1
	mkdir -p "$sums" "$mnt/w"
	i=0
	while [ ! -e "$W/stop" ]; do
		i=$((i + 1))
		f=f$i
		dd if=/dev/urandom of="$mnt/w/$f" bs=4096 count=$((i % 37 + 1)) 2>>"$W/dd-$tag.log" ||
			{ echo "dd $f failed" >>"$W/err-$tag"; break; }
		sha256sum "$mnt/w/$f" | cut -d' ' -f1 >"$sums/$f"
		cp "$mnt/w/$f" "$mnt/w/c$i" || { echo "cp $f failed" >>"$W/err-$tag"; break; }
		cp "$sums/$f" "$sums/c$i"
		# re-read a recent file and compare
		if [ $i -gt 3 ] && [ -e "$sums/c$((i - 3))" ]; then
			got=$(sha256sum "$mnt/w/c$((i - 3))" | cut -d' ' -f1)
			[ "$got" = "$(cat "$sums/c$((i - 3))")" ] ||
				{ echo "c$((i - 3)) mismatch while running" >>"$W/err-$tag"; break; }
		fi
		if [ $i -gt 8 ]; then
			old=$((i - 8))
			rm -f "$mnt/w/f$old" "$sums/f$old"
			[ $((old % 3)) -eq 0 ] || rm -f "$mnt/w/c$old" "$sums/c$old"
		fi
		[ $((i % 5)) -eq 0 ] && sync
	done
	echo "$i" >"$W/iter-$tag"
}

# scanner: device scans and skip_scan rewrites, racing the writers
scanner() {
	n=0
	while [ ! -e "$W/stop" ]; do
		n=$((n + 1))
		case $((n % 6)) in
		0) echo /dev/vda >"$PARAM" ;;
		1) echo /dev/vda,/dev/vdb >"$PARAM" ;;
		2) echo /dev/vdb >"$PARAM" ;;
		3) : >"$PARAM" ;;
		4) printf '/dev/vdb,/dev/vda' >"$PARAM" ;;
		5) echo /dev/nonexistent >"$PARAM" ;;
		esac
		btrfs device scan /dev/vda >>"$W/scan.log" 2>&1
		btrfs device scan /dev/vdb >>"$W/scan.log" 2>&1
		[ $((n % 4)) -eq 0 ] && btrfs device scan >>"$W/scan.log" 2>&1
		[ $((n % 8)) -eq 0 ] && btrfs filesystem show >>"$W/scan.log" 2>&1
		cat "$PARAM" >>"$W/param.log" 2>&1
	done
	: >"$PARAM"
	echo "$n" >"$W/iter-scan"
}

writer a /a &
wa=$!
writer b /b &
wb=$!
scanner &
ws=$!
log "stress running for $STRESS_SECONDS s"
sleep "$STRESS_SECONDS"
touch "$W/stop"
wait $wa $wb $ws
log "iterations: a=$(cat $W/iter-a 2>&1) b=$(cat $W/iter-b 2>&1) scanner=$(cat $W/iter-scan 2>&1)"
for t in a b; do
	[ ! -s "$W/err-$t" ] || { cat "$W/err-$t"; fail "writer $t failed"; }
done
must sync
must umount /a
must umount /b

# verify from disk: fresh mounts, then every file against its recorded sum
must mount -t btrfs -o virtual_fsid /dev/vda /a
must mount -t btrfs -o virtual_fsid /dev/vdb /b
for t in a b; do
	n=0
	for s in "$W/sum-$t"/*; do
		name=${s##*/}
		got=$(sha256sum "/$t/w/$name" 2>&1 | cut -d' ' -f1)
		[ "$got" = "$(cat "$s")" ] || fail "$t: $name: sha256 $got, expected $(cat "$s")"
		n=$((n + 1))
	done
	live=$(ls "/$t/w" | wc -l)
	[ "$live" -eq "$n" ] || fail "$t: $live files on disk, $n expected"
	log "$t: $n files verified by sha256"
done
must umount /a
must umount /b
must btrfs check --readonly /dev/vda
must btrfs check --readonly /dev/vdb

dmesg >"$W/dmesg.after"
# only what was logged during the case (the kernel log has no gaps in a fresh guest)
tail -n +"$(($(wc -l <"$W/dmesg.before") + 1))" "$W/dmesg.after" >"$W/dmesg.new"
if grep -E 'WARNING:|BUG:|kernel BUG|Oops|general protection|BTRFS critical|lockdep|possible circular locking|possible recursive locking|INFO: task .* blocked|UBSAN|KASAN|list_add corruption|list_del corruption' "$W/dmesg.after"; then
	fail "kernel log reports a problem (see above)"
fi
log "scan log: $(wc -l <"$W/scan.log") lines; kernel log during the case: $(wc -l <"$W/dmesg.new") lines"
pass
