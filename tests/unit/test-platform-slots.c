/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Slots from the platform (issue 12): RAUC system.conf files shaped like the examples of RAUC's
 * documentation (reference.rst "System Configuration File", integration.rst), the active bootname
 * from rauc.slot= / bootchooser.active=, and SteamOS partset files (A, B, dev, self, other, shared).
 * One table per module, a `_one()` helper each. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "partsets.h"
#include "rauc.h"
#include "slot.h"

/* ---- RAUC system.conf ------------------------------------------------------------------------ */

/* the reference's example: [system], [keyring], two rootfs slots with bootnames, barebox */
static const char rauc_reference[] =
        "[system]\n"
        "compatible=FooCorp Super BarBazzer\n"
        "bootloader=barebox\n"
        "data-directory=/srv/rauc\n"
        "\n"
        "[keyring]\n"
        "path=/etc/rauc/keyring.pem\n"
        "\n"
        "[handlers]\n"
        "system-info=/usr/lib/rauc/info-provider.sh\n"
        "post-install=/usr/lib/rauc/postinst.sh\n"
        "\n"
        "[slot.rootfs.0]\n"
        "device=/dev/sda0\n"
        "type=ext4\n"
        "bootname=system0\n"
        "\n"
        "[slot.rootfs.1]\n"
        "device=/dev/sda1\n"
        "type=ext4\n"
        "bootname=system1\n";

/* integration's A/B with child application slots on MBR partitions of an eMMC (no labels) */
static const char rauc_children[] =
        "# A/B on an eMMC with an MBR\n"
        "[system]\n"
        "compatible=Example Board\n"
        "bootloader=uboot\n"
        "\n"
        "[slot.rootfs.0]\n"
        "device = /dev/mmcblk0p2\n"
        "type=ext4\n"
        "bootname=A\n"
        "\n"
        "[slot.rootfs.1]\n"
        "device=/dev/mmcblk0p3\n"
        "type=ext4\n"
        "bootname=B\n"
        "\n"
        "[slot.appfs.0]\n"
        "device=/dev/mmcblk0p5\n"
        "type=ext4\n"
        "parent=rootfs.0\n"
        "\n"
        "[slot.appfs.1]\n"
        "device=/dev/mmcblk0p6\n"
        "type=ext4\n"
        "parent=rootfs.1\n"
        "\n"
        "[slot.bootloader.0]\n"
        "device=/dev/mmcblk0\n"
        "type=boot-emmc\n";

/* a third slot (a development system) needs no config of the helper's */
static const char rauc_three[] =
        "[slot.rootfs.0]\ndevice=/dev/vda2\nbootname=A\n"
        "[slot.rootfs.1]\ndevice=/dev/vda3\nbootname=B\n"
        "[slot.rootfs.2]\ndevice=/dev/vda4\nbootname=dev\n";

static const char rauc_bad[] =
        "[slot.rootfs.0]\nbootname=A\n"     /* no device: left out */
        "[slot.rootfs.1]\ndevice=/dev/vdb3\nbootname=B\n"
        "garbage line\n"
        "[slot.]\n"
        "[slot.rootfs.2\n";

struct rauc_case {
        const char *name;
        const char *text;
        int bad;            /* malformed lines reported */
        size_t n;           /* slots kept */
        const char *device; /* look this one up */
        const char *class_, *bootname; /* NULL: not found */
};

static const struct rauc_case rauc_cases[] = {
        {"reference-slot0", rauc_reference, 0, 2, "/dev/sda0", "rootfs", "system0"},
        {"reference-slot1", rauc_reference, 0, 2, "/dev/sda1", "rootfs", "system1"},
        {"reference-not-a-slot", rauc_reference, 0, 2, "/dev/sda2", NULL, NULL},
        {"mbr-rootfs-b", rauc_children, 0, 5, "/dev/mmcblk0p3", "rootfs", "B"},
        {"child-takes-parent-bootname", rauc_children, 0, 5, "/dev/mmcblk0p5", "appfs", "A"},
        {"child-of-b", rauc_children, 0, 5, "/dev/mmcblk0p6", "appfs", "B"},
        {"slot-without-bootname", rauc_children, 0, 5, "/dev/mmcblk0", "bootloader", ""},
        {"blanks-around-equals", rauc_children, 0, 5, "/dev/mmcblk0p2", "rootfs", "A"},
        {"third-slot", rauc_three, 0, 3, "/dev/vda4", "rootfs", "dev"},
        {"bad-lines", rauc_bad, 4, 1, "/dev/vdb3", "rootfs", "B"},
        {"empty", "", 0, 0, "/dev/sda0", NULL, NULL},
};

