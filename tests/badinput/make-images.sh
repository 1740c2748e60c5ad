#!/bin/bash
# Makes the base images of the bad-input cases: make-images.sh OUTDIR
#   single.img  first 128 KiB of a fresh single-device btrfs (crc32c, fixed fsid, label "badinput")
#   clone.img   the same with another fsid, for the one case that adds a loop-device clone
#   raid-1.img  first 128 KiB of device 1 of a two-device raid1 btrfs
# The cases then break them byte by byte (cases.tsv). Tool output: OUTDIR/make-images.log.
set -euo pipefail
out=$1
mkdir -p "$out"
log=$out/make-images.log
work=$(mktemp -d "$out/work.XXXXXX")
trap 'rm -rf "$work"' EXIT
: >"$log"
truncate -s 120M "$work/single"
mkfs.btrfs -f -U 7e57ba0d-0000-4000-8000-000000000001 -L badinput "$work/single" >>"$log" 2>&1
dd if="$work/single" of="$out/single.img" bs=64K count=2 status=none
truncate -s 120M "$work/clone"
mkfs.btrfs -f -U 7e57ba0d-0000-4000-8000-000000000003 -L badclone "$work/clone" >>"$log" 2>&1
dd if="$work/clone" of="$out/clone.img" bs=64K count=2 status=none
truncate -s 256M "$work/r1" "$work/r2"
mkfs.btrfs -f -U 7e57ba0d-0000-4000-8000-000000000002 -L badraid -d raid1 -m raid1 \
    "$work/r1" "$work/r2" >>"$log" 2>&1
dd if="$work/r1" of="$out/raid-1.img" bs=64K count=2 status=none
echo "images made in $out" >>"$log"
