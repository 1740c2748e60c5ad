/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The journal sink of the helper's messages; see log.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

#define BSG_LOG_TAG "btrfs-scan-gate"

enum bsg_log_sink bsg_log_pick_sink(const char *env, bool in_initrd)
{
        if (env && strcmp(env, "stderr") == 0)
                return BSG_LOG_STDERR;
        if (env && strcmp(env, "syslog") == 0)
                return BSG_LOG_SYSLOG;
        if (env && strcmp(env, "kmsg") == 0)
                return BSG_LOG_KMSG;
        /* "auto", unset or unknown */
        if (in_initrd)
                return BSG_LOG_KMSG;
        return BSG_LOG_SYSLOG;
}

/* as systemd's in_initrd(): the initrd's marker file, or a root on ramfs/tmpfs (initramfs-tools'
 * initramfs has no marker, and no syslog socket either) */
static bool in_initrd(void)
{
        struct statfs sfs;
        if (access("/etc/initrd-release", F_OK) == 0)
                return true;
        return statfs("/", &sfs) == 0 && (sfs.f_type == RAMFS_MAGIC || sfs.f_type == TMPFS_MAGIC);
}

static enum bsg_log_sink current_sink(void)
{
        static int sink = -1;
        if (sink < 0) {
                sink = bsg_log_pick_sink(getenv("BTRFS_SCAN_GATE_LOG"), in_initrd());
                if (sink == BSG_LOG_SYSLOG)
                        openlog(BSG_LOG_TAG, LOG_PID | LOG_NDELAY, LOG_DAEMON);
        }
        return sink;
}

void bsg_log_journal(int level, const char *msg)
{
        switch (current_sink()) {
        case BSG_LOG_SYSLOG:
                syslog(level, "%s", msg);
                break;
        case BSG_LOG_KMSG: {
                char line[1024];
                int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        break;
                /* one write is one record; a longer message is cut, never split */
                int n = snprintf(line, sizeof(line), "<%d>%s[%d]: %s\n", LOG_DAEMON | level, BSG_LOG_TAG,
                                 (int)getpid(), msg);
                if (n > 0) {
                        if ((size_t)n >= sizeof(line))
                                n = sizeof(line) - 1, line[n - 1] = '\n';
                        (void)!write(fd, line, (size_t)n);
                }
                close(fd);
                break;
        }
        case BSG_LOG_STDERR:
                break;
        }
}

int bsg_log_decision(const char *rundir, dev_t devnum, const char *devnode, const char *decision,
                     const char *reason, const char *fsid, const char *trust)
{
        char dir[4096], path[4200], tmp[4300], now[256], before[256] = "";
        int n;

        n = snprintf(now, sizeof(now), "%s %s %s %s\n", decision, reason, fsid ? fsid : "-", trust ? trust : "-");
        if (n < 0 || (size_t)n >= sizeof(now))
                return -EINVAL;
        snprintf(dir, sizeof(dir), "%s/logged", rundir);
        snprintf(path, sizeof(path), "%s/%u:%u", dir, major(devnum), minor(devnum));
        FILE *f = fopen(path, "re");
        if (f) {
                if (!fgets(before, sizeof(before), f))
                        before[0] = '\0';
                fclose(f);
        }
        if (strcmp(before, now) == 0)
                return 0;

        char msg[768];
        snprintf(msg, sizeof(msg), "%s: %s (%s)%s%s%s%s", devnode, decision, reason, fsid ? ", fsid " : "",
                 fsid ? fsid : "", trust ? ", " : "", trust ? trust : "");
        bsg_log_journal(LOG_NOTICE, msg);

        /* remember it (tmp + rename: a reader never sees half a line); failure only means the
         * next event logs the same decision again */
        (void)mkdir(dir, 0755);
        snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd >= 0) {
                bool ok = write(fd, now, (size_t)n) == n;
                close(fd);
                if (!ok || rename(tmp, path) < 0)
                        unlink(tmp);
        }
        return 1;
}
