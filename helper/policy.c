/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "rank.h"
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
        [BSG_REASON_OUTRANKED] = "outranked",
        [BSG_REASON_INCONSISTENT_COPIES] = "inconsistent-copies",
        [BSG_REASON_PARTITIONED_DISK] = "partitioned-disk",
        [BSG_REASON_SAME_STORAGE] = "same-storage",
        [BSG_REASON_HELD] = "held",
        [BSG_REASON_UNREADABLE] = "unreadable",
        [BSG_REASON_IN_DOUBT] = "in-doubt",
        [BSG_REASON_FSID_CHANGING] = "fsid-changing",
        [BSG_REASON_UNTRUSTED_METADATA_UUID] = "untrusted-metadata-uuid",
        [BSG_REASON_ZONED] = "zoned",
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

/* Its read did not finish in time and nothing is known of it: it may be anyone's twin. */
bool is_in_doubt(const struct bsg_device *d)
{
        return d->state == BSG_DEV_UNKNOWN;
}

bool is_invalid_superblock(const struct bsg_device *d)
{
        return d->state == BSG_DEV_INVALID;
}

bool is_bad_path(const struct bsg_device *d)
{
        return !d->path_ok;
}

bool is_seed_device(const struct bsg_device *d)
{
        return d->seeding;
}

bool is_multi_device(const struct bsg_device *d)
{
        return d->num_devices > 1;
}

/* A whole disk whose own bytes carry a partition table: mkfs.btrfs zeroes the table, so a btrfs
 * superblock beside one is older than it (or planted); the kernel would still register it, so it is
 * listed, never scanned. The kernel's partitions of the disk say nothing either way: they are what it
 * read last (a disk formatted whole keeps its old ones until a re-read succeeds). */
bool is_partitioned_disk(const struct bsg_device *d)
{
        return d->partitioned_disk;
}

/* Mounted (the source of a mount, or a member of a mounted filesystem): the kernel holds it already. */
static bool in_use(const struct bsg_device *d)
{
        return d->self_mounted || d->mounted_member;
}

/* A zoned device: Linux 6.1 reads its superblock from the log zones (sb_write_pointer()), this helper
 * and the check after a scan read 64 KiB, so what was decided is not what the kernel would register.
 * Listed, never scanned, whatever its 64 KiB hold; it is no copy of anything either. A mounted one is
 * decided as any other device: it is in use, a skip would only take its readiness away. */
bool is_zoned(const struct bsg_device *d)
{
        return d->zoned && !in_use(d);
}

/* An fsid change was interrupted (or the superblock says so to be matched by either of its UUIDs):
 * the kernel would join it to a filesystem by its metadata_uuid or its fsid and, with the highest
 * generation, take that filesystem's place. Listed, never scanned, whatever the storage, unless mounted. */
bool is_fsid_changing(const struct bsg_device *d)
{
        return d->fsid_changing && !in_use(d);
}

/* Hot-pluggable media whose metadata_uuid is not its fsid, not in use itself: the kernel matches it
 * by a UUID the stick does not show as its fsid (a forged copy of internal storage). Never scanned.
 * (A system booted from such a stick has it mounted: the kernel holds it already.) */
bool is_untrusted_metadata_uuid(const struct bsg_device *d)
{
        return d->rank == BSG_RANK_HOTPLUG && d->metadata_uuid_feature && !d->self_mounted && !d->mounted_member;
}

/* The UUIDs the kernel may match a device by: its fsid and, with the feature, its metadata_uuid. */
static const uint8_t *metadata_uuid_of(const struct bsg_device *d)
{
        return d->metadata_uuid_feature ? d->metadata_uuid : d->fsid;
}

