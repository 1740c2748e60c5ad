/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the system says, read once per run into the context before any device is looked at: the
 * configuration (/etc/btrfs-scan-gate.conf), the kernel's state (the command line, mountinfo and the
 * mount sources, the kernel's capabilities, the mounted btrfs filesystems, the EFI loader's partition)
 * and the platform's slot files (RAUC's system.conf, SteamOS's partsets). I/O; parsing is config.c,
 * cmdline.c, kernel.c, rauc.c and partsets.c. Nothing below the gather reads these again. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmdline.h"
#include "gate.h"
#include "util.h"

static void config_diag(const char *filename, unsigned line, const char *message, void *userdata)
{
        log_msg("%s:%u: %s, ignoring line", filename, line, message);
        add_error(userdata, "config-invalid");
}

void load_config(struct ctx *c)
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

void load_kernel_state(struct ctx *c)
{
        int r;

        if ((r = bsg_read_file(bsg_cmdline_path(), 65536, &c->cmdline, NULL)) < 0) {
                c->cmdline = NULL;
                if (r != -ENOENT)
                        trust_input_lost(c, bsg_cmdline_path(), r);
        }
        if ((r = bsg_read_file(bsg_mountinfo_path(), 4 * 1024 * 1024, &c->mountinfo, NULL)) < 0) {
                c->mountinfo = NULL;
                if (r != -ENOENT)
                        trust_input_lost(c, bsg_mountinfo_path(), r);
        }
        if (c->mountinfo && (r = bsg_mountinfo_root_source(c->mountinfo, &c->root_source)) < 0) {
                c->root_source = NULL;
                if (r == -ENOMEM)
                        trust_input_lost(c, "the mounted root's source", r);
        }
        if (c->mountinfo && bsg_mount_sources_parse(c->mountinfo, &c->mount_sources) < 0) {
                /* no device counts as a mount's source: the policy's exemptions for mounted devices
                 * are not given (fail closed); a forget of a device in use the kernel refuses */
                log_msg("cannot index the mount sources: %s", strerror(ENOMEM));
                add_error(c, "out-of-memory");
        }
        bsg_kernel_caps(&c->caps);
        r = bsg_mounted_fsids(&c->mounted, &c->n_mounted);
        if (r < 0) {
                log_msg("cannot list mounted btrfs filesystems, assuming none: %s", strerror(-r));
                c->mounted = NULL;
                c->n_mounted = 0;
        }
        load_loader_partuuid(c);
}

static void rauc_diag(unsigned line, const char *message, void *userdata)
{
        struct ctx *c = userdata;
        log_msg("%s:%u: %s", c->config.rauc_system_conf, line, message);
}

/* Slots from the platform (issue 12): RAUC's system.conf, SteamOS's partset files. Missing files are
 * no error; a broken one is said and left out. */
void load_platform_slots(struct ctx *c)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        DIR *dir;
        struct dirent *de;

        /* left at its default, system.conf is found where RAUC finds it (the first that exists);
         * messages then name the file read */
        if (streq(c->config.rauc_system_conf, BSG_RAUC_SYSTEM_CONF_DEFAULT)) {
                static const char *const search[] = BSG_RAUC_SYSTEM_CONF_SEARCH;
                for (size_t i = 0; i < sizeof(search) / sizeof(search[0]); i++)
                        if (access(search[i], F_OK) == 0) {
                                snprintf(c->config.rauc_system_conf, sizeof(c->config.rauc_system_conf), "%s",
                                         search[i]);
                                break;
                        }
        }
        int r = isempty(c->config.rauc_system_conf) ? -ENOENT
                                                      : bsg_read_file(c->config.rauc_system_conf, 65536, &text, &len);
        if (r < 0 && r != -ENOENT)
                trust_input_lost(c, c->config.rauc_system_conf, r);
        if (r >= 0) {
                if ((r = bsg_rauc_parse(text, len, &c->rauc, rauc_diag, c)) >= 0 &&
                    !(c->rauc_rdev = calloc(c->rauc.n + 1, sizeof(dev_t))))
                        r = -ENOMEM;
                if (r == -ENOMEM)
                        trust_input_lost(c, c->config.rauc_system_conf, r);
                for (size_t i = 0; c->rauc_rdev && i < c->rauc.n; i++) {
                        struct stat st;
                        if (stat(c->rauc.v[i].device, &st) == 0 && S_ISBLK(st.st_mode))
                                c->rauc_rdev[i] = st.st_rdev;
                }
        }
        if (isempty(c->config.steamos_partsets) || !(dir = opendir(c->config.steamos_partsets)))
                return;
        while ((de = readdir(dir))) {
                char path[PATH_MAX];
                _cleanup_free_ char *body = NULL;
                if (de->d_name[0] == '.' ||
                    (size_t)snprintf(path, sizeof(path), "%s/%s", c->config.steamos_partsets, de->d_name) >= sizeof(path) ||
                    bsg_read_file(path, 65536, &body, &len) < 0)
                        continue;
                if (bsg_partsets_add(&c->partsets, de->d_name, body, len) == -ENOMEM)
                        break;
        }
        closedir(dir);
}

