/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
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

void bsg_record_done(struct bsg_record *rec)
{
        free(rec->devnode);
        free(rec->partlabel);
        free(rec->partuuid);
        free(rec->storage_id);
        free(rec->disk);
        rec->devnode = rec->partlabel = rec->partuuid = rec->storage_id = rec->disk = NULL;
}

void bsg_state_free(struct bsg_state *state)
{
        for (size_t i = 0; i < state->n; i++)
                bsg_record_done(&state->v[i]);
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
        state->changed = true;
        i = (size_t)(rec - state->v);
        bsg_record_done(rec);
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
        struct bsg_record copy = *rec;
        size_t i;

        copy.devnode = strdup(rec->devnode ? rec->devnode : "");
        copy.partlabel = rec->partlabel ? strdup(rec->partlabel) : NULL;
        copy.partuuid = rec->partuuid ? strdup(rec->partuuid) : NULL;
        copy.storage_id = rec->storage_id ? strdup(rec->storage_id) : NULL;
        copy.disk = rec->disk ? strdup(rec->disk) : NULL;
        if (!copy.devnode || (rec->partlabel && !copy.partlabel) || (rec->partuuid && !copy.partuuid) ||
            (rec->storage_id && !copy.storage_id) || (rec->disk && !copy.disk)) {
                bsg_record_done(&copy);
                return -ENOMEM;
        }
        if (old) {
                if (!state->changed) {
                        _cleanup_free_ char *a = NULL, *b = NULL;
                        state->changed = bsg_record_format(old, &a) < 0 || bsg_record_format(&copy, &b) < 0 ||
                                         !streq(a, b);
                }
                bsg_record_done(old);
                *old = copy;
                return 0;
        }
        state->changed = true;
        struct bsg_record *nv = realloc(state->v, (state->n + 1) * sizeof(*nv));
        if (!nv) {
                bsg_record_done(&copy);
                return -ENOMEM;
        }
        state->v = nv;
        i = lower_bound(state, rec->devnum);
        memmove(&nv[i + 1], &nv[i], (state->n - i) * sizeof(*nv));
        nv[i] = copy;
        state->n++;
        return 0;
}

/* Text fields are escaped: %XX for '%', whitespace and control characters; a lone "%" is "none". */
void bsg_field_write(FILE *f, const char *s)
{
        if (!s) {
                fputc('%', f);
                return;
        }
        for (const unsigned char *p = (const unsigned char *)s; *p; p++)
                if (*p <= ' ' || *p == '%' || *p == 0x7f)
                        fprintf(f, "%%%02X", *p);
                else
                        fputc(*p, f);
}

/* The next space-separated field of *P (moved past it), within its line: its start and length. */
static bool next_field(const char **p, const char **ret_start, size_t *ret_len)
{
        const char *s = *p;
        while (*s == ' ')
                s++;
        if (!*s || *s == '\n')
                return false;
        size_t len = strcspn(s, " \n");
        *ret_start = s;
        *ret_len = len;
        *p = s + len;
        return true;
}

bool bsg_field_u64(const char **p, uint64_t *ret)
{
        const char *s;
        size_t len;
        uint64_t v = 0;

        if (!next_field(p, &s, &len) || len == 0 || len > 20)
                return false;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (uint64_t)(s[i] - '0');
        }
        *ret = v;
        return true;
}

/* An escaped text field into a new string (*ret NULL for "%"). Returns 0, -EINVAL, -ENOMEM. */
int bsg_field_read(const char **p, char **ret)
{
        const char *s;
        size_t len;

        if (!next_field(p, &s, &len))
                return -EINVAL;
        if (len == 1 && s[0] == '%') {
                *ret = NULL;
                return 0;
        }
        char *out = malloc(len + 1), *o = out;
        if (!out)
                return -ENOMEM;
        if (!memchr(s, '%', len)) { /* nothing escaped: most fields, and every skip list */
                memcpy(out, s, len);
                out[len] = '\0';
                *ret = out;
                return 0;
        }
        for (size_t i = 0; i < len;) {
                int hi, lo;
                if (s[i] == '%' && i + 2 < len && (hi = hexval(s[i + 1])) >= 0 && (lo = hexval(s[i + 2])) >= 0) {
                        *o++ = (char)(hi * 16 + lo);
                        i += 3;
                } else
                        *o++ = s[i++];
        }
        *o = '\0';
        *ret = out;
        return 0;
}

