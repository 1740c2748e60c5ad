/* libFuzzer target: properties of the pure decide/plan core (helper/policy.c bsg_policy_decide(),
 * helper/plan.c plan_build()) over generated worlds, the invariants of docs/SECURITY.md "What must
 * hold" as the pure core can show them.
 *
 * Input: byte 0 the clone policy and a permutation seed, byte 1 the number of devices (1..MAX_DEVS),
 * then DEV_BYTES bytes per device for MAX_DEVS devices, then a byte of names per device (missing
 * bytes are 0): its state (btrfs, not btrfs, invalid,
 * unknown: a read that stalled, unreadable), which of four fsids and metadata_uuids it carries,
 * devid, num_devices, device UUID, seed, trust, stack (held), partitioned disk, zoned, fsid change,
 * mounts, active slot, storage id (two names of one storage), /dev/disk names (a label, a partition
 * name, a PARTUUID, each one of two or none) and whether it carries a name the system mounts by. The
 * worlds hold clones, crafted superblocks (a metadata_uuid that is another device's fsid,
 * fsid-changing), stacks, stalls and sticks that copy names.
 *
 * Properties:
 *  1. Verdicts are a function of the set: the same for every order of the devices.
 *  2. In doubt (unknown, unreadable, invalid superblock) a device is never scan.
 *  3. A hot-pluggable (untrusted) device not in use is never scan when a trusted device that counts
 *     (valid, not held, not a partitioned disk, not zoned) is of the same filesystem.
 *  4. Doubt stays where it starts: taking a device in doubt out of the world changes the verdict of
 *     no device of a higher rank (trusted, then fixed, then hot-pluggable).
 *  5. The plan: the skip list is written first, every forget comes before every scan; only scan
 *     devices are scanned; the plan never forgets a device whose verdict is doubt, and never a
 *     trusted device that was scanned (registered) because another device is in doubt.
 *  6. The loser is withheld: a hot-pluggable device not in use that carries a name the system mounts
 *     by, or shares a PARTUUID, a partition name or (both showing their filesystem) a label with a
 *     device of a higher rank, loses the rank rule; with btrfs it is never scan and owns no link. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "policy.h"
#include "rank.h"

#define CHECK(x)                                                                                        \
        do {                                                                                            \
                if (!(x))                                                                               \
                        __builtin_trap();                                                               \
        } while (0)

/* Property 4 holds on the rank rule (a device in doubt holds back only the devices it could outrank
 * or tie with); the policy before it turned every scan of the set into in-doubt while any device was
 * unknown, a finding on the first inputs (fuzz/regressions/property). */

#define MAX_DEVS 8
#define DEV_BYTES 6

static const char *const nodes[MAX_DEVS] = {"/dev/f0", "/dev/f1", "/dev/f2", "/dev/f3",
                                            "/dev/f4", "/dev/f5", "/dev/f6", "/dev/f7"};
static const char *const storages[MAX_DEVS] = {"serial:0", "serial:1", "loop:1:2:0", "wwid:3",
                                               "serial:4", "serial:5", "serial:6", "serial:7"};

static void uuid_of(uint8_t out[BSG_UUID_SIZE], unsigned k)
{
        memset(out, 0x10 + (int)k, BSG_UUID_SIZE);
}

static bool in_use(const struct bsg_device *d)
{
        return d->self_mounted || d->mounted_member;
}

/* The rank collisions are decided by: trusted, then fixed, then hot-pluggable. */
static int rank(const struct bsg_device *d)
{
        return (int)d->rank;
}

static bool in_doubt(const struct bsg_device *d)
{
        return d->state == BSG_DEV_UNKNOWN || d->state == BSG_DEV_UNREADABLE;
}

