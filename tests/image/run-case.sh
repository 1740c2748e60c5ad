#!/bin/bash
# run-case.sh CASE WORK BUILD_DIR: one case of tests/image/README.md against the cached image
# (build-image.sh BUILD_DIR builds it when missing). Each boot's console goes to WORK/<n>-<step>.log;
# the guest's report lines (IMAGE: ...) are printed. Exit 0: the case held; 1: it did not; 77: a
# prerequisite (qemu, the kernels) is missing.
#   cold:ORDER              slot A cold boot, the three virtio disks on PCI slots in ORDER
#   cold-steamos:ORDER      the same with steamos.efi= naming the slot on the command line
#   update-rollback:ORDER   boot A and update slot B raw (+ updater hook), boot B, boot A again
#   stock-rollback          baseline, stock rules and module: slot A boots cold, then B gets the
#                           higher-generation update and A no longer boots (expected: observed)
#   stick                   a USB stick with a higher-generation rootfs-A copy plugged in
#   k612                    Debian's stock 6.12 kernel with the gate image
#   module-lapse            the gate image with an initramfs that lacks the patched module (the
#                           in-tree btrfs.ko in its place, as when the initramfs was not rebuilt
#                           after the module was installed): the unit fails and status says why
# ORDER: the disks sys, a, b in PCI slot order, comma-separated (e.g. b,sys,a).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
case=$1 work=$2 build=${3:-}
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 missing"; exit 77; }
[ -e "$BSG_CACHE/kernel-6.1.env" ] || { echo "SKIP: no kernels: run tests/qemu/setup.sh"; exit 77; }
if [ -n "$build" ]; then
    dir=$("$here/build-image.sh" "$build") || { echo "FAIL: the image did not build"; exit 1; }
else
    dir=${IMG_DIR:?no BUILD_DIR and no IMG_DIR}
fi
IMG_DIR=$dir
rm -rf "$work" && mkdir -p "$work"
n=0 rc=0

