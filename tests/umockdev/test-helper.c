/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * umockdev suite of btrfs-scan-gate: simulated disks and partitions carrying real superblocks, a fake
 * /dev/btrfs-control modelling the kernel's device registry, fake sysfs (skip_scan, features, mounted
 * filesystems) and fake /proc files through the helper's environment seams.
 *
 * Runs under the umockdev preload (CTest sets LD_PRELOAD). BSG_HELPER names the helper binary,
 * BSG_HELPER_WRAPPER an optional command prefix (valgrind ...), BSG_FIXTURES the directory of
 * superblock fixtures made by make-fixtures.sh.
 *
 * One testbed per process: it is made in main() and every test resets it in the fixture's setup.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/btrfs.h>
#include <linux/dm-ioctl.h>

#include <glib.h>
#include <glib/gstdio.h>
#include <umockdev.h>

#define SB_OFFSET 65536
#define SB_FSID 0x20
#define SB_MAGIC 0x40
#define SB_GENERATION 0x48
#define SB_NUM_DEVICES 0x88
#define SB_DEVID 0xc9
#define SB_DEV_UUID (0xc9 + 0x42)
#define SB_LABEL 0x12b
#define STEAMOS_CONFIG "active_slot=A\nslot_suffixes=-A,-B\n"
#define FIXED_DEVICES "pci0000:00/0000:00:17.0"
#define FAKE_MAJOR_BASE 4000 /* no host has these: libudev reads the host's /run/udev/data */

/* ------------------------------------------------------------------------------------------------ */
/* The fake kernel: a registry of scanned devices behind /dev/btrfs-control.                        */

typedef struct {
        char *path;
        char fsid[37];
        guint64 devid;
        guint64 generation;
        guint64 num_devices;
        gboolean mounted;
} KDev;

static struct {
        GMutex lock;
        GPtrArray *log;  /* "SCAN_DEV /dev/sda2", "DEVICES_READY ...", "FORGET_DEV ..." */
        GPtrArray *devs; /* KDev* */
} kern;

static char *tb_root; /* testbed root directory */
static UMockdevTestbed *tb;

static void kdev_free(gpointer p)
{
        KDev *d = p;
        g_free(d->path);
        g_free(d);
}

static guint64 le64_at(const guint8 *b)
{
        guint64 v = 0;
        for (int i = 7; i >= 0; i--)
                v = (v << 8) | b[i];
        return v;
}

static void uuid_at(const guint8 *b, char out[37])
{
        g_snprintf(out, 37,
                   "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                   b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                   b[15]);
}

/* Reads the superblock of a testbed node, as the kernel's scan would (bytenr and magic only). */
static gboolean kernel_read_super(const char *path, KDev *ret)
{
        g_autofree char *file = g_build_filename(tb_root, path, NULL);
        g_autofree char *buf = NULL;
        gsize len = 0;

        if (!g_file_get_contents(file, &buf, &len, NULL) || len < SB_OFFSET + 4096)
                return FALSE;
        const guint8 *sb = (const guint8 *)buf + SB_OFFSET;
        if (memcmp(sb + SB_MAGIC, "_BHRfS_M", 8) != 0 || le64_at(sb + 0x30) != SB_OFFSET)
                return FALSE;
        uuid_at(sb + SB_FSID, ret->fsid);
        ret->devid = le64_at(sb + SB_DEVID);
        ret->generation = le64_at(sb + SB_GENERATION);
        ret->num_devices = le64_at(sb + SB_NUM_DEVICES);
        return TRUE;
}

static KDev *kernel_find(const char *fsid, guint64 devid)
{
        for (guint i = 0; i < kern.devs->len; i++) {
                KDev *d = kern.devs->pdata[i];
                if (g_strcmp0(d->fsid, fsid) == 0 && d->devid == devid)
                        return d;
        }
        return NULL;
}

/* Registers like device_list_add(): a known devid under another path is replaced unless the fs is
 * mounted or the registered copy has a higher generation. Returns 0 or -errno. */
static int kernel_register(const char *path, KDev *sb)
{
        KDev *d = kernel_find(sb->fsid, sb->devid);

        if (d) {
                if (g_str_equal(d->path, path))
                        return 0;
                if (d->mounted || d->generation > sb->generation)
                        return -EEXIST;
                g_free(d->path);
                d->path = g_strdup(path);
                d->generation = sb->generation;
                return 0;
        }
        d = g_new0(KDev, 1);
        *d = *sb;
        d->path = g_strdup(path);
        g_ptr_array_add(kern.devs, d);
        return 0;
}

static gboolean kernel_all_present(const char *fsid, guint64 num_devices)
{
        guint64 n = 0;
        for (guint i = 0; i < kern.devs->len; i++)
                if (g_str_equal(((KDev *)kern.devs->pdata[i])->fsid, fsid))
                        n++;
        return n >= num_devices;
}

static int kernel_forget(const char *path)
{
        int found = 0;
        for (guint i = kern.devs->len; i > 0; i--) {
                KDev *d = kern.devs->pdata[i - 1];
                if ((path[0] == '\0' || g_str_equal(d->path, path)) && !d->mounted) {
                        g_ptr_array_remove_index(kern.devs, i - 1);
                        found = 1;
                } else if (g_str_equal(d->path, path))
                        return -EBUSY;
        }
        return found || path[0] == '\0' ? 0 : -ENOENT;
}

/* The patched kernel: a non-mount scan of a device listed in skip_scan registers nothing. */
static gboolean kernel_skip_listed(const char *path)
{
        g_autofree char *file = g_build_filename(tb_root, "sys/module/btrfs/parameters/skip_scan", NULL);
        g_autofree char *list = NULL;
        if (!g_file_get_contents(file, &list, NULL, NULL))
                return FALSE;
        g_strchomp(list);
        g_auto(GStrv) items = g_strsplit(list, ",", -1);
        return g_strv_contains((const char *const *)items, path);
}

static gboolean on_handle_ioctl(UMockdevIoctlBase *base, UMockdevIoctlClient *client, gpointer user)
{
        gulong request = umockdev_ioctl_client_get_request(client);
        const char *op;

        if (request == BTRFS_IOC_SCAN_DEV)
                op = "SCAN_DEV";
        else if (request == BTRFS_IOC_DEVICES_READY)
                op = "DEVICES_READY";
        else if (request == BTRFS_IOC_FORGET_DEV)
                op = "FORGET_DEV";
        else {
                g_mutex_lock(&kern.lock);
                g_ptr_array_add(kern.log, g_strdup_printf("UNKNOWN_IOCTL 0x%lx", request));
                g_mutex_unlock(&kern.lock);
                umockdev_ioctl_client_complete(client, -1, ENOTTY);
                return TRUE;
        }

        GError *error = NULL;
        g_autoptr(UMockdevIoctlData) data = umockdev_ioctl_data_resolve(
                umockdev_ioctl_client_get_arg(client), 0, sizeof(struct btrfs_ioctl_vol_args), &error);
        if (!data) {
                g_printerr("fake kernel: cannot read the ioctl argument: %s\n", error->message);
                g_clear_error(&error);
                umockdev_ioctl_client_complete(client, -1, EFAULT);
                return TRUE;
        }
        struct btrfs_ioctl_vol_args args;
        memcpy(&args, data->data, sizeof(args));
        args.name[sizeof(args.name) - 1] = '\0';

        long ret = 0;
        int err = 0;
        g_mutex_lock(&kern.lock);
        g_ptr_array_add(kern.log, g_strdup_printf("%s %s", op, args.name));
        if (request == BTRFS_IOC_FORGET_DEV) {
                int r = kernel_forget(args.name);
                if (r < 0) {
                        ret = -1;
                        err = -r;
                }
        } else {
                KDev sb = {0};
                if (!kernel_read_super(args.name, &sb)) {
                        ret = -1;
                        err = EINVAL;
                } else if (kernel_skip_listed(args.name)) {
                        /* skipped: DEVICES_READY answers from the superblock alone */
                        g_ptr_array_add(kern.log, g_strdup_printf("SKIPPED %s", args.name));
                        if (request == BTRFS_IOC_DEVICES_READY)
                                ret = sb.num_devices == 1 ? 0 : 1;
                } else {
                        int r = kernel_register(args.name, &sb);
                        if (r < 0) {
                                ret = -1;
                                err = -r;
                        } else if (request == BTRFS_IOC_DEVICES_READY)
                                ret = kernel_all_present(sb.fsid, sb.num_devices) ? 0 : 1;
                }
        }
        g_mutex_unlock(&kern.lock);
        umockdev_ioctl_client_complete(client, ret, err);
        return TRUE;
}

/* The fake device-mapper: DM_TABLE_STATUS answers the table set for a device number ("verity 1
 * 4001:1 4002:0 ..."), ENXIO for any other. */
static GHashTable *dm_tables; /* the kernel's huge_encode_dev() of the dm device, decimal -> "TYPE PARAMS" */

static void dm_set_table(unsigned maj, unsigned min, const char *table)
{
        guint64 enc = ((guint64)maj << 8) | (min & 0xff) | ((guint64)(min & ~0xffu) << 12);
        if (!dm_tables)
                dm_tables = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_hash_table_replace(dm_tables, g_strdup_printf("%" G_GUINT64_FORMAT, enc), g_strdup(table));
}

static gboolean on_handle_dm_ioctl(UMockdevIoctlBase *base, UMockdevIoctlClient *client, gpointer user)
{
        GError *error = NULL;

        if (umockdev_ioctl_client_get_request(client) != DM_TABLE_STATUS) {
                umockdev_ioctl_client_complete(client, -1, ENOTTY);
                return TRUE;
        }
        /* one resolve per pointer (a second returns the first's buffer): the helper's first buffer is
         * 16 KiB (helper/kernel.c), which every table of these tests fits */
        g_autoptr(UMockdevIoctlData) all = umockdev_ioctl_data_resolve(umockdev_ioctl_client_get_arg(client), 0,
                                                                       16384, &error);
        g_assert_no_error(error);
        struct dm_ioctl io;
        memcpy(&io, all->data, sizeof(io));
        g_assert_cmpuint(io.data_size, ==, 16384);
        /* keyed by the encoded number as the helper passes it (the fake majors of dm devices are
         * past the 12 bits the kernel's encoding keeps for a major: no decoding) */
        g_autofree char *key = g_strdup_printf("%" G_GUINT64_FORMAT, (guint64)io.dev);
        const char *table = dm_tables ? g_hash_table_lookup(dm_tables, key) : NULL;
        if (!table) {
                umockdev_ioctl_client_complete(client, -1, ENXIO);
                return TRUE;
        }
        g_autofree guint8 *out = g_malloc0(io.data_size);
        struct dm_ioctl *o = (struct dm_ioctl *)out;
        memcpy(o, &io, sizeof(io));
        o->data_start = sizeof(io);
        const char *sp = strchr(table, ' ');
        g_assert_nonnull(sp);
        struct dm_target_spec *spec = (struct dm_target_spec *)(out + o->data_start);
        size_t plen = strlen(sp + 1);
        size_t used = (sizeof(*spec) + plen + 1 + 7) & ~(size_t)7;
        g_assert_cmpuint(o->data_start + used, <=, io.data_size);
        spec->length = 262144;
        spec->next = (uint32_t)used;
        memcpy(spec->target_type, table, (size_t)(sp - table));
        memcpy((char *)(spec + 1), sp + 1, plen + 1);
        o->target_count = 1;
        o->data_size = (uint32_t)(o->data_start + used);
        o->flags &= ~DM_BUFFER_FULL_FLAG;
        g_assert_cmpint(all->data_len, >=, (gint)o->data_size);
        umockdev_ioctl_data_update(all, 0, out, (gint)o->data_size);
        umockdev_ioctl_client_complete(client, 0, 0);
        return TRUE;
}

static void kernel_reset(void)
{
        g_mutex_lock(&kern.lock);
        g_ptr_array_set_size(kern.log, 0);
        g_ptr_array_set_size(kern.devs, 0);
        g_mutex_unlock(&kern.lock);
}

static int cmp_str_ptr(gconstpointer a, gconstpointer b)
{
        return g_strcmp0(*(char *const *)a, *(char *const *)b);
}

static char *registry_string(void)
{
        g_mutex_lock(&kern.lock);
        g_autoptr(GPtrArray) paths = g_ptr_array_new();
        for (guint i = 0; i < kern.devs->len; i++)
                g_ptr_array_add(paths, ((KDev *)kern.devs->pdata[i])->path);
        g_ptr_array_sort(paths, cmp_str_ptr);
        g_ptr_array_add(paths, NULL);
        char *s = g_strjoinv(",", (char **)paths->pdata);
        g_mutex_unlock(&kern.lock);
        return s;
}

static guint kernel_count(const char *op, const char *path)
{
        g_autofree char *want = g_strdup_printf("%s %s", op, path);
        guint n = 0;
        g_mutex_lock(&kern.lock);
        for (guint i = 0; i < kern.log->len; i++)
                if ((op && g_str_equal(kern.log->pdata[i], want)) ||
                    (!op && g_str_has_suffix(kern.log->pdata[i], path) &&
                     strchr(kern.log->pdata[i], ' ') &&
                     g_str_equal(strchr(kern.log->pdata[i], ' ') + 1, path)))
                        n++;
        g_mutex_unlock(&kern.lock);
        return n;
}

static guint kernel_log_len(void)
{
        g_mutex_lock(&kern.lock);
        guint n = kern.log->len;
        g_mutex_unlock(&kern.lock);
        return n;
}

static char *kernel_log_string(void)
{
        g_mutex_lock(&kern.lock);
        g_ptr_array_add(kern.log, NULL);
        char *s = g_strjoinv("; ", (char **)kern.log->pdata);
        g_ptr_array_set_size(kern.log, kern.log->len - 1);
        g_mutex_unlock(&kern.lock);
        return s;
}

/* ------------------------------------------------------------------------------------------------ */
/* The simulated machine.                                                                            */

typedef enum { MUT_NONE, MUT_TRUNCATED, MUT_BAD_MAGIC, MUT_BAD_CSUM } Mutation;

typedef struct {
        const char *node;      /* kernel name, /dev/<node> unless devname is set */
        const char *disk;      /* parent disk's kernel name; NULL: the device is a whole disk */
        int partn;             /* partition number */
        const char *image;     /* fixture name, NULL: no filesystem (zeros) */
        const char *partlabel; /* GPT partition name */
        gboolean removable;
        Mutation mut;
        const char *devname; /* devnode override, e.g. /dev/mapper/a,b */
        gboolean kernel_uevent; /* sysfs uevent holds only the kernel's keys (no ID_*), as on a real
                                 * machine; the event's environment still has udev's */
        const char *partuuid;   /* ID_PART_ENTRY_UUID override (a copied PARTUUID); NULL: from the numbers */
} DevSpec;

typedef struct {
        char *dir; /* scratch: run dir, cmdline, mountinfo, config */
        char *rundir;
        char *cmdline;
        char *mountinfo;
        char *config;
        char *control; /* what BTRFS_SCAN_GATE_CONTROL is set to */
        GHashTable *syspaths; /* kernel name -> syspath of every device added */
} Fixture;

static const char *fixtures_dir;
static char **helper_argv0; /* wrapper words + helper path */
static gboolean under_wrapper;

static char *devnode_of(const DevSpec *s)
{
        return s->devname ? g_strdup(s->devname) : g_strdup_printf("/dev/%s", s->node);
}

static int disk_index(const char *disk)
{
        /* sda -> 0, sdb -> 1, ... ; other names hash into a distinct range */
        if (g_str_has_prefix(disk, "sd") && strlen(disk) == 3)
                return disk[2] - 'a';
        return 100 + (int)(g_str_hash(disk) % 100);
}

static void write_file(const char *path, const void *data, gssize len)
{
        g_autofree char *dir = g_path_get_dirname(path);
        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        GError *error = NULL;
        if (!g_file_set_contents(path, data, len, &error))
                g_error("cannot write %s: %s", path, error->message);
}

static char *read_file(const char *path)
{
        char *s = NULL;
        if (!g_file_get_contents(path, &s, NULL, NULL))
                return NULL;
        return s;
}

static char *tb_path(const char *rel)
{
        return g_build_filename(tb_root, rel, NULL);
}

/* Creates a testbed node file: sticky regular file = block device for the preload's stat(). */
static void make_node(const char *devnode, const void *data, gsize len, unsigned maj, unsigned min,
                      gboolean block)
{
        g_autofree char *file = tb_path(devnode);
        write_file(file, data, len);
        g_assert_cmpint(chmod(file, block ? 01644 : 0644), ==, 0);

        g_autofree char *name = g_strdup(devnode + strlen("/dev/"));
        g_strdelimit(name, "/", '_');
        g_autofree char *nodedir = tb_path("dev/.node");
        g_assert_cmpint(g_mkdir_with_parents(nodedir, 0755), ==, 0);
        g_autofree char *link = g_build_filename(nodedir, name, NULL);
        g_autofree char *target = g_strdup_printf("%u:%u", maj, min);
        (void)unlink(link);
        g_assert_cmpint(symlink(target, link), ==, 0);
}

/* A udev-style symlink LINK (/dev/disk/by-.../NAME) to the testbed node TARGET (/dev/NAME): relative,
 * so that it resolves inside the testbed's dev/ (an absolute target would name the host's node). The
 * preload's stat() takes a node's device number from dev/.node/<path with / as _>, not from the file
 * the link reaches: the link's name gets the target's entry too (without it, stat() says a block
 * device numbered 0:0). */
static void make_link(const char *link, const char *target)
{
        g_autofree char *file = tb_path(link);
        g_autofree char *dir = g_path_get_dirname(file);
        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        GString *rel = g_string_new(NULL);
        for (const char *p = link + strlen("/dev/"); (p = strchr(p, '/')); p++)
                g_string_append(rel, "../");
        g_string_append(rel, target + strlen("/dev/"));
        g_assert_cmpint(symlink(rel->str, file), ==, 0);
        g_string_free(rel, TRUE);

        g_autofree char *tname = g_strdup(target + strlen("/dev/"));
        g_autofree char *lname = g_strdup(link + strlen("/dev/"));
        g_strdelimit(tname, "/", '_');
        g_strdelimit(lname, "/", '_');
        g_autofree char *tnode = g_build_filename(tb_root, "dev/.node", tname, NULL);
        g_autofree char *lnode = g_build_filename(tb_root, "dev/.node", lname, NULL);
        g_autofree char *num = g_file_read_link(tnode, NULL);
        g_assert_nonnull(num);
        g_assert_cmpint(symlink(num, lnode), ==, 0);
}

typedef struct {
        char fsid[37];
        char dev_uuid[37];
        char label[257];
        guint64 devid;
        gboolean btrfs;
} ImageInfo;

static char *image_bytes(const DevSpec *s, gsize *ret_len, ImageInfo *info)
{
        char *buf;
        gsize len;

        memset(info, 0, sizeof(*info));
        if (!s->image) {
                *ret_len = 2 * SB_OFFSET;
                return g_malloc0(*ret_len);
        }
        g_autofree char *file = g_strdup_printf("%s/%s.img", fixtures_dir, s->image);
        GError *error = NULL;
        if (!g_file_get_contents(file, &buf, &len, &error))
                g_error("fixture %s: %s", file, error->message);
        g_assert_cmpuint(len, >=, SB_OFFSET + 4096);
        guint8 *sb = (guint8 *)buf + SB_OFFSET;
        if (memcmp(sb + SB_MAGIC, "_BHRfS_M", 8) == 0) {
                info->btrfs = TRUE;
                uuid_at(sb + SB_FSID, info->fsid);
                uuid_at(sb + SB_DEV_UUID, info->dev_uuid);
                info->devid = le64_at(sb + SB_DEVID);
                memcpy(info->label, sb + SB_LABEL, 256);
        }
        switch (s->mut) {
        case MUT_NONE:
                break;
        case MUT_TRUNCATED:
                len = SB_OFFSET + 1000;
                break;
        case MUT_BAD_MAGIC:
                sb[SB_MAGIC] ^= 0x20;
                break;
        case MUT_BAD_CSUM:
                sb[SB_LABEL + 1] ^= 0x01; /* inside the checksummed area */
                break;
        }
        *ret_len = len;
        return buf;
}

/* udev's view of a device: the properties the helper finds in its environment and in libudev. */
static GPtrArray *device_props(const DevSpec *s, const ImageInfo *info)
{
        GPtrArray *p = g_ptr_array_new_with_free_func(g_free);
        unsigned maj = FAKE_MAJOR_BASE + disk_index(s->disk ? s->disk : s->node);
        g_autofree char *devnode = devnode_of(s);

#define PROP(k, ...)                                                                                    \
        do {                                                                                            \
                g_ptr_array_add(p, g_strdup(k));                                                        \
                g_ptr_array_add(p, g_strdup_printf(__VA_ARGS__));                                       \
        } while (0)
        PROP("DEVNAME", "%s", devnode);
        PROP("DEVTYPE", "%s", s->disk ? "partition" : "disk");
        PROP("MAJOR", "%u", maj);
        PROP("MINOR", "%d", s->partn);
        if (s->disk) {
                PROP("PARTN", "%d", s->partn);
                if (s->partlabel)
                        PROP("PARTNAME", "%s", s->partlabel);
                PROP("ID_PART_TABLE_TYPE", "gpt");
                PROP("ID_PART_ENTRY_SCHEME", "gpt");
                PROP("ID_PART_ENTRY_NUMBER", "%d", s->partn);
                if (s->partuuid)
                        PROP("ID_PART_ENTRY_UUID", "%s", s->partuuid);
                else
                        PROP("ID_PART_ENTRY_UUID", "%08x-0000-4000-8000-%012d", maj, s->partn);
                PROP("ID_PART_ENTRY_DISK", "%u:0", maj);
                if (s->partlabel)
                        PROP("ID_PART_ENTRY_NAME", "%s", s->partlabel);
        }
        if (info->btrfs && s->mut == MUT_NONE) {
                PROP("ID_FS_TYPE", "btrfs");
                PROP("ID_FS_USAGE", "filesystem");
                PROP("ID_FS_UUID", "%s", info->fsid);
                PROP("ID_FS_UUID_ENC", "%s", info->fsid);
                PROP("ID_FS_UUID_SUB", "%s", info->dev_uuid);
                PROP("ID_FS_UUID_SUB_ENC", "%s", info->dev_uuid);
                if (info->label[0]) {
                        PROP("ID_FS_LABEL", "%s", info->label);
                        PROP("ID_FS_LABEL_ENC", "%s", info->label); /* the fixtures' labels need no escape */
                }
        } else if (s->image && g_str_equal(s->image, "esp")) {
                PROP("ID_FS_TYPE", "vfat");
                PROP("ID_FS_USAGE", "filesystem");
                PROP("ID_FS_LABEL", "ESP");
                PROP("ID_FS_LABEL_ENC", "ESP");
        }
#undef PROP
        return p;
}

static void world_add(Fixture *f, const DevSpec *s)
{
        ImageInfo info;
        gsize len;
        g_autofree char *bytes = image_bytes(s, &len, &info);
        unsigned maj = FAKE_MAJOR_BASE + disk_index(s->disk ? s->disk : s->node);
        g_autoptr(GPtrArray) props = device_props(s, &info);
        g_autofree char *devnode = devnode_of(s);
        g_autofree char *dev = g_strdup_printf("%u:%d", maj, s->partn);
        const char *removable = s->removable ? "1" : "0";
        const char *parent = NULL;

        if (s->disk) {
                parent = g_hash_table_lookup(f->syspaths, s->disk);
                if (!parent) {
                        DevSpec disk = {.node = s->disk, .removable = s->removable};
                        world_add(f, &disk);
                        parent = g_hash_table_lookup(f->syspaths, s->disk);
                }
        }
        if (s->kernel_uevent) /* a real kernel's uevent file: no udev properties */
                for (guint i = 0; i + 1 < props->len;) {
                        if (g_str_has_prefix(props->pdata[i], "ID_"))
                                g_ptr_array_remove_range(props, i, 2);
                        else
                                i += 2;
                }
        g_ptr_array_add(props, NULL);

        char *syspath;
        if (s->disk) {
                g_autofree char *start = g_strdup_printf("%" G_GUINT64_FORMAT, (guint64)s->partn * 2048);
                g_autofree char *partn = g_strdup_printf("%d", s->partn);
                syspath = umockdev_testbed_add_devicev(
                        tb, "block", s->node, parent,
                        (char *[]){"dev", dev, "partition", partn, "start",
                                   start, "size", "245760", "ro", "0", NULL},
                        (char **)props->pdata);
        } else {
                /* internal storage sits on a PCI controller (the fallback of is_trusted_storage()
                 * trusts it); removable media stays where it was */
                g_autofree char *rel = g_strdup_printf(s->removable ? "virtual/block/%s" : FIXED_DEVICES "/block/%s",
                                                       s->node);
                syspath = umockdev_testbed_add_devicev(
                        tb, "block", rel, NULL,
                        (char *[]){"dev", dev, "removable", (char *)removable, "size", "2457600", "ro",
                                   "0", NULL},
                        (char **)props->pdata);
        }
        g_assert_nonnull(syspath);
        g_hash_table_insert(f->syspaths, g_strdup(s->node), syspath);
        make_node(devnode, bytes, len, maj, s->partn, TRUE);
}

static void world_add_all(Fixture *f, const DevSpec *specs, gsize n)
{
        for (gsize i = 0; i < n; i++)
                world_add(f, &specs[i]);
}

static void world_uevent(Fixture *f, const DevSpec *s, const char *action)
{
        umockdev_testbed_uevent(tb, g_hash_table_lookup(f->syspaths, s->node), action);
}

/* Pretends the filesystem on S is mounted: registered and busy in the fake kernel, and listed in
 * /sys/fs/btrfs/<fsid>/ (devices/<name> link, metadata_uuid) as the kernel lists it. */
static void kernel_mount(Fixture *f, const DevSpec *s)
{
        g_autofree char *path = devnode_of(s);
        KDev sb = {0};
        g_assert_true(kernel_read_super(path, &sb));
        g_mutex_lock(&kern.lock);
        g_assert_cmpint(kernel_register(path, &sb), ==, 0);
        kernel_find(sb.fsid, sb.devid)->mounted = TRUE;
        g_mutex_unlock(&kern.lock);

        g_autofree char *dir = g_build_filename(tb_root, "sys/fs/btrfs", sb.fsid, "devices", NULL);
        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        const char *syspath = g_hash_table_lookup(f->syspaths, s->node);
        g_autofree char *target = g_strdup_printf("../../../..%s", syspath + strlen("/sys"));
        g_autofree char *link = g_build_filename(dir, s->node, NULL);
        g_assert_cmpint(symlink(target, link), ==, 0);
        g_autofree char *mu = g_build_filename(tb_root, "sys/fs/btrfs", sb.fsid, "metadata_uuid", NULL);
        g_autofree char *line = g_strdup_printf("%s\n", sb.fsid);
        g_assert_true(g_file_set_contents(mu, line, -1, NULL));
}

static void set_skip_scan_param(gboolean patched)
{
        g_autofree char *file = tb_path("sys/module/btrfs/parameters/skip_scan");
        if (patched)
                write_file(file, "", 0);
        else
                (void)unlink(file);
}

static void set_feature(const char *name, gboolean present)
{
        g_autofree char *rel = g_strdup_printf("sys/fs/btrfs/features/%s", name);
        g_autofree char *file = tb_path(rel);
        if (present)
                write_file(file, "0\n", -1);
        else
                (void)unlink(file);
}

static char *skip_scan_contents(void)
{
        g_autofree char *file = tb_path("sys/module/btrfs/parameters/skip_scan");
        char *s = read_file(file);
        if (s)
                g_strchomp(s);
        return s;
}

/* The slot configuration (udev/btrfs-scan-gate.conf.example): KEY=VALUE lines. Every
 * /dev/disk/by-path/pci-test-NAME it names becomes the ID_PATH of the testbed's device NAME in the udev
 * database (as path_id gives it; trusted_disk= takes by-path names only, matched by ID_PATH): no link
 * is made, as during coldplug before the disk's own event has made it. */
#define BY_PATH_TEST "/dev/disk/by-path/pci-test-"
static void set_id_path(Fixture *f, const char *node, const char *id_path)
{
        const char *syspath = g_hash_table_lookup(f->syspaths, node);
        g_assert_nonnull(syspath);
        umockdev_testbed_set_property(tb, syspath, "ID_PATH", id_path);
}

static void set_config(Fixture *f, const char *text)
{
        for (const char *p = text; (p = strstr(p, BY_PATH_TEST)); p += strlen(BY_PATH_TEST)) {
                g_autofree char *name = g_strndup(p + strlen(BY_PATH_TEST), strcspn(p + strlen(BY_PATH_TEST), "\n\" "));
                g_autofree char *id = g_strdup_printf("pci-test-%s", name);
                set_id_path(f, name, id);
        }
        write_file(f->config, text, -1);
}

/* What `udevadm test-builtin path_id /sys/class/block/NAME` prints in the tests: the file
 * path-id/NAME under the scratch directory, nothing when there is none (as for a virtual device). */
static void set_derived_id_path(Fixture *f, const char *node, const char *id_path)
{
        g_autofree char *dir = g_build_filename(f->dir, "path-id", NULL);
        g_autofree char *file = g_build_filename(dir, node, NULL);
        g_autofree char *text = g_strdup_printf("ID_PATH=%s\nID_PATH_TAG=x\n", id_path);
        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        write_file(file, text, -1);
}

static void set_cmdline(Fixture *f, const char *cmdline)
{
        g_autofree char *line = g_strdup_printf("%s\n", cmdline);
        write_file(f->cmdline, line, -1);
}

/* One mountinfo line per "DEVNODE MOUNTPOINT" pair; NULL: nothing mounted but /proc and /sys. */
static void set_mountinfo(Fixture *f, const char *const *mounts)
{
        GString *s = g_string_new("21 1 0:20 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
                                  "22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw\n");
        for (int i = 0; mounts && mounts[i]; i += 2)
                g_string_append_printf(s, "%d 1 0:%d / %s rw,relatime shared:%d - btrfs %s rw,space_cache=v2,subvolid=5,subvol=/\n",
                                       30 + i, 40 + i, mounts[i + 1], 20 + i, mounts[i]);
        write_file(f->mountinfo, s->str, -1);
        g_string_free(s, TRUE);
}

static void remove_tree(const char *path)
{
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", path);
        int status;
        g_assert_true(g_spawn_command_line_sync(cmd, NULL, NULL, &status, NULL));
        g_assert_cmpint(status, ==, 0);
}

/* Back to an empty machine: no block devices, fresh kernel registry, fresh run dir and skip_scan. */
static void world_reset(Fixture *f)
{
        GHashTableIter it;
        gpointer key, value;
        g_autoptr(GPtrArray) paths = g_ptr_array_new();

        g_hash_table_iter_init(&it, f->syspaths);
        while (g_hash_table_iter_next(&it, &key, &value))
                g_ptr_array_add(paths, value);
        /* children (longer paths) first */
        g_ptr_array_sort(paths, cmp_str_ptr);
        for (guint i = paths->len; i > 0; i--)
                umockdev_testbed_remove_device(tb, paths->pdata[i - 1]);
        g_hash_table_remove_all(f->syspaths);
        /* umockdev 0.17.16 leaves the /sys/block, /sys/class/block and /sys/dev/block links behind */
        const char *leftovers[] = {"sys/block", "sys/class/block", "sys/dev/block", "sys/devices/virtual/block",
                                   "sys/devices/" FIXED_DEVICES "/block", NULL};
        for (int i = 0; leftovers[i]; i++) {
                g_autofree char *dir = tb_path(leftovers[i]);
                g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
                const char *name;
                while (d && (name = g_dir_read_name(d))) {
                        g_autofree char *p = g_build_filename(dir, name, NULL);
                        remove_tree(p);
                }
        }

        g_autofree char *dev = tb_path("dev");
        remove_tree(dev);
        g_autofree char *fs = tb_path("sys/fs/btrfs");
        remove_tree(fs);
        remove_tree(f->rundir);
        g_assert_cmpint(g_mkdir_with_parents(f->rundir, 0755), ==, 0);
        g_autofree char *efivars = g_build_filename(f->dir, "efivars", NULL);
        remove_tree(efivars);

        kernel_reset();
        /* the fake control node; BTRFS_SCAN_GATE_CONTROL points at it as a second seam */
        make_node("/dev/btrfs-control", "", 0, 10, 234, FALSE);
        make_node("/dev/mapper/control", "", 0, 10, 236, FALSE);
        if (dm_tables)
                g_hash_table_remove_all(dm_tables);
        set_skip_scan_param(TRUE);
        set_feature("virtual_fsid", TRUE);
        set_feature("temp_fsid", FALSE);
        g_autofree char *feat = tb_path("sys/fs/btrfs/features/supported_checksums");
        write_file(feat, "crc32c xxhash64 sha256 blake2b\n", -1);
        set_mountinfo(f, NULL);
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTLABEL=rootfs-A rw quiet");
        set_config(f, STEAMOS_CONFIG);
        g_free(f->control);
        f->control = g_strdup("/dev/btrfs-control");
}

static void fixture_setup(Fixture *f, gconstpointer data)
{
        f->syspaths = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        f->dir = g_build_filename(tb_root, "scratch", NULL);
        f->rundir = g_build_filename(f->dir, "run", NULL);
        f->cmdline = g_build_filename(f->dir, "cmdline", NULL);
        f->mountinfo = g_build_filename(f->dir, "mountinfo", NULL);
        f->config = g_build_filename(f->dir, "btrfs-scan-gate.conf", NULL);
        world_reset(f);
}

static void fixture_teardown(Fixture *f, gconstpointer data)
{
        world_reset(f);
        remove_tree(f->dir);
        g_hash_table_unref(f->syspaths);
        g_free(f->dir);
        g_free(f->rundir);
        g_free(f->cmdline);
        g_free(f->mountinfo);
        g_free(f->config);
        g_free(f->control);
}

/* ------------------------------------------------------------------------------------------------ */
/* Running the helper.                                                                               */

typedef struct {
        int status; /* exit status, or -1 if killed */
        char *out;
        char *err;
        GHashTable *kv; /* KEY -> VALUE of stdout */
} Run;

static void run_clear(Run *r)
{
        g_free(r->out);
        g_free(r->err);
        if (r->kv)
                g_hash_table_unref(r->kv);
        memset(r, 0, sizeof(*r));
}

static const char *kv(const Run *r, const char *key)
{
        return g_hash_table_lookup(r->kv, key);
}

static const char *next_action = "add"; /* ACTION of the next udev invocation */

static char **helper_env(Fixture *f, const DevSpec *s)
{
        char **env = g_get_environ();
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_CONTROL", f->control, TRUE);
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_CONFIG", f->config, TRUE);
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_CMDLINE", f->cmdline, TRUE);
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_MOUNTINFO", f->mountinfo, TRUE);
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_RUNDIR", f->rundir, TRUE);
        g_autofree char *efivars = g_build_filename(f->dir, "efivars", NULL);
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_EFIVARS", efivars, TRUE);
        /* no fstab, crypttab or unit unless a test writes one (never the host's) */
        g_autofree char *fstab = g_build_filename(f->dir, "fstab", NULL);
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_FSTAB", fstab, TRUE);
        g_autofree char *crypttab = g_build_filename(f->dir, "crypttab", NULL);
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_CRYPTTAB", crypttab, TRUE);
        g_autofree char *units = g_build_filename(f->dir, "units", NULL);
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_UNITDIR", units, TRUE);
        /* udevadm test-builtin path_id: the files of set_derived_id_path(), never the host's udevadm */
        g_autofree char *udevadm = g_build_filename(f->dir, "udevadm", NULL);
        write_file(udevadm, "#!/bin/sh\n[ \"$1 $2\" = \"test-builtin path_id\" ] || exit 2\n"
                            "exec cat \"${0%/*}/path-id/${3##*/}\"\n", -1);
        g_assert_cmpint(chmod(udevadm, 0755), ==, 0);
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_UDEVADM", udevadm, TRUE);
        if (s) {
                /* udev runs programs with the event's properties in the environment */
                ImageInfo info;
                gsize len;
                g_autofree char *bytes = image_bytes(s, &len, &info);
                g_autoptr(GPtrArray) props = device_props(s, &info);
                const char *syspath = g_hash_table_lookup(f->syspaths, s->node);
                env = g_environ_setenv(env, "ACTION", next_action, TRUE);
                env = g_environ_setenv(env, "SUBSYSTEM", "block", TRUE);
                /* a removed device: udev still names its (gone) path */
                g_autofree char *gone = g_strdup_printf(s->removable ? "/devices/virtual/block/%s"
                                                                     : "/devices/" FIXED_DEVICES "/block/%s",
                                                        s->node);
                env = g_environ_setenv(env, "DEVPATH", syspath ? syspath + strlen("/sys") : gone, TRUE);
                env = g_environ_setenv(env, "SEQNUM", "4242", TRUE);
                for (guint i = 0; i + 1 < props->len; i += 2)
                        env = g_environ_setenv(env, props->pdata[i], props->pdata[i + 1], TRUE);
        }
        return env;
}

static char **helper_argv(const char *const *args)
{
        GPtrArray *a = g_ptr_array_new();
        for (int i = 0; helper_argv0[i]; i++)
                g_ptr_array_add(a, g_strdup(helper_argv0[i]));
        for (int i = 0; args[i]; i++)
                g_ptr_array_add(a, g_strdup(args[i]));
        g_ptr_array_add(a, NULL);
        return (char **)g_ptr_array_free(a, FALSE);
}

static GHashTable *parse_kv(const char *out)
{
        GHashTable *h = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_auto(GStrv) lines = g_strsplit(out ? out : "", "\n", -1);
        for (int i = 0; lines[i]; i++) {
                const char *eq = strchr(lines[i], '=');
                if (!eq)
                        continue;
                g_hash_table_replace(h, g_strndup(lines[i], eq - lines[i]), g_strdup(eq + 1));
        }
        return h;
}

static void run_finish(Run *r, int wait_status)
{
        if (WIFEXITED(wait_status))
                r->status = WEXITSTATUS(wait_status);
        else
                r->status = -1;
        r->kv = parse_kv(r->out);
        if (g_test_verbose() || r->status != 0 || (r->err && strstr(r->err, "ERROR: ")))
                g_test_message("helper exit %d\nstdout:\n%s\nstderr:\n%s", r->status, r->out, r->err);
        /* a valgrind or sanitizer finding in the helper fails the test */
        g_assert_cmpint(r->status, !=, 99);
        if (r->err) {
                g_assert_null(strstr(r->err, "ERROR: AddressSanitizer"));
                g_assert_null(strstr(r->err, "runtime error:"));
                g_assert_null(strstr(r->err, "ERROR: LeakSanitizer"));
        }
}

static void run_helper_env(Fixture *f, const DevSpec *s, Run *r, const char *const *args)
{
        g_auto(GStrv) argv = helper_argv(args);
        g_auto(GStrv) env = helper_env(f, s);
        int wait_status = 0;
        GError *error = NULL;

        memset(r, 0, sizeof(*r));
        if (!g_spawn_sync(NULL, argv, env, G_SPAWN_DEFAULT, NULL, NULL, &r->out, &r->err, &wait_status,
                          &error))
                g_error("cannot run %s: %s", argv[0], error->message);
        run_finish(r, wait_status);
}

static void run_helper(Fixture *f, Run *r, const char *const *args)
{
        run_helper_env(f, NULL, r, args);
}

/* The `udev DEVNODE` invocation for one device, as udev's IMPORT{program} would run it. */
static void run_udev(Fixture *f, const DevSpec *s, Run *r, gboolean dry_run)
{
        g_autofree char *devnode = devnode_of(s);
        const char *args_dry[] = {"--dry-run", "udev", devnode, NULL};
        const char *args[] = {"udev", devnode, NULL};
        run_helper_env(f, s, r, dry_run ? args_dry : args);
        g_assert_cmpint(r->status, ==, 0);
        /* udev mode prints only KEY=VALUE lines */
        g_auto(GStrv) lines = g_strsplit(r->out, "\n", -1);
        for (int i = 0; lines[i]; i++) {
                if (lines[i][0] == '\0')
                        continue;
                const char *eq = strchr(lines[i], '=');
                g_assert_nonnull(eq);
                g_assert_null(strchr(eq + 1, ' '));
                g_assert_null(strchr(eq + 1, '"'));
        }
        g_assert_nonnull(kv(r, "BTRFS_SCAN_GATE_DECISION"));
        g_assert_nonnull(kv(r, "BTRFS_SCAN_GATE_REASON"));
}

static void run_udev_quiet(Fixture *f, const DevSpec *s)
{
        Run r;
        world_uevent(f, s, "add");
        run_udev(f, s, &r, FALSE);
        run_clear(&r);
}

static void run_boot(Fixture *f)
{
        Run r;
        const char *args[] = {"boot", NULL};
        run_helper(f, &r, args);
        g_assert_cmpint(r.status, ==, 0);
        run_clear(&r);
}

#define assert_kv(r, key, want) g_assert_cmpstr(kv((r), "BTRFS_SCAN_GATE_" key), ==, (want))

static void assert_registry(const char *want)
{
        g_autofree char *got = registry_string();
        if (g_strcmp0(got, want) != 0) {
                g_autofree char *log = kernel_log_string();
                g_test_message("fake kernel log: %s", log);
        }
        g_assert_cmpstr(got, ==, want);
}

static void assert_skip_scan(const char *want)
{
        g_autofree char *got = skip_scan_contents();
        g_assert_cmpstr(got, ==, want);
}

/* ------------------------------------------------------------------------------------------------ */
/* Scenarios.                                                                                        */

/* Two clone policies (helper/config.h): skip-all, the default and the issue's rule (no copy of a
 * single-device clone is ever scanned: mounts name their device), and active (the active slot's copy
 * is scanned). Tests that depend on it run once per policy, with the policy as test data. */
typedef struct {
        const char *name;
        const char *config; /* the config file */
        gboolean active;    /* clone_policy=active */
} Policy;

static const Policy skip_all = {"skip-all", "active_slot=A\nslot_suffixes=-A,-B\n", FALSE};
static const Policy active_pol = {"active", "active_slot=A\nslot_suffixes=-A,-B\nclone_policy=active\n", TRUE};

/* SteamOS: one NVMe-like disk, A and B byte-identical clones, home unique, esp vfat. */
static const DevSpec steamos[] = {
        {.node = "sda1", .disk = "sda", .partn = 1, .image = "esp", .partlabel = "esp"},
        {.node = "sda4", .disk = "sda", .partn = 4, .image = "rootfs", .partlabel = "rootfs-A"},
        {.node = "sda5", .disk = "sda", .partn = 5, .image = "rootfs", .partlabel = "rootfs-B"},
        {.node = "sda6", .disk = "sda", .partn = 6, .image = "var", .partlabel = "var-A"},
        {.node = "sda7", .disk = "sda", .partn = 7, .image = "var", .partlabel = "var-B"},
        {.node = "sda8", .disk = "sda", .partn = 8, .image = "home", .partlabel = "home"},
};
#define STEAMOS_CMDLINE "BOOT_IMAGE=/boot/vmlinuz-linux-neptune root=PARTLABEL=rootfs-A rw quiet"

static const char *steamos_registry(const Policy *p)
{
        return p->active ? "/dev/sda4,/dev/sda6,/dev/sda8" : "/dev/sda8";
}

static const char *steamos_skip(const Policy *p)
{
        return p->active ? "/dev/sda5,/dev/sda7" : "/dev/sda4,/dev/sda5,/dev/sda6,/dev/sda7";
}

static void steamos_prepare(Fixture *f, const Policy *p)
{
        set_cmdline(f, STEAMOS_CMDLINE);
        set_config(f, p->config);
        world_add_all(f, steamos, G_N_ELEMENTS(steamos));
}

static void test_steamos_udev(Fixture *f, gconstpointer data)
{
        const Policy *p = data;
        Run r;
        steamos_prepare(f, p);

        run_udev(f, &steamos[0], &r, FALSE);
        assert_kv(&r, "DECISION", "ignore");
        assert_kv(&r, "REASON", "not-btrfs");
        g_assert_cmpuint(kernel_count(NULL, "/dev/sda1"), ==, 0);
        run_clear(&r);

        run_udev(f, &steamos[1], &r, FALSE);
        assert_kv(&r, "DECISION", p->active ? "scan" : "skip");
        assert_kv(&r, "REASON", "clone");
        assert_kv(&r, "FSID", "11111111-1111-4111-8111-111111111111");
        assert_kv(&r, "DEVID", "1");
        assert_kv(&r, "SLOT", "A");
        assert_kv(&r, "SLOT_BASE", "rootfs");
        assert_kv(&r, "SLOT_ACTIVE", "1");
        g_assert_null(kv(&r, "UDISKS_IGNORE")); /* only for an inactive-slot clone */
        if (p->active) {
                /* the first event (no inventory yet) read every device and registered it; its own
                 * add event asks the kernel all the same (DEVICES_READY, issue 18 case 11): the
                 * record is not the kernel's state */
                g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "1");
                assert_kv(&r, "ACTION", "scanned");
                g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/sda4"), ==, 1);
                g_assert_cmpuint(kernel_count("DEVICES_READY", "/dev/sda4"), ==, 1);
        } else
                g_assert_cmpuint(kernel_count(NULL, "/dev/sda4"), ==, 0);
        run_clear(&r);

        run_udev(f, &steamos[2], &r, FALSE);
        assert_kv(&r, "DECISION", "skip");
        assert_kv(&r, "REASON", "clone");
        assert_kv(&r, "SLOT", "B");
        assert_kv(&r, "SLOT_BASE", "rootfs");
        assert_kv(&r, "SLOT_ACTIVE", "0");
        g_assert_cmpstr(kv(&r, "UDISKS_IGNORE"), ==, "1");
        g_assert_cmpuint(kernel_count(NULL, "/dev/sda5"), ==, 0);
        run_clear(&r);

        for (gsize i = 3; i < G_N_ELEMENTS(steamos); i++)
                run_udev_quiet(f, &steamos[i]);

        assert_registry(steamos_registry(p));
        assert_skip_scan(steamos_skip(p));
        g_assert_cmpuint(kernel_count(NULL, "/dev/sda7"), ==, 0);
}

