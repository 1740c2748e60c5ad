/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "policy.h"

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

void bsg_policy_decide(const struct bsg_device *devs, size_t n, enum bsg_clone_policy clone_policy,
                       struct bsg_verdict *ret_verdicts)
{
        for (size_t i = 0; i < n; i++)
                ret_verdicts[i] = bsg_policy_decide_one(devs, n, i, clone_policy);
}
