/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The inventory: everything a decision needs (configuration, kernel state, block devices and their
 * superblocks, the inventory file under the run directory), merged into one table of entries, then
 * decided. I/O.
 *
 * `boot` and `status` enumerate every block device and read each once. A `udev` event reads its own
 * device once (or not at all: an `add` of a device whose inventory entry still has its identity) and
 * takes every other device from the inventory; a `remove` event reads nothing and deletes the entry.
 * `reconcile` reads nothing. Trust (what it is decided from, the anchor, every entry's) is trust.c. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cmdline.h"
#include "gate.h"
#include "skiplist.h"
#include "superblock.h"
#include "util.h"

static void config_diag(const char *filename, unsigned line, const char *message, void *userdata)
{
        log_msg("%s:%u: %s, ignoring line", filename, line, message);
        add_error(userdata, "config-invalid");
}

static void load_config(struct ctx *c)
{
        const char *path = c->config_path ? c->config_path : bsg_config_path();
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r;

        bsg_config_init(&c->config);
        r = bsg_read_file(path, 65536, &text, &len);
        if (r == -ENOENT && !c->config_path)
                return;
        if (r < 0) {
                log_msg("cannot read %s, using defaults: %s", path, strerror(-r));
                add_error(c, "config-unreadable");
                return;
        }
        bsg_config_parse(text, len, path, &c->config, config_diag, c);
}

static void load_kernel_state(struct ctx *c)
{
        int r;

        if ((r = bsg_read_file(bsg_cmdline_path(), 65536, &c->cmdline, NULL)) < 0) {
                c->cmdline = NULL;
                if (r != -ENOENT)
                        trust_input_lost(c, bsg_cmdline_path(), r);
        }
        if ((r = bsg_read_file(bsg_mountinfo_path(), 4 * 1024 * 1024, &c->mountinfo, NULL)) < 0) {
                c->mountinfo = NULL;
                if (r != -ENOENT)
                        trust_input_lost(c, bsg_mountinfo_path(), r);
        }
        if (c->mountinfo && (r = bsg_mountinfo_root_source(c->mountinfo, &c->root_source)) < 0) {
                c->root_source = NULL;
                if (r == -ENOMEM)
                        trust_input_lost(c, "the mounted root's source", r);
        }
        if (c->mountinfo && bsg_mount_sources_parse(c->mountinfo, &c->mount_sources) < 0) {
                /* no device counts as a mount's source: the policy's exemptions for mounted devices
                 * are not given (fail closed); a forget of a device in use the kernel refuses */
                log_msg("cannot index the mount sources: %s", strerror(ENOMEM));
                add_error(c, "out-of-memory");
        }
        bsg_kernel_caps(&c->caps);
        r = bsg_mounted_fsids(&c->mounted, &c->n_mounted);
        if (r < 0) {
                log_msg("cannot list mounted btrfs filesystems, assuming none: %s", strerror(-r));
                c->mounted = NULL;
                c->n_mounted = 0;
        }
        load_loader_partuuid(c);
}

static bool fsid_is_mounted(const struct ctx *c, const uint8_t fsid[BSG_UUID_SIZE])
{
        for (size_t i = 0; i < c->n_mounted; i++)
                if (memcmp(c->mounted[i], fsid, BSG_UUID_SIZE) == 0)
                        return true;
        return false;
}

/* The whole disk D is on: its sysfs path, or its parent directory's for a partition. */
static void disk_of(const struct bsg_dev *d, char *buf, size_t size)
{
        const char *slash = d->syspath ? strrchr(d->syspath, '/') : NULL;

        if (d->disk && d->data_slave) /* a stacked device: its slave's disk (devices.c) */
                snprintf(buf, size, "%s", d->disk);
        else if (!d->syspath)
                buf[0] = '\0';
        else if (d->partition && slash)
                snprintf(buf, size, "%.*s", (int)(slash - d->syspath), d->syspath);
        else
                snprintf(buf, size, "%s", d->syspath);
}

/* The disk that booted (issue 10 item 2): the active slot is on it. */
static void find_booted_disk(struct ctx *c, struct bsg_partition *parts)
{
        int i = bsg_booted_partition(c->cmdline, c->loader_partuuid, parts, c->n);
        if (i >= 0 && c->e[i].disk && c->e[i].disk[0])
                c->booted_disk = strdup(c->e[i].disk);
        /* the ESP and the root may be on two disks: the root's names the booted root too */
        i = bsg_root_partition(c->cmdline, parts, c->n);
        if (c->booted_disk && i >= 0 && c->e[i].disk && c->e[i].disk[0] && !streq(c->e[i].disk, c->booted_disk))
                c->root_disk = strdup(c->e[i].disk);
}

/* Whether E is on the disk that booted, or on the root's (true while that disk is unknown). */
static bool on_booted_disk(const struct ctx *c, const struct entry *e)
{
        if (!c->booted_disk)
                return true;
        return e->disk && (streq(e->disk, c->booted_disk) || streq_ptr(e->disk, c->root_disk));
}

/* Active slot from the config, the command line, or the mounted root; PARTS from the entries. */
static void find_active_slot(struct ctx *c)
{
        _cleanup_free_ struct bsg_partition *parts = calloc(c->n + 1, sizeof(*parts));
        _cleanup_free_ char(*uuids)[37] = calloc(c->n + 1, sizeof(*uuids));

        if (!parts || !uuids)
                return;
        for (size_t i = 0; i < c->n; i++) {
                const struct entry *e = &c->e[i];
                parts[i].devnode = e->devnode;
                parts[i].partlabel = e->partlabel;
                parts[i].partuuid = e->partuuid;
                parts[i].untrusted = e->pd.untrusted;
                parts[i].disk = e->disk && e->disk[0] ? e->disk : NULL;
                if (e->pd.state == BSG_DEV_BTRFS) {
                        bsg_uuid_format(e->pd.fsid, uuids[i]);
                        parts[i].fsuuid = uuids[i];
                }
        }
        /* root=/dev/mapper/NAME (or the mounted root's source so named) is another path of one of
         * the devices: found by device number, never by the name alone */
        _cleanup_free_ char *root_arg = NULL;
        const char *paths[2] = {NULL, c->root_source};
        if (c->cmdline && bsg_cmdline_get(c->cmdline, strlen(c->cmdline), "root", &root_arg) >= 0)
                paths[0] = root_arg;
        for (size_t k = 0; k < ELEMENTSOF(paths); k++) {
                struct stat st;
                if (!paths[k] || paths[k][0] != '/')
                        continue;
                if (stat(paths[k], &st) == 0 && S_ISBLK(st.st_mode)) {
                        for (size_t i = 0; i < c->n; i++)
                                if (c->e[i].devnum == st.st_rdev && !streq(paths[k], c->e[i].devnode))
                                        parts[i].alias = paths[k];
                } else if (strncmp(paths[k], "/dev/mapper/", 12) == 0 && paths[k][12]) {
                        /* udev makes the /dev/mapper link at the end of the dm device's own event:
                         * that event finds its name in sysfs (dm/name) */
                        for (size_t i = 0; i < c->n; i++) {
                                char name[256];
                                if (c->e[i].devnum && bsg_dm_name_of_devnum(c->e[i].devnum, name, sizeof(name)) &&
                                    streq(name, paths[k] + 12))
                                        parts[i].alias = paths[k];
                        }
                }
        }
        c->have_active_slot = bsg_active_slot(&c->config, c->cmdline, parts, c->n, c->root_source,
                                              c->active_slot, &c->slot_source) >= 0;
        /* SteamOS's `self` partset (written from the ESP that booted) outranks root=, steamos.efi=
         * label suffixes and the mounted root; the config and explicit slot parameters outrank it */
        const char *set;
        if (bsg_partsets_active(&c->partsets, &set) >= 0 &&
            (!c->have_active_slot || c->slot_source == BSG_SLOT_SOURCE_STEAMOS ||
             c->slot_source == BSG_SLOT_SOURCE_ROOT || c->slot_source == BSG_SLOT_SOURCE_MOUNTED_ROOT) &&
            bsg_slot_normalize(set, c->active_slot) >= 0) {
                c->have_active_slot = true;
                c->slot_source = BSG_SLOT_SOURCE_PARTSETS;
        }
        find_booted_disk(c, parts);
}

static void entry_from_record(struct entry *e, const struct bsg_record *rec)
{
        switch (rec->kind) {
        case BSG_RECORD_BTRFS:
                e->pd.state = BSG_DEV_BTRFS;
                memcpy(e->pd.fsid, rec->fsid, BSG_UUID_SIZE);
                memcpy(e->pd.dev_uuid, rec->dev_uuid, BSG_UUID_SIZE);
                e->pd.storage_id = rec->storage_id;
                e->pd.devid = rec->devid;
                e->pd.num_devices = rec->num_devices;
                e->pd.seeding = rec->seeding;
                e->pd.fsid_changing = rec->fsid_changing;
                e->pd.metadata_uuid_feature = rec->metadata_uuid_feature;
                memcpy(e->pd.metadata_uuid, rec->metadata_uuid, BSG_UUID_SIZE);
                e->generation = rec->generation;
                break;
        case BSG_RECORD_INVALID:
                e->pd.state = BSG_DEV_INVALID;
                break;
        case BSG_RECORD_UNKNOWN:
                e->pd.state = BSG_DEV_UNKNOWN;
                break;
        default:
                e->pd.state = BSG_DEV_NOT_BTRFS;
                break;
        }
        /* as the read that made the record found it: a verdict does not depend on whether this run
         * read the device */
        e->pd.partitioned_disk = rec->partitioned && (e->pd.state == BSG_DEV_BTRFS || e->pd.state == BSG_DEV_INVALID);
        e->pd.zoned = e->pd.zoned || rec->zoned;
        e->from_record = true;
}

/* The record says of the identity what the superblock SB says: fsid-change flags, METADATA_UUID and
 * metadata_uuid (issue 18 case 1). */
static bool same_identity_bits(const struct bsg_record *rec, const struct bsg_superblock *sb)
{
        bool mu = bsg_superblock_has_metadata_uuid(sb);
        return rec->fsid_changing == bsg_superblock_fsid_changing(sb) && rec->metadata_uuid_feature == mu &&
               (!mu || memcmp(rec->metadata_uuid, sb->metadata_uuid, BSG_UUID_SIZE) == 0);
}

/* Whether REC (the inventory's) describes the device D enumerated or stat()ed now. */
static bool record_is_of(const struct bsg_record *rec, const struct bsg_dev *d)
{
        return rec->devnum == d->devnum && (!rec->diskseq || !d->diskseq || rec->diskseq == d->diskseq) &&
               (!rec->size || !d->size || rec->size == d->size);
}

static void rauc_diag(unsigned line, const char *message, void *userdata)
{
        struct ctx *c = userdata;
        log_msg("%s:%u: %s", c->config.rauc_system_conf, line, message);
}

/* Slots from the platform (issue 12): RAUC's system.conf, SteamOS's partset files. Missing files are
 * no error; a broken one is said and left out. */
static void load_platform_slots(struct ctx *c)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        DIR *dir;
        struct dirent *de;

        /* left at its default, system.conf is found where RAUC finds it (the first that exists);
         * messages then name the file read */
        if (streq(c->config.rauc_system_conf, BSG_RAUC_SYSTEM_CONF_DEFAULT)) {
                static const char *const search[] = BSG_RAUC_SYSTEM_CONF_SEARCH;
                for (size_t i = 0; i < sizeof(search) / sizeof(search[0]); i++)
                        if (access(search[i], F_OK) == 0) {
                                snprintf(c->config.rauc_system_conf, sizeof(c->config.rauc_system_conf), "%s",
                                         search[i]);
                                break;
                        }
        }
        int r = isempty(c->config.rauc_system_conf) ? -ENOENT
                                                      : bsg_read_file(c->config.rauc_system_conf, 65536, &text, &len);
        if (r < 0 && r != -ENOENT)
                trust_input_lost(c, c->config.rauc_system_conf, r);
        if (r >= 0) {
                if ((r = bsg_rauc_parse(text, len, &c->rauc, rauc_diag, c)) >= 0 &&
                    !(c->rauc_rdev = calloc(c->rauc.n + 1, sizeof(dev_t))))
                        r = -ENOMEM;
                if (r == -ENOMEM)
                        trust_input_lost(c, c->config.rauc_system_conf, r);
                for (size_t i = 0; c->rauc_rdev && i < c->rauc.n; i++) {
                        struct stat st;
                        if (stat(c->rauc.v[i].device, &st) == 0 && S_ISBLK(st.st_mode))
                                c->rauc_rdev[i] = st.st_rdev;
                }
        }
        if (isempty(c->config.steamos_partsets) || !(dir = opendir(c->config.steamos_partsets)))
                return;
        while ((de = readdir(dir))) {
                char path[PATH_MAX];
                _cleanup_free_ char *body = NULL;
                if (de->d_name[0] == '.' ||
                    (size_t)snprintf(path, sizeof(path), "%s/%s", c->config.steamos_partsets, de->d_name) >= sizeof(path) ||
                    bsg_read_file(path, 65536, &body, &len) < 0)
                        continue;
                if (bsg_partsets_add(&c->partsets, de->d_name, body, len) == -ENOMEM)
                        break;
        }
        closedir(dir);
}

