#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=150
# Patched 6.1: the generation race of baseline-generation-race (a non-mount scan of the written,
# higher-generation clone A makes the lower-generation clone B unmountable, EEXIST) is gone
#  - with skip_scan listing both clones: scans in either order register nothing, B and A mount;
#  - with -o virtual_fsid (list empty, scans register both): both mount at once, either order.
# A control in the same boot shows the race without either.
. /lib/guest-lib.sh
P=/sys/module/btrfs/parameters/skip_scan
mkdir -p /a /b
gen() { btrfs inspect-internal dump-super "$1" | awk '$1 == "generation" { print $2 }'; }
scan() { for d in "$@"; do must btrfs device scan "$d"; done; }
# scans without skip_scan: B after A fails (EEXIST, as on stock 6.1), which is the race itself
scan_any() { for d in "$@"; do btrfs device scan "$d" || log "scan $d: exit $? (stock EEXIST)"; done; }

# A gets a clearly higher generation than B; B is only mounted read-only in the skip_scan part
must mount -t btrfs /dev/vda /a
for i in 1 2 3 4; do echo "$i" >/a/f$i; must sync; done
must umount /a
must btrfs device scan --forget
ga=$(gen /dev/vda) gb=$(gen /dev/vdb)
log "generations: vda $ga, vdb $gb"
[ "$ga" -gt "$gb" ] || fail "vda's generation $ga is not above vdb's $gb"

log "control: no skip_scan, no option, scan B then A"
scan /dev/vdb /dev/vda
if mount -t btrfs -o ro /dev/vdb /b 2>/tmp/err; then fail "control: the race did not reproduce"; fi
grep -q 'File exists' /tmp/err || { cat /tmp/err; fail "control: not EEXIST"; }
must btrfs device scan --forget

must sh -c "echo /dev/vda,/dev/vdb >$P"
for order in "/dev/vdb /dev/vda" "/dev/vda /dev/vdb"; do
	log "skip_scan=$(cat $P): scan $order, mount B (lower generation), then A"
	scan $order
	must mount -t btrfs -o ro /dev/vdb /b
	must umount /b
	must btrfs device scan --forget
	scan $order
	must mount -t btrfs /dev/vda /a
	[ -e /a/f4 ] || fail "vda lacks its file"
	must umount /a
	must btrfs device scan --forget
done
[ "$(gen /dev/vdb)" = "$gb" ] || fail "vdb's generation changed under read-only mounts"

must sh -c "echo >$P"
[ -z "$(cat $P)" ] || fail "skip_scan not cleared"
for order in "/dev/vdb /dev/vda" "/dev/vda /dev/vdb"; do
	log "virtual_fsid: scan $order, mount B then A with -o virtual_fsid"
	scan_any $order
	must mount -t btrfs -o virtual_fsid /dev/vdb /b
	must mount -t btrfs -o virtual_fsid /dev/vda /a
	[ -e /a/f4 ] && [ ! -e /b/f4 ] || fail "the mounts show the wrong clones"
	must umount /a
	must umount /b
	must btrfs device scan --forget
done
must btrfs check --readonly /dev/vda
must btrfs check --readonly /dev/vdb
pass
