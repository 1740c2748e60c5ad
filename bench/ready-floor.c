/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ready-floor DEVNODE: the floor of bench/run.sh's per-event comparison (a benchmark, not a test).
 * Does only what systemd's "btrfs ready" builtin does for an event (open /dev/btrfs-control, one
 * BTRFS_IOC_DEVICES_READY, print ID_BTRFS_READY), but as a process of its own, as any
 * IMPORT{program} helper must be. udevd runs the builtin in-process, without this exec.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/btrfs.h>

int main(int argc, char **argv)
{
        struct btrfs_ioctl_vol_args args;
        int fd, r;

        if (argc != 2 || strlen(argv[1]) > BTRFS_PATH_NAME_MAX) {
                fprintf(stderr, "usage: ready-floor DEVNODE\n");
                return 2;
        }
        fd = open("/dev/btrfs-control", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                perror("ready-floor: /dev/btrfs-control");
                return 1;
        }
        memset(&args, 0, sizeof(args));
        strcpy(args.name, argv[1]);
        r = ioctl(fd, BTRFS_IOC_DEVICES_READY, &args);
        close(fd);
        if (r < 0) {
                perror("ready-floor: BTRFS_IOC_DEVICES_READY");
                return 1;
        }
        printf("ID_BTRFS_READY=%d\n", r == 0);
        return 0;
}
