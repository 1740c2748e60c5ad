/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Trust (issue 18 item 1), in one file: what it is decided from (the disks trusted_disk= names, the
 * EFI variable, the partition tables the boot's PARTUUIDs are looked up in), the anchor (the disks the
 * boot names, bsg_boot_anchor() over the entries, once per run), and every entry's trust from those
 * and its class (is_trusted_storage()). I/O only to gather; deciding is devices.c and slot.c. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <libudev.h>

#include "cmdline.h"
#include "gate.h"
#include "state.h"
#include "util.h"

/* The device numbers of the disks trusted_disk= names and their disks, found by where each disk is
 * attached (its ID_PATH), not by the link udev makes at the end of the disk's own event: during
 * coldplug another disk's event may come first, and `boot` may run before udevd. A name that
 * matches no disk's ID_PATH and has no link names nothing (said in verbose mode). */
void load_trusted_disks(struct ctx *c)
{
        const char *names[BSG_MAX_TRUSTED_DISKS];
        dev_t devnums[BSG_MAX_TRUSTED_DISKS], event_devnum = 0;
        const char *event_id_path = NULL;
        size_t n = c->config.n_trusted_disks;

        for (size_t i = 0; i < n; i++)
                names[i] = strncmp(c->config.trusted_disks[i], "/dev/disk/by-path/", 18) == 0
                                   ? c->config.trusted_disks[i] + 18
                                   : ""; /* config.c takes no other form; "" matches no disk */
        /* the event's own device: udev's environment has its ID_PATH (a partition's is its disk's) */
        if ((c->verb == VERB_UDEV || c->verb == VERB_TRUST) && c->devnode && streq_ptr(getenv("DEVNAME"), c->devnode) &&
            !isempty(getenv("MAJOR")) && !isempty(getenv("MINOR"))) {
                event_devnum = makedev(strtoul(getenv("MAJOR"), NULL, 10), strtoul(getenv("MINOR"), NULL, 10));
                event_id_path = getenv("ID_PATH");
        }
        for (size_t i = 0; i < n; i++)
                devnums[i] = 0;
        /* a link that exists first: udev made it from the same ID_PATH (or from a form not made from
         * ID_PATH: ID_PATH_ATA_COMPAT, an eMMC's -bootN, a link another rule or the administrator
         * made), and a stat() costs no walk of every block device; then, for what is left, what udev
         * knows (the event, the database), then path_id derived now (a disk whose event has not run) */
        for (size_t i = 0; i < n; i++) {
                struct stat st;
                if (stat(c->config.trusted_disks[i], &st) == 0 && S_ISBLK(st.st_mode))
                        devnums[i] = st.st_rdev;
        }
        bsg_resolve_by_path(names, n, event_devnum, event_id_path, devnums);
        for (size_t i = 0; i < n; i++) {
                if (!devnums[i]) {
                        log_debug("trusted_disk=%s: no disk at that place, ignoring", c->config.trusted_disks[i]);
                        continue;
                }
                c->trusted_devnums[c->n_trusted_devnums++] = devnums[i];
                char *disk = bsg_disk_of_devnum(devnums[i]);
                if (disk)
                        c->named_disks[c->n_named_disks++] = disk;
        }
        c->trust_in = (struct bsg_trust_inputs){
                .named = c->trusted_devnums,
                .n_named = c->n_trusted_devnums,
                .named_disks = (const char *const *)c->named_disks,
                .n_named_disks = c->n_named_disks,
        };
}

void trust_input_lost(struct ctx *c, const char *what, int err)
{
        log_msg("cannot read %s: %s; only trusted_disk= is trusted unless another source names the disk that "
                "booted", what, strerror(-err));
        c->trust_input_lost = true;
}

const char *trust_source(const struct ctx *c)
{
        /* what the decision used (trust_in), not what the anchor found */
        if (c->trust_in.n_anchor)
                return c->anchor.ambiguous ? "boot-disk-ambiguous" : "boot-disk";
        return c->trust_in.narrow ? "trusted-disk-only" : "fallback";
}

