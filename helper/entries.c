/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The table of entries, one per device the decision is over: built from the devices read (or only
 * enumerated) in this run and from the inventory's records of the others. A record stands for a
 * device only while it describes it (record_is_of(), same_identity_bits()); a device not read now is
 * what its record says (entry_from_record()). Then every entry's trust (trust.c), its slot (active.c)
 * and what the mounts say of it. Of the system it asks only sysfs, for what a record cannot say now
 * (a device replaced, held, a mounted filesystem's member, the class of a record that has none); the
 * inventory file itself (load, lock, records written back) is inventory.c. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "skiplist.h"
#include "superblock.h"
#include "util.h"

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
bool record_is_of(const struct bsg_record *rec, const struct bsg_dev *d)
{
        return rec->devnum == d->devnum && (!rec->diskseq || !d->diskseq || rec->diskseq == d->diskseq) &&
               (!rec->size || !d->size || rec->size == d->size);
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
}

/* bsg_mounted_member() of a device known only from its record: its kernel name from its number. */
static bool mounted_member_by_devnum(dev_t devnum)
{
        char link[PATH_MAX];
        const char *name = bsg_sysname_of_devnum(devnum, link, sizeof(link));
        return name && bsg_mounted_member(name);
}

int entries_build(struct ctx *c)
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
                else if (bsg_read_in_doubt(d->read_result) || (d->skip_read && !d->skip_read_why))
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
                /* a whole disk whose own bytes carry a partition table beside the superblock, as
                 * this run's read found it (the kernel's partitions may be older or newer than both) */
                if (!e->from_record)
                        e->pd.partitioned_disk = d->carries_table && (e->pd.state == BSG_DEV_BTRFS ||
                                                                      e->pd.state == BSG_DEV_INVALID);
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
