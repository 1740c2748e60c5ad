#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=300
#
# Boot 1 of the crash-safety test (run by crash-safety.sh, not a case of its own): mount both
# clones with virtual_fsid, write a synced reference set with its sha256 list onto each, then
# keep writing (and syncing now and then) until the host kills the VM. The host waits for the
# line HARDENING-CRASH-WRITING on the console.
. /lib/guest-lib.sh

mkdir -p /a /b
must mount -t btrfs -o virtual_fsid /dev/vda /a
must mount -t btrfs -o virtual_fsid /dev/vdb /b
[ "$(stat -c %d /a)" != "$(stat -c %d /b)" ] || fail "clones share one superblock"
for t in a b; do
	mkdir -p /$t/ref /$t/churn
	i=0
	while [ $i -lt 8 ]; do
		i=$((i + 1))
		dd if=/dev/urandom of=/$t/ref/r$i bs=4096 count=$((i * 5)) 2>>/tmp/dd.log || fail "dd"
	done
	(cd /$t/ref && sha256sum r*) >/$t/SUMS || fail "sha256sum"
	echo "$t" >/$t/WHO
done
must sync
log "reference sets synced"

churn() {
	i=0
	while :; do
		i=$((i + 1))
		dd if=/dev/urandom of=/$1/churn/c$i bs=4096 count=$((i % 29 + 1)) 2>>/tmp/dd-$1.log
		cp /$1/churn/c$i /$1/churn/d$i
		[ $i -gt 6 ] && rm -f /$1/churn/c$((i - 6)) /$1/churn/d$((i - 5))
		[ $((i % 7)) -eq 0 ] && sync
	done
}
churn a &
churn b &
sleep 3
echo HARDENING-CRASH-WRITING
# the host kills the VM from here on; if it does not, time out as a failure
sleep 600
fail "the host did not kill the VM"
