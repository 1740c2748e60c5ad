/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure parser of /etc/btrfs-scan-gate.conf: KEY=VALUE lines, '#' comments. */
#pragma once

#include <stddef.h>

#include "policy.h"

#define BSG_MAX_SUFFIXES 8
#define BSG_SUFFIX_MAX 16
#define BSG_SLOT_MAX 32
#define BSG_MAX_TRUSTED_DISKS 16
#define BSG_TRUSTED_DISK_MAX 256

struct bsg_config {
        char active_slot[BSG_SLOT_MAX];                 /* "" : from the kernel command line */
        char suffixes[BSG_MAX_SUFFIXES][BSG_SUFFIX_MAX]; /* partition-label suffixes naming slots */
        size_t n_suffixes;
        enum bsg_clone_policy clone_policy;
        char rauc_system_conf[256]; /* RAUC's system.conf ("" : none); default /etc/rauc/system.conf */
        char steamos_partsets[256]; /* SteamOS partset files ("" : none); default /efi/SteamOS/partsets */
        /* trusted_disk= (one per line, in addition to the fallback): block devices whose storage is
         * trusted (a disk: its partitions too), by their place: /dev/disk/by-path/NAME */
        char trusted_disks[BSG_MAX_TRUSTED_DISKS][BSG_TRUSTED_DISK_MAX];
        size_t n_trusted_disks;
};

/* Called for every malformed line; LINE counts from 1. */
typedef void (*bsg_config_diag_fn)(const char *filename, unsigned line, const char *message, void *userdata);

/* Defaults: no active_slot, suffixes -A,-B,_a,_b, clone_policy skip-all, rauc_system_conf
 * /etc/rauc/system.conf, steamos_partsets /efi/SteamOS/partsets. */
void bsg_config_init(struct bsg_config *ret_config);

/* Whether PATH goes through /dev/disk/by-{label,partlabel,uuid,partuuid}/: a link named by what the
 * media carries, so it names no trusted disk (trusted_disk=, RAUC's device= and steamos.efi= for the
 * anchor). */
bool bsg_is_content_link(const char *path);

/* Parses TEXT (LEN bytes) over CONFIG (start from bsg_config_init()). Keys: active_slot,
 * slot_suffixes (alias slot_partlabel_suffixes; comma-separated), clone_policy (skip-all|active),
 * rauc_system_conf, steamos_partsets (absolute paths, or empty to turn the source off), trusted_disk
 * (/dev/disk/by-path/NAME; each line adds one, up to 16; an empty value forgets the earlier ones).
 * Bad lines are reported through DIAG and skipped: the rest still counts. Returns the number of bad
 * lines (0 = clean). */
int bsg_config_parse(const char *text, size_t len, const char *filename, struct bsg_config *config,
                     bsg_config_diag_fn diag, void *userdata);
