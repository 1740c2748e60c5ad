/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `udev DEVNODE`: decide for the event's device, act, print KEY=VALUE for IMPORT{program}. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <blkid.h>

#include "gate.h"
#include "skiplist.h"
#include "superblock.h"
#include "util.h"

/* Value escaping for udev: bytes outside a safe set become \xHH (as udev's *_ENC properties). */
static void print_kv(const char *key, const char *value)
{
        printf("%s=", key);
        for (const unsigned char *p = (const unsigned char *)value; *p; p++)
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    strchr("#+-.:=@_/,", *p))
                        putchar(*p);
                else
                        printf("\\x%02x", *p);
        putchar('\n');
}

/* With the lock: the inventory updated, the reconcile step for every device (plan, executor), the
 * inventory saved. *ret_ready: the kernel's DEVICES_READY answer for TARGET, or -1. */
static void act(struct ctx *c, size_t target, int lock_fd, int *ret_ready)
{
        struct plan p;
        int ready = -1, r;

        record_all(c);
        r = plan_build(c->e, c->n, target, PLAN_MODE_EVENT, &p);
        if (r < 0) {
                log_msg("cannot plan: %s", strerror(-r));
                add_error(c, "out-of-memory");
                return;
        }
        if (p.truncated) {
                log_truncated_skip_list(c, &p);
                add_error(c, "skip-list-too-long");
        }
        execute_plan(c, &p, lock_fd, &ready);
        if (ret_ready)
                *ret_ready = ready;
        if (target < c->n && c->e[target].v.decision == BSG_SKIP)
                add_token(c->actions, sizeof(c->actions), "skipped");
        r = bsg_state_save(bsg_rundir_path(), &c->state);
        if (r < 0) {
                log_msg("cannot save the inventory, ignoring: %s", strerror(-r));
                add_error(c, "state-save-failed");
        }
        plan_done(&p);
}

/* One line for each verdict that keeps crafted or doubtful media out (issue 10). */
static void log_security_reason(const struct entry *t, bool acting)
{
        /* what a run that takes no lock (dry run, not root, lock timeout) did not do, it does not claim */
        const char *listed = acting ? "listed in skip_scan" : "to be listed in skip_scan (not done by this run)";

        switch (t->v.reason) {
        case BSG_REASON_OUTRANKED:
                log_msg("%s: %s: withheld (never scanned, no shared link, not ready; to use it, mount it naming its "
                        "devices: mount -o device=%s ...)%s",
                        t->devnode,
                        t->pd.reserved && t->pd.rank == BSG_RANK_HOTPLUG
                                ? "carries a name the system mounts by (root=, fstab, crypttab, units, RAUC, partsets), and is not "
                                         "trusted storage"
                                       : "a device of a higher rank (trusted storage, then fixed storage, then "
                                         "hot-pluggable media) carries its filesystem or one of its /dev/disk names",
                        t->devnode,
                        t->pd.rank == BSG_RANK_FIXED ? "; if the disk is inside the machine, name it "
                                                       "trusted_disk=/dev/disk/by-path/..."
                                                     : "");
                break;
        case BSG_REASON_INCONSISTENT_COPIES:
                log_msg("%s: copies of this fsid disagree (devices, seed flag or device UUIDs): never scanned",
                        t->devnode);
                break;
        case BSG_REASON_PARTITIONED_DISK:
                log_msg("%s: whole disk with a partition table carries a btrfs superblock (stale?): never scanned",
                        t->devnode);
                break;
        case BSG_REASON_SAME_STORAGE:
                log_msg("%s: the same storage as another device (loop backing file, WWN or serial): never scanned",
                        t->devnode);
                break;
        case BSG_REASON_INVALID_SUPERBLOCK:
                log_msg("%s: btrfs magic with an invalid superblock: never scanned", t->devnode);
                break;
        case BSG_REASON_FSID_CHANGING:
                log_msg("%s: superblock says an fsid change is in progress (the kernel would match it by either "
                        "UUID): never scanned",
                        t->devnode);
                break;
        case BSG_REASON_ZONED:
                log_msg("%s: zoned device (the kernel reads its superblock from the log zones, not at 64 KiB): "
                        "never scanned",
                        t->devnode);
                break;
        case BSG_REASON_UNTRUSTED_METADATA_UUID:
                log_msg("%s: removable device with the METADATA_UUID feature (matched by a UUID it does not show "
                        "as its fsid): never scanned",
                        t->devnode);
                break;
        case BSG_REASON_UNREADABLE:
                log_msg("%s: superblock unreadable and never read before: %s, never scanned", t->devnode, listed);
                break;
        default:
                break;
        }
}

