/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Config file, kernel command line and slot parsing: tables with a `_one()` helper each. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cmdline.h"
#include "config.h"
#include "slot.h"

/* ---- config -------------------------------------------------------------------------------- */

struct diag_log {
        char text[1024];
};

static void diag(const char *filename, unsigned line, const char *message, void *userdata)
{
        struct diag_log *l = userdata;
        snprintf(l->text + strlen(l->text), sizeof(l->text) - strlen(l->text), "%s:%u:%s;", filename, line, message);
}

struct config_case {
        const char *name;
        const char *text;
        int bad;
        const char *active;
        const char *suffixes; /* joined with '|' */
        enum bsg_clone_policy pol;
        const char *diags;
};

static void config_one(const struct config_case *t)
{
        struct bsg_config c;
        struct diag_log log = {""};
        char joined[256] = "";

        check_case = t->name;
        bsg_config_init(&c);
        int r = bsg_config_parse(t->text, strlen(t->text), "test.conf", &c, diag, &log);
        CHECK(r == t->bad);
        CHECK_STREQ(c.active_slot, t->active);
        for (size_t i = 0; i < c.n_suffixes; i++)
                snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s", i ? "|" : "", c.suffixes[i]);
        CHECK_STREQ(joined, t->suffixes);
        CHECK(c.clone_policy == t->pol);
        CHECK_STREQ(log.text, t->diags);
}

#define DEF "-A|-B|_a|_b"
static const struct config_case config_cases[] = {
        {"empty", "", 0, "", DEF, BSG_CLONE_SKIP_ALL, ""},
        {"comments", "# c\n\n   # indented\n; semicolon\n", 0, "", DEF, BSG_CLONE_SKIP_ALL, ""},
        {"example", "active_slot=A\nslot_suffixes=-A,-B\n", 0, "A", "-A|-B", BSG_CLONE_SKIP_ALL, ""},
        {"spaces-quotes", "  active_slot = \"B\"  \nslot_suffixes = _a , _b\n", 0, "B", "_a|_b", BSG_CLONE_SKIP_ALL, ""},
        {"empty-active", "active_slot=\n", 0, "", DEF, BSG_CLONE_SKIP_ALL, ""},
        {"crlf", "active_slot=B\r\n", 0, "B", DEF, BSG_CLONE_SKIP_ALL, ""},
        {"policy-active", "clone_policy=active\n", 0, "", DEF, BSG_CLONE_ACTIVE, ""},
        {"alias", "slot_partlabel_suffixes=_a,_b\n", 0, "", "_a|_b", BSG_CLONE_SKIP_ALL, ""},
        {"no-equals", "active_slot=A\nnonsense\n", 1, "A", DEF, BSG_CLONE_SKIP_ALL, "test.conf:2:expected KEY=VALUE;"},
        {"empty-key", "=value\n", 1, "", DEF, BSG_CLONE_SKIP_ALL, "test.conf:1:empty key;"},
        {"unknown-key", "\n\nfrobnicate=1\n", 1, "", DEF, BSG_CLONE_SKIP_ALL, "test.conf:3:unknown key;"},
        {"bad-policy", "clone_policy=maybe\n", 1, "", DEF, BSG_CLONE_SKIP_ALL,
         "test.conf:1:clone_policy: expected skip-all or active;"},
        {"bad-slot", "active_slot=a b\n", 1, "", DEF, BSG_CLONE_SKIP_ALL, "test.conf:1:active_slot: not a slot name;"},
        {"bad-suffixes-kept", "slot_suffixes=-A,,-B\n", 1, "", DEF, BSG_CLONE_SKIP_ALL,
         "test.conf:1:slot_suffixes: expected 1 to 8 comma-separated suffixes of at most 15 bytes;"},
        {"bad-then-good", "x\nactive_slot=B\n", 1, "B", DEF, BSG_CLONE_SKIP_ALL, "test.conf:1:expected KEY=VALUE;"},
        {"last-wins", "active_slot=A\nactive_slot=B\n", 0, "B", DEF, BSG_CLONE_SKIP_ALL, ""},
        {"no-final-newline", "active_slot=B", 0, "B", DEF, BSG_CLONE_SKIP_ALL, ""},
};

