/* SPDX-License-Identifier: GPL-2.0-or-later */
/* JSON output as util-linux writes it (lsblk --json, findmnt --json): strings always valid JSON. */
#pragma once

#include <stdio.h>

/* Writes S as a JSON string to F, or null when S is NULL. '"' and '\' are escaped, control bytes
 * and DEL become \u00XX, valid UTF-8 passes through, and each byte that is not part of valid UTF-8
 * (a label is bytes, not text) becomes \ufffd, so the output is valid JSON whatever the input. */
void bsg_json_string(FILE *f, const char *s);

/* Writes S as a JSON string, or null when S is NULL or empty (util-linux: null for absent). */
void bsg_json_string_or_null(FILE *f, const char *s);