/* The slot of D from the platform: RAUC (device= names its device number; slot = bootname, base =
 * slot class), else SteamOS partsets (its PARTUUID in one ordinary set; slot = set, base = name).
 * Returns 1 when one of them names it. */
static int platform_slot(const struct ctx *c, struct entry *e)
{
        const char *set, *name;

        for (size_t i = 0; c->rauc_rdev && i < c->rauc.n; i++) {
                const struct bsg_rauc_slot *s = &c->rauc.v[i];
                if (e->devnum && c->rauc_rdev[i] == e->devnum && bsg_slot_normalize(s->bootname, e->slot) >= 0) {
                        snprintf(e->base, sizeof(e->base), "%s", s->class_);
                        e->slot_scheme = "rauc";
                        return 1;
                }
        }
        if (bsg_partsets_slot_of(&c->partsets, e->partuuid, &set, &name) > 0 &&
            bsg_slot_normalize(set, e->slot) >= 0) {
                snprintf(e->base, sizeof(e->base), "%s", name);
                e->slot_scheme = "partsets";
                return 1;
        }
        return 0;
}

/* What the security predicates need of a read device (issue 10 items 1 and 8). */
static void security_fields(struct entry *e, const struct bsg_dev *d)
{
        memcpy(e->pd.dev_uuid, d->sb.dev_uuid, BSG_UUID_SIZE);
        e->pd.fsid_changing = bsg_superblock_fsid_changing(&d->sb);
        e->pd.metadata_uuid_feature = bsg_superblock_has_metadata_uuid(&d->sb);
        if (e->pd.metadata_uuid_feature)
                memcpy(e->pd.metadata_uuid, d->sb.metadata_uuid, BSG_UUID_SIZE);
        e->pd.storage_id = d->storage_id;
        e->pd.partitioned_disk = d->partitioned;
}

