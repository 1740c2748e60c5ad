/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "partsets.h"
#include "util.h"

void bsg_partsets_free(struct bsg_partsets *ps)
{
        free(ps->v);
        ps->v = NULL;
        ps->n = 0;
}

int bsg_partset_is_special(const char *set)
{
        return streq(set, "self") || streq(set, "other") || streq(set, "all") || streq(set, "shared");
}

static bool plain_name(const char *s, size_t max)
{
        size_t l = strlen(s);

        if (l == 0 || l >= max || streq(s, ".") || streq(s, ".."))
                return false;
        for (const char *p = s; *p; p++)
                if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
                        return false;
        return true;
}

/* 36 characters, hex digits and dashes at 8, 13, 18, 23 */
static bool is_uuid(const char *s)
{
        if (strlen(s) != 36)
                return false;
        for (int i = 0; i < 36; i++)
                if ((i == 8 || i == 13 || i == 18 || i == 23) ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
                        return false;
        return true;
}

int bsg_partsets_add(struct bsg_partsets *ps, const char *set, const char *text, size_t len)
{
        int bad = 0;

        if (!plain_name(set, BSG_PARTSET_NAME_MAX))
                return -EINVAL;
        for (size_t i = 0; i < len;) {
                char line[256], name[256], uuid[256], extra;
                copy_line(text, len, &i, line, sizeof(line));
                int k = sscanf(line, "%255s %255s %c", name, uuid, &extra);
                if (k <= 0 || name[0] == '#')
                        continue;
                if (k != 2 || !plain_name(name, BSG_PARTSET_ENTRY_MAX) || !is_uuid(uuid)) {
                        bad++;
                        continue;
                }
                struct bsg_partset_entry *nv = realloc(ps->v, (ps->n + 1) * sizeof(*nv));
                if (!nv)
                        return -ENOMEM;
                ps->v = nv;
                struct bsg_partset_entry *e = &ps->v[ps->n++];
                memset(e, 0, sizeof(*e));
                strcpy(e->set, set);
                strcpy(e->name, name);
                for (int c = 0; c < 36; c++)
                        e->partuuid[c] = (char)tolower((unsigned char)uuid[c]);
        }
        return bad;
}

int bsg_partsets_slot_of(const struct bsg_partsets *ps, const char *partuuid, const char **ret_set,
                         const char **ret_name)
{
        const struct bsg_partset_entry *hit = NULL;

        if (!partuuid)
                return 0;
        for (size_t i = 0; i < ps->n; i++) {
                const struct bsg_partset_entry *e = &ps->v[i];
                if (bsg_partset_is_special(e->set) || strcasecmp(e->partuuid, partuuid) != 0)
                        continue;
                if (hit && !streq(hit->set, e->set))
                        return 0; /* in two slots' sets: shared, no slot */
                hit = e;
        }
        if (!hit)
                return 0;
        *ret_set = hit->set;
        *ret_name = hit->name;
        return 1;
}

/* What ordinary set SET says of NAME: 1 it lists it with PARTUUID, -1 with another, 0 not at all. */
static int set_says(const struct bsg_partsets *ps, const char *set, const char *name, const char *partuuid)
{
        for (size_t i = 0; i < ps->n; i++)
                if (streq(ps->v[i].set, set) && streq(ps->v[i].name, name))
                        return streq(ps->v[i].partuuid, partuuid) ? 1 : -1;
        return 0;
}

int bsg_partsets_active(const struct bsg_partsets *ps, const char **ret_set)
{
        const char *found = NULL;

        for (size_t i = 0; i < ps->n; i++) {
                const char *set = ps->v[i].set;
                bool seen = false, all = true, any = false; /* any: some name of self is in SET */
                if (bsg_partset_is_special(set))
                        continue;
                for (size_t k = 0; k < i && !seen; k++)
                        seen = streq(ps->v[k].set, set);
                if (seen)
                        continue;
                for (size_t k = 0; k < ps->n; k++) {
                        if (!streq(ps->v[k].set, "self"))
                                continue;
                        int says = set_says(ps, set, ps->v[k].name, ps->v[k].partuuid);
                        if (says > 0)
                                any = true;
                        else if (says < 0)
                                all = false; /* SET has this name on another partition */
                }
                if (!any || !all)
                        continue;
                if (found)
                        return -ENOENT; /* two sets match self */
                found = set;
        }
        if (!found)
                return -ENOENT;
        *ret_set = found;
        return 0;
}
