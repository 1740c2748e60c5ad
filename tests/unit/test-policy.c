/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Decision policy: one table row per situation (a `_one()` helper each), and a pure-level order
 * independence test that plays every arrival order of a device set against a model kernel. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "policy.h"
#include "rank.h"
#include "skiplist.h"

/* A compact device description: fsid number, devid, num_devices, flags. */
struct spec {
        const char *node;
        int fs; /* 0: not btrfs, -1: invalid superblock, else fsid byte */
        unsigned devid, num;
        bool seed, active, hotplug, fsid_mounted, self_mounted, bad_path;
        bool member, partitioned, held;
        const char *storage; /* storage_id */
        int uuid;            /* device UUID byte; 0: the devid's */
        int mu;              /* METADATA_UUID feature with this metadata_uuid byte; 0: none */
        bool changing;       /* CHANGING_FSID_V2 */
        bool zoned;
        bool fixed;          /* fixed storage the boot does not name (rank between the two) */
        const char *label;   /* by-label */
        bool reserved;       /* carries a name the system mounts by */
};

static struct bsg_device to_dev(const struct spec *s)
{
        struct bsg_device d = {
                .devnode = s->node,
                .state = s->fs > 0 ? BSG_DEV_BTRFS : s->fs < 0 ? BSG_DEV_INVALID : BSG_DEV_NOT_BTRFS,
                .devid = s->devid ? s->devid : 1,
                .num_devices = s->num ? s->num : 1,
                .seeding = s->seed,
                .slot_active = s->active,
                .untrusted = s->hotplug || s->fixed,
                .rank = s->hotplug ? BSG_RANK_HOTPLUG : s->fixed ? BSG_RANK_FIXED : BSG_RANK_TRUSTED,
                .names = {[BSG_NAME_LABEL] = s->label},
                .reserved = s->reserved,
                .fsid_mounted = s->fsid_mounted,
                .self_mounted = s->self_mounted,
                .path_ok = !s->bad_path,
                .mounted_member = s->member,
                .partitioned_disk = s->partitioned,
                .held = s->held,
                .storage_id = s->storage,
        };
        memset(d.fsid, s->fs > 0 ? s->fs : 0, sizeof(d.fsid));
        memset(d.dev_uuid, s->uuid ? s->uuid : (int)d.devid, sizeof(d.dev_uuid));
        d.metadata_uuid_feature = s->mu != 0;
        memset(d.metadata_uuid, s->mu, sizeof(d.metadata_uuid));
        d.fsid_changing = s->changing;
        d.zoned = s->zoned;
        return d;
}

#define MAXDEV 8

struct policy_case {
        const char *name;
        enum bsg_clone_policy pol;
        struct spec devs[MAXDEV];
        size_t n;
        size_t target;
        enum bsg_decision decision;
        enum bsg_reason reason;
};

static void policy_one(const struct policy_case *t)
{
        struct bsg_device d[MAXDEV];
        struct bsg_verdict all[MAXDEV];

        check_case = t->name;
        for (size_t i = 0; i < t->n; i++)
                d[i] = to_dev(&t->devs[i]);
        /* the whole set: the rank rule (rank.h) runs over it first */
        bsg_policy_decide(d, t->n, t->pol, all);
        struct bsg_verdict v = all[t->target];
        CHECK_STREQ(bsg_decision_name(v.decision), bsg_decision_name(t->decision));
        CHECK_STREQ(bsg_reason_name(v.reason), bsg_reason_name(t->reason));
}

