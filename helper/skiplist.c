/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "skiplist.h"
#include "util.h"

bool bsg_skiplist_path_ok(const char *path)
{
        size_t len;

        if (!path || path[0] != '/')
                return false;
        len = strlen(path);
        if (len > BSG_PATH_NAME_MAX)
                return false;
        /* '*' ends a whole-disk entry: the kernel refuses one anywhere else, and takes one at the end
         * for the disk's partitions too */
        for (const unsigned char *p = (const unsigned char *)path; *p; p++)
                if (*p == ',' || *p <= ' ' || *p == 0x7f || *p == '*')
                        return false;
        return true;
}

bool bsg_skiplist_entry_ok(const char *entry)
{
        if (entry && strncmp(entry, "PARTUUID=", 9) == 0) {
                size_t l = strlen(entry + 9);
                return l > 0 && l <= 36 && strspn(entry + 9, "0123456789abcdefABCDEF-") == l;
        }
        size_t l = entry ? strlen(entry) : 0;
        if (l > 1 && entry[l - 1] == '*') {
                char path[BSG_PATH_NAME_MAX + 1];
                if (l - 1 > BSG_PATH_NAME_MAX)
                        return false;
                memcpy(path, entry, l - 1);
                path[l - 1] = '\0';
                return bsg_skiplist_path_ok(path);
        }
        return bsg_skiplist_path_ok(entry);
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int bsg_skiplist_format(const char *const *paths, const bool *keep, size_t n, char **ret_list, size_t *ret_rejected,
                        size_t *ret_dropped)
{
        _cleanup_free_ const char **sorted = calloc(2 * n + 1, sizeof(char *));
        _cleanup_free_ char *out = malloc(BSG_SKIPLIST_MAX + 1);
        size_t m = 0, rejected = 0, dropped = 0, len = 0, chosen = 0;

        if (!sorted || !out)
                return -ENOMEM;
        /* pass 0: the entries to keep, pass 1: the others; each sorted, taken while they fit */
        const char **taken = sorted + n;
        for (int pass = 0; pass < 2; pass++) {
                size_t start = m;
                for (size_t i = 0; i < n; i++) {
                        if ((keep ? keep[i] : true) != (pass == 0))
                                continue;
                        if (bsg_skiplist_entry_ok(paths[i]))
                                sorted[m++] = paths[i];
                        else
                                rejected++;
                }
                qsort(sorted + start, m - start, sizeof(char *), cmp_str);
                size_t kept = chosen; /* taken[0..kept) is pass 0's, sorted */
                for (size_t i = start; i < m; i++) {
                        if (i > start && streq(sorted[i], sorted[i - 1]))
                                continue;
                        if (pass == 1 && kept && bsearch(&sorted[i], taken, kept, sizeof(char *), cmp_str))
                                continue; /* a name in both classes: once */
                        size_t l = strlen(sorted[i]) + (len > 0);
                        if (len + l > BSG_SKIPLIST_MAX) {
                                dropped++;
                                continue;
                        }
                        len += l;
                        taken[chosen++] = sorted[i];
                }
        }
        /* the list itself is sorted as a whole */
        qsort(taken, chosen, sizeof(char *), cmp_str);
        out[0] = '\0';
        len = 0;
        for (size_t i = 0; i < chosen; i++) {
                if (i > 0 && streq(taken[i], taken[i - 1]))
                        continue;
                if (len > 0)
                        out[len++] = ',';
                memcpy(out + len, taken[i], strlen(taken[i]) + 1);
                len += strlen(taken[i]);
        }
        if (ret_rejected)
                *ret_rejected = rejected;
        if (ret_dropped)
                *ret_dropped = dropped;
        *ret_list = TAKE_PTR(out);
        return dropped > 0 ? -E2BIG : 0;
}

void bsg_strv_free(char **v)
{
        if (!v)
                return;
        for (char **p = v; *p; p++)
                free(*p);
        free(v);
}

int bsg_skiplist_parse(const char *list, char ***ret_paths)
{
        size_t n = 0, cap = 1;
        char **v;

        for (const char *p = list; *p; p++)
                if (*p == ',' || *p == '\n')
                        cap++;
        v = calloc(cap + 1, sizeof(char *));
        if (!v)
                return -ENOMEM;
        for (const char *p = list; *p;) {
                size_t l = strcspn(p, ",\n");
                if (l > 0) {
                        v[n] = strndup(p, l);
                        if (!v[n]) {
                                bsg_strv_free(v);
                                return -ENOMEM;
                        }
                        n++;
                }
                p += l;
                if (*p)
                        p++;
        }
        *ret_paths = v;
        return (int)n;
}
