/* libFuzzer target: the protection verdict (helper/protection.c).
 * Input: two skip lists separated by the first NUL (the computed and the kernel's), then flag bytes.
 * Properties: bsg_skip_list_missing() counts at most the computed list's entries, names one of them
 * when it counts any, and none when the kernel's list is the computed one; the verdict is one line,
 * fails only in the two failing states, and gives a fix exactly when it fails. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protection.h"

#define CHECK(x)                                                                                        \
        do {                                                                                            \
                if (!(x))                                                                               \
                        __builtin_trap();                                                               \
        } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *buf = malloc(size + 2);
        if (!buf)
                return 0;
        memcpy(buf, data, size);
        buf[size] = buf[size + 1] = '\0';
        const char *computed = buf, *current = buf + strlen(buf) + 1;
        if (current > buf + size)
                current = buf + size;
        size_t rest = (size_t)(buf + size - current) > strlen(current) + 1 ? (size_t)(buf + size - current) - strlen(current) - 1 : 0;
        const uint8_t *flags = (const uint8_t *)current + strlen(current) + 1;
        uint8_t f = rest ? flags[0] : 0;

        char first[64];
        size_t n = bsg_skip_list_count(computed);
        size_t missing = bsg_skip_list_missing(computed, current, first, sizeof(first));
        CHECK(missing <= n);
        CHECK((missing == 0) == (first[0] == '\0'));
        CHECK(bsg_skip_list_missing(computed, computed, first, sizeof(first)) == 0);
        CHECK(first[0] == '\0');
        CHECK(bsg_skip_list_missing(computed, NULL, first, sizeof(first)) == n);

        struct bsg_protection_input in = {
                .control = f & 1, .skip_scan = f & 2, .skip_scan_writable = f & 4, .temp_fsid = f & 8,
                .running = (f & 16) ? current : "", .running_patched = f & 32,
                .patched_other = (f & 64) ? computed : NULL, .dkms_source = (f & 128) ? current : NULL,
                .n_listed = n, .n_missing = missing, .first_missing = first,
        };
        struct bsg_protection v;
        bsg_protection_decide(&in, &v);
        CHECK(v.failed == (v.state == BSG_PROTECTION_MODULE_NOT_RUNNING || v.state == BSG_PROTECTION_LIST_NOT_APPLIED));
        CHECK(v.failed == (v.fix[0] != '\0'));
        CHECK(v.verdict[0] != '\0' && strlen(v.verdict) < sizeof(v.verdict));
        CHECK(strcmp(bsg_protection_state_name(v.state), "unknown") != 0);
        free(buf);
        return 0;
}
