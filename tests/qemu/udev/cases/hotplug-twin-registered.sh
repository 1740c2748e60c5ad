#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos-ab hotplug=1 timeout=120 rules=gate state=steamos append='root=PARTLABEL=rootfs-A'
# Hotplug with the twin already registered: boot with the A disk alone, register everything with
# `btrfs device scan` (outside the helper), then attach the B disk. The helper must forget the
# registered A copies; the end state must equal the cold boot's (expected/steamos.state).
. /lib/guest-lib.sh
. /lib/system-lib.sh
must sys_gate_boot
sys_udev_coldplug
must btrfs device scan
for l in rootfs-A var-A; do
    [ "$(sys_registered "$(sys_dev $l)")" = yes ] || fail "$l not registered before the hotplug"
done
log "before hotplug: skip_scan=[$(sys_skip_labels)], rootfs-A and var-A registered"
sys_hotplug d1 rootfs-B var-B
sys_state_dump
sed 's/^/guest: status: /' /tmp/status.txt
sys_check_gated_state
pass
