#!/bin/sh
# dkms-initramfs.sh KERNELVER: after dkms installed or removed the module, rebuild KERNELVER's
# initramfs (btrfs is loaded from it when the root is btrfs) with whichever generator is there.
# dkms 3 no longer does this itself. A kernel without an initramfs is left alone.
set -e
kver=$1
if [ -e "/boot/initrd.img-$kver" ] && command -v update-initramfs >/dev/null 2>&1; then
    update-initramfs -u -k "$kver"
elif [ -e "/boot/initramfs-$kver.img" ] && command -v dracut >/dev/null 2>&1; then
    dracut -f "/boot/initramfs-$kver.img" "$kver"
fi