static void rauc_one(const struct rauc_case *t)
{
        struct bsg_rauc_conf conf;
        int r;

        check_case = t->name;
        r = bsg_rauc_parse(t->text, strlen(t->text), &conf, NULL, NULL);
        CHECK(r == t->bad);
        if (r < 0)
                return;
        CHECK(conf.n == t->n);
        const struct bsg_rauc_slot *s = NULL;
        for (size_t i = 0; t->device && i < conf.n && !s; i++)
                if (strcmp(conf.v[i].device, t->device) == 0)
                        s = &conf.v[i];
        if (!t->class_)
                CHECK(s == NULL);
        else {
                CHECK(s != NULL);
                if (s) {
                        CHECK_STREQ(s->class_, t->class_);
                        CHECK_STREQ(s->bootname, t->bootname);
                }
        }
        bsg_rauc_free(&conf);
}

/* ---- the active slot from the command line (RAUC's bootnames) --------------------------------- */

struct active_case {
        const char *name;
        const char *cmdline;
        const char *slot; /* NULL: none */
        enum bsg_slot_source source;
};

static const struct active_case active_cases[] = {
        {"rauc-slot-bootname", "console=ttyS0 rauc.slot=system1 root=/dev/sda1", "SYSTEM1", BSG_SLOT_SOURCE_RAUC},
        {"bootchooser-active", "bootchooser.active=system0 root=/dev/sda0", "SYSTEM0", BSG_SLOT_SOURCE_BOOTCHOOSER},
        {"rauc-slot-wins-over-bootchooser", "bootchooser.active=system0 rauc.slot=system1", "SYSTEM1",
         BSG_SLOT_SOURCE_RAUC},
        {"rauc-slot-a", "rauc.slot=A", "A", BSG_SLOT_SOURCE_RAUC},
        {"rauc-slot-dev", "rauc.slot=dev", "DEV", BSG_SLOT_SOURCE_RAUC},
        {"none", "quiet", NULL, BSG_SLOT_SOURCE_NONE},
};

static void active_one(const struct active_case *t)
{
        struct bsg_config config;
        char slot[BSG_SLOT_MAX];
        enum bsg_slot_source source = BSG_SLOT_SOURCE_NONE;

        check_case = t->name;
        bsg_config_init(&config);
        int r = bsg_active_slot(&config, t->cmdline, NULL, 0, NULL, slot, &source);
        if (!t->slot) {
                CHECK(r == -ENOENT);
                return;
        }
        CHECK(r == 0);
        if (r == 0) {
                CHECK_STREQ(slot, t->slot);
                CHECK(source == t->source);
        }
}

/* ---- SteamOS partsets ------------------------------------------------------------------------ */

#define U_EFI_A "11111111-0000-0000-0000-00000000000a"
#define U_ROOT_A "22222222-0000-0000-0000-00000000000a"
#define U_VAR_A "33333333-0000-0000-0000-00000000000a"
#define U_EFI_B "11111111-0000-0000-0000-00000000000b"
#define U_ROOT_B "22222222-0000-0000-0000-00000000000b"
#define U_VAR_B "33333333-0000-0000-0000-00000000000b"
#define U_ROOT_D "22222222-0000-0000-0000-00000000000d"
#define U_ESP "44444444-0000-0000-0000-000000000000"
#define U_HOME "55555555-0000-0000-0000-000000000000"

struct file {
        const char *set, *text;
};

