/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure decision policy: the whole set of present devices in, one verdict per device out. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "superblock.h"

enum bsg_sb_state {
        BSG_DEV_BTRFS,       /* valid superblock */
        BSG_DEV_NOT_BTRFS,   /* no btrfs magic, too short, gone (no node, no device) */
        BSG_DEV_INVALID,     /* btrfs magic but a failed check */
        BSG_DEV_UNKNOWN,     /* in doubt: its read did not finish and nothing is known of it */
        BSG_DEV_UNREADABLE,  /* its open or read failed (EIO, ...) and nothing is known of it: listed,
                              * never scanned; unlike a read that hangs it puts nobody else in doubt */
};

enum bsg_decision {
        BSG_IGNORE,
        BSG_SCAN,
        BSG_SKIP,
};

enum bsg_reason {
        BSG_REASON_NOT_BTRFS,
        BSG_REASON_INVALID_SUPERBLOCK,
        BSG_REASON_BAD_PATH,
        BSG_REASON_SEED,
        BSG_REASON_MULTI_DEVICE,
        BSG_REASON_RAID_CLONE_ACTIVE,
        BSG_REASON_RAID_CLONE_INACTIVE,
        BSG_REASON_UNIQUE,
        BSG_REASON_CLONE,
        BSG_REASON_OUTRANKED,           /* a device of a higher rank collides with it (rank.h) */
        BSG_REASON_INCONSISTENT_COPIES, /* copies of one fsid disagree (num_devices, seed, devid/UUID) */
        BSG_REASON_PARTITIONED_DISK,    /* a whole disk with a partition table and a (stale) btrfs superblock */
        BSG_REASON_SAME_STORAGE,        /* a second name of storage another device already names */
        BSG_REASON_UNREADABLE, /* its read failed: what the kernel would read is unknown */
        BSG_REASON_IN_DOUBT, /* unknown device, or a scan while a device of the set is unknown, or no
                              * memory to decide: every doubt ends in skip */
        BSG_REASON_FSID_CHANGING, /* CHANGING_FSID(_V2) set: the kernel would match it by either UUID */
        BSG_REASON_UNTRUSTED_METADATA_UUID, /* hot-pluggable media with the METADATA_UUID feature */
        BSG_REASON_ZONED, /* a zoned device: the kernel reads its superblock where this helper does not */
        BSG_REASON_HELD,       /* a member of a stacked device (dm, md): the same storage as its holder,
                                * never a copy of it; the holder is decided */
        _BSG_REASON_MAX,
};

enum bsg_clone_policy {
        BSG_CLONE_SKIP_ALL, /* the rule: no copy of a single-device clone is ever scanned */
        BSG_CLONE_ACTIVE,   /* the copy in the active slot is scanned, the others skipped */
};

/* Who takes part when devices collide (rank.h): trusted storage (the boot's disk, trusted_disk=,
 * stacks over them), then fixed storage the boot does not name, then hot-pluggable media. */
enum bsg_rank {
        BSG_RANK_HOTPLUG,
        BSG_RANK_FIXED,
        BSG_RANK_TRUSTED,
};

/* The /dev/disk names a device carries. */
enum bsg_name_kind {
        BSG_NAME_UUID,      /* by-uuid (a btrfs device's fsid, unless set) */
        BSG_NAME_LABEL,     /* by-label */
        BSG_NAME_PARTUUID,  /* by-partuuid */
        BSG_NAME_PARTLABEL, /* by-partlabel */
        _BSG_NAME_MAX,
};

