#!/bin/sh
# qemu-case: kernel=6.1 module=stock disks=basic-sata timeout=600 rules=stock bins='sgdisk wipefs' udevrules='60-block.rules' append='root=PARTUUID=5c1a6e2f-0d3b-4c1e-9a7f-0000000b0001'
# ctest-labels: v4-proofs
# The baseline of btrfs-basic-gate: the same seven steps with systemd's stock 64-btrfs.rules and
# Debian's stock 6.1 module, no gate. Must pass (7 of 7): what the gate case expects is what
# systemd's rules give.
. /lib/guest-lib.sh
. /lib/system-lib.sh
sys_udev_coldplug
sys_btrfs_basic
