/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Block devices: enumeration from sysfs (/sys/class/block), the udev database's properties for the
 * devices that need them, and the one superblock read per device, done in a child process under a
 * deadline. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "superblock.h"

struct bsg_dev {
        char *devnode;
        char *sysname;   /* the name under /sys/class/block; NULL if not from enumeration */
        char *syspath;   /* the target of /sys/class/block/NAME */
        dev_t devnum;
        char *partlabel; /* ID_PART_ENTRY_NAME or the kernel's PARTNAME; NULL if none */
        char *partuuid;  /* ID_PART_ENTRY_UUID (udev database, or the uevent file where it has it) */
        bool partition;  /* DEVTYPE=partition */
        bool hotpluggable;
        bool skip_read;  /* not read: partitioned whole disk, too small, suspended dm */
        const char *skip_read_why;

        /* the read */
        int read_result; /* bytes read or -errno (-ETIMEDOUT: the read did not finish in time) */
        int parse_result; /* bsg_superblock_parse(): 0 or BSG_SB_* */
        const char *problem;
        struct bsg_superblock sb;

        /* what libblkid says of the same bytes (NULL where it says nothing) */
        char *blkid_type, *blkid_uuid, *blkid_uuid_sub, *blkid_label;
};

struct bsg_devs {
        struct bsg_dev *v;
        size_t n;
};

void bsg_devs_free(struct bsg_devs *d);

/* Enumerates the block devices of sysfs, reading only small attributes (dev, size, uevent,
 * removable, dm/suspended) and no udev database. Returns 0 or -errno. */
int bsg_devs_enumerate(struct bsg_devs *ret_devs);

/* Adds what the udev database knows (ID_PART_ENTRY_NAME, ID_PART_ENTRY_UUID, ID_BUS) to the btrfs
 * partitions sysfs gave no label, or to every enumerated device if ALL; fills only what is still
 * unknown. */
void bsg_devs_add_udev_properties(struct bsg_devs *devs, bool all);

/* Finds DEVNODE's entry (by device number, then by name); adds one (from stat() and the udev
 * environment) if enumeration did not list it. Returns its index or -errno. */
int bsg_devs_find_or_add(struct bsg_devs *devs, const char *devnode);

/* Reads the superblock of every device not marked skip_read, each exactly once (one pread of 4 KiB at
 * 64 KiB), in a child process; devices not done by DEADLINE_USEC (CLOCK_MONOTONIC) get -ETIMEDOUT.
 * FIRST is read first (the device of the event), or SIZE_MAX. Then parses each and asks libblkid about
 * the same bytes. Returns 0 or -errno (fork/pipe failed). */
int bsg_devs_read_all(struct bsg_devs *devs, size_t first, uint64_t deadline_usec);

uint64_t bsg_now_usec(void);
