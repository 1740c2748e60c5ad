#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos timeout=300 rules=gate append='rauc.slot=system1'
# Slots from RAUC reach udev (issue 12, "Slots from the platform"; docs/SECURITY.md "Slots come
# from trusted places only"): the SteamOS-like disk with /etc/rauc/system.conf naming rootfs-A/B
# as slots rootfs.0/rootfs.1 (bootnames system0/system1, device= by /dev/vdaN) and var-A/B as
# their children var.0/var.1 (parent=, no bootname of their own), and rauc.slot=system1 on the
# command line. After the unit's `boot` and coldplug: every slot carries SLOT=SYSTEM0|SYSTEM1,
# SLOT_SCHEME=rauc, SLOT_BASE = the slot class; system1 (rootfs-B, var-B) is active and owns
# by-uuid, by-label and by-slot/active/{rootfs,var}; system0 is by-slot/other and UDISKS_IGNORE=1;
# status says the active slot came from rauc.slot; both slots mount at once with virtual_fsid.
# Without RAUC the label suffixes would make the slots A/B and rauc.slot=system1 would name none.
. /lib/guest-lib.sh
. /lib/system-lib.sh

mkdir -p /etc/rauc
cat >/etc/rauc/system.conf <<C
[system]
compatible=btrfs-scan-gate-test
bootloader=custom

[slot.rootfs.0]
device=$(sys_dev rootfs-A)
type=raw
bootname=system0

[slot.rootfs.1]
device=$(sys_dev rootfs-B)
type=raw
bootname=system1

[slot.var.0]
device=$(sys_dev var-A)
type=raw
parent=rootfs.0

[slot.var.1]
device=$(sys_dev var-B)
type=raw
parent=rootfs.1
C
sed 's/^/guest: system.conf: /' /etc/rauc/system.conf

[ -w /sys/module/btrfs/parameters/skip_scan ] || fail "patched module without a writable skip_scan"
must sys_gate_boot
sys_udev_coldplug
sys_state_dump
sed 's/^/guest: status: /' /tmp/status.txt
sys_expect "skip_scan: rootfs-A rootfs-B var-A var-B"
for l in rootfs var; do
    sys_expect "$l-A: fs=btrfs decision=skip reason=clone slot=SYSTEM0 slot-base=$l slot-active=0 .* udisks-ignore=1 in-skip-scan=yes registered=no"
    sys_expect "$l-B: fs=btrfs decision=skip reason=clone slot=SYSTEM1 slot-base=$l slot-active=1 .* udisks-ignore=- in-skip-scan=yes registered=no"
    for s in A B; do
        scheme=$(udevadm info -q property -n "$(sys_dev $l-$s)" | sed -n 's/^BTRFS_SCAN_GATE_SLOT_SCHEME=//p')
        [ "$scheme" = rauc ] || fail "$l-$s: BTRFS_SCAN_GATE_SLOT_SCHEME='$scheme', expected rauc"
    done
    sys_expect "link by-slot/active/$l -> $l-B"
    sys_expect "link by-slot/other/$l -> $l-A"
done
sys_expect "link by-uuid/$ROOT_FSID -> rootfs-B"
sys_expect "link by-uuid/$VAR_FSID -> var-B"
sys_expect "link by-label/rootfs -> rootfs-B"
sys_expect "active slot: SYSTEM1 .*rauc.slot.*"

mkdir -p /ra /rb
must mount -o virtual_fsid /dev/disk/by-slot/active/rootfs /ra
must mount -o virtual_fsid /dev/disk/by-slot/other/rootfs /rb
[ "$(readlink -f "$(awk '$2 == "/ra" { print $1 }' /proc/mounts)")" = "$(sys_dev rootfs-B)" ] || fail "/ra is not rootfs-B"
grep -q steamos /ra/etc/os-release || fail "rootfs-B content"
grep -q steamos /rb/etc/os-release || fail "rootfs-A content"
must umount /ra
must umount /rb
pass
