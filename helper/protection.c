/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The protection verdict (pure): see protection.h. The modes, in the order they are decided:
 * the patched module's skip list (in force, or not applied: a failure), upstream's temp-fsid, a
 * patched module installed but not running (a failure: the lapse a kernel update or a refused dkms
 * build leaves), and the helper alone on a stock module (a normal, stated mode). */
#include <stdio.h>
#include <string.h>

#include "protection.h"
#include "util.h"

const char *bsg_protection_state_name(enum bsg_protection_state s)
{
        switch (s) {
        case BSG_PROTECTION_SKIP_SCAN:
                return "skip-scan";
        case BSG_PROTECTION_TEMP_FSID:
                return "temp-fsid";
        case BSG_PROTECTION_HELPER_ONLY:
                return "helper-only";
        case BSG_PROTECTION_MODULE_NOT_RUNNING:
                return "module-not-running";
        case BSG_PROTECTION_LIST_NOT_APPLIED:
                return "list-not-applied";
        }
        return "unknown";
}

size_t bsg_skip_list_missing(const char *computed, const char *current, char *ret_first, size_t size)
{
        size_t missing = 0;

        if (size)
                ret_first[0] = '\0';
        for (const char *p = computed; p && *p;) {
                size_t n = strcspn(p, ",\n");
                if (n && !list_has(current, p, n)) {
                        if (missing++ == 0 && size)
                                snprintf(ret_first, size, "%.*s", (int)n, p);
                }
                p += n;
                if (*p)
                        p++;
        }
        return missing;
}

size_t bsg_skip_list_count(const char *list)
{
        size_t count = 0;
        for (const char *p = list; p && *p;) {
                size_t n = strcspn(p, ",\n");
                count += n > 0;
                p += n;
                if (*p)
                        p++;
        }
        return count;
}

void bsg_protection_decide(const struct bsg_protection_input *in, struct bsg_protection *ret)
{
        const char *running = in->running && *in->running ? in->running : "(unknown)";
        struct bsg_protection v = {0};

        if (in->skip_scan && in->n_missing > 0) {
                v.state = BSG_PROTECTION_LIST_NOT_APPLIED;
                v.failed = true;
                snprintf(v.verdict, sizeof(v.verdict),
                         "NOT PROTECTED: the kernel's skip list lacks %zu of the %zu devices decided skip (%s%s): "
                         "other scans can register them",
                         in->n_missing, in->n_listed, in->first_missing ? in->first_missing : "?",
                         in->n_missing > 1 ? ", ..." : "");
                if (in->skip_scan_writable)
                        snprintf(v.fix, sizeof(v.fix),
                                 "run `btrfs-scan-gate reconcile`; if the list stays short, `journalctl -t "
                                 "btrfs-scan-gate` says why it could not be written");
                else
                        snprintf(v.fix, sizeof(v.fix),
                                 "skip_scan is read-only here: `btrfs-scan-gate boot --write-modprobe "
                                 "/etc/modprobe.d/btrfs-scan-gate.conf`, rebuild the initramfs, reboot");
        } else if (in->skip_scan) {
                v.state = BSG_PROTECTION_SKIP_SCAN;
                snprintf(v.verdict, sizeof(v.verdict),
                         "protected: the patched btrfs module enforces the skip list (%zu device%s kept from every "
                         "scan)",
                         in->n_listed, in->n_listed == 1 ? "" : "s");
        } else if (in->temp_fsid) {
                v.state = BSG_PROTECTION_TEMP_FSID;
                snprintf(v.verdict, sizeof(v.verdict),
                         "protected: kernel %s has temp-fsid (6.7 and later) and mounts clones itself; the gate "
                         "still scans no inactive clone and gives it no /dev/disk link",
                         running);
        } else if (in->running_patched || in->patched_other || in->dkms_source) {
                v.state = BSG_PROTECTION_MODULE_NOT_RUNNING;
                v.failed = true;
                if (!in->control) {
                        snprintf(v.verdict, sizeof(v.verdict),
                                 "NOT PROTECTED: a patched btrfs module is installed (%s) but btrfs is not loaded: "
                                 "it will start with an empty skip list",
                                 in->running_patched ? running : in->patched_other);
                        snprintf(v.fix, sizeof(v.fix),
                                 "`modprobe btrfs`, then `btrfs-scan-gate reconcile`; at boot "
                                 "modprobe@btrfs.service loads it before btrfs-scan-gate.service");
                } else if (in->running_patched) {
                        snprintf(v.verdict, sizeof(v.verdict),
                                 "NOT PROTECTED: the patched btrfs module is installed for the running kernel %s "
                                 "but the loaded btrfs has no skip_scan (the in-tree module was loaded)",
                                 running);
                        snprintf(v.fix, sizeof(v.fix),
                                 "rebuild the initramfs (`update-initramfs -u`, `dracut -f` or `mkinitcpio -P`) "
                                 "and reboot; `modinfo -n btrfs` must name updates/; under Secure Boot an unsigned "
                                 "module is refused: `dmesg | grep -i btrfs`, `mokutil --sb-state`");
                } else if (!in->patched_other) {
                        /* the dkms package is installed and built for no kernel: every refusal (Secure
                         * Boot without an enrolled key, no headers, no source) ends here */
                        snprintf(v.verdict, sizeof(v.verdict),
                                 "NOT PROTECTED: btrfs-scan-gate-dkms is installed but built no patched btrfs "
                                 "module for the running kernel %s (nor for any other)",
                                 running);
                        snprintf(v.fix, sizeof(v.fix),
                                 "`%s/kernels.sh` says why each kernel lacks it (Secure Boot without an enrolled "
                                 "key, missing headers, not a Debian 6.1 kernel); after fixing that, `dkms "
                                 "autoinstall -k %s` and reboot; or remove btrfs-scan-gate-dkms to run the helper "
                                 "alone",
                                 in->dkms_source, running);
                } else {
                        snprintf(v.verdict, sizeof(v.verdict),
                                 "NOT PROTECTED: the patched btrfs module is installed for %s but not for the "
                                 "running kernel %s",
                                 in->patched_other, running);
                        snprintf(v.fix, sizeof(v.fix),
                                 "build it for this kernel (`dkms autoinstall -k %s`, or install "
                                 "btrfs-scan-gate-modules-%s) and reboot, or boot %s",
                                 running, running, in->patched_other);
                }
        } else {
                v.state = BSG_PROTECTION_HELPER_ONLY;
                if (!in->control)
                        snprintf(v.verdict, sizeof(v.verdict),
                                 "helper only: btrfs is not loaded and no patched btrfs module is installed; "
                                 "the gate scans no clone and hides inactive ones from udev, nothing stops "
                                 "`btrfs device scan` or a mount from registering one");
                else
                        snprintf(v.verdict, sizeof(v.verdict),
                                 "helper only: the running btrfs module (kernel %s) is unpatched and has no "
                                 "temp-fsid; the gate scans no clone and hides inactive ones from udev, nothing "
                                 "stops `btrfs device scan` or a mount from registering one",
                                 running);
        }
        *ret = v;
}
