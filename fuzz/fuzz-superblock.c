/* libFuzzer target: bsg_superblock_parse() and the UUID helpers (helper/superblock.c).
 * Input: the bytes read at 64 KiB (any length; 4096 is a whole superblock). Each input is parsed
 * twice: as given, and with its crc32c/xxhash64 checksum recomputed so that the fuzzer also
 * reaches the field checks behind the checksum. Properties checked on every accepted superblock:
 * the label is NUL-terminated, the checked fields are in range, and the fsid survives
 * bsg_uuid_format() -> bsg_uuid_parse(). Every rejection must name the failed check. */
#include <endian.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "superblock.h"

#define CHECK(x)                                                                                        \
        do {                                                                                            \
                if (!(x))                                                                               \
                        __builtin_trap();                                                               \
        } while (0)

static void one(const uint8_t *data, size_t size)
{
        struct bsg_superblock sb;
        const char *problem = NULL;
        /* a heap copy of exactly SIZE bytes so ASan sees any read past the end */
        uint8_t *copy = malloc(size ? size : 1);
        memcpy(copy, data, size);
        int r = bsg_superblock_parse(copy, size, &sb, &problem);
        if (r < 0) {
                CHECK(r == BSG_SB_NOT_BTRFS || r == BSG_SB_INVALID || r == BSG_SB_TRUNCATED);
                CHECK(problem && *problem);
                CHECK(size >= BSG_SUPER_SIZE || r == BSG_SB_TRUNCATED);
        } else {
                CHECK(r == 0);
                CHECK(size >= BSG_SUPER_SIZE);
                CHECK(memchr(sb.label, '\0', sizeof(sb.label)));
                CHECK(sb.num_devices >= 1 && sb.num_devices <= BSG_MAX_DEVICES);
                CHECK(sb.devid != 0);
                CHECK(sb.sectorsize >= 4096 && (sb.sectorsize & (sb.sectorsize - 1)) == 0);
                CHECK(sb.nodesize >= sb.sectorsize && (sb.nodesize & (sb.nodesize - 1)) == 0);
                CHECK(bsg_csum_type_name(sb.csum_type));
                CHECK(bsg_csum_state_name(sb.csum_state));
                (void)bsg_superblock_is_seed(&sb);
                char s[37];
                uint8_t back[BSG_UUID_SIZE];
                bsg_uuid_format(sb.fsid, s);
                CHECK(strlen(s) == 36);
                CHECK(bsg_uuid_parse(s, back) == 0 && memcmp(back, sb.fsid, BSG_UUID_SIZE) == 0);
        }
        free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        one(data, size);

        /* again with a correct checksum of the type the input names */
        if (size >= BSG_SUPER_SIZE) {
                uint8_t *fixed = malloc(size);
                memcpy(fixed, data, size);
                uint16_t type = (uint16_t)(fixed[0xc4] | fixed[0xc5] << 8);
                if (type == BSG_CSUM_CRC32C) {
                        uint32_t c = htole32(bsg_crc32c(0, fixed + 32, BSG_SUPER_SIZE - 32));
                        memcpy(fixed, &c, sizeof(c));
                } else if (type == BSG_CSUM_XXHASH64) {
                        uint64_t h = htole64(bsg_xxhash64(fixed + 32, BSG_SUPER_SIZE - 32, 0));
                        memcpy(fixed, &h, sizeof(h));
                }
                one(fixed, size);
                free(fixed);
        }

        /* the UUID parser on the raw bytes as a string */
        if (size <= 64) {
                char s[65];
                uint8_t u[BSG_UUID_SIZE];
                memcpy(s, data, size);
                s[size] = '\0';
                if (bsg_uuid_parse(s, u) == 0) {
                        char back[37];
                        bsg_uuid_format(u, back);
                        CHECK(strcasecmp(back, s) == 0);
                }
        }
        return 0;
}
