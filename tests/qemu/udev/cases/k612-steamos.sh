#!/bin/sh
# qemu-case: kernel=6.12 module=stock disks=steamos timeout=120 rules=gate state=k612 append='root=PARTLABEL=rootfs-A'
# The gate rules, unit and helper on Debian's stock 6.12 kernel (upstream temp-fsid, no skip_scan):
# the helper reports temp_fsid, the links point at the active slot, and both slots of rootfs and
# of var mount at once without any option.
. /lib/guest-lib.sh
. /lib/system-lib.sh
[ -e /sys/fs/btrfs/features/temp_fsid ] || fail "6.12 without the temp_fsid feature"
must sys_gate_boot
sys_udev_coldplug
sys_state_dump
sed 's/^/guest: status: /' /tmp/status.txt
grep -qx 'kernel: control present, skip_scan absent (unpatched), virtual_fsid no, temp_fsid yes' /tmp/status.txt ||
    fail "status does not report temp_fsid: $(head -n 1 /tmp/status.txt)"
sys_expect "link by-uuid/$ROOT_FSID -> rootfs-A"
sys_expect "link by-slot/active/rootfs -> rootfs-A"
sys_expect "link by-slot/other/rootfs -> rootfs-B"
sys_expect "link by-slot/active/var -> var-A"
sys_expect "link by-slot/other/var -> var-B"
mkdir -p /ra /rb /va /vb /home
must mount /dev/disk/by-slot/active/rootfs /ra
must mount /dev/disk/by-slot/other/rootfs /rb
must mount /dev/disk/by-slot/active/var /va
must mount /dev/disk/by-slot/other/var /vb
must mount /dev/disk/by-uuid/$HOME_FSID /home
grep -q steamos /rb/etc/os-release || fail "rootfs-B content"
log "mounted: $(grep btrfs /proc/mounts | tr '\n' ';')"
for m in /ra /rb /va /vb /home; do must umount $m; done
pass