/* What each source of the anchor said, "root=ambiguous, LoaderDevicePartUUID=resolved", into BUF. */
static void anchor_sources(const struct ctx *c, char *buf, size_t size)
{
        buf[0] = '\0';
        for (size_t s = 0; s < _BSG_ANCHOR_SOURCE_MAX; s++) {
                if (c->anchor.result[s] == BSG_ANCHOR_ABSENT)
                        continue;
                size_t l = strlen(buf);
                snprintf(buf + l, size - l, "%s%s %s", l ? ", " : "", bsg_anchor_source_name(s),
                         bsg_anchor_result_name(c->anchor.result[s]));
        }
}

void trust_describe(const struct ctx *c, char *buf, size_t size)
{
        char sources[256];

        anchor_sources(c, sources, sizeof(sources));
        if (!c->trust_in.n_anchor && c->trust_in.narrow)
                snprintf(buf, size,
                         "trust: the disk that booted is not there yet or could not be worked out (%s): only the %zu disk(s) named by "
                         "trusted_disk= and dm/md over them; everything else is untrusted",
                         sources[0] ? sources : "a source present but unreadable", c->n_trusted_devnums);
        else if (c->anchor.ambiguous)
                snprintf(buf, size,
                         "trust: from the boot, ambiguous (%s): only the %zu fixed disk(s) that carry the name "
                         "(and the disk the root is mounted from), %zu disk(s) named by trusted_disk=, dm/md over "
                         "them; everything else is untrusted",
                         sources, c->anchor.n_disks, c->n_trusted_devnums);
        else if (c->trust_in.n_anchor)
                snprintf(buf, size,
                         "trust: from the boot: %zu disk(s) the boot names (%s), %zu disk(s) named by trusted_disk=, "
                         "dm/md over them; everything else is untrusted",
                         c->anchor.n_disks, sources, c->n_trusted_devnums);
        else
                snprintf(buf, size,
                         "trust: from the fallback (the boot names no disk%s%s%s): %zu disk(s) named by trusted_disk=, "
                         "and fixed storage (not removable, USB, FireWire, SD card, Thunderbolt/USB4, loop, nbd or "
                         "another virtual device; dm/md only over trusted storage)",
                         sources[0] ? ": " : "", sources, sources[0] ? "" : " it can find", c->n_trusted_devnums);
}

#define LOADER_DEVICE_PARTUUID "LoaderDevicePartUUID-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"

/* systemd-boot's LoaderDevicePartUUID (4 bytes of attributes, volatile, then a NUL-terminated
 * UTF-16LE GUID): absent is nothing; unreadable, non-volatile (written by the OS) or malformed is said
 * and left out (the disk that booted is then not known from
 * it, never guessed). */
void load_loader_partuuid(struct ctx *c)
{
        _cleanup_free_ char *efivar = NULL;
        char path[PATH_MAX];
        size_t len = 0;
        int r;

        c->loader_partuuid[0] = '\0';
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", bsg_efivars_path(), LOADER_DEVICE_PARTUUID) >= sizeof(path))
                return;
        r = bsg_read_file(path, 256, &efivar, &len);
        if (r == -ENOENT || r == -ENOTDIR)
                return;
        if (r < 0) {
                /* there but unreadable (EACCES, EIO): a source that cannot be resolved narrows trust
                 * (absent, as in an initramfs without efivarfs, is no source) */
                c->loader_unreadable = true;
                log_msg("cannot read %s: %s; only trusted_disk= is trusted unless another source names the "
                        "disk that booted", path, strerror(-r));
                return;
        }
        r = bsg_efivar_guid((const uint8_t *)efivar, len, c->loader_partuuid);
        if (r == -EPERM) {
                c->loader_partuuid[0] = '\0';
                log_msg("%s: non-volatile (systemd-boot sets it volatile; the running system wrote this one), "
                        "ignoring it (the disk that booted is not known from it)", path);
        } else if (r < 0) {
                c->loader_partuuid[0] = '\0';
                log_msg("%s: not a partition GUID in UTF-16LE with its NUL and nothing after (%zu bytes), "
                        "ignoring it (the disk that booted is not known from it)", path, len);
        }
}

