/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The installed kernels and their btrfs modules (reads /lib/modules only; never loads anything), and
 * the protection verdict's inputs. */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "installed.h"
#include "util.h"

#define MODULES_DIR "/lib/modules"

static bool exists_any(const char *dir, const char *base)
{
        static const char *const ext[] = {"", ".xz", ".zst", ".gz"};
        char p[PATH_MAX];
        for (size_t i = 0; i < ELEMENTSOF(ext); i++) {
                if ((size_t)snprintf(p, sizeof(p), "%s/%s%s", dir, base, ext[i]) >= sizeof(p))
                        continue;
                if (access(p, F_OK) == 0)
                        return true;
        }
        return false;
}

/* modprobe prefers updates/ (depmod's search order): updates/dkms first, as dkms installs */
static const char *btrfs_module_of(const char *release)
{
        char dir[PATH_MAX];
        _cleanup_free_ char *builtin = NULL;

        snprintf(dir, sizeof(dir), MODULES_DIR "/%s", release);
        if (exists_any(dir, "updates/dkms/btrfs.ko"))
                return "dkms";
        if (exists_any(dir, "updates/btrfs.ko"))
                return "updates";
        if (exists_any(dir, "kernel/fs/btrfs/btrfs.ko"))
                return "in-tree";
        snprintf(dir, sizeof(dir), MODULES_DIR "/%s/modules.builtin", release);
        if (bsg_read_file(dir, 1 << 20, &builtin, NULL) >= 0 && strstr(builtin, "kernel/fs/btrfs/btrfs.ko"))
                return "built-in";
        return NULL;
}

/* A kernel's modules are installed: what depmod and the image package leave (a headers package
 * leaves only build/ and source/) */
static bool modules_installed(const char *release)
{
        static const char *const marks[] = {"modules.order", "modules.builtin", "modules.dep", "kernel"};
        char p[PATH_MAX];
        for (size_t i = 0; i < ELEMENTSOF(marks); i++) {
                if ((size_t)snprintf(p, sizeof(p), MODULES_DIR "/%s/%s", release, marks[i]) >= sizeof(p))
                        continue;
                if (access(p, F_OK) == 0)
                        return true;
        }
        /* the kernel image itself (the dkms package's kernels.sh counts it too) */
        return (size_t)snprintf(p, sizeof(p), "/boot/vmlinuz-%s", release) < sizeof(p) && access(p, F_OK) == 0;
}

bool bsg_kernel_module_patched(const char *m)
{
        return m && (streq(m, "dkms") || streq(m, "updates"));
}

void bsg_kernels_free(struct bsg_kernel *v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i].release);
        free(v);
}

static int kernel_order(const void *a, const void *b)
{
        return strverscmp(((const struct bsg_kernel *)b)->release, ((const struct bsg_kernel *)a)->release);
}

static int kernels_add(struct bsg_kernel **v, size_t *n, const char *release, bool running, bool installed)
{
        struct bsg_kernel *nv = realloc(*v, (*n + 1) * sizeof(**v));
        if (!nv)
                return -ENOMEM;
        *v = nv;
        nv[*n] = (struct bsg_kernel){.release = strdup(release), .running = running, .installed = installed};
        if (!nv[*n].release)
                return -ENOMEM;
        nv[*n].btrfs_module = installed ? btrfs_module_of(release) : NULL;
        (*n)++;
        return 0;
}

int bsg_kernels_list(struct bsg_kernel **ret_v, size_t *ret_n)
{
        struct bsg_kernel *v = NULL;
        size_t n = 0;
        struct utsname uts;
        bool have_running = false;
        int r = 0;

        if (uname(&uts) < 0)
                uts.release[0] = '\0';
        DIR *d = opendir(MODULES_DIR);
        for (struct dirent *de; d && r >= 0 && (de = readdir(d));) {
                char p[PATH_MAX];
                struct stat st;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(p, sizeof(p), MODULES_DIR "/%s", de->d_name);
                if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                bool running = streq(de->d_name, uts.release), installed = modules_installed(de->d_name);
                if (!installed && !running)
                        continue;
                have_running |= running;
                r = kernels_add(&v, &n, de->d_name, running, installed);
        }
        if (d)
                closedir(d);
        if (r >= 0 && !have_running && uts.release[0])
                r = kernels_add(&v, &n, uts.release, true, false);
        if (r < 0) {
                bsg_kernels_free(v, n);
                return r;
        }
        if (n)
                qsort(v, n, sizeof(*v), kernel_order);
        *ret_v = v;
        *ret_n = n;
        return 0;
}

void protection_check(const struct ctx *c, const char *computed, bool check_list, struct bsg_protection *ret)
{
        _cleanup_free_ char *current = NULL;
        struct bsg_kernel *k = NULL;
        size_t n = 0;
        char first[256];
        struct bsg_protection_input in = {
                .control = c->caps.control,
                .skip_scan = c->caps.skip_scan,
                .skip_scan_writable = c->caps.skip_scan_writable,
                .temp_fsid = c->caps.temp_fsid,
                .running = "",
                .n_listed = bsg_skip_list_count(computed),
        };

        /* out of memory: no kernel known, so none is expected to have the patched module */
        if (bsg_kernels_list(&k, &n) < 0)
                n = 0;
        for (size_t i = 0; i < n; i++) {
                if (k[i].running) {
                        in.running = k[i].release;
                        in.running_patched = bsg_kernel_module_patched(k[i].btrfs_module);
                } else if (!in.patched_other && bsg_kernel_module_patched(k[i].btrfs_module))
                        in.patched_other = k[i].release;
        }
        /* the dkms package's source (dkms.conf under /usr/src/btrfs-scan-gate-VERSION): the kernel half
         * is installed, whether or not it built for any kernel */
        glob_t g = {0};
        if (glob("/usr/src/btrfs-scan-gate-*/dkms.conf", GLOB_NOSORT, NULL, &g) == 0 && g.gl_pathc > 0) {
                char *slash = strrchr(g.gl_pathv[0], '/');
                if (slash)
                        *slash = '\0';
                in.dkms_source = g.gl_pathv[0];
        }
        if (check_list && c->caps.skip_scan) {
                (void)bsg_skip_scan_read(&current);
                in.n_missing = bsg_skip_list_missing(computed, current, first, sizeof(first));
                in.first_missing = first;
        }
        bsg_protection_decide(&in, ret);
        globfree(&g);
        bsg_kernels_free(k, n);
}
