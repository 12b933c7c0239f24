/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_directive.c — libFuzzer harness for the #BB_HARMONIA grammar (libhutil).
 *
 * Each input is read
 *   1. as a batch script: hu_bb_check_foreign() (DataWarp's lines; and the bytes
 *      as one --bb item through hu_bb_dw_equivalent() into a small buffer), then
 *      hu_bb_collect_script(), then hu_bb_parse(HU_BB_SRC_SCRIPT);
 *   2. as the text of sbatch --bb: hu_bb_parse(HU_BB_SRC_BB_OPTION) on the raw bytes
 *      (NUL bytes included, which must be refused);
 *   3. as directive text: hu_bb_parse(HU_BB_SRC_SCRIPT) on the raw bytes;
 *   4. as --bb text merged into a request that already holds directives;
 *   5. as a size, a bandwidth and a duration (hu_parse_*).
 *
 * The oracles (a failed one calls abort(), which libFuzzer reports as a crash):
 *   - a failed hu_bb_parse() leaves the request exactly as it was (all bytes of the
 *     struct, and its canonical text) and fills a message that starts with
 *     "#BB_HARMONIA" and is NUL-terminated;
 *   - a request that parsed is formatted by hu_bb_format(); that canonical text must
 *     parse again, both as canonical text and as --bb text (the Slurm plugins keep
 *     it in the job's burst_buffer field and read it back as --bb), and format to
 *     the identical string; hu_bb_validate() must give the same answer for both;
 *     this is checked before and after hu_bb_validate() (which normalises defaults);
 *   - a size that parsed is written by hu_bb_size_str() in a form hu_parse_size()
 *     reads back to the same number of bytes;
 * and AddressSanitizer, UndefinedBehaviorSanitizer and LeakSanitizer watch the
 * rest (everything is freed on every path).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhutil/directive.h"
#include "libhutil/hutil.h"

#define CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "fuzz_directive: %s:%d: %s failed: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__); \
            fputc('\n', stderr); \
            abort(); \
        } \
    } while (0)

static void check_message(const hu_error_t *err)
{
    CHECK(memchr(err->text, '\0', sizeof(err->text)) != NULL, "error text is not NUL-terminated");
    CHECK(strncmp(err->text, HU_BB_PREFIX, strlen(HU_BB_PREFIX)) == 0,
          "error text '%s' does not start with " HU_BB_PREFIX, err->text);
}

/* parse(format(r)) formats to format(r), as canonical text and as --bb text. */
static void check_round_trip(const hu_bb_request_t *req, int validate_rc)
{
    static const hu_bb_source_t srcs[] = { HU_BB_SRC_CANONICAL, HU_BB_SRC_BB_OPTION };
    char *canon = hu_bb_format(req);

    CHECK(canon != NULL, "hu_bb_format() failed");
    for (size_t i = 0; i < sizeof(srcs) / sizeof(srcs[0]); i++) {
        hu_bb_request_t again;
        hu_error_t err;
        char *canon2;

        memset(&again, 0, sizeof(again));
        CHECK(hu_bb_parse(&again, canon, strlen(canon), srcs[i], &err) == 0,
              "the canonical text does not parse (source %d): %s\n--- text:\n%s", (int)srcs[i],
              err.text, canon);
        canon2 = hu_bb_format(&again);
        CHECK(canon2 != NULL, "hu_bb_format() failed");
        CHECK(strcmp(canon, canon2) == 0,
              "parse(format(r)) formats differently (source %d)\n--- first:\n%s"
              "--- second:\n%s",
              (int)srcs[i], canon, canon2);
        if (validate_rc != 1) {
            int rc = hu_bb_validate(&again, &err);
            CHECK(rc == validate_rc,
                  "hu_bb_validate() gave %d, then %d on the "
                  "canonical text (%s)\n%s",
                  validate_rc, rc, err.text, canon);
        }
        free(canon2);
        hu_bb_request_free(&again);
    }
    free(canon);
}

/* Parse into an empty request and check everything that follows. */
static void check_parse(const char *text, size_t len, hu_bb_source_t src)
{
    hu_bb_request_t req, zero;
    hu_error_t err;
    int rc;

    memset(&req, 0, sizeof(req));
    memset(&zero, 0, sizeof(zero));
    if (hu_bb_parse(&req, text, len, src, &err) < 0) {
        check_message(&err);
        CHECK(memcmp(&req, &zero, sizeof(req)) == 0,
              "a failed hu_bb_parse() changed the request (%s)", err.text);
        return;
    }
    check_round_trip(&req, 1); /* 1: do not compare hu_bb_validate() */
    rc = hu_bb_validate(&req, &err);
    if (rc < 0)
        CHECK(err.text[0] != '\0' && memchr(err.text, '\0', sizeof(err.text)),
              "hu_bb_validate() failed without a message");
    check_round_trip(&req, rc);
    hu_bb_request_free(&req);
}

