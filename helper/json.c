/* SPDX-License-Identifier: GPL-2.0-or-later */
/* JSON strings for `status --json`; see json.h. Pure (writes to the FILE it is given). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"

/* the length of the valid UTF-8 sequence at P (RFC 3629: no overlong forms, no surrogates, nothing
 * above U+10FFFF), or 0 */
static size_t utf8_len(const unsigned char *p)
{
        size_t n;
        uint32_t cp;

        if (p[0] < 0x80)
                return 1;
        if (p[0] >= 0xc2 && p[0] <= 0xdf)
                n = 2, cp = p[0] & 0x1f;
        else if (p[0] >= 0xe0 && p[0] <= 0xef)
                n = 3, cp = p[0] & 0x0f;
        else if (p[0] >= 0xf0 && p[0] <= 0xf4)
                n = 4, cp = p[0] & 0x07;
        else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((p[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
                        return 0;
                cp = cp << 6 | (p[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

void bsg_json_string(FILE *f, const char *s)
{
        if (!s) {
                fputs("null", f);
                return;
        }
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *)s; *p;) {
                size_t n = utf8_len(p);
                if (n == 0) {
                        fputs("\\ufffd", f);
                        p++;
                } else if (n > 1) {
                        fwrite(p, 1, n, f);
                        p += n;
                } else {
                        if (*p == '"' || *p == '\\')
                                fprintf(f, "\\%c", *p);
                        else if (*p < 0x20 || *p == 0x7f)
                                fprintf(f, "\\u%04x", *p);
                        else
                                fputc(*p, f);
                        p++;
                }
        }
        fputc('"', f);
}

void bsg_json_string_or_null(FILE *f, const char *s)
{
        bsg_json_string(f, s && *s ? s : NULL);
}
