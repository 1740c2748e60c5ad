/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure reader of SteamOS partsets: files named after a partition set (A, B, dev, and the special
 * self, other, all, shared) on the booted ESP, each line "NAME PARTUUID". A partition listed in
 * exactly one ordinary set is a slot of that set; `self` says which set booted. */
#pragma once

#include <stddef.h>

#define BSG_PARTSET_NAME_MAX 32
#define BSG_PARTSET_ENTRY_MAX 64

struct bsg_partset_entry {
        char set[BSG_PARTSET_NAME_MAX];     /* the file's name */
        char name[BSG_PARTSET_ENTRY_MAX];   /* "rootfs", "var", "efi", ... */
        char partuuid[40];                  /* lower case */
};

struct bsg_partsets {
        struct bsg_partset_entry *v;
        size_t n;
};

/* Adds the lines of the partset file SET (TEXT, LEN bytes). Malformed lines are skipped and counted.
 * Returns the number of malformed lines, -EINVAL for a set name that is not a plain name, -ENOMEM. */
int bsg_partsets_add(struct bsg_partsets *ps, const char *set, const char *text, size_t len);
void bsg_partsets_free(struct bsg_partsets *ps);

/* Whether SET is one of the special sets (self, other, all, shared) rather than a slot. */
int bsg_partset_is_special(const char *set);

/* The ordinary set and entry name of PARTUUID (case-insensitive): 1 when exactly one ordinary set
 * lists it (RET_* written), 0 otherwise (not listed, or shared by several sets). */
int bsg_partsets_slot_of(const struct bsg_partsets *ps, const char *partuuid, const char **ret_set,
                         const char **ret_name);

/* The ordinary set `self` names: it lists at least one of self's names and each of them with self's
 * PARTUUID. Returns 0 and the set, or -ENOENT (no self, no match, or more than one match). */
int bsg_partsets_active(const struct bsg_partsets *ps, const char **ret_set);
