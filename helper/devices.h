/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Block devices: enumeration from sysfs (/sys/class/block), the udev database's properties for the
 * devices that need them, and the one superblock read per device, done in a child process under a
 * deadline. */
#pragma once

#include <errno.h>
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
        uint64_t diskseq; /* the disk's /sys/block/DISK/diskseq (Linux 5.15+); 0: unknown */
        uint64_t size;    /* bytes, from sysfs; 0: unknown or no media */
        char *partlabel; /* ID_PART_ENTRY_NAME or the kernel's PARTNAME; NULL if none */
        char *partuuid;  /* ID_PART_ENTRY_UUID (udev database, or the uevent file where it has it) */
        bool partition;  /* DEVTYPE=partition */
        unsigned partn;  /* PARTN of a partition (its number in its disk's table); 0 unknown */
        bool probe_table; /* a whole disk: read its partition table too (libblkid), for PARTUUIDs */
        char *part_table; /* what that found: "PARTN UUID" lines; NULL if not read or nothing */
        /* its class, gathered once (bsg_devs_set_class()) and kept in its inventory record: the
         * fallback's test, which needs neither the configuration nor the boot */
        bool class_known;
        bool class_fixed;      /* fixed storage by the fallback's test (stacked: every slave is) */
        const char *class_why; /* why (a static string) */
        bool stacked;          /* dm/md (or a partition on one): its trust is its slaves', asked of sysfs */
        /* its trust in this run (trust.c, from the class, the configuration and the boot) */
        bool untrusted;  /* !is_trusted_storage() */
        bool trust_by_config; /* trusted because trusted_disk= names it (or its disk, or its slaves') */
        const char *trust_why; /* why it is (un)trusted, a static string; NULL before it is decided */
        bool bus_hotplug; /* ID_BUS=usb/ieee1394 from the udev database or the event's environment */
        bool partitioned; /* a whole disk the kernel has partitions of (sysfs; enumeration only) */
        bool zoned;       /* its disk's queue/zoned is not "none": the kernel reads another superblock */
        char *storage_id; /* bsg_devs_add_storage_ids(); NULL if unknown */
        char *disk;       /* sysfs path of the whole disk it is on (entries.c fills it); NULL unknown */
        bool held;       /* another block device is stacked on it (holders/ not empty: dm, md) */
        char *data_slave; /* a dm device whose table stores its data on one slave (dm-verity's data
                           * device, not its hash device), or an md device over one slave: its kernel
                           * name; over a stack (dm on dm), the device at the bottom's; else NULL */
        bool skip_read;  /* not read: no media, too small, suspended dm, held */
        const char *skip_read_why;

        /* the read */
        int read_result; /* bytes read or -errno (-ETIMEDOUT: the read did not finish in time; -EAGAIN:
                          * a btrfs superblock, but its disk's partition table could not be probed) */
        int parse_result; /* bsg_superblock_parse(): 0 or BSG_SB_* */
        bool carries_table; /* a whole disk with a btrfs magic whose own bytes carry a partition table
                             * (libblkid): the superblock is older than the table */
        const char *problem;
        struct bsg_superblock sb;
        uint8_t *raw; /* the 4096 bytes read, kept for a valid superblock: the check after a scan
                       * compares the whole block (NULL: not kept, out of memory) */

        /* what libblkid says of the same bytes (NULL where it says nothing) */
        char *blkid_type, *blkid_uuid, *blkid_uuid_sub, *blkid_label;
};

struct bsg_devs {
        struct bsg_dev *v;
        size_t n;
        bool names_lost; /* a partition name or PARTUUID could not be kept (out of memory) */
};

void bsg_devs_free(struct bsg_devs *d);

/* Enumerates the block devices of sysfs, reading only small attributes (dev, size, uevent,
 * removable, dm/suspended) and no udev database. Returns 0 or -errno. */
int bsg_devs_enumerate(struct bsg_devs *ret_devs);

/* Adds what the udev database knows (ID_PART_ENTRY_NAME, ID_PART_ENTRY_UUID, ID_BUS) to the btrfs
 * partitions sysfs gave no label, or to every enumerated device if ALL; fills only what is still
 * unknown. */
void bsg_devs_add_udev_properties(struct bsg_devs *devs, bool all);

/* Sets storage_id of every valid btrfs device from sysfs: a loop device's backing file (st_dev, st_ino)
 * and offset, or the disk's wwid or serial; plus the partition's start sector. Two names of one storage
 * get equal ids (issue 10 item 8). */
void bsg_devs_add_storage_ids(struct bsg_devs *devs);

/* What trust is decided from in one run, gathered once per run (trust.c): the device numbers
 * trusted_disk= names and their disks' sysfs paths, and the anchor: the sysfs paths of the disks the
 * boot names (slot.h bsg_boot_anchor()). With an anchor, trusted storage is an allowlist; without one
 * the fallback (the class test) decides. */