static void test_steamos_home_unique(Fixture *f, gconstpointer data)
{
        Run r;
        steamos_prepare(f, &skip_all);
        run_udev(f, &steamos[5], &r, FALSE);
        assert_kv(&r, "DECISION", "scan");
        assert_kv(&r, "REASON", "unique");
        assert_kv(&r, "FSID", "33333333-3333-4333-8333-333333333333");
        assert_kv(&r, "SLOT", "");
        g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "1");
        g_assert_null(kv(&r, "UDISKS_IGNORE"));
        assert_registry("/dev/sda8");
        run_clear(&r);
}

static void test_steamos_boot(Fixture *f, gconstpointer data)
{
        const Policy *p = data;
        Run r;
        const char *args[] = {"boot", NULL};
        steamos_prepare(f, p);
        run_helper(f, &r, args);
        g_assert_cmpint(r.status, ==, 0);
        assert_registry(steamos_registry(p));
        assert_skip_scan(steamos_skip(p));
        g_assert_cmpuint(kernel_count(NULL, "/dev/sda5"), ==, 0);
        g_assert_cmpuint(kernel_count(NULL, "/dev/sda7"), ==, 0);
        g_assert_cmpuint(kernel_count(NULL, "/dev/sda1"), ==, 0);
        run_clear(&r);
}

/* The B slot is the active one: the mirror image of the decisions. */
static void test_steamos_slot_b(Fixture *f, gconstpointer data)
{
        world_add_all(f, steamos, G_N_ELEMENTS(steamos));
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz-linux-neptune root=PARTLABEL=rootfs-B rw quiet");
        set_config(f, "active_slot=B\nslot_suffixes=-A,-B\nclone_policy=active\n");
        for (gsize i = 0; i < G_N_ELEMENTS(steamos); i++)
                run_udev_quiet(f, &steamos[i]);
        assert_registry("/dev/sda5,/dev/sda7,/dev/sda8");
        assert_skip_scan("/dev/sda4,/dev/sda6");
}

/* The active slot from the kernel command line alone (no active_slot in the config). */
static void test_steamos_slot_from_cmdline(Fixture *f, gconstpointer data)
{
        Run r;
        world_add_all(f, steamos, G_N_ELEMENTS(steamos));
        set_config(f, "clone_policy=active\n");
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz-linux-neptune root=PARTLABEL=rootfs-B rw quiet");
        run_udev(f, &steamos[2], &r, FALSE);
        assert_kv(&r, "SLOT", "B");
        assert_kv(&r, "SLOT_ACTIVE", "1");
        assert_kv(&r, "DECISION", "scan");
        run_clear(&r);
        run_udev(f, &steamos[1], &r, FALSE);
        assert_kv(&r, "SLOT_ACTIVE", "0");
        assert_kv(&r, "DECISION", "skip");
        run_clear(&r);
        /* each event reconciles every device: var-B and home are scanned before their own events */
        assert_registry("/dev/sda5,/dev/sda7,/dev/sda8");
}

/* root=PARTUUID= after `boot`: boot runs before udev's database exists and the kernel's uevent file
 * has no partition UUID, so only the root partition's own `add` event (whose entry is current: no
 * read) brings it. A later event of the clone must find it in the inventory and know the active
 * slot. Failed before the add event's names were recorded: the clone printed no SLOT_ACTIVE. */
static void test_slot_partuuid_after_boot(Fixture *f, gconstpointer data)
{
        static const DevSpec parts[] = {
                {.node = "sda4", .disk = "sda", .partn = 4, .image = "rootfs", .partlabel = "rootfs-A",
                 .kernel_uevent = TRUE},
                {.node = "sda5", .disk = "sda", .partn = 5, .image = "rootfs", .partlabel = "rootfs-B",
                 .kernel_uevent = TRUE},
        };
        Run r;

        world_add_all(f, parts, G_N_ELEMENTS(parts));
        set_config(f, "slot_suffixes=-A,-B\n");
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTUUID=00000fa0-0000-4000-8000-000000000004 ro");
        run_boot(f);
        run_udev(f, &parts[0], &r, FALSE); /* add, entry current */
        assert_kv(&r, "SLOT", "A");
        assert_kv(&r, "SLOT_ACTIVE", "1");
        run_clear(&r);
        next_action = "change";
        run_udev(f, &parts[1], &r, FALSE);
        next_action = "add";
        assert_kv(&r, "SLOT", "B");
        assert_kv(&r, "SLOT_ACTIVE", "0");
        g_assert_cmpstr(kv(&r, "UDISKS_IGNORE"), ==, "1");
        run_clear(&r);
}

/* Issue 18 case 2: in the first coldplug the internal rootfs-A's PARTUUID is not in udev's database
 * yet (kernel uevent only); a stick partition carrying it and the name rootfs-B must not make B the
 * active slot. On dcd3898 it did: sda5 (rootfs-B) became SLOT_ACTIVE=1 and status said "B (from
 * root)". */
static void test_slot_stick_partuuid(Fixture *f, gconstpointer data)
{
        static const DevSpec parts[] = {
                {.node = "sda4", .disk = "sda", .partn = 4, .image = "rootfs", .partlabel = "rootfs-A",
                 .kernel_uevent = TRUE},
                {.node = "sda5", .disk = "sda", .partn = 5, .image = "rootfs", .partlabel = "rootfs-B",
                 .kernel_uevent = TRUE},
        };
        static const DevSpec stick = {.node = "sdh1", .disk = "sdh", .partn = 1, .image = "seed",
                                      .partlabel = "rootfs-B", .removable = TRUE,
                                      .partuuid = "00000fa0-0000-4000-8000-000000000004"};
        const char *status_args[] = {"status", NULL};
        Run r;

        world_add_all(f, parts, G_N_ELEMENTS(parts));
        world_add(f, &stick);
        set_config(f, "slot_suffixes=-A,-B\n");
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTUUID=00000fa0-0000-4000-8000-000000000004 ro");
        /* first coldplug, no `boot`: the stick's event comes first and makes the inventory */
        run_udev(f, &stick, &r, FALSE);
        g_assert_null(kv(&r, "BTRFS_SCAN_GATE_SLOT_ACTIVE"));
        assert_kv(&r, "TRUSTED", "0");
        run_clear(&r);
        next_action = "change";
        run_udev(f, &parts[1], &r, FALSE);
        next_action = "add";
        assert_kv(&r, "SLOT", "B");
        g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_SLOT_ACTIVE"), !=, "1");
        run_clear(&r);
        run_helper(f, &r, status_args);
        g_assert_null(strstr(r.out, "active slot: B"));
        run_clear(&r);
}

/* Issue 18 case 3: is_trusted_storage() on sysfs shapes of each class, through `trust DEVNODE` (the
 * rules' question for a device without btrfs). */
typedef struct {
        const char *node, *path; /* kernel name; its directory under /sys/devices (the block dir) */
        const char *attrs[8];    /* extra attributes, name/value pairs */
        const char *id_bus;      /* ID_BUS in the event, or NULL */
        const char *config;      /* trusted_disk= lines, or NULL */
        const char *want;        /* BTRFS_SCAN_GATE_TRUSTED */
} TrustCase;

static unsigned trust_minor;

static void trust_add(Fixture *f, const char *node, const char *path, const char *const *attrs)
{
        g_autofree char *dev = g_strdup_printf("%u:%u", FAKE_MAJOR_BASE + 90, ++trust_minor);
        g_autofree char *maj = g_strdup_printf("%u", FAKE_MAJOR_BASE + 90);
        g_autofree char *min = g_strdup_printf("%u", trust_minor);
        g_autofree char *devname = g_strdup_printf("/dev/%s", node);
        g_autofree char *rel = g_strdup_printf("%s/%s", path, node);
        GPtrArray *a = g_ptr_array_new();
        g_ptr_array_add(a, (char *)"dev");
        g_ptr_array_add(a, dev);
        g_ptr_array_add(a, (char *)"size");
        g_ptr_array_add(a, (char *)"2457600");
        g_ptr_array_add(a, (char *)"removable");
        g_ptr_array_add(a, (char *)"0");
        for (int i = 0; attrs && attrs[i]; i += 2) {
                g_ptr_array_add(a, (char *)attrs[i]);
                g_ptr_array_add(a, (char *)attrs[i + 1]);
        }
        g_ptr_array_add(a, NULL);
        char *syspath = umockdev_testbed_add_devicev(
                tb, "block", rel, NULL, (char **)a->pdata,
                (char *[]){"DEVNAME", devname, "DEVTYPE", (char *)"disk", "MAJOR", maj, "MINOR", min, NULL});
        g_ptr_array_free(a, TRUE);
        g_assert_nonnull(syspath);
        g_hash_table_insert(f->syspaths, g_strdup(node), syspath);
        make_node(devname, "", 0, FAKE_MAJOR_BASE + 90, trust_minor, TRUE);
}

static const char *trust_of(Fixture *f, const char *node, const char *id_bus)
{
        static char answer[8];
        g_autofree char *devname = g_strdup_printf("/dev/%s", node);
        const char *args[] = {"-v", "trust", devname, NULL};
        Run r;

        g_setenv("DEVNAME", devname, TRUE);
        if (id_bus)
                g_setenv("ID_BUS", id_bus, TRUE);
        run_helper(f, &r, args);
        g_unsetenv("DEVNAME");
        g_unsetenv("ID_BUS");
        g_assert_cmpint(r.status, ==, 0);
        g_test_message("trust %s: %s", devname, r.err ? r.err : "");
        g_strlcpy(answer, kv(&r, "BTRFS_SCAN_GATE_TRUSTED") ? kv(&r, "BTRFS_SCAN_GATE_TRUSTED") : "", sizeof(answer));
        run_clear(&r);
        return answer;
}

