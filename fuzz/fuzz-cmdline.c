/* libFuzzer target: bsg_cmdline_get() (helper/cmdline.c).
 * Input: a kernel command line as an exact-size buffer without a NUL (the API takes a length;
 * /proc/cmdline may hold NULs and need not end in a newline). Every key the helper looks up is
 * queried, plus a key taken from the input itself. Properties: 0 gives a NUL-terminated value
 * no longer than the input and without '"' (quotes are removed), -ENOENT gives nothing, and a
 * key found in the input is found again in "<input> key=x" with value "x" (the last one wins). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"

#define CHECK(x)                                                                                        \
        do {                                                                                            \
                if (!(x))                                                                               \
                        __builtin_trap();                                                               \
        } while (0)

static const char *const keys[] = {
        "btrfs-scan-gate.slot", "btrfs_scan_gate.slot", "rauc.slot", "androidboot.slot_suffix",
        "steamos.efi", "rd.steamos.efi", "root", "quiet", "",
};

static void query(const char *buf, size_t size, const char *key)
{
        char *v = (char *)0x1; /* must stay untouched unless 0 */
        int r = bsg_cmdline_get(buf, size, key, &v);
        if (r == 0) {
                CHECK(v && v != (char *)0x1);
                CHECK(strlen(v) <= size);
                CHECK(!strchr(v, '"'));
                free(v);
        } else {
                CHECK(r == -ENOENT);
                CHECK(v == (char *)0x1);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *buf = malloc(size ? size : 1);
        memcpy(buf, data, size);
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
                query(buf, size, keys[k]);

        /* a key from the input: the bytes up to the first '=' or whitespace, if sane */
        size_t kl = 0;
        while (kl < size && kl < 64 && data[kl] > ' ' && data[kl] < 0x7f && data[kl] != '=' && data[kl] != '"')
                kl++;
        if (kl > 0) {
                char key[65];
                memcpy(key, data, kl);
                key[kl] = '\0';
                query(buf, size, key);

                /* appending " key=x" makes the value "x", unless the input leaves a quote open
                 * (a NUL ends a word and its quote, as in /proc/cmdline's argv form) */
                size_t quotes = 0;
                for (size_t i = 0; i < size; i++)
                        quotes = data[i] == '\0' ? 0 : quotes + (data[i] == '"');
                if (quotes % 2 == 0) {
                        size_t n = size + 1 + kl + 2;
                        char *more = malloc(n);
                        memcpy(more, data, size);
                        more[size] = ' ';
                        memcpy(more + size + 1, key, kl);
                        memcpy(more + size + 1 + kl, "=x", 2);
                        char *v = NULL;
                        CHECK(bsg_cmdline_get(more, n, key, &v) == 0);
                        CHECK(strcmp(v, "x") == 0);
                        free(v);
                        free(more);
                }
        }
        free(buf);
        return 0;
}
