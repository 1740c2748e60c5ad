#!/bin/bash
# build-image.sh BUILD_DIR: builds (or finds cached) the A/B system image of tests/image/README.md
# and prints its directory. Inputs and their cache:
#   $BSG_CACHE/image-root-<packages>.tar  Debian 12 minbase root by mmdebstrap, with the Debian 6.1
#                                         kernel package of the QEMU harness's ABI (key: package
#                                         list, ABI, source version)
#   $BSG_CACHE/image-ab-<key>/            the built image (key: these scripts and guest files, the
#                                         root's key, the project's staged install, the patched
#                                         btrfs.ko, the 6.12 kernel version):
#     vmlinuz-6.1 vmlinuz-6.12            direct-boot kernels
#     gate/{sys,a,b,update,stick}.img + initrd-6.1, initrd-6.12
#                                         the project installed (patched module in updates/)
#     stock/{sys,a,b,update}.img + initrd-6.1
#                                         the same root without the project: systemd's stock
#                                         64-btrfs.rules, btrfs-progs' initramfs scan, stock module
# Disks (GPT; the SteamOS partitions on three virtio disks, so PCI slot order can be permuted):
#   sys: esp, efi-A, efi-B (vfat), home     a: rootfs-A, var-A     b: rootfs-B, var-B
# rootfs-A/-B are byte-identical btrfs clones, so are var-A/-B. update.img: rootfs plus a change
# (/etc/bsg-image-version 2), written and unmounted once so its generation is higher. stick.img:
# one GPT partition labelled rootfs-A holding that higher-generation copy (the hostile USB stick).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=$(realpath "${1:?usage: build-image.sh BUILD_DIR}")
t0=$(date +%s)

work=$(mktemp -d "${TMPDIR:-/var/tmp}/bsg-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
DESTDIR=$work/stage cmake --install "$build" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log" >&2; image_log "cmake --install $build failed"; exit 1; }
IMG_STAGE=$work/stage
image_env
if [ -e "$IMG_DIR/.done" ]; then
    image_log "cached: $IMG_DIR"
    echo "$IMG_DIR"
    exit 0
fi
mkdir -p "$BSG_CACHE/locks"
exec 9>"$BSG_CACHE/locks/image-ab"
flock -w 1800 9 || { image_log "timed out waiting for the image build lock"; exit 1; }
[ ! -e "$IMG_DIR/.done" ] || { echo "$IMG_DIR"; exit 0; }

# ---- the root tarball (mmdebstrap, minbase, no recommends) ----
rootkey=$IMG_PKGKEY
tarball=$BSG_CACHE/image-root-$rootkey.tar
if [ ! -e "$tarball" ]; then
    image_log "mmdebstrap: Debian 12 minbase + $IMG_PACKAGES + linux-image-$ABI-unsigned=$SRCVER (about 4 minutes)"
    # the target's name does not end in .tar, so the format is named (else mmdebstrap makes a directory)
    mmdebstrap --variant=minbase --mode=root --format=tar \
        --aptopt='Acquire::Check-Valid-Until "false"' --aptopt='APT::Install-Recommends "false"' \
        --include="$IMG_PACKAGES,linux-image-$ABI-unsigned=$SRCVER" \
        --essential-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" && printf "MODULES=list\nCOMPRESS=gzip\n" >"$1/etc/initramfs-tools/conf.d/bsg-image"' \
        bookworm "$tarball.tmp" "deb http://deb.debian.org/debian bookworm bookworm-updates main" \
        "deb http://deb.debian.org/debian-security bookworm-security main" >"$work/mmdebstrap.log" 2>&1 ||
        { tail -n 30 "$work/mmdebstrap.log" >&2; image_log "mmdebstrap failed"; exit 1; }
    mv "$tarball.tmp" "$tarball"
    image_log "root tarball ready after $(( $(date +%s) - t0 )) s"
fi

tree=$work/tree
mkdir -p "$tree"
tar -C "$tree" -xf "$tarball"
image_log "root unpacked"

# prune the kernels' modules to what a VM with virtio, USB storage, btrfs and overlayfs needs
prune_modules() { # DIR of lib/modules/<kver>
    local k=$1/kernel d
    rm -rf "$k/sound" "$k/net"
    for d in "$k"/drivers/*; do
        case ${d##*/} in block | virtio | scsi | usb | char | input | md) ;; *) rm -rf "$d" ;; esac
    done
}
prune_modules "$tree/lib/modules/$IMG_KVER61"
mkdir -p "$tree/lib/modules/$IMG_KVER61/updates"
strip --strip-debug -o "$tree/lib/modules/$IMG_KVER61/updates/btrfs.ko" "$IMG_KO"
if [ -n "$IMG_KVER612" ]; then
    cp -a "$IMG_ROOT612/lib/modules/$IMG_KVER612" "$tree/lib/modules/"
    prune_modules "$tree/lib/modules/$IMG_KVER612"
    cp "$IMG_ROOT612/boot/config-$IMG_KVER612" "$tree/boot/"
