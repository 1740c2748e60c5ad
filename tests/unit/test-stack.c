/* SPDX-License-Identifier: GPL-2.0-or-later */
/* helper/stack.c: the device a device-mapper table stores its data on (issue 18 case 10). */
#include <errno.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "check.h"
#include "stack.h"

struct table_case {
        const char *name, *table;
        int ret;
        unsigned maj, min;
};

static void table_one(const struct table_case *t)
{
        dev_t d = makedev(7, 7);

        check_case = t->name;
        int r = bsg_dm_table_data_device(t->table, t->table ? strlen(t->table) : 0, &d);
        CHECK(r == t->ret);
        if (t->ret == 0)
                CHECK(major(d) == t->maj && minor(d) == t->min);
        else
                CHECK(major(d) == 7 && minor(d) == 7); /* untouched */
}

int main(void)
{
        static const struct table_case cases[] = {
                /* what 6.1 reports for the QEMU case's rootA: data vda2 (254:2), hash tree vdb (254:16) */
                {"verity", "verity 1 254:2 254:16 4096 4096 32768 0 sha256 91de 5fda\n", 0, 254, 2},
                {"verity-hash-appended", "verity 1 8:3 8:3 4096 4096 100 101 sha256 00 -\n", 0, 8, 3},
                {"linear-partition", "linear 254:6 0\n", 0, 254, 6},
                {"linear-whole-disk", "linear 253:0 2048\n", 0, 253, 0},
                {"linear-no-newline", "linear 8:16 0", 0, 8, 16},
                {"crypt", "crypt aes-xts-plain64 :64:logon:cryptsetup:x 0 259:3 32768\n", 0, 259, 3},
                {"integrity", "integrity 8:5 0 32 J 0\n", 0, 8, 5},
                {"two-linear-one-device", "linear 8:1 0\nlinear 8:1 4096\n", 0, 8, 1},
                {"two-linear-two-devices", "linear 8:1 0\nlinear 8:17 0\n", -EINVAL},
                {"striped-unknown", "striped 2 128 8:1 0 8:17 0\n", -EOPNOTSUPP},
                {"mirror-unknown", "mirror core 1 1024 2 8:1 0 8:17 0 1 handle_errors\n", -EOPNOTSUPP},
                {"linear-then-unknown", "linear 8:1 0\nzero\n", -EOPNOTSUPP},
                {"empty", "", -EINVAL},
                {"blank-lines", "\n\n", -EINVAL},
                {"null", NULL, -EINVAL},
                {"verity-short", "verity 1\n", -EINVAL},
                {"device-by-name", "linear /dev/sda1 0\n", -EINVAL},
                {"device-zero", "linear 0:0 0\n", -EINVAL},
                {"device-no-minor", "linear 8: 0\n", -EINVAL},
                {"device-two-colons", "linear 8:1:2 0\n", -EINVAL},
                {"device-too-long", "linear 99999999999:1 0\n", -EINVAL},
                {"type-prefix", "linearx 8:1 0\n", -EOPNOTSUPP},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                table_one(&cases[i]);
        return check_finish("stack");
}
