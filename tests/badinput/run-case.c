/* Runs one case of the bad-input catalogue (cases.tsv) against the helper.
 *
 *   run-case CASES.TSV NAME
 * Environment: BSG_HELPER (the helper binary), BSG_HELPER_WRAPPER (optional prefix, e.g. valgrind),
 * BSG_BADINPUT_IMAGES (directory of NAME.img files), BSG_BADINPUT_SHIM (the fault-injection
 * preload), TMPDIR (scratch; each case gets its own directory, removed when the case passes).
 *
 * A case row has 7 tab-separated columns:
 *   name  setup  args  status  stderr  stdout  seconds
 * setup   space-separated directives that build the input (see README.md in this directory)
 * args    the helper's arguments; $DEV is the device path, $T the case's scratch directory
 * status  expected exit status
 * stderr  substring expected on stderr ("-": no check); $DEV and $T are substituted
 * stdout  space-separated checks of the KEY=VALUE lines: K=V (line present), K=* (key present),
 *         !K=V (line absent), !K=* (key absent); "-": no check
 * seconds the helper must have exited within this many seconds (wall clock)
 * In setup, args and expectations, \s is a space, \t a tab, \n a newline, \\ a backslash and \xHH
 * a byte. Every case also fails on a sanitizer or valgrind report and on a helper killed by a
 * signal. Exit status: 0 pass, 1 fail. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 64
#define MAX_RACE 8
#define SB_OFFSET 65536
#define SB_SIZE 4096

static char tdir[4096];
static char dev[8192];
static char shimlog[4200];
static bool failed;
/* live until exit; external so that stores to them are kept (LSan/memcheck see them reachable) */
char *table, *setup_text, *wrapper_copy, *args;


static void fail(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        fputs("FAIL: ", stdout);
        vprintf(fmt, ap);
        fputc('\n', stdout);
        va_end(ap);
        failed = true;
}

static void die(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        fputs("ERROR (runner): ", stdout);
        vprintf(fmt, ap);
        fputc('\n', stdout);
        va_end(ap);
        exit(1);
}

/* decodes the escapes into a new string; *ret_len gets its length (it may contain NULs) */
static char *unescape(const char *s, size_t *ret_len)
{
        char *out = malloc(strlen(s) + 1), *o = out;
        if (!out)
                die("out of memory");
        for (; *s; s++) {
                if (*s != '\\' || !s[1]) {
                        *o++ = *s;
                        continue;
                }
                s++;
                switch (*s) {
                case 's': *o++ = ' '; break;
                case 't': *o++ = '\t'; break;
                case 'n': *o++ = '\n'; break;
                case 'r': *o++ = '\r'; break;
                case 'x': {
                        char hex[3] = {s[1], s[1] ? s[2] : 0, 0};
                        *o++ = (char)strtoul(hex, NULL, 16);
                        s += strlen(hex);
                        break;
                }
                default: *o++ = *s; break;
                }
        }
        *o = 0;
        if (ret_len)
                *ret_len = o - out;
        return out;
}

/* unescape and replace $DEV and $T */
static char *expand(const char *s)
{
        char *u = unescape(s, NULL);
        size_t cap = strlen(u) * 1 + 1;
        for (const char *p = u; (p = strchr(p, '$')); p++)
                cap += strlen(dev) + strlen(tdir) + (p[1] == 'X' ? strtoul(p + 2, NULL, 10) : 0);
        char *out = malloc(cap), *o = out;
        if (!out)
                die("out of memory");
        for (const char *p = u; *p;) {
                if (!strncmp(p, "$DEV", 4)) {
                        o = stpcpy(o, dev);
                        p += 4;
                } else if (!strncmp(p, "$X", 2) && p[2] >= '0' && p[2] <= '9') {
                        /* $Xn: n times 'x' (long paths and lines) */
                        char *end;
                        unsigned long n = strtoul(p + 2, &end, 10);
                        memset(o, 'x', n);
                        o += n;
                        p = end;
                } else if (!strncmp(p, "$T", 2)) {
                        o = stpcpy(o, tdir);
                        p += 2;
                } else
                        *o++ = *p++;
        }
        *o = 0;
        free(u);
        return out;
}

static void skip(const char *why)
{
        printf("SKIP: %s\n", why);
        exit(77);
}

static char *read_file(const char *path, size_t *ret_len)
{
        FILE *f = fopen(path, "re");
        if (!f)
                return NULL;
        size_t cap = 4096, len = 0;
        char *buf = malloc(cap);
        size_t n;
        while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
                len += n;
                if (cap - len < 2)
                        buf = realloc(buf, cap *= 2);
        }
        fclose(f);
        if (!buf)
                die("out of memory");
        buf[len] = 0;
        if (ret_len)
                *ret_len = len;
        return buf;
}

