/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blkid.h>
#include <libudev.h>

#include "devices.h"
#include "kernel.h"
#include "stack.h"
#include "util.h"

static inline void udev_unrefp(struct udev **p)
{
        if (*p)
                udev_unref(*p);
}
static inline void blkid_free_probep(blkid_probe *p)
{
        if (*p)
                blkid_free_probe(*p);
}
#define _cleanup_udev_ _cleanup_(udev_unrefp)
#define _cleanup_blkid_probe_ _cleanup_(blkid_free_probep)

uint64_t bsg_now_usec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void dev_done(struct bsg_dev *d)
{
        free(d->devnode);
        free(d->sysname);
        free(d->syspath);
        free(d->partlabel);
        free(d->partuuid);
        free(d->storage_id);
        free(d->disk);
        free(d->data_slave);
        free(d->blkid_type);
        free(d->blkid_uuid);
        free(d->blkid_uuid_sub);
        free(d->blkid_label);
        free(d->raw);
        free(d->part_table);
}

void bsg_devs_free(struct bsg_devs *d)
{
        for (size_t i = 0; i < d->n; i++)
                dev_done(&d->v[i]);
        free(d->v);
        d->v = NULL;
        d->n = 0;
}

static struct bsg_dev *devs_append(struct bsg_devs *devs)
{
        struct bsg_dev *nv = realloc(devs->v, (devs->n + 1) * sizeof(*nv));
        if (!nv)
                return NULL;
        devs->v = nv;
        memset(&nv[devs->n], 0, sizeof(*nv));
        nv[devs->n].read_result = -ENODATA;
        nv[devs->n].parse_result = BSG_SB_NOT_BTRFS;
        return &nv[devs->n++];
}

#define SYS_CLASS_BLOCK "/sys/class/block"

/* Reads the sysfs attribute ATTR of block device NAME into BUF (NUL-terminated, one trailing
 * newline dropped). Returns its length or -errno. */
/* BUF := "/sys/dev/block/MAJ:MIN" SUFFIX (without snprintf: see bsg_join()). */
static bool devnum_path(char *buf, size_t size, dev_t devnum, const char *suffix)
{
        char num[32], *p = num + sizeof(num);
        unsigned v = minor(devnum);

        *--p = '\0';
        do
                *--p = (char)('0' + v % 10);
        while ((v /= 10));
        *--p = ':';
        v = major(devnum);
        do
                *--p = (char)('0' + v % 10);
        while ((v /= 10));
        return bsg_join(buf, size, "/sys/dev/block/", p, suffix, NULL);
}

