/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfs-scan-gate: decides which btrfs devices the kernel may scan, so that A/B slot clones (same
 * fsid) never race each other into the kernel's device list. See btrfs-scan-gate.8.
 *
 * The I/O lives here, in devices.c (block devices), state.c (lock, state file) and kernel.c (every
 * kernel interface); superblock.c, policy.c, skiplist.c, config.c, cmdline.c and slot.c are pure.
 *
 * Bounded time: every invocation has one deadline (--timeout, default 10 s). Superblock reads run in
 * a child process that streams results through a pipe; a read still blocked at the deadline is
 * abandoned (the child is killed and not waited for, so a read stuck in the block layer cannot hold
 * the helper, and the child has closed stdout/stderr so it cannot hold udev's pipe either). The lock
 * is taken with flock(LOCK_NB) polled until the same deadline; without it the helper decides and
 * prints but does not act.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cmdline.h"
#include "config.h"
#include "devices.h"
#include "kernel.h"
#include "policy.h"
#include "skiplist.h"
#include "slot.h"
#include "state.h"
#include "superblock.h"
#include "util.h"

#ifndef BSG_VERSION
#define BSG_VERSION "0.0"
#endif

enum verb { VERB_UDEV, VERB_BOOT, VERB_STATUS };

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
        bool from_record; /* fields from the state file (this invocation could not read the device) */
};

struct ctx {
        enum verb verb;
        bool dry_run, verbose, json, print_cmdline;
        const char *write_modprobe;
        const char *config_path;
        const char *devnode; /* udev */
        double timeout;
        uint64_t deadline;

        struct bsg_config config;
        char *cmdline;
        char *mountinfo;
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
        char errors[512];
        char actions[8192];
};

static bool arg_verbose;

