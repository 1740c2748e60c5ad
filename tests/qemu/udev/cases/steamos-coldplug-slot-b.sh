#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos timeout=120 rules=gate state=steamos-slot-b append='btrfs-scan-gate.slot=B'
# As steamos-coldplug, with slot B active (the helper's own btrfs-scan-gate.slot=B on the kernel
# command line): the shared links move to the B partitions although A's events come first, and the
# A clones get UDISKS_IGNORE=1.
. /lib/guest-lib.sh
. /lib/system-lib.sh
must sys_gate_boot
sys_udev_coldplug
sys_state_dump
sed 's/^/guest: status: /' /tmp/status.txt
sys_check_gated_state B
pass