/* The disk the mounted root is on, or NULL: by device number, the kernel's facts (mountinfo's MAJ:MIN;
 * for btrfs, whose is anonymous, the device the kernel recorded as the source, when it is a block
 * device: never a name alone such as /dev/root). */
static const char *mounted_root_disk(const struct ctx *c)
{
        struct stat st;
        dev_t devnum = c->mountinfo ? bsg_mountinfo_root_devnum(c->mountinfo) : 0;

        if (!devnum && c->root_source && !streq(c->root_source, "/dev/root") && stat(c->root_source, &st) == 0 &&
            S_ISBLK(st.st_mode))
                devnum = st.st_rdev;
        for (size_t i = 0; devnum && i < c->n; i++)
                if (c->e[i].devnum == devnum)
                        return c->e[i].disk;
        return NULL;
}

/* Whether E and A are two members of one multi-device filesystem (the same fsid, the same number of
 * devices, another devid). */
static bool is_other_member(const struct bsg_device *e, const struct bsg_device *a)
{
        return e->state == BSG_DEV_BTRFS && a->state == BSG_DEV_BTRFS && e->num_devices >= 2 &&
               memcmp(a->fsid, e->fsid, BSG_UUID_SIZE) == 0 && a->num_devices == e->num_devices &&
               a->devid != e->devid;
}

/* Says why a member of a multi-device filesystem with a trusted member (a btrfs RAID1 root over two
 * internal disks, the boot naming the first) found on another disk is not scanned, and what the administrator can do. It
 * stays untrusted: its superblock is what any media can write, and the disk it is on is named
 * neither by the boot nor by the configuration (an eSATA disk, a hot-swap bay or a card that shows
 * as NVMe looks fixed to sysfs). Said by `boot` and by the member's own event. */
static void say_untrusted_members(const struct ctx *c)
{
        if (!c->trust_in.n_anchor || (c->verb != VERB_BOOT && c->verb != VERB_UDEV))
                return;
        for (size_t i = 0; i < c->n; i++) {
                const struct entry *e = &c->e[i];
                if (!e->pd.untrusted || !streq_ptr(e->trust_why, WHY_OFF_ANCHOR) ||
                    (c->verb == VERB_UDEV && !streq_ptr(e->devnode, c->devnode)))
                        continue;
                for (size_t k = 0; k < c->n; k++) {
                        const struct entry *a = &c->e[k];
                        if (a->pd.untrusted || !is_other_member(&e->pd, &a->pd))
                                continue;
                        char fsid[37];
                        size_t unresolved = c->config.n_trusted_disks - c->n_trusted_devnums;
                        bsg_uuid_format(e->pd.fsid, fsid);
                        log_msg("%s: a member of %s's multi-device filesystem %s, on a disk neither the boot "
                                "nor trusted_disk= names%s: untrusted, not scanned (the filesystem assembles only "
                                "with it named: if the disk is inside the machine, add "
                                "trusted_disk=/dev/disk/by-path/... for it)",
                                e->devnode, a->devnode, fsid,
                                unresolved ? " (a trusted_disk= line names no disk present now)" : "");
                        break;
                }
        }
}

/* The anchor (the disks the boot names), once per run, then every entry's trust from it, the
 * configuration and the entry's class (is_trusted_storage()). */
