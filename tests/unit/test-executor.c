/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The executor (helper/executor.c) against a scripted kernel: helper/executor.c is linked with this
 * file's versions of the kernel interface (kernel.h: control node, skip list, the action child) and
 * of the state lookup, so each row shows what is written and asked in which order, what each kernel
 * answer does to the registered flags, and which ACTION and ERROR tokens an event then prints. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gate.h"

/* ---- the scripted kernel ---- */
static char journal[1024]; /* what happened, in order: "list=<...>", "scan:/dev/a", ... */
static int answers[16];    /* result of the Nth kernel action */
static int forget_answers[16]; /* with -ESTALE: the result of the forget that took it back */
static bool had_super[16]; /* the Nth action's check compares a whole block */
static int control_result; /* bsg_control_open's return */
static bool verified[16];  /* the verify flag of the Nth action */

static void happened(const char *what)
{
        size_t l = strlen(journal);
        snprintf(journal + l, sizeof(journal) - l, "%s%s", l ? " " : "", what);
}

int bsg_skip_scan_write(const char *list)
{
        char buf[256];
        snprintf(buf, sizeof(buf), "list=%s", list);
        happened(buf);
        return 0;
}

int bsg_skip_scan_read(char **ret_list)
{
        *ret_list = strdup("/dev/held");
        return *ret_list ? 0 : -ENOMEM;
}

int bsg_control_open(void)
{
        if (control_result >= 0)
                happened("open");
        return control_result >= 0 ? dup(STDERR_FILENO) : control_result;
}

const char *bsg_control_path(void)
{
        return "/dev/btrfs-control";
}

uint64_t bsg_now_usec(void)
{
        return 1;
}

int bsg_control_run(int control, struct bsg_kop *ops, size_t n, int close_fd, uint64_t deadline_usec)
{
        static const char *const names[] = {[BSG_KOP_SCAN] = "scan", [BSG_KOP_READY] = "ready",
                                            [BSG_KOP_FORGET] = "forget"};
        (void)control, (void)close_fd, (void)deadline_usec;
        for (size_t i = 0; i < n && i < 16; i++) {
                char buf[128];
                snprintf(buf, sizeof(buf), "%s:%s", names[ops[i].type], ops[i].path);
                happened(buf);
                verified[i] = ops[i].verify;
                had_super[i] = ops[i].super != NULL;
                ops[i].result = answers[i];
                ops[i].forget_result = forget_answers[i];
        }
        return 0;
}

struct bsg_record *bsg_state_find(struct bsg_state *state, dev_t devnum)
{
        for (size_t i = 0; i < state->n; i++)
                if (state->v[i].devnum == devnum)
                        return &state->v[i];
        return NULL;
}

/* ---- gate.c's small helpers (gate.c itself links the whole helper) ---- */
bool arg_verbose;
void log_msg(const char *fmt, ...)
{
        (void)fmt;
}
void log_msg_debug(const char *fmt, ...)
{
        (void)fmt;
}
void add_token(char *buf, size_t size, const char *token)
{
        size_t l = strlen(buf);
        snprintf(buf + l, size - l, "%s%s", l ? "," : "", token);
}
void add_error(struct ctx *c, const char *token)
{
        add_token(c->errors, sizeof(c->errors), token);
}

/* ---- the cases ---- */
struct exec_case {
        const char *name;
        enum verb verb;
        bool no_skip_scan, read_only_skip_scan;
        int control; /* bsg_control_open's return (0: opens) */
        const char *skip_list;
        struct plan_action actions[8];
        size_t n_actions;
        int answers[8];
        int forget_answers[8];
        bool registered_before[4];
        bool pending_before[4];
        const char *want_journal;
        const char *want_actions, *want_errors;
        int want_ready;
        bool want_registered[4];
        bool want_verify[8]; /* of the kernel actions, in order */
        bool want_pending[4];
};

static const char *const nodes[4] = {"/dev/a", "/dev/b", "/dev/c", "/dev/d"};