static void test_trust_classes(Fixture *f, gconstpointer data)
{
        static const TrustCase cases[] = {
                {"sdq", "pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block", {NULL}, NULL, NULL, "1"},
                {"sdr", "pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/1:0:0:0/block", {NULL}, "usb", NULL, "0"},
                {"sds", "pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block", {NULL}, NULL,
                 NULL, "0"},
                {"sdt", "pci0000:00/0000:00:17.0/ata3/host2/target2:0:0/2:0:0:0/block", {"removable", "1", NULL},
                 NULL, NULL, "0"},
                {"loop9", "virtual/block", {NULL}, NULL, NULL, "0"},
                {"nbd3", "virtual/block", {NULL}, NULL, NULL, "0"},
                {"loop8", "virtual/block", {NULL}, NULL, "trusted_disk=" BY_PATH_TEST "loop8\n", "1"},
                {"nvme1n1", "pci0000:00/0000:00:07.0/0000:05:00.0/domain0/thunderbolt/0-1/nvme/nvme1/block", {NULL},
                 NULL, NULL, "0"},
                {"mmcblk1", "pci0000:00/0000:00:1c.0/mmc_host/mmc1/mmc1:aaaa/block", {"device/type", "SD", NULL},
                 NULL, NULL, "0"},
                {"mmcblk2", "pci0000:00/0000:00:1c.1/mmc_host/mmc2/mmc2:0001/block", {"device/type", "MMC", NULL},
                 NULL, NULL, "1"},
        };

        for (gsize i = 0; i < G_N_ELEMENTS(cases); i++)
                trust_add(f, cases[i].node, cases[i].path, cases[i].attrs);
        for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
                set_config(f, cases[i].config ? cases[i].config : "");
                g_test_message("trust case %s", cases[i].node);
                g_assert_cmpstr(trust_of(f, cases[i].node, cases[i].id_bus), ==, cases[i].want);
        }
        /* the class test fails closed: a removable flag that cannot be read, or an mmc device whose
         * type cannot be read, is hot-pluggable (both counted as fixed storage on 5430f93) */
        set_config(f, "");
        trust_add(f, "sdu", "pci0000:00/0000:00:17.0/ata4/host3/target3:0:0/3:0:0:0/block", NULL);
        g_autofree char *removable = g_build_filename(tb_root, g_hash_table_lookup(f->syspaths, "sdu"), "removable", NULL);
        g_assert_cmpint(unlink(removable), ==, 0);
        g_assert_cmpint(mkdir(removable, 0755), ==, 0); /* read() gives EISDIR */
        g_assert_cmpstr(trust_of(f, "sdu", NULL), ==, "0");
        trust_add(f, "mmcblk3", "pci0000:00/0000:00:1c.1/mmc_host/mmc3/mmc3:0001/block", NULL);
        g_assert_cmpstr(trust_of(f, "mmcblk3", NULL), ==, "0");

        /* dm over trusted storage is trusted; over a loop device, or over one untrusted slave, not */
        trust_add(f, "dm-7", "virtual/block", (const char *[]){"slaves/sdq", "", NULL});
        trust_add(f, "dm-8", "virtual/block", (const char *[]){"slaves/loop9", "", NULL});
        trust_add(f, "md9", "virtual/block", (const char *[]){"slaves/sdq", "", "slaves/sds", "", NULL});
        set_config(f, "");
        g_assert_cmpstr(trust_of(f, "dm-7", NULL), ==, "1");
        g_assert_cmpstr(trust_of(f, "dm-8", NULL), ==, "0");
        g_assert_cmpstr(trust_of(f, "md9", NULL), ==, "0");
        set_config(f, "trusted_disk=" BY_PATH_TEST "loop9\n");
        g_assert_cmpstr(trust_of(f, "dm-8", NULL), ==, "1");

        /* a native NVMe multipath head lives under /devices/virtual/nvme-subsystem/: it is its paths'
         * storage, fixed when each path's controller is on PCIe, not when it is NVMe over fabrics */
        static const struct {
                const char *head, *subsys, *ctrl_path, *ctrl, *transport, *want;
        } heads[] = {
                {"nvme0n1", "nvme-subsys0", "pci0000:00/0000:00:1d.0/0000:3d:00.0/nvme", "nvme0", "pcie", "1"},
                {"nvme2n1", "nvme-subsys2", "virtual/nvme-fabrics/ctl", "nvme2", "tcp", "0"},
        };
        set_config(f, "");
        for (gsize i = 0; i < G_N_ELEMENTS(heads); i++) {
                g_autofree char *ctrl_rel = g_strdup_printf("%s/%s", heads[i].ctrl_path, heads[i].ctrl);
                g_autofree char *path_name = g_strdup_printf("%sc0n1", heads[i].ctrl);
                /* umockdev needs a /block/ component the kernel's path does not have */
                g_autofree char *head_path = g_strdup_printf("virtual/nvme-subsystem/%s/block", heads[i].subsys);
                char *ctrl = umockdev_testbed_add_device(tb, "nvme", ctrl_rel, NULL, "transport", heads[i].transport,
                                                         NULL, NULL);
                g_assert_nonnull(ctrl);
                char *pathdev = umockdev_testbed_add_device(tb, "block", path_name, ctrl, "size", "2457600", NULL,
                                                            "DEVTYPE", "disk", NULL);
                g_assert_nonnull(pathdev);
                trust_add(f, heads[i].head, head_path, NULL);
                /* multipath/<path> -> the path device, relative to .../nvme-subsysN/block/<head>/multipath */
                g_autofree char *target = g_strdup_printf("../../../../../../%s/%s", ctrl_rel, path_name);
                g_autofree char *attr = g_strdup_printf("multipath/%s", path_name);
                umockdev_testbed_set_attribute_link(tb, g_hash_table_lookup(f->syspaths, heads[i].head), attr, target);
                g_test_message("nvme head %s over %s", heads[i].head, heads[i].transport);
                g_assert_cmpstr(trust_of(f, heads[i].head, NULL), ==, heads[i].want);
                g_free(ctrl);
                g_free(pathdev);
        }
}

/* Issue 18 case 10: rootfs-A opened through dm-verity (dm-0 over sdb1), rootfs-B a plain copy. The
 * partition under the verity device is its holder's: never read as a copy, never scanned, no slot;
 * dm-0 carries slot A (its slave's partition name) and is the active copy. On dcd3898 sdb1's own
 * event read it and decided it `skip clone SLOT=A` (with clone_policy=active `scan clone`). */
static void test_stacked_verity(Fixture *f, gconstpointer data)
{
        static const DevSpec parts[] = {
                {.node = "sdb1", .disk = "sdb", .partn = 1, .image = "rootfs", .partlabel = "rootfs-A"},
                {.node = "sdb2", .disk = "sdb", .partn = 2, .image = "rootfs", .partlabel = "rootfs-B"},
        };
        static const DevSpec dm = {.node = "dm-0", .image = "rootfs"};
        Run r;

        world_add_all(f, parts, G_N_ELEMENTS(parts));
        world_add(f, &dm);
        umockdev_testbed_set_attribute(tb, g_hash_table_lookup(f->syspaths, "dm-0"), "slaves/sdb1", "");
        umockdev_testbed_set_attribute(tb, g_hash_table_lookup(f->syspaths, "sdb1"), "holders/dm-0", "");
        set_config(f, "slot_suffixes=-A,-B\nclone_policy=active\n");
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTLABEL=rootfs-A ro");
        /* coldplug without boot, the member's event first; then every event again */
        for (int round = 0; round < 2; round++) {
                run_udev(f, &parts[0], &r, FALSE);
                assert_kv(&r, "DECISION", "skip");
                assert_kv(&r, "REASON", "held");
                assert_kv(&r, "SLOT", "");
                g_assert_cmpstr(kv(&r, "UDISKS_IGNORE"), ==, "1");
                run_clear(&r);
                run_udev(f, &dm, &r, FALSE);
                assert_kv(&r, "DECISION", "scan");
                assert_kv(&r, "SLOT", "A");
                assert_kv(&r, "SLOT_ACTIVE", "1");
                run_clear(&r);
                run_udev(f, &parts[1], &r, FALSE);
                assert_kv(&r, "DECISION", "skip");
                assert_kv(&r, "SLOT", "B");
                assert_kv(&r, "SLOT_ACTIVE", "0");
                run_clear(&r);
                next_action = "change";
        }
        next_action = "add";
        g_assert_cmpuint(kernel_count(NULL, "/dev/sdb1"), ==, 0);
        run_boot(f);
        g_assert_cmpuint(kernel_count(NULL, "/dev/sdb1"), ==, 0);
}

/* What udev keeps of an event: the gate's properties of R written into DEV's record (the testbed's
 * uevent file, which libudev reads as the database). */
static void udev_keep(Fixture *f, const DevSpec *dev, Run *r)
{
        const char *path = g_hash_table_lookup(f->syspaths, dev->node);
        static const char *const keys[] = {"DECISION", "REASON", "SLOT", "SLOT_ACTIVE"};
        for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
                g_autofree char *k = g_strdup_printf("BTRFS_SCAN_GATE_%s", keys[i]);
                umockdev_testbed_set_property(tb, path, k, kv(r, k) ? kv(r, k) : "");
        }
}

/* The event of DEV (udev DEVNODE), its properties kept; REPLAY: the change event a re-announce sent. */
static void verity_event(Fixture *f, const DevSpec *dev, gboolean replay, Run *r)
{
        if (replay)
                g_setenv("SYNTH_ARG_BSG", "reannounced", TRUE);
        next_action = "change";
        run_udev(f, dev, r, FALSE);
        next_action = "add";
        g_unsetenv("SYNTH_ARG_BSG");
        udev_keep(f, dev, r);
}

/* Whether the helper asked the kernel for a change event of NODE (appended to its uevent file), and
 * forgets it. */
static gboolean reannounced(Fixture *f, const char *node)
{
        g_autofree char *file = g_build_filename(tb_root, g_hash_table_lookup(f->syspaths, node), "uevent", NULL);
        g_autofree char *text = read_file(file);
        gboolean sent = text && strstr(text, " BSG=reannounced");
        if (sent) {
                /* what the kernel would not keep: the file as it was */
                *strstr(text, "change ") = '\0';
                write_file(file, text, -1);
        }
        return sent;
}

/* Issue 18 case 10 as the real kernel shows it: dm-verity `rootA` (dm-0) has two slaves, its data
 * partition rootfs-A (sdb1) and its hash tree disk (sdc); a dm-linear `home` (dm-1) over the whole disk
 * sdd; root=/dev/mapper/rootA. The DM table (fake DM_TABLE_STATUS) says which slave holds the data:
 * dm-0 is slot A, the active copy, whatever the order; sdb1 and sdd are `skip held`, never scanned;
 * dm-1 is `scan unique`. The dm devices are created after the partitions' events (as while udevd
 * runs): their events send change events to the members and copies whose records are stale. On main
 * 683add4 dm-0 had no slot (a slot came only from a sole slave) and root=/dev/mapper/rootA named none. */
static void test_stacked_verity_two_slaves(Fixture *f, gconstpointer data)
{
        static const DevSpec parts[] = {
                {.node = "sdb1", .disk = "sdb", .partn = 1, .image = "rootfs", .partlabel = "rootfs-A"},
                {.node = "sdb2", .disk = "sdb", .partn = 2, .image = "rootfs", .partlabel = "rootfs-B"},
                {.node = "sdc"}, /* the hash tree: no filesystem */
                {.node = "sdd", .image = "home"},
        };
        static const DevSpec dm[] = {{.node = "dm-0", .image = "rootfs"}, {.node = "dm-1", .image = "home"}};
        const DevSpec *sdb1 = &parts[0], *sdb2 = &parts[1], *sdd = &parts[3], *dm0 = &dm[0], *dm1 = &dm[1];
        Run r;

        world_add_all(f, parts, G_N_ELEMENTS(parts));
        set_config(f, "slot_suffixes=-A,-B\nclone_policy=active\n");
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=/dev/mapper/rootA ro");
        /* before the dm devices: rootfs-A and rootfs-B are copies (no active slot known), home unique */
        /* (the hash disk has no btrfs: udev's rules ask it `trust`, never `udev`) */
        for (int i = 0; i < 4; i++) {
                if (i == 2)
                        continue;
                verity_event(f, &parts[i], FALSE, &r);
                run_clear(&r);
        }
        g_assert_cmpuint(kernel_count("DEVICES_READY", "/dev/sdd"), ==, 1);
        guint sdd_before = kernel_count("SCAN_DEV", "/dev/sdd") + kernel_count("DEVICES_READY", "/dev/sdd");

        /* the dm devices appear (no event for their slaves); /dev/mapper/rootA does not exist yet: udev
         * makes it at the end of dm-0's event */
        world_add_all(f, dm, G_N_ELEMENTS(dm));
        const char *p_dm0 = g_hash_table_lookup(f->syspaths, "dm-0"), *p_dm1 = g_hash_table_lookup(f->syspaths, "dm-1");
        umockdev_testbed_set_attribute(tb, p_dm0, "dm/name", "rootA\n");
        /* slaves/ entries are links to the members, as the kernel makes them */
        umockdev_testbed_set_attribute_link(tb, p_dm0, "slaves/sdb1", "../../sdb/sdb1");
        umockdev_testbed_set_attribute_link(tb, p_dm0, "slaves/sdc", "../../sdc");
        umockdev_testbed_set_attribute(tb, g_hash_table_lookup(f->syspaths, "sdb1"), "holders/dm-0", "");
        umockdev_testbed_set_attribute(tb, g_hash_table_lookup(f->syspaths, "sdc"), "holders/dm-0", "");
        umockdev_testbed_set_attribute(tb, p_dm1, "dm/name", "home\n");
        umockdev_testbed_set_attribute_link(tb, p_dm1, "slaves/sdd", "../../sdd");
        umockdev_testbed_set_attribute(tb, g_hash_table_lookup(f->syspaths, "sdd"), "holders/dm-1", "");
        unsigned maj0 = FAKE_MAJOR_BASE + disk_index("dm-0"), maj1 = FAKE_MAJOR_BASE + disk_index("dm-1");
        dm_set_table(maj0, 0, "verity 1 4001:1 4002:0 4096 4096 32768 0 sha256 91de 5fda");
        dm_set_table(maj1, 0, "linear 4003:0 0");

        /* clone_policy=active: the active copy is scanned, and it is the verity device */
        verity_event(f, dm0, FALSE, &r);
        assert_kv(&r, "DECISION", "scan");
        assert_kv(&r, "REASON", "clone");
        assert_kv(&r, "SLOT", "A");
        assert_kv(&r, "SLOT_BASE", "rootfs");
        assert_kv(&r, "SLOT_ACTIVE", "1");
        g_assert_nonnull(strstr(kv(&r, "BTRFS_SCAN_GATE_ACTION"), "reannounced:/dev/sdb1"));
        g_assert_nonnull(strstr(kv(&r, "BTRFS_SCAN_GATE_ACTION"), "reannounced:/dev/sdb2"));
        run_clear(&r);
        g_assert_true(reannounced(f, "sdb1"));
        g_assert_true(reannounced(f, "sdb2"));
        /* the change events it asked for: rootfs-A's partition is held, rootfs-B the inactive copy;
         * neither re-announces anything */
        verity_event(f, sdb1, TRUE, &r);
        assert_kv(&r, "DECISION", "skip");
        assert_kv(&r, "REASON", "held");
        assert_kv(&r, "SLOT", "");
        g_assert_null(strstr(kv(&r, "BTRFS_SCAN_GATE_ACTION"), "reannounced"));
        run_clear(&r);
        verity_event(f, sdb2, TRUE, &r);
        assert_kv(&r, "DECISION", "skip");
        assert_kv(&r, "REASON", "clone");
        assert_kv(&r, "SLOT", "B");
        assert_kv(&r, "SLOT_ACTIVE", "0");
        run_clear(&r);
        /* home over the whole disk: the dm device is scanned, the disk held (a dm-linear over a trusted
         * disk is the same storage, never a clone of its slave) */
        verity_event(f, dm1, FALSE, &r);
        assert_kv(&r, "DECISION", "scan");
        assert_kv(&r, "REASON", "unique");
        g_assert_nonnull(strstr(kv(&r, "BTRFS_SCAN_GATE_ACTION"), "reannounced:/dev/sdd"));
        run_clear(&r);
        g_assert_true(reannounced(f, "sdd"));
        verity_event(f, sdd, TRUE, &r);
        assert_kv(&r, "DECISION", "skip");
        assert_kv(&r, "REASON", "held");
        run_clear(&r);

        /* now with udev's /dev/mapper/rootA link; every order of the events gives the same answers and
         * re-announces nothing (the records are current) */
        make_node("/dev/mapper/rootA", "", 0, maj0, 0, TRUE);
        const DevSpec *all[] = {sdb1, sdb2, sdd, dm0, dm1};
        static const int orders[][5] = {{0, 1, 2, 3, 4}, {3, 4, 0, 1, 2}, {4, 1, 3, 2, 0}, {2, 0, 4, 3, 1}};
        for (gsize o = 0; o < G_N_ELEMENTS(orders); o++) {
                for (int k = 0; k < 5; k++) {
                        const DevSpec *dev = all[orders[o][k]];
                        g_test_message("order %zu: %s", o, dev->node);
                        verity_event(f, dev, FALSE, &r);
                        g_test_message("%s: %s", dev->node, kv(&r, "BTRFS_SCAN_GATE_ACTION"));
                        g_assert_null(strstr(kv(&r, "BTRFS_SCAN_GATE_ACTION"), "reannounced"));
                        if (dev == sdb1 || dev == sdd) {
                                assert_kv(&r, "REASON", "held");
                                assert_kv(&r, "SLOT", "");
                        } else if (dev == dm0) {
                                assert_kv(&r, "DECISION", "scan");
                                assert_kv(&r, "REASON", "clone");
                                assert_kv(&r, "SLOT", "A");
                                assert_kv(&r, "SLOT_ACTIVE", "1");
                        } else if (dev == sdb2) {
                                assert_kv(&r, "SLOT", "B");
                                assert_kv(&r, "SLOT_ACTIVE", "0");
                        } else if (dev == dm1)
                                assert_kv(&r, "DECISION", "scan");
                        run_clear(&r);
                }
        }
        /* boot decides the same set: the held members and both copies listed */
        run_boot(f);
        g_autofree char *list = skip_scan_contents();
        g_auto(GStrv) items = g_strsplit(list ? list : "", ",", -1);
        for (const char *const *want = (const char *const[]){"/dev/sdb1", "/dev/sdb2", "/dev/sdd", NULL};
             *want; want++)
                g_assert_true(g_strv_contains((const char *const *)items, *want));
        g_assert_false(g_strv_contains((const char *const *)items, "/dev/dm-1"));
        g_assert_false(g_strv_contains((const char *const *)items, "/dev/dm-0"));
        /* never handed to the kernel once held (home's disk was scanned before dm-1 existed, then
         * forgotten when dm-1 took over) */
        g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/sdb1") + kernel_count("DEVICES_READY", "/dev/sdb1"), ==, 0);
        g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/sdd") + kernel_count("DEVICES_READY", "/dev/sdd"), ==, sdd_before);
        g_assert_cmpuint(kernel_count("FORGET_DEV", "/dev/sdd"), ==, 1);
        g_assert_cmpuint(kernel_count("DEVICES_READY", "/dev/dm-1"), >=, 1);
        g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/dm-0") + kernel_count("DEVICES_READY", "/dev/dm-0"), >=, 1);
}

/* Issue 18 case 10, dm on dm: `root` (dm-1) is stacked on `vroot` (dm-0), stacked on rootfs-A (sdb1),
 * the hash tree on sdc; root=/dev/mapper/root. Two shapes (DATA): "linear-over-verity" (dm-1 linear over
 * dm-0, dm-0 verity over sdb1 and sdc) and "verity-over-linear" (dm-1 verity over dm-0 and sdc, dm-0
 * linear over sdb1). The top carries the slot of the partition at the bottom (A, active); the
 * intermediate device and the partition are `skip held`, no slot, never scanned; rootfs-B is the
 * inactive slot; in every event order. On e640833 dm-1 had no slot (its data slave dm-0 has no
 * partition name) and the active slot was unknown. */
static void test_stacked_dm_on_dm(Fixture *f, gconstpointer data)
{
        static const DevSpec parts[] = {
                {.node = "sdb1", .disk = "sdb", .partn = 1, .image = "rootfs", .partlabel = "rootfs-A"},
                {.node = "sdb2", .disk = "sdb", .partn = 2, .image = "rootfs", .partlabel = "rootfs-B"},
                {.node = "sdc"}, /* the hash tree: no filesystem */
        };
        static const DevSpec dm[] = {{.node = "dm-0", .image = "rootfs"}, {.node = "dm-1", .image = "rootfs"}};
        const DevSpec *sdb1 = &parts[0], *sdb2 = &parts[1], *dm0 = &dm[0], *dm1 = &dm[1];
        gboolean verity_on_top = g_str_equal(data, "verity-over-linear");
        Run r;

        world_add_all(f, parts, G_N_ELEMENTS(parts));
        world_add_all(f, dm, G_N_ELEMENTS(dm));
        const char *p_dm0 = g_hash_table_lookup(f->syspaths, "dm-0"), *p_dm1 = g_hash_table_lookup(f->syspaths, "dm-1");
        unsigned maj0 = FAKE_MAJOR_BASE + disk_index("dm-0"), maj1 = FAKE_MAJOR_BASE + disk_index("dm-1");
        umockdev_testbed_set_attribute(tb, p_dm0, "dm/name", "vroot\n");
        umockdev_testbed_set_attribute(tb, p_dm1, "dm/name", "root\n");
        umockdev_testbed_set_attribute_link(tb, p_dm0, "slaves/sdb1", "../../sdb/sdb1");
        umockdev_testbed_set_attribute(tb, g_hash_table_lookup(f->syspaths, "sdb1"), "holders/dm-0", "");
        umockdev_testbed_set_attribute_link(tb, p_dm1, "slaves/dm-0", "../../dm-0");
        umockdev_testbed_set_attribute(tb, p_dm0, "holders/dm-1", "");
        const char *hash_holder = verity_on_top ? p_dm1 : p_dm0;
        umockdev_testbed_set_attribute_link(tb, hash_holder, "slaves/sdc", "../../sdc");
        umockdev_testbed_set_attribute(tb, g_hash_table_lookup(f->syspaths, "sdc"),
                                       verity_on_top ? "holders/dm-1" : "holders/dm-0", "");
        g_autofree char *t_top = verity_on_top
                ? g_strdup_printf("verity 1 %u:0 4002:0 4096 4096 32768 0 sha256 91de 5fda", maj0)
                : g_strdup_printf("linear %u:0 0", maj0);
        dm_set_table(maj0, 0, verity_on_top ? "linear 4001:1 0" : "verity 1 4001:1 4002:0 4096 4096 32768 0 sha256 91de 5fda");
        dm_set_table(maj1, 0, t_top);
        make_node("/dev/mapper/root", "", 0, maj1, 0, TRUE);
        set_config(f, "slot_suffixes=-A,-B\n");
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=/dev/mapper/root ro");

        const DevSpec *all[] = {sdb1, sdb2, dm0, dm1};
        static const int orders[][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 3, 0, 1}, {1, 3, 0, 2}};
        for (gsize o = 0; o < G_N_ELEMENTS(orders); o++) {
                for (int k = 0; k < 4; k++) {
                        const DevSpec *dev = all[orders[o][k]];
                        g_test_message("%s, order %zu: %s", (const char *)data, o, dev->node);
                        verity_event(f, dev, FALSE, &r);
                        if (dev == sdb1 || dev == dm0) {
                                assert_kv(&r, "DECISION", "skip");
                                assert_kv(&r, "REASON", "held");
                                assert_kv(&r, "SLOT", "");
                                g_assert_null(kv(&r, "BTRFS_SCAN_GATE_SLOT_ACTIVE"));
                        } else if (dev == dm1) {
                                assert_kv(&r, "DECISION", "skip");
                                assert_kv(&r, "REASON", "clone");
                                assert_kv(&r, "SLOT", "A");
                                assert_kv(&r, "SLOT_BASE", "rootfs");
                                assert_kv(&r, "SLOT_ACTIVE", "1");
                        } else {
                                assert_kv(&r, "REASON", "clone");
                                assert_kv(&r, "SLOT", "B");
                                assert_kv(&r, "SLOT_ACTIVE", "0");
                        }
                        run_clear(&r);
                        (void)reannounced(f, dev->node);
                }
        }
        run_boot(f);
        g_autofree char *list = skip_scan_contents();
        g_auto(GStrv) items = g_strsplit(list ? list : "", ",", -1);
        for (const char *const *want = (const char *const[]){"/dev/sdb1", "/dev/sdb2", "/dev/dm-0", NULL}; *want;
             want++)
                g_assert_true(g_strv_contains((const char *const *)items, *want));
        for (const char *const *dev = (const char *const[]){"/dev/sdb1", "/dev/dm-0", "/dev/dm-1", "/dev/sdb2", NULL};
             *dev; dev++)
                g_assert_cmpuint(kernel_count("SCAN_DEV", *dev) + kernel_count("DEVICES_READY", *dev), ==, 0);
}

/* Issue 18 case 10, a stacked device removed: dm-linear `home` (dm-1) over the home partition sdb3 is
 * removed (`dmsetup remove`): the kernel sends sdb3 no event, and its udev record still says `skip
 * held`. The dm device's `remove` event sends sdb3 a change event; its own event then scans it
 * (`scan unique`), as a boot without the dm device would. A device still held is left alone. On
 * e640833 the remove event re-announced nothing. */
static void world_remove(Fixture *f, const DevSpec *s);
static void run_udev_action(Fixture *f, const DevSpec *s, const char *action, const char *const *extra, Run *r);

static void test_stacked_removed(Fixture *f, gconstpointer data)
{
        static const DevSpec parts[] = {
                {.node = "sdb3", .disk = "sdb", .partn = 3, .image = "home", .partlabel = "home"},
                {.node = "sdb4", .disk = "sdb", .partn = 4, .image = "var", .partlabel = "var"},
        };
        static const DevSpec dm[] = {{.node = "dm-1", .image = "home"}, {.node = "dm-2", .image = "var"}};
        const DevSpec *sdb3 = &parts[0], *sdb4 = &parts[1], *dm1 = &dm[0], *dm2 = &dm[1];
        const char *const verbose[] = {"--verbose", NULL};
        Run r;

        world_add_all(f, parts, G_N_ELEMENTS(parts));
        world_add_all(f, dm, G_N_ELEMENTS(dm));
        const char *p_dm1 = g_hash_table_lookup(f->syspaths, "dm-1"), *p_dm2 = g_hash_table_lookup(f->syspaths, "dm-2");
        const char *p_sdb3 = g_hash_table_lookup(f->syspaths, "sdb3"), *p_sdb4 = g_hash_table_lookup(f->syspaths, "sdb4");
        umockdev_testbed_set_attribute(tb, p_dm1, "dm/name", "home\n");
        umockdev_testbed_set_attribute_link(tb, p_dm1, "slaves/sdb3", "../../sdb/sdb3");
        umockdev_testbed_set_attribute(tb, p_sdb3, "holders/dm-1", "");
        umockdev_testbed_set_attribute(tb, p_dm2, "dm/name", "var\n");
        umockdev_testbed_set_attribute_link(tb, p_dm2, "slaves/sdb4", "../../sdb/sdb4");
        umockdev_testbed_set_attribute(tb, p_sdb4, "holders/dm-2", "");
        dm_set_table(FAKE_MAJOR_BASE + disk_index("dm-1"), 0, "linear 4001:3 0");
        dm_set_table(FAKE_MAJOR_BASE + disk_index("dm-2"), 0, "linear 4001:4 0");
        set_cmdline(f, STEAMOS_CMDLINE);
        for (const DevSpec *const *dev = (const DevSpec *const[]){sdb3, sdb4, dm1, dm2, NULL}; *dev; dev++) {
                verity_event(f, *dev, FALSE, &r);
                if (*dev == sdb3 || *dev == sdb4)
                        assert_kv(&r, "REASON", "held");
                else
                        assert_kv(&r, "DECISION", "scan");
                run_clear(&r);
                (void)reannounced(f, (*dev)->node);
        }
        g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/sdb3") + kernel_count("DEVICES_READY", "/dev/sdb3"), ==, 0);

        /* `dmsetup remove home`: the holder link goes before the remove event */
        g_autofree char *holder = g_build_filename(tb_root, p_sdb3, "holders", "dm-1", NULL);
        g_assert_cmpint(unlink(holder), ==, 0);
        world_remove(f, dm1);
        run_udev_action(f, dm1, "remove", verbose, &r);
        g_test_message("remove dm-1: %s\n%s", r.out, r.err);
        g_assert_nonnull(strstr(kv(&r, "BTRFS_SCAN_GATE_ACTION"), "reannounced:/dev/sdb3"));
        g_assert_null(strstr(kv(&r, "BTRFS_SCAN_GATE_ACTION"), "sdb4"));
        run_clear(&r);
        g_assert_true(reannounced(f, "sdb3"));
        g_assert_false(reannounced(f, "sdb4"));
        /* the change event it asked for decides the partition on its own */
        verity_event(f, sdb3, TRUE, &r);
        assert_kv(&r, "DECISION", "scan");
        assert_kv(&r, "REASON", "unique");
        run_clear(&r);
        g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/sdb3") + kernel_count("DEVICES_READY", "/dev/sdb3"), >=, 1);
        /* another removal finds nothing left held without a holder */
        world_remove(f, dm2);
        run_udev_action(f, dm2, "remove", NULL, &r);
        g_assert_null(strstr(kv(&r, "BTRFS_SCAN_GATE_ACTION"), "reannounced"));
        run_clear(&r);
        g_assert_false(reannounced(f, "sdb4"));
}

/* The slot of a dm device comes from its data slave's partition only over trusted storage: a dm-crypt
 * (the table says so) over a stick partition named rootfs-A, with root=/dev/mapper/stickroot, has no
 * slot, names no active slot, is untrusted and never scanned; the internal copies keep theirs. */
static void test_stacked_untrusted_no_slot(Fixture *f, gconstpointer data)
{
        static const DevSpec parts[] = {
                {.node = "sdb1", .disk = "sdb", .partn = 1, .image = "rootfs", .partlabel = "rootfs-A"},
                {.node = "sdb2", .disk = "sdb", .partn = 2, .image = "rootfs", .partlabel = "rootfs-B"},
                {.node = "sde1", .disk = "sde", .partn = 1, .partlabel = "rootfs-A", .removable = TRUE},
        };
        static const DevSpec dm = {.node = "dm-3", .image = "rootfs"};
        Run r;

        world_add_all(f, parts, G_N_ELEMENTS(parts));
        world_add(f, &dm);
        const char *p_dm = g_hash_table_lookup(f->syspaths, "dm-3");
        umockdev_testbed_set_attribute(tb, p_dm, "dm/name", "stickroot\n");
        /* the stick stays under virtual/block (removable): the link goes there */
        g_autofree char *target = g_strdup_printf("../../../../../virtual/block/sde/sde1");
        umockdev_testbed_set_attribute_link(tb, p_dm, "slaves/sde1", target);
        umockdev_testbed_set_attribute(tb, g_hash_table_lookup(f->syspaths, "sde1"), "holders/dm-3", "");
        dm_set_table(FAKE_MAJOR_BASE + disk_index("dm-3"), 0, "crypt aes-xts-plain64 :64:logon:x 0 4004:1 4096");
        set_config(f, "slot_suffixes=-A,-B\nclone_policy=active\n");
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=/dev/mapper/stickroot ro");
        run_udev(f, &dm, &r, FALSE);
        assert_kv(&r, "TRUSTED", "0");
        assert_kv(&r, "DECISION", "skip");
        assert_kv(&r, "SLOT", "");
        g_assert_null(kv(&r, "BTRFS_SCAN_GATE_SLOT_ACTIVE"));
        run_clear(&r);
        run_udev(f, &parts[0], &r, FALSE);
        assert_kv(&r, "SLOT", "A");
        g_assert_null(kv(&r, "BTRFS_SCAN_GATE_SLOT_ACTIVE")); /* the stick named no active slot */
        run_clear(&r);
        g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/dm-3") + kernel_count("DEVICES_READY", "/dev/dm-3"), ==, 0);
        g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/sde1") + kernel_count("DEVICES_READY", "/dev/sde1"), ==, 0);
}

