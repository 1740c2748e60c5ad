/* libFuzzer target: bsg_partsets_add(), _slot_of(), _active() (helper/partsets.c).
 * Input: split at the first two NUL bytes into a set name, a partset file and a PARTUUID to look up
 * (missing parts are empty). The file is added twice, under the name and as "self". Properties: no
 * crash, entries NUL-terminated with a 36-character lower-case PARTUUID, a slot found is an ordinary
 * set that lists the PARTUUID, an active set is ordinary. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "partsets.h"

#define CHECK(x)                                                                                        \
        do {                                                                                            \
                if (!(x))                                                                               \
                        __builtin_trap();                                                               \
        } while (0)

static char *part(const uint8_t **p, const uint8_t *end)
{
        const uint8_t *z = memchr(*p, 0, (size_t)(end - *p));
        size_t l = z ? (size_t)(z - *p) : (size_t)(end - *p);
        char *s = malloc(l + 1);
        memcpy(s, *p, l);
        s[l] = '\0';
        *p += z ? l + 1 : l;
        return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const uint8_t *p = data, *end = data + size;
        char *set = part(&p, end), *file = part(&p, end), *uuid = part(&p, end);
        struct bsg_partsets ps = {0};
        const char *s, *n;

        (void)bsg_partsets_add(&ps, set, file, strlen(file));
        (void)bsg_partsets_add(&ps, "self", file, strlen(file));
        for (size_t i = 0; i < ps.n; i++) {
                CHECK(memchr(ps.v[i].set, '\0', sizeof(ps.v[i].set)) && memchr(ps.v[i].name, '\0', sizeof(ps.v[i].name)));
                CHECK(strlen(ps.v[i].partuuid) == 36);
                for (int k = 0; k < 36; k++)
                        CHECK(!isupper((unsigned char)ps.v[i].partuuid[k]));
        }
        if (bsg_partsets_slot_of(&ps, uuid, &s, &n) > 0) {
                CHECK(!bsg_partset_is_special(s));
                CHECK(strcasecmp(uuid, "") != 0);
        }
        if (bsg_partsets_active(&ps, &s) == 0)
                CHECK(!bsg_partset_is_special(s));
        bsg_partsets_free(&ps);
        free(set);
        free(file);
        free(uuid);
        return 0;
}
