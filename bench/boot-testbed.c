/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * boot-testbed: a umockdev machine with N simulated block devices for the `boot` scaling benchmark
 * of bench/run.sh (a benchmark, not a test).
 *
 *   umockdev-wrapper boot-testbed N SUPERBLOCK WORKDIR -- COMMAND [ARGS...]
 *
 * SUPERBLOCK is the 4096-byte primary superblock of a real single-device btrfs (made by
 * mkfs.btrfs). Device i (node /dev/bsgNNNN, fake major 4000, minor i) carries, by i % 10:
 *   0, 1  a clone pair (both copies byte-identical, one fsid per pair)  -> skip
 *   2..8  a filesystem of its own (distinct fsid, checksum recomputed)  -> scan
 *   9     no filesystem (zeros)                                          -> ignore
 * COMMAND (the helper, possibly under valgrind) runs with the helper's environment seams pointed
 * into WORKDIR and at a fake control node, /dev/bsg-btrfs-control, whose ioctls are answered here
 * (0, counted). The name exists on no host: without the preload the helper's open fails instead of
 * reaching a real /dev/btrfs-control. /sys (skip_scan, features) is the testbed's.
 *
 * Prints "boot-testbed: devices=N scan_ioctls=K forget_ioctls=F skip_scan_entries=S exit=X" and
 * exits with COMMAND's exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/btrfs.h>

#include <glib.h>
#include <umockdev.h>

#define SB_OFFSET 65536
#define SB_SIZE 4096
#define SB_CSUM_START 0x20
#define SB_FSID 0x20
#define SB_MAGIC 0x40
#define SB_DEV_UUID (0xc9 + 66)
#define SB_DEV_FSID (0xc9 + 82)
#define NODE_SIZE (2 * SB_OFFSET)
#define FAKE_MAJOR 4000 /* no host has it: libudev reads the host's /run/udev/data */
#define CONTROL "/dev/bsg-btrfs-control"

static char *tb_root;
static GMutex count_lock;
static unsigned n_scan, n_forget, n_other;

static guint32 crc32c(const guint8 *p, gsize len)
{
        static guint32 table[256];
        guint32 crc = ~0u;

        if (!table[1])
                for (guint32 i = 0; i < 256; i++) {
                        guint32 c = i;
                        for (int k = 0; k < 8; k++)
                                c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
                        table[i] = c;
                }
        for (gsize i = 0; i < len; i++)
                crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
        return ~crc;
}

/* A copy of the superblock with fsid (and device uuid) derived from ID, checksum recomputed. */
static void superblock_variant(const guint8 *sb, guint32 id, guint8 *out)
{
        memcpy(out, sb, SB_SIZE);
        for (int k = 0; k < 4; k++) {
                out[SB_FSID + 12 + k] = (guint8)(id >> (8 * k));
                out[SB_DEV_FSID + 12 + k] = (guint8)(id >> (8 * k));
                out[SB_DEV_UUID + 12 + k] = (guint8)(id >> (8 * k));
        }
        guint32 c = crc32c(out + SB_CSUM_START, SB_SIZE - SB_CSUM_START);
        memset(out, 0, SB_CSUM_START);
        for (int k = 0; k < 4; k++)
                out[k] = (guint8)(c >> (8 * k));
}

static void die(const char *what)
{
        fprintf(stderr, "boot-testbed: %s: %s\n", what, g_strerror(errno));
        exit(1);
}

static void write_file(const char *path, const char *text)
{
        g_autofree char *dir = g_path_get_dirname(path);
        GError *error = NULL;

        if (g_mkdir_with_parents(dir, 0755) < 0)
                die(dir);
        if (!g_file_set_contents(path, text, -1, &error)) {
                fprintf(stderr, "boot-testbed: %s: %s\n", path, error->message);
                exit(1);
        }
}

