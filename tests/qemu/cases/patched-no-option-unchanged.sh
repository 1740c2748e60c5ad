#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=120
# Patched 6.1 without -o virtual_fsid behaves as stock 6.1 (compare baseline-second-clone and
# baseline-generation-race): the second clone does not mount while the first is (EEXIST,
# "duplicate device /dev/vdb devid 1 generation N scanned by mount"), and after a scan of the
# written, higher-generation clone A the lower-generation B does not mount (EEXIST, "already
# registered with a higher generation, found N expect M") until the devices are forgotten.
# Nothing in the log mentions a virtual fsid.
. /lib/guest-lib.sh
mkdir -p /a /b
mark() { n0=$(dmesg | wc -l); }
since() { dmesg | tail -n +$((n0 + 1)); }

must mount -t btrfs /dev/vda /a
mark
if mount -t btrfs /dev/vdb /b 2>/tmp/err; then fail "second clone mounted without virtual_fsid"; fi
cat /tmp/err
grep -q 'File exists' /tmp/err || fail "second clone: not EEXIST"
since | grep -E 'duplicate device /dev/vdb devid 1 generation [0-9]+ scanned by mount' ||
	fail "no stock 'duplicate device' line"
must umount /a

# the generation race
must mount -t btrfs /dev/vda /a
echo data >/a/f
must sync
must umount /a
must btrfs device scan /dev/vda
mark
if mount -t btrfs /dev/vdb /b 2>/tmp/err; then fail "lower-generation clone mounted after a scan of A"; fi
cat /tmp/err
grep -q 'File exists' /tmp/err || fail "race: not EEXIST"
since | grep -E 'device /dev/vdb already registered with a higher generation, found [0-9]+ expect [0-9]+' ||
	fail "no stock 'higher generation' line"
must btrfs device scan --forget
must mount -t btrfs /dev/vdb /b
[ ! -e /b/f ] || fail "vdb shows A's file"
must umount /b
if dmesg | grep -E 'virtual fsid|virtual_fsid'; then fail "a mount without the option logged a virtual fsid"; fi
pass
