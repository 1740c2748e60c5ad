/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The executor: performs a plan (plan.c) through the kernel interface (kernel.c) and keeps the state's
 * registered flags in step. I/O. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate.h"
#include "skiplist.h"
#include "util.h"

/* REGISTERED, and FORGET_PENDING: registered with a superblock other than the one decided, the
 * forget that was to take it back failed (the next plan forgets it, and scans it only after). */
static void set_registered_pending(struct ctx *c, struct entry *e, bool registered, bool forget_pending)
{
        struct bsg_record *rec = bsg_state_find(&c->state, e->devnum);
        forget_pending = registered && forget_pending;
        if (rec && (rec->registered != registered || rec->forget_pending != forget_pending)) {
                rec->registered = registered;
                rec->forget_pending = forget_pending;
                c->state.changed = true;
        }
        e->registered = registered;
        e->forget_pending = forget_pending;
}

static void set_registered(struct ctx *c, struct entry *e, bool registered)
{
        set_registered_pending(c, e, registered, false);
}

/* Says that P's skip list was cut at the kernel's limit, and which devices it left out: they are
 * still never scanned by this helper, but another scanner (btrfs device scan, a mount's device=)
 * could register them. */
void log_truncated_skip_list(const struct ctx *c, const struct plan *p)
{
        char names[1024] = "", more[64] = "";
        size_t named = 0;

        if (!p->truncated)
                return;
        for (size_t i = 0; i < c->n; i++) {
                const struct entry *e = &c->e[i];
                char star[BSG_PATH_NAME_MAX + 2];
                if (e->v.decision != BSG_SKIP || !e->pd.path_ok ||
                    list_has(p->skip_list, e->devnode, strlen(e->devnode)) ||
                    (plan_starred_disk(e, star, sizeof(star)) && list_has(p->skip_list, star, strlen(star))))
                        continue;
                if (strlen(names) + strlen(e->devnode) + 2 < sizeof(names)) {
                        add_token(names, sizeof(names), e->devnode);
                        named++;
                }
        }
        if (named < p->dropped)
                snprintf(more, sizeof(more), "%s%zu whose names are too long to show", named ? " and " : "",
                         p->dropped - named);
        log_msg("skip list longer than %d bytes: %zu device(s) left out of it, still never scanned by this "
                "helper: %s%s", BSG_SKIPLIST_MAX, p->dropped, names, more);
}

/* The list to write when this run does not know every device (c->doubt_all: the inventory or the
 * enumeration failed): the names the kernel holds now stay in it, so that a device this run could
 * not see is not released. NULL: out of memory, or the kernel's list could not be read. */
static char *keep_current(const char *list)
{
        _cleanup_free_ char *cur = NULL;
        int r = bsg_skip_scan_read(&cur);
        if (r < 0 && r != -ENOENT)
                return NULL; /* what the kernel holds is unknown: leave it */
        if (isempty(cur))
                return strdup(list);
        size_t l = strlen(list);
        char *out = malloc(l + strlen(cur) + 2);
        if (!out)
                return NULL;
        memcpy(out, list, l + 1);
        for (char *s = cur, *tok; (tok = strsep(&s, ","));) {
                size_t t = strlen(tok);
                if (!t || list_has(out, tok, t) || l + (l > 0) + t > BSG_SKIPLIST_MAX)
                        continue;
                if (l)
                        out[l++] = ',';
                memcpy(out + l, tok, t + 1);
                l += t;
        }
        return out;
}

