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
#include "json.h"
#include "superblock.h"
#include "util.h"

static void json_str(const char *s)
{
        bsg_json_string(stdout, s);
}

/* util-linux: null for what is absent (an empty string here) */
static void json_str_or_null(const char *s)
{
        bsg_json_string_or_null(stdout, s);
}

static void json_u64_or_null(bool present, uint64_t v)
{
        if (present)
                printf("%" PRIu64, v);
        else
                fputs("null", stdout);
}

int run_status(struct ctx *c)
{
        ssize_t ti;
        int lock_fd = -1, r = gather(c, &ti, &lock_fd);
        _cleanup_free_ char *current = NULL, *list = NULL;

        if (r < 0) {
                log_msg("cannot decide: %s", strerror(-r));
                return 1;
        }
        if (plan_skip_list(c->e, c->n, &list, NULL) == -ENOMEM)
                return 1;
        bool have_current = bsg_skip_scan_read(&current) >= 0;
        const char *slot = c->have_active_slot ? c->active_slot : "";

        if (c->json) {
                printf("{\n  \"version\": \"%s\",\n  \"kernel\": {\"control\": %s, \"skip_scan\": %s, "
                       "\"skip_scan_writable\": %s, \"virtual_fsid\": %s, \"temp_fsid\": %s},\n",
                       BSG_VERSION, c->caps.control ? "true" : "false", c->caps.skip_scan ? "true" : "false",
                       c->caps.skip_scan_writable ? "true" : "false", c->caps.virtual_fsid ? "true" : "false",
                       c->caps.temp_fsid ? "true" : "false");
                printf("  \"skip_scan_current\": ");
                json_str(have_current ? current : NULL);
                printf(",\n  \"skip_scan_computed\": ");
                json_str(list);
                printf(",\n  \"active_slot\": ");
                json_str_or_null(slot);
                printf(",\n  \"active_slot_source\": ");
                json_str(bsg_slot_source_name(c->slot_source));
                printf(",\n  \"clone_policy\": \"%s\",\n  \"devices\": [",
                       c->config.clone_policy == BSG_CLONE_ACTIVE ? "active" : "skip-all");
                bool first = true;
                for (size_t i = 0; i < c->n; i++) {
                        const struct entry *e = &c->e[i];
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
                        printf(", \"devnum\": \"%u:%u\", \"fsid\": ", major(e->devnum), minor(e->devnum));
                        json_str_or_null(fsid);
                        printf(", \"devid\": ");
                        json_u64_or_null(btrfs, e->pd.devid);
                        printf(", \"num_devices\": ");
                        json_u64_or_null(btrfs, e->pd.num_devices);
                        printf(", \"generation\": ");
                        json_u64_or_null(btrfs, e->generation);
                        printf(", \"seed\": %s, \"slot\": ", e->pd.seeding ? "true" : "false");
                        json_str_or_null(e->has_slot ? e->slot : NULL);
                        printf(", \"slot_active\": %s, \"decision\": \"%s\", \"reason\": \"%s\", \"registered\": %s",
                               e->pd.slot_active ? "true" : "false", bsg_decision_name(e->v.decision),
                               bsg_reason_name(e->v.reason), rec && rec->registered ? "true" : "false");
                        printf(", \"checksum\": ");
                        json_str(parsed ? bsg_csum_type_name(d->sb.csum_type) : NULL);
                        printf(", \"checksum_state\": ");
                        json_str(parsed ? bsg_csum_state_name(d->sb.csum_state) : NULL);
                        printf(", \"problem\": ");
                        json_str_or_null(d && d->parse_result != 0 ? d->problem : NULL);
                        printf(", \"label\": ");
                        json_str_or_null(parsed ? d->sb.label : NULL);
                        /* what libblkid says of the same bytes (never a second read of the device) */
                        printf(", \"blkid\": {\"type\": ");
                        json_str_or_null(d ? d->blkid_type : NULL);
                        printf(", \"uuid\": ");
                        json_str_or_null(d ? d->blkid_uuid : NULL);
                        printf(", \"uuid_sub\": ");
                        json_str_or_null(d ? d->blkid_uuid_sub : NULL);
                        printf(", \"label\": ");
                        json_str_or_null(d ? d->blkid_label : NULL);
                        printf("}}");
                }
                printf("\n  ]\n}\n");
                return 0;
        }
        printf("kernel: control %s, skip_scan %s, virtual_fsid %s, temp_fsid %s\n",
               c->caps.control ? "present" : "absent (btrfs not loaded)",
               !c->caps.skip_scan ? "absent (unpatched)" : c->caps.skip_scan_writable ? "writable" : "read-only",
               c->caps.virtual_fsid ? "yes" : "no", c->caps.temp_fsid ? "yes" : "no");
        printf("skip_scan (current): %s\n", have_current ? current : "(absent)");
        printf("skip_scan (computed): %s\n", list);
        printf("active slot: %s (from %s), clone policy %s\n", c->have_active_slot ? slot : "(unknown)",
               bsg_slot_source_name(c->slot_source),
               c->config.clone_policy == BSG_CLONE_ACTIVE ? "active" : "skip-all");
        if (c->verbose) {
                char trust[512];
                trust_describe(c, trust, sizeof(trust));
                printf("%s\n", trust);
                for (size_t i = 0; i < c->devs.n; i++)
                        if (c->devs.v[i].trust_why)
                                printf("trust: %s %s (%s)\n", c->devs.v[i].devnode,
                                       c->devs.v[i].untrusted ? "untrusted" : "trusted", c->devs.v[i].trust_why);
        }
        printf("%-24s %-36s %5s %10s %-4s %-6s %-26s %s\n", "DEVICE", "FSID", "DEVID", "GENERATION", "SLOT",
               "DECIDE", "REASON", "CHECKSUM");
        for (size_t i = 0; i < c->n; i++) {
                const struct entry *e = &c->e[i];
                const struct bsg_dev *d = e->dev >= 0 ? &c->devs.v[e->dev] : NULL;
                char fsid[37] = "-", csum[64] = "-";
                if (e->pd.state == BSG_DEV_NOT_BTRFS && !c->verbose)
                        continue;
                if (e->pd.state == BSG_DEV_BTRFS)
                        bsg_uuid_format(e->pd.fsid, fsid);
                if (d && d->parse_result == 0)
                        snprintf(csum, sizeof(csum), "%s,%s", bsg_csum_type_name(d->sb.csum_type),
                                 bsg_csum_state_name(d->sb.csum_state));
                else if (d && d->problem)
                        snprintf(csum, sizeof(csum), "(%s)", d->problem);
                printf("%-24s %-36s %5" PRIu64 " %10" PRIu64 " %-4s %-6s %-26s %s\n", e->devnode, fsid,
                       e->pd.devid, e->generation, e->has_slot ? e->slot : "-", bsg_decision_name(e->v.decision),
                       bsg_reason_name(e->v.reason), csum);
        }
        return 0;
}