static void exec_one(const struct exec_case *t)
{
        struct bsg_record recs[4] = {};
        struct entry e[4] = {};
        struct ctx c = {.verb = t->verb};
        struct plan p = {.v = (struct plan_action *)t->actions, .n = t->n_actions, .skip_list = (char *)t->skip_list};
        int ready = 42;

        check_case = t->name;
        journal[0] = '\0';
        memset(answers, 0, sizeof(answers));
        memcpy(answers, t->answers, sizeof(t->answers));
        memset(forget_answers, 0, sizeof(forget_answers));
        memcpy(forget_answers, t->forget_answers, sizeof(t->forget_answers));
        memset(verified, 0, sizeof(verified));
        control_result = t->control;
        c.caps.skip_scan = !t->no_skip_scan;
        c.caps.skip_scan_writable = !t->read_only_skip_scan;
        for (size_t i = 0; i < 4; i++) {
                recs[i] = (struct bsg_record){.devnum = (dev_t)(i + 1), .registered = t->registered_before[i],
                                              .forget_pending = t->pending_before[i]};
                e[i] = (struct entry){.devnode = nodes[i], .devnum = (dev_t)(i + 1), .dev = (ssize_t)i,
                                      .pd = {.state = BSG_DEV_BTRFS, .devid = 1},
                                      .registered = t->registered_before[i],
                                      .forget_pending = t->pending_before[i]};
        }
        c.state = (struct bsg_state){recs, 4};
        c.e = e;
        c.n = 4;
        execute_plan(&c, &p, -1, &ready);
        CHECK_STREQ(journal, t->want_journal);
        CHECK_STREQ(c.actions, t->want_actions);
        CHECK_STREQ(c.errors, t->want_errors);
        CHECK(ready == t->want_ready);
        for (size_t i = 0; i < 4; i++) {
                CHECK(e[i].registered == t->want_registered[i]);
                CHECK(recs[i].registered == t->want_registered[i]); /* the inventory keeps step */
                CHECK(e[i].forget_pending == t->want_pending[i]);
                CHECK(recs[i].forget_pending == t->want_pending[i]);
        }
        for (size_t i = 0; i < 8; i++)
                CHECK(verified[i] == t->want_verify[i]);
}

#define A(type, i) {PLAN_##type, i}

