/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `trust DEVNODE`: the rules' question for a block device that carries no btrfs: is it trusted
 * storage, and is it withheld? Prints BTRFS_SCAN_GATE_TRUSTED=1|0 and BTRFS_SCAN_GATE_WITHHELD=1 where
 * a device of a higher rank carries one of its /dev/disk names (filesystem UUID or label, PARTUUID,
 * partition name) or it is hot-pluggable and carries a name the system mounts by (rank.h). Reads
 * sysfs, the configuration and udev's database; never opens the device, takes no lock. A device it
 * outranks that udev linked first is sent a change event. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libudev.h>

#include "gate.h"
#include "util.h"

static void print_kv(const char *key, const char *value)
{
        printf("%s=%s\n", key, value);
}

/* udev's property of each name a shared /dev/disk link is made from */
static const char *const name_keys[_BSG_NAME_MAX] = {
        [BSG_NAME_UUID] = "ID_FS_UUID",
        [BSG_NAME_LABEL] = "ID_FS_LABEL_ENC", /* ID_FS_LABEL has whitespace turned into '_' */
        [BSG_NAME_PARTUUID] = "ID_PART_ENTRY_UUID",
        [BSG_NAME_PARTLABEL] = "ID_PART_ENTRY_NAME",
};

static enum bsg_rank rank_of_devnum(const struct ctx *c, dev_t devnum)
{
        bool by_config, fixed = false, stacked;
        const char *why;

        if (bsg_devnum_is_trusted(devnum, &c->trust_in, &by_config))
                return BSG_RANK_TRUSTED;
        return bsg_devnum_class(devnum, &fixed, &why, &stacked) == 0 && fixed ? BSG_RANK_FIXED : BSG_RANK_HOTPLUG;
}

/* Whether the udev record of DEV already withholds it (this verb's answer, or the udev verb's). */
static bool record_withheld(struct udev_device *dev)
{
        const char *w = udev_device_get_property_value(dev, "BTRFS_SCAN_GATE_WITHHELD");
        const char *r = udev_device_get_property_value(dev, "BTRFS_SCAN_GATE_REASON");
        return (w && streq(w, "1")) || (r && streq(r, "outranked"));
}

/* The devices of udev's database that carry one of SELF's names, and SELF, decided by the one rank
 * rule (rank.h); a device it outranks whose record does not withhold it yet is sent a change event
 * (it came first). Every carrier counts, however many a medium shows. Returns whether SELF is
 * outranked; out of memory it is unless trusted (fail closed). */
static bool decide_collisions(struct ctx *c, struct bsg_device *self, dev_t self_devnum)
{
        _cleanup_free_ struct bsg_device *devs = malloc(sizeof(*devs));
        _cleanup_free_ dev_t *stale = malloc(sizeof(*stale)); /* a lower rank already linked, or 0 */
        _cleanup_free_ bool *outranked = NULL;
        size_t n = 1;
        bool any = false, failed = !devs || !stale;

        for (size_t k = 0; k < _BSG_NAME_MAX; k++)
                any |= !isempty(self->names[k]);
        if (failed || !any)
                goto decide;
        devs[0] = *self;
        struct udev *udev = udev_new();
        struct udev_enumerate *en = udev ? udev_enumerate_new(udev) : NULL;
        if (!en || udev_enumerate_add_match_subsystem(en, "block") < 0 || udev_enumerate_scan_devices(en) < 0)
                failed = true;
        struct udev_list_entry *le;
        udev_list_entry_foreach(le, en && !failed ? udev_enumerate_get_list_entry(en) : NULL) {
                struct udev_device *dev = udev_device_new_from_syspath(udev, udev_list_entry_get_name(le));
                if (!dev)
                        continue;
                dev_t devnum = udev_device_get_devnum(dev);
                struct bsg_device o = {.state = BSG_DEV_NOT_BTRFS};
                bool match = false;
                for (size_t k = 0; k < _BSG_NAME_MAX; k++) {
                        const char *v = udev_device_get_property_value(dev, name_keys[k]);
                        if (!isempty(v) && !isempty(self->names[k]) && bsg_name_equal(k, v, self->names[k])) {
                                o.names[k] = self->names[k]; /* the shared name is all that counts */
                                match = true;
                        }
                }
                if (match && devnum && devnum != self_devnum) {
                        struct bsg_device *nd = realloc(devs, (n + 1) * sizeof(*devs));
                        devs = nd ? nd : devs;
                        dev_t *ns = nd ? realloc(stale, (n + 1) * sizeof(*stale)) : NULL;
                        stale = ns ? ns : stale;
                        if (!ns) {
                                failed = true;
                                udev_device_unref(dev);
                                break;
                        }
                        o.rank = rank_of_devnum(c, devnum);
                        stale[n] = record_withheld(dev) ? 0 : devnum;
                        devs[n++] = o;
                }
                udev_device_unref(dev);
        }
        if (en)
                udev_enumerate_unref(en);
        if (udev)
                udev_unref(udev);
        outranked = failed ? NULL : calloc(n, sizeof(*outranked));
        if (!outranked || bsg_outranked(devs, n, outranked) < 0)
                failed = true;
decide:
        if (failed) {
                add_error(c, "out-of-memory");
                return self->untrusted;
        }
        if (!any)
                return false;
        const char *why = getenv("SYNTH_ARG_BSG");
        for (size_t i = 1; i < n && !c->dry_run && !(why && streq(why, "reannounced")); i++)
                if (outranked[i] && stale[i]) {
                        char link[PATH_MAX], devnode[300];
                        const char *name = bsg_sysname_of_devnum(stale[i], link, sizeof(link));
                        if (!name)
                                continue; /* gone meanwhile: it has no link to lose */
                        snprintf(devnode, sizeof(devnode), "/dev/%.255s", name);
                        reannounce_device(c, name, devnode, "a device of a higher rank carries one of its names");
                }
        return outranked[0];
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
        if (decide_collisions(c, &e->pd, e->devnum)) {
                print_kv("BTRFS_SCAN_GATE_WITHHELD", "1");
                /* 99-btrfs-scan-gate-late.rules puts it back after SteamOS's partsets rules */
                print_kv("BTRFS_SCAN_GATE_UDISKS_IGNORE", "1");
        }
        return 0;
}