void decide_trust(struct ctx *c)
{
        _cleanup_free_ struct bsg_partition *parts = calloc(c->n + 1, sizeof(*parts));

        if (parts) {
                for (size_t i = 0; i < c->n; i++) {
                        const struct entry *e = &c->e[i];
                        parts[i] = (struct bsg_partition){
                                .devnode = e->devnode,
                                .partlabel = e->partlabel,
                                .partuuid = e->partuuid,
                                .disk = e->disk && e->disk[0] ? bsg_disk_key(e->disk) : NULL,
                                /* here: hot-pluggable by its class (unknown: taken for hot-pluggable) */
                                .untrusted = !e->trust.class_fixed,
                                .devnum = e->devnum,
                        };
                }
                const char *root_disk = mounted_root_disk(c);
                /* RAUC's device= through a link the media names (by-label, by-partlabel, by-uuid,
                 * by-partuuid) anchors nothing (its slot is still found by it) */
                size_t n_rauc = c->rauc_rdev ? c->rauc.n : 0;
                _cleanup_free_ dev_t *rauc_anchor = calloc(n_rauc + 1, sizeof(dev_t));
                if (!rauc_anchor && n_rauc) {
                        /* RAUC names no disk now: no anchor from it, and not the fallback either */
                        trust_input_lost(c, "the disks RAUC's slots name", -ENOMEM);
                        n_rauc = 0;
                }
                for (size_t i = 0; i < n_rauc; i++) {
                        rauc_anchor[i] = bsg_is_content_link(c->rauc.v[i].device) ? 0 : c->rauc_rdev[i];
                        if (!rauc_anchor[i] && c->rauc_rdev[i] && c->verb == VERB_BOOT)
                                log_msg("RAUC device=%s: a by-label, by-partlabel, by-uuid or by-partuuid link is "
                                        "named by the media: not used to find the disk that booted (name it "
                                        "by-path)", c->rauc.v[i].device);
                }
                bsg_boot_anchor(c->cmdline, c->loader_partuuid, rauc_anchor, n_rauc, parts, c->n,
                                root_disk ? bsg_disk_key(root_disk) : NULL, &c->anchor);
        } else {
                /* out of memory: no anchor, and not the fallback either (fail closed) */
                log_msg("cannot work out the disk that booted, only trusted_disk= is trusted: %s", strerror(ENOMEM));
                add_error(c, "out-of-memory");
                c->anchor = (struct bsg_anchor){0};
                c->trust_in.narrow = true;
        }
        /* a name that a second disk or hot-pluggable media carries too anchors nothing: said (the
         * trust verb, run for every device without btrfs, leaves it to the btrfs events) */
        for (size_t s = 0; c->verb != VERB_TRUST && s < _BSG_ANCHOR_SOURCE_MAX; s++) {
                if (c->anchor.result[s] == BSG_ANCHOR_AMBIGUOUS)
                        log_msg("%s names partitions on more than one fixed disk (a copy of its partition "
                                "table?): %s",
                                bsg_anchor_source_name(s),
                                c->anchor.ambiguous ? "only those disks are trusted (never the fallback)"
                                                    : "not used to find the disk that booted");
                else if (c->anchor.result[s] == BSG_ANCHOR_HOTPLUG)
                        log_msg("%s names a partition on hot-pluggable media only: not used to find the disk that "
                                "booted",
                                bsg_anchor_source_name(s));
                else if (c->anchor.result[s] == BSG_ANCHOR_NOT_FOUND || c->anchor.result[s] == BSG_ANCHOR_NO_DISK)
                        log_debug("%s: no partition carries it (yet)", bsg_anchor_source_name(s));
        }
        size_t n = 0;
        for (size_t i = 0; i < c->anchor.n_disks; i++)
                if ((c->anchor_disks[n] = strdup(c->anchor.disks[i])))
                        n++;
        if (n < c->anchor.n_disks) {
                /* a disk left out would be untrusted: fail closed, said */
                log_msg("cannot keep the disks that booted: %s", strerror(ENOMEM));
                add_error(c, "out-of-memory");
        }
        if (c->devs.names_lost) {
                /* a PARTUUID or partition name dropped (out of memory) may have been the copy that
                 * makes a name ambiguous, or a reserved one: narrow, never wider */
                trust_input_lost(c, "the partition names", -ENOMEM);
                c->reserved.lost = true;
                n = 0;
        }
        c->trust_in.anchor_disks = (const char *const *)c->anchor_disks;
        c->trust_in.n_anchor = n;
        /* a source there but not resolvable (the variable unreadable, the anchor's disks lost to
         * ENOMEM), or an input lost that may have held one (the command line, mountinfo, RAUC's
         * system.conf, the configuration that names it, the inventory or the device list, anything out
         * of memory): no anchor, and not the fallback either */
        /* a disk the boot names that has not appeared yet narrows trust until it does: nothing is
         * trusted by its class in the meantime (an MMC card while root=PARTUUID= names an NVMe disk) */
        bool named_absent = false;
        for (size_t s = 0; s < _BSG_ANCHOR_SOURCE_MAX; s++)
                named_absent = named_absent || c->anchor.result[s] == BSG_ANCHOR_NOT_FOUND ||
                               c->anchor.result[s] == BSG_ANCHOR_NO_DISK;
        if (n == 0 && (named_absent || c->anchor.n_disks > 0 || c->loader_unreadable || c->trust_input_lost ||
                       ctx_has_error(c, "out-of-memory") || ctx_has_error(c, "config-unreadable") ||
                       ctx_has_error(c, "state-failed") || ctx_has_error(c, "enumerate-failed")))
                c->trust_in.narrow = true;
        for (size_t i = 0; i < c->n; i++) {
                struct entry *e = &c->e[i];
                bool by_config;
                e->pd.untrusted = !is_trusted_storage(&e->trust, &c->trust_in, &e->trust_why, &by_config);
                e->pd.rank = !e->pd.untrusted ? BSG_RANK_TRUSTED : e->trust.class_fixed ? BSG_RANK_FIXED : BSG_RANK_HOTPLUG;
                e->pd.names[BSG_NAME_PARTUUID] = e->partuuid;
                e->pd.names[BSG_NAME_PARTLABEL] = e->partlabel;
                if (e->dev >= 0 && c->devs.v[e->dev].parse_result == 0)
                        e->pd.names[BSG_NAME_LABEL] = c->devs.v[e->dev].sb.label;
                e->pd.reserved = bsg_reserved_has(&c->reserved, &e->pd);
                if (e->dev >= 0) {
                        struct bsg_dev *d = &c->devs.v[e->dev];
                        d->untrusted = e->pd.untrusted;
                        d->trust_why = e->trust_why;
                        d->trust_by_config = by_config;
                }
        }
        say_untrusted_members(c);
}

