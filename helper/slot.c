/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cmdline.h"
#include "config.h"
#include "slot.h"
#include "util.h"

bool bsg_slot_base_ok(const char *base)
{
        return !isempty(base) && !streq(base, ".") && !streq(base, "..");
}

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
                [BSG_SLOT_SOURCE_BOOTCHOOSER] = "bootchooser.active",
                [BSG_SLOT_SOURCE_PARTSETS] = "partsets",
        };
        return s < ELEMENTSOF(names) ? names[s] : "none";
}

/* Finds the one partition SPEC (PARTLABEL=, PARTUUID=, UUID=, /dev/...) names; NULL if none or several.
 * With TRUSTED_ONLY, untrusted partitions are not looked at: their names are the attacker's to choose. */
static const struct bsg_partition *resolve_in(const char *spec, const struct bsg_partition *parts, size_t n,
                                              bool trusted_only)
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
                if (trusted_only && parts[i].untrusted)
                        continue;
                const char *f = how == BY_LABEL      ? parts[i].partlabel
                                : how == BY_PARTUUID ? parts[i].partuuid
                                : how == BY_UUID     ? parts[i].fsuuid
                                                     : parts[i].devnode;
                bool eq = f && (how == BY_LABEL || how == BY_PATH ? streq(f, v) : strcasecmp(f, v) == 0);
                /* root=/dev/mapper/rootA names the dm device /dev/dm-0 */
                eq = eq || (how == BY_PATH && parts[i].alias && streq(parts[i].alias, v));
                if (!eq)
                        continue;
                if (hit) /* ambiguous, e.g. UUID= of a clone pair */
                        return NULL;
                hit = &parts[i];
        }
        return hit;
}

static const struct bsg_partition *resolve(const char *spec, const struct bsg_partition *parts, size_t n)
{
        return resolve_in(spec, parts, n, false);
}

#define EFI_VARIABLE_NON_VOLATILE 0x1

