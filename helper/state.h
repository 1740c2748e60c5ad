/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The lock and the state file under the run directory: every btrfs device seen so far, so that each
 * invocation decides over the whole set whatever the order of events. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "superblock.h"

struct bsg_record {
        dev_t devnum;
        char *devnode;
        char *partlabel; /* NULL if none: the label the device's own event gave (udev env), kept for
                          * later invocations that see the device only through sysfs */
        uint8_t fsid[BSG_UUID_SIZE];
        uint64_t devid;
        uint64_t num_devices;
        uint64_t generation;
        bool seeding;
        bool registered; /* this helper registered it (scan ioctl succeeded) and has not forgotten it */
};

struct bsg_state {
        struct bsg_record *v;
        size_t n;
};

/* Takes the lock RUNDIR/lock (creating RUNDIR), waiting until DEADLINE_USEC at most. Returns the
 * locked fd, -ETIMEDOUT, or -errno. */
int bsg_state_lock(const char *rundir, uint64_t deadline_usec);

/* Loads RUNDIR/devices; a missing file is an empty state. Records whose /sys/dev/block/MAJ:MIN is gone
 * are dropped (stale); malformed lines are skipped. Returns 0 or -errno. */
int bsg_state_load(const char *rundir, struct bsg_state *ret_state);

/* Writes RUNDIR/devices atomically (temporary file and rename), sorted by device number. */
int bsg_state_save(const char *rundir, const struct bsg_state *state);

struct bsg_record *bsg_state_find(struct bsg_state *state, dev_t devnum);
/* Adds or replaces the record of REC->devnum (copies devnode and partlabel). Returns 0 or -ENOMEM. */
int bsg_state_put(struct bsg_state *state, const struct bsg_record *rec);
/* Drops the record of DEVNUM if there is one. */
void bsg_state_remove(struct bsg_state *state, dev_t devnum);
void bsg_state_free(struct bsg_state *state);
