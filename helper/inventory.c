/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The inventory file and the gather of a run. The file (the run directory's devices, parsed and
 * written by state.c): loaded, locked, the pending/ markers of events that could not take the lock
 * folded in or written, the devices sysfs has and it lacks added to an event's reads (add_unseen()),
 * and what this run read written back (record_all()). The gather, in one order: what the system says
 * (inputs.c), the devices read now, the inventory, the table of entries (entries.c, with trust.c and
 * active.c), then the decision (plan.c). I/O.
 *
 * `boot` and `status` enumerate every block device and read each once. A `udev` event reads its own
 * device once (or not at all: an `add` of a device whose inventory entry still has its identity) and
 * takes every other device from the inventory; a `remove` event reads nothing and deletes the entry.
 * `reconcile` reads nothing. Trust (what it is decided from, the anchor, every entry's) is trust.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "gate.h"
#include "superblock.h"
#include "util.h"

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
        if (e->pd.state == BSG_DEV_UNKNOWN && bsg_read_in_doubt(d->read_result))
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
 * `add` event of such a device needs no read (coldplug after `boot`). Not a btrfs one: its event asks
 * the kernel to register it, and the check after that compares what the kernel read with what was
 * decided, generation included, which a mount changes without any event (a record of it is stale
 * once the filesystem was mounted, and its registration would be taken back). The entry is taken
 * again under the lock, and if it went in between the device is in doubt. */
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
        found = record_is_of(&rec, d) && rec.kind != BSG_RECORD_UNKNOWN && rec.kind != BSG_RECORD_BTRFS;
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
                else if (d->read_result == -EAGAIN)
                        log_msg("%s: btrfs superblock read, but its partition table could not be probed: in doubt",
                                d->devnode);
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

/* Reads the superblocks (FIRST's first; SIZE_MAX: none first), then what else the devices are known
 * by: partition tables, udev's database (with ALL_PROPS the labels and bus of the btrfs devices, and
 * of every device when root= names a partition by PARTUUID, which only the database knows; else only
 * the label of FIRST when it is a btrfs partition without one), storage ids and class. */
static void read_devices(struct ctx *c, size_t first, bool all_props)
{
        int r = bsg_devs_read_all(&c->devs, first, c->read_deadline);
        if (r < 0) {
                log_msg("cannot read superblocks: %s", strerror(-r));
                add_error(c, "read-failed");
        }
        bsg_devs_add_table_partuuids(&c->devs);
        const struct bsg_dev *d = first < c->devs.n ? &c->devs.v[first] : NULL;
        if (all_props)
                bsg_devs_add_udev_properties(&c->devs, c->cmdline && strstr(c->cmdline, "PARTUUID="));
        else if (d && d->parse_result == 0 && d->partition && !d->partlabel)
                bsg_devs_add_udev_properties(&c->devs, false);
        bsg_devs_add_storage_ids(&c->devs);
        bsg_devs_set_class(&c->devs);
        log_reads(c);
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

/* The `remove` event of D (the rules call the helper for every block device that goes: udev cannot
 * probe a device whose reads stall, so ID_FS_TYPE says nothing of whether it has a record) concerns
 * nobody when the inventory TEXT (NULL: none) has no record of it, no marker of a locked-out event names it, and
 * it is no stacked device (whose former members are re-decided). */
static bool remove_concerns_nobody(const struct bsg_dev *d, const char *text)
{
        const char *name = strrchr(d->devnode, '/');
        char marker[4300];

        name = name ? name + 1 : d->devnode;
        if (!d->devnum || strncmp(name, "dm-", 3) == 0 || strncmp(name, "md", 2) == 0)
                return false;
        if (text && bsg_state_text_find(text, d->devnum))
                return false;
        snprintf(marker, sizeof(marker), "%s/pending/%u:%u", bsg_rundir_path(), major(d->devnum), minor(d->devnum));
        return access(marker, F_OK) < 0 && errno == ENOENT;
}

/* Every block device into c->devs. */
static void enumerate_all(struct ctx *c)
{
        int r = bsg_devs_enumerate(&c->devs);
        if (r < 0) {
                /* a twin may be among the devices not enumerated: nothing can be unique */
                log_msg("cannot enumerate block devices, every btrfs device is in doubt: %s", strerror(-r));
                add_error(c, "enumerate-failed");
                c->devs = (struct bsg_devs){0};
                c->doubt_all = true;
        }
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
                enumerate_all(c);
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
                _cleanup_free_ char *text = NULL;
                int rr = bsg_read_file(path, STATE_TEXT_MAX, &text, NULL);
                if ((rr >= 0 || rr == -ENOENT) && remove_concerns_nobody(d, rr >= 0 ? text : NULL)) {
                        bsg_devs_free(&c->devs);
                        *ret_target = -1;
                        *ret_lock_fd = -1;
                        return 0; /* no entries: nothing to decide, nothing to do */
                }
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
        read_devices(c, (size_t)target, full);
        d = &c->devs.v[target];
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
                enumerate_all(c);
                mark_table_probes(c);
                read_devices(c, SIZE_MAX, true);
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

/* What the system says, once per run, before any device is looked at. */
static void load_inputs(struct ctx *c)
{
        load_config(c);
        load_trusted_disks(c);
        load_kernel_state(c);
        load_platform_slots(c);
        load_reserved_names(c);
}

int gather_trust(struct ctx *c)
{
        int r;

        load_inputs(c);
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

        load_inputs(c);
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
