/* libFuzzer target: bsg_rauc_parse() (helper/rauc.c).
 * Input: the bytes of a RAUC system.conf, an exact-size buffer without a NUL. Properties: the return
 * value is the number of diagnostics, every diagnostic's line is inside the text, every kept slot has
 * a device and NUL-terminated fields, parsing is deterministic, and a lookup of each kept device finds
 * a slot with that device. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rauc.h"

#define CHECK(x)                                                                                        \
        do {                                                                                            \
                if (!(x))                                                                               \
                        __builtin_trap();                                                               \
        } while (0)

struct diag_state {
        unsigned calls, max_line;
};

static void diag(unsigned line, const char *message, void *userdata)
{
        struct diag_state *s = userdata;
        CHECK(message && *message);
        CHECK(line <= s->max_line); /* 0: about a slot, not a line */
        s->calls++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size ? size : 1);
        memcpy(text, data, size);
        unsigned lines = 1;
        for (size_t i = 0; i < size; i++)
                lines += data[i] == '\n';

        struct diag_state s = {.max_line = lines};
        struct bsg_rauc_conf a, b;
        int r = bsg_rauc_parse(text, size, &a, diag, &s);
        CHECK(r >= 0 && (unsigned)r == s.calls);
        for (size_t i = 0; i < a.n; i++) {
                const struct bsg_rauc_slot *x = &a.v[i];
                CHECK(memchr(x->name, '\0', sizeof(x->name)) && memchr(x->class_, '\0', sizeof(x->class_)));
                CHECK(memchr(x->device, '\0', sizeof(x->device)) && x->device[0]);
                CHECK(memchr(x->bootname, '\0', sizeof(x->bootname)) && memchr(x->parent, '\0', sizeof(x->parent)));
        }
        CHECK(bsg_rauc_parse(text, size, &b, NULL, NULL) == r);
        CHECK(b.n == a.n && (a.n == 0 || memcmp(a.v, b.v, a.n * sizeof(*a.v)) == 0));
        bsg_rauc_free(&a);
        bsg_rauc_free(&b);
        free(text);
        return 0;
}