#define SKIPALL BSG_CLONE_SKIP_ALL
#define ACTIVE BSG_CLONE_ACTIVE
static const struct policy_case policy_cases[] = {
        {"not-btrfs", SKIPALL, {{"/dev/a", 0}}, 1, 0, BSG_IGNORE, BSG_REASON_NOT_BTRFS},
        /* issue 10 item 3: the kernel registers anything with the magic at 64 KiB */
        {"invalid", SKIPALL, {{"/dev/a", -1}}, 1, 0, BSG_SKIP, BSG_REASON_INVALID_SUPERBLOCK},
        {"invalid-twin-is-no-clone", SKIPALL, {{"/dev/a", 1}, {"/dev/b", -1}}, 2, 0, BSG_SCAN, BSG_REASON_UNIQUE},
        {"unique", SKIPALL, {{"/dev/a", 1}, {"/dev/b", 2}}, 2, 0, BSG_SCAN, BSG_REASON_UNIQUE},
        {"clone-skip-all-active", SKIPALL, {{"/dev/a", 1, .active = true}, {"/dev/b", 1}}, 2, 0, BSG_SKIP,
         BSG_REASON_CLONE},
        {"clone-skip-all-inactive", SKIPALL, {{"/dev/a", 1, .active = true}, {"/dev/b", 1}}, 2, 1, BSG_SKIP,
         BSG_REASON_CLONE},
        {"clone-active-policy-active", ACTIVE, {{"/dev/a", 1, .active = true}, {"/dev/b", 1}}, 2, 0, BSG_SCAN,
         BSG_REASON_CLONE},
        {"clone-active-policy-inactive", ACTIVE, {{"/dev/a", 1, .active = true}, {"/dev/b", 1}}, 2, 1, BSG_SKIP,
         BSG_REASON_CLONE},
        {"clone-active-policy-no-slot", ACTIVE, {{"/dev/a", 1}, {"/dev/b", 1}}, 2, 0, BSG_SKIP, BSG_REASON_CLONE},
        {"clone-active-policy-both-active", ACTIVE, {{"/dev/a", 1, .active = true}, {"/dev/b", 1, .active = true}},
         2, 0, BSG_SKIP, BSG_REASON_CLONE},
        {"three-copies", SKIPALL, {{"/dev/a", 1}, {"/dev/b", 1}, {"/dev/c", 1}}, 3, 2, BSG_SKIP, BSG_REASON_CLONE},
        {"seed", SKIPALL, {{"/dev/a", 1, .seed = true}}, 1, 0, BSG_SCAN, BSG_REASON_SEED},
        {"seed-cloned", SKIPALL, {{"/dev/a", 1, .seed = true}, {"/dev/b", 1, .seed = true}}, 2, 1, BSG_SKIP,
         BSG_REASON_CLONE},
        {"multi-device", SKIPALL, {{"/dev/a", 1, 1, 2}, {"/dev/b", 1, 2, 2}}, 2, 1, BSG_SCAN,
         BSG_REASON_MULTI_DEVICE},
        {"multi-device-alone", SKIPALL, {{"/dev/a", 1, 1, 2}}, 1, 0, BSG_SCAN, BSG_REASON_MULTI_DEVICE},
        {"raid-clone-active", SKIPALL,
         {{"/dev/a", 1, 1, 2, .active = true}, {"/dev/b", 1, 2, 2, .active = true}, {"/dev/c", 1, 1, 2}}, 3, 0,
         BSG_SCAN, BSG_REASON_RAID_CLONE_ACTIVE},
        {"raid-clone-inactive", SKIPALL,
         {{"/dev/a", 1, 1, 2, .active = true}, {"/dev/b", 1, 2, 2, .active = true}, {"/dev/c", 1, 1, 2}}, 3, 2,
         BSG_SKIP, BSG_REASON_RAID_CLONE_INACTIVE},
        {"raid-clone-other-member", SKIPALL,
         {{"/dev/a", 1, 1, 2, .active = true}, {"/dev/b", 1, 2, 2, .active = true}, {"/dev/c", 1, 1, 2}}, 3, 1,
         BSG_SCAN, BSG_REASON_MULTI_DEVICE},
        {"raid-clone-no-slot", SKIPALL, {{"/dev/a", 1, 1, 2}, {"/dev/c", 1, 1, 2}}, 2, 0, BSG_SKIP,
         BSG_REASON_RAID_CLONE_INACTIVE},
        {"hijack-usb-clone", SKIPALL, {{"/dev/a", 1, .fsid_mounted = true, .self_mounted = true},
                                       {"/dev/usb", 1, .hotplug = true, .fsid_mounted = true}},
         2, 1, BSG_SKIP, BSG_REASON_OUTRANKED},
        {"hijack-usb-seed", SKIPALL, {{"/dev/usb", 1, .seed = true, .hotplug = true, .fsid_mounted = true}}, 1, 0,
         BSG_SKIP, BSG_REASON_OUTRANKED},
        /* trust arbitrates collisions: a device that collides with nothing is scanned as with systemd's
         * rules, whatever its rank (a lone stick, a USB RAID enclosure, a seed on a card) */
        {"usb-mounted-itself", SKIPALL, {{"/dev/usb", 1, .hotplug = true, .fsid_mounted = true, .self_mounted = true}},
         1, 0, BSG_SCAN, BSG_REASON_UNIQUE},
        /* issue 18 case 10: the partition under dm-verity is its holder's, never a copy of it */
        {"held-partition-not-a-copy", SKIPALL, {{"/dev/dm-0", 1, .active = true}, {"/dev/vdb1", 1, .active = true, .held = true}},
         2, 0, BSG_SCAN, BSG_REASON_UNIQUE},
        {"held-partition-listed", SKIPALL, {{"/dev/dm-0", 1, .active = true}, {"/dev/vdb1", 1, .active = true, .held = true}},
         2, 1, BSG_SKIP, BSG_REASON_HELD},
        {"verity-root-active-clone", ACTIVE,
         {{"/dev/dm-0", 1, .active = true}, {"/dev/vdb1", 1, .active = true, .held = true}, {"/dev/vdb2", 1}}, 3, 0,
         BSG_SCAN, BSG_REASON_CLONE},
        {"verity-root-other-slot", ACTIVE,
         {{"/dev/dm-0", 1, .active = true}, {"/dev/vdb1", 1, .active = true, .held = true}, {"/dev/vdb2", 1}}, 3, 2,
         BSG_SKIP, BSG_REASON_CLONE},
        {"usb-not-mounted", SKIPALL, {{"/dev/usb", 1, .hotplug = true}}, 1, 0, BSG_SCAN, BSG_REASON_UNIQUE},
        {"untrusted-multi-device", SKIPALL, {{"/dev/loop1", 1, 1, 2, .hotplug = true}, {"/dev/loop2", 1, 2, 2, .hotplug = true}},
         2, 0, BSG_SCAN, BSG_REASON_MULTI_DEVICE},
        {"untrusted-seed", SKIPALL, {{"/dev/nbd0", 1, .seed = true, .hotplug = true}}, 1, 0, BSG_SCAN, BSG_REASON_SEED},
        {"fixed-lone", SKIPALL, {{"/dev/sdb1", 1, .fixed = true}}, 1, 0, BSG_SCAN, BSG_REASON_UNIQUE},
        {"fixed-raid1-member-alone", SKIPALL, {{"/dev/sdb1", 1, 1, 2, .fixed = true}}, 1, 0, BSG_SCAN,
         BSG_REASON_MULTI_DEVICE},
        /* ranks: trusted > fixed > hot-pluggable, by filesystem or by a shared /dev/disk name */
        {"fixed-outranks-stick", SKIPALL, {{"/dev/sdb1", 1, .fixed = true}, {"/dev/sdc1", 1, .hotplug = true}}, 2, 1,
         BSG_SKIP, BSG_REASON_OUTRANKED},
        {"fixed-outranks-stick-fixed-scanned", SKIPALL, {{"/dev/sdb1", 1, .fixed = true}, {"/dev/sdc1", 1, .hotplug = true}},
         2, 0, BSG_SCAN, BSG_REASON_UNIQUE},
        {"trusted-outranks-fixed", SKIPALL, {{"/dev/nvme0n1p2", 1}, {"/dev/sdb1", 1, .fixed = true}}, 2, 1, BSG_SKIP,
         BSG_REASON_OUTRANKED},
        {"trusted-member-outranks-fixed-member", SKIPALL, {{"/dev/nvme0n1p2", 1, 1, 2}, {"/dev/sdb1", 1, 2, 2, .fixed = true}},
         2, 1, BSG_SKIP, BSG_REASON_OUTRANKED},
        {"label-collision-other-fs", SKIPALL, {{"/dev/a", 1, .label = "root"}, {"/dev/usb", 2, .hotplug = true, .label = "root"}},
         2, 1, BSG_SKIP, BSG_REASON_OUTRANKED},
        {"label-collision-trusted-kept", SKIPALL, {{"/dev/a", 1, .label = "root"}, {"/dev/usb", 2, .hotplug = true, .label = "root"}},
         2, 0, BSG_SCAN, BSG_REASON_UNIQUE},
        {"reserved-stick-alone", SKIPALL, {{"/dev/usb", 1, .hotplug = true, .reserved = true}}, 1, 0, BSG_SKIP,
         BSG_REASON_OUTRANKED},
        /* a fixed disk the boot does not name may be the root's only carrier: it loses collisions only */
        {"reserved-fixed-alone", SKIPALL, {{"/dev/sdb1", 1, .fixed = true, .reserved = true}}, 1, 0, BSG_SCAN,
         BSG_REASON_UNIQUE},
        {"reserved-fixed-beside-trusted", SKIPALL, {{"/dev/a", 1, .reserved = true}, {"/dev/sdb1", 1, .fixed = true, .reserved = true}},
         2, 1, BSG_SKIP, BSG_REASON_OUTRANKED},
        {"reserved-trusted", SKIPALL, {{"/dev/a", 1, .reserved = true}}, 1, 0, BSG_SCAN, BSG_REASON_UNIQUE},
        {"reserved-stick-booted-from", SKIPALL,
         {{"/dev/usb", 1, .hotplug = true, .reserved = true, .self_mounted = true, .fsid_mounted = true}}, 1, 0,
         BSG_SCAN, BSG_REASON_UNIQUE},
        /* seeds follow the clone rules */
        {"cloned-seeds", SKIPALL, {{"/dev/a", 1, .seed = true}, {"/dev/b", 1, .seed = true}}, 2, 0, BSG_SKIP,
         BSG_REASON_CLONE},
        {"cloned-seeds-active", ACTIVE, {{"/dev/a", 1, .seed = true, .active = true}, {"/dev/b", 1, .seed = true}}, 2, 0,
         BSG_SCAN, BSG_REASON_CLONE},
        {"cloned-seeds-inactive", ACTIVE, {{"/dev/a", 1, .seed = true, .active = true}, {"/dev/b", 1, .seed = true}}, 2, 1,
         BSG_SKIP, BSG_REASON_CLONE},
        {"fixed-disk-fsid-mounted", SKIPALL, {{"/dev/b", 1, .fsid_mounted = true}}, 1, 0, BSG_SCAN, BSG_REASON_UNIQUE},
        /* issue 10 item 1: a fake multi-device or seed copy beside the clones */
        {"fake-multi-device-copy", SKIPALL,
         {{"/dev/a", 1, .active = true}, {"/dev/b", 1}, {"/dev/f1", 1, 1, 2, .uuid = 9}, {"/dev/f2", 1, 2, 2}}, 4, 3,
         BSG_SKIP, BSG_REASON_INCONSISTENT_COPIES},
        {"fake-multi-device-clone-too", SKIPALL,
         {{"/dev/a", 1, .active = true}, {"/dev/b", 1}, {"/dev/f1", 1, 1, 2, .uuid = 9}, {"/dev/f2", 1, 2, 2}}, 4, 1,
         BSG_SKIP, BSG_REASON_INCONSISTENT_COPIES},
        {"fake-seed-copy", SKIPALL, {{"/dev/a", 1}, {"/dev/s", 1, .seed = true}}, 2, 1, BSG_SKIP,
         BSG_REASON_INCONSISTENT_COPIES},
        {"fake-devid-uuid", SKIPALL, {{"/dev/a", 1, 1, 2}, {"/dev/b", 1, 2, 2}, {"/dev/c", 1, 2, 2, .uuid = 7}}, 3, 0,
         BSG_SKIP, BSG_REASON_INCONSISTENT_COPIES},
        {"fake-copy-mounted-member-kept", SKIPALL,
         {{"/dev/a", 1, .active = true, .fsid_mounted = true, .self_mounted = true, .member = true},
          {"/dev/f1", 1, 1, 2}, {"/dev/f2", 1, 2, 2}},
         3, 0, BSG_SCAN, BSG_REASON_UNIQUE},
        {"fake-copy-of-mounted-raid", SKIPALL,
         {{"/dev/a", 1, 1, 2, .fsid_mounted = true, .member = true}, {"/dev/b", 1, 2, 2, .fsid_mounted = true,
          .member = true}, {"/dev/f", 1, .fsid_mounted = true}},
         3, 1, BSG_SCAN, BSG_REASON_MULTI_DEVICE},
        {"consistent-raid-clone", SKIPALL, {{"/dev/a", 1, 1, 2}, {"/dev/b", 1, 2, 2}, {"/dev/c", 1, 2, 2}}, 3, 0,
         BSG_SCAN, BSG_REASON_MULTI_DEVICE},
        /* issue 10 item 2: a stick carrying an fsid internal storage carries, at boot (nothing mounted) */
        {"usb-copy-at-boot", SKIPALL, {{"/dev/a", 1}, {"/dev/usb", 1, .hotplug = true}}, 2, 1, BSG_SKIP,
         BSG_REASON_OUTRANKED},
        {"usb-copy-does-not-make-internal-a-clone", SKIPALL, {{"/dev/a", 1}, {"/dev/usb", 1, .hotplug = true}}, 2, 0,
         BSG_SCAN, BSG_REASON_UNIQUE},
        {"usb-copy-of-ab-pair", ACTIVE,
         {{"/dev/a", 1, .active = true}, {"/dev/b", 1}, {"/dev/usb", 1, .hotplug = true, .active = true}}, 3, 0,
         BSG_SCAN, BSG_REASON_CLONE},
        {"usb-fake-multi-device-of-internal", SKIPALL, {{"/dev/a", 1}, {"/dev/usb", 1, 1, 2, .hotplug = true}}, 2, 0,
         BSG_SCAN, BSG_REASON_UNIQUE},
        {"two-usb-clones", SKIPALL, {{"/dev/u1", 1, .hotplug = true}, {"/dev/u2", 1, .hotplug = true}}, 2, 0,
         BSG_SKIP, BSG_REASON_CLONE},
        {"usb-booted-from-itself", SKIPALL,
         {{"/dev/a", 1}, {"/dev/usb", 1, .hotplug = true, .self_mounted = true, .member = true}}, 2, 1, BSG_SKIP,
         BSG_REASON_CLONE},
        /* issue 10 item 3: a whole disk with partitions and a stale superblock */
        {"partitioned-disk", SKIPALL, {{"/dev/sda", 1, .partitioned = true}}, 1, 0, BSG_SKIP,
         BSG_REASON_PARTITIONED_DISK},
        {"partitioned-disk-not-a-clone", SKIPALL, {{"/dev/sda", 1, .partitioned = true}, {"/dev/sda2", 1}}, 2, 1,
         BSG_SCAN, BSG_REASON_UNIQUE},
        /* issue 10 item 8: two names of one storage */
        {"same-storage-second", SKIPALL,
         {{"/dev/loop0", 1, .storage = "loop:7:1:0"}, {"/dev/loop1", 1, .storage = "loop:7:1:0"}}, 2, 1, BSG_SKIP,
         BSG_REASON_SAME_STORAGE},
        {"same-storage-first-is-no-clone", SKIPALL,
         {{"/dev/loop0", 1, .storage = "loop:7:1:0"}, {"/dev/loop1", 1, .storage = "loop:7:1:0"}}, 2, 0, BSG_SCAN,
         BSG_REASON_UNIQUE},
        {"same-storage-mounted-kept", SKIPALL,
         {{"/dev/loop0", 1, .storage = "loop:7:1:0"}, {"/dev/loop1", 1, .storage = "loop:7:1:0", .self_mounted = true,
          .member = true, .fsid_mounted = true}},
         2, 0, BSG_SKIP, BSG_REASON_SAME_STORAGE},
        {"same-storage-beside-a-real-clone", SKIPALL,
         {{"/dev/loop0", 1, .storage = "loop:7:1:0"}, {"/dev/loop1", 1, .storage = "loop:7:1:0"},
          {"/dev/loop2", 1, .storage = "loop:7:2:0"}},
         3, 0, BSG_SKIP, BSG_REASON_CLONE},
        {"different-offsets-are-clones", SKIPALL,
         {{"/dev/loop0", 1, .storage = "loop:7:1:0"}, {"/dev/loop1", 1, .storage = "loop:7:1:1048576"}}, 2, 0,
         BSG_SKIP, BSG_REASON_CLONE},
        {"usb-serial-never-matches-internal", SKIPALL,
         {{"/dev/sda4", 1, .storage = "serial:X:1"}, {"/dev/sdz", 1, .storage = "serial:X:1", .hotplug = true}}, 2, 0,
         BSG_SCAN, BSG_REASON_UNIQUE},
        /* issue 18 case 1: identity is the kernel's (fsid and metadata_uuid, fsid-change flags) */
        {"crafted-stick-is-skipped", SKIPALL,
         {{"/dev/root", 1, .self_mounted = true, .fsid_mounted = true, .member = true},
          {"/dev/usb", 9, .mu = 1, .changing = true, .hotplug = true}},
         2, 1, BSG_SKIP, BSG_REASON_FSID_CHANGING},
        {"crafted-stick-leaves-root-alone", SKIPALL,
         {{"/dev/root", 1}, {"/dev/usb", 9, .mu = 1, .changing = true, .hotplug = true}}, 2, 0, BSG_SCAN,
         BSG_REASON_UNIQUE},
        {"crafted-fixed-disk-is-skipped", SKIPALL, {{"/dev/root", 1}, {"/dev/sdb", 9, .mu = 1, .changing = true}}, 2, 1,
         BSG_SKIP, BSG_REASON_FSID_CHANGING},
        {"crafted-fixed-disk-devid-2", SKIPALL,
         {{"/dev/root", 1}, {"/dev/sdb", 9, 2, 2, .mu = 1, .changing = true}}, 2, 1, BSG_SKIP,
         BSG_REASON_FSID_CHANGING},
        /* a fixed copy the kernel would match by metadata_uuid makes the root a clone (fail closed) */
        {"metadata-uuid-copy-is-a-clone", SKIPALL, {{"/dev/root", 1}, {"/dev/sdb", 9, .mu = 1}}, 2, 0, BSG_SKIP,
         BSG_REASON_CLONE},
        {"metadata-uuid-copy-is-a-clone-too", SKIPALL, {{"/dev/root", 1}, {"/dev/sdb", 9, .mu = 1}}, 2, 1,
         BSG_SKIP, BSG_REASON_CLONE},
        {"shared-metadata-uuid-is-a-clone", SKIPALL, {{"/dev/a", 8, .mu = 1}, {"/dev/b", 9, .mu = 1}}, 2, 0,
         BSG_SKIP, BSG_REASON_CLONE},
        {"changed-fsid-of-other-fs-is-a-clone", SKIPALL, {{"/dev/a", 1, .mu = 9}, {"/dev/b", 9}}, 2, 1, BSG_SKIP,
         BSG_REASON_CLONE},
        {"metadata-uuid-fs-unique", SKIPALL, {{"/dev/a", 8, .mu = 1}, {"/dev/b", 2}}, 2, 0, BSG_SCAN,
         BSG_REASON_UNIQUE},
        {"metadata-uuid-multi-device-member", SKIPALL, {{"/dev/a", 8, 1, 2, .mu = 1}, {"/dev/b", 8, 2, 2, .mu = 1}},
         2, 1, BSG_SCAN, BSG_REASON_MULTI_DEVICE},
        {"metadata-uuid-raid-clone", SKIPALL,
         {{"/dev/a", 8, 1, 2, .mu = 1}, {"/dev/b", 8, 2, 2, .mu = 1}, {"/dev/c", 7, 1, 2, .mu = 1}}, 3, 0, BSG_SKIP,
         BSG_REASON_RAID_CLONE_INACTIVE},
        {"usb-metadata-uuid-alone", SKIPALL, {{"/dev/usb", 8, .mu = 1, .hotplug = true}}, 1, 0, BSG_SKIP,
         BSG_REASON_UNTRUSTED_METADATA_UUID},
        {"usb-metadata-uuid-booted-from", SKIPALL,
         {{"/dev/usb", 8, .mu = 1, .hotplug = true, .self_mounted = true, .member = true, .fsid_mounted = true}}, 1, 0,
         BSG_SCAN, BSG_REASON_UNIQUE},
        {"fixed-metadata-uuid-alone", SKIPALL, {{"/dev/sdb", 8, .mu = 1}}, 1, 0, BSG_SCAN, BSG_REASON_UNIQUE},
        {"fixed-fsid-changing-alone", SKIPALL, {{"/dev/sdb", 8, .changing = true}}, 1, 0, BSG_SKIP,
         BSG_REASON_FSID_CHANGING},
        /* issue 18 case 6: a zoned device is listed whatever its 64 KiB hold, and is no copy */
        {"zoned-btrfs", SKIPALL, {{"/dev/sdz", 1, .zoned = true}}, 1, 0, BSG_SKIP, BSG_REASON_ZONED},
        {"zoned-not-btrfs", SKIPALL, {{"/dev/sdz", 0, .zoned = true}}, 1, 0, BSG_SKIP, BSG_REASON_ZONED},
        {"zoned-invalid", SKIPALL, {{"/dev/sdz", -1, .zoned = true}}, 1, 0, BSG_SKIP, BSG_REASON_ZONED},
        {"zoned-twin-is-no-clone", SKIPALL, {{"/dev/a", 1}, {"/dev/sdz", 1, .zoned = true}}, 2, 0, BSG_SCAN,
         BSG_REASON_UNIQUE},
        /* mounted: the kernel holds it already; a skip would only take its readiness away */
        {"zoned-mounted", SKIPALL, {{"/dev/sdz", 1, .zoned = true, .self_mounted = true, .member = true, .fsid_mounted = true}},
         1, 0, BSG_SCAN, BSG_REASON_UNIQUE},
        {"fsid-changing-mounted", SKIPALL,
         {{"/dev/sdb", 8, .changing = true, .self_mounted = true, .member = true, .fsid_mounted = true}}, 1, 0, BSG_SCAN,
         BSG_REASON_UNIQUE},
        {"bad-path", SKIPALL, {{"/dev/mapper/a,b", 1, .bad_path = true}}, 1, 0, BSG_SKIP, BSG_REASON_BAD_PATH},
        {"bad-path-twin-still-clone", SKIPALL, {{"/dev/a", 1}, {"/dev/mapper/a b", 1, .bad_path = true}}, 2, 0,
         BSG_SKIP, BSG_REASON_CLONE},
};

