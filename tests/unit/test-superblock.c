/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Superblock parser on real mkfs.btrfs images (tests/images/, decompressed into BSG_IMAGES by the build)
 * against btrfs-progs' own reading of them (NAME.expected, from dump-super), and on mutated copies. */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "crc32c.h"
#include "superblock.h"

#define IMG_SIZE 131072

static const char *images_dir;

static size_t load_image(const char *name, uint8_t *buf)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s.img", images_dir, name);
        FILE *f = fopen(path, "rb");
        if (!f) {
                fprintf(stderr, "cannot open %s\n", path);
                exit(1);
        }
        size_t n = fread(buf, 1, IMG_SIZE, f);
        fclose(f);
        return n;
}

/* Value of KEY in NAME.expected (golden from dump-super), into OUT. */
static int expected(const char *name, const char *key, char *out, size_t size)
{
        char path[4096], line[1024];
        snprintf(path, sizeof(path), "%s/%s.expected", images_dir, name);
        FILE *f = fopen(path, "r");
        if (!f)
                return -errno;
        size_t kl = strlen(key);
        int r = -ENOENT;
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, key, kl) == 0 && line[kl] == '=') {
                        line[strcspn(line, "\n")] = '\0';
                        snprintf(out, size, "%s", line + kl + 1);
                        r = 0;
                        break;
                }
        }
        fclose(f);
        return r;
}

/* dump-super prints bytes outside printable ASCII as '.' */
static void dots(const char *in, char *out)
{
        for (; *in; in++)
                *out++ = (*in >= 0x20 && *in < 0x7f) ? *in : '.';
        *out = '\0';
}

struct image_case {
        const char *name;
        const char *csum;
        enum bsg_csum_state state;
        int seed;
};

static void image_one(const struct image_case *t)
{
        static uint8_t img[IMG_SIZE];
        struct bsg_superblock sb;
        const char *problem = NULL;
        char want[1024], got[1024], uuid[37];

        check_case = t->name;
        size_t n = load_image(t->name, img);
        CHECK(n == IMG_SIZE);
        int r = bsg_superblock_parse(img + BSG_SUPER_OFFSET, BSG_SUPER_SIZE, &sb, &problem);
        if (r != 0)
                fprintf(stderr, "%s: %s\n", t->name, problem);
        CHECK(r == 0);
        if (r != 0)
                return;
        CHECK_STREQ(bsg_csum_type_name(sb.csum_type), t->csum);
        CHECK(sb.csum_state == t->state);
        CHECK(bsg_superblock_is_seed(&sb) == !!t->seed);

        CHECK(expected(t->name, "FSID", want, sizeof(want)) == 0);
        bsg_uuid_format(sb.fsid, uuid);
        CHECK_STREQ(uuid, want);
        CHECK(expected(t->name, "METADATA_UUID", want, sizeof(want)) == 0);
        bsg_uuid_format(sb.metadata_uuid, uuid);
        CHECK_STREQ(uuid, want);
        CHECK(expected(t->name, "DEV_UUID", want, sizeof(want)) == 0);
        bsg_uuid_format(sb.dev_uuid, uuid);
        CHECK_STREQ(uuid, want);
        CHECK(expected(t->name, "DEVID", want, sizeof(want)) == 0);
        CHECK_EQ_U64(sb.devid, strtoull(want, NULL, 10));
        CHECK(expected(t->name, "NUM_DEVICES", want, sizeof(want)) == 0);
        CHECK_EQ_U64(sb.num_devices, strtoull(want, NULL, 10));
        CHECK(expected(t->name, "GENERATION", want, sizeof(want)) == 0);
        CHECK_EQ_U64(sb.generation, strtoull(want, NULL, 10));
        CHECK(expected(t->name, "FLAGS", want, sizeof(want)) == 0);
        CHECK_EQ_U64(sb.flags, strtoull(want, NULL, 16));
        CHECK(expected(t->name, "INCOMPAT", want, sizeof(want)) == 0);
        CHECK_EQ_U64(sb.incompat_flags, strtoull(want, NULL, 16));
        CHECK(expected(t->name, "LABEL", want, sizeof(want)) == 0);
        dots(sb.label, got);
        CHECK_STREQ(got, want);
}

/* Mutations of a valid image, with the checksum recomputed where the mutation is past it. */
enum fix { NO_FIX, FIX_CRC32C };

