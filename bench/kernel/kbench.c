/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kbench: guest-side timing loops for bench/kernel/run.sh (a benchmark, not a test).
 *
 *   kbench mount N DEV MNT [TWIN TWINMNT]
 *       N interleaved rounds of mount(2)+umount(2) of DEV on MNT, plain and with
 *       "virtual_fsid" (the order changes every round; unmounted devices are forgotten before
 *       each timed mount). With TWIN, a third mode, in the same rounds, mounts TWIN with
 *       virtual_fsid on TWINMNT (untimed) and times DEV with virtual_fsid next to it (A/B).
 *   kbench scan N DEV PARAM BTRFS
 *       N interleaved rounds of BTRFS_IOC_SCAN_DEV on DEV with the skip_scan parameter PARAM
 *       empty (normal scan) and listing DEV (skipped scan), timed as the bare ioctl and as a
 *       `BTRFS device scan DEV` process. PARAM is written outside the timed region.
 *
 * Prints "RESULT name median_us=.. mean_us=.. min_us=.. n=.." per series and
 * "RATIO name=value" against the baseline of the same run. Statically linked so it runs in a
 * busybox initramfs; the busybox date there has no sub-second resolution.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

struct series {
	const char *name;
	double *us;
	int n;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const struct series *s)
{
	double *tmp = malloc(sizeof(double) * s->n), m;

	if (!tmp)
		abort();
	memcpy(tmp, s->us, sizeof(double) * s->n);
	qsort(tmp, s->n, sizeof(double), cmp_double);
	m = s->n % 2 ? tmp[s->n / 2] : (tmp[s->n / 2 - 1] + tmp[s->n / 2]) / 2;
	free(tmp);
	return m;
}

static void report(const struct series *s)
{
	double sum = 0, min = s->us[0];

	for (int i = 0; i < s->n; i++) {
		sum += s->us[i];
		if (s->us[i] < min)
			min = s->us[i];
	}
	printf("RESULT %s median_us=%.1f mean_us=%.1f min_us=%.1f n=%d\n", s->name, median(s),
	       sum / s->n, min, s->n);
}

static void series_init(struct series *s, const char *name, int n)
{
	s->name = name;
	s->n = n;
	s->us = calloc(n, sizeof(double));
	if (!s->us)
		abort();
}

/* Forgets every unmounted device (FORGET_DEV with an empty name), so that each timed mount starts
 * from the same device list whatever ran before it. Untimed. */
static int forget_all(void)
{
	struct btrfs_ioctl_vol_args args;
	int fd = open("/dev/btrfs-control", O_RDWR | O_CLOEXEC | O_NOCTTY), r;

	if (fd < 0) {
		fprintf(stderr, "kbench: open /dev/btrfs-control: %m\n");
		return -1;
	}
	memset(&args, 0, sizeof(args));
	r = ioctl(fd, BTRFS_IOC_FORGET_DEV, &args);
	if (r < 0)
		fprintf(stderr, "kbench: BTRFS_IOC_FORGET_DEV: %m\n");
	close(fd);
	return r;
}

/* one mount+umount; returns the total in microseconds, or -1 */
static double mount_once(const char *dev, const char *mnt, const char *opts, double *ret_mount_us)
{
	double t0, t1, t2;

	t0 = now_us();
	if (mount(dev, mnt, "btrfs", 0, opts) < 0) {
		fprintf(stderr, "kbench: mount %s %s -o %s: %m\n", dev, mnt, opts ? opts : "");
		return -1;
	}
	t1 = now_us();
	if (umount(mnt) < 0) {
		fprintf(stderr, "kbench: umount %s: %m\n", mnt);
		return -1;
	}
	t2 = now_us();
	*ret_mount_us = t1 - t0;
	return t2 - t0;
}

static int bench_mount(int n, const char *dev, const char *mnt, const char *twin,
		       const char *twinmnt)
{
	struct series plain, vfsid, plain_m, vfsid_m, twin_s;
	int modes = twin ? 3 : 2;
	double mt;

	series_init(&plain, "mount+umount.plain", n);
	series_init(&vfsid, "mount+umount.virtual_fsid", n);
	series_init(&plain_m, "mount-only.plain", n);
	series_init(&vfsid_m, "mount-only.virtual_fsid", n);
	series_init(&twin_s, "mount+umount.virtual_fsid.twin-mounted", n);

	/* warm-up: the first mount reads metadata from the disk, later ones from the cache */
	if (mount_once(dev, mnt, NULL, &mt) < 0 || mount_once(dev, mnt, "virtual_fsid", &mt) < 0)
		return 1;
	if (twin && (mount_once(twin, twinmnt, "virtual_fsid", &mt) < 0))
		return 1;
	/*
	 * Every round times each mode once; the order runs through all permutations (every mode
	 * follows every other equally often), so that drift of the (shared, emulated) machine hits
	 * all modes alike. Before each timed mount the unmounted devices are forgotten, so every
	 * mount starts from the same device list. The twin of the third mode is mounted and
	 * unmounted outside the timed region.
	 */
	static const int orders[6][3] = { { 0, 1, 2 }, { 1, 2, 0 }, { 2, 0, 1 },
					  { 0, 2, 1 }, { 2, 1, 0 }, { 1, 0, 2 } };
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < 3; k++) {
			int mode = modes == 3 ? orders[i % 6][k] : (i + k) % 2;
			double t;

			if (k >= modes)
				break;
			if (mode == 2 && mount(twin, twinmnt, "btrfs", 0, "virtual_fsid") < 0) {
				fprintf(stderr, "kbench: mount %s %s: %m\n", twin, twinmnt);
				return 1;
			}
			if (forget_all() < 0)
				return 1;
			t = mount_once(dev, mnt, mode ? "virtual_fsid" : NULL, &mt);
			if (t < 0)
				return 1;
			if (mode == 2 && umount(twinmnt) < 0) {
				fprintf(stderr, "kbench: umount %s: %m\n", twinmnt);
				return 1;
			}
			if (mode == 0) {
				plain.us[i] = t;
				plain_m.us[i] = mt;
			} else if (mode == 1) {
				vfsid.us[i] = t;
				vfsid_m.us[i] = mt;
			} else
				twin_s.us[i] = t;
		}
	}
	report(&plain);
	report(&vfsid);
	report(&plain_m);
	report(&vfsid_m);
	printf("RATIO mount+umount.virtual_fsid/plain=%.3f\n", median(&vfsid) / median(&plain));
	printf("RATIO mount-only.virtual_fsid/plain=%.3f\n", median(&vfsid_m) / median(&plain_m));
	if (twin) {
		report(&twin_s);
		printf("RATIO mount+umount.virtual_fsid.twin-mounted/plain=%.3f\n",
		       median(&twin_s) / median(&plain));
	}
	return 0;
}

