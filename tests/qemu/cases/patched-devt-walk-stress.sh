#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=raid1clone timeout=300 append='slub_debug=FZP'
#
# Stress for the dev_t lookup's locking (issue 11, item 1). Every scan and mount walks the device
# list of each mounted filesystem to find an opened device by dev_t. Device remove and the end of
# a device replace take a device off a mounted filesystem's list and free it holding only that
# filesystem's device_list_mutex, so the walk must hold it too (uuid_mutex alone does not exclude
# them). Here a raid1 (vda+vdb) is mounted plainly; the foreground adds and removes a third device
# (vdc) and replaces devid 2 by vdc and back, ROUNDS (6) times, while a background loop scans the
# members and the spare and forgets the spare. slub_debug=FZP poisons freed objects, DEBUG_LIST
# and BUG_ON_DATA_CORRUPTION make a corrupted list a BUG, oops=panic ends the boot (verdict 125):
# a walk over a freed device would show as a general protection fault or list corruption.
# Afterwards: no WARNING/BUG/Oops/corruption lines, the data reads back, `btrfs check` clean
# (scrub -B needs libgcc_s, which the initramfs does not carry).
# A race: passing does not prove the lock (see the commit message for the argument); failing
# shows a bug.
. /lib/guest-lib.sh
ROUNDS=${ROUNDS:-6}
W=/tmp/walk
mkdir -p $W /m
# vdc is a copy of vdb (same fsid and devid): wipe its primary superblock to make it a spare
must dd if=/dev/zero of=/dev/vdc bs=64K seek=1 count=1 conv=fsync
must btrfs device scan /dev/vdb
must mount -t btrfs /dev/vda /m
must dd if=/dev/urandom of=/m/data bs=1M count=8 conv=fsync
sum0=$(sha256sum </m/data)

: >$W/scan.log
(
	n=0
	while [ ! -e $W/stop ]; do
		for d in /dev/vda /dev/vdb /dev/vdc; do
			btrfs device scan $d >>$W/scan.log 2>&1
		done
		btrfs device scan --forget /dev/vdc >>$W/scan.log 2>&1
		n=$((n + 1))
	done
	echo $n >$W/scans
) &
for i in $(seq 1 "$ROUNDS"); do
	must btrfs device add -f /dev/vdc /m
	must btrfs device remove /dev/vdc /m
	must btrfs replace start -B -f 2 /dev/vdc /m
	must btrfs replace start -B -f 2 /dev/vdb /m
	log "round $i done"
done
touch $W/stop
wait
log "background scan rounds: $(cat $W/scans); scan errors (expected while vdc changes): $(grep -c ERROR $W/scan.log)"
[ "$(cat $W/scans)" -gt 0 ] || fail "the scanner never completed a round"
if dmesg | grep -E 'WARNING:|kernel BUG|Oops|general protection|list_(add|del) corruption|Poison overwritten|BTRFS critical'; then
	fail "kernel log reports a bug"
fi
[ "$(sha256sum </m/data)" = "$sum0" ] || fail "data changed"
must umount /m
must btrfs check --readonly /dev/vda
pass
