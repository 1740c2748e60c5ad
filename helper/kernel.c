/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/btrfs.h>
#include <linux/dm-ioctl.h>

#include "kernel.h"
#include "util.h"

#ifndef BSG_UDEVADM
#define BSG_UDEVADM "/bin/udevadm"
#endif

/* The test seams: honoured only by the test build (btrfs-scan-gate-test); the installed helper
 * never lets its environment (udev's) redirect it. */
static const char *env_or(const char *var, const char *def)
{
#ifdef BSG_TEST_SEAMS
        const char *v = getenv(var);
        return isempty(v) ? def : v;
#else
        (void)var;
        return def;
#endif
}

const char *bsg_control_path(void)
{
        return env_or("BTRFS_SCAN_GATE_CONTROL", "/dev/btrfs-control");
}

const char *bsg_cmdline_path(void)
{
        return env_or("BTRFS_SCAN_GATE_CMDLINE", "/proc/cmdline");
}

const char *bsg_mountinfo_path(void)
{
        return env_or("BTRFS_SCAN_GATE_MOUNTINFO", "/proc/self/mountinfo");
}

const char *bsg_rundir_path(void)
{
        return env_or("BTRFS_SCAN_GATE_RUNDIR", "/run/btrfs-scan-gate");
}

const char *bsg_udevadm_path(void)
{
        return env_or("BTRFS_SCAN_GATE_UDEVADM", BSG_UDEVADM);
}

const char *bsg_trusted_paths_seam(void)
{
        return env_or("BTRFS_SCAN_GATE_TRUSTED_PATHS", NULL);
}

const char *bsg_efivars_path(void)
{
        return env_or("BTRFS_SCAN_GATE_EFIVARS", "/sys/firmware/efi/efivars");
}

const char *bsg_fstab_path(void)
{
        return env_or("BTRFS_SCAN_GATE_FSTAB", "/etc/fstab");
}

const char *bsg_crypttab_path(void)
{
        return env_or("BTRFS_SCAN_GATE_CRYPTTAB", "/etc/crypttab");
}

const char *bsg_unit_dir(void)
{
        return env_or("BTRFS_SCAN_GATE_UNITDIR", "/etc/systemd/system");
}

const char *bsg_config_path(void)
{
        return env_or("BTRFS_SCAN_GATE_CONFIG", "/etc/btrfs-scan-gate.conf");
}

const char *bsg_dm_control_path(void)
{
        return env_or("BTRFS_SCAN_GATE_DM_CONTROL", "/dev/mapper/control");
}