struct mut_case {
        const char *name;
        const char *image;
        size_t offset; /* in the superblock */
        const void *bytes;
        size_t len;
        enum fix fix;
        size_t truncate_to; /* 0: whole superblock */
        int want;
        const char *problem;
};

static void mut_one(const struct mut_case *t)
{
        static uint8_t img[IMG_SIZE];
        struct bsg_superblock sb = {0};
        const char *problem = NULL;

        check_case = t->name;
        load_image(t->image, img);
        uint8_t *s = img + BSG_SUPER_OFFSET;
        if (t->bytes)
                memcpy(s + t->offset, t->bytes, t->len);
        if (t->fix == FIX_CRC32C) {
                uint32_t c = htole32(bsg_crc32c(0, s + 32, BSG_SUPER_SIZE - 32));
                memcpy(s, &c, 4);
        }
        int r = bsg_superblock_parse(s, t->truncate_to ? t->truncate_to : BSG_SUPER_SIZE, &sb, &problem);
        CHECK(r == t->want);
        if (t->problem)
                CHECK_STREQ(problem, t->problem);
        if (r != 0)
                CHECK(sb.devid == 0); /* ret_sb untouched on failure */
}

static void known_answers(void)
{
        check_case = "crc32c/xxhash64 known answers";
        CHECK(bsg_crc32c(0, "123456789", 9) == 0xe3069283u);
        CHECK(bsg_crc32c(0, "", 0) == 0);
        CHECK(bsg_xxhash64("", 0, 0) == 0xef46db3751d8e999ULL);
        CHECK(bsg_xxhash64("abc", 3, 0) == 0x44bc2cf5ad770999ULL);
        /* the 32-byte stripe loop, and all tails */
        static uint8_t buf[100];
        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = (uint8_t)i;
        uint64_t a = bsg_xxhash64(buf, 100, 0), b = bsg_xxhash64(buf, 99, 0);
        CHECK(a != b);

        check_case = "uuid";
        uint8_t u[16];
        char s[37];
        CHECK(bsg_uuid_parse("11111111-2222-3333-4444-555555555555", u) == 0);
        bsg_uuid_format(u, s);
        CHECK_STREQ(s, "11111111-2222-3333-4444-555555555555");
        CHECK(bsg_uuid_parse("11111111-2222-3333-4444-55555555555", u) == -EINVAL);
        CHECK(bsg_uuid_parse("1111111x-2222-3333-4444-555555555555", u) == -EINVAL);
        CHECK(bsg_uuid_parse("11111111+2222-3333-4444-555555555555", u) == -EINVAL);
}

/* The identity bits the policy reads (issue 18 case 1): the fsid-change flags (super flags bits 35
 * and 36, BTRFS_SUPER_FLAG_CHANGING_FSID and _V2 in linux 6.1 btrfs_tree.h) and the METADATA_UUID
 * incompat feature. */
static void identity_one(const char *name, const char *image, uint64_t set_flags, bool changing, bool has_mu)
{
        static uint8_t img[IMG_SIZE];
        struct bsg_superblock sb = {0};

        check_case = name;
        CHECK(load_image(image, img) == IMG_SIZE);
        uint8_t *s = img + BSG_SUPER_OFFSET;
        if (set_flags) {
                uint64_t f;
                memcpy(&f, s + 0x38, 8);
                f = htole64(le64toh(f) | set_flags);
                memcpy(s + 0x38, &f, 8);
                uint32_t c = htole32(bsg_crc32c(0, s + 32, BSG_SUPER_SIZE - 32));
                memcpy(s, &c, 4);
        }
        CHECK(bsg_superblock_parse(s, BSG_SUPER_SIZE, &sb, NULL) == 0);
        CHECK(bsg_superblock_fsid_changing(&sb) == changing);
        CHECK(bsg_superblock_has_metadata_uuid(&sb) == has_mu);
}