/* A testbed node: a sticky regular file is a block device for the preload's stat(). */
static void make_node(const char *devnode, const guint8 *sb, unsigned maj, unsigned min, gboolean block)
{
        g_autofree char *file = g_build_filename(tb_root, devnode, NULL);
        g_autofree char *dir = g_path_get_dirname(file);
        int fd;

        if (g_mkdir_with_parents(dir, 0755) < 0)
                die(dir);
        fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                die(file);
        if (block && ftruncate(fd, NODE_SIZE) < 0)
                die(file);
        if (sb && pwrite(fd, sb, SB_SIZE, SB_OFFSET) != SB_SIZE)
                die(file);
        close(fd);
        if (chmod(file, block ? 01644 : 0644) < 0)
                die(file);

        g_autofree char *name = g_strdup(devnode + strlen("/dev/"));
        g_autofree char *nodedir = g_build_filename(tb_root, "dev/.node", NULL);
        g_autofree char *link = g_build_filename(nodedir, name, NULL);
        g_autofree char *target = g_strdup_printf("%u:%u", maj, min);
        if (g_mkdir_with_parents(nodedir, 0755) < 0)
                die(nodedir);
        (void)unlink(link);
        if (symlink(target, link) < 0)
                die(link);
}

static gboolean on_ioctl(UMockdevIoctlBase *base, UMockdevIoctlClient *client, gpointer user)
{
        gulong request = umockdev_ioctl_client_get_request(client);

        g_mutex_lock(&count_lock);
        if (request == BTRFS_IOC_SCAN_DEV || request == BTRFS_IOC_DEVICES_READY)
                n_scan++;
        else if (request == BTRFS_IOC_FORGET_DEV)
                n_forget++;
        else
                n_other++;
        g_mutex_unlock(&count_lock);
        if (request == BTRFS_IOC_SCAN_DEV || request == BTRFS_IOC_DEVICES_READY || request == BTRFS_IOC_FORGET_DEV)
                umockdev_ioctl_client_complete(client, 0, 0);
        else
                umockdev_ioctl_client_complete(client, -1, ENOTTY);
        return TRUE;
}