static const struct file steamos[] = {
        {"A", "efi " U_EFI_A "\nrootfs " U_ROOT_A "\nvar " U_VAR_A "\n"},
        {"B", "efi " U_EFI_B "\nrootfs " U_ROOT_B "\nvar " U_VAR_B "\n"},
        {"dev", "rootfs " U_ROOT_D "\n"},
        {"shared", "esp " U_ESP "\nhome " U_HOME "\n"},
        {"all", "esp " U_ESP "\nefi-A " U_EFI_A "\nefi-B " U_EFI_B "\nrootfs-A " U_ROOT_A "\nrootfs-B " U_ROOT_B
                "\nhome " U_HOME "\n"},
        {"self", "efi " U_EFI_B "\nrootfs " U_ROOT_B "\nvar " U_VAR_B "\nesp " U_ESP "\nhome " U_HOME "\n"},
        {"other", "efi " U_EFI_A "\nrootfs " U_ROOT_A "\nvar " U_VAR_A "\n"},
        {NULL, NULL},
};

static const struct file self_on_dev[] = {
        {"A", "rootfs " U_ROOT_A "\n"},
        {"dev", "rootfs " U_ROOT_D "\n"},
        {"self", "rootfs " U_ROOT_D "\n"},
        {NULL, NULL},
};

static const struct file broken[] = {
        {"A", "rootfs " U_ROOT_A "\nbogus\nname not-a-uuid\n# comment\n\nvar " U_VAR_A " extra\n"},
        {"self", "rootfs " U_ROOT_B "\n"}, /* names a set nobody has */
        {"../etc", "rootfs " U_ROOT_B "\n"},
        {NULL, NULL},
};

struct partsets_case {
        const char *name;
        const struct file *files;
        int bad;             /* malformed lines over all files (-EINVAL counted as 100) */
        const char *partuuid;
        const char *set, *entry; /* NULL: no slot */
        const char *active;  /* NULL: -ENOENT */
};

static const struct partsets_case partsets_cases[] = {
        {"rootfs-a", steamos, 0, U_ROOT_A, "A", "rootfs", "B"},
        {"var-b-upper-case", steamos, 0, "33333333-0000-0000-0000-00000000000B", "B", "var", "B"},
        {"third-slot-dev", steamos, 0, U_ROOT_D, "dev", "rootfs", "B"},
        {"shared-home-no-slot", steamos, 0, U_HOME, NULL, NULL, "B"},
        {"unknown-partuuid", steamos, 0, "99999999-0000-0000-0000-000000000000", NULL, NULL, "B"},
        {"booted-dev", self_on_dev, 0, U_ROOT_D, "dev", "rootfs", "dev"},
        {"broken-lines", broken, 103, U_ROOT_A, "A", "rootfs", NULL},
};

static void partsets_one(const struct partsets_case *t)
{
        struct bsg_partsets ps = {0};
        const char *set = NULL, *entry = NULL;
        int bad = 0;

        check_case = t->name;
        for (const struct file *f = t->files; f->set; f++) {
                int r = bsg_partsets_add(&ps, f->set, f->text, strlen(f->text));
                bad += r == -EINVAL ? 100 : r;
        }
        CHECK(bad == t->bad);
        int r = bsg_partsets_slot_of(&ps, t->partuuid, &set, &entry);
        if (!t->set)
                CHECK(r == 0);
        else {
                CHECK(r == 1);
                if (r == 1) {
                        CHECK_STREQ(set, t->set);
                        CHECK_STREQ(entry, t->entry);
                }
        }
        r = bsg_partsets_active(&ps, &set);
        if (!t->active)
                CHECK(r == -ENOENT);
        else {
                CHECK(r == 0);
                if (r == 0)
                        CHECK_STREQ(set, t->active);
        }
        bsg_partsets_free(&ps);
}

/* ---- the disk that booted ------------------------------------------------------------------- */

#define P_ESP_A "aaaaaaaa-0000-0000-0000-000000000001"
#define P_ROOT_A "aaaaaaaa-0000-0000-0000-000000000002"
#define P_ROOT_2 "bbbbbbbb-0000-0000-0000-000000000002"

