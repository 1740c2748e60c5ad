#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=metauuid-stick timeout=120
# Patched 6.1 (issue 19, bug 3): a crafted device whose superblock claims another filesystem
# through metadata_uuid with CHANGING_FSID_V2 set (layout metauuid-stick: vdb devid 1, vdc
# devid 2, each naming vda's fsid and device uuid, generation 999999) is refused at scan, with
# one error line, and cannot keep the real filesystem vda from mounting. Stock 6.1 and the v3
# series register it: vda's mount then fails ("already registered with a higher generation,
# found N expect 999999"), or (devid 2) opens the stick as a second member.
# The sticks' bytes are unchanged afterwards (nothing opened them for writing).
. /lib/guest-lib.sh
mkdir -p /a
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }
sum() { dd if="$1" bs=65536 count=2 2>/dev/null | sha256sum | cut -c1-64; }

for stick in vdb vdc; do
	log "crafted stick /dev/$stick, then a plain mount of /dev/vda"
	before=$(sum /dev/$stick)
	mark
	btrfs device scan /dev/$stick
	rc=$?
	if ! mount -t btrfs /dev/vda /a; then
		since
		fail "mount of /dev/vda failed after a scan of the crafted /dev/$stick"
	fi
	must touch /a/written-$stick
	must sync
	btrfs filesystem show /a
	n=$(btrfs filesystem show /a | grep -c 'devid')
	[ "$n" -eq 1 ] || fail "/a has $n devices, expected vda alone"
	btrfs filesystem show /a | grep -q "/dev/$stick" && fail "/dev/$stick is a member of /a"
	must umount /a
	since
	[ "$rc" -ne 0 ] || fail "btrfs device scan /dev/$stick succeeded: the crafted device was registered"
	since | grep -q "BTRFS error: device /dev/$stick has incomplete metadata_uuid change, not registered" ||
		fail "no 'incomplete metadata_uuid change' line for /dev/$stick"
	[ "$(sum /dev/$stick)" = "$before" ] || fail "/dev/$stick was written"
	must btrfs device scan --forget
done
must btrfs check --readonly /dev/vda
pass
