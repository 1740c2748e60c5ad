/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Messages and the tokens of BTRFS_SCAN_GATE_ACTION/ERROR, shared by the verbs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <syslog.h>

#include "gate.h"
#include "log.h"
#include "superblock.h"
#include "util.h"

bool arg_verbose;

void log_msg_debug(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        fputs("btrfs-scan-gate: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

void log_msg(const char *fmt, ...)
{
        char msg[1024]; /* the journal's line is cut there; stderr gets it whole */
        va_list ap, aq;
        va_start(ap, fmt);
        va_copy(aq, ap);
        fputs("btrfs-scan-gate: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        vsnprintf(msg, sizeof(msg), fmt, aq);
        va_end(aq);
        va_end(ap);
        bsg_log_journal(LOG_WARNING, msg);
}

void log_decision(const struct ctx *c, const struct entry *e)
{
        char fsid[37], trust[160];
        if (e->pd.state == BSG_DEV_NOT_BTRFS || !e->devnode)
                return;
        if (e->pd.state == BSG_DEV_BTRFS)
                bsg_uuid_format(e->pd.fsid, fsid);
        snprintf(trust, sizeof(trust), "%s (%s), trust from %s", e->pd.untrusted ? "untrusted" : "trusted",
                 e->trust_why ? e->trust_why : "unknown", trust_source(c));
        (void)bsg_log_decision(bsg_rundir_path(), e->devnum, e->devnode, bsg_decision_name(e->v.decision),
                               bsg_reason_name(e->v.reason), e->pd.state == BSG_DEV_BTRFS ? fsid : NULL, trust);
}

void add_token(char *buf, size_t size, const char *token)
{
        size_t l = strlen(buf);
        if (list_has(buf, token, strlen(token)) || l + strlen(token) + 2 > size)
                return;
        snprintf(buf + l, size - l, "%s%s", l ? "," : "", token);
}

int reannounce_device(struct ctx *c, const char *sysname, const char *devnode, const char *why)
{
        char tok[300];
        int r = bsg_sysfs_reannounce(sysname);

        if (r < 0) {
                log_msg("%s: cannot send the change event of a device %s, ignoring: %s", devnode, why, strerror(-r));
                return r;
        }
        log_debug("%s: %s: change event sent", devnode, why);
        snprintf(tok, sizeof(tok), "reannounced:%.255s", devnode);
        add_token(c->actions, sizeof(c->actions), tok);
        return 0;
}

void add_error(struct ctx *c, const char *token)
{
        add_token(c->errors, sizeof(c->errors), token);
}

bool ctx_has_error(const struct ctx *c, const char *token)
{
        return list_has(c->errors, token, strlen(token));
}

bool config_has_errors(const struct ctx *c)
{
        return ctx_has_error(c, "config-invalid") || ctx_has_error(c, "config-unreadable");
}

const char *kernel_cannot_apply(const struct ctx *c, const char *list)
{
        if (!list || !*list || c->caps.skip_scan || c->caps.temp_fsid)
                return NULL; /* nothing to keep out, or a kernel that takes the list or needs none */
        return c->caps.control ? "the btrfs module has no skip_scan parameter (unpatched)"
                               : "btrfs is not loaded (no skip_scan parameter)";
}

void ctx_done(struct ctx *c)
{
        free(c->cmdline);
        bsg_mount_sources_free(&c->mount_sources);
        free(c->mountinfo);
        free(c->root_source);
        free(c->mounted);
        free(c->e);
        bsg_devs_free(&c->devs);
        bsg_state_free(&c->state);
        bsg_rauc_free(&c->rauc);
        free(c->rauc_rdev);
        bsg_partsets_free(&c->partsets);
        bsg_reserved_free(&c->reserved);
        free(c->booted_disk);
        free(c->root_disk);
        for (size_t i = 0; i < ELEMENTSOF(c->anchor_disks); i++)
                free(c->anchor_disks[i]);
        for (size_t i = 0; i < c->n_named_disks; i++)
                free(c->named_disks[i]);
}

