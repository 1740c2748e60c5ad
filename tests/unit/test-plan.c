/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pure core's plan (helper/plan.c): entries with verdicts in, kernel actions out. One table row
 * per situation: the one order (skip list, forgets, scans), the event's own device, what an earlier
 * event lost, what boot scans, what is never handed to the kernel. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gate.h"

#define MAXE 6
#define MAXA 16

struct espec {
        const char *node;
        enum bsg_decision decision;
        bool registered, from_record, unanswered, self_mounted, bad_path, unknown, unreadable;
        bool forget_pending;
        bool doubt, unreadable_reason; /* the verdict's reason: in-doubt, unreadable */
};

struct plan_case {
        const char *name;
        struct espec e[MAXE];
        size_t n;
        size_t target; /* SIZE_MAX: none */
        enum plan_mode mode;
        const char *want;      /* the actions, "list" then "scan:N", "ready:N", "forget:N", "unreadable:N" */
        const char *want_list; /* the skip list */
};

static void to_entries(const struct plan_case *t, struct entry *e)
{
        for (size_t i = 0; i < t->n; i++) {
                const struct espec *s = &t->e[i];
                e[i] = (struct entry){
                        .devnode = s->node,
                        .devnum = (dev_t)(i + 1),
                        .dev = (ssize_t)i,
                        .pd = {.devnode = s->node,
                               .state = s->unknown ? BSG_DEV_UNKNOWN : s->unreadable ? BSG_DEV_UNREADABLE : BSG_DEV_BTRFS,
                               .devid = 1, .num_devices = 1,
                               .path_ok = !s->bad_path, .self_mounted = s->self_mounted},
                        .v = {s->decision, s->doubt               ? BSG_REASON_IN_DOUBT
                                           : s->unreadable_reason   ? BSG_REASON_UNREADABLE
                                           : s->decision == BSG_SCAN ? BSG_REASON_UNIQUE
                                                                     : BSG_REASON_CLONE},
                        .registered = s->registered,
                        .forget_pending = s->forget_pending,
                        .from_record = s->from_record,
                        .unanswered = s->unanswered,
                };
                memset(e[i].pd.fsid, (int)(i + 1), sizeof(e[i].pd.fsid));
        }
}

static void format_plan(const struct plan *p, char *buf, size_t size)
{
        static const char *const names[] = {
                [PLAN_SKIP_LIST] = "list", [PLAN_FORGET] = "forget", [PLAN_SCAN] = "scan",
                [PLAN_READY] = "ready",    [PLAN_UNREADABLE] = "unreadable",
        };
        size_t l = 0;
        buf[0] = '\0';
        for (size_t k = 0; k < p->n && l < size; k++) {
                if (p->v[k].type == PLAN_SKIP_LIST)
                        l += (size_t)snprintf(buf + l, size - l, "%slist", k ? " " : "");
                else
                        l += (size_t)snprintf(buf + l, size - l, "%s%s:%zu", k ? " " : "", names[p->v[k].type],
                                              p->v[k].entry);
        }
}

static void plan_one(const struct plan_case *t)
{
        struct entry e[MAXE];
        struct plan p;
        char got[256];

        check_case = t->name;
        to_entries(t, e);
        CHECK(plan_build(e, t->n, t->target, t->mode, &p) == 0);
        format_plan(&p, got, sizeof(got));
        CHECK_STREQ(got, t->want);
        CHECK_STREQ(p.skip_list, t->want_list);
        plan_done(&p);
}