static ssize_t sysfs_read(const char *name, const char *attr, char *buf, size_t size)
{
        char path[PATH_MAX];
        _cleanup_close_ int fd = -1;
        ssize_t n;

        if (!bsg_join(path, sizeof(path), SYS_CLASS_BLOCK "/", name, "/", attr, NULL))
                return -ENAMETOOLONG;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        if (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        return n;
}

/* The value of KEY in a uevent file's "KEY=VALUE" lines, copied to OUT; NULL if absent or empty. */
static const char *uevent_value(const char *text, const char *key, char *out, size_t size)
{
        size_t klen = strlen(key);

        for (const char *p = text; *p;) {
                size_t len = strcspn(p, "\n");
                if (len > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
                        size_t vlen = len - klen - 1;
                        if (vlen == 0 || vlen >= size)
                                return NULL;
                        memcpy(out, p + klen + 1, vlen);
                        out[vlen] = '\0';
                        return out;
                }
                p += len;
                if (*p)
                        p++;
        }
        return NULL;
}

/* An ID_BUS value of hot-pluggable media. */
static bool is_hotplug_bus(const char *bus)
{
        return bus && (streq(bus, "usb") || streq(bus, "ieee1394"));
}

/* Whether some directory on the way from the device's node up to the root of the sysfs tree has a
 * "removable" attribute saying "removable": the PCI core marks devices behind an external-facing
 * port so (Thunderbolt/USB4 tunnels), the USB core a device on a hot-plug port. */
static bool behind_removable_port(const char *sysfs_link)
{
        char path[PATH_MAX], v[32];
        const char *rel = strstr(sysfs_link, "/devices/");

        if (!rel)
                return false;
        if ((size_t)snprintf(path, sizeof(path), "/sys%s", rel) >= sizeof(path))
                return true; /* fail closed */
        for (char *slash; (slash = strrchr(path, '/')) && slash > path + strlen("/sys/devices");) {
                *slash = '\0';
                char attr[PATH_MAX + 16];
                snprintf(attr, sizeof(attr), "%s/removable", path);
                _cleanup_close_ int fd = open(attr, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0 && (errno == ENOENT || errno == ENOTDIR))
                        continue;
                ssize_t n = fd < 0 ? -1 : read(fd, v, sizeof(v) - 1);
                if (n <= 0)
                        return true; /* there but unreadable: fail closed */
                v[n] = '\0';
                if (strncmp(v, "removable", 9) == 0)
                        return true;
        }
        return false;
}

/* The fallback (no disk named by the boot or the configuration): why DISK (whose device's sysfs
 * path is SYSFS_LINK) is not taken for fixed storage, or NULL if it is. Every class an attacker can
 * attach or create at run time is out: the disk's "removable" flag, USB/FireWire (bus in the path,
 * or ID_BUS where the uevent file has it), SD cards (the mmc driver leaves "removable" at 0; eMMC,
 * type MMC, is built in), Thunderbolt/USB4 (a "thunderbolt" component, or a port the PCI core marks
 * removable), and everything under /devices/virtual (loop, nbd, zram, ram, and dm/md, which
 * is_trusted_storage() trusts only through their slaves). An eSATA port is only caught when the
 * kernel sets the disk's "removable" flag, which many controllers do not. */
static const char *fallback_untrusted_why(const char *disk, const char *sysfs_link, const char *uevent);

/* A native NVMe multipath head (CONFIG_NVME_MULTIPATH, Debian's default, for a drive that can have
 * several controllers) sits under /devices/virtual/nvme-subsystem/ whatever carries it: it stands for
 * its paths (multipath/ of the head, each a namespace of one controller). Fixed storage when every
 * path passes the fallback on its own sysfs path and its controller's transport is PCIe (not NVMe
 * over fabrics). Returns NULL or why not. */
static const char *nvme_head_untrusted_why(const char *disk, const char *uevent)
{
        char path[PATH_MAX], link[PATH_MAX], v[16];
        const char *why = NULL;
        struct dirent *de;
        size_t n = 0;
        DIR *dir;

        if ((size_t)snprintf(path, sizeof(path), SYS_CLASS_BLOCK "/%s/multipath", disk) >= sizeof(path) ||
            !(dir = opendir(path)))
                return "NVMe multipath head without paths";
        while (!why && (de = readdir(dir))) {
                if (de->d_name[0] == '.')
                        continue;
                n++;
                char full[PATH_MAX];
                if ((size_t)snprintf(path, sizeof(path), "%s/multipath/%s", disk, de->d_name) >= sizeof(path) ||
                    (size_t)snprintf(full, sizeof(full), SYS_CLASS_BLOCK "/%s", path) >= sizeof(full) ||
                    !realpath(full, link)) {
                        why = "NVMe multipath path not in sysfs";
                        break;
                }
                /* the controller is the path's parent: <disk>/multipath/<path>/../transport */
                char ctrl[PATH_MAX];
                if ((size_t)snprintf(ctrl, sizeof(ctrl), "%s/..", path) >= sizeof(ctrl) ||
                    sysfs_read(ctrl, "transport", v, sizeof(v)) <= 0 || !streq(v, "pcie"))
                        why = "NVMe over fabrics (or a controller of unknown transport)";
                else if (strstr(link, "/devices/virtual/") || strstr(link, "/nvme-subsystem/"))
                        why = "NVMe multipath path without a controller";
                else
                        why = fallback_untrusted_why(disk, link, uevent);
        }
        closedir(dir);
        return why ? why : n == 0 ? "NVMe multipath head without paths" : NULL;
}

static const char *fallback_untrusted_why(const char *disk, const char *sysfs_link, const char *uevent)
{
        char v[16];

        if (strstr(sysfs_link, "/devices/virtual/nvme-subsystem/"))
                return nvme_head_untrusted_why(disk, uevent);
        if (strstr(sysfs_link, "/devices/virtual/"))
                return "virtual device (loop, nbd, zram...)";
        /* an attribute that cannot be read says nothing: hot-pluggable (fail closed) */
        if (sysfs_read(disk, "removable", v, sizeof(v)) <= 0)
                return "removable flag unreadable";
        if (v[0] != '0')
                return "removable media";
        if (is_hotplug_bus(uevent_value(uevent, "ID_BUS", v, sizeof(v))) || strstr(sysfs_link, "/usb") ||
            strstr(sysfs_link, "/firewire"))
                return "USB or FireWire";
        if (strstr(sysfs_link, "/mmc_host/") && (sysfs_read(disk, "device/type", v, sizeof(v)) <= 0 || streq(v, "SD")))
                return "SD card (or an MMC device of unreadable type)";
        if (strstr(sysfs_link, "/thunderbolt") || behind_removable_port(sysfs_link))
                return "Thunderbolt/USB4 or another hot-plug port";
        return NULL;
}

/* Whether NAME's sysfs directory SUB (holders, slaves) has an entry. */
static bool has_stack_entry(const char *name, const char *sub)
{
        char path[PATH_MAX];
        struct dirent *de;
        bool any = false;
        DIR *dir;

        if (!bsg_join(path, sizeof(path), SYS_CLASS_BLOCK "/", name, "/", sub, NULL) || !(dir = opendir(path)))
                return false;
        while (!any && (de = readdir(dir)))
                any = de->d_name[0] != '.';
        closedir(dir);
        return any;
}

/* Whether another block device is stacked on NAME (dm-multipath, md, dm-crypt...): then it is a
 * member, not a filesystem of its own, even if its first bytes are a btrfs superblock (md metadata
 * 1.0 and multipath paths show the superblock of what they carry), as udev's stock rules treat it. */
static bool has_holders(const char *name)
{
        return has_stack_entry(name, "holders");
}

/* The slave NAME stores its data on, into BUF: for a device-mapper device the one device its table
 * stores data on (dm-verity's data device, not its hash device: bsg_dm_table_data_device()), and
 * only if it is one of its slaves; for another stacked device (md) the one entry of its slaves/
 * directory. False if none, several, unknown or too long: then it stands for no partition. One
 * level: stack_bottom() walks down a dm-on-dm stack. */
static bool data_slave(const char *name, dev_t devnum, char *buf, size_t size)
{
        char path[PATH_MAX];
        struct dirent *de;
        size_t n = 0;
        DIR *dir;

        if ((size_t)snprintf(path, sizeof(path), SYS_CLASS_BLOCK "/%s/dm", name) < sizeof(path) &&
            access(path, F_OK) == 0) {
                _cleanup_free_ char *table = NULL;
                char link[PATH_MAX];
                size_t len = 0;
                dev_t data;
                if (bsg_dm_table(devnum, &table, &len) < 0 || bsg_dm_table_data_device(table, len, &data) < 0)
                        return false;
                const char *slave = bsg_sysname_of_devnum(data, link, sizeof(link));
                if (!slave || (size_t)snprintf(path, sizeof(path), SYS_CLASS_BLOCK "/%s/slaves/%s", name, slave) >=
                                      sizeof(path) ||
                    access(path, F_OK) < 0)
                        return false;
                return (size_t)snprintf(buf, size, "%s", slave) < size;
        }
        if ((size_t)snprintf(path, sizeof(path), SYS_CLASS_BLOCK "/%s/slaves", name) >= sizeof(path) ||
            !(dir = opendir(path)))
                return false;
        while ((de = readdir(dir)))
                if (de->d_name[0] != '.' && n++ == 0 && (size_t)snprintf(buf, size, "%s", de->d_name) >= size)
                        n = 2;
        closedir(dir);
        return n == 1;
}

int bsg_udev_record_of(dev_t devnum, struct bsg_udev_record *ret)
{
        _cleanup_udev_ struct udev *udev = udev_new();
        struct bsg_udev_record rec = {};
        struct udev_device *dev;
        const char *v;

        if (!udev)
                return -ENOMEM;
        dev = udev_device_new_from_devnum(udev, 'b', devnum);
        if (!dev)
                return 0;
        v = udev_device_get_property_value(dev, "BTRFS_SCAN_GATE_DECISION");
        snprintf(rec.decision, sizeof(rec.decision), "%s", v ? v : "");
        v = udev_device_get_property_value(dev, "BTRFS_SCAN_GATE_REASON");
        snprintf(rec.reason, sizeof(rec.reason), "%s", v ? v : "");
        v = udev_device_get_property_value(dev, "BTRFS_SCAN_GATE_SLOT_ACTIVE");
        snprintf(rec.slot_active, sizeof(rec.slot_active), "%s", v ? v : "");
        v = udev_device_get_sysname(dev);
        snprintf(rec.sysname, sizeof(rec.sysname), "%s", v ? v : "");
        udev_device_unref(dev);
        *ret = rec;
        return rec.decision[0] && rec.sysname[0] ? 1 : 0;
}

int bsg_udev_held_unheld(char (*ret)[256], size_t max)
{
        _cleanup_udev_ struct udev *udev = udev_new();
        struct udev_enumerate *en;
        struct udev_list_entry *item;
        size_t n = 0;

        if (!udev || !(en = udev_enumerate_new(udev)))
                return -ENOMEM;
        if (udev_enumerate_add_match_subsystem(en, "block") < 0 ||
            udev_enumerate_add_match_property(en, "BTRFS_SCAN_GATE_REASON", "held") < 0 ||
            udev_enumerate_scan_devices(en) < 0) {
                udev_enumerate_unref(en);
                return -ENOMEM;
        }
        udev_list_entry_foreach(item, udev_enumerate_get_list_entry(en)) {
                const char *syspath = udev_list_entry_get_name(item), *name = strrchr(syspath, '/');
                if (n >= max || !name || strlen(name + 1) >= sizeof(ret[0]) || has_holders(name + 1))
                        continue;
                snprintf(ret[n++], sizeof(ret[0]), "%s", name + 1);
        }
        udev_enumerate_unref(en);
        return (int)n;
}

int bsg_sysfs_reannounce(const char *name)
{
        char path[PATH_MAX], line[128];
        uint8_t u[16];
        _cleanup_close_ int fd = -1;

        if (strchr(name, '/') || streq(name, "..") ||
            (size_t)snprintf(path, sizeof(path), SYS_CLASS_BLOCK "/%s/uevent", name) >= sizeof(path))
                return -EINVAL;
        if (getrandom(u, sizeof(u), GRND_NONBLOCK) != sizeof(u))
                return -errno;
        /* the kernel takes "ACTION UUID KEY=VALUE" (keys and values alphanumeric) */
        int l = snprintf(line, sizeof(line),
                         "change %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x BSG=reannounced",
                         u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                         u[14], u[15]);
        /* O_APPEND: the kernel's store ignores the offset; a test's plain file keeps what it had */
        fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (write(fd, line, (size_t)l) != l)
                return errno ? -errno : -EIO;
        return 0;
}

/* The device number in attribute ATTR of NAME ("MAJ:MIN"); 0 if unknown. */
static dev_t devnum_of_name_attr(const char *name, const char *attr)
{
        char v[64];
        unsigned maj, min;

        if (sysfs_read(name, attr, v, sizeof(v)) <= 0 || sscanf(v, "%u:%u", &maj, &min) != 2)
                return 0;
        return makedev(maj, min);
}

size_t bsg_slaves_devnums(const char *sysname, dev_t *ret, size_t max)
{
        char path[PATH_MAX];
        struct dirent *de;
        size_t n = 0;
        DIR *dir;

        if ((size_t)snprintf(path, sizeof(path), SYS_CLASS_BLOCK "/%s/slaves", sysname) >= sizeof(path) ||
            !(dir = opendir(path)))
                return 0;
        while (n < max && (de = readdir(dir))) {
                char rel[PATH_MAX];
                if (de->d_name[0] != '.' &&
                    (size_t)snprintf(rel, sizeof(rel), "slaves/%s/dev", de->d_name) < sizeof(rel)) {
                        dev_t devnum = devnum_of_name_attr(sysname, rel);
                        if (devnum)
                                ret[n++] = devnum;
                }
        }
        closedir(dir);
        return n;
}

#define STACK_MAX_DEPTH 8

/* The device at the bottom of the stack NAME stands for, into BUF: its data slave's, and while that is
 * stacked itself (dm-linear or dm-crypt over dm-verity over a partition, verity over linear), that
 * one's data slave, down to a device with no slaves. False if a level has no single data slave or the
 * stack is deeper than STACK_MAX_DEPTH: then it stands for no partition (no slot). */
static bool stack_bottom(const char *name, dev_t devnum, char *buf, size_t size)
{
        char cur[256];

        if (!data_slave(name, devnum, buf, size))
                return false;
        for (int depth = 1; depth < STACK_MAX_DEPTH; depth++) {
                if (!has_stack_entry(buf, "slaves")) /* a dm or md device has slaves */
                        return true;
                dev_t below = devnum_of_name_attr(buf, "dev");
                if (!below || (size_t)snprintf(cur, sizeof(cur), "%s", buf) >= sizeof(cur) ||
                    !data_slave(cur, below, buf, size))
                        return false;
        }
        return false;
}

const char *bsg_dm_name_of_devnum(dev_t devnum, char *buf, size_t size)
{
        char path[96];
        _cleanup_close_ int fd = -1;
        ssize_t n;

        devnum_path(path, sizeof(path), devnum, "/dm/name");
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || (n = read(fd, buf, size - 1)) <= 0)
                return NULL;
        buf[n] = '\0';
        if (buf[n - 1] == '\n')
                buf[n - 1] = '\0';
        return buf[0] ? buf : NULL;
}

