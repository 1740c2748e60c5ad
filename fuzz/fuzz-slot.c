/* libFuzzer target: the slot logic and the trust anchor (helper/slot.c) with the config and
 * command-line parsers it sits on. Input: NUL-separated fields  CONFIG \0 CMDLINE \0 ROOT_DEVNODE \0 LABEL... (missing
 * fields are empty). The labels become partitions /dev/fuzzN (partlabel LABEL, partuuid and fsuuid
 * derived from N). Properties: every slot written is a NUL-terminated name of [A-Z0-9_.-] shorter
 * than BSG_SLOT_MAX, a label's base plus its suffix is the label, a successful lookup names a
 * source, and bsg_slot_normalize() is idempotent. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
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
                        .disk = i % 4 == 3 ? NULL : i % 2 ? "disk1" : "disk0",
                        .untrusted = i % 3 == 2,
                        .devnum = (dev_t)(i + 1),
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

        /* the trust anchor (issue 18 item 1): ROOT_DEVNODE stands in for LoaderDevicePartUUID; every
         * anchor disk is a disk of a partition, and every resolved source names a partition on one */
        struct bsg_anchor anchor;
        const dev_t rauc[2] = {1, 3};
        bsg_boot_anchor(field[1], field[2], rauc, 2, parts, np, np > 1 ? "disk1" : NULL, &anchor);
        CHECK(anchor.n_disks <= sizeof(anchor.disks) / sizeof(anchor.disks[0]));
        for (size_t i = 0; i < anchor.n_disks; i++) {
                bool found = false;
                for (size_t k = 0; k < np && !found; k++)
                        found = parts[k].disk && strcmp(parts[k].disk, anchor.disks[i]) == 0;
                CHECK(found);
        }
        for (size_t s = 0; s < _BSG_ANCHOR_SOURCE_MAX; s++)
                if (anchor.result[s] == BSG_ANCHOR_RESOLVED)
                        CHECK(anchor.part[s] < np && parts[anchor.part[s]].disk);
        CHECK(strcmp(bsg_anchor_source_name(BSG_ANCHOR_ROOT), "root") == 0);

        /* normalisation of each raw field */
        for (size_t i = 0; i < nf; i++) {
                char s[BSG_SLOT_MAX];
                if (bsg_slot_normalize(field[i], s) == 0)
                        check_slot(s);
        }
        free(buf);
        return 0;
}
