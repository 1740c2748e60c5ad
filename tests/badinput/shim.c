/* LD_PRELOAD fault injector for the bad-input tests (tests/badinput/README in cases.tsv terms).
 *
 * Every behaviour is off unless its environment variable is set, so the shim is harmless when
 * preloaded without configuration. Paths are compared literally with the path the program passes.
 *   BSG_SHIM_EIO_PATH=P, BSG_SHIM_EIO_OFFSET=N  read()/pread() on a descriptor opened from P that
 *                                              touches byte N or beyond fails with EIO
 *   BSG_SHIM_BLOCK_PATH=P                      read()/pread() on a descriptor opened from P sleeps
 *                                              BSG_SHIM_BLOCK_SECONDS (default 600), ignoring
 *                                              signals, like a read stuck in the block layer
 *   BSG_SHIM_SHORT_PATH=P, BSG_SHIM_SHORT_OFFSET=N  read()/pread() on a descriptor opened from P
 *                                              returns only the bytes before N, then 0 (end of
 *                                              device): the device vanished after open, its
 *                                              capacity dropped to 0 as on hot-unplug
 *   BSG_SHIM_FACE_PATH=P, BSG_SHIM_FACE_FILE=F  read()/pread() on a descriptor opened from P return
 *                                              the bytes of F at the same offset: a device that
 *                                              shows this process other bytes than the kernel's
 *                                              reads get (preadv2() is not wrapped: its RWF_NOWAIT
 *                                              read is the page cache the kernel filled, no device
 *                                              read the device could answer differently)
 *   BSG_SHIM_NOWAIT_EAGAIN_PATH=P               preadv2() with RWF_NOWAIT on a descriptor opened from
 *                                              P fails with EAGAIN: the page the kernel read was
 *                                              evicted (any other preadv2() is passed through)
 *   BSG_SHIM_VANISH_PATH=P                     stat() works, open() fails with ENOENT (the node
 *                                              vanished between enumeration and open)
 *   BSG_SHIM_SWAP_LINK=L, BSG_SHIM_SWAP_TARGET=T  after the first stat/lstat/realpath/readlink/
 *                                              access of symlink L, L is atomically re-pointed at T
 *   BSG_SHIM_REDIRECT=FROM=TO                  open()/fopen()/stat() of FROM use TO instead
 *   BSG_SHIM_REDIRECT2=FROM=TO                 a second one
 *   BSG_SHIM_EROFS_PATH=P                      opening P for writing fails with EROFS
 *   BSG_SHIM_LOG=F                             one line per fault injected, appended to F
 * The test runner checks BSG_SHIM_LOG to prove the fault was actually reached. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_FD 4096
enum { FD_EIO = 1, FD_BLOCK = 2, FD_SHORT = 3, FD_FACE = 4 };
static unsigned char fd_kind[MAX_FD];
static unsigned char fd_nowait_eagain[MAX_FD];
static int swapped;

static void shim_log(const char *what, const char *path)
{
        const char *f = getenv("BSG_SHIM_LOG");
        if (!f)
                return;
        char line[PATH_MAX + 64];
        int n = snprintf(line, sizeof(line), "%s %s\n", what, path ? path : "-");
        if (n < 0)
                return;
        if ((size_t)n >= sizeof(line))
                n = sizeof(line) - 1;
        /* raw syscalls of libc (not our wrappers) so logging cannot recurse */
        static int (*real_open)(const char *, int, ...);
        if (!real_open)
                real_open = dlsym(RTLD_NEXT, "open");
        int fd = real_open(f, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                return;
        ssize_t (*real_write)(int, const void *, size_t) = dlsym(RTLD_NEXT, "write");
        (void)!real_write(fd, line, n);
        close(fd);
}

static int env_is(const char *var, const char *path)
{
        const char *v = getenv(var);
        return v && path && strcmp(v, path) == 0;
}

