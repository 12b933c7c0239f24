/* SPDX-License-Identifier: GPL-2.0-or-later */
/* directive_helpers.c — see directive_helpers.h. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "libhutil/directive.h"
#include "testutil.h"
#include "directive_helpers.h"

void parse_ok(hu_bb_request_t *req, const char *text, hu_bb_source_t src)
{
    hu_error_t err = { "" };

    ck_assert_msg(hu_bb_parse(req, text, strlen(text), src, &err) == 0, "'%s' refused: %s", text,
                  err.text);
}

/* Parse 'text' (into a zeroed request), which must fail with exactly 'msg';
 * the request must be left all zero. */
void parse_bad(const char *text, size_t len, hu_bb_source_t src, const char *msg)
{
    hu_bb_request_t req, zero;
    hu_error_t err = { "" };

    memset(&req, 0, sizeof(req));
    memset(&zero, 0, sizeof(zero));
    errno = 0;
    ck_assert_msg(hu_bb_parse(&req, text, len, src, &err) == -1, "'%s' accepted", text);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_str_eq(err.text, msg);
    ck_assert_msg(memcmp(&req, &zero, sizeof(req)) == 0, "request changed by a failed parse");
}

/* Script-source directive text that must fail with 'msg'. */
void bad(const char *text, const char *msg)
{
    parse_bad(text, strlen(text), HU_BB_SRC_SCRIPT, msg);
}

/* Parse 'text' (script source), validate, and compare the canonical text. */
void canon_eq(const char *text, hu_bb_source_t src, const char *want)
{
    hu_bb_request_t req;
    hu_error_t err = { "" };
    char *f;

    memset(&req, 0, sizeof(req));
    parse_ok(&req, text, src);
    ck_assert_msg(hu_bb_validate(&req, &err) == 0, "%s", err.text);
    f = hu_bb_format(&req);
    ck_assert_ptr_nonnull(f);
    ck_assert_str_eq(f, want);
    free(f);
    hu_bb_request_free(&req);
}

/* Validation must fail with exactly 'msg'. */
void validate_bad(const char *text, hu_bb_source_t src, const char *msg)
{
    hu_bb_request_t req;
    hu_error_t err = { "" };

    memset(&req, 0, sizeof(req));
    parse_ok(&req, text, src);
    errno = 0;
    ck_assert_int_eq(hu_bb_validate(&req, &err), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_str_eq(err.text, msg);
    hu_bb_request_free(&req);
}

bool str_eq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Two requests hold the same directives (line numbers aside). */
bool req_equal(const hu_bb_request_t *a, const hu_bb_request_t *b)
{
    if (a->has_buffer != b->has_buffer || a->capacity != b->capacity || a->nodes != b->nodes
        || !str_eq(a->pool, b->pool) || a->has_hints != b->has_hints || a->w_iter != b->w_iter
        || a->io_volume != b->io_volume || a->phases != b->phases || a->io != b->io
        || a->priority != b->priority || a->hints_learned != b->hints_learned
        || a->nstage_in != b->nstage_in || a->nstage_out != b->nstage_out
        || a->npersist != b->npersist)
        return false;
    for (int k = 0; k < 2; k++) {
        const hu_bb_stage_t *sa = k ? a->stage_out : a->stage_in;
        const hu_bb_stage_t *sb = k ? b->stage_out : b->stage_in;
        for (int i = 0; i < (k ? a->nstage_out : a->nstage_in); i++)
            if (!str_eq(sa[i].source, sb[i].source) || !str_eq(sa[i].destination, sb[i].destination)
                || sa[i].type != sb[i].type)
                return false;
    }
    for (int i = 0; i < a->npersist; i++)
        if (a->persist[i].op != b->persist[i].op || !str_eq(a->persist[i].name, b->persist[i].name)
            || a->persist[i].capacity != b->persist[i].capacity
            || !str_eq(a->persist[i].pool, b->persist[i].pool))
            return false;
    return true;
}