/* bsg_superblock_same_summary(): every field a decision from the inventory used, and only those. */
static void same_summary(void)
{
        static uint8_t img[IMG_SIZE];
        struct bsg_superblock a = {0}, b;

        check_case = "same-summary";
        CHECK(load_image("raid-1", img) == IMG_SIZE);
        CHECK(bsg_superblock_parse(img + BSG_SUPER_OFFSET, BSG_SUPER_SIZE, &a, NULL) == 0);
        CHECK(bsg_superblock_same_summary(&a, &a));
        b = a;
        b.label[0] ^= 1;
        CHECK(bsg_superblock_same_summary(&a, &b)); /* the label is not a decision's input */
#define DIFFERS(name, stmt)                                     \
        do {                                                    \
                check_case = "same-summary-" name;              \
                b = a;                                          \
                stmt;                                           \
                CHECK(!bsg_superblock_same_summary(&a, &b));    \
        } while (0)
        DIFFERS("fsid", b.fsid[3] ^= 1);
        DIFFERS("metadata-uuid", b.metadata_uuid[0] ^= 1);
        DIFFERS("dev-uuid", b.dev_uuid[15] ^= 1);
        DIFFERS("devid", b.devid++);
        DIFFERS("num-devices", b.num_devices++);
        DIFFERS("generation", b.generation++);
        DIFFERS("seed", b.flags |= BSG_SUPER_FLAG_SEEDING);
        DIFFERS("fsid-changing", b.flags |= BSG_SUPER_FLAG_CHANGING_FSID);
        DIFFERS("metadata-uuid-feature", b.incompat_flags |= BSG_INCOMPAT_METADATA_UUID);
#undef DIFFERS
}