bool same_filesystem(const struct bsg_device *a, const struct bsg_device *b)
{
        if (a->state != BSG_DEV_BTRFS || b->state != BSG_DEV_BTRFS)
                return false;
        const uint8_t *ka[2] = {a->fsid, metadata_uuid_of(a)}, *kb[2] = {b->fsid, metadata_uuid_of(b)};
        for (int i = 0; i < 2; i++)
                for (int k = 0; k < 2; k++)
                        if (memcmp(ka[i], kb[k], BSG_UUID_SIZE) == 0)
                                return true;
        return false;
}


/* Two names of one storage (two loop devices over one file, two paths to one disk). A hot-pluggable
 * device never shares storage with a fixed one: its serial or WWN is the attacker's to choose. */
static bool same_storage(const struct bsg_device *a, const struct bsg_device *b)
{
        return a->storage_id && b->storage_id && (a->rank == BSG_RANK_HOTPLUG) == (b->rank == BSG_RANK_HOTPLUG) &&
               streq(a->storage_id, b->storage_id);
}

/* B is the name of the storage that is kept, A the one that is not: the one in use, else the first
 * devnode in byte order (any fixed choice gives the same answer in every event order). */
static bool preferred_name(const struct bsg_device *b, const struct bsg_device *a)
{
        if (in_use(a) != in_use(b))
                return in_use(b);
        return strcmp(b->devnode ? b->devnode : "", a->devnode ? a->devnode : "") < 0;
}

/* Another present device names the same storage and is the name kept: DEVS[I] is a second writer's
 * door to the same bytes, never scanned, never offered as a mountable clone. */
bool is_same_storage_secondary(const struct bsg_device *devs, size_t n, size_t i)
{
        for (size_t k = 0; k < n; k++)
                if (k != i && same_storage(&devs[k], &devs[i]) && preferred_name(&devs[k], &devs[i]))
                        return true;
        return false;
}

/* Whether DEVS[K] is a copy of DEVS[I]'s filesystem that counts for DEVS[I]'s verdict: same fsid, not a
 * stale whole-disk superblock, not a second name of other storage, and not of a lower rank (a stick
 * can never make internal storage a clone, nor disagree with it). */
static bool counts_as_copy(const struct bsg_device *devs, size_t n, size_t i, size_t k)
{
        const struct bsg_device *a = &devs[i], *b = &devs[k];

        return k != i && same_filesystem(a, b) && !is_partitioned_disk(b) && !is_zoned(b) && !b->held &&
               !is_same_storage_secondary(devs, n, k) &&
               b->rank >= a->rank;
}

/* A device of a higher rank collides with it (rank.h bsg_outranked()): withheld. */
bool is_outranked(const struct bsg_device *d)
{
        return d->outranked;
}

/* A member of a stacked device (the partition under dm-verity): the same storage as its holder,
 * never a copy of it and never scanned (the kernel would register the unchecked bytes); the
 * decision, the slot and the links are the holder's. */
bool is_held(const struct bsg_device *d)
{
        return d->held && !in_use(d);
}

/* Two copies of one filesystem that cannot both be honest: different num_devices or seed flag, or a
 * devid that maps to two device UUIDs (or one device UUID under two devids). */
static bool uuid_known(const uint8_t u[BSG_UUID_SIZE])
{
        static const uint8_t zero[BSG_UUID_SIZE];
        return memcmp(u, zero, BSG_UUID_SIZE) != 0;
}

static bool copies_disagree(const struct bsg_device *a, const struct bsg_device *b)
{
        if (a->num_devices != b->num_devices || a->seeding != b->seeding)
                return true;
        /* a copy known only from the state file has no device UUID */
        return uuid_known(a->dev_uuid) && uuid_known(b->dev_uuid) &&
               (a->devid == b->devid) != (memcmp(a->dev_uuid, b->dev_uuid, BSG_UUID_SIZE) == 0);
}

