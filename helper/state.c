/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "devices.h"
#include "kernel.h"
#include "state.h"
#include "util.h"

#define STATE_MAX (1024 * 1024)

static int mkdir_p(const char *path)
{
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int bsg_state_lock(const char *rundir, uint64_t deadline_usec)
{
        char path[4200];
        int r = mkdir_p(rundir);

        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "%s/lock", rundir);
        _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return -errno;
        for (;;) {
                if (flock(fd, LOCK_EX | LOCK_NB) == 0)
                        return TAKE_FD(fd);
                if (errno != EWOULDBLOCK && errno != EINTR)
                        return -errno;
                if (bsg_now_usec() >= deadline_usec)
                        return -ETIMEDOUT;
                struct timespec ts = {.tv_nsec = 5 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
}

void bsg_state_free(struct bsg_state *state)
{
        for (size_t i = 0; i < state->n; i++) {
                free(state->v[i].devnode);
                free(state->v[i].partlabel);
        }
        free(state->v);
        state->v = NULL;
        state->n = 0;
}

/* The records are kept sorted by device number: the index of DEVNUM's record, or where it goes. */
static size_t lower_bound(const struct bsg_state *state, dev_t devnum)
{
        size_t lo = 0, hi = state->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (state->v[mid].devnum < devnum)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

void bsg_state_remove(struct bsg_state *state, dev_t devnum)
{
        struct bsg_record *rec = bsg_state_find(state, devnum);
        size_t i;

        if (!rec)
                return;
        i = (size_t)(rec - state->v);
        free(rec->devnode);
        free(rec->partlabel);
        memmove(&state->v[i], &state->v[i + 1], (state->n - i - 1) * sizeof(state->v[0]));
        state->n--;
}

struct bsg_record *bsg_state_find(struct bsg_state *state, dev_t devnum)
{
        size_t i = lower_bound(state, devnum);

        return i < state->n && state->v[i].devnum == devnum ? &state->v[i] : NULL;
}

int bsg_state_put(struct bsg_state *state, const struct bsg_record *rec)
{
        struct bsg_record *old = bsg_state_find(state, rec->devnum);
        char *devnode = strdup(rec->devnode ? rec->devnode : "");
        char *partlabel = rec->partlabel ? strdup(rec->partlabel) : NULL;
        size_t i;

        if (!devnode || (rec->partlabel && !partlabel)) {
                free(devnode);
                free(partlabel);
                return -ENOMEM;
        }
        if (old) {
                free(old->devnode);
                free(old->partlabel);
                *old = *rec;
                old->devnode = devnode;
                old->partlabel = partlabel;
                return 0;
        }
        struct bsg_record *nv = realloc(state->v, (state->n + 1) * sizeof(*nv));
        if (!nv) {
                free(devnode);
                free(partlabel);
                return -ENOMEM;
        }
        state->v = nv;
        i = lower_bound(state, rec->devnum);
        memmove(&nv[i + 1], &nv[i], (state->n - i) * sizeof(*nv));
        nv[i] = *rec;
        nv[i].devnode = devnode;
        nv[i].partlabel = partlabel;
        state->n++;
        return 0;
}

/* devnodes are escaped: %XX for '%', whitespace and control characters */
static void escape(const char *s, FILE *f)
{
        for (const unsigned char *p = (const unsigned char *)s; *p; p++)
                if (*p <= ' ' || *p == '%' || *p == 0x7f)
                        fprintf(f, "%%%02X", *p);
                else
                        fputc(*p, f);
}

static char *unescape(const char *s)
{
        char *out = malloc(strlen(s) + 1), *o = out;

        if (!out)
                return NULL;
        while (*s) {
                unsigned v;
                if (s[0] == '%' && s[1] && s[2] && sscanf(s + 1, "%2x", &v) == 1) {
                        *o++ = (char)v;
                        s += 3;
                } else
                        *o++ = *s++;
        }
        *o = '\0';
        return out;
}

int bsg_state_load(const char *rundir, struct bsg_state *ret_state)
{
        struct bsg_state st = {0};
        _cleanup_free_ char *text = NULL;
        char path[4200];
        int r;

        snprintf(path, sizeof(path), "%s/devices", rundir);
        r = bsg_read_file(path, STATE_MAX, &text, NULL);
        if (r == -ENOENT || r == -ENOTDIR) {
                *ret_state = st;
                return 0;
        }
        if (r < 0)
                return r;
        for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                unsigned maj, min, reg, seed;
                uint64_t devid, num, gen;
                char fsid[37], label[1024], node[4200];
                struct bsg_record rec = {0};

                if (line[0] == '#')
                        continue;
                if (sscanf(line, "%u:%u %u %" SCNu64 " %" SCNu64 " %" SCNu64 " %u %36s %1023s %4199s", &maj, &min,
                           &reg, &devid, &num, &gen, &seed, fsid, label, node) != 10)
                        continue;
                if (bsg_uuid_parse(fsid, rec.fsid) < 0)
                        continue;
                char sys[64];
                snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", maj, min);
                if (access(sys, F_OK) < 0)
                        continue; /* stale: the device is gone */
                rec.devnum = makedev(maj, min);
                rec.registered = reg;
                rec.devid = devid;
                rec.num_devices = num;
                rec.generation = gen;
                rec.seeding = seed;
                rec.devnode = unescape(node);
                rec.partlabel = streq(label, "%") ? NULL : unescape(label); /* "%": no label */
                if (!rec.devnode || (!streq(label, "%") && !rec.partlabel) || bsg_state_put(&st, &rec) < 0) {
                        free(rec.devnode);
                        free(rec.partlabel);
                        bsg_state_free(&st);
                        return -ENOMEM;
                }
                free(rec.devnode);
                free(rec.partlabel);
        }
        *ret_state = st;
        return 0;
}

static int cmp_rec(const void *a, const void *b)
{
        const struct bsg_record *x = a, *y = b;
        return x->devnum < y->devnum ? -1 : x->devnum > y->devnum;
}

int bsg_state_save(const char *rundir, const struct bsg_state *state)
{
        char path[4200], tmp[4220];
        int r = mkdir_p(rundir);

        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "%s/devices", rundir);
        snprintf(tmp, sizeof(tmp), "%s/.devices.tmp", rundir);
        if (state->n > 0) /* qsort(NULL, 0, ...) is undefined */
                qsort(state->v, state->n, sizeof(state->v[0]), cmp_rec);
        FILE *f = fopen(tmp, "we");
        if (!f)
                return -errno;
        fprintf(f, "# btrfs-scan-gate device state: MAJ:MIN registered devid num_devices generation seeding fsid partlabel devnode\n");
        for (size_t i = 0; i < state->n; i++) {
                const struct bsg_record *rec = &state->v[i];
                char fsid[37];
                bsg_uuid_format(rec->fsid, fsid);
                fprintf(f, "%u:%u %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %s ", major(rec->devnum), minor(rec->devnum),
                        rec->registered, rec->devid, rec->num_devices, rec->generation, rec->seeding, fsid);
                if (rec->partlabel)
                        escape(rec->partlabel, f);
                else
                        fputc('%', f); /* no label; a real '%' is always escaped */
                fputc(' ', f);
                escape(rec->devnode, f);
                fputc('\n', f);
        }
        if (fflush(f) != 0 || ferror(f)) {
                r = -errno ?: -EIO;
                fclose(f);
                unlink(tmp);
                return r;
        }
        fclose(f);
        if (rename(tmp, path) < 0) {
                r = -errno;
                unlink(tmp);
                return r;
        }
        return 0;
}
