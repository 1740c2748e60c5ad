/* SPDX-License-Identifier: GPL-2.0-or-later */
/* helper/util.h: undoing udev's property encoding (issue 18 case 9). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "util.h"

struct decode_case {
        const char *in, *want;
};

static void decode_one(const struct decode_case *t)
{
        char buf[256];

        check_case = t->in;
        snprintf(buf, sizeof(buf), "%s", t->in);
        bsg_udev_decode(buf);
        CHECK_STREQ(buf, t->want);
}

int main(void)
{
        static const struct decode_case cases[] = {
                {"rootfs-A", "rootfs-A"},
                {"my\\x20root-A", "my root-A"},             /* blkid_encode_string() of "my root-A" */
                {"a\\x5cx20b", "a\\x20b"},                  /* a literal "\x20" in the label */
                {"\\x2f\\x2e\\x2e", "/.."},                 /* decoded: the slot code checks and encodes */
                {"caf\\xc3\\xa9", "caf\xc3\xa9"},           /* UTF-8 stays as udev passes it */
                {"\\x00end", "\\x00end"},                   /* never a NUL */
                {"\\x2", "\\x2"},                           /* cut short */
                {"\\xzz", "\\xzz"},                         /* not hex */
                {"\\X20", "\\X20"},                         /* udev writes lowercase x */
                {"tail\\", "tail\\"},
                {"", ""},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                decode_one(&cases[i]);
        bsg_udev_decode(NULL); /* no crash */
        return check_finish("test-util");
}
