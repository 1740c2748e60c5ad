/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure parser of the primary btrfs superblock (the 4 KiB at 64 KiB): bytes in, fields out. */
#pragma once

#include <stdbool.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define BSG_SUPER_OFFSET 65536u
#define BSG_SUPER_SIZE 4096u
#define BSG_SUPER_END (BSG_SUPER_OFFSET + BSG_SUPER_SIZE) /* a device shorter than this has none */
#define BSG_UUID_SIZE 16
#define BSG_LABEL_SIZE 256
#define BSG_MAX_DEVICES 65536u /* num_devices above this is absurd */

#define BSG_SUPER_FLAG_SEEDING (1ULL << 32)
/* An fsid change (btrfstune -u, -M) began and did not finish: the kernel then matches the device to
 * a filesystem by either of its UUIDs (linux 6.1 fs/btrfs/volumes.c, find_fsid_inprogress() and
 * find_fsid_changed()). */
#define BSG_SUPER_FLAG_CHANGING_FSID (1ULL << 35)
#define BSG_SUPER_FLAG_CHANGING_FSID_V2 (1ULL << 36)
#define BSG_INCOMPAT_METADATA_UUID (1ULL << 10)

enum bsg_csum_type {
        BSG_CSUM_CRC32C = 0,
        BSG_CSUM_XXHASH64 = 1,
        BSG_CSUM_SHA256 = 2,
        BSG_CSUM_BLAKE2B = 3,
};

enum bsg_csum_state {
        BSG_CSUM_VERIFIED,     /* crc32c, xxhash64: computed and equal */
        BSG_CSUM_NOT_VERIFIED, /* sha256, blake2b: this helper does not compute them */
};

struct bsg_superblock {
        uint8_t fsid[BSG_UUID_SIZE];
        uint8_t metadata_uuid[BSG_UUID_SIZE]; /* == fsid unless INCOMPAT_METADATA_UUID */
        uint8_t dev_uuid[BSG_UUID_SIZE];
        uint64_t devid;
        uint64_t generation;
        uint64_t num_devices;
        uint64_t flags;
        uint64_t incompat_flags;
        uint64_t total_bytes;
        uint32_t sectorsize;
        uint32_t nodesize;
        uint16_t csum_type;
        enum bsg_csum_state csum_state;
        char label[BSG_LABEL_SIZE]; /* NUL-terminated (the parser refuses one without NUL) */
};

/* Results of bsg_superblock_parse() besides 0 (valid). */
#define BSG_SB_NOT_BTRFS (-ENOMSG)  /* no btrfs magic */
#define BSG_SB_INVALID (-EBADMSG)   /* btrfs magic, but the superblock fails a check */
#define BSG_SB_TRUNCATED (-ENODATA) /* fewer than BSG_SUPER_SIZE bytes */

/* Validates SB (the 4096 bytes read at BSG_SUPER_OFFSET, LEN of them present) in the order of
 * btrfs-progs' btrfs_check_super(): bytenr, magic, checksum type, checksum, fields. Returns 0 and
 * fills *ret_sb, or one of BSG_SB_*; on failure *problem (if not NULL) names the failed check. */
int bsg_superblock_parse(const uint8_t *sb, size_t len, struct bsg_superblock *ret_sb, const char **problem);

bool bsg_superblock_is_seed(const struct bsg_superblock *sb);
/* CHANGING_FSID or CHANGING_FSID_V2 is set. */
bool bsg_superblock_fsid_changing(const struct bsg_superblock *sb);
/* The METADATA_UUID incompat feature: metadata_uuid is its own UUID, not the fsid. */
bool bsg_superblock_has_metadata_uuid(const struct bsg_superblock *sb);
const char *bsg_csum_type_name(uint16_t csum_type); /* "crc32c", ... or NULL if unknown */
const char *bsg_csum_state_name(enum bsg_csum_state s); /* "verified", "not-verified" */

/* Whether NOW (a superblock read after a scan) says all that WANT said and the decision used: fsid,
 * metadata_uuid, device UUID, devid, num_devices, generation, the seed and fsid-change flags and the
 * METADATA_UUID feature. For a decision made from the inventory's summary, where the block itself
 * was not read; a decision from a read compares the whole block. */
bool bsg_superblock_same_summary(const struct bsg_superblock *want, const struct bsg_superblock *now);

/* Formats a UUID as 36 lowercase characters plus NUL. */
void bsg_uuid_format(const uint8_t uuid[BSG_UUID_SIZE], char out[37]);
/* Parses "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"; returns 0 or -EINVAL. */
int bsg_uuid_parse(const char *s, uint8_t ret_uuid[BSG_UUID_SIZE]);