int bsg_dm_table(dev_t devnum, char **ret_table, size_t *ret_len)
{
        /* the parameters of a few targets fit a page; the kernel says when they did not */
        for (size_t size = 16384; size <= 1024 * 1024; size *= 4) {
                _cleanup_free_ struct dm_ioctl *io = calloc(1, size);
                _cleanup_close_ int fd = -1;
                _cleanup_free_ char *out = NULL;
                size_t len = 0;

                if (!io)
                        return -ENOMEM;
                io->version[0] = DM_VERSION_MAJOR; /* minor 0: any 4.x kernel answers */
                io->data_size = (uint32_t)size;
                io->data_start = sizeof(*io);
                io->flags = DM_STATUS_TABLE_FLAG;
                io->dev = ((uint64_t)major(devnum) << 8 | (minor(devnum) & 0xff)) |
                          ((uint64_t)(minor(devnum) & ~0xffu) << 12); /* the kernel's huge_encode_dev() */
                /* open(), not openat(): the test's umockdev answers this ioctl too */
                fd = open(bsg_dm_control_path(), O_RDWR | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        return -errno;
                if (ioctl(fd, DM_TABLE_STATUS, io) < 0)
                        return -errno;
                if (io->flags & DM_BUFFER_FULL_FLAG)
                        continue;
                if (io->data_start < sizeof(*io) || io->data_size > size || io->data_start > io->data_size)
                        return -EBADMSG;
                const char *base = (const char *)io + io->data_start;
                size_t avail = io->data_size - io->data_start, off = 0;
                out = malloc(avail + 1);
                if (!out)
                        return -ENOMEM;
                for (uint32_t t = 0; t < io->target_count; t++) {
                        if (off > avail || avail - off < sizeof(struct dm_target_spec))
                                return -EBADMSG;
                        const struct dm_target_spec *spec = (const void *)(base + off);
                        const char *params = (const char *)(spec + 1);
                        size_t room = avail - off - sizeof(*spec);
                        size_t plen = strnlen(params, room);
                        size_t tlen = strnlen(spec->target_type, sizeof(spec->target_type));
                        /* the parameters end with a NUL inside the buffer; the text never grows
                         * past the buffer (type + blank + params + newline fit the spec's room) */
                        if (plen == room || len + tlen + plen + 2 > avail)
                                return -EBADMSG;
                        memcpy(out + len, spec->target_type, tlen);
                        len += tlen;
                        out[len++] = ' ';
                        memcpy(out + len, params, plen);
                        len += plen;
                        out[len++] = '\n';
                        if (t + 1 < io->target_count && spec->next <= off)
                                return -EBADMSG;
                        off = spec->next;
                }
                out[len] = '\0';
                *ret_table = TAKE_PTR(out);
                *ret_len = len;
                return 0;
        }
        return -E2BIG;
}

void bsg_kernel_caps(struct bsg_kernel_caps *ret_caps)
{
        struct bsg_kernel_caps c = {0};
        struct stat st;

        c.control = access(bsg_control_path(), F_OK) == 0;
        if (stat(BSG_SKIP_SCAN_PATH, &st) == 0) {
                c.skip_scan = true;
                /* root passes access(W_OK) whatever the mode; sysfs refuses writes to 0444 attributes */
                c.skip_scan_writable = (st.st_mode & 0222) != 0;
        }
        c.virtual_fsid = access("/sys/fs/btrfs/features/virtual_fsid", F_OK) == 0;
        c.temp_fsid = access("/sys/fs/btrfs/features/temp_fsid", F_OK) == 0;
        *ret_caps = c;
}

int bsg_control_open(void)
{
        int fd = open(bsg_control_path(), O_RDWR | O_CLOEXEC | O_NOCTTY);
        return fd < 0 ? -errno : fd;
}

static int vol_args_init(struct btrfs_ioctl_vol_args *args, const char *path)
{
        memset(args, 0, sizeof(*args));
        if (strlen(path) > BTRFS_PATH_NAME_MAX)
                return -ENAMETOOLONG;
        strcpy(args->name, path);
        return 0;
}

int bsg_control_devices_ready(int fd, const char *path)
{
        struct btrfs_ioctl_vol_args args;
        int r = vol_args_init(&args, path);

        if (r < 0)
                return r;
        r = ioctl(fd, BTRFS_IOC_DEVICES_READY, &args);
        if (r < 0)
                return -errno;
        return r == 0; /* the kernel returns 0 when all devices are present */
}

int bsg_control_scan(int fd, const char *path)
{
        struct btrfs_ioctl_vol_args args;
        int r = vol_args_init(&args, path);

        if (r < 0)
                return r;
        return ioctl(fd, BTRFS_IOC_SCAN_DEV, &args) < 0 ? -errno : 0;
}

int bsg_control_forget(int fd, const char *path)
{
        struct btrfs_ioctl_vol_args args;
        int r = vol_args_init(&args, path);

        if (r < 0)
                return r;
        return ioctl(fd, BTRFS_IOC_FORGET_DEV, &args) < 0 ? -errno : 0;
}

static uint64_t now_usec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Whether the superblock the kernel just read through FD's device is still the one OP was decided
 * from. FD was opened before the ioctl and held across it: the kernel reads the superblock through
 * the block device's page cache (btrfs_read_disk_super(): read_cache_page_gfp() on the bdev's
 * mapping), and that cache is dropped when the last opener closes (blkdev_put() -> kill_bdev()). With
 * FD open the page the kernel read stays, and RWF_NOWAIT reads it from the cache or not at all: the
 * device is not asked a second time (a device that answers each read differently cannot show the
 * kernel one superblock and this check another). Only when the page is gone (evicted), the file
 * has no RWF_NOWAIT (a regular file, as in the tests; no preadv2 at all) or the read came short is it
 * read again. */
