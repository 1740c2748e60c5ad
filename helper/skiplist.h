/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure formatting of the skip_scan list: comma-separated absolute paths, sorted, <= 4095 bytes. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define BSG_SKIPLIST_MAX 4095      /* bytes the kernel parameter takes */
#define BSG_PATH_NAME_MAX 4087     /* BTRFS_PATH_NAME_MAX: the name field of btrfs_ioctl_vol_args */

/* A path that can be listed in skip_scan and passed to the scan ioctls: absolute, no ',', '*',
 * whitespace or control characters, at most BSG_PATH_NAME_MAX bytes. */
bool bsg_skiplist_path_ok(const char *path);
/* Whether ENTRY can be a skip_scan entry: a path as above; a whole disk's path with a trailing '*'
 * (the kernel's starred form: the disk and each of its partitions); or PARTUUID=<1 to 36 hex digits
 * and dashes> (matched by the kernel against the partition table it read). */
bool bsg_skiplist_entry_ok(const char *entry);

/* Formats PATHS (N of them, any order, duplicates allowed) sorted and deduplicated into a newly
 * allocated string. Entries that fail bsg_skiplist_entry_ok() are left out and counted in
 * *ret_rejected. Returns 0, or -E2BIG if the list would exceed BSG_SKIPLIST_MAX (then *ret_list holds
 * the longest sorted prefix that fits and *ret_dropped the number of paths left out), -ENOMEM. When
 * the list is cut, the paths with KEEP[i] set come first: they are taken (sorted) while they fit, then
 * the others fill what is left (sorted); the list is sorted as a whole. KEEP may be NULL (all alike). */
int bsg_skiplist_format(const char *const *paths, const bool *keep, size_t n, char **ret_list, size_t *ret_rejected,
                        size_t *ret_dropped);

/* Splits LIST (as read from skip_scan; a trailing newline is ignored) into a NULL-terminated array of
 * newly allocated strings (empty entries dropped). Returns the count or -ENOMEM. */
int bsg_skiplist_parse(const char *list, char ***ret_paths);
void bsg_strv_free(char **v);
