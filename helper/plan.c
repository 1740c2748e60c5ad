/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pure core: the entries (the inventory) in, verdicts and the plan of kernel actions out. No I/O:
 * the executor (executor.c) performs a plan. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gate.h"
#include "skiplist.h"
#include "util.h"

void plan_decide(struct entry *e, size_t n, enum bsg_clone_policy clone_policy)
{
        _cleanup_free_ struct bsg_device *pd = calloc(n + 1, sizeof(*pd));
        _cleanup_free_ struct bsg_verdict *v = calloc(n + 1, sizeof(*v));

        if (!pd || !v) {
                /* no memory to decide: every doubt ends in skip (never an empty skip list) */
                for (size_t i = 0; i < n; i++)
                        e[i].v = e[i].pd.state == BSG_DEV_NOT_BTRFS
                                         ? (struct bsg_verdict){BSG_IGNORE, BSG_REASON_NOT_BTRFS}
                                         : (struct bsg_verdict){BSG_SKIP, BSG_REASON_IN_DOUBT};
                return;
        }
        for (size_t i = 0; i < n; i++)
                pd[i] = e[i].pd;
        bsg_policy_decide(pd, n, clone_policy, v);
        for (size_t i = 0; i < n; i++)
                e[i].v = v[i];
}

bool plan_starred_disk(const struct entry *e, char *buf, size_t size)
{
        if (!e->pd.untrusted || !e->trust.class_known || e->trust.class_fixed || e->trust.stacked || !e->disk ||
            !e->devnode)
                return false;
        const char *disk = strrchr(e->disk, '/');
        disk = disk ? disk + 1 : e->disk;
        size_t l = strlen(disk);
        /* its node is the disk's or a partition's of it ("/dev/sdb", "/dev/sdb1", "/dev/mmcblk0p1") */
        if (!l || strncmp(e->devnode, "/dev/", 5) != 0 || strncmp(e->devnode + 5, disk, l) != 0)
                return false;
        if ((size_t)snprintf(buf, size, "/dev/%s*", disk) >= size)
                return false;
        return bsg_skiplist_entry_ok(buf);
}

/* Whether a device on the disk DISK (sysfs path) is decided scan: its disk cannot be listed whole. */
static bool disk_has_scan(const struct entry *e, size_t n, const char *disk)
{
        for (size_t i = 0; i < n; i++)
                if (e[i].v.decision == BSG_SCAN && e[i].disk && streq(e[i].disk, disk))
                        return true;
        return false;
}

int plan_skip_list(const struct entry *e, size_t n, char **ret_list, size_t *ret_dropped)
{
        _cleanup_free_ const char **paths = calloc(n + 1, sizeof(char *));
        _cleanup_free_ char **owned = calloc(n + 1, sizeof(char *));
        _cleanup_free_ bool *trusted = calloc(n + 1, sizeof(bool));
        size_t m = 0, k = 0, rejected = 0, dropped = 0;
        int r = 0;

        if (!paths || !owned || !trusted)
                return -ENOMEM;
        /* trusted storage's entries (the clones of the slots) first: a card with hundreds of
         * partitions must not push them off a list cut at 4095 bytes. Hot-pluggable media nobody
         * trusts is listed by its whole disk, starred, whatever it carries (one entry for a stick
         * with hundreds of partitions; a partition that shows zeros now and btrfs later is listed
         * all the same), unless a device on it is scanned */
        for (size_t i = 0; i < n; i++) {
                char star[BSG_PATH_NAME_MAX + 2];
                if (plan_starred_disk(&e[i], star, sizeof(star)) && !disk_has_scan(e, n, e[i].disk)) {
                        bool seen = false;
                        for (size_t j = 0; j < k && !seen; j++)
                                seen = streq(owned[j], star);
                        if (seen)
                                continue;
                        char *s = strdup(star);
                        if (!s) {
                                r = -ENOMEM;
                                break;
                        }
                        trusted[m] = false;
                        paths[m++] = owned[k++] = s;
                } else if (e[i].v.decision == BSG_SKIP && e[i].pd.path_ok) {
                        trusted[m] = !e[i].pd.untrusted;
                        paths[m++] = e[i].devnode;
                }
        }
        if (r >= 0)
                r = bsg_skiplist_format(paths, trusted, m, ret_list, &rejected, &dropped);
        for (size_t i = 0; i < k; i++)
                free(owned[i]);
        if (ret_dropped)
                *ret_dropped = dropped;
        return r;
}

