#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos timeout=150 modparams='skip_scan=PARTLABEL=rootfs-B'
# Patched 6.1: skip_scan entries PARTLABEL=<GPT partition name> and PARTUUID=<partition uuid>
# match the scanned block device by the partition table the kernel read (bd_meta_info), so the
# list is right from the first scan of the boot, before udev has made any /dev/disk/by-* link.
# Disk (layout steamos, one GPT disk): vda1 esp, vda2 rootfs-A, vda3 rootfs-B (clone of A),
# vda4 var-A, vda5 var-B (clone of var-A), vda6 home; partition uuids 5c1a6e2f-...-00000000000N.
#  - the insmod value PARTLABEL=rootfs-B reads back; scan and ready of vda3 are skipped (ready:
#    single device, so 0), nothing registered; vda2 (rootfs-A) is registered;
#  - PARTUUID matches case-insensitively (uppercase entry, lowercase in the kernel);
#  - a whole disk (no partition metadata) never matches a PARTLABEL/PARTUUID entry;
#  - mixed lists with paths work; bad entries are refused with EINVAL, the list kept;
#  - mounting the listed partition still works (mount scans are never skipped).
. /lib/guest-lib.sh
P=/sys/module/btrfs/parameters/skip_scan
mkdir -p /a /b
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }
registered() { btrfs device scan --forget "$1" >>/tmp/forget.log 2>&1; }
setp() { printf '%s' "$1" >/tmp/v; dd if=/tmp/v of=$P bs=16384 count=1 2>/tmp/setp.err; }
# skipped DEV LISTED [ready]: scan (or ready) of DEV returns 0, logs the entry, registers nothing
skipped() {
	mark
	if [ "${3:-}" = ready ]; then
		btrfs device ready "$1" || fail "btrfs device ready $1 (listed as $2): exit $?"
	else
		btrfs device scan "$1" || fail "btrfs device scan $1 (listed as $2): exit $?"
	fi
	since | grep -q "skip_scan: not registering $1 (listed as $2)" ||
		{ since; fail "no 'not registering $1 (listed as $2)' line"; }
	if registered "$1"; then fail "$1 registered although $2 is listed"; fi
}
refused() {
	before=$(cat $P)
	if setp "$1"; then fail "skip_scan accepted $2: '$1'"; fi
	grep -q 'Invalid argument' /tmp/setp.err || fail "$2: not EINVAL"
	[ "$(cat $P)" = "$before" ] || fail "$2 replaced the list"
}

ls -l /dev/vda*
for n in 1 2 3 4 5 6; do grep PARTNAME /sys/class/block/vda$n/uevent; done
[ "$(cat $P)" = PARTLABEL=rootfs-B ] || fail "insmod value reads '$(cat $P)'"
log "PARTLABEL from insmod"
skipped /dev/vda3 PARTLABEL=rootfs-B
skipped /dev/vda3 PARTLABEL=rootfs-B ready
must btrfs device scan /dev/vda2
registered /dev/vda2 || fail "rootfs-A (vda2) not registered"
log "a second node of the partition matches too"
must mknod /dev/alias3 b $(cat /sys/class/block/vda3/dev | tr : ' ')
skipped /dev/alias3 PARTLABEL=rootfs-B

log "PARTUUID, case-insensitive"
must setp PARTUUID=5C1A6E2F-0D3B-4C1E-9A7F-000000000005
skipped /dev/vda5 PARTUUID=5C1A6E2F-0D3B-4C1E-9A7F-000000000005
must btrfs device scan /dev/vda4
registered /dev/vda4 || fail "var-A (vda4) not registered"

log "mixed list"
must setp /dev/nonexistent,PARTLABEL=var-B,PARTUUID=5c1a6e2f-0d3b-4c1e-9a7f-000000000006
[ "$(cat $P)" = /dev/nonexistent,PARTLABEL=var-B,PARTUUID=5c1a6e2f-0d3b-4c1e-9a7f-000000000006 ] ||
	fail "readback '$(cat $P)'"
skipped /dev/vda5 PARTLABEL=var-B
skipped /dev/vda6 PARTUUID=5c1a6e2f-0d3b-4c1e-9a7f-000000000006
must btrfs device scan /dev/vda3
registered /dev/vda3 || fail "rootfs-B (vda3) not registered while not listed"

log "a whole disk has no partition metadata"
must setp PARTLABEL=rootfs-B,PARTUUID=5c1a6e2f-0d3b-4c1e-9a7f-000000000003
mark
btrfs device scan /dev/vda >/dev/null 2>&1
since | grep -q 'skip_scan: not registering /dev/vda ' && fail "whole disk vda matched a partition entry"

log "bad entries"
refused "PARTLABEL=" "an empty PARTLABEL"
refused "PARTUUID=" "an empty PARTUUID"
refused "PARTUUID=not-a-uuid" "a PARTUUID with non-hex characters"
refused "PARTUUID=5c1a6e2f-0d3b-4c1e-9a7f-0000000000031" "a 37-character PARTUUID"
refused "PARTLABEL=$(head -c 37 /dev/zero | tr '\0' x)" "a 37-character PARTLABEL"
refused "partlabel=rootfs-B" "a lowercase tag"
refused "LABEL=rootfs" "an unknown tag"
must setp "PARTLABEL=$(head -c 36 /dev/zero | tr '\0' x)"

log "mount-time scans are not skipped"
must setp PARTLABEL=rootfs-B
must mount -t btrfs -o virtual_fsid /dev/vda2 /a
must mount -t btrfs -o virtual_fsid /dev/vda3 /b
[ "$(cat /b/etc/os-release)" = "steamos-like rootfs" ] || fail "rootfs-B content"
must umount /b
must umount /a
pass
