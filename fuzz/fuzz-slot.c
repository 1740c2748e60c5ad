/* libFuzzer target: the slot logic (helper/slot.c) with the config and command-line parsers it
 * sits on. Input: NUL-separated fields  CONFIG \0 CMDLINE \0 ROOT_DEVNODE \0 LABEL... (missing
 * fields are empty). The labels become partitions /dev/fuzzN (partlabel LABEL, partuuid and fsuuid
 * derived from N). Properties: every slot written is a NUL-terminated name of [A-Z0-9_.-] shorter
 * than BSG_SLOT_MAX, a label's base plus its suffix is the label, a successful lookup names a
 * source, and bsg_slot_normalize() is idempotent. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "slot.h"

#define CHECK(x)                                                                                        \
        do {                                                                                            \
                if (!(x))                                                                               \
                        __builtin_trap();                                                               \
        } while (0)
#define MAX_PARTS 8

static void check_slot(const char *s)
{
        size_t n = strnlen(s, BSG_SLOT_MAX);
        CHECK(n > 0 && n < BSG_SLOT_MAX);
        for (size_t i = 0; i < n; i++)
                CHECK(isupper((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_' ||
                      s[i] == '-' || s[i] == '.');
        char again[BSG_SLOT_MAX];
        CHECK(bsg_slot_normalize(s, again) == 0);
        CHECK(s[0] == '_' || s[0] == '-' || s[0] == '.' || strcmp(again, s) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *buf = malloc(size + 1);
        memcpy(buf, data, size);
        buf[size] = '\0';
        const char *field[3 + MAX_PARTS] = {0};
        size_t nf = 0;
        for (char *p = buf; nf < 3 + MAX_PARTS;) {
                field[nf++] = p;
                char *z = memchr(p, '\0', buf + size - p);
                if (!z || z == buf + size)
                        break;
                p = z + 1;
        }
        for (size_t i = nf; i < 3; i++)
                field[i] = "";

        struct bsg_config config;
        bsg_config_init(&config);
        (void)bsg_config_parse(field[0], strlen(field[0]), "fuzz.conf", &config, NULL, NULL);

        struct bsg_partition parts[MAX_PARTS];
        char names[MAX_PARTS][32], uuids[MAX_PARTS][40];
        size_t np = nf > 3 ? nf - 3 : 0;
        for (size_t i = 0; i < np; i++) {
                snprintf(names[i], sizeof(names[i]), "/dev/fuzz%zu", i);
                snprintf(uuids[i], sizeof(uuids[i]), "0000000%zu-0000-4000-8000-000000000000", i % 3);
                parts[i] = (struct bsg_partition){
                        .devnode = names[i],
                        .partlabel = field[3 + i][0] ? field[3 + i] : NULL,
                        .partuuid = uuids[i],
                        .fsuuid = uuids[i],
                };
                char slot[BSG_SLOT_MAX], base[256];
                memset(slot, 0x5a, sizeof(slot));
                int r = bsg_slot_from_label(field[3 + i], &config, slot, base);
                CHECK(r == 0 || r == 1);
                if (r == 1) {
                        check_slot(slot);
                        size_t bl = strnlen(base, sizeof(base));
                        CHECK(bl < sizeof(base));
                        CHECK(strncmp(base, field[3 + i], bl) == 0);
                        CHECK(strlen(field[3 + i]) > bl);
                }
        }

        char slot[BSG_SLOT_MAX];
        enum bsg_slot_source source = BSG_SLOT_SOURCE_NONE;
        int r = bsg_active_slot(&config, field[1], parts, np, field[2][0] ? field[2] : NULL, slot, &source);
        if (r == 0) {
                check_slot(slot);
                CHECK(source != BSG_SLOT_SOURCE_NONE);
                CHECK(strcmp(bsg_slot_source_name(source), "none") != 0);
        } else
                CHECK(r == -ENOENT);

        /* normalisation of each raw field */
        for (size_t i = 0; i < nf; i++) {
                char s[BSG_SLOT_MAX];
                if (bsg_slot_normalize(field[i], s) == 0)
                        check_slot(s);
        }
        free(buf);
        return 0;
}