/* What the policy knows of one present device. */
struct bsg_device {
        const char *devnode;
        enum bsg_sb_state state;
        uint8_t fsid[BSG_UUID_SIZE];
        /* the METADATA_UUID incompat feature, and then the metadata_uuid (read only when set: without
         * the feature the kernel's metadata_uuid is the fsid) */
        bool metadata_uuid_feature;
        uint8_t metadata_uuid[BSG_UUID_SIZE];
        bool fsid_changing; /* super flag CHANGING_FSID or CHANGING_FSID_V2 */
        bool zoned;         /* zoned block device (sysfs queue/zoned not "none") */
        uint64_t devid;
        uint64_t num_devices;
        uint8_t dev_uuid[BSG_UUID_SIZE];
        bool seeding;
        bool slot_active;    /* the device's partition label names the active slot */
        bool untrusted;   /* not trusted storage (devices.h is_trusted_storage()): never a slot */
        enum bsg_rank rank;
        const char *names[_BSG_NAME_MAX]; /* NULL where it carries none */
        bool reserved;  /* carries a name the system mounts by (rank.h bsg_reserved_has()) */
        bool outranked; /* a higher rank collides with it (rank.h bsg_outranked(), set by bsg_policy_decide()) */
        bool fsid_mounted;   /* a filesystem with this fsid is mounted (from another device) */
        bool self_mounted;   /* this very device is the source of a mount */
        bool path_ok;        /* the devnode can be listed in skip_scan and fits the ioctl */
        bool mounted_member; /* listed in /sys/fs/btrfs/<fsid>/devices/ of a mounted filesystem */
        bool partitioned_disk; /* a whole disk whose own bytes carry a partition table (libblkid) */
        bool held;             /* another block device is stacked on it (dm-verity, dm-crypt, md...) */
        /* what the bytes are stored on, equal for two names of one storage ("loop:DEV:INO:OFFSET",
         * "wwid:...", "serial:..." plus ":START" for a partition); NULL if unknown */
        const char *storage_id;
};

struct bsg_verdict {
        enum bsg_decision decision;
        enum bsg_reason reason;
};

/* Decides for DEVS[I]; a pure function of the set (the order of DEVS does not matter), with the
 * devices' OUTRANKED already set (bsg_policy_decide() sets it). */
struct bsg_verdict bsg_policy_decide_one(const struct bsg_device *devs, size_t n, size_t i,
                                         enum bsg_clone_policy clone_policy);
/* Decides for all of DEVS into RET_VERDICTS (N entries). */
void bsg_policy_decide(const struct bsg_device *devs, size_t n, enum bsg_clone_policy clone_policy,
                       struct bsg_verdict *ret_verdicts);

/* Identity: whether the kernel (linux 6.1, device_list_add() and its find_fsid*()) could take A and B
 * for devices of one filesystem. Both valid btrfs, and one of A's {fsid, metadata_uuid} equals one of
 * B's: a superset of the kernel's matches (which also look at the fsid-change flags), so that no
 * pair the kernel would put together is missed. */
bool same_filesystem(const struct bsg_device *a, const struct bsg_device *b);

/* The named predicates, one per reason. */
bool is_zoned(const struct bsg_device *d);
bool is_fsid_changing(const struct bsg_device *d);
bool is_untrusted_metadata_uuid(const struct bsg_device *d);
bool is_not_btrfs(const struct bsg_device *d);
bool is_in_doubt(const struct bsg_device *d);
bool is_invalid_superblock(const struct bsg_device *d);
bool is_bad_path(const struct bsg_device *d);
bool is_partitioned_disk(const struct bsg_device *d);
bool is_same_storage_secondary(const struct bsg_device *devs, size_t n, size_t i);
bool is_outranked(const struct bsg_device *d);
bool is_held(const struct bsg_device *d);
bool has_inconsistent_copies(const struct bsg_device *devs, size_t n, size_t i);
bool is_seed_device(const struct bsg_device *d);
bool is_multi_device(const struct bsg_device *d);
bool has_raid_twin(const struct bsg_device *devs, size_t n, size_t i);
bool has_clone(const struct bsg_device *devs, size_t n, size_t i);

/* Whether a device with verdict V may carry a slot and compete for shared /dev/disk/by-* links. False
 * for hostile or doubtful copies (they get link_priority=-100, SYSTEMD_READY=0, UDISKS_IGNORE=1). */
bool bsg_verdict_may_own_links(const struct bsg_verdict *v);

const char *bsg_decision_name(enum bsg_decision d);
const char *bsg_reason_name(enum bsg_reason r);