static void write_file(const char *path, const void *data, size_t len)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, data, len) != (ssize_t)len || close(fd) < 0)
                die("writing %s: %s", path, strerror(errno));
}

static void copy_file(const char *from, const char *to)
{
        size_t len;
        char *data = read_file(from, &len);
        if (!data)
                die("reading %s: %s (image missing: is the build complete?)", from, strerror(errno));
        write_file(to, data, len);
        free(data);
}

static uint32_t crc32c(uint32_t crc, const unsigned char *p, size_t len)
{
        crc = ~crc;
        while (len--) {
                crc ^= *p++;
                for (int k = 0; k < 8; k++)
                        crc = (crc >> 1) ^ (0x82F63B78u & -(crc & 1));
        }
        return ~crc;
}

static void patch_dev(long off, const void *bytes, size_t len)
{
        int fd = open(dev, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || pwrite(fd, bytes, len, off) != (ssize_t)len || close(fd) < 0)
                die("patching %s: %s", dev, strerror(errno));
}

/* the primary superblock's crc32c, recomputed after a patch, so that only the patched field is bad */
static void recsum(void)
{
        unsigned char sb[SB_SIZE];
        int fd = open(dev, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || pread(fd, sb, sizeof(sb), SB_OFFSET) != (ssize_t)sizeof(sb))
                die("recsum: reading %s: %s", dev, strerror(errno));
        close(fd);
        uint32_t c = crc32c(0, sb + 32, SB_SIZE - 32);
        unsigned char le[4] = {c & 0xff, (c >> 8) & 0xff, (c >> 16) & 0xff, c >> 24};
        patch_dev(SB_OFFSET, le, 4);
}

/* a device path of exactly len bytes: nested directories of 200-byte names under tdir */
static void long_path(size_t len)
{
        char p[8192];
        snprintf(p, sizeof(p), "%s", tdir);
        if (len <= strlen(p) + 2 || len >= sizeof(p))
                die("long: bad length %zu", len);
        while (len - strlen(p) > 201) {
                size_t l = strlen(p);
                /* never leave a remainder of 1 ("/" and an empty name) for the last component */
                size_t n = len - l - 201 < 2 ? 199 : 200;
                p[l] = '/';
                memset(p + l + 1, 'd', n);
                p[l + 1 + n] = 0;
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        die("mkdir %s: %s", p, strerror(errno));
        }
        size_t l = strlen(p), rest = len - l - 1;
        p[l] = '/';
        memset(p + l + 1, 'n', rest);
        p[len] = 0;
        snprintf(dev, sizeof(dev), "%s", p);
}

/* A loop device over a copy of the case's device: a real block device, enumerated by the helper
 * from sysfs, that is a clone (same fsid) of $DEV. Detached when the runner exits. */
static char loopdev[64];

static void detach_loop(void)
{
        if (!loopdev[0])
                return;
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "losetup -d %s", loopdev);
        if (system(cmd) != 0)
                printf("warning: '%s' failed\n", cmd);
        loopdev[0] = 0;
}

static void on_signal(int sig)
{
        detach_loop();
        _exit(128 + sig);
}

static void attach_loop_clone(void)
{
        char img[8300], cmd[8400];
        if (geteuid() != 0)
                skip("this case needs root for a loop device");
        /* A fsid of its own for this pair: the helper sweeps the host's real /sys/dev/block, where
         * other tests' loop devices may hold copies of the same base image (CI found one). The test
         * images hold little more than the superblock (btrfstune cannot open them): the fsid and
         * dev_item.fsid are written in place and the checksum recomputed. */
        unsigned char fsid[16];
        FILE *u = fopen("/dev/urandom", "re");
        if (!u || fread(fsid, 1, sizeof(fsid), u) != sizeof(fsid))
                die("reading a random fsid: %s", strerror(errno));
        fclose(u);
        patch_dev(SB_OFFSET + 0x20, fsid, sizeof(fsid));  /* btrfs_super_block.fsid */
        patch_dev(SB_OFFSET + 0x11b, fsid, sizeof(fsid)); /* .dev_item.fsid (0xc9 + 82) */
        recsum();
        snprintf(img, sizeof(img), "%s/loop-backing", tdir);
        copy_file(dev, img);
        snprintf(cmd, sizeof(cmd), "losetup -f --show '%s' 2>&1", img);
        FILE *f = popen(cmd, "r");
        if (!f)
                die("popen losetup: %s", strerror(errno));
        char line[256] = "";
        if (!fgets(line, sizeof(line), f))
                line[0] = 0;
        int st = pclose(f);
        line[strcspn(line, "\n")] = 0;
        if (st != 0 || strncmp(line, "/dev/loop", 9)) {
                char why[400];
                snprintf(why, sizeof(why), "no loop device available (losetup: %s)", line);
                skip(why);
        }
        snprintf(loopdev, sizeof(loopdev), "%s", line);
        atexit(detach_loop);
        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);
        printf("  loop clone: %s\n", loopdev);
}

