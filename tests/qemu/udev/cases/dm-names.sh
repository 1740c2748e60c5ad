#!/bin/sh
# qemu-case: kernel=6.1 module=patched disks=clone2 timeout=360 rules=gate kmods='dm-mod'
# The device-mapper rule (issue 10 item 6a, docs/SECURITY.md): 64-btrfs.rules runs the helper a
# second time as `udev /dev/mapper/$env{DM_NAME}` for a scanned dm device; RUN+= splits on blanks,
# so only names of [A-Za-z0-9_.+-] other than "." and ".." may get there. Debian's dmsetup and dm
# rules (55-dm, 60-persistent-storage-dm, 95-dm-notify, with udev sync) run in the guest. Over vdc,
# three dm devices each with its own btrfs (-M, unique fsid, so the helper decides `scan` and the
# rule fires): "bsg --config evil.conf" (created with --manglename none, so the kernel's name has
# the blanks), ".." and "bsg-normal"; over vdb (a byte-identical clone of vda) "bsg-clone". A shell
# wrapper in place of the helper logs every argv. Passes when no invocation carried the hostile
# name's words (no `--config`, no `evil.conf`, no /dev/mapper/..), the helper was called with
# exactly `udev /dev/mapper/bsg-normal`, and every dm device is decided (hostile ones through their
# dm-N event: scan unique; bsg-clone: skip clone). Fails with the rule of 68d5ef8 (no name filter).
. /lib/guest-lib.sh
. /lib/system-lib.sh

rules=$(ls /lib/udev/rules.d/64-btrfs.rules /etc/udev/rules.d/64-btrfs.rules 2>/dev/null | head -n 1)
[ -n "$rules" ] || fail "no staged 64-btrfs.rules"
log "dm rule: $(grep 'dev/mapper' "$rules" | grep -v '^#')"
H=$(sed -n 's/^IMPORT{program}="\([^" ]*\) udev .*/\1/p' "$rules" | head -n 1)
[ -n "$H" ] && [ -x "$H" ] || fail "helper '$H' of $rules not found"
# every invocation of the helper logged as |arg|arg|..., one line each (one write: O_APPEND)
mv "$H" "$H.real" || fail "cannot move $H"
cat >"$H" <<W
#!/bin/sh
a=
for x in "\$@"; do a="\$a|\$x"; done
echo "\$a" >>/run/bsg-argv.log
exec $H.real "\$@"
W
chmod 755 "$H"
: >/run/bsg-argv.log
# what the hostile name would make the helper load (udev workers run in /)
echo "# written by dm-names.sh: no helper invocation may be given this file" >/evil.conf

must sys_gate_boot
sys_udev_coldplug
[ -e /dev/mapper/control ] || fail "no /dev/mapper/control (dm-mod not loaded?)"

# dm_create NAME TABLE [dmsetup options]: created with udev sync (Debian's rules complete the cookie)
dm_create() {
    n=$1 t=$2
    shift 2
    timeout 60 dmsetup "$@" create "$n" --table "$t" >/tmp/dm.log 2>&1
    rc=$?
    sed 's/^/guest: dmsetup: /' /tmp/dm.log
    log "dmsetup create '$n' ($t): exit $rc"
    return $rc
}
# dm_node NAME: /dev/dm-N of the dm device whose kernel name is NAME
dm_node() {
    for s in /sys/block/dm-*; do
        [ -e "$s/dm/name" ] || continue
        [ "$(cat "$s/dm/name")" = "$1" ] && { echo "/dev/${s##*/}"; return 0; }
    done
    return 1
}

