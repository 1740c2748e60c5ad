/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "stack.h"
#include "util.h"

/* The 0-based parameter of each target type that names its data device. */
static const struct {
        const char *type;
        unsigned param;
} data_param[] = {
        {"linear", 0},
        {"integrity", 0},
        {"verity", 1},
        {"crypt", 3},
};

/* "MAJ:MIN" exactly (decimal, each fits 32 bits): 0, else -EINVAL. */
static int parse_devnum(const char *s, size_t len, dev_t *ret)
{
        uint64_t v[2] = {0, 0};
        size_t k = 0, digits = 0;

        for (size_t i = 0; i < len; i++) {
                if (s[i] == ':' && k == 0 && digits > 0) {
                        k = 1;
                        digits = 0;
                } else if (s[i] >= '0' && s[i] <= '9' && digits < 10) {
                        v[k] = v[k] * 10 + (uint64_t)(s[i] - '0');
                        digits++;
                } else
                        return -EINVAL;
        }
        if (k != 1 || digits == 0 || v[0] > UINT32_MAX || v[1] > UINT32_MAX || (v[0] == 0 && v[1] == 0))
                return -EINVAL;
        *ret = makedev((unsigned)v[0], (unsigned)v[1]);
        return 0;
}

/* The next blank-separated word of [*p, end): its start and length; false at the end. */
static bool next_word(const char **p, const char *end, const char **ret_word, size_t *ret_len)
{
        while (*p < end && (**p == ' ' || **p == '\t'))
                (*p)++;
        if (*p >= end)
                return false;
        *ret_word = *p;
        while (*p < end && **p != ' ' && **p != '\t')
                (*p)++;
        *ret_len = (size_t)(*p - *ret_word);
        return true;
}

/* The data device of one target line [line, end). */
static int line_data_device(const char *line, const char *end, dev_t *ret)
{
        const char *p = line, *w;
        size_t wl;

        if (!next_word(&p, end, &w, &wl))
                return -EINVAL;
        for (size_t t = 0; t < ELEMENTSOF(data_param); t++) {
                if (wl != strlen(data_param[t].type) || memcmp(w, data_param[t].type, wl) != 0)
                        continue;
                for (unsigned k = 0; k <= data_param[t].param; k++)
                        if (!next_word(&p, end, &w, &wl))
                                return -EINVAL;
                return parse_devnum(w, wl, ret);
        }
        return -EOPNOTSUPP;
}

int bsg_dm_table_data_device(const char *table, size_t len, dev_t *ret_devnum)
{
        const char *p = table, *end = table ? table + len : NULL;
        dev_t found = 0;
        size_t targets = 0;

        if (!table)
                return -EINVAL;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                const char *le = nl ? nl : end;
                const char *q = p;
                while (q < le && (*q == ' ' || *q == '\t'))
                        q++;
                if (q < le) {
                        dev_t d;
                        int r = line_data_device(q, le, &d);
                        if (r < 0)
                                return r;
                        if (targets++ > 0 && d != found)
                                return -EINVAL;
                        found = d;
                }
                p = nl ? nl + 1 : end;
        }
        if (targets == 0)
                return -EINVAL;
        *ret_devnum = found;
        return 0;
}