/* Issue 18 case 3: an ID_BUS an event taught is kept in the inventory. `boot` saw a disk on a path
 * that looks fixed; its `add` event says ID_BUS=usb (entry current: not read again). A fixed disk
 * carries the same filesystem: the stick is outranked, and the next whole set decision (`reconcile`,
 * from the inventory) must still take it for hot-pluggable: never scanned. */
static void test_trust_id_bus_kept(Fixture *f, gconstpointer data)
{
        static const DevSpec stick = {.node = "sdk1", .disk = "sdk", .partn = 1, .image = "seed"};
        static const DevSpec fixed = {.node = "sdl1", .disk = "sdl", .partn = 1, .image = "seed"};
        const char *reconcile[] = {"reconcile", NULL};
        const char *status[] = {"status", NULL};
        Run r;

        world_add(f, &stick);
        world_add(f, &fixed);
        set_config(f, "");
        run_boot(f);
        g_setenv("ID_BUS", "usb", TRUE);
        run_udev(f, &stick, &r, FALSE);
        g_unsetenv("ID_BUS");
        assert_kv(&r, "TRUSTED", "0");
        assert_kv(&r, "REASON", "outranked");
        run_clear(&r);
        kernel_reset();
        run_helper(f, &r, reconcile);
        run_clear(&r);
        g_assert_cmpuint(kernel_count("scan", "/dev/sdk1"), ==, 0);
        run_helper(f, &r, status);
        g_assert_nonnull(strstr(r.out, "outranked"));
        run_clear(&r);
        assert_skip_scan("/dev/sdk*"); /* hot-pluggable: its whole disk, starred */
}

/* Issue 18 item 1: trusted storage is an allowlist anchored on the disk the boot names. An MMC-type
 * card (the fallback cannot tell it from eMMC: it passes as fixed storage) carrying a btrfs partition
 * beside the internal disk sda. Whenever the boot names sda (root=PARTUUID=, LoaderDevicePartUUID,
 * steamos.efi=), the card is untrusted: listed, never scanned. Where the boot names no disk
 * (root=PARTLABEL=), or names it ambiguously (a second disk carries the same PARTUUID), trust comes
 * from the fallback and `status` says so; a mounted root on sda settles the ambiguity. On main
 * 683add4 the card was `scan unique` in every case. */
static const DevSpec anchor_parts[] = {
        {.node = "sda1", .disk = "sda", .partn = 1, .image = "esp", .partlabel = "esp"},
        {.node = "sda4", .disk = "sda", .partn = 4, .image = "rootfs", .partlabel = "rootfs-A"},
        {.node = "sda5", .disk = "sda", .partn = 5, .image = "rootfs", .partlabel = "rootfs-B"},
};
static const DevSpec anchor_card = {.node = "mmcblk2p1", .disk = "mmcblk2", .partn = 1, .image = "home"};
#define SDA4_PARTUUID "00000fa0-0000-4000-8000-000000000004"
#define SDA1_PARTUUID "00000fa0-0000-4000-8000-000000000001"

static void anchor_world(Fixture *f)
{
        trust_add(f, "mmcblk2", "pci0000:00/0000:00:1c.1/mmc_host/mmc2/mmc2:0001/block",
                  (const char *[]){"device/type", "MMC", NULL});
        world_add_all(f, anchor_parts, G_N_ELEMENTS(anchor_parts));
        world_add(f, &anchor_card);
        set_config(f, "slot_suffixes=-A,-B\n");
}

/* The card's trust after `boot` and its own event; the status line of the trust source. Its home
 * filesystem collides with nothing: scanned whatever its trust (trust arbitrates collisions only). */
static void anchor_check(Fixture *f, const char *want_trusted, const char *want_source)
{
        const char *status_args[] = {"status", "--json", NULL};
        Run r;

        run_boot(f);
        run_udev(f, &anchor_card, &r, FALSE);
        g_test_message("card: %s %s, trust source %s", kv(&r, "BTRFS_SCAN_GATE_DECISION"),
                       kv(&r, "BTRFS_SCAN_GATE_REASON"), kv(&r, "BTRFS_SCAN_GATE_TRUST_SOURCE"));
        assert_kv(&r, "DECISION", "scan");
        assert_kv(&r, "TRUSTED", want_trusted);
        assert_kv(&r, "TRUST_SOURCE", want_source);
        run_clear(&r);
        /* the internal disk stays trusted either way: its slots, its unique home */
        run_udev(f, &anchor_parts[1], &r, FALSE);
        assert_kv(&r, "TRUSTED", "1");
        assert_kv(&r, "SLOT", "A");
        run_clear(&r);
        run_helper(f, &r, status_args);
        g_autofree char *want = g_strdup_printf("\"trust\": {\"source\": \"%s\"", want_source);
        g_assert_nonnull(strstr(r.out, want));
        run_clear(&r);
}

static void test_trust_anchor_root(Fixture *f, gconstpointer data)
{
        anchor_world(f);
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTUUID=" SDA4_PARTUUID " ro");
        anchor_check(f, "0", "boot-disk");
        assert_skip_scan("/dev/sda4,/dev/sda5");
}

static void test_trust_anchor_fallback(Fixture *f, gconstpointer data)
{
        const char *status_args[] = {"status", NULL};
        Run r;

        anchor_world(f);
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTLABEL=rootfs-A ro");
        anchor_check(f, "1", "fallback");
        run_helper(f, &r, status_args);
        g_assert_nonnull(strstr(r.out, "trust: from the fallback"));
        run_clear(&r);
}

static void efivar_write(Fixture *f, const char *ascii, gssize cut)
{
        g_autofree char *dir = g_build_filename(f->dir, "efivars", NULL);
        g_autofree char *path =
                g_build_filename(dir, "LoaderDevicePartUUID-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", NULL);
        GByteArray *b = g_byte_array_new();
        /* BOOTSERVICE_ACCESS|RUNTIME_ACCESS, volatile: as systemd-boot sets it */
        const guint8 attr[4] = {6, 0, 0, 0}, zero = 0;
        g_byte_array_append(b, attr, 4);
        for (const char *p = ascii; *p; p++) {
                g_byte_array_append(b, (const guint8 *)p, 1);
                g_byte_array_append(b, &zero, 1);
        }
        g_byte_array_append(b, &zero, 1);
        g_byte_array_append(b, &zero, 1);
        write_file(path, b->data, cut >= 0 ? cut : (gssize)b->len);
        g_byte_array_free(b, TRUE);
}

/* Review finding 6: LoaderDevicePartUUID there but unreadable (a directory here: EISDIR; EACCES, EIO
 * alike) is a source that cannot be resolved: no anchor and no fallback, only trusted_disk= (was: the
 * fallback, which trusted the card). Absent is no source (the fallback, as in Debian's initramfs). */
static void test_trust_anchor_efivar_unreadable(Fixture *f, gconstpointer data)
{
        g_autofree char *path = g_build_filename(f->dir, "efivars",
                                                 "LoaderDevicePartUUID-4a67b082-0a4c-41cf-b6c7-440b29bb8c4f", NULL);
        Run r;

        anchor_world(f);
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTLABEL=rootfs-A ro");
        g_assert_cmpint(g_mkdir_with_parents(path, 0755), ==, 0);
        run_udev(f, &anchor_card, &r, FALSE);
        assert_kv(&r, "TRUST_SOURCE", "trusted-disk-only");
        assert_kv(&r, "TRUSTED", "0");
        run_clear(&r);
        /* the internal disk named by trusted_disk= stays trusted */
        set_config(f, "slot_suffixes=-A,-B\ntrusted_disk=" BY_PATH_TEST "sda\n");
        run_udev(f, &anchor_parts[1], &r, FALSE);
        assert_kv(&r, "TRUSTED", "1");
        run_clear(&r);
        run_udev(f, &anchor_card, &r, FALSE);
        assert_kv(&r, "TRUSTED", "0");
        run_clear(&r);
}

static void test_trust_anchor_efivar(Fixture *f, gconstpointer data)
{
        const char *status_args[] = {"status", NULL};
        Run r;

        anchor_world(f);
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTLABEL=rootfs-A ro");
        /* systemd-boot's variable names the ESP: its disk is the anchor */
        efivar_write(f, "00000FA0-0000-4000-8000-000000000001", -1);
        anchor_check(f, "0", "boot-disk");
        /* malformed (cut in the middle of a UTF-16 unit): said, ignored, the fallback decides */
        remove_tree(f->rundir);
        g_assert_cmpint(g_mkdir_with_parents(f->rundir, 0755), ==, 0);
        efivar_write(f, "00000FA0-0000-4000-8000-000000000001", 4 + 2 * 20 + 1);
        run_helper(f, &r, status_args);
        g_assert_nonnull(strstr(r.err, "not a partition GUID in UTF-16LE"));
        g_assert_nonnull(strstr(r.out, "trust: from the fallback"));
        run_clear(&r);
        /* a variable that names no partition here (yet): trust narrows until it appears, never the
         * fallback (an MMC card would pass its class test) */
        efivar_write(f, "11111111-0000-4000-8000-000000000001", -1);
        run_helper(f, &r, status_args);
        g_assert_nonnull(strstr(r.out, "trust: the disk that booted is not there yet"));
        g_assert_nonnull(strstr(r.out, "LoaderDevicePartUUID not-found"));
        run_clear(&r);
        /* steamos.efi= names the ESP too */
        g_autofree char *dir = g_build_filename(f->dir, "efivars", NULL);
        remove_tree(dir);
        remove_tree(f->rundir);
        g_assert_cmpint(g_mkdir_with_parents(f->rundir, 0755), ==, 0);
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTLABEL=rootfs-A steamos.efi=PARTUUID=" SDA1_PARTUUID);
        kernel_reset();
        anchor_check(f, "0", "boot-disk");
}

/* A second fixed disk carries the root's PARTUUID (a dd copy of the partition table): root= names
 * two disks, so it anchors neither (the fallback decides, said on stderr and in status) until the
 * root is mounted from one of them. */
static void test_trust_anchor_ambiguous(Fixture *f, gconstpointer data)
{
        static const DevSpec copy = {.node = "sdb4", .disk = "sdb", .partn = 4, .image = "seed",
                                     .partuuid = SDA4_PARTUUID};
        const char *status_args[] = {"status", NULL};
        Run r;

        anchor_world(f);
        world_add(f, &copy);
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTUUID=" SDA4_PARTUUID " ro");
        /* ambiguous between two fixed disks: both are the anchor, the card is not (was: the fallback,
         * which trusted the card) */
        anchor_check(f, "0", "boot-disk-ambiguous");
        run_helper(f, &r, status_args);
        g_assert_nonnull(strstr(r.err, "root names partitions on more than one fixed disk"));
        g_assert_nonnull(strstr(r.out, "root ambiguous"));
        g_assert_nonnull(strstr(r.out, "trust: from the boot, ambiguous"));
        run_clear(&r);
        /* the kernel mounted the root from sda4: that disk is the one that booted */
        const char *mounts[] = {"/dev/sda4", "/", NULL};
        set_mountinfo(f, mounts);
        kernel_mount(f, &anchor_parts[1]);
        run_helper(f, &r, status_args);
        g_assert_nonnull(strstr(r.out, "trust: from the boot"));
        run_clear(&r);
        run_udev(f, &copy, &r, FALSE);
        assert_kv(&r, "TRUSTED", "0");
        assert_kv(&r, "TRUST_SOURCE", "boot-disk");
        run_clear(&r);
}

/* Review A3: a USB stick plugged at run time with a copy of the ESP's PARTUUID (LoaderDevicePartUUID),
 * root=UUID= (a desktop): the stick is no candidate, so the ESP's disk stays the anchor and the MMC
 * card stays untrusted (was: ambiguous, the fallback, the card trusted); the same with the mounted
 * root named /dev/root or /dev/sda2 in mountinfo. */
static void test_trust_anchor_stick_copies_esp(Fixture *f, gconstpointer data)
{
        static const DevSpec devs[] = {
                {.node = "sda1", .disk = "sda", .partn = 1, .image = "esp", .partlabel = "esp"},
                {.node = "sda2", .disk = "sda", .partn = 2, .image = "rootfs", .partlabel = "root"},
        };
        static const DevSpec stick = {.node = "sdc1", .disk = "sdc", .partn = 1, .image = "esp",
                                      .partuuid = SDA1_PARTUUID};
        const char *mode = data;
        Run r;

        trust_add(f, "mmcblk2", "pci0000:00/0000:00:1c.1/mmc_host/mmc2/mmc2:0001/block",
                  (const char *[]){"device/type", "MMC", NULL});
        trust_add(f, "sdc", "pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0/block", NULL);
        world_add_all(f, devs, G_N_ELEMENTS(devs));
        set_config(f, "");
        efivar_write(f, SDA1_PARTUUID, -1);
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=UUID=11111111-1111-4111-8111-111111111111 ro");
        if (*mode) {
                const char *mounts[] = {mode, "/", NULL};
                set_mountinfo(f, mounts);
        }
        run_boot(f);
        world_add(f, &stick);
        run_udev(f, &stick, &r, FALSE);
        assert_kv(&r, "TRUSTED", "0");
        assert_kv(&r, "TRUST_SOURCE", "boot-disk");
        g_assert_null(strstr(r.err, "more than one"));
        run_clear(&r);
        world_add(f, &anchor_card);
        run_udev(f, &anchor_card, &r, FALSE);
        assert_kv(&r, "TRUST_SOURCE", "boot-disk");
        assert_kv(&r, "TRUSTED", "0");
        assert_kv(&r, "DECISION", "scan"); /* its filesystem collides with nothing */
        run_clear(&r);
        g_assert_cmpstr(trust_of(f, "mmcblk2", NULL), ==, "0");
}

/* The first coldplug (no `boot`, no udev database: the kernel's uevent files carry no PARTUUID) with
 * the card's event first: root=PARTUUID= is found in sda's own partition table (libblkid), so the
 * card is already untrusted; `boot` alike. Without the partition table read the root's PARTUUID is
 * unknown at that point and the fallback trusts the card. */
static void test_trust_anchor_first_coldplug(Fixture *f, gconstpointer data)
{
        static const DevSpec disk = {.node = "sda", .image = "gpt"};
        static const DevSpec parts[] = {
                {.node = "sda1", .disk = "sda", .partn = 1, .image = "esp", .partlabel = "esp", .kernel_uevent = TRUE},
                {.node = "sda4", .disk = "sda", .partn = 4, .image = "rootfs", .partlabel = "rootfs-A",
                 .kernel_uevent = TRUE},
                {.node = "sda5", .disk = "sda", .partn = 5, .image = "rootfs", .partlabel = "rootfs-B",
                 .kernel_uevent = TRUE},
        };
        static const DevSpec card = {.node = "mmcblk2p1", .disk = "mmcblk2", .partn = 1, .image = "home",
                                     .kernel_uevent = TRUE};
        const char *status_args[] = {"-v", "status", NULL};
        Run r;

        trust_add(f, "mmcblk2", "pci0000:00/0000:00:1c.1/mmc_host/mmc2/mmc2:0001/block",
                  (const char *[]){"device/type", "MMC", NULL});
        world_add(f, &disk);
        world_add_all(f, parts, G_N_ELEMENTS(parts));
        world_add(f, &card);
        set_config(f, "slot_suffixes=-A,-B\n");
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTUUID=" SDA4_PARTUUID " ro");
        run_udev(f, &card, &r, FALSE);
        assert_kv(&r, "TRUST_SOURCE", "boot-disk");
        assert_kv(&r, "TRUSTED", "0");
        assert_kv(&r, "DECISION", "scan"); /* its filesystem collides with nothing */
        run_clear(&r);
        run_helper(f, &r, status_args);
        g_assert_nonnull(strstr(r.out, "trust: from the boot"));
        g_assert_nonnull(strstr(r.out, "trust: /dev/mmcblk2p1 untrusted (not on the disk that booted)"));
        g_assert_nonnull(strstr(r.out, "trust: /dev/sda4 trusted (on the disk that booted)"));
        run_clear(&r);
        /* `boot` before coldplug: the same from the partition table */
        remove_tree(f->rundir);
        g_assert_cmpint(g_mkdir_with_parents(f->rundir, 0755), ==, 0);
        kernel_reset();
        run_helper(f, &r, status_args);
        g_assert_nonnull(strstr(r.out, "trust: /dev/mmcblk2p1 untrusted (not on the disk that booted)"));
        run_clear(&r);
}

/* Trust arbitrates collisions (rank.h): trusted storage, then fixed storage the boot does not name,
 * then hot-pluggable media. The boot names sda (root=PARTUUID= of sda4). */
#define RANK_CMDLINE "BOOT_IMAGE=/boot/vmlinuz root=PARTUUID=" SDA4_PARTUUID " ro"
static const DevSpec rank_root[] = {
        {.node = "sda4", .disk = "sda", .partn = 4, .image = "rootfs", .partlabel = "rootfs-A"},
};

/* A second internal disk the boot does not name carries a raid1 whose partner comes later, and a
 * filesystem of its own: each collides with nothing, so it is scanned as with systemd's rules, the
 * lone member not ready (SYSTEMD_READY=0 from ID_BTRFS_READY=0) until its partner is there. On
 * 5430f93 all three were `skip untrusted` (a data RAID on a second disk never assembled). */
static void test_rank_lone_fixed(Fixture *f, gconstpointer data)
{
        static const DevSpec member1 = {.node = "sdb1", .disk = "sdb", .partn = 1, .image = "raid-1"};
        static const DevSpec member2 = {.node = "sdc1", .disk = "sdc", .partn = 1, .image = "raid-2"};
        static const DevSpec home = {.node = "sdb2", .disk = "sdb", .partn = 2, .image = "home"};
        Run r;

        world_add_all(f, rank_root, G_N_ELEMENTS(rank_root));
        world_add(f, &member1);
        world_add(f, &home);
        set_config(f, "");
        set_cmdline(f, RANK_CMDLINE);
        run_boot(f);
        run_udev(f, &member1, &r, FALSE);
        assert_kv(&r, "TRUSTED", "0");
        assert_kv(&r, "DECISION", "scan");
        assert_kv(&r, "REASON", "multi-device");
        g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "0");
        run_clear(&r);
        run_udev(f, &home, &r, FALSE);
        assert_kv(&r, "DECISION", "scan");
        assert_kv(&r, "REASON", "unique");
        run_clear(&r);
        world_add(f, &member2);
        world_uevent(f, &member2, "add");
        run_udev(f, &member2, &r, FALSE);
        assert_kv(&r, "DECISION", "scan");
        g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "1");
        run_clear(&r);
        g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/sdb1") + kernel_count("DEVICES_READY", "/dev/sdb1"), >, 0);
        g_assert_true(kernel_all_present("44444444-4444-4444-8444-444444444444", 2));
        assert_skip_scan("");
}

/* A stick carrying the name the root is mounted by, alone (the internal disk's device has not appeared
 * yet: slow storage, late modules): a reserved name, withheld at once, not scanned, listed, no shared
 * link (UDISKS_IGNORE=1 and the rules' withholding), by root=UUID= and by root=LABEL=. The same for a
 * stick without btrfs carrying an fstab source's label (the `trust` verb). On 5430f93 the btrfs stick
 * was `skip untrusted` with link_priority=-100 only (its by-uuid and by-label links resolved to it
 * until the internal disk appeared), and the `trust` verb withheld nothing. */
static void test_rank_reserved_alone(Fixture *f, gconstpointer data)
{
        static const DevSpec stick = {.node = "sdg", .image = "rootfs", .removable = TRUE};
        static const DevSpec esp_stick = {.node = "sdh1", .disk = "sdh", .partn = 1, .image = "esp", .removable = TRUE};
        static const char *const roots[] = {"root=UUID=11111111-1111-4111-8111-111111111111", "root=LABEL=rootfs"};
        g_autofree char *fstab = g_build_filename(f->dir, "fstab", NULL);
        g_autofree char *devnode = devnode_of(&esp_stick);
        const char *trust_args[] = {"trust", devnode, NULL};
        Run r;

        world_add(f, &stick);
        set_config(f, "");
        for (gsize i = 0; i < G_N_ELEMENTS(roots); i++) {
                remove_tree(f->rundir);
                g_assert_cmpint(g_mkdir_with_parents(f->rundir, 0755), ==, 0);
                kernel_reset();
                set_cmdline(f, roots[i]);
                run_udev(f, &stick, &r, FALSE);
                g_test_message("%s: stick %s %s", roots[i], kv(&r, "BTRFS_SCAN_GATE_DECISION"),
                               kv(&r, "BTRFS_SCAN_GATE_REASON"));
                assert_kv(&r, "DECISION", "skip");
                assert_kv(&r, "REASON", "outranked");
                g_assert_cmpstr(kv(&r, "UDISKS_IGNORE"), ==, "1");
                g_assert_nonnull(strstr(r.err, "carries a name the system mounts by"));
                run_clear(&r);
                g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/sdg") + kernel_count("DEVICES_READY", "/dev/sdg"), ==, 0);
                assert_skip_scan("/dev/sdg*"); /* hot-pluggable: its whole disk, starred */
        }
        /* without the name reserved: a stick nobody copied, scanned as with systemd's rules */
        remove_tree(f->rundir);
        g_assert_cmpint(g_mkdir_with_parents(f->rundir, 0755), ==, 0);
        set_cmdline(f, "root=PARTLABEL=system");
        run_udev(f, &stick, &r, FALSE);
        assert_kv(&r, "DECISION", "scan");
        g_assert_null(kv(&r, "UDISKS_IGNORE"));
        run_clear(&r);

        world_add(f, &esp_stick);
        write_file(fstab, "# <file system> <mount point> <type> <options> <dump> <pass>\n"
                          "LABEL=ESP /boot/efi vfat umask=0077 0 1\n", -1);
        run_helper_env(f, &esp_stick, &r, trust_args);
        g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_WITHHELD"), ==, "1");
        run_clear(&r);
        write_file(fstab, "/dev/sda1 /boot/efi vfat umask=0077 0 1\n", -1);
        run_helper_env(f, &esp_stick, &r, trust_args);
        g_assert_null(kv(&r, "BTRFS_SCAN_GATE_WITHHELD"));
        run_clear(&r);
        /* the sources of /etc/crypttab and of a .mount unit are names the system mounts by too (on
         * 7b7eee0 neither was read: a stick carrying a LUKS UUID crypttab names was not withheld) */
        g_autofree char *crypttab = g_build_filename(f->dir, "crypttab", NULL);
        g_autofree char *units = g_build_filename(f->dir, "units", NULL);
        g_autofree char *unit = g_build_filename(units, "boot-efi.mount", NULL);
        write_file(crypttab, "# <target name> <source device> <key file> <options>\n"
                             "cryptdata LABEL=ESP none luks,discard\n", -1);
        run_helper_env(f, &esp_stick, &r, trust_args);
        g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_WITHHELD"), ==, "1");
        run_clear(&r);
        g_assert_cmpint(unlink(crypttab), ==, 0);
        g_assert_cmpint(g_mkdir_with_parents(units, 0755), ==, 0);
        write_file(unit, "[Mount]\n  What=/dev/disk/by-label/ESP  \nWhere=/boot/efi\n", -1);
        run_helper_env(f, &esp_stick, &r, trust_args);
        g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_WITHHELD"), ==, "1");
        run_clear(&r);
        /* what systemd accepts too: CRLF line ends, blanks around '=' */
        write_file(unit, "[Mount]\nWhat = LABEL=ESP\n", -1);
        run_helper_env(f, &esp_stick, &r, trust_args);
        g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_WITHHELD"), ==, "1");
        run_clear(&r);
        g_assert_cmpint(unlink(unit), ==, 0);
        write_file(crypttab, "cryptdata LABEL=ESP none luks\r\n", -1);
        run_helper_env(f, &esp_stick, &r, trust_args);
        g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_WITHHELD"), ==, "1");
        run_clear(&r);
        g_assert_cmpint(unlink(crypttab), ==, 0);
        /* a source that cannot be read: any name is taken for one the system mounts by (fail closed) */
        g_assert_cmpint(g_mkdir_with_parents(crypttab, 0755), ==, 0);
        run_helper_env(f, &esp_stick, &r, trust_args);
        g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_WITHHELD"), ==, "1");
        g_assert_nonnull(strstr(r.err, "cannot read"));
        run_clear(&r);
        g_assert_cmpint(rmdir(crypttab), ==, 0);
        run_helper_env(f, &esp_stick, &r, trust_args);
        g_assert_null(kv(&r, "BTRFS_SCAN_GATE_WITHHELD"));
        run_clear(&r);
}

/* The event order of review finding 1 with a name nothing reserves: the stick's event comes first
 * (collides with nothing: scanned, linked), then the internal disk the boot names appears with the same
 * filesystem. The stick is outranked: forgotten, and its udev record re-announced so that its links
 * and readiness go (its replayed event withholds it). */
static void test_rank_stick_first(Fixture *f, gconstpointer data)
{
        static const DevSpec stick = {.node = "sdg", .image = "rootfs", .removable = TRUE};
        Run r;

        set_config(f, "");
        set_cmdline(f, RANK_CMDLINE);
        world_add(f, &stick);
        run_udev(f, &stick, &r, FALSE);
        assert_kv(&r, "DECISION", "scan");
        udev_keep(f, &stick, &r);
        run_clear(&r);
        world_add_all(f, rank_root, G_N_ELEMENTS(rank_root));
        world_uevent(f, &rank_root[0], "add");
        run_udev(f, &rank_root[0], &r, FALSE);
        assert_kv(&r, "TRUSTED", "1");
        assert_kv(&r, "DECISION", "scan");
        g_assert_nonnull(strstr(kv(&r, "BTRFS_SCAN_GATE_ACTION"), "reannounced:/dev/sdg"));
        run_clear(&r);
        g_assert_true(reannounced(f, "sdg"));
        g_autofree char *reg = registry_string();
        g_assert_null(strstr(reg, "/dev/sdg"));
        g_setenv("SYNTH_ARG_BSG", "reannounced", TRUE);
        next_action = "change";
        run_udev(f, &stick, &r, FALSE);
        next_action = "add";
        g_unsetenv("SYNTH_ARG_BSG");
        assert_kv(&r, "DECISION", "skip");
        assert_kv(&r, "REASON", "outranked");
        g_assert_cmpstr(kv(&r, "UDISKS_IGNORE"), ==, "1");
        run_clear(&r);
}

/* Seeds follow the clone rules: two byte-identical seed images on internal disks are clones, neither
 * scanned under skip-all (5430f93: `scan seed` for both, the first one scanned won the race). */
static void test_rank_cloned_seeds(Fixture *f, gconstpointer data)
{
        static const DevSpec seeds[] = {
                {.node = "sdk1", .disk = "sdk", .partn = 1, .image = "seed"},
                {.node = "sdl1", .disk = "sdl", .partn = 1, .image = "seed"},
        };
        Run r;

        world_add_all(f, seeds, G_N_ELEMENTS(seeds));
        set_config(f, "");
        run_boot(f);
        for (gsize i = 0; i < G_N_ELEMENTS(seeds); i++) {
                run_udev(f, &seeds[i], &r, FALSE);
                assert_kv(&r, "DECISION", "skip");
                assert_kv(&r, "REASON", "clone");
                run_clear(&r);
        }
        assert_registry("");
        assert_skip_scan("/dev/sdk1,/dev/sdl1");
}

/* udev's database holds a partition name encoded ("Linux\\x20filesystem", blkid_encode_string()); the
 * `trust` verb compares names decoded: a stick partition named like a partition of the disk the boot
 * names is withheld whether the other's name came raw or encoded. */