/* bsg_mounted_member() of a device known only from its record: its kernel name from its number. */
static bool mounted_member_by_devnum(dev_t devnum)
{
        char link[PATH_MAX];
        const char *name = bsg_sysname_of_devnum(devnum, link, sizeof(link));
        return name && bsg_mounted_member(name);
}

static int entries_build(struct ctx *c)
{
        c->e = calloc(c->devs.n + c->state.n + 1, sizeof(struct entry));
        if (!c->e)
                return -ENOMEM;
        c->n = 0;
        for (size_t i = 0; i < c->devs.n; i++) {
                struct bsg_dev *d = &c->devs.v[i];
                struct entry *e = &c->e[c->n++];
                struct bsg_record *rec = d->devnum ? bsg_state_find(&c->state, d->devnum) : NULL;
                bool read = d->read_result >= 0 && !d->skip_read;

                if (rec && (!record_is_of(rec, d) ||
                            (read && (d->parse_result != 0 || rec->kind != BSG_RECORD_BTRFS ||
                                      memcmp(rec->fsid, d->sb.fsid, BSG_UUID_SIZE) != 0 ||
                                      !same_identity_bits(rec, &d->sb) || rec->devid != d->sb.devid)))) {
                        /* the record is of another device that had this number (media replugged):
                         * neither its label nor its registration belong to this one */
                        log_debug("%s: inventory entry of an earlier device with this number dropped", d->devnode);
                        bsg_state_remove(&c->state, d->devnum);
                        rec = NULL;
                }
                e->devnode = d->devnode;
                e->devnum = d->devnum;
                e->dev = (ssize_t)i;
                e->pd.devnode = d->devnode;
                /* its class now, or learned not fixed by an earlier event (its ID_BUS): the record
                 * keeps it, so the same stick is untrusted in the next whole-set decision; trusted_disk=
                 * and the anchor outrank the class (trust is decided below, once the anchor is known) */
                e->trust = (struct bsg_trust_facts){
                        .devnode = d->devnode,
                        .devnum = d->devnum,
                        .class_known = d->class_known,
                        .class_fixed = d->class_fixed && !(rec && rec->class_known && rec->untrusted),
                        .class_why = d->class_fixed && rec && rec->class_known && rec->untrusted
                                             ? "USB or FireWire (ID_BUS of an earlier event)"
                                             : d->class_why,
                        .stacked = d->stacked,
                };
                e->pd.zoned = d->zoned;
                e->pd.path_ok = bsg_skiplist_path_ok(d->devnode);
                e->pd.held = d->held;
                e->unanswered = !d->skip_read && d->read_result < 0 && d->read_result != -ENODATA;
                if (d->parse_result == 0) {
                        e->pd.state = BSG_DEV_BTRFS;
                        memcpy(e->pd.fsid, d->sb.fsid, BSG_UUID_SIZE);
                        e->pd.devid = d->sb.devid;
                        e->pd.num_devices = d->sb.num_devices;
                        e->pd.seeding = bsg_superblock_is_seed(&d->sb);
                        e->generation = d->sb.generation;
                        security_fields(e, d);
                } else if ((d->read_result < 0 || d->skip_read) && rec && !d->skip_read_why)
                        /* not read now (an `add` whose entry is current), or unreadable now (timeout,
                         * EIO): what it was when it was last read */
                        entry_from_record(e, rec);
                else if (d->read_result == -ETIMEDOUT || (d->skip_read && !d->skip_read_why))
                        e->pd.state = BSG_DEV_UNKNOWN; /* nothing known: it may be anyone's twin */
                else if (e->unanswered && d->read_result != -ENOENT && d->read_result != -ENXIO &&
                         d->read_result != -ENODEV && d->read_result != -ENOMEDIUM && d->read_result != -EISDIR)
                        /* unreadable now and never read before (EIO, EACCES...): a device that fails
                         * our read may still answer the kernel's, so it is listed (fail closed) */
                        e->pd.state = BSG_DEV_UNREADABLE;
                else
                        e->pd.state = d->parse_result == BSG_SB_INVALID ? BSG_DEV_INVALID : BSG_DEV_NOT_BTRFS;
                if (!d->partlabel && rec && rec->partlabel) {
                        /* the label an earlier event of this device gave (udev env), not visible in sysfs */
                        d->partlabel = strdup(rec->partlabel);
                        if (!d->partlabel)
                                return -ENOMEM;
                }
                if (!d->partuuid && rec && rec->partuuid) {
                        d->partuuid = strdup(rec->partuuid);
                        if (!d->partuuid)
                                return -ENOMEM;
                }
                e->partlabel = d->partlabel;
                e->partuuid = d->partuuid;
                if (!d->disk) {
                        char disk[PATH_MAX];
                        disk_of(d, disk, sizeof(disk));
                        if (disk[0] && !(d->disk = strdup(disk)))
                                return -ENOMEM;
                        if (!d->disk && rec && rec->disk && !(d->disk = strdup(rec->disk)))
                                return -ENOMEM;
                }
                e->disk = d->disk;
                e->trust.disk = d->disk;
                /* the enumeration marks partitioned disks; a device an event added alone is asked
                 * of sysfs (its own event must not scan a stale whole-disk superblock either) */
                e->pd.partitioned_disk = e->pd.partitioned_disk || d->partitioned ||
                                         (!d->partition && d->devnum &&
                                          (e->pd.state == BSG_DEV_BTRFS || e->pd.state == BSG_DEV_INVALID) &&
                                          bsg_devnum_partitioned_disk(d->devnum));
        }
        /* the other devices of the inventory */
        for (size_t k = 0; k < c->state.n; k++) {
                struct bsg_record *rec = &c->state.v[k];
                bool known = false;
                for (size_t i = 0; i < c->devs.n && !known; i++)
                        known = c->devs.v[i].devnum == rec->devnum;
                if (known)
                        continue;
                struct entry *e = &c->e[c->n++];
                e->devnode = rec->devnode;
                e->devnum = rec->devnum;
                e->dev = -1;
                e->pd.devnode = rec->devnode;
                e->pd.path_ok = bsg_skiplist_path_ok(rec->devnode);
                /* the device at this number now is another one (another diskseq: replaced without a
                 * remove event seen): nothing of the record is its, not its class nor its superblock;
                 * its class is asked of sysfs, its contents are unknown (listed, never scanned) */
                uint64_t seq = rec->diskseq ? bsg_devnum_diskseq(rec->devnum) : 0;
                bool replaced = seq && seq != rec->diskseq;
                if (replaced) {
                        log_debug("%s: diskseq %" PRIu64 " in sysfs, %" PRIu64 " in the inventory: another "
                                  "device, its record not used",
                                  rec->devnode, seq, rec->diskseq);
                        rec->class_known = false;
                }
                /* a record of an older helper has no class: asked of sysfs once, and kept */
                if (!rec->class_known) {
                        bool fixed, stacked;
                        const char *why;
                        if (bsg_devnum_class(rec->devnum, &fixed, &why, &stacked) == 0) {
                                rec->class_known = true;
                                /* what it said before (its whole trust, ID_BUS included) only narrows it */
                                /* a replaced device's only from sysfs */
                                rec->untrusted = (rec->untrusted && !replaced) || !fixed;
                                rec->stacked = stacked;
                                c->state.changed = true;
                        }
                }
                /* its class as its own read found it; its trust is this run's (the configuration and
                 * the boot may have changed since the record was made): decided below */
                e->trust = (struct bsg_trust_facts){
                        .devnode = rec->devnode,
                        .devnum = rec->devnum,
                        .disk = rec->disk,
                        .class_known = rec->class_known,
                        .class_fixed = rec->class_known && !rec->untrusted,
                        .class_why = rec->class_known && rec->untrusted ? "not fixed storage (when it was read)" : NULL,
                        .stacked = rec->stacked,
                };
                e->partlabel = rec->partlabel;
                e->partuuid = rec->partuuid;
                e->disk = rec->disk;
                entry_from_record(e, rec);
                if (replaced) {
                        /* fail closed: not the recorded superblock, no name of the earlier device;
                         * listed, never scanned, and nobody else put in doubt (its own event reads it);
                         * no media now (a detached loop device): nothing to list */
                        e->pd.state = bsg_devnum_size(rec->devnum) ? BSG_DEV_UNREADABLE : BSG_DEV_NOT_BTRFS;
                        e->partlabel = e->partuuid = NULL;
                }
                /* read before a device was stacked on it: now its holder's */
                e->pd.held = (e->pd.state == BSG_DEV_BTRFS || e->pd.state == BSG_DEV_INVALID) &&
                             bsg_devnum_held(rec->devnum);
        }
        decide_trust(c);
        find_active_slot(c); /* after the labels from the inventory are in */
        for (size_t i = 0; i < c->n; i++) {
                struct entry *e = &c->e[i];
                /* a hot-pluggable device never has a slot (issue 10 item 2) */
                if (!e->pd.untrusted && platform_slot(c, e))
                        e->has_slot = true;
                else if (!e->pd.untrusted && bsg_slot_from_label(e->partlabel, &c->config, e->slot, e->base) > 0) {
                        e->has_slot = true;
                        e->slot_scheme = "label";
                }
                e->pd.slot_active = e->has_slot && c->have_active_slot && streq(e->slot, c->active_slot) &&
                                    on_booted_disk(c, e);
                if (c->doubt_all && e->pd.state == BSG_DEV_BTRFS)
                        e->pd.state = BSG_DEV_UNKNOWN;
                if (e->pd.state == BSG_DEV_BTRFS)
                        e->pd.fsid_mounted = fsid_is_mounted(c, e->pd.fsid);
                /* read now or known from its record alike (a verdict must not depend on which) */
                if (e->pd.fsid_mounted)
                        e->pd.mounted_member = e->dev >= 0 ? bsg_mounted_member(c->devs.v[e->dev].sysname)
                                                           : mounted_member_by_devnum(e->devnum);
                /* the hijack guard and the forgets ask: by identity (the mount opened this block
                 * device: /dev/root, /dev/mapper/x for dm-N), else by the name mountinfo shows */
                if (e->pd.state == BSG_DEV_BTRFS)
                        e->pd.self_mounted = e->pd.mounted_member ||
                                             bsg_mount_sources_has(&c->mount_sources, e->devnode);
                struct bsg_record *rec = bsg_state_find(&c->state, e->devnum);
                e->registered = rec && rec->registered;
                e->forget_pending = e->registered && rec->forget_pending;
        }
        return 0;
}