/* The slot properties: none for a device that may not own links; no SLOT_ACTIVE while the active
 * slot is unknown (nobody is demoted); SLOT_BASE encoded, never "." or ".." (issue 10 items 2, 6). */
static void print_slot(const struct ctx *c, const struct entry *t)
{
        bool slot = t->has_slot && t->pd.state == BSG_DEV_BTRFS && bsg_verdict_may_own_links(&t->v);
        char base[4 * 256 + 1] = "";

        /* libblkid's encoding (as udev's ID_*_ENC): '/', '\', blanks, quotes become \xHH */
        if (slot && bsg_slot_base_ok(t->base) && blkid_encode_string(t->base, base, sizeof(base)) < 0)
                base[0] = '\0';
        print_kv("BTRFS_SCAN_GATE_SLOT", slot ? t->slot : "");
        if (slot && t->slot_scheme)
                print_kv("BTRFS_SCAN_GATE_SLOT_SCHEME", t->slot_scheme);
        printf("BTRFS_SCAN_GATE_SLOT_BASE=%s\n", base); /* encoded already: print_kv would escape its '\' */
        if (slot && c->have_active_slot)
                print_kv("BTRFS_SCAN_GATE_SLOT_ACTIVE", t->pd.slot_active ? "1" : "0");
}

/* What E's event would print for DECISION, REASON and SLOT_ACTIVE now ("" where unset), as
 * print_slot() does. */
static void expected_props(const struct ctx *c, const struct entry *e, const char **ret_decision,
                           const char **ret_reason, const char **ret_slot_active)
{
        bool slot = e->has_slot && e->pd.state == BSG_DEV_BTRFS && bsg_verdict_may_own_links(&e->v);

        *ret_decision = bsg_decision_name(e->v.decision);
        *ret_reason = bsg_reason_name(e->v.reason);
        *ret_slot_active = slot && c->have_active_slot ? (e->pd.slot_active ? "1" : "0") : "";
}

/* Sends E a change event if its udev record (what its last event printed) disagrees with what this
 * run decides for it: decision, reason, SLOT_ACTIVE. A device no event decided yet is left to its own.
 * Its kernel name goes to RET_SYSNAME (SIZE bytes) when one was sent; returns whether one was. */
static bool reannounce_if_stale(struct ctx *c, const struct entry *e, char *ret_sysname, size_t size)
{
        struct bsg_udev_record rec;
        const char *dec, *reason, *active;

        if (!e->devnum || bsg_udev_record_of(e->devnum, &rec) <= 0)
                return false;
        expected_props(c, e, &dec, &reason, &active);
        if (streq(rec.decision, dec) && streq(rec.reason, reason) && streq(rec.slot_active, active))
                return false;
        char why[128];
        snprintf(why, sizeof(why), "whose udev record says %s %s SLOT_ACTIVE=%s, now %s %s SLOT_ACTIVE=%s",
                 rec.decision, rec.reason, rec.slot_active, dec, reason, active);
        if (reannounce_device(c, rec.sysname, e->devnode, why) < 0)
                return false;
        if (ret_sysname)
                snprintf(ret_sysname, size, "%s", rec.sysname);
        return true;
}

/* The udev records of other devices can be stale: a member of a stacked device created while udevd
 * runs gets no event (its record still says `skip clone SLOT=A`, or `scan`), and the other copies
 * of a filesystem keep the SLOT_ACTIVE of an event that ran before the active slot was known (root=
 * names a dm device not yet created). The members of the event's device and the copies of its
 * filesystem whose udev record disagrees with what this event decided are sent a change event, so
 * that their properties and links follow. An event this started never starts others (no loop). */
/* A replay never replays others; nor does the rules' second call of a dm device (RUN+= with its
 * /dev/mapper name), which comes after the first asked for the same events. */
static bool may_reannounce(const struct ctx *c)
{
        const char *why = getenv("SYNTH_ARG_BSG"), *devname = getenv("DEVNAME");

        return !(why && streq(why, "reannounced")) && !(devname && c->devnode && !streq(devname, c->devnode));
}

static void reannounce_stale(struct ctx *c, const struct entry *t, const struct bsg_dev *d)
{
        dev_t members[16];
        size_t n_members = 0;

        if (!may_reannounce(c))
                return;
        if (d->sysname)
                n_members = bsg_slaves_devnums(d->sysname, members, ELEMENTSOF(members));
        for (size_t i = 0; i < c->n; i++) {
                const struct entry *e = &c->e[i];
                bool member = false;
                for (size_t k = 0; k < n_members; k++)
                        member = member || members[k] == e->devnum;
                /* a device this event's device outranks (a name they share, not only a filesystem) */
                if (e == t || !e->devnum || (!e->target_group && !member && e->v.reason != BSG_REASON_OUTRANKED))
                        continue;
                reannounce_if_stale(c, e, NULL, 0);
        }
}