fi

# the project, from its cmake --install staging tree (the root is usr-merged: keep its symlinks)
tar -C "$IMG_STAGE" -cf - . | tar -C "$tree" --keep-directory-symlink -xf -

# the image's own files
sub() { sed -e "s/@FS_ROOT@/$IMG_FS_ROOT/g" -e "s/@FS_VAR@/$IMG_FS_VAR/g" -e "s/@FS_HOME@/$IMG_FS_HOME/g" "$1"; }
install -d "$tree/usr/local/lib/bsg-image" "$tree/mnt/other" "$tree/etc/initramfs-tools/scripts/init-bottom"
sub "$here/guest/report" >"$tree/usr/local/lib/bsg-image/report"
chmod 755 "$tree/usr/local/lib/bsg-image/report"
cp "$here/guest/bsg-report.service" "$tree/etc/systemd/system/"
install -m 755 "$here/guest/etc-overlay" "$tree/etc/initramfs-tools/scripts/init-bottom/etc-overlay"
sub "$here/guest/fstab" >"$tree/etc/fstab"
printf '%s\n' virtio_pci virtio_blk btrfs overlay xhci_pci usb_storage sd_mod >"$tree/etc/initramfs-tools/modules"
echo 1 >"$tree/etc/bsg-image-version"
echo bsg-image >"$tree/etc/hostname"
echo 5c1a6e2f0d3b4c1e9a7fb7f5c0de0b99 >"$tree/etc/machine-id"
# a lean boot: no login prompts, a journal in memory, no periodic jobs
for u in serial-getty@.service getty@.service getty-static.service e2scrub_reap.service apt-daily.timer \
    apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer fstrim.timer; do
    ln -sf /dev/null "$tree/etc/systemd/system/$u"
done
mkdir -p "$tree/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\n' >"$tree/etc/systemd/journald.conf.d/bsg-image.conf"
# the SteamOS partitions are spread over three disks here (so that PCI order can be permuted); the boot
# names the disks of the root and of the ESP only, and trusted storage is what the boot or the
# configuration names (issue 18 item 1): the slot disks are named by the PCI slots image_boot() puts
# them in (lib.sh: 0x5-0x7, in any order; never by serial, label or PARTUUID, which media can copy)
printf '%s\n' '# the image: the PCI slots of the A/B set disks' \
    trusted_disk=/dev/disk/by-path/pci-0000:00:05.0 trusted_disk=/dev/disk/by-path/pci-0000:00:06.0 \
    trusted_disk=/dev/disk/by-path/pci-0000:00:07.0 >"$tree/etc/btrfs-scan-gate.conf"