bool bsg_devnum_held(dev_t devnum)
{
        char link[PATH_MAX];
        const char *name = bsg_sysname_of_devnum(devnum, link, sizeof(link));
        return name && has_holders(name);
}

/* Fills D from /sys/class/block/NAME. Returns 1 (a block device with a node), 0 (not one: skip), or
 * -ENOMEM. */
static int dev_from_sysfs(struct bsg_dev *d, const char *name)
{
        char v[64], uevent[4096], link[PATH_MAX], val[PATH_MAX], disk[PATH_MAX], path[PATH_MAX];
        unsigned maj, min;
        const char *partlabel, *devname;
        ssize_t l;

        if (sysfs_read(name, "dev", v, sizeof(v)) <= 0 || sscanf(v, "%u:%u", &maj, &min) != 2 || maj == 0)
                return 0;
        if (sysfs_read(name, "uevent", uevent, sizeof(uevent)) < 0)
                uevent[0] = '\0';
        bsg_join(path, sizeof(path), SYS_CLASS_BLOCK "/", name, NULL);
        l = readlink(path, link, sizeof(link) - 1);
        if (l < 0)
                return 0; /* vanished since readdir() */
        link[l] = '\0';

        d->sysname = strdup(name);
        d->syspath = strdup(link);
        devname = uevent_value(uevent, "DEVNAME", val, sizeof(val));
        if (!devname)
                devname = name;
        if (devname[0] == '/')
                d->devnode = strdup(devname);
        else if (asprintf(&d->devnode, "/dev/%s", devname) < 0)
                d->devnode = NULL;
        if (!d->sysname || !d->syspath || !d->devnode)
                return -ENOMEM;
        d->devnum = makedev(maj, min);

        /* udev's ID_PART_ENTRY_NAME comes encoded, the kernel's PARTNAME raw: raw from here on */
        partlabel = uevent_value(uevent, "ID_PART_ENTRY_NAME", val, sizeof(val));
        if (partlabel)
                bsg_udev_decode(val);
        else
                partlabel = uevent_value(uevent, "PARTNAME", val, sizeof(val));
        if (partlabel && !(d->partlabel = strdup(partlabel)))
                return -ENOMEM;
        if (uevent_value(uevent, "ID_PART_ENTRY_UUID", val, sizeof(val)) && !(d->partuuid = strdup(val)))
                return -ENOMEM;

        /* a partition's disk is the directory above it in sysfs */
        snprintf(disk, sizeof(disk), "%s", name);
        d->partition = uevent_value(uevent, "DEVTYPE", v, sizeof(v)) && streq(v, "partition");
        if (d->partition && uevent_value(uevent, "PARTN", v, sizeof(v)))
                d->partn = (unsigned)strtoul(v, NULL, 10);
        if (d->partition) {
                char *slash = strrchr(link, '/');
                if (slash) {
                        *slash = '\0';
                        const char *parent = strrchr(link, '/');
                        snprintf(disk, sizeof(disk), "%s", parent ? parent + 1 : link);
                        *slash = '/';
                }
        }
        /* a zoned device (host-aware, host-managed): the kernel reads its superblock from the log
         * zones, not at 64 KiB (issue 18 case 6) */
        if (sysfs_read(disk, "queue/zoned", v, sizeof(v)) > 0 && !streq(v, "none"))
                d->zoned = true;
        if (sysfs_read(disk, "diskseq", v, sizeof(v)) > 0)
                d->diskseq = strtoull(v, NULL, 10);

        if (sysfs_read(name, "size", v, sizeof(v)) > 0) {
                d->size = strtoull(v, NULL, 10) * 512;
                if (d->size == 0) {
                        d->skip_read = true;
                        d->skip_read_why = "no media";
                } else if (d->size < BSG_SUPER_END) {
                        d->skip_read = true;
                        d->skip_read_why = "smaller than 68 KiB";
                }
        }
        if (sysfs_read(name, "dm/suspended", v, sizeof(v)) > 0 && v[0] == '1') {
                d->skip_read = true;
                d->skip_read_why = "suspended device-mapper device";
        }
        if (has_holders(name)) {
                d->held = true;
                d->skip_read = true;
                d->skip_read_why = "member of a stacked device (holders: multipath, md, dm)";
        }
        /* a stacked device that stores its data on one slave (dm-verity over its data partition,
         * dm-crypt, dm-linear over a partition or a disk), or on a stack of such (dm-linear over
         * dm-verity over a partition): it stands for the device at the bottom (its slot) */
        char slave[256];
        if (stack_bottom(name, d->devnum, slave, sizeof(slave))) {
                if (!(d->data_slave = strdup(slave)))
                        return -ENOMEM;
                /* its slot is its slave partition's (the kernel's PARTNAME), its disk the slave's */
                char slave_uevent[4096], slave_link[PATH_MAX];
                if (!d->partlabel && sysfs_read(slave, "uevent", slave_uevent, sizeof(slave_uevent)) > 0 &&
                    uevent_value(slave_uevent, "PARTNAME", path, sizeof(path)) && !(d->partlabel = strdup(path)))
                        return -ENOMEM;
                snprintf(path, sizeof(path), SYS_CLASS_BLOCK "/%s", slave);
                ssize_t sl = readlink(path, slave_link, sizeof(slave_link) - 1);
                if (sl > 0) {
                        slave_link[sl] = '\0';
                        char *slash = strrchr(slave_link, '/');
                        if (sysfs_read(slave, "partition", v, sizeof(v)) > 0 && slash)
                                *slash = '\0';
                        if (!(d->disk = strdup(slave_link)))
                                return -ENOMEM;
                }
        }
        return 1;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A whole disk the kernel has partitions of (whose table trust.c may read for PARTUUIDs). A
 * partition's sysfs path is its disk's path plus "/NAME": sort the paths of the partitions' parents,
 * look each device up. */
static void mark_partitioned_disks(struct bsg_devs *devs)
{
        _cleanup_free_ char **parents = calloc(devs->n + 1, sizeof(char *));
        _cleanup_free_ char *buf = NULL;
        size_t m = 0, total = 0, off = 0;

        if (!parents)
                return;
        for (size_t i = 0; i < devs->n; i++)
                total += strlen(devs->v[i].syspath) + 1;
        buf = malloc(total + 1);
        if (!buf)
                return;
        for (size_t i = 0; i < devs->n; i++) {
                const char *sp = devs->v[i].syspath, *slash = strrchr(sp, '/');
                if (!slash || slash == sp)
                        continue;
                memcpy(buf + off, sp, (size_t)(slash - sp));
                buf[off + (size_t)(slash - sp)] = '\0';
                parents[m++] = buf + off;
                off += (size_t)(slash - sp) + 1;
        }
        qsort(parents, m, sizeof(char *), cmp_str);
        for (size_t i = 0; i < devs->n; i++) {
                const char *key = devs->v[i].syspath;
                if (bsearch(&key, parents, m, sizeof(char *), cmp_str))
                        devs->v[i].partitioned = true;
        }
}

int bsg_devs_enumerate(struct bsg_devs *ret_devs)
{
        DIR *dir = opendir(SYS_CLASS_BLOCK);
        struct bsg_devs devs = {0};
        struct dirent *de;

        if (!dir)
                return -errno;
        while ((de = readdir(dir))) {
                struct bsg_dev *d;
                int r;

                if (de->d_name[0] == '.')
                        continue;
                d = devs_append(&devs);
                if (!d) {
                        closedir(dir);
                        bsg_devs_free(&devs);
                        return -ENOMEM;
                }
                r = dev_from_sysfs(d, de->d_name);
                if (r < 0) {
                        closedir(dir);
                        bsg_devs_free(&devs);
                        return r;
                }
                if (r == 0) {
                        dev_done(d);
                        devs.n--;
                }
        }
        closedir(dir);

        mark_partitioned_disks(&devs);
        *ret_devs = devs;
        return 0;
}

void bsg_devs_add_udev_properties(struct bsg_devs *devs, bool all)
{
        _cleanup_udev_ struct udev *udev = NULL;

        for (size_t i = 0; i < devs->n; i++) {
                struct bsg_dev *d = &devs->v[i];
                struct udev_device *dev;
                const char *v;

                /* sysfs gave the label of every GPT partition (PARTNAME) and the bus through the
                 * device's path: the database is needed for a label-less partition (MBR, or an
                 * event's device not yet in sysfs) and for partition UUIDs */
                if (!d->sysname || (!all && (d->parse_result != 0 || !d->partition || d->partlabel)))
                        continue;
                if (!udev && !(udev = udev_new()))
                        return;
                dev = udev_device_new_from_subsystem_sysname(udev, "block", d->sysname);
                if (!dev)
                        continue;
                v = udev_device_get_property_value(dev, "ID_PART_ENTRY_NAME");
                if (!d->partlabel && !isempty(v)) {
                        /* NULL on ENOMEM: said in names_lost, which narrows trust */
                        if (!(d->partlabel = strdup(v)))
                                devs->names_lost = true;
                        bsg_udev_decode(d->partlabel);
                }
                v = udev_device_get_property_value(dev, "ID_PART_ENTRY_UUID");
                if (!d->partuuid && !isempty(v) && !(d->partuuid = strdup(v)))
                        devs->names_lost = true;
                v = udev_device_get_property_value(dev, "ID_BUS");
                if (is_hotplug_bus(v))
                        d->bus_hotplug = true;
                udev_device_unref(dev);
        }
}

/* The storage under disk DISK: "loop:DEV:INO:OFFSET" of a loop device's backing file, else the
 * disk's wwid, else its serial. Returns a new string or NULL. */
static char *disk_storage_id(const char *disk)
{
        char v[PATH_MAX], off[64] = "0";
        char *id = NULL;
        struct stat st;

        if (sysfs_read(disk, "loop/backing_file", v, sizeof(v)) > 0) {
                if (stat(v, &st) < 0)
                        return NULL; /* deleted or unreachable: unknown, not equal to anything */
                (void)sysfs_read(disk, "loop/offset", off, sizeof(off));
                if (asprintf(&id, "loop:%u:%u:%llu:%s", major(st.st_dev), minor(st.st_dev),
                             (unsigned long long)st.st_ino, off) < 0)
                        return NULL;
                return id;
        }
        static const char *const attrs[][2] = {
                {"wwid", "wwid"}, {"device/wwid", "wwid"}, {"serial", "serial"}, {"device/serial", "serial"},
        };
        for (size_t k = 0; k < ELEMENTSOF(attrs); k++) {
                ssize_t l = sysfs_read(disk, attrs[k][0], v, sizeof(v));
                while (l > 0 && (v[l - 1] == ' ' || v[l - 1] == '\n'))
                        v[--l] = '\0';
                if (l <= 0)
                        continue;
                if (asprintf(&id, "%s:%s", attrs[k][1], v) < 0)
                        return NULL;
                return id;
        }
        return NULL;
}

void bsg_devs_add_storage_ids(struct bsg_devs *devs)
{
        for (size_t i = 0; i < devs->n; i++) {
                struct bsg_dev *d = &devs->v[i];
                char disk[PATH_MAX], start[64];
                _cleanup_free_ char *id = NULL;

                if (d->parse_result != 0 || !d->sysname || !d->syspath || d->storage_id)
                        continue;
                snprintf(disk, sizeof(disk), "%s", d->sysname);
                if (d->partition) {
                        const char *slash = strrchr(d->syspath, '/'), *parent = NULL;
                        for (const char *p = d->syspath; slash && p < slash; p++)
                                if (*p == '/')
                                        parent = p + 1;
                        if (!parent || (size_t)(slash - parent) >= sizeof(disk))
                                continue;
                        memcpy(disk, parent, (size_t)(slash - parent));
                        disk[slash - parent] = '\0';
                        if (sysfs_read(d->sysname, "start", start, sizeof(start)) <= 0)
                                continue;
                }
                id = disk_storage_id(disk);
                if (!id)
                        continue;
                if (d->partition) {
                        char *full = NULL;
                        if (asprintf(&full, "%s:%s", id, start) < 0)
                                continue;
                        free(id);
                        id = full;
                }
                d->storage_id = TAKE_PTR(id);
        }
}

/* NAME's device number (sysfs "dev"); 0 if unknown. */
static dev_t devnum_of_name(const char *name)
{
        char v[64];
        unsigned maj, min;

        if (sysfs_read(name, "dev", v, sizeof(v)) <= 0 || sscanf(v, "%u:%u", &maj, &min) != 2)
                return 0;
        return makedev(maj, min);
}

static bool devnum_named(dev_t devnum, const dev_t *named, size_t n_named)
{
        for (size_t i = 0; devnum && i < n_named; i++)
                if (named[i] == devnum)
                        return true;
        return false;
}

const char *bsg_disk_key(const char *syspath)
{
        const char *p = syspath ? strstr(syspath, "/devices/") : NULL;
        return p ? p : syspath;
}

static bool disk_listed(const char *disk, const char *const *list, size_t n)
{
        const char *k = bsg_disk_key(disk);
        for (size_t i = 0; k && i < n; i++)
                if (list[i] && streq(bsg_disk_key(list[i]), k))
                        return true;
        return false;
}

#define TRUST_MAX_DEPTH 8

/* The trust of the block device NAME from sysfs. IN NULL: its class only (the fallback's test, no
 * configuration, no anchor), which is what a device's own event records. *ret_why says why (a static
 * string). */
static bool trusted_by_name(const char *name, bool bus_hotplug, const struct bsg_trust_inputs *in, int depth,
                            const char **ret_why)
{
        char path[PATH_MAX], link[PATH_MAX], disk[PATH_MAX], disk_link[PATH_MAX], uevent[4096], v[16];
        struct dirent *de;
        DIR *dir;
        ssize_t l;

        *ret_why = "not in sysfs";
        if (depth > TRUST_MAX_DEPTH) {
                *ret_why = "stacked too deep";
                return false;
        }
        if ((size_t)snprintf(path, sizeof(path), SYS_CLASS_BLOCK "/%s", name) >= sizeof(path) ||
            (l = readlink(path, link, sizeof(link) - 1)) < 0)
                return false;
        link[l] = '\0';
        /* a partition's disk is the directory above it */
        snprintf(disk, sizeof(disk), "%s", name);
        snprintf(disk_link, sizeof(disk_link), "%s", link);
        if (sysfs_read(name, "partition", v, sizeof(v)) > 0) {
                char *slash = strrchr(link, '/');
                if (slash) {
                        *slash = '\0';
                        const char *parent = strrchr(link, '/');
                        snprintf(disk, sizeof(disk), "%s", parent ? parent + 1 : link);
                        snprintf(disk_link, sizeof(disk_link), "%s", link);
                        *slash = '/';
                }
        }
        /* no trusted_disk=: no "dev" file to read */
        if (in && in->n_named && (devnum_named(devnum_of_name(name), in->named, in->n_named) ||
                                  devnum_named(devnum_of_name(disk), in->named, in->n_named))) {
                *ret_why = "named by trusted_disk=";
                return true;
        }
        /* dm, md: trusted when every slave is (a partition on one: its disk's slaves) */
        if ((size_t)snprintf(path, sizeof(path), SYS_CLASS_BLOCK "/%s/slaves", disk) < sizeof(path) &&
            (dir = opendir(path))) {
                size_t n_slaves = 0;
                bool all = true;
                const char *why = NULL;
                while (all && (de = readdir(dir))) {
                        if (de->d_name[0] == '.')
                                continue;
                        n_slaves++;
                        all = trusted_by_name(de->d_name, false, in, depth + 1, &why);
                }
                closedir(dir);
                if (n_slaves > 0) {
                        *ret_why = all ? "stacked over trusted storage" : "stacked over untrusted storage";
                        return all;
                }
        }
        /* the boot names disks: nothing else is trusted (the fallback is not asked) */
        if (in && in->n_anchor) {
                bool on = disk_listed(disk_link, in->anchor_disks, in->n_anchor);
                *ret_why = on ? WHY_ON_ANCHOR : WHY_OFF_ANCHOR;
                return on;
        }
        if (in && in->narrow) {
                *ret_why = "the disk that booted could not be worked out: only trusted_disk=";
                return false;
        }
        if (bus_hotplug) {
                *ret_why = "USB or FireWire (ID_BUS)";
                return false;
        }
        if (sysfs_read(name, "uevent", uevent, sizeof(uevent)) < 0)
                uevent[0] = '\0';
        const char *why = fallback_untrusted_why(disk, link, uevent);
        *ret_why = why ? why : "fallback: fixed storage";
        return !why;
}

/* Whether PATH is one of LIST's ':'-separated entries. */
static bool path_listed(const char *list, const char *path)
{
        size_t l = path ? strlen(path) : 0;

        for (const char *p = list; p && *p && l;) {
                size_t n = strcspn(p, ":");
                if (n == l && strncmp(p, path, l) == 0)
                        return true;
                p += n + (p[n] == ':');
        }
        return false;
}

bool is_trusted_storage(const struct bsg_trust_facts *f, const struct bsg_trust_inputs *in, const char **ret_why,
                        bool *ret_by_config)
{
        char link[PATH_MAX];
        const char *name;

        *ret_by_config = false;
        /* the test build's seam (files stand in for disks); the installed helper has none */
        if (path_listed(bsg_trusted_paths_seam(), f->devnode)) {
                *ret_why = "named by the test seam";
                return true;
        }
        if (devnum_named(f->devnum, in->named, in->n_named) ||
            (f->disk && !f->stacked && disk_listed(f->disk, in->named_disks, in->n_named_disks))) {
                *ret_why = "named by trusted_disk=";
                *ret_by_config = true;
                return true;
        }
        if (f->stacked || !f->class_known) {
                /* a stacked device is its slaves (a handful per machine), an entry of an older helper
                 * has no class: asked of sysfs */
                if (!f->devnum || !(name = bsg_sysname_of_devnum(f->devnum, link, sizeof(link)))) {
                        *ret_why = "not in sysfs";
                        return false;
                }
                bool t = trusted_by_name(name, false, in, 0, ret_why);
                *ret_by_config = t && streq(*ret_why, "named by trusted_disk=");
                return t;
        }
        if (in->n_anchor) {
                bool on = f->disk && disk_listed(f->disk, in->anchor_disks, in->n_anchor);
                /* no exception for a member of root=UUID=: its fsid, devid and generation are what
                 * any media can copy, and a disk that looks fixed may be an eSATA or hot-swap bay (a
                 * multi-disk root beyond the anchor disk needs trusted_disk=; trust.c says so) */
                *ret_why = on ? WHY_ON_ANCHOR : WHY_OFF_ANCHOR;
                return on;
        }
        if (in->narrow) {
                *ret_why = "the disk that booted could not be worked out: only trusted_disk=";
                return false;
        }
        *ret_why = f->class_fixed ? "fallback: fixed storage" : f->class_why ? f->class_why : "not fixed storage";
        return f->class_fixed;
}

/* The class of D (sysfs, ID_BUS): the fallback's test, once per device. */
static void dev_set_class(struct bsg_dev *d)
{
        char path[PATH_MAX];
        DIR *dir;
        struct dirent *de;

        d->class_known = true;
        if (!d->sysname) {
                d->class_fixed = false;
                d->class_why = "not in sysfs";
                return;
        }
        d->class_fixed = trusted_by_name(d->sysname, d->bus_hotplug, NULL, 0, &d->class_why);
        /* a stacked device (its own slaves/, or a partition on one) */
        const char *disk = d->sysname;
        char buf[PATH_MAX];
        if (d->partition && d->syspath) {
                const char *slash = strrchr(d->syspath, '/'), *parent = NULL;
                for (const char *p = d->syspath; slash && p < slash; p++)
                        if (*p == '/')
                                parent = p + 1;
                if (parent && (size_t)(slash - parent) < sizeof(buf)) {
                        memcpy(buf, parent, (size_t)(slash - parent));
                        buf[slash - parent] = '\0';
                        disk = buf;
                }
        }
        d->stacked = false;
        if ((size_t)snprintf(path, sizeof(path), SYS_CLASS_BLOCK "/%s/slaves", disk) < sizeof(path) &&
            (dir = opendir(path))) {
                while (!d->stacked && (de = readdir(dir)))
                        d->stacked = de->d_name[0] != '.';
                closedir(dir);
        }
}

/* /sys/dev/block/MAJ:MIN/ATTR as a number (OF_DISK and a partition: its disk's), 0 if unknown. */
static uint64_t devnum_attr_u64(dev_t devnum, const char *attr, bool of_disk)
{
        char path[96], v[32];
        struct stat st;
        int fd;
        ssize_t l;

        devnum_path(path, sizeof(path), devnum, "/partition");
        bool up = of_disk && stat(path, &st) == 0;
        char rel[64];
        bsg_join(rel, sizeof(rel), up ? "/../" : "/", attr, NULL);
        devnum_path(path, sizeof(path), devnum, rel);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
                return 0;
        l = read(fd, v, sizeof(v) - 1);
        close(fd);
        if (l <= 0)
                return 0;
        v[l] = '\0';
        return strtoull(v, NULL, 10);
}

uint64_t bsg_devnum_diskseq(dev_t devnum)
{
        return devnum_attr_u64(devnum, "diskseq", true);
}

uint64_t bsg_devnum_size(dev_t devnum)
{
        return devnum_attr_u64(devnum, "size", false) * 512;
}

int bsg_devnum_class(dev_t devnum, bool *ret_fixed, const char **ret_why, bool *ret_stacked)
{
        struct bsg_dev d = {0};
        char link[PATH_MAX];
        const char *name = bsg_sysname_of_devnum(devnum, link, sizeof(link));
        int r;

        if (!name)
                return -ENODEV;
        r = dev_from_sysfs(&d, name);
        if (r <= 0) {
                dev_done(&d);
                return r < 0 ? r : -ENODEV;
        }
        dev_set_class(&d);
        *ret_fixed = d.class_fixed;
        *ret_why = d.class_why;
        *ret_stacked = d.stacked;
        dev_done(&d);
        return 0;
}

bool bsg_dev_class_fixed(struct bsg_dev *d)
{
        dev_set_class(d);
        return d->class_fixed;
}

void bsg_devs_set_class(struct bsg_devs *devs)
{
        for (size_t i = 0; i < devs->n; i++)
                dev_set_class(&devs->v[i]);
}

bool bsg_devnum_is_trusted(dev_t devnum, const struct bsg_trust_inputs *in, bool *ret_by_config)
{
        char link[PATH_MAX];
        const char *why = NULL, *name = bsg_sysname_of_devnum(devnum, link, sizeof(link));
        bool trusted = name && trusted_by_name(name, false, in, 0, &why);

        *ret_by_config = trusted && streq(why, "named by trusted_disk=");
        return trusted;
}

char *bsg_disk_of_devnum(dev_t devnum)
{
        char path[64], link[PATH_MAX];
        ssize_t l;

        devnum_path(path, sizeof(path), devnum, "");
        l = readlink(path, link, sizeof(link) - 1);
        if (l <= 0)
                return NULL;
        link[l] = '\0';
        devnum_path(path, sizeof(path), devnum, "/partition");
        if (access(path, F_OK) == 0) {
                char *slash = strrchr(link, '/');
                if (slash)
                        *slash = '\0';
        }
        return strdup(link);
}

int bsg_devs_find_or_add(struct bsg_devs *devs, const char *devnode)
{
        struct stat st;
        bool have_st = stat(devnode, &st) == 0 && S_ISBLK(st.st_mode);
        const char *env_devname = getenv("DEVNAME");
        struct bsg_dev *d;

        for (size_t i = 0; i < devs->n; i++)
                if (streq(devs->v[i].devnode, devnode) || (have_st && devs->v[i].devnum == st.st_rdev)) {
                        d = &devs->v[i];
                        goto found;
                }
        d = devs_append(devs);
        if (!d)
                return -ENOMEM;
        d->devnode = strdup(devnode);
        if (!d->devnode)
                return -ENOMEM;
        if (have_st)
                d->devnum = st.st_rdev;
found:
        /* the event's own properties are fresher than the database */
        if (env_devname && (streq(env_devname, devnode) || streq_ptr(d->devnode, env_devname))) {
                const char *v = getenv("ID_PART_ENTRY_NAME");
                bool encoded = !isempty(v);
                if (!encoded)
                        v = getenv("PARTNAME");
                if (!isempty(v)) {
                        char *s = strdup(v);
                        if (!s)
                                return -ENOMEM;
                        if (encoded)
                                bsg_udev_decode(s);
                        free(d->partlabel);
                        d->partlabel = s;
                }
                v = getenv("ID_PART_ENTRY_UUID");
                if (!isempty(v)) {
                        char *u = strdup(v);
                        if (!u)
                                return -ENOMEM;
                        free(d->partuuid);
                        d->partuuid = u;
                }
                v = getenv("ID_BUS");
                if (is_hotplug_bus(v))
                        d->bus_hotplug = true;
        }
        /* the event's name for the device is the one the kernel actions use */
        if (!streq(d->devnode, devnode)) {
                char *s = strdup(devnode);
                if (!s)
                        return -ENOMEM;
                free(d->devnode);
                d->devnode = s;
        }
        /* the event names the device: read it even if it would be skipped in a sweep, but never
         * open a device without media (an empty card reader, a drive's open tray), and never a
         * member of a stacked device (the partition under dm-verity: its holder is decided, and a
         * read here would make it look like a copy of it) */
        d->skip_read = d->skip_read_why && (streq(d->skip_read_why, "no media") || d->held);
        return (int)(d - devs->v);
}

void bsg_devs_add_table_partuuids(struct bsg_devs *devs)
{
        for (size_t i = 0; i < devs->n; i++) {
                const struct bsg_dev *disk = &devs->v[i];
                if (!disk->part_table || !disk->syspath)
                        continue;
                size_t l = strlen(disk->syspath);
                for (size_t k = 0; k < devs->n; k++) {
                        struct bsg_dev *p = &devs->v[k];
                        /* a partition's sysfs path is its disk's plus "/NAME" */
                        if (!p->partition || p->partuuid || !p->partn || !p->syspath ||
                            strncmp(p->syspath, disk->syspath, l) != 0 || p->syspath[l] != '/' ||
                            strchr(p->syspath + l + 1, '/'))
                                continue;
                        for (const char *line = disk->part_table; *line;) {
                                unsigned n;
                                char uuid[64];
                                if (sscanf(line, "%u %63s", &n, uuid) == 2 && n == p->partn) {
                                        if (!(p->partuuid = strdup(uuid))) /* narrows trust */
                                                devs->names_lost = true;
                                        break;
                                }
                                line += strcspn(line, "\n");
                                line += *line == '\n';
                        }
                }
        }
}

const char *bsg_sysname_of_devnum(dev_t devnum, char *buf, size_t size)
{
        char path[64];

        devnum_path(path, sizeof(path), devnum, "");
        ssize_t l = readlink(path, buf, size - 1);
        if (l <= 0)
                return NULL;
        buf[l] = '\0';
        const char *name = strrchr(buf, '/');
        return name ? name + 1 : buf;
}

int bsg_devs_add_devnum(struct bsg_devs *devs, dev_t devnum)
{
        char link[PATH_MAX];
        const char *name = bsg_sysname_of_devnum(devnum, link, sizeof(link));

        if (!name)
                return -ENODEV;
        struct bsg_dev *d = devs_append(devs);
        if (!d)
                return -ENOMEM;
        int r = dev_from_sysfs(d, name);
        if (r <= 0 || d->devnum != devnum) {
                dev_done(d);
                devs->n--;
                return r < 0 ? r : -ENODEV;
        }
        return (int)(d - devs->v);
}

int bsg_devnum_compare(const void *a, const void *b)
{
        dev_t x = *(const dev_t *)a, y = *(const dev_t *)b;
        return x < y ? -1 : x > y;
}

/* A decimal number of at most 10 digits that fits an unsigned (not strtoul(): sysfs has one of these
 * per block device, and every event reads them all). */
static const char *parse_uint(const char *s, unsigned *ret)
{
        uint64_t v = 0;
        const char *p = s;

        while (*p >= '0' && *p <= '9' && p - s < 11)
                v = v * 10 + (uint64_t)(*p++ - '0');
        if (p == s || p - s > 10 || v > UINT_MAX)
                return NULL;
        *ret = (unsigned)v;
        return p;
}

int bsg_parse_devnum(const char *s, unsigned *ret_major, unsigned *ret_minor, const char **ret_end)
{
        unsigned maj, min;
        const char *e = parse_uint(s, &maj);

        if (!e || *e != ':' || !(e = parse_uint(e + 1, &min)))
                return -EINVAL;
        *ret_major = maj;
        *ret_minor = min;
        if (ret_end)
                *ret_end = e;
        return 0;
}

int bsg_sysfs_devnums(dev_t **ret_devnums, size_t *ret_n)
{
        _cleanup_free_ dev_t *v = NULL;
        size_t n = 0, cap = 0;
        DIR *dir = opendir("/sys/dev/block");
        struct dirent *de;

        if (!dir)
                return -errno;
        while ((de = readdir(dir))) {
                unsigned maj, min;
                const char *end;
                if (bsg_parse_devnum(de->d_name, &maj, &min, &end) < 0 || *end)
                        continue;
                if (n == cap) {
                        dev_t *nv = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*nv));
                        if (!nv) {
                                closedir(dir);
                                return -ENOMEM;
                        }
                        v = nv;
                }
                v[n++] = makedev(maj, min);
        }
        closedir(dir);
        *ret_devnums = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

