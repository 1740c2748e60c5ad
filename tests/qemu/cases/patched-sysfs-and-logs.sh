#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2-sbswap timeout=120
# Patched 6.1, visible state: /sys/fs/btrfs/features/virtual_fsid exists;
# /sys/fs/btrfs/<fsid in use>/virtual_fsid reads 0 for a plain mount (vda, on-disk fsid) and 1
# for a virtual_fsid mount (vdb), whose sysfs directory is the random fsid named by the mount's
# log line "BTRFS info: device /dev/vdb (254:16) uses virtual fsid V, on-disk fsid F" (F = the real fsid, also in
# .../metadata_uuid and shown by `btrfs filesystem show`). The fsid-mismatch error prints the
# fsid actually compared: while vdc is mounted -o ro,virtual_fsid in a loop, its superblock is
# swapped between the real one and a copy with another fsid (vdd, made by the harness), until a
# mount registers vdc with one fsid and open_ctree() reads the other. The error must then print
# "<fsid read> != <the other on-disk fsid>", never the random in-memory fsid. (Which on-disk fsid
# the instance was registered under is not tied to the last "uses virtual fsid" line: one attempt
# can scan vdc twice while the swap runs; a CI run saw the two disagree.) The "first mount" and
# "last unmount" lines of the virtual_fsid mount both name the on-disk fsid.
. /lib/guest-lib.sh
fsid=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a01
bad=5c1a6e2f-0d3b-4c1e-9a7f-0bad0bad0bad
S=/sys/fs/btrfs
mkdir -p /a /b /c
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }
# vfsid_of DEV: the virtual fsid named by the last "uses virtual fsid" line for DEV since the mark;
# the line names the device's major:minor too
vfsid_of() {
	mm=$(cat /sys/class/block/${1#/dev/}/dev)
	since | sed -n "s|.*BTRFS info: device $1 ($mm) uses virtual fsid \([0-9a-f-]*\), on-disk fsid \([0-9a-f-]*\)\$|\1 \2|p" | tail -n 1
}

[ -e $S/features/virtual_fsid ] || fail "no $S/features/virtual_fsid"
log "features/virtual_fsid: $(cat $S/features/virtual_fsid)"

must mount -t btrfs /dev/vda /a
[ "$(cat $S/$fsid/virtual_fsid)" = 0 ] || fail "$S/$fsid/virtual_fsid of a plain mount is not 0"
mark
must mount -t btrfs -o virtual_fsid /dev/vdb /b
since
set -- $(vfsid_of /dev/vdb)
v=${1:-} ondisk=${2:-}
[ -n "$v" ] || fail "no 'uses virtual fsid' log line for /dev/vdb"
[ "$ondisk" = $fsid ] || fail "mount log names on-disk fsid '$ondisk', expected $fsid"
[ "$v" != $fsid ] || fail "virtual fsid equals the on-disk fsid"
ls $S
[ -d $S/$v ] || fail "no $S/$v for the virtual_fsid mount"
[ "$(cat $S/$v/virtual_fsid)" = 1 ] || fail "$S/$v/virtual_fsid is not 1"
[ "$(cat $S/$v/metadata_uuid)" = $fsid ] || fail "$S/$v/metadata_uuid is $(cat $S/$v/metadata_uuid)"
[ "$(cat $S/$fsid/virtual_fsid)" = 0 ] || fail "the plain mount's virtual_fsid changed"
[ "$(ls $S | grep -c -- '-')" -eq 2 ] || fail "expected two instances in $S"
btrfs filesystem show /b >/tmp/show 2>&1
cat /tmp/show
grep -q "uuid: $v" /tmp/show || fail "btrfs filesystem show /b does not show the virtual fsid"
grep ' /b ' /proc/self/mounts | grep -q virtual_fsid || fail "/proc/self/mounts lacks virtual_fsid for /b"
if grep ' /a ' /proc/self/mounts | grep -q virtual_fsid; then fail "/a shows virtual_fsid"; fi
must umount /b
[ ! -e $S/$v ] || fail "$S/$v left behind after umount"
# the mount's "first mount" line and the unmount's "last unmount" line name one fsid, the on-disk one
first=$(since | sed -n 's/.*BTRFS info (device vdb): first mount of filesystem \([0-9a-f-]*\)$/\1/p')
last=$(since | sed -n 's/.*BTRFS info (device vdb): last unmount of filesystem \([0-9a-f-]*\)$/\1/p')
log "vdb: first mount of '$first', last unmount of '$last'"
[ "$first" = $fsid ] || fail "the first-mount line of vdb names '$first', expected the on-disk $fsid"
[ "$last" = "$first" ] || fail "the last-unmount line of vdb names '$last', the first-mount line '$first'"
must umount /a
must btrfs device scan --forget

# fsid mismatch, virtual_fsid: the error must print the fsid compared, the on-disk one
must dd if=/dev/vdc of=/tmp/good.sb bs=4096 skip=16 count=1
must dd if=/dev/vdd of=/tmp/bad.sb bs=4096 skip=16 count=1
swapper() {
	while [ ! -e /tmp/stop ]; do
		dd if=/tmp/bad.sb of=/dev/vdc bs=4096 seek=16 count=1 conv=notrunc 2>>/tmp/swap.log
		dd if=/tmp/good.sb of=/dev/vdc bs=4096 seek=16 count=1 conv=notrunc 2>>/tmp/swap.log
	done
}
swapper &
sw=$!
hit= i=0
while [ $i -lt 60 ] && [ -z "$hit" ]; do
	i=$((i + 1))
	mark
	mount -t btrfs -o ro,virtual_fsid /dev/vdc /c >>/tmp/mnt.log 2>&1 && umount /c
	btrfs device scan --forget >>/tmp/mnt.log 2>&1
	since >/tmp/new
	grep -q "superblock fsid doesn't match" /tmp/new && hit=$i
done
touch /tmp/stop
wait $sw
must dd if=/tmp/good.sb of=/dev/vdc bs=4096 seek=16 count=1 conv=notrunc
[ -n "$hit" ] || fail "no fsid mismatch in $i mounts racing the superblock swap"
cat /tmp/new
log "fsid mismatch at mount attempt $hit"
# every virtual fsid the racing mounts of this attempt registered vdc under (the swap can make one
# attempt scan vdc more than once, each time reading whichever superblock was there)
mm=$(cat /sys/class/block/vdc/dev)
vfsids=$(since | sed -n "s|.*BTRFS info: device /dev/vdc ($mm) uses virtual fsid \([0-9a-f-]*\), on-disk fsid .*|\1|p")
[ -n "$vfsids" ] || fail "no 'uses virtual fsid' line for the mount that hit the mismatch"
line=$(grep "superblock fsid doesn't match fsid of fs_devices" /tmp/new | tail -n 1)
read_fsid=$(echo "$line" | sed -n 's/.*fs_devices: \([0-9a-f-]*\) != \([0-9a-f-]*\)$/\1/p')
cmp_fsid=$(echo "$line" | sed -n 's/.*fs_devices: \([0-9a-f-]*\) != \([0-9a-f-]*\)$/\2/p')
log "virtual fsids of vdc: $(echo $vfsids); mismatch line: read $read_fsid, compared $cmp_fsid"
for vc in $vfsids; do
	[ "$cmp_fsid" != "$vc" ] || fail "mismatch line prints the random in-memory fsid $vc"
done
# what is compared is an on-disk fsid (one of the two the swap writes), not the one just read
case "$read_fsid/$cmp_fsid" in
$bad/$fsid | $fsid/$bad) ;;
*) fail "unexpected fsids in the mismatch line (want the two on-disk fsids): $line" ;;
esac
pass
