#!/bin/bash
# Makes the superblock fixtures of the umockdev suite: real filesystems made by mkfs.btrfs (and
# mkfs.vfat) on sparse files, of which the first 128 KiB are kept (the primary btrfs superblock
# lives at 64 KiB). Fixed fsids so that test output is stable. Used until/unless tests/images/
# provides the same; no loop device needed.
# usage: make-fixtures.sh OUTDIR   (tool output goes to OUTDIR/make-fixtures.log)
set -euo pipefail
out=$1
mkdir -p "$out"
log=$out/make-fixtures.log
work=$(mktemp -d "$out/work.XXXXXX")
trap 'rm -rf "$work"' EXIT
: >"$log"

keep() { # keep FILE NAME: first 128 KiB of FILE into OUTDIR/NAME.img
    dd if="$1" of="$out/$2.img.tmp" bs=64K count=2 status=none
    mv "$out/$2.img.tmp" "$out/$2.img"
}
single() { # single NAME FSID LABEL
    truncate -s 120M "$work/$1"
    mkfs.btrfs -f -U "$2" -L "$3" "$work/$1" >>"$log" 2>&1
    keep "$work/$1" "$1"
}

single rootfs 11111111-1111-4111-8111-111111111111 rootfs
single var    22222222-2222-4222-8222-222222222222 var
single home   33333333-3333-4333-8333-333333333333 home
single extra  66666666-6666-4666-8666-666666666666 extra

truncate -s 256M "$work/raid-1" "$work/raid-2"
mkfs.btrfs -f -U 44444444-4444-4444-8444-444444444444 -L data -d raid1 -m raid1 \
    "$work/raid-1" "$work/raid-2" >>"$log" 2>&1
keep "$work/raid-1" raid-1
keep "$work/raid-2" raid-2

single seed 55555555-5555-4555-8555-555555555555 seed
btrfstune -S 1 "$work/seed" >>"$log" 2>&1
keep "$work/seed" seed

truncate -s 64M "$work/esp"
mkfs.vfat -F 32 -n ESP "$work/esp" >>"$log" 2>&1
keep "$work/esp" esp
echo "fixtures made in $out" >>"$log"
