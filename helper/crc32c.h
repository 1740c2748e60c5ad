/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure checksum functions of the btrfs checksum types (no I/O). */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* CRC-32C (Castagnoli, reflected 0x82F63B78) as btrfs uses it: seed ~0, result inverted.
 * bsg_crc32c(0, "123456789", 9) == 0xe3069283. */
uint32_t bsg_crc32c(uint32_t crc, const void *data, size_t len);
/* The same through a lookup table, on any CPU; bsg_crc32c() uses the CPU's instruction when there is
 * one. Exposed so the tests can hold the two against each other. */
uint32_t bsg_crc32c_generic(uint32_t crc, const void *data, size_t len);

/* XXH64 with the given seed (btrfs uses seed 0). bsg_xxhash64("", 0, 0) == 0xef46db3751d8e999. */
uint64_t bsg_xxhash64(const void *data, size_t len, uint64_t seed);