/* The inventory record of what D's read found, or -ENODATA when the read told nothing (not read,
 * failed with nothing known before). */
static int record_of_read(const struct bsg_dev *d, const struct entry *e, bool registered, struct bsg_record *ret)
{
        struct bsg_record rec = {
                .devnum = d->devnum,
                .diskseq = d->diskseq,
                .size = d->size,
                .untrusted = !e->trust.class_fixed,
                .class_known = e->trust.class_known,
                .stacked = e->trust.stacked,
                .devnode = d->devnode,
                .partlabel = d->partlabel,
                .partuuid = d->partuuid,
                .disk = d->disk,
                .registered = registered,
                .partitioned = e->pd.partitioned_disk,
                .zoned = e->pd.zoned,
        };

        if (!d->devnum)
                return -ENODATA;
        if (e->pd.state == BSG_DEV_UNKNOWN && d->read_result == -ETIMEDOUT)
                rec.kind = BSG_RECORD_UNKNOWN;
        else if (d->skip_read && d->skip_read_why && streq(d->skip_read_why, "no media"))
                rec.kind = BSG_RECORD_NOT_BTRFS;
        else if (d->read_result < 0 || d->skip_read)
                return -ENODATA;
        else if (d->parse_result == 0) {
                rec.kind = BSG_RECORD_BTRFS;
                memcpy(rec.fsid, d->sb.fsid, BSG_UUID_SIZE);
                memcpy(rec.dev_uuid, d->sb.dev_uuid, BSG_UUID_SIZE);
                rec.storage_id = d->storage_id;
                rec.devid = d->sb.devid;
                rec.num_devices = d->sb.num_devices;
                rec.generation = d->sb.generation;
                rec.seeding = bsg_superblock_is_seed(&d->sb);
                rec.fsid_changing = bsg_superblock_fsid_changing(&d->sb);
                rec.metadata_uuid_feature = bsg_superblock_has_metadata_uuid(&d->sb);
                if (rec.metadata_uuid_feature)
                        memcpy(rec.metadata_uuid, d->sb.metadata_uuid, BSG_UUID_SIZE);
        } else
                rec.kind = d->parse_result == BSG_SB_INVALID ? BSG_RECORD_INVALID : BSG_RECORD_NOT_BTRFS;
        *ret = rec;
        return 0;
}

