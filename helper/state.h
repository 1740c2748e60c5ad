/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The lock and the state file under the run directory: every btrfs device seen so far, so that each
 * invocation decides over the whole set whatever the order of events. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <stdio.h>

#include "superblock.h"

/* The largest inventory file read (some 200 bytes a device: room for tens of thousands). */
#define STATE_TEXT_MAX (16 * 1024 * 1024)

/* What the inventory knows of a device's superblock. */
enum bsg_record_kind {
        BSG_RECORD_BTRFS,     /* valid btrfs superblock: the summary below */
        BSG_RECORD_INVALID,   /* btrfs magic at 64 KiB, but a failed check */
        BSG_RECORD_NOT_BTRFS, /* read, no btrfs (also: too small, no media) */
        BSG_RECORD_UNKNOWN,   /* its read did not finish in time and nothing was known before */
};

/* One device of the inventory: every device a `boot` or an event read, by device number. The
 * identity (devnum, diskseq where the kernel has it, size) tells an `add` event whether the
 * entry is still this device's; the rest is what the policy needs. */
struct bsg_record {
        dev_t devnum;
        uint64_t diskseq; /* of the disk (a partition: its disk's); 0: unknown */
        uint64_t size;    /* bytes; 0: unknown */
        enum bsg_record_kind kind;
        bool untrusted;   /* with class_known: not fixed storage by the fallback's class test (also: an
                           * event's ID_BUS said USB); its trust in a run is decided from this, the
                           * configuration and the boot (devices.h is_trusted_storage()) */
        bool class_known; /* false: a line of an older helper (trust asked of sysfs) */
        bool stacked;     /* dm/md: trust asked of sysfs (its slaves) */
        char *devnode;
        char *partlabel; /* NULL if none: the label the device's own event gave (udev env), kept for
                          * later invocations that see the device only through sysfs */
        char *partuuid;  /* NULL if none */
        char *disk;       /* sysfs path of its whole disk (the booted-disk test); NULL if unknown */
        char *storage_id; /* devices.h: the same storage under two names has the same; NULL if unknown */
        uint8_t fsid[BSG_UUID_SIZE];
        uint8_t dev_uuid[BSG_UUID_SIZE];
        uint64_t devid;
        uint64_t num_devices;
        uint64_t generation;
        bool seeding;
        bool registered; /* this helper registered it (scan ioctl succeeded) and has not forgotten it */
        bool forget_pending; /* registered, the kernel read another superblock, its forget failed */
        bool partitioned; /* a whole disk whose own bytes carried a partition table (when read) */
        bool fsid_changing; /* CHANGING_FSID(_V2) set */
        bool zoned;         /* a zoned device (when read) */
        bool metadata_uuid_feature; /* the METADATA_UUID feature, and its metadata_uuid: */
        uint8_t metadata_uuid[BSG_UUID_SIZE];
};

struct bsg_state {
        struct bsg_record *v;
        size_t n;
        bool changed; /* since the load: bsg_state_save() writes only then (nothing changed, no write) */
};

/* Takes the lock RUNDIR/lock (creating RUNDIR), waiting until DEADLINE_USEC at most. Returns the
 * locked fd, -ETIMEDOUT, or -errno. */
int bsg_state_lock(const char *rundir, uint64_t deadline_usec);

/* Loads RUNDIR/devices (the inventory); a missing file is an empty state. Malformed lines (and lines
 * of the older format) are skipped. Returns 0 or -errno. */
int bsg_state_load(const char *rundir, struct bsg_state *ret_state);
/* Drops the records whose /sys/dev/block/MAJ:MIN is gone (one access() each: for boot, status and
 * reconcile, not for a single event). */
void bsg_state_drop_gone(struct bsg_state *state);

/* One record as a line of the inventory (no newline) into a new string; and back. */
int bsg_record_format(const struct bsg_record *rec, char **ret_line);
/* Parses LINE into *ret_rec (new strings). Returns 0, -EINVAL (malformed), -ENOMEM. */
int bsg_record_parse(const char *line, struct bsg_record *ret_rec);
void bsg_record_done(struct bsg_record *rec);

/* Lock-timeout markers: an event that could not take the lock leaves what it read (or that its
 * device was removed) in RUNDIR/pending/MAJ:MIN; the next holder folds them into the inventory. */
int bsg_pending_write(const char *rundir, dev_t devnum, const struct bsg_record *rec_or_null_for_remove);
/* The marker of a removed device: "remove MAJ:MIN DISKSEQ", DISKSEQ that of the device removed (0:
 * unknown). Folded in, it drops the entry of DEVNUM only if the entry's diskseq is that one (or either
 * is unknown): a marker folded after a replug's `add` leaves the new device's entry alone. */
int bsg_pending_write_remove(const char *rundir, dev_t devnum, uint64_t diskseq);
/* Folds every marker into STATE and deletes it. Returns the number folded or -errno. */
int bsg_pending_apply(const char *rundir, struct bsg_state *state);

/* Writes RUNDIR/devices atomically (temporary file and rename), sorted by device number, when
 * STATE->changed (a missing file counts as a change). Whoever edits a record in place sets it. */
int bsg_state_save(const char *rundir, const struct bsg_state *state);

struct bsg_record *bsg_state_find(struct bsg_state *state, dev_t devnum);
/* Adds or replaces the record of REC->devnum (copies devnode, partlabel, partuuid). Returns 0 or -ENOMEM. */
int bsg_state_put(struct bsg_state *state, const struct bsg_record *rec);
/* Drops the record of DEVNUM if there is one. */
void bsg_state_remove(struct bsg_state *state, dev_t devnum);
void bsg_state_free(struct bsg_state *state);

/* The escaped text fields of the inventory's lines (and of pending/ markers): '%XX' for '%',
 * whitespace and control bytes, a lone '%' for none. */
void bsg_field_write(FILE *f, const char *s);
/* The next space-separated field of *P (moved past it) into a new string (*ret NULL for "%").
 * Returns 0, -EINVAL (no field), -ENOMEM. */
int bsg_field_read(const char **p, char **ret);
bool bsg_field_u64(const char **p, uint64_t *ret);

/* Writes what FILL prints to PATH atomically: TMP (same directory), then rename. Returns 0 or -errno. */
int bsg_write_atomic(const char *path, const char *tmp, void (*fill)(FILE *f, const void *data), const void *data);

/* In [BEGIN, END), lines that each start with "MAJ:MIN " in ascending device-number order (the
 * inventory as saved): the line of DEVNUM by binary search, or NULL (also for a
 * text that is not such lines: its reader then reads it whole). */
const char *bsg_sorted_lines_find(const char *begin, const char *end, dev_t devnum);
/* The same over an inventory text (its header comment skipped). */
const char *bsg_state_text_find(const char *text, dev_t devnum);
