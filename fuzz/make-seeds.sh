#!/bin/bash
# Makes the seed corpora of the fuzz targets:  make-seeds.sh IMAGES_DIR OUT_DIR [CONFIG_FILE...]
#   OUT_DIR/superblock/  the 4096-byte primary superblock (at 64 KiB) of every tests/images/*.gz
#   OUT_DIR/config/      example configuration files
#   OUT_DIR/cmdline/     example kernel command lines
#   OUT_DIR/skiplist/    example skip_scan lists
#   OUT_DIR/slot/        CONFIG NUL CMDLINE NUL ROOT NUL LABEL... (see fuzz-slot.c)
#   OUT_DIR/stack/       device-mapper tables as DM_TABLE_STATUS shows them (see fuzz-stack.c)
#   OUT_DIR/mountinfo/   example /proc/self/mountinfo texts
#   OUT_DIR/property/    generated worlds of devices (see fuzz-property.c)
# The fuzzers' input formats are described at the top of each fuzz-*.c.
set -euo pipefail
images=$1 out=$2
shift 2
rm -rf "$out.tmp"
mkdir -p "$out.tmp"/{superblock,config,cmdline,skiplist,slot,mountinfo,rauc,partsets,stack,property}
n=0
for gz in "$images"/*.gz; do
    [ -e "$gz" ] || continue
    name=$(basename "$gz" .gz)
    gzip -dc "$gz" >"$out.tmp/image.raw"
    if [ "$(stat -c %s "$out.tmp/image.raw")" -ge $((65536 + 4096)) ]; then
        dd if="$out.tmp/image.raw" of="$out.tmp/superblock/$name" bs=4096 skip=16 count=1 status=none
        n=$((n + 1))
    fi
done
rm -f "$out.tmp/image.raw"
# plus fresh mkfs.btrfs superblocks, one per checksum type (tool output in OUT_DIR.mkfs.log)
if command -v mkfs.btrfs >/dev/null; then
    for c in crc32c xxhash sha256 blake2; do
        truncate -s 120M "$out.tmp/mkfs.raw"
        if mkfs.btrfs -f -q --csum "$c" -L "seed-$c" -U 0badf00d-0000-4000-8000-00000000000${#c} \
            "$out.tmp/mkfs.raw" >>"$out.mkfs.log" 2>&1; then
            dd if="$out.tmp/mkfs.raw" of="$out.tmp/superblock/mkfs-$c" bs=4096 skip=16 count=1 status=none
            n=$((n + 1))
        fi
        rm -f "$out.tmp/mkfs.raw"
    done
fi
# a zeroed block and a block with only the magic, so the corpus is never empty
head -c 4096 /dev/zero >"$out.tmp/superblock/zero"
{ head -c 64 /dev/zero; printf '_BHRfS_M'; head -c 4024 /dev/zero; } >"$out.tmp/superblock/magic-only"

w() { printf '%b' "$2" >"$out.tmp/$1"; }
w config/empty ''
w rauc/reference '[system]\ncompatible=FooCorp Super BarBazzer\nbootloader=barebox\n\n[slot.rootfs.0]\ndevice=/dev/sda0\ntype=ext4\nbootname=system0\n\n[slot.rootfs.1]\ndevice=/dev/sda1\ntype=ext4\nbootname=system1\n'
w rauc/children '[slot.rootfs.0]\ndevice=/dev/mmcblk0p2\nbootname=A\n[slot.appfs.0]\ndevice=/dev/mmcblk0p5\nparent=rootfs.0\n[slot.]\n[slot.x\n'
w partsets/a 'A\0efi 11111111-0000-0000-0000-00000000000a\nrootfs 22222222-0000-0000-0000-00000000000a\n\00022222222-0000-0000-0000-00000000000A'
w partsets/bad '../x\0rootfs nope\n# c\n\0'
w config/comments '# comment\n\n   # indented comment\n'
w config/full 'slot_partlabel_suffixes = _a,_b\nactive_slot = A\npolicy = strict\n# x\nverbose=1\n'
w config/steamos '[slots]\nsuffixes=-A,-B\nsource=cmdline\n'
w config/bad 'no equals sign\n=value\nkey=\nkey = "quoted value"\n\\\n'
w config/long "$(printf 'k%.0s' {1..300})=v\n"
w config/crlf 'active_slot=B\r\n'
w cmdline/steamos 'BOOT_IMAGE=/boot/vmlinuz-linux console=tty1 rd.luks=0 rd.lvm=0 rd.md=0 rd.dm=0 rd.systemd.gpt_auto=no steamos.efi=PARTUUID=1234 root=PARTLABEL=rootfs-A rw quiet splash\n'
w cmdline/rauc 'root=/dev/mmcblk0p2 rauc.slot=A rootwait ro\n'
w cmdline/gate 'btrfs_scan_gate.slot=B btrfs_scan_gate.mode=strict btrfs_scan_gate=off\n'
w cmdline/quotes 'foo="bar baz" "quoted=arg" root=PARTLABEL="rootfs B" btrfs_scan_gate.slot=\n'
w cmdline/empty ''
w cmdline/weird 'a==b ==c = \t\n btrfs_scan_gate.slot=Z btrfs_scan_gate.slot=A rauc.slot=system0\n'
w skiplist/one '/dev/sda3'
w skiplist/two '/dev/sda3,/dev/sdb3\n'
w skiplist/many '/dev/disk/by-partlabel/rootfs-B,/dev/nvme0n1p5,/dev/vdb,/dev/mmcblk0p3\n'
w skiplist/empty ''
w skiplist/bad ',,/dev/a,, ,relative,/dev/a\n'
w slot/config 'active_slot=B\0\0\0rootfs-A\0rootfs-B'
w slot/cmdline '\0root=PARTLABEL=rootfs-B quiet\0\0rootfs-A\0rootfs-B\0var-A\0var-B'
w slot/rauc '\0rauc.slot=A\0\0rootfs_a\0rootfs_b'
w slot/steamos 'slot_suffixes=-A,-B\n\0steamos.efi=PARTUUID=00000001-0000-4000-8000-000000000000\0\0esp\0rootfs-A\0rootfs-B'
w slot/mounted '\0quiet\0/dev/fuzz1\0home-A\0home-B'
w slot/none '\0\0\0esp'
w stack/verity 'verity 1 254:2 254:16 4096 4096 32768 0 sha256 91deed9f 5fda9b09\n'
w stack/linear 'linear 254:6 0\n'
w stack/crypt 'crypt aes-xts-plain64 :64:logon:cryptsetup:x 0 259:3 32768\n'
w stack/two 'linear 8:1 0\nlinear 8:17 0\n'
w mountinfo/simple '22 1 0:21 / / rw,relatime shared:1 - btrfs /dev/vda rw,space_cache=v2,subvolid=5,subvol=/\n23 22 0:5 / /proc rw,nosuid - proc proc rw\n'
w mountinfo/overmount '22 1 0:21 / / rw - btrfs /dev/vda rw\n40 22 0:30 / / rw master:3 - overlay overlay rw,lowerdir=/a\n50 40 8:3 /@home /home rw - btrfs /dev/sda3 rw\n'
w mountinfo/short '1 2 3 4 / x - \n- - - - - - - -\n'
# worlds (fuzz-property.c): a trusted copy and a stick's copy of one fsid with a stalled stick; a
# two-device filesystem, one member registered, beside an unreadable device; A/B clones
w property/clone-and-stall '\0001\0003\0000\0000\0000\0000\0000\0000\0000\0000\0000\0001\0000\0000\0006\0000\0000\0001\0000\0000'
w property/raid-and-doubt '\0000\0004\0000\0005\0000\0000\0000\0000\0000\0045\0000\0000\0000\0000\0007\0000\0000\0001\0000\0000\0006\0000\0000\0000\0000\0000'
w property/ab-clones '\0001\0002\0000\0000\0000\0200\0000\0000\0000\0000\0000\0000\0000\0000'
for f in "$@"; do
    [ -f "$f" ] && cp "$f" "$out.tmp/config/file-$(basename "$f")"
done
rm -rf "$out"
mv "$out.tmp" "$out"
echo "seed corpora in $out ($n superblock images)"
