#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=150
# Patched 6.1 (issue 19, bug 1): skip_scan never keeps a device from the mounted filesystem
# that has it open; such a scan registers nothing new, as without the list.
#  (a) vda mounted with virtual_fsid through a temporary node that is then deleted, vda listed:
#      `btrfs device scan /dev/vda` still renames the mounted device (/proc/mounts shows
#      /dev/vda, not the deleted node). v3 skipped the scan and kept the dead name.
#  (b) vdb+vdc made a raid1 and mounted, vdc listed: `btrfs device ready /dev/vdc` answers
#      ready (0), as stock does for a mounted member; v3 answered "not ready" from the
#      superblock. Unmounted, the listed member answers "not ready" again and is not registered.
. /lib/guest-lib.sh
P=/sys/module/btrfs/parameters/skip_scan
mkdir -p /a /b
errs=
# both parts run, each failure is reported at the end
bad() { log "FAILED: $*"; errs="$errs; $*"; }
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }

log "(a) rename of a listed device open in a virtual_fsid mount"
set -- $(cat /sys/block/vda/dev | tr ':' ' ')
must mknod /dev/tmpnode b "$1" "$2"
must mount -t btrfs -o virtual_fsid /dev/tmpnode /a
must rm /dev/tmpnode
grep ' /a ' /proc/self/mounts
echo /dev/vda >$P || fail "cannot set skip_scan"
mark
must btrfs device scan /dev/vda
since
grep ' /a ' /proc/self/mounts
grep -q '^/dev/vda /a ' /proc/self/mounts ||
	bad "/proc/mounts still shows the deleted node for /a after a scan of the listed /dev/vda"
since | grep -q 'skip_scan: not registering /dev/vda' &&
	bad "the scan of /dev/vda, open in /a, was skipped"
must touch /a/f
must umount /a

log "(b) readiness of a listed member of a mounted raid1"
echo >$P
must mkfs.btrfs -q -f -d raid1 -m raid1 /dev/vdb /dev/vdc
must btrfs device scan --forget
must btrfs device scan /dev/vdc
must mount -t btrfs /dev/vdb /b
echo /dev/vdc >$P || fail "cannot set skip_scan"
mark
btrfs device ready /dev/vdc
rc=$?
since
[ "$rc" -eq 0 ] || bad "btrfs device ready /dev/vdc (listed member of the mounted raid1 /b): exit $rc, expected 0 (ready)"
must umount /b
must btrfs device scan --forget
mark
btrfs device ready /dev/vdc
rc=$?
since
[ "$rc" -eq 1 ] || fail "btrfs device ready /dev/vdc (listed, unmounted raid1 member): exit $rc, expected 1"
since | grep -q 'skip_scan: not registering /dev/vdc (listed as /dev/vdc)' ||
	fail "no 'not registering /dev/vdc' line for the unmounted member"
must btrfs check --readonly /dev/vda
[ -z "$errs" ] || fail "${errs#; }"
pass
