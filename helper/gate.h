/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What every verb of the helper shares: the invocation's context, the table of entries (one per
 * device the decision is over), messages, and the prototypes of the verb files, the inventory (I/O:
 * gathers what a decision needs; its parts inputs.c, entries.c, active.c and trust.c), the plan
 * (pure: entries -> kernel actions) and the executor (I/O: performs a plan). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "devices.h"
#include "kernel.h"
#include "partsets.h"
#include "policy.h"
#include "rank.h"
#include "rauc.h"
#include "slot.h"
#include "state.h"

#ifndef BSG_VERSION
#define BSG_VERSION "0.0"
#endif

enum verb { VERB_UDEV, VERB_BOOT, VERB_STATUS, VERB_RECONCILE, VERB_TRUST };

enum udev_action { UDEV_ACTION_ADD, UDEV_ACTION_CHANGE, UDEV_ACTION_REMOVE };

struct entry {
        const char *devnode;
        dev_t devnum;
        ssize_t dev;       /* index into ctx.devs, -1 for a device known only from the state file */
        struct bsg_device pd;
        struct bsg_verdict v;
        uint64_t generation;
        bool has_slot;
        char slot[BSG_SLOT_MAX];
        char base[256];
        const char *slot_scheme; /* where the slot came from: "rauc", "partsets", "label" */
        const char *partlabel, *partuuid; /* NULL if none */
        const char *disk;                 /* sysfs path of its whole disk, NULL if unknown */
        struct bsg_trust_facts trust;     /* what its trust is decided from (class, disk) */
        const char *trust_why;            /* why it is (un)trusted (is_trusted_storage()) */
        bool from_record; /* fields from the inventory (this invocation did not read the device) */
        bool unanswered;  /* read in this invocation and the read failed (timeout, EIO): not handed to
                           * the kernel, whatever its record says */
        bool registered;  /* this helper registered it and has not forgotten it (from the inventory): a
                           * hint for the other devices of an event, never a reason not to ask the
                           * kernel about the event's own device (a --forget makes it false) */
        bool forget_pending; /* registered, but the kernel read differs from what was decided and the
                              * forget that was to take it back failed: forgotten at the next chance */
        bool target_group; /* the event's device, or a device of its filesystem */
};

struct ctx {
        enum verb verb;
        bool dry_run, verbose, json, print_cmdline;
        const char *write_modprobe;
        const char *config_path;
        const char *devnode; /* udev */
        enum udev_action action;
        double read_timeout, lock_timeout;
        uint64_t read_deadline; /* set at start: the budget of the superblock reads */
        uint64_t lock_deadline; /* set when the lock is first asked for; kernel actions get it again */

        struct bsg_config config;
        char *cmdline;
        char *mountinfo;
        struct bsg_mount_sources mount_sources; /* of mountinfo, for the self_mounted test */
        char *root_source;
        struct bsg_kernel_caps caps;
        uint8_t (*mounted)[BSG_UUID_SIZE];
        size_t n_mounted;
        struct bsg_devs devs;
        struct bsg_state state;
        struct entry *e;
        size_t n;
        char active_slot[BSG_SLOT_MAX];
        enum bsg_slot_source slot_source;
        bool have_active_slot;
        bool doubt_all;  /* enumeration or inventory failed: every btrfs device is in doubt */
        struct bsg_rauc_conf rauc;      /* slots from RAUC's system.conf (issue 12) */
        dev_t *rauc_rdev;               /* the device number each rauc slot's device= names, 0 unknown */
        struct bsg_partsets partsets;   /* SteamOS partsets */
        struct bsg_reserved reserved;   /* the names the system mounts by (root=, fstab, crypttab, units, RAUC, partsets) */
        char *booted_disk;              /* the disk that booted (disk_of()), NULL if unknown */
        char *root_disk;                /* the disk of root=PARTUUID= if another one, else NULL */
        char loader_partuuid[37];       /* systemd-boot's LoaderDevicePartUUID, "" if none */
        bool loader_unreadable;         /* LoaderDevicePartUUID exists but could not be read (EACCES, EIO) */
        bool trust_input_lost;          /* an input the boot's disk is worked out from was lost (trust_input_lost()) */
        struct bsg_anchor anchor;       /* the disks the boot names (trust anchor), over the entries */
        char *anchor_disks[2 * _BSG_ANCHOR_SOURCE_MAX]; /* copies of anchor.disks */
        char *named_disks[BSG_MAX_TRUSTED_DISKS]; /* the disks of trusted_devnums (sysfs paths) */
        size_t n_named_disks;
        struct bsg_trust_inputs trust_in; /* what every device's trust is decided from in this run */
        dev_t trusted_devnums[BSG_MAX_TRUSTED_DISKS]; /* the device numbers trusted_disk= names (present ones) */
        size_t n_trusted_devnums;
        char errors[512];
        char actions[8192];
};

/* What trust came from, for `status` and the journal: the disks the boot names (the anchor) and the
 * disks trusted_disk= names, or, where the boot names no disk, the fallback (fixed storage minus
 * every class an attacker attaches or creates at run time). */
