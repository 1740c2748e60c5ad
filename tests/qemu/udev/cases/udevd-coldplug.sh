#!/bin/sh
# qemu-case: kernel=6.1 module=stock disks=clone2 timeout=240
# Real systemd-udevd (Debian's) with the installed gate rules and helper: boot step, coldplug,
# settle; on the stock module the helper must see no skip_scan and one clone must mount.
. /lib/guest-lib.sh
mkdir -p /run/udev /etc/udev
# exit 3: the stock module has no skip_scan, the clone pair's list cannot be applied (issue 20 item 5)
rc=0
btrfs-scan-gate boot || rc=$?
[ "$rc" = 3 ] || fail "boot on the stock module exited $rc, not 3 (list not applicable)"
/lib/systemd/systemd-udevd --daemon >/tmp/udevd.log 2>&1 || fail "systemd-udevd did not start"
must udevadm trigger --type=subsystems --action=add
must udevadm trigger --type=devices --action=add
must udevadm settle --timeout=60
log "by-uuid: $(ls -l /dev/disk/by-uuid/ 2>&1 | grep -v total)"
udevadm info /dev/vda | sed 's/^/guest: vda: /'
udevadm info /dev/vdb | sed 's/^/guest: vdb: /'
btrfs-scan-gate status | sed 's/^/guest: status: /'
udevadm info /dev/vda | grep -q BTRFS_SCAN_GATE_DECISION || fail "gate rules did not run on vda"
[ -e /sys/module/btrfs/parameters/skip_scan ] && fail "stock module has skip_scan"
mkdir -p /a && must mount /dev/disk/by-uuid/5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a01 /a
pass
