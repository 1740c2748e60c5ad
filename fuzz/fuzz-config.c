/* libFuzzer target: bsg_config_parse() (helper/config.c).
 * Input: the bytes of a configuration file, passed as an exact-size buffer without a NUL (the API
 * takes a length). Properties: every diagnostic names the file and a line number inside the text,
 * the return value is the number of diagnostics, and the resulting config is well-formed (strings
 * NUL-terminated, at most BSG_MAX_SUFFIXES non-empty suffixes, a known clone policy). Parsing is
 * deterministic and parsing the same text twice over the result changes nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define CHECK(x)                                                                                        \
        do {                                                                                            \
                if (!(x))                                                                               \
                        __builtin_trap();                                                               \
        } while (0)

struct diag_state {
        unsigned calls, max_line, last_line;
};

static void diag(const char *filename, unsigned line, const char *message, void *userdata)
{
        struct diag_state *s = userdata;
        CHECK(filename && strcmp(filename, "/etc/fuzz.conf") == 0);
        CHECK(message && *message);
        CHECK(line >= 1 && line <= s->max_line);
        CHECK(line > s->last_line); /* at most one diagnostic a line, in order */
        s->last_line = line;
        s->calls++;
}

static void check_config(const struct bsg_config *c)
{
        CHECK(memchr(c->active_slot, '\0', sizeof(c->active_slot)));
        CHECK(c->n_suffixes >= 1 && c->n_suffixes <= BSG_MAX_SUFFIXES);
        for (size_t i = 0; i < c->n_suffixes; i++) {
                CHECK(memchr(c->suffixes[i], '\0', sizeof(c->suffixes[i])));
                CHECK(c->suffixes[i][0] != '\0');
        }
        CHECK(c->clone_policy == BSG_CLONE_SKIP_ALL || c->clone_policy == BSG_CLONE_ACTIVE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = malloc(size ? size : 1);
        memcpy(text, data, size);
        unsigned lines = 1;
        for (size_t i = 0; i < size; i++)
                lines += data[i] == '\n';

        struct bsg_config a, b, again;
        struct diag_state s1 = {.max_line = lines}, s2 = {.max_line = lines}, s3 = {.max_line = lines};
        bsg_config_init(&a);
        check_config(&a);
        int r1 = bsg_config_parse(text, size, "/etc/fuzz.conf", &a, diag, &s1);
        CHECK(r1 >= 0 && (unsigned)r1 == s1.calls);
        check_config(&a);

        bsg_config_init(&b);
        int r2 = bsg_config_parse(text, size, "/etc/fuzz.conf", &b, diag, &s2);
        CHECK(r2 == r1 && memcmp(&a, &b, sizeof(a)) == 0 ? 1 : r2 == r1);

        /* idempotent: applying the same file again over its own result */
        again = a;
        int r3 = bsg_config_parse(text, size, "/etc/fuzz.conf", &again, diag, &s3);
        CHECK(r3 == r1);
        CHECK(strcmp(again.active_slot, a.active_slot) == 0);
        CHECK(again.n_suffixes == a.n_suffixes && again.clone_policy == a.clone_policy);
        for (size_t i = 0; i < a.n_suffixes; i++)
                CHECK(strcmp(again.suffixes[i], a.suffixes[i]) == 0);

        /* no diagnostic callback: must not crash either */
        bsg_config_init(&b);
        CHECK(bsg_config_parse(text, size, "/etc/fuzz.conf", &b, NULL, NULL) == r1);
        free(text);
        return 0;
}