static void test_rank_partlabel_encoded(Fixture *f, gconstpointer data)
{
        static const DevSpec root = {.node = "sda4", .disk = "sda", .partn = 4, .image = "rootfs",
                                     .partlabel = "Linux filesystem"};
        static const DevSpec stick = {.node = "sdh1", .disk = "sdh", .partn = 1, .image = "esp", .removable = TRUE,
                                      .partlabel = "Linux filesystem"};
        g_autofree char *devnode = devnode_of(&stick);
        const char *trust_args[] = {"trust", devnode, NULL};
        Run r;

        set_config(f, "");
        set_cmdline(f, RANK_CMDLINE);
        world_add(f, &root);
        world_add(f, &stick);
        run_helper_env(f, &stick, &r, trust_args);
        g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_WITHHELD"), ==, "1");
        run_clear(&r);
        umockdev_testbed_set_property(tb, g_hash_table_lookup(f->syspaths, "sda4"), "ID_PART_ENTRY_NAME",
                                      "Linux\\x20filesystem");
        run_helper_env(f, &stick, &r, trust_args);
        g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_WITHHELD"), ==, "1");
        run_clear(&r);
}

/* However many partitions a stick shows with a name of the root partition, the `trust` verb weighs
 * every carrier: each partition that came first (its record withholds nothing) is re-announced, so
 * that its replayed event withholds it. On 4678f73 the verb kept the first 63 carriers it enumerated:
 * partitions past them kept the links they had taken. */
static void test_rank_many_carriers(Fixture *f, gconstpointer data)
{
        static const DevSpec root = {.node = "sda4", .disk = "sda", .partn = 4, .partlabel = "Linux filesystem"};
        DevSpec parts[70];
        char names[G_N_ELEMENTS(parts)][8];
        g_autofree char *devnode = devnode_of(&root);
        const char *trust_args[] = {"trust", devnode, NULL};
        Run r;

        set_config(f, "");
        set_cmdline(f, RANK_CMDLINE);
        world_add(f, &root);
        for (gsize i = 0; i < G_N_ELEMENTS(parts); i++) {
                g_snprintf(names[i], sizeof(names[i]), "sdh%zu", i + 1);
                parts[i] = (DevSpec){.node = names[i], .disk = "sdh", .partn = (int)i + 1, .removable = TRUE,
                                     .partlabel = "Linux filesystem"};
                world_add(f, &parts[i]);
        }
        run_helper_env(f, &root, &r, trust_args);
        assert_kv(&r, "TRUSTED", "1");
        g_assert_null(kv(&r, "BTRFS_SCAN_GATE_WITHHELD"));
        run_clear(&r);
        for (gsize i = 0; i < G_N_ELEMENTS(parts); i++)
                if (!reannounced(f, names[i]))
                        g_error("%s (a stick partition named like the root) was not re-announced", names[i]);
}

/* A stick partition without btrfs, named like a partition of the disk the boot names (a name nothing
 * mounts by), comes first: it collides with nothing yet and keeps its links. When the btrfs partition
 * of the booted disk appears (its `add`), the stick is re-announced, and its replayed `trust` verb
 * withholds it. On 48d63ed only devices with btrfs were re-announced: the stick kept by-partlabel. */
static void test_rank_plain_stick_first(Fixture *f, gconstpointer data)
{
        static const DevSpec stick = {.node = "sdh1", .disk = "sdh", .partn = 1, .removable = TRUE,
                                      .partlabel = "rootfs-A"};
        g_autofree char *devnode = devnode_of(&stick);
        const char *trust_args[] = {"trust", devnode, NULL};
        Run r;

        set_config(f, "");
        set_cmdline(f, RANK_CMDLINE);
        world_add(f, &stick);
        run_helper_env(f, &stick, &r, trust_args);
        g_assert_null(kv(&r, "BTRFS_SCAN_GATE_WITHHELD"));
        run_clear(&r);
        world_add_all(f, rank_root, G_N_ELEMENTS(rank_root));
        run_udev(f, &rank_root[0], &r, FALSE);
        assert_kv(&r, "DECISION", "scan");
        run_clear(&r);
        g_assert_true(reannounced(f, "sdh1"));
        g_setenv("SYNTH_ARG_BSG", "reannounced", TRUE);
        run_helper_env(f, &stick, &r, trust_args);
        g_unsetenv("SYNTH_ARG_BSG");
        g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_WITHHELD"), ==, "1");
        run_clear(&r);
}

/* Ties (review finding 9): a fixed disk the boot does not name outranks a stick carrying the same
 * filesystem: the disk's copy is scanned, the stick's withheld, in both event orders. 5430f93 gave
 * both the same answer (`skip untrusted`). */
static void test_rank_fixed_outranks_stick(Fixture *f, gconstpointer data)
{
        static const DevSpec fixed = {.node = "sdb2", .disk = "sdb", .partn = 2, .image = "home"};
        static const DevSpec stick = {.node = "sdg", .image = "home", .removable = TRUE};
        const gboolean stick_first = g_str_equal(data, "stick-first");
        const DevSpec *order[2] = {stick_first ? &stick : &fixed, stick_first ? &fixed : &stick};
        Run r;

        world_add_all(f, rank_root, G_N_ELEMENTS(rank_root));
        set_config(f, "");
        set_cmdline(f, RANK_CMDLINE);
        run_boot(f);
        for (int i = 0; i < 2; i++) {
                world_add(f, order[i]);
                world_uevent(f, order[i], "add");
                run_udev(f, order[i], &r, FALSE);
                run_clear(&r);
        }
        run_udev(f, &fixed, &r, FALSE);
        assert_kv(&r, "TRUSTED", "0");
        assert_kv(&r, "DECISION", "scan");
        assert_kv(&r, "REASON", "unique");
        run_clear(&r);
        run_udev(f, &stick, &r, FALSE);
        assert_kv(&r, "DECISION", "skip");
        assert_kv(&r, "REASON", "outranked");
        g_assert_null(strstr(r.err, "removable"));
        run_clear(&r);
        g_autofree char *reg = registry_string();
        g_assert_null(strstr(reg, "/dev/sdg"));
        g_assert_nonnull(strstr(reg, "/dev/sdb2"));
}

/* The partition-table read of a first coldplug (mark_table_probes()) is for class-fixed disks only:
 * no libblkid parser runs over media nobody vouches for. A USB stick whose GPT carries the root's
 * PARTUUID (a copy of sda's table; sda is not there) with partitions the udev database does not know
 * yet: its table is not read, so root= names nothing found (`not-found`, not `hot-pluggable`), and
 * the stick's partition gets no PARTUUID from it. Trust comes from the fallback either way (a stick
 * is no candidate). Fails with the bsg_dev_class_fixed() test in mark_table_probes() removed: the
 * stick's table is read, root= `hot-pluggable`, said on stderr. */
static void test_trust_anchor_table_fixed_only(Fixture *f, gconstpointer data)
{
        static const DevSpec stick = {.node = "sdc", .image = "gpt", .removable = TRUE};
        static const DevSpec stick_part = {.node = "sdc4", .disk = "sdc", .partn = 4, .image = "rootfs",
                                           .partlabel = "rootfs-A", .removable = TRUE, .kernel_uevent = TRUE};
        static const DevSpec card = {.node = "mmcblk2p1", .disk = "mmcblk2", .partn = 1, .image = "home",
                                     .kernel_uevent = TRUE};
        const char *status_args[] = {"-v", "status", NULL};
        Run r;

        trust_add(f, "mmcblk2", "pci0000:00/0000:00:1c.1/mmc_host/mmc2/mmc2:0001/block",
                  (const char *[]){"device/type", "MMC", NULL});
        world_add(f, &stick);
        world_add(f, &stick_part);
        world_add(f, &card);
        set_config(f, "slot_suffixes=-A,-B\n");
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTUUID=" SDA4_PARTUUID " ro");
        run_udev(f, &card, &r, FALSE);
        /* root= names a disk that is not there: trust narrows until it appears (never the class) */
        assert_kv(&r, "TRUST_SOURCE", "trusted-disk-only");
        g_assert_null(strstr(r.err, "hot-pluggable media only"));
        run_clear(&r);
        run_udev(f, &stick_part, &r, FALSE);
        assert_kv(&r, "TRUSTED", "0");
        g_assert_null(strstr(r.err, "hot-pluggable media only"));
        run_clear(&r);
        run_helper(f, &r, status_args);
        g_test_message("status: %s", r.out);
        g_assert_nonnull(strstr(r.out, "root not-found"));
        g_assert_null(strstr(r.out, "root hot-pluggable"));
        g_assert_null(strstr(r.out, SDA4_PARTUUID));
        run_clear(&r);
}

/* What udev keeps of the `trust` verb's answer for NODE (the testbed's uevent file, which libudev
 * reads as the database). */
static void trust_keep(Fixture *f, const char *node, const char *answer)
{
        umockdev_testbed_set_property(tb, g_hash_table_lookup(f->syspaths, node), "BTRFS_SCAN_GATE_TRUSTED", answer);
}

/* Issue 18 (Known gaps): the `trust` verb's answers in udev's database followed the anchor of the
 * moment they were made. The card's disk (no btrfs) was answered from the fallback (trusted) before
 * the boot named a disk; the root's event then finds the anchor (sda): the card's
 * answer is stale and it is sent a marked change event, the ESP's (trusted either way) is not. The
 * next event, same anchor: nothing. trusted_disk= naming the card changes its answer again: sent.
 * Fails with reannounce_trust_changed()'s call in run_udev() removed (no change event: the card stays
 * trusted in udev until its next event). */
static void test_trust_reannounce(Fixture *f, gconstpointer data)
{
        Run r;

        anchor_world(f);
        /* answered from the fallback (the boot named no disk then; a named disk that is not there
         * would narrow trust instead) */
        g_assert_cmpstr(trust_of(f, "mmcblk2", NULL), ==, "1");
        trust_keep(f, "mmcblk2", "1");
        g_assert_cmpstr(trust_of(f, "sda1", NULL), ==, "1");
        trust_keep(f, "sda1", "1");
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTUUID=" SDA4_PARTUUID " ro");

        run_udev(f, &anchor_parts[1], &r, FALSE);
        assert_kv(&r, "TRUST_SOURCE", "boot-disk");
        g_assert_nonnull(strstr(kv(&r, "BTRFS_SCAN_GATE_ACTION"), "reannounced:/dev/mmcblk2"));
        run_clear(&r);
        g_assert_true(reannounced(f, "mmcblk2"));
        g_assert_false(reannounced(f, "sda1"));
        /* the change event's `trust`: from the anchor now */
        g_assert_cmpstr(trust_of(f, "mmcblk2", NULL), ==, "0");
        trust_keep(f, "mmcblk2", "0");

        run_udev(f, &anchor_parts[2], &r, FALSE);
        run_clear(&r);
        g_assert_false(reannounced(f, "mmcblk2"));
        g_assert_false(reannounced(f, "sda1"));

        set_config(f, "slot_suffixes=-A,-B\ntrusted_disk=" BY_PATH_TEST "mmcblk2\n");
        run_udev(f, &anchor_parts[2], &r, FALSE);
        run_clear(&r);
        g_assert_true(reannounced(f, "mmcblk2"));
        g_assert_false(reannounced(f, "sda1"));
        g_assert_cmpstr(trust_of(f, "mmcblk2", NULL), ==, "1");
}

/* A root over two internal disks (root=UUID=, raid1 over sda2 and sdb1) with an anchor (the ESP on
 * sda): the boot names sda only, so sdb needs trusted_disk= (an fsid is what any media can copy: it
 * never grants trust, review A1-A5); with it the root assembles, the MMC card does not join; without
 * it sdb1's event says why it is not scanned and names the remedy. */
static void test_trust_anchor_multi_device_root(Fixture *f, gconstpointer data)
{
        static const DevSpec sda2_copy = {.node = "sdc1", .disk = "sdc", .partn = 1, .image = "raid-1"};
        const char *status_args[] = {"-v", "status", NULL};
        static const DevSpec devs[] = {
                {.node = "sda1", .disk = "sda", .partn = 1, .image = "esp", .partlabel = "esp"},
                {.node = "sda2", .disk = "sda", .partn = 2, .image = "raid-1", .partlabel = "root1"},
                {.node = "sdb1", .disk = "sdb", .partn = 1, .image = "raid-2", .partlabel = "root2"},
        };
        Run r;

        trust_add(f, "mmcblk2", "pci0000:00/0000:00:1c.1/mmc_host/mmc2/mmc2:0001/block",
                  (const char *[]){"device/type", "MMC", NULL});
        world_add_all(f, devs, G_N_ELEMENTS(devs));
        world_add(f, &anchor_card);
        set_config(f, "trusted_disk=" BY_PATH_TEST "sdb\n");
        efivar_write(f, SDA1_PARTUUID, -1);
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=UUID=44444444-4444-4444-8444-444444444444 ro");
        run_boot(f);
        assert_registry("/dev/mmcblk2p1,/dev/sda2,/dev/sdb1"); /* the card's home collides with nothing */
        run_udev(f, &devs[2], &r, FALSE);
        assert_kv(&r, "TRUST_SOURCE", "boot-disk");
        assert_kv(&r, "TRUSTED", "1");
        assert_kv(&r, "DECISION", "scan");
        g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "1");
        run_clear(&r);
        run_udev(f, &anchor_card, &r, FALSE);
        assert_kv(&r, "TRUSTED", "0");
        run_clear(&r);
        /* without trusted_disk=: the second disk is a disk the boot does not name, root=UUID= or not
         * (a disk that looks fixed may be an eSATA or hot-swap bay: review of the fourth session);
         * the member's event says why it is not scanned and what to do */
        remove_tree(f->rundir);
        g_assert_cmpint(g_mkdir_with_parents(f->rundir, 0755), ==, 0);
        kernel_reset();
        set_config(f, "");
        world_add(f, &sda2_copy);
        run_udev(f, &devs[2], &r, FALSE);
        assert_kv(&r, "TRUST_SOURCE", "boot-disk");
        assert_kv(&r, "TRUSTED", "0");
        assert_kv(&r, "DECISION", "skip");
        g_assert_nonnull(strstr(r.err, "/dev/sdb1: a member of /dev/sda2's multi-device filesystem "
                                       "44444444-4444-4444-8444-444444444444, on a disk neither the boot nor "
                                       "trusted_disk= names: untrusted, not scanned"));
        g_assert_nonnull(strstr(r.err, "trusted_disk=/dev/disk/by-path/"));
        run_clear(&r);
        run_helper(f, &r, status_args);
        g_assert_nonnull(strstr(r.out, "trust: /dev/sdb1 untrusted (not on the disk that booted)"));
        g_assert_nonnull(strstr(r.out, "trust: /dev/sdc1 untrusted (not on the disk that booted)"));
        run_clear(&r);
        /* a copy of the booted disk's member on a third disk: untrusted, and no member message */
        run_udev(f, &sda2_copy, &r, FALSE);
        assert_kv(&r, "TRUSTED", "0");
        assert_kv(&r, "DECISION", "skip");
        g_assert_null(strstr(r.err, "multi-device filesystem"));
        run_clear(&r);
        g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/sdb1") + kernel_count("DEVICES_READY", "/dev/sdb1") +
                                 kernel_count("SCAN_DEV", "/dev/sdc1") + kernel_count("DEVICES_READY", "/dev/sdc1"),
                         ==, 0);
}

/* Review A1/A4/A5: an MMC card (class-fixed, the kind of media the anchor excludes) carrying a
 * superblock with the fsid root=UUID= names is never trusted or scanned: a copy of the second member
 * (A1), one with a higher generation next to the real members (A4, which would knock the real member
 * out), a single-device root's copy claiming num_devices=2 (A5). */
static void test_trust_anchor_card_root_fsid(Fixture *f, gconstpointer data)
{
        const char *which = data;
        static const DevSpec raid[] = {
                {.node = "sda1", .disk = "sda", .partn = 1, .image = "esp", .partlabel = "esp"},
                {.node = "sda2", .disk = "sda", .partn = 2, .image = "raid-1", .partlabel = "root1"},
                {.node = "sdb1", .disk = "sdb", .partn = 1, .image = "raid-2", .partlabel = "root2"},
        };
        static const DevSpec one[] = {
                {.node = "sda1", .disk = "sda", .partn = 1, .image = "esp", .partlabel = "esp"},
                {.node = "sda2", .disk = "sda", .partn = 2, .image = "rootfs", .partlabel = "root1"},
        };
        static const DevSpec card_copy = {.node = "mmcblk2p1", .disk = "mmcblk2", .partn = 1, .image = "raid-2"};
        static const DevSpec card_newer = {.node = "mmcblk2p1", .disk = "mmcblk2", .partn = 1,
                                           .image = "raid-2-newer"};
        static const DevSpec card_nd2 = {.node = "mmcblk2p1", .disk = "mmcblk2", .partn = 1, .image = "rootfs-nd2"};
        const gboolean single = g_strcmp0(which, "single") == 0, newer = g_strcmp0(which, "newer") == 0;
        const DevSpec *devs = single ? one : raid;
        const DevSpec *card = single ? &card_nd2 : newer ? &card_newer : &card_copy;
        /* copy: the real second member is absent (the card stands in for it) */
        gsize n = single ? G_N_ELEMENTS(one) : newer ? G_N_ELEMENTS(raid) : 2;
        Run r;

        trust_add(f, "mmcblk2", "pci0000:00/0000:00:1c.1/mmc_host/mmc2/mmc2:0001/block",
                  (const char *[]){"device/type", "MMC", NULL});
        world_add_all(f, devs, n);
        world_add(f, card);
        set_config(f, newer ? "trusted_disk=" BY_PATH_TEST "sdb\n" : "");
        efivar_write(f, SDA1_PARTUUID, -1);
        set_cmdline(f, single ? "BOOT_IMAGE=/boot/vmlinuz root=UUID=11111111-1111-4111-8111-111111111111 ro"
                              : "BOOT_IMAGE=/boot/vmlinuz root=UUID=44444444-4444-4444-8444-444444444444 ro");
        run_boot(f);
        for (gsize i = 0; i <= n; i++) {
                const DevSpec *s = i < n ? &devs[i] : card;
                run_udev(f, s, &r, FALSE);
                if (s == card) {
                        assert_kv(&r, "TRUST_SOURCE", "boot-disk");
                        assert_kv(&r, "TRUSTED", "0");
                        assert_kv(&r, "DECISION", "skip");
                } else if (i > 0) {
                        assert_kv(&r, "TRUSTED", "1");
                }
                run_clear(&r);
        }
        g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/mmcblk2p1") + kernel_count("DEVICES_READY", "/dev/mmcblk2p1"),
                         ==, 0);
        g_autofree char *list = skip_scan_contents();
        g_auto(GStrv) items = g_strsplit(list ? list : "", ",", -1);
        g_assert_true(g_strv_contains((const char *const *)items, "/dev/mmcblk2p1"));
        g_assert_false(g_strv_contains((const char *const *)items, "/dev/sda2"));
        if (newer)
                g_assert_false(g_strv_contains((const char *const *)items, "/dev/sdb1"));
}

/* Review A6: the fixed disk sdb is replaced at the same major:minor by removable media whose remove
 * event was lost (the inventory still holds the fixed disk's record, class fixed). The record's
 * diskseq differs from sysfs's: neither its class nor its contents are taken: never scanned, listed
 * (`skip unreadable` until its own event reads it; was: `scan unique`, empty skip_scan). */
static void test_trust_stale_class_diskseq(Fixture *f, gconstpointer data)
{
        static const DevSpec fixed = {.node = "sdb1", .disk = "sdb", .partn = 1, .image = "home"};
        static const DevSpec stick = {.node = "sdb1", .disk = "sdb", .partn = 1, .image = "home", .removable = TRUE};
        static const DevSpec root = {.node = "sda2", .disk = "sda", .partn = 2, .image = "rootfs"};
        const char *dry[] = {"-v", "--dry-run", "reconcile", NULL};
        const char *rec[] = {"-v", "reconcile", NULL};
        Run r;

        set_config(f, "");
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTLABEL=x ro");
        world_add(f, &root);
        world_add(f, &fixed);
        umockdev_testbed_set_attribute(tb, g_hash_table_lookup(f->syspaths, "sdb"), "diskseq", "5");
        run_boot(f);
        /* sdb and sdb1 go away without a remove event (sysfs only), and come back removable */
        umockdev_testbed_remove_device(tb, g_hash_table_lookup(f->syspaths, "sdb1"));
        umockdev_testbed_remove_device(tb, g_hash_table_lookup(f->syspaths, "sdb"));
        g_hash_table_remove(f->syspaths, "sdb1");
        g_hash_table_remove(f->syspaths, "sdb");
        g_autofree char *sys = umockdev_testbed_get_sys_dir(tb); /* transfer full */
        const char *rel[] = {"class/block/sdb", "class/block/sdb1", "block/sdb", "block/sdb1", NULL};
        for (int i = 0; rel[i]; i++) {
                g_autofree char *pth = g_build_filename(sys, rel[i], NULL);
                (void)unlink(pth);
        }
        g_autofree char *dd = g_build_filename(sys, "dev/block", NULL);
        GDir *dir = g_dir_open(dd, 0, NULL);
        const char *nm;
        while (dir && (nm = g_dir_read_name(dir))) {
                g_autofree char *pth = g_build_filename(dd, nm, NULL);
                if (!g_file_test(pth, G_FILE_TEST_EXISTS))
                        (void)unlink(pth);
        }
        if (dir)
                g_dir_close(dir);
        world_add(f, &stick);
        umockdev_testbed_set_attribute(tb, g_hash_table_lookup(f->syspaths, "sdb"), "diskseq", "9");
        kernel_reset();
        run_helper(f, &r, dry);
        g_test_message("dry-run: %s", r.out);
        g_assert_null(strstr(r.out, "/dev/sdb1 scan"));
        run_clear(&r);
        run_helper(f, &r, rec);
        run_clear(&r);
        g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/sdb1") + kernel_count("DEVICES_READY", "/dev/sdb1"), ==, 0);
        g_autofree char *list = skip_scan_contents();
        g_auto(GStrv) items = g_strsplit(list ? list : "", ",", -1);
        /* listed: by itself, or (hot-pluggable now) by its whole disk, starred */
        g_assert_true(g_strv_contains((const char *const *)items, "/dev/sdb1") ||
                      g_strv_contains((const char *const *)items, "/dev/sdb*"));
}

/* Rewrites every line of the inventory: the flags field (the 18th) with BITS cleared. */
static void inventory_clear_flags(Fixture *f, unsigned bits)
{
        g_autofree char *path = g_build_filename(f->rundir, "devices", NULL);
        g_autofree char *text = read_file(path);
        g_assert_nonnull(text);
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        GString *out = g_string_new(NULL);
        for (int i = 0; lines[i]; i++) {
                if (lines[i][0] == '\0')
                        continue;
                g_auto(GStrv) f2 = g_strsplit(lines[i], " ", -1);
                if (lines[i][0] != '#' && g_strv_length(f2) > 17) {
                        unsigned flags = (unsigned)strtoul(f2[17], NULL, 10) & ~bits;
                        g_free(f2[17]);
                        f2[17] = g_strdup_printf("%u", flags);
                }
                g_autofree char *line = g_strjoinv(" ", f2);
                g_string_append_printf(out, "%s\n", line);
        }
        write_file(path, out->str, -1);
        g_string_free(out, TRUE);
}

/* Whether every device line of the inventory has flag BIT. */
static gboolean inventory_all_flag(Fixture *f, unsigned bit)
{
        g_autofree char *path = g_build_filename(f->rundir, "devices", NULL);
        g_autofree char *text = read_file(path);
        g_auto(GStrv) lines = g_strsplit(text ? text : "", "\n", -1);
        guint n = 0;
        for (int i = 0; lines[i]; i++) {
                if (lines[i][0] == '\0' || lines[i][0] == '#')
                        continue;
                g_auto(GStrv) f2 = g_strsplit(lines[i], " ", -1);
                if (g_strv_length(f2) <= 17 || !(strtoul(f2[17], NULL, 10) & bit))
                        return FALSE;
                n++;
        }
        return n > 0;
}

/* An inventory an older helper wrote (no class in its lines) is still decided with the anchor, and
 * each line gets its class once (from sysfs), so later events do not ask sysfs again. */
static void test_trust_old_inventory(Fixture *f, gconstpointer data)
{
        Run r;

        anchor_world(f);
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTUUID=" SDA4_PARTUUID " ro");
        run_boot(f);
        g_assert_true(inventory_all_flag(f, 16));
        inventory_clear_flags(f, 16 | 32);
        g_assert_false(inventory_all_flag(f, 16));
        next_action = "change";
        run_udev(f, &anchor_parts[2], &r, FALSE);
        next_action = "add";
        assert_kv(&r, "TRUSTED", "1");
        run_clear(&r);
        g_assert_true(inventory_all_flag(f, 16));
        run_udev(f, &anchor_card, &r, FALSE);
        assert_kv(&r, "TRUSTED", "0");
        assert_kv(&r, "DECISION", "scan"); /* a filesystem nothing else carries */
        run_clear(&r);
}

/* Review finding 5 (18.1g): RAUC's system.conf names its slot's device= through a link. A by-label,
 * by-partlabel, by-uuid or by-partuuid link is what the media names: a card whose filesystem or
 * partition carries the label the link is made of must not make its own disk the anchor. The same
 * card through a by-path link (the kernel's topology) does anchor. The anchor otherwise is sda
 * (root=PARTUUID=), so a card RAUC does not anchor is untrusted. The links are relative symlinks
 * inside the testbed's dev/ (an absolute target would resolve to the host's /dev behind the preload's
 * back; the by-path case fails if the link did not reach the testbed's node, so the by-label case
 * cannot pass for that reason). data: "by-label" or "by-path". */
static void test_trust_anchor_rauc_link(Fixture *f, gconstpointer data)
{
        const gboolean by_path = g_str_equal(data, "by-path");
        const char *link = by_path ? "/dev/disk/by-path/pci-0000:00:1c.1-platform-mmc2-part1" : "/dev/disk/by-label/rootfs_b";
        g_autofree char *conf = g_build_filename(f->dir, "system.conf", NULL);
        g_autofree char *file = tb_path(link);
        g_autofree char *gate = g_strdup_printf("slot_suffixes=-A,-B\nrauc_system_conf=%s\n", conf);
        g_autofree char *rauc_conf = g_strdup_printf("[system]\ncompatible=test\nbootloader=custom\n\n"
                                                     "[slot.rootfs.0]\ndevice=/dev/sda4\nbootname=A\n\n"
                                                     "[slot.rootfs.1]\ndevice=%s\nbootname=B\n",
                                                     link);
        const char *boot_args[] = {"boot", NULL};
        Run r;

        anchor_world(f);
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTUUID=" SDA4_PARTUUID " ro rauc.slot=A");
        write_file(conf, rauc_conf, -1);
        set_config(f, gate);
        make_link(link, "/dev/mmcblk2p1");
        GStatBuf st;
        g_assert_cmpint(g_stat(link, &st), ==, 0);
        g_assert_true(S_ISBLK(st.st_mode));
        g_assert_cmpuint(major(st.st_rdev), >=, FAKE_MAJOR_BASE);

        run_helper(f, &r, boot_args);
        g_assert_cmpint(r.status, ==, 0);
        g_autofree char *boot_err = g_strdup(r.err);
        run_clear(&r);
        run_udev(f, &anchor_card, &r, FALSE);
        g_test_message("card (%s): %s %s, trust source %s", link, kv(&r, "BTRFS_SCAN_GATE_DECISION"),
                       kv(&r, "BTRFS_SCAN_GATE_REASON"), kv(&r, "BTRFS_SCAN_GATE_TRUST_SOURCE"));
        assert_kv(&r, "TRUSTED", by_path ? "1" : "0");
        assert_kv(&r, "TRUST_SOURCE", "boot-disk");
        /* through the link RAUC names the card's slot; untrusted storage carries none */
        assert_kv(&r, "SLOT", by_path ? "B" : "");
        run_clear(&r);
        g_assert_cmpstr(trust_of(f, "mmcblk2", NULL), ==, by_path ? "1" : "0");
        /* the internal disk stays the anchor */
        run_udev(f, &anchor_parts[1], &r, FALSE);
        assert_kv(&r, "TRUSTED", "1");
        assert_kv(&r, "SLOT", "A");
        run_clear(&r);
        /* `boot` says why the link is not used */
        if (by_path)
                g_assert_null(strstr(boot_err, "RAUC device="));
        else
                g_assert_nonnull(strstr(boot_err, "RAUC device=/dev/disk/by-label/rootfs_b: a by-label"));
}

/* The ESP that booted (steamos.efi=) on one disk, the slots on two others (the image tests' layout,
 * so that PCI order can be permuted): the root that root=PARTUUID= names is on the booted disks too,
 * so slot A is active and owns the links; B is demoted. The boot names the ESP's and the root's disks
 * only: the third disk is trusted because trusted_disk= names it (issue 18 item 1). */