/* A device went away (its `remove` event). A stacked one (dm, md) leaves its former members with
 * `skip held` in their udev records (the kernel sends them no event), and the links and
 * UDISKS_IGNORE that go with it; the removal of the device root= names leaves the other slots with a
 * SLOT_ACTIVE of an active slot no longer known. Every device this run decides otherwise than its
 * record says, and every device whose record says held while nothing holds it any longer (one no
 * event read: it has no entry), is sent a change event, so that its own event decides it as a boot
 * without the removed device would. */
static void reannounce_after_remove(struct ctx *c)
{
        char sent[32][256];
        size_t n_sent = 0;

        for (size_t i = 0; i < c->n; i++)
                if (n_sent < ELEMENTSOF(sent) && reannounce_if_stale(c, &c->e[i], sent[n_sent], sizeof(sent[0])))
                        n_sent++;

        char names[32][256];
        int n = bsg_udev_held_unheld(names, ELEMENTSOF(names));
        if (n < 0) {
                log_msg("cannot list the devices held before, ignoring: %s", strerror(-n));
                return;
        }
        for (int i = 0; i < n; i++) {
                bool done = false;
                for (size_t k = 0; k < n_sent; k++)
                        done = done || streq(sent[k], names[i]);
                if (done)
                        continue;
                char devnode[300];
                snprintf(devnode, sizeof(devnode), "/dev/%.255s", names[i]);
                reannounce_device(c, names[i], devnode, "whose udev record says held, nothing holds it now");
        }
}

/* A device of a lower rank without btrfs (a stick's partition named like this one, with its PARTUUID
 * or its filesystem's UUID or label) that came before it owns the shared links: when T appears (its
 * `add`; for dm and md, whose content shows on `change`, every event), such devices are sent a change
 * event, whose `trust` verb withholds them; once withheld, their record stops the next. Devices
 * with btrfs are the inventory's (reannounce_stale()). Not from a replay, nor from the rules' second
 * call of a dm device (RUN+= with its /dev/mapper name). Not on the `change` of a partition or disk
 * (a filesystem made on an internal partition after a stick took its label: not covered), which
 * would read udev's whole database on every event. */
static void withhold_earlier_carriers(struct ctx *c, const struct entry *t)
{
        const char *action = getenv("ACTION");
        struct bsg_device self = t->pd;
        char fsid[37];
        bool stacked = t->dev >= 0 && c->devs.v[t->dev].stacked;

        if (!may_reannounce(c) || !(stacked || (action && streq(action, "add"))) || t->pd.state != BSG_DEV_BTRFS ||
            t->pd.rank == BSG_RANK_HOTPLUG || !bsg_verdict_may_own_links(&t->v))
                return;
        /* udev's whole database is read only where a hot-pluggable device is known to be there */
        bool hotplug = false;
        for (size_t i = 0; i < c->devs.n && !hotplug; i++)
                hotplug = (ssize_t)i != t->dev && (!c->devs.v[i].class_known || !c->devs.v[i].class_fixed);
        if (!hotplug)
                return;
        bsg_uuid_format(self.fsid, fsid);
        self.names[BSG_NAME_UUID] = fsid;
        (void)name_collisions(c, &self, t->devnum, true);
}