void trust_describe(const struct ctx *c, char *buf, size_t size);
/* "boot-disk" (the anchor decides) or "fallback". */
const char *trust_source(const struct ctx *c);
/* An input the disk that booted is worked out from (the command line, mountinfo, RAUC's system.conf)
 * could not be read or kept (out of memory, I/O): said; no anchor then means only trusted_disk=,
 * never the fallback (a source it held may have named a disk). ERR: -errno. */
void trust_input_lost(struct ctx *c, const char *what, int err);
/* Under the lock, after deciding: when the trust answers follow another anchor than the last run
 * recorded (RUNDIR/trust: source, anchor disks, trusted_disk=), every device whose udev record's
 * BTRFS_SCAN_GATE_TRUSTED differs from its trust now is sent a marked change event (the `trust`
 * verb's answers of a first coldplug, made before the anchor was known, and answers of an anchor
 * that changed). Not in a dry run, a replay, or a run that lost an input. */
void reannounce_trust_changed(struct ctx *c);
/* The devices of udev's database that carry one of SELF's /dev/disk names (OTHER_FS_ONLY: those
 * without btrfs, which the inventory does not decide), and SELF, decided by the one rank rule
 * (rank.h); a device SELF outranks whose record does not withhold it yet is sent a change event (it
 * came first). Every carrier counts, however many a medium shows. Returns whether SELF is outranked;
 * out of memory it is unless trusted (fail closed). */
bool name_collisions(struct ctx *c, const struct bsg_device *self, dev_t self_devnum, bool other_fs_only);

/* messages (gate.c) */
extern bool arg_verbose;
/* log_msg: a warning or an error: to stderr and to the journal (log.c); log_debug: stderr only */
void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_msg_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define log_debug(...)                                                                                  \
        do {                                                                                            \
                if (arg_verbose)                                                                        \
                        log_msg_debug(__VA_ARGS__);                                                     \
        } while (0)
/* the journal's line for the decision of entry E (and its trust), if it changed since the last one
 * logged */
struct entry;
struct ctx;
void log_decision(const struct ctx *c, const struct entry *e);
void add_token(char *buf, size_t size, const char *token);
void add_error(struct ctx *c, const char *token);
/* Asks the kernel for a marked change event of SYSNAME (DEVNODE: its name in messages) whose udev
 * record is stale for the reason WHY; `reannounced:DEVNODE` among the actions. A failure is said and
 * survived. Returns 0 or -errno. */
int reannounce_device(struct ctx *c, const char *sysname, const char *devnode, const char *why);
void ctx_done(struct ctx *c);
/* Whether TOKEN is one of c->errors. */
bool ctx_has_error(const struct ctx *c, const char *token);
/* The configuration had errors (lines ignored, or an unreadable file): decided on what remained. */
bool config_has_errors(const struct ctx *c);
/* Why the kernel cannot apply the skip list LIST (a non-empty list, no skip_scan parameter and no
 * temp_fsid), or NULL when it can or there is nothing to apply. The exit status 3 of boot and status. */
const char *kernel_cannot_apply(const struct ctx *c, const char *list);

/* inventory.c: everything a decision needs, then the decision. Unless dry-run or status, takes the
 * lock first: *ret_lock_fd is its fd, or -1 if it could not be taken (said in c->errors). Returns 0
 * or -errno (nothing could be decided). */
int gather(struct ctx *c, ssize_t *ret_target, int *ret_lock_fd);
/* What `trust` needs: the configuration, the boot's anchor over the inventory, and the event's
 * device (not read). Returns the device's entry index or -errno. */
int gather_trust(struct ctx *c);
/* Writes what this invocation read into the state (records of btrfs devices). */
void record_all(struct ctx *c);

/* inputs.c: what the system says, read once per run (I/O) */
/* The configuration into c->config (defaults where there is none; errors said in c->errors). */
void load_config(struct ctx *c);
/* The command line, mountinfo, the kernel's capabilities, the mounted btrfs filesystems and the EFI
 * loader's partition. */
void load_kernel_state(struct ctx *c);
/* Slots from the platform: RAUC's system.conf (c->rauc, c->rauc_rdev) and SteamOS's partsets. */
void load_platform_slots(struct ctx *c);
/* The names the system mounts by into c->reserved: root= and rootflags=device= of the command line,
 * the sources of /etc/fstab, /etc/crypttab and /etc/systemd/system's .mount and .swap units, RAUC's
 * slot devices, SteamOS's partsets (after load_platform_slots()). */
void load_reserved_names(struct ctx *c);

/* active.c: the slots of this run, over the entries */
/* The active slot (c->active_slot, c->slot_source) and the disk that booted (c->booted_disk,
 * c->root_disk), once the entries' labels, PARTUUIDs and disks are in. */
void find_active_slot(struct ctx *c);
/* Whether E is on the disk that booted, or on the root's (true while that disk is unknown). */
bool on_booted_disk(const struct ctx *c, const struct entry *e);
/* E's slot from the platform (RAUC, SteamOS partsets) into e->slot, e->base, e->slot_scheme. Returns 1
 * when one of them names it, else 0. */