/* The boot names a partition by PARTUUID (root=, steamos.efi=, LoaderDevicePartUUID): a whole disk
 * with a partition whose PARTUUID nothing gave yet (`boot` and the first coldplug run before udev's
 * database has any) has its partition table read with its superblock, so that the disk the boot
 * names is found from the disk itself (issue 18 item 1). */
void mark_table_probes(struct ctx *c)
{
        if (!c->loader_partuuid[0] && !(c->cmdline && strstr(c->cmdline, "PARTUUID=")))
                return;
        for (size_t i = 0; i < c->devs.n; i++) {
                struct bsg_dev *disk = &c->devs.v[i];
                /* only disks the fallback's class test takes for fixed: a stick's table is no
                 * candidate for the anchor anyway, and is not worth a parser run */
                if (!disk->partitioned || disk->skip_read || !disk->syspath || !bsg_dev_class_fixed(disk))
                        continue;
                size_t l = strlen(disk->syspath);
                for (size_t k = 0; k < c->devs.n && !disk->probe_table; k++) {
                        const struct bsg_dev *p = &c->devs.v[k];
                        disk->probe_table = p->partition && !p->partuuid && p->syspath &&
                                            strncmp(p->syspath, disk->syspath, l) == 0 && p->syspath[l] == '/';
                }
        }
}

/* What every device's trust answer follows: the source, the anchor's disks, the disks trusted_disk=
 * names. A run that finds another key than the last one recorded re-announces stale answers. */
