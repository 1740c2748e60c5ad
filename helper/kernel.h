/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel interface, all in one place: /dev/btrfs-control and its ioctls, the skip_scan module
 * parameter, /sys/fs/btrfs, and the /proc files (command line, mountinfo). Every path has an
 * environment seam (docs/CONTRACT.md) so that tests never reach the real /dev/btrfs-control. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "superblock.h"

#define BSG_SKIP_SCAN_PATH "/sys/module/btrfs/parameters/skip_scan"

const char *bsg_control_path(void);   /* $BTRFS_SCAN_GATE_CONTROL or /dev/btrfs-control */
const char *bsg_cmdline_path(void);   /* $BTRFS_SCAN_GATE_CMDLINE or /proc/cmdline */
const char *bsg_mountinfo_path(void); /* $BTRFS_SCAN_GATE_MOUNTINFO or /proc/self/mountinfo */
const char *bsg_rundir_path(void);    /* $BTRFS_SCAN_GATE_RUNDIR or /run/btrfs-scan-gate */
const char *bsg_udevadm_path(void); /* udevadm, for path_id (test build: $BTRFS_SCAN_GATE_UDEVADM) */
const char *bsg_trusted_paths_seam(void); /* test build: $BTRFS_SCAN_GATE_TRUSTED_PATHS (':'-separated
                                           * devnodes taken for trusted storage); NULL otherwise */
const char *bsg_config_path(void);    /* $BTRFS_SCAN_GATE_CONFIG or /etc/btrfs-scan-gate.conf */
const char *bsg_efivars_path(void);   /* $BTRFS_SCAN_GATE_EFIVARS or /sys/firmware/efi/efivars */
const char *bsg_fstab_path(void);     /* $BTRFS_SCAN_GATE_FSTAB or /etc/fstab */
const char *bsg_crypttab_path(void);  /* $BTRFS_SCAN_GATE_CRYPTTAB or /etc/crypttab */
const char *bsg_unit_dir(void);       /* $BTRFS_SCAN_GATE_UNITDIR or /etc/systemd/system */
const char *bsg_dm_control_path(void); /* $BTRFS_SCAN_GATE_DM_CONTROL or /dev/mapper/control */

/* The table of the device-mapper device DEVNUM as the kernel reports it (DM_TABLE_STATUS with
 * DM_STATUS_TABLE_FLAG): one "TARGET_TYPE PARAMS\n" line per target, devices as MAJ:MIN, into a new
 * string *RET_TABLE of *RET_LEN bytes. Nothing is read from the device. Returns 0 or -errno (-ENXIO:
 * no such dm device; -ENOENT: no control node). */
int bsg_dm_table(dev_t devnum, char **ret_table, size_t *ret_len);

struct bsg_kernel_caps {
        bool control;            /* the control node exists (btrfs loaded) */
        bool skip_scan;          /* patched module: the parameter exists */
        bool skip_scan_writable; /* ... and is writable (0644, not the RFC's 0444) */
        bool virtual_fsid;       /* /sys/fs/btrfs/features/virtual_fsid */
        bool temp_fsid;          /* /sys/fs/btrfs/features/temp_fsid (upstream 6.7+) */
};
void bsg_kernel_caps(struct bsg_kernel_caps *ret_caps);

/* Opens the control node O_RDWR|O_CLOEXEC|O_NOCTTY. Returns the fd or -errno (-ENOENT: not loaded). */
int bsg_control_open(void);
/* BTRFS_IOC_DEVICES_READY: registers PATH; returns 1 if every device of its fs is present, 0 if not,
 * -errno on failure (-ENAMETOOLONG if PATH does not fit the ioctl's name). */
int bsg_control_devices_ready(int fd, const char *path);
int bsg_control_scan(int fd, const char *path);   /* BTRFS_IOC_SCAN_DEV: 0 or -errno */
int bsg_control_forget(int fd, const char *path); /* BTRFS_IOC_FORGET_DEV: 0 or -errno */

