/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfs-scan-gate: decides which btrfs devices the kernel may scan, so that A/B slot clones (same
 * fsid) never race each other into the kernel's device list. See btrfs-scan-gate.8.
 *
 * main.c only parses the command line and dispatches to a verb (verb-*.c). The verbs build the
 * inventory (inputs.c: configuration, kernel state, platform slot files; inventory.c: devices, state
 * file, the gather; entries.c: the table of entries; active.c: the active slot and the booted disk;
 * trust.c: the disks the boot names and every device's trust; I/O), decide and plan
 * (plan.c, pure: entries -> verdicts -> kernel actions) and perform the plan (executor.c). The I/O
 * lives in devices.c (block devices), state.c (lock, state file) and kernel.c (every kernel
 * interface); superblock.c, policy.c, skiplist.c, config.c, cmdline.c, slot.c and plan.c are pure.
 *
 * Bounded time: every invocation has one deadline (--timeout, default 10 s). Superblock reads run in
 * child processes that stream results through pipes (a read that stalls hands the devices after it
 * to a new child: one stalled device delays no other's read); a read still blocked at the deadline is
 * abandoned (the child is killed and not waited for, so a read stuck in the block layer cannot hold
 * the helper, and the child has closed stdout/stderr so it cannot hold udev's pipe either). The lock
 * is taken with flock(LOCK_NB) polled until the same deadline; without it the helper decides and
 * prints but does not act.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate.h"
#include "util.h"

static void help(void)
{
        printf("Usage: btrfs-scan-gate [OPTIONS] udev DEVNODE\n"
               "       btrfs-scan-gate [OPTIONS] boot [--write-modprobe FILE] [--print-cmdline]\n"
               "       btrfs-scan-gate [OPTIONS] reconcile\n"
               "       btrfs-scan-gate [OPTIONS] trust DEVNODE\n"
               "       btrfs-scan-gate [OPTIONS] status [--json]\n"
               "       btrfs-scan-gate -h | --help | -V | --version\n"
               "\n"
               "Decides which btrfs devices the kernel may scan, so that A/B slot clones (the same fsid)\n"
               "never race each other into the kernel's device list.\n"
               "\n"
               "Commands:\n"
               "  udev DEVNODE   for IMPORT{program} in a udev rule ($ACTION add, change or remove): reads\n"
               "                 DEVNODE (an add of a device the inventory has: no read) and the devices\n"
               "                 the inventory does not know yet, updates the inventory, brings the kernel\n"
               "                 to the decided state for every device, prints KEY=VALUE\n"
               "  boot           before coldplug: read every block device once into the inventory\n"
               "                 (/run/btrfs-scan-gate/devices), write the skip list\n"
               "                 (/sys/module/btrfs/parameters/skip_scan) and scan what may be scanned\n"
               "  reconcile      read nothing; re-decide the inventory and bring the kernel to that state\n"
               "                 (for updaters and timers: makes good what an earlier event lost)\n"
               "  trust          (from the rules, for a device without btrfs) whether it is trusted storage\n"
               "                 (on the disk the boot names: LoaderDevicePartUUID, steamos.efi=,\n"
               "                 root=PARTUUID=, RAUC device=; named by trusted_disk=; dm/md over those;\n"
               "                 where the boot names no disk, fixed storage), and whether it is withheld\n"
               "                 (a higher rank carries one of its names, or it carries a name the system\n"
               "                 mounts by: root=, fstab, crypttab, units, RAUC, partsets)\n"
               "  status         first line: the verdict (protected by the skip list or by temp-fsid, helper\n"
               "                 only, or NOT PROTECTED with the reason and the fix); then every btrfs\n"
               "                 device, its decision and reason, the kernel's capabilities, the installed\n"
               "                 kernels' btrfs modules, where trust came from\n"
               "\n"
               "Trust ranks devices (trusted, then fixed, then hot-pluggable) where they collide (one\n"
               "filesystem, or one /dev/disk name): only the highest rank takes part, the others are\n"
               "'skip outranked'. A device that collides with nothing is scanned as without the gate.\n"
               "\n"
               "Options (before the command's operands; DEVNODE ends them):\n"
               "  --dry-run            decide and print, touch nothing (no ioctl, no skip list, no state)\n"
               "  --config FILE        configuration file (default /etc/btrfs-scan-gate.conf)\n"
               "  --timeout SECONDS    sets both budgets below (default 10)\n"
               "  --read-timeout SECONDS  budget of the superblock reads\n"
               "  --lock-timeout SECONDS  budget of the wait for the lock, and again of the kernel actions\n"
               "  -v, --verbose        more messages on stderr; status/boot also list non-btrfs devices\n"
               "  --write-modprobe FILE  (boot) also write 'options btrfs skip_scan=...' to FILE\n"
               "  --print-cmdline      (boot) also print 'btrfs.skip_scan=...' for the kernel command line\n"
               "                       (both name partitions PARTUUID=..., stable across boots)\n"
               "  --json               (status) JSON output\n"
               "  -h, --help           this text\n"
               "  -V, --version        the version\n"
               "\n"
               "Exit status: 0 success (udev: always, problems are in BTRFS_SCAN_GATE_ERROR=); 1 failure\n"
               "of boot, reconcile or status, trust of a DEVNODE that is no block device, or not run as\n"
               "root; 2 usage error;\n"
               "3 (boot, status) decided, but the running btrfs module takes no skip list (the helper\n"
               "alone on a stock kernel) or the configuration has errors: the unit does not fail;\n"
               "4 (boot, reconcile, status) NOT PROTECTED: a patched btrfs module is installed but the\n"
               "running kernel does not have it, or the kernel's skip list lacks devices decided skip:\n"
               "the unit fails. See btrfs-scan-gate(8).\n");
}

static int parse_seconds(const char *opt, const char *arg, double *ret)
{
        char *end;
        errno = 0;
        double v = strtod(arg, &end);
        if (errno || *end || !(v > 0) || v > 3600) {
                log_msg("%s: expected seconds in (0, 3600], got '%s'", opt, arg);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

/* Options up to the first operand ('+': no permutation, so nothing after an operand is an option). */
static int parse_options(int argc, char **argv, struct ctx *c)
{
        enum {
                ARG_DRY_RUN = 0x100,
                ARG_CONFIG,
                ARG_TIMEOUT,
                ARG_READ_TIMEOUT,
                ARG_LOCK_TIMEOUT,
                ARG_JSON,
                ARG_MODPROBE,
                ARG_CMDLINE,
        };
        static const struct option options[] = {
                {"help", no_argument, NULL, 'h'},
                {"version", no_argument, NULL, 'V'},
                {"dry-run", no_argument, NULL, ARG_DRY_RUN},
                {"config", required_argument, NULL, ARG_CONFIG},
                {"timeout", required_argument, NULL, ARG_TIMEOUT},
                {"read-timeout", required_argument, NULL, ARG_READ_TIMEOUT},
                {"lock-timeout", required_argument, NULL, ARG_LOCK_TIMEOUT},
                {"verbose", no_argument, NULL, 'v'},
                {"json", no_argument, NULL, ARG_JSON},
                {"write-modprobe", required_argument, NULL, ARG_MODPROBE},
                {"print-cmdline", no_argument, NULL, ARG_CMDLINE},
                {}};
        int opt;

        while ((opt = getopt_long(argc, argv, "+hvV", options, NULL)) >= 0)
                switch (opt) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("btrfs-scan-gate %s\n", BSG_VERSION);
                        return 0;
                case ARG_DRY_RUN:
                        c->dry_run = true;
                        break;
                case ARG_CONFIG:
                        c->config_path = optarg;
                        break;
                case ARG_TIMEOUT:
                        if (parse_seconds("--timeout", optarg, &c->read_timeout) < 0)
                                return -EINVAL;
                        c->lock_timeout = c->read_timeout;
                        break;
                case ARG_READ_TIMEOUT:
                        if (parse_seconds("--read-timeout", optarg, &c->read_timeout) < 0)
                                return -EINVAL;
                        break;
                case ARG_LOCK_TIMEOUT:
                        if (parse_seconds("--lock-timeout", optarg, &c->lock_timeout) < 0)
                                return -EINVAL;
                        break;
                case 'v':
                        c->verbose = arg_verbose = true;
                        break;
                case ARG_JSON:
                        c->json = true;
                        break;
                case ARG_MODPROBE:
                        c->write_modprobe = optarg;
                        break;
                case ARG_CMDLINE:
                        c->print_cmdline = true;
                        break;
                default:
                        return -EINVAL;
                }
        return 1;
}

int main(int argc, char **argv)
{
        struct ctx c = {.read_timeout = 10, .lock_timeout = 10};
        char verb_prog[64];
        int ret, r;

        /* getopt's messages name argv[0]: the program, whatever path it was started by */
        if (argc > 0)
                argv[0] = (char *)"btrfs-scan-gate";
        /* options before the command, then options after it up to its first operand */
        r = parse_options(argc, argv, &c);
        if (r <= 0)
                return r < 0 ? 2 : 0;
        if (optind >= argc) {
                log_msg("missing command (udev, trust, boot, reconcile, status); see --help");
                return 2;
        }
        const char *verb = argv[optind];
        if (streq(verb, "udev"))
                c.verb = VERB_UDEV;
        else if (streq(verb, "boot"))
                c.verb = VERB_BOOT;
        else if (streq(verb, "status"))
                c.verb = VERB_STATUS;
        else if (streq(verb, "reconcile"))
                c.verb = VERB_RECONCILE;
        else if (streq(verb, "trust"))
                c.verb = VERB_TRUST;
        else {
                log_msg("unknown command '%s'; see --help", verb);
                return 2;
        }
        /* getopt starts again after the command: argv[optind] becomes its argv[0] */
        int sub_argc = argc - optind;
        char **sub_argv = argv + optind;
        snprintf(verb_prog, sizeof(verb_prog), "btrfs-scan-gate %s", verb); /* "btrfs-scan-gate status: ..." */
        sub_argv[0] = verb_prog;
        optind = 1;
        r = parse_options(sub_argc, sub_argv, &c);
        if (r <= 0)
                return r < 0 ? 2 : 0;
        if (c.verb == VERB_UDEV || c.verb == VERB_TRUST) {
                if (optind != sub_argc - 1) {
                        log_msg("%s: expected exactly one DEVNODE, and no option after it", verb);
                        return 2;
                }
                c.devnode = sub_argv[optind];
                const char *action = getenv("ACTION");
                c.action = streq_ptr(action, "remove")   ? UDEV_ACTION_REMOVE
                           : streq_ptr(action, "change") ? UDEV_ACTION_CHANGE
                                                         : UDEV_ACTION_ADD;
        } else if (optind != sub_argc) {
                log_msg("%s: unexpected argument '%s'", verb, sub_argv[optind]);
                return 2;
        }
        if ((c.json && c.verb != VERB_STATUS) || ((c.write_modprobe || c.print_cmdline) && c.verb != VERB_BOOT)) {
                log_msg("%s: option not valid for this command; see --help", verb);
                return 2;
        }
        /* as another user each verb would answer for a system it cannot see or change: refused, with
         * what the verb needs root for */
        if (geteuid() != 0) {
                const char *why = NULL;
                switch (c.verb) {
                case VERB_BOOT:
                        why = "reads every block device, writes the kernel's skip list and the inventory in "
                              "/run/btrfs-scan-gate";
                        break;
                case VERB_RECONCILE:
                        why = "takes the inventory's lock in /run/btrfs-scan-gate and changes the kernel's skip "
                              "list and registrations; it reads no device";
                        break;
                case VERB_STATUS:
                        why = "reads every block device's superblock and the kernel's btrfs state";
                        break;
                case VERB_TRUST:
                        why = "reads the inventory in /run/btrfs-scan-gate, which holds the boot's anchor; as "
                              "another user the answer would not be the system's";
                        break;
                default:
                        break;
                }
                if (why) {
                        log_msg("%s: needs root (%s)", verb, why);
                        return 1;
                }
                /* udev as another user (a person trying the rules' command): it cannot take the lock or
                 * act, so it decides only and says so instead of reporting actions it did not take */
                if (!c.dry_run)
                        log_msg("udev: not root: decides only, as with --dry-run (no lock, no scan, no skip "
                                "list, no inventory)");
                c.dry_run = true;
        }
        c.read_deadline = bsg_now_usec() + (uint64_t)(c.read_timeout * 1e6);

        switch (c.verb) {
        case VERB_UDEV:
                ret = run_udev(&c);
                break;
        case VERB_BOOT:
                ret = run_boot(&c);
                break;
        case VERB_RECONCILE:
                ret = run_reconcile(&c);
                break;
        case VERB_TRUST:
                ret = run_trust(&c);
                break;
        default:
                ret = run_status(&c);
                break;
        }
        fflush(stdout);
        ctx_done(&c);
        return ret;
}
