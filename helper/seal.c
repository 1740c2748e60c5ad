/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The seal (gate.h): RUNDIR/seal, written after a whole decision under the lock that the kernel
 * reached, read by the next event to decide only its own filesystem. I/O.
 *
 *   bsg-seal 1 CTX_HASH SYS_HASH INODE SIZE MTIME_NS
 *   active HAVE SOURCE SLOT BOOTED_DISK ROOT_DISK
 *   skip SKIP_LIST
 *   g FSID MAJ:MIN MAJ:MIN...      (one line per filesystem of two or more devices)
 *   v
 *   MAJ:MIN DECISION REASON        (one line per device of the decision, by device number)
 *
 * Text fields are escaped as the inventory's (state.h). A seal that does not parse is no seal: the
 * event decides the whole set, as without one. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "gate.h"
#include "util.h"

#define SEAL_MAGIC "bsg-seal 1 "

static void seal_path(char *buf, size_t size, const char *name)
{
        snprintf(buf, size, "%s/%s", bsg_rundir_path(), name);
}

/* The identity of RUNDIR/devices: every save renames a new file over it, so a new inode. */
int seal_inventory_id(uint64_t ret[3])
{
        char path[4200];
        struct stat st;

        seal_path(path, sizeof(path), "devices");
        if (stat(path, &st) < 0)
                return -errno;
        ret[0] = (uint64_t)st.st_ino;
        ret[1] = (uint64_t)st.st_size;
        ret[2] = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
        return 0;
}

void seal_done(struct bsg_seal *s)
{
        free(s->booted_disk);
        free(s->root_disk);
        free(s->skip_list);
        free(s->text);
        *s = (struct bsg_seal){0};
}

static bool field_hex64(const char **p, uint64_t *ret)
{
        const char *s = *p;
        char *end;

        while (*s == ' ')
                s++;
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                return false;
        errno = 0;
        *ret = strtoull(s, &end, 16);
        if (errno || (*end != ' ' && *end != '\n'))
                return false;
        *p = end;
        return true;
}

/* "WORD " at *P: moves past it. */
static bool field_word(const char **p, const char *word)
{
        size_t len = strlen(word);
        if (strncmp(*p, word, len) != 0 || (*p)[len] != ' ')
                return false;
        *p += len + 1;
        return true;
}

static const char *next_line(const char *p)
{
        p = strchr(p, '\n');
        return p ? p + 1 : NULL;
}

int seal_load(struct bsg_seal *ret)
{
        struct bsg_seal s = {0};
        char path[4200], *slot = NULL;
        uint64_t have, source;
        const char *p;
        int r;

        seal_path(path, sizeof(path), "seal");
        r = bsg_read_file(path, STATE_TEXT_MAX, &s.text, NULL);
        if (r < 0)
                return r;
        p = s.text;
        r = -EINVAL;
        if (strncmp(p, SEAL_MAGIC, strlen(SEAL_MAGIC)) != 0)
                goto fail;
        p += strlen(SEAL_MAGIC);
        if (!field_hex64(&p, &s.ctx_hash) || !field_hex64(&p, &s.sys_hash) || !bsg_field_u64(&p, &s.inv_id[0]) ||
            !bsg_field_u64(&p, &s.inv_id[1]) || !bsg_field_u64(&p, &s.inv_id[2]) || *p != '\n')
                goto fail;
        p++;
        if (!field_word(&p, "active") || !bsg_field_u64(&p, &have) || !bsg_field_u64(&p, &source) ||
            bsg_field_read(&p, &slot) < 0 || bsg_field_read(&p, &s.booted_disk) < 0 ||
            bsg_field_read(&p, &s.root_disk) < 0 || *p != '\n')
                goto fail;
        p++;
        s.have_active_slot = have;
        s.slot_source = (int)source;
        if (slot && strlen(slot) >= sizeof(s.active_slot))
                goto fail;
        snprintf(s.active_slot, sizeof(s.active_slot), "%s", slot ? slot : "");
        if (!field_word(&p, "skip") || bsg_field_read(&p, &s.skip_list) < 0 || *p != '\n')
                goto fail;
        s.groups = p + 1;
        const char *v = strstr(p, "\nv\n");
        if (!v)
                goto fail;
        s.groups_len = (size_t)(v + 1 - s.groups);
        s.verdicts = v + 3;
        if (!s.skip_list && !(s.skip_list = strdup(""))) {
                r = -ENOMEM;
                goto fail;
        }
        free(slot);
        *ret = s;
        return 0;
fail:
        free(slot);
        seal_done(&s);
        return r;
}

