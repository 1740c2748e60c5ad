/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rank.h"
#include "util.h"

static const struct {
        const char *tag, *link;
} name_forms[_BSG_NAME_MAX] = {
        [BSG_NAME_UUID] = {"UUID=", "/dev/disk/by-uuid/"},
        [BSG_NAME_LABEL] = {"LABEL=", "/dev/disk/by-label/"},
        [BSG_NAME_PARTUUID] = {"PARTUUID=", "/dev/disk/by-partuuid/"},
        [BSG_NAME_PARTLABEL] = {"PARTLABEL=", "/dev/disk/by-partlabel/"},
};

/* The next byte of *S with udev's \xHH escape undone (udev's database holds names encoded, sysfs and
 * superblocks hold them plain); advances *S. */
static int next_byte(const char **s)
{
        const char *p = *s;

        if (p[0] == '\\' && p[1] == 'x' && hexval(p[2]) >= 0 && hexval(p[3]) >= 0) {
                *s = p + 4;
                return hexval(p[2]) * 16 + hexval(p[3]);
        }
        *s = p + 1;
        return (unsigned char)p[0];
}

/* Names compared as the links are made: decoded; UUIDs without regard to case. */
static int name_cmp(enum bsg_name_kind kind, const char *a, const char *b)
{
        bool icase = kind == BSG_NAME_UUID || kind == BSG_NAME_PARTUUID;

        for (;;) {
                int x = next_byte(&a), y = next_byte(&b);
                if (icase && x >= 'A' && x <= 'Z')
                        x += 'a' - 'A';
                if (icase && y >= 'A' && y <= 'Z')
                        y += 'a' - 'A';
                if (x != y || x == 0)
                        return x - y;
        }
}

/* A copy of S (N bytes) with udev's \xHH and fstab's \NNN escapes undone, quotes around it dropped. */
static char *unescape(const char *s, size_t n)
{
        if (n >= 2 && s[0] == '"' && s[n - 1] == '"')
                s++, n -= 2;
        char *r = malloc(n + 1), *o = r;
        if (!r)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '\\' && i + 3 < n && s[i + 1] == 'x' && hexval(s[i + 2]) >= 0 && hexval(s[i + 3]) >= 0) {
                        *o++ = (char)(hexval(s[i + 2]) * 16 + hexval(s[i + 3]));
                        i += 3;
                } else if (s[i] == '\\' && i + 3 < n && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
                           s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
                        *o++ = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
                        i += 3;
                } else
                        *o++ = s[i];
        }
        *o = '\0';
        return r;
}

static int reserved_add_n(struct bsg_reserved *r, const char *spec, size_t len)
{
        for (enum bsg_name_kind k = 0; k < _BSG_NAME_MAX; k++) {
                const char *forms[2] = {name_forms[k].tag, name_forms[k].link};
                for (size_t f = 0; f < 2; f++) {
                        size_t l = strlen(forms[f]);
                        if (len <= l || strncmp(spec, forms[f], l) != 0)
                                continue;
                        struct bsg_reserved_name *nv = realloc(r->v, (r->n + 1) * sizeof(*nv));
                        if (!nv)
                                return -ENOMEM;
                        r->v = nv;
                        char *value = unescape(spec + l, len - l);
                        if (!value)
                                return -ENOMEM;
                        if (!*value) {
                                free(value);
                                return 0;
                        }
                        r->v[r->n++] = (struct bsg_reserved_name){k, value};
                        return 1;
                }
        }
        return 0;
}

int bsg_reserved_add(struct bsg_reserved *r, const char *spec)
{
        return spec ? reserved_add_n(r, spec, strlen(spec)) : 0;
}

int bsg_reserved_add_options(struct bsg_reserved *r, const char *options)
{
        for (const char *p = options; p && *p;) {
                size_t n = strcspn(p, ",");
                if (n > 7 && strncmp(p, "device=", 7) == 0 && reserved_add_n(r, p + 7, n - 7) < 0)
                        return -ENOMEM;
                p += n + (p[n] == ',');
        }
        return 0;
}

int bsg_reserved_add_tab(struct bsg_reserved *r, const char *text, bool crypttab)
{
        for (const char *p = text; p && *p;) {
                const char *end = strchrnul(p, '\n');
                _cleanup_free_ char *line = strndup(p, (size_t)(end - p));
                if (!line)
                        return -ENOMEM;
                char *save = NULL, *first = strtok_r(line, " \t\r", &save);
                if (first && first[0] != '#') {
                        /* fstab: source, mount point, type, options; crypttab: name, source */
                        const char *spec = crypttab ? strtok_r(NULL, " \t\r", &save) : first;
                        (void)strtok_r(NULL, " \t\r", &save);
                        (void)strtok_r(NULL, " \t\r", &save);
                        const char *opts = crypttab ? NULL : strtok_r(NULL, " \t\r", &save);
                        if (bsg_reserved_add(r, spec) < 0 || bsg_reserved_add_options(r, opts) < 0)
                                return -ENOMEM;
                }
                p = *end ? end + 1 : end;
        }
        return 0;
}

int bsg_reserved_add_unit(struct bsg_reserved *r, const char *text)
{
        for (const char *p = text; p && *p;) {
                const char *end = strchrnul(p, '\n');
                p += strspn(p, " \t");
                if (strncmp(p, "What", 4) == 0 && p[4 + strspn(p + 4, " \t")] == '=') {
                        const char *v = p + 4 + strspn(p + 4, " \t") + 1, *e = end;
                        v += strspn(v, " \t");
                        while (e > v && strchr(" \t\r", e[-1]))
                                e--;
                        if (reserved_add_n(r, v, (size_t)(e - v)) < 0)
                                return -ENOMEM;
                }
                p = *end ? end + 1 : end;
        }
        return 0;
}