static const char *redirect(const char *path)
{
        static const char *const vars[] = {"BSG_SHIM_REDIRECT", "BSG_SHIM_REDIRECT2"};
        for (size_t i = 0; path && i < sizeof(vars) / sizeof(vars[0]); i++) {
                const char *v = getenv(vars[i]);
                const char *eq = v ? strchr(v, '=') : NULL;
                if (eq && strlen(path) == (size_t)(eq - v) && strncmp(v, path, eq - v) == 0)
                        return eq + 1;
        }
        return path;
}

static void maybe_swap(const char *path)
{
        if (swapped || !env_is("BSG_SHIM_SWAP_LINK", path))
                return;
        const char *target = getenv("BSG_SHIM_SWAP_TARGET");
        if (!target)
                return;
        swapped = 1;
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof(tmp), "%s.swap", path);
        unlink(tmp);
        if (symlink(target, tmp) == 0 && rename(tmp, path) == 0)
                shim_log("swapped", path);
}

/* open() side: decide what to do with a path before and after the real call */
static int before_open(const char *path, int flags)
{
        if (env_is("BSG_SHIM_VANISH_PATH", path)) {
                shim_log("vanished", path);
                errno = ENOENT;
                return -1;
        }
        if ((flags & O_ACCMODE) != O_RDONLY && env_is("BSG_SHIM_EROFS_PATH", path)) {
                shim_log("erofs", path);
                errno = EROFS;
                return -1;
        }
        return 0;
}

static int after_open(const char *path, int fd)
{
        if (fd >= 0 && fd < MAX_FD) {
                fd_kind[fd] = 0;
                fd_nowait_eagain[fd] = env_is("BSG_SHIM_NOWAIT_EAGAIN_PATH", path) ? 1 : 0;
                if (env_is("BSG_SHIM_EIO_PATH", path))
                        fd_kind[fd] = FD_EIO;
                else if (env_is("BSG_SHIM_BLOCK_PATH", path))
                        fd_kind[fd] = FD_BLOCK;
                else if (env_is("BSG_SHIM_SHORT_PATH", path))
                        fd_kind[fd] = FD_SHORT;
                else if (env_is("BSG_SHIM_FACE_PATH", path))
                        fd_kind[fd] = FD_FACE;
        }
        return fd;
}