bool seal_verdict(const struct bsg_seal *s, dev_t devnum, struct bsg_verdict *ret)
{
        uint64_t d, reason;
        const char *p = s->verdicts ? bsg_sorted_lines_find(s->verdicts, s->verdicts + strlen(s->verdicts), devnum)
                                    : NULL;
        if (!p)
                return false;
        p = strchr(p, ' ');
        if (!p || !bsg_field_u64(&p, &d) || !bsg_field_u64(&p, &reason) || d > BSG_SKIP || reason >= _BSG_REASON_MAX)
                return false;
        *ret = (struct bsg_verdict){(enum bsg_decision)d, (enum bsg_reason)reason};
        return true;
}

int seal_group(const struct bsg_seal *s, const uint8_t fsid[BSG_UUID_SIZE], dev_t **ret_devnums, size_t *ret_n)
{
        char key[64], fs[37];
        dev_t *v = NULL;
        size_t n = 0;

        bsg_uuid_format(fsid, fs);
        snprintf(key, sizeof(key), "g %s ", fs);
        /* the group lines start the section, or follow a newline */
        const char *p = s->groups, *end = s->groups + s->groups_len;
        while ((p = memmem(p, (size_t)(end - p), key, strlen(key))) && p != s->groups && p[-1] != '\n')
                p += strlen(key);
        if (p) {
                const char *eol = memchr(p, '\n', (size_t)(end - p));
                p += strlen(key);
                while (eol && p < eol) {
                        unsigned maj, min;
                        const char *e;
                        if (bsg_parse_devnum(p, &maj, &min, &e) < 0 || (*e != ' ' && *e != '\n')) {
                                free(v);
                                return -EINVAL;
                        }
                        dev_t *nv = realloc(v, (n + 1) * sizeof(*nv));
                        if (!nv) {
                                free(v);
                                return -ENOMEM;
                        }
                        v = nv;
                        v[n++] = makedev(maj, min);
                        p = *e == ' ' ? e + 1 : e;
                }
        }
        *ret_devnums = v;
        *ret_n = n;
        return 0;
}

bool seal_verdicts_hold(const struct ctx *c)
{
        for (size_t i = 0; i < c->n; i++) {
                struct bsg_verdict v;
                if (!seal_verdict(&c->seal, c->e[i].devnum, &v) || v.decision != c->e[i].v.decision ||
                    v.reason != c->e[i].v.reason)
                        return false;
        }
        return true;
}

struct seal_data {
        const struct ctx *c;
        const char *skip_list;
        const uint64_t *inv_id;
        size_t *by_num, *by_fs; /* entry indexes (seal_index()) */
        size_t n_by_num, n_by_fs;
};