static void trust_key(const struct ctx *c, char *buf, size_t size)
{
        size_t l = (size_t)snprintf(buf, size, "%s", trust_source(c));

        for (size_t i = 0; i < c->trust_in.n_anchor && l < size; i++)
                l += (size_t)snprintf(buf + l, size - l, " disk=%s", c->trust_in.anchor_disks[i]);
        for (size_t i = 0; i < c->n_trusted_devnums && l < size; i++)
                l += (size_t)snprintf(buf + l, size - l, " trusted=%u:%u", major(c->trusted_devnums[i]),
                                      minor(c->trusted_devnums[i]));
        if (l < size)
                snprintf(buf + l, size - l, "\n");
}

static void fill_key(FILE *f, const void *data)
{
        fputs(data, f);
}

/* The answer udev keeps for DEVNUM (BTRFS_SCAN_GATE_TRUSTED, from the `trust` verb or an event) and
 * its kernel name; 0 if it has none yet (its own event will answer), 1 if it has, -ENOMEM. */
static int udev_trusted_of(struct udev *udev, dev_t devnum, char *ret_value, size_t value_size, char *ret_sysname,
                           size_t sysname_size)
{
        struct udev_device *dev = udev_device_new_from_devnum(udev, 'b', devnum);
        const char *v, *name;

        if (!dev)
                return 0;
        v = udev_device_get_property_value(dev, "BTRFS_SCAN_GATE_TRUSTED");
        name = udev_device_get_sysname(dev);
        int r = !isempty(v) && !isempty(name) && strlen(v) < value_size && strlen(name) < sysname_size;
        if (r) {
                memcpy(ret_value, v, strlen(v) + 1);
                memcpy(ret_sysname, name, strlen(name) + 1);
        }
        udev_device_unref(dev);
        return r;
}

