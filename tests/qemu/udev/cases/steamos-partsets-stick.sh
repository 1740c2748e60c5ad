#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=steamos-usb timeout=300 rules=gate append='root=PARTLABEL=rootfs-A'
# SteamOS's own rules after the gate's (issue 20 item 3): SteamOS generates
# /run/udev/rules.d/90-steamos-partsets-<set>.rules, one line per partition of the set matched by
# PARTUUID, each setting UDISKS_IGNORE="0" and a /dev/disk/by-partsets/<set>/<name> link. They run
# after the gate's 64- rules, and a dd copy of the disk on a USB stick carries the same PARTUUIDs,
# so the rule also matches the copy. Here the rule of set A names rootfs-A's PARTUUID and the
# stick's (the harness gives the stick a PARTUUID of its own; a rule naming both is what a dd copy
# meets). In every event order (the unit's `boot` then coldplug; change events with the stick
# first; with the stick last) the stick stays `skip`, listed, unregistered, UDISKS_IGNORE=1 (the
# gate's 99-btrfs-scan-gate-late.rules) and does not own by-partsets/A/rootfs; the internal
# rootfs-A keeps SteamOS's UDISKS_IGNORE=0 and the link. The contrast: with the late rules file
# taken away the same event leaves the stick at UDISKS_IGNORE=0, so the case can fail.
. /lib/guest-lib.sh
. /lib/system-lib.sh

sys_usb_part rootfs-A
USB=$SYS_USB_PART
INT=$(sys_dev rootfs-A)
case $INT in /dev/vd*) ;; *) INT=; for u in /sys/class/block/vd*[0-9]; do grep -qx 'PARTNAME=rootfs-A' "$u/uevent" && INT=/dev/${u##*/}; done ;; esac
[ -n "$INT" ] || fail "no internal rootfs-A"
int_uuid=$(blkid -p -s PART_ENTRY_UUID -o value "$INT")
usb_uuid=$(blkid -p -s PART_ENTRY_UUID -o value "$USB")
[ -n "$int_uuid" ] && [ -n "$usb_uuid" ] || fail "no PARTUUIDs: internal '$int_uuid', stick '$usb_uuid'"
log "internal rootfs-A: $INT ($int_uuid); USB copy: $USB ($usb_uuid)"

mkdir -p /run/udev/rules.d
printf 'ENV{ID_PART_ENTRY_SCHEME}=="gpt", ENV{ID_PART_ENTRY_UUID}=="%s|%s", SYMLINK+="disk/by-partsets/A/rootfs", ENV{UDISKS_IGNORE}="0"\n' \
    "$int_uuid" "$usb_uuid" >/run/udev/rules.d/90-steamos-partsets-A.rules
late=
for f in /etc/udev/rules.d /lib/udev/rules.d /usr/lib/udev/rules.d; do
    [ -e "$f/99-btrfs-scan-gate-late.rules" ] && late=$f/99-btrfs-scan-gate-late.rules
done
[ -n "$late" ] || fail "the gate's 99-btrfs-scan-gate-late.rules is not installed"

check() {
    what=$1
    sys_props "$USB"
    log "$what: USB $USB: decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON udisks-ignore=$P_UDISKS_IGNORE"
    [ "$P_BTRFS_SCAN_GATE_DECISION" = skip ] || fail "$what: USB decision $P_BTRFS_SCAN_GATE_DECISION"
    [ "$P_UDISKS_IGNORE" = 1 ] || fail "$what: USB UDISKS_IGNORE=$P_UDISKS_IGNORE after SteamOS's rule"
    sys_listed "$USB" || fail "$what: $USB not in skip_scan"
    [ "$(sys_registered "$USB")" = no ] || fail "$what: $USB is registered with the kernel"
    sys_props "$INT"
    [ "$P_UDISKS_IGNORE" = 0 ] || fail "$what: internal rootfs-A UDISKS_IGNORE=$P_UDISKS_IGNORE, expected SteamOS's 0"
    t=$(target /dev/disk/by-partsets/A/rootfs)
    log "$what: by-partsets/A/rootfs -> $t"
    [ "$t" = "$INT" ] || fail "$what: /dev/disk/by-partsets/A/rootfs -> $t, expected the internal $INT"
    tlog "$what: the stick stays gated under SteamOS's rule"
}

[ -w /sys/module/btrfs/parameters/skip_scan ] || fail "patched module without a writable skip_scan"
must sys_gate_boot
sys_udev_coldplug
check coldplug

sys_change_first "$USB"
check stick-first

sys_change_last "$USB"
check stick-last

# the contrast: without the late rules SteamOS's 0 wins on the stick
must mv "$late" /tmp/late.rules
must udevadm control --reload
must udevadm trigger --action=change "/sys/class/block/${USB#/dev/}"
must udevadm settle --timeout=60
sys_props "$USB"
log "without $late: USB UDISKS_IGNORE=$P_UDISKS_IGNORE"
[ "$P_UDISKS_IGNORE" = 0 ] || fail "contrast: without the late rules the stick has UDISKS_IGNORE=$P_UDISKS_IGNORE, not SteamOS's 0: the case proves nothing"
must mv /tmp/late.rules "$late"
pass