int main(int argc, char **argv)
{
        GError *error = NULL;
        g_autofree char *sb = NULL;
        gsize sb_len = 0;
        int sep = -1;

        for (int i = 1; i < argc; i++)
                if (strcmp(argv[i], "--") == 0) {
                        sep = i;
                        break;
                }
        if (sep != 4 || sep + 1 >= argc) {
                fprintf(stderr, "usage: umockdev-wrapper boot-testbed N SUPERBLOCK WORKDIR -- COMMAND [ARGS...]\n");
                return 2;
        }
        if (!strstr(g_getenv("LD_PRELOAD") ?: "", "libumockdev-preload")) {
                fprintf(stderr, "boot-testbed: not under the umockdev preload (run it with umockdev-wrapper)\n");
                return 2;
        }
        long n = strtol(argv[1], NULL, 10);
        const char *work = argv[3];
        if (n < 0 || n > 100000) {
                fprintf(stderr, "boot-testbed: N out of range\n");
                return 2;
        }
        if (!g_file_get_contents(argv[2], &sb, &sb_len, &error) || sb_len != SB_SIZE ||
            memcmp(sb + SB_MAGIC, "_BHRfS_M", 8) != 0) {
                fprintf(stderr, "boot-testbed: %s is not a 4096-byte btrfs superblock\n", argv[2]);
                return 2;
        }

        UMockdevTestbed *tb = umockdev_testbed_new();
        tb_root = umockdev_testbed_get_root_dir(tb);
        make_node(CONTROL, NULL, 10, 234, FALSE);
        UMockdevIoctlBase *handler = umockdev_ioctl_base_new();
        g_signal_connect(handler, "handle-ioctl", G_CALLBACK(on_ioctl), NULL);
        if (!umockdev_testbed_attach_ioctl(tb, CONTROL, handler, &error)) {
                fprintf(stderr, "boot-testbed: cannot attach %s: %s\n", CONTROL, error->message);
                return 1;
        }
        g_autofree char *param = g_build_filename(tb_root, "sys/module/btrfs/parameters/skip_scan", NULL);
        g_autofree char *feature = g_build_filename(tb_root, "sys/fs/btrfs/features/virtual_fsid", NULL);
        write_file(param, "");
        write_file(feature, "0\n");
        /* neither exists on a host: seen only if the preload redirects /dev and /sys into the testbed */
        if (access(CONTROL, F_OK) < 0 || access("/sys/module/btrfs/parameters/skip_scan", F_OK) < 0) {
                fprintf(stderr, "boot-testbed: the preload does not redirect /dev and /sys; refusing to run\n");
                return 1;
        }

        guint8 variant[SB_SIZE];
        for (long i = 0; i < n; i++) {
                g_autofree char *node = g_strdup_printf("/dev/bsg%04ld", i);
                /* on a PCI controller: fixed storage, trusted by the fallback of is_trusted_storage()
                 * (under virtual/ every device would be `skip untrusted` and nothing scanned) */
                g_autofree char *rel = g_strdup_printf("pci0000:00/0000:00:17.0/block/bsg%04ld", i);
                g_autofree char *dev = g_strdup_printf("%u:%ld", FAKE_MAJOR, i);
                g_autofree char *maj = g_strdup_printf("%u", FAKE_MAJOR);
                g_autofree char *min = g_strdup_printf("%ld", i);
                const guint8 *content = NULL;

                if (i % 10 <= 1) { /* clone pair: fsid per pair */
                        superblock_variant((const guint8 *)sb, 0x10000000u + (guint32)(i / 10), variant);
                        content = variant;
                } else if (i % 10 <= 8) {
                        superblock_variant((const guint8 *)sb, 0x20000000u + (guint32)i, variant);
                        content = variant;
                }
                char *syspath = umockdev_testbed_add_devicev(
                        tb, "block", rel, NULL,
                        (char *[]){"dev", dev, "removable", "0", "size", "2457600", "ro", "0", NULL},
                        (char *[]){"DEVNAME", node, "DEVTYPE", "disk", "MAJOR", maj, "MINOR", min, NULL});
                if (!syspath) {
                        fprintf(stderr, "boot-testbed: cannot add %s\n", rel);
                        return 1;
                }
                g_free(syspath);
                make_node(node, content, FAKE_MAJOR, (unsigned)i, TRUE);
        }

        g_autofree char *rundir = g_build_filename(work, "run", NULL);
        g_autofree char *config = g_build_filename(work, "btrfs-scan-gate.conf", NULL);
        g_autofree char *cmdline = g_build_filename(work, "cmdline", NULL);
        g_autofree char *mountinfo = g_build_filename(work, "mountinfo", NULL);
        g_autofree char *rm = g_strdup_printf("rm -rf '%s'", rundir);
        if (system(rm) != 0 || g_mkdir_with_parents(rundir, 0755) < 0)
                die(rundir);
        write_file(config, "");
        write_file(cmdline, "BOOT_IMAGE=/boot/vmlinuz root=/dev/vda1 rw quiet\n");
        write_file(mountinfo, "21 1 0:20 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
                              "22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw\n");

        char **env = g_get_environ();
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_CONTROL", CONTROL, TRUE);
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_RUNDIR", rundir, TRUE);
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_CONFIG", config, TRUE);
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_CMDLINE", cmdline, TRUE);
        env = g_environ_setenv(env, "BTRFS_SCAN_GATE_MOUNTINFO", mountinfo, TRUE);
        int status = 0;
        if (!g_spawn_sync(NULL, argv + sep + 1, env, G_SPAWN_SEARCH_PATH | G_SPAWN_CHILD_INHERITS_STDIN, NULL,
                          NULL, NULL, NULL, &status, &error)) {
                fprintf(stderr, "boot-testbed: cannot run %s: %s\n", argv[sep + 1], error->message);
                return 1;
        }
        g_strfreev(env);

        g_autofree char *list = NULL;
        unsigned entries = 0;
        if (g_file_get_contents(param, &list, NULL, NULL)) {
                g_strchomp(list);
                if (list[0]) {
                        entries = 1;
                        for (const char *p = list; *p; p++)
                                entries += *p == ',';
                }
        }
        g_mutex_lock(&count_lock);
        printf("boot-testbed: devices=%ld scan_ioctls=%u forget_ioctls=%u other_ioctls=%u skip_scan_entries=%u "
               "exit=%d\n",
               n, n_scan, n_forget, n_other, entries, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        g_mutex_unlock(&count_lock);

        umockdev_testbed_detach_ioctl(tb, CONTROL, NULL);
        g_object_unref(handler);
        g_object_unref(tb);
        g_free(tb_root);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