int bsg_devs_add_event(struct bsg_devs *devs, const char *devnode)
{
        struct stat st;
        dev_t devnum = 0;
        const char *maj = getenv("MAJOR"), *min = getenv("MINOR"), *env_devname = getenv("DEVNAME");

        if (stat(devnode, &st) == 0 && S_ISBLK(st.st_mode))
                devnum = st.st_rdev;
        else if (maj && min && env_devname && streq(env_devname, devnode))
                devnum = makedev((unsigned)strtoul(maj, NULL, 10), (unsigned)strtoul(min, NULL, 10));
        if (devnum) {
                int r = bsg_devs_add_devnum(devs, devnum);
                if (r < 0 && r != -ENODEV)
                        return r;
        }
        int r = bsg_devs_find_or_add(devs, devnode);
        if (r >= 0 && !devs->v[r].devnum)
                devs->v[r].devnum = devnum;
        return r;
}

struct read_record {
        uint32_t index;
        uint32_t kind;  /* 0: the superblock; 1: the partition table ("PARTN UUID" lines in buf) */
        int32_t result; /* bytes read or -errno */
        uint32_t carries_table; /* kind 0: the whole disk's own bytes carry a partition table */
        uint8_t buf[BSG_SUPER_SIZE];
};

static ssize_t write_all(int fd, const void *p, size_t len)
{
        const uint8_t *b = p;
        size_t done = 0;
        while (done < len) {
                ssize_t n = write(fd, b + done, len - done);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                done += (size_t)n;
        }
        return (ssize_t)done;
}