/* ---- order independence against a model kernel ------------------------------------------------ */

struct model {
        bool registered[MAXDEV];
        char skip[BSG_SKIPLIST_MAX + 1];
};

/* One invocation for device T with PRESENT devices: decide over the present set, forget registered
 * devices no longer scanned, scan T if it is to be scanned, rewrite the skip list (the helper's
 * udev mode, without I/O). BOOT: act for every present device. */
static void model_step(const struct spec *all, const bool *present, size_t n, size_t t, bool boot,
                       enum bsg_clone_policy pol, struct model *m)
{
        struct bsg_device d[MAXDEV] = {0};
        size_t idx[MAXDEV], k = 0;
        struct bsg_verdict v[MAXDEV] = {0};
        const char *paths[MAXDEV];
        size_t np = 0;

        for (size_t i = 0; i < n; i++)
                if (present[i]) {
                        idx[k] = i;
                        d[k++] = to_dev(&all[i]);
                }
        bsg_policy_decide(d, k, pol, v);
        for (size_t j = 0; j < k; j++) {
                size_t i = idx[j];
                if (m->registered[i] && v[j].decision != BSG_SCAN && !all[i].self_mounted)
                        m->registered[i] = false; /* FORGET (the kernel refuses it for a mounted device) */
                if (v[j].decision == BSG_SCAN && (boot || i == t))
                        m->registered[i] = true;
                if (v[j].decision == BSG_SKIP)
                        paths[np++] = all[i].node;
        }
        char *list = NULL;
        bsg_skiplist_format(paths, NULL, np, &list, NULL, NULL);
        snprintf(m->skip, sizeof(m->skip), "%s", list ? list : "");
        free(list);
}