static void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_msg(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        fputs("btrfs-scan-gate: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}
#define log_debug(...)                                                                                  \
        do {                                                                                            \
                if (arg_verbose)                                                                        \
                        log_msg(__VA_ARGS__);                                                           \
        } while (0)

static void add_token(char *buf, size_t size, const char *token)
{
        size_t l = strlen(buf);
        /* no duplicates */
        for (const char *p = buf; (p = strstr(p, token)); p++)
                if ((p == buf || p[-1] == ',') && (p[strlen(token)] == ',' || p[strlen(token)] == '\0'))
                        return;
        if (l + strlen(token) + 2 > size)
                return;
        snprintf(buf + l, size - l, "%s%s", l ? "," : "", token);
}

static void add_error(struct ctx *c, const char *token)
{
        add_token(c->errors, sizeof(c->errors), token);
}

static void config_diag(const char *filename, unsigned line, const char *message, void *userdata)
{
        log_msg("%s:%u: %s, ignoring line", filename, line, message);
        add_error(userdata, "config-invalid");
}

static void load_config(struct ctx *c)
{
        const char *path = c->config_path ? c->config_path : bsg_config_path();
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r;

        bsg_config_init(&c->config);
        r = bsg_read_file(path, 65536, &text, &len);
        if (r == -ENOENT && !c->config_path)
                return;
        if (r < 0) {
                log_msg("cannot read %s, using defaults: %s", path, strerror(-r));
                add_error(c, "config-unreadable");
                return;
        }
        bsg_config_parse(text, len, path, &c->config, config_diag, c);
}

static void load_kernel_state(struct ctx *c)
{
        int r;

        if (bsg_read_file(bsg_cmdline_path(), 65536, &c->cmdline, NULL) < 0)
                c->cmdline = NULL;
        if (bsg_read_file(bsg_mountinfo_path(), 4 * 1024 * 1024, &c->mountinfo, NULL) < 0)
                c->mountinfo = NULL;
        if (c->mountinfo && bsg_mountinfo_root_source(c->mountinfo, &c->root_source) < 0)
                c->root_source = NULL;
        bsg_kernel_caps(&c->caps);
        r = bsg_mounted_fsids(&c->mounted, &c->n_mounted);
        if (r < 0) {
                log_msg("cannot list mounted btrfs filesystems, assuming none: %s", strerror(-r));
                c->mounted = NULL;
                c->n_mounted = 0;
        }
}

static bool fsid_is_mounted(const struct ctx *c, const uint8_t fsid[BSG_UUID_SIZE])
{
        for (size_t i = 0; i < c->n_mounted; i++)
                if (memcmp(c->mounted[i], fsid, BSG_UUID_SIZE) == 0)
                        return true;
        return false;
}

/* Active slot from the config, the command line, or the mounted root; PARTS from the devices. */
static void find_active_slot(struct ctx *c)
{
        struct bsg_partition *parts = calloc(c->devs.n + 1, sizeof(*parts));
        char (*uuids)[37] = calloc(c->devs.n + 1, sizeof(*uuids));

        if (!parts || !uuids) {
                free(parts);
                free(uuids);
                return;
        }
        for (size_t i = 0; i < c->devs.n; i++) {
                const struct bsg_dev *d = &c->devs.v[i];
                parts[i].devnode = d->devnode;
                parts[i].partlabel = d->partlabel;
                parts[i].partuuid = d->partuuid;
                if (d->parse_result == 0) {
                        bsg_uuid_format(d->sb.fsid, uuids[i]);
                        parts[i].fsuuid = uuids[i];
                }
        }
        c->have_active_slot = bsg_active_slot(&c->config, c->cmdline, parts, c->devs.n, c->root_source,
                                              c->active_slot, &c->slot_source) >= 0;
        free(parts);
        free(uuids);
}

static int entries_build(struct ctx *c)
{
        c->e = calloc(c->devs.n + c->state.n + 1, sizeof(struct entry));
        if (!c->e)
                return -ENOMEM;
        c->n = 0;
        for (size_t i = 0; i < c->devs.n; i++) {
                struct bsg_dev *d = &c->devs.v[i];
                struct entry *e = &c->e[c->n++];
                struct bsg_record *rec = d->devnum ? bsg_state_find(&c->state, d->devnum) : NULL;

                if (rec && d->read_result >= 0 && !d->skip_read &&
                    (d->parse_result != 0 || memcmp(rec->fsid, d->sb.fsid, BSG_UUID_SIZE) != 0 ||
                     rec->devid != d->sb.devid)) {
                        /* the record is of another device that had this number (media replugged):
                         * neither its label nor its registration belong to this one */
                        log_debug("%s: state record of an earlier device with this number dropped", d->devnode);
                        bsg_state_remove(&c->state, d->devnum);
                        rec = NULL;
                }
                e->devnode = d->devnode;
                e->devnum = d->devnum;
                e->dev = (ssize_t)i;
                e->pd.devnode = d->devnode;
                e->pd.hotpluggable = d->hotpluggable;
                e->pd.path_ok = bsg_skiplist_path_ok(d->devnode);
                if (d->parse_result == 0) {
                        e->pd.state = BSG_DEV_BTRFS;
                        memcpy(e->pd.fsid, d->sb.fsid, BSG_UUID_SIZE);
                        e->pd.devid = d->sb.devid;
                        e->pd.num_devices = d->sb.num_devices;
                        e->pd.seeding = bsg_superblock_is_seed(&d->sb);
                        e->generation = d->sb.generation;
                } else if ((d->read_result < 0 || d->skip_read) && rec && !d->skip_read_why) {
                        /* unreadable now (timeout, EIO): what it was when it was last read */
                        e->pd.state = BSG_DEV_BTRFS;
                        memcpy(e->pd.fsid, rec->fsid, BSG_UUID_SIZE);
                        e->pd.devid = rec->devid;
                        e->pd.num_devices = rec->num_devices;
                        e->pd.seeding = rec->seeding;
                        e->generation = rec->generation;
                        e->from_record = true;
                } else
                        e->pd.state = d->parse_result == BSG_SB_INVALID ? BSG_DEV_INVALID : BSG_DEV_NOT_BTRFS;
                if (!d->partlabel && rec && rec->partlabel) {
                        /* the label an earlier event of this device gave (udev env), not visible in sysfs */
                        d->partlabel = strdup(rec->partlabel);
                        if (!d->partlabel)
                                return -ENOMEM;
                }
                e->has_slot = bsg_slot_from_label(d->partlabel, &c->config, e->slot, e->base) > 0;
        }
        /* devices that appeared after our enumeration but were recorded by a concurrent invocation */
        for (size_t k = 0; k < c->state.n; k++) {
                struct bsg_record *rec = &c->state.v[k];
                bool known = false;
                for (size_t i = 0; i < c->n && !known; i++)
                        known = c->e[i].devnum == rec->devnum;
                if (known)
                        continue;
                struct entry *e = &c->e[c->n++];
                e->devnode = rec->devnode;
                e->devnum = rec->devnum;
                e->dev = -1;
                e->pd.devnode = rec->devnode;
                e->pd.path_ok = bsg_skiplist_path_ok(rec->devnode);
                e->pd.state = BSG_DEV_BTRFS;
                memcpy(e->pd.fsid, rec->fsid, BSG_UUID_SIZE);
                e->pd.devid = rec->devid;
                e->pd.num_devices = rec->num_devices;
                e->pd.seeding = rec->seeding;
                e->generation = rec->generation;
                e->from_record = true;
                e->has_slot = bsg_slot_from_label(rec->partlabel, &c->config, e->slot, e->base) > 0;
        }
        find_active_slot(c); /* after the labels from the state file are in */
        for (size_t i = 0; i < c->n; i++) {
                struct entry *e = &c->e[i];
                e->pd.slot_active = e->has_slot && c->have_active_slot && streq(e->slot, c->active_slot);
                if (e->pd.state == BSG_DEV_BTRFS)
                        e->pd.fsid_mounted = fsid_is_mounted(c, e->pd.fsid);
                if (e->pd.state == BSG_DEV_BTRFS) /* the hijack guard and forget_changed() ask */
                        e->pd.self_mounted = c->mountinfo && bsg_mountinfo_has_source(c->mountinfo, e->devnode);
        }
        return 0;
}

static void decide(struct ctx *c)
{
        _cleanup_free_ struct bsg_device *pd = calloc(c->n + 1, sizeof(*pd));
        _cleanup_free_ struct bsg_verdict *v = calloc(c->n + 1, sizeof(*v));

        if (!pd || !v) {
                for (size_t i = 0; i < c->n; i++)
                        c->e[i].v = (struct bsg_verdict){BSG_IGNORE, BSG_REASON_NOT_BTRFS};
                return;
        }
        for (size_t i = 0; i < c->n; i++)
                pd[i] = c->e[i].pd;
        bsg_policy_decide(pd, c->n, c->config.clone_policy, v);
        for (size_t i = 0; i < c->n; i++)
                c->e[i].v = v[i];
}

/* The sorted skip list of this set of verdicts. Returns 0, -E2BIG (truncated list), -ENOMEM. */
static int skip_list(struct ctx *c, char **ret_list)
{
        _cleanup_free_ const char **paths = calloc(c->n + 1, sizeof(char *));
        size_t m = 0, rejected = 0, dropped = 0;
        int r;

        if (!paths)
                return -ENOMEM;
        for (size_t i = 0; i < c->n; i++)
                if (c->e[i].v.decision == BSG_SKIP && c->e[i].pd.path_ok)
                        paths[m++] = c->e[i].devnode;
        r = bsg_skiplist_format(paths, m, ret_list, &rejected, &dropped);
        if (r == -E2BIG)
                log_msg("skip list longer than %d bytes: %zu device(s) left out of it (still never scanned by "
                        "this helper)", BSG_SKIPLIST_MAX, dropped);
        return r;
}

static void record_all(struct ctx *c)
{
        for (size_t i = 0; i < c->n; i++) {
                struct entry *e = &c->e[i];
                if (e->dev < 0 || e->from_record || !e->devnum)
                        continue;
                if (e->pd.state != BSG_DEV_BTRFS) {
                        /* read fine and no (valid) btrfs any more: forget what it was */
                        if (c->devs.v[e->dev].read_result >= 0)
                                bsg_state_remove(&c->state, e->devnum);
                        continue;
                }
                struct bsg_record *old = bsg_state_find(&c->state, e->devnum);
                struct bsg_record rec = {
                        .devnum = e->devnum,
                        .devnode = (char *)e->devnode,
                        .partlabel = c->devs.v[e->dev].partlabel,
                        .devid = e->pd.devid,
                        .num_devices = e->pd.num_devices,
                        .generation = e->generation,
                        .seeding = e->pd.seeding,
                        .registered = old && old->registered,
                };
                memcpy(rec.fsid, e->pd.fsid, BSG_UUID_SIZE);
                if (bsg_state_put(&c->state, &rec) < 0)
                        add_error(c, "out-of-memory");
        }
}

static void set_registered(struct ctx *c, const struct entry *e, bool registered)
{
        struct bsg_record *rec = bsg_state_find(&c->state, e->devnum);
        if (rec)
                rec->registered = registered;
}

/* Writes the skip list where the kernel takes it; says why not when it cannot. */
static void apply_skip_list(struct ctx *c, const char *list)
{
        int r;

        if (!c->caps.skip_scan) {
                log_debug("%s does not exist (unpatched btrfs module): skip list not applied", BSG_SKIP_SCAN_PATH);
                add_error(c, "skip-scan-absent");
                return;
        }
        if (!c->caps.skip_scan_writable) {
                log_msg("%s is read-only: skip list not applied; use boot --write-modprobe or --print-cmdline",
                        BSG_SKIP_SCAN_PATH);
                add_error(c, "skip-scan-read-only");
                return;
        }
        r = bsg_skip_scan_write(list);
        if (r < 0) {
                log_msg("cannot write %s, ignoring: %s", BSG_SKIP_SCAN_PATH, strerror(-r));
                add_error(c, "skip-scan-write-failed");
        }
}

/* Whether E's superblock was read in this invocation. A scan ioctl makes the kernel read the device
 * again, outside our deadline: a device that did not answer us (timeout, EIO) or is known only from
 * the state file is not handed to the kernel, or a hung disk would hang us with the lock held. */
static bool read_now(const struct ctx *c, const struct entry *e)
{
        return e->dev >= 0 && !e->from_record && c->devs.v[e->dev].read_result >= 0;
}

/* Forgets devices this helper registered whose verdict is no longer scan (a twin appeared). */
static void forget_changed(struct ctx *c, int fd, const struct entry *except)
{
        for (size_t i = 0; i < c->n; i++) {
                struct entry *e = &c->e[i];
                struct bsg_record *rec = bsg_state_find(&c->state, e->devnum);
                if (e == except || !rec || !rec->registered || e->v.decision == BSG_SCAN)
                        continue;
                if (e->pd.self_mounted) {
                        log_debug("%s: twin registered and mounted, not forgotten", e->devnode);
                        continue;
                }
                int r = bsg_control_forget(fd, e->devnode);
                if (r < 0 && r != -ENOENT) {
                        log_msg("%s: cannot forget the registered twin, ignoring: %s", e->devnode, strerror(-r));
                        add_error(c, r == -EBUSY ? "twin-mounted" : "forget-failed");
                        continue;
                }
                rec->registered = false;
                char tok[4200];
                snprintf(tok, sizeof(tok), "forgot:%s", e->devnode);
                add_token(c->actions, sizeof(c->actions), tok);
        }
}

/* Gathers everything a decision needs and decides. Unless dry-run or status, takes the lock first:
 * *ret_lock_fd is its fd, or -1 if it could not be taken (said in c->errors). Returns 0 or -errno
 * (nothing could be decided). */
static int gather(struct ctx *c, ssize_t *ret_target, int *ret_lock_fd)
{
        ssize_t target = -1;
        int r, lock_fd = -1;

        load_config(c);
        load_kernel_state(c);
        r = bsg_devs_enumerate(&c->devs);
        if (r < 0) {
                log_msg("cannot enumerate block devices: %s", strerror(-r));
                add_error(c, "enumerate-failed");
                c->devs = (struct bsg_devs){0};
        }
        if (c->verb == VERB_UDEV) {
                r = bsg_devs_find_or_add(&c->devs, c->devnode);
                if (r < 0)
                        return r;
                target = r;
        }
        r = bsg_devs_read_all(&c->devs, target >= 0 ? (size_t)target : SIZE_MAX, c->deadline);
        if (r < 0) {
                log_msg("cannot read superblocks: %s", strerror(-r));
                add_error(c, "read-failed");
        }
        /* labels and bus of the btrfs devices from the udev database; of every device when root=
         * names a partition by PARTUUID, which only the database knows */
        bsg_devs_add_udev_properties(&c->devs, c->cmdline && strstr(c->cmdline, "PARTUUID="));
        for (size_t i = 0; i < c->devs.n; i++) {
                const struct bsg_dev *d = &c->devs.v[i];
                if (d->read_result == -ETIMEDOUT)
                        log_msg("%s: superblock read did not finish within the timeout, ignoring", d->devnode);
                if (d->parse_result == BSG_SB_INVALID)
                        log_msg("%s: invalid btrfs superblock: %s", d->devnode, d->problem);
                if (d->parse_result == 0 && d->sb.csum_state == BSG_CSUM_NOT_VERIFIED)
                        log_debug("%s: %s checksum not verified", d->devnode, bsg_csum_type_name(d->sb.csum_type));
        }
        if (!c->dry_run && c->verb != VERB_STATUS) {
                lock_fd = bsg_state_lock(bsg_rundir_path(), c->deadline);
                if (lock_fd < 0) {
                        log_msg("cannot take the lock in %s: %s", bsg_rundir_path(), strerror(-lock_fd));
                        add_error(c, lock_fd == -ETIMEDOUT ? "lock-timeout" : "lock-failed");
                }
        }
        r = bsg_state_load(bsg_rundir_path(), &c->state);
        if (r < 0) {
                log_msg("cannot load the state file, starting empty: %s", strerror(-r));
                c->state = (struct bsg_state){0};
        }
        r = entries_build(c);
        if (r < 0) {
                if (lock_fd >= 0)
                        close(lock_fd);
                return r;
        }
        decide(c);
        *ret_target = target;
        *ret_lock_fd = lock_fd < 0 ? -1 : lock_fd;
        return 0;
}

/* Value escaping for udev: bytes outside a safe set become \xHH (as udev's *_ENC properties). */
static void print_kv(const char *key, const char *value)
{
        printf("%s=", key);
        for (const unsigned char *p = (const unsigned char *)value; *p; p++)
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    strchr("#+-.:=@_/,", *p))
                        putchar(*p);
                else
                        printf("\\x%02x", *p);
        putchar('\n');
}

/* ID_BTRFS_READY without the kernel: every devid of the fs among the copies that count. */
static bool all_devices_present(const struct ctx *c, const struct entry *t, bool scanned_only)
{
        uint64_t count = 0;
        for (size_t i = 0; i < c->n; i++) {
                const struct entry *e = &c->e[i];
                bool dup = false;
                if (e->pd.state != BSG_DEV_BTRFS || memcmp(e->pd.fsid, t->pd.fsid, BSG_UUID_SIZE) != 0)
                        continue;
                if (scanned_only && e->v.decision != BSG_SCAN)
                        continue;
                for (size_t k = 0; k < i && !dup; k++)
                        dup = c->e[k].pd.state == BSG_DEV_BTRFS && c->e[k].pd.devid == e->pd.devid &&
                              memcmp(c->e[k].pd.fsid, t->pd.fsid, BSG_UUID_SIZE) == 0 &&
                              (!scanned_only || c->e[k].v.decision == BSG_SCAN);
                if (!dup)
                        count++;
        }
        return count >= t->pd.num_devices;
}

static int run_udev(struct ctx *c)
{
        ssize_t ti = -1;
        int lock_fd = -1, r0 = gather(c, &ti, &lock_fd);
        _cleanup_close_ int control = -1;
        int ready = -1;

        if (r0 < 0 || ti < 0) {
                /* out of memory before anything was decided: say so, never fail the event */
                print_kv("BTRFS_SCAN_GATE_DECISION", "ignore");
                print_kv("BTRFS_SCAN_GATE_REASON", "not-btrfs");
                print_kv("BTRFS_SCAN_GATE_ACTION", "none");
                print_kv("BTRFS_SCAN_GATE_ERROR", "out-of-memory");
                return 0;
        }
        struct entry *t = NULL;
        for (size_t i = 0; i < c->n; i++)
                if (c->e[i].dev == ti)
                        t = &c->e[i];
        const struct bsg_dev *d = &c->devs.v[ti];
        bool acting = !c->dry_run && lock_fd >= 0;

        if (d->read_result == -ETIMEDOUT)
                add_error(c, "read-timeout");
        else if (d->read_result < 0 && d->read_result != -ENODATA)
                add_error(c, "read-error");
        if (t->v.reason == BSG_REASON_BAD_PATH)
                log_msg("%s: path contains ',' or whitespace or is longer than %d bytes: cannot be listed in "
                        "skip_scan, not scanned", t->devnode, BSG_PATH_NAME_MAX);
        if (t->v.reason == BSG_REASON_REMOVABLE_CLONE_OF_MOUNTED)
                log_msg("%s: removable device carries the fsid of a mounted filesystem: never scanned", t->devnode);

        if (c->dry_run) {
                if (t->v.decision != BSG_IGNORE)
                        add_token(c->actions, sizeof(c->actions), "dry-run");
        } else if (acting && t->v.decision == BSG_IGNORE) {
                /* nothing to do for the device, but keep the state and the skip list current */
                record_all(c);
                _cleanup_free_ char *list = NULL;
                if (skip_list(c, &list) == -E2BIG)
                        add_error(c, "skip-list-too-long");
                if (list)
                        apply_skip_list(c, list);
                int r = bsg_state_save(bsg_rundir_path(), &c->state);
                if (r < 0) {
                        log_msg("cannot save the state file, ignoring: %s", strerror(-r));
                        add_error(c, "state-save-failed");
                }
        } else if (acting) {
                record_all(c);
                control = bsg_control_open();
                if (control < 0) {
                        if (control == -ENOENT || control == -ENODEV || control == -ENXIO)
                                log_msg("%s: btrfs not loaded, not ready", bsg_control_path());
                        else
                                log_msg("cannot open %s: %s", bsg_control_path(), strerror(-control));
                        add_error(c, "not-ready");
                } else
                        forget_changed(c, control, t);
                if (t->v.decision == BSG_SCAN && control >= 0 && !read_now(c, t)) {
                        log_msg("%s: not readable in this run: not handed to the kernel now", t->devnode);
                        add_error(c, "not-scanned-unreadable");
                } else if (t->v.decision == BSG_SCAN && control >= 0) {
                        int r = bsg_control_devices_ready(control, t->devnode);
                        if (r < 0) {
                                log_msg("%s: scan failed, ignoring: %s", t->devnode, strerror(-r));
                                add_error(c, "scan-failed");
                        } else {
                                ready = r;
                                set_registered(c, t, true);
                                add_token(c->actions, sizeof(c->actions), "scanned");
                        }
                } else if (t->v.decision == BSG_SKIP)
                        add_token(c->actions, sizeof(c->actions), "skipped");
                _cleanup_free_ char *list = NULL;
                int r = skip_list(c, &list);
                if (r == -E2BIG)
                        add_error(c, "skip-list-too-long");
                if (list)
                        apply_skip_list(c, list);
                r = bsg_state_save(bsg_rundir_path(), &c->state);
                if (r < 0) {
                        log_msg("cannot save the state file, ignoring: %s", strerror(-r));
                        add_error(c, "state-save-failed");
                }
        } else if (t->v.decision == BSG_SKIP)
                add_token(c->actions, sizeof(c->actions), "skipped");

        print_kv("BTRFS_SCAN_GATE_DECISION", bsg_decision_name(t->v.decision));
        print_kv("BTRFS_SCAN_GATE_REASON", bsg_reason_name(t->v.reason));
        if (t->pd.state == BSG_DEV_BTRFS) {
                char fsid[37], num[32];
                bsg_uuid_format(t->pd.fsid, fsid);
                print_kv("BTRFS_SCAN_GATE_FSID", fsid);
                snprintf(num, sizeof(num), "%" PRIu64, t->pd.devid);
                print_kv("BTRFS_SCAN_GATE_DEVID", num);
                snprintf(num, sizeof(num), "%" PRIu64, t->generation);
                print_kv("BTRFS_SCAN_GATE_GENERATION", num);
                if (d->parse_result == 0)
                        print_kv("BTRFS_SCAN_GATE_CSUM", d->sb.csum_state == BSG_CSUM_VERIFIED ? "verified"
                                                                                             : "not-verified");
        }
        print_kv("BTRFS_SCAN_GATE_SLOT", t->has_slot ? t->slot : "");
        print_kv("BTRFS_SCAN_GATE_SLOT_BASE", t->has_slot ? t->base : "");
        print_kv("BTRFS_SCAN_GATE_SLOT_ACTIVE", t->pd.slot_active ? "1" : "0");
        print_kv("BTRFS_SCAN_GATE_ACTION", c->actions[0] ? c->actions : "none");
        if (c->errors[0])
                print_kv("BTRFS_SCAN_GATE_ERROR", c->errors);
        if (t->v.decision == BSG_SCAN) {
                /* no answer from the kernel (dry run, not loaded, failed): what the superblocks say,
                 * never a blanket 0 that would hold a single-device filesystem back */
                if (ready < 0)
                        ready = all_devices_present(c, t, true);
                print_kv("ID_BTRFS_READY", ready > 0 ? "1" : "0");
        } else if (t->v.decision == BSG_SKIP)
                print_kv("ID_BTRFS_READY", all_devices_present(c, t, false) ? "1" : "0");
        bool inactive_clone = (t->v.reason == BSG_REASON_CLONE || t->v.reason == BSG_REASON_RAID_CLONE_INACTIVE) &&
                              t->v.decision == BSG_SKIP && t->has_slot && !t->pd.slot_active;
        if (inactive_clone || t->v.reason == BSG_REASON_REMOVABLE_CLONE_OF_MOUNTED)
                print_kv("UDISKS_IGNORE", "1");
        if (lock_fd >= 0)
                close(lock_fd);
        return 0;
}

static int write_modprobe(const char *path, const char *list)
{
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        FILE *f = fopen(tmp, "we");
        if (!f)
                return -errno;
        fprintf(f, "# written by btrfs-scan-gate boot --write-modprobe; regenerate, don't edit\n");
        fprintf(f, "options btrfs skip_scan=%s\n", list);
        if (fflush(f) != 0 || ferror(f)) {
                int r = -errno ?: -EIO;
                fclose(f);
                unlink(tmp);
                return r;
        }
        fclose(f);
        if (rename(tmp, path) < 0) {
                int r = -errno;
                unlink(tmp);
                return r;
        }
        return 0;
}

static int run_boot(struct ctx *c)
{
        ssize_t ti;
        int lock_fd = -1, ret = 0, r = gather(c, &ti, &lock_fd);
        _cleanup_close_ int control = -1;
        _cleanup_free_ char *list = NULL;

        if (r < 0) {
                log_msg("cannot decide: %s", strerror(-r));
                return 1;
        }
        r = skip_list(c, &list);
        if (r == -ENOMEM) {
                log_msg("out of memory");
                return 1;
        }
        if (c->dry_run || c->verbose)
                for (size_t i = 0; i < c->n; i++) {
                        const struct entry *e = &c->e[i];
                        if (e->pd.state == BSG_DEV_NOT_BTRFS && !c->verbose)
                                continue;
                        printf("%s %s %s\n", e->devnode, bsg_decision_name(e->v.decision), bsg_reason_name(e->v.reason));
                }
        if (c->dry_run)
                printf("skip_scan=%s\n", list);
        else if (lock_fd >= 0) {
                record_all(c);
                if (c->caps.skip_scan && c->caps.skip_scan_writable)
                        apply_skip_list(c, list);
                else if (!c->caps.skip_scan)
                        log_msg("%s does not exist (btrfs not loaded or unpatched): skip list not applied%s",
                                BSG_SKIP_SCAN_PATH,
                                c->write_modprobe || c->print_cmdline ? "" : "; see --write-modprobe, --print-cmdline");
                else
                        log_msg("%s is read-only: skip list not applied%s", BSG_SKIP_SCAN_PATH,
                                c->write_modprobe || c->print_cmdline ? "" : "; see --write-modprobe, --print-cmdline");
                control = bsg_control_open();
                if (control < 0)
                        log_msg("cannot open %s (%s): btrfs not ready, nothing scanned", bsg_control_path(),
                                strerror(-control));
                else {
                        forget_changed(c, control, NULL);
                        for (size_t i = 0; i < c->n; i++) {
                                struct entry *e = &c->e[i];
                                if (e->v.decision != BSG_SCAN)
                                        continue;
                                if (!read_now(c, e)) {
                                        log_msg("%s: not readable in this run: not scanned", e->devnode);
                                        continue;
                                }
                                r = bsg_control_scan(control, e->devnode);
                                if (r < 0)
                                        log_msg("%s: scan failed, ignoring: %s", e->devnode, strerror(-r));
                                else
                                        set_registered(c, e, true);
                        }
                }
                r = bsg_state_save(bsg_rundir_path(), &c->state);
                if (r < 0)
                        log_msg("cannot save the state file, ignoring: %s", strerror(-r));
        } else
                ret = 1;
        if (c->write_modprobe) {
                if (c->dry_run)
                        printf("options btrfs skip_scan=%s\n", list);
                else if ((r = write_modprobe(c->write_modprobe, list)) < 0) {
                        log_msg("cannot write %s: %s", c->write_modprobe, strerror(-r));
                        ret = 1;
                }
        }
        if (c->print_cmdline)
                printf("btrfs.skip_scan=%s\n", list);
        if (lock_fd >= 0)
                close(lock_fd);
        return ret;
}

static void json_str(const char *s)
{
        putchar('"');
        for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
                if (*p == '"' || *p == '\\')
                        printf("\\%c", *p);
                else if (*p < 0x20)
                        printf("\\u%04x", *p);
                else
                        putchar(*p);
        }
        putchar('"');
}