/* The partition table of the whole disk open at FD, as libblkid reads it (GPT or MBR): "PARTN UUID"
 * lines into OUT. Returns their length. */
static size_t probe_table(int fd, char *out, size_t size)
{
        blkid_probe pr = blkid_new_probe();
        size_t len = 0;

        if (!pr)
                return 0;
        /* GPT and MBR only: not every parser libblkid has over media nobody vouches for */
        char *types[] = {"gpt", "dos", NULL};
        if (blkid_probe_set_device(pr, fd, 0, 0) == 0 && blkid_probe_enable_superblocks(pr, 0) == 0 &&
            blkid_probe_enable_partitions(pr, 1) == 0 &&
            blkid_probe_filter_partitions_type(pr, BLKID_FLTR_ONLYIN, types) == 0) {
                blkid_partlist ls = blkid_probe_get_partitions(pr);
                int n = ls ? blkid_partlist_numof_partitions(ls) : 0;
                for (int i = 0; i < n; i++) {
                        blkid_partition p = blkid_partlist_get_partition(ls, i);
                        const char *u = p ? blkid_partition_get_uuid(p) : NULL;
                        if (isempty(u))
                                continue;
                        int w = snprintf(out + len, size - len, "%d %s\n", blkid_partition_get_partno(p), u);
                        if (w < 0 || (size_t)w >= size - len)
                                break;
                        len += (size_t)w;
                }
        }
        blkid_free_probe(pr);
        return len;
}