# chroot work (update-initramfs inside the image root) in a private mount namespace
in_root() {
    unshare -m --propagation private sh -c '
        t=$1; shift
        mount -t proc proc "$t/proc" && mount -t sysfs sys "$t/sys" && mount --rbind /dev "$t/dev" &&
            chroot "$t" "$@"' sh "$tree" "$@"
}
initrds() { # VARIANT: depmod + update-initramfs for each kernel, initrds copied out
    local v=$1
    mkdir -p "$out/$v"
    in_root depmod "$IMG_KVER61"
    in_root update-initramfs -c -k "$IMG_KVER61" >"$work/initramfs-$v.log" 2>&1 ||
        { cat "$work/initramfs-$v.log" >&2; image_log "update-initramfs ($v, $IMG_KVER61) failed"; exit 1; }
    cp "$tree/boot/initrd.img-$IMG_KVER61" "$out/$v/initrd-6.1"
    if [ -n "$IMG_KVER612" ] && [ "$v" = gate ]; then
        in_root depmod "$IMG_KVER612"
        in_root update-initramfs -c -k "$IMG_KVER612" >>"$work/initramfs-$v.log" 2>&1 ||
            { cat "$work/initramfs-$v.log" >&2; image_log "update-initramfs ($v, $IMG_KVER612) failed"; exit 1; }
        cp "$tree/boot/initrd.img-$IMG_KVER612" "$out/$v/initrd-6.12"
    fi
    rm -f "$tree"/boot/initrd.img-*
}

out=$IMG_DIR.tmp
rm -rf "$out"
mkdir -p "$out"
cp "$tree/boot/vmlinuz-$IMG_KVER61" "$out/vmlinuz-6.1"
[ -z "$IMG_KVER612" ] || cp "$IMG_ROOT612/boot/vmlinuz-$IMG_KVER612" "$out/vmlinuz-6.12"

in_root systemctl enable btrfs-scan-gate.service bsg-report.service >"$work/enable.log" 2>&1 ||
    { cat "$work/enable.log" >&2; exit 1; }
initrds gate
image_log "gate initramfs images built (update-initramfs in the image root)"