static const struct plan_case cases[] = {
        /* issue 18 case 7: registered with a superblock other than the decided one, its forget failed */
        {"event: a scan device whose forget is pending is forgotten, not taken as registered",
         {{"/dev/a", BSG_SCAN, .registered = true, .from_record = true, .forget_pending = true}}, 1, 0,
         PLAN_MODE_EVENT, "list forget:0", ""},
        {"event: another device's pending forget is retried too, never scanned over",
         {{"/dev/a", BSG_SCAN}, {"/dev/b", BSG_SCAN, .registered = true, .from_record = true, .forget_pending = true}},
         2, 0, PLAN_MODE_EVENT, "list forget:1 ready:0", ""},
        {"event: skip list first, the forget of what lost, the event's device asks READY, the lost scan made good",
         {{"/dev/a", BSG_SCAN},
          {"/dev/b", BSG_SCAN, .registered = false, .from_record = true},
          {"/dev/c", BSG_SKIP, .registered = true, .from_record = true},
          {"/dev/d", BSG_SCAN, .registered = true, .from_record = true}},
         4, 0, PLAN_MODE_EVENT, "list forget:2 ready:0 scan:1", "/dev/c"},
        /* a loser still registered makes the winner's scan fail with EEXIST ("already registered with
         * a higher generation"): forgotten first, whatever the entry order */
        {"event: the forget comes before every scan whatever the entry order",
         {{"/dev/a", BSG_SCAN}, {"/dev/b", BSG_SCAN, .from_record = true}, {"/dev/c", BSG_SKIP, .registered = true}},
         3, 0, PLAN_MODE_EVENT, "list forget:2 ready:0 scan:1", "/dev/c"},
        {"boot: the forget of a registered loser comes before the winner's scan",
         {{"/dev/a", BSG_SCAN}, {"/dev/c", BSG_SKIP, .registered = true}}, 2, SIZE_MAX, PLAN_MODE_BOOT,
         "list forget:1 scan:0", "/dev/c"},
        /* doubt stays where it starts: another device's doubt (a stick whose read stalls) holds a
         * scan back, but never takes a registration back */
        {"event: a registered device held back by another's doubt is not forgotten",
         {{"/dev/sdc1", BSG_SKIP, .registered = true, .from_record = true, .doubt = true},
          {"/dev/sdd1", BSG_SKIP, .registered = true, .from_record = true, .doubt = true},
          {"/dev/sdx", BSG_SKIP, .unknown = true, .doubt = true}},
         3, 2, PLAN_MODE_EVENT, "list", "/dev/sdc1,/dev/sdd1,/dev/sdx"},
        {"reconcile: a registered device in doubt itself (unreadable now) is not forgotten",
         {{"/dev/sdc1", BSG_SKIP, .registered = true, .unreadable = true, .unreadable_reason = true}}, 1,
         SIZE_MAX, PLAN_MODE_RECONCILE, "list", "/dev/sdc1"},
        {"boot: doubt forgets nothing, a clone that lost is forgotten",
         {{"/dev/sdc1", BSG_SKIP, .registered = true, .doubt = true}, {"/dev/sdd1", BSG_SKIP, .registered = true}},
         2, SIZE_MAX, PLAN_MODE_BOOT, "list forget:1", "/dev/sdc1,/dev/sdd1"},
        {"event: a device that just left the skip list is scanned after the list is written",
         {{"/dev/a", BSG_SCAN, .from_record = true}, {"/dev/x", BSG_SCAN}}, 2, 1, PLAN_MODE_EVENT,
         "list scan:0 ready:1", ""},
        /* issue 18 case 11: `btrfs device scan --forget` makes the record false; the kernel is asked */
        {"event: the event's device recorded registered, not read now: READY all the same",
         {{"/dev/a", BSG_SCAN, .registered = true, .from_record = true}, {"/dev/b", BSG_SKIP, .from_record = true}},
         2, 0, PLAN_MODE_EVENT, "list ready:0", "/dev/b"},
        {"event: the event's device registered but read now (change event): READY, checked again",
         {{"/dev/a", BSG_SCAN, .registered = true}}, 1, 0, PLAN_MODE_EVENT, "list ready:0", ""},
        {"event: the event's device from its record but not registered (lost earlier): READY",
         {{"/dev/a", BSG_SCAN, .from_record = true}}, 1, 0, PLAN_MODE_EVENT, "list ready:0", ""},
        {"event: an unreadable scan device is never handed to the kernel, not even the event's own",
         {{"/dev/a", BSG_SCAN, .unanswered = true}, {"/dev/b", BSG_SCAN, .unanswered = true, .from_record = true}},
         2, 0, PLAN_MODE_EVENT, "list unreadable:0 unreadable:1", ""},
        {"event: a registered skip device that is itself mounted is not forgotten",
         {{"/dev/a", BSG_SKIP, .registered = true, .self_mounted = true}, {"/dev/b", BSG_SKIP}}, 2, 1,
         PLAN_MODE_EVENT, "list", "/dev/a,/dev/b"},
        {"event: ignore devices are neither listed nor forgotten unless this helper registered them",
         {{"/dev/a", BSG_IGNORE}, {"/dev/b", BSG_IGNORE, .registered = true}}, 2, 0, PLAN_MODE_EVENT,
         "list forget:1", ""},
        {"event: a skip device whose path cannot be listed is still never scanned",
         {{"/dev/a b", BSG_SKIP, .bad_path = true}, {"/dev/c", BSG_SCAN}}, 2, 1, PLAN_MODE_EVENT, "list ready:1",
         ""},
        {"remove: no target, the remaining copies re-decided and made good",
         {{"/dev/a", BSG_SCAN, .from_record = true}, {"/dev/b", BSG_SCAN, .registered = true, .from_record = true}},
         2, SIZE_MAX, PLAN_MODE_EVENT, "list scan:0", ""},
        {"reconcile: every scan device not registered, every forget due",
         {{"/dev/a", BSG_SCAN, .from_record = true},
          {"/dev/b", BSG_SCAN, .registered = true, .from_record = true},
          {"/dev/c", BSG_SKIP, .registered = true, .from_record = true}},
         3, SIZE_MAX, PLAN_MODE_RECONCILE, "list forget:2 scan:0", "/dev/c"},
        {"boot: every scan device is scanned, registered or not",
         {{"/dev/a", BSG_SCAN, .registered = true}, {"/dev/b", BSG_SCAN}, {"/dev/c", BSG_SKIP}}, 3, SIZE_MAX,
         PLAN_MODE_BOOT, "list scan:0 scan:1", "/dev/c"},
        {"boot: nothing to scan still writes the skip list", {{"/dev/a", BSG_SKIP}, {"/dev/b", BSG_SKIP}}, 2,
         SIZE_MAX, PLAN_MODE_BOOT, "list", "/dev/a,/dev/b"},
        {"no device at all: the (empty) skip list is still written", {}, 0, SIZE_MAX, PLAN_MODE_BOOT, "list", ""},
};