int bsg_record_parse(const char *line, struct bsg_record *ret_rec)
{
        struct bsg_record rec = {};
        uint64_t maj, min, kind, reg, seed, hot;
        const char *p = line, *s;
        size_t len;
        char fsid[37], dev_uuid[37];
        int r;

        /* MAJ:MIN */
        if (!next_field(&p, &s, &len) || len >= 32)
                return -EINVAL;
        char num[32];
        memcpy(num, s, len);
        num[len] = '\0';
        char *colon = strchr(num, ':');
        if (!colon)
                return -EINVAL;
        *colon = '\0';
        const char *q = num;
        if (!bsg_field_u64(&q, &maj))
                return -EINVAL;
        q = colon + 1;
        if (!bsg_field_u64(&q, &min) || maj > 0xfffff || min > 0xfffff)
                return -EINVAL;
        if (!bsg_field_u64(&p, &rec.diskseq) || !bsg_field_u64(&p, &rec.size) || !bsg_field_u64(&p, &kind) || kind > 3 ||
            !bsg_field_u64(&p, &reg) || reg > 2 || !bsg_field_u64(&p, &rec.devid) || !bsg_field_u64(&p, &rec.num_devices) ||
            !bsg_field_u64(&p, &rec.generation) || !bsg_field_u64(&p, &seed) || !bsg_field_u64(&p, &hot))
                return -EINVAL;
        if (!next_field(&p, &s, &len) || len != 36)
                return -EINVAL;
        memcpy(fsid, s, 36);
        fsid[36] = '\0';
        if (bsg_uuid_parse(fsid, rec.fsid) < 0)
                return -EINVAL;
        if (!next_field(&p, &s, &len) || len != 36)
                return -EINVAL;
        memcpy(dev_uuid, s, 36);
        dev_uuid[36] = '\0';
        if (bsg_uuid_parse(dev_uuid, rec.dev_uuid) < 0)
                return -EINVAL;
        rec.devnum = makedev((unsigned)maj, (unsigned)min);
        rec.kind = (enum bsg_record_kind)kind;
        rec.registered = reg != 0;
        rec.forget_pending = reg == 2;
        rec.seeding = seed;
        rec.untrusted = hot;
        if ((r = bsg_field_read(&p, &rec.partlabel)) < 0 || (r = bsg_field_read(&p, &rec.partuuid)) < 0 ||
            (r = bsg_field_read(&p, &rec.storage_id)) < 0 || (r = bsg_field_read(&p, &rec.disk)) < 0 ||
            (r = bsg_field_read(&p, &rec.devnode)) < 0)
                goto fail;
        if (!rec.devnode || rec.devnode[0] != '/') {
                r = -EINVAL;
                goto fail;
        }
        /* flags (bit 0: a whole disk carrying a partition table, bit 1: fsid change in progress, bit 2:
         * METADATA_UUID feature, and then the metadata_uuid follows; bit 3: zoned device; bit 4: the
         * untrusted field is the device's class, the fallback's test (issue 18: else unknown, asked of
         * sysfs); bit 5: a stacked device); lines written before they existed end here */
        uint64_t flags = 0;
        const char *q2 = p;
        if (next_field(&q2, &s, &len) && (!bsg_field_u64(&p, &flags) || flags > 63)) {
                r = -EINVAL;
                goto fail;
        }
        if (flags & 4) {
                char mu[37];
                if (!next_field(&p, &s, &len) || len != 36) {
                        r = -EINVAL;
                        goto fail;
                }
                memcpy(mu, s, 36);
                mu[36] = '\0';
                if (bsg_uuid_parse(mu, rec.metadata_uuid) < 0) {
                        r = -EINVAL;
                        goto fail;
                }
        }
        if (next_field(&p, &s, &len)) {
                r = -EINVAL;
                goto fail;
        }
        rec.partitioned = flags & 1;
        rec.fsid_changing = flags & 2;
        rec.metadata_uuid_feature = flags & 4;
        rec.zoned = flags & 8;
        rec.class_known = flags & 16;
        rec.stacked = flags & 32;
        *ret_rec = rec;
        return 0;
fail:
        bsg_record_done(&rec);
        return r;
}

