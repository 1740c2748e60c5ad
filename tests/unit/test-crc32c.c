/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The checksums: known answers, and the CPU-instruction CRC-32C against the table one. */
#include <stdlib.h>

#include "check.h"
#include "crc32c.h"

int main(void)
{
        static uint8_t buf[4096 + 7];
        uint32_t seed = 20261203;

        check_case = "known answers";
        CHECK(bsg_crc32c(0, "123456789", 9) == 0xe3069283u);
        CHECK(bsg_crc32c_generic(0, "123456789", 9) == 0xe3069283u);
        CHECK(bsg_crc32c(0, "", 0) == 0);
        CHECK(bsg_xxhash64("", 0, 0) == 0xef46db3751d8e999ull);

        check_case = "instruction vs table";
        for (size_t i = 0; i < sizeof(buf); i++) {
                seed = seed * 1103515245u + 12345u;
                buf[i] = (uint8_t)(seed >> 16);
        }
        /* every length and alignment a superblock check can meet, and odd ones */
        for (size_t off = 0; off < 8; off++)
                for (size_t len = 0; len + off <= sizeof(buf); len += len < 64 ? 1 : 509)
                        CHECK(bsg_crc32c(~0u, buf + off, len) == bsg_crc32c_generic(~0u, buf + off, len));
        CHECK(bsg_crc32c(0, buf + 32, 4064) == bsg_crc32c_generic(0, buf + 32, 4064));
        return check_finish("crc32c");
}
