/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The slots of this run, worked out over the entries once their labels, PARTUUIDs and disks are in:
 * the active slot (the configuration, the command line, SteamOS's partsets, the mounted root), the
 * disk that booted (issue 10 item 2: a slot is active only there, or on the root's disk), and the
 * slot the platform gives an entry (RAUC's system.conf, SteamOS's partsets). Of the system it asks
 * only what root= or the mounted root names (stat() of that path, else a dm device's name in sysfs);
 * the rules are slot.c and partsets.c (pure), the platform's files are read by inputs.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmdline.h"
#include "gate.h"
#include "superblock.h"
#include "util.h"

/* The disk that booted (issue 10 item 2): the active slot is on it. */
static void find_booted_disk(struct ctx *c, struct bsg_partition *parts)
{
        int i = bsg_booted_partition(c->cmdline, c->loader_partuuid, parts, c->n);
        if (i >= 0 && c->e[i].disk && c->e[i].disk[0])
                c->booted_disk = strdup(c->e[i].disk);
        /* the ESP and the root may be on two disks: the root's names the booted root too */
        i = bsg_root_partition(c->cmdline, parts, c->n);
        if (c->booted_disk && i >= 0 && c->e[i].disk && c->e[i].disk[0] && !streq(c->e[i].disk, c->booted_disk))
                c->root_disk = strdup(c->e[i].disk);
}

/* Whether E is on the disk that booted, or on the root's (true while that disk is unknown). */
bool on_booted_disk(const struct ctx *c, const struct entry *e)
{
        if (!c->booted_disk)
                return true;
        return e->disk && (streq(e->disk, c->booted_disk) || streq_ptr(e->disk, c->root_disk));
}

/* Active slot from the config, the command line, or the mounted root; PARTS from the entries. */
void find_active_slot(struct ctx *c)
{
        _cleanup_free_ struct bsg_partition *parts = calloc(c->n + 1, sizeof(*parts));
        _cleanup_free_ char(*uuids)[37] = calloc(c->n + 1, sizeof(*uuids));

        if (!parts || !uuids)
                return;
        for (size_t i = 0; i < c->n; i++) {
                const struct entry *e = &c->e[i];
                parts[i].devnode = e->devnode;
                parts[i].partlabel = e->partlabel;
                parts[i].partuuid = e->partuuid;
                parts[i].untrusted = e->pd.untrusted;
                parts[i].disk = e->disk && e->disk[0] ? e->disk : NULL;
                if (e->pd.state == BSG_DEV_BTRFS) {
                        bsg_uuid_format(e->pd.fsid, uuids[i]);
                        parts[i].fsuuid = uuids[i];
                }
        }
        /* root=/dev/mapper/NAME (or the mounted root's source so named) is another path of one of
         * the devices: found by device number, never by the name alone */
        _cleanup_free_ char *root_arg = NULL;
        const char *paths[2] = {NULL, c->root_source};
        if (c->cmdline && bsg_cmdline_get(c->cmdline, strlen(c->cmdline), "root", &root_arg) >= 0)
                paths[0] = root_arg;
        for (size_t k = 0; k < ELEMENTSOF(paths); k++) {
                struct stat st;
                if (!paths[k] || paths[k][0] != '/')
                        continue;
                if (stat(paths[k], &st) == 0 && S_ISBLK(st.st_mode)) {
                        for (size_t i = 0; i < c->n; i++)
                                if (c->e[i].devnum == st.st_rdev && !streq(paths[k], c->e[i].devnode))
                                        parts[i].alias = paths[k];
                } else if (strncmp(paths[k], "/dev/mapper/", 12) == 0 && paths[k][12]) {
                        /* udev makes the /dev/mapper link at the end of the dm device's own event:
                         * that event finds its name in sysfs (dm/name) */
                        for (size_t i = 0; i < c->n; i++) {
                                char name[256];
                                if (c->e[i].devnum && bsg_dm_name_of_devnum(c->e[i].devnum, name, sizeof(name)) &&
                                    streq(name, paths[k] + 12))
                                        parts[i].alias = paths[k];
                        }
                }
        }
        c->have_active_slot = bsg_active_slot(&c->config, c->cmdline, parts, c->n, c->root_source,
                                              c->active_slot, &c->slot_source) >= 0;
        /* SteamOS's `self` partset (written from the ESP that booted) outranks root=, steamos.efi=
         * label suffixes and the mounted root; the config and explicit slot parameters outrank it */
        const char *set;
        if (bsg_partsets_active(&c->partsets, &set) >= 0 &&
            (!c->have_active_slot || c->slot_source == BSG_SLOT_SOURCE_STEAMOS ||
             c->slot_source == BSG_SLOT_SOURCE_ROOT || c->slot_source == BSG_SLOT_SOURCE_MOUNTED_ROOT) &&
            bsg_slot_normalize(set, c->active_slot) >= 0) {
                c->have_active_slot = true;
                c->slot_source = BSG_SLOT_SOURCE_PARTSETS;
        }
        find_booted_disk(c, parts);
}

/* The slot of D from the platform: RAUC (device= names its device number; slot = bootname, base =
 * slot class), else SteamOS partsets (its PARTUUID in one ordinary set; slot = set, base = name).
 * Returns 1 when one of them names it. */
int platform_slot(const struct ctx *c, struct entry *e)
{
        const char *set, *name;

        for (size_t i = 0; c->rauc_rdev && i < c->rauc.n; i++) {
                const struct bsg_rauc_slot *s = &c->rauc.v[i];
                if (e->devnum && c->rauc_rdev[i] == e->devnum && bsg_slot_normalize(s->bootname, e->slot) >= 0) {
                        snprintf(e->base, sizeof(e->base), "%s", s->class_);
                        e->slot_scheme = "rauc";
                        return 1;
                }
        }
        if (bsg_partsets_slot_of(&c->partsets, e->partuuid, &set, &name) > 0 &&
            bsg_slot_normalize(set, e->slot) >= 0) {
                snprintf(e->base, sizeof(e->base), "%s", name);
                e->slot_scheme = "partsets";
                return 1;
        }
        return 0;
}
