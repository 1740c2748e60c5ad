#!/bin/bash
# Installs and caches what the QEMU harness needs: Debian's linux-source-6.1, the linux-headers and
# linux-image-*-unsigned packages of exactly the source's version (found in the archive, not
# hard-coded), the stock 6.12 image, busybox, btrfs-progs and qemu. Idempotent; prints the
# kernel it settled on. Everything lands under $BSG_CACHE (default /var/cache/btrfs-scan-gate).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

need=(busybox-static btrfs-progs qemu-system-x86 util-linux)
missing=()
for p in "${need[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done

srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null || true)
[ -n "$srcver" ] || srcver=$(apt-cache policy linux-source-6.1 | awk '/Candidate:/ {print $2}')
if [ -z "$srcver" ] || [ "$srcver" = "(none)" ]; then
    apt-get update
    srcver=$(apt-cache policy linux-source-6.1 | awk '/Candidate:/ {print $2}')
fi
# the ABI whose image package has exactly the source's version
abi=
for pkg in $(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' | awk '{print $1}' | sort -V -r); do
    if apt-cache madison "$pkg" | awk -F'|' '{gsub(/ /,"",$2); print $2}' | grep -qx "$srcver"; then
        abi=${pkg#linux-image-}
        abi=${abi%-unsigned}
        break
    fi
done
[ -n "$abi" ] || { echo "setup: no linux-image-6.1.0-*-amd64-unsigned at version $srcver" >&2; exit 1; }

dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null | grep -qx "$srcver" || missing+=("linux-source-6.1=$srcver")
dpkg-query -W -f='${Status}\n' "linux-headers-$abi" 2>/dev/null | grep -q 'ok installed' || missing+=("linux-headers-$abi=$srcver")
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

fetch_image() { # fetch_image PACKAGE VERSION DIR: the image .deb unpacked into DIR
    local pkg=$1 ver=$2 dir=$3
    [ -e "$dir/.done" ] && return 0
    rm -rf "$dir" && mkdir -p "$dir"
    (cd "$dir" && apt-get download "$pkg=$ver")
    dpkg-deb -x "$dir"/*.deb "$dir/root"
    rm -f "$dir"/*.deb
    # the package ships no modules.dep (postinst runs depmod): make it, the harness reads it
    local kver
    for kver in "$dir"/root/lib/modules/*; do
        depmod -b "$dir/root" "$(basename "$kver")"
    done
    touch "$dir/.done"
}

mkdir -p "$BSG_CACHE"
fetch_image "linux-image-$abi-unsigned" "$srcver" "$BSG_CACHE/image-$srcver"
printf 'SRCVER=%s\nABI=%s\n' "$srcver" "$abi" >"$BSG_CACHE/kernel-6.1.env"

# the stock 6.12 kernel (upstream temp-fsid), newest in the archive
pkg612=$(apt-cache search --names-only '^linux-image-6\.12\..*-amd64-unsigned$' | awk '{print $1}' | grep -v -e cloud -e rt | sort -V | tail -n 1)
if [ -n "$pkg612" ]; then
    ver612=$(apt-cache policy "$pkg612" | awk '/Candidate:/ {print $2}')
    fetch_image "$pkg612" "$ver612" "$BSG_CACHE/image612-$ver612"
    printf 'VER612=%s\n' "$ver612" >"$BSG_CACHE/kernel-6.12.env"
else
    echo "setup: no linux-image-6.12 in the archive; 6.12 cases will fail" >&2
fi
echo "setup: 6.1 source $srcver, ABI $abi; 6.12: ${ver612:-none}"
