#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos timeout=300 rules=gate append='root=PARTLABEL=rootfs-A'
# Slots from SteamOS's partsets reach udev (issue 12): /efi/SteamOS/partsets/{A,B,self,other,shared}
# ("NAME PARTUUID" lines; the harness's fixed PARTUUIDs ...0000000000<disk><partition>), `self`
# a copy of B. `self` outranks root=PARTLABEL=rootfs-A (which alone would make A active). After the
# unit's `boot` and coldplug: rootfs-B and var-B are SLOT=B SLOT_ACTIVE=1 SLOT_SCHEME=partsets and
# own by-uuid and by-label; rootfs-A/var-A are SLOT_ACTIVE=0, UDISKS_IGNORE=1; no /dev/disk/by-slot
# link exists (SteamOS's own rules make /dev/disk/by-partsets/{self,other}); status says the
# active slot came from partsets.
. /lib/guest-lib.sh
. /lib/system-lib.sh

U=5c1a6e2f-0d3b-4c1e-9a7f-0000000000
P=/efi/SteamOS/partsets
mkdir -p $P
printf 'rootfs %s02\nvar %s04\n' $U $U >$P/A
printf 'rootfs %s03\nvar %s05\n' $U $U >$P/B
cp $P/B $P/self
cp $P/A $P/other
printf 'efi %s01\nhome %s06\n' $U $U >$P/shared
[ "$(blkid -s PARTUUID -o value "$(sys_dev rootfs-B)")" = ${U}03 ] || fail "rootfs-B's PARTUUID is not ${U}03"

[ -w /sys/module/btrfs/parameters/skip_scan ] || fail "patched module without a writable skip_scan"
must sys_gate_boot
sys_udev_coldplug
sys_state_dump
sed 's/^/guest: status: /' /tmp/status.txt
sys_expect "skip_scan: rootfs-A rootfs-B var-A var-B"
for l in rootfs var; do
    sys_expect "$l-A: fs=btrfs decision=skip reason=clone slot=A slot-base=$l slot-active=0 .* udisks-ignore=1 in-skip-scan=yes registered=no"
    sys_expect "$l-B: fs=btrfs decision=skip reason=clone slot=B slot-base=$l slot-active=1 .* udisks-ignore=- in-skip-scan=yes registered=no"
    for s in A B; do
        scheme=$(udevadm info -q property -n "$(sys_dev $l-$s)" | sed -n 's/^BTRFS_SCAN_GATE_SLOT_SCHEME=//p')
        [ "$scheme" = partsets ] || fail "$l-$s: BTRFS_SCAN_GATE_SLOT_SCHEME='$scheme', expected partsets"
    done
done
sys_expect "link by-uuid/$ROOT_FSID -> rootfs-B"
sys_expect "link by-uuid/$VAR_FSID -> var-B"
sys_expect "link by-label/rootfs -> rootfs-B"
sys_expect "active slot: B .*partsets.*"
ls /dev/disk/by-slot/*/* 2>/dev/null && fail "by-slot links exist where partsets name the slots"
mkdir -p /ra
must mount -o virtual_fsid /dev/disk/by-uuid/$ROOT_FSID /ra
[ "$(readlink -f "$(awk '$2 == "/ra" { print $1 }' /proc/mounts)")" = "$(sys_dev rootfs-B)" ] || fail "/ra is not rootfs-B"
must umount /ra
pass