/* Some two of the copies that count for DEVS[I] (itself included) disagree. */
bool has_inconsistent_copies(const struct bsg_device *devs, size_t n, size_t i)
{
        for (size_t k = 0; k < n; k++) {
                if (k != i && !counts_as_copy(devs, n, i, k))
                        continue;
                for (size_t l = k + 1; l < n; l++)
                        if ((l == i || counts_as_copy(devs, n, i, l)) && copies_disagree(&devs[k], &devs[l]))
                                return true;
        }
        return false;
}

/* The copies DEVS[I]'s verdict looks at: those that count, and only members of the mounted filesystem
 * when the copies disagree and DEVS[I] is such a member. */
static bool is_peer(const struct bsg_device *devs, size_t n, size_t i, size_t k, bool members_only)
{
        return counts_as_copy(devs, n, i, k) && (!members_only || devs[k].mounted_member);
}

static bool raid_twin(const struct bsg_device *devs, size_t n, size_t i, bool members_only)
{
        for (size_t k = 0; k < n; k++)
                if (is_peer(devs, n, i, k, members_only) && devs[k].devid == devs[i].devid)
                        return true;
        return false;
}

static bool clone_present(const struct bsg_device *devs, size_t n, size_t i, bool members_only)
{
        for (size_t k = 0; k < n; k++)
                if (is_peer(devs, n, i, k, members_only))
                        return true;
        return false;
}

/* Another present device is the same member (fsid, devid) of a multi-device filesystem. */
bool has_raid_twin(const struct bsg_device *devs, size_t n, size_t i)
{
        return raid_twin(devs, n, i, false);
}

/* Another present device carries the same fsid. */
bool has_clone(const struct bsg_device *devs, size_t n, size_t i)
{
        return clone_present(devs, n, i, false);
}

/* Exactly one copy of the fs is in the active slot, and it is DEVS[I]. */
static bool is_sole_active_copy(const struct bsg_device *devs, size_t n, size_t i, bool members_only)
{
        if (!devs[i].slot_active)
                return false;
        for (size_t k = 0; k < n; k++)
                if (is_peer(devs, n, i, k, members_only) && devs[k].devid == devs[i].devid && devs[k].slot_active)
                        return false;
        return true;
}

bool bsg_verdict_may_own_links(const struct bsg_verdict *v)
{
        switch (v->reason) {
        case BSG_REASON_INVALID_SUPERBLOCK:
        case BSG_REASON_OUTRANKED:
        case BSG_REASON_HELD:
        case BSG_REASON_INCONSISTENT_COPIES:
        case BSG_REASON_PARTITIONED_DISK:
        case BSG_REASON_SAME_STORAGE:
        case BSG_REASON_UNREADABLE:
        case BSG_REASON_FSID_CHANGING:
        case BSG_REASON_ZONED:
        case BSG_REASON_UNTRUSTED_METADATA_UUID:
                return false;
        default:
                return true;
        }
}

#define VERDICT(d, r) ((struct bsg_verdict){.decision = (d), .reason = (r)})

struct bsg_verdict bsg_policy_decide_one(const struct bsg_device *devs, size_t n, size_t i,
                                         enum bsg_clone_policy clone_policy)
{
        const struct bsg_device *d = &devs[i];
        bool members_only = false;

