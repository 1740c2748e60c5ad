#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos-ab hotplug=0 timeout=120 rules=gate state=steamos append='root=PARTLABEL=rootfs-A'
# Hotplug, clone first: boot with the B disk (rootfs-B, var-B: the inactive slot) alone, then
# attach the A disk (esp, rootfs-A, var-A, home) to the running guest. The end state must equal the
# cold boot's (expected/steamos.state).
. /lib/guest-lib.sh
. /lib/system-lib.sh
must sys_gate_boot
sys_udev_coldplug
log "before hotplug: skip_scan=[$(sys_skip_labels)] status:"
btrfs-scan-gate status 2>&1 | sed 's/^/guest: status-before: /'
sys_hotplug d0 esp rootfs-A var-A home
sys_state_dump
sed 's/^/guest: status: /' /tmp/status.txt
sys_check_gated_state
pass
