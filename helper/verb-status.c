/* SPDX-License-Identifier: GPL-2.0-or-later */
/* `status [--json]`: every btrfs device, its decision and reason, the kernel's capabilities. Decides
 * without the lock and changes nothing. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "gate.h"
#include "installed.h"
#include "json.h"
#include "superblock.h"
#include "util.h"

static void json_str(const char *s)
{
        bsg_json_string(stdout, s);
}

/* `, "KEY": ` and S; util-linux: null for what is absent (NULL or an empty string here) */
static void json_kv(const char *key, const char *s)
{
        printf(", \"%s\": ", key);
        bsg_json_string_or_null(stdout, s);
}

static void json_u64(const char *key, bool present, uint64_t v)
{
        if (present)
                printf(", \"%s\": %" PRIu64, key, v);
        else
                printf(", \"%s\": null", key);
}

/* "/dev/sda" before "/dev/sda2" before "/dev/sda10", as a person reads them */
static int entry_order(const void *a, const void *b)
{
        const struct entry *x = *(const struct entry *const *)a, *y = *(const struct entry *const *)b;
        return strverscmp(x->devnode ? x->devnode : "", y->devnode ? y->devnode : "");
}

/* What went wrong with the device's read, with the errno where there is one: "read failed:
 * Permission denied" (a status table that says only "read failed" gives nothing to act on). */
static const char *problem_text(const struct bsg_dev *d, char *buf, size_t size)
{
        if (!d || d->parse_result == 0)
                return NULL;
        if (d->read_result < 0 && d->read_result != -ETIMEDOUT && d->read_result != -ENODATA) {
                snprintf(buf, size, "read failed: %s", strerror(-d->read_result));
                return buf;
        }
        return d->problem;
}

/* A comma-separated skip list as a JSON array of strings (null when LIST is NULL: unknown). */
static void json_list(const char *list)
{
        if (!list) {
                fputs("null", stdout);
                return;
        }
        putchar('[');
        for (const char *p = list; *p;) {
                size_t n = strcspn(p, ",\n");
                if (n) {
                        _cleanup_free_ char *tok = strndup(p, n);
                        if (p != list)
                                fputs(", ", stdout);
                        json_str(tok ? tok : "");
                }
                p += n;
                if (*p)
                        p++;
        }
        putchar(']');
}

static const char *json_bool(bool v)
{
        return v ? "true" : "false";
}