/* ---- command line ------------------------------------------------------------------------- */

struct cmdline_case {
        const char *cmdline;
        const char *key;
        const char *want; /* NULL: absent */
};

static void cmdline_one(const struct cmdline_case *t)
{
        char *v = NULL;

        check_case = t->cmdline;
        int r = bsg_cmdline_get(t->cmdline, strlen(t->cmdline), t->key, &v);
        if (t->want) {
                CHECK(r == 0);
                CHECK_STREQ(v, t->want);
        } else
                CHECK(r == -ENOENT);
        free(v);
}

static const struct cmdline_case cmdline_cases[] = {
        {"root=PARTLABEL=rootfs-A rw quiet", "root", "PARTLABEL=rootfs-A"},
        {"root=/dev/sda1 rauc.slot=B\n", "rauc.slot", "B"},
        {"btrfs_scan_gate.slot=B", "btrfs-scan-gate.slot", "B"},
        {"btrfs-scan-gate.slot=A btrfs-scan-gate.slot=B", "btrfs-scan-gate.slot", "B"},
        {"foo=\"bar baz\" x=1", "foo", "bar baz"},
        {"\"quoted=arg here\"", "quoted", "arg here"},
        {"root=PARTLABEL=\"rootfs B\"", "root", "PARTLABEL=rootfs B"},
        {"quiet", "quiet", ""},
        {"quietly", "quiet", NULL},
        {"", "root", NULL},
        {"rd.steamos.efi=PARTLABEL=efi-B", "steamos.efi", NULL},
        {"rd.steamos.efi=PARTLABEL=efi-B", "rd.steamos.efi", "PARTLABEL=efi-B"},
        {"a==b ==c = \t\n root=x", "root", "x"},
        {"androidboot.slot_suffix=_b", "androidboot.slot_suffix", "_b"},
};

/* ---- slots ---------------------------------------------------------------------------------- */

struct label_case {
        const char *label;
        const char *suffixes; /* config text, NULL: defaults */
        const char *slot;     /* NULL: no slot */
        const char *base;
};

static void label_one(const struct label_case *t)
{
        struct bsg_config c;
        char slot[BSG_SLOT_MAX] = "untouched", base[256] = "untouched";

        check_case = t->label ? t->label : "(null)";
        bsg_config_init(&c);
        if (t->suffixes)
                CHECK(bsg_config_parse(t->suffixes, strlen(t->suffixes), "t", &c, NULL, NULL) == 0);
        int r = bsg_slot_from_label(t->label, &c, slot, base);
        if (t->slot) {
                CHECK(r == 1);
                CHECK_STREQ(slot, t->slot);
                CHECK_STREQ(base, t->base);
        } else {
                CHECK(r == 0);
                CHECK_STREQ(slot, "untouched");
        }
}

static const struct label_case label_cases[] = {
        {"rootfs-A", NULL, "A", "rootfs"},
        {"rootfs-B", NULL, "B", "rootfs"},
        {"rootfs_a", NULL, "A", "rootfs"},
        {"home_b", NULL, "B", "home"},
        {"home", NULL, NULL, NULL},
        {"esp", NULL, NULL, NULL},
        {"-A", NULL, NULL, NULL}, /* nothing left without the suffix */
        {NULL, NULL, NULL, NULL},
        {"rootfs-a", NULL, NULL, NULL}, /* suffixes are case-sensitive */
        {"rootfs.0", "slot_suffixes=.0,.1\n", "0", "rootfs"},
        {"system_a", "slot_suffixes=-A,-B\n", NULL, NULL},
};

struct active_case {
        const char *name;
        const char *config;
        const char *cmdline;
        const char *root_source;
        const char *want; /* NULL: unknown */
        enum bsg_slot_source source;
};