/* An entry taken from its record (an `add` whose entry is current) still brings what its event
 * knows that the record lacks: the partition label and UUID (a `boot` before udev's database
 * existed could not see the UUID, and root=PARTUUID= needs it for the active slot). */
static int record_refresh_names(struct bsg_state *state, struct bsg_record *rec, const struct bsg_dev *d,
                                const struct entry *e)
{
        /* and what it learned of the device's class (ID_BUS of its event) */
        if (e->trust.class_known &&
            (!rec->class_known || rec->untrusted != !e->trust.class_fixed || rec->stacked != e->trust.stacked)) {
                rec->class_known = true;
                rec->untrusted = !e->trust.class_fixed;
                rec->stacked = e->trust.stacked;
                state->changed = true;
        }
        char **fields[] = {&rec->partlabel, &rec->partuuid};
        const char *now[] = {d->partlabel, d->partuuid};

        for (size_t k = 0; k < ELEMENTSOF(fields); k++) {
                if (isempty(now[k]) || streq_ptr(*fields[k], now[k]))
                        continue;
                char *s = strdup(now[k]);
                if (!s)
                        return -ENOMEM;
                free(*fields[k]);
                *fields[k] = s;
                state->changed = true;
        }
        return 0;
}

void record_all(struct ctx *c)
{
        for (size_t i = 0; i < c->n; i++) {
                struct entry *e = &c->e[i];
                struct bsg_record rec;

                if (e->dev < 0)
                        continue;
                struct bsg_record *old = bsg_state_find(&c->state, e->devnum);
                if (e->from_record) {
                        if (old && record_refresh_names(&c->state, old, &c->devs.v[e->dev], e) < 0)
                                add_error(c, "out-of-memory");
                        continue;
                }
                if (record_of_read(&c->devs.v[e->dev], e, old && old->registered, &rec) < 0)
                        continue;
                rec.forget_pending = rec.registered && old->forget_pending;
                if (bsg_state_put(&c->state, &rec) < 0)
                        add_error(c, "out-of-memory");
        }
}