int run_udev(struct ctx *c)
{
        ssize_t ti = -1;
        int lock_fd = -1, r0 = gather(c, &ti, &lock_fd);
        int ready = -1;

        if (r0 < 0) {
                /* out of memory before anything was decided: nothing is known of the device, so it
                 * is in doubt (never scanned, the kernel's list left as it is); never fail the event */
                print_kv("BTRFS_SCAN_GATE_DECISION", "skip");
                print_kv("BTRFS_SCAN_GATE_REASON", "in-doubt");
                print_kv("BTRFS_SCAN_GATE_ACTION", "none");
                print_kv("BTRFS_SCAN_GATE_ERROR", "out-of-memory");
                return 0;
        }
        if (ti < 0) {
                /* remove: the entry is gone, the copies that remain are re-decided */
                if (lock_fd >= 0)
                        act(c, SIZE_MAX, lock_fd, NULL);
                add_token(c->actions, sizeof(c->actions), "removed");
                if (!c->dry_run && lock_fd >= 0)
                        reannounce_after_remove(c);
                print_kv("BTRFS_SCAN_GATE_ACTION", c->actions);
                if (c->errors[0])
                        print_kv("BTRFS_SCAN_GATE_ERROR", c->errors);
                if (lock_fd >= 0)
                        close(lock_fd);
                return 0;
        }
        size_t target = SIZE_MAX;
        for (size_t i = 0; i < c->n; i++)
                if (c->e[i].dev == ti)
                        target = i;
        struct entry *t = &c->e[target];
        const struct bsg_dev *d = &c->devs.v[ti];
        bool acting = !c->dry_run && lock_fd >= 0;

        if (d->read_result == -ETIMEDOUT)
                add_error(c, "read-timeout");
        else if (d->read_result < 0 && d->read_result != -ENODATA)
                add_error(c, "read-error");
        if (!t->pd.path_ok && t->v.decision == BSG_SKIP)
                log_msg("%s: path contains ',' or whitespace or is longer than %d bytes: cannot be listed in "
                        "skip_scan, not scanned", t->devnode, BSG_PATH_NAME_MAX);
        log_security_reason(t, acting);

        if (c->dry_run) {
                if (t->v.decision != BSG_IGNORE)
                        add_token(c->actions, sizeof(c->actions), "dry-run");
        } else if (acting) {
                act(c, target, lock_fd, &ready);
                log_decision(c, t);
                reannounce_stale(c, t, d);
                reannounce_trust_changed(c);
                withhold_earlier_carriers(c, t);
        }
        else if (t->v.decision == BSG_SKIP)
                add_token(c->actions, sizeof(c->actions), "skipped");

        /* a node that is not there (or names no device) is said to be missing, not "not btrfs" */
        bool missing = t->v.decision == BSG_IGNORE &&
                       (d->read_result == -ENOENT || d->read_result == -ENXIO || d->read_result == -ENODEV);
        print_kv("BTRFS_SCAN_GATE_DECISION", bsg_decision_name(t->v.decision));
        print_kv("BTRFS_SCAN_GATE_REASON", missing ? "missing-device" : bsg_reason_name(t->v.reason));
        if (t->pd.state == BSG_DEV_BTRFS) {
                char fsid[37], num[32];
                bsg_uuid_format(t->pd.fsid, fsid);
                print_kv("BTRFS_SCAN_GATE_FSID", fsid);
                snprintf(num, sizeof(num), "%" PRIu64, t->pd.devid);
                print_kv("BTRFS_SCAN_GATE_DEVID", num);
                snprintf(num, sizeof(num), "%" PRIu64, t->generation);
                print_kv("BTRFS_SCAN_GATE_GENERATION", num);
                if (d->parse_result == 0 && d->read_result >= 0)
                        print_kv("BTRFS_SCAN_GATE_CSUM", d->sb.csum_state == BSG_CSUM_VERIFIED ? "verified"
                                                                                             : "not-verified");
        }
        print_slot(c, t);
        print_kv("BTRFS_SCAN_GATE_ACTION", c->actions[0] ? c->actions : "none");
        if (c->errors[0])
                print_kv("BTRFS_SCAN_GATE_ERROR", c->errors);
        if (t->v.decision == BSG_SCAN) {
                /* no answer from the kernel (dry run, not loaded, failed): what the superblocks say,
                 * never a blanket 0 that would hold a single-device filesystem back */
                if (ready < 0)
                        ready = plan_all_devices_present(c->e, c->n, t, true);
                print_kv("ID_BTRFS_READY", ready > 0 ? "1" : "0");
        } else if (t->v.decision == BSG_SKIP && t->pd.state == BSG_DEV_BTRFS)
                print_kv("ID_BTRFS_READY", plan_all_devices_present(c->e, c->n, t, false) ? "1" : "0");
        bool inactive_clone = (t->v.reason == BSG_REASON_CLONE || t->v.reason == BSG_REASON_RAID_CLONE_INACTIVE) &&
                              t->v.decision == BSG_SKIP && t->has_slot && c->have_active_slot && !t->pd.slot_active;
        print_kv("BTRFS_SCAN_GATE_TRUSTED", t->pd.untrusted ? "0" : "1");
        print_kv("BTRFS_SCAN_GATE_TRUST_SOURCE", trust_source(c));
        bool withheld = !bsg_verdict_may_own_links(&t->v);
        if (inactive_clone || withheld) {
                print_kv("UDISKS_IGNORE", "1");
                /* the same again under the gate's own name: 99-btrfs-scan-gate-late.rules puts
                 * UDISKS_IGNORE=1 back after later rules that set it (SteamOS's partsets rules) */
                print_kv("BTRFS_SCAN_GATE_UDISKS_IGNORE", "1");
        }
        if (lock_fd >= 0)
                close(lock_fd);
        return 0;
}
