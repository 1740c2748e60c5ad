/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `trust DEVNODE`: the rules' question for a block device that carries no btrfs: is it trusted
 * storage, and is it withheld? Prints BTRFS_SCAN_GATE_TRUSTED=1|0 and BTRFS_SCAN_GATE_WITHHELD=1 where
 * a device of a higher rank carries one of its /dev/disk names (filesystem UUID or label, PARTUUID,
 * partition name) or it is hot-pluggable and carries a name the system mounts by (rank.h). Reads
 * sysfs, the configuration and udev's database; never opens the device, takes no lock. A device it
 * outranks that udev linked first is sent a change event. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gate.h"
#include "util.h"

static void print_kv(const char *key, const char *value)
{
        printf("%s=%s\n", key, value);
}

/* DEVNODE names a block device: its node, or udev's event for it (DEVNAME, MAJOR, MINOR: the node can
 * be gone by the time a rule runs). 0, or -errno (-ENOTBLK: something else is there). */
static int check_devnode(const char *devnode)
{
        struct stat st;
        const char *env = getenv("DEVNAME");

        if (env && streq(env, devnode) && !isempty(getenv("MAJOR")) && !isempty(getenv("MINOR")))
                return 0;
        if (stat(devnode, &st) < 0)
                return -errno;
        return S_ISBLK(st.st_mode) ? 0 : -ENOTBLK;
}

int run_trust(struct ctx *c)
{
        int r = check_devnode(c->devnode);

        if (r < 0) {
                /* a person's typo: said, never answered as if it were a device (untrusted or not) */
                log_msg("trust: %s: %s", c->devnode, r == -ENOTBLK ? "not a block device" : strerror(-r));
                return 1;
        }
        r = gather_trust(c);

        if (r < 0) {
                /* nothing known of it: untrusted (fail closed) */
                print_kv("BTRFS_SCAN_GATE_TRUSTED", "0");
                return 0;
        }
        struct entry *e = &c->e[r];
        e->pd.names[BSG_NAME_UUID] = getenv("ID_FS_UUID");
        e->pd.names[BSG_NAME_LABEL] = getenv("ID_FS_LABEL_ENC");
        if (!e->pd.names[BSG_NAME_PARTUUID])
                e->pd.names[BSG_NAME_PARTUUID] = getenv("ID_PART_ENTRY_UUID");
        if (!e->pd.names[BSG_NAME_PARTLABEL])
                e->pd.names[BSG_NAME_PARTLABEL] = getenv("ID_PART_ENTRY_NAME");
        e->pd.reserved = bsg_reserved_has(&c->reserved, &e->pd);
        print_kv("BTRFS_SCAN_GATE_TRUSTED", e->pd.untrusted ? "0" : "1");
        print_kv("BTRFS_SCAN_GATE_TRUST_SOURCE", trust_source(c));
        if (c->verbose)
                log_msg_debug("%s: %s (%s; trust from %s)", e->devnode, e->pd.untrusted ? "untrusted" : "trusted",
                              e->trust_why, trust_source(c));
        if (name_collisions(c, &e->pd, e->devnum, false)) {
                print_kv("BTRFS_SCAN_GATE_WITHHELD", "1");
                /* 99-btrfs-scan-gate-late.rules puts it back after SteamOS's partsets rules */
                print_kv("BTRFS_SCAN_GATE_UDISKS_IGNORE", "1");
        }
        return 0;
}
