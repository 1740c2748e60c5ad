#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=120
# Patched 6.1: `device=` together with virtual_fsid is refused with EINVAL and one log line,
# before anything is scanned. v2 scanned the device= path without the option, registering the
# device under its on-disk fsid next to the virtual instance (and failing with EEXIST when the
# clone holding that fsid is mounted plainly); with clone A mounted -o virtual_fsid the mount
# below succeeded there (measured). Either order of the two options. Controls: the same mount without device= succeeds; device= without
# virtual_fsid still works for a plain mount.
. /lib/guest-lib.sh
mkdir -p /a /b
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }

must mount -t btrfs -o virtual_fsid /dev/vda /a
for o in virtual_fsid,device=/dev/vdb device=/dev/vdb,virtual_fsid; do
	log "mount -o $o /dev/vdb with clone A mounted"
	mark
	if mount -t btrfs -o "$o" /dev/vdb /b 2>/tmp/err; then
		umount /b
		fail "mount -o $o succeeded"
	fi
	cat /tmp/err
	since >/tmp/new
	cat /tmp/new
	grep -q 'Invalid argument' /tmp/err || fail "mount -o $o: not EINVAL"
	n=$(grep -c 'virtual_fsid refused with device=' /tmp/new)
	[ "$n" -eq 1 ] || fail "mount -o $o: $n refusal lines, expected 1"
	grep -q 'duplicate device' /tmp/new && fail "mount -o $o scanned the device= path"
done
log "control: without device= the clone mounts"
must mount -t btrfs -o virtual_fsid /dev/vdb /b
must umount /b
must umount /a
must btrfs device scan --forget
log "control: device= without virtual_fsid"
must mount -t btrfs -o device=/dev/vda /dev/vda /a
must umount /a
pass
