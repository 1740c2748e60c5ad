/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `reconcile`: for updaters and timers. Reads no device: takes the lock, folds in what events that
 * timed out on the lock left, drops the entries of devices that are gone, re-decides every device
 * of the inventory and brings the kernel to that state (skip list, forgets, scans). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate.h"
#include "installed.h"
#include "skiplist.h"
#include "util.h"

int gather_plan(struct ctx *c, enum plan_mode mode, int *ret_lock_fd, struct plan *ret_plan)
{
        ssize_t ti;
        int lock_fd = -1, r = gather(c, &ti, &lock_fd);

        if (r < 0) {
                log_msg("cannot decide: %s", strerror(-r));
                return r;
        }
        r = plan_build(c->e, c->n, SIZE_MAX, mode, ret_plan);
        if (r < 0) {
                log_msg("out of memory");
                if (lock_fd >= 0)
                        close(lock_fd);
                return r;
        }
        log_truncated_skip_list(c, ret_plan);
        for (size_t i = 0; (c->dry_run || c->verbose) && i < c->n; i++) {
                const struct entry *e = &c->e[i];
                if (e->pd.state != BSG_DEV_NOT_BTRFS || c->verbose)
                        printf("%s %s %s\n", e->devnode, bsg_decision_name(e->v.decision), bsg_reason_name(e->v.reason));
        }
        *ret_lock_fd = lock_fd;
        return 0;
}

int run_reconcile(struct ctx *c)
{
        int lock_fd = -1, ret = 0, r;
        struct plan p;

        if (gather_plan(c, PLAN_MODE_RECONCILE, &lock_fd, &p) < 0)
                return 1;
        /* no inventory at all (neither boot nor an event ran, nothing folded in): an empty list here
         * would read as "nothing to skip" and, applied, would clear the kernel's list */
        char path[4200];
        snprintf(path, sizeof(path), "%s/devices", bsg_rundir_path());
        if (c->n == 0 && access(path, F_OK) < 0 && errno == ENOENT) {
                log_msg("no inventory (%s): nothing to reconcile, the kernel's skip list left as it is; "
                        "boot or a udev event makes one", path);
                plan_done(&p);
                if (lock_fd >= 0)
                        close(lock_fd);
                return 1;
        }
        if (c->dry_run)
                printf("skip_scan=%s\n", p.skip_list);
        else if (lock_fd >= 0) {
                execute_plan(c, &p, lock_fd, NULL);
                r = bsg_state_save(bsg_rundir_path(), &c->state);
                if (r < 0) {
                        log_msg("cannot save the inventory: %s", strerror(-r));
                        ret = 1;
                }
                if (c->actions[0])
                        printf("actions=%s\n", c->actions);
                if (c->errors[0])
                        printf("errors=%s\n", c->errors);
        } else
                ret = 1;
        /* 4: done, but the protection this system is set up for is not in force (the same verdict as
         * boot's and status's first line) */
        struct bsg_protection prot;
        protection_check(c, p.skip_list, !c->dry_run && lock_fd >= 0, &prot);
        if (prot.failed) {
                log_msg("%s; fix: %s", prot.verdict, prot.fix);
                if (ret == 0)
                        ret = 4;
        }
        plan_done(&p);
        if (lock_fd >= 0)
                close(lock_fd);
        return ret;
}
