/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Small helpers shared by every module: cleanup attributes and string predicates. */
#pragma once

#include <errno.h>
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

static inline bool isempty(const char *s)
{
        return !s || s[0] == '\0';
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