# boot STEP KERNEL SLOT GUESTCASE ORDER [QEMU ARGS]: boots, prints the report, checks CASE-EXIT 0
boot() {
    local step=$1 k=$2 slot=$3 gcase=$4 order=$5 log t v
    shift 5
    n=$((n + 1))
    log=$work/$n-$step.log
    t=$(date +%s.%N)
    image_boot "$work" "$log" "$k" "$slot" "$gcase" "$order" "$@" || true
    t=$(echo "$(date +%s.%N) - $t" | bc)
    v=$(image_verdict "$log")
    grep -a -e '^IMAGE' -e 'etc-overlay:' "$log" | tr -d '\r' || true
    echo "== $step: kernel $k, slot $slot, disks on PCI slots: $order; wall ${t%.*} s; guest verdict $v (console: $log)"
    BOOT_VERDICT=$v
    if [ "$v" != 0 ]; then
        [ "$v" = 124 ] && tail -n 40 "$log" | tr -d '\r'
        return 1
    fi
}
step_fail() { echo "FAIL: $*"; rc=1; }
# lapse_initrd OUT: the gate's 6.1 initramfs with updates/btrfs.ko taken out and the kernel's own
# kernel/fs/btrfs/btrfs.ko put in (depmod run again), repacked (gzip)
lapse_initrd() {
    local out=$1 ir=$work/initrd-tree main ko kver stock p
    qemu_kernel 6.1 || return 1
    stock=$QK_ROOT/lib/modules/$QK_KVER/kernel/fs/btrfs/btrfs.ko
    [ -e "$stock" ] || { echo "no in-tree btrfs.ko at $stock"; return 1; }
    rm -rf "$ir"
    unmkinitramfs "$IMG_DIR/gate/initrd-6.1" "$ir" || return 1
    main=$ir
    [ ! -d "$ir/main" ] || main=$ir/main
    ko=$(find "$main"/ -path '*/lib/modules/*/updates/btrfs.ko*' | head -n 1)
    [ -n "$ko" ] || { echo "the gate's initramfs has no updates/btrfs.ko: the case would prove nothing"; return 1; }
    kver=${ko#*/lib/modules/}
    kver=${kver%%/*}
    rm -f "$ko"
    mkdir -p "${ko%/lib/modules/*}/lib/modules/$kver/kernel/fs/btrfs"
    cp "$stock" "${ko%/lib/modules/*}/lib/modules/$kver/kernel/fs/btrfs/"
    depmod -b "${ko%/lib/modules/*}" "$kver" || return 1
    : >"$out"
    for p in "$ir"/early*; do
        [ -d "$p" ] || continue
        (cd "$p" && find . | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) >>"$out"
    done
    (cd "$main" && find . | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) | gzip -1 >>"$out"
    rm -rf "$ir"
    echo "== host: initramfs without the patched module: ${ko#"$main"} removed, /lib/modules/$kver/kernel/fs/btrfs/btrfs.ko in its place"
}

order=${case#*:}
[ "$order" != "$case" ] || order=sys,a,b
order=${order//,/ }
case ${case%%:*} in
cold)
    image_disks gate "$work"
    boot cold 6.1 A cold "$order" || step_fail "cold boot of slot A"
    ;;
cold-steamos)
    image_disks gate "$work"
    IMG_STEAMOS_EFI=1 boot cold-steamos-efi 6.1 A cold "$order" || step_fail "cold boot of slot A (steamos.efi=)"
    ;;
update-rollback)
    image_disks gate "$work" update
    # a boot whose checks failed still went on (the next boot is still worth seeing); a boot
    # without a verdict (hang, panic) ends the case
    boot update-from-A 6.1 A update "$order" || step_fail "boot A + update of B"
    rm -f "$work/update.img"
    [ "$BOOT_VERDICT" -lt 124 ] && { boot boot-B 6.1 B after-update "$order" || step_fail "boot into B after the update"; }
    [ "$BOOT_VERDICT" -lt 124 ] && { IMG_STEAMOS_EFI=1 boot rollback-A 6.1 A rollback "$order" || step_fail "rollback: boot into A after B moved ahead"; }
    ;;
stock-rollback)
    image_disks stock "$work"
    IMG_VARIANT=stock boot stock-cold-A 6.1 A stock "$order" ||
        step_fail "the stock image does not even boot slot A cold (the baseline proves nothing)"
    if [ $rc = 0 ]; then
        # the update of slot B, as the gated case does it from the running A, done here on the host
        dd if="$IMG_DIR/stock/update.img" of="$work/b.img" bs=1M seek=1 conv=notrunc,sparse status=none
        echo "== host: rootfs-B of the stock disks overwritten with the higher-generation update"
        if IMG_VARIANT=stock IMAGE_TIMEOUT=180 IMAGE_APPEND="loglevel=6" boot stock-rollback-A 6.1 A stock "$order"; then
            step_fail "baseline: the stock system booted slot A although rootfs-B has a higher generation"
        else
            log=$(ls "$work"/*-stock-rollback-A.log)
            grep -a -E 'already registered with a higher generation|Failed to mount|ALERT|mount.*File exists' "$log" |
                tr -d '\r' | sed 's/^/baseline: /' | head -n 8
            if grep -aqE 'already registered with a higher generation' "$log" && grep -aqE 'Failed to mount|ALERT' "$log"; then
                echo "== baseline failure observed: the stock module rejected rootfs-A (rootfs-B registered with a higher generation) and the initramfs could not mount the root"
            else
                tail -n 30 "$log" | tr -d '\r'
                step_fail "baseline: slot A did not boot, but not for the expected reason"
            fi
        fi
    fi
    ;;
stick)
    image_disks gate "$work" stick
    boot stick-A 6.1 A stick "$order" || step_fail "slot A with the hostile USB stick"
    ;;
k612)
    [ -e "$IMG_DIR/vmlinuz-6.12" ] || { echo "SKIP: no 6.12 kernel in the image"; exit 77; }
    image_disks gate "$work"
    IMAGE_APPEND="systemd.mask=mnt-other.mount" boot k612-A 6.12 A k612 "$order" || step_fail "6.12 boot of slot A"
    ;;
module-lapse)
    image_disks gate "$work"
    lapse_initrd "$work/initrd-lapse" || { echo "FAIL: no initramfs without the patched module"; exit 1; }
    # virtual_fsid (the fstab's /mnt/other) is the patched module's: masked, as on 6.12
    IMG_INITRD=$work/initrd-lapse IMAGE_APPEND="systemd.mask=mnt-other.mount" boot module-lapse 6.1 A module-lapse "$order" ||
        step_fail "slot A with the in-tree module loaded from the initramfs: the lapse was not shown"
    ;;
*) echo "unknown case $case"; exit 2 ;;
esac
rm -f "$work"/*.img
[ $rc = 0 ] && echo "PASS: $case" || echo "FAIL: $case"
exit $rc
