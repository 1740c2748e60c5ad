/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/btrfs.h>

#include "kernel.h"
#include "util.h"

static const char *env_or(const char *var, const char *def)
{
        const char *v = getenv(var);
        return isempty(v) ? def : v;
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

const char *bsg_config_path(void)
{
        return env_or("BTRFS_SCAN_GATE_CONFIG", "/etc/btrfs-scan-gate.conf");
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

/* mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS".
 * Finds the mount point and source of the LEN bytes at LINE, in place (no copy, no allocation);
 * fields are separated by runs of spaces. Returns 0, or -EINVAL for a line without both. */
struct mi_field {
        const char *p;
        size_t len;
};

static int mountinfo_line(const char *line, size_t len, struct mi_field *ret_mountpoint,
                          struct mi_field *ret_source)
{
        const char *p = line, *end = line + len;
        struct mi_field mp = {0}, tok;
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
                                return 0;
                        }
                        want_source = true; /* this was the fstype */
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

int bsg_mountinfo_root_source(const char *text, char **ret_source)
{
        struct mi_field found = {0};

        for (const char *p = text; p && *p;) {
                size_t len = strcspn(p, "\n");
                struct mi_field mp, src;
                if (mountinfo_line(p, len, &mp, &src) >= 0 && field_is(&mp, "/"))
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

bool bsg_mountinfo_has_source(const char *text, const char *devnode)
{
        for (const char *p = text; p && *p;) {
                size_t len = strcspn(p, "\n");
                struct mi_field mp, src;
                if (mountinfo_line(p, len, &mp, &src) >= 0 && field_is(&src, devnode))
                        return true;
                p += len;
                if (*p)
                        p++;
        }
        return false;
}