/* Kernel actions run in a child process under a deadline: a scan makes the kernel read the device
 * again (unbounded, in the block layer), so a device that hangs must not hold the helper and its
 * lock. The child runs OPS in order through CONTROL and streams each result back; an action not
 * answered by DEADLINE_USEC gets -ETIMEDOUT (the child is killed and not waited for). CLOSE_FD (the
 * lock, or -1) is closed in the child so that an abandoned child cannot keep the lock. */
enum bsg_kop_type { BSG_KOP_SCAN, BSG_KOP_READY, BSG_KOP_FORGET };
struct bsg_kop {
        enum bsg_kop_type type;
        const char *path;
        /* after a successful SCAN/READY: the superblock the decision was made from. The child reads
         * the page the kernel's read filled (RWF_NOWAIT, through a descriptor held across the ioctl)
         * and, if it is not the whole SUPER block (or, decided from the inventory without a read,
         * if it does not say what WANT says: bsg_superblock_same_summary()), or the page is no
         * longer cached (EAGAIN: what the kernel read cannot be shown), forgets the device again:
         * -ESTALE, and FORGET_RESULT says whether that forget worked. */
        bool verify;
        const uint8_t *super;       /* BSG_SUPER_SIZE bytes, or NULL */
        struct bsg_superblock want; /* without SUPER */
        int result; /* out: SCAN/FORGET 0, READY 1 (all devices present) or 0; -errno; -ETIMEDOUT */
        int forget_result; /* out, with -ESTALE: the forget's 0 or -errno (-ENOENT: not registered) */
};
int bsg_control_run(int control, struct bsg_kop *ops, size_t n, int close_fd, uint64_t deadline_usec);

/* Reads skip_scan into a new string (trailing newline removed). -ENOENT if absent. */
int bsg_skip_scan_read(char **ret_list);
/* Writes LIST ("" writes a lone newline so the store runs) with O_WRONLY|O_TRUNC, never creating it. */
int bsg_skip_scan_write(const char *list);

/* The fsids of mounted btrfs filesystems: the names of /sys/fs/btrfs/<uuid>/ and their metadata_uuid
 * files. *ret_fsids is a new array of *ret_n entries. */
int bsg_mounted_fsids(uint8_t (**ret_fsids)[BSG_UUID_SIZE], size_t *ret_n);

/* Whether block device SYSNAME ("sda4", "dm-0") is listed in /sys/fs/btrfs/<fsid>/devices/ of a mounted
 * filesystem (a member the mount opened; issue 10 item 1). */
bool bsg_mounted_member(const char *sysname);

/* Reads a whole small file (at most MAX bytes) into a NUL-terminated new buffer. */
int bsg_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len);

/* Sources of the mounts in mountinfo TEXT: the source of "/" (or NULL, any filesystem type), and whether
 * DEVNODE is the source of any btrfs mount. Pure helpers over the text. */
int bsg_mountinfo_root_source(const char *text, char **ret_source);
/* The device number of "/" in mountinfo TEXT (its MAJ:MIN field, a kernel fact, unlike the source
 * string, which can read /dev/root): 0 if none, or an anonymous one (major 0: btrfs, tmpfs...). */
dev_t bsg_mountinfo_root_devnum(const char *text);
bool bsg_mountinfo_has_source(const char *text, const char *devnode);

/* The same question for many devices: the source of every btrfs mount in TEXT, sorted, as pointers into
 * TEXT (which must outlive them). One pass over the text; each question is a binary search. */
struct bsg_mount_source {
        const char *p;
        size_t len;
};
struct bsg_mount_sources {
        struct bsg_mount_source *v;
        size_t n;
};
int bsg_mount_sources_parse(const char *text, struct bsg_mount_sources *ret);
bool bsg_mount_sources_has(const struct bsg_mount_sources *s, const char *devnode);
void bsg_mount_sources_free(struct bsg_mount_sources *s);