static int run_status(struct ctx *c)
{
        ssize_t ti;
        int lock_fd = -1, r = gather(c, &ti, &lock_fd);
        _cleanup_free_ char *current = NULL, *list = NULL;

        if (r < 0) {
                log_msg("cannot decide: %s", strerror(-r));
                return 1;
        }
        if (skip_list(c, &list) == -ENOMEM)
                return 1;
        bool have_current = bsg_skip_scan_read(&current) >= 0;
        const char *slot = c->have_active_slot ? c->active_slot : "";

        if (c->json) {
                printf("{\n  \"version\": \"%s\",\n  \"kernel\": {\"control\": %s, \"skip_scan\": %s, "
                       "\"skip_scan_writable\": %s, \"virtual_fsid\": %s, \"temp_fsid\": %s},\n",
                       BSG_VERSION, c->caps.control ? "true" : "false", c->caps.skip_scan ? "true" : "false",
                       c->caps.skip_scan_writable ? "true" : "false", c->caps.virtual_fsid ? "true" : "false",
                       c->caps.temp_fsid ? "true" : "false");
                printf("  \"skip_scan_current\": ");
                if (have_current)
                        json_str(current);
                else
                        printf("null");
                printf(",\n  \"skip_scan_computed\": ");
                json_str(list);
                printf(",\n  \"active_slot\": ");
                json_str(slot);
                printf(",\n  \"active_slot_source\": ");
                json_str(bsg_slot_source_name(c->slot_source));
                printf(",\n  \"clone_policy\": \"%s\",\n  \"devices\": [",
                       c->config.clone_policy == BSG_CLONE_ACTIVE ? "active" : "skip-all");
                bool first = true;
                for (size_t i = 0; i < c->n; i++) {
                        const struct entry *e = &c->e[i];
                        const struct bsg_dev *d = e->dev >= 0 ? &c->devs.v[e->dev] : NULL;
                        struct bsg_record *rec = bsg_state_find(&c->state, e->devnum);
                        char fsid[37] = "";
                        if (e->pd.state == BSG_DEV_NOT_BTRFS && !c->verbose)
                                continue;
                        if (e->pd.state == BSG_DEV_BTRFS)
                                bsg_uuid_format(e->pd.fsid, fsid);
                        printf("%s\n    {\"devnode\": ", first ? "" : ",");
                        first = false;
                        json_str(e->devnode);
                        printf(", \"devnum\": \"%u:%u\", \"fsid\": ", major(e->devnum), minor(e->devnum));
                        json_str(fsid);
                        printf(", \"devid\": %" PRIu64 ", \"num_devices\": %" PRIu64 ", \"generation\": %" PRIu64
                               ", \"seed\": %s, \"slot\": ",
                               e->pd.devid, e->pd.num_devices, e->generation, e->pd.seeding ? "true" : "false");
                        json_str(e->has_slot ? e->slot : "");
                        printf(", \"slot_active\": %s, \"decision\": \"%s\", \"reason\": \"%s\", \"registered\": %s",
                               e->pd.slot_active ? "true" : "false", bsg_decision_name(e->v.decision),
                               bsg_reason_name(e->v.reason), rec && rec->registered ? "true" : "false");
                        printf(", \"checksum\": ");
                        json_str(d && d->parse_result == 0 ? bsg_csum_type_name(d->sb.csum_type) : "");
                        printf(", \"checksum_state\": ");
                        json_str(d && d->parse_result == 0 ? bsg_csum_state_name(d->sb.csum_state) : "");
                        printf(", \"problem\": ");
                        json_str(d && d->parse_result != 0 ? d->problem : "");
                        printf(", \"label\": ");
                        json_str(d && d->parse_result == 0 ? d->sb.label : "");
                        /* what libblkid says of the same bytes (never a second read of the device) */
                        printf(", \"blkid\": {\"type\": ");
                        json_str(d ? d->blkid_type : NULL);
                        printf(", \"uuid\": ");
                        json_str(d ? d->blkid_uuid : NULL);
                        printf(", \"uuid_sub\": ");
                        json_str(d ? d->blkid_uuid_sub : NULL);
                        printf(", \"label\": ");
                        json_str(d ? d->blkid_label : NULL);
                        printf("}}");
                }
                printf("\n  ]\n}\n");
                return 0;
        }
        printf("kernel: control %s, skip_scan %s, virtual_fsid %s, temp_fsid %s\n",
               c->caps.control ? "present" : "absent (btrfs not loaded)",
               !c->caps.skip_scan ? "absent (unpatched)" : c->caps.skip_scan_writable ? "writable" : "read-only",
               c->caps.virtual_fsid ? "yes" : "no", c->caps.temp_fsid ? "yes" : "no");
        printf("skip_scan (current): %s\n", have_current ? current : "(absent)");
        printf("skip_scan (computed): %s\n", list);
        printf("active slot: %s (from %s), clone policy %s\n", c->have_active_slot ? slot : "(unknown)",
               bsg_slot_source_name(c->slot_source),
               c->config.clone_policy == BSG_CLONE_ACTIVE ? "active" : "skip-all");
        printf("%-24s %-36s %5s %10s %-4s %-6s %-26s %s\n", "DEVICE", "FSID", "DEVID", "GENERATION", "SLOT",
               "DECIDE", "REASON", "CHECKSUM");
        for (size_t i = 0; i < c->n; i++) {
                const struct entry *e = &c->e[i];
                const struct bsg_dev *d = e->dev >= 0 ? &c->devs.v[e->dev] : NULL;
                char fsid[37] = "-", csum[64] = "-";
                if (e->pd.state == BSG_DEV_NOT_BTRFS && !c->verbose)
                        continue;
                if (e->pd.state == BSG_DEV_BTRFS)
                        bsg_uuid_format(e->pd.fsid, fsid);
                if (d && d->parse_result == 0)
                        snprintf(csum, sizeof(csum), "%s,%s", bsg_csum_type_name(d->sb.csum_type),
                                 bsg_csum_state_name(d->sb.csum_state));
                else if (d && d->problem)
                        snprintf(csum, sizeof(csum), "(%s)", d->problem);
                printf("%-24s %-36s %5" PRIu64 " %10" PRIu64 " %-4s %-6s %-26s %s\n", e->devnode, fsid,
                       e->pd.devid, e->generation, e->has_slot ? e->slot : "-", bsg_decision_name(e->v.decision),
                       bsg_reason_name(e->v.reason), csum);
        }
        return 0;
}

