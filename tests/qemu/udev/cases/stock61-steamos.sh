#!/bin/sh
# qemu-case: kernel=6.1 module=stock disks=steamos timeout=120 rules=gate state=stock61 append='root=PARTLABEL=rootfs-A'
# The gate rules, unit and helper on Debian's STOCK 6.1 module (no skip_scan, no virtual_fsid) do
# no harm: the helper says what the kernel lacks, udev registers no clone (so no generation race
# can make the active slot unmountable), the links point at the active slot, and the active slot
# of rootfs and of var mounts (the other slot cannot, as on any stock 6.1: "File exists").
. /lib/guest-lib.sh
. /lib/system-lib.sh
[ -e /sys/module/btrfs/parameters/skip_scan ] && fail "the stock module has skip_scan"
# exit 3 (the unit's SuccessExitStatus=3): decided, but the stock module cannot apply the list
rc=0
sys_gate_boot || rc=$?
[ "$rc" = 3 ] || fail "boot on the stock module exited $rc, not 3 (list not applicable)"
grep -q 'skip list not applied' /tmp/gate-boot.log || fail "boot does not say that the skip list is not applied"
sys_udev_coldplug
sys_state_dump
sed 's/^/guest: status: /' /tmp/status.txt
grep -qx 'kernel: control present, skip_scan absent (unpatched), virtual_fsid no, temp_fsid no' /tmp/status.txt ||
    fail "status does not report the stock kernel: $(head -n 1 /tmp/status.txt)"
sys_expect "skip_scan: (absent)"
for l in $SYS_CLONES; do sys_expect "$l: fs=btrfs decision=skip reason=clone .* registered=no"; done
sys_expect "home: fs=btrfs decision=scan reason=unique .* registered=yes"
sys_expect "link by-uuid/$ROOT_FSID -> rootfs-A"
sys_expect "link by-slot/active/rootfs -> rootfs-A"
sys_expect "link by-slot/other/rootfs -> rootfs-B"
sys_expect "rootfs-B: .* udisks-ignore=1 .*"
mkdir -p /ra /rb /va /home
must mount /dev/disk/by-uuid/$ROOT_FSID /ra
must mount /dev/disk/by-slot/active/var /va
must mount /dev/disk/by-uuid/$HOME_FSID /home
grep -q steamos /ra/etc/os-release || fail "rootfs-A content"
if mount /dev/disk/by-slot/other/rootfs /rb 2>/tmp/mount-b.log; then
    fail "the second slot mounted on the stock 6.1 module (unexpected: no virtual_fsid here)"
fi
log "second slot on stock 6.1, as expected: $(cat /tmp/mount-b.log)"
log "mounted: $(grep btrfs /proc/mounts | tr '\n' ';')"
must umount /ra
must umount /va
must umount /home
pass