static void test_slot_esp_on_other_disk(Fixture *f, gconstpointer data)
{
        static const DevSpec parts[] = {
                {.node = "sda1", .disk = "sda", .partn = 1, .image = "esp", .partlabel = "efi-A"},
                {.node = "sdb1", .disk = "sdb", .partn = 1, .image = "rootfs", .partlabel = "rootfs-A"},
                {.node = "sdc1", .disk = "sdc", .partn = 1, .image = "rootfs", .partlabel = "rootfs-B"},
        };
        Run r;

        world_add_all(f, parts, G_N_ELEMENTS(parts));
        set_config(f, "slot_suffixes=-A,-B\ntrusted_disk=" BY_PATH_TEST "sdc\n");
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTUUID=00000fa1-0000-4000-8000-000000000001 ro "
                       "steamos.efi=PARTUUID=00000fa0-0000-4000-8000-000000000001");
        run_boot(f);
        run_udev(f, &parts[1], &r, FALSE);
        assert_kv(&r, "SLOT", "A");
        assert_kv(&r, "SLOT_ACTIVE", "1");
        g_assert_null(kv(&r, "UDISKS_IGNORE"));
        run_clear(&r);
        run_udev(f, &parts[2], &r, FALSE);
        assert_kv(&r, "SLOT", "B");
        assert_kv(&r, "SLOT_ACTIVE", "0");
        g_assert_cmpstr(kv(&r, "UDISKS_IGNORE"), ==, "1");
        run_clear(&r);
}

/* trusted_disk=/dev/disk/by-path/NAME without the link: the first coldplug event of rootfs-A (on a
 * disk the boot names) comes while the disk of rootfs-B, named by trusted_disk=, has no by-path link
 * yet (udev makes it at the end of that disk's own event, which may come later). Its place (ID_PATH)
 * is known all the same: from the udev database ("database"), derived by path_id now ("derived"),
 * or, at the partition's own event before udev wrote anything, from the event ("event"). Both copies are trusted clones: skipped,
 * registered by nothing. "none" (no ID_PATH anywhere) is the control: B is untrusted, A outranks it
 * and is scanned, which is what the link-based lookup did in that window. */
static void test_trust_by_path_without_link(Fixture *f, gconstpointer data)
{
        static const DevSpec parts[] = {
                {.node = "sda1", .disk = "sda", .partn = 1, .image = "esp", .partlabel = "efi-A"},
                {.node = "sdb1", .disk = "sdb", .partn = 1, .image = "rootfs", .partlabel = "rootfs-A"},
                {.node = "sdc1", .disk = "sdc", .partn = 1, .image = "rootfs", .partlabel = "rootfs-B"},
        };
        const char *how = data;
        g_autofree char *link = g_build_filename(tb_root, "dev/disk/by-path/pci-test-sdc", NULL);
        Run r;

        world_add_all(f, parts, G_N_ELEMENTS(parts));
        write_file(f->config, "slot_suffixes=-A,-B\ntrusted_disk=" BY_PATH_TEST "sdc\n", -1);
        if (g_str_equal(how, "database"))
                set_id_path(f, "sdc", "pci-test-sdc");
        else if (g_str_equal(how, "derived"))
                set_derived_id_path(f, "sdc", "pci-test-sdc");
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTUUID=00000fa1-0000-4000-8000-000000000001 ro "
                       "steamos.efi=PARTUUID=00000fa0-0000-4000-8000-000000000001");
        g_assert_false(g_file_test(link, G_FILE_TEST_EXISTS));
        gboolean trusted = !g_str_equal(how, "none");
        if (g_str_equal(how, "event")) {
                /* rootfs-B's own event first: its ID_PATH (the disk's) is in the event */
                g_setenv("ID_PATH", "pci-test-sdc", TRUE);
                run_udev(f, &parts[2], &r, FALSE);
                g_unsetenv("ID_PATH");
                assert_kv(&r, "TRUSTED", "1");
                assert_kv(&r, "DECISION", "skip");
                run_clear(&r);
                /* what udev keeps of the disk's event (before its partitions') and of this one */
                set_id_path(f, "sdc", "pci-test-sdc");
                set_id_path(f, "sdc1", "pci-test-sdc");
        }
        run_udev(f, &parts[1], &r, FALSE);
        assert_kv(&r, "TRUSTED", "1");
        assert_kv(&r, "DECISION", trusted ? "skip" : "scan");
        run_clear(&r);
        assert_registry(trusted ? "" : "/dev/sdb1");
        if (!g_str_equal(how, "event")) {
                run_udev(f, &parts[2], &r, FALSE);
                assert_kv(&r, "TRUSTED", trusted ? "1" : "0");
                assert_kv(&r, "DECISION", "skip");
                run_clear(&r);
                assert_registry(trusted ? "" : "/dev/sdb1");
        }
        g_assert_false(g_file_test(link, G_FILE_TEST_EXISTS));
}

/* --write-modprobe and --print-cmdline name partitions by PARTUUID: the next boot's /dev/sdX may
 * differ (the duplicate-PARTUUID rule is a unit/plan row). */
static void test_slot_stable_skip_list(Fixture *f, gconstpointer data)
{
        const char *args[] = {"boot", "--write-modprobe", NULL, "--print-cmdline", NULL};
        g_autofree char *file = g_build_filename(f->dir, "btrfs-scan-gate-modprobe.conf", NULL);
        g_autofree char *text = NULL;
        Run r;

        steamos_prepare(f, &skip_all);
        args[2] = file;
        run_helper(f, &r, args);
        /* sda4 rootfs-A, sda5 rootfs-B, sda6 var-A, sda7 var-B (fake major 4000 = 0xfa0) */
        const char *want = "PARTUUID=00000fa0-0000-4000-8000-000000000004,"
                           "PARTUUID=00000fa0-0000-4000-8000-000000000005,"
                           "PARTUUID=00000fa0-0000-4000-8000-000000000006,"
                           "PARTUUID=00000fa0-0000-4000-8000-000000000007";
        g_assert_cmpstr(kv(&r, "btrfs.skip_scan"), ==, want);
        run_clear(&r);
        g_assert_true(g_file_get_contents(file, &text, NULL, NULL));
        g_autofree char *line = g_strdup_printf("options btrfs skip_scan=%s\n", want);
        g_assert_nonnull(strstr(text, line));
        /* the run-time list keeps the paths the kernel resolves now */
        assert_skip_scan("/dev/sda4,/dev/sda5,/dev/sda6,/dev/sda7");
}

/* RAUC: the bootloader says rauc.slot=A|B; partition labels rootfs_a/rootfs_b. */
static const DevSpec rauc[] = {
        {.node = "sdb1", .disk = "sdb", .partn = 1, .image = "rootfs", .partlabel = "rootfs_a"},
        {.node = "sdb2", .disk = "sdb", .partn = 2, .image = "rootfs", .partlabel = "rootfs_b"},
        {.node = "sdb3", .disk = "sdb", .partn = 3, .image = "home", .partlabel = "data"},
};

/* data: the slot the kernel command line names, "A" or "B" */
static void test_rauc(Fixture *f, gconstpointer data)
{
        Run r;
        gboolean b = g_str_equal(data, "B");
        const DevSpec *active = &rauc[b ? 1 : 0], *inactive = &rauc[b ? 0 : 1];
        g_autofree char *cmdline = g_strdup_printf("console=ttyS0 root=/dev/sdb%d rootwait rauc.slot=%s",
                                                   b ? 2 : 1, (const char *)data);
        world_add_all(f, rauc, G_N_ELEMENTS(rauc));
        /* no active_slot in the config: the kernel command line names it */
        set_config(f, "slot_suffixes=_a,_b\nclone_policy=active\n");
        set_cmdline(f, cmdline);

        run_udev(f, &rauc[0], &r, FALSE);
        assert_kv(&r, "REASON", "clone");
        assert_kv(&r, "DECISION", b ? "skip" : "scan");
        assert_kv(&r, "SLOT", "A");
        assert_kv(&r, "SLOT_BASE", "rootfs");
        assert_kv(&r, "SLOT_ACTIVE", b ? "0" : "1");
        g_assert_cmpstr(kv(&r, "UDISKS_IGNORE"), ==, b ? "1" : NULL);
        run_clear(&r);

        run_udev(f, &rauc[1], &r, FALSE);
        assert_kv(&r, "REASON", "clone");
        assert_kv(&r, "DECISION", b ? "scan" : "skip");
        assert_kv(&r, "SLOT", "B");
        assert_kv(&r, "SLOT_ACTIVE", b ? "1" : "0");
        if (b)
                g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "1");
        run_clear(&r);

        run_udev_quiet(f, &rauc[2]);
        g_autofree char *devnode = devnode_of(active);
        g_autofree char *want = g_strdup_printf("%s,/dev/sdb3", devnode);
        assert_registry(want);
        g_autofree char *skip = devnode_of(inactive);
        assert_skip_scan(skip);
        /* an inactive clone seen second never reaches the kernel */
        if (!b)
                g_assert_cmpuint(kernel_count(NULL, skip), ==, 0);
}

/* RAUC with the default (skip-all) policy: neither copy is scanned, both are listed. */
static void test_rauc_skip_all(Fixture *f, gconstpointer data)
{
        world_add_all(f, rauc, G_N_ELEMENTS(rauc));
        set_config(f, "slot_suffixes=_a,_b\n");
        set_cmdline(f, "console=ttyS0 root=/dev/sdb1 rootwait rauc.slot=A");
        for (gsize i = 0; i < G_N_ELEMENTS(rauc); i++)
                run_udev_quiet(f, &rauc[i]);
        assert_registry("/dev/sdb3");
        assert_skip_scan("/dev/sdb1,/dev/sdb2");
        g_assert_cmpuint(kernel_count(NULL, "/dev/sdb1"), ==, 0);
        g_assert_cmpuint(kernel_count(NULL, "/dev/sdb2"), ==, 0);
}

/* RAID1 pair (devid 1 and 2, slot A) and a clone of member 1 in slot B. */
static const DevSpec raid[] = {
        {.node = "sdc1", .disk = "sdc", .partn = 1, .image = "raid-1", .partlabel = "data-A"},
        {.node = "sdd1", .disk = "sdd", .partn = 1, .image = "raid-2", .partlabel = "data-A"},
        {.node = "sde1", .disk = "sde", .partn = 1, .image = "raid-1", .partlabel = "data-B"},
};

static void test_raid_clone(Fixture *f, gconstpointer data)
{
        Run r;
        world_add_all(f, raid, G_N_ELEMENTS(raid));
        set_cmdline(f, "root=PARTLABEL=rootfs-A rauc.slot=A");

        run_udev(f, &raid[0], &r, FALSE);
        assert_kv(&r, "DECISION", "scan");
        assert_kv(&r, "REASON", "raid-clone-active");
        assert_kv(&r, "DEVID", "1");
        g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "0"); /* devid 2 not registered yet */
        run_clear(&r);

        run_udev(f, &raid[2], &r, FALSE);
        assert_kv(&r, "DECISION", "skip");
        assert_kv(&r, "REASON", "raid-clone-inactive");
        g_assert_cmpstr(kv(&r, "UDISKS_IGNORE"), ==, "1");
        g_assert_cmpuint(kernel_count(NULL, "/dev/sde1"), ==, 0);
        run_clear(&r);

        run_udev(f, &raid[1], &r, FALSE);
        assert_kv(&r, "DECISION", "scan");
        assert_kv(&r, "DEVID", "2");
        g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "1");
        run_clear(&r);

        assert_registry("/dev/sdc1,/dev/sdd1");
        assert_skip_scan("/dev/sde1");
}

/* A plain two-device filesystem without clones. */
static void test_raid_plain(Fixture *f, gconstpointer data)
{
        Run r;
        world_add_all(f, raid, 2);
        run_udev(f, &raid[1], &r, FALSE);
        assert_kv(&r, "DECISION", "scan");
        assert_kv(&r, "REASON", "multi-device");
        /* the first event read both (no inventory yet) and reconciled both: the fs is complete */
        g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "1");
        run_clear(&r);
        run_udev(f, &raid[0], &r, FALSE);
        assert_kv(&r, "REASON", "multi-device");
        g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "1");
        run_clear(&r);
        assert_registry("/dev/sdc1,/dev/sdd1");
        assert_skip_scan("");
}

/* Issue 18 case 11: the kernel says what is registered, not the helper's record. After `boot`
 * registered both members, `btrfs device scan --forget` (outside the helper) empties the kernel's
 * list; `udevadm trigger --action=add` then runs the members' add events, whose inventory entries
 * are current and recorded registered. Stock udev registers them again (DEVICES_READY); the gate
 * must too, or `mount UUID=` fails. Failed on 5386cca: ACTION=registered, no ioctl, registry empty. */
static void test_raid_forget_then_add(Fixture *f, gconstpointer data)
{
        Run r;
        world_add_all(f, raid, 2);
        run_boot(f);
        assert_registry("/dev/sdc1,/dev/sdd1");

        g_mutex_lock(&kern.lock);
        g_assert_cmpint(kernel_forget(""), ==, 0); /* btrfs device scan --forget */
        g_mutex_unlock(&kern.lock);
        assert_registry("");

        world_uevent(f, &raid[0], "add");
        run_udev(f, &raid[0], &r, FALSE);
        assert_kv(&r, "DECISION", "scan");
        assert_kv(&r, "ACTION", "scanned");
        g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "0"); /* the kernel's answer: devid 2 not back yet */
        g_assert_cmpuint(kernel_count("DEVICES_READY", "/dev/sdc1"), ==, 1);
        assert_registry("/dev/sdc1");
        run_clear(&r);

        world_uevent(f, &raid[1], "add");
        run_udev(f, &raid[1], &r, FALSE);
        assert_kv(&r, "ACTION", "scanned");
        g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "1");
        assert_registry("/dev/sdc1,/dev/sdd1");
        run_clear(&r);

        /* a single-device fs the same way: its add event alone brings it back */
        static const DevSpec home = {.node = "sdf2", .disk = "sdf", .partn = 2, .image = "home", .partlabel = "home"};
        world_add(f, &home);
        run_udev_quiet(f, &home);
        assert_registry("/dev/sdc1,/dev/sdd1,/dev/sdf2");
        g_mutex_lock(&kern.lock);
        g_assert_cmpint(kernel_forget("/dev/sdf2"), ==, 0); /* btrfs device scan --forget /dev/sdf2 */
        g_mutex_unlock(&kern.lock);
        world_uevent(f, &home, "add");
        run_udev(f, &home, &r, FALSE);
        assert_kv(&r, "DECISION", "scan");
        g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "1");
        assert_registry("/dev/sdc1,/dev/sdd1,/dev/sdf2");
        run_clear(&r);
}

static const DevSpec seed_dev = {.node = "sdf1", .disk = "sdf", .partn = 1, .image = "seed",
                                 .partlabel = "seed"};

static void test_seed(Fixture *f, gconstpointer data)
{
        Run r;
        world_add(f, &seed_dev);
        run_udev(f, &seed_dev, &r, FALSE);
        assert_kv(&r, "REASON", "seed");
        assert_kv(&r, "FSID", "55555555-5555-4555-8555-555555555555");
        assert_kv(&r, "DECISION", "scan");
        assert_registry("/dev/sdf1");
        run_clear(&r);
}

/* A USB stick carrying a clone of the mounted root must never be scanned (hijack guard). */
static const DevSpec usb_clone = {.node = "sdg", .image = "rootfs", .removable = TRUE};

static void test_usb_hijack(Fixture *f, gconstpointer data)
{
        Run r;
        steamos_prepare(f, &skip_all);
        kernel_mount(f, &steamos[1]);
        const char *mounts[] = {"/dev/sda4", "/", NULL};
        set_mountinfo(f, mounts);
        world_add(f, &usb_clone);
        world_uevent(f, &usb_clone, "add");

        run_udev(f, &usb_clone, &r, FALSE);
        g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_DECISION"), !=, "scan");
        assert_kv(&r, "REASON", "outranked");
        g_assert_cmpstr(kv(&r, "UDISKS_IGNORE"), ==, "1");
        run_clear(&r);

        /* and neither does a boot-time pass nor a repeated event scan it */
        const char *args[] = {"boot", NULL};
        run_helper(f, &r, args);
        run_clear(&r);
        run_udev_quiet(f, &usb_clone);
        g_assert_cmpuint(kernel_count("SCAN_DEV", "/dev/sdg"), ==, 0);
        g_assert_cmpuint(kernel_count("DEVICES_READY", "/dev/sdg"), ==, 0);
        g_autofree char *reg = registry_string();
        g_assert_null(strstr(reg, "/dev/sdg"));
        /* the mounted root is still registered under its own path */
        g_assert_nonnull(strstr(reg, "/dev/sda4"));
}

/* Issue 18 case 9: only btrfs lines of mountinfo say a device is mounted. A fuse.sshfs mount whose
 * source string is the stick's node does not make the stick "in use": it stays outranked
 * (before: clone, a copy that may own links). */
static void test_usb_clone_fuse_source(Fixture *f, gconstpointer data)
{
        Run r;
        steamos_prepare(f, &skip_all);
        world_add(f, &usb_clone);
        write_file(f->mountinfo,
                   "21 1 0:20 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
                   "40 1 0:50 / /mnt/remote rw,nosuid,nodev,relatime shared:30 - fuse.sshfs /dev/sdg "
                   "rw,user_id=1000,group_id=1000\n",
                   -1);
        run_udev(f, &usb_clone, &r, FALSE);
        assert_kv(&r, "DECISION", "skip");
        assert_kv(&r, "REASON", "outranked");
        run_clear(&r);
}

/* A system booted from a USB stick, its root mounted as /dev/root (mountinfo's name, not the
 * stick's): the stick is the mounted filesystem itself, found by identity (/sys/fs/btrfs/<fsid>/
 * devices/), so it is neither taken for a hijacking clone nor listed in skip_scan. */
static void test_usb_root_self(Fixture *f, gconstpointer data)
{
        static const DevSpec usb_root = {.node = "sdg", .image = "rootfs", .removable = TRUE};
        const char *mounts[] = {"/dev/root", "/", NULL};
        Run r;

        world_add(f, &usb_root);
        kernel_mount(f, &usb_root);
        set_mountinfo(f, mounts);
        run_boot(f);
        run_udev(f, &usb_root, &r, FALSE);
        g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_REASON"), !=, "outranked");
        assert_kv(&r, "DECISION", "scan");
        run_clear(&r);
        assert_skip_scan("");
}

/* No skip_scan parameter: the helper says so, decides the same, and exits 0 for udev. */
static void test_unpatched_kernel(Fixture *f, gconstpointer data)
{
        const Policy *p = data;
        Run r;
        steamos_prepare(f, p);
        set_skip_scan_param(FALSE);
        set_feature("virtual_fsid", FALSE);

        run_udev(f, &steamos[1], &r, FALSE);
        assert_kv(&r, "DECISION", p->active ? "scan" : "skip");
        assert_kv(&r, "REASON", "clone");
        run_clear(&r);
        run_udev(f, &steamos[2], &r, FALSE);
        assert_kv(&r, "DECISION", "skip");
        assert_kv(&r, "REASON", "clone");
        /* it cannot keep other scanners off the clone, and says so */
        g_assert_true(strstr(r.err, "skip_scan") || kv(&r, "BTRFS_SCAN_GATE_ERROR"));
        run_clear(&r);
        for (gsize i = 3; i < G_N_ELEMENTS(steamos); i++)
                run_udev_quiet(f, &steamos[i]);
        assert_registry(steamos_registry(p));
        g_autofree char *skip = skip_scan_contents();
        g_assert_null(skip); /* never created by the helper */

        const char *args[] = {"status", NULL};
        run_helper(f, &r, args);
        g_assert_nonnull(strstr(r.out, "skip_scan"));
        /* issue 20 item 5: a list the kernel cannot apply is exit 3 and says so */
        g_assert_cmpint(r.status, ==, 3);
        g_assert_nonnull(strstr(r.out, "(the kernel cannot apply it)"));
        g_assert_nonnull(strstr(r.err, "the kernel cannot apply the skip list"));
        run_clear(&r);
        const char *json[] = {"status", "--json", NULL};
        run_helper(f, &r, json);
        g_assert_cmpint(r.status, ==, 3);
        g_assert_nonnull(strstr(r.out, "\"skip_scan_applicable\": false"));
        run_clear(&r);
        const char *dry_boot[] = {"--dry-run", "boot", NULL};
        run_helper(f, &r, dry_boot);
        g_assert_cmpint(r.status, ==, 3);
        g_assert_nonnull(strstr(r.out, "skip_scan=/dev/"));
        g_assert_nonnull(strstr(r.err, "the kernel cannot apply this list"));
        run_clear(&r);
        const char *boot[] = {"boot", NULL};
        run_helper(f, &r, boot);
        g_assert_cmpint(r.status, ==, 3);
        run_clear(&r);
}

/* Upstream 6.7+: temp_fsid present, no skip_scan. The inactive clone is still never scanned. */
static void test_upstream_kernel(Fixture *f, gconstpointer data)
{
        Run r;
        steamos_prepare(f, &active_pol);
        set_skip_scan_param(FALSE);
        set_feature("virtual_fsid", FALSE);
        set_feature("temp_fsid", TRUE);
        for (gsize i = 0; i < G_N_ELEMENTS(steamos); i++) {
                run_udev(f, &steamos[i], &r, FALSE);
                g_assert_cmpint(r.status, ==, 0);
                run_clear(&r);
        }
        g_autofree char *reg = registry_string();
        g_assert_nonnull(strstr(reg, "/dev/sda8"));
        g_assert_null(strstr(reg, "/dev/sda5"));
        g_assert_null(strstr(reg, "/dev/sda7"));
        g_assert_cmpuint(kernel_count(NULL, "/dev/sda5"), ==, 0);
        const char *args[] = {"status", NULL};
        run_helper(f, &r, args);
        g_assert_cmpint(r.status, ==, 0);
        g_assert_nonnull(strstr(r.out, "temp_fsid"));
        run_clear(&r);
}

/* No /dev/btrfs-control (btrfs not loaded): not ready, exit 0, nothing crashes. */
static void test_missing_control(Fixture *f, gconstpointer data)
{
        Run r;
        steamos_prepare(f, &skip_all);
        g_autofree char *node = tb_path("dev/btrfs-control");
        g_assert_cmpint(unlink(node), ==, 0);
        g_autofree char *link = tb_path("dev/.node/btrfs-control");
        (void)unlink(link);
        /* a path no host has either, so nothing can fall through to a real node */
        g_free(f->control);
        f->control = g_strdup("/dev/bsg-test-absent/btrfs-control");

        run_udev(f, &steamos[5], &r, FALSE); /* home: a scan decision */
        g_assert_cmpint(r.status, ==, 0);
        assert_kv(&r, "DECISION", "scan");
        /* no kernel answer: readiness from the superblocks (home is single-device), never a
         * blanket 0 that would keep systemd waiting for it */
        g_assert_cmpstr(kv(&r, "ID_BTRFS_READY"), ==, "1");
        g_assert_nonnull(kv(&r, "BTRFS_SCAN_GATE_ERROR"));
        run_clear(&r);
        g_assert_cmpuint(kernel_log_len(), ==, 0);
}

/* Bad inputs: never scanned, never a crash, exit 0. */
static const DevSpec bad[] = {
        {.node = "sdh1", .disk = "sdh", .partn = 1, .image = "rootfs", .partlabel = "rootfs-A",
         .mut = MUT_TRUNCATED},
        {.node = "sdh2", .disk = "sdh", .partn = 2, .image = "rootfs", .partlabel = "rootfs-B",
         .mut = MUT_BAD_MAGIC},
        {.node = "sdh3", .disk = "sdh", .partn = 3, .image = "rootfs", .partlabel = "rootfs-B",
         .mut = MUT_BAD_CSUM},
        {.node = "sdh4", .disk = "sdh", .partn = 4, .image = NULL, .partlabel = "empty"},
};

static void test_bad_superblocks(Fixture *f, gconstpointer data)
{
        world_add_all(f, bad, G_N_ELEMENTS(bad));
        for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
                Run r;
                g_autofree char *devnode = devnode_of(&bad[i]);
                g_test_message("bad input %s", devnode);
                run_udev(f, &bad[i], &r, FALSE);
                g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_DECISION"), !=, "scan");
                const char *reason = kv(&r, "BTRFS_SCAN_GATE_REASON");
                if (bad[i].mut == MUT_BAD_MAGIC || bad[i].image == NULL)
                        g_assert_cmpstr(reason, ==, "not-btrfs");
                else
                        g_assert_true(g_str_equal(reason, "not-btrfs") ||
                                      g_str_equal(reason, "invalid-superblock"));
                g_assert_cmpuint(kernel_count(NULL, devnode), ==, 0);
                run_clear(&r);
        }
        assert_registry("");
}

/* Issue 18 case 6: a zoned device (queue/zoned of its disk not "none") carries its superblock in the
 * log zones for the kernel; what is at 64 KiB is not what the kernel reads. Listed, never scanned, no
 * slot, whatever its 64 KiB hold; it makes no internal copy a clone. */
static const DevSpec zoned_a = {.node = "sda4", .disk = "sda", .partn = 4, .image = "rootfs", .partlabel = "rootfs-A"};
static const DevSpec zoned_part = {.node = "sdz1", .disk = "sdz", .partn = 1, .image = "rootfs",
                                   .partlabel = "rootfs-B"};

static void test_zoned(Fixture *f, gconstpointer data)
{
        Run r;

        world_add(f, &zoned_a);
        world_add(f, &zoned_part);
        const char *disk = g_hash_table_lookup(f->syspaths, "sdz");
        g_assert_nonnull(disk);
        g_autofree char *rel = g_build_filename(disk, "queue", "zoned", NULL);
        g_autofree char *attr = tb_path(rel);
        write_file(attr, "host-managed\n", -1);

        run_udev(f, &zoned_part, &r, FALSE);
        assert_kv(&r, "DECISION", "skip");
        assert_kv(&r, "REASON", "zoned");
        g_assert_null(kv(&r, "BTRFS_SCAN_GATE_SLOT_ACTIVE"));
        run_clear(&r);
        g_assert_cmpuint(kernel_count(NULL, "/dev/sdz1"), ==, 0);
        run_udev(f, &zoned_a, &r, FALSE);
        assert_kv(&r, "REASON", "unique");
        run_clear(&r);
        assert_registry("/dev/sda4");
        /* the whole zoned disk too: the kernel would read its log zones as well */
        assert_skip_scan("/dev/sdz,/dev/sdz1");

        /* boot decides the same from sysfs alone */
        kernel_reset();
        run_boot(f);
        assert_registry("/dev/sda4");
        assert_skip_scan("/dev/sdz,/dev/sdz1");
}

/* Issue 18 case 9: udev passes ID_PART_ENTRY_NAME encoded (blkid_encode_string(): "my root-A" is
 * "my\x20root-A"); SLOT_BASE is encoded once from the raw label, never encoded twice
 * ("my\x5cx20root"). */
static const DevSpec encoded_label = {.node = "sdm1", .disk = "sdm", .partn = 1, .image = "home",
                                      .partlabel = "my\\x20root-A"};

static void test_encoded_label(Fixture *f, gconstpointer data)
{
        Run r;

        set_config(f, STEAMOS_CONFIG);
        world_add(f, &encoded_label);
        run_udev(f, &encoded_label, &r, FALSE);
        assert_kv(&r, "SLOT", "A");
        assert_kv(&r, "SLOT_BASE", "my\\x20root");
        run_clear(&r);
        /* the label kept in the inventory is the raw one: a later event of it says the same */
        run_udev(f, &encoded_label, &r, FALSE);
        assert_kv(&r, "SLOT_BASE", "my\\x20root");
        run_clear(&r);
}

/* A devnode with a comma cannot be written into the comma-separated skip list. */
static const DevSpec comma[] = {
        {.node = "sdi1", .disk = "sdi", .partn = 1, .image = "rootfs", .partlabel = "rootfs-A"},
        {.node = "dm-0", .image = "rootfs", .partlabel = NULL, .devname = "/dev/mapper/rootfs,B"},
};

static void test_bad_path(Fixture *f, gconstpointer data)
{
        Run r;
        world_add_all(f, comma, G_N_ELEMENTS(comma));
        run_udev(f, &comma[1], &r, FALSE);
        assert_kv(&r, "REASON", "bad-path");
        g_assert_cmpstr(kv(&r, "BTRFS_SCAN_GATE_DECISION"), !=, "scan");
        run_clear(&r);
        g_assert_cmpuint(kernel_count(NULL, "/dev/mapper/rootfs,B"), ==, 0);
        g_autofree char *skip = skip_scan_contents();
        g_assert_nonnull(skip);
        g_assert_null(strchr(skip, ','));
        g_assert_null(strstr(skip, "rootfs"));
}

/* --dry-run decides and prints but touches neither the kernel nor skip_scan nor the state file. */
static void test_dry_run(Fixture *f, gconstpointer data)
{
        steamos_prepare(f, &skip_all);
        for (gsize i = 0; i < G_N_ELEMENTS(steamos); i++) {
                Run r;
                run_udev(f, &steamos[i], &r, TRUE);
                if (g_strcmp0(kv(&r, "BTRFS_SCAN_GATE_DECISION"), "ignore") != 0)
                        assert_kv(&r, "ACTION", "dry-run");
                run_clear(&r);
        }
        /* the decisions are the real ones */
        Run r;
        run_udev(f, &steamos[2], &r, TRUE);
        assert_kv(&r, "DECISION", "skip");
        run_clear(&r);

        Run b;
        const char *args[] = {"--dry-run", "boot", NULL};
        run_helper(f, &b, args);
        g_assert_cmpint(b.status, ==, 0);
        run_clear(&b);

        g_assert_cmpuint(kernel_log_len(), ==, 0);
        assert_skip_scan("");
        g_autofree char *state = g_build_filename(f->rundir, "devices", NULL);
        g_assert_false(g_file_test(state, G_FILE_TEST_EXISTS));
}

