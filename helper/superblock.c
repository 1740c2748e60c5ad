/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "crc32c.h"
#include "superblock.h"
#include "util.h"

#define BTRFS_MAGIC 0x4D5F53665248425FULL /* "_BHRfS_M" */
#define BTRFS_CSUM_SIZE 32
#define BTRFS_MAX_LEVEL 8
#define BTRFS_SYS_ARRAY_MIN (17 + 80) /* one struct btrfs_disk_key and one struct btrfs_chunk */

/* The on-disk layout, packed and padded to 4096 bytes; every field is little-endian. */
struct disk_dev_item {
        uint64_t devid;
        uint64_t total_bytes;
        uint64_t bytes_used;
        uint32_t io_align;
        uint32_t io_width;
        uint32_t sector_size;
        uint64_t type;
        uint64_t generation;
        uint64_t start_offset;
        uint32_t dev_group;
        uint8_t seek_speed;
        uint8_t bandwidth;
        uint8_t uuid[BSG_UUID_SIZE];
        uint8_t fsid[BSG_UUID_SIZE];
} __attribute__((packed));

struct disk_super {
        uint8_t csum[BTRFS_CSUM_SIZE];
        uint8_t fsid[BSG_UUID_SIZE];
        uint64_t bytenr;
        uint64_t flags;
        uint64_t magic;
        uint64_t generation;
        uint64_t root;
        uint64_t chunk_root;
        uint64_t log_root;
        uint64_t unused_log_root_transid;
        uint64_t total_bytes;
        uint64_t bytes_used;
        uint64_t root_dir_objectid;
        uint64_t num_devices;
        uint32_t sectorsize;
        uint32_t nodesize;
        uint32_t unused_leafsize;
        uint32_t stripesize;
        uint32_t sys_chunk_array_size;
        uint64_t chunk_root_generation;
        uint64_t compat_flags;
        uint64_t compat_ro_flags;
        uint64_t incompat_flags;
        uint16_t csum_type;
        uint8_t root_level;
        uint8_t chunk_root_level;
        uint8_t log_root_level;
        struct disk_dev_item dev_item;
        char label[BSG_LABEL_SIZE];
        uint64_t cache_generation;
        uint64_t uuid_tree_generation;
        uint8_t metadata_uuid[BSG_UUID_SIZE];
        uint64_t nr_global_roots;
        uint64_t reserved[27];
        uint8_t sys_chunk_array[2048];
        uint8_t super_roots[4 * 168];
        uint8_t padding[565];
} __attribute__((packed));

_Static_assert(sizeof(struct disk_dev_item) == 98, "dev_item layout");
_Static_assert(offsetof(struct disk_super, bytes_used) == 0x78, "bytes_used offset");
_Static_assert(offsetof(struct disk_super, stripesize) == 0x9c, "stripesize offset");
_Static_assert(offsetof(struct disk_super, sys_chunk_array_size) == 0xa0, "sys_chunk_array_size offset");
_Static_assert(offsetof(struct disk_super, root_level) == 0xc6, "root_level offset");
_Static_assert(offsetof(struct disk_super, log_root_level) == 0xc8, "log_root_level offset");
_Static_assert(offsetof(struct disk_super, dev_item) == 0xc9, "dev_item offset");
_Static_assert(offsetof(struct disk_super, label) == 0x12b, "label offset");
_Static_assert(offsetof(struct disk_super, metadata_uuid) == 0x23b, "metadata_uuid offset");
_Static_assert(offsetof(struct disk_super, sys_chunk_array) == 0x32b, "sys_chunk_array offset");
_Static_assert(sizeof(struct disk_super) == BSG_SUPER_SIZE, "superblock is 4096 bytes");

static bool is_power_of_2(uint64_t x)
{
        return x != 0 && (x & (x - 1)) == 0;
}

const char *bsg_csum_type_name(uint16_t csum_type)
{
        switch (csum_type) {
        case BSG_CSUM_CRC32C:
                return "crc32c";
        case BSG_CSUM_XXHASH64:
                return "xxhash64";
        case BSG_CSUM_SHA256:
                return "sha256";
        case BSG_CSUM_BLAKE2B:
                return "blake2b";
        }
        return NULL;
}

const char *bsg_csum_state_name(enum bsg_csum_state s)
{
        return s == BSG_CSUM_VERIFIED ? "verified" : "not-verified";
}