int plan_stable_skip_list(const struct entry *e, size_t n, char **ret_list, size_t *ret_dropped)
{
        _cleanup_free_ const char **entries = calloc(n + 1, sizeof(char *));
        _cleanup_free_ char **owned = calloc(n + 1, sizeof(char *));
        _cleanup_free_ bool *trusted = calloc(n + 1, sizeof(bool));
        size_t m = 0, k = 0, dropped = 0;
        int r = 0;

        if (!entries || !owned || !trusted)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (e[i].v.decision != BSG_SKIP)
                        continue;
                /* PARTUUID= only where it names this one device: a copy of another device's
                 * PARTUUID (a stick's) must not carry a device that is scanned into the list */
                bool unique = !isempty(e[i].partuuid);
                for (size_t j = 0; j < n && unique; j++)
                        unique = j == i || !e[j].partuuid || strcasecmp(e[j].partuuid, e[i].partuuid) != 0;
                char *s = NULL;
                if (unique && asprintf(&s, "PARTUUID=%s", e[i].partuuid) < 0) {
                        r = -ENOMEM;
                        break;
                }
                trusted[m] = !e[i].pd.untrusted;
                if (s && bsg_skiplist_entry_ok(s))
                        entries[m++] = owned[k++] = s;
                else {
                        free(s);
                        if (e[i].pd.path_ok)
                                entries[m++] = e[i].devnode;
                }
        }
        if (r >= 0)
                r = bsg_skiplist_format(entries, trusted, m, ret_list, NULL, &dropped);
        for (size_t i = 0; i < k; i++)
                free(owned[i]);
        if (ret_dropped)
                *ret_dropped = dropped;
        return r;
}

bool plan_all_devices_present(const struct entry *e, size_t n, const struct entry *t, bool scanned_only)
{
        uint64_t count = 0;
        for (size_t i = 0; i < n; i++) {
                bool dup = false;
                if (e[i].pd.state != BSG_DEV_BTRFS || memcmp(e[i].pd.fsid, t->pd.fsid, BSG_UUID_SIZE) != 0)
                        continue;
                if (scanned_only && e[i].v.decision != BSG_SCAN)
                        continue;
                for (size_t k = 0; k < i && !dup; k++)
                        dup = e[k].pd.state == BSG_DEV_BTRFS && e[k].pd.devid == e[i].pd.devid &&
                              memcmp(e[k].pd.fsid, t->pd.fsid, BSG_UUID_SIZE) == 0 &&
                              (!scanned_only || e[k].v.decision == BSG_SCAN);
                if (!dup)
                        count++;
        }
        return count >= t->pd.num_devices;
}

/* Doubt (a read that did not finish, a read error, an unknown record, no memory to decide) is no
 * decision about a device: it keeps what is, and never takes a registration back, neither of the
 * device in doubt nor of a device whose scan another's doubt holds back. */
static bool is_doubt(const struct bsg_verdict *v)
{
        return v->reason == BSG_REASON_IN_DOUBT || v->reason == BSG_REASON_UNREADABLE;
}

/* A device this helper registered whose verdict is no longer scan (a twin appeared), unless it is
 * itself mounted, or the verdict is only doubt. (A device someone else registers cannot be a skip
 * device: the skip list is written before anything else, and the patched kernel refuses every
 * non-mount scan of a listed device.) */
static bool needs_forget(const struct entry *e)
{
        if (!e->registered || e->pd.self_mounted)
                return false;
        if (e->forget_pending)
                return true;
        return e->v.decision != BSG_SCAN && !is_doubt(&e->v);
}

static int push(struct plan *p, enum plan_action_type type, size_t entry)
{
        struct plan_action *nv = realloc(p->v, (p->n + 1) * sizeof(*nv));
        if (!nv)
                return -ENOMEM;
        p->v = nv;
        p->v[p->n++] = (struct plan_action){type, entry};
        return 0;
}

int plan_build(const struct entry *e, size_t n, size_t target, enum plan_mode mode, struct plan *ret_plan)
{
        struct plan p = {};
        int r;

        r = plan_skip_list(e, n, &p.skip_list, &p.dropped);
        if (r == -ENOMEM)
                return r;
        p.truncated = r == -E2BIG;
        /* The one order: the skip list first (a device that left it can be scanned, one that joined
         * it is refused to anyone else's scan from now on), then the forgets of what lost (a loser
         * still registered makes the winner's scan fail: "already registered with a higher
         * generation", EEXIST), then the scans of every scan device not yet registered (what an
         * earlier event lost is made good here). The event's own scan device is always asked
         * (DEVICES_READY); for the others the record of what this helper registered is only a hint:
         * 6.1 shows no registration of an unmounted filesystem (/sys/fs/btrfs/<fsid>/ exists from
         * the mount on), and asking is a kernel read of each device. */
        r = push(&p, PLAN_SKIP_LIST, 0);
        for (size_t i = 0; i < n && r >= 0; i++)
                if (needs_forget(&e[i]))
                        r = push(&p, PLAN_FORGET, i);
        for (size_t i = 0; i < n && r >= 0; i++) {
                if (e[i].v.decision != BSG_SCAN)
                        continue;
                if (e[i].forget_pending)
                        continue; /* what the kernel read is not what was decided: forgotten above,
                                   * scanned by the next run */
                if (e[i].unanswered)
                        r = push(&p, PLAN_UNREADABLE, i);
                else if (i == target)
                        /* the kernel says what is registered, not the record: `btrfs device scan
                         * --forget` makes the record false, and DEVICES_READY registers as it
                         * answers (6.1's btrfs_control_ioctl scans the device), as stock udev does */
                        r = push(&p, PLAN_READY, i);
                else if (mode == PLAN_MODE_BOOT || !e[i].registered)
                        r = push(&p, PLAN_SCAN, i);
        }
        if (r < 0) {
                plan_done(&p);
                return r;
        }
        *ret_plan = p;
        return 0;
}

void plan_done(struct plan *p)
{
        free(p->v);
        free(p->skip_list);
        *p = (struct plan){};
}