/* Writes the skip list where the kernel takes it; says why not when it cannot. */
void apply_skip_list(struct ctx *c, const char *list)
{
        _cleanup_free_ char *kept = NULL;
        int r;

        if (!c->caps.skip_scan && c->caps.temp_fsid) {
                /* upstream 6.7+ (temp-fsid): no skip_scan and no need of one; this helper still
                 * scans no clone. Nothing to warn about, nothing wrong. */
                log_debug("%s does not exist; the kernel has temp_fsid: skip list not needed", BSG_SKIP_SCAN_PATH);
                return;
        }
        if (!c->caps.skip_scan) {
                if (c->verb == VERB_BOOT)
                        log_msg("%s does not exist (btrfs not loaded or unpatched): skip list not applied%s",
                                BSG_SKIP_SCAN_PATH,
                                c->write_modprobe || c->print_cmdline ? "" : "; see --write-modprobe, --print-cmdline");
                else
                        log_debug("%s does not exist (unpatched btrfs module): skip list not applied",
                                  BSG_SKIP_SCAN_PATH);
                add_error(c, "skip-scan-absent");
                return;
        }
        if (!c->caps.skip_scan_writable) {
                if (c->verb == VERB_BOOT)
                        log_msg("%s is read-only: skip list not applied%s", BSG_SKIP_SCAN_PATH,
                                c->write_modprobe || c->print_cmdline ? "" : "; see --write-modprobe, --print-cmdline");
                else
                        log_msg("%s is read-only: skip list not applied; use boot --write-modprobe or "
                                "--print-cmdline", BSG_SKIP_SCAN_PATH);
                add_error(c, "skip-scan-read-only");
                return;
        }
        if (c->dry_run)
                return;
        if (c->doubt_all) {
                kept = keep_current(list);
                if (!kept) {
                        log_msg("cannot merge with the current %s (out of memory?): left as it is",
                                BSG_SKIP_SCAN_PATH);
                        add_error(c, "out-of-memory");
                        return;
                }
                list = kept;
        }
        r = bsg_skip_scan_write(list);
        if (r < 0) {
                log_msg("cannot write %s, ignoring: %s", BSG_SKIP_SCAN_PATH, strerror(-r));
                add_error(c, "skip-scan-write-failed");
        }
}

static void log_forget(struct ctx *c, struct entry *e, int r)
{
        if (r == -ENOENT) {
                set_registered(c, e, false); /* not registered: nothing to forget */
                return;
        }
        if (r < 0) {
                log_msg("%s: cannot forget the registered copy, ignoring: %s", e->devnode, strerror(-r));
                add_error(c, r == -EBUSY ? "twin-mounted" : r == -ETIMEDOUT ? "kernel-timeout" : "forget-failed");
                return;
        }
        set_registered(c, e, false);
        char tok[4200];
        snprintf(tok, sizeof(tok), "forgot:%s", e->devnode);
        add_token(c->actions, sizeof(c->actions), tok);
}

static void log_scan(struct ctx *c, struct entry *e, enum plan_action_type type, int r, int forget_r, int *ready)
{
        if (r == -ESTALE) {
                add_error(c, "kernel-read-differs");
                if (forget_r < 0 && forget_r != -ENOENT) {
                        /* still registered with what the kernel read: said, kept, retried */
                        log_msg("%s: the device read differently after the scan than when it was decided, and "
                                "forgetting it failed: %s; retried at the next event",
                                e->devnode, strerror(-forget_r));
                        add_error(c, forget_r == -EBUSY ? "twin-mounted" : forget_r == -ETIMEDOUT ? "kernel-timeout"
                                                                                                  : "forget-failed");
                        set_registered_pending(c, e, true, true);
                        return;
                }
                log_msg("%s: the device read differently after the scan than when it was decided: forgotten "
                        "again", e->devnode);
                set_registered(c, e, false);
                return;
        }
        if (r < 0) {
                log_msg("%s: scan failed, ignoring: %s", e->devnode, strerror(-r));
                if (c->verb != VERB_BOOT)
                        add_error(c, r == -ETIMEDOUT ? "kernel-timeout" : "scan-failed");
                return;
        }
        set_registered(c, e, true);
        if (type == PLAN_READY) {
                *ready = r;
                add_token(c->actions, sizeof(c->actions), "scanned");
        } else if (c->verb != VERB_BOOT) {
                char tok[4200];
                snprintf(tok, sizeof(tok), "made-good:%s", e->devnode);
                add_token(c->actions, sizeof(c->actions), tok);
        }
}

/* What the check after a scan compares: the whole block this run read, else (decided from the
 * inventory) the fields the decision used. */