/* Returns 1 if the checksum matches, 0 if it does not, -EOPNOTSUPP if this type is not computed. */
static int check_csum(const uint8_t *raw, uint16_t type)
{
        const uint8_t *data = raw + BTRFS_CSUM_SIZE;
        size_t len = BSG_SUPER_SIZE - BTRFS_CSUM_SIZE;
        uint8_t want[BTRFS_CSUM_SIZE] = {0};

        switch (type) {
        case BSG_CSUM_CRC32C: {
                uint32_t c = htole32(bsg_crc32c(0, data, len));
                memcpy(want, &c, sizeof(c));
                return memcmp(want, raw, sizeof(c)) == 0;
        }
        case BSG_CSUM_XXHASH64: {
                uint64_t h = htole64(bsg_xxhash64(data, len, 0));
                memcpy(want, &h, sizeof(h));
                return memcmp(want, raw, sizeof(h)) == 0;
        }
        default:
                return -EOPNOTSUPP;
        }
}

#define FAIL(ret, what)                                                                                 \
        do {                                                                                            \
                if (problem)                                                                            \
                        *problem = (what);                                                              \
                return (ret);                                                                           \
        } while (0)

int bsg_superblock_parse(const uint8_t *raw, size_t len, struct bsg_superblock *ret_sb, const char **problem)
{
        struct disk_super d;
        struct bsg_superblock sb = {0};
        int r;

        if (len < BSG_SUPER_SIZE)
                FAIL(BSG_SB_TRUNCATED, "device too small for a superblock at 64 KiB");
        memcpy(&d, raw, sizeof(d));

        bool magic_ok = le64toh(d.magic) == BTRFS_MAGIC;
        if (le64toh(d.bytenr) != BSG_SUPER_OFFSET) {
                if (!magic_ok)
                        FAIL(BSG_SB_NOT_BTRFS, "no btrfs magic");
                FAIL(BSG_SB_INVALID, "bytenr is not 65536");
        }
        if (!magic_ok)
                FAIL(BSG_SB_NOT_BTRFS, "no btrfs magic");

        sb.csum_type = le16toh(d.csum_type);
        if (!bsg_csum_type_name(sb.csum_type))
                FAIL(BSG_SB_INVALID, "unknown checksum type");
        r = check_csum(raw, sb.csum_type);
        if (r == 0)
                FAIL(BSG_SB_INVALID, "checksum mismatch");
        sb.csum_state = r > 0 ? BSG_CSUM_VERIFIED : BSG_CSUM_NOT_VERIFIED;

        if (d.root_level >= BTRFS_MAX_LEVEL)
                FAIL(BSG_SB_INVALID, "root_level is 8 or more");
        if (d.chunk_root_level >= BTRFS_MAX_LEVEL)
                FAIL(BSG_SB_INVALID, "chunk_root_level is 8 or more");
        if (d.log_root_level >= BTRFS_MAX_LEVEL)
                FAIL(BSG_SB_INVALID, "log_root_level is 8 or more");

        sb.sectorsize = le32toh(d.sectorsize);
        sb.nodesize = le32toh(d.nodesize);
        if (!is_power_of_2(sb.sectorsize) || sb.sectorsize < 4096 || sb.sectorsize > 65536)
                FAIL(BSG_SB_INVALID, "sectorsize is not a power of two in 4096..65536");
        if (!is_power_of_2(sb.nodesize) || sb.nodesize < sb.sectorsize || sb.nodesize > 65536)
                FAIL(BSG_SB_INVALID, "nodesize is not a power of two in sectorsize..65536");
        if (le64toh(d.root) % sb.sectorsize || le64toh(d.chunk_root) % sb.sectorsize ||
            le64toh(d.log_root) % sb.sectorsize)
                FAIL(BSG_SB_INVALID, "tree root not aligned to sectorsize");
        sb.total_bytes = le64toh(d.total_bytes);
        if (sb.total_bytes == 0)
                FAIL(BSG_SB_INVALID, "total_bytes is 0");
        if (le64toh(d.bytes_used) < 6ULL * sb.nodesize)
                FAIL(BSG_SB_INVALID, "bytes_used is less than 6 nodes");
        uint32_t stripesize = le32toh(d.stripesize);
        if (stripesize != 4096 && stripesize != sb.sectorsize)
                FAIL(BSG_SB_INVALID, "stripesize is neither 4096 nor sectorsize");
        sb.num_devices = le64toh(d.num_devices);
        if (sb.num_devices == 0)
                FAIL(BSG_SB_INVALID, "num_devices is 0");
        if (sb.num_devices > BSG_MAX_DEVICES)
                FAIL(BSG_SB_INVALID, "num_devices is absurd");
        if (le32toh(d.sys_chunk_array_size) > sizeof(d.sys_chunk_array))
                FAIL(BSG_SB_INVALID, "sys_chunk_array_size too large");
        if (le32toh(d.sys_chunk_array_size) < BTRFS_SYS_ARRAY_MIN)
                FAIL(BSG_SB_INVALID, "sys_chunk_array_size too small for one chunk");
        sb.devid = le64toh(d.dev_item.devid);
        if (sb.devid == 0)
                FAIL(BSG_SB_INVALID, "devid is 0");
        if (!memchr(d.label, '\0', sizeof(d.label)))
                FAIL(BSG_SB_INVALID, "label not NUL-terminated");

        sb.flags = le64toh(d.flags);
        sb.incompat_flags = le64toh(d.incompat_flags);
        memcpy(sb.fsid, d.fsid, BSG_UUID_SIZE);
        if (sb.incompat_flags & BSG_INCOMPAT_METADATA_UUID)
                memcpy(sb.metadata_uuid, d.metadata_uuid, BSG_UUID_SIZE);
        else
                memcpy(sb.metadata_uuid, d.fsid, BSG_UUID_SIZE);
        if (memcmp(d.dev_item.fsid, sb.metadata_uuid, BSG_UUID_SIZE) != 0)
                FAIL(BSG_SB_INVALID, "dev_item fsid differs from the filesystem's");
        memcpy(sb.dev_uuid, d.dev_item.uuid, BSG_UUID_SIZE);
        sb.generation = le64toh(d.generation);
        memcpy(sb.label, d.label, sizeof(sb.label));

        *ret_sb = sb;
        return 0;
}

