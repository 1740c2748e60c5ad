#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=usb-before-disk timeout=360 rules=gate append='root=UUID=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a11'
# ctest-labels: v4-proofs
# A USB stick with a copy of the internal disk, present at power-on; the internal disk appears after
# udevd's coldplug (PCI remove before the unit's `boot`, rescan later); root=UUID= names the internal
# filesystem. Sampled every 0.2 s from before udevd until the internal disk is settled,
# /dev/disk/by-uuid, by-label, by-partuuid and by-partlabel never resolve to the stick; then they
# name the internal partition, the stick is SYSTEMD_READY=0, listed, unregistered, and UUID= mounts
# the internal disk (see sys_usb_copy_before_disk). On 5430f93's helper the stick's copy is
# `skip untrusted` with link_priority=-100 only: alone, it owns every link for the whole window.
. /lib/guest-lib.sh
. /lib/system-lib.sh
[ -w /sys/module/btrfs/parameters/skip_scan ] || fail "patched module without a writable skip_scan"
sys_usb_copy_before_disk