/* Whether the inventory text TEXT (read without the lock) has an entry for D with D's identity: an
 * `add` event of such a device needs no read (coldplug after `boot`). The entry is taken again under
 * the lock, and if it went in between the device is in doubt. */
static bool inventory_has(const char *text, const struct bsg_dev *d)
{
        struct bsg_record rec;
        bool found = false;

        if (!d->devnum || !text)
                return false;
        const char *p = bsg_state_text_find(text, d->devnum);
        if (!p)
                return false;
        const char *end = strchrnul(p, '\n');
        _cleanup_free_ char *line = strndup(p, (size_t)(end - p));
        if (!line || bsg_record_parse(line, &rec) < 0)
                return false;
        found = record_is_of(&rec, d) && rec.kind != BSG_RECORD_UNKNOWN;
        bsg_record_done(&rec);
        return found;
}

/* The devices sysfs has and the inventory text does not (their events have not run yet: coldplug
 * without `boot`, a disk whose partitions appear together, a hot-plugged twin) are added to the
 * devices this event reads, so that a twin is known before its own event arrives whatever the order.
 * Known devices are not opened: in the steady state this is one readdir. */
static void add_unseen(struct ctx *c, const char *text, dev_t target)
{
        _cleanup_free_ dev_t *sys = NULL, *known = NULL;
        size_t n_sys = 0, n_known = 0, cap = 0;

        int r = bsg_sysfs_devnums(&sys, &n_sys);
        if (r == -ENOENT)
                return; /* no /sys/dev/block: nothing else to know of */
        if (r < 0) {
                /* an unseen twin may be among them: nothing can be unique */
                log_msg("cannot list the block devices, every btrfs device is in doubt: %s", strerror(-r));
                add_error(c, "enumerate-failed");
                c->doubt_all = true;
                return;
        }
        /* the device numbers the inventory has: the first field of each line, once */
        for (const char *p = text; p && *p;) {
                unsigned maj, min;
                /* not sscanf(): it measures the whole rest of the file at every line */
                if (*p != '#' && bsg_parse_devnum(p, &maj, &min, NULL) == 0) {
                        if (n_known == cap) {
                                dev_t *nv = realloc(known, (cap = cap ? 2 * cap : 256) * sizeof(*nv));
                                if (!nv) {
                                        add_error(c, "out-of-memory");
                                        c->doubt_all = true;
                                        return;
                                }
                                known = nv;
                        }
                        known[n_known++] = makedev(maj, min);
                }
                p = strchr(p, '\n');
                p = p ? p + 1 : NULL;
        }
        /* bsg_state_save() writes them sorted: sort only a file edited by hand */
        bool sorted = true;
        for (size_t i = 1; i < n_known && sorted; i++)
                sorted = known[i - 1] < known[i];
        if (!sorted)
                qsort(known, n_known, sizeof(*known), bsg_devnum_compare);
        /* the unseen ones, in device-number order (usually none: sort only those) */
        size_t n_unseen = 0;
        for (size_t i = 0; i < n_sys; i++)
                if (sys[i] != target && !(n_known && bsearch(&sys[i], known, n_known, sizeof(*known), bsg_devnum_compare)))
                        sys[n_unseen++] = sys[i];
        if (n_unseen)
                qsort(sys, n_unseen, sizeof(*sys), bsg_devnum_compare);
        for (size_t i = 0; i < n_unseen; i++)
                if (bsg_devs_add_devnum(&c->devs, sys[i]) == -ENOMEM) {
                        add_error(c, "out-of-memory");
                        c->doubt_all = true;
                }
}

