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

# gpt: a 128 KiB whole disk with a GPT naming partitions 1, 4 and 5 by the PARTUUIDs the suite gives
# sda1, sda4 and sda5 (issue 18 item 1: a first coldplug finds the disk the boot names from the
# disk's own partition table, before udev's database has any PARTUUID).
# home-gpt: the home filesystem's first 128 KiB with a GPT written over its start (one partition
# after the superblock), as a disk formatted whole and then partitioned carries it: a stale btrfs
# superblock beside a partition table.
python3 - "$out" <<'PY'
import struct, sys, uuid, zlib
out = sys.argv[1]
def gpt(name, base, parts, tag):
    size, sector = 128 * 1024, 512
    last = size // sector - 1
    img = bytearray(open(f"{out}/{base}.img", "rb").read()) if base else bytearray(size)
    assert len(img) == size
    # protective MBR
    img[446 + 4] = 0xEE
    img[446 + 8:446 + 16] = struct.pack("<II", 1, min(last, 0xFFFFFFFF))
    img[510:512] = b"\x55\xaa"
    linux = uuid.UUID("0fc63daf-8483-4772-8e79-3d69d8477de4").bytes_le
    entries = bytearray(128 * 128)
    for n, first, end in parts:
        u = uuid.UUID("%s-0000-4000-8000-%012d" % (tag, n)).bytes_le
        entries[(n - 1) * 128:(n - 1) * 128 + 56] = linux + u + struct.pack("<QQQ", first, end, 0)
    img[2 * sector:2 * sector + len(entries)] = entries
    disk_guid = uuid.UUID("%s-0000-4000-8000-0000000000d0" % tag).bytes_le
    hdr = struct.pack("<8sIIIIQQQQ16sQIII", b"EFI PART", 0x00010000, 92, 0, 0, 1, last, 34, last - 33,
                      disk_guid, 2, 128, 128, zlib.crc32(bytes(entries)) & 0xFFFFFFFF)
    hdr = hdr[:16] + struct.pack("<I", zlib.crc32(hdr) & 0xFFFFFFFF) + hdr[20:]
    img[sector:sector + 92] = hdr
    # the backup header and entries at the end, as a real GPT has them
    img[(last - 32) * sector:(last - 32) * sector + len(entries)] = entries
    bak = struct.pack("<8sIIIIQQQQ16sQIII", b"EFI PART", 0x00010000, 92, 0, 0, last, 1, 34, last - 33,
                      disk_guid, last - 32, 128, 128, zlib.crc32(bytes(entries)) & 0xFFFFFFFF)
    bak = bak[:16] + struct.pack("<I", zlib.crc32(bak) & 0xFFFFFFFF) + bak[20:]
    img[last * sector:last * sector + 92] = bak
    open(f"{out}/{name}.img.tmp", "wb").write(img)
gpt("gpt", None, ((1, 34, 39), (4, 40, 45), (5, 46, 51)), "00000fa0")
gpt("home-gpt", "home", ((1, 136, 200),), "00000fa1")
PY
mv "$out/gpt.img.tmp" "$out/gpt.img"
mv "$out/home-gpt.img.tmp" "$out/home-gpt.img"

# hostile copies of the root's members (review of the trust anchor, A4/A5): raid-2 with a generation
# 1000 higher (raid-2-newer), rootfs claiming num_devices=2 (rootfs-nd2); home one transaction later
# (home-newer: what a mount leaves); checksum redone (crc32c)
python3 - "$out" <<'PY'
import struct, sys
out = sys.argv[1]
def crc32c(data, crc=0xFFFFFFFF):
    tbl = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        tbl.append(c)
    for b in data:
        crc = tbl[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
def craft(src, dst, num_devices=None, gen_add=1000):
    img = bytearray(open(f"{out}/{src}.img", "rb").read())
    o = 0x10000
    sb = img[o:o + 0x1000]
    if num_devices:
        struct.pack_into("<Q", sb, 0x88, num_devices)
    struct.pack_into("<Q", sb, 0x48, struct.unpack_from("<Q", sb, 0x48)[0] + gen_add)
    struct.pack_into("<I", sb, 0, crc32c(bytes(sb[0x20:])))
    img[o:o + 0x1000] = sb
    open(f"{out}/{dst}.img.tmp", "wb").write(img)
craft("raid-2", "raid-2-newer")
craft("rootfs", "rootfs-nd2", num_devices=2)
craft("home", "home-newer", gen_add=1)
PY
mv "$out/raid-2-newer.img.tmp" "$out/raid-2-newer.img"
mv "$out/home-newer.img.tmp" "$out/home-newer.img"
mv "$out/rootfs-nd2.img.tmp" "$out/rootfs-nd2.img"