static void record_write(FILE *f, const struct bsg_record *rec)
{
        char fsid[37], dev_uuid[37];
        bsg_uuid_format(rec->fsid, fsid);
        bsg_uuid_format(rec->dev_uuid, dev_uuid);
        fprintf(f, "%u:%u %" PRIu64 " %" PRIu64 " %d %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %d %s %s ",
                major(rec->devnum), minor(rec->devnum), rec->diskseq, rec->size, (int)rec->kind,
                rec->registered ? (rec->forget_pending ? 2 : 1) : 0,
                rec->devid, rec->num_devices, rec->generation, rec->seeding, rec->untrusted, fsid, dev_uuid);
        const char *text[] = {rec->partlabel, rec->partuuid, rec->storage_id, rec->disk, rec->devnode};
        for (size_t k = 0; k < ELEMENTSOF(text); k++) {
                if (k)
                        fputc(' ', f);
                bsg_field_write(f, text[k]);
        }
        fprintf(f, " %d", (rec->partitioned ? 1 : 0) | (rec->fsid_changing ? 2 : 0) | (rec->metadata_uuid_feature ? 4 : 0) |
                                 (rec->zoned ? 8 : 0) | (rec->class_known ? 16 : 0) | (rec->stacked ? 32 : 0));
        if (rec->metadata_uuid_feature) {
                char mu[37];
                bsg_uuid_format(rec->metadata_uuid, mu);
                fprintf(f, " %s", mu);
        }
}

int bsg_record_format(const struct bsg_record *rec, char **ret_line)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return -ENOMEM;
        record_write(f, rec);
        /* glibc's fclose() of a memory stream returns 0 even when its final realloc() failed, leaving
         * the buffer NULL */
        if (fclose(f) != 0 || !buf) {
                free(buf);
                return -ENOMEM;
        }
        *ret_line = buf;
        return 0;
}

int bsg_state_load(const char *rundir, struct bsg_state *ret_state)
{
        struct bsg_state st = {0};
        bool skipped = false;
        _cleanup_free_ char *text = NULL;
        char path[4200];
        int r;

        snprintf(path, sizeof(path), "%s/devices", rundir);
        r = bsg_read_file(path, STATE_TEXT_MAX, &text, NULL);
        if (r == -ENOENT || r == -ENOTDIR) {
                st.changed = true; /* the first save makes the file: later events find an inventory */
                *ret_state = st;
                return 0;
        }
        if (r < 0)
                return r;
        for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                struct bsg_record rec;

                if (line[0] == '#')
                        continue;
                r = bsg_record_parse(line, &rec);
                if (r == -EINVAL) {
                        skipped = true; /* malformed or of the older format: rewritten without it */
                        continue;
                }
                if (r < 0) {
                        bsg_state_free(&st);
                        return r;
                }
                /* records come sorted: append without a search when they do */
                if (st.n == 0 || st.v[st.n - 1].devnum < rec.devnum) {
                        if (st.n % 64 == 0) {
                                struct bsg_record *nv = realloc(st.v, (st.n + 64) * sizeof(*nv));
                                if (!nv) {
                                        bsg_record_done(&rec);
                                        bsg_state_free(&st);
                                        return -ENOMEM;
                                }
                                st.v = nv;
                        }
                        st.v[st.n++] = rec;
                        continue;
                }
                r = bsg_state_put(&st, &rec);
                bsg_record_done(&rec);
                if (r < 0) {
                        bsg_state_free(&st);
                        return r;
                }
        }
        st.changed = skipped; /* the puts of unsorted lines are no change of the inventory */
        *ret_state = st;
        return 0;
}

