#!/usr/bin/env python3
# Edits the primary btrfs superblock (64 KiB) of an image file in place and recomputes its crc32c:
# the crafted media of issue 18 case 1. Offsets are those of the on-disk format (struct
# btrfs_super_block); only facts (offsets, bits) are taken from the format.
#   craft-super.py IMAGE [--metadata-uuid UUID] [--dev-fsid UUID] [--dev-uuid UUID] [--flags-or HEX]
#                        [--generation N] [--devid N] [--num-devices N]
import argparse
import struct
import uuid

SB = 65536
OFF_FLAGS, OFF_GENERATION, OFF_NUM_DEVICES, OFF_INCOMPAT = 0x38, 0x48, 0x88, 0xBC
OFF_DEVID, OFF_DEV_UUID, OFF_DEV_FSID, OFF_METADATA_UUID = 0xC9, 0x10B, 0x11B, 0x23B
INCOMPAT_METADATA_UUID = 1 << 10


def crc32c(data):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("image")
    ap.add_argument("--metadata-uuid")
    ap.add_argument("--dev-fsid")
    ap.add_argument("--dev-uuid")
    ap.add_argument("--flags-or", type=lambda s: int(s, 16), default=0)
    ap.add_argument("--generation", type=int)
    ap.add_argument("--devid", type=int)
    ap.add_argument("--num-devices", type=int)
    a = ap.parse_args()
    with open(a.image, "r+b") as f:
        f.seek(SB)
        sb = bytearray(f.read(4096))
        if len(sb) != 4096 or sb[0x40:0x48] != b"_BHRfS_M":
            raise SystemExit("no btrfs superblock at 64 KiB")

        def put64(off, v):
            sb[off:off + 8] = struct.pack("<Q", v)

        def get64(off):
            return struct.unpack("<Q", sb[off:off + 8])[0]

        if a.metadata_uuid:
            sb[OFF_METADATA_UUID:OFF_METADATA_UUID + 16] = uuid.UUID(a.metadata_uuid).bytes
            put64(OFF_INCOMPAT, get64(OFF_INCOMPAT) | INCOMPAT_METADATA_UUID)
        if a.dev_fsid:
            sb[OFF_DEV_FSID:OFF_DEV_FSID + 16] = uuid.UUID(a.dev_fsid).bytes
        if a.dev_uuid:
            sb[OFF_DEV_UUID:OFF_DEV_UUID + 16] = uuid.UUID(a.dev_uuid).bytes
        put64(OFF_FLAGS, get64(OFF_FLAGS) | a.flags_or)
        if a.generation is not None:
            put64(OFF_GENERATION, a.generation)
        if a.devid is not None:
            put64(OFF_DEVID, a.devid)
        if a.num_devices is not None:
            put64(OFF_NUM_DEVICES, a.num_devices)
        sb[0:32] = struct.pack("<I", crc32c(bytes(sb[32:]))) + bytes(28)
        f.seek(SB)
        f.write(sb)


main()