static bool next_perm(size_t *a, size_t n)
{
        if (n < 2)
                return false;
        size_t i = n - 1;
        while (i > 0 && a[i - 1] >= a[i])
                i--;
        if (i == 0)
                return false;
        size_t j = n - 1;
        while (a[j] <= a[i - 1])
                j--;
        size_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
        for (size_t l = i, r = n - 1; l < r; l++, r--) {
                t = a[l];
                a[l] = a[r];
                a[r] = t;
        }
        return true;
}

struct order_case {
        const char *name;
        enum bsg_clone_policy pol;
        struct spec devs[MAXDEV];
        size_t n;
        const char *want_registered; /* comma-separated nodes, sorted as listed */
        const char *want_skip;
};

static void registered_string(const struct spec *devs, size_t n, const struct model *m, char *out, size_t size)
{
        out[0] = '\0';
        for (size_t i = 0; i < n; i++)
                if (m->registered[i])
                        snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? "," : "", devs[i].node);
}

static void order_one(const struct order_case *t)
{
        size_t order[MAXDEV];
        int count = 0;

        check_case = t->name;
        for (size_t i = 0; i < t->n; i++)
                order[i] = i;
        do {
                for (int mode = 0; mode < 3; mode++) { /* 0 hotplug, 1 coldplug, 2 boot then coldplug */
                        struct model m = {0};
                        bool present[MAXDEV] = {0};
                        char reg[512];
                        for (size_t i = 0; i < t->n; i++) {
                                present[i] = mode > 0;
                                m.registered[i] = t->devs[i].self_mounted; /* registered by its mount */
                        }
                        if (mode == 2)
                                model_step(t->devs, present, t->n, SIZE_MAX, true, t->pol, &m);
                        for (size_t s = 0; s < t->n; s++) {
                                present[order[s]] = true;
                                model_step(t->devs, present, t->n, order[s], false, t->pol, &m);
                        }
                        registered_string(t->devs, t->n, &m, reg, sizeof(reg));
                        if (strcmp(reg, t->want_registered) != 0 || strcmp(m.skip, t->want_skip) != 0) {
                                fprintf(stderr, "order");
                                for (size_t s = 0; s < t->n; s++)
                                        fprintf(stderr, " %s", t->devs[order[s]].node);
                                fprintf(stderr, " (mode %d): registered {%s} skip {%s}\n", mode, reg, m.skip);
                        }
                        CHECK_STREQ(reg, t->want_registered);
                        CHECK_STREQ(m.skip, t->want_skip);
                }
                count++;
        } while (next_perm(order, t->n));
        CHECK(count > 0);
}