/* plan_stable_skip_list: PARTUUID= for a partition whose PARTUUID no other device carries. */
static void stable_list(void)
{
        struct entry e[4] = {
                {.devnode = "/dev/sda5", .partuuid = "5c1a-05", .v = {BSG_SKIP}, .pd = {.path_ok = true}},
                {.devnode = "/dev/sda4", .partuuid = "5C1A-04", .v = {BSG_SCAN}, .pd = {.path_ok = true}},
                /* a stick with the PARTUUID of the scanned sda4: by path, or sda4 would be skipped too */
                {.devnode = "/dev/sdx1", .partuuid = "5c1a-04", .v = {BSG_SKIP}, .pd = {.path_ok = true}},
                {.devnode = "/dev/loop3", .v = {BSG_SKIP}, .pd = {.path_ok = true}},
        };
        char *list = NULL;

        check_case = "stable skip list";
        CHECK(plan_stable_skip_list(e, 4, &list, NULL) == 0);
        CHECK_STREQ(list, "/dev/loop3,/dev/sdx1,PARTUUID=5c1a-05");
        free(list);
        e[0].partuuid = "5c1a-05,evil"; /* not a PARTUUID the kernel takes: the path */
        CHECK(plan_stable_skip_list(e, 4, &list, NULL) == 0);
        CHECK_STREQ(list, "/dev/loop3,/dev/sda5,/dev/sdx1");
        free(list);
}

