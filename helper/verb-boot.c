/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `boot [--write-modprobe FILE] [--print-cmdline]`: before coldplug, decide for every block device,
 * write the skip list and scan what may be scanned. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "gate.h"
#include "installed.h"
#include "log.h"
#include "skiplist.h"
#include "util.h"

int run_boot(struct ctx *c)
{
        ssize_t ti;
        int lock_fd = -1, ret = 0, r = gather(c, &ti, &lock_fd);
        struct plan p;

        if (r < 0) {
                log_msg("cannot decide: %s", strerror(-r));
                return 1;
        }
        r = plan_build(c->e, c->n, SIZE_MAX, PLAN_MODE_BOOT, &p);
        if (r < 0) {
                log_msg("out of memory");
                if (lock_fd >= 0)
                        close(lock_fd);
                return 1;
        }
        log_truncated_skip_list(c, &p);
        if (!c->dry_run) {
                /* once per boot, in the journal: where trust came from */
                char trust[768];
                trust_describe(c, trust, sizeof(trust));
                bsg_log_journal(LOG_NOTICE, trust);
                log_debug("%s", trust);
        }
        if (c->dry_run || c->verbose)
                for (size_t i = 0; i < c->n; i++) {
                        const struct entry *e = &c->e[i];
                        if (e->pd.state == BSG_DEV_NOT_BTRFS && !c->verbose)
                                continue;
                        printf("%s %s %s\n", e->devnode, bsg_decision_name(e->v.decision), bsg_reason_name(e->v.reason));
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
                _cleanup_free_ char *current = NULL;
                bool acted = !c->dry_run && lock_fd >= 0;
                if (acted && c->caps.skip_scan)
                        (void)bsg_skip_scan_read(&current);
                protection_check(c, p.skip_list, current, acted, &prot);
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