typedef struct {
        char *argv[MAX_ARGS];
        char **env;
        int nenv, capenv;
        double seconds;
        int status;
        const char *want_err, *want_out;
        const char *reached; /* shim event that must have happened */
        int race;
        double hold_lock; /* seconds the runner holds the lock file while the helper runs */
        bool as_user;     /* user=NAME: the helper runs as that user (no supplementary groups) */
        uid_t uid;
        gid_t gid;
} Case;

static void env_set(Case *c, const char *kv)
{
        size_t klen = strchr(kv, '=') - kv;
        for (int i = 0; i < c->nenv; i++)
                if (!strncmp(c->env[i], kv, klen + 1)) {
                        free(c->env[i]);
                        c->env[i] = strdup(kv);
                        return;
                }
        if (c->nenv + 2 > c->capenv) {
                c->capenv = c->capenv * 2 + 16;
                c->env = realloc(c->env, c->capenv * sizeof(char *));
                if (!c->env)
                        die("out of memory");
        }
        c->env[c->nenv++] = strdup(kv);
        c->env[c->nenv] = NULL;
}

static void env_setf(Case *c, const char *fmt, ...)
{
        char buf[16384];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        env_set(c, buf);
}

static void env_unset(Case *c, const char *key)
{
        size_t klen = strlen(key);
        for (int i = 0; i < c->nenv; i++)
                if (!strncmp(c->env[i], key, klen) && c->env[i][klen] == '=') {
                        free(c->env[i]);
                        memmove(c->env + i, c->env + i + 1, (c->nenv - i) * sizeof(char *));
                        c->nenv--;
                        i--;
                }
}

