/* SPDX-License-Identifier: GPL-2.0-or-later */
/* LD_PRELOAD allocation-failure injector for tests/host/test-enomem.sh (plain builds only: ASan and
 * valgrind bring allocators of their own).
 *   BSG_ENOMEM_AT=N   the Nth call of malloc(), calloc() or realloc() in the process fails with
 *                     ENOMEM, once; libc's own calls count too, and a child continues its parent's
 *                     count (so parent and child may each fail their Nth)
 *   BSG_ENOMEM_LOG=F  "enomem N" appended to F when it fails: the test stops at the first N that
 *                     no process reached
 * Everything here runs inside malloc: no allocation, no dlsym, no stdio; the log line is written
 * with raw system calls. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
static long enomem_at = -1;
static unsigned long calls;

static void log_failure(void)
{
        const char *f = getenv("BSG_ENOMEM_LOG");
        char line[40] = "enomem ", digits[24];
        size_t l = strlen(line);
        int k = 0;

        if (!f)
                return;
        for (unsigned long n = calls; n && k < (int)sizeof(digits); n /= 10)
                digits[k++] = (char)('0' + n % 10);
        while (k > 0)
                line[l++] = digits[--k];
        line[l++] = '\n';
        long fd = syscall(SYS_openat, AT_FDCWD, f, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
                (void)!syscall(SYS_write, fd, line, l);
                syscall(SYS_close, fd);
        }
}

static int fails(void)
{
        if (enomem_at < 0) {
                if (!environ)
                        return 0; /* too early to know: the loader's own allocations */
                const char *v = getenv("BSG_ENOMEM_AT");
                enomem_at = v ? atol(v) : 0;
        }
        if (enomem_at <= 0 || ++calls != (unsigned long)enomem_at)
                return 0;
        log_failure();
        errno = ENOMEM;
        return 1;
}

void *malloc(size_t size)
{
        return fails() ? NULL : __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
        return fails() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
        return fails() ? NULL : __libc_realloc(p, size);
}
