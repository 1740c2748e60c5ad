/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Skip-list formatting: path checks, sorting, deduplication, the 4095-byte limit, parsing back. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "skiplist.h"

struct path_case {
        const char *path;
        bool ok;
};

static void path_one(const struct path_case *t)
{
        check_case = t->path;
        CHECK(bsg_skiplist_path_ok(t->path) == t->ok);
}

struct format_case {
        const char *name;
        const char *paths[8];
        size_t n;
        const char *want;
        size_t rejected;
};

static void format_one(const struct format_case *t)
{
        char *list = NULL;
        size_t rejected = 99, dropped = 99;

        check_case = t->name;
        CHECK(bsg_skiplist_format(t->paths, NULL, t->n, &list, &rejected, &dropped) == 0);
        CHECK_STREQ(list, t->want);
        CHECK(rejected == t->rejected);
        CHECK(dropped == 0);
        free(list);
}

int main(void)
{
        static char longest[BSG_PATH_NAME_MAX + 2];
        memset(longest, 'x', sizeof(longest) - 1);
        longest[0] = '/';
        longest[BSG_PATH_NAME_MAX] = '\0'; /* exactly BSG_PATH_NAME_MAX bytes */
        static char too_long[BSG_PATH_NAME_MAX + 2];
        memset(too_long, 'x', sizeof(too_long) - 1);
        too_long[0] = '/';

        const struct path_case paths[] = {
                {"/dev/sda5", true},
                {"/dev/disk/by-partlabel/rootfs-B", true},
                {"/dev/mapper/a,b", false},
                {"/dev/with space", false},
                {"/dev/tab\there", false},
                {"/dev/nl\n", false},
                {"relative", false},
                {"", false},
                {longest, true},
                {too_long, false},
                /* the kernel refuses a '*' other than at the end of an entry: never in a path */
                {"/dev/mapper/a*b", false},
                {"/dev/sdb*", false},
        };
        for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
                path_one(&paths[i]);
        check_case = "null";
        CHECK(!bsg_skiplist_path_ok(NULL));

        const struct format_case formats[] = {
                {"empty", {0}, 0, "", 0},
                {"one", {"/dev/sda5"}, 1, "/dev/sda5", 0},
                {"sorted", {"/dev/sdb3", "/dev/sda7", "/dev/sda5"}, 3, "/dev/sda5,/dev/sda7,/dev/sdb3", 0},
                {"dedup", {"/dev/sda5", "/dev/sda5", "/dev/sda4"}, 3, "/dev/sda4,/dev/sda5", 0},
                {"rejects", {"/dev/ok", "/dev/a,b", "/dev/a b", "rel"}, 4, "/dev/ok", 3},
                /* a starred whole disk is an entry; '*' anywhere else, or alone, is not */
                {"starred", {"/dev/sdb*", "/dev/sda5", "/dev/a*b", "/dev/x**", "*"}, 5, "/dev/sda5,/dev/sdb*", 3},
        };
        for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
                format_one(&formats[i]);

        /* over 4095 bytes: a sorted prefix that fits, -E2BIG, and the count left out */
        check_case = "too-long";
        {
                static char names[400][32];
                const char *p[400];
                for (int i = 0; i < 400; i++) {
                        snprintf(names[i], sizeof(names[i]), "/dev/disk/by-id/dev-%04d", i);
                        p[i] = names[i];
                }
                char *list = NULL;
                size_t rejected = 0, dropped = 0;
                CHECK(bsg_skiplist_format(p, NULL, 400, &list, &rejected, &dropped) == -E2BIG);
                CHECK(list && strlen(list) <= BSG_SKIPLIST_MAX);
                CHECK(dropped > 0 && rejected == 0);
                CHECK(list && strncmp(list, "/dev/disk/by-id/dev-0000,/dev/disk/by-id/dev-0001,", 50) == 0);
                /* entries are whole: the list ends in a complete name */
                CHECK(list && list[strlen(list) - 1] >= '0' && list[strlen(list) - 1] <= '9');
                char **v = NULL;
                int n = bsg_skiplist_parse(list, &v);
                CHECK(n > 0 && (size_t)n + dropped == 400);
                bsg_strv_free(v);
                free(list);
        }

        check_case = "parse";
        {
                char **v = NULL;
                CHECK(bsg_skiplist_parse("/dev/a,,/dev/b\n", &v) == 2);
                CHECK_STREQ(v[0], "/dev/a");
                CHECK_STREQ(v[1], "/dev/b");
                CHECK(v[2] == NULL);
                bsg_strv_free(v);
                CHECK(bsg_skiplist_parse("", &v) == 0);
                CHECK(v[0] == NULL);
                bsg_strv_free(v);
        }
        return check_finish("test-skiplist");
}