void bsg_state_drop_gone(struct bsg_state *state)
{
        for (size_t i = state->n; i > 0; i--) {
                char sys[64];
                snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", major(state->v[i - 1].devnum),
                         minor(state->v[i - 1].devnum));
                if (access(sys, F_OK) < 0)
                        bsg_state_remove(state, state->v[i - 1].devnum);
        }
}

static int cmp_rec(const void *a, const void *b)
{
        const struct bsg_record *x = a, *y = b;
        return x->devnum < y->devnum ? -1 : x->devnum > y->devnum;
}

/* Writes what FILL writes to PATH atomically (temporary file TMP, renamed: a reader never sees half of
 * it). Not synced: the run directory is tmpfs. */
int bsg_write_atomic(const char *path, const char *tmp, void (*fill)(FILE *f, const void *data), const void *data)
{
        int r;
        FILE *f = fopen(tmp, "we");

        if (!f)
                return -errno;
        fill(f, data);
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

static void fill_state(FILE *f, const void *data)
{
        const struct bsg_state *state = data;
        fputs("# btrfs-scan-gate inventory v2: MAJ:MIN diskseq size kind(0 btrfs,1 invalid,2 not-btrfs,3 unknown) registered(1, 2: forget pending) "
              "devid num_devices generation seeding untrusted fsid dev_uuid partlabel partuuid storage_id disk devnode "
              "flags(1 partitioned disk,2 fsid changing,4 metadata_uuid follows,8 zoned,16 untrusted is the class,32 stacked) "
              "[metadata_uuid]\n", f);
        for (size_t i = 0; i < state->n; i++) {
                record_write(f, &state->v[i]);
                fputc('\n', f);
        }
}

int bsg_state_save(const char *rundir, const struct bsg_state *state)
{
        char path[4200], tmp[4220];
        int r;

        if (!state->changed)
                return 0;
        r = mkdir_p(rundir);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "%s/devices", rundir);
        snprintf(tmp, sizeof(tmp), "%s/.devices.tmp", rundir);
        if (state->n > 0) /* qsort(NULL, 0, ...) is undefined */
                qsort(state->v, state->n, sizeof(state->v[0]), cmp_rec);
        return bsg_write_atomic(path, tmp, fill_state, state);
}

/* The device number a record line starts with ("MAJ:MIN "), or -EINVAL. */
static int line_devnum(const char *p, const char *end, dev_t *ret)
{
        unsigned maj, min;
        const char *e;

        if (p >= end || *p < '0' || *p > '9' || bsg_parse_devnum(p, &maj, &min, &e) < 0 || e >= end || *e != ' ')
                return -EINVAL;
        *ret = makedev(maj, min);
        return 0;
}

const char *bsg_sorted_lines_find(const char *begin, const char *end, dev_t devnum)
{
        const char *lo = begin, *hi = end;

        /* lines starting in [lo, hi) are still candidates; lo and hi are line starts */
        while (lo < hi) {
                const char *mid = lo + (hi - lo) / 2, *nl;
                dev_t d;

                nl = mid > lo ? memrchr(lo, '\n', (size_t)(mid - lo)) : NULL;
                mid = nl ? nl + 1 : lo;
                if (line_devnum(mid, end, &d) < 0)
                        return NULL; /* not a sorted record text: the caller reads it whole */
                if (d == devnum)
                        return mid;
                if (d < devnum) {
                        nl = memchr(mid, '\n', (size_t)(end - mid));
                        lo = nl ? nl + 1 : end;
                } else
                        hi = mid;
        }
        return NULL;
}

