/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Minimal test harness for the table-driven unit tests: CHECK() counts failures, main returns them. */
#pragma once

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_failures;
static const char *check_case = "";

#define CHECK(cond)                                                                                     \
        do {                                                                                            \
                if (!(cond)) {                                                                          \
                        fprintf(stderr, "FAIL %s:%d [%s]: %s\n", __FILE__, __LINE__, check_case, #cond); \
                        check_failures++;                                                               \
                }                                                                                       \
        } while (0)

#define CHECK_STREQ(a, b)                                                                               \
        do {                                                                                            \
                const char *_a = (a), *_b = (b);                                                        \
                if (!_a || !_b || strcmp(_a, _b) != 0) {                                                \
                        fprintf(stderr, "FAIL %s:%d [%s]: %s == \"%s\", expected \"%s\"\n", __FILE__,   \
                                __LINE__, check_case, #a, _a ? _a : "(null)", _b ? _b : "(null)");      \
                        check_failures++;                                                               \
                }                                                                                       \
        } while (0)

#define CHECK_EQ_U64(a, b)                                                                              \
        do {                                                                                            \
                uint64_t _a = (a), _b = (b);                                                            \
                if (_a != _b) {                                                                         \
                        fprintf(stderr, "FAIL %s:%d [%s]: %s == %" PRIu64 ", expected %" PRIu64 "\n",   \
                                __FILE__, __LINE__, check_case, #a, _a, _b);                            \
                        check_failures++;                                                               \
                }                                                                                       \
        } while (0)

static inline int check_finish(const char *name)
{
        if (check_failures)
                fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
        else
                printf("%s: all checks passed\n", name);
        return check_failures ? 1 : 0;
}
