/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Small helpers shared by every module: cleanup attributes and string predicates. */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))

static inline void freep(void *p)
{
        free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

static inline bool streq(const char *a, const char *b)
{
        return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b)
{
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

/* BUF (SIZE bytes) := the strings up to a NULL, joined: snprintf("%s%s...") without its format
 * parser (about 1,000 instructions a call, and an event builds dozens of sysfs paths). The list ends
 * at the first NULL (the compiler checks there is one). Returns false if they do not fit (BUF then
 * holds what fits, terminated). */
__attribute__((sentinel)) static inline bool bsg_join(char *buf, size_t size, ...)
{
        va_list ap;
        size_t len = 0;
        bool fits = size > 0;
        const char *s;

        va_start(ap, size);
        while (fits && (s = va_arg(ap, const char *))) {
                size_t l = strlen(s);
                if (len + l >= size) {
                        l = size - 1 - len;
                        fits = false;
                }
                memcpy(buf + len, s, l);
                len += l;
        }
        va_end(ap);
        if (size > 0)
                buf[len] = '\0';
        return fits;
}

/* Whether LIST (entries separated by ',' or '\n'; NULL: empty) holds NAME's LEN bytes as a whole entry. */
static inline bool list_has(const char *list, const char *name, size_t len)
{
        for (const char *p = list; p && *p;) {
                size_t n = strcspn(p, ",\n");
                if (n == len && memcmp(p, name, len) == 0)
                        return true;
                p += n + (p[n] != '\0');
        }
        return false;
}

static inline bool isempty(const char *s)
{
        return !s || s[0] == '\0';
}

static inline bool endswith(const char *s, const char *suffix)
{
        size_t l = strlen(s), n = strlen(suffix);
        return l >= n && memcmp(s + l - n, suffix, n) == 0;
}

/* The value of hex digit C (either case), or -1. */
static inline int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Copies the line of TEXT (LEN bytes) at *POS into LINE (SIZE bytes; longer lines are cut, NULs
 * become blanks) and moves *POS past its newline. */
static inline void copy_line(const char *text, size_t len, size_t *pos, char *line, size_t size)
{
        size_t i = *pos, l = 0;

        while (i < len && text[i] != '\n') {
                if (l + 1 < size)
                        line[l++] = text[i] ? text[i] : ' ';
                i++;
        }
        if (i < len)
                i++;
        line[l] = '\0';
        *pos = i;
}

/* Undoes udev's encoding of a property value in place (blkid_encode_string(): "\xHH" for each byte
 * outside its safe set, "\x5c" for '\'): ID_PART_ENTRY_NAME and ID_FS_LABEL_ENC come encoded, the
 * kernel's PARTNAME raw, and what the helper prints is encoded once. A "\x00" stays as it is. */
static inline void bsg_udev_decode(char *s)
{
        char *o = s;

        if (!s)
                return;
        while (*s) {
                int hi, lo;
                if (s[0] == '\\' && s[1] == 'x' && (hi = hexval(s[2])) >= 0 && (lo = hexval(s[3])) >= 0 &&
                    (hi | lo) != 0) {
                        *o++ = (char)(hi << 4 | lo);
                        s += 4;
                } else
                        *o++ = *s++;
        }
        *o = '\0';
}

/* Moves a pointer out of a cleanup variable: hand ownership out explicitly. */
#define TAKE_PTR(p)                                                                                     \
        ({                                                                                              \
                typeof(p) _p = (p);                                                                     \
                (p) = NULL;                                                                             \
                _p;                                                                                     \
        })
#define TAKE_FD(fd)                                                                                     \
        ({                                                                                              \
                int _fd = (fd);                                                                         \
                (fd) = -1;                                                                              \
                _fd;                                                                                    \
        })
