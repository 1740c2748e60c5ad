/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `boot [--write-modprobe FILE] [--print-cmdline]`: before coldplug, decide for every block device,
 * write the skip list and scan what may be scanned. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <unistd.h>

#include "gate.h"
#include "installed.h"
#include "log.h"
#include "skiplist.h"
#include "util.h"

/* Once per boot: the fixed disks that are not trusted (the boot does not name them), each with the
 * line that trusts it, so that a second internal disk is not left untrusted unsaid. */
static void say_untrusted_fixed_disks(const struct ctx *c)
{
        char msg[2048] = "";
        size_t n = 0;

        for (size_t i = 0; i < c->n; i++) {
                const struct entry *e = &c->e[i];
                bool seen = false;
                if (!e->pd.untrusted || !e->trust.class_known || !e->trust.class_fixed || e->trust.stacked || !e->disk)
                        continue;
                for (size_t k = 0; k < i && !seen; k++)
                        seen = c->e[k].pd.untrusted && c->e[k].trust.class_known && c->e[k].trust.class_fixed &&
                               !c->e[k].trust.stacked && c->e[k].disk && streq(c->e[k].disk, e->disk);
                if (seen)
                        continue;
                const char *name = strrchr(e->disk, '/');
                char line[PATH_MAX + 64], id[512];
                /* where it is attached (ID_PATH): the by-path name, whether udev made the link yet or not */
                if (name && bsg_disk_id_path(name + 1, id, sizeof(id)) == 0)
                        snprintf(line, sizeof(line), "%s/dev/%s: trusted_disk=/dev/disk/by-path/%s", n ? "; " : "", name + 1, id);
                else
                        snprintf(line, sizeof(line), "%s/dev/%s: trusted_disk=/dev/disk/by-path/... (its ID_PATH: "
                                 "udevadm info -q property /dev/%s)",
                                 n ? "; " : "", name ? name + 1 : e->disk, name ? name + 1 : e->disk);
                if (strlen(msg) + strlen(line) + 1 < sizeof(msg))
                        strcat(msg, line);
                n++;
        }
        if (n)
                log_msg("%zu fixed disk(s) the boot does not name, not trusted storage; the line that trusts each (in "
                        "/etc/btrfs-scan-gate.conf, and the initramfs's copy): %s", n, msg);
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
        /* on disk before the rename: a crash leaves the old file or the new one, never an empty one */
        if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) < 0) {
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

int run_boot(struct ctx *c)
{
        int lock_fd = -1, ret = 0, r;
        struct plan p;

        if (gather_plan(c, PLAN_MODE_BOOT, &lock_fd, &p) < 0)
                return 1;
        if (!c->dry_run) {
                /* once per boot, in the journal: where trust came from */
                char trust[768];
                trust_describe(c, trust, sizeof(trust));
                bsg_log_journal(LOG_NOTICE, trust);
                log_debug("%s", trust);
                say_untrusted_fixed_disks(c);
        }
        const char *cannot = kernel_cannot_apply(c, p.skip_list);
        if (c->dry_run) {
                printf("skip_scan=%s\n", p.skip_list);
                if (cannot)
                        log_msg("the kernel cannot apply this list: %s", cannot);
        }
        else if (lock_fd >= 0) {
                record_all(c);
                execute_plan(c, &p, lock_fd, NULL);
                for (size_t i = 0; i < c->n; i++)
                        log_decision(c, &c->e[i]);
                r = bsg_state_save(bsg_rundir_path(), &c->state);
                if (r < 0) {
                        log_msg("cannot save the state file, ignoring: %s", strerror(-r));
                        add_error(c, "state-save-failed");
                }
                reannounce_trust_changed(c);
        } else
                ret = 1;
        _cleanup_free_ char *stable = NULL;
        if ((c->write_modprobe || c->print_cmdline) && plan_stable_skip_list(c->e, c->n, &stable, NULL) == -ENOMEM) {
                log_msg("out of memory");
                ret = 1;
        }
        if (c->write_modprobe && stable) {
                if (c->dry_run)
                        printf("options btrfs skip_scan=%s\n", stable);
                else if ((r = write_modprobe(c->write_modprobe, stable)) < 0) {
                        log_msg("cannot write %s: %s", c->write_modprobe, strerror(-r));
                        ret = 1;
                }
        }
        if (c->print_cmdline && stable)
                printf("btrfs.skip_scan=%s\n", stable);
        /* a list written for another boot (--write-modprobe, --print-cmdline: an image build on another
         * kernel) is in force there, not here: only configuration errors make it 3 */
        bool for_this_kernel = !c->write_modprobe && !c->print_cmdline;
        struct bsg_protection prot = {0};
        if (for_this_kernel) {
                protection_check(c, p.skip_list, !c->dry_run && lock_fd >= 0, &prot);
                if (prot.failed)
                        log_msg("%s; fix: %s", prot.verdict, prot.fix);
                if (!c->dry_run)
                        bsg_log_journal(prot.failed ? LOG_ERR : LOG_NOTICE, prot.verdict);
        }
        plan_done(&p);
        if (lock_fd >= 0)
                close(lock_fd);
        /* 4: the protection this system is set up for is not in force (a patched module installed but not
         * running, a list the kernel did not take): the unit fails. 3: decided, but the kernel takes no
         * skip list (the helper alone on a stock module: a stated mode) or the configuration has errors:
         * the unit's SuccessExitStatus=3 */
        if (ret == 0 && config_has_errors(c))
                log_msg("the configuration has errors (see above): decided on what remained");
        if (ret == 0 && prot.failed)
                ret = 4;
        else if (ret == 0 && ((cannot && for_this_kernel) || config_has_errors(c)))
                ret = 3;
        return ret;
}
