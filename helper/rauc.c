/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rauc.h"
#include "util.h"

static const char *trim(char *s)
{
        char *e;

        while (*s == ' ' || *s == '\t')
                s++;
        e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
                *--e = '\0';
        return s;
}

static bool copy_field(char *dst, size_t size, const char *v)
{
        size_t l = strlen(v);

        if (l >= size)
                return false;
        memcpy(dst, v, l + 1);
        return true;
}

void bsg_rauc_free(struct bsg_rauc_conf *conf)
{
        free(conf->v);
        conf->v = NULL;
        conf->n = 0;
}

int bsg_rauc_parse(const char *text, size_t len, struct bsg_rauc_conf *ret_conf, bsg_rauc_diag_fn diag,
                   void *userdata)
{
        struct bsg_rauc_conf c = {0};
        struct bsg_rauc_slot *cur = NULL;
        unsigned lineno = 0;
        int bad = 0;

#define BAD(msg)                                                                                        \
        do {                                                                                            \
                bad++;                                                                                  \
                if (diag)                                                                               \
                        diag(lineno, (msg), userdata);                                                  \
        } while (0)

        for (size_t i = 0; i < len;) {
                char line[1024];
                lineno++;
                copy_line(text, len, &i, line, sizeof(line));
                const char *s = trim(line);
                if (s[0] == '\0' || s[0] == '#')
                        continue;
                if (s[0] == '[') {
                        const char *end = strchr(s, ']');
                        cur = NULL;
                        if (!end || end[1] != '\0') {
                                BAD("expected [GROUP]");
                                continue;
                        }
                        /* [slot.CLASS.INDEX]: CLASS is everything between the first and the last dot */
                        size_t glen = (size_t)(end - s - 1);
                        if (glen < 5 || strncmp(s + 1, "slot.", 5) != 0)
                                continue; /* [system], [keyring], [handlers], ...: not ours */
                        char group[BSG_RAUC_NAME_MAX + 8];
                        if (glen >= sizeof(group)) {
                                BAD("slot group name too long");
                                continue;
                        }
                        memcpy(group, s + 1, glen);
                        group[glen] = '\0';
                        const char *name = group + 5, *dot = strrchr(name, '.');
                        if (!dot || dot == name || dot[1] == '\0') {
                                BAD("slot group is not [slot.CLASS.INDEX]");
                                continue;
                        }
                        struct bsg_rauc_slot *nv = realloc(c.v, (c.n + 1) * sizeof(*nv));
                        if (!nv) {
                                bsg_rauc_free(&c);
                                return -ENOMEM;
                        }
                        c.v = nv;
                        cur = &c.v[c.n++];
                        memset(cur, 0, sizeof(*cur));
                        if (!copy_field(cur->name, sizeof(cur->name), name)) {
                                BAD("slot name too long");
                                c.n--;
                                cur = NULL;
                                continue;
                        }
                        memcpy(cur->class_, name, (size_t)(dot - name));
                        continue;
                }
                char *eq = strchr(line, '=');
                if (!eq) {
                        BAD("expected KEY=VALUE");
                        continue;
                }
                if (!cur)
                        continue;
                *eq = '\0';
                const char *key = trim(line), *value = trim(eq + 1);
                bool ok = true;
                if (streq(key, "device"))
                        ok = copy_field(cur->device, sizeof(cur->device), value);
                else if (streq(key, "bootname"))
                        ok = copy_field(cur->bootname, sizeof(cur->bootname), value);
                else if (streq(key, "parent"))
                        ok = copy_field(cur->parent, sizeof(cur->parent), value);
                if (!ok)
                        BAD("value too long");
        }
        /* slots without a device are of no use; children take their parent's bootname */
        size_t k = 0;
        for (size_t i = 0; i < c.n; i++) {
                if (c.v[i].device[0] == '\0') {
                        lineno = 0;
                        BAD("slot without device=, ignored");
                        continue;
                }
                c.v[k++] = c.v[i];
        }
        c.n = k;
        for (size_t i = 0; i < c.n; i++) {
                if (c.v[i].parent[0] == '\0')
                        continue;
                for (size_t j = 0; j < c.n; j++)
                        if (streq(c.v[j].name, c.v[i].parent) && c.v[j].parent[0] == '\0')
                                memcpy(c.v[i].bootname, c.v[j].bootname, sizeof(c.v[i].bootname));
        }
#undef BAD
        *ret_conf = c;
        return bad;
}