/* plan_all_devices_present: readiness without the kernel (a two-device filesystem). */
static void readiness(void)
{
        struct entry e[3] = {};

        check_case = "readiness";
        for (size_t i = 0; i < 3; i++) {
                e[i].pd.state = BSG_DEV_BTRFS;
                e[i].pd.num_devices = 2;
                e[i].pd.devid = i == 2 ? 2 : 1; /* entries 0 and 1: two copies of devid 1 */
                memset(e[i].pd.fsid, 7, sizeof(e[i].pd.fsid));
                e[i].v.decision = BSG_SCAN;
        }
        CHECK(plan_all_devices_present(e, 2, &e[0], true) == false); /* devid 1 twice is not devid 2 */
        CHECK(plan_all_devices_present(e, 3, &e[0], true) == true);
        e[2].v.decision = BSG_SKIP;
        CHECK(plan_all_devices_present(e, 3, &e[0], true) == false);
        CHECK(plan_all_devices_present(e, 3, &e[0], false) == true);
}

/* issue 18 case 5: a card with 260 partitions carrying a btrfs magic (untrusted, listed) must not
 * push the clones of trusted storage (nvme0n1p4, nvme0n1p5) off a list cut at 4095 bytes. */
static void crowded_list(void)
{
        enum { N_CARD = 260 };
        static struct entry e[N_CARD + 3];
        static char names[N_CARD][32];
        char *list = NULL;
        size_t dropped = 0, n = 0;

        e[n++] = (struct entry){.devnode = "/dev/nvme0n1p4", .partuuid = "0a0a-04", .v = {BSG_SKIP}, .pd = {.path_ok = true}};
        e[n++] = (struct entry){.devnode = "/dev/nvme0n1p5", .partuuid = "0a0a-05", .v = {BSG_SKIP}, .pd = {.path_ok = true}};
        e[n++] = (struct entry){.devnode = "/dev/nvme0n1p6", .v = {BSG_SCAN}, .pd = {.path_ok = true}};
        for (size_t i = 0; i < N_CARD; i++) {
                snprintf(names[i], sizeof(names[i]), "/dev/mmcblk0p%zu", i + 1);
                e[n++] = (struct entry){.devnode = names[i], .v = {BSG_SKIP}, .pd = {.path_ok = true, .untrusted = true}};
        }
        check_case = "crowded skip list keeps trusted entries";
        CHECK(plan_skip_list(e, n, &list, &dropped) == -E2BIG);
        CHECK(list && strlen(list) <= 4095);
        CHECK(list && strstr(list, "/dev/nvme0n1p4") && strstr(list, "/dev/nvme0n1p5"));
        CHECK(list && !strstr(list, "/dev/nvme0n1p6"));
        CHECK(dropped > 0 && dropped < N_CARD);
        /* the list is still sorted as a whole: the card's entries come before nvme's */
        CHECK(list && strncmp(list, "/dev/mmcblk0p1,", 15) == 0);
        CHECK(list && strlen(list) >= 14 && strcmp(list + strlen(list) - 14, "/dev/nvme0n1p5") == 0);
        free(list);
        list = NULL;
        check_case = "crowded stable skip list keeps trusted entries";
        CHECK(plan_stable_skip_list(e, n, &list, &dropped) == -E2BIG);
        CHECK(list && strstr(list, "PARTUUID=0a0a-04") && strstr(list, "PARTUUID=0a0a-05"));
        CHECK(dropped > 0);
        free(list);
}

/* Finding 7: hot-pluggable media nobody trusts is listed by its whole disk in the kernel's starred
 * form, whatever its partitions carry: a stick with 300 partitions is one entry (it pushed the list
 * past 4095 bytes), and a partition that shows zeros to the helper's read (ignore) is covered. */
