/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which protection is in force (pure): from the kernel's capabilities, the btrfs modules installed
 * for the running and the other kernels, and whether the kernel's skip list holds every device the
 * helper decided to keep out. One verdict line, the fix, and whether the boot unit must fail. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum bsg_protection_state {
        BSG_PROTECTION_SKIP_SCAN,          /* the patched module enforces the skip list */
        BSG_PROTECTION_TEMP_FSID,          /* 6.7+: the kernel's temp-fsid mounts clones itself */
        BSG_PROTECTION_HELPER_ONLY,        /* stock module, none patched installed: the stated mode */
        BSG_PROTECTION_MODULE_NOT_RUNNING, /* a patched module is installed, the running btrfs lacks it */
        BSG_PROTECTION_LIST_NOT_APPLIED,   /* skip_scan exists but misses devices decided skip */
};

struct bsg_protection_input {
        bool control;            /* btrfs loaded */
        bool skip_scan;          /* the running btrfs has the parameter (patched) */
        bool skip_scan_writable;
        bool temp_fsid;          /* upstream 6.7+ */
        const char *running;     /* uname -r; "" when unknown */
        bool running_patched;    /* /lib/modules/<running>/updates{,/dkms}/btrfs.ko* exists */
        const char *patched_other; /* another installed kernel with such a module, or NULL */
        const char *dkms_source; /* btrfs-scan-gate-dkms's source directory (the package is installed), or NULL */
        size_t n_listed;         /* devices in the computed skip list */
        size_t n_missing;        /* of those, absent from the kernel's list (when skip_scan exists) */
        const char *first_missing; /* one of them, for the message */
};

struct bsg_protection {
        enum bsg_protection_state state;
        bool failed;       /* protection this system is set up for is not in force: exit 4 */
        char verdict[640]; /* one line */
        char fix[640];     /* what to do ("" when nothing is wrong) */
};

void bsg_protection_decide(const struct bsg_protection_input *in, struct bsg_protection *ret);
const char *bsg_protection_state_name(enum bsg_protection_state s);

/* The names of the comma-separated COMPUTED list that CURRENT (NULL: unknown, nothing in it) lacks:
 * their count; the first copied to RET_FIRST (SIZE bytes, "" when none). */
size_t bsg_skip_list_missing(const char *computed, const char *current, char *ret_first, size_t size);
/* The number of names in a comma-separated list. */
size_t bsg_skip_list_count(const char *list);
