/* libFuzzer target: skip_scan list parsing and formatting (helper/skiplist.c).
 * Input: the text of a skip_scan list (NUL bytes end it, as they would in the kernel's buffer).
 * Properties: format(parse(x)) is at most BSG_SKIPLIST_MAX bytes, sorted, duplicate-free, holds
 * only entries bsg_skiplist_entry_ok() accepts (paths, PARTUUID=), and is a fixed point: format(parse(format(parse(x))))
 * == format(parse(x)). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "skiplist.h"

#define CHECK(x)                                                                                        \
        do {                                                                                            \
                if (!(x))                                                                               \
                        __builtin_trap();                                                               \
        } while (0)

static char *roundtrip(const char *text, size_t *ret_rejected, size_t *ret_dropped, int *ret_r)
{
        char **paths = NULL, *list = NULL;
        int n = bsg_skiplist_parse(text, &paths);
        CHECK(n >= 0);
        for (int i = 0; i < n; i++)
                CHECK(paths[i] && paths[i][0] && !strchr(paths[i], ',') && !strchr(paths[i], '\n'));
        CHECK(paths[n] == NULL);
        int r = bsg_skiplist_format((const char *const *)paths, NULL, (size_t)n, &list, ret_rejected, ret_dropped);
        CHECK(r == 0 || r == -E2BIG);
        CHECK(list);
        bsg_strv_free(paths);
        *ret_r = r;
        return list;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size + 1);
        memcpy(text, data, size);
        text[size] = '\0';

        size_t rej1 = 0, drop1 = 0, rej2 = 0, drop2 = 0;
        int r1, r2;
        char *l1 = roundtrip(text, &rej1, &drop1, &r1);
        CHECK(strlen(l1) <= BSG_SKIPLIST_MAX);
        CHECK((r1 == -E2BIG) == (drop1 > 0));

        /* every entry valid, strictly increasing */
        char **p = NULL;
        int n = bsg_skiplist_parse(l1, &p);
        CHECK(n >= 0);
        for (int i = 0; i < n; i++) {
                CHECK(bsg_skiplist_entry_ok(p[i]));
                if (i > 0)
                        CHECK(strcmp(p[i - 1], p[i]) < 0);
        }
        bsg_strv_free(p);

        /* stable */
        char *l2 = roundtrip(l1, &rej2, &drop2, &r2);
        CHECK(strcmp(l1, l2) == 0);
        CHECK(rej2 == 0 && drop2 == 0 && r2 == 0);

        /* the path predicate on the whole input as one path */
        if (bsg_skiplist_path_ok(text)) {
                CHECK(text[0] == '/' && strlen(text) <= BSG_PATH_NAME_MAX);
                CHECK(!strpbrk(text, ", \t\n\r"));
        }
        free(text);
        free(l1);
        free(l2);
        return 0;
}