static void help(void)
{
        printf("Usage: btrfs-scan-gate [OPTIONS] udev DEVNODE\n"
               "       btrfs-scan-gate [OPTIONS] boot [--write-modprobe FILE] [--print-cmdline]\n"
               "       btrfs-scan-gate [OPTIONS] status [--json]\n"
               "       btrfs-scan-gate --help | --version\n"
               "\n"
               "Decides which btrfs devices the kernel may scan, so that A/B slot clones (the same fsid)\n"
               "never race each other into the kernel's device list.\n"
               "\n"
               "Commands:\n"
               "  udev DEVNODE   for IMPORT{program} in a udev rule: decide for DEVNODE, act, print KEY=VALUE\n"
               "  boot           before coldplug: decide for every block device, write the skip list\n"
               "                 (/sys/module/btrfs/parameters/skip_scan) and scan what may be scanned\n"
               "  status         every btrfs device, its decision and reason, the kernel's capabilities\n"
               "\n"
               "Options:\n"
               "  --dry-run            decide and print, touch nothing (no ioctl, no skip list, no state)\n"
               "  --config FILE        configuration file (default /etc/btrfs-scan-gate.conf)\n"
               "  --timeout SECONDS    bound on the whole invocation (default 10)\n"
               "  -v, --verbose        more messages on stderr; status/boot also list non-btrfs devices\n"
               "  --write-modprobe FILE  (boot) also write 'options btrfs skip_scan=...' to FILE\n"
               "  --print-cmdline      (boot) also print 'btrfs.skip_scan=...' for the kernel command line\n"
               "  --json               (status) JSON output\n"
               "  -h, --help, --version\n"
               "\n"
               "Exit status: 0 success (udev: always, problems are in BTRFS_SCAN_GATE_ERROR=); 1 failure of\n"
               "boot or status; 2 usage error. See btrfs-scan-gate(8).\n");
}