static bool still_same(const struct bsg_kop *op, int fd)
{
        static uint8_t buf[BSG_SUPER_SIZE];
        struct iovec iov = {buf, sizeof(buf)};
        struct bsg_superblock sb;
        const char *problem = NULL;

        if (fd < 0)
                return false;
        ssize_t n = preadv2(fd, &iov, 1, BSG_SUPER_OFFSET, RWF_NOWAIT);
        /* EAGAIN: the page is gone; reading the device again would ask it a second time, and a
         * hostile device answers that with the benign copy: a difference. Only a file without
         * RWF_NOWAIT at all (a regular file, as in the tests; no preadv2) is read again. */
        if (n < 0 && (errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL))
                n = pread(fd, buf, sizeof(buf), BSG_SUPER_OFFSET);
        if (n != (ssize_t)sizeof(buf))
                return false;
        if (op->super)
                return memcmp(buf, op->super, sizeof(buf)) == 0;
        if (bsg_superblock_parse(buf, sizeof(buf), &sb, &problem) != 0)
                return false;
        return bsg_superblock_same_summary(&op->want, &sb);
}

struct kop_result {
        uint32_t index;
        int32_t result;
        int32_t forget_result;
};

static _Noreturn void kop_child(int control, struct bsg_kop *ops, size_t n, int out)
{
        for (size_t i = 0; i < n; i++) {
                struct bsg_kop *op = &ops[i];
                bool verify = op->type != BSG_KOP_FORGET && op->verify;
                _cleanup_close_ int held = verify ? open(op->path, O_RDONLY | O_CLOEXEC | O_NOCTTY) : -1;
                int r;

                switch (op->type) {
                case BSG_KOP_SCAN:
                        r = bsg_control_scan(control, op->path);
                        break;
                case BSG_KOP_READY:
                        r = bsg_control_devices_ready(control, op->path);
                        break;
                default:
                        r = bsg_control_forget(control, op->path);
                        break;
                }
                int f = 0;
                if (r >= 0 && verify && !still_same(op, held)) {
                        /* the kernel may have read something else than we did: take it back, and
                         * say whether that worked (if not, the device is still registered) */
                        f = bsg_control_forget(control, op->path);
                        r = -ESTALE;
                }
                struct kop_result res = {(uint32_t)i, r, f};
                if (write(out, &res, sizeof(res)) != (ssize_t)sizeof(res))
                        _exit(1);
        }
        _exit(0);
}

int bsg_control_run(int control, struct bsg_kop *ops, size_t n, int close_fd, uint64_t deadline_usec)
{
        int pipefd[2];
        pid_t pid;

        for (size_t i = 0; i < n; i++)
                ops[i].result = -ETIMEDOUT, ops[i].forget_result = 0;
        if (n == 0)
                return 0;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(pipefd[0]);
                close(pipefd[1]);
                return r;
        }
        if (pid == 0) {
                close(pipefd[0]);
                if (close_fd >= 0)
                        close(close_fd);
                /* nothing of ours may keep udev's pipe open if we are abandoned */
                int null = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
                if (null >= 0) {
                        dup2(null, STDOUT_FILENO);
                        dup2(null, STDERR_FILENO);
                }
                kop_child(control, ops, n, pipefd[1]);
        }
        close(pipefd[1]);
        size_t got = 0;
        while (got < n) {
                uint64_t now = now_usec();
                if (now >= deadline_usec)
                        break;
                struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
                int r = poll(&p, 1, (int)((deadline_usec - now + 999) / 1000));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break;
                struct kop_result res;
                ssize_t l = read(pipefd[0], &res, sizeof(res));
                if (l < 0 && errno == EINTR)
                        continue;
                if (l != (ssize_t)sizeof(res))
                        break;
                if (res.index < n) {
                        ops[res.index].result = res.result;
                        ops[res.index].forget_result = res.forget_result;
                        got++;
                }
        }
        close(pipefd[0]);
        /* done with its ioctls, it is exiting: reaped while the budget lasts, never waited for beyond it
         * (a udev worker must not hang on a child stuck in exit) */
        while (got == n && now_usec() < deadline_usec) {
                pid_t w = waitpid(pid, NULL, WNOHANG);
                if (w == pid || (w < 0 && errno != EINTR))
                        return 0;
                nanosleep(&(struct timespec){.tv_nsec = 1000 * 1000}, NULL);
        }
        /* still in an ioctl (or in exit): killed and abandoned (an ioctl in D state outlives SIGKILL) */
        kill(pid, SIGKILL);
        (void)waitpid(pid, NULL, WNOHANG);
        return 0;
}

