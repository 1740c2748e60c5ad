/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bsg_protection_decide(): every mode from the kernel's capabilities and the installed modules; only
 * "patched module installed but not running" and "list not applied" fail. bsg_skip_list_missing(). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "protection.h"

struct protection_case {
        const char *name;
        struct bsg_protection_input in;
        enum bsg_protection_state state;
        bool failed;
        const char *verdict_has; /* a substring of the verdict */
        const char *fix_has;     /* a substring of the fix, NULL: no fix */
};

static const struct protection_case cases[] = {
        {"patched-in-force", {.control = true, .skip_scan = true, .skip_scan_writable = true, .running = "6.1.0-57-amd64",
                              .running_patched = true, .n_listed = 2},
         BSG_PROTECTION_SKIP_SCAN, false, "protected: the patched btrfs module enforces the skip list (2 devices", NULL},
        {"patched-list-short", {.control = true, .skip_scan = true, .skip_scan_writable = true, .running = "6.1.0-57-amd64",
                                .running_patched = true, .n_listed = 2, .n_missing = 1, .first_missing = "/dev/sda5"},
         BSG_PROTECTION_LIST_NOT_APPLIED, true, "NOT PROTECTED: the kernel's skip list lacks 1 of the 2 devices decided skip (/dev/sda5)",
         "btrfs-scan-gate reconcile"},
        {"patched-read-only-short", {.control = true, .skip_scan = true, .running = "6.1.0-57-amd64", .n_listed = 1,
                                     .n_missing = 1, .first_missing = "/dev/sda5"},
         BSG_PROTECTION_LIST_NOT_APPLIED, true, "NOT PROTECTED", "--write-modprobe"},
        {"built-in-patched-no-file", {.control = true, .skip_scan = true, .skip_scan_writable = true, .running = "6.1.0-custom"},
         BSG_PROTECTION_SKIP_SCAN, false, "(0 devices kept", NULL},
        {"upstream", {.control = true, .temp_fsid = true, .running = "6.12.0-1-amd64", .n_listed = 3},
         BSG_PROTECTION_TEMP_FSID, false, "kernel 6.12.0-1-amd64 has temp-fsid", NULL},
        {"upstream-old-dkms-kernel", {.control = true, .temp_fsid = true, .running = "6.12.0-1-amd64",
                                      .patched_other = "6.1.0-57-amd64"},
         BSG_PROTECTION_TEMP_FSID, false, "temp-fsid", NULL},
        {"stock-helper-only", {.control = true, .running = "6.1.0-57-amd64", .n_listed = 1},
         BSG_PROTECTION_HELPER_ONLY, false, "helper only: the running btrfs module (kernel 6.1.0-57-amd64) is unpatched", NULL},
        {"stock-not-loaded", {.running = "6.1.0-57-amd64"},
         BSG_PROTECTION_HELPER_ONLY, false, "helper only: btrfs is not loaded", NULL},
        {"installed-not-loaded-in-tree", {.control = true, .running = "6.1.0-57-amd64", .running_patched = true},
         BSG_PROTECTION_MODULE_NOT_RUNNING, true, "installed for the running kernel 6.1.0-57-amd64 but the loaded btrfs has no skip_scan",
         "update-initramfs -u"},
        {"installed-for-other-kernel", {.control = true, .running = "6.1.0-58-amd64", .patched_other = "6.1.0-57-amd64"},
         BSG_PROTECTION_MODULE_NOT_RUNNING, true, "installed for 6.1.0-57-amd64 but not for the running kernel 6.1.0-58-amd64",
         "dkms autoinstall -k 6.1.0-58-amd64"},
        {"installed-btrfs-not-loaded", {.running = "6.1.0-57-amd64", .running_patched = true},
         BSG_PROTECTION_MODULE_NOT_RUNNING, true, "but btrfs is not loaded", "modprobe btrfs"},
        {"dkms-built-for-none", {.control = true, .running = "6.1.0-57-amd64", .dkms_source = "/usr/src/btrfs-scan-gate-0.1.0"},
         BSG_PROTECTION_MODULE_NOT_RUNNING, true, "btrfs-scan-gate-dkms is installed but built no patched btrfs module for the running kernel 6.1.0-57-amd64",
         "/usr/src/btrfs-scan-gate-0.1.0/kernels.sh"},
        {"dkms-upstream", {.control = true, .temp_fsid = true, .running = "6.12.0-1-amd64", .dkms_source = "/usr/src/btrfs-scan-gate-0.1.0"},
         BSG_PROTECTION_TEMP_FSID, false, "temp-fsid", NULL},
        {"dkms-and-other-kernel", {.control = true, .running = "6.1.0-58-amd64", .patched_other = "6.1.0-57-amd64",
                                   .dkms_source = "/usr/src/btrfs-scan-gate-0.1.0"},
         BSG_PROTECTION_MODULE_NOT_RUNNING, true, "installed for 6.1.0-57-amd64 but not for the running kernel", "dkms autoinstall"},
        {"unknown-release", {.control = true, .patched_other = "6.1.0-57-amd64"},
         BSG_PROTECTION_MODULE_NOT_RUNNING, true, "running kernel (unknown)", "dkms"},
};

static void protection_one(const struct protection_case *t)
{
        struct bsg_protection v;

        check_case = t->name;
        bsg_protection_decide(&t->in, &v);
        CHECK_STREQ(bsg_protection_state_name(v.state), bsg_protection_state_name(t->state));
        CHECK(v.failed == t->failed);
        CHECK(strstr(v.verdict, t->verdict_has) != NULL);
        if (!strstr(v.verdict, t->verdict_has))
                fprintf(stderr, "  verdict: %s\n", v.verdict);
        CHECK(strchr(v.verdict, '\n') == NULL); /* one line */
        if (t->fix_has)
                CHECK(strstr(v.fix, t->fix_has) != NULL);
        else
                CHECK(v.fix[0] == '\0');
}

struct missing_case {
        const char *name, *computed, *current;
        size_t missing;
        const char *first;
};

static const struct missing_case missing_cases[] = {
        {"empty", "", "", 0, ""},
        {"same", "/dev/sda5,/dev/sda7", "/dev/sda5,/dev/sda7\n", 0, ""},
        {"superset-current", "/dev/sda5", "/dev/sda5,/dev/sdb1", 0, ""},
        {"one-missing", "/dev/sda5,/dev/sda7", "/dev/sda5", 1, "/dev/sda7"},
        {"prefix-is-not-entry", "/dev/sda1", "/dev/sda10", 1, "/dev/sda1"},
        {"current-unknown", "/dev/sda5,/dev/sda7", NULL, 2, "/dev/sda5"},
        {"computed-null", NULL, "/dev/sda5", 0, ""},
};

static void missing_one(const struct missing_case *t)
{
        char first[64];

        check_case = t->name;
        CHECK(bsg_skip_list_missing(t->computed, t->current, first, sizeof(first)) == t->missing);
        CHECK_STREQ(first, t->first);
}

int main(void)
{
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                protection_one(&cases[i]);
        for (size_t i = 0; i < sizeof(missing_cases) / sizeof(missing_cases[0]); i++)
                missing_one(&missing_cases[i]);
        check_case = "count";
        CHECK(bsg_skip_list_count("") == 0 && bsg_skip_list_count("/dev/a") == 1 && bsg_skip_list_count("/dev/a,/dev/b\n") == 2);
        return check_failures ? 1 : 0;
}