/* Whether the whole disk open at FD carries a partition table: its own bytes, as libblkid reads them
 * with every partition table parser it has (a table nobody vouches for only ever keeps a superblock
 * out). Not the kernel's partitions: those are what it read last and stay until a re-read (BLKRRPART,
 * which fails while the disk is busy); mkfs.btrfs zeroes the first 2 MiB of a whole disk, table
 * included, so a btrfs superblock beside a table is older than the table. Returns 1 (a table, or two
 * that disagree), 0 (none), or -EAGAIN (the probe failed, out of memory or an error reading the
 * table's sectors: the device has a btrfs superblock and may be anyone's twin, so it is in doubt as
 * after a timeout, not merely unreadable). */
static int carries_table(int fd)
{
        _cleanup_blkid_probe_ blkid_probe pr = blkid_new_probe();

        if (!pr || blkid_probe_set_device(pr, fd, 0, 0) != 0 || blkid_probe_enable_superblocks(pr, 0) != 0 ||
            blkid_probe_enable_partitions(pr, 1) != 0)
                return -EAGAIN;
        int r = blkid_do_safeprobe(pr);
        return r == 1 ? 0 : r == 0 || r == -2 ? 1 : -EAGAIN;
}

/* The child: one open and one pread per device of ORDER[START..N), results streamed into the pipe; a
 * disk marked probe_table has its partition table read on the same descriptor, sent as a second
 * record. */