static const struct bsg_partition parts[] = {
        {"/dev/sda1", "efi-A", "aaaaaaaa-0000-4000-8000-000000000001", NULL},
        {"/dev/sda2", "efi-B", "aaaaaaaa-0000-4000-8000-000000000002", NULL},
        {"/dev/sda4", "rootfs-A", "aaaaaaaa-0000-4000-8000-000000000004", "11111111-1111-4111-8111-111111111111"},
        {"/dev/sda5", "rootfs-B", "aaaaaaaa-0000-4000-8000-000000000005", "11111111-1111-4111-8111-111111111111"},
        {"/dev/sda8", "home", "aaaaaaaa-0000-4000-8000-000000000008", "33333333-3333-4333-8333-333333333333"},
        {"/dev/sdb1", "rootfs_b", NULL, "44444444-4444-4444-8444-444444444444"},
};

static void active_one(const struct active_case *t)
{
        struct bsg_config c;
        char slot[BSG_SLOT_MAX] = "";
        enum bsg_slot_source src = BSG_SLOT_SOURCE_NONE;

        check_case = t->name;
        bsg_config_init(&c);
        if (t->config)
                bsg_config_parse(t->config, strlen(t->config), "t", &c, NULL, NULL);
        int r = bsg_active_slot(&c, t->cmdline, parts, sizeof(parts) / sizeof(parts[0]), t->root_source, slot, &src);
        if (t->want) {
                CHECK(r == 0);
                CHECK_STREQ(slot, t->want);
                CHECK_STREQ(bsg_slot_source_name(src), bsg_slot_source_name(t->source));
        } else
                CHECK(r == -ENOENT);
}

static const struct active_case active_cases[] = {
        {"config-wins", "active_slot=b\n", "rauc.slot=A root=PARTLABEL=rootfs-A", NULL, "B", BSG_SLOT_SOURCE_CONFIG},
        {"gate-param", NULL, "btrfs-scan-gate.slot=B rauc.slot=A", NULL, "B", BSG_SLOT_SOURCE_GATE_CMDLINE},
        {"gate-param-underscores", NULL, "btrfs_scan_gate.slot=b", NULL, "B", BSG_SLOT_SOURCE_GATE_CMDLINE},
        {"rauc", NULL, "root=/dev/sda4 rauc.slot=B", NULL, "B", BSG_SLOT_SOURCE_RAUC},
        {"android", NULL, "androidboot.slot_suffix=_b root=/dev/sda4", NULL, "B", BSG_SLOT_SOURCE_ANDROID},
        {"steamos-partlabel", NULL, "steamos.efi=PARTLABEL=efi-B root=PARTLABEL=rootfs-A", NULL, "B",
         BSG_SLOT_SOURCE_STEAMOS},
        {"steamos-partuuid", NULL, "rd.steamos.efi=PARTUUID=AAAAAAAA-0000-4000-8000-000000000002", NULL, "B",
         BSG_SLOT_SOURCE_STEAMOS},
        {"root-partlabel", NULL, "root=PARTLABEL=rootfs-B rw", NULL, "B", BSG_SLOT_SOURCE_ROOT},
        {"root-partlabel-absent-device", NULL, "root=PARTLABEL=system-A", NULL, "A", BSG_SLOT_SOURCE_ROOT},
        {"root-partuuid", NULL, "root=PARTUUID=aaaaaaaa-0000-4000-8000-000000000005", NULL, "B", BSG_SLOT_SOURCE_ROOT},
        {"root-path", NULL, "root=/dev/sdb1", NULL, "B", BSG_SLOT_SOURCE_ROOT},
        {"root-uuid-unique", NULL, "root=UUID=44444444-4444-4444-8444-444444444444", NULL, "B", BSG_SLOT_SOURCE_ROOT},
        /* UUID= of a clone pair names both copies: no answer from it, fall through to the mount */
        {"root-uuid-clone", NULL, "root=UUID=11111111-1111-4111-8111-111111111111", "/dev/sda5", "B",
         BSG_SLOT_SOURCE_MOUNTED_ROOT},
        {"root-no-slot", NULL, "root=/dev/sda8", NULL, NULL, BSG_SLOT_SOURCE_NONE},
        {"mounted-root", NULL, "quiet", "/dev/sda4", "A", BSG_SLOT_SOURCE_MOUNTED_ROOT},
        {"bad-rauc-value-falls-through", NULL, "rauc.slot=\"a b\" root=PARTLABEL=rootfs-A", NULL, "A",
         BSG_SLOT_SOURCE_ROOT},
        {"nothing", NULL, NULL, NULL, NULL, BSG_SLOT_SOURCE_NONE},
};

