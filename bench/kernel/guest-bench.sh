#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=900
#
# Guest side of bench/kernel/run.sh (a benchmark, not a test): one boot, patched module.
# kbench (static, appended to the initramfs by run.sh) does the timing; see kbench.c.
. /lib/guest-lib.sh

N_MOUNT=${N_MOUNT:-30}
N_SCAN=${N_SCAN:-60}
mkdir -p /a /b
[ -x /bin/kbench ] || fail "/bin/kbench missing from the initramfs"
[ -w /sys/module/btrfs/parameters/skip_scan ] || fail "not the patched module"
BTRFS=$(command -v btrfs) || fail "no btrfs in the guest"
log "bench: mount N=$N_MOUNT"
must /bin/kbench mount "$N_MOUNT" /dev/vdb /b /dev/vda /a
log "bench: scan N=$N_SCAN"
must /bin/kbench scan "$N_SCAN" /dev/vdb /sys/module/btrfs/parameters/skip_scan "$BTRFS"
pass