int main(void)
{
        images_dir = getenv("BSG_IMAGES");
        if (!images_dir) {
                fprintf(stderr, "BSG_IMAGES must name the decompressed tests/images directory\n");
                return 1;
        }
        static const struct image_case images[] = {
                {"crc32c", "crc32c", BSG_CSUM_VERIFIED, 0},
                {"xxhash", "xxhash64", BSG_CSUM_VERIFIED, 0},
                {"sha256", "sha256", BSG_CSUM_NOT_VERIFIED, 0},
                {"blake2", "blake2b", BSG_CSUM_NOT_VERIFIED, 0},
                {"nolabel", "crc32c", BSG_CSUM_VERIFIED, 0},
                {"longlabel", "crc32c", BSG_CSUM_VERIFIED, 0},
                {"seed", "crc32c", BSG_CSUM_VERIFIED, 1},
                {"raid-1", "crc32c", BSG_CSUM_VERIFIED, 0},
                {"raid-2", "crc32c", BSG_CSUM_VERIFIED, 0},
                {"metauuid", "crc32c", BSG_CSUM_VERIFIED, 0},
        };
        for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++)
                image_one(&images[i]);

        same_summary();
        identity_one("identity-plain", "crc32c", 0, false, false);
        identity_one("identity-metadata-uuid", "metauuid", 0, false, true);
        identity_one("identity-changing-fsid", "crc32c", 1ULL << 35, true, false);
        identity_one("identity-changing-fsid-v2", "metauuid", 1ULL << 36, true, true);
        identity_one("identity-seeding-is-no-change", "crc32c", 1ULL << 32, false, false);

        static const uint8_t zero24[24] = {0}; /* bytenr, flags and magic */
        static const uint64_t zero = 0, absurd = 1ULL << 40, bytenr = 65536 * 2;
        static const uint16_t csum7 = 7;
        static const uint8_t x = 'x', flip = 0x5a, level8 = 8;
        static const uint64_t used_5_nodes = 5 * 16384, used_6_nodes = 6 * 16384;
        static const uint32_t stripe8k = 8192, sys96 = 96, sys97 = 97, sys2049 = 2049, sys2048 = 2048;
        static char label256[256];
        memset(label256, 'x', sizeof(label256));
        const struct mut_case muts[] = {
                {"valid", "crc32c", 0, NULL, 0, NO_FIX, 0, 0, NULL},
                {"bad-magic", "crc32c", 0x40, &x, 1, FIX_CRC32C, 0, BSG_SB_NOT_BTRFS, "no btrfs magic"},
                {"bad-magic-and-bytenr", "crc32c", 0x30, zero24, 24, NO_FIX, 0, BSG_SB_NOT_BTRFS, "no btrfs magic"},
                {"bad-bytenr", "crc32c", 0x30, &bytenr, 8, FIX_CRC32C, 0, BSG_SB_INVALID, "bytenr is not 65536"},
                {"bad-csum-crc32c", "crc32c", 0x12c, &flip, 1, NO_FIX, 0, BSG_SB_INVALID, "checksum mismatch"},
                {"bad-csum-xxhash", "xxhash", 0x12c, &flip, 1, NO_FIX, 0, BSG_SB_INVALID, "checksum mismatch"},
                {"bad-csum-in-csum", "crc32c", 0, &flip, 1, NO_FIX, 0, BSG_SB_INVALID, "checksum mismatch"},
                /* sha256/blake2b are not computed: a corrupted one still parses, as "not verified" */
                {"sha256-not-verified", "sha256", 0x12c, &flip, 1, NO_FIX, 0, 0, NULL},
                {"unknown-csum-type", "crc32c", 0xc4, &csum7, 2, FIX_CRC32C, 0, BSG_SB_INVALID, "unknown checksum type"},
                {"truncated", "crc32c", 0, NULL, 0, NO_FIX, 1000, BSG_SB_TRUNCATED, NULL},
                {"truncated-empty", "crc32c", 0, NULL, 0, NO_FIX, 1, BSG_SB_TRUNCATED, NULL},
                {"num-devices-0", "crc32c", 0x88, &zero, 8, FIX_CRC32C, 0, BSG_SB_INVALID, "num_devices is 0"},
                {"num-devices-absurd", "crc32c", 0x88, &absurd, 8, FIX_CRC32C, 0, BSG_SB_INVALID, "num_devices is absurd"},
                {"devid-0", "crc32c", 0xc9, &zero, 8, FIX_CRC32C, 0, BSG_SB_INVALID, "devid is 0"},
                {"label-unterminated", "crc32c", 0x12b, label256, 256, FIX_CRC32C, 0, BSG_SB_INVALID,
                 "label not NUL-terminated"},
                {"sectorsize-0", "crc32c", 0x90, &zero, 4, FIX_CRC32C, 0, BSG_SB_INVALID, NULL},
                {"dev-item-fsid", "crc32c", 0x11b, &flip, 1, FIX_CRC32C, 0, BSG_SB_INVALID,
                 "dev_item fsid differs from the filesystem's"},
                {"total-bytes-0", "crc32c", 0x70, &zero, 8, FIX_CRC32C, 0, BSG_SB_INVALID, "total_bytes is 0"},
                {"root-level-8", "crc32c", 0xc6, &level8, 1, FIX_CRC32C, 0, BSG_SB_INVALID, "root_level is 8 or more"},
                {"chunk-root-level-8", "crc32c", 0xc7, &level8, 1, FIX_CRC32C, 0, BSG_SB_INVALID,
                 "chunk_root_level is 8 or more"},
                {"log-root-level-8", "crc32c", 0xc8, &level8, 1, FIX_CRC32C, 0, BSG_SB_INVALID,
                 "log_root_level is 8 or more"},
                /* the images have nodesize 16384 */
                {"bytes-used-5-nodes", "crc32c", 0x78, &used_5_nodes, 8, FIX_CRC32C, 0, BSG_SB_INVALID,
                 "bytes_used is less than 6 nodes"},
                {"bytes-used-6-nodes", "crc32c", 0x78, &used_6_nodes, 8, FIX_CRC32C, 0, 0, NULL},
                {"stripesize-8192", "crc32c", 0x9c, &stripe8k, 4, FIX_CRC32C, 0, BSG_SB_INVALID,
                 "stripesize is neither 4096 nor sectorsize"},
                {"sys-array-2049", "crc32c", 0xa0, &sys2049, 4, FIX_CRC32C, 0, BSG_SB_INVALID,
                 "sys_chunk_array_size too large"},
                {"sys-array-2048", "crc32c", 0xa0, &sys2048, 4, FIX_CRC32C, 0, 0, NULL},
                {"sys-array-96", "crc32c", 0xa0, &sys96, 4, FIX_CRC32C, 0, BSG_SB_INVALID,
                 "sys_chunk_array_size too small for one chunk"},
                {"sys-array-97", "crc32c", 0xa0, &sys97, 4, FIX_CRC32C, 0, 0, NULL},
        };
        for (size_t i = 0; i < sizeof(muts) / sizeof(muts[0]); i++)
                mut_one(&muts[i]);

        check_case = "vfat";
        {
                static uint8_t img[IMG_SIZE];
                struct bsg_superblock sb;
                load_image("vfat", img);
                CHECK(bsg_superblock_parse(img + BSG_SUPER_OFFSET, BSG_SUPER_SIZE, &sb, NULL) == BSG_SB_NOT_BTRFS);
        }
        known_answers();
        return check_finish("test-superblock");
}