/* trusted_disk= (issue 18): paths under /dev, repeated, an empty value forgets the earlier ones */
struct trusted_case {
        const char *name;
        const char *text;
        int bad;
        const char *disks; /* joined with '|' */
        const char *diags;
};

static const struct trusted_case trusted_cases[] = {
        {"one", "trusted_disk=/dev/disk/by-path/pci-0000:04:00.0-nvme-1\n", 0, "/dev/disk/by-path/pci-0000:04:00.0-nvme-1",
         ""},
        /* a serial, a model, a WWN: what a USB device reports about itself */
        {"by-id", "trusted_disk=/dev/disk/by-id/usb-Vendor_Disk_0123-0:0\ntrusted_disk=/dev/disk/by-path/pci-0000:04:00.0-nvme-1\n", 1,
         "/dev/disk/by-path/pci-0000:04:00.0-nvme-1",
         "test.conf:1:trusted_disk: a by-label, by-partlabel, by-uuid, by-partuuid or by-id name is written or reported by the media itself (by-id: its model and serial): name the disk by-path;"},
        {"two", "trusted_disk=/dev/disk/by-path/pci-0000:00:04.0\ntrusted_disk = \"/dev/disk/by-path/pci-0000:00:05.0\"\n", 0,
         "/dev/disk/by-path/pci-0000:00:04.0|/dev/disk/by-path/pci-0000:00:05.0", ""},
        {"reset", "trusted_disk=/dev/disk/by-path/a\ntrusted_disk=\ntrusted_disk=/dev/disk/by-path/b\n", 0,
         "/dev/disk/by-path/b", ""},
        /* a name a stick can take never grants trust: kernel names follow probe order */
        {"kernel-name-sd", "trusted_disk=/dev/sdb\n", 1, "", "test.conf:1:trusted_disk: a kernel name (/dev/sdb, /dev/nvme0n1, /dev/md127...) follows probe order, which a stick present at power-on can take: name the disk by-path (/dev/disk/by-path/NAME; a dm or md device is trusted with the disks under it);"},
        {"kernel-name-md", "trusted_disk=/dev/md127\n", 1, "", "test.conf:1:trusted_disk: a kernel name (/dev/sdb, /dev/nvme0n1, /dev/md127...) follows probe order, which a stick present at power-on can take: name the disk by-path (/dev/disk/by-path/NAME; a dm or md device is trusted with the disks under it);"},
        {"kernel-name-nvme", "trusted_disk=/dev/nvme0n1\ntrusted_disk=/dev/disk/by-path/x\n", 1, "/dev/disk/by-path/x",
         "test.conf:1:trusted_disk: a kernel name (/dev/sdb, /dev/nvme0n1, /dev/md127...) follows probe order, which a stick present at power-on can take: name the disk by-path (/dev/disk/by-path/NAME; a dm or md device is trusted with the disks under it);"},
        {"kernel-name-loop", "trusted_disk=/dev/loop0\n", 1, "", "test.conf:1:trusted_disk: a kernel name (/dev/sdb, /dev/nvme0n1, /dev/md127...) follows probe order, which a stick present at power-on can take: name the disk by-path (/dev/disk/by-path/NAME; a dm or md device is trusted with the disks under it);"},
        {"relative", "trusted_disk=loop0\n", 1, "", "test.conf:1:trusted_disk: expected a path under /dev/ of at most 255 bytes;"},
        {"not-dev", "trusted_disk=/tmp/x\n", 1, "", "test.conf:1:trusted_disk: expected a path under /dev/ of at most 255 bytes;"},
        {"blank-inside", "trusted_disk=/dev/a b\n", 1, "", "test.conf:1:trusted_disk: expected a path under /dev/ of at most 255 bytes;"},
        {"by-partlabel", "trusted_disk=/dev/disk/by-partlabel/rootfs-A\n", 1, "",
         "test.conf:1:trusted_disk: a by-label, by-partlabel, by-uuid, by-partuuid or by-id name is written or reported by the media itself (by-id: its model and serial): name the disk by-path;"},
        {"by-uuid", "trusted_disk=/dev/disk/by-uuid/0000\ntrusted_disk=/dev/disk/by-path/pci-0000:00:04.0\n", 1,
         "/dev/disk/by-path/pci-0000:00:04.0",
         "test.conf:1:trusted_disk: a by-label, by-partlabel, by-uuid, by-partuuid or by-id name is written or reported by the media itself (by-id: its model and serial): name the disk by-path;"},
        {"bad-then-good", "trusted_disk=x\ntrusted_disk=/dev/disk/by-path/v\n", 1, "/dev/disk/by-path/v",
         "test.conf:1:trusted_disk: expected a path under /dev/ of at most 255 bytes;"},
        /* an allowlist of name forms: by-path only */
        {"md-name", "trusted_disk=/dev/md/root\ntrusted_disk=/dev/disk/by-path/pci-0000:04:00.0-nvme-1\n", 1, "/dev/disk/by-path/pci-0000:04:00.0-nvme-1",
         "test.conf:1:trusted_disk: expected /dev/disk/by-path/NAME: other names (/dev/md/, /dev/mapper/, by-partsets...) may come from the media, and a dm or md device is trusted with the disks under it;"},
        {"mapper-name", "trusted_disk=/dev/mapper/vg-root\ntrusted_disk=/dev/disk/by-path/pci-0000:04:00.0-nvme-1\n", 1, "/dev/disk/by-path/pci-0000:04:00.0-nvme-1",
         "test.conf:1:trusted_disk: expected /dev/disk/by-path/NAME: other names (/dev/md/, /dev/mapper/, by-partsets...) may come from the media, and a dm or md device is trusted with the disks under it;"},
        {"by-partsets", "trusted_disk=/dev/disk/by-partsets/A/rootfs\ntrusted_disk=/dev/disk/by-path/pci-0000:04:00.0-nvme-1\n", 1, "/dev/disk/by-path/pci-0000:04:00.0-nvme-1",
         "test.conf:1:trusted_disk: expected /dev/disk/by-path/NAME: other names (/dev/md/, /dev/mapper/, by-partsets...) may come from the media, and a dm or md device is trusted with the disks under it;"},
        {"by-path-dotdot", "trusted_disk=/dev/disk/by-path/../by-loop-ref/x\ntrusted_disk=/dev/disk/by-path/pci-0000:04:00.0-nvme-1\n", 1, "/dev/disk/by-path/pci-0000:04:00.0-nvme-1",
         "test.conf:1:trusted_disk: expected /dev/disk/by-path/NAME: other names (/dev/md/, /dev/mapper/, by-partsets...) may come from the media, and a dm or md device is trusted with the disks under it;"},
        {"dev-dotdot", "trusted_disk=/dev/..\ntrusted_disk=/dev/disk/by-path/pci-0000:04:00.0-nvme-1\n", 1, "/dev/disk/by-path/pci-0000:04:00.0-nvme-1",
         "test.conf:1:trusted_disk: expected /dev/disk/by-path/NAME: other names (/dev/md/, /dev/mapper/, by-partsets...) may come from the media, and a dm or md device is trusted with the disks under it;"},
        /* the link directory anywhere in the path (review finding 5) */
        {"by-label-double-slash", "trusted_disk=/dev/disk//by-label/root\n", 1, "",
         "test.conf:1:trusted_disk: a by-label, by-partlabel, by-uuid, by-partuuid or by-id name is written or reported by the media itself (by-id: its model and serial): name the disk by-path;"},
        {"by-partuuid-dotdot", "trusted_disk=/dev/../dev/disk/by-partuuid/00\n", 1, "",
         "test.conf:1:trusted_disk: a by-label, by-partlabel, by-uuid, by-partuuid or by-id name is written or reported by the media itself (by-id: its model and serial): name the disk by-path;"},
};

