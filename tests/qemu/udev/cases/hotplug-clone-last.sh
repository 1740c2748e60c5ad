#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos-ab hotplug=1 timeout=120 rules=gate state=steamos append='root=PARTLABEL=rootfs-A'
# Hotplug, original first: boot with the A disk (esp, rootfs-A, var-A, home) alone; A's copies are
# unique then and get scanned. Then the B disk (rootfs-B, var-B) is attached to the running guest
# (device_add): the helper must skip both copies of each clone pair and forget the A copies it had
# registered. The end state must equal the cold boot's (expected/steamos.state).
. /lib/guest-lib.sh
. /lib/system-lib.sh
must sys_gate_boot
sys_udev_coldplug
log "before hotplug: skip_scan=[$(sys_skip_labels)] status:"
btrfs-scan-gate status 2>&1 | sed 's/^/guest: status-before: /'
sys_hotplug d1 rootfs-B var-B
sys_state_dump
sed 's/^/guest: status: /' /tmp/status.txt
sys_check_gated_state
pass