int bsg_read_file(const char *path, size_t max, char **ret_buf, size_t *ret_len)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;

        if (fd < 0)
                return -errno;
        buf = malloc(max + 1);
        if (!buf)
                return -ENOMEM;
        while (len < max) {
                ssize_t n = read(fd, buf + len, max - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        if (ret_len)
                *ret_len = len;
        *ret_buf = TAKE_PTR(buf);
        return 0;
}

int bsg_skip_scan_read(char **ret_list)
{
        char *s = NULL;
        size_t len = 0;
        int r = bsg_read_file(BSG_SKIP_SCAN_PATH, 8192, &s, &len);

        if (r < 0)
                return r;
        while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == ' '))
                s[--len] = '\0';
        *ret_list = s;
        return 0;
}

int bsg_skip_scan_write(const char *list)
{
        _cleanup_close_ int fd = open(BSG_SKIP_SCAN_PATH, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
        const char *data = isempty(list) ? "\n" : list;
        size_t len = strlen(data);

        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, data, len);
        if (n < 0)
                return -errno;
        if ((size_t)n != len)
                return -EIO;
        return 0;
}

int bsg_mounted_fsids(uint8_t (**ret_fsids)[BSG_UUID_SIZE], size_t *ret_n)
{
        DIR *d = opendir("/sys/fs/btrfs");
        uint8_t(*v)[BSG_UUID_SIZE] = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;

        if (!d) {
                if (errno != ENOENT)
                        return -errno;
                *ret_fsids = NULL;
                *ret_n = 0;
                return 0;
        }
        while ((de = readdir(d))) {
                uint8_t u[2][BSG_UUID_SIZE];
                int k = 0;

                if (bsg_uuid_parse(de->d_name, u[0]) < 0)
                        continue;
                k = 1;
                char path[300];
                _cleanup_free_ char *mu = NULL;
                snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/metadata_uuid", de->d_name);
                if (bsg_read_file(path, 64, &mu, NULL) >= 0) {
                        mu[strcspn(mu, "\n")] = '\0';
                        if (bsg_uuid_parse(mu, u[1]) >= 0 && memcmp(u[0], u[1], BSG_UUID_SIZE) != 0)
                                k = 2;
                }
                if (n + k > cap) {
                        cap = cap ? cap * 2 : 8;
                        void *nv = realloc(v, cap * sizeof(*v));
                        if (!nv) {
                                free(v);
                                closedir(d);
                                return -ENOMEM;
                        }
                        v = nv;
                }
                for (int i = 0; i < k; i++)
                        memcpy(v[n++], u[i], BSG_UUID_SIZE);
        }
        closedir(d);
        *ret_fsids = v;
        *ret_n = n;
        return 0;
}

bool bsg_mounted_member(const char *sysname)
{
        DIR *d;
        struct dirent *de;
        bool found = false;

        if (!sysname || strchr(sysname, '/') || !(d = opendir("/sys/fs/btrfs")))
                return false;
        while (!found && (de = readdir(d))) {
                uint8_t u[BSG_UUID_SIZE];
                char path[PATH_MAX];
                if (bsg_uuid_parse(de->d_name, u) < 0)
                        continue;
                snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/devices/%s", de->d_name, sysname);
                found = access(path, F_OK) == 0;
        }
        closedir(d);
        return found;
}

/* mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS".
 * Finds the mount point and source of the LEN bytes at LINE, in place (no copy, no allocation);
 * fields are separated by runs of spaces. Returns 0, or -EINVAL for a line without both. */
struct mi_field {
        const char *p;
        size_t len;
};

static int mountinfo_line(const char *line, size_t len, struct mi_field *ret_mountpoint,
                          struct mi_field *ret_source, struct mi_field *ret_fstype)
{
        const char *p = line, *end = line + len;
        struct mi_field mp = {0}, fstype = {0}, tok;
        int field = 0;
        bool after_dash = false, want_source = false;

        for (;; field++) {
                while (p < end && *p == ' ')
                        p++;
                if (p >= end)
                        break;
                tok.p = p;
                while (p < end && *p != ' ')
                        p++;
                tok.len = (size_t)(p - tok.p);
                if (after_dash) {
                        if (want_source) {
                                if (!mp.p)
                                        return -EINVAL;
                                *ret_mountpoint = mp;
                                *ret_source = tok;
                                *ret_fstype = fstype;
                                return 0;
                        }
                        want_source = true; /* this was the fstype */
                        fstype = tok;
                } else if (field == 4)
                        mp = tok;
                else if (field > 5 && tok.len == 1 && tok.p[0] == '-')
                        after_dash = true;
        }
        return -EINVAL;
}

