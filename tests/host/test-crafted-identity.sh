#!/bin/bash
# Host test of issue 18 case 1 (identity is the kernel's) on real loop devices, --dry-run:
#   The crafted stick: a fresh mkfs.btrfs whose superblock is edited to incompat |= METADATA_UUID,
#   metadata_uuid = the root's fsid, dev_item.fsid = the root's fsid, the root's dev_item.uuid,
#   flags |= CHANGING_FSID_V2 (bit 36), generation 999999, checksum recomputed (dump-super [match]).
#   Linux 6.1 joins it to the root's filesystem (find_fsid_changed()) and, with the higher
#   generation, the root no longer mounts. It must be `skip fsid-changing` (listed, never scanned)
#   in `boot` and in `udev`, as a USB stick (ID_BUS=usb) and as a fixed disk; also with devid 2 and
#   num_devices 2. The same stick without the fsid-change flag (METADATA_UUID alone) on USB is
#   `skip untrusted-metadata-uuid`.
# Nothing is written to the kernel (--dry-run: no ioctl, no skip list, no state).
# env: BSG_HELPER (helper binary), BSG_HELPER_WRAPPER (command prefix, e.g. valgrind ...), TMPDIR.
set -euo pipefail
. "$(dirname "$0")/by-path.sh"
bsg_by_path_ns "$@"

helper=${BSG_HELPER:?BSG_HELPER must name the helper binary}
read -r -a wrapper <<<"${BSG_HELPER_WRAPPER:-}"
here=$(cd "$(dirname "$0")" && pwd)

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: not root (loop devices need root)"
    exit 77