const char *bsg_state_text_find(const char *text, dev_t devnum)
{
        const char *p = text;

        while (*p == '#') { /* the header comment */
                p = strchr(p, '\n');
                if (!p)
                        return NULL;
                p++;
        }
        return bsg_sorted_lines_find(p, p + strlen(p), devnum);
}

struct pending_data {
        const struct bsg_record *rec;
        dev_t devnum;
        uint64_t diskseq; /* of a remove marker */
};

static void fill_pending(FILE *f, const void *data)
{
        const struct pending_data *d = data;
        if (d->rec)
                record_write(f, d->rec);
        else
                fprintf(f, "remove %u:%u %" PRIu64, major(d->devnum), minor(d->devnum), d->diskseq);
        fputc('\n', f);
}

static int pending_write(const char *rundir, dev_t devnum, const struct bsg_record *rec, uint64_t diskseq)
{
        char dir[4200], path[4300], tmp[4320];
        struct pending_data d = {rec, devnum, diskseq};
        int r;

        snprintf(dir, sizeof(dir), "%s/pending", rundir);
        r = mkdir_p(dir);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "%s/%u:%u", dir, major(devnum), minor(devnum));
        snprintf(tmp, sizeof(tmp), "%s/.%u:%u.%d", dir, major(devnum), minor(devnum), (int)getpid());
        return bsg_write_atomic(path, tmp, fill_pending, &d);
}

int bsg_pending_write(const char *rundir, dev_t devnum, const struct bsg_record *rec)
{
        return pending_write(rundir, devnum, rec, 0);
}

int bsg_pending_write_remove(const char *rundir, dev_t devnum, uint64_t diskseq)
{
        return pending_write(rundir, devnum, NULL, diskseq);
}

/* A remove marker (LINE) folded into STATE: returns 1 if it was one. The entry goes only if it is
 * still the removed device's (same diskseq, or one of them unknown, as markers written before the
 * diskseq was kept). */
static int pending_remove(const char *line, struct bsg_state *state)
{
        unsigned maj, min;
        unsigned long long diskseq = 0;
        int k = sscanf(line, "remove %u:%u %llu", &maj, &min, &diskseq);

        if (k < 2)
                return 0;
        const struct bsg_record *rec = bsg_state_find(state, makedev(maj, min));
        if (rec && diskseq && rec->diskseq && rec->diskseq != diskseq)
                return 1; /* the entry is a later device's (replugged): the marker is stale */
        bsg_state_remove(state, makedev(maj, min));
        return 1;
}

int bsg_pending_apply(const char *rundir, struct bsg_state *state)
{
        char dir[4200];
        struct dirent *de;
        int n = 0;
        DIR *d;

        snprintf(dir, sizeof(dir), "%s/pending", rundir);
        d = opendir(dir);
        if (!d)
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        while ((de = readdir(d))) {
                char path[4500];
                _cleanup_free_ char *text = NULL;
                struct bsg_record rec;

                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                if (bsg_read_file(path, 16384, &text, NULL) >= 0) {
                        text[strcspn(text, "\n")] = '\0';
                        if (pending_remove(text, state))
                                n++;
                        else if (bsg_record_parse(text, &rec) == 0) {
                                /* the marker's device is what this helper registered if the record agrees */
                                const struct bsg_record *old = bsg_state_find(state, rec.devnum);
                                rec.registered = old && old->registered && old->kind == rec.kind &&
                                                 memcmp(old->fsid, rec.fsid, BSG_UUID_SIZE) == 0 &&
                                                 old->devid == rec.devid;
                                rec.forget_pending = rec.registered && old->forget_pending;
                                if (bsg_state_put(state, &rec) >= 0)
                                        n++;
                                bsg_record_done(&rec);
                        }
                }
                (void)unlink(path);
        }
        closedir(d);
        return n;
}
