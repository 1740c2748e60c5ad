/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bsg_json_string(): every input gives valid JSON; valid UTF-8 passes, invalid bytes do not. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "json.h"

struct json_case {
        const char *name;
        const char *in; /* NULL: absent */
        const char *out;
        int or_null;
};

static const struct json_case cases[] = {
        { "absent", NULL, "null", 0 },
        { "empty", "", "\"\"", 0 },
        { "empty-or-null", "", "null", 1 },
        { "plain", "rootfs-A", "\"rootfs-A\"", 0 },
        { "quote-backslash", "a\"b\\c", "\"a\\\"b\\\\c\"", 0 },
        { "controls", "a\nb\tc\x01\x1f\x7f", "\"a\\u000ab\\u0009c\\u0001\\u001f\\u007f\"", 0 },
        { "utf8-2", "caf\xc3\xa9", "\"caf\xc3\xa9\"", 0 },
        { "utf8-3", "\xe2\x82\xac", "\"\xe2\x82\xac\"", 0 },
        { "utf8-4", "\xf0\x9f\x92\xbe", "\"\xf0\x9f\x92\xbe\"", 0 },
        { "latin1-byte", "caf\xe9", "\"caf\\ufffd\"", 0 },
        { "lone-continuation", "\x80x", "\"\\ufffdx\"", 0 },
        { "overlong-slash", "\xc0\xaf", "\"\\ufffd\\ufffd\"", 0 },
        { "overlong-3", "\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"", 0 },
        { "surrogate", "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"", 0 },
        { "above-10ffff", "\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"", 0 },
        { "truncated-at-end", "ab\xe2\x82", "\"ab\\ufffd\\ufffd\"", 0 },
        { "ff-fe", "\xff\xfe", "\"\\ufffd\\ufffd\"", 0 },
};

static void json_one(const struct json_case *t)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        check_case = t->name;
        CHECK(f != NULL);
        if (!f)
                return;
        if (t->or_null)
                bsg_json_string_or_null(f, t->in);
        else
                bsg_json_string(f, t->in);
        fclose(f);
        CHECK_STREQ(buf, t->out);
        free(buf);
}

int main(void)
{
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                json_one(&cases[i]);
        return check_finish("json");
}