struct bsg_trust_inputs {
        const dev_t *named;
        size_t n_named;
        const char *const *named_disks;
        size_t n_named_disks;
        const char *const *anchor_disks;
        size_t n_anchor; /* 0: no anchor, the fallback decides (unless NARROW) */
        /* a source of the anchor is present but could not be resolved (unreadable EFI variable, out
         * of memory): no anchor, and no fallback either: only trusted_disk= and stacks over it */
        bool narrow;
};

/* What is known of one device's storage: from its read (struct bsg_dev) or its inventory record. */
/* is_trusted_storage()'s answers with an anchor (trust.c says why a member of a trusted multi-device
 * filesystem given the second is not scanned) */
#define WHY_ON_ANCHOR "on the disk that booted"
#define WHY_OFF_ANCHOR "not on the disk that booted"

struct bsg_trust_facts {
        const char *devnode;
        dev_t devnum;
        const char *disk; /* sysfs path of its whole disk (a stacked device over one slave: the slave's) */
        bool class_known, class_fixed, stacked;
        const char *class_why;
};

/* The one trust predicate (issue 18): whether the device F describes is trusted storage. Trusted: a
 * device or disk trusted_disk= NAMED (a named disk's partitions too), a stacked device (dm, md) whose
 * every slave is trusted, a device on a disk the boot names (the anchor), and, only where the boot
 * names no disk, the fallback: fixed storage by its class (not removable, USB, FireWire, SD card,
 * Thunderbolt/USB4, and not under /devices/virtual: loop, nbd...). With an anchor, nothing else: a
 * root over a second internal disk needs trusted_disk= for it. Descriptors the media writes (labels,
 * PARTUUIDs, fsids, devids, generations, serials) never enter here. A stacked device, or one whose class is not known (an
 * older inventory), is asked of sysfs; every other answer comes from F and IN alone. *RET_WHY says why
 * (a static string). */
bool is_trusted_storage(const struct bsg_trust_facts *f, const struct bsg_trust_inputs *in, const char **ret_why,
                        bool *ret_by_config);

/* Sets class_known, class_fixed, class_why and stacked of every device (after the udev properties:
 * ID_BUS). Reads sysfs. */
void bsg_devs_set_class(struct bsg_devs *devs);
/* Sets D's class now (from sysfs, without the udev properties yet) and returns whether it is fixed. */
bool bsg_dev_class_fixed(struct bsg_dev *d);

/* A read whose device may be anyone's twin: it did not finish, or its partition table probe failed. */
static inline bool bsg_read_in_doubt(int read_result)
{
        return read_result == -ETIMEDOUT || read_result == -EAGAIN;
}

/* The class of the device DEVNUM from sysfs (what bsg_devs_set_class() sets), for an inventory record
 * of an older helper. Returns 0, -ENODEV (no such device), -ENOMEM. */
int bsg_devnum_class(dev_t devnum, bool *ret_fixed, const char **ret_why, bool *ret_stacked);
/* The diskseq of DEVNUM's disk now (sysfs; a partition: its disk's), 0 if unknown. */
uint64_t bsg_devnum_diskseq(dev_t devnum);
/* The size of DEVNUM in bytes now (sysfs), 0 if none (no media, detached) or unknown. */
uint64_t bsg_devnum_size(dev_t devnum);

/* is_trusted_storage() from sysfs alone, of a device known by its number only: false if sysfs has no
 * such device. */
bool bsg_devnum_is_trusted(dev_t devnum, const struct bsg_trust_inputs *in, bool *ret_by_config);

/* The device numbers the by-path names NAMES (without "/dev/disk/by-path/") stand for, without their
 * links, into DEVNUMS[i] where it is still 0: the disk whose ID_PATH (udev's path_id: where it is
 * attached) is NAMES[i], or partition N of the disk whose ID_PATH is P where NAMES[i] is "P-partN"
 * (and the legacy "virtio-P" forms of vd* disks), as 60-persistent-storage.rules makes the links;
 * left 0 if no disk is there now. ID_PATH comes from EVENT_ID_PATH for the disk of EVENT_DEVNUM (the
 * event's own device: its database entry is written after the rules ran), from the udev database for
 * disks whose event ran, and, while a name is left, from `udevadm test-builtin path_id`
 * for the other disks that are not virtual (before udevd ran, or while their event is queued behind
 * this one): the same answer in every event order. */
void bsg_resolve_by_path(const char *const *names, size_t n, dev_t event_devnum, const char *event_id_path,
                         dev_t *devnums);

/* The ID_PATH of the whole disk SYSNAME (the udev database's, else path_id derived now) into BUF.
 * Returns 0 or -errno (-ENOENT: it has none, as virtual devices). */