/* disk0: the internal disk; disk1: a second fixed disk; usb: a stick copying disk0's PARTUUIDs */
static const struct bsg_partition booted_parts[] = {
        {"/dev/vda1", "efi-A", P_ESP_A, NULL, "disk0", false},
        {"/dev/vda2", "rootfs-A", P_ROOT_A, NULL, "disk0", false},
        {"/dev/vdb2", "rootfs-A", P_ROOT_2, NULL, "disk1", false},
};
static const struct bsg_partition booted_parts_usb[] = {
        {"/dev/vda1", "efi-A", P_ESP_A, NULL, "disk0", false},
        {"/dev/vda2", "rootfs-A", P_ROOT_A, NULL, "disk0", false},
        {"/dev/sda2", "rootfs-A", P_ROOT_A, NULL, "usb", true},
        {"/dev/sda3", "x", "cccccccc-0000-0000-0000-000000000003", NULL, "usb", true},
};

struct booted_case {
        const char *name;
        const char *cmdline, *loader;
        const struct bsg_partition *parts;
        size_t n;
        int index; /* -ENOENT: unknown */
};

static const struct booted_case booted_cases[] = {
        {"loader-device-partuuid", "quiet", P_ESP_A, booted_parts, 3, 0},
        {"loader-upper-case", "quiet", "AAAAAAAA-0000-0000-0000-000000000001", booted_parts, 3, 0},
        {"steamos-efi", "steamos.efi=PARTUUID=" P_ESP_A, NULL, booted_parts, 3, 0},
        {"rd-steamos-efi-path", "rd.steamos.efi=/dev/vda1", NULL, booted_parts, 3, 0},
        {"root-partuuid", "root=PARTUUID=" P_ROOT_2, NULL, booted_parts, 3, 2},
        {"root-partlabel-does-not-count", "root=PARTLABEL=rootfs-A", NULL, booted_parts, 3, -ENOENT},
        {"root-path-does-not-count", "root=/dev/vda2", NULL, booted_parts, 3, -ENOENT},
        {"loader-wins-over-root", "root=PARTUUID=" P_ROOT_2, P_ESP_A, booted_parts, 3, 0},
        {"unknown-partuuid", "root=PARTUUID=dddddddd-0000-0000-0000-000000000000", NULL, booted_parts, 3, -ENOENT},
        {"usb-copy-of-root-partuuid", "root=PARTUUID=" P_ROOT_A, NULL, booted_parts_usb, 4, -ENOENT},
        {"usb-copy-other-partuuid-fine", "steamos.efi=PARTUUID=" P_ESP_A, NULL, booted_parts_usb, 4, 0},
        {"usb-only-partuuid", "root=PARTUUID=cccccccc-0000-0000-0000-000000000003", NULL, booted_parts_usb, 4,
         -ENOENT},
        {"nothing", NULL, NULL, booted_parts, 3, -ENOENT},
};

static void booted_one(const struct booted_case *t)
{
        check_case = t->name;
        CHECK(bsg_booted_partition(t->cmdline, t->loader, t->parts, t->n) == t->index);
}

/* ---- the trust anchor: the disks the boot names (issue 18 item 1) -------------------------------- */

/* disk0: the internal disk; disk1: a second fixed disk carrying a copy of disk0's root PARTUUID;
 * usb: a stick (hot-pluggable by its class) carrying copies too; disk2: a RAUC slot disk */
static const struct bsg_partition anchor_parts[] = {
        {"/dev/vda1", "efi-A", P_ESP_A, NULL, "disk0", false, 0},
        {"/dev/vda2", "rootfs-A", P_ROOT_A, NULL, "disk0", false, 0},
        {"/dev/vdb2", "rootfs-A", P_ROOT_A, NULL, "disk1", false, 0},
        {"/dev/sda1", "efi-A", "cccccccc-0000-0000-0000-000000000001", NULL, "usb", true, 0},
        {"/dev/sda2", "x", "cccccccc-0000-0000-0000-000000000002", NULL, "usb", true, 0},
        {"/dev/vdc1", "rootfs.1", "dddddddd-0000-0000-0000-000000000001", NULL, "disk2", false, 0x0fc1},
        {"/dev/vdd1", "nodisk", "eeeeeeee-0000-0000-0000-000000000001", NULL, NULL, false, 0},
        /* disk0 carries the stick's first PARTUUID too, twice (an event's entry and the inventory's) */
        {"/dev/vda3", "y", "cccccccc-0000-0000-0000-000000000001", NULL, "disk0", false, 0},
        {"/dev/vda3", "y", "cccccccc-0000-0000-0000-000000000001", NULL, "disk0", false, 0},
};

