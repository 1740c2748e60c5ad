/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure slot logic: slot names from partition labels, and which slot is active. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* If LABEL ends in one of SUFFIXES (longer suffix first, the label must be longer than it), writes the
 * slot name (the suffix without leading '-', '_' or '.', upper-cased: "-A" -> "A", "_b" -> "B") and the
 * label without the suffix, returns 1; returns 0 if no suffix matches (RET_* untouched). */
int bsg_slot_from_label(const char *label, const struct bsg_config *config, char ret_slot[BSG_SLOT_MAX],
                        char ret_base[256]);

/* Whether BASE (a partition label without its slot suffix, the attacker's to choose on removable media)
 * may name a link under /dev/disk/by-slot/: not empty, not "." or "..". The caller still encodes it. */
bool bsg_slot_base_ok(const char *base);

/* Normalises a slot value from the config or the command line ("a", "_a", "-A" -> "A"). Returns 0 or
 * -EINVAL if nothing usable is left. */
int bsg_slot_normalize(const char *value, char ret_slot[BSG_SLOT_MAX]);

/* A partition the active-slot lookup can resolve root=/steamos.efi= against. */
struct bsg_partition {
        const char *devnode;
        const char *partlabel; /* NULL if none */
        const char *partuuid;
        const char *fsuuid;
        const char *disk;      /* the whole disk it is on (any fixed string per disk); NULL if unknown */
        bool untrusted;        /* not trusted storage (is_trusted_storage()): never the booted disk's witness, never
                                * names the active slot */
        const char *alias;     /* another path of the same block device (the /dev/mapper/NAME that root=
                                * or the mounted root names, found by device number); NULL if none */
};

/* The partition that names the disk that booted: systemd-boot's LoaderDevicePartUUID (LOADER_PARTUUID,
 * may be NULL), else steamos.efi=/rd.steamos.efi= (the ESP), else root=PARTUUID= of CMDLINE. Only a
 * spec that names exactly one fixed (not hot-pluggable) partition counts. Returns its index or
 * -ENOENT. */
int bsg_booted_partition(const char *cmdline, const char *loader_partuuid, const struct bsg_partition *parts,
                         size_t n_parts);
/* The partition root=PARTUUID= of CMDLINE names, if it is exactly one fixed partition: its disk holds
 * the booted root even when the ESP that booted is on another disk. Returns its index or -ENOENT. */
int bsg_root_partition(const char *cmdline, const struct bsg_partition *parts, size_t n_parts);

/* The GUID of an EFI variable holding a UTF-16LE string (4 attribute bytes first, as efivarfs shows
 * it), as lower-case ASCII into RET (37 bytes). Returns 0 or -EINVAL. */
int bsg_efivar_guid(const uint8_t *data, size_t len, char ret[37]);

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
        BSG_SLOT_SOURCE_BOOTCHOOSER,   /* bootchooser.active= (barebox, RAUC bootnames) */
        BSG_SLOT_SOURCE_PARTSETS,      /* SteamOS partsets: the set `self` names */
};
const char *bsg_slot_source_name(enum bsg_slot_source s);

/* Works out the active slot from, in order: CONFIG->active_slot, the kernel command line CMDLINE
 * (btrfs-scan-gate.slot=, rauc.slot=, bootchooser.active=, androidboot.slot_suffix=, steamos.efi=/rd.steamos.efi=,
 * root=), then ROOT_DEVNODE (the source of the mount at /, may be NULL). PARTS resolve PARTLABEL=,
 * PARTUUID=, UUID= and paths. Returns 0 with the slot and its source, -ENOENT if none is known. */
int bsg_active_slot(const struct bsg_config *config, const char *cmdline, const struct bsg_partition *parts,
                    size_t n_parts, const char *root_devnode, char ret_slot[BSG_SLOT_MAX],
                    enum bsg_slot_source *ret_source);
