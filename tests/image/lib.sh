# shellcheck shell=bash
# The image harness's library (tests/image/README.md), sourced by build-image.sh, run-case.sh,
# scripts/demo.sh and bench/image/. Builds on tests/qemu/lib.sh (kernels, patched module, cache).
#
#   image_env                 sets IMG_DIR (the cached image of this tree's inputs) and IMG_KEY
#   image_disks VARIANT DIR [update] [stick]
#                             copies the cached disks of VARIANT (gate|stock) into DIR (sparse):
#                             sys, a, b and the update disk / USB stick when named
#   image_boot DIR LOG KVER SLOT CASE [ORDER] [QEMU ARGS...]
#                             boots DIR's disks (kernel 6.1|6.12, root=rootfs-SLOT, bsg.case=CASE,
#                             disks on PCI slots in ORDER, e.g. "sys a b"); console to LOG;
#                             IMG_INITRD replaces the variant's 6.1 initramfs
#   image_verdict LOG         the guest's CASE-EXIT status (124: no verdict, 125: panic)

IMAGE_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../qemu/lib.sh
. "$IMAGE_HERE/../qemu/lib.sh"

# Fixed identities (GPT disk GUIDs ...d15N, partition GUIDs ...0000000000<disk><part>)
IMG_FS_ROOT=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0b02
IMG_FS_VAR=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0b03
IMG_FS_HOME=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0b04
IMG_PU_ROOT_A=5c1a6e2f-0d3b-4c1e-9a7f-000000000011
IMG_PU_ROOT_B=5c1a6e2f-0d3b-4c1e-9a7f-000000000021
IMG_PU_EFI_A=5c1a6e2f-0d3b-4c1e-9a7f-000000000002
IMG_PU_EFI_B=5c1a6e2f-0d3b-4c1e-9a7f-000000000003
IMG_PACKAGES=systemd,systemd-sysv,udev,btrfs-progs,kmod,initramfs-tools

image_log() { echo "image: [$(date -u +%T)] $*" >&2; }

# the inputs' identity: scripts and guest files, the package list and kernel versions, the staged
# project install (IMG_STAGE), the patched module
image_env() {
    local ko
    qemu_kernel 6.1 || return 1
    IMG_KVER61=$QK_KVER
    IMG_ROOT61=$QK_ROOT
    ko=$(qemu_btrfs_ko patched) || return 1
    IMG_KO=$ko
    . "$BSG_CACHE/kernel-6.12.env" 2>/dev/null || VER612=
    IMG_ROOT612=$BSG_CACHE/image612-$VER612/root
    IMG_KVER612=$(basename "$(ls -d "$IMG_ROOT612"/lib/modules/* 2>/dev/null | head -n 1)")
    IMG_PKGKEY=$(printf '%s\n' "$IMG_PACKAGES" "$ABI" "$SRCVER" | sha256sum | cut -c1-16)
    IMG_KEY=$({
        cat "$IMAGE_HERE/lib.sh" "$IMAGE_HERE/build-image.sh" "$IMAGE_HERE"/guest/*
        echo "$IMG_PKGKEY $IMG_KVER612"
        sha256sum "$ko" | cut -c1-64
        [ -z "${IMG_STAGE:-}" ] || (cd "$IMG_STAGE" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
    } | sha256sum | cut -c1-16)
    IMG_DIR=$BSG_CACHE/image-ab-$IMG_KEY
}

image_disks() {
    local variant=$1 d=$2 n
    shift 2
    mkdir -p "$d"
    rm -f "$d"/*.img
    for n in sys a b "$@"; do
        cp --sparse=always "$IMG_DIR/$variant/$n.img" "$d/$n.img"
    done
}

image_boot() {
    local d=$1 log=$2 k=$3 slot=$4 case=$5 order=${6:-sys a b} kernel initrd pu append n i=5
    shift 6 2>/dev/null || shift $#
    local -a args=()
    case $k in
    6.1) kernel=$IMG_DIR/vmlinuz-6.1 initrd=${IMG_INITRD:-$IMG_DIR/${IMG_VARIANT:-gate}/initrd-6.1} ;;
    6.12) kernel=$IMG_DIR/vmlinuz-6.12 initrd=$IMG_DIR/${IMG_VARIANT:-gate}/initrd-6.12 ;;
    esac
    if [ "$slot" = A ]; then pu=$IMG_PU_ROOT_A; else pu=$IMG_PU_ROOT_B; fi
    append="console=ttyS0 quiet panic=-1 root=PARTUUID=$pu ro rootfstype=btrfs bsg.case=$case bsg.slot=$slot"
    # the SteamOS-style variant names the slot through its efi partition as well
    if [ "${IMG_STEAMOS_EFI:-0}" = 1 ]; then
        if [ "$slot" = A ]; then append="$append steamos.efi=PARTUUID=$IMG_PU_EFI_A"; else append="$append steamos.efi=PARTUUID=$IMG_PU_EFI_B"; fi
    fi
    for n in $order; do
        args+=(-drive "file=$d/$n.img,format=raw,if=none,id=d$n"
            -device "virtio-blk-pci,drive=d$n,serial=bsg-$n,addr=$(printf '0x%x' $i)")
        i=$((i + 1))
    done
    [ ! -e "$d/update.img" ] || args+=(-drive "file=$d/update.img,format=raw,if=none,id=dupd,readonly=on"
        -device "virtio-blk-pci,drive=dupd,serial=bsg-update,addr=0x10")
    if [ -e "$d/stick.img" ]; then
        args+=(-device qemu-xhci,id=xhci -drive "file=$d/stick.img,format=raw,if=none,id=dusb"
            -device "usb-storage,bus=xhci.0,drive=dusb,removable=on,serial=bsgstick")
    fi
    timeout --foreground -k 5 "${IMAGE_TIMEOUT:-240}" qemu-system-x86_64 -cpu max -smp 2 -m 1024 \
        -nographic -no-reboot -nic none -kernel "$kernel" -initrd "$initrd" \
        -append "$append ${IMAGE_APPEND:-}" "${args[@]}" "$@" >"$log" 2>&1 </dev/null
}

image_verdict() { qemu_verdict "$1"; }