static void kop_expect(const struct ctx *c, const struct entry *e, struct bsg_kop *op)
{
        const struct bsg_dev *d = e->dev >= 0 && (size_t)e->dev < c->devs.n ? &c->devs.v[e->dev] : NULL;

        if (d && !e->from_record && d->parse_result == 0 && d->raw) {
                op->super = d->raw;
                return;
        }
        struct bsg_superblock *w = &op->want;
        memcpy(w->fsid, e->pd.fsid, BSG_UUID_SIZE);
        memcpy(w->metadata_uuid, e->pd.metadata_uuid_feature ? e->pd.metadata_uuid : e->pd.fsid, BSG_UUID_SIZE);
        memcpy(w->dev_uuid, e->pd.dev_uuid, BSG_UUID_SIZE);
        w->devid = e->pd.devid;
        w->num_devices = e->pd.num_devices;
        w->generation = e->generation;
        w->flags = (e->pd.seeding ? BSG_SUPER_FLAG_SEEDING : 0) | (e->pd.fsid_changing ? BSG_SUPER_FLAG_CHANGING_FSID_V2 : 0);
        w->incompat_flags = e->pd.metadata_uuid_feature ? BSG_INCOMPAT_METADATA_UUID : 0;
}

void execute_plan(struct ctx *c, const struct plan *p, int lock_fd, int *ret_ready)
{
        _cleanup_free_ struct bsg_kop *ops = calloc(p->n + 1, sizeof(*ops));
        _cleanup_free_ size_t *which = calloc(p->n + 1, sizeof(*which));
        _cleanup_close_ int control = -1;
        size_t m = 0;
        int ready = -1, r;

        if (ret_ready)
                *ret_ready = -1;
        if (!ops || !which) {
                /* the list needs no memory: the devices it names stay out whatever comes next */
                log_msg("out of memory: only the skip list is applied, nothing scanned or forgotten");
                add_error(c, "out-of-memory");
                if (p->skip_list)
                        apply_skip_list(c, p->skip_list);
                return;
        }
        for (size_t k = 0; k < p->n; k++) {
                const struct plan_action *a = &p->v[k];
                struct entry *e = a->type == PLAN_SKIP_LIST ? NULL : &c->e[a->entry];

                switch (a->type) {
                case PLAN_SKIP_LIST:
                        apply_skip_list(c, p->skip_list);
                        break;
                case PLAN_UNREADABLE:
                        if (c->verb == VERB_BOOT)
                                log_msg("%s: not readable in this run: not scanned", e->devnode);
                        else {
                                log_msg("%s: not readable in this run: not handed to the kernel now", e->devnode);
                                add_error(c, "not-scanned-unreadable");
                        }
                        break;
                case PLAN_SCAN:
                case PLAN_READY:
                case PLAN_FORGET:
                        ops[m] = (struct bsg_kop){
                                .type = a->type == PLAN_SCAN ? BSG_KOP_SCAN : a->type == PLAN_READY ? BSG_KOP_READY
                                                                                                  : BSG_KOP_FORGET,
                                .path = e->devnode,
                                .verify = a->type != PLAN_FORGET && e->pd.state == BSG_DEV_BTRFS,
                        };
                        kop_expect(c, e, &ops[m]);
                        which[m++] = k;
                        break;
                }
        }
        if (m == 0)
                return;
        control = bsg_control_open();
        if (control < 0) {
                if (c->verb == VERB_BOOT)
                        log_msg("cannot open %s (%s): btrfs not ready, nothing scanned", bsg_control_path(),
                                strerror(-control));
                else if (control == -ENOENT || control == -ENODEV || control == -ENXIO)
                        log_msg("%s: btrfs not loaded, not ready", bsg_control_path());
                else
                        log_msg("cannot open %s: %s", bsg_control_path(), strerror(-control));
                add_error(c, "not-ready");
                return;
        }
        /* kernel actions get a budget of their own, as long as the lock's */
        r = bsg_control_run(control, ops, m, lock_fd, bsg_now_usec() + (uint64_t)(c->lock_timeout * 1e6));
        if (r < 0) {
                log_msg("cannot run the kernel actions: %s", strerror(-r));
                add_error(c, "kernel-actions-failed");
                return;
        }
        for (size_t i = 0; i < m; i++) {
                const struct plan_action *a = &p->v[which[i]];
                struct entry *e = &c->e[a->entry];
                if (a->type == PLAN_FORGET)
                        log_forget(c, e, ops[i].result);
                else
                        log_scan(c, e, a->type, ops[i].result, ops[i].forget_result, &ready);
        }
        if (ret_ready)
                *ret_ready = ready;
}
