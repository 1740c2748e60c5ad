/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "util.h"

static const char *const reason_names[_BSG_REASON_MAX] = {
        [BSG_REASON_NOT_BTRFS] = "not-btrfs",
        [BSG_REASON_INVALID_SUPERBLOCK] = "invalid-superblock",
        [BSG_REASON_BAD_PATH] = "bad-path",
        [BSG_REASON_SEED] = "seed",
        [BSG_REASON_MULTI_DEVICE] = "multi-device",
        [BSG_REASON_RAID_CLONE_ACTIVE] = "raid-clone-active",
        [BSG_REASON_RAID_CLONE_INACTIVE] = "raid-clone-inactive",
        [BSG_REASON_UNIQUE] = "unique",
        [BSG_REASON_CLONE] = "clone",
        [BSG_REASON_REMOVABLE_CLONE_OF_MOUNTED] = "removable-clone-of-mounted",
};

const char *bsg_reason_name(enum bsg_reason r)
{
        return r < _BSG_REASON_MAX ? reason_names[r] : "unknown";
}

const char *bsg_decision_name(enum bsg_decision d)
{
        switch (d) {
        case BSG_SCAN:
                return "scan";
        case BSG_SKIP:
                return "skip";
        case BSG_IGNORE:
                break;
        }
        return "ignore";
}

bool is_not_btrfs(const struct bsg_device *d)
{
        return d->state == BSG_DEV_NOT_BTRFS;
}

bool is_invalid_superblock(const struct bsg_device *d)
{
        return d->state == BSG_DEV_INVALID;
}

bool is_bad_path(const struct bsg_device *d)
{
        return !d->path_ok;
}

/* Hijack guard: removable media carrying the fsid of a mounted filesystem it is not the source of. */
bool is_removable_clone_of_mounted(const struct bsg_device *d)
{
        return d->hotpluggable && d->fsid_mounted && !d->self_mounted;
}

bool is_seed_device(const struct bsg_device *d)
{
        return d->seeding;
}

bool is_multi_device(const struct bsg_device *d)
{
        return d->num_devices > 1;
}

static bool same_fs(const struct bsg_device *a, const struct bsg_device *b)
{
        return a->state == BSG_DEV_BTRFS && b->state == BSG_DEV_BTRFS &&
               memcmp(a->fsid, b->fsid, BSG_UUID_SIZE) == 0;
}

/* Another present device is the same member (fsid, devid) of a multi-device filesystem. */
bool has_raid_twin(const struct bsg_device *devs, size_t n, size_t i)
{
        for (size_t k = 0; k < n; k++)
                if (k != i && same_fs(&devs[i], &devs[k]) && devs[k].devid == devs[i].devid)
                        return true;
        return false;
}

/* Another present device carries the same fsid. */
bool has_clone(const struct bsg_device *devs, size_t n, size_t i)
{
        for (size_t k = 0; k < n; k++)
                if (k != i && same_fs(&devs[i], &devs[k]))
                        return true;
        return false;
}

/* Exactly one copy of the fs is in the active slot, and it is DEVS[I]. */
static bool is_sole_active_copy(const struct bsg_device *devs, size_t n, size_t i)
{
        if (!devs[i].slot_active)
                return false;
        for (size_t k = 0; k < n; k++)
                if (k != i && same_fs(&devs[i], &devs[k]) && devs[k].devid == devs[i].devid &&
                    devs[k].slot_active)
                        return false;
        return true;
}

#define VERDICT(d, r) ((struct bsg_verdict){.decision = (d), .reason = (r)})

struct bsg_verdict bsg_policy_decide_one(const struct bsg_device *devs, size_t n, size_t i,
                                         enum bsg_clone_policy clone_policy)
{
        const struct bsg_device *d = &devs[i];

        if (is_not_btrfs(d))
                return VERDICT(BSG_IGNORE, BSG_REASON_NOT_BTRFS);
        if (is_invalid_superblock(d))
                return VERDICT(BSG_IGNORE, BSG_REASON_INVALID_SUPERBLOCK);
        if (is_bad_path(d))
                return VERDICT(BSG_SKIP, BSG_REASON_BAD_PATH);
        if (is_removable_clone_of_mounted(d))
                return VERDICT(BSG_SKIP, BSG_REASON_REMOVABLE_CLONE_OF_MOUNTED);
        if (is_seed_device(d))
                return VERDICT(BSG_SCAN, BSG_REASON_SEED);
        if (is_multi_device(d)) {
                if (!has_raid_twin(devs, n, i))
                        return VERDICT(BSG_SCAN, BSG_REASON_MULTI_DEVICE);
                if (is_sole_active_copy(devs, n, i))
                        return VERDICT(BSG_SCAN, BSG_REASON_RAID_CLONE_ACTIVE);
                return VERDICT(BSG_SKIP, BSG_REASON_RAID_CLONE_INACTIVE);
        }
        if (!has_clone(devs, n, i))
                return VERDICT(BSG_SCAN, BSG_REASON_UNIQUE);
        if (clone_policy == BSG_CLONE_ACTIVE && is_sole_active_copy(devs, n, i))
                return VERDICT(BSG_SCAN, BSG_REASON_CLONE);
        return VERDICT(BSG_SKIP, BSG_REASON_CLONE);
}

/* Orders device indexes so that the devices of one filesystem are neighbours. */
static int cmp_by_fs(const void *a, const void *b, void *userdata)
{
        const struct bsg_device *devs = userdata;
        const struct bsg_device *x = &devs[*(const size_t *)a], *y = &devs[*(const size_t *)b];
        bool bx = x->state == BSG_DEV_BTRFS, by = y->state == BSG_DEV_BTRFS;

        if (bx != by)
                return bx ? 1 : -1;
        return bx ? memcmp(x->fsid, y->fsid, BSG_UUID_SIZE) : 0;
}

void bsg_policy_decide(const struct bsg_device *devs, size_t n, enum bsg_clone_policy clone_policy,
                       struct bsg_verdict *ret_verdicts)
{
        _cleanup_free_ size_t *order = malloc((n + 1) * sizeof(size_t));
        _cleanup_free_ struct bsg_device *group = malloc((n + 1) * sizeof(struct bsg_device));

        if (!order || !group) {
                /* the same verdicts, in O(n^2) */
                for (size_t i = 0; i < n; i++)
                        ret_verdicts[i] = bsg_policy_decide_one(devs, n, i, clone_policy);
                return;
        }
        /* A verdict depends only on the devices of the same filesystem: decide each filesystem's
         * devices among themselves, so a thousand unique filesystems cost n log n, not n^2. */
        for (size_t i = 0; i < n; i++)
                order[i] = i;
        qsort_r(order, n, sizeof(size_t), cmp_by_fs, (void *)devs);
        for (size_t a = 0, b; a < n; a = b) {
                for (b = a + 1; b < n && same_fs(&devs[order[a]], &devs[order[b]]); b++)
                        ;
                for (size_t k = a; k < b; k++)
                        group[k - a] = devs[order[k]];
                for (size_t k = a; k < b; k++)
                        ret_verdicts[order[k]] = bsg_policy_decide_one(group, b - a, k - a, clone_policy);
        }
}