        /* not read (in every event order alike): the holder is decided, not its member; listed, so
         * that no other scanner (btrfs device scan, an initramfs script) registers the bytes under
         * dm-verity's check either (a member that is not btrfs is listed harmlessly) */
        if (is_held(d))
                return VERDICT(BSG_SKIP, BSG_REASON_HELD);
        if (is_zoned(d))
                return VERDICT(BSG_SKIP, BSG_REASON_ZONED);
        if (is_in_doubt(d))
                return VERDICT(BSG_SKIP, BSG_REASON_IN_DOUBT);
        if (d->state == BSG_DEV_UNREADABLE)
                return VERDICT(BSG_SKIP, BSG_REASON_UNREADABLE);
        if (is_not_btrfs(d))
                return VERDICT(BSG_IGNORE, BSG_REASON_NOT_BTRFS);
        /* the kernel registers anything with the magic at 64 KiB: when in doubt, list it */
        if (is_invalid_superblock(d))
                return VERDICT(BSG_SKIP, BSG_REASON_INVALID_SUPERBLOCK);
        if (is_fsid_changing(d))
                return VERDICT(BSG_SKIP, BSG_REASON_FSID_CHANGING);
        if (is_untrusted_metadata_uuid(d))
                return VERDICT(BSG_SKIP, BSG_REASON_UNTRUSTED_METADATA_UUID);
        if (is_partitioned_disk(d))
                return VERDICT(BSG_SKIP, BSG_REASON_PARTITIONED_DISK);
        if (is_same_storage_secondary(devs, n, i))
                return VERDICT(BSG_SKIP, BSG_REASON_SAME_STORAGE);
        if (is_outranked(d))
                return VERDICT(BSG_SKIP, BSG_REASON_OUTRANKED);
        /* after the verdicts that withhold: a name that cannot be listed keeps no link it should lose
         * (fuzz/regressions/property: a hot-pluggable dm device named "a,b" carrying a reserved name
         * was `skip bad-path`, which owns links) */
        if (is_bad_path(d))
                return VERDICT(BSG_SKIP, BSG_REASON_BAD_PATH);
        if (has_inconsistent_copies(devs, n, i)) {
                if (!d->mounted_member)
                        return VERDICT(BSG_SKIP, BSG_REASON_INCONSISTENT_COPIES);
                members_only = true; /* the mounted filesystem's own devices decide among themselves */
        }
        /* a seed follows the clone rules as any filesystem: only its reason says what it is */
        if (is_multi_device(d)) {
                if (!raid_twin(devs, n, i, members_only))
                        return VERDICT(BSG_SCAN, is_seed_device(d) ? BSG_REASON_SEED : BSG_REASON_MULTI_DEVICE);
                if (is_sole_active_copy(devs, n, i, members_only))
                        return VERDICT(BSG_SCAN, BSG_REASON_RAID_CLONE_ACTIVE);
                return VERDICT(BSG_SKIP, BSG_REASON_RAID_CLONE_INACTIVE);
        }
        if (!clone_present(devs, n, i, members_only))
                return VERDICT(BSG_SCAN, is_seed_device(d) ? BSG_REASON_SEED : BSG_REASON_UNIQUE);
        if (clone_policy == BSG_CLONE_ACTIVE && is_sole_active_copy(devs, n, i, members_only))
                return VERDICT(BSG_SCAN, BSG_REASON_CLONE);
        return VERDICT(BSG_SKIP, BSG_REASON_CLONE);
}

/* Grouping for bsg_policy_decide(): the devices that same_filesystem() links, directly or through
 * others, form one group (a union-find over the UUIDs each device may be matched by). */
struct fs_key {
        const uint8_t *uuid;
        size_t dev;
};

static int cmp_key(const void *a, const void *b)
{
        return memcmp(((const struct fs_key *)a)->uuid, ((const struct fs_key *)b)->uuid, BSG_UUID_SIZE);
}

static size_t group_root(size_t *parent, size_t i)
{
        while (parent[i] != i) {
                parent[i] = parent[parent[i]];
                i = parent[i];
        }
        return i;
}

/* Orders device indexes so that the devices of one group are neighbours. */
static int cmp_by_group(const void *a, const void *b, void *userdata)
{
        const size_t *root = userdata;
        size_t x = root[*(const size_t *)a], y = root[*(const size_t *)b];

        return x < y ? -1 : x > y;
}