struct anchor_case {
        const char *name;
        const char *cmdline, *loader;
        size_t n_parts;       /* a prefix of anchor_parts */
        dev_t rauc;           /* one RAUC device= number, 0: none */
        const char *root_disk;
        const char *disks;    /* the anchor disks, ','-joined in order; "" none */
        enum bsg_anchor_result loader_r, root_r;
};

static const struct anchor_case anchor_cases[] = {
        {"loader", "quiet", P_ESP_A, 2, 0, NULL, "disk0", BSG_ANCHOR_RESOLVED, BSG_ANCHOR_ABSENT},
        {"loader-upper-case", "quiet", "AAAAAAAA-0000-0000-0000-000000000001", 2, 0, NULL, "disk0",
         BSG_ANCHOR_RESOLVED, BSG_ANCHOR_ABSENT},
        {"nothing-names-a-disk", "root=UUID=" P_ROOT_A, NULL, 7, 0, NULL, "", BSG_ANCHOR_ABSENT, BSG_ANCHOR_ABSENT},
        {"root-partlabel-is-no-anchor", "root=PARTLABEL=rootfs-A", NULL, 7, 0, NULL, "", BSG_ANCHOR_ABSENT,
         BSG_ANCHOR_ABSENT},
        {"root-path-is-no-anchor", "root=/dev/vda2", NULL, 7, 0, NULL, "", BSG_ANCHOR_ABSENT, BSG_ANCHOR_ABSENT},
        {"root-unique", "root=PARTUUID=" P_ROOT_A, NULL, 2, 0, NULL, "disk0", BSG_ANCHOR_ABSENT, BSG_ANCHOR_RESOLVED},
        /* a second fixed disk carries the root's PARTUUID: ambiguous, the anchor is both disks (never
         * the fallback) */
        {"root-on-two-disks", "root=PARTUUID=" P_ROOT_A, NULL, 3, 0, NULL, "disk0,disk1", BSG_ANCHOR_ABSENT,
         BSG_ANCHOR_AMBIGUOUS},
        /* ... unless the root is mounted from one of them */
        {"root-on-two-disks-mounted", "root=PARTUUID=" P_ROOT_A, NULL, 3, 0, "disk0", "disk0", BSG_ANCHOR_ABSENT,
         BSG_ANCHOR_RESOLVED},
        {"root-on-two-disks-mounted-elsewhere", "root=PARTUUID=" P_ROOT_A, NULL, 3, 0, "disk9", "disk0,disk1,disk9",
         BSG_ANCHOR_ABSENT, BSG_ANCHOR_AMBIGUOUS},
        /* an ambiguous root= does not undo an unambiguous ESP */
        {"loader-and-ambiguous-root", "root=PARTUUID=" P_ROOT_A, P_ESP_A, 3, 0, NULL, "disk0", BSG_ANCHOR_RESOLVED,
         BSG_ANCHOR_AMBIGUOUS},
        /* only a stick carries it: no anchor, unless the root is mounted from the stick */
        {"stick-only", "root=PARTUUID=cccccccc-0000-0000-0000-000000000002", NULL, 5, 0, NULL, "", BSG_ANCHOR_ABSENT,
         BSG_ANCHOR_HOTPLUG},
        {"stick-booted-and-mounted", "root=PARTUUID=cccccccc-0000-0000-0000-000000000002", NULL, 5, 0, "usb", "usb",
         BSG_ANCHOR_ABSENT, BSG_ANCHOR_RESOLVED},
        {"not-found", "root=PARTUUID=ffffffff-0000-0000-0000-000000000000", "ffffffff-0000-0000-0000-000000000001", 7,
         0, NULL, "", BSG_ANCHOR_NOT_FOUND, BSG_ANCHOR_NOT_FOUND},
        {"no-disk", "root=PARTUUID=eeeeeeee-0000-0000-0000-000000000001", NULL, 7, 0, NULL, "", BSG_ANCHOR_ABSENT,
         BSG_ANCHOR_NO_DISK},
        /* the ESP and the root on two disks: both anchor */
        {"esp-and-root", "steamos.efi=PARTUUID=" P_ESP_A " root=PARTUUID=dddddddd-0000-0000-0000-000000000001", NULL,
         7, 0, NULL, "disk0,disk2", BSG_ANCHOR_ABSENT, BSG_ANCHOR_RESOLVED},
        {"rauc-device", "quiet", NULL, 7, 0x0fc1, NULL, "disk2", BSG_ANCHOR_ABSENT, BSG_ANCHOR_ABSENT},
        {"rauc-and-loader", "quiet", P_ESP_A, 7, 0x0fc1, NULL, "disk2,disk0", BSG_ANCHOR_RESOLVED, BSG_ANCHOR_ABSENT},
        {"nothing", NULL, NULL, 7, 0, NULL, "", BSG_ANCHOR_ABSENT, BSG_ANCHOR_ABSENT},
        /* review A3: a stick copying a fixed partition's name is no candidate (was: ambiguous) */
        {"stick-copies-name", "root=PARTUUID=cccccccc-0000-0000-0000-000000000001", NULL, 8, 0, NULL, "disk0",
         BSG_ANCHOR_ABSENT, BSG_ANCHOR_RESOLVED},
        {"stick-copies-loader", "quiet", "cccccccc-0000-0000-0000-000000000001", 8, 0, NULL, "disk0",
         BSG_ANCHOR_RESOLVED, BSG_ANCHOR_ABSENT},
        /* review finding 5: a link the media names anchors nothing (a kernel name does) */
        {"steamos-efi-by-partlabel", "steamos.efi=/dev/disk/by-partlabel/efi-A", NULL, 7, 0, NULL, "",
         BSG_ANCHOR_ABSENT, BSG_ANCHOR_ABSENT},
        {"steamos-efi-kernel-name", "steamos.efi=/dev/vda1", NULL, 7, 0, NULL, "disk0", BSG_ANCHOR_ABSENT,
         BSG_ANCHOR_ABSENT},
        /* two entries of one partition are one disk, not two */
        {"same-disk-two-entries", "root=PARTUUID=cccccccc-0000-0000-0000-000000000001", NULL, 9, 0, NULL, "disk0",
         BSG_ANCHOR_ABSENT, BSG_ANCHOR_RESOLVED},
};