int bsg_disk_id_path(const char *sysname, char *buf, size_t size);

/* The sysfs path (as /sys/dev/block links it) of the whole disk of DEVNUM, a new string; NULL if none. */
char *bsg_disk_of_devnum(dev_t devnum);
/* The part of a sysfs path from "/devices/" on (links are relative: "../../devices/..."). */
const char *bsg_disk_key(const char *syspath);

/* Finds DEVNODE's entry (by device number, then by name); adds one (from stat() and the udev
 * environment) if enumeration did not list it. Returns its index or -errno. */
int bsg_devs_find_or_add(struct bsg_devs *devs, const char *devnode);

/* The event's device alone, without enumerating: its sysfs entry found through its device number
 * (stat of DEVNODE, or MAJOR/MINOR of the udev environment when the node is gone), then the event's
 * properties as bsg_devs_find_or_add() adds them. Appends it to DEVS; returns its index or -errno. */
int bsg_devs_add_event(struct bsg_devs *devs, const char *devnode);

/* Appends the device of number DEVNUM from its sysfs entry (found through /sys/dev/block), as
 * enumeration would have listed it. Returns its index, -ENODEV if sysfs has no such device, -errno. */
int bsg_devs_add_devnum(struct bsg_devs *devs, dev_t devnum);

/* The kernel name ("sda4") of the block device DEVNUM, through /sys/dev/block, in BUF; NULL if none. */
const char *bsg_sysname_of_devnum(dev_t devnum, char *buf, size_t size);

/* qsort()/bsearch() order of dev_t values. */
int bsg_devnum_compare(const void *a, const void *b);

/* Parses "MAJ:MIN" at the start of S (decimal); *ret_end (may be NULL) points after it. 0 or -EINVAL. */
int bsg_parse_devnum(const char *s, unsigned *ret_major, unsigned *ret_minor, const char **ret_end);

/* The device numbers of every block device (the names of /sys/dev/block: one readdir, no device
 * opened), in directory order. *ret_devnums is a new array of *ret_n entries. Returns 0 or -errno. */
int bsg_sysfs_devnums(dev_t **ret_devnums, size_t *ret_n);

/* The gate's properties in the udev database entry of block device DEVNUM (what its last event
 * printed): DECISION, REASON, SLOT_ACTIVE ("" where unset), and its kernel name. Returns 1 if the
 * entry carries a decision, 0 if not (no event decided it yet), -errno. */
struct bsg_udev_record {
        char decision[16], reason[48], slot_active[4], sysname[256];
};
int bsg_udev_record_of(dev_t devnum, struct bsg_udev_record *ret);

/* Asks the kernel for a `change` uevent of block device NAME, marked (SYNTH_ARG_BSG=reannounced in
 * the event's environment) so that the event it starts never re-announces others. Appends
 * "change UUID BSG=reannounced" to its sysfs uevent file. Returns 0 or -errno. */
int bsg_sysfs_reannounce(const char *name);

/* The kernel names of the block devices whose udev record says `held` (the gate's REASON) while no
 * device holds them any longer (holders/ empty): the former members of a stacked device just removed,
 * which no event re-decided. At most MAX into RET. Returns how many, or -errno. */
int bsg_udev_held_unheld(char (*ret)[256], size_t max);

/* The device numbers of the members (slaves/) of the stacked device SYSNAME, at most MAX into RET.
 * Returns how many. */
size_t bsg_slaves_devnums(const char *sysname, dev_t *ret, size_t max);

/* The device-mapper name of block device DEVNUM (sysfs dm/name) into BUF; NULL if it is none. */
const char *bsg_dm_name_of_devnum(dev_t devnum, char *buf, size_t size);

/* Whether DEVNUM has holders (a device known only from its inventory record). */
bool bsg_devnum_held(dev_t devnum);

/* Gives every partition whose PARTUUID is unknown the one its disk's partition table (read with
 * probe_table) says. */
void bsg_devs_add_table_partuuids(struct bsg_devs *devs);

/* Reads the superblock of every device not marked skip_read, each exactly once (one pread of 4 KiB at
 * 64 KiB; a whole disk with a btrfs magic there also has its partition table looked for), in child
 * processes; devices not done by DEADLINE_USEC (CLOCK_MONOTONIC) get -ETIMEDOUT.
 * One deadline for the whole run: a read that does not answer within 200 ms is left to its child and
 * the devices after it go to a new one (at most 16), so a stalled device delays no other's read.
 * FIRST is read first (the device of the event), or SIZE_MAX. Then parses each and asks libblkid about
 * the same bytes. Returns 0 or -errno (fork/pipe failed). */
int bsg_devs_read_all(struct bsg_devs *devs, size_t first, uint64_t deadline_usec);

uint64_t bsg_now_usec(void);