static gboolean valid_json(const char *text)
{
        g_autofree char *py = g_find_program_in_path("python3");
        if (!py) {
                g_autofree char *t = g_strstrip(g_strdup(text));
                return t[0] == '{' && g_str_has_suffix(t, "}");
        }
        g_autofree char *file = g_build_filename(tb_root, "scratch", "status.json", NULL);
        write_file(file, text, -1);
        const char *argv[] = {py, "-c", "import json,sys; json.load(open(sys.argv[1]))", file, NULL};
        int status = -1;
        g_autofree char *err = NULL;
        if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                          &status, NULL))
                return FALSE;
        if (status != 0)
                g_test_message("status --json is not JSON: %s", err);
        return status == 0;
}

/* status (text and --json) after the SteamOS devices were handled. */
static void test_status(Fixture *f, gconstpointer data)
{
        Run r;
        steamos_prepare(f, &skip_all);
        for (gsize i = 0; i < G_N_ELEMENTS(steamos); i++)
                run_udev_quiet(f, &steamos[i]);
        guint ioctls = kernel_log_len();

        const char *text[] = {"status", NULL};
        run_helper(f, &r, text);
        g_assert_cmpint(r.status, ==, 0);
        g_assert_nonnull(strstr(r.out, "/dev/sda4"));
        g_assert_nonnull(strstr(r.out, "/dev/sda5"));
        g_assert_nonnull(strstr(r.out, "11111111-1111-4111-8111-111111111111"));
        g_assert_nonnull(strstr(r.out, "skip_scan"));
        run_clear(&r);

        const char *json[] = {"status", "--json", NULL};
        run_helper(f, &r, json);
        g_assert_cmpint(r.status, ==, 0);
        g_assert_true(valid_json(r.out));
        g_assert_nonnull(strstr(r.out, "/dev/sda5"));
        g_assert_nonnull(strstr(r.out, "11111111-1111-4111-8111-111111111111"));
        run_clear(&r);

        /* status only reads */
        g_assert_cmpuint(kernel_log_len(), ==, ioctls);
        assert_skip_scan(steamos_skip(&skip_all));
}

static void test_usage(Fixture *f, gconstpointer data)
{
        Run r;
        const char *none[] = {NULL};
        run_helper(f, &r, none);
        g_assert_cmpint(r.status, ==, 2);
        run_clear(&r);
        const char *bogus[] = {"frobnicate", NULL};
        run_helper(f, &r, bogus);
        g_assert_cmpint(r.status, ==, 2);
        run_clear(&r);
        const char *udev_noarg[] = {"udev", NULL};
        run_helper(f, &r, udev_noarg);
        g_assert_cmpint(r.status, ==, 2);
        run_clear(&r);
        const char *help[] = {"--help", NULL};
        run_helper(f, &r, help);
        g_assert_cmpint(r.status, ==, 0);
        run_clear(&r);
        g_assert_cmpuint(kernel_log_len(), ==, 0);
}

/* ------------------------------------------------------------------------------------------------ */
/* Order independence.                                                                               */

typedef enum { ORDER_HOTPLUG, ORDER_COLDPLUG, ORDER_BOOT_THEN_UDEV } OrderMode;

typedef struct {
        char *registry;
        char *skip;
} Outcome;

static void outcome_clear(Outcome *o)
{
        g_free(o->registry);
        g_free(o->skip);
}

static char *order_string(const DevSpec *devs, const int *order, int n)
{
        GString *s = g_string_new(NULL);
        for (int i = 0; i < n; i++)
                g_string_append_printf(s, "%s%s", i ? " " : "", devs[order[i]].node);
        return g_string_free(s, FALSE);
}

/* Plays one order on a fresh machine and returns the final kernel registry and skip_scan. */
static void play_order(Fixture *f, const Policy *p, const DevSpec *devs, const int *order, int n,
                       OrderMode mode, Outcome *ret)
{
        world_reset(f);
        set_cmdline(f, STEAMOS_CMDLINE);
        set_config(f, p->config);
        if (mode != ORDER_HOTPLUG)
                world_add_all(f, devs, n);
        if (mode == ORDER_BOOT_THEN_UDEV)
                run_boot(f);
        for (int i = 0; i < n; i++) {
                if (mode == ORDER_HOTPLUG)
                        world_add(f, &devs[order[i]]);
                run_udev_quiet(f, &devs[order[i]]);
        }
        ret->registry = registry_string();
        ret->skip = skip_scan_contents();
}

static void check_outcome(const Outcome *o, const Outcome *first, const char *order, const char *want_reg,
                          const char *want_skip)
{
        if (g_strcmp0(o->registry, first->registry) != 0 || g_strcmp0(o->skip, first->skip) != 0 ||
            (want_reg && g_strcmp0(o->registry, want_reg) != 0) ||
            (want_skip && g_strcmp0(o->skip, want_skip) != 0)) {
                g_autofree char *log = kernel_log_string();
                g_test_message("order [%s]: registry {%s} skip_scan {%s}; first order gave {%s} {%s}; "
                               "fake kernel log: %s",
                               order, o->registry, o->skip, first->registry, first->skip, log);
        }
        g_assert_cmpstr(o->registry, ==, first->registry);
        g_assert_cmpstr(o->skip, ==, first->skip);
        if (want_reg)
                g_assert_cmpstr(o->registry, ==, want_reg);
        if (want_skip)
                g_assert_cmpstr(o->skip, ==, want_skip);
}

static gboolean next_permutation(int *a, int n)
{
        int i = n - 2;
        while (i >= 0 && a[i] >= a[i + 1])
                i--;
        if (i < 0)
                return FALSE;
        int j = n - 1;
        while (a[j] <= a[i])
                j--;
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
        for (int l = i + 1, r = n - 1; l < r; l++, r--) {
                t = a[l];
                a[l] = a[r];
                a[r] = t;
        }
        return TRUE;
}

/* rootfs-A/B and var-A/B, byte-identical clones per pair. */
static const DevSpec four[] = {
        {.node = "sda4", .disk = "sda", .partn = 4, .image = "rootfs", .partlabel = "rootfs-A"},
        {.node = "sda5", .disk = "sda", .partn = 5, .image = "rootfs", .partlabel = "rootfs-B"},
        {.node = "sda6", .disk = "sda", .partn = 6, .image = "var", .partlabel = "var-A"},
        {.node = "sda7", .disk = "sda", .partn = 7, .image = "var", .partlabel = "var-B"},
};

static void permutations(Fixture *f, const Policy *p, OrderMode mode)
{
        int order[] = {0, 1, 2, 3};
        Outcome first = {0};
        int count = 0;
        do {
                /* under valgrind every 4th order (6 of 24: each device comes first at least once);
                 * the plain and ASan runs play all 24 */
                if (under_wrapper && count % 4 != 0) {
                        count++;
                        continue;
                }
                Outcome o = {0};
                g_autofree char *desc = order_string(four, order, 4);
                play_order(f, p, four, order, 4, mode, &o);
                if (!first.registry)
                        first = (Outcome){g_strdup(o.registry), g_strdup(o.skip)};
                check_outcome(&o, &first, desc, p->active ? "/dev/sda4,/dev/sda6" : "",
                              p->active ? "/dev/sda5,/dev/sda7" : "/dev/sda4,/dev/sda5,/dev/sda6,/dev/sda7");
                outcome_clear(&o);
                count++;
        } while (next_permutation(order, 4));
        g_assert_cmpint(count, ==, 24);
        outcome_clear(&first);
}

static void test_perm_hotplug(Fixture *f, gconstpointer data)
{
        permutations(f, data, ORDER_HOTPLUG);
}

static void test_perm_coldplug(Fixture *f, gconstpointer data)
{
        permutations(f, data, ORDER_COLDPLUG);
}

static void test_perm_boot(Fixture *f, gconstpointer data)
{
        permutations(f, data, ORDER_BOOT_THEN_UDEV);
}

/* Ten devices: two clone pairs, a unique fs, the esp, a RAID1 pair with a clone member, a seed. */
static const DevSpec ten[] = {
        {.node = "sda1", .disk = "sda", .partn = 1, .image = "esp", .partlabel = "esp"},
        {.node = "sda4", .disk = "sda", .partn = 4, .image = "rootfs", .partlabel = "rootfs-A"},
        {.node = "sda5", .disk = "sda", .partn = 5, .image = "rootfs", .partlabel = "rootfs-B"},
        {.node = "sda6", .disk = "sda", .partn = 6, .image = "var", .partlabel = "var-A"},
        {.node = "sda7", .disk = "sda", .partn = 7, .image = "var", .partlabel = "var-B"},
        {.node = "sda8", .disk = "sda", .partn = 8, .image = "home", .partlabel = "home"},
        {.node = "sdc1", .disk = "sdc", .partn = 1, .image = "raid-1", .partlabel = "data-A"},
        {.node = "sdd1", .disk = "sdd", .partn = 1, .image = "raid-2", .partlabel = "data-A"},
        {.node = "sde1", .disk = "sde", .partn = 1, .image = "raid-1", .partlabel = "data-B"},
        {.node = "sdf1", .disk = "sdf", .partn = 1, .image = "seed", .partlabel = "seed"},
};

static void test_random_orders(Fixture *f, gconstpointer data)
{
        const Policy *p = data;
        const char *env_seed = g_getenv("BSG_SEED");
        guint32 seed = env_seed ? (guint32)strtoul(env_seed, NULL, 0) : 20261203u;
        /* the plain build walks 50 orders; a wrapper (valgrind) or ASan, 5x slower, 10: the
         * sanitizer looks at the same code in every order */
#ifdef __SANITIZE_ADDRESS__
        int rounds = 10;
#else
        int rounds = under_wrapper ? 6 : 50;
#endif
        GRand *rand = g_rand_new_with_seed(seed);
        Outcome first = {0};
        const int n = G_N_ELEMENTS(ten);
        /* what must and must not end registered; the policy only moves the clone pairs */
        const char *must_active[] = {"/dev/sda4", "/dev/sda6", "/dev/sda8", "/dev/sdc1", "/dev/sdd1", "/dev/sdf1", NULL};
        const char *never_active[] = {"/dev/sda1", "/dev/sda5", "/dev/sda7", "/dev/sde1", NULL};
        const char *must_skip_all[] = {"/dev/sda8", "/dev/sdc1", "/dev/sdd1", "/dev/sdf1", NULL};
        const char *never_skip_all[] = {"/dev/sda1", "/dev/sda4", "/dev/sda5", "/dev/sda6", "/dev/sda7",
                                        "/dev/sde1", NULL};
        const char **must = p->active ? must_active : must_skip_all;
        const char **never = p->active ? never_active : never_skip_all;

        g_test_message("random orders (%s): seed %u (set BSG_SEED to replay), %d orders", p->name, seed, rounds);
        printf("# random orders (%s): seed %u, %d orders\n", p->name, seed, rounds);
        for (int round = 0; round < rounds; round++) {
                int order[G_N_ELEMENTS(ten)];
                for (int i = 0; i < n; i++)
                        order[i] = i;
                for (int i = n - 1; i > 0; i--) {
                        int j = g_rand_int_range(rand, 0, i + 1);
                        int t = order[i];
                        order[i] = order[j];
                        order[j] = t;
                }
                OrderMode mode = round % 3 == 2 ? ORDER_BOOT_THEN_UDEV : round % 3 == 1 ? ORDER_COLDPLUG
                                                                                       : ORDER_HOTPLUG;
                g_autofree char *desc = order_string(ten, order, n);
                Outcome o = {0};
                play_order(f, p, ten, order, n, mode, &o);
                if (round == 0)
                        first = (Outcome){g_strdup(o.registry), g_strdup(o.skip)};
                check_outcome(&o, &first, desc, NULL, NULL);
                g_auto(GStrv) reg = g_strsplit(o.registry, ",", -1);
                for (int i = 0; must[i]; i++) {
                        if (!g_strv_contains((const char *const *)reg, must[i]))
                                g_test_message("order [%s]: %s not registered", desc, must[i]);
                        g_assert_true(g_strv_contains((const char *const *)reg, must[i]));
                }
                for (int i = 0; never[i]; i++) {
                        if (g_strv_contains((const char *const *)reg, never[i]))
                                g_test_message("order [%s]: %s registered", desc, never[i]);
                        g_assert_false(g_strv_contains((const char *const *)reg, never[i]));
                }
                /* the RAID clone member and the inactive copies are always listed */
                g_auto(GStrv) skip = g_strsplit(o.skip ? o.skip : "", ",", -1);
                g_assert_true(g_strv_contains((const char *const *)skip, "/dev/sde1"));
                g_assert_true(g_strv_contains((const char *const *)skip, "/dev/sda5"));
                g_assert_true(g_strv_contains((const char *const *)skip, "/dev/sda7"));
                outcome_clear(&o);
        }
        outcome_clear(&first);
        g_rand_free(rand);
}

/* Two `udev` invocations for the two clones started at the same instant. */
static GSubprocess *spawn_udev(Fixture *f, const DevSpec *s, const char *out)
{
        g_autofree char *devnode = devnode_of(s);
        const char *args[] = {"udev", devnode, NULL};
        g_auto(GStrv) argv = helper_argv(args);
        g_auto(GStrv) env = helper_env(f, s);
        g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDERR_MERGE);
        g_subprocess_launcher_set_environ(l, env);
        g_subprocess_launcher_set_stdout_file_path(l, out);
        GError *error = NULL;
        GSubprocess *p = g_subprocess_launcher_spawnv(l, (const char *const *)argv, &error);
        if (!p)
                g_error("cannot run %s: %s", argv[0], error->message);
        return p;
}

static void test_concurrent_clones(Fixture *f, gconstpointer data)
{
        const Policy *p = data;
        int reps = under_wrapper ? 3 : 12;
        for (int rep = 0; rep < reps; rep++) {
                world_reset(f);
                set_cmdline(f, STEAMOS_CMDLINE);
                set_config(f, p->config);
                world_add_all(f, four, 2);
                g_autofree char *out_a = g_build_filename(f->dir, "out-a", NULL);
                g_autofree char *out_b = g_build_filename(f->dir, "out-b", NULL);
                /* both started before either is waited for; alternate which goes first */
                GSubprocess *pa = spawn_udev(f, &four[rep % 2], out_a);
                GSubprocess *pb = spawn_udev(f, &four[(rep + 1) % 2], out_b);
                g_assert_true(g_subprocess_wait(pa, NULL, NULL));
                g_assert_true(g_subprocess_wait(pb, NULL, NULL));
                int sa = g_subprocess_get_if_exited(pa) ? g_subprocess_get_exit_status(pa) : -1;
                int sb = g_subprocess_get_if_exited(pb) ? g_subprocess_get_exit_status(pb) : -1;
                if (sa != 0 || sb != 0) {
                        g_autofree char *ta = read_file(out_a), *tb_ = read_file(out_b);
                        g_test_message("outputs:\n%s\n---\n%s", ta, tb_);
                }
                g_assert_cmpint(sa, ==, 0);
                g_assert_cmpint(sb, ==, 0);
                g_object_unref(pa);
                g_object_unref(pb);
                g_test_message("repetition %d", rep);
                assert_registry(p->active ? "/dev/sda4" : "");
                assert_skip_scan(p->active ? "/dev/sda5" : "/dev/sda4,/dev/sda5");
        }
}


/* ------------------------------------------------------------------------------------------------ */
/* Lost actions (issue 9): each made good by the next holder of the lock.                           */

/* `btrfs device scan` run by someone else: the patched kernel registers every btrfs device that
 * skip_scan does not list. */
static void external_scan(const DevSpec *devs, int n)
{
        g_mutex_lock(&kern.lock);
        for (int i = 0; i < n; i++) {
                g_autofree char *path = devnode_of(&devs[i]);
                g_autofree char *file = tb_path(path);
                KDev sb = {0};
                if (!g_file_test(file, G_FILE_TEST_EXISTS) || !kernel_read_super(path, &sb))
                        continue;
                g_ptr_array_add(kern.log, g_strdup_printf("EXTERNAL_SCAN %s", path));
                if (!kernel_skip_listed(path))
                        (void)kernel_register(path, &sb);
        }
        g_mutex_unlock(&kern.lock);
}

/* Unplugs S: gone from sysfs and /dev, its registration (if any) dropped as the kernel does. */
static void world_remove(Fixture *f, const DevSpec *s)
{
        g_autofree char *devnode = devnode_of(s);
        g_autofree char *file = tb_path(devnode);
        const char *syspath = g_hash_table_lookup(f->syspaths, s->node);
        g_assert_nonnull(syspath);
        umockdev_testbed_uevent(tb, syspath, "remove");
        umockdev_testbed_remove_device(tb, syspath);
        g_hash_table_remove(f->syspaths, s->node);
        (void)unlink(file);
        g_mutex_lock(&kern.lock);
        (void)kernel_forget(devnode);
        g_mutex_unlock(&kern.lock);
}

/* The helper for S with udev's ACTION=ACTION (the node may be gone: remove). */
static void run_udev_action(Fixture *f, const DevSpec *s, const char *action, const char *const *extra, Run *r)
{
        g_autofree char *devnode = devnode_of(s);
        g_autoptr(GPtrArray) a = g_ptr_array_new();
        for (int i = 0; extra && extra[i]; i++)
                g_ptr_array_add(a, (gpointer)extra[i]);
        g_ptr_array_add(a, "udev");
        g_ptr_array_add(a, devnode);
        g_ptr_array_add(a, NULL);
        next_action = action;
        run_helper_env(f, s, r, (const char *const *)a->pdata);
        next_action = "add";
        g_assert_cmpint(r->status, ==, 0);
}

/* Holds the helper's lock, as a stuck invocation would. Returns the fd (close to release). */
static int hold_lock(Fixture *f)
{
        g_autofree char *path = g_build_filename(f->rundir, "lock", NULL);
        g_assert_cmpint(g_mkdir_with_parents(f->rundir, 0755), ==, 0);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(flock(fd, LOCK_EX), ==, 0);
        return fd;
}

static const DevSpec pair_a = {.node = "sda4", .disk = "sda", .partn = 4, .image = "rootfs", .partlabel = "rootfs-A"};
static const DevSpec pair_b = {.node = "sda5", .disk = "sda", .partn = 5, .image = "rootfs", .partlabel = "rootfs-B"};
/* another disk whose partition reuses the name /dev/sda5 (a replug enumerated differently) */
static const DevSpec reused_name = {.node = "sdg1", .disk = "sdg", .partn = 1, .image = "home", .partlabel = "home",
                                    .devname = "/dev/sda5"};
static const DevSpec var_dev = {.node = "sda6", .disk = "sda", .partn = 6, .image = "var", .partlabel = "var-A"};
static const DevSpec home_dev = {.node = "sda8", .disk = "sda", .partn = 8, .image = "home", .partlabel = "home"};

/* Bullet 1: a device that just left the skip list (its name reused by another device) is scanned
 * only after the list no longer names it: the skip list is written first. */
static void test_lost_left_skip_list(Fixture *f, gconstpointer data)
{
        Run r;
        world_add(f, &pair_a);
        world_add(f, &pair_b);
        run_boot(f);
        assert_skip_scan("/dev/sda4,/dev/sda5");
        /* sda5 unplugged, its remove event lost; a new disk gets the name /dev/sda5 */
        g_autofree char *file = tb_path("/dev/sda5");
        (void)unlink(file);
        umockdev_testbed_remove_device(tb, g_hash_table_lookup(f->syspaths, pair_b.node));
        g_hash_table_remove(f->syspaths, pair_b.node);
        world_add(f, &reused_name);
        world_uevent(f, &reused_name, "add");
        run_udev_action(f, &reused_name, "add", NULL, &r);
        assert_kv(&r, "DECISION", "scan");
        g_assert_cmpuint(kernel_count("SKIPPED", "/dev/sda5"), ==, 0);
        run_clear(&r);
        g_autofree char *reg = registry_string();
        g_auto(GStrv) regv = g_strsplit(reg, ",", -1);
        if (!g_strv_contains((const char *const *)regv, "/dev/sda5")) {
                g_autofree char *log = kernel_log_string();
                g_test_message("fake kernel log: %s", log);
        }
        g_assert_true(g_strv_contains((const char *const *)regv, "/dev/sda5"));
}

/* Devices that appear after the inventory exists, before their own events ran (the initramfs: an
 * early event made the inventory before the slot disks probed; a hot-plugged disk whose partitions
 * come together): the first of their events reads them all, so the first copy of a clone is never
 * taken for unique and scanned, in either order. Each device is read once in all. */
static void test_lost_late_disks(Fixture *f, gconstpointer data)
{
        static const DevSpec late_a = {.node = "sdc4", .disk = "sdc", .partn = 4, .image = "rootfs",
                                       .partlabel = "rootfs-A"};
        static const DevSpec late_b = {.node = "sdd5", .disk = "sdd", .partn = 5, .image = "rootfs",
                                       .partlabel = "rootfs-B"};
        gboolean b_first = g_str_equal(data, "b-first");
        const DevSpec *first = b_first ? &late_b : &late_a, *second = b_first ? &late_a : &late_b;
        Run r;

        world_add(f, &var_dev);
        run_udev_quiet(f, &var_dev); /* no boot: this event makes the inventory */
        world_add(f, &late_a);
        world_add(f, &late_b);
        world_uevent(f, first, "add");
        run_udev(f, first, &r, FALSE);
        assert_kv(&r, "DECISION", "skip");
        assert_kv(&r, "REASON", "clone");
        run_clear(&r);
        world_uevent(f, second, "add");
        run_udev(f, second, &r, FALSE);
        assert_kv(&r, "DECISION", "skip");
        assert_kv(&r, "REASON", "clone");
        run_clear(&r);
        g_assert_cmpuint(kernel_count(NULL, "/dev/sdc4"), ==, 0);
        g_assert_cmpuint(kernel_count(NULL, "/dev/sdd5"), ==, 0);
        assert_skip_scan("/dev/sdc4,/dev/sdd5");
}

/* Bullet 2: an event that times out on the lock loses nothing: the next event scans its device. */
/* Issue 18 case 8: a remove marker carries the removed device's diskseq. The marker of a remove
 * event that could not take the lock, folded in after the replugged device's `add` was recorded,
 * must not delete the new device's entry (before: `remove MAJ:MIN` deleted whatever had the number). */
static const DevSpec replug_disk = {.node = "sdk", .image = "home", .partlabel = NULL};

static void set_diskseq(Fixture *f, const DevSpec *s, const char *seq)
{
        const char *syspath = g_hash_table_lookup(f->syspaths, s->node);
        g_assert_nonnull(syspath);
        umockdev_testbed_set_attribute(tb, syspath, "diskseq", seq);
}

static gboolean inventory_names(Fixture *f, const char *devnode)
{
        g_autofree char *path = g_build_filename(f->rundir, "devices", NULL);
        g_autofree char *text = read_file(path);
        g_autofree char *needle = g_strdup_printf(" %s ", devnode);
        return text && strstr(text, needle);
}

static void test_lost_stale_remove_marker(Fixture *f, gconstpointer data)
{
        Run r;
        const char *fast[] = {"--timeout", "1", NULL};

        world_add(f, &var_dev);
        world_add(f, &replug_disk);
        set_diskseq(f, &replug_disk, "5");
        run_udev_quiet(f, &replug_disk);
        g_assert_true(inventory_names(f, "/dev/sdk"));
        /* unplugged and plugged again (same device number, new diskseq); the new one's add is recorded */
        world_remove(f, &replug_disk);
        g_autofree char *block_link = tb_path("sys/block/sdk"); /* umockdev leaves it behind */
        (void)unlink(block_link);
        world_add(f, &replug_disk);
        set_diskseq(f, &replug_disk, "6");
        run_udev_quiet(f, &replug_disk);
        /* the old device's remove event, late, finds the lock taken: it leaves a marker */
        int fd = hold_lock(f);
        g_setenv("DISKSEQ", "5", TRUE);
        run_udev_action(f, &replug_disk, "remove", fast, &r);
        g_unsetenv("DISKSEQ");
        g_assert_nonnull(strstr(kv(&r, "BTRFS_SCAN_GATE_ERROR"), "lock-timeout"));
        run_clear(&r);
        close(fd);
        g_autofree char *pending = g_build_filename(f->rundir, "pending", NULL);
        g_assert_true(g_file_test(pending, G_FILE_TEST_IS_DIR));
        /* an unrelated event folds the marker: the new device's entry stays */
        run_udev_action(f, &var_dev, "change", NULL, &r);
        run_clear(&r);
        g_assert_true(inventory_names(f, "/dev/sdk"));

        /* a marker of the device that is there (same diskseq) still removes its entry */
        fd = hold_lock(f);
        g_setenv("DISKSEQ", "6", TRUE);
        run_udev_action(f, &replug_disk, "remove", fast, &r);
        g_unsetenv("DISKSEQ");
        run_clear(&r);
        close(fd);
        world_remove(f, &replug_disk);
        run_udev_action(f, &var_dev, "change", NULL, &r);
        run_clear(&r);
        g_assert_false(inventory_names(f, "/dev/sdk"));
}

static void test_lost_lock_timeout(Fixture *f, gconstpointer data)
{
        Run r;
        const char *fast[] = {"--timeout", "1", NULL};
        world_add(f, &var_dev);
        run_boot(f);
        world_add(f, &home_dev);
        world_uevent(f, &home_dev, "add");
        int fd = hold_lock(f);
        run_udev_action(f, &home_dev, "add", fast, &r);
        g_assert_nonnull(strstr(kv(&r, "BTRFS_SCAN_GATE_ERROR"), "lock-timeout"));
        run_clear(&r);
        close(fd);
        assert_registry("/dev/sda6");
        /* an unrelated event (change of var-A) holds the lock next */
        run_udev_action(f, &var_dev, "change", NULL, &r);
        run_clear(&r);
        assert_registry("/dev/sda6,/dev/sda8");
}

/* Bullet 3: the remove event of a twin re-decides the copy that remains. */
static void test_lost_remove(Fixture *f, gconstpointer data)
{
        Run r;
        world_add(f, &pair_a);
        world_add(f, &pair_b);
        run_boot(f);
        run_udev_quiet(f, &pair_a);
        run_udev_quiet(f, &pair_b);
        assert_registry("");
        world_remove(f, &pair_b);
        run_udev_action(f, &pair_b, "remove", NULL, &r);
        run_clear(&r);
        assert_skip_scan("");
        assert_registry("/dev/sda4");
}

/* The reconcile verb makes good a scan lost to a lock timeout, with no event after it. */
static void test_lost_reconcile_verb(Fixture *f, gconstpointer data)
{
        Run r;
        const char *fast[] = {"--timeout", "1", NULL};
        const char *reconcile[] = {"reconcile", NULL};
        world_add(f, &var_dev);
        run_boot(f);
        world_add(f, &home_dev);
        int fd = hold_lock(f);
        run_udev_action(f, &home_dev, "add", fast, &r);
        run_clear(&r);
        close(fd);
        run_helper(f, &r, reconcile);
        g_assert_cmpint(r.status, ==, 0);
        run_clear(&r);
        assert_registry("/dev/sda6,/dev/sda8");
}

/* Order independence with disturbances, on the real binary: every order of the four clones, with an
 * unreadable device present, an unrelated `btrfs device scan` after the first event, the lock held
 * past the budget during the second, and a removable copy plugged in and pulled out after the
 * third. The end state is the cold-boot state every time. */
static void test_perm_disturbed(Fixture *f, gconstpointer data)
{
        const Policy *p = data;
        const char *fast[] = {"--timeout", "1", NULL};
        static const DevSpec unreadable = {.node = "sdz1", .disk = "sdz", .partn = 1, .image = "rootfs",
                                           .partlabel = "rootfs-A"};
        static const DevSpec stick = {.node = "sdh1", .disk = "sdh", .partn = 1, .image = "rootfs",
                                      .partlabel = "rootfs-A", .removable = TRUE};
        static const DevSpec stick_disk = {.node = "sdh", .removable = TRUE};
        int order[] = {0, 1, 2, 3};
        int count = 0;
        do {
                Run r;
                g_autofree char *desc = order_string(four, order, 4);
                world_reset(f);
                set_cmdline(f, STEAMOS_CMDLINE);
                set_config(f, p->config);
                world_add(f, &unreadable);
                g_autofree char *unode = tb_path("/dev/sdz1");
                (void)unlink(unode); /* in sysfs, its node unreadable */
                for (int i = 0; i < 4; i++) {
                        const DevSpec *d = &four[order[i]];
                        world_add(f, d);
                        world_uevent(f, d, "add");
                        if (i == 1) {
                                int fd = hold_lock(f);
                                run_udev_action(f, d, "add", fast, &r);
                                close(fd);
                        } else
                                run_udev_action(f, d, "add", NULL, &r);
                        run_clear(&r);
                        if (i == 0)
                                external_scan(four, 4);
                        if (i == 2) {
                                world_add(f, &stick);
                                run_udev_action(f, &stick, "add", NULL, &r);
                                run_clear(&r);
                                world_remove(f, &stick);
                                run_udev_action(f, &stick, "remove", NULL, &r);
                                run_clear(&r);
                                /* and its disk (listed whole, starred, while it is there) */
                                world_remove(f, &stick_disk);
                                run_udev_action(f, &stick_disk, "remove", NULL, &r);
                                run_clear(&r);
                        }
                }
                Outcome o = {registry_string(), skip_scan_contents()};
                const char *want_reg = p->active ? "/dev/sda4,/dev/sda6" : "";
                const char *want_skip = p->active ? "/dev/sda5,/dev/sda7" : "/dev/sda4,/dev/sda5,/dev/sda6,/dev/sda7";
                check_outcome(&o, &o, desc, want_reg, want_skip);
                outcome_clear(&o);
                count++;
        } while (next_permutation(order, 4) && (!under_wrapper || count < 4));
}