static void anchor_one(const struct anchor_case *t)
{
        struct bsg_anchor a;
        char got[128] = "";

        check_case = t->name;
        bsg_boot_anchor(t->cmdline, t->loader, &t->rauc, t->rauc ? 1 : 0, anchor_parts, t->n_parts, t->root_disk, &a);
        for (size_t i = 0; i < a.n_disks; i++) {
                size_t l = strlen(got);
                snprintf(got + l, sizeof(got) - l, "%s%s", i ? "," : "", a.disks[i]);
        }
        CHECK_STREQ(got, t->disks);
        CHECK(a.result[BSG_ANCHOR_LOADER] == t->loader_r);
        CHECK(a.result[BSG_ANCHOR_ROOT] == t->root_r);
        /* the anchor is the ambiguous candidates only where nothing resolved */
        CHECK(a.ambiguous == (t->loader_r != BSG_ANCHOR_RESOLVED && t->root_r == BSG_ANCHOR_AMBIGUOUS));
}

/* ---- root=/steamos.efi= name the active slot only through trusted storage (issue 18 case 2) ---- */

#define P_ROOT_B "aaaaaaaa-0000-0000-0000-00000000000b"

/* first coldplug: the internal rootfs-A's PARTUUID is not known yet; a stick carries it, named rootfs-B */
static const struct bsg_partition coldplug_parts[] = {
        {"/dev/vda2", "rootfs-A", NULL, NULL, "disk0", false},
        {"/dev/vda3", "rootfs-B", P_ROOT_B, NULL, "disk0", false},
        {"/dev/sda1", "rootfs-B", P_ROOT_A, "11111111-2222-3333-4444-555555555555", "usb", true},
};
/* later: both carry it (ambiguous: no slot from root=) */
static const struct bsg_partition later_parts[] = {
        {"/dev/vda2", "rootfs-A", P_ROOT_A, NULL, "disk0", false},
        {"/dev/vda3", "rootfs-B", P_ROOT_B, NULL, "disk0", false},
        {"/dev/sda1", "rootfs-B", P_ROOT_A, NULL, "usb", true},
};

