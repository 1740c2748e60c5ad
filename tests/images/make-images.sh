#!/bin/bash
# Makes the superblock test images: real filesystems made by mkfs.btrfs on sparse files (no loop
# device needed), of which only the first 128 KiB are kept (the primary superblock is at 64 KiB),
# gzip-compressed (gzip -n: no name or time, so a rerun over the same bytes is byte-identical).
# Beside each NAME.img.gz, NAME.expected holds the fields as btrfs-progs' own
# `btrfs inspect-internal dump-super` reads them (KEY=VALUE), the unit test's golden output.
# usage: make-images.sh [OUTDIR]   (default: this script's directory; tool output goes to OUTDIR/make-images.log)
set -euo pipefail
out=${1:-$(cd "$(dirname "$0")" && pwd)}
mkdir -p "$out"
log=$out/make-images.log
work=$(mktemp -d /var/tmp/bsg-images.XXXXXX)
trap 'rm -rf "$work"' EXIT
: >"$log"

expected() { # expected IMAGE NAME: golden fields from dump-super
    btrfs inspect-internal dump-super "$1" >"$work/dump" 2>>"$log"
    f() { awk -v k="$1" '$1 == k { $1 = ""; sub(/^[ \t]+/, ""); print; exit }' "$work/dump"; }
    flags=$(f flags | awk '{print $1}')
    incompat=$(f incompat_flags | awk '{print $1}')
    csum=$(f csum_type | sed 's/^[0-9]* *(\(.*\))$/\1/')
    label=$(awk '$1 == "label" { sub(/^label[ \t]*/, ""); print; exit }' "$work/dump")
    {
        echo "FSID=$(f fsid)"
        echo "METADATA_UUID=$(f metadata_uuid)"
        echo "DEV_UUID=$(awk '$1 == "dev_item.uuid" { print $2; exit }' "$work/dump")"
        echo "DEVID=$(awk '$1 == "dev_item.devid" { print $2; exit }' "$work/dump")"
        echo "NUM_DEVICES=$(f num_devices)"
        echo "GENERATION=$(f generation)"
        echo "FLAGS=$flags"
        echo "INCOMPAT=$incompat"
        echo "CSUM=$csum"
        echo "LABEL=$label"
    } >"$out/$2.expected"
}

keep() { # keep FILE NAME
    expected "$1" "$2"
    head -c 131072 "$1" | gzip -9 -n >"$out/$2.img.gz"
}

mk() { # mk NAME SIZE MKFS-ARGS...
    local name=$1 size=$2
    shift 2
    truncate -s "$size" "$work/$name"
    echo "+ mkfs.btrfs $* $name" >>"$log"
    mkfs.btrfs -f "$@" "$work/$name" >>"$log" 2>&1
}

mk crc32c 128M -U 10000000-0000-4000-8000-000000000001 -L rootfs --csum crc32c
keep "$work/crc32c" crc32c
mk xxhash 128M -U 10000000-0000-4000-8000-000000000002 -L 'var A' --csum xxhash
keep "$work/xxhash" xxhash
mk sha256 128M -U 10000000-0000-4000-8000-000000000003 -L home --csum sha256
keep "$work/sha256" sha256
mk blake2 128M -U 10000000-0000-4000-8000-000000000004 -L "$(printf 'l\xc3\xa4bel-\xe2\x9c\x93')" --csum blake2
keep "$work/blake2" blake2
mk nolabel 128M -U 10000000-0000-4000-8000-000000000005
keep "$work/nolabel" nolabel
mk longlabel 128M -U 10000000-0000-4000-8000-000000000006 -L "$(printf 'x%.0s' {1..255})"
keep "$work/longlabel" longlabel

mk seed 128M -U 10000000-0000-4000-8000-000000000007 -L seed
echo "+ btrfstune -S 1 seed" >>"$log"
btrfstune -S 1 "$work/seed" >>"$log" 2>&1
keep "$work/seed" seed

truncate -s 256M "$work/raid-1" "$work/raid-2"
echo "+ mkfs.btrfs raid1 raid-1 raid-2" >>"$log"
mkfs.btrfs -f -U 10000000-0000-4000-8000-000000000008 -L data -d raid1 -m raid1 "$work/raid-1" "$work/raid-2" >>"$log" 2>&1
keep "$work/raid-1" raid-1
keep "$work/raid-2" raid-2

mk metauuid 128M -U 10000000-0000-4000-8000-000000000009 -L meta
echo "+ btrfstune -M 20000000-0000-4000-8000-000000000009 metauuid" >>"$log"
btrfstune -f -M 20000000-0000-4000-8000-000000000009 "$work/metauuid" >>"$log" 2>&1
keep "$work/metauuid" metauuid

# not btrfs at all
truncate -s 64M "$work/vfat"
mkfs.vfat -F 32 -n ESP "$work/vfat" >>"$log" 2>&1
head -c 131072 "$work/vfat" | gzip -9 -n >"$out/vfat.img.gz"
echo "images made in $out" >>"$log"
