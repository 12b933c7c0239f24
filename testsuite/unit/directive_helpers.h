/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * directive_helpers.h — what the two test programs of the directive grammar
 * (test_directive.c: verbs, canonical text, sources; test_directive_errors.c:
 * errors, bytes, path checks) share: parse and expect success or an exact error,
 * canonical text, request equality.
 */
#ifndef HARMONIA_DIRECTIVE_HELPERS_H
#define HARMONIA_DIRECTIVE_HELPERS_H

#include <stdbool.h>
#include <stddef.h>

#include "libhutil/directive.h"

#define GiB (1ULL << 30)

#define VERBS \
    "jobbuffer, iohints, stage_in, stage_out, create_persistent, " \
    "use_persistent, destroy_persistent"
#define NAME_RULE "(a letter, then letters, digits, '_', '-' or '.', at most 63)"

void parse_ok(hu_bb_request_t *req, const char *text, hu_bb_source_t src);
void parse_bad(const char *text, size_t len, hu_bb_source_t src, const char *msg);
void bad(const char *text, const char *msg);
void canon_eq(const char *text, hu_bb_source_t src, const char *want);
void validate_bad(const char *text, hu_bb_source_t src, const char *msg);
bool str_eq(const char *a, const char *b);
bool req_equal(const hu_bb_request_t *a, const hu_bb_request_t *b);

#endif
