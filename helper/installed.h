/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What is installed (I/O): the kernels under /lib/modules and the btrfs module each would load; and
 * the protection verdict gathered for the running kernel (protection.h decides). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "gate.h"
#include "protection.h"

struct bsg_kernel {
        char *release;
        /* "dkms" (updates/dkms/btrfs.ko: btrfs-scan-gate-dkms), "updates" (updates/btrfs.ko: the prebuilt
         * btrfs-scan-gate-modules-ABI), "in-tree", "built-in", or NULL (none found) */
        const char *btrfs_module;
        bool running;
        bool installed; /* its modules are installed (not a directory of headers only) */
};

/* The installed kernels, newest first, and always the running one (installed or not). Directories
 * with no modules (a linux-headers package's build/ and source/ links only) are no kernel. */
int bsg_kernels_list(struct bsg_kernel **ret_v, size_t *ret_n);
void bsg_kernels_free(struct bsg_kernel *v, size_t n);
bool bsg_kernel_module_patched(const char *btrfs_module);

/* The verdict for this system. COMPUTED is the decided skip list. With CHECK_LIST the kernel's list
 * (read here) must hold every name of COMPUTED (boot and reconcile after writing it, status); without
 * (a dry run), only the module is judged. */
void protection_check(const struct ctx *c, const char *computed, bool check_list, struct bsg_protection *ret);