# ---- disks ----
MB=1048576
ROOT_MB=640 VAR_MB=192 HOME_MB=128 ESP_MB=16 EFI_MB=8
mkfs_tree() { # VARIANT: rootfs.img (without /var's contents), var.img, update.img of $tree
    local v=$1 fs=$work/fs-$1
    mkdir -p "$fs"
    mv "$tree/var" "$work/var-tree" && mkdir "$tree/var"
    truncate -s ${ROOT_MB}M "$fs/rootfs.img"
    mkfs.btrfs -q -f -L rootfs -U "$IMG_FS_ROOT" --rootdir "$tree" "$fs/rootfs.img" >>"$work/mkfs.log" 2>&1
    rmdir "$tree/var" && mv "$work/var-tree" "$tree/var"
    truncate -s ${VAR_MB}M "$fs/var.img"
    mkfs.btrfs -q -f -L var -U "$IMG_FS_VAR" --rootdir "$tree/var" "$fs/var.img" >>"$work/mkfs.log" 2>&1
    # the update: a clone of rootfs plus a change, written through a mount (higher generation)
    cp --sparse=always "$fs/rootfs.img" "$fs/update.img"
    local loop
    loop=$(losetup --find --show "$fs/update.img")
    unshare -m --propagation private sh -c '
        set -e; m=$1/mnt; mkdir -p "$m"
        mount -t btrfs "$2" "$m"
        echo 2 >"$m/etc/bsg-image-version"
        umount "$m"' sh "$fs" "$loop" || { losetup -d "$loop"; image_log "writing the update failed"; exit 1; }
    btrfs device scan --forget "$loop" >/dev/null 2>&1 || true  # the host's registration of it
    losetup -d "$loop"
}
disk() { # OUT DISKNO NAME:MB:TYPE:GUID-suffix:IMG ...: a GPT disk, the images at the partitions
    local img=$1 dno=$2 start=1 spec name mb type guid src n=1 total=2
    shift 2
    local -a sg=(-o -U "5c1a6e2f-0d3b-4c1e-9a7f-00000000d15$dno")
    for spec in "$@"; do
        IFS=: read -r name mb type guid src <<<"$spec"
        [ -z "$src" ] || mb=$(( ($(stat -c %s "$src") + MB - 1) / MB ))
        total=$((total + mb))
    done
    rm -f "$img"
    truncate -s $((total + 1))M "$img"
    for spec in "$@"; do
        IFS=: read -r name mb type guid src <<<"$spec"
        [ -z "$src" ] || mb=$(( ($(stat -c %s "$src") + MB - 1) / MB ))   # mkfs --rootdir may grow it
        sg+=(-n "$n:$((start * 2048)):+${mb}M" -c "$n:$name" -t "$n:$type" -u "$n:5c1a6e2f-0d3b-4c1e-9a7f-0000000000$guid")
        [ -z "$src" ] || dd if="$src" of="$img" bs=1M seek=$start conv=notrunc,sparse status=none
        start=$((start + mb))
        n=$((n + 1))
    done
    sgdisk "${sg[@]}" "$img" >>"$work/sgdisk.log" 2>&1 || { cat "$work/sgdisk.log" >&2; exit 1; }
}
make_disks() { # VARIANT
    local v=$1 fs=$work/fs-$1
    mkfs_tree "$v"
    truncate -s ${ESP_MB}M "$fs/esp.img" && mkfs.vfat -n ESP -i 5c1a0e5f "$fs/esp.img" >/dev/null
    truncate -s ${EFI_MB}M "$fs/efi.img" && mkfs.vfat -n EFI -i 5c1a0e5e "$fs/efi.img" >/dev/null
    truncate -s ${HOME_MB}M "$fs/home.img"
    mkfs.btrfs -q -f -L home -U "$IMG_FS_HOME" "$fs/home.img" >>"$work/mkfs.log" 2>&1
    disk "$out/$v/sys.img" 0 "esp:$ESP_MB:ef00:01:$fs/esp.img" "efi-A:$EFI_MB:8300:02:$fs/efi.img" \
        "efi-B:$EFI_MB:8300:03:$fs/efi.img" "home:$HOME_MB:8300:04:$fs/home.img"
    disk "$out/$v/a.img" 1 "rootfs-A:$ROOT_MB:8300:11:$fs/rootfs.img" "var-A:$VAR_MB:8300:12:$fs/var.img"
    disk "$out/$v/b.img" 2 "rootfs-B:$ROOT_MB:8300:21:$fs/rootfs.img" "var-B:$VAR_MB:8300:22:$fs/var.img"
    mv "$fs/update.img" "$out/$v/update.img"
    rm -rf "$fs"
}
make_disks gate
image_log "gate disks written"
# the hostile stick: a partition labelled rootfs-A, a higher-generation copy of rootfs
disk "$out/gate/stick.img" 9 "rootfs-A:$ROOT_MB:8300:91:$out/gate/update.img"

# ---- the stock variant: the same root without the project ----
in_root systemctl disable btrfs-scan-gate.service >>"$work/enable.log" 2>&1
(cd "$IMG_STAGE" && find . ! -type d) | while read -r f; do rm -f "$tree/$f"; done
rm -f "$tree/lib/modules/$IMG_KVER61/updates/btrfs.ko"
# no by-slot links without the gate: the stock system names slot A's var by partition label, and
# cannot mount the other slot beside its root at all (same fsid)
printf '# stock variant of tests/image/guest/fstab (slot A only)\n/dev/disk/by-partlabel/var-A\t/var\tbtrfs\tdefaults\t0\t0\nUUID=%s\t/home\tbtrfs\tdefaults\t0\t0\n' \
    "$IMG_FS_HOME" >"$tree/etc/fstab"
initrds stock
make_disks stock

sgdisk -p "$out/gate/a.img" >&2
rm -rf "$IMG_DIR"
mv "$out" "$IMG_DIR"
touch "$IMG_DIR/.done"
# keep the newest two built images
ls -dt "$BSG_CACHE"/image-ab-*/ 2>/dev/null | tail -n +3 | xargs -r rm -rf
image_log "built $IMG_DIR in $(( $(date +%s) - t0 )) s"
echo "$IMG_DIR"
