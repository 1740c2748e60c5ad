/* libFuzzer target: the mountinfo helpers of helper/kernel.c (bsg_mountinfo_root_source(),
 * bsg_mountinfo_has_source(), the bsg_mount_sources index), which read /proc/self/mountinfo (or
 * $BTRFS_SCAN_GATE_MOUNTINFO). Input: mountinfo text (a NUL ends it). Properties: a root source
 * found is a non-empty word without spaces or newlines (of any filesystem: has_source() counts
 * btrfs mounts only, so it need not agree); the index answers as has_source() for every source it holds and for others. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"

#define CHECK(x)                                                                                        \
        do {                                                                                            \
                if (!(x))                                                                               \
                        __builtin_trap();                                                               \
        } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size + 1);
        memcpy(text, data, size);
        text[size] = '\0';
        char *src = NULL;
        int r = bsg_mountinfo_root_source(text, &src);
        if (r == 0) {
                CHECK(src && src[0] && !strpbrk(src, " \n"));
                /* not asked of has_source(): it counts btrfs lines only (issue 18 case 9), and the root
                 * may be any filesystem (an overlay over a btrfs root, an ext4 root) */
                free(src);
        } else
                CHECK(r == -ENOENT && src == NULL);
        struct bsg_mount_sources ms;
        if (bsg_mount_sources_parse(text, &ms) == 0) {
                for (size_t i = 0; i < ms.n; i++) {
                        char *one = strndup(ms.v[i].p, ms.v[i].len);
                        CHECK(one && bsg_mountinfo_has_source(text, one) && bsg_mount_sources_has(&ms, one));
                        free(one);
                }
                static const char *const others[] = {"/dev/vda", "", "/dev/root", "-"};
                for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
                        CHECK(bsg_mount_sources_has(&ms, others[i]) == bsg_mountinfo_has_source(text, others[i]));
                bsg_mount_sources_free(&ms);
        }
        free(text);
        return 0;
}