int platform_slot(const struct ctx *c, struct entry *e);

/* entries.c: the table of entries */
/* c->e from c->devs and the records of c->state, with every entry's trust, slot and mount facts.
 * Drops records that describe another device now. Returns 0 or -ENOMEM. */
int entries_build(struct ctx *c);
/* Whether REC (the inventory's) describes the device D enumerated or stat()ed now. */
bool record_is_of(const struct bsg_record *rec, const struct bsg_dev *d);

/* trust.c (issue 18 item 1) */
/* The device numbers trusted_disk= names and their disks; sets c->trust_in (without the anchor). */
void load_trusted_disks(struct ctx *c);
/* systemd-boot's LoaderDevicePartUUID into c->loader_partuuid ("" if none, unreadable or malformed:
 * the last two said). */
void load_loader_partuuid(struct ctx *c);
/* Marks the whole disks whose partition tables the reads must take too (the boot names a PARTUUID
 * and a partition of the disk has none yet). */
void mark_table_probes(struct ctx *c);
/* The anchor over the entries, then every entry's trust (e->pd.untrusted, e->trust_why). */
void decide_trust(struct ctx *c);

/* plan.c (pure) */
void plan_decide(struct entry *e, size_t n, enum bsg_clone_policy clone_policy);
/* The whole disk of E in the starred form ("/dev/sdb*") into BUF, when E (any verdict) is on
 * hot-pluggable media nobody trusts and its node is that disk's or a partition's of it; false if not.
 * The skip list names such a disk so, unless a device on it is scan. */
bool plan_starred_disk(const struct entry *e, char *buf, size_t size);
/* The sorted skip list of the verdicts. Returns 0, -E2BIG (truncated list, *ret_dropped says how
 * many were left out), -ENOMEM. */
int plan_skip_list(const struct entry *e, size_t n, char **ret_list, size_t *ret_dropped);
/* The same list in names that survive a reboot, for --write-modprobe and --print-cmdline: a partition
 * as PARTUUID=<uuid> when no other device carries that PARTUUID, else its path. */
int plan_stable_skip_list(const struct entry *e, size_t n, char **ret_list, size_t *ret_dropped);
/* ID_BTRFS_READY without the kernel: every devid of T's fs among the copies that count. */
bool plan_all_devices_present(const struct entry *e, size_t n, const struct entry *t, bool scanned_only);

enum plan_action_type {
        PLAN_SKIP_LIST, /* write the skip list */
        PLAN_FORGET,    /* BTRFS_IOC_FORGET_DEV of an entry this helper registered that is no longer scan */
        PLAN_SCAN,      /* BTRFS_IOC_SCAN_DEV */
        PLAN_READY,     /* BTRFS_IOC_DEVICES_READY (the event's own device: its answer is ID_BTRFS_READY) */
        PLAN_UNREADABLE, /* a scan device not read in this run: not handed to the kernel */
};

struct plan_action {
        enum plan_action_type type;
        size_t entry; /* index into the entries; unused for PLAN_SKIP_LIST */
};

struct plan {
        struct plan_action *v;
        size_t n;
        char *skip_list;
        size_t dropped; /* devices left out of a truncated skip list */
        bool truncated;
};

enum plan_mode {
        PLAN_MODE_EVENT,     /* one event: forgets limited to what this helper registered and to the
                              * event's filesystem */
        PLAN_MODE_RECONCILE, /* every device, from the inventory */
        PLAN_MODE_BOOT,      /* every device, read now: every scan device is scanned */
};

/* The kernel actions that bring the kernel to the decided state for every entry, in the one order
 * (skip list, forgets, scans). TARGET is the event's entry (its scan is DEVICES_READY) or SIZE_MAX.
 * Returns 0 or -ENOMEM. */
int plan_build(const struct entry *e, size_t n, size_t target, enum plan_mode mode, struct plan *ret_plan);
void plan_done(struct plan *p);

/* executor.c */
void apply_skip_list(struct ctx *c, const char *list);
/* When P's skip list was cut at BSG_SKIPLIST_MAX: says so, naming the devices left out. */
void log_truncated_skip_list(const struct ctx *c, const struct plan *p);
/* Performs P: the skip list here, then the scans and forgets through the control node in a child
 * process bounded by the lock budget (LOCK_FD is closed in the child). Without the control node only
 * the skip list is written (said in c->errors). *ret_ready is the answer of PLAN_READY (-1 when there
 * was none). */
void execute_plan(struct ctx *c, const struct plan *p, int lock_fd, int *ret_ready);

/* the verbs */
/* boot and reconcile: gather, plan for MODE, and in a dry or verbose run print each decision. *ret_lock_fd
 * is the lock's fd or -1. Returns 0 or -errno (said). */
int gather_plan(struct ctx *c, enum plan_mode mode, int *ret_lock_fd, struct plan *ret_plan);
int run_udev(struct ctx *c);
int run_boot(struct ctx *c);
int run_status(struct ctx *c);
int run_reconcile(struct ctx *c);
int run_trust(struct ctx *c);