void bsg_policy_decide(const struct bsg_device *in, size_t n, enum bsg_clone_policy clone_policy,
                       struct bsg_verdict *ret_verdicts)
{
        _cleanup_free_ struct bsg_device *devs = malloc((n + 1) * sizeof(struct bsg_device));
        _cleanup_free_ bool *outranked = calloc(n + 1, sizeof(bool));
        _cleanup_free_ size_t *order = malloc((n + 1) * sizeof(size_t));
        _cleanup_free_ size_t *root = malloc((n + 1) * sizeof(size_t));
        _cleanup_free_ struct fs_key *keys = malloc((2 * n + 1) * sizeof(struct fs_key));
        _cleanup_free_ struct bsg_device *group = malloc((n + 1) * sizeof(struct bsg_device));

        int doubt_rank = -1; /* the highest rank of a device in doubt */

        if (!devs || !outranked) {
                /* no memory to decide: every doubt ends in skip */
                for (size_t i = 0; i < n; i++)
                        ret_verdicts[i] = VERDICT(BSG_SKIP, BSG_REASON_IN_DOUBT);
                return;
        }
        /* who takes part where devices collide, over the whole set (names cross filesystems) */
        (void)bsg_outranked(in, n, outranked);
        for (size_t i = 0; i < n; i++) {
                devs[i] = in[i];
                devs[i].outranked = outranked[i];
        }
        /* a zoned device is nobody's copy: its doubt is its own */
        for (size_t i = 0; i < n; i++)
                if (is_in_doubt(&devs[i]) && !is_zoned(&devs[i]) && (int)devs[i].rank > doubt_rank)
                        doubt_rank = (int)devs[i].rank;
        if (!order || !root || !keys || !group) {
                /* the same verdicts, in O(n^2) */
                for (size_t i = 0; i < n; i++)
                        ret_verdicts[i] = bsg_policy_decide_one(devs, n, i, clone_policy);
                goto out;
        }
        /* A verdict depends only on the devices of the same filesystem: decide each group's devices
         * among themselves, so a thousand unique filesystems cost n log n, not n^2. */
        size_t nk = 0;
        for (size_t i = 0; i < n; i++) {
                root[i] = i;
                if (devs[i].state != BSG_DEV_BTRFS)
                        continue;
                keys[nk++] = (struct fs_key){devs[i].fsid, i};
                if (memcmp(metadata_uuid_of(&devs[i]), devs[i].fsid, BSG_UUID_SIZE) != 0)
                        keys[nk++] = (struct fs_key){metadata_uuid_of(&devs[i]), i};
        }
        qsort(keys, nk, sizeof(keys[0]), cmp_key);
        for (size_t k = 1; k < nk; k++)
                if (cmp_key(&keys[k - 1], &keys[k]) == 0) {
                        size_t x = group_root(root, keys[k - 1].dev), y = group_root(root, keys[k].dev);
                        if (x != y)
                                root[x > y ? x : y] = x < y ? x : y;
                }
        for (size_t i = 0; i < n; i++) {
                order[i] = i;
                root[i] = group_root(root, i);
        }
        /* every root is now final (root[r] == r for each group's root): a plain key for the sort */
        qsort_r(order, n, sizeof(size_t), cmp_by_group, root);
        for (size_t a = 0, b; a < n; a = b) {
                for (b = a + 1; b < n && devs[order[a]].state == BSG_DEV_BTRFS && root[order[b]] == root[order[a]]; b++)
                        ;
                for (size_t k = a; k < b; k++)
                        group[k - a] = devs[order[k]];
                for (size_t k = a; k < b; k++)
                        ret_verdicts[order[k]] = bsg_policy_decide_one(group, b - a, k - a, clone_policy);
        }
out:
        /* a device of unknown content may be a copy of any device it would outrank or tie with: none of
         * those is scanned; a device of a higher rank would win that collision, so the doubt stays
         * where it starts (a stalled stick holds back no internal disk) */
        for (size_t i = 0; i < n; i++)
                if (ret_verdicts[i].decision == BSG_SCAN && (int)devs[i].rank <= doubt_rank)
                        ret_verdicts[i] = VERDICT(BSG_SKIP, BSG_REASON_IN_DOUBT);
}