bool bsg_superblock_is_seed(const struct bsg_superblock *sb)
{
        return sb->flags & BSG_SUPER_FLAG_SEEDING;
}

bool bsg_superblock_fsid_changing(const struct bsg_superblock *sb)
{
        return sb->flags & (BSG_SUPER_FLAG_CHANGING_FSID | BSG_SUPER_FLAG_CHANGING_FSID_V2);
}

bool bsg_superblock_has_metadata_uuid(const struct bsg_superblock *sb)
{
        return sb->incompat_flags & BSG_INCOMPAT_METADATA_UUID;
}

bool bsg_superblock_same_summary(const struct bsg_superblock *want, const struct bsg_superblock *now)
{
        return memcmp(want->fsid, now->fsid, BSG_UUID_SIZE) == 0 &&
               memcmp(want->metadata_uuid, now->metadata_uuid, BSG_UUID_SIZE) == 0 &&
               memcmp(want->dev_uuid, now->dev_uuid, BSG_UUID_SIZE) == 0 && want->devid == now->devid &&
               want->num_devices == now->num_devices && want->generation == now->generation &&
               bsg_superblock_is_seed(want) == bsg_superblock_is_seed(now) &&
               bsg_superblock_fsid_changing(want) == bsg_superblock_fsid_changing(now) &&
               bsg_superblock_has_metadata_uuid(want) == bsg_superblock_has_metadata_uuid(now);
}

void bsg_uuid_format(const uint8_t u[BSG_UUID_SIZE], char out[37])
{
        static const char hex[] = "0123456789abcdef";
        char *o = out;

        for (int i = 0; i < BSG_UUID_SIZE; i++) {
                if (i == 4 || i == 6 || i == 8 || i == 10)
                        *o++ = '-';
                *o++ = hex[u[i] >> 4];
                *o++ = hex[u[i] & 15];
        }
        *o = '\0';
}

int bsg_uuid_parse(const char *s, uint8_t ret_uuid[BSG_UUID_SIZE])
{
        uint8_t u[BSG_UUID_SIZE];
        size_t i = 0;

        if (!s || strlen(s) != 36)
                return -EINVAL;
        for (size_t k = 0; k < 36;) {
                if (k == 8 || k == 13 || k == 18 || k == 23) {
                        if (s[k] != '-')
                                return -EINVAL;
                        k++;
                        continue;
                }
                int hi = hexval(s[k]), lo = hexval(s[k + 1]);
                if (hi < 0 || lo < 0)
                        return -EINVAL;
                u[i++] = (uint8_t)(hi << 4 | lo);
                k += 2;
        }
        memcpy(ret_uuid, u, sizeof(u));
        return 0;
}