#define REAL(ret, name, ...)                                                                      \
        static ret (*real_##name)(__VA_ARGS__);                                                   \
        if (!real_##name)                                                                         \
                real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name)

#define OPEN_WRAPPER(name)                                                                        \
        int name(const char *path, int flags, ...)                                                \
        {                                                                                         \
                REAL(int, name, const char *, int, ...);                                          \
                mode_t mode = 0;                                                                  \
                if (flags & (O_CREAT | O_TMPFILE)) {                                              \
                        va_list ap;                                                               \
                        va_start(ap, flags);                                                      \
                        mode = va_arg(ap, mode_t);                                                \
                        va_end(ap);                                                               \
                }                                                                                 \
                if (before_open(path, flags) < 0)                                                 \
                        return -1;                                                                \
                return after_open(path, real_##name(redirect(path), flags, mode));                \
        }
OPEN_WRAPPER(open)
OPEN_WRAPPER(open64)

#define OPENAT_WRAPPER(name)                                                                      \
        int name(int dirfd, const char *path, int flags, ...)                                     \
        {                                                                                         \
                REAL(int, name, int, const char *, int, ...);                                     \
                mode_t mode = 0;                                                                  \
                if (flags & (O_CREAT | O_TMPFILE)) {                                              \
                        va_list ap;                                                               \
                        va_start(ap, flags);                                                      \
                        mode = va_arg(ap, mode_t);                                                \
                        va_end(ap);                                                               \
                }                                                                                 \
                if (before_open(path, flags) < 0)                                                 \
                        return -1;                                                                \
                return after_open(path, real_##name(dirfd, redirect(path), flags, mode));         \
        }
OPENAT_WRAPPER(openat)
OPENAT_WRAPPER(openat64)

/* _FORTIFY_SOURCE builds call these */
int __open_2(const char *path, int flags)
{
        return open(path, flags);
}
int __open64_2(const char *path, int flags)
{
        return open64(path, flags);
}
int __openat_2(int dirfd, const char *path, int flags)
{
        return openat(dirfd, path, flags);
}
int __openat64_2(int dirfd, const char *path, int flags)
{
        return openat64(dirfd, path, flags);
}

static FILE *fopen_common(FILE *(*real)(const char *, const char *), const char *path,
                          const char *mode)
{
        int writing = strchr(mode, 'w') || strchr(mode, 'a') || strchr(mode, '+');
        if (before_open(path, writing ? O_WRONLY : O_RDONLY) < 0)
                return NULL;
        FILE *f = real(redirect(path), mode);
        if (f)
                after_open(path, fileno(f));
        return f;
}
FILE *fopen(const char *path, const char *mode)
{
        REAL(FILE *, fopen, const char *, const char *);
        return fopen_common(real_fopen, path, mode);
}
FILE *fopen64(const char *path, const char *mode)
{
        REAL(FILE *, fopen64, const char *, const char *);
        return fopen_common(real_fopen64, path, mode);
}

int close(int fd)
{
        REAL(int, close, int);
        if (fd >= 0 && fd < MAX_FD)
                fd_kind[fd] = fd_nowait_eagain[fd] = 0;
        return real_close(fd);
}

static void block_forever(int fd)
{
        const char *s = getenv("BSG_SHIM_BLOCK_SECONDS");
        long secs = s ? atol(s) : 600;
        shim_log("blocking", getenv("BSG_SHIM_BLOCK_PATH"));
        struct timespec end, now;
        clock_gettime(CLOCK_MONOTONIC, &end);
        end.tv_sec += secs;
        do {
                struct timespec d = {1, 0};
                nanosleep(&d, NULL); /* EINTR ignored: a read stuck in the block layer */
                clock_gettime(CLOCK_MONOTONIC, &now);
        } while (now.tv_sec < end.tv_sec);
}

/* FD_SHORT: the length a read at @off may return (the device ends at BSG_SHIM_SHORT_OFFSET) */
static size_t clamp(int fd, off_t off, size_t len)
{
        if (fd < 0 || fd >= MAX_FD || fd_kind[fd] != FD_SHORT)
                return len;
        const char *o = getenv("BSG_SHIM_SHORT_OFFSET");
        off_t end = o ? atoll(o) : 0;
        if (off + (off_t)len <= end)
                return len;
        shim_log("short", getenv("BSG_SHIM_SHORT_PATH"));
        return off >= end ? 0 : (size_t)(end - off);
}

/* FD_FACE: the bytes of BSG_SHIM_FACE_FILE at OFF instead of the device's. Returns -2 for another fd. */
static ssize_t other_face(int fd, void *buf, size_t len, off_t off)
{
        if (fd < 0 || fd >= MAX_FD || fd_kind[fd] != FD_FACE)
                return -2;
        REAL(int, open, const char *, int, ...);
        REAL(ssize_t, pread, int, void *, size_t, off_t);
        REAL(int, close, int);
        const char *f = getenv("BSG_SHIM_FACE_FILE");
        int ffd = f ? real_open(f, O_RDONLY | O_CLOEXEC) : -1;
        if (ffd < 0)
                return -1;
        ssize_t n = real_pread(ffd, buf, len, off);
        real_close(ffd);
        shim_log("face", getenv("BSG_SHIM_FACE_PATH"));
        return n;
}

static int fault(int fd, off_t off, size_t len)
{
        if (fd < 0 || fd >= MAX_FD || !fd_kind[fd] || fd_kind[fd] == FD_SHORT || fd_kind[fd] == FD_FACE)
                return 0;
        if (fd_kind[fd] == FD_BLOCK) {
                block_forever(fd);
                errno = EIO;
                return -1;
        }
        const char *o = getenv("BSG_SHIM_EIO_OFFSET");
        off_t at = o ? atoll(o) : 0;
        if (off + (off_t)len > at) {
                shim_log("eio", getenv("BSG_SHIM_EIO_PATH"));
                errno = EIO;
                return -1;
        }
        return 0;
}

#define PREADV2_WRAPPER(name)                                                                     \
        ssize_t name(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)           \
        {                                                                                         \
                REAL(ssize_t, name, int, const struct iovec *, int, off_t, int);                  \
                if (fd >= 0 && fd < MAX_FD && fd_nowait_eagain[fd] && (flags & RWF_NOWAIT)) {     \
                        shim_log("eagain", getenv("BSG_SHIM_NOWAIT_EAGAIN_PATH"));                \
                        errno = EAGAIN;                                                           \
                        return -1;                                                                \
                }                                                                                 \
                return real_##name(fd, iov, iovcnt, off, flags);                                  \
        }
PREADV2_WRAPPER(preadv2)
PREADV2_WRAPPER(preadv64v2)

ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
        REAL(ssize_t, pread, int, void *, size_t, off_t);
        ssize_t n = other_face(fd, buf, len, off);
        if (n != -2)
                return n;
        if (fault(fd, off, len) < 0)
                return -1;
        return real_pread(fd, buf, clamp(fd, off, len), off);
}
ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
        REAL(ssize_t, pread64, int, void *, size_t, off_t);
        ssize_t n = other_face(fd, buf, len, off);
        if (n != -2)
                return n;
        if (fault(fd, off, len) < 0)
                return -1;
        return real_pread64(fd, buf, clamp(fd, off, len), off);
}
ssize_t read(int fd, void *buf, size_t len)
{
        REAL(ssize_t, read, int, void *, size_t);
        if (fd >= 0 && fd < MAX_FD && fd_kind[fd] == FD_FACE) {
                off_t off = lseek(fd, 0, SEEK_CUR);
                ssize_t n = other_face(fd, buf, len, off < 0 ? 0 : off);
                if (n > 0)
                        (void)lseek(fd, n, SEEK_CUR);
                return n;
        }
        if (fd >= 0 && fd < MAX_FD && fd_kind[fd]) {
                off_t off = lseek(fd, 0, SEEK_CUR);
                if (fault(fd, off < 0 ? 0 : off, len) < 0)
                        return -1;
                len = clamp(fd, off < 0 ? 0 : off, len);
        }
        return real_read(fd, buf, len);
}

/* the checks a program makes before open(): each may trigger the symlink swap */
#define STAT_WRAPPER(name, type)                                                                  \
        int name(const char *path, type *st)                                                      \
        {                                                                                         \
                REAL(int, name, const char *, type *);                                            \
                int r = real_##name(redirect(path), st);                                          \
                maybe_swap(path);                                                                 \
                return r;                                                                         \
        }
STAT_WRAPPER(stat, struct stat)
STAT_WRAPPER(stat64, struct stat64)
STAT_WRAPPER(lstat, struct stat)
STAT_WRAPPER(lstat64, struct stat64)

#define FSTATAT_WRAPPER(name, type)                                                               \
        int name(int dirfd, const char *path, type *st, int flags)                                \
        {                                                                                         \
                REAL(int, name, int, const char *, type *, int);                                  \
                int r = real_##name(dirfd, redirect(path), st, flags);                            \
                maybe_swap(path);                                                                 \
                return r;                                                                         \
        }
FSTATAT_WRAPPER(fstatat, struct stat)
FSTATAT_WRAPPER(fstatat64, struct stat64)

int access(const char *path, int mode)
{
        REAL(int, access, const char *, int);
        int r = real_access(redirect(path), mode);
        maybe_swap(path);
        return r;
}

char *realpath(const char *path, char *resolved)
{
        REAL(char *, realpath, const char *, char *);
        char *r = real_realpath(path, resolved);
        maybe_swap(path);
        return r;
}

ssize_t readlink(const char *path, char *buf, size_t len)
{
        REAL(ssize_t, readlink, const char *, char *, size_t);
        ssize_t r = real_readlink(path, buf, len);
        maybe_swap(path);
        return r;
}
