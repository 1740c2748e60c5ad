/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure kernel command-line parsing (the text of /proc/cmdline in, values out). */
#pragma once

#include <stddef.h>

/* Finds KEY in CMDLINE (LEN bytes, need not be NUL-terminated): words separated by whitespace,
 * double quotes group ("k=v w" or k="v w"), '-' and '_' in names compare equal as in the kernel's
 * parameq(). The last occurrence wins. A bare "KEY" (no '=') gives "". Returns 0 and a newly
 * allocated value without quotes in *ret_value, -ENOENT if absent, -ENOMEM. */
int bsg_cmdline_get(const char *cmdline, size_t len, const char *key, char **ret_value);