/* Parse into a request that already holds directives: on failure it must be left
 * exactly as it was; on success its earlier directives are still there. */
static void check_merge(const char *text, size_t len)
{
    static const char base[] =
        "#BB_HARMONIA use_persistent name=fuzzbase\n"
        "#BB_HARMONIA stage_in source=/pfs/base destination=$HARMONIA_BB/base\n";
    hu_bb_request_t req, saved;
    hu_error_t err;
    char *before, *after;

    memset(&req, 0, sizeof(req));
    CHECK(hu_bb_parse(&req, base, strlen(base), HU_BB_SRC_CANONICAL, &err) == 0, "base request: %s",
          err.text);
    memcpy(&saved, &req, sizeof(req));
    before = hu_bb_format(&req);
    CHECK(before != NULL, "hu_bb_format() failed");
    if (hu_bb_parse(&req, text, len, HU_BB_SRC_BB_OPTION, &err) < 0) {
        check_message(&err);
        CHECK(memcmp(&req, &saved, sizeof(req)) == 0,
              "a failed hu_bb_parse() changed the request (%s)", err.text);
        after = hu_bb_format(&req);
        CHECK(after && strcmp(before, after) == 0, "canonical text changed");
    } else {
        CHECK(req.npersist >= 1 && strcmp(req.persist[0].name, "fuzzbase") == 0
                  && req.nstage_in >= 1 && strcmp(req.stage_in[0].source, "/pfs/base") == 0,
              "merging lost the earlier directives");
        check_round_trip(&req, 1);
        after = NULL;
    }
    free(before);
    free(after);
    hu_bb_request_free(&req);
}

static void check_units(const char *s)
{
    uint64_t v, v2;
    double d;
    hu_error_t err;
    char buf[64];

    for (int flags = 0; flags <= HU_SIZE_BARE_BYTES; flags++) {
        if (hu_parse_size(s, flags, &v, &err) == 0) {
            hu_bb_size_str(v, buf, sizeof(buf));
            CHECK(hu_parse_size(buf, 0, &v2, &err) == 0 && v2 == v,
                  "size '%s' = %llu B is written '%s', read back as %llu (%s)", s,
                  (unsigned long long)v, buf, (unsigned long long)v2, err.text);
            hu_size_str(v, buf, sizeof(buf));
        }
        if (hu_parse_size_d(s, flags, &d, &err) == 0)
            hu_size_str_si(d, buf, sizeof(buf));
    }
    if (hu_parse_bandwidth(s, &d, &err) == 0)
        hu_size_str_si(d, buf, sizeof(buf));
    for (int flags = 0; flags <= HU_DUR_BARE_SECONDS; flags++)
        if (hu_parse_duration(s, flags, &d, &err) == 0)
            hu_duration_str(d, buf, sizeof(buf));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    char *collected;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    /* 1. a batch script (a C string: it stops at the first NUL) */
    {
        hu_error_t ferr = { "" };
        if (hu_bb_check_foreign(text, &ferr) < 0)
            CHECK(strncmp(ferr.text, "#BB_HARMONIA line ", 18) == 0
                      && memchr(ferr.text, '\0', sizeof(ferr.text)) != NULL,
                  "hu_bb_check_foreign() message: %.80s", ferr.text);
    }
    collected = hu_bb_collect_script(text);
    CHECK(collected != NULL, "hu_bb_collect_script() failed");
    check_parse(collected, strlen(collected), HU_BB_SRC_SCRIPT);
    free(collected);

    /* a --bb item that may be DataWarp's: its equivalent fits the buffer given */
    {
        char eq[40];
        int r = hu_bb_dw_equivalent(text, size, eq, sizeof(eq));
        CHECK(r >= -1 && r <= 1, "hu_bb_dw_equivalent() returned %d", r);
        if (r == 1)
            CHECK(memchr(eq, '\0', sizeof(eq)) != NULL, "equivalent not terminated");
    }

    /* 2, 3. the raw bytes as --bb text and as directive text */
    check_parse(text, size, HU_BB_SRC_BB_OPTION);
    check_parse(text, size, HU_BB_SRC_SCRIPT);
    (void)hu_bb_has_directives(text, true);
    (void)hu_bb_has_directives(text, false);

    /* 4. merged into a request that already holds directives */
    check_merge(text, size);

    /* 5. short inputs as sizes, bandwidths and durations */
    if (size <= 64)
        check_units(text);

    free(text);
    return 0;
}

/*
 * vi: ts=4 sw=4 expandtab
 */