static const struct order_case order_cases[] = {
        {"steamos-skip-all", SKIPALL,
         {{"/dev/sda4", 1, .active = true}, {"/dev/sda5", 1}, {"/dev/sda6", 2, .active = true}, {"/dev/sda7", 2},
          {"/dev/sda8", 3}, {"/dev/sda1", 0}},
         6, "/dev/sda8", "/dev/sda4,/dev/sda5,/dev/sda6,/dev/sda7"},
        {"steamos-active", ACTIVE,
         {{"/dev/sda4", 1, .active = true}, {"/dev/sda5", 1}, {"/dev/sda6", 2, .active = true}, {"/dev/sda7", 2},
          {"/dev/sda8", 3}, {"/dev/sda1", 0}},
         6, "/dev/sda4,/dev/sda6,/dev/sda8", "/dev/sda5,/dev/sda7"},
        {"raid-clone", SKIPALL,
         {{"/dev/sdc1", 4, 1, 2, .active = true}, {"/dev/sdd1", 4, 2, 2, .active = true}, {"/dev/sde1", 4, 1, 2},
          {"/dev/sdf1", 5, .seed = true}},
         4, "/dev/sdc1,/dev/sdd1,/dev/sdf1", "/dev/sde1"},
        {"usb-hijack", SKIPALL,
         {{"/dev/sda4", 1, .active = true, .fsid_mounted = true, .self_mounted = true},
          {"/dev/sdg", 1, .hotplug = true, .fsid_mounted = true}, {"/dev/sda8", 3}},
         3, "/dev/sda4,/dev/sda8", "/dev/sdg"},
        {"usb-copy-at-boot", SKIPALL,
         {{"/dev/sda4", 1, .active = true}, {"/dev/sda5", 1}, {"/dev/sdg1", 1, .hotplug = true, .active = true}}, 3, "",
         "/dev/sda4,/dev/sda5,/dev/sdg1"},
        {"fake-multi-device", SKIPALL,
         {{"/dev/sda4", 1, .active = true}, {"/dev/sda5", 1}, {"/dev/loop0", 1, 1, 2, .uuid = 9},
          {"/dev/loop1", 1, 2, 2}},
         4, "", "/dev/loop0,/dev/loop1,/dev/sda4,/dev/sda5"},
        /* issue 18 case 1: the crafted stick in every order, beside the A/B pair and a unique fs */
        {"crafted-stick", SKIPALL,
         {{"/dev/sda4", 1, .active = true}, {"/dev/sda5", 1}, {"/dev/sda8", 3},
          {"/dev/sdg", 9, .mu = 3, .changing = true, .hotplug = true}},
         4, "/dev/sda8", "/dev/sda4,/dev/sda5,/dev/sdg"},
        /* a chain: b's metadata_uuid is a's fsid, c's is b's fsid: one group whatever the order */
        {"metadata-uuid-chain", SKIPALL, {{"/dev/a", 1}, {"/dev/b", 2, .mu = 1}, {"/dev/c", 3, .mu = 2}, {"/dev/d", 4}}, 4,
         "/dev/d", "/dev/a,/dev/b,/dev/c"},
        {"same-storage", SKIPALL,
         {{"/dev/loop0", 1, .storage = "loop:7:1:0"}, {"/dev/loop1", 1, .storage = "loop:7:1:0"}}, 2, "/dev/loop0",
         "/dev/loop1"},
};

