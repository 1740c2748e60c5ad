#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=150
# Patched 6.1 (issue 19, bug 2): the skip_scan list is writable at run time; a device
# registered by a scan before it was listed is forgotten by its next (skipped) scan, so it no
# longer decides which copy a mount gets. vda is written (its generation is then higher than
# its clone vdb's) and scanned; listed, and scanned again (skipped); a plain mount of vdb then
# works. v3 kept the registration: "device /dev/vdb already registered with a higher
# generation". A device open in a mounted filesystem is never forgotten this way (control).
. /lib/guest-lib.sh
P=/sys/module/btrfs/parameters/skip_scan
mkdir -p /a /b
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }

must mount -t btrfs /dev/vda /a
must touch /a/newer
must umount /a
must btrfs device scan --forget
must btrfs device scan /dev/vda
echo /dev/vda >$P || fail "cannot set skip_scan"
mark
must btrfs device scan /dev/vda
since
since | grep -q 'skip_scan: not registering /dev/vda (listed as /dev/vda)' ||
	fail "the scan of the listed /dev/vda was not skipped"
since >/tmp/scan.log
if ! mount -t btrfs /dev/vdb /b; then
	dmesg | tail -n 3
	fail "mount of /dev/vdb failed: the listed /dev/vda's old registration still wins"
fi
grep -q 'skip_scan: forgot /dev/vda, registered before it was listed' /tmp/scan.log ||
	fail "no 'forgot /dev/vda' line"
[ ! -e /b/newer ] || fail "/b shows vda's file"
must umount /b
log "control: a listed device open in a mounted filesystem is not forgotten"
must btrfs device scan --forget
echo >$P
must mount -t btrfs /dev/vda /a
echo /dev/vda >$P
must btrfs device scan /dev/vda
[ -e /a/newer ] || fail "/a lost its file"
must touch /a/still-mounted
must sync
must umount /a
pass
