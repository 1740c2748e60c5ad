/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A 64-bit hash of byte strings, 8 bytes a step: for noticing that the inputs of a decision changed
 * (seal.c), not for anything an attacker chooses freely. */
#pragma once

#include <stdint.h>
#include <string.h>

static inline uint64_t bsg_hash_mix(uint64_t h)
{
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ULL;
        h ^= h >> 33;
        return h;
}

/* Folds LEN bytes at P (and LEN itself, so "ab"+"c" differs from "a"+"bc") into *H. */
static inline void bsg_hash_update(uint64_t *h, const void *p, size_t len)
{
        const unsigned char *s = p;
        uint64_t x = *h ^ bsg_hash_mix(len + 0x9e3779b97f4a7c15ULL);

        for (; len >= 8; s += 8, len -= 8) {
                uint64_t w;
                memcpy(&w, s, 8);
                x = (x ^ w) * 0x9e3779b97f4a7c15ULL;
                x ^= x >> 29;
        }
        uint64_t w = 0;
        memcpy(&w, s, len);
        *h = bsg_hash_mix(x ^ w);
}

static inline void bsg_hash_str(uint64_t *h, const char *s)
{
        bsg_hash_update(h, s ? s : "\1(null)", s ? strlen(s) : 7);
}