/* Name collisions: a fixed disk the boot does not name that shares only a given name (label,
 * partition name) with the boot disk takes part; one that shares its PARTUUID, or a stick sharing
 * either, is outranked. */
static void name_collisions(void)
{
        struct bsg_device d[3] = {
                {.devnode = "/dev/sda2", .state = BSG_DEV_NOT_BTRFS, .rank = BSG_RANK_TRUSTED, .path_ok = true},
                {.devnode = "/dev/sdb1", .state = BSG_DEV_NOT_BTRFS, .rank = BSG_RANK_FIXED, .untrusted = true,
                 .path_ok = true},
                {.devnode = "/dev/sdc1", .state = BSG_DEV_NOT_BTRFS, .rank = BSG_RANK_HOTPLUG, .untrusted = true,
                 .path_ok = true},
        };
        bool out[3];

        for (size_t i = 0; i < 3; i++) {
                d[i].names[BSG_NAME_PARTLABEL] = "Linux filesystem";
                d[i].names[BSG_NAME_LABEL] = "data";
        }
        check_case = "names: a fixed disk with the boot disk's default partition name and label";
        CHECK(bsg_outranked(d, 3, out) == 0);
        CHECK(!out[0] && !out[1] && out[2]);
        check_case = "names: udev's encoded form and the plain one are one name";
        CHECK(bsg_name_equal(BSG_NAME_PARTLABEL, "Linux\\x20filesystem", "Linux filesystem"));
        CHECK(!bsg_name_equal(BSG_NAME_PARTLABEL, "Linux\\x20filesystem", "Linux_filesystem"));
        CHECK(bsg_name_equal(BSG_NAME_UUID, "0B7B1F3C-5F0E-4C47-9D5E-1A2B3C4D5E6F", "0b7b1f3c-5f0e-4c47-9d5e-1a2b3c4d5e6f"));
        CHECK(!bsg_name_equal(BSG_NAME_LABEL, "Data", "data"));
        d[2].names[BSG_NAME_PARTLABEL] = "Linux\\x20filesystem";
        d[2].names[BSG_NAME_LABEL] = NULL;
        CHECK(bsg_outranked(d, 3, out) == 0);
        CHECK(out[2]);
        check_case = "names: a fixed disk with the boot disk's PARTUUID";
        d[0].names[BSG_NAME_PARTUUID] = d[1].names[BSG_NAME_PARTUUID] = "0b7b1f3c-5f0e-4c47-9d5e-1a2b3c4d5e6f";
        CHECK(bsg_outranked(d, 3, out) == 0);
        CHECK(!out[0] && out[1] && out[2]);
}