int run_status(struct ctx *c)
{
        ssize_t ti;
        int lock_fd = -1, r = gather(c, &ti, &lock_fd);
        _cleanup_free_ char *current = NULL, *list = NULL;
        _cleanup_free_ const struct entry **order = NULL;
        char problem[128];

        if (r < 0) {
                log_msg("cannot decide: %s", strerror(-r));
                return 1;
        }
        if (plan_skip_list(c->e, c->n, &list, NULL) == -ENOMEM)
                return 1;
        order = calloc(c->n + 1, sizeof(*order));
        if (!order) {
                log_msg("out of memory");
                return 1;
        }
        for (size_t i = 0; i < c->n; i++)
                order[i] = &c->e[i];
        qsort(order, c->n, sizeof(*order), entry_order);
        bool have_current = bsg_skip_scan_read(&current) >= 0;
        const char *slot = c->have_active_slot ? c->active_slot : "";
        const char *cannot = kernel_cannot_apply(c, list);
        struct bsg_kernel *kernels = NULL;
        size_t n_kernels = 0;
        if (bsg_kernels_list(&kernels, &n_kernels) < 0)
                n_kernels = 0; /* out of memory: the list is left out, nothing else */
        struct bsg_protection prot;
        protection_check(c, list, true, &prot);
        bool loaded = c->caps.control; /* /sys/fs/btrfs/features exists only while btrfs is loaded */

        if (c->json) {
                /* format 1: lists are arrays, what is not known is null, devices sorted by name */
                printf("{\n  \"format\": 1,\n  \"version\": \"%s\",\n  \"verdict\": {\"state\": \"%s\", \"ok\": %s, "
                       "\"text\": ",
                       BSG_VERSION, bsg_protection_state_name(prot.state), json_bool(!prot.failed));
                json_str(prot.verdict);
                json_kv("fix", prot.fix);
                printf("},\n  \"kernel\": {\"control\": %s, "
                       "\"skip_scan\": %s, \"skip_scan_writable\": %s, \"virtual_fsid\": %s, \"temp_fsid\": %s},\n",
                       json_bool(c->caps.control),
                       c->caps.skip_scan || loaded ? json_bool(c->caps.skip_scan) : "null",
                       c->caps.skip_scan ? json_bool(c->caps.skip_scan_writable) : "null",
                       loaded ? json_bool(c->caps.virtual_fsid) : "null",
                       loaded ? json_bool(c->caps.temp_fsid) : "null");
                printf("  \"skip_scan_current\": ");
                json_list(have_current ? current : NULL);
                printf(",\n  \"skip_scan_computed\": ");
                json_list(list);
                printf(",\n  \"skip_scan_applicable\": %s", json_bool(!cannot));
                printf(",\n  \"configuration_errors\": %s", json_bool(config_has_errors(c)));
                printf(",\n  \"active_slot\": ");
                bsg_json_string_or_null(stdout, slot);
                printf(",\n  \"active_slot_source\": ");
                json_str(bsg_slot_source_name(c->slot_source));
                printf(",\n  \"kernels\": [");
                for (size_t i = 0; i < n_kernels; i++) {
                        printf("%s{\"release\": ", i ? ", " : "");
                        json_str(kernels[i].release);
                        printf(", \"running\": %s, \"modules_installed\": %s, \"btrfs_module\": ",
                               json_bool(kernels[i].running), json_bool(kernels[i].installed));
                        json_str(kernels[i].btrfs_module);
                        putchar('}');
                }
                printf("]");
                /* where trust came from (issue 18 item 1): the disks the boot names, or the fallback */
                printf(",\n  \"trust\": {\"source\": ");
                json_str(trust_source(c));
                printf(", \"anchor\": {");
                for (size_t s = 0, k = 0; s < _BSG_ANCHOR_SOURCE_MAX; s++) {
                        if (c->anchor.result[s] == BSG_ANCHOR_ABSENT)
                                continue;
                        printf("%s", k++ ? ", " : "");
                        json_str(bsg_anchor_source_name(s));
                        printf(": ");
                        json_str(bsg_anchor_result_name(c->anchor.result[s]));
                }
                printf("}, \"boot_disks\": [");
                for (size_t i = 0; i < c->anchor.n_disks; i++) {
                        printf("%s", i ? ", " : "");
                        json_str(c->anchor.disks[i]);
                }
                printf("], \"trusted_disks\": %zu}", c->n_trusted_devnums);
                printf(",\n  \"clone_policy\": \"%s\",\n  \"devices\": [",
                       c->config.clone_policy == BSG_CLONE_ACTIVE ? "active" : "skip-all");
                bool first = true;
                for (size_t i = 0; i < c->n; i++) {
                        const struct entry *e = order[i];
                        const struct bsg_dev *d = e->dev >= 0 ? &c->devs.v[e->dev] : NULL;
                        struct bsg_record *rec = bsg_state_find(&c->state, e->devnum);
                        bool btrfs = e->pd.state == BSG_DEV_BTRFS, parsed = d && d->parse_result == 0;
                        char fsid[37] = "";
                        if (e->pd.state == BSG_DEV_NOT_BTRFS && !c->verbose)
                                continue;
                        if (btrfs)
                                bsg_uuid_format(e->pd.fsid, fsid);
                        printf("%s\n    {\"devnode\": ", first ? "" : ",");
                        first = false;
                        json_str(e->devnode);
                        printf(", \"devnum\": \"%u:%u\"", major(e->devnum), minor(e->devnum));
                        json_kv("fsid", fsid);
                        json_u64("devid", btrfs, e->pd.devid);
                        json_u64("num_devices", btrfs, e->pd.num_devices);
                        json_u64("generation", btrfs, e->generation);
                        printf(", \"seed\": %s", btrfs ? json_bool(e->pd.seeding) : "null");
                        json_kv("slot", e->has_slot ? e->slot : NULL);
                        /* active or not is known only of a device with a slot while the active slot is known */
                        printf(", \"slot_active\": %s, \"decision\": \"%s\", \"reason\": \"%s\", \"registered\": %s",
                               e->has_slot && c->have_active_slot ? json_bool(e->pd.slot_active) : "null",
                               bsg_decision_name(e->v.decision), bsg_reason_name(e->v.reason),
                               rec ? json_bool(rec->registered) : "null");
                        printf(", \"trusted\": %s", json_bool(!e->pd.untrusted));
                        json_kv("trust", e->trust_why);
                        json_kv("checksum", parsed ? bsg_csum_type_name(d->sb.csum_type) : NULL);
                        json_kv("checksum_state", parsed ? bsg_csum_state_name(d->sb.csum_state) : NULL);
                        json_kv("problem", problem_text(d, problem, sizeof(problem)));
                        json_kv("label", parsed ? d->sb.label : NULL);
                        /* what libblkid says of the same bytes (never a second read of the device) */
                        printf(", \"blkid\": {\"type\": ");
                        bsg_json_string_or_null(stdout, d ? d->blkid_type : NULL);
                        json_kv("uuid", d ? d->blkid_uuid : NULL);
                        json_kv("uuid_sub", d ? d->blkid_uuid_sub : NULL);
                        json_kv("label", d ? d->blkid_label : NULL);
                        printf("}}");
                }
                printf("\n  ]\n}\n");
        } else {
                /* the verdict first: one line a person or a health check reads without comparing lists */
                printf("%s%s\n", prot.verdict,
                       !prot.failed && config_has_errors(c) ? " (the configuration has errors: see below)" : "");
                if (prot.fix[0])
                        printf("fix: %s\n", prot.fix);
                printf("kernel: control %s, skip_scan %s, virtual_fsid %s, temp_fsid %s\n",
                       c->caps.control ? "present" : "absent (btrfs not loaded)",
                       !c->caps.skip_scan ? "absent (unpatched)" : c->caps.skip_scan_writable ? "writable" : "read-only",
                       c->caps.virtual_fsid ? "yes" : "no", c->caps.temp_fsid ? "yes" : "no");
                printf("skip_scan (current): %s\n", have_current ? current : "(absent)");
                printf("skip_scan (computed): %s%s\n", list, cannot ? " (the kernel cannot apply it)" : "");
                for (size_t i = 0; i < n_kernels; i++) {
                        const char *m = kernels[i].btrfs_module;
                        printf("%s %s%s: %s\n", i ? "        " : "kernels:", kernels[i].release,
                               kernels[i].running ? " (running)" : "",
                               !kernels[i].installed ? "no modules installed under /lib/modules"
                               : !m                   ? "no btrfs module found"
                               : streq(m, "dkms")   ? "btrfs from updates/dkms (btrfs-scan-gate-dkms: patched)"
                               : streq(m, "updates") ? "btrfs from updates (btrfs-scan-gate-modules: patched)"
                               : streq(m, "in-tree") ? "in-tree btrfs (unpatched: no virtual_fsid, no skip_scan)"
                                                    : "btrfs built in (unpatched unless the kernel was built with the series)");
                }
                printf("active slot: %s (from %s), clone policy %s\n", c->have_active_slot ? slot : "(unknown)",
                       bsg_slot_source_name(c->slot_source),
                       c->config.clone_policy == BSG_CLONE_ACTIVE ? "active" : "skip-all");
                char trust[768];
                trust_describe(c, trust, sizeof(trust));
                printf("%s\n", trust);
                for (size_t i = 0; c->verbose && i < c->n; i++)
                        if (order[i]->trust_why)
                                printf("trust: %s %s (%s)\n", order[i]->devnode,
                                       order[i]->pd.untrusted ? "untrusted" : "trusted", order[i]->trust_why);
                printf("%-24s %-36s %5s %10s %-4s %-6s %-26s %s\n", "DEVICE", "FSID", "DEVID", "GENERATION", "SLOT",
                       "DECIDE", "REASON", "CHECKSUM");
                for (size_t i = 0; i < c->n; i++) {
                        const struct entry *e = order[i];
                        const struct bsg_dev *d = e->dev >= 0 ? &c->devs.v[e->dev] : NULL;
                        const char *pt = problem_text(d, problem, sizeof(problem));
                        char fsid[37] = "-", csum[160] = "-";
                        if (e->pd.state == BSG_DEV_NOT_BTRFS && !c->verbose)
                                continue;
                        if (e->pd.state == BSG_DEV_BTRFS)
                                bsg_uuid_format(e->pd.fsid, fsid);
                        if (d && d->parse_result == 0)
                                snprintf(csum, sizeof(csum), "%s,%s", bsg_csum_type_name(d->sb.csum_type),
                                         bsg_csum_state_name(d->sb.csum_state));
                        else if (pt)
                                snprintf(csum, sizeof(csum), "(%s)", pt);
                        printf("%-24s %-36s %5" PRIu64 " %10" PRIu64 " %-4s %-6s %-26s %s\n", e->devnode, fsid,
                               e->pd.devid, e->generation, e->has_slot ? e->slot : "-",
                               bsg_decision_name(e->v.decision), bsg_reason_name(e->v.reason), csum);
                }
        }
        bsg_kernels_free(kernels, n_kernels);
        /* exit 4: the protection this system is set up for is not in force (the verdict says why and
         * the fix); 3: decided, but the kernel takes no skip list (helper only) or the configuration has
         * errors; the messages say which */
        if (prot.failed)
                log_msg("status: %s", prot.verdict);
        else if (cannot)
                log_msg("status: the kernel cannot apply the skip list: %s", cannot);
        if (config_has_errors(c))
                log_msg("status: the configuration has errors (see above): decided on what remained");
        return prot.failed ? 4 : cannot || config_has_errors(c) ? 3 : 0;
}
