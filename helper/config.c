/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "util.h"

#define LINE_MAX_LEN 1024

void bsg_config_init(struct bsg_config *ret_config)
{
        static const char *const def[] = {"-A", "-B", "_a", "_b"};
        struct bsg_config c = {.clone_policy = BSG_CLONE_SKIP_ALL};

        for (size_t i = 0; i < ELEMENTSOF(def); i++)
                strcpy(c.suffixes[i], def[i]);
        c.n_suffixes = ELEMENTSOF(def);
        strcpy(c.rauc_system_conf, "/etc/rauc/system.conf");
        strcpy(c.steamos_partsets, "/efi/SteamOS/partsets");
        *ret_config = c;
}

static char *strip(char *s)
{
        char *e;

        while (*s == ' ' || *s == '\t')
                s++;
        e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
                *--e = '\0';
        /* one pair of surrounding double quotes */
        if (e - s >= 2 && s[0] == '"' && e[-1] == '"') {
                e[-1] = '\0';
                s++;
        }
        return s;
}

static bool is_slot_name(const char *v)
{
        if (strlen(v) >= BSG_SLOT_MAX)
                return false;
        for (const char *p = v; *p; p++)
                if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
                        return false;
        return true;
}

static int parse_suffixes(const char *v, struct bsg_config *c)
{
        struct bsg_config n = *c;
        size_t count = 0;

        for (const char *p = v; *p;) {
                size_t l = strcspn(p, ",");
                char buf[BSG_SUFFIX_MAX];
                if (l == 0 || l >= BSG_SUFFIX_MAX || count >= BSG_MAX_SUFFIXES)
                        return -1;
                memcpy(buf, p, l);
                buf[l] = '\0';
                char *s = strip(buf);
                if (s[0] == '\0' || strpbrk(s, " \t"))
                        return -1;
                strcpy(n.suffixes[count++], s);
                p += l;
                if (*p)
                        p++;
        }
        if (count == 0)
                return -1;
        n.n_suffixes = count;
        *c = n;
        return 0;
}

/* /dev/disk/by-path/NAME, one component, no "..". */
static bool is_trusted_disk_name(const char *path)
{
        const char *name = strncmp(path, "/dev/disk/by-path/", 18) == 0 ? path + 18 : NULL;
        return name && name[0] && !strchr(name, '/') && !streq(name, ".") && !streq(name, "..");
}

/* /dev/NAME, one component: a kernel name (sdb, nvme0n1, md127, dm-0, mmcblk0, loop0...). */
static bool is_kernel_name(const char *path)
{
        const char *name = path + 5;
        return strncmp(path, "/dev/", 5) == 0 && name[0] && !strchr(name, '/') && !streq(name, ".") &&
               !streq(name, "..");
}

bool bsg_is_content_link(const char *path)
{
        /* anywhere in the path: /dev/disk//by-label/x and /dev/../dev/disk/by-uuid/x name them too */
        static const char *const dirs[] = {"/by-label/", "/by-partlabel/", "/by-uuid/", "/by-partuuid/"};
        for (size_t i = 0; path && i < ELEMENTSOF(dirs); i++)
                if (strstr(path, dirs[i]))
                        return true;
        return false;
}