static void starred_disks(void)
{
        enum { N_STICK = 300 };
        static struct entry e[N_STICK + 8];
        static char names[N_STICK][32];
        char *list = NULL;
        size_t dropped = 99, n = 0;
        const struct bsg_trust_facts hot = {.class_known = true, .class_fixed = false};
        const char *stick = "/sys/devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block/sdx";

        e[n++] = (struct entry){.devnode = "/dev/nvme0n1p5", .disk = "/sys/devices/pci0000:00/nvme/nvme0n1",
                                .v = {BSG_SKIP, BSG_REASON_CLONE}, .pd = {.path_ok = true},
                                .trust = {.class_known = true, .class_fixed = true}};
        e[n++] = (struct entry){.devnode = "/dev/sdx", .disk = stick, .v = {BSG_IGNORE}, .pd = {.path_ok = true, .untrusted = true},
                                .trust = hot};
        for (size_t i = 0; i < N_STICK; i++) {
                snprintf(names[i], sizeof(names[i]), "/dev/sdx%zu", i + 1);
                /* every other one shows zeros now */
                e[n++] = (struct entry){.devnode = names[i], .disk = stick,
                                        .v = i % 2 ? (struct bsg_verdict){BSG_IGNORE, BSG_REASON_NOT_BTRFS}
                                                   : (struct bsg_verdict){BSG_SKIP, BSG_REASON_OUTRANKED},
                                        .pd = {.path_ok = true, .untrusted = true}, .trust = hot};
        }
        /* a card showing only zeros: listed all the same */
        e[n++] = (struct entry){.devnode = "/dev/mmcblk0p1", .disk = "/sys/devices/pci0000:00/mmc_host/mmc0/mmc0:0001/block/mmcblk0",
                                .v = {BSG_IGNORE, BSG_REASON_NOT_BTRFS}, .pd = {.path_ok = true, .untrusted = true},
                                .trust = hot};
        /* a stacked device over a stick: its own node, not a partition of the stick */
        e[n++] = (struct entry){.devnode = "/dev/dm-3", .disk = stick, .v = {BSG_SKIP, BSG_REASON_OUTRANKED},
                                .pd = {.path_ok = true, .untrusted = true},
                                .trust = {.class_known = true, .class_fixed = false, .stacked = true}};
        check_case = "starred: a stick by its whole disk";
        CHECK(plan_skip_list(e, n, &list, &dropped) == 0);
        CHECK_STREQ(list, "/dev/dm-3,/dev/mmcblk0*,/dev/nvme0n1p5,/dev/sdx*");
        CHECK(dropped == 0);
        free(list);

        /* a stick one of whose devices is scanned (collides with nothing, or in use) cannot be listed
         * whole: its skipped devices are listed each */
        check_case = "starred: not a disk with a scanned device";
        struct entry two[3] = {
                {.devnode = "/dev/sdy1", .disk = "/x/block/sdy", .v = {BSG_SCAN, BSG_REASON_UNIQUE},
                 .pd = {.path_ok = true, .untrusted = true}, .trust = hot},
                {.devnode = "/dev/sdy2", .disk = "/x/block/sdy", .v = {BSG_SKIP, BSG_REASON_OUTRANKED},
                 .pd = {.path_ok = true, .untrusted = true}, .trust = hot},
                {.devnode = "/dev/sdy3", .disk = "/x/block/sdy", .v = {BSG_IGNORE, BSG_REASON_NOT_BTRFS},
                 .pd = {.path_ok = true, .untrusted = true}, .trust = hot},
        };
        CHECK(plan_skip_list(two, 3, &list, &dropped) == 0);
        CHECK_STREQ(list, "/dev/sdy2");
        free(list);

        /* trusted hot-pluggable media (the stick the system booted from, trusted_disk=) is not */
        check_case = "starred: not trusted media";
        two[0].pd.untrusted = two[1].pd.untrusted = two[2].pd.untrusted = false;
        two[0].v = (struct bsg_verdict){BSG_SKIP, BSG_REASON_CLONE};
        CHECK(plan_skip_list(two, 3, &list, &dropped) == 0);
        CHECK_STREQ(list, "/dev/sdy1,/dev/sdy2");
        free(list);
}

int main(void)
{
        crowded_list();
        starred_disks();
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                plan_one(&cases[i]);
        readiness();
        stable_list();
        return check_finish("test-plan");
}