static void fill_seal(FILE *f, const void *data)
{
        const struct seal_data *d = data;
        const struct ctx *c = d->c;

        fprintf(f, SEAL_MAGIC "%016" PRIx64 " %016" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", c->ctx_hash,
                c->sys_hash, d->inv_id[0], d->inv_id[1], d->inv_id[2]);
        if (c->partial) {
                /* the same decision, the inventory saved anew: everything after the first line stays */
                const char *rest = next_line(c->seal.text);
                fputs(rest ? rest : "", f);
                return;
        }
        fprintf(f, "active %d %d ", c->have_active_slot, (int)c->slot_source);
        bsg_field_write(f, c->have_active_slot ? c->active_slot : NULL);
        fputc(' ', f);
        bsg_field_write(f, c->booted_disk);
        fputc(' ', f);
        bsg_field_write(f, c->root_disk);
        fputs("\nskip ", f);
        bsg_field_write(f, isempty(d->skip_list) ? NULL : d->skip_list);
        fputc('\n', f);
        /* by filesystem: the groups of two or more */
        for (size_t a = 0, b; a < d->n_by_fs; a = b) {
                const struct entry *x = &c->e[d->by_fs[a]];
                for (b = a + 1; b < d->n_by_fs && memcmp(c->e[d->by_fs[b]].pd.fsid, x->pd.fsid, BSG_UUID_SIZE) == 0; b++)
                        ;
                if (b - a < 2)
                        continue;
                char fs[37];
                bsg_uuid_format(x->pd.fsid, fs);
                fprintf(f, "g %s", fs);
                for (size_t k = a; k < b; k++)
                        fprintf(f, " %u:%u", major(c->e[d->by_fs[k]].devnum), minor(c->e[d->by_fs[k]].devnum));
                fputc('\n', f);
        }
        fputs("v\n", f);
        for (size_t k = 0; k < d->n_by_num; k++) {
                const struct entry *e = &c->e[d->by_num[k]];
                fprintf(f, "%u:%u %d %d\n", major(e->devnum), minor(e->devnum), (int)e->v.decision, (int)e->v.reason);
        }
}

static int cmp_by_num(const void *a, const void *b, void *userdata)
{
        const struct entry *e = userdata;
        dev_t x = e[*(const size_t *)a].devnum, y = e[*(const size_t *)b].devnum;
        return x < y ? -1 : x > y;
}

static int cmp_by_fs(const void *a, const void *b, void *userdata)
{
        const struct entry *e = userdata;
        int r = memcmp(e[*(const size_t *)a].pd.fsid, e[*(const size_t *)b].pd.fsid, BSG_UUID_SIZE);
        return r ? r : cmp_by_num(a, b, userdata);
}

static int cmp_by_name(const void *a, const void *b, void *userdata)
{
        const struct entry *e = userdata;
        return strcmp(e[*(const size_t *)a].devnode ?: "", e[*(const size_t *)b].devnode ?: "");
}

/* The entries' indexes by device number (devices with one), and the btrfs ones by fsid; false when two
 * entries share a device number or a name (records of a device whose removal was not seen: the whole
 * set decides until an event of that name drops them) or there is no memory. */
static bool seal_index(struct seal_data *d)
{
        const struct ctx *c = d->c;
        size_t *by_name = calloc(c->n + 1, sizeof(size_t));
        bool ok = by_name && d->by_num && d->by_fs;

        for (size_t i = 0; ok && i < c->n; i++) {
                if (c->e[i].devnum)
                        d->by_num[d->n_by_num++] = i;
                if (c->e[i].devnum && c->e[i].pd.state == BSG_DEV_BTRFS)
                        d->by_fs[d->n_by_fs++] = i;
        }
        if (ok) {
                memcpy(by_name, d->by_num, d->n_by_num * sizeof(size_t));
                qsort_r(d->by_num, d->n_by_num, sizeof(size_t), cmp_by_num, (void *)c->e);
                qsort_r(d->by_fs, d->n_by_fs, sizeof(size_t), cmp_by_fs, (void *)c->e);
                qsort_r(by_name, d->n_by_num, sizeof(size_t), cmp_by_name, (void *)c->e);
        }
        for (size_t k = 1; ok && k < d->n_by_num; k++)
                ok = c->e[d->by_num[k - 1]].devnum != c->e[d->by_num[k]].devnum &&
                     !streq_ptr(c->e[by_name[k - 1]].devnode, c->e[by_name[k]].devnode);
        free(by_name);
        return ok;
}