int main(int argc, char **argv)
{
        enum { ARG_DRY_RUN = 0x100, ARG_CONFIG, ARG_TIMEOUT, ARG_VERSION, ARG_JSON, ARG_MODPROBE, ARG_CMDLINE };
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, ARG_VERSION},
                {"dry-run", no_argument, NULL, ARG_DRY_RUN},
                {"config", required_argument, NULL, ARG_CONFIG},
                {"timeout", required_argument, NULL, ARG_TIMEOUT},
                {"verbose", no_argument, NULL, 'v'},
                {"json", no_argument, NULL, ARG_JSON},
                {"write-modprobe", required_argument, NULL, ARG_MODPROBE},
                {"print-cmdline", no_argument, NULL, ARG_CMDLINE},
                {}};
        struct ctx c = {.timeout = 10};
        int opt, ret;

        /* options may come before or after the command */
        while ((opt = getopt_long(argc, argv, "hv", options, NULL)) >= 0)
                switch (opt) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("btrfs-scan-gate %s\n", BSG_VERSION);
                        return 0;
                case ARG_DRY_RUN:
                        c.dry_run = true;
                        break;
                case ARG_CONFIG:
                        c.config_path = optarg;
                        break;
                case ARG_TIMEOUT: {
                        char *end;
                        errno = 0;
                        c.timeout = strtod(optarg, &end);
                        if (errno || *end || !(c.timeout > 0) || c.timeout > 3600) {
                                log_msg("--timeout: expected seconds in (0, 3600], got '%s'", optarg);
                                return 2;
                        }
                        break;
                }
                case 'v':
                        c.verbose = arg_verbose = true;
                        break;
                case ARG_JSON:
                        c.json = true;
                        break;
                case ARG_MODPROBE:
                        c.write_modprobe = optarg;
                        break;
                case ARG_CMDLINE:
                        c.print_cmdline = true;
                        break;
                default:
                        return 2;
                }
        if (optind >= argc) {
                log_msg("missing command (udev, boot, status); see --help");
                return 2;
        }
        const char *verb = argv[optind++];
        if (streq(verb, "udev")) {
                c.verb = VERB_UDEV;
                if (optind != argc - 1) {
                        log_msg("udev: expected exactly one DEVNODE");
                        return 2;
                }
                c.devnode = argv[optind];
        } else if (streq(verb, "boot"))
                c.verb = VERB_BOOT;
        else if (streq(verb, "status"))
                c.verb = VERB_STATUS;
        else {
                log_msg("unknown command '%s'; see --help", verb);
                return 2;
        }
        if (c.verb != VERB_UDEV && optind != argc) {
                log_msg("%s: unexpected argument '%s'", verb, argv[optind]);
                return 2;
        }
        if ((c.json && c.verb != VERB_STATUS) || ((c.write_modprobe || c.print_cmdline) && c.verb != VERB_BOOT)) {
                log_msg("%s: option not valid for this command; see --help", verb);
                return 2;
        }
        c.deadline = bsg_now_usec() + (uint64_t)(c.timeout * 1e6);

        switch (c.verb) {
        case VERB_UDEV:
                ret = run_udev(&c);
                break;
        case VERB_BOOT:
                ret = run_boot(&c);
                break;
        default:
                ret = run_status(&c);
                break;
        }
        fflush(stdout);
        free(c.cmdline);
        free(c.mountinfo);
        free(c.root_source);
        free(c.mounted);
        free(c.e);
        bsg_devs_free(&c.devs);
        bsg_state_free(&c.state);
        return ret;
}