struct spec_case {
        const char *name;
        const char *cmdline, *root_devnode;
        const struct bsg_partition *parts;
        size_t n;
        const char *slot; /* NULL: none */
};

/* issue 18 case 10: root=/dev/mapper/rootA, rootA = dm-verity over rootfs-A: the dm device carries its
 * data partition's label, and the gathering gives it the /dev/mapper path as an alias (by device
 * number, or its sysfs dm/name); the same over a stick names nothing */
static const struct bsg_partition verity_parts[] = {
        {"/dev/vda2", NULL, NULL, NULL, "disk0", false},
        {"/dev/vda3", "rootfs-B", P_ROOT_B, NULL, "disk0", false},
        {"/dev/dm-0", "rootfs-A", NULL, NULL, "disk0", false, .alias = "/dev/mapper/rootA"},
};
static const struct bsg_partition verity_stick_parts[] = {
        {"/dev/vda3", "rootfs-B", P_ROOT_B, NULL, "disk0", false},
        {"/dev/dm-0", "rootfs-A", NULL, NULL, "usb", true, .alias = "/dev/mapper/rootA"},
};

static const struct spec_case spec_cases[] = {
        {"verity-mapper-path", "root=/dev/mapper/rootA", NULL, verity_parts, 3, "A"},
        {"verity-mounted-root-mapper", "quiet", "/dev/mapper/rootA", verity_parts, 3, "A"},
        {"verity-dm-node", "root=/dev/dm-0", NULL, verity_parts, 3, "A"},
        {"verity-other-mapper-name", "root=/dev/mapper/rootB", NULL, verity_parts, 3, NULL},
        {"verity-over-stick-no-slot", "root=/dev/mapper/rootA", NULL, verity_stick_parts, 2, NULL},
        {"stick-partuuid-no-slot", "root=PARTUUID=" P_ROOT_A, NULL, coldplug_parts, 3, NULL},
        {"stick-steamos-efi-no-slot", "steamos.efi=PARTUUID=" P_ROOT_A, NULL, coldplug_parts, 3, NULL},
        {"stick-path-no-slot", "root=/dev/sda1", NULL, coldplug_parts, 3, NULL},
        {"stick-fsuuid-no-slot", "root=UUID=11111111-2222-3333-4444-555555555555", NULL, coldplug_parts, 3, NULL},
        {"stick-mounted-root-no-slot", "quiet", "/dev/sda1", coldplug_parts, 3, NULL},
        {"internal-partuuid", "root=PARTUUID=" P_ROOT_B, NULL, coldplug_parts, 3, "B"},
        {"internal-despite-stick-copy", "root=PARTUUID=" P_ROOT_A, NULL, later_parts, 3, "A"},
        {"internal-path", "root=/dev/vda2", NULL, coldplug_parts, 3, "A"},
        {"partlabel-absent-still-names", "root=PARTLABEL=rootfs-B", NULL, coldplug_parts, 0, "B"},
};

static void spec_one(const struct spec_case *t)
{
        struct bsg_config config;
        char slot[BSG_SLOT_MAX];
        enum bsg_slot_source source = BSG_SLOT_SOURCE_NONE;

        check_case = t->name;
        bsg_config_init(&config);
        int r = bsg_active_slot(&config, t->cmdline, t->parts, t->n, t->root_devnode, slot, &source);
        if (!t->slot) {
                CHECK(r == -ENOENT);
                return;
        }
        CHECK(r == 0);
        if (r == 0)
                CHECK_STREQ(slot, t->slot);
}

struct efivar_case {
        const char *name;
        const char *bytes; /* after the 4 attribute bytes, as ASCII that the test widens to UTF-16LE */
        bool truncate_last;
        const char *want; /* NULL: -EINVAL (or -EPERM where non_volatile) */
        bool non_volatile, no_nul;
        const char *junk; /* after the NUL, ASCII widened */
};

