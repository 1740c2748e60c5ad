#!/bin/bash
# Installs everything btrfs-scan-gate's build, tests, demo and benchmarks need on Debian 12, then
# lets the QEMU harness fetch its kernels (cached under /var/cache/btrfs-scan-gate/).
# Idempotent: a second run installs nothing and downloads nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

packages=(
    build-essential cmake pkg-config git
    libudev-dev libblkid-dev libglib2.0-dev umockdev libumockdev-dev
    btrfs-progs util-linux udev systemd gdisk dosfstools xfsprogs
    busybox-static cpio zstd qemu-system-x86 kmod dmsetup cryptsetup-bin
    valgrind strace hyperfine clang libfuzzer-14-dev libclang-rt-14-dev
    initramfs-tools initramfs-tools-core dracut-core mmdebstrap
    debhelper dh-dkms dkms dpkg-dev fakeroot lintian pacman-package-manager libarchive-tools
    makepkg shellcheck python3 mount patch xz-utils binutils
    autopkgtest openssl bc
)

# every program the scripts and tests call, with the package that has it (checked after the
# installation: a name here that no package above provides fails setup with the package's name)
programs=(
    cmake:cmake ctest:cmake cc:build-essential make:build-essential pkg-config:pkg-config git:git
    umockdev-wrapper:umockdev
    mkfs.btrfs:btrfs-progs btrfs:btrfs-progs btrfstune:btrfs-progs
    losetup:mount mount:mount findmnt:util-linux blkid:util-linux unshare:util-linux
    flock:util-linux script:bsdutils
    udevadm:udev systemd-analyze:systemd sgdisk:gdisk mkfs.vfat:dosfstools mkfs.xfs:xfsprogs
    busybox:busybox-static cpio:cpio zstd:zstd xz:xz-utils patch:patch perl:perl-base
    qemu-system-x86_64:qemu-system-x86
    depmod:kmod modprobe:kmod modinfo:kmod insmod:kmod dmsetup:dmsetup veritysetup:cryptsetup-bin
    valgrind:valgrind callgrind_annotate:valgrind strace:strace hyperfine:hyperfine clang:clang
    python3:python3 shellcheck:shellcheck
    mkinitramfs:initramfs-tools-core unmkinitramfs:initramfs-tools-core lsinitramfs:initramfs-tools-core
    dracut:dracut-core lsinitrd:dracut-core mmdebstrap:mmdebstrap
    dpkg-buildpackage:dpkg-dev dh:debhelper dh_dkms:dh-dkms dkms:dkms fakeroot:fakeroot
    lintian:lintian makepkg:makepkg pacman:pacman-package-manager bsdtar:libarchive-tools
    dpkg-deb:dpkg dpkg-parsechangelog:dpkg-dev apt-get:apt apt-cache:apt chroot:coreutils
    strip:binutils readelf:binutils
    autopkgtest:autopkgtest openssl:openssl bc:bc
)

if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: must run as root (apt-get, loop devices)" >&2
    exit 1
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup.sh: installing: ${missing[*]}"
    stamp=/var/cache/btrfs-scan-gate/apt-updated
    mkdir -p /var/cache/btrfs-scan-gate
    if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +720)" ]; then
        apt-get update
        touch "$stamp"
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=900 "${missing[@]}"
fi

missing=()
for pp in "${programs[@]}"; do
    command -v "${pp%%:*}" >/dev/null || missing+=("${pp%%:*} (package ${pp#*:})")
done
if [ ${#missing[@]} -gt 0 ]; then
    printf 'setup.sh: not found after the installation: %s\n' "${missing[@]}" >&2
    exit 1
fi

if [ -x "$here/tests/qemu/setup.sh" ]; then
    "$here/tests/qemu/setup.sh"
fi