int main(void)
{
        name_collisions();
        for (size_t i = 0; i < sizeof(policy_cases) / sizeof(policy_cases[0]); i++)
                policy_one(&policy_cases[i]);

        /* the verdicts do not depend on the order of the set, and bsg_policy_decide() (grouped) agrees
         * with bsg_policy_decide_one() over the whole set */
        check_case = "set-order";
        {
                struct spec s[] = {{"/dev/a", 1, .active = true}, {"/dev/b", 1}, {"/dev/c", 2, 1, 2},
                                   {"/dev/d", 2, 1, 2, .active = true}, {"/dev/e", 5, 2, 2, .mu = 2}, {"/dev/f", 3},
                                   {"/dev/g", 6, .mu = 1}};
                size_t n = 7, order[7] = {0, 1, 2, 3, 4, 5, 6};
                struct bsg_verdict ref[7];
                struct bsg_device d[7];
                for (size_t i = 0; i < n; i++)
                        d[i] = to_dev(&s[i]);
                bsg_policy_decide(d, n, ACTIVE, ref);
                for (size_t i = 0; i < n; i++) {
                        struct bsg_verdict one = bsg_policy_decide_one(d, n, i, ACTIVE);
                        CHECK(one.decision == ref[i].decision && one.reason == ref[i].reason);
                }
                CHECK(ref[6].decision == BSG_SKIP && ref[6].reason == BSG_REASON_CLONE); /* g: a copy of a */
                CHECK(ref[4].decision == BSG_SCAN && ref[4].reason == BSG_REASON_MULTI_DEVICE);
                do {
                        struct bsg_verdict v[7];
                        for (size_t i = 0; i < n; i++)
                                d[i] = to_dev(&s[order[i]]);
                        bsg_policy_decide(d, n, ACTIVE, v);
                        for (size_t i = 0; i < n; i++)
                                CHECK(v[i].decision == ref[order[i]].decision && v[i].reason == ref[order[i]].reason);
                } while (next_perm(order, n));
        }

        /* a zoned device whose read did not finish puts nobody else in doubt (it is nobody's copy) */
        check_case = "zoned-in-doubt";
        {
                struct bsg_device d[2] = {to_dev(&(struct spec){"/dev/a", 1}), to_dev(&(struct spec){"/dev/sdz", 1, .zoned = true})};
                struct bsg_verdict v[2];
                d[1].state = BSG_DEV_UNKNOWN;
                bsg_policy_decide(d, 2, SKIPALL, v);
                CHECK(v[0].decision == BSG_SCAN && v[0].reason == BSG_REASON_UNIQUE);
                CHECK(v[1].decision == BSG_SKIP && v[1].reason == BSG_REASON_ZONED);
                d[1].zoned = false; /* the same device, not zoned: everyone in doubt */
                bsg_policy_decide(d, 2, SKIPALL, v);
                CHECK(v[0].decision == BSG_SKIP && v[0].reason == BSG_REASON_IN_DOUBT);
        }

        for (size_t i = 0; i < sizeof(order_cases) / sizeof(order_cases[0]); i++)
                order_one(&order_cases[i]);

        check_case = "names";
        CHECK_STREQ(bsg_reason_name(_BSG_REASON_MAX), "unknown");
        CHECK_STREQ(bsg_decision_name(BSG_SKIP), "skip");
        CHECK_STREQ(bsg_reason_name(BSG_REASON_SAME_STORAGE), "same-storage");
        CHECK_STREQ(bsg_reason_name(BSG_REASON_OUTRANKED), "outranked");
        CHECK_STREQ(bsg_reason_name(BSG_REASON_INCONSISTENT_COPIES), "inconsistent-copies");
        CHECK_STREQ(bsg_reason_name(BSG_REASON_PARTITIONED_DISK), "partitioned-disk");
        CHECK_STREQ(bsg_reason_name(BSG_REASON_FSID_CHANGING), "fsid-changing");
        CHECK_STREQ(bsg_reason_name(BSG_REASON_ZONED), "zoned");
        CHECK_STREQ(bsg_reason_name(BSG_REASON_UNTRUSTED_METADATA_UUID), "untrusted-metadata-uuid");

        /* who may own shared links (issue 10 item 2) */
        static const struct {
                enum bsg_reason reason;
                bool may;
        } links[] = {
                {BSG_REASON_UNIQUE, true},          {BSG_REASON_CLONE, true},
                {BSG_REASON_RAID_CLONE_INACTIVE, true}, {BSG_REASON_OUTRANKED, false},
                {BSG_REASON_SAME_STORAGE, false},
                {BSG_REASON_INCONSISTENT_COPIES, false}, {BSG_REASON_PARTITIONED_DISK, false},
                {BSG_REASON_INVALID_SUPERBLOCK, false}, {BSG_REASON_FSID_CHANGING, false},
                {BSG_REASON_UNTRUSTED_METADATA_UUID, false}, {BSG_REASON_ZONED, false},
        };
        for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
                struct bsg_verdict v = {BSG_SKIP, links[i].reason};
                check_case = bsg_reason_name(links[i].reason);
                CHECK(bsg_verdict_may_own_links(&v) == links[i].may);
        }
        return check_finish("test-policy");
}