static void gen_device(struct bsg_device *d, size_t i, const uint8_t *b, uint8_t names)
{
        static const enum bsg_sb_state states[8] = {BSG_DEV_BTRFS, BSG_DEV_BTRFS,   BSG_DEV_BTRFS,   BSG_DEV_BTRFS,
                                                    BSG_DEV_NOT_BTRFS, BSG_DEV_INVALID, BSG_DEV_UNKNOWN,
                                                    BSG_DEV_UNREADABLE};
        memset(d, 0, sizeof(*d));
        d->devnode = nodes[i];
        d->path_ok = true;
        d->state = states[b[0] & 7];
        if (d->state == BSG_DEV_BTRFS) {
                uuid_of(d->fsid, (b[0] >> 3) & 3);
                d->metadata_uuid_feature = (b[0] >> 5) & 1;
                if (d->metadata_uuid_feature)
                        uuid_of(d->metadata_uuid, (b[0] >> 6) & 3);
                d->devid = 1 + (b[1] & 3) % 3;
                d->num_devices = 1 + ((b[1] >> 2) & 3) % 3;
                /* the device UUID follows the devid (an honest copy), or not (a crafted one) */
                uuid_of(d->dev_uuid, (b[1] >> 4) & 1 ? 8 + ((b[1] >> 5) & 3) : 4 + (unsigned)d->devid);
                d->seeding = ((b[1] >> 7) & 1) && (b[2] & 1);
                d->fsid_changing = ((b[2] >> 1) & 7) == 0;
        }
        d->untrusted = (b[3] & 1) != 0;
        d->rank = !d->untrusted ? BSG_RANK_TRUSTED : (b[5] & 2) ? BSG_RANK_FIXED : BSG_RANK_HOTPLUG;
        d->held = (b[3] & 0x0e) == 0x02;
        d->partitioned_disk = (b[3] & 0x0e) == 0x04;
        d->zoned = (b[3] & 0x0e) == 0x06;
        d->self_mounted = d->state == BSG_DEV_BTRFS && (b[3] & 0x30) == 0x10;
        d->mounted_member = d->self_mounted && (b[3] & 0x40);
        d->slot_active = (b[3] & 0x80) != 0;
        d->storage_id = b[4] & 1 ? storages[i] : NULL;
        if ((b[4] & 0x1c) == 0x1c)
                d->path_ok = false;
        d->fsid_mounted = d->self_mounted || (b[5] & 1);
        static const char *const labels[4] = {NULL, "data", "rootfs", NULL};
        static const char *const partlabels[4] = {NULL, "home", "rootfs-A", NULL};
        static const char *const partuuids[4] = {NULL, "0fa0-1", "0fa0-2", NULL};
        d->names[BSG_NAME_LABEL] = d->state == BSG_DEV_BTRFS || d->state == BSG_DEV_NOT_BTRFS ? labels[names & 3] : NULL;
        d->names[BSG_NAME_PARTLABEL] = partlabels[(names >> 2) & 3];
        d->names[BSG_NAME_PARTUUID] = partuuids[(names >> 4) & 3];
        d->reserved = (names >> 6) & 1;
}

static bool shows_fs(const struct bsg_device *d)
{
        return !d->partitioned_disk && !d->zoned && !d->held;
}

/* Whether A and B share a /dev/disk name the rank rule weighs against hot-pluggable media. */
static bool share_name(const struct bsg_device *a, const struct bsg_device *b)
{
        for (enum bsg_name_kind k = 0; k < _BSG_NAME_MAX; k++) {
                if (!a->names[k] || !b->names[k] || strcmp(a->names[k], b->names[k]) != 0)
                        continue;
                if (k != BSG_NAME_LABEL || (shows_fs(a) && shows_fs(b)))
                        return true;
        }
        return false;
}

/* fsid_mounted as the system derives it: a device of a mounted filesystem knows it is mounted. */
static void derive_mounts(struct bsg_device *d, size_t n)
{
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < n; k++)
                        if (d[k].self_mounted && d[i].state == BSG_DEV_BTRFS &&
                            memcmp(d[i].fsid, d[k].fsid, BSG_UUID_SIZE) == 0)
                                d[i].fsid_mounted = true;
}

static bool verdict_eq(struct bsg_verdict a, struct bsg_verdict b)
{
        return a.decision == b.decision && a.reason == b.reason;
}

static bool counts_as_trusted_twin(const struct bsg_device *t, const struct bsg_device *u)
{
        return !t->untrusted && t->state == BSG_DEV_BTRFS && !t->held && !t->partitioned_disk && !t->zoned &&
               same_filesystem(t, u);
}