static const struct exec_case cases[] = {
        {"event: the list, then the kernel's actions in the plan's order; each answer kept",
         VERB_UDEV, .skip_list = "/dev/c",
         .actions = {A(SKIP_LIST, 0), A(READY, 0), A(SCAN, 1), A(FORGET, 2)}, .n_actions = 4,
         .answers = {1, 0, 0}, .registered_before = {false, false, true, false},
         .want_journal = "list=/dev/c open ready:/dev/a scan:/dev/b forget:/dev/c",
         .want_actions = "scanned,made-good:/dev/b,forgot:/dev/c", .want_errors = "", .want_ready = 1,
         .want_registered = {true, true, false, false}, .want_verify = {true, true, false}},
        {"event: the kernel read something else (ESTALE): not registered, said",
         VERB_UDEV, .skip_list = "", .actions = {A(SKIP_LIST, 0), A(READY, 0)}, .n_actions = 2,
         .answers = {-ESTALE}, .want_journal = "list= open ready:/dev/a", .want_actions = "",
         .want_errors = "kernel-read-differs", .want_ready = -1, .want_verify = {true}},
        /* issue 18 case 7: the forget after a differing read is checked */
        {"event: the kernel read something else and the forget failed: still registered, retried, said",
         VERB_UDEV, .skip_list = "", .actions = {A(SKIP_LIST, 0), A(READY, 0)}, .n_actions = 2,
         .answers = {-ESTALE}, .forget_answers = {-EIO}, .want_journal = "list= open ready:/dev/a",
         .want_actions = "", .want_errors = "kernel-read-differs,forget-failed", .want_ready = -1,
         .want_registered = {true}, .want_verify = {true}, .want_pending = {true}},
        {"event: the kernel read something else, the forget says not registered (ENOENT): not registered",
         VERB_UDEV, .skip_list = "", .actions = {A(SKIP_LIST, 0), A(SCAN, 1)}, .n_actions = 2,
         .answers = {-ESTALE}, .forget_answers = {-ENOENT}, .want_journal = "list= open scan:/dev/b",
         .want_actions = "", .want_errors = "kernel-read-differs", .want_ready = -1, .want_verify = {true}},
        {"event: a pending forget that works clears both flags",
         VERB_UDEV, .skip_list = "", .actions = {A(SKIP_LIST, 0), A(FORGET, 0)}, .n_actions = 2,
         .answers = {0}, .registered_before = {true}, .pending_before = {true},
         .want_journal = "list= open forget:/dev/a",
         .want_actions = "forgot:/dev/a", .want_errors = "", .want_ready = -1},
        {"event: a scan that timed out in the kernel: not registered, kernel-timeout",
         VERB_UDEV, .skip_list = "", .actions = {A(SKIP_LIST, 0), A(SCAN, 1)}, .n_actions = 2,
         .answers = {-ETIMEDOUT}, .want_journal = "list= open scan:/dev/b", .want_actions = "",
         .want_errors = "kernel-timeout", .want_ready = -1, .want_verify = {true}},
        {"event: forgetting what the kernel no longer has (ENOENT) clears the flag silently",
         VERB_UDEV, .skip_list = "/dev/a", .actions = {A(SKIP_LIST, 0), A(FORGET, 0)}, .n_actions = 2,
         .answers = {-ENOENT}, .registered_before = {true},
         .want_journal = "list=/dev/a open forget:/dev/a", .want_actions = "", .want_errors = "",
         .want_ready = -1},
        {"event: a forget refused because the twin is mounted (EBUSY) keeps the flag",
         VERB_UDEV, .skip_list = "/dev/a", .actions = {A(SKIP_LIST, 0), A(FORGET, 0)}, .n_actions = 2,
         .answers = {-EBUSY}, .registered_before = {true},
         .want_journal = "list=/dev/a open forget:/dev/a", .want_actions = "", .want_errors = "twin-mounted",
         .want_ready = -1, .want_registered = {true}},
        {"event: no control node: the skip list is still written, nothing else, not-ready",
         VERB_UDEV, .control = -ENOENT, .skip_list = "/dev/b", .actions = {A(SKIP_LIST, 0), A(READY, 0)},
         .n_actions = 2, .want_journal = "list=/dev/b", .want_actions = "", .want_errors = "not-ready",
         .want_ready = -1},
        {"event: unpatched module (no skip_scan): scans still run, skip-scan-absent said",
         VERB_UDEV, .no_skip_scan = true, .skip_list = "/dev/b", .actions = {A(SKIP_LIST, 0), A(READY, 0)},
         .n_actions = 2, .answers = {1}, .want_journal = "open ready:/dev/a", .want_actions = "scanned",
         .want_errors = "skip-scan-absent", .want_ready = 1, .want_registered = {true},
         .want_verify = {true}},
        {"event: read-only skip_scan (the RFC's 0444) is said, never written",
         VERB_UDEV, .read_only_skip_scan = true, .skip_list = "/dev/b", .actions = {A(SKIP_LIST, 0)},
         .n_actions = 1, .want_journal = "", .want_actions = "", .want_errors = "skip-scan-read-only",
         .want_ready = -1},
        {"event: an unreadable device is never handed to the kernel",
         VERB_UDEV, .skip_list = "", .actions = {A(SKIP_LIST, 0), A(UNREADABLE, 1)}, .n_actions = 2,
         .want_journal = "list=", .want_actions = "", .want_errors = "not-scanned-unreadable", .want_ready = -1},
        {"boot: scans are not made-good tokens; a failed scan is not an event error",
         VERB_BOOT, .skip_list = "/dev/d", .actions = {A(SKIP_LIST, 0), A(SCAN, 0), A(SCAN, 1)}, .n_actions = 3,
         .answers = {0, -EIO}, .want_journal = "list=/dev/d open scan:/dev/a scan:/dev/b", .want_actions = "",
         .want_errors = "", .want_ready = -1, .want_registered = {true}, .want_verify = {true, true}},
};

int main(void)
{
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                exec_one(&cases[i]);
        return check_finish("test-executor");
}