static const struct efivar_case efivar_cases[] = {
        {"upper-case", "4A67B082-0A4C-41CF-B6C7-440B29BB8C4F", false, "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"},
        {"short", "4A67B082-0A4C", false, NULL},
        {"not-hex", "4A67B082-0A4C-41CF-B6C7-440B29BB8CXX", false, NULL},
        {"cut-in-the-middle", "4A67B082-0A4C-41CF-B6C7-440B29BB8C4F", true, NULL},
        {"not-ascii", "4A67B082-0A4C-41CF-B6C7-440B29BB8C" "\xc4" "F", false, NULL},
        {"empty", "", false, NULL},
        /* review: attributes 7 (NON_VOLATILE): written by the running system, ignored */
        {"non-volatile", "4A67B082-0A4C-41CF-B6C7-440B29BB8C4F", false, NULL, true},
        {"no-nul", "4A67B082-0A4C-41CF-B6C7-440B29BB8C4F", false, NULL, false, true},
        {"junk-after-nul", "4A67B082-0A4C-41CF-B6C7-440B29BB8C4F", false, NULL, false, false, "x"},
        {"longer", "4A67B082-0A4C-41CF-B6C7-440B29BB8C4F0", false, NULL},
};

static void efivar_one(const struct efivar_case *t)
{
        uint8_t buf[4 + 2 * 64 + 2 + 2 * 8] = {t->non_volatile ? 7 : 6, 0, 0, 0};
        size_t n = strlen(t->bytes), len = 4 + 2 * n + (t->no_nul ? 0 : 2);
        char out[37];

        check_case = t->name;
        for (size_t i = 0; i < n; i++)
                buf[4 + 2 * i] = (uint8_t)t->bytes[i];
        for (size_t i = 0; t->junk && t->junk[i]; i++, len += 2)
                buf[len] = (uint8_t)t->junk[i];
        if (t->truncate_last)
                len = 4 + 2 * n - 3;
        int r = bsg_efivar_guid(buf, len, out);
        if (!t->want)
                CHECK(r == (t->non_volatile ? -EPERM : -EINVAL));
        else {
                CHECK(r == 0);
                if (r == 0)
                        CHECK_STREQ(out, t->want);
        }
}

int main(void)
{
        for (size_t i = 0; i < sizeof(booted_cases) / sizeof(booted_cases[0]); i++)
                booted_one(&booted_cases[i]);
        for (size_t i = 0; i < sizeof(spec_cases) / sizeof(spec_cases[0]); i++)
                spec_one(&spec_cases[i]);
        for (size_t i = 0; i < sizeof(anchor_cases) / sizeof(anchor_cases[0]); i++)
                anchor_one(&anchor_cases[i]);
        for (size_t i = 0; i < sizeof(efivar_cases) / sizeof(efivar_cases[0]); i++)
                efivar_one(&efivar_cases[i]);
        for (size_t i = 0; i < sizeof(rauc_cases) / sizeof(rauc_cases[0]); i++)
                rauc_one(&rauc_cases[i]);
        for (size_t i = 0; i < sizeof(active_cases) / sizeof(active_cases[0]); i++)
                active_one(&active_cases[i]);
        for (size_t i = 0; i < sizeof(partsets_cases) / sizeof(partsets_cases[0]); i++)
                partsets_one(&partsets_cases[i]);

        check_case = "special-sets";
        CHECK(bsg_partset_is_special("self") && bsg_partset_is_special("other") && bsg_partset_is_special("all") &&
              bsg_partset_is_special("shared") && !bsg_partset_is_special("dev"));

        check_case = "config-platform-paths";
        {
                struct bsg_config c;
                bsg_config_init(&c);
                CHECK_STREQ(c.rauc_system_conf, "/etc/rauc/system.conf");
                CHECK_STREQ(c.steamos_partsets, "/efi/SteamOS/partsets");
                const char *text = "rauc_system_conf=\nsteamos_partsets=/esp/SteamOS/partsets\nrauc_system_conf=relative\n";
                CHECK(bsg_config_parse(text, strlen(text), "t", &c, NULL, NULL) == 1);
                CHECK_STREQ(c.rauc_system_conf, "");
                CHECK_STREQ(c.steamos_partsets, "/esp/SteamOS/partsets");
        }
        return check_finish("test-platform-slots");
}