void bsg_reserved_free(struct bsg_reserved *r)
{
        for (size_t i = 0; i < r->n; i++)
                free(r->v[i].value);
        free(r->v);
        *r = (struct bsg_reserved){0};
}

/* The kernel holds a mounted device already: it never loses (a system booted from a stick). */
static bool in_use(const struct bsg_device *d)
{
        return d->self_mounted || d->mounted_member;
}

/* The names of D, one key each: its /dev/disk names, and for btrfs the UUIDs the kernel matches it
 * by (fsid, metadata_uuid). A stale or hidden superblock (a partitioned whole disk, a zoned device, a
 * held member) carries no filesystem name anyone is shown. */
struct key {
        enum bsg_name_kind kind;
        const char *s; /* NULL: the UUID in buf (a key moves when sorted: no pointer into itself) */
        char buf[37];
        size_t dev;
};

static const char *key_name(const struct key *k)
{
        return k->s ? k->s : k->buf;
}

static size_t keys_of(const struct bsg_device *d, size_t dev, struct key ret[_BSG_NAME_MAX + 2])
{
        bool fs_names = !d->partitioned_disk && !d->zoned && !d->held;
        size_t n = 0;

        for (enum bsg_name_kind k = 0; k < _BSG_NAME_MAX; k++)
                if (!isempty(d->names[k]) && (fs_names || k == BSG_NAME_PARTUUID || k == BSG_NAME_PARTLABEL))
                        ret[n++] = (struct key){.kind = k, .s = d->names[k], .dev = dev};
        if (d->state == BSG_DEV_BTRFS && fs_names) {
                ret[n] = (struct key){.kind = BSG_NAME_UUID, .dev = dev};
                bsg_uuid_format(d->fsid, ret[n].buf);
                n++;
                if (d->metadata_uuid_feature) {
                        ret[n] = (struct key){.kind = BSG_NAME_UUID, .dev = dev};
                        bsg_uuid_format(d->metadata_uuid, ret[n].buf);
                        n++;
                }
        }
        return n;
}

static int cmp_key(const void *a, const void *b)
{
        const struct key *x = a, *y = b;
        if (x->kind != y->kind)
                return x->kind < y->kind ? -1 : 1;
        return name_cmp(x->kind, key_name(x), key_name(y));
}

bool bsg_name_equal(enum bsg_name_kind kind, const char *a, const char *b)
{
        return name_cmp(kind, a, b) == 0;
}

bool bsg_reserved_has(const struct bsg_reserved *r, const struct bsg_device *d)
{
        struct key keys[_BSG_NAME_MAX + 2];
        size_t n = keys_of(d, 0, keys);

        if (r->lost && n > 0)
                return true;
        for (size_t i = 0; i < r->n; i++)
                for (size_t k = 0; k < n; k++)
                        if (keys[k].kind == r->v[i].kind && bsg_name_equal(keys[k].kind, key_name(&keys[k]), r->v[i].value))
                                return true;
        return false;
}

/* A label or a partition name is a person's word, often a tool's default ("Linux filesystem",
 * "primary"): two disks inside the machine may well share one. Against fixed storage only what
 * identifies (the filesystem, a UUID, a PARTUUID) decides a collision; hot-pluggable media loses by
 * any name. */
static bool is_given_name(enum bsg_name_kind kind)
{
        return kind == BSG_NAME_LABEL || kind == BSG_NAME_PARTLABEL;
}

int bsg_outranked(const struct bsg_device *devs, size_t n, bool *ret_outranked)
{
        _cleanup_free_ struct key *keys = malloc((n * (_BSG_NAME_MAX + 2) + 1) * sizeof(struct key));
        size_t nk = 0;

        for (size_t i = 0; i < n; i++) {
                const struct bsg_device *d = &devs[i];
                /* the fsid of a mounted filesystem is the system's; a reserved name is trusted storage's
                 * against hot-pluggable media even before the trusted device is there (a fixed disk the
                 * boot does not name may be the only carrier of the root: it loses only a collision) */
                ret_outranked[i] = !in_use(d) && ((d->rank < BSG_RANK_TRUSTED && d->fsid_mounted) ||
                                                  (d->rank == BSG_RANK_HOTPLUG && d->reserved));
                if (keys)
                        nk += keys_of(d, i, keys + nk);
                else if (!in_use(d) && d->rank < BSG_RANK_TRUSTED)
                        ret_outranked[i] = true; /* no memory to compare: fail closed */
        }
        if (!keys)
                return -ENOMEM;
        qsort(keys, nk, sizeof(*keys), cmp_key);
        for (size_t a = 0, b; a < nk; a = b) {
                enum bsg_rank top = devs[keys[a].dev].rank;
                for (b = a + 1; b < nk && cmp_key(&keys[a], &keys[b]) == 0; b++)
                        if (devs[keys[b].dev].rank > top)
                                top = devs[keys[b].dev].rank;
                for (size_t k = a; k < b; k++)
                        if (devs[keys[k].dev].rank < top && !in_use(&devs[keys[k].dev]) &&
                            !(devs[keys[k].dev].rank == BSG_RANK_FIXED && is_given_name(keys[k].kind)))
                                ret_outranked[keys[k].dev] = true;
        }
        return 0;
}