static void trusted_one(const struct trusted_case *t)
{
        struct bsg_config c;
        struct diag_log log = {""};
        char joined[1024] = "";

        check_case = t->name;
        bsg_config_init(&c);
        CHECK(bsg_config_parse(t->text, strlen(t->text), "test.conf", &c, diag, &log) == t->bad);
        for (size_t i = 0; i < c.n_trusted_disks; i++)
                snprintf(joined + strlen(joined), sizeof(joined) - strlen(joined), "%s%s", i ? "|" : "", c.trusted_disks[i]);
        CHECK_STREQ(joined, t->disks);
        CHECK_STREQ(log.text, t->diags);
}

int main(void)
{
        for (size_t i = 0; i < sizeof(trusted_cases) / sizeof(trusted_cases[0]); i++)
                trusted_one(&trusted_cases[i]);
        /* RAUC's device= and steamos.efi= anchor nothing through these (review finding 5) */
        check_case = "content-link";
        CHECK(bsg_is_content_link("/dev/disk/by-partlabel/rootfs.0"));
        CHECK(bsg_is_content_link("/dev/disk/by-uuid/x"));
        CHECK(!bsg_is_content_link("/dev/disk/by-path/pci-0000:00:04.0-part2"));
        CHECK(!bsg_is_content_link("/dev/disk/by-id/nvme-x-part2"));
        CHECK(!bsg_is_content_link("/dev/sda2"));
        check_case = "trusted-disk-too-many";
        {
                struct bsg_config c;
                struct diag_log log = {""};
                char text[2048] = "";
                for (int i = 0; i < 17; i++)
                        snprintf(text + strlen(text), sizeof(text) - strlen(text), "trusted_disk=/dev/disk/by-path/d%d\n", i);
                bsg_config_init(&c);
                CHECK(bsg_config_parse(text, strlen(text), "t", &c, diag, &log) == 1);
                CHECK(c.n_trusted_disks == 16);
                CHECK_STREQ(log.text, "t:17:trusted_disk: more than 16 disks;");
        }

        for (size_t i = 0; i < sizeof(config_cases) / sizeof(config_cases[0]); i++)
                config_one(&config_cases[i]);

        check_case = "config-nul-and-long";
        {
                struct bsg_config c;
                struct diag_log log = {""};
                static char text[3000];
                memset(text, 'k', 2000);
                memcpy(text + 2000, "=v\nactive_slot=A\n", 17);
                bsg_config_init(&c);
                CHECK(bsg_config_parse(text, strlen(text), "t", &c, diag, &log) == 1);
                CHECK_STREQ(c.active_slot, "A");
                CHECK_STREQ(log.text, "t:1:line too long;");
                const char nul[] = "active_slot=A\0B\nclone_policy=active\n";
                bsg_config_init(&c);
                log.text[0] = '\0';
                CHECK(bsg_config_parse(nul, sizeof(nul) - 1, "t", &c, diag, &log) == 1);
                CHECK_STREQ(log.text, "t:1:NUL byte in line;");
                CHECK(c.clone_policy == BSG_CLONE_ACTIVE);
        }

        for (size_t i = 0; i < sizeof(cmdline_cases) / sizeof(cmdline_cases[0]); i++)
                cmdline_one(&cmdline_cases[i]);
        for (size_t i = 0; i < sizeof(label_cases) / sizeof(label_cases[0]); i++)
                label_one(&label_cases[i]);
        for (size_t i = 0; i < sizeof(active_cases) / sizeof(active_cases[0]); i++)
                active_one(&active_cases[i]);

        check_case = "normalize";
        {
                char s[BSG_SLOT_MAX];
                CHECK(bsg_slot_normalize("_a", s) == 0);
                CHECK_STREQ(s, "A");
                CHECK(bsg_slot_normalize("-B", s) == 0);
                CHECK_STREQ(s, "B");
                CHECK(bsg_slot_normalize("system0", s) == 0);
                CHECK_STREQ(s, "SYSTEM0");
                CHECK(bsg_slot_normalize("", s) == -EINVAL);
                CHECK(bsg_slot_normalize("__", s) == -EINVAL);
                CHECK(bsg_slot_normalize("a b", s) == -EINVAL);
                CHECK(bsg_slot_normalize("0123456789012345678901234567890123", s) == -EINVAL);
        }
        return check_finish("test-config");
}