void reannounce_trust_changed(struct ctx *c)
{
        char key[2048], path[4200], tmp[4210];
        _cleanup_free_ char *old = NULL;
        const char *why = getenv("SYNTH_ARG_BSG");

        /* a run that lost an input decides narrower than the system is: it does not stand for the
         * anchor (nor a dry run, nor the replay of a re-announce) */
        if (c->dry_run || c->trust_input_lost || ctx_has_error(c, "out-of-memory") || (why && streq(why, "reannounced")))
                return;
        trust_key(c, key, sizeof(key));
        if ((size_t)snprintf(path, sizeof(path), "%s/trust", bsg_rundir_path()) >= sizeof(path) ||
            (size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
                return;
        if (bsg_read_file(path, sizeof(key), &old, NULL) >= 0 && streq(old, key))
                return;
        struct udev *udev = udev_new();
        if (!udev)
                return;
        bool failed = false;
        for (size_t i = 0; i < c->n; i++) {
                const struct entry *e = &c->e[i];
                char kept[8], sysname[256];
                /* the event's own device gets its answer now */
                if (!e->devnum || (c->devnode && e->devnode && streq(e->devnode, c->devnode)))
                        continue;
                if (udev_trusted_of(udev, e->devnum, kept, sizeof(kept), sysname, sizeof(sysname)) <= 0 ||
                    streq(kept, e->pd.untrusted ? "0" : "1"))
                        continue;
                char stale[128];
                snprintf(stale, sizeof(stale), "whose udev record says trusted=%s, now %s (trust from %s)", kept,
                         e->pd.untrusted ? "0" : "1", trust_source(c));
                failed = reannounce_device(c, sysname, e->devnode, stale) < 0 || failed;
        }
        udev_unref(udev);
        /* the next run with this key re-announces nothing; a device it could not ask, the next key
         * change (or `udevadm trigger`) */
        int r = failed ? 0 : bsg_write_atomic(path, tmp, fill_key, key);
        if (r < 0)
                log_msg("cannot write %s, ignoring: %s", path, strerror(-r));
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

bool name_collisions(struct ctx *c, const struct bsg_device *self, dev_t self_devnum, bool other_fs_only)
{
        _cleanup_free_ struct bsg_device *devs = NULL;
        _cleanup_free_ dev_t *stale = NULL; /* a lower rank already linked, or 0 */
        _cleanup_free_ bool *outranked = NULL;
        size_t n = 0, size = 0;
        bool any = false, failed = false;

        for (size_t k = 0; k < _BSG_NAME_MAX; k++)
                any |= !isempty(self->names[k]);
        if (!any)
                return false;
        struct udev *udev = udev_new();
        struct udev_enumerate *en = udev ? udev_enumerate_new(udev) : NULL;
        if (!en || udev_enumerate_add_match_subsystem(en, "block") < 0 || udev_enumerate_scan_devices(en) < 0)
                failed = true;
        struct udev_list_entry *le;
        udev_list_entry_foreach(le, en && !failed ? udev_enumerate_get_list_entry(en) : NULL) {
                struct udev_device *dev = udev_device_new_from_syspath(udev, udev_list_entry_get_name(le));
                if (!dev) {
                        failed = failed || errno == ENOMEM; /* else gone meanwhile */
                        continue;
                }
                dev_t devnum = udev_device_get_devnum(dev);
                const char *fs = udev_device_get_property_value(dev, "ID_FS_TYPE");
                struct bsg_device o = {.state = BSG_DEV_NOT_BTRFS};
                bool match = false;
                for (size_t k = 0; k < _BSG_NAME_MAX; k++) {
                        const char *v = udev_device_get_property_value(dev, name_keys[k]);
                        if (!isempty(v) && !isempty(self->names[k]) && bsg_name_equal(k, v, self->names[k])) {
                                o.names[k] = self->names[k]; /* the shared name is all that counts */
                                match = true;
                        }
                }
                /* (OTHER_FS_ONLY: a device with btrfs is the inventory's) */
                if (match && devnum && devnum != self_devnum && !(other_fs_only && fs && streq(fs, "btrfs"))) {
                        if (n + 2 > size) {
                                size = 2 * size + 8;
                                struct bsg_device *nd = realloc(devs, size * sizeof(*devs));
                                devs = nd ? nd : devs;
                                dev_t *ns = nd ? realloc(stale, size * sizeof(*stale)) : NULL;
                                stale = ns ? ns : stale;
                                if (!ns) {
                                        failed = true;
                                        udev_device_unref(dev);
                                        break;
                                }
                        }
                        o.rank = rank_of_devnum(c, devnum);
                        stale[n + 1] = record_withheld(dev) ? 0 : devnum;
                        devs[n + 1] = o;
                        n++;
                }
                udev_device_unref(dev);
        }
        if (en)
                udev_enumerate_unref(en);
        if (udev)
                udev_unref(udev);
        /* SELF is devs[0]; its carriers devs[1..n] */
        if (!failed && !devs && !(devs = malloc(sizeof(*devs))))
                failed = true;
        if (!failed) {
                devs[0] = *self;
                outranked = calloc(n + 1, sizeof(*outranked));
                failed = !outranked || bsg_outranked(devs, n + 1, outranked) < 0;
        }
        if (failed)
                add_error(c, "out-of-memory");
        /* each carrier outranked and still linked is sent a change event (failed: each one still
         * linked, to decide itself); a replay sends none */
        const char *why = getenv("SYNTH_ARG_BSG");
        for (size_t i = 1; i <= n && stale && !c->dry_run && !(why && streq(why, "reannounced")); i++)
                if (stale[i] && (failed || outranked[i])) {
                        char link[PATH_MAX], devnode[300];
                        const char *name = bsg_sysname_of_devnum(stale[i], link, sizeof(link));
                        if (!name)
                                continue; /* gone meanwhile: it has no link to lose */
                        snprintf(devnode, sizeof(devnode), "/dev/%.255s", name);
                        reannounce_device(c, name, devnode, "a device of a higher rank carries one of its names");
                }
        return failed ? self->untrusted : outranked[0];
}
