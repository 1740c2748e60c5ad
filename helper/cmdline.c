/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "util.h"

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool key_eq(const char *a, size_t alen, const char *b)
{
        size_t blen = strlen(b);

        if (alen != blen)
                return false;
        for (size_t i = 0; i < alen; i++) {
                char x = a[i] == '-' ? '_' : a[i], y = b[i] == '-' ? '_' : b[i];
                if (x != y)
                        return false;
        }
        return true;
}

int bsg_cmdline_get(const char *cmdline, size_t len, const char *key, char **ret_value)
{
        _cleanup_free_ char *found = NULL, *word = malloc(len + 1);
        bool have = false;
        size_t i = 0;

        if (!word)
                return -ENOMEM;
        while (i < len) {
                size_t w = 0;
                bool quoted = false;

                while (i < len && (is_space(cmdline[i]) || cmdline[i] == '\0'))
                        i++;
                if (i >= len)
                        break;
                /* one word, quotes removed */
                while (i < len && cmdline[i] != '\0' && (quoted || !is_space(cmdline[i]))) {
                        if (cmdline[i] == '"')
                                quoted = !quoted;
                        else
                                word[w++] = cmdline[i];
                        i++;
                }
                word[w] = '\0';
                const char *eq = strchr(word, '=');
                size_t klen = eq ? (size_t)(eq - word) : w;
                if (!key_eq(word, klen, key))
                        continue;
                char *v = strdup(eq ? eq + 1 : "");
                if (!v)
                        return -ENOMEM;
                free(found);
                found = v;
                have = true;
        }
        if (!have)
                return -ENOENT;
        *ret_value = TAKE_PTR(found);
        return 0;
}