int bsg_efivar_guid(const uint8_t *data, size_t len, char ret[37])
{
        char s[37];
        size_t n = 0;

        if (len < 4)
                return -EINVAL;
        /* systemd-boot sets it volatile (BOOTSERVICE_ACCESS|RUNTIME_ACCESS); after ExitBootServices
         * the OS cannot create a volatile variable, so a non-volatile one was written by the OS */
        if (data[0] & EFI_VARIABLE_NON_VOLATILE)
                return -EPERM;
        for (size_t i = 4; i + 1 < len && n < 36; i += 2) {
                if (data[i + 1] != 0 || data[i] == 0)
                        break;
                s[n++] = (char)tolower(data[i]);
        }
        s[n] = '\0';
        /* 36 characters, a UTF-16 NUL, nothing after it */
        if (n != 36 || len != 4 + 2 * 37 || data[4 + 72] != 0 || data[4 + 73] != 0)
                return -EINVAL;
        for (size_t i = 0; i < 36; i++)
                if ((i == 8 || i == 13 || i == 18 || i == 23) ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
                        return -EINVAL;
        memcpy(ret, s, sizeof(s));
        return 0;
}

/* RESOLVE() over the fixed partitions only */
static int resolve_fixed(const char *spec, const struct bsg_partition *parts, size_t n)
{
        const struct bsg_partition *p = resolve(spec, parts, n);

        if (!p || p->untrusted || !p->disk)
                return -ENOENT;
        /* a hot-pluggable partition with the same name makes the spec ambiguous: no witness */
        for (size_t i = 0; i < n; i++)
                if (&parts[i] != p && parts[i].untrusted && resolve(spec, &parts[i], 1))
                        return -ENOENT;
        return (int)(p - parts);
}

/* The fixed partition the command line's KEY= names; root= only by PARTUUID (a label or an fs UUID
 * is what a copy carries too). */
static int resolve_key(const char *cmdline, const char *key, const struct bsg_partition *parts, size_t n_parts)
{
        _cleanup_free_ char *v = NULL;

        if (!cmdline || bsg_cmdline_get(cmdline, strlen(cmdline), key, &v) < 0)
                return -ENOENT;
        if (streq(key, "root") && strncmp(v, "PARTUUID=", 9) != 0)
                return -ENOENT;
        return resolve_fixed(v, parts, n_parts);
}

int bsg_booted_partition(const char *cmdline, const char *loader_partuuid, const struct bsg_partition *parts,
                         size_t n_parts)
{
        static const char *const keys[] = {"rd.steamos.efi", "steamos.efi", "root"};
        char spec[64];
        int r;

        if (!isempty(loader_partuuid) && strlen(loader_partuuid) < 40) {
                snprintf(spec, sizeof(spec), "PARTUUID=%s", loader_partuuid);
                if ((r = resolve_fixed(spec, parts, n_parts)) >= 0)
                        return r;
        }
        for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                if ((r = resolve_key(cmdline, keys[k], parts, n_parts)) >= 0)
                        return r;
        return -ENOENT;
}

int bsg_root_partition(const char *cmdline, const struct bsg_partition *parts, size_t n_parts)
{
        return resolve_key(cmdline, "root", parts, n_parts);
}

static int slot_of_spec(const char *spec, const struct bsg_config *config, const struct bsg_partition *parts,
                        size_t n, char ret_slot[BSG_SLOT_MAX])
{
        char slot[BSG_SLOT_MAX], base[256];
        /* only trusted storage names the active slot: a stick carrying the root's PARTUUID (or path,
         * or fs UUID) and the label rootfs-B must not make B active, even while the internal root's
         * PARTUUID is not known yet (first coldplug, before udev's database has it) */
        const struct bsg_partition *p = resolve_in(spec, parts, n, true);
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
                {"bootchooser.active", BSG_SLOT_SOURCE_BOOTCHOOSER, false},
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

const char *bsg_anchor_source_name(enum bsg_anchor_source s)
{
        static const char *const names[] = {
                [BSG_ANCHOR_LOADER] = "LoaderDevicePartUUID",
                [BSG_ANCHOR_STEAMOS_EFI] = "steamos.efi",
                [BSG_ANCHOR_RD_STEAMOS_EFI] = "rd.steamos.efi",
                [BSG_ANCHOR_ROOT] = "root",
                [BSG_ANCHOR_RAUC] = "rauc-device",
        };
        return s < ELEMENTSOF(names) ? names[s] : "?";
}

const char *bsg_anchor_result_name(enum bsg_anchor_result r)
{
        static const char *const names[] = {
                [BSG_ANCHOR_ABSENT] = "absent",
                [BSG_ANCHOR_RESOLVED] = "resolved",
                [BSG_ANCHOR_NOT_FOUND] = "not-found",
                [BSG_ANCHOR_AMBIGUOUS] = "ambiguous",
                [BSG_ANCHOR_HOTPLUG] = "hot-pluggable",
                [BSG_ANCHOR_NO_DISK] = "no-disk",
        };
        return r < ELEMENTSOF(names) ? names[r] : "?";
}

static bool on_disk(const struct bsg_partition *p, const char *disk)
{
        return disk && p->disk && streq(p->disk, disk);
}

static void anchor_add_disk(struct bsg_anchor *a, const char *disk)
{
        for (size_t i = 0; i < a->n_disks; i++)
                if (streq(a->disks[i], disk))
                        return;
        if (a->n_disks < ELEMENTSOF(a->disks))
                a->disks[a->n_disks++] = disk;
}

/* One source's spec (PARTUUID=... or a path) against PARTS: see bsg_boot_anchor(). AMBIGUOUS: the
 * candidates' disks are added to it. */
static enum bsg_anchor_result anchor_spec(const char *spec, const struct bsg_partition *parts, size_t n,
                                          const char *root_disk, size_t *ret_index, struct bsg_anchor *ambiguous)
{
        size_t hits = 0, hit = SIZE_MAX, on_root = 0, root_hit = SIZE_MAX, n_disks = 0;
        bool hotplug = false, no_disk = false;
        const char *v, *first_disk = NULL;
        bool by_path;

        if (strncmp(spec, "PARTUUID=", 9) == 0)
                v = spec + 9, by_path = false;
        else if (spec[0] == '/' && !bsg_is_content_link(spec))
                v = spec, by_path = true; /* a kernel name; never a link the media names */
        else
                return BSG_ANCHOR_ABSENT; /* PARTLABEL=, UUID=, by-label/...: a copy carries them */
        if (isempty(v))
                return BSG_ANCHOR_ABSENT;
        for (size_t i = 0; i < n; i++) {
                const char *f = by_path ? parts[i].devnode : parts[i].partuuid;
                if (!f || (by_path ? !streq(f, v) : strcasecmp(f, v) != 0))
                        continue;
                /* hot-pluggable media is no candidate (unless the root is mounted from it) */
                if (parts[i].untrusted && !on_disk(&parts[i], root_disk)) {
                        hotplug = true;
                        continue;
                }
                if (!parts[i].disk) {
                        no_disk = true;
                        continue;
                }
                hits++;
                hit = i;
                /* distinct disks, not entries */
                if (!first_disk)
                        first_disk = parts[i].disk, n_disks = 1;
                else if (!streq(first_disk, parts[i].disk))
                        n_disks = 2;
                if (on_disk(&parts[i], root_disk)) {
                        on_root++;
                        root_hit = i;
                }
        }
        if (hits == 0)
                return no_disk ? BSG_ANCHOR_NO_DISK : hotplug ? BSG_ANCHOR_HOTPLUG : BSG_ANCHOR_NOT_FOUND;
        if (n_disks > 1) {
                /* a second fixed disk carries the same name: only the disk the kernel mounted the root
                 * from can tell them apart */
                if (on_root == 0) {
                        for (size_t i = 0; i < n; i++) {
                                const char *f = by_path ? parts[i].devnode : parts[i].partuuid;
                                if (f && parts[i].disk && !parts[i].untrusted &&
                                    (by_path ? streq(f, v) : strcasecmp(f, v) == 0))
                                        anchor_add_disk(ambiguous, parts[i].disk);
                        }
                        return BSG_ANCHOR_AMBIGUOUS;
                }
                hit = root_hit;
        }
        *ret_index = hit;
        return BSG_ANCHOR_RESOLVED;
}

void bsg_boot_anchor(const char *cmdline, const char *loader_partuuid, const dev_t *rauc_devnums, size_t n_rauc,
                     const struct bsg_partition *parts, size_t n_parts, const char *root_disk,
                     struct bsg_anchor *ret)
{
        static const struct {
                enum bsg_anchor_source source;
                const char *key;
        } keys[] = {
                {BSG_ANCHOR_STEAMOS_EFI, "steamos.efi"},
                {BSG_ANCHOR_RD_STEAMOS_EFI, "rd.steamos.efi"},
                {BSG_ANCHOR_ROOT, "root"},
        };
        struct bsg_anchor a = {0}, amb = {0};
        char spec[64];
        size_t idx;

        if (!isempty(loader_partuuid) && strlen(loader_partuuid) < 40) {
                snprintf(spec, sizeof(spec), "PARTUUID=%s", loader_partuuid);
                a.result[BSG_ANCHOR_LOADER] = anchor_spec(spec, parts, n_parts, root_disk, &idx, &amb);
                if (a.result[BSG_ANCHOR_LOADER] == BSG_ANCHOR_RESOLVED)
                        a.part[BSG_ANCHOR_LOADER] = idx;
        }
        for (size_t k = 0; cmdline && k < ELEMENTSOF(keys); k++) {
                _cleanup_free_ char *v = NULL;
                enum bsg_anchor_source s = keys[k].source;
                if (bsg_cmdline_get(cmdline, strlen(cmdline), keys[k].key, &v) < 0)
                        continue;
                if (s == BSG_ANCHOR_ROOT && strncmp(v, "PARTUUID=", 9) != 0)
                        continue; /* root=UUID=, PARTLABEL=, /dev/...: what a copy carries, or a kernel name */
                a.result[s] = anchor_spec(v, parts, n_parts, root_disk, &idx, &amb);
                if (a.result[s] == BSG_ANCHOR_RESOLVED)
                        a.part[s] = idx;
        }
        for (size_t r = 0; r < n_rauc; r++) {
                enum bsg_anchor_result res = BSG_ANCHOR_NOT_FOUND;
                for (size_t i = 0; rauc_devnums[r] && i < n_parts; i++) {
                        if (parts[i].devnum != rauc_devnums[r])
                                continue;
                        res = !parts[i].disk ? BSG_ANCHOR_NO_DISK
                              : parts[i].untrusted && !on_disk(&parts[i], root_disk) ? BSG_ANCHOR_HOTPLUG
                                                                                     : BSG_ANCHOR_RESOLVED;
                        if (res == BSG_ANCHOR_RESOLVED) {
                                if (a.result[BSG_ANCHOR_RAUC] != BSG_ANCHOR_RESOLVED)
                                        a.part[BSG_ANCHOR_RAUC] = i;
                                anchor_add_disk(&a, parts[i].disk);
                        }
                        break;
                }
                /* one slot found is enough to call RAUC resolved; the worst of the rest otherwise */
                if (a.result[BSG_ANCHOR_RAUC] != BSG_ANCHOR_RESOLVED &&
                    (res == BSG_ANCHOR_RESOLVED || res > a.result[BSG_ANCHOR_RAUC]))
                        a.result[BSG_ANCHOR_RAUC] = res;
        }
        for (size_t s = 0; s < BSG_ANCHOR_RAUC; s++)
                if (a.result[s] == BSG_ANCHOR_RESOLVED)
                        anchor_add_disk(&a, parts[a.part[s]].disk);
        /* nothing resolved, something ambiguous: the fixed disks that carry the name and the disk
         * the root is mounted from, never the whole fallback */
        if (a.n_disks == 0 && amb.n_disks > 0) {
                a.ambiguous = true;
                for (size_t i = 0; i < amb.n_disks; i++)
                        anchor_add_disk(&a, amb.disks[i]);
                if (root_disk)
                        anchor_add_disk(&a, root_disk);
        }
        *ret = a;
}