static bool field_is(const struct mi_field *f, const char *s)
{
        return strlen(s) == f->len && memcmp(f->p, s, f->len) == 0;
}

/* A mount of a btrfs filesystem: only these say a device is in use as btrfs (a fuse.sshfs or
 * bind mount whose source string names /dev/loop3 does not mount /dev/loop3; issue 18 case 9). */
static int btrfs_mountinfo_line(const char *line, size_t len, struct mi_field *ret_mountpoint,
                                struct mi_field *ret_source)
{
        struct mi_field fstype;
        int r = mountinfo_line(line, len, ret_mountpoint, ret_source, &fstype);
        return r < 0 ? r : field_is(&fstype, "btrfs") ? 0 : -ENOENT;
}

int bsg_mountinfo_root_source(const char *text, char **ret_source)
{
        struct mi_field found = {0};

        for (const char *p = text; p && *p;) {
                size_t len = strcspn(p, "\n");
                struct mi_field mp, src, fstype;
                if (mountinfo_line(p, len, &mp, &src, &fstype) >= 0 && field_is(&mp, "/"))
                        found = src; /* the last mount at / is the visible one */
                p += len;
                if (*p)
                        p++;
        }
        if (!found.p)
                return -ENOENT;
        *ret_source = strndup(found.p, found.len);
        return *ret_source ? 0 : -ENOMEM;
}

dev_t bsg_mountinfo_root_devnum(const char *text)
{
        dev_t found = 0;

        for (const char *p = text; p && *p;) {
                size_t len = strcspn(p, "\n");
                struct mi_field mp, src, fstype;
                unsigned maj, min;
                char line[64];
                if (mountinfo_line(p, len, &mp, &src, &fstype) >= 0 && field_is(&mp, "/")) {
                        /* "ID PARENT MAJ:MIN ...": the third field */
                        snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1), p);
                        found = sscanf(line, "%*u %*u %u:%u", &maj, &min) == 2 && maj != 0 ? makedev(maj, min) : 0;
                }
                p += len;
                if (*p)
                        p++;
        }
        return found;
}

bool bsg_mountinfo_has_source(const char *text, const char *devnode)
{
        for (const char *p = text; p && *p;) {
                size_t len = strcspn(p, "\n");
                struct mi_field mp, src;
                if (btrfs_mountinfo_line(p, len, &mp, &src) >= 0 && field_is(&src, devnode))
                        return true;
                p += len;
                if (*p)
                        p++;
        }
        return false;
}

static int cmp_source(const void *a, const void *b)
{
        const struct bsg_mount_source *x = a, *y = b;

        if (x->len != y->len)
                return x->len < y->len ? -1 : 1;
        return memcmp(x->p, y->p, x->len);
}

int bsg_mount_sources_parse(const char *text, struct bsg_mount_sources *ret)
{
        struct bsg_mount_sources s = {0};
        size_t cap = 0;

        for (const char *p = text; p && *p;) {
                size_t len = strcspn(p, "\n");
                struct mi_field mp, src;
                if (btrfs_mountinfo_line(p, len, &mp, &src) >= 0) {
                        if (s.n == cap) {
                                struct bsg_mount_source *nv = realloc(s.v, (cap = cap ? 2 * cap : 32) * sizeof(*nv));
                                if (!nv) {
                                        free(s.v);
                                        return -ENOMEM;
                                }
                                s.v = nv;
                        }
                        s.v[s.n++] = (struct bsg_mount_source){src.p, src.len};
                }
                p += len;
                if (*p)
                        p++;
        }
        if (s.n)
                qsort(s.v, s.n, sizeof(s.v[0]), cmp_source);
        *ret = s;
        return 0;
}

bool bsg_mount_sources_has(const struct bsg_mount_sources *s, const char *devnode)
{
        if (!devnode || !s->n)
                return false;
        struct bsg_mount_source key = {devnode, strlen(devnode)};

        return bsearch(&key, s->v, s->n, sizeof(s->v[0]), cmp_source);
}

void bsg_mount_sources_free(struct bsg_mount_sources *s)
{
        free(s->v);
        *s = (struct bsg_mount_sources){0};
}