enum reserved_source { FSTAB, CRYPTTAB, UNIT };

/* Adds the sources PATH names (an fstab, a crypttab or a unit) to the reserved names; 0, or -ENOMEM.
 * A file that is there but cannot be read loses them: every name is taken for one (reserved.lost). */
static int reserve_from(struct ctx *c, const char *path, enum reserved_source kind)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = bsg_read_file(path, 1024 * 1024, &text, &len);

        if (r >= 0 && len >= 1024 * 1024)
                r = -EFBIG; /* what was not read may name anything */
        if (r < 0 && r != -ENOENT) {
                log_msg("cannot read %s: %s; every name a device carries is taken for one the system mounts by",
                        path, strerror(-r));
                c->reserved.lost = true;
        }
        if (r < 0)
                return 0;
        return kind == UNIT ? bsg_reserved_add_unit(&c->reserved, text)
                            : bsg_reserved_add_tab(&c->reserved, text, kind == CRYPTTAB);
}

void load_reserved_names(struct ctx *c)
{
        _cleanup_free_ char *root = NULL, *rootflags = NULL;
        const char *units = bsg_unit_dir();
        DIR *dir = NULL;
        int r = 0;

        if (c->cmdline) {
                if (bsg_cmdline_get(c->cmdline, strlen(c->cmdline), "root", &root) == -ENOMEM ||
                    bsg_cmdline_get(c->cmdline, strlen(c->cmdline), "rootflags", &rootflags) == -ENOMEM)
                        r = -ENOMEM;
                if (r >= 0 && (bsg_reserved_add(&c->reserved, root) < 0 ||
                               bsg_reserved_add_options(&c->reserved, rootflags) < 0))
                        r = -ENOMEM;
        }
        if (r >= 0)
                r = reserve_from(c, bsg_fstab_path(), FSTAB);
        if (r >= 0)
                r = reserve_from(c, bsg_crypttab_path(), CRYPTTAB);
        /* the units a person wrote (a generator's come from fstab and crypttab, read above) */
        if (r >= 0 && !(dir = opendir(units)) && errno != ENOENT) {
                log_msg("cannot read %s: %s; every name a device carries is taken for one the system mounts by",
                        units, strerror(errno));
                c->reserved.lost = true;
        }
        if (r >= 0 && dir) {
                struct dirent *de;
                while (r >= 0 && (de = readdir(dir))) {
                        char path[PATH_MAX];
                        if (de->d_name[0] == '.' || !(endswith(de->d_name, ".mount") || endswith(de->d_name, ".swap")) ||
                            (size_t)snprintf(path, sizeof(path), "%s/%s", units, de->d_name) >= sizeof(path))
                                continue;
                        r = reserve_from(c, path, UNIT);
                }
                closedir(dir);
        }
        for (size_t i = 0; r >= 0 && i < c->rauc.n; i++)
                r = bsg_reserved_add(&c->reserved, c->rauc.v[i].device);
        for (size_t i = 0; r >= 0 && i < c->partsets.n; i++) {
                char spec[64];
                snprintf(spec, sizeof(spec), "PARTUUID=%s", c->partsets.v[i].partuuid);
                r = bsg_reserved_add(&c->reserved, spec);
        }
        if (r < 0) {
                log_msg("cannot keep the names the system mounts by: %s; every name is taken for one",
                        strerror(-r));
                add_error(c, "out-of-memory");
                c->reserved.lost = true;
        }
}