void seal_update(struct ctx *c, const char *skip_list)
{
        char path[4200], tmp[4220];
        uint64_t id[3];

        seal_path(path, sizeof(path), "seal");
        seal_path(tmp, sizeof(tmp), ".seal.tmp");
        if (c->errors[0] || c->doubt_all || !c->have_sys_hash || c->partial_inputs_changed ||
            !plan_settled(c->e, c->n) || seal_inventory_id(id) < 0) {
                if (unlink(path) < 0 && errno != ENOENT) {
                        /* a seal that stays would let the next event trust a state the kernel is not
                         * in: at least make it one that does not parse */
                        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
                        log_msg("cannot remove %s%s: %s", path, fd >= 0 ? " (emptied)" : "", strerror(errno));
                        if (fd >= 0)
                                close(fd);
                        add_error(c, "seal-failed");
                }
                return;
        }
        if (c->partial && memcmp(id, c->seal.inv_id, sizeof(id)) == 0)
                return; /* nothing saved: the seal holds as it is */
        struct seal_data d = {.c = c, .skip_list = skip_list, .inv_id = id};
        _cleanup_free_ size_t *by_num = NULL, *by_fs = NULL;
        if (!c->partial) {
                d.by_num = by_num = calloc(c->n + 1, sizeof(size_t));
                d.by_fs = by_fs = calloc(c->n + 1, sizeof(size_t));
                if (!seal_index(&d)) {
                        log_debug("two inventory entries of one name or number: no seal");
                        (void)unlink(path);
                        return;
                }
        }
        if (bsg_write_atomic(path, tmp, fill_seal, &d) < 0) {
                log_debug("cannot write %s: %m", path);
                (void)unlink(path);
        }
}

/* Whether inventory lines A (LEN bytes) and B say the same of their device but for the registered
 * flag and the generation (fields 5 and 8), which no verdict reads. */
static bool same_but_generation(const char *a, size_t len, const char *b)
{
        const char *ae = a + len;
        size_t field = 0;

        while (a < ae || *b) {
                size_t la = strcspn(a, " "), lb = strcspn(b, " ");
                if (a + la > ae)
                        la = (size_t)(ae - a);
                if (field != 4 && field != 7 && (la != lb || memcmp(a, b, la) != 0))
                        return false;
                a += la;
                b += lb;
                if ((a < ae) != (*b == ' '))
                        return false; /* one line has more fields */
                if (a < ae) {
                        a++;
                        b++;
                }
                field++;
        }
        return true;
}

int seal_save_partial(struct ctx *c)
{
        _cleanup_free_ struct bsg_splice *v = calloc(c->n_lines + 1, sizeof(*v));
        _cleanup_free_ char **owned = calloc(c->n_lines + 1, sizeof(char *));
        size_t m = 0;
        int r = 0;

        if (!c->state.changed)
                return 0;
        if (!v || !owned)
                return -ENOMEM;
        /* c->lines are in the order of the text (ascending device numbers, as saved) */
        for (size_t i = 0; i < c->n_lines; i++) {
                const struct bsg_record *rec = bsg_state_find(&c->state, c->lines[i].devnum);
                if (!rec) {
                        r = -EINVAL; /* a partial event removes no record: cannot happen */
                        break;
                }
                r = bsg_record_format(rec, &owned[m]);
                if (r < 0)
                        break;
                /* anything but the generation or the registration changed: an input of the sealed
                 * whole-set results (a label, a disk, hot-pluggability); the seal cannot stay */
                if (!same_but_generation(c->inv_text + c->lines[i].start, c->lines[i].end - c->lines[i].start,
                                         owned[m]))
                        c->partial_inputs_changed = true;
                v[m] = (struct bsg_splice){c->lines[i].start, c->lines[i].end, owned[m]};
                m++;
        }
        if (r >= 0)
                r = bsg_state_save_splice(bsg_rundir_path(), c->inv_text, v, m);
        for (size_t i = 0; i < m; i++)
                free(owned[i]);
        return r;
}