static void log_reads(struct ctx *c)
{
        for (size_t i = 0; i < c->devs.n; i++) {
                const struct bsg_dev *d = &c->devs.v[i];
                if (d->read_result == -ETIMEDOUT)
                        log_msg("%s: superblock read did not finish within the timeout, ignoring", d->devnode);
                else if (d->read_result == -ENOMEDIUM)
                        log_debug("%s: superblock read failed: %s", d->devnode, strerror(-d->read_result));
                else if (d->read_result < 0 && d->read_result != -ENODATA)
                        log_msg("%s: superblock read failed: %s", d->devnode, strerror(-d->read_result));
                if (d->parse_result == BSG_SB_INVALID)
                        log_msg("%s: invalid btrfs superblock: %s", d->devnode, d->problem);
                if (d->parse_result == 0 && d->sb.csum_state == BSG_CSUM_NOT_VERIFIED)
                        log_debug("%s: %s checksum not verified", d->devnode, bsg_csum_type_name(d->sb.csum_type));
        }
}

static int take_lock(struct ctx *c)
{
        c->lock_deadline = bsg_now_usec() + (uint64_t)(c->lock_timeout * 1e6);
        int fd = bsg_state_lock(bsg_rundir_path(), c->lock_deadline);
        if (fd < 0) {
                log_msg("cannot take the lock in %s: %s", bsg_rundir_path(), strerror(-fd));
                add_error(c, fd == -ETIMEDOUT ? "lock-timeout" : "lock-failed");
        }
        return fd;
}

/* Loads the inventory; with the lock, folds in what events that could not take it left. */
static void load_inventory(struct ctx *c, bool locked)
{
        int r = bsg_state_load(bsg_rundir_path(), &c->state);
        if (r < 0) {
                log_msg("cannot load the inventory, every btrfs device is in doubt: %s", strerror(-r));
                add_error(c, "state-failed");
                c->state = (struct bsg_state){.changed = true}; /* replaced by what is known now */
                c->doubt_all = true;
        }
        if (locked) {
                r = bsg_pending_apply(bsg_rundir_path(), &c->state);
                if (r > 0)
                        log_debug("%d lock-timeout marker(s) folded into the inventory", r);
        }
}

/* The name is the event's device's now: an entry of another number under it is stale. */
static void drop_stale_names(struct ctx *c, const struct bsg_dev *d)
{
        for (size_t k = c->state.n; k > 0; k--)
                if (c->state.v[k - 1].devnum != d->devnum && streq(c->state.v[k - 1].devnode, d->devnode))
                        bsg_state_remove(&c->state, c->state.v[k - 1].devnum);
}

