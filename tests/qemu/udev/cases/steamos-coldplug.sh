#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos timeout=120 rules=gate state=steamos append='root=PARTLABEL=rootfs-A'
# The whole chain on the SteamOS-like disk, patched 6.1 module: the unit's `btrfs-scan-gate boot`,
# then Debian's systemd-udevd with the installed rules and helper replays coldplug. No clone is
# registered (by udev, or by a later `btrfs device scan`), skip_scan holds the four clones, home is
# registered, both slots of rootfs and of var mount at once with -o virtual_fsid, and the links
# point at the active slot (A, from root=PARTLABEL=rootfs-A). The state dump is the reference the
# hotplug cases are compared with (expected/steamos.state).
. /lib/guest-lib.sh
. /lib/system-lib.sh
[ -w /sys/module/btrfs/parameters/skip_scan ] || fail "patched module without a writable skip_scan"
must sys_gate_boot
[ "$(sys_skip_labels)" = "rootfs-A rootfs-B var-A var-B" ] || fail "skip_scan after boot: $(sys_skip_labels)"
sys_udev_coldplug
sys_state_dump
sed 's/^/guest: status: /' /tmp/status.txt
sys_check_gated_state
pass