/* builds the world of one case from its setup directives */
static void setup(Case *c, char *directives)
{
        const char *images = getenv("BSG_BADINPUT_IMAGES");
        const char *shim = getenv("BSG_BADINPUT_SHIM");
        char p[8192];
        char devname[4096] = "dev0";
        char devkind[256] = "img:single";
        bool link = false, recsum_after = false;
        char *patches[32];
        int npatch = 0;
        char *control = "file", *skipscan = "file", *rundir = "dir";
        char *config = NULL, *state = NULL, *cmdline = "root=/dev/sda1\\squiet", *mountinfo = "";
        char *efivar = NULL; /* systemd-boot's LoaderDevicePartUUID: bytes, or @dir (unreadable) */
        size_t longlen = 0;
        char *envd[16];
        int nenvd = 0;
        bool loopclone = false;

        /* the environment: the runner's own minus anything udev or a seam might have leaked in */
        extern char **environ;
        for (char **e = environ; *e; e++)
                if (strncmp(*e, "BTRFS_SCAN_GATE_", 16) && strncmp(*e, "ID_", 3) &&
                    strncmp(*e, "DEV", 3) && strncmp(*e, "ACTION=", 7) && strncmp(*e, "LD_PRELOAD=", 11))
                        env_set(c, *e);

        for (char *save, *d = strtok_r(directives, " ", &save); d; d = strtok_r(NULL, " ", &save)) {
                char *v = strchr(d, '=');
                if (v)
                        *v++ = 0;
                if (!strcmp(d, "-"))
                        continue;
                else if (!strcmp(d, "dev") && v)
                        snprintf(devkind, sizeof(devkind), "%s", v);
                else if (!strcmp(d, "devname") && v) {
                        char *u = unescape(v, NULL);
                        snprintf(devname, sizeof(devname), "%s", u);
                        free(u);
                } else if (!strcmp(d, "longpath") && v)
                        longlen = strtoul(v, NULL, 0);
                else if (!strcmp(d, "link"))
                        link = true;
                else if ((!strcmp(d, "truncate") || !strcmp(d, "poke") || !strcmp(d, "fill")) && v &&
                         npatch < 32) {
                        v[-1] = '=';
                        patches[npatch++] = d;
                } else if (!strcmp(d, "recsum"))
                        recsum_after = true;
                else if (!strcmp(d, "control") && v)
                        control = v;
                else if (!strcmp(d, "skipscan") && v)
                        skipscan = v;
                else if (!strcmp(d, "rundir") && v)
                        rundir = v;
                else if (!strcmp(d, "root")) {
                        /* status, boot and reconcile refuse to run as another user ("needs root") */
                        if (geteuid() != 0) {
                                printf("SKIP: the case runs a command that needs root, and the runner is not root\n");
                                exit(77);
                        }
                } else if (!strcmp(d, "user") && v) {
                        struct passwd *pw = getpwnam(v);
                        if (!pw)
                                die("user=%s: no such user", v);
                        if (geteuid() != 0) {
                                printf("SKIP: user=%s needs the runner to be root (to drop to that user)\n", v);
                                exit(77);
                        }
                        c->as_user = true;
                        c->uid = pw->pw_uid;
                        c->gid = pw->pw_gid;
                }
                else if (!strcmp(d, "config") && v)
                        config = v;
                else if (!strcmp(d, "state") && v)
                        state = v;
                else if (!strcmp(d, "cmdline") && v)
                        cmdline = v;
                else if (!strcmp(d, "mountinfo") && v)
                        mountinfo = v;
                else if (!strcmp(d, "efivar") && v)
                        efivar = v;
                else if (!strcmp(d, "env") && v && nenvd < 16)
                        envd[nenvd++] = v; /* applied once $DEV is known */
                else if (!strcmp(d, "loopclone"))
                        loopclone = true;
                else if (!strcmp(d, "race") && v)
                        c->race = atoi(v);
                else if (!strcmp(d, "holdlock") && v)
                        c->hold_lock = atof(v);
                else if (!strcmp(d, "needsys") && v) {
                        /* the case needs these /sys/dev/block/MAJ:MIN entries (state records) */
                        for (char *s2, *t = strtok_r(v, ",", &s2); t; t = strtok_r(NULL, ",", &s2)) {
                                snprintf(p, sizeof(p), "/sys/dev/block/%s", t);
                                if (access(p, F_OK) < 0) {
                                        char why[8300];
                                        snprintf(why, sizeof(why), "this case needs %s (a loop device)", p);
                                        skip(why);
                                }
                        }
                } else if (!strcmp(d, "reached") && v)
                        c->reached = v;
                else if (!strcmp(d, "shim") && v) {
                        if (!strncmp(v, "eio:", 4)) {
                                env_set(c, "BSG_SHIM_EIO_PATH=@DEV@");
                                env_setf(c, "BSG_SHIM_EIO_OFFSET=%s", v + 4);
                        } else if (!strncmp(v, "short:", 6)) {
                                env_set(c, "BSG_SHIM_SHORT_PATH=@DEV@");
                                env_setf(c, "BSG_SHIM_SHORT_OFFSET=%s", v + 6);
                        } else if (!strcmp(v, "block"))
                                env_set(c, "BSG_SHIM_BLOCK_PATH=@DEV@");
                        else if (!strcmp(v, "vanish"))
                                env_set(c, "BSG_SHIM_VANISH_PATH=@DEV@");
                        else if (!strcmp(v, "swap"))
                                env_set(c, "BSG_SHIM_SWAP_LINK=@DEV@");
                        else
                                die("unknown shim fault %s", v);
                } else
                        die("unknown setup directive '%s'", d);
        }

        /* the device */
        if (longlen)
                long_path(longlen);
        else
                snprintf(dev, sizeof(dev), "%s/%s", tdir, devname);
        if (!strncmp(devkind, "img:", 4)) {
                if (!images)
                        die("BSG_BADINPUT_IMAGES not set");
                snprintf(p, sizeof(p), "%s/%s.img", images, devkind + 4);
                copy_file(p, dev);
        } else if (!strncmp(devkind, "zero:", 5)) {
                int fd = open(dev, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0 || ftruncate(fd, strtol(devkind + 5, NULL, 0)) < 0)
                        die("making %s: %s", dev, strerror(errno));
                close(fd);
        } else if (!strcmp(devkind, "fifo")) {
                if (mkfifo(dev, 0600) < 0)
                        die("mkfifo %s: %s", dev, strerror(errno));
        } else if (!strcmp(devkind, "dir")) {
                if (mkdir(dev, 0755) < 0)
                        die("mkdir %s: %s", dev, strerror(errno));
        } else if (strcmp(devkind, "none"))
                die("unknown device kind %s", devkind);
        for (int i = 0; i < npatch; i++) {
                char *v = strchr(patches[i], '=') + 1;
                if (!strncmp(patches[i], "truncate=", 9)) {
                        if (truncate(dev, strtol(v, NULL, 0)) < 0)
                                die("truncate %s: %s", dev, strerror(errno));
                } else if (!strncmp(patches[i], "poke=", 5)) {
                        /* poke=OFFSET:BYTES (escapes; OFFSET relative to the superblock) */
                        char *colon = strchr(v, ':');
                        if (!colon)
                                die("poke needs OFFSET:BYTES");
                        size_t len;
                        char *bytes = unescape(colon + 1, &len);
                        patch_dev(SB_OFFSET + strtol(v, NULL, 0), bytes, len);
                        free(bytes);
                } else {
                        /* fill=OFFSET:LEN:BYTE (OFFSET relative to the superblock) */
                        char *e1, *e2;
                        long off = strtol(v, &e1, 0);
                        long len = strtol(e1 + 1, &e2, 0);
                        unsigned char b = (unsigned char)strtol(e2 + 1, NULL, 0);
                        unsigned char *buf = malloc(len);
                        memset(buf, b, len);
                        patch_dev(SB_OFFSET + off, buf, len);
                        free(buf);
                }
        }
        if (recsum_after)
                recsum();
        if (link) {
                char target[sizeof(dev)];
                snprintf(target, sizeof(target), "%s", dev);
                snprintf(dev, sizeof(dev), "%s/link", tdir);
                if (symlink(target, dev) < 0)
                        die("symlink: %s", strerror(errno));
                /* the swap target: a zeroed 1 MiB file, not btrfs */
                snprintf(p, sizeof(p), "%s/other", tdir);
                int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0 || ftruncate(fd, 1 << 20) < 0)
                        die("making %s: %s", p, strerror(errno));
                close(fd);
                env_setf(c, "BSG_SHIM_SWAP_TARGET=%s", p);
        }
        for (int i = 0; i < nenvd; i++) {
                char *u = expand(envd[i]);
                if (strchr(u, '='))
                        env_set(c, u);
                else
                        env_unset(c, u);
                free(u);
        }
        if (loopclone)
                attach_loop_clone();
        for (int i = 0; i < c->nenv; i++)
                if (strstr(c->env[i], "=@DEV@"))
                        env_setf(c, "%.*s=%s", (int)(strstr(c->env[i], "=@DEV@") - c->env[i]),
                                 c->env[i], dev);

        /* the seams: nothing of the host's is ever touched */
        snprintf(p, sizeof(p), "%s/btrfs-control", tdir);
        if (!strcmp(control, "file"))
                write_file(p, "", 0);
        else if (strcmp(control, "missing"))
                die("control=file|missing");
        env_setf(c, "BTRFS_SCAN_GATE_CONTROL=%s", p);

        snprintf(p, sizeof(p), "%s/run", tdir);
        if (!strcmp(rundir, "dir")) {
                if (mkdir(p, 0755) < 0)
                        die("mkdir %s: %s", p, strerror(errno));
        } else if (!strcmp(rundir, "file"))
                write_file(p, "", 0);
        else if (strcmp(rundir, "missing"))
                die("rundir=dir|file|missing");
        env_setf(c, "BTRFS_SCAN_GATE_RUNDIR=%s", p);
        if (state) {
                /* a state file left by earlier runs (the helper's own format, or garbage) */
                snprintf(p, sizeof(p), "%s/run/devices", tdir);
                char *st = expand(state);
                write_file(p, st, strlen(st));
                free(st);
        }

        snprintf(p, sizeof(p), "%s/cmdline", tdir);
        size_t len;
        char *u;
        if (strcmp(cmdline, "@missing")) {
                u = unescape(cmdline, &len);
                write_file(p, u, len);
                free(u);
        }
        env_setf(c, "BTRFS_SCAN_GATE_CMDLINE=%s", p);

        /* the EFI variables: the case's own directory, never the host's */
        snprintf(p, sizeof(p), "%s/efivars", tdir);
        if (mkdir(p, 0755) < 0)
                die("mkdir %s: %s", p, strerror(errno));
        env_setf(c, "BTRFS_SCAN_GATE_EFIVARS=%s", p);
        if (efivar) {
                snprintf(p, sizeof(p), "%s/efivars/LoaderDevicePartUUID-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", tdir);
                if (!strcmp(efivar, "@dir")) {
                        if (mkdir(p, 0755) < 0)
                                die("mkdir %s: %s", p, strerror(errno));
                } else {
                        u = unescape(efivar, &len);
                        write_file(p, u, len);
                        free(u);
                }
        }

        snprintf(p, sizeof(p), "%s/mountinfo", tdir);
        u = unescape(mountinfo, &len);
        write_file(p, u, len);
        free(u);
        env_setf(c, "BTRFS_SCAN_GATE_MOUNTINFO=%s", p);

        snprintf(p, sizeof(p), "%s/btrfs-scan-gate.conf", tdir);
        if (config) {
                u = unescape(config, &len);
                if (strstr(u, "$X") && !memchr(u, '\0', len)) { /* $Xn: a long line */
                        free(u);
                        u = expand(config);
                        len = strlen(u);
                }
                write_file(p, u, len);
                free(u);
        }
        env_setf(c, "BTRFS_SCAN_GATE_CONFIG=%s", p);
        /* the case's device (a file) and its loop clone stand in for trusted storage (issue 18): the
         * test build's seam names them (a file has no sysfs entry trusted_disk= could name) */
        env_setf(c, "BTRFS_SCAN_GATE_TRUSTED_PATHS=%s%s%s", dev, loopdev[0] ? ":" : "", loopdev);

        /* /sys is not a seam: the preload redirects the skip_scan parameter into the case dir */
        if (!shim || access(shim, R_OK) < 0)
                die("BSG_BADINPUT_SHIM (%s) missing", shim ? shim : "unset");
        snprintf(shimlog, sizeof(shimlog), "%s/shim.log", tdir);
        env_setf(c, "BSG_SHIM_LOG=%s", shimlog);
        snprintf(p, sizeof(p), "%s/skip_scan", tdir);
        env_setf(c, "BSG_SHIM_REDIRECT=/sys/module/btrfs/parameters/skip_scan=%s", p);
        if (!strcmp(skipscan, "file") || !strcmp(skipscan, "ro") || !strcmp(skipscan, "erofs"))
                write_file(p, "\n", 1);
        else if (!strcmp(skipscan, "missing")) {
                /* an unpatched kernel before 6.7: no temp_fsid either (a temp_fsid kernel needs no list) */
                snprintf(p, sizeof(p), "%s/no-temp-fsid", tdir);
                env_setf(c, "BSG_SHIM_REDIRECT2=/sys/fs/btrfs/features/temp_fsid=%s", p);
                snprintf(p, sizeof(p), "%s/skip_scan", tdir);
        } else if (!strcmp(skipscan, "upstream")) {
                /* 6.7 and later: temp_fsid, no skip_scan; protected whatever the host's devices are, so
                 * status's exit code depends on the configuration alone */
                snprintf(p, sizeof(p), "%s/temp-fsid", tdir);
                write_file(p, "\n", 1);
                env_setf(c, "BSG_SHIM_REDIRECT2=/sys/fs/btrfs/features/temp_fsid=%s", p);
                snprintf(p, sizeof(p), "%s/skip_scan", tdir);
        } else
                die("skipscan=file|ro|erofs|missing|upstream");
        if (!strcmp(skipscan, "erofs")) /* writable by its mode, but the write fails */
                env_set(c, "BSG_SHIM_EROFS_PATH=/sys/module/btrfs/parameters/skip_scan");
        if (!strcmp(skipscan, "ro")) {
                /* as the RFC's 0444 parameter: mode bits say so, and writes fail */
                if (chmod(p, 0444) < 0)
                        die("chmod %s: %s", p, strerror(errno));
                env_set(c, "BSG_SHIM_EROFS_PATH=/sys/module/btrfs/parameters/skip_scan");
        }
        env_setf(c, "LD_PRELOAD=%s", shim);
}

