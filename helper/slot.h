/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure slot logic: slot names from partition labels, and which slot is active. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* If LABEL ends in one of SUFFIXES (longer suffix first, the label must be longer than it), writes the
 * slot name (the suffix without leading '-', '_' or '.', upper-cased: "-A" -> "A", "_b" -> "B") and the
 * label without the suffix, returns 1; returns 0 if no suffix matches (RET_* untouched). */
int bsg_slot_from_label(const char *label, const struct bsg_config *config, char ret_slot[BSG_SLOT_MAX],
                        char ret_base[256]);

/* Normalises a slot value from the config or the command line ("a", "_a", "-A" -> "A"). Returns 0 or
 * -EINVAL if nothing usable is left. */
int bsg_slot_normalize(const char *value, char ret_slot[BSG_SLOT_MAX]);

/* A partition the active-slot lookup can resolve root=/steamos.efi= against. */
struct bsg_partition {
        const char *devnode;
        const char *partlabel; /* NULL if none */
        const char *partuuid;
        const char *fsuuid;
};

/* Where the active slot came from. */
enum bsg_slot_source {
        BSG_SLOT_SOURCE_NONE,
        BSG_SLOT_SOURCE_CONFIG,
        BSG_SLOT_SOURCE_GATE_CMDLINE,  /* btrfs-scan-gate.slot= */
        BSG_SLOT_SOURCE_RAUC,          /* rauc.slot= */
        BSG_SLOT_SOURCE_ANDROID,       /* androidboot.slot_suffix= */
        BSG_SLOT_SOURCE_STEAMOS,       /* steamos.efi= / rd.steamos.efi= */
        BSG_SLOT_SOURCE_ROOT,          /* root= */
        BSG_SLOT_SOURCE_MOUNTED_ROOT,  /* the device mounted at / */
};
const char *bsg_slot_source_name(enum bsg_slot_source s);

/* Works out the active slot from, in order: CONFIG->active_slot, the kernel command line CMDLINE
 * (btrfs-scan-gate.slot=, rauc.slot=, androidboot.slot_suffix=, steamos.efi=/rd.steamos.efi=,
 * root=), then ROOT_DEVNODE (the source of the mount at /, may be NULL). PARTS resolve PARTLABEL=,
 * PARTUUID=, UUID= and paths. Returns 0 with the slot and its source, -ENOENT if none is known. */
int bsg_active_slot(const struct bsg_config *config, const char *cmdline, const struct bsg_partition *parts,
                    size_t n_parts, const char *root_devnode, char ret_slot[BSG_SLOT_MAX],
                    enum bsg_slot_source *ret_source);
