/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cmdline.h"
#include "slot.h"
#include "util.h"

int bsg_slot_normalize(const char *value, char ret_slot[BSG_SLOT_MAX])
{
        char s[BSG_SLOT_MAX];
        size_t n = 0;

        if (!value)
                return -EINVAL;
        while (*value == '-' || *value == '_' || *value == '.')
                value++;
        for (; *value; value++) {
                if (n + 1 >= sizeof(s))
                        return -EINVAL;
                if (!isalnum((unsigned char)*value) && *value != '_' && *value != '-' && *value != '.')
                        return -EINVAL;
                s[n++] = (char)toupper((unsigned char)*value);
        }
        if (n == 0)
                return -EINVAL;
        s[n] = '\0';
        memcpy(ret_slot, s, n + 1);
        return 0;
}

int bsg_slot_from_label(const char *label, const struct bsg_config *config, char ret_slot[BSG_SLOT_MAX],
                        char ret_base[256])
{
        size_t best = SIZE_MAX, best_len = 0, llen;

        if (!label)
                return 0;
        llen = strlen(label);
        for (size_t i = 0; i < config->n_suffixes; i++) {
                size_t sl = strlen(config->suffixes[i]);
                if (sl == 0 || sl >= llen || sl <= best_len)
                        continue;
                if (strcmp(label + llen - sl, config->suffixes[i]) == 0) {
                        best = i;
                        best_len = sl;
                }
        }
        if (best == SIZE_MAX || llen - best_len >= 256)
                return 0;
        char slot[BSG_SLOT_MAX];
        if (bsg_slot_normalize(config->suffixes[best], slot) < 0)
                return 0;
        memcpy(ret_slot, slot, sizeof(slot));
        memcpy(ret_base, label, llen - best_len);
        ret_base[llen - best_len] = '\0';
        return 1;
}

const char *bsg_slot_source_name(enum bsg_slot_source s)
{
        static const char *const names[] = {
                [BSG_SLOT_SOURCE_NONE] = "none",
                [BSG_SLOT_SOURCE_CONFIG] = "config",
                [BSG_SLOT_SOURCE_GATE_CMDLINE] = "btrfs-scan-gate.slot",
                [BSG_SLOT_SOURCE_RAUC] = "rauc.slot",
                [BSG_SLOT_SOURCE_ANDROID] = "androidboot.slot_suffix",
                [BSG_SLOT_SOURCE_STEAMOS] = "steamos.efi",
                [BSG_SLOT_SOURCE_ROOT] = "root",
                [BSG_SLOT_SOURCE_MOUNTED_ROOT] = "mounted-root",
        };
        return s < ELEMENTSOF(names) ? names[s] : "none";
}

/* Finds the one partition SPEC (PARTLABEL=, PARTUUID=, UUID=, /dev/...) names; NULL if none or several. */
static const struct bsg_partition *resolve(const char *spec, const struct bsg_partition *parts, size_t n)
{
        const struct bsg_partition *hit = NULL;
        enum { BY_LABEL, BY_PARTUUID, BY_UUID, BY_PATH } how;
        const char *v;

        if (strncmp(spec, "PARTLABEL=", 10) == 0)
                how = BY_LABEL, v = spec + 10;
        else if (strncmp(spec, "PARTUUID=", 9) == 0)
                how = BY_PARTUUID, v = spec + 9;
        else if (strncmp(spec, "UUID=", 5) == 0)
                how = BY_UUID, v = spec + 5;
        else if (spec[0] == '/')
                how = BY_PATH, v = spec;
        else
                return NULL;
        if (v[0] == '\0')
                return NULL;
        for (size_t i = 0; i < n; i++) {
                const char *f = how == BY_LABEL      ? parts[i].partlabel
                                : how == BY_PARTUUID ? parts[i].partuuid
                                : how == BY_UUID     ? parts[i].fsuuid
                                                     : parts[i].devnode;
                bool eq = f && (how == BY_LABEL || how == BY_PATH ? streq(f, v) : strcasecmp(f, v) == 0);
                if (!eq)
                        continue;
                if (hit) /* ambiguous, e.g. UUID= of a clone pair */
                        return NULL;
                hit = &parts[i];
        }
        return hit;
}

static int slot_of_spec(const char *spec, const struct bsg_config *config, const struct bsg_partition *parts,
                        size_t n, char ret_slot[BSG_SLOT_MAX])
{
        char slot[BSG_SLOT_MAX], base[256];
        const struct bsg_partition *p = resolve(spec, parts, n);
        const char *label = p ? p->partlabel : NULL;

        /* PARTLABEL= names the label even when the partition is not (yet) present */
        if (!label && strncmp(spec, "PARTLABEL=", 10) == 0)
                label = spec + 10;
        if (!label || bsg_slot_from_label(label, config, slot, base) <= 0)
                return -ENOENT;
        memcpy(ret_slot, slot, sizeof(slot));
        return 0;
}

int bsg_active_slot(const struct bsg_config *config, const char *cmdline, const struct bsg_partition *parts,
                    size_t n_parts, const char *root_devnode, char ret_slot[BSG_SLOT_MAX],
                    enum bsg_slot_source *ret_source)
{
        static const struct {
                const char *key;
                enum bsg_slot_source source;
                bool is_spec; /* names a partition rather than a slot */
        } keys[] = {
                {"btrfs-scan-gate.slot", BSG_SLOT_SOURCE_GATE_CMDLINE, false},
                {"rauc.slot", BSG_SLOT_SOURCE_RAUC, false},
                {"androidboot.slot_suffix", BSG_SLOT_SOURCE_ANDROID, false},
                {"steamos.efi", BSG_SLOT_SOURCE_STEAMOS, true},
                {"rd.steamos.efi", BSG_SLOT_SOURCE_STEAMOS, true},
                {"root", BSG_SLOT_SOURCE_ROOT, true},
        };
        char slot[BSG_SLOT_MAX];

        if (!isempty(config->active_slot) && bsg_slot_normalize(config->active_slot, slot) >= 0) {
                memcpy(ret_slot, slot, sizeof(slot));
                *ret_source = BSG_SLOT_SOURCE_CONFIG;
                return 0;
        }
        for (size_t k = 0; cmdline && k < ELEMENTSOF(keys); k++) {
                _cleanup_free_ char *v = NULL;
                int r;

                if (bsg_cmdline_get(cmdline, strlen(cmdline), keys[k].key, &v) < 0)
                        continue;
                r = keys[k].is_spec ? slot_of_spec(v, config, parts, n_parts, slot) : bsg_slot_normalize(v, slot);
                if (r < 0)
                        continue;
                memcpy(ret_slot, slot, sizeof(slot));
                *ret_source = keys[k].source;
                return 0;
        }
        if (root_devnode && slot_of_spec(root_devnode, config, parts, n_parts, slot) >= 0) {
                memcpy(ret_slot, slot, sizeof(slot));
                *ret_source = BSG_SLOT_SOURCE_MOUNTED_ROOT;
                return 0;
        }
        return -ENOENT;
}
