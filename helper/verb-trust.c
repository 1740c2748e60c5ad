/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `trust DEVNODE`: the rules' question for a block device that carries no btrfs (issue 18 case 4):
 * is it trusted storage? Prints BTRFS_SCAN_GATE_TRUSTED=1|0 and, for untrusted storage that carries
 * a trusted device's partition name, PARTUUID, filesystem UUID or label, UDISKS_IGNORE=1. Reads sysfs,
 * the configuration and udev's database; never opens the device, takes no lock, changes nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <strings.h>

#include <libudev.h>

#include "gate.h"
#include "util.h"

static void print_kv(const char *key, const char *value)
{
        printf("%s=%s\n", key, value);
}

/* The names a device carries that a shared /dev/disk link is made from (udev's environment). */
static const char *const name_keys[] = {"ID_PART_ENTRY_NAME", "ID_PART_ENTRY_UUID", "ID_FS_UUID", "ID_FS_LABEL"};

static bool same_name(const char *key, const char *a, const char *b)
{
        if (isempty(a) || isempty(b))
                return false;
        /* UUIDs in any case; names exactly */
        return strstr(key, "UUID") ? strcasecmp(a, b) == 0 : streq(a, b);
}

/* Whether another block device that is trusted storage carries one of DEVNODE's names (udev's
 * database of the others: a device it does not know yet does not count). */
static bool impersonates_trusted(const struct ctx *c, dev_t self)
{
        const char *mine[ELEMENTSOF(name_keys)];
        bool any = false;

        for (size_t k = 0; k < ELEMENTSOF(name_keys); k++)
                any |= !isempty(mine[k] = getenv(name_keys[k]));
        if (!any)
                return false;
        struct udev *udev = udev_new();
        if (!udev)
                return false;
        struct udev_enumerate *en = udev_enumerate_new(udev);
        bool found = false;
        if (en && udev_enumerate_add_match_subsystem(en, "block") >= 0 && udev_enumerate_scan_devices(en) >= 0) {
                struct udev_list_entry *le;
                udev_list_entry_foreach(le, udev_enumerate_get_list_entry(en)) {
                        if (found)
                                break;
                        struct udev_device *dev = udev_device_new_from_syspath(udev, udev_list_entry_get_name(le));
                        if (!dev)
                                continue;
                        dev_t devnum = udev_device_get_devnum(dev);
                        bool match = false;
                        for (size_t k = 0; k < ELEMENTSOF(name_keys) && !match; k++)
                                match = same_name(name_keys[k], mine[k], udev_device_get_property_value(dev, name_keys[k]));
                        bool by_config;
                        if (match && devnum && devnum != self && bsg_devnum_is_trusted(devnum, &c->trust_in, &by_config))
                                found = true;
                        udev_device_unref(dev);
                }
        }
        if (en)
                udev_enumerate_unref(en);
        udev_unref(udev);
        return found;
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
        const struct entry *e = &c->e[r];
        print_kv("BTRFS_SCAN_GATE_TRUSTED", e->pd.untrusted ? "0" : "1");
        print_kv("BTRFS_SCAN_GATE_TRUST_SOURCE", trust_source(c));
        if (c->verbose)
                log_msg_debug("%s: %s (%s; trust from %s)", e->devnode, e->pd.untrusted ? "untrusted" : "trusted",
                              e->trust_why, trust_source(c));
        if (e->pd.untrusted && impersonates_trusted(c, e->devnum)) {
                print_kv("UDISKS_IGNORE", "1");
                /* 99-btrfs-scan-gate-late.rules puts it back after SteamOS's partsets rules */
                print_kv("BTRFS_SCAN_GATE_UDISKS_IGNORE", "1");
        }
        return 0;
}