int bsg_config_parse(const char *text, size_t len, const char *filename, struct bsg_config *config,
                     bsg_config_diag_fn diag, void *userdata)
{
        unsigned lineno = 0;
        bool trusted_seen = false; /* the file's trusted_disk= lines replace what CONFIG held */
        int bad = 0;
        size_t i = 0;

#define BAD(msg)                                                                                        \
        do {                                                                                            \
                bad++;                                                                                  \
                if (diag)                                                                               \
                        diag(filename, lineno, (msg), userdata);                                        \
                goto next;                                                                              \
        } while (0)

        while (i < len) {
                char line[LINE_MAX_LEN + 1];
                size_t l = 0;
                bool too_long = false, has_nul = false;

                lineno++;
                while (i < len && text[i] != '\n') {
                        if (text[i] == '\0')
                                has_nul = true;
                        if (l < LINE_MAX_LEN)
                                line[l++] = text[i];
                        else
                                too_long = true;
                        i++;
                }
                if (i < len)
                        i++; /* the newline */
                line[l] = '\0';
                if (too_long)
                        BAD("line too long");
                if (has_nul)
                        BAD("NUL byte in line");
                char *s = strip(line);
                if (s[0] == '\0' || s[0] == '#' || s[0] == ';')
                        continue;
                char *eq = strchr(s, '=');
                if (!eq)
                        BAD("expected KEY=VALUE");
                *eq = '\0';
                char *key = strip(s), *value = strip(eq + 1);
                if (key[0] == '\0')
                        BAD("empty key");
                if (streq(key, "active_slot")) {
                        if (!is_slot_name(value))
                                BAD("active_slot: not a slot name");
                        strcpy(config->active_slot, value);
                } else if (streq(key, "slot_suffixes") || streq(key, "slot_partlabel_suffixes")) {
                        if (parse_suffixes(value, config) < 0)
                                BAD("slot_suffixes: expected 1 to 8 comma-separated suffixes of at most 15 bytes");
                } else if (streq(key, "clone_policy")) {
                        if (streq(value, "skip-all"))
                                config->clone_policy = BSG_CLONE_SKIP_ALL;
                        else if (streq(value, "active"))
                                config->clone_policy = BSG_CLONE_ACTIVE;
                        else
                                BAD("clone_policy: expected skip-all or active");
                } else if (streq(key, "rauc_system_conf") || streq(key, "steamos_partsets")) {
                        char *dst = key[0] == 'r' ? config->rauc_system_conf : config->steamos_partsets;
                        if (strlen(value) >= sizeof(config->rauc_system_conf) || (value[0] && value[0] != '/'))
                                BAD("expected an absolute path (or nothing)");
                        strcpy(dst, value);
                } else if (streq(key, "trusted_disk")) {
                        if (!trusted_seen)
                                config->n_trusted_disks = 0;
                        trusted_seen = true;
                        if (value[0] == '\0') {
                                config->n_trusted_disks = 0;
                                goto next;
                        }
                        if (strncmp(value, "/dev/", 5) != 0 || strlen(value) >= BSG_TRUSTED_DISK_MAX ||
                            strpbrk(value, " \t"))
                                BAD("trusted_disk: expected a path under /dev/ of at most 255 bytes");
                        /* names the content writes (a label, a partition name, a UUID) or the device
                         * reports (by-id: model, serial, WWN; LUKS and md UUIDs): a stick can carry
                         * them too, so they never name trusted storage */
                        if (bsg_is_content_link(value) || strstr(value, "/by-id/"))
                                BAD("trusted_disk: a by-label, by-partlabel, by-uuid, by-partuuid or by-id name is "
                                    "written or reported by the media itself (by-id: its model and serial): name "
                                    "the disk by-path");
                        /* a kernel name follows probe order: a stick present at power-on becomes sdb, and
                         * md127 is whatever array assembles first (its members may be on a USB disk) */
                        if (is_kernel_name(value))
                                BAD("trusted_disk: a kernel name (/dev/sdb, /dev/nvme0n1, /dev/md127...) follows "
                                    "probe order, which a stick present at power-on can take: name the disk by-path "
                                    "(/dev/disk/by-path/NAME; a dm or md device is trusted with the disks under it)");
                        /* the rest is an allowlist: a place (by-path); not /dev/md/NAME or /dev/mapper/NAME
                         * (md superblocks and LVM metadata name them: a dm/md device is trusted with the
                         * disks under it anyway), not by-partsets or by-loop-ref */
                        if (!is_trusted_disk_name(value))
                                BAD("trusted_disk: expected /dev/disk/by-path/NAME: other names (/dev/md/, "
                                    "/dev/mapper/, by-partsets...) may come from the media, and a dm or md device "
                                    "is trusted with the disks under it");
                        if (config->n_trusted_disks >= BSG_MAX_TRUSTED_DISKS)
                                BAD("trusted_disk: more than 16 disks");
                        strcpy(config->trusted_disks[config->n_trusted_disks++], value);
                } else
                        BAD("unknown key");
        next:;
        }
#undef BAD
        return bad;
}
