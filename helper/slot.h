/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure slot logic: slot names from partition labels, and which slot is active. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
        dev_t devnum;          /* 0 if unknown (RAUC's device= entries match it) */
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

/* The trust anchor (issue 18 item 1): the disks the boot names. Each source names one partition:
 * systemd-boot's LoaderDevicePartUUID, steamos.efi=/rd.steamos.efi= (the ESP), root=PARTUUID= (never
 * root=UUID= or PARTLABEL=: a copy carries those), RAUC's device= entries (by device number). A
 * PARTUUID is written by whoever wrote the partition table, a stick too. A match on hot-pluggable
 * media (bsg_partition.untrusted here means: fails the fallback's class test) is no candidate, unless
 * it is on ROOT_DISK (the disk that holds the mounted root, may be NULL; a system booted from a
 * stick, after its root is mounted): a stick copying a name changes nothing. A source whose
 * candidates lie on more than one disk (counted by disk, not by entry) is ambiguous, unless exactly
 * one of them is on ROOT_DISK. Where no source resolves and one is ambiguous, the anchor is every
 * candidate disk of the ambiguous sources plus ROOT_DISK (AMBIGUOUS set): never the fallback. */
enum bsg_anchor_result {
        BSG_ANCHOR_ABSENT,    /* the source does not name anything (no variable, no such parameter) */
        BSG_ANCHOR_RESOLVED,  /* one partition on one disk */
        BSG_ANCHOR_NOT_FOUND, /* names a partition no device carries (yet) */
        BSG_ANCHOR_AMBIGUOUS, /* partitions on several disks carry the name */
        BSG_ANCHOR_HOTPLUG,   /* only hot-pluggable media carries it */
        BSG_ANCHOR_NO_DISK,   /* the partition's disk is unknown */
};
enum bsg_anchor_source {
        BSG_ANCHOR_LOADER,      /* LoaderDevicePartUUID */
        BSG_ANCHOR_STEAMOS_EFI, /* steamos.efi= */
        BSG_ANCHOR_RD_STEAMOS_EFI, /* rd.steamos.efi= */
        BSG_ANCHOR_ROOT,        /* root=PARTUUID= */
        BSG_ANCHOR_RAUC,        /* RAUC system.conf device= (every slot's) */
        _BSG_ANCHOR_SOURCE_MAX,
};
struct bsg_anchor {
        enum bsg_anchor_result result[_BSG_ANCHOR_SOURCE_MAX];
        /* RESOLVED: the partition's index (BSG_ANCHOR_RAUC: the first one's; every RAUC device's disk
         * is in DISKS) */
        size_t part[_BSG_ANCHOR_SOURCE_MAX];
        const char *disks[2 * _BSG_ANCHOR_SOURCE_MAX]; /* the anchor disks (PARTS' disk strings), distinct */
        size_t n_disks;
        /* no source resolved and one was ambiguous: DISKS are the fixed disks that carry an ambiguous
         * name (and ROOT_DISK), never the fallback */
        bool ambiguous;
};
const char *bsg_anchor_source_name(enum bsg_anchor_source s);
const char *bsg_anchor_result_name(enum bsg_anchor_result r);

/* Resolves every source against PARTS. RAUC_DEVNUMS: the device numbers of RAUC's device= entries
 * (0: not a block device), N_RAUC of them. Pure; never fails. */
void bsg_boot_anchor(const char *cmdline, const char *loader_partuuid, const dev_t *rauc_devnums, size_t n_rauc,
                     const struct bsg_partition *parts, size_t n_parts, const char *root_disk,
                     struct bsg_anchor *ret);

/* The GUID of an EFI variable holding a NUL-terminated UTF-16LE string (4 attribute bytes first, as
 * efivarfs shows it; nothing after the NUL), as lower-case ASCII into RET (37 bytes). Returns 0,
 * -EPERM (EFI_VARIABLE_NON_VOLATILE set: systemd-boot's is volatile, so the OS wrote it) or -EINVAL. */
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