static double now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef struct {
        pid_t pid;
        int status;
        double elapsed;
        char out[4200], err[4200];
} Run;

static void start(Case *c, Run *r, int idx)
{
        snprintf(r->out, sizeof(r->out), "%s/stdout.%d", tdir, idx);
        snprintf(r->err, sizeof(r->err), "%s/stderr.%d", tdir, idx);
        r->pid = fork();
        if (r->pid < 0)
                die("fork: %s", strerror(errno));
        if (r->pid == 0) {
                int o = open(r->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                int e = open(r->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
                        _exit(127);
                int n = open("/dev/null", O_RDONLY);
                if (n >= 0)
                        dup2(n, 0);
                if (c->as_user && (setgroups(0, NULL) < 0 || setgid(c->gid) < 0 || setuid(c->uid) < 0)) {
                        fprintf(stderr, "run-case: cannot become uid %u: %s\n", (unsigned)c->uid, strerror(errno));
                        _exit(127);
                }
                /* that user cannot write the build tree: a wrapper's scratch files (valgrind's) go to /tmp */
                for (size_t i = 0; c->as_user && c->env[i]; i++)
                        if (!strncmp(c->env[i], "TMPDIR=", 7))
                                c->env[i] = (char *)"TMPDIR=/tmp";
                execve(c->argv[0], c->argv, c->env);
                fprintf(stderr, "run-case: exec %s: %s\n", c->argv[0], strerror(errno));
                _exit(127);
        }
}

/* waits for all runs, killing any still alive after limit seconds */
static void wait_all(Run *runs, int n, double t0, double limit, int *lockfd, double hold)
{
        int left = n;
        while (left > 0) {
                if (*lockfd >= 0 && now() - t0 >= hold) {
                        close(*lockfd);
                        *lockfd = -1;
                }
                for (int i = 0; i < n; i++) {
                        if (!runs[i].pid)
                                continue;
                        int st;
                        pid_t p = waitpid(runs[i].pid, &st, WNOHANG);
                        if (p == runs[i].pid) {
                                runs[i].status = st;
                                runs[i].elapsed = now() - t0;
                                runs[i].pid = 0;
                                left--;
                        } else if (now() - t0 > limit) {
                                fail("helper %d still running after %.0f s: killed", i, limit);
                                kill(runs[i].pid, SIGKILL);
                        }
                }
                if (left > 0)
                        usleep(20000);
        }
}

static bool has_line(const char *text, const char *line)
{
        size_t l = strlen(line);
        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (!strncmp(p, line, l) && (p[l] == '\n' || p[l] == 0))
                        return true;
        return false;
}

static bool has_key(const char *text, const char *key)
{
        size_t l = strlen(key);
        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (!strncmp(p, key, l) && p[l] == '=')
                        return true;
        return false;
}

static void check(Case *c, Run *r, int idx)
{
        char *out = read_file(r->out, NULL), *err = read_file(r->err, NULL);
        if (!out || !err)
                die("reading the helper's output: %s", strerror(errno));
        printf("--- helper %d: %.2f s, ", idx, r->elapsed);
        if (WIFEXITED(r->status))
                printf("exit %d\n", WEXITSTATUS(r->status));
        else
                printf("killed by signal %d\n", WTERMSIG(r->status));
        printf("--- stdout:\n%s--- stderr:\n%s---\n", out, err);

        if (!WIFEXITED(r->status))
                fail("helper killed by signal %d", WTERMSIG(r->status));
        else if (WEXITSTATUS(r->status) != c->status)
                fail("exit status %d, expected %d", WEXITSTATUS(r->status), c->status);
        if (r->elapsed > c->seconds)
                fail("took %.2f s, allowed %.1f s", r->elapsed, c->seconds);
        static const char *const reports[] = {"AddressSanitizer", "LeakSanitizer", "runtime error:",
                                              "UndefinedBehaviorSanitizer", "== Invalid ",
                                              "uninitialised", "definitely lost in"};
        for (size_t i = 0; i < sizeof(reports) / sizeof(reports[0]); i++)
                if (strstr(err, reports[i]))
                        fail("sanitizer/valgrind report on stderr (\"%s\")", reports[i]);
        if (strcmp(c->want_err, "-")) {
                char *w = expand(c->want_err);
                if (!strstr(err, w))
                        fail("stderr lacks \"%s\"", w);
                free(w);
        }
        if (strcmp(c->want_out, "-")) {
                char *w = expand(c->want_out);
                for (char *save, *t = strtok_r(w, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
                        bool neg = t[0] == '!';
                        char *kv = t + neg;
                        char *eq = strchr(kv, '=');
                        bool ok;
                        if (eq && !strcmp(eq, "=*")) {
                                *eq = 0;
                                ok = has_key(out, kv);
                                *eq = '=';
                        } else
                                ok = has_line(out, kv);
                        if (ok == neg)
                                fail("stdout %s \"%s\"", neg ? "has" : "lacks", kv);
                }
                free(w);
        }
        /* udev mode: stdout is KEY=VALUE lines only, values without spaces or quotes */
        if (c->status == 0) {
                for (char *save, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                        bool udev = false;
                        for (int i = 0; c->argv[i]; i++)
                                if (!strcmp(c->argv[i], "udev"))
                                        udev = true;
                        if (!udev)
                                break;
                        char *eq = strchr(l, '=');
                        if (!eq || eq == l || strpbrk(eq + 1, " \t\"'"))
                                fail("stdout line is not KEY=VALUE without spaces/quotes: \"%s\"", l);
                }
        }
        free(out);
        free(err);
}

static void rm_rf(const char *path)
{
        char cmd[8400];
        snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", path);
        if (system(cmd) != 0)
                printf("warning: could not remove %s\n", path);
}

int main(int argc, char **argv)
{
        if (argc != 3) {
                fprintf(stderr, "usage: %s CASES.TSV NAME\n", argv[0]);
                return 2;
        }
        const char *helper = getenv("BSG_HELPER");
        if (!helper || access(helper, X_OK) < 0)
                die("BSG_HELPER (%s) is not an executable", helper ? helper : "unset");

        /* everything below lives until exit: kept reachable from these statics for LSan/memcheck */
        static Case c; /* read below, so kept; its pointers stay reachable */

        table = read_file(argv[1], NULL);
        if (!table)
                die("reading %s: %s", argv[1], strerror(errno));
        char *row = NULL;
        int lineno = 0;
        for (char *save, *l = strtok_r(table, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                lineno++;
                size_t nl = strcspn(l, "\t");
                if (l[0] == '#' || strlen(argv[2]) != nl || strncmp(l, argv[2], nl))
                        continue;
                row = l;
                break;
        }
        if (!row)
                die("no case '%s' in %s", argv[2], argv[1]);
        char *col[7];
        int n = 0;
        for (char *p = row; n < 7; n++) {
                col[n] = p;
                p = strchr(p, '\t');
                if (!p) {
                        n++;
                        break;
                }
                *p++ = 0;
        }
        if (n != 7)
                die("%s: case '%s' has %d columns, expected 7", argv[1], argv[2], n);

        const char *tmp = getenv("TMPDIR");
        snprintf(tdir, sizeof(tdir), "%s/badinput-%s.XXXXXX", tmp ? tmp : "/tmp", argv[2]);
        for (char *p = tdir + strlen(tmp ? tmp : "/tmp") + 1; *p; p++)
                if (*p == '/')
                        *p = '_';
        if (!mkdtemp(tdir))
                die("mkdtemp %s: %s", tdir, strerror(errno));

        c.status = atoi(col[3]);
        c.want_err = col[4];
        c.want_out = col[5];
        c.seconds = atof(col[6]);
        c.race = 1;
        setup_text = strdup(col[1]);
        setup(&c, col[1]);
        if (c.race < 1 || c.race > MAX_RACE)
                die("race=1..%d", MAX_RACE);

        /* the command: [wrapper...] helper args... */
        int a = 0;
        const char *wrapper = getenv("BSG_HELPER_WRAPPER");
        if (wrapper && *wrapper) {
                wrapper_copy = strdup(wrapper);
                for (char *save, *t = strtok_r(wrapper_copy, " ", &save); t && a < MAX_ARGS - 1;
                     t = strtok_r(NULL, " ", &save))
                        c.argv[a++] = t;
                c.seconds += 20; /* valgrind's start-up and slowness */
        }
        c.argv[a++] = (char *)helper;
        args = strdup(col[2]);
        for (char *save, *t = strtok_r(args, " ", &save); t && a < MAX_ARGS - 1; t = strtok_r(NULL, " ", &save))
                if (strcmp(t, "-"))
                        c.argv[a++] = expand(t);
        c.argv[a] = NULL;

        printf("case %s (%s line %d)\n  setup: %s\n  command:", argv[2], argv[1], lineno, setup_text);
        for (int i = 0; c.argv[i]; i++)
                printf(" %s", c.argv[i]);
        printf("\n  scratch: %s\n", tdir);
        fflush(stdout);

        int lockfd = -1;
        if (c.hold_lock > 0) {
                char p[4200];
                snprintf(p, sizeof(p), "%s/run/lock", tdir);
                lockfd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
                if (lockfd < 0 || flock(lockfd, LOCK_EX) < 0)
                        die("holding %s: %s", p, strerror(errno));
        }

        Run runs[MAX_RACE];
        memset(runs, 0, sizeof(runs));
        double t0 = now();
        for (int i = 0; i < c.race; i++)
                start(&c, &runs[i], i);
        wait_all(runs, c.race, t0, c.seconds + 30, &lockfd, c.hold_lock);
        if (lockfd >= 0)
                close(lockfd);
        for (int i = 0; i < c.race; i++)
                check(&c, &runs[i], i);

        if (c.reached) {
                char *log = read_file(shimlog, NULL);
                printf("--- shim log:\n%s---\n", log ? log : "(none)\n");
                if (!log || !strstr(log, c.reached))
                        fail("the injected fault (%s) was never reached: the case tests nothing", c.reached);
                free(log);
        }
        if (failed) {
                printf("case %s FAILED (scratch kept in %s)\n", argv[2], tdir);
                return 1;
        }
        rm_rf(tdir);
        printf("case %s passed\n", argv[2]);
        return 0;
}
