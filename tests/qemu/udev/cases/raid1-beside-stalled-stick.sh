#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=raid-2disk-stall timeout=480 rules=gate append='root=PARTUUID=5c1a6e2f-0d3b-4c1e-9a7f-000000000002'
# ctest-labels: v4-proofs
# An internal RAID1 (raid-2disk: vda2 and vdb1, the root; trusted_disk= names vdb by path, as in
# raid-root-2disk) beside a USB stick whose reads stall (QEMU throttles its drive to 512 bytes/s
# and a reader keeps it busy: every other read waits minutes, far beyond the helper's read budget)
# and which carries a btrfs of its own, colliding with nothing. The stick is there at power-on, so the unit's `boot` reads it. A
# stalled device's doubt is its own: with the members registered as an initramfs leaves them, after
# boot + coldplug and after change events of the members,
# both members are decided scan, registered, not listed; no run of the helper forgets an internal
# device (`forgot:/dev/vd...` in its output, which a wrapper logs, or in the kernel log); `boot`
# finishes within 30 s; the RAID1 mounts with both devices. On 5430f93's helper the stick's unknown
# record makes every scan of the members `skip in-doubt` and the plans forget them.
. /lib/guest-lib.sh
. /lib/system-lib.sh

RAID_FSID=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a05
[ -w /sys/module/btrfs/parameters/skip_scan ] || fail "patched module without a writable skip_scan"
[ -b /dev/vda2 ] && [ -b /dev/vdb1 ] || fail "partitions: $(ls /sys/class/block | tr '\n' ' ')"
# the stick: a whole disk under usb (its partition scan reads at 512 bytes/s too)
n=0 STICK=
while [ -z "$STICK" ] && [ $n -lt 900 ]; do
    for b in /sys/block/sd*; do
        [ -e "$b" ] && case $(readlink -f "$b") in */usb*) STICK=/dev/${b##*/} ;; esac
    done
    [ -n "$STICK" ] || { n=$((n + 1)); sleep 0.1; }
done
[ -n "$STICK" ] || fail "no USB disk after 90 s: $(ls /sys/block | tr '\n' ' ')"
# QEMU's throttle lets a request through when the drive was idle and makes the next one wait for
# the bytes before it: a reader that keeps the stick busy from power-on (far from its superblock,
# so nothing it reads is cached for the helper) makes every other read of it wait minutes
dd if=$STICK of=/dev/null bs=4k skip=25600 >/tmp/busy-reader.log 2>&1 &
tlog "stalling stick: $STICK (a reader keeps it busy)"

# every run of the helper logged with its arguments and its output (one line each, O_APPEND)
rules=$(ls /lib/udev/rules.d/64-btrfs.rules /etc/udev/rules.d/64-btrfs.rules 2>/dev/null | head -n 1)
H=$(sed -n 's/^IMPORT{program}="\([^" ]*\) udev .*/\1/p' "$rules" | head -n 1)
[ -n "$H" ] && [ -x "$H" ] || fail "helper '$H' of $rules not found"
mv "$H" "$H.real" || fail "cannot move $H"
cat >"$H" <<W
#!/bin/sh
out=\$($H.real "\$@" 2>>/run/bsg-stderr.log)
rc=\$?
printf '%s\n' "\$out" | sed "s|^|\$*: |" >>/run/bsg-out.log
[ -n "\$out" ] && printf '%s\n' "\$out"
exit \$rc
W
chmod 755 "$H"
: >/run/bsg-out.log
: >/run/bsg-stderr.log

pci=$(readlink -f /sys/class/block/vdb | sed -n 's|.*/\(0000:[0-9a-f:.]*\)/virtio[0-9]*/block/vdb$|\1|p')
[ -n "$pci" ] || fail "no PCI address for vdb: $(readlink -f /sys/class/block/vdb)"
echo "trusted_disk=/dev/disk/by-path/pci-$pci" >/etc/btrfs-scan-gate.conf

# the initramfs registered the root's members before it mounted the root (initramfs-tools' btrfs
# script runs `btrfs device scan`): registrations a stalled stick must not undo
must btrfs device scan /dev/vda2 /dev/vdb1 >/tmp/initramfs-scan.log 2>&1
read -r t0 _ </proc/uptime
sys_gate_boot || log "boot exited $?"
read -r t1 _ </proc/uptime
dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", b - a }')
expect "boot finished within 30 s (took $dt s)" [ "$dt" -le 30 ]

# coldplug as systemd-udev-trigger does; the stick's own event may take minutes (udev's blkid
# reads it at 512 bytes/s): wait for the members and the RAID's link, not for the whole queue
mkdir -p /run/udev /etc/udev
/lib/systemd/systemd-udevd --daemon >/tmp/udevd.log 2>&1 || fail "systemd-udevd did not start"
must udevadm trigger --type=subsystems --action=add
must udevadm trigger --type=devices --action=add
expect "coldplug: the members are initialized and the RAID has its by-uuid link" \
    udevadm wait --timeout=120 /dev/vda2 /dev/vdb1 /dev/disk/by-uuid/$RAID_FSID
sleep 2
# the rules' own replays of the members (udevadm trigger from RUN+=) are done before the checks
udevadm trigger --settle --action=change /sys/class/block/vda1 >/dev/null 2>&1
tlog "coldplug done (stick: $(udevadm info -q property -n $STICK 2>&1 | grep -E 'ID_FS_TYPE|BTRFS_SCAN_GATE_(DECISION|REASON)' | tr '\n' ' '))"

members() {
    what=$1
    for d in /dev/vda2 /dev/vdb1; do
        sys_props "$d"
        reg=$(sys_registered_unlisted "$d")
        log "$what: $d decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON action=$P_BTRFS_SCAN_GATE_ACTION systemd-ready=$P_SYSTEMD_READY registered=$reg"
        expect "$what: $d decided scan (got $P_BTRFS_SCAN_GATE_DECISION $P_BTRFS_SCAN_GATE_REASON)" [ "$P_BTRFS_SCAN_GATE_DECISION" = scan ]
        expect "$what: $d registered (got $reg)" [ "$reg" = yes ]
        expect "$what: $d not in skip_scan" sh -c "! grep -q '$d' /sys/module/btrfs/parameters/skip_scan"
        expect "$what: $d SYSTEMD_READY is not 0" [ "$P_SYSTEMD_READY" != 0 ]
    done
}
members coldplug
must udevadm trigger --settle --action=change /sys/class/block/vda2 /sys/class/block/vdb1
sleep 1
udevadm trigger --settle --action=change /sys/class/block/vda1 >/dev/null 2>&1
members change-events

mkdir -p /mnt/r
if mount /dev/disk/by-uuid/$RAID_FSID /mnt/r >/tmp/mount.log 2>&1; then
    good "the RAID1 mounts by UUID"
    btrfs filesystem show /mnt/r >/tmp/show.txt 2>&1
    sed 's/^/guest: show: /' /tmp/show.txt
    expect "the mounted RAID1 has two devices" grep -q 'Total devices 2' /tmp/show.txt
    expect "no member missing" sh -c '! grep -qi missing /tmp/show.txt'
    umount /mnt/r
else
    bad "the RAID1 mounts by UUID: $(cat /tmp/mount.log)"
fi

sed 's/^/guest: helper-out: /' /run/bsg-out.log | grep -v '=$' | grep -E 'DECISION|REASON|ACTION|ERROR|boot' | tail -n 40
sed 's/^/guest: helper-err: /' /run/bsg-stderr.log | tail -n 30
forgot=$(cat /run/bsg-out.log /tmp/gate-boot.log | grep -o 'forgot:/dev/vd[a-z0-9]*' | sort | uniq -c | tr '\n' ' ')
expect "no run of the helper forgot an internal device (${forgot:-none})" [ -z "$forgot" ]
expect "no kernel log line of the helper forgetting an internal device" \
    sh -c "! dmesg | grep 'btrfs-scan-gate' | grep -qi 'forg[eo]t.*/dev/vd'"
sys_props $STICK
log "stick $STICK: fs=$P_ID_FS_TYPE decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON error=$P_BTRFS_SCAN_GATE_ERROR"
sys_count_verdict