static void check_plan(const struct bsg_device *d, const struct bsg_verdict *v, size_t n, const bool *registered,
                       const bool *scanned_without_doubt)
{
        struct entry e[MAX_DEVS];
        struct plan p;

        for (size_t i = 0; i < n; i++)
                e[i] = (struct entry){.devnode = d[i].devnode, .devnum = (dev_t)(i + 1), .dev = (ssize_t)i,
                                      .pd = d[i], .v = v[i], .registered = registered[i]};
        /* boot (every device), and the event of one device */
        for (size_t target = n > 0 ? (size_t)(registered[0] + 2 * v[0].decision) % n : 0, round = 0; round < 2;
             round++, target = n) {
                if (plan_build(e, n, target < n ? target : SIZE_MAX, target < n ? PLAN_MODE_EVENT : PLAN_MODE_BOOT,
                               &p) < 0)
                        continue; /* out of memory: nothing planned */
                CHECK(p.n >= 1 && p.v[0].type == PLAN_SKIP_LIST);
                bool scanned = false;
                for (size_t k = 1; k < p.n; k++) {
                        const struct plan_action *a = &p.v[k];
                        CHECK(a->entry < n);
                        const struct entry *x = &e[a->entry];
                        switch (a->type) {
                        case PLAN_FORGET:
                                CHECK(!scanned); /* forgets before scans */
                                CHECK(x->registered && !x->pd.self_mounted);
                                CHECK(x->v.reason != BSG_REASON_IN_DOUBT && x->v.reason != BSG_REASON_UNREADABLE);
                                CHECK(!(scanned_without_doubt[a->entry] && !x->pd.untrusted &&
                                        x->v.reason == BSG_REASON_IN_DOUBT));
                                CHECK(!scanned_without_doubt[a->entry] || x->v.decision != BSG_SCAN);
                                break;
                        case PLAN_SCAN:
                        case PLAN_READY:
                                scanned = true;
                                CHECK(x->v.decision == BSG_SCAN);
                                CHECK(a->type != PLAN_READY || a->entry == target);
                                break;
                        case PLAN_UNREADABLE:
                                CHECK(x->v.decision == BSG_SCAN);
                                break;
                        case PLAN_SKIP_LIST:
                                CHECK(false); /* once, first */
                        }
                }
                /* a trusted device registered while nobody was in doubt stays registered */
                for (size_t i = 0; i < n; i++)
                        if (scanned_without_doubt[i] && registered[i] && !d[i].untrusted &&
                            v[i].reason == BSG_REASON_IN_DOUBT)
                                for (size_t k = 1; k < p.n; k++)
                                        CHECK(!(p.v[k].type == PLAN_FORGET && p.v[k].entry == i));
                plan_done(&p);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* the devices' names after all their records: inputs from before names still decode alike */
        uint8_t buf[2 + MAX_DEVS * (DEV_BYTES + 1)] = {0};
        struct bsg_device d[MAX_DEVS], perm_d[MAX_DEVS], rest[MAX_DEVS];
        struct bsg_verdict v[MAX_DEVS], pv[MAX_DEVS], rv[MAX_DEVS];
        size_t perm[MAX_DEVS];

        memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf));
        enum bsg_clone_policy policy = buf[0] & 1 ? BSG_CLONE_ACTIVE : BSG_CLONE_SKIP_ALL;
        size_t n = 1 + buf[1] % MAX_DEVS;
        for (size_t i = 0; i < n; i++) {
                const uint8_t *b = buf + 2 + i * DEV_BYTES;
                gen_device(&d[i], i, b, buf[2 + MAX_DEVS * DEV_BYTES + i]);
                /* a second name of the storage of an earlier device (two loop devices over one file,
                 * two paths to one disk): the same bytes, so the same superblock */
                if (i > 0 && (b[4] & 0x62) == 0x62) {
                        size_t j = (b[5] >> 1) % i;
                        struct bsg_device same = d[j];
                        same.devnode = d[i].devnode;
                        same.untrusted = d[i].untrusted;
                        same.rank = d[i].rank;
                        same.self_mounted = same.mounted_member = false;
                        same.path_ok = d[i].path_ok;
                        same.slot_active = d[i].slot_active;
                        if (!d[j].storage_id)
                                d[j].storage_id = storages[j];
                        same.storage_id = d[j].storage_id;
                        d[i] = same;
                }
        }
        derive_mounts(d, n);
        bsg_policy_decide(d, n, policy, v);

        /* 1: any order, the same verdicts (a permutation from the seed) */
        for (size_t i = 0; i < n; i++)
                perm[i] = i;
        unsigned seed = buf[0] >> 1;
        for (size_t i = n; i > 1; i--) {
                seed = seed * 1103515245u + 12345u;
                size_t j = (seed >> 8) % i, t = perm[i - 1];
                perm[i - 1] = perm[j];
                perm[j] = t;
        }
        for (size_t i = 0; i < n; i++)
                perm_d[i] = d[perm[i]];
        bsg_policy_decide(perm_d, n, policy, pv);
        for (size_t i = 0; i < n; i++)
                CHECK(verdict_eq(pv[i], v[perm[i]]));
        /* ... and decided one by one where nothing is unknown (the grouped whole-set decision is a
         * shortcut of it) */
        bool unknown = false;
        for (size_t i = 0; i < n; i++)
                unknown = unknown || d[i].state == BSG_DEV_UNKNOWN;
        /* decide_one() takes the rank rule's answer as given (bsg_policy_decide() works it out once) */
        bool out[MAX_DEVS];
        struct bsg_device ranked[MAX_DEVS];
        CHECK(bsg_outranked(d, n, out) == 0);
        for (size_t i = 0; i < n; i++) {
                ranked[i] = d[i];
                ranked[i].outranked = out[i];
        }
        for (size_t i = 0; i < n && !unknown; i++)
                CHECK(verdict_eq(bsg_policy_decide_one(ranked, n, i, policy), v[i]));

        for (size_t i = 0; i < n; i++) {
                /* 2: doubt is never scan */
                if (in_doubt(&d[i]) || d[i].state == BSG_DEV_INVALID || d[i].state == BSG_DEV_NOT_BTRFS)
                        CHECK(v[i].decision != BSG_SCAN);
                /* 3: a hot-pluggable copy of trusted storage is never scan */
                if (d[i].untrusted && !in_use(&d[i]))
                        for (size_t k = 0; k < n; k++)
                                if (k != i && counts_as_trusted_twin(&d[k], &d[i]))
                                        CHECK(v[i].decision != BSG_SCAN);
                /* 6: a hot-pluggable device carrying a reserved name or a higher rank's name loses */
                bool loses = d[i].rank == BSG_RANK_HOTPLUG && !in_use(&d[i]) && d[i].reserved;
                for (size_t k = 0; k < n && d[i].rank == BSG_RANK_HOTPLUG && !in_use(&d[i]); k++)
                        loses = loses || (k != i && d[k].rank > BSG_RANK_HOTPLUG && share_name(&d[i], &d[k]));
                if (loses) {
                        CHECK(out[i]);
                        if (d[i].state == BSG_DEV_BTRFS)
                                CHECK(v[i].decision != BSG_SCAN && !bsg_verdict_may_own_links(&v[i]));
                }
        }

        /* 4: a device in doubt changes no verdict of a higher rank; 5: the plan, with what a run
         * without that device registered */
        for (size_t x = 0; x < n; x++) {
                if (!in_doubt(&d[x]))
                        continue;
                size_t m = 0, map[MAX_DEVS];
                for (size_t i = 0; i < n; i++)
                        if (i != x) {
                                map[m] = i;
                                rest[m++] = d[i];
                        }
                bsg_policy_decide(rest, m, policy, rv);
                bool registered[MAX_DEVS] = {false}, scanned[MAX_DEVS] = {false};
                for (size_t k = 0; k < m; k++) {
                        size_t i = map[k];
                        if (rank(&d[i]) > rank(&d[x]))
                                CHECK(verdict_eq(v[i], rv[k]));
                        scanned[i] = rv[k].decision == BSG_SCAN;
                        registered[i] = scanned[i];
                }
                check_plan(d, v, n, registered, scanned);
        }
        /* and with every device registered (what a stale inventory may say) */
        bool all[MAX_DEVS], none[MAX_DEVS] = {false};
        for (size_t i = 0; i < n; i++)
                all[i] = true;
        check_plan(d, v, n, all, none);
        return 0;
}