fi
for tool in losetup mkfs.btrfs btrfs python3; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
modprobe loop >/dev/null 2>&1 || true
[ -e /dev/loop-control ] || { echo "SKIP: no loop support (/dev/loop-control missing)"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/bsg-identity.XXXXXX")
log=$work/tools.log
: >"$log"
echo "crafted-identity test: scratch $work, tool output in $log"
failed=0
cleanup() {
    local rc=$? l
    while read -r l; do
        losetup -d "$l" >>"$log" 2>&1 || true
    done < <(cat "$work/loops" 2>/dev/null)
    if [ "$rc" -eq 0 ] && [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "scratch kept: $work"; fi
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; failed=1; }
attach() { # attach FILE -> prints the loop device
    local l
    l=$(losetup --show -f "$1") || { echo "SKIP: losetup failed (no free loop device?)" >&2; exit 77; }
    echo "$l" >>"$work/loops"
    echo "$l"
}
detach() { losetup -d "$1" >>"$log" 2>&1 || true; }

printf 'clone_policy=skip-all\n' >"$work/gate.conf"
export BTRFS_SCAN_GATE_CONFIG=$work/gate.conf BTRFS_SCAN_GATE_RUNDIR=$work/run
mkdir -p "$work/run"

boot_dry() { # boot_dry OUT
    "${wrapper[@]}" "$helper" --dry-run -v boot >"$1" 2>"$1.err" || { cat "$1.err"; fail "boot --dry-run failed"; }
}
verdict() { awk -v d="$2" '$1 == d { print $2, $3 }' "$1"; }
expect_verdict() { # expect_verdict OUT DEVNODE "DECISION REASON" WHY
    local got
    got=$(verdict "$1" "$2")
    if [ "$got" = "$3" ]; then echo "ok: boot: $2 $got ($4)"; else fail "boot: $2: '$got', expected '$3' ($4)"; fi
}
listed() { case ",$(sed -n 's/^skip_scan=//p' "$1")," in *",$2,"*) return 0 ;; esac; return 1; }
udev_dry() { # udev_dry OUT DEVNODE [ENV=VALUE...]: the udev verb's KEY=VALUE lines
    local out=$1 dev=$2
    shift 2
    env DEVNAME="$dev" ID_PART_ENTRY_NAME=rootfs-B "$@" "${wrapper[@]}" "$helper" --dry-run udev "$dev" \
        >"$out" 2>"$out.err" || { cat "$out.err"; fail "udev --dry-run $dev failed"; }
}
expect_udev() { # expect_udev OUT DECISION REASON WHY
    local d r
    d=$(sed -n 's/^BTRFS_SCAN_GATE_DECISION=//p' "$1")
    r=$(sed -n 's/^BTRFS_SCAN_GATE_REASON=//p' "$1")
    if [ "$d $r" = "$2 $3" ]; then echo "ok: udev: $d $r ($4)"; else fail "udev: '$d $r', expected '$2 $3' ($4)"; fi
}

truncate -s 120M "$work/root.img"
mkfs.btrfs -f -L rootfs "$work/root.img" >>"$log" 2>&1 || { echo "FAIL: mkfs.btrfs"; exit 1; }
dump() { btrfs inspect-internal dump-super "$1" 2>>"$log"; }
fsid=$(dump "$work/root.img" | awk '$1 == "fsid" { print $2 }')
devuuid=$(dump "$work/root.img" | awk '$1 == "dev_item.uuid" { print $2 }')
if [ -z "$fsid" ] || [ -z "$devuuid" ]; then echo "FAIL: no fsid/dev_item.uuid of the root image"; exit 1; fi

craft() { # craft IMAGE [craft-super.py options]: a fresh filesystem, edited; dump-super must say [match]
    local img=$1
    shift
    truncate -s 120M "$img"
    BLKID_FILE=$work/blkid.tab mkfs.btrfs -f -L stick "$img" >>"$log" 2>&1 || { echo "FAIL: mkfs.btrfs $img"; exit 1; }
    python3 "$here/craft-super.py" "$img" "$@" >>"$log" 2>&1 || { echo "FAIL: craft-super.py $img, see $log"; exit 1; }
    dump "$img" >"$img.super"
    grep -q '^csum.*\[match\]' "$img.super" || { echo "FAIL: crafted $img: checksum not [match]"; exit 1; }
    grep -q "^metadata_uuid[[:space:]]*$fsid" "$img.super" || { echo "FAIL: crafted $img: metadata_uuid"; exit 1; }
}
craft "$work/stick.img" --metadata-uuid "$fsid" --dev-fsid "$fsid" --dev-uuid "$devuuid" --flags-or 1000000000 \
    --generation 999999
craft "$work/stick2.img" --metadata-uuid "$fsid" --dev-fsid "$fsid" --dev-uuid "$devuuid" --flags-or 1000000000 \
    --generation 999999 --devid 2 --num-devices 2
craft "$work/mu.img" --metadata-uuid "$fsid" --dev-fsid "$fsid" --generation 999999

root=$(attach "$work/root.img")
# loop devices are untrusted unless trusted_disk= names them (issue 18): the root stands in for
# internal storage in every run; a "fixed" crafted device is named too (fixed.conf), a stick is not
printf 'clone_policy=skip-all\ntrusted_disk=%s\n' "$(bsg_by_path "$root")" >"$work/gate.conf"
fixed() { # fixed DEV: a configuration naming the root and DEV trusted
    printf 'clone_policy=skip-all\ntrusted_disk=%s\ntrusted_disk=%s\n' "$(bsg_by_path "$root")" "$(bsg_by_path "$1")" >"$work/fixed.conf"
}
for variant in stick stick2; do
    st=$(attach "$work/$variant.img")
    fixed "$st"
    BTRFS_SCAN_GATE_CONFIG=$work/fixed.conf boot_dry "$work/$variant-boot.out"
    expect_verdict "$work/$variant-boot.out" "$st" "skip fsid-changing" "$variant: crafted superblock, fixed loop device"
    listed "$work/$variant-boot.out" "$st" || fail "$variant: $st not in the skip list"
    udev_dry "$work/$variant-usb.out" "$st" ID_BUS=usb
    expect_udev "$work/$variant-usb.out" skip fsid-changing "$variant: crafted stick on USB"
    grep -qx 'BTRFS_SCAN_GATE_SLOT=' "$work/$variant-usb.out" || fail "$variant: a slot for the crafted stick"
    BTRFS_SCAN_GATE_CONFIG=$work/fixed.conf udev_dry "$work/$variant-fixed.out" "$st"
    expect_udev "$work/$variant-fixed.out" skip fsid-changing "$variant: crafted superblock on a fixed disk"
    detach "$st"
done

# METADATA_UUID alone (no fsid-change flag), on hot-pluggable media
mu=$(attach "$work/mu.img")
udev_dry "$work/mu-usb.out" "$mu" ID_BUS=usb
expect_udev "$work/mu-usb.out" skip untrusted-metadata-uuid "metadata_uuid of internal storage on USB"
# on fixed storage it is a copy of the root's filesystem, whatever its fsid says; devid 1 under
# another device UUID: the copies disagree, neither is scanned
fixed "$mu"
BTRFS_SCAN_GATE_CONFIG=$work/fixed.conf boot_dry "$work/mu-boot.out"
expect_verdict "$work/mu-boot.out" "$mu" "skip inconsistent-copies" "fixed disk whose metadata_uuid is the root's fsid"
expect_verdict "$work/mu-boot.out" "$root" "skip inconsistent-copies" "the root, beside a metadata_uuid copy of it"
detach "$mu"

if [ "$failed" -ne 0 ]; then exit 1; fi
echo "PASS"
