#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=150
#
# Boot 1 of the crash-safety test (run by crash-safety.sh, not a CTest case of its own): mount both
# clones with virtual_fsid, write a synced reference set with its sha256 list onto each, then keep
# writing both until the host kills the VM. Every 4th iteration a persistent file p<n> is written,
# its sum appended to PSUMS, and synced; "HARDENING-SYNCED <clone> <n>" is printed only after sync
# returned, so boot 2 may require p1..p<n> of the last such line. The host kills the VM a few
# seconds after HARDENING-CRASH-WRITING.
. /lib/guest-lib.sh

mkdir -p /a /b
must mount -t btrfs -o virtual_fsid /dev/vda /a
must mount -t btrfs -o virtual_fsid /dev/vdb /b
[ "$(stat -c %d /a)" != "$(stat -c %d /b)" ] || fail "clones share one superblock"
for t in a b; do
	mkdir -p /$t/ref /$t/churn /$t/persist
	i=0
	while [ $i -lt 8 ]; do
		i=$((i + 1))
		dd if=/dev/urandom of=/$t/ref/r$i bs=4096 count=$((i * 5)) 2>>/tmp/dd.log || fail "dd"
	done
	(cd /$t/ref && sha256sum r*) >/$t/SUMS || fail "sha256sum"
	echo "$t" >/$t/WHO
	: >/$t/PSUMS
done
must sync
log "reference sets synced"

churn() {
	i=0
	p=0
	while :; do
		i=$((i + 1))
		dd if=/dev/urandom of=/$1/churn/c$i bs=4096 count=$((i % 29 + 1)) 2>>/tmp/dd-$1.log
		cp /$1/churn/c$i /$1/churn/d$i
		[ $i -gt 6 ] && rm -f /$1/churn/c$((i - 6)) /$1/churn/d$((i - 5))
		if [ $((i % 4)) -eq 0 ]; then
			p=$((p + 1))
			dd if=/dev/urandom of=/$1/persist/p$p bs=4096 count=$((p % 13 + 1)) 2>>/tmp/dd-$1.log
			(cd /$1/persist && sha256sum p$p) >>/$1/PSUMS
			sync && echo "HARDENING-SYNCED $1 $p"
		fi
	done
}
churn a &
churn b &
sleep 2
echo HARDENING-CRASH-WRITING
# the host kills the VM from here on; if it does not, time out as a failure
sleep 600
fail "the host did not kill the VM"