/* ------------------------------------------------------------------------------------------------ */
/* A story of events: after each step the helper's output, the fake kernel's registry and skip_scan. */
typedef struct {
        GPtrArray *steps; /* one string per step: output, registry, skip_scan */
} Story;

static void story_step(Fixture *f, Story *story, const DevSpec *s, const char *action)
{
        const char *verbose[] = {"--verbose", NULL};
        Run r;

        if (g_strcmp0(action, "remove") != 0)
                world_uevent(f, s, action);
        run_udev_action(f, s, action, verbose, &r);
        g_autofree char *reg = registry_string();
        g_autofree char *skip = skip_scan_contents();
        g_ptr_array_add(story->steps, g_strdup_printf("%s %s:\n%sregistry {%s} skip_scan {%s}", action, s->node,
                                                      r.out, reg, skip));
        run_clear(&r);
}

/* A whole disk with a stale btrfs superblock beside a GPT, and a partition (docs/SECURITY.md row 3b),
 * decided after `boot` by events of other devices: whether the whole disk was read in this run or is
 * known from its record, it is `skip partitioned-disk`, never registered. (An event that decided the
 * whole set from the records took the disk for unique and scanned it.) */
static void test_partitioned_disk_from_record(Fixture *f, gconstpointer data)
{
        static const DevSpec whole = {.node = "sdb", .image = "home-gpt"};
        static const DevSpec part = {.node = "sdb1", .disk = "sdb", .partn = 1, .partlabel = "data"};
        static const DevSpec other = {.node = "sdc1", .disk = "sdc", .partn = 1, .image = "var", .partlabel = "var-A"};
        Story story = {g_ptr_array_new_with_free_func(g_free)};

        set_cmdline(f, STEAMOS_CMDLINE);
        world_add(f, &whole);
        world_add(f, &part);
        world_add(f, &other);
        run_boot(f);
        story_step(f, &story, &other, "change");
        story_step(f, &story, &part, "change");
        story_step(f, &story, &other, "change");
        story_step(f, &story, &whole, "change");
        story_step(f, &story, &other, "change");
        for (guint i = 0; i < story.steps->len; i++) {
                const char *k = story.steps->pdata[i];
                if (strstr(k, "registry {/dev/sdb}") || strstr(k, "registry {/dev/sdb,") ||
                    strstr(k, "made-good:/dev/sdb") || !strstr(k, "skip_scan {/dev/sdb}"))
                        g_test_message("step %u:\n%s", i, k);
                /* never registered (the registry is the first {...}), always listed */
                g_assert_null(strstr(k, "registry {/dev/sdb}"));
                g_assert_null(strstr(k, "registry {/dev/sdb,"));
                g_assert_null(strstr(k, "made-good:/dev/sdb"));
                g_assert_nonnull(strstr(k, "skip_scan {/dev/sdb}"));
        }
        g_ptr_array_unref(story.steps);
}

/* Whether the comma-separated LIST has ITEM. */
static gboolean csv_has(const char *list, const char *item)
{
        g_auto(GStrv) items = g_strsplit(list ? list : "", ",", -1);
        return g_strv_contains((const char *const *)items, item);
}

/* The story of a whole disk sdb: `boot`, then change events of another device, of the partition (if
 * any), of the disk itself, of the other device again. */
static Story whole_disk_story(Fixture *f, const DevSpec *whole, const DevSpec *part)
{
        static const DevSpec other = {.node = "sdc1", .disk = "sdc", .partn = 1, .image = "var", .partlabel = "var-A"};
        Story story = {g_ptr_array_new_with_free_func(g_free)};

        set_cmdline(f, STEAMOS_CMDLINE);
        world_add(f, whole);
        if (part)
                world_add(f, part);
        world_add(f, &other);
        run_boot(f);
        g_autofree char *reg = registry_string();
        g_autofree char *skip = skip_scan_contents();
        g_ptr_array_add(story.steps, g_strdup_printf("boot:\nregistry {%s} skip_scan {%s}", reg, skip));
        story_step(f, &story, &other, "change");
        if (part)
                story_step(f, &story, part, "change");
        story_step(f, &story, whole, "change");
        story_step(f, &story, &other, "change");
        return story;
}

/* The registry and skip_scan of a story step ("... registry {A,B} skip_scan {C}"). */
static void step_lists(const char *step, char **ret_registry, char **ret_skip)
{
        const char *r = strstr(step, "registry {"), *k = strstr(step, "skip_scan {");
        g_assert_nonnull(r);
        g_assert_nonnull(k);
        r += strlen("registry {");
        k += strlen("skip_scan {");
        *ret_registry = g_strndup(r, strcspn(r, "}"));
        *ret_skip = g_strndup(k, strcspn(k, "}"));
}

/* A disk formatted whole (mkfs.btrfs zeroes its first 2 MiB, partition table included) while the
 * kernel still has a partition of it from the table it read before (the re-read fails while the disk
 * is busy, and udevd's after the writer closed it may not come): the superblock is the disk's
 * filesystem, scanned as any lone btrfs is, after `boot` and by every event, never listed. The
 * kernel's partitions once made it `skip partitioned-disk`: systemd's btrfs storage test's raid10,
 * made on disks its previous step had partitioned, did not assemble. */
static void test_formatted_whole_stale_partition(Fixture *f, gconstpointer data)
{
        static const DevSpec whole = {.node = "sdb", .image = "home"};
        static const DevSpec part = {.node = "sdb1", .disk = "sdb", .partn = 1, .partlabel = "data"};
        Story story = whole_disk_story(f, &whole, &part);

        for (guint i = 0; i < story.steps->len; i++) {
                const char *k = story.steps->pdata[i];
                g_autofree char *reg = NULL, *skip = NULL;
                step_lists(k, &reg, &skip);
                if (!csv_has(reg, "/dev/sdb") || csv_has(skip, "/dev/sdb") || strstr(k, "partitioned-disk"))
                        g_test_message("step %u:\n%s", i, k);
                g_assert_true(csv_has(reg, "/dev/sdb"));
                g_assert_false(csv_has(skip, "/dev/sdb"));
                g_assert_null(strstr(k, "partitioned-disk"));
        }
        g_ptr_array_unref(story.steps);
}

/* A disk formatted whole, then given a partition table the kernel has not read yet (no partition of
 * it in sysfs: the table written while the disk was busy): the superblock beside the table is older
 * than the table, `skip partitioned-disk` from `boot` on, never registered, always listed. Decided by
 * the kernel's partitions, it was a lone btrfs, scanned. */
static void test_table_not_yet_read(Fixture *f, gconstpointer data)
{
        static const DevSpec whole = {.node = "sdb", .image = "home-gpt"};
        Story story = whole_disk_story(f, &whole, NULL);

        for (guint i = 0; i < story.steps->len; i++) {
                const char *k = story.steps->pdata[i];
                g_autofree char *reg = NULL, *skip = NULL;
                step_lists(k, &reg, &skip);
                if (csv_has(reg, "/dev/sdb") || !csv_has(skip, "/dev/sdb"))
                        g_test_message("step %u:\n%s", i, k);
                g_assert_false(csv_has(reg, "/dev/sdb"));
                g_assert_true(csv_has(skip, "/dev/sdb"));
        }
        /* the disk's own event says why */
        const char *own = NULL;
        for (guint i = 0; i < story.steps->len && !own; i++)
                if (g_str_has_prefix(story.steps->pdata[i], "change sdb:"))
                        own = story.steps->pdata[i];
        g_assert_nonnull(own);
        g_assert_nonnull(strstr(own, "BTRFS_SCAN_GATE_REASON=partitioned-disk"));
        g_ptr_array_unref(story.steps);
}

/* A btrfs whole disk registered by `boot`, then mounted (the kernel writes a new generation: no
 * event), then forgotten (`btrfs device scan --forget`): its `add` event registers it again. Decided
 * from its record (generation of the boot's read) without a read, the check after DEVICES_READY saw
 * another generation than the one decided and took the registration back: a raid10 of systemd's
 * btrfs storage test stayed unregistered after `udevadm trigger --action=add`. */
static void test_add_after_mount(Fixture *f, gconstpointer data)
{
        static const DevSpec disk = {.node = "sdb", .image = "home"};
        Run r;

        world_add(f, &disk);
        run_boot(f);
        assert_registry("/dev/sdb");
        g_autofree char *file = g_strdup_printf("%s/home-newer.img", fixtures_dir);
        g_autofree char *bytes = NULL;
        gsize len;
        g_assert_true(g_file_get_contents(file, &bytes, &len, NULL));
        make_node("/dev/sdb", bytes, len, FAKE_MAJOR_BASE + disk_index("sdb"), 0, TRUE);
        kernel_reset();
        world_uevent(f, &disk, "add");
        run_udev_action(f, &disk, "add", NULL, &r);
        if (g_strcmp0(kv(&r, "BTRFS_SCAN_GATE_DECISION"), "scan") != 0)
                g_test_message("add: %s", r.out);
        assert_kv(&r, "DECISION", "scan");
        run_clear(&r);
        assert_registry("/dev/sdb");
}

/* ------------------------------------------------------------------------------------------------ */

static void add(const char *name, void (*fn)(Fixture *, gconstpointer))
{
        g_test_add(name, Fixture, NULL, fixture_setup, fn, fixture_teardown);
}

/* ------------------------------------------------------------------------------------------------ */
/* Doubt stays where it starts: a device whose reads hang (a FIFO as its node: open() waits for a
 * writer that never comes).                                                                         */

static const DevSpec stall_stick = {.node = "sdb", .removable = TRUE};

static void make_stalling(const DevSpec *s)
{
        g_autofree char *devnode = devnode_of(s);
        g_autofree char *file = tb_path(devnode);
        g_assert_cmpint(unlink(file), ==, 0);
        g_assert_cmpint(mkfifo(file, 0644), ==, 0);
        g_assert_cmpint(chmod(file, 01644), ==, 0);
}

/* The inventory's record kinds (helper/state.h enum bsg_record_kind, the line's 4th field). */
enum { REC_BTRFS = 0, REC_UNKNOWN = 3, REC_ANY = -1 };

/* Whether the inventory has a line for the device S, of kind KIND (REC_ANY: any). */
static gboolean inventory_has(Fixture *f, const DevSpec *s, int kind)
{
        g_autofree char *path = g_build_filename(f->rundir, "devices", NULL);
        g_autofree char *text = read_file(path);
        g_autofree char *devnode = devnode_of(s);
        g_autofree char *field = g_strdup_printf(" %s ", devnode);
        g_auto(GStrv) lines = g_strsplit(text ? text : "", "\n", -1);
        for (int i = 0; lines[i]; i++) {
                unsigned maj, min;
                unsigned long long seq, size;
                int k;
                if (lines[i][0] != '#' && strstr(lines[i], field) &&
                    sscanf(lines[i], "%u:%u %llu %llu %d", &maj, &min, &seq, &size, &k) == 5 &&
                    (kind == REC_ANY || k == kind))
                        return TRUE;
        }
        return FALSE;
}

/* `boot` bounds its total time: a stalled device (enumerated before the others) costs the others
 * nothing. On 5430f93 every read after it timed out: the RAID members were unknown, never scanned. */
static void test_doubt_boot_stall(Fixture *f, gconstpointer data)
{
        const char *args[] = {"--read-timeout", "4", "boot", NULL};
        Run r;

        world_add_all(f, raid, 2);
        world_add(f, &stall_stick);
        make_stalling(&stall_stick);
        gint64 t0 = g_get_monotonic_time();
        run_helper(f, &r, args);
        gint64 took = g_get_monotonic_time() - t0;
        g_assert_cmpint(r.status, ==, 0);
        g_assert_nonnull(strstr(r.err, "/dev/sdb: superblock read did not finish"));
        g_assert_null(strstr(r.err, "/dev/sdc1: superblock read did not finish"));
        g_assert_null(strstr(r.err, "/dev/sdd1: superblock read did not finish"));
        g_assert_true(inventory_has(f, &raid[0], REC_BTRFS));
        g_assert_true(inventory_has(f, &raid[1], REC_BTRFS));
        /* one deadline for the whole run (valgrind's slowness allowed for) */
        g_assert_cmpint(took, <, 4 * G_USEC_PER_SEC + 6 * G_USEC_PER_SEC);
        run_clear(&r);
}

/* A registered internal RAID1 beside a stick whose reads hang: no event forgets the RAID's
 * registrations because of the stick's doubt, and the stick's record goes with its remove event
 * (which has no ID_FS_TYPE: udev could not probe it either). On 5430f93 the members' events said
 * ACTION=forgot:/dev/sdc1 and forgot:/dev/sdd1 and left the registry empty. */
static void test_doubt_stall_keeps_registered(Fixture *f, gconstpointer data)
{
        const char *fast[] = {"--read-timeout", "1", NULL};
        Run r;

        world_add_all(f, raid, 2);
        run_boot(f);
        assert_registry("/dev/sdc1,/dev/sdd1");

        world_add(f, &stall_stick);
        make_stalling(&stall_stick);
        run_udev_action(f, &stall_stick, "add", fast, &r);
        assert_kv(&r, "DECISION", "skip");
        g_assert_null(strstr(kv(&r, "BTRFS_SCAN_GATE_ACTION"), "forgot"));
        run_clear(&r);
        g_assert_true(inventory_has(f, &stall_stick, REC_UNKNOWN));
        assert_registry("/dev/sdc1,/dev/sdd1");

        for (int i = 0; i < 2; i++) {
                run_udev_action(f, &raid[i], "change", fast, &r);
                g_assert_null(strstr(kv(&r, "BTRFS_SCAN_GATE_ACTION"), "forgot"));
                run_clear(&r);
        }
        assert_registry("/dev/sdc1,/dev/sdd1");

        /* the stick goes: so does its record, and with it the doubt */
        world_remove(f, &stall_stick);
        run_udev_action(f, &stall_stick, "remove", NULL, &r);
        run_clear(&r);
        g_assert_false(inventory_has(f, &stall_stick, REC_ANY));
        run_udev_action(f, &raid[0], "change", NULL, &r);
        assert_kv(&r, "DECISION", "scan");
        run_clear(&r);
        assert_registry("/dev/sdc1,/dev/sdd1");
}

/* Remedies that work: `boot` says once which fixed disks the boot does not name are untrusted, each
 * with its trusted_disk= line by-path; a withheld device's event names `mount -o device=` (and, on
 * a fixed disk, trusted_disk=), never `btrfs device scan` (the patched kernel answers a scan of a
 * listed device with success and registers nothing). */
static void test_doubt_remedies(Fixture *f, gconstpointer data)
{
        static const DevSpec devs[] = {
                {.node = "sda1", .disk = "sda", .partn = 1, .image = "esp", .partlabel = "esp"},
                {.node = "sda2", .disk = "sda", .partn = 2, .image = "rootfs", .partlabel = "root"},
                {.node = "sdb1", .disk = "sdb", .partn = 1, .image = "home", .partlabel = "home"},
                {.node = "sdb2", .disk = "sdb", .partn = 2, .image = "var", .partlabel = "var"},
        };
        const char *args[] = {"boot", NULL};
        Run r;

        world_add_all(f, devs, G_N_ELEMENTS(devs));
        set_id_path(f, "sdb", "pci-0000:00:17.0-ata-2"); /* no link: the name is where sdb is attached */
        set_config(f, "");
        efivar_write(f, SDA1_PARTUUID, -1);
        set_cmdline(f, "BOOT_IMAGE=/boot/vmlinuz root=PARTLABEL=root ro");
        run_helper(f, &r, args);
        g_assert_cmpint(r.status, ==, 0);
        g_auto(GStrv) parts = g_strsplit(r.err, "fixed disk(s) the boot does not name", -1);
        g_assert_cmpuint(g_strv_length(parts), ==, 2); /* said once */
        g_assert_nonnull(strstr(r.err, "/dev/sdb: trusted_disk=/dev/disk/by-path/pci-0000:00:17.0-ata-2"));
        g_assert_null(strstr(r.err, "/dev/sda:"));
        run_clear(&r);

        /* it collides with nothing: it takes part as with systemd's rules (untrusted, scanned) */
        run_udev(f, &devs[2], &r, FALSE);
        assert_kv(&r, "TRUSTED", "0");
        assert_kv(&r, "DECISION", "scan");
        g_assert_null(strstr(r.err, "btrfs device scan"));
        run_clear(&r);
}

/* once per clone policy: NAME/skip-all and NAME/active */
static void add_p(const char *name, void (*fn)(Fixture *, gconstpointer))
{
        g_autofree char *a = g_strdup_printf("%s/%s", name, skip_all.name);
        g_autofree char *b = g_strdup_printf("%s/%s", name, active_pol.name);
        g_test_add(a, Fixture, &skip_all, fixture_setup, fn, fixture_teardown);
        g_test_add(b, Fixture, &active_pol, fixture_setup, fn, fixture_teardown);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        if (g_getenv("BSG_TEST_NONFATAL")) /* debugging aid: see every failed check of a run */
                g_test_set_nonfatal_assertions();

        const char *helper = g_getenv("BSG_HELPER");
        fixtures_dir = g_getenv("BSG_FIXTURES");
        if (!helper || !fixtures_dir) {
                g_printerr("BSG_HELPER and BSG_FIXTURES must be set (CTest sets them)\n");
                return 1;
        }
        const char *preload = g_getenv("LD_PRELOAD");
        if (!preload || !strstr(preload, "libumockdev-preload")) {
                g_printerr("not running under the umockdev preload (LD_PRELOAD=libumockdev-preload.so.0 "
                           "or umockdev-wrapper)\n");
                return 1;
        }
        const char *wrapper = g_getenv("BSG_HELPER_WRAPPER");
        GPtrArray *a = g_ptr_array_new();
        if (wrapper && wrapper[0]) {
                under_wrapper = TRUE;
                g_auto(GStrv) words = g_strsplit(wrapper, " ", -1);
                for (int i = 0; words[i]; i++)
                        if (words[i][0])
                                g_ptr_array_add(a, g_strdup(words[i]));
        }
        g_ptr_array_add(a, g_strdup(helper));
        g_ptr_array_add(a, NULL);
        helper_argv0 = (char **)g_ptr_array_free(a, FALSE);

        kern.log = g_ptr_array_new_with_free_func(g_free);
        kern.devs = g_ptr_array_new_with_free_func(kdev_free);
        tb = umockdev_testbed_new();
        tb_root = umockdev_testbed_get_root_dir(tb);
        UMockdevIoctlBase *handler = umockdev_ioctl_base_new();
        g_signal_connect(handler, "handle-ioctl", G_CALLBACK(on_handle_ioctl), NULL);
        GError *error = NULL;
        /* the node must exist so nothing can reach the host's real /dev/btrfs-control */
        make_node("/dev/btrfs-control", "", 0, 10, 234, FALSE);
        if (!umockdev_testbed_attach_ioctl(tb, "/dev/btrfs-control", handler, &error))
                g_error("cannot attach the fake /dev/btrfs-control: %s", error->message);
        /* the fake device-mapper: nothing may reach the host's /dev/mapper/control */
        UMockdevIoctlBase *dm_handler = umockdev_ioctl_base_new();
        g_signal_connect(dm_handler, "handle-ioctl", G_CALLBACK(on_handle_dm_ioctl), NULL);
        make_node("/dev/mapper/control", "", 0, 10, 236, FALSE);
        if (!umockdev_testbed_attach_ioctl(tb, "/dev/mapper/control", dm_handler, &error))
                g_error("cannot attach the fake /dev/mapper/control: %s", error->message);

        add_p("/helper/steamos/udev", test_steamos_udev);
        add("/helper/steamos/home-unique", test_steamos_home_unique);
        add_p("/helper/steamos/boot", test_steamos_boot);
        add("/helper/steamos/slot-b", test_steamos_slot_b);
        add("/helper/steamos/slot-from-cmdline", test_steamos_slot_from_cmdline);
        add("/helper/slot/partuuid-after-boot", test_slot_partuuid_after_boot);
        add("/helper/slot/esp-on-other-disk", test_slot_esp_on_other_disk);
        add("/helper/slot/stable-skip-list", test_slot_stable_skip_list);
        add("/helper/slot/stick-partuuid", test_slot_stick_partuuid);
        add("/helper/trust/classes", test_trust_classes);
        add("/helper/trust/stacked-verity", test_stacked_verity);
        add("/helper/trust/stacked-verity-two-slaves", test_stacked_verity_two_slaves);
        add("/helper/trust/stacked-untrusted-no-slot", test_stacked_untrusted_no_slot);
        add("/helper/rank/lone-fixed", test_rank_lone_fixed);
        add("/helper/rank/reserved-alone", test_rank_reserved_alone);
        add("/helper/rank/stick-first", test_rank_stick_first);
        add("/helper/rank/cloned-seeds", test_rank_cloned_seeds);
        add("/helper/rank/partlabel-encoded", test_rank_partlabel_encoded);
        add("/helper/rank/many-carriers", test_rank_many_carriers);
        add("/helper/rank/plain-stick-first", test_rank_plain_stick_first);
        g_test_add("/helper/rank/fixed-outranks-stick/fixed-first", Fixture, "fixed-first", fixture_setup,
                   test_rank_fixed_outranks_stick, fixture_teardown);
        g_test_add("/helper/rank/fixed-outranks-stick/stick-first", Fixture, "stick-first", fixture_setup,
                   test_rank_fixed_outranks_stick, fixture_teardown);
        g_test_add("/helper/trust/stacked-linear-over-verity", Fixture, "linear-over-verity",
                   fixture_setup, test_stacked_dm_on_dm, fixture_teardown);
        g_test_add("/helper/trust/stacked-verity-over-linear", Fixture, "verity-over-linear",
                   fixture_setup, test_stacked_dm_on_dm, fixture_teardown);
        add("/helper/trust/stacked-removed", test_stacked_removed);
        add("/helper/trust/id-bus-kept", test_trust_id_bus_kept);
        add("/helper/trust/anchor-root", test_trust_anchor_root);
        add("/helper/trust/anchor-fallback", test_trust_anchor_fallback);
        add("/helper/trust/anchor-efivar", test_trust_anchor_efivar);
        add("/helper/trust/anchor-ambiguous", test_trust_anchor_ambiguous);
        add("/helper/trust/anchor-first-coldplug", test_trust_anchor_first_coldplug);
        add("/helper/trust/old-inventory", test_trust_old_inventory);
        add("/helper/trust/reannounce-anchor-change", test_trust_reannounce);
        add("/helper/trust/anchor-table-fixed-only", test_trust_anchor_table_fixed_only);
        add("/helper/trust/anchor-multi-device-root", test_trust_anchor_multi_device_root);
        g_test_add("/helper/trust/by-path-without-link-database", Fixture, "database", fixture_setup,
                   test_trust_by_path_without_link, fixture_teardown);
        g_test_add("/helper/trust/by-path-without-link-derived", Fixture, "derived", fixture_setup,
                   test_trust_by_path_without_link, fixture_teardown);
        g_test_add("/helper/trust/by-path-without-link-event", Fixture, "event", fixture_setup,
                   test_trust_by_path_without_link, fixture_teardown);
        g_test_add("/helper/trust/by-path-without-link-none", Fixture, "none", fixture_setup,
                   test_trust_by_path_without_link, fixture_teardown);
        add("/helper/trust/anchor-efivar-unreadable", test_trust_anchor_efivar_unreadable);
        add("/helper/trust/stale-class-diskseq", test_trust_stale_class_diskseq);
        g_test_add("/helper/trust/anchor-stick-copies-esp", Fixture, "", fixture_setup,
                   test_trust_anchor_stick_copies_esp, fixture_teardown);
        g_test_add("/helper/trust/anchor-stick-copies-esp-devroot", Fixture, "/dev/root", fixture_setup,
                   test_trust_anchor_stick_copies_esp, fixture_teardown);
        g_test_add("/helper/trust/anchor-stick-copies-esp-mounted", Fixture, "/dev/sda2", fixture_setup,
                   test_trust_anchor_stick_copies_esp, fixture_teardown);
        g_test_add("/helper/trust/anchor-card-root-fsid", Fixture, "copy", fixture_setup,
                   test_trust_anchor_card_root_fsid, fixture_teardown);
        g_test_add("/helper/trust/anchor-card-root-fsid-newer", Fixture, "newer", fixture_setup,
                   test_trust_anchor_card_root_fsid, fixture_teardown);
        g_test_add("/helper/trust/anchor-card-root-fsid-single", Fixture, "single", fixture_setup,
                   test_trust_anchor_card_root_fsid, fixture_teardown);
        g_test_add("/helper/trust/anchor-rauc-by-label", Fixture, "by-label", fixture_setup,
                   test_trust_anchor_rauc_link, fixture_teardown);
        g_test_add("/helper/trust/anchor-rauc-by-path", Fixture, "by-path", fixture_setup,
                   test_trust_anchor_rauc_link, fixture_teardown);
        g_test_add("/helper/rauc/slot-a", Fixture, "A", fixture_setup, test_rauc, fixture_teardown);
        g_test_add("/helper/rauc/slot-b", Fixture, "B", fixture_setup, test_rauc, fixture_teardown);
        add("/helper/rauc/skip-all", test_rauc_skip_all);
        add("/helper/raid/clone-member", test_raid_clone);
        add("/helper/raid/plain", test_raid_plain);
        add("/helper/raid/forget-then-add", test_raid_forget_then_add);
        add("/helper/seed/single", test_seed);
        add("/helper/guard/usb-clone-of-mounted", test_usb_hijack);
        add("/helper/guard/usb-root-self", test_usb_root_self);
        add("/helper/guard/usb-clone-fuse-source", test_usb_clone_fuse_source);
        add_p("/helper/kernel/unpatched", test_unpatched_kernel);
        add("/helper/kernel/upstream-temp-fsid", test_upstream_kernel);
        add("/helper/kernel/missing-control", test_missing_control);
        add("/helper/input/bad-superblocks", test_bad_superblocks);
        add("/helper/input/path-with-comma", test_bad_path);
        add("/helper/input/zoned", test_zoned);
        add("/helper/input/partitioned-disk-from-record", test_partitioned_disk_from_record);
        add("/helper/input/formatted-whole-stale-partition", test_formatted_whole_stale_partition);
        add("/helper/input/table-not-yet-read", test_table_not_yet_read);
        add("/helper/input/add-after-mount", test_add_after_mount);
        add("/helper/input/encoded-label", test_encoded_label);
        add("/helper/input/usage", test_usage);
        add("/helper/mode/dry-run", test_dry_run);
        add("/helper/mode/status", test_status);
        add_p("/helper/order/permutations-hotplug", test_perm_hotplug);
        add_p("/helper/order/permutations-coldplug", test_perm_coldplug);
        add_p("/helper/order/permutations-boot", test_perm_boot);
        add_p("/helper/order/random", test_random_orders);
        add_p("/helper/order/concurrent-clones", test_concurrent_clones);
        add_p("/helper/order/permutations-disturbed", test_perm_disturbed);
        add("/helper/lost/left-skip-list", test_lost_left_skip_list);
        add("/helper/lost/lock-timeout", test_lost_lock_timeout);
        add("/helper/lost/stale-remove-marker", test_lost_stale_remove_marker);
        add("/helper/lost/remove", test_lost_remove);
        add("/helper/doubt/boot-stall", test_doubt_boot_stall);
        add("/helper/doubt/stall-keeps-registered", test_doubt_stall_keeps_registered);
        add("/helper/doubt/remedies", test_doubt_remedies);
        add("/helper/lost/reconcile-verb", test_lost_reconcile_verb);
        g_test_add("/helper/lost/late-disks/a-first", Fixture, "a-first", fixture_setup, test_lost_late_disks,
                   fixture_teardown);
        g_test_add("/helper/lost/late-disks/b-first", Fixture, "b-first", fixture_setup, test_lost_late_disks,
                   fixture_teardown);

        int ret = g_test_run();

        umockdev_testbed_detach_ioctl(tb, "/dev/btrfs-control", NULL);
        umockdev_testbed_detach_ioctl(tb, "/dev/mapper/control", NULL);
        g_object_unref(handler);
        g_object_unref(dm_handler);
        g_object_unref(tb);
        g_free(tb_root);
        g_strfreev(helper_argv0);
        g_ptr_array_unref(kern.log);
        g_ptr_array_unref(kern.devs);
        return ret;
}
