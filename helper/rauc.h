/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure parser of RAUC's system.conf (GKeyFile syntax): which block device is which slot, and the
 * bootname the bootloader booted (rauc.slot=, bootchooser.active= on the kernel command line). */
#pragma once

#include <stddef.h>

/* Where RAUC looks for system.conf, in its order: the first that exists is the one it uses (RAUC's
 * reference, "System Configuration File"). The configuration's default rauc_system_conf is the
 * first; left at that default, the helper looks where RAUC looks. */
#define BSG_RAUC_SYSTEM_CONF_DEFAULT "/etc/rauc/system.conf"
#define BSG_RAUC_SYSTEM_CONF_SEARCH {"/etc/rauc/system.conf", "/run/rauc/system.conf", "/usr/lib/rauc/system.conf"}

#define BSG_RAUC_NAME_MAX 64
#define BSG_RAUC_DEVICE_MAX 256

struct bsg_rauc_slot {
        char name[BSG_RAUC_NAME_MAX];       /* "rootfs.0" (the group [slot.rootfs.0]) */
        char class_[BSG_RAUC_NAME_MAX];     /* "rootfs" */
        char device[BSG_RAUC_DEVICE_MAX];   /* device= as written (a path) */
        char bootname[BSG_RAUC_NAME_MAX];   /* bootname=, or the parent's for a child slot; "" if none */
        char parent[BSG_RAUC_NAME_MAX];     /* parent=, "" if none */
};

struct bsg_rauc_conf {
        struct bsg_rauc_slot *v;
        size_t n;
};

typedef void (*bsg_rauc_diag_fn)(unsigned line, const char *message, void *userdata);

/* Parses TEXT (LEN bytes): every [slot.CLASS.INDEX] group with its device=, bootname=, parent=.
 * Child slots take their parent's bootname. Bad lines and slots without device= are reported
 * through DIAG and left out. Returns the number of bad lines (>= 0) or -ENOMEM. */
int bsg_rauc_parse(const char *text, size_t len, struct bsg_rauc_conf *ret_conf, bsg_rauc_diag_fn diag,
                   void *userdata);
void bsg_rauc_free(struct bsg_rauc_conf *conf);