static int write_param(const char *param, const char *value)
{
	int fd = open(param, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t len = strlen(value), r;

	if (fd < 0) {
		fprintf(stderr, "kbench: open %s: %m\n", param);
		return -1;
	}
	/* an empty write may be a no-op on sysfs: write a newline to clear the list */
	r = len ? write(fd, value, len) : write(fd, "\n", 1);
	close(fd);
	if (r < 0) {
		fprintf(stderr, "kbench: write %s: %m\n", param);
		return -1;
	}
	return 0;
}

static double scan_ioctl(int ctl, const char *dev)
{
	struct btrfs_ioctl_vol_args args;
	double t0;

	memset(&args, 0, sizeof(args));
	strncpy(args.name, dev, sizeof(args.name) - 1);
	t0 = now_us();
	if (ioctl(ctl, BTRFS_IOC_SCAN_DEV, &args) < 0) {
		fprintf(stderr, "kbench: BTRFS_IOC_SCAN_DEV %s: %m\n", dev);
		return -1;
	}
	return now_us() - t0;
}

static double scan_process(const char *btrfs, const char *dev)
{
	char *argv[] = { (char *)btrfs, "device", "scan", (char *)dev, NULL };
	posix_spawn_file_actions_t fa;
	double t0;
	pid_t pid;
	int status, r;

	posix_spawn_file_actions_init(&fa);
	/* the command's chatter goes to the guest's log file, not the console */
	posix_spawn_file_actions_addopen(&fa, 1, "/tmp/kbench-scan.log", O_WRONLY | O_CREAT | O_APPEND,
					 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	t0 = now_us();
	r = posix_spawn(&pid, btrfs, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r) {
		errno = r;
		fprintf(stderr, "kbench: spawn %s: %m\n", btrfs);
		return -1;
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "kbench: %s device scan %s failed\n", btrfs, dev);
		return -1;
	}
	return now_us() - t0;
}

static int bench_scan(int n, const char *dev, const char *param, const char *btrfs)
{
	struct series norm, skip, pnorm, pskip;
	int ctl = open("/dev/btrfs-control", O_RDWR | O_CLOEXEC | O_NOCTTY);

	if (ctl < 0) {
		fprintf(stderr, "kbench: open /dev/btrfs-control: %m\n");
		return 1;
	}
	series_init(&norm, "scan.ioctl.normal", n);
	series_init(&skip, "scan.ioctl.skipped", n);
	series_init(&pnorm, "scan.btrfs-cmd.normal", n);
	series_init(&pskip, "scan.btrfs-cmd.skipped", n);
	if (scan_ioctl(ctl, dev) < 0)	/* warm-up: registers the device once */
		return 1;
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < 2; k++) {
			int skipped = (i + k) % 2;
			double t, tp;

			if (write_param(param, skipped ? dev : "") < 0)
				return 1;
			t = scan_ioctl(ctl, dev);
			tp = scan_process(btrfs, dev);
			if (t < 0 || tp < 0)
				return 1;
			(skipped ? &skip : &norm)->us[i] = t;
			(skipped ? &pskip : &pnorm)->us[i] = tp;
		}
	}
	write_param(param, "");
	close(ctl);
	report(&norm);
	report(&skip);
	report(&pnorm);
	report(&pskip);
	printf("RATIO scan.ioctl.skipped/normal=%.3f\n", median(&skip) / median(&norm));
	printf("RATIO scan.btrfs-cmd.skipped/normal=%.3f\n", median(&pskip) / median(&pnorm));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 5 && !strcmp(argv[1], "mount"))
		return bench_mount(atoi(argv[2]), argv[3], argv[4], argc >= 7 ? argv[5] : NULL,
				   argc >= 7 ? argv[6] : NULL);
	if (argc == 6 && !strcmp(argv[1], "scan"))
		return bench_scan(atoi(argv[2]), argv[3], argv[4], argv[5]);
	fprintf(stderr, "usage: kbench mount N DEV MNT [TWIN TWINMNT] | kbench scan N DEV PARAM BTRFS\n");
	return 2;
}
