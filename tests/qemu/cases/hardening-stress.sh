#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=150 append='slub_debug=FZ'
#
# Stress (issue 5): both clones mounted with virtual_fsid and written concurrently for
# STRESS_SECONDS (20) by two shell writers (dd with conv=fsync, cp, re-read and compare, rm, sync)
# while a scanner loop runs `btrfs device scan` of each clone, of all devices and `--forget`, and
# rewrites the skip_scan parameter (valid lists, an empty one, a relative path and a value over the
# 4095-byte limit, which must both be refused with EINVAL and leave the list unchanged).
# Afterwards: every skip_scan read returned a list that was written; no WARNING/BUG/Oops/general
# protection/BTRFS critical/soft lockup/RCU stall/hung task/list corruption/slab corruption in the
# kernel log; every surviving file matches its sha256 after a remount; `btrfs check` clean on both.
#
# Debian's 6.1 config (config-6.1.0-57-amd64, checked) has NO lockdep (CONFIG_PROVE_LOCKING,
# DEBUG_LOCK_ALLOC, DEBUG_MUTEXES, DEBUG_SPINLOCK, DEBUG_ATOMIC_SLEEP are off), no KASAN, UBSAN,
# KFENCE, DEBUG_OBJECTS, and no BTRFS_ASSERT/BTRFS_DEBUG, so the lockdep patterns below can only
# match on a debug kernel and an ASSERT() in btrfs compiles to nothing. What it does have and what
# this case uses: DEBUG_LIST and BUG_ON_DATA_CORRUPTION (list corruption is a BUG), SLUB_DEBUG
# (enabled on the command line: slub_debug=FZ, sanity checks and red zones on every slab),
# DETECT_HUNG_TASK (timeout lowered to 20 s below; a deadlock longer than
# that hangs the case into its timeout anyway), SOFTLOCKUP_DETECTOR, HARDLOCKUP_DETECTOR and
# RCU stall warnings; WARN_ON/BUG_ON print WARNING:/kernel BUG, and oops=panic makes an oops end
# the boot (verdict 125).
. /lib/guest-lib.sh

STRESS_SECONDS=${STRESS_SECONDS:-20}
PARAM=/sys/module/btrfs/parameters/skip_scan
W=/tmp/stress
mkdir -p "$W" /a /b

[ -w "$PARAM" ] || fail "$PARAM missing or not writable: not the patched module"
must mount -t btrfs -o virtual_fsid /dev/vda /a
must mount -t btrfs -o virtual_fsid /dev/vdb /b
# the two clones must be two instances
[ "$(stat -c %d /a)" != "$(stat -c %d /b)" ] || fail "clones share one superblock"

echo 20 >/proc/sys/kernel/hung_task_timeout_secs || log "hung_task_timeout_secs not writable"
log "slub_debug: $(cat /sys/kernel/slab/kmalloc-64/sanity_checks 2>&1) (1 = on)"

# writer TAG MNT: create files of random content and size (fsync'ed), copy them, re-read an older
# copy, delete old ones, sync now and then; the sha256 of each live file is kept in $W/sum-TAG/<name>
# (tmpfs, outside btrfs)
writer() {
	tag=$1 mnt=$2 sums=$W/sum-$1
	mkdir -p "$sums" "$mnt/w"
	i=0
	while [ ! -e "$W/stop" ]; do
		i=$((i + 1))
		f=f$i
		dd if=/dev/urandom of="$mnt/w/$f" bs=4096 count=$((i % 37 + 1)) conv=fsync 2>>"$W/dd-$tag.log" ||
			{ echo "dd $f failed" >>"$W/err-$tag"; break; }
		sha256sum "$mnt/w/$f" | cut -d' ' -f1 >"$sums/$f"
		cp "$mnt/w/$f" "$mnt/w/c$i" || { echo "cp $f failed" >>"$W/err-$tag"; break; }
		cp "$sums/$f" "$sums/c$i"
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

# a value over the parameter's 4095-byte limit (valid entries, so only the length is wrong)
long=/dev/vda
while [ ${#long} -le 4095 ]; do long=$long,/dev/vdb; done
printf '%s\n' /dev/vda /dev/vda,/dev/vdb /dev/vdb '' /dev/vdb,/dev/vda /dev/nonexistent >"$W/allowed"

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
		if [ $((n % 7)) -eq 0 ]; then
			before=$(cat "$PARAM")
			if echo relative/path >"$PARAM" 2>>"$W/refused.log"; then
				echo "a relative path was accepted" >>"$W/err-scan"
			fi
			if printf '%s' "$long" >"$PARAM" 2>>"$W/refused.log"; then
				echo "a ${#long}-byte value was accepted" >>"$W/err-scan"
			fi
			[ "$(cat "$PARAM")" = "$before" ] || echo "a refused write changed the list" >>"$W/err-scan"
		fi
		btrfs device scan /dev/vda >>"$W/scan.log" 2>&1
		btrfs device scan /dev/vdb >>"$W/scan.log" 2>&1
		[ $((n % 4)) -eq 0 ] && btrfs device scan >>"$W/scan.log" 2>&1
		[ $((n % 5)) -eq 0 ] && btrfs device scan --forget >>"$W/scan.log" 2>&1
		[ $((n % 8)) -eq 0 ] && btrfs filesystem show >>"$W/scan.log" 2>&1
		cat "$PARAM" >>"$W/param.log" 2>&1
	done
	: >"$PARAM"
	echo "$n" >"$W/iter-scan"
}

dmesg >"$W/dmesg.before"
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
ia=$(cat $W/iter-a 2>&1) ib=$(cat $W/iter-b 2>&1) is=$(cat $W/iter-scan 2>&1)
log "iterations: writer a=$ia writer b=$ib scanner=$is"
for t in a b scan; do
	[ ! -s "$W/err-$t" ] || { cat "$W/err-$t"; fail "$t loop failed"; }
done
[ "$ia" -ge 10 ] && [ "$ib" -ge 10 ] && [ "$is" -ge 7 ] || fail "the loops barely ran: a=$ia b=$ib scanner=$is"
bad=$(grep -vxFf "$W/allowed" "$W/param.log" | head -n 3)
[ -z "$bad" ] || fail "skip_scan read back a list never written: $bad"
log "skip_scan: $(wc -l <"$W/param.log") reads, all of written lists; refused writes: $(grep -c . "$W/refused.log")"
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

# the refused skip_scan writes above log "BTRFS error: skip_scan: ... list unchanged" on purpose
dmesg | grep -v 'BTRFS error: skip_scan: .*, list unchanged$' >"$W/dmesg.after"
if grep -E 'WARNING:|BUG:|kernel BUG|Oops|general protection|BTRFS critical|BTRFS error|lockdep|possible circular locking|possible recursive locking|INFO: task .* blocked|blocked for more than|soft lockup|hard LOCKUP|rcu_.*stall|self-detected stall|UBSAN|KASAN|list_add corruption|list_del corruption|Redzone|Poison overwritten|Object already free|slab_err|Call Trace' "$W/dmesg.after"; then
	fail "kernel log reports a problem (see above)"
fi
log "kernel log: $(wc -l <"$W/dmesg.before") lines before the stress, $(wc -l <"$W/dmesg.after") after; scan log: $(wc -l <"$W/scan.log") lines"
pass