_Noreturn static void read_child(int out, const struct bsg_devs *devs, const size_t *order, size_t start, size_t n)
{
        static struct read_record rec;

        /* never hold udev's stdout/stderr open: udev waits for them to close */
        close(STDOUT_FILENO);
        close(STDERR_FILENO);
        for (size_t k = start; k < n; k++) {
                size_t i = order[k];
                memset(&rec, 0, sizeof(rec));
                rec.index = (uint32_t)i;
                int fd = open(devs->v[i].devnode, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        rec.result = -errno;
                else {
                        ssize_t r;
                        do
                                r = pread(fd, rec.buf, sizeof(rec.buf), BSG_SUPER_OFFSET);
                        while (r < 0 && errno == EINTR);
                        rec.result = r < 0 ? -errno : (int32_t)r;
                        /* a btrfs magic on a whole disk: is there a partition table beside it? */
                        if (r == (ssize_t)sizeof(rec.buf) && !devs->v[i].partition &&
                            memcmp(rec.buf + 0x40, "_BHRfS_M", 8) == 0) {
                                int t = carries_table(fd);
                                if (t < 0)
                                        rec.result = t;
                                else
                                        rec.carries_table = (uint32_t)t;
                        }
                }
                if (write_all(out, &rec, sizeof(rec)) < 0)
                        _exit(1);
                if (fd >= 0 && devs->v[i].probe_table) {
                        memset(&rec, 0, sizeof(rec));
                        rec.index = (uint32_t)i;
                        rec.kind = 1;
                        rec.result = (int32_t)probe_table(fd, (char *)rec.buf, sizeof(rec.buf));
                        if (write_all(out, &rec, sizeof(rec)) < 0)
                                _exit(1);
                }
                if (fd >= 0)
                        close(fd);
        }
        _exit(0);
}

#define BLKID_BUFFER_SIZE (1024 * 1024)

static int blkid_on_buffer(struct bsg_dev *d, const uint8_t *buf)
{
        _cleanup_close_ int fd = memfd_create("bsg-superblock", MFD_CLOEXEC);
        _cleanup_blkid_probe_ blkid_probe pr = NULL;
        const char *filter[] = {"btrfs", NULL};
        const char *v;

        if (fd < 0)
                return -errno;
        /* sparse: only the superblock is data. libblkid (2.38) finds no btrfs on anything below 1 MiB. */
        if (ftruncate(fd, BLKID_BUFFER_SIZE) < 0 || pwrite(fd, buf, BSG_SUPER_SIZE, BSG_SUPER_OFFSET) != BSG_SUPER_SIZE)
                return -errno;
        pr = blkid_new_probe();
        if (!pr)
                return -ENOMEM;
        if (blkid_probe_set_device(pr, fd, 0, BLKID_BUFFER_SIZE) < 0)
                return -EIO;
        blkid_probe_enable_superblocks(pr, 1);
        blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_UUID | BLKID_SUBLKS_LABEL);
        blkid_probe_filter_superblocks_type(pr, BLKID_FLTR_ONLYIN, (char **)filter);
        if (blkid_do_safeprobe(pr) != 0)
                return -ENOMSG;
        if (blkid_probe_lookup_value(pr, "TYPE", &v, NULL) == 0)
                d->blkid_type = strdup(v);
        if (blkid_probe_lookup_value(pr, "UUID", &v, NULL) == 0)
                d->blkid_uuid = strdup(v);
        if (blkid_probe_lookup_value(pr, "UUID_SUB", &v, NULL) == 0)
                d->blkid_uuid_sub = strdup(v);
        if (blkid_probe_lookup_value(pr, "LABEL", &v, NULL) == 0)
                d->blkid_label = strdup(v);
        return 0;
}

static void classify(struct bsg_dev *d, const uint8_t *buf, int result)
{
        d->read_result = result;
        if (result < 0) {
                d->parse_result = BSG_SB_NOT_BTRFS;
                d->problem = result == -ETIMEDOUT ? "read did not finish in time"
                             : result == -EAGAIN  ? "partition table probe failed"
                                                  : "read failed";
                return;
        }
        d->parse_result = bsg_superblock_parse(buf, (size_t)result, &d->sb, &d->problem);
        if (d->parse_result == BSG_SB_TRUNCATED && result >= 0x48 && memcmp(buf + 0x40, "_BHRfS_M", 8) == 0)
                d->parse_result = BSG_SB_INVALID; /* a btrfs superblock cut short */
        if (d->parse_result == 0) {
                (void)blkid_on_buffer(d, buf);
                free(d->raw);
                d->raw = malloc(BSG_SUPER_SIZE);
                if (d->raw)
                        memcpy(d->raw, buf, BSG_SUPER_SIZE);
        }
}

/* The reads could not start (out of memory, no pipe, no fork): every device that was to be read is
 * what a read that did not finish leaves, in doubt, never "not btrfs". Returns ERR. */
static int unread_in_doubt(struct bsg_devs *devs, int err)
{
        for (size_t i = 0; i < devs->n; i++)
                if (!devs->v[i].skip_read)
                        classify(&devs->v[i], NULL, -ETIMEDOUT);
        return err;
}

/* A read that has not answered for this long, its reader blocked (not merely slow), is left to its
 * reader, and the devices after it go to a new reader: one stalled device (a stick whose reads hang)
 * costs the others nothing, and the whole run stays within its one deadline. */
#define READ_STALL_USEC (200 * 1000)
#define READERS_MAX 16

/* One reader child: it reads ORDER[pos..end) (end moves down when a newer reader takes the rest). */
struct reader {
        pid_t pid;
        int fd;          /* -1: done with */
        size_t pos, end; /* the device it reads now is order[pos] */
        bool in_table;   /* after order[pos - 1]'s superblock, its partition table */
        uint64_t since;  /* its last record */
};

/* Whether the reader PID is blocked (in a read or an open that waits: state D or S), not merely slow
 * (runnable, on a busy machine or under valgrind): only a blocked reader hands its devices on. Without
 * /proc, time alone decides. */
static bool reader_blocked(pid_t pid)
{
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return true;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return true;
        buf[n] = '\0';
        const char *p = strrchr(buf, ')'); /* the command name may hold anything */
        return !p || p[1] != ' ' || p[2] == 'D' || p[2] == 'S';
}

static int reader_start(struct reader *rd, const struct bsg_devs *devs, const size_t *order, size_t start,
                        size_t n)
{
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(pipefd[0]);
                close(pipefd[1]);
                return r;
        }
        if (pid == 0) {
                close(pipefd[0]);
                read_child(pipefd[1], devs, order, start, n);
        }
        close(pipefd[1]);
        *rd = (struct reader){.pid = pid, .fd = pipefd[0], .pos = start, .end = n, .since = bsg_now_usec()};
        return 0;
}

static void reader_stop(struct reader *rd)
{
        if (rd->fd < 0)
                return;
        close(rd->fd);
        rd->fd = -1;
        if (waitpid(rd->pid, NULL, WNOHANG) == 0) {
                /* still blocked in a read: kill it and don't wait (a read in D state outlives SIGKILL) */
                kill(rd->pid, SIGKILL);
                (void)waitpid(rd->pid, NULL, WNOHANG);
        }
}

/* Takes one record from RD (a record is written whole by its only writer: the rest of it is read
 * blocking, bounded by the pipe's size). Returns 1, or 0 at EOF (the reader is done). */
static int reader_take(struct reader *rd, struct read_record *rec)
{
        size_t have = 0;
        while (have < sizeof(*rec)) {
                ssize_t n = read(rd->fd, (uint8_t *)rec + have, sizeof(*rec) - have);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return 0;
                have += (size_t)n;
        }
        rd->since = bsg_now_usec();
        return 1;
}

int bsg_devs_read_all(struct bsg_devs *devs, size_t first, uint64_t deadline_usec)
{
        static struct read_record rec;
        struct reader readers[READERS_MAX];
        size_t n_readers = 0, n = 0, left;
        bool spawn_ok = true;
        _cleanup_free_ size_t *order = calloc(devs->n + 1, sizeof(size_t));
        _cleanup_free_ bool *done = calloc(devs->n + 1, sizeof(bool));
        int r;

        if (!order || !done)
                return unread_in_doubt(devs, -ENOMEM);
        /* the event's device first */
        if (first < devs->n && !devs->v[first].skip_read)
                order[n++] = first;
        for (size_t i = 0; i < devs->n; i++)
                if (i != first && !devs->v[i].skip_read)
                        order[n++] = i;
        if (n == 0)
                return 0;
        r = reader_start(&readers[n_readers], devs, order, 0, n);
        if (r < 0)
                return unread_in_doubt(devs, r);
        n_readers++;
        left = n;

        while (left > 0) {
                uint64_t now = bsg_now_usec();
                if (now >= deadline_usec)
                        break;
                /* the newest reader (it has the devices nobody else reads) has stalled: the devices
                 * after the one it waits for go to a new reader */
                struct reader *last = &readers[n_readers - 1];
                size_t next = last->in_table ? last->pos : last->pos + 1;
                bool can_hand_off = spawn_ok && last->fd >= 0 && n_readers < READERS_MAX && next < last->end;
                if (can_hand_off && now - last->since >= READ_STALL_USEC && !reader_blocked(last->pid)) {
                        last->since = now; /* slow, not stalled: asked again a stall later */
                        continue;
                }
                if (can_hand_off && now - last->since >= READ_STALL_USEC) {
                        r = reader_start(&readers[n_readers], devs, order, next, last->end);
                        if (r == 0) {
                                last->end = next;
                                n_readers++;
                        } else
                                spawn_ok = false; /* no new reader: the rest waits for this one */
                        continue;
                }
                struct pollfd p[READERS_MAX];
                size_t map[READERS_MAX], np = 0;
                for (size_t k = 0; k < n_readers; k++)
                        if (readers[k].fd >= 0) {
                                p[np] = (struct pollfd){.fd = readers[k].fd, .events = POLLIN};
                                map[np++] = k;
                        }
                if (np == 0)
                        break;
                uint64_t wake = deadline_usec;
                if (can_hand_off && last->since + READ_STALL_USEC < wake)
                        wake = last->since + READ_STALL_USEC;
                int timeout_ms = wake > now ? (int)((wake - now + 999) / 1000) : 0;
                int pr = poll(p, np, timeout_ms);
                if (pr < 0 && errno == EINTR)
                        continue;
                if (pr < 0)
                        break;
                for (size_t q = 0; q < np; q++) {
                        if (!p[q].revents)
                                continue;
                        struct reader *rd = &readers[map[q]];
                        if (!reader_take(rd, &rec)) {
                                reader_stop(rd); /* EOF: done */
                                continue;
                        }
                        if (rec.index >= devs->n)
                                continue;
                        if (rec.kind == 1) {
                                rd->in_table = false;
                                if (rec.result > 0 && (size_t)rec.result < sizeof(rec.buf) &&
                                    !devs->v[rec.index].part_table)
                                        devs->v[rec.index].part_table = strndup((const char *)rec.buf,
                                                                                (size_t)rec.result);
                        } else {
                                rd->pos++;
                                rd->in_table = devs->v[rec.index].probe_table && rec.result >= 0;
                                if (!done[rec.index]) {
                                        done[rec.index] = true;
                                        devs->v[rec.index].carries_table = rec.carries_table != 0;
                                        classify(&devs->v[rec.index], rec.buf, rec.result);
                                        left--;
                                }
                        }
                        /* past its share (a newer reader has the rest), its table read too */
                        if (rd->pos >= rd->end && !rd->in_table)
                                reader_stop(rd);
                }
        }
        for (size_t k = 0; k < n_readers; k++)
                reader_stop(&readers[k]);
        for (size_t i = 0; i < devs->n; i++)
                if (!done[i] && !devs->v[i].skip_read)
                        classify(&devs->v[i], NULL, -ETIMEDOUT);
        return 0;
}