/* The event's device: read it (unless its entry is current, or it is gone), lock, merge. */
static int gather_event(struct ctx *c, ssize_t *ret_target, int *ret_lock_fd)
{
        int r, lock_fd = -1;
        ssize_t target;

        char path[4200];
        snprintf(path, sizeof(path), "%s/devices", bsg_rundir_path());
        bool full = c->action != UDEV_ACTION_REMOVE && access(path, F_OK) < 0 && errno == ENOENT;

        if (full) {
                /* no inventory yet (no `boot` ran): this event makes it, reading every device once, so
                 * that a twin is known before its own event arrives */
                r = bsg_devs_enumerate(&c->devs);
                if (r < 0) {
                        /* a twin may be among the devices not enumerated: nothing can be unique */
                        log_msg("cannot enumerate block devices, every btrfs device is in doubt: %s", strerror(-r));
                        add_error(c, "enumerate-failed");
                        c->devs = (struct bsg_devs){0};
                        c->doubt_all = true;
                }
                r = bsg_devs_find_or_add(&c->devs, c->devnode);
                mark_table_probes(c);
        } else
                r = bsg_devs_add_event(&c->devs, c->devnode);
        if (r < 0)
                return r;
        target = r;
        struct bsg_dev *d = &c->devs.v[target];
        if (c->action == UDEV_ACTION_REMOVE) {
                d->skip_read = true;
                d->skip_read_why = "removed";
        } else if (!full) {
                _cleanup_free_ char *text = NULL;
                if (bsg_read_file(path, STATE_TEXT_MAX, &text, NULL) < 0)
                        text = NULL;
                if (c->action == UDEV_ACTION_ADD && !d->skip_read && inventory_has(text, d)) {
                        d->skip_read = true; /* current in the inventory: no read */
                        d->skip_read_why = NULL;
                }
                dev_t devnum = d->devnum;
                add_unseen(c, text, devnum);
                d = &c->devs.v[target]; /* the array may have moved */
        }
        r = bsg_devs_read_all(&c->devs, (size_t)target, c->read_deadline);
        if (r < 0) {
                log_msg("cannot read the superblock: %s", strerror(-r));
                add_error(c, "read-failed");
        }
        bsg_devs_add_table_partuuids(&c->devs);
        if (full)
                bsg_devs_add_udev_properties(&c->devs, c->cmdline && strstr(c->cmdline, "PARTUUID="));
        else if (d->parse_result == 0 && d->partition && !d->partlabel)
                bsg_devs_add_udev_properties(&c->devs, false);
        bsg_devs_add_storage_ids(&c->devs);
        bsg_devs_set_class(&c->devs);
        d = &c->devs.v[target];
        log_reads(c);
        if (!c->dry_run)
                lock_fd = take_lock(c);
        load_inventory(c, lock_fd >= 0);
        drop_stale_names(c, d);
        if (c->action == UDEV_ACTION_REMOVE) {
                dev_t devnum = d->devnum;
                /* the removed device's identity for its marker: the event's DISKSEQ (a disk's), else
                 * what the inventory read here says (udev runs one device's events in order: the
                 * replug's `add` comes after this) */
                const char *env_seq = getenv("DISKSEQ");
                const struct bsg_record *old = bsg_state_find(&c->state, devnum);
                uint64_t diskseq = !isempty(env_seq) ? strtoull(env_seq, NULL, 10) : old ? old->diskseq : 0;
                bsg_state_remove(&c->state, devnum);
                if (lock_fd < 0 && !c->dry_run && devnum &&
                    bsg_pending_write_remove(bsg_rundir_path(), devnum, diskseq) < 0)
                        add_error(c, "marker-failed");
                bsg_devs_free(&c->devs);
                target = -1;
        }
        r = entries_build(c);
        if (r < 0) {
                if (lock_fd >= 0)
                        close(lock_fd);
                return r;
        }
        if (lock_fd < 0 && !c->dry_run && target >= 0) {
                /* what this event read is not lost: the next holder of the lock folds it in */
                struct bsg_record rec;
                for (size_t i = 0; i < c->n; i++)
                        if (c->e[i].dev == target && !c->e[i].from_record &&
                            record_of_read(d, &c->e[i], false, &rec) >= 0 &&
                            bsg_pending_write(bsg_rundir_path(), d->devnum, &rec) < 0)
                                add_error(c, "marker-failed");
        }
        *ret_target = target;
        *ret_lock_fd = lock_fd;
        return 0;
}

/* Every device: enumerate and read each once (boot, status), or nothing (reconcile). */
static int gather_all(struct ctx *c, int *ret_lock_fd)
{
        int r, lock_fd = -1;

        if (c->verb != VERB_RECONCILE) {
                r = bsg_devs_enumerate(&c->devs);
                if (r < 0) {
                        log_msg("cannot enumerate block devices, every btrfs device is in doubt: %s", strerror(-r));
                        add_error(c, "enumerate-failed");
                        c->devs = (struct bsg_devs){0};
                        c->doubt_all = true;
                }
                mark_table_probes(c);
                r = bsg_devs_read_all(&c->devs, SIZE_MAX, c->read_deadline);
                if (r < 0) {
                        log_msg("cannot read superblocks: %s", strerror(-r));
                        add_error(c, "read-failed");
                }
                bsg_devs_add_table_partuuids(&c->devs);
                /* labels and bus of the btrfs devices from the udev database; of every device when
                 * root= names a partition by PARTUUID, which only the database knows */
                bsg_devs_add_udev_properties(&c->devs, c->cmdline && strstr(c->cmdline, "PARTUUID="));
                bsg_devs_add_storage_ids(&c->devs);
                bsg_devs_set_class(&c->devs);
                log_reads(c);
        }
        if (!c->dry_run && c->verb != VERB_STATUS)
                lock_fd = take_lock(c);
        load_inventory(c, lock_fd >= 0);
        bsg_state_drop_gone(&c->state);
        r = entries_build(c);
        if (r < 0) {
                if (lock_fd >= 0)
                        close(lock_fd);
                return r;
        }
        *ret_lock_fd = lock_fd;
        return 0;
}

int gather_trust(struct ctx *c)
{
        int r;

        load_config(c);
        load_trusted_disks(c);
        load_kernel_state(c);
        load_platform_slots(c);
        r = bsg_devs_add_event(&c->devs, c->devnode);
        if (r < 0)
                return r;
        bsg_devs_set_class(&c->devs);
        /* the other devices from the inventory (without the lock: nothing is written) */
        load_inventory(c, false);
        ssize_t target = r;
        r = entries_build(c);
        if (r < 0)
                return r;
        for (size_t i = 0; i < c->n; i++)
                if (c->e[i].dev == target)
                        return (int)i;
        return -ENODEV;
}

int gather(struct ctx *c, ssize_t *ret_target, int *ret_lock_fd)
{
        ssize_t target = -1;
        int r, lock_fd = -1;

        load_config(c);
        load_trusted_disks(c);
        load_kernel_state(c);
        load_platform_slots(c);
        if (c->verb == VERB_UDEV)
                r = gather_event(c, &target, &lock_fd);
        else
                r = gather_all(c, &lock_fd);
        if (r < 0)
                return r;
        plan_decide(c->e, c->n, c->config.clone_policy);
        const struct entry *t = NULL;
        for (size_t i = 0; i < c->n && target >= 0; i++)
                if (c->e[i].dev == target)
                        t = &c->e[i];
        for (size_t i = 0; i < c->n && t; i++) {
                struct entry *e = &c->e[i];
                e->target_group = e == t || same_filesystem(&e->pd, &t->pd);
        }
        *ret_target = target;
        *ret_lock_fd = lock_fd;
        return 0;
}