S=163840  # 80 MiB in sectors; vdc is 256 MiB
HOSTILE="bsg --config evil.conf"
must dm_create "$HOSTILE" "0 $S linear /dev/vdc 0" --manglename none
if dm_create ".." "0 $S linear /dev/vdc $S" --manglename none; then DOTDOT=1; else DOTDOT=; fi
must dm_create bsg-normal "0 $S linear /dev/vdc $((2 * S))"
must dm_create bsg-clone "0 $(cat /sys/block/vdb/size) linear /dev/vdb 0"
HN=$(dm_node "$HOSTILE") || fail "no dm device named '$HOSTILE': $(cat /sys/block/dm-*/dm/name | tr '\n' ';')"
NN=$(dm_node bsg-normal) || fail "no dm device bsg-normal"
CN=$(dm_node bsg-clone) || fail "no dm device bsg-clone"
DN=
[ -n "$DOTDOT" ] && { DN=$(dm_node ..) || fail "dmsetup created '..' but no dm device has that name"; }
log "dm devices: '$HOSTILE'=$HN '..'=${DN:-refused} bsg-normal=$NN bsg-clone=$CN"
for d in $HN $DN $NN; do
    mkfs.btrfs -q -f -M "$d" >/tmp/mkfs.log 2>&1 || { cat /tmp/mkfs.log; fail "mkfs.btrfs $d"; }
done
must udevadm settle --timeout=60
# the events of the dm devices again, as a coldplug would replay them
must udevadm trigger --action=change --subsystem-match=block --sysname-match='dm-*'
must udevadm settle --timeout=60
sleep 1
must udevadm settle --timeout=60

sed 's/^/guest: argv: /' /run/bsg-argv.log
for d in $HN $DN $NN $CN; do
    sys_props "$d"
    dmname=$(udevadm info -q property -n "$d" | sed -n 's/^DM_NAME=//p')
    log "$d DM_NAME='$dmname' fs=$P_ID_FS_TYPE decision=$P_BTRFS_SCAN_GATE_DECISION reason=$P_BTRFS_SCAN_GATE_REASON ready=$P_ID_BTRFS_READY"
done
[ "$(udevadm info -q property -n "$HN" | sed -n 's/^DM_NAME=//p')" = "$HOSTILE" ] ||
    fail "udev's DM_NAME of $HN is not '$HOSTILE' (the case tests nothing)"

# 1. the hostile names never reached the helper (as options, or as /dev/mapper/..)
if grep -e '--config' -e 'evil' -e '|/dev/mapper/\.\.*$' -e '|/dev/mapper/bsg$' /run/bsg-argv.log >/tmp/bad.log; then
    sed 's/^/guest: hostile argv: /' /tmp/bad.log
    fail "the helper was run with words of a hostile dm name: $(head -n 1 /tmp/bad.log)"
fi
# 2. the safe name did, alone
grep -qx '|udev|/dev/mapper/bsg-normal' /run/bsg-argv.log || fail "the helper was never run as 'udev /dev/mapper/bsg-normal'"
# 3. every dm device is decided through its own dm-N event
for d in $HN $DN $NN; do
    grep -qx "|udev|$d" /run/bsg-argv.log || fail "the helper was never run for $d"
    [ "$(sys_prop "$d" BTRFS_SCAN_GATE_DECISION)" = scan ] || fail "$d: decision $(sys_prop "$d" BTRFS_SCAN_GATE_DECISION), expected scan"
    [ "$(sys_prop "$d" BTRFS_SCAN_GATE_REASON)" = unique ] || fail "$d: reason $(sys_prop "$d" BTRFS_SCAN_GATE_REASON), expected unique"
done
[ "$(sys_prop "$CN" BTRFS_SCAN_GATE_DECISION)" = skip ] || fail "$CN (bsg-clone): decision $(sys_prop "$CN" BTRFS_SCAN_GATE_DECISION), expected skip"
[ "$(sys_prop "$CN" BTRFS_SCAN_GATE_REASON)" = clone ] || fail "$CN (bsg-clone): reason $(sys_prop "$CN" BTRFS_SCAN_GATE_REASON), expected clone"
[ "$(sys_registered "$CN")" = no ] || fail "$CN (bsg-clone) is registered with the kernel"
# the kernel's name for the safe one is the /dev/mapper path the rule gave it
btrfs-scan-gate status >/tmp/status.txt 2>&1
sed 's/^/guest: status: /' /tmp/status.txt
[ -n "$DOTDOT" ] || log "note: the kernel refused a dm device named '..' (dm's own check): that part of the rule is not exercised here"
pass