/* udev's path_id of the whole disk SYSNAME, derived now by `udevadm test-builtin path_id` (sysfs
 * only: no udevd, no database, no link needed), its ID_PATH into BUF. Bounded by 5 s; 0 or -errno. */
static int id_path_derive(const char *sysname, char *buf, size_t size)
{
        char syspath[PATH_MAX], out[4096];
        size_t len = 0;
        int p[2], status;

        if (!bsg_join(syspath, sizeof(syspath), SYS_CLASS_BLOCK "/", sysname, NULL))
                return -ENAMETOOLONG;
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                return r;
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (null < 0 || dup2(p[1], STDOUT_FILENO) < 0 || dup2(null, STDIN_FILENO) < 0 ||
                    dup2(null, STDERR_FILENO) < 0)
                        _exit(127);
                execl(bsg_udevadm_path(), "udevadm", "test-builtin", "path_id", syspath, (char *)NULL);
                _exit(127);
        }
        close(p[1]);
        uint64_t deadline = bsg_now_usec() + 5000000;
        for (;;) {
                uint64_t now = bsg_now_usec();
                struct pollfd pfd = {.fd = p[0], .events = POLLIN};
                if (now >= deadline || poll(&pfd, 1, (int)((deadline - now) / 1000) + 1) <= 0)
                        break;
                ssize_t l = read(p[0], out + len, sizeof(out) - 1 - len);
                if (l <= 0 || (len += (size_t)l) == sizeof(out) - 1)
                        break;
        }
        close(p[0]);
        (void)kill(pid, SIGKILL); /* done or late: either way no longer needed */
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        out[len] = '\0';
        for (char *line = out; line && *line;) {
                char *end = strchr(line, '\n');
                if (end)
                        *end = '\0';
                if (strncmp(line, "ID_PATH=", 8) == 0 && line[8] && strlen(line + 8) < size) {
                        strcpy(buf, line + 8);
                        return 0;
                }
                line = end ? end + 1 : NULL;
        }
        return -ENOENT;
}

/* The ID_PATH the udev database holds for the block device SYSNAME (its own event set it) into BUF;
 * "" if none. */
static void id_path_of_db(struct udev *udev, const char *sysname, char *buf, size_t size)
{
        struct udev_device *dev = udev_device_new_from_subsystem_sysname(udev, "block", sysname);
        const char *p = dev ? udev_device_get_property_value(dev, "ID_PATH") : NULL;

        buf[0] = '\0';
        if (!isempty(p) && strlen(p) < size)
                strcpy(buf, p);
        if (dev)
                udev_device_unref(dev);
}

int bsg_disk_id_path(const char *sysname, char *buf, size_t size)
{
        _cleanup_udev_ struct udev *udev = udev_new();

        if (udev)
                id_path_of_db(udev, sysname, buf, size);
        return udev && buf[0] ? 0 : id_path_derive(sysname, buf, size);
}

/* Whether NAME is the link name 60-persistent-storage.rules gives the disk SYSNAME of ID_PATH (ID),
 * or the partition N of it ("-partN"): 0 no, 1 the disk, 2 a partition (*ret_partn). */
static int by_path_match(const char *name, const char *sysname, const char *id, unsigned *ret_partn)
{
        size_t l = strlen(id);

        /* the legacy virtio form, which udev still makes for vd* disks at pci- paths */
        if (strncmp(name, "virtio-", 7) == 0 && strncmp(sysname, "vd", 2) == 0 && strncmp(id, "pci-", 4) == 0)
                name += 7;
        if (strncmp(name, id, l) != 0)
                return 0;
        if (name[l] == '\0')
                return 1;
        const char *n = name + l;
        if (strncmp(n, "-part", 5) != 0 || n[5] < '1' || n[5] > '9' || strspn(n + 5, "0123456789") != strlen(n + 5))
                return 0;
        *ret_partn = (unsigned)strtoul(n + 5, NULL, 10);
        return 2;
}

/* The device number of partition PARTN of the disk SYSNAME (sysfs), 0 if it has none. */
static dev_t partition_devnum(const char *sysname, unsigned partn)
{
        char path[PATH_MAX], v[32];
        struct dirent *de;
        dev_t found = 0;
        DIR *dir;

        if (!bsg_join(path, sizeof(path), SYS_CLASS_BLOCK "/", sysname, NULL) || !(dir = opendir(path)))
                return 0;
        while (!found && (de = readdir(dir))) {
                char attr[300];
                if (de->d_name[0] == '.' || strncmp(de->d_name, sysname, strlen(sysname)) != 0 ||
                    (size_t)snprintf(attr, sizeof(attr), "%s/partition", de->d_name) >= sizeof(attr) ||
                    sysfs_read(sysname, attr, v, sizeof(v)) <= 0 || strtoul(v, NULL, 10) != partn)
                        continue;
                found = devnum_of_name(de->d_name);
        }
        closedir(dir);
        return found;
}

void bsg_resolve_by_path(const char *const *names, size_t n, dev_t event_devnum, const char *event_id_path,
                         dev_t *devnums)
{
        _cleanup_udev_ struct udev *udev = NULL;
        struct dirent *de;
        DIR *dir;
        size_t left = 0;

        for (size_t i = 0; i < n; i++)
                left += !devnums[i];
        if (!left)
                return;
        _cleanup_free_ char *event_disk = event_devnum && !isempty(event_id_path) ? bsg_disk_of_devnum(event_devnum) : NULL;
        const char *event_disk_name = event_disk ? strrchr(event_disk, '/') : NULL;
        if (event_disk_name)
                event_disk_name++;
        /* two rounds: what udev already knows (the event's environment, the database), then, for the
         * disks whose event has not run yet and only while a name is left, path_id derived now */
        for (int round = 0; round < 2 && left; round++) {
                if (!(dir = opendir(SYS_CLASS_BLOCK)))
                        return;
                while (left && (de = readdir(dir))) {
                        char v[16], id[512], link[PATH_MAX], path[PATH_MAX];
                        const char *name = de->d_name;
                        ssize_t l;
                        bool known = false;
                        if (name[0] == '.' || sysfs_read(name, "partition", v, sizeof(v)) > 0 ||
                            !bsg_join(path, sizeof(path), SYS_CLASS_BLOCK "/", name, NULL) ||
                            (l = readlink(path, link, sizeof(link) - 1)) < 0)
                                continue;
                        link[l] = '\0';
                        id[0] = '\0';
                        if (event_disk_name && streq(name, event_disk_name) && strlen(event_id_path) < sizeof(id))
                                strcpy(id, event_id_path);
                        if (!id[0] && (udev || (udev = udev_new())))
                                id_path_of_db(udev, name, id, sizeof(id));
                        known = id[0];
                        /* a virtual device (loop, nbd, zram, dm, md) has no path_id */
                        if (round == 1 && (known || strstr(link, "/devices/virtual/") ||
                                           id_path_derive(name, id, sizeof(id)) < 0))
                                continue;
                        if (round == 0 && !known)
                                continue;
                        for (size_t i = 0; i < n; i++) {
                                unsigned partn = 0;
                                int m = devnums[i] ? 0 : by_path_match(names[i], name, id, &partn);
                                dev_t d = m == 1 ? devnum_of_name(name) : m == 2 ? partition_devnum(name, partn) : 0;
                                if (d) {
                                        devnums[i] = d;
                                        left--;
                                }
                        }
                }
                closedir(dir);
        }
}
