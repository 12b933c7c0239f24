/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_directive.c — the #BB_HARMONIA directive grammar (doc/design.md §4, a
 * contract): every verb and key, the canonical text and merging.  Its errors,
 * long lines, NUL and control bytes, non-ASCII text and the stage path checks are
 * in test_directive_errors.c.
 */
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

/* ------------------------------------------------------------------ verbs */

START_TEST(test_jobbuffer)
{
    hu_bb_request_t req;

    memset(&req, 0, sizeof(req));
    parse_ok(&req, "#BB_HARMONIA jobbuffer capacity=200GiB nodes=2 pool=nvme", HU_BB_SRC_SCRIPT);
    ck_assert(req.has_buffer);
    ck_assert_uint_eq(req.capacity, 200 * GiB);
    ck_assert_uint_eq(req.nodes, 2);
    ck_assert_str_eq(req.pool, "nvme");
    ck_assert(!req.has_hints);
    hu_bb_request_free(&req);
    ck_assert(!req.has_buffer && !req.pool); /* zeroed by free */

    /* defaults; keys in any order; extra blanks and tabs */
    parse_ok(&req, "#BB_HARMONIA \t jobbuffer   capacity=1.5TB \t", HU_BB_SRC_SCRIPT);
    ck_assert_uint_eq(req.capacity, 1500000000000ULL);
    ck_assert_uint_eq(req.nodes, 0);
    ck_assert_ptr_null(req.pool);
    hu_bb_request_free(&req);
    parse_ok(&req, "#BB_HARMONIA jobbuffer pool=a.b-c_9 nodes=100000 capacity=1B",
             HU_BB_SRC_SCRIPT);
    ck_assert_uint_eq(req.capacity, 1);
    ck_assert_uint_eq(req.nodes, 100000);
    ck_assert_str_eq(req.pool, "a.b-c_9");
    hu_bb_request_free(&req);
}
END_TEST

START_TEST(test_iohints)
{
    hu_bb_request_t req;
    hu_error_t err;

    memset(&req, 0, sizeof(req));
    parse_ok(&req,
             "#BB_HARMONIA iohints w_iter=10m io_volume=50GiB phases=20 "
             "io=readwrite priority=10",
             HU_BB_SRC_SCRIPT);
    ck_assert(req.has_hints);
    ck_assert_double_eq(req.w_iter, 600);
    ck_assert_uint_eq(req.io_volume, 50 * GiB);
    ck_assert_uint_eq(req.phases, 20);
    ck_assert_int_eq(req.io, HU_BB_IO_READWRITE);
    ck_assert_int_eq(req.priority, 10);
    ck_assert(!req.hints_learned);
    hu_bb_request_free(&req);

    /* defaults: unset until hu_bb_validate() normalises them */
    parse_ok(&req, "#BB_HARMONIA iohints w_iter=01:30:00 io_volume=1MB", HU_BB_SRC_SCRIPT);
    ck_assert_double_eq(req.w_iter, 5400);
    ck_assert_uint_eq(req.phases, 0);
    ck_assert_int_eq(req.io, HU_BB_IO_UNSET);
    ck_assert_int_eq(req.priority, 0);
    ck_assert_int_eq(hu_bb_validate(&req, &err), 0);
    ck_assert_int_eq(req.io, HU_BB_IO_WRITE);
    ck_assert_int_eq(req.priority, 1);
    hu_bb_request_free(&req);

    parse_ok(&req,
             "#BB_HARMONIA iohints w_iter=1.5h io_volume=1KiB io=read "
             "priority=1 phases=100000000",
             HU_BB_SRC_SCRIPT);
    ck_assert_double_eq(req.w_iter, 5400);
    ck_assert_int_eq(req.io, HU_BB_IO_READ);
    ck_assert_uint_eq(req.phases, 100000000);
    hu_bb_request_free(&req);
    parse_ok(&req, "#BB_HARMONIA iohints w_iter=2-00:00:01 io_volume=1B io=write",
             HU_BB_SRC_SCRIPT);
    ck_assert_double_eq(req.w_iter, 2 * 86400 + 1);
    ck_assert_int_eq(req.io, HU_BB_IO_WRITE);
    hu_bb_request_free(&req);

    /* hints learned from history (job_submit/harmonia) keep their mark through
     * the canonical form; source=user is the default and is not written */
    parse_ok(&req, "#BB_HARMONIA iohints w_iter=60s io_volume=1GiB source=learned",
             HU_BB_SRC_SCRIPT);
    ck_assert(req.hints_learned);
    ck_assert_int_eq(hu_bb_validate(&req, &err), 0);
    char *canon = hu_bb_format(&req);
    ck_assert_str_eq(canon, "#BB_HARMONIA iohints w_iter=60s io_volume=1GiB io=write "
                            "priority=1 source=learned\n");
    free(canon);
    hu_bb_request_free(&req);
    parse_ok(&req, "#BB_HARMONIA iohints w_iter=60s io_volume=1GiB source=user", HU_BB_SRC_SCRIPT);
    ck_assert(!req.hints_learned);
    hu_bb_request_free(&req);
    ck_assert_int_eq(hu_bb_parse(&req, "iohints w_iter=1s io_volume=1B source=guess", 43,
                                 HU_BB_SRC_BB_OPTION, &err),
                     -1);
    ck_assert_str_eq(err.text, "#BB_HARMONIA --bb item 1: iohints: source 'guess' is "
                               "not user or learned");
    /* interpose: the job asks for the interposer or refuses it; kept in the
     * canonical text; anything but yes or no refused */
    parse_ok(&req, "#BB_HARMONIA iohints w_iter=60s io_volume=1GiB interpose=no", HU_BB_SRC_SCRIPT);
    ck_assert_int_eq(req.interpose, -1);
    canon = hu_bb_format(&req);
    ck_assert_str_eq(canon, "#BB_HARMONIA iohints interpose=no w_iter=60s io_volume=1GiB\n");
    free(canon);
    hu_bb_request_free(&req);
    /* the line as written is a prefix of the normalised one (the plugin finds the
     * script's directives in the job's canonical text that way) */
    parse_ok(&req, "#BB_HARMONIA iohints w_iter=60s io_volume=1GiB interpose=yes",
             HU_BB_SRC_SCRIPT);
    canon = hu_bb_format(&req);
    ck_assert_int_eq(hu_bb_validate(&req, &err), 0);
    char *norm = hu_bb_format(&req);
    ck_assert_msg(strncmp(norm, canon, strlen(canon) - 1) == 0, "'%s' is not a prefix of '%s'",
                  canon, norm);
    free(canon);
    free(norm);
    hu_bb_request_free(&req);
    parse_ok(&req, "#BB_HARMONIA iohints w_iter=60s io_volume=1GiB interpose=yes",
             HU_BB_SRC_SCRIPT);
    ck_assert_int_eq(req.interpose, 1);
    hu_bb_request_free(&req);
    parse_ok(&req, "#BB_HARMONIA iohints w_iter=60s io_volume=1GiB", HU_BB_SRC_SCRIPT);
    ck_assert_int_eq(req.interpose, 0);
    hu_bb_request_free(&req);
    ck_assert_int_eq(hu_bb_parse(&req, "iohints w_iter=1s io_volume=1B interpose=maybe", 46,
                                 HU_BB_SRC_BB_OPTION, &err),
                     -1);
    ck_assert_str_eq(err.text, "#BB_HARMONIA --bb item 1: iohints: interpose 'maybe' is "
                               "not yes or no");
    /* "iohints interpose=yes" alone: the interposer without hints (it learns them,
     * or job_submit gives the learned ones); its canonical line is itself, and a
     * prefix of the line once learned hints are added */
    parse_ok(&req, "#BB_HARMONIA iohints interpose=yes", HU_BB_SRC_SCRIPT);
    ck_assert_int_eq(req.interpose, 1);
    ck_assert(!req.has_hints);
    canon = hu_bb_format(&req);
    ck_assert_str_eq(canon, "#BB_HARMONIA iohints interpose=yes\n");
    req.has_hints = req.hints_learned = true;
    req.w_iter = 12;
    req.io_volume = 1 << 20;
    ck_assert_int_eq(hu_bb_validate(&req, &err), 0);
    norm = hu_bb_format(&req);
    ck_assert_str_eq(norm, "#BB_HARMONIA iohints interpose=yes w_iter=12s io_volume=1MiB "
                           "io=write priority=1 source=learned\n");
    free(canon);
    free(norm);
    hu_bb_request_free(&req);
    parse_ok(&req, "iohints interpose=no", HU_BB_SRC_BB_OPTION);
    ck_assert_int_eq(req.interpose, -1);
    canon = hu_bb_format(&req);
    ck_assert_str_eq(canon, "#BB_HARMONIA iohints interpose=no\n");
    free(canon);
    hu_bb_request_free(&req);
    /* with any other key the hints are required as before */
    ck_assert_int_eq(
        hu_bb_parse(&req, "iohints interpose=yes phases=3", 30, HU_BB_SRC_BB_OPTION, &err), -1);
    ck_assert_msg(strstr(err.text, "w_iter"), "%s", err.text);
    ck_assert_int_eq(hu_bb_parse(&req, "iohints interpose=perhaps", 25, HU_BB_SRC_BB_OPTION, &err),
                     -1);
    ck_assert_str_eq(err.text, "#BB_HARMONIA --bb item 1: iohints: interpose 'perhaps' is "
                               "not yes or no");
    ck_assert_int_eq(hu_bb_parse(&req,
                                 "#BB_HARMONIA iohints interpose=yes\n"
                                 "#BB_HARMONIA iohints w_iter=1s io_volume=1B",
                                 78, HU_BB_SRC_SCRIPT, &err),
                     -1);
    ck_assert_msg(strstr(err.text, "a second iohints"), "%s", err.text);
}
END_TEST

START_TEST(test_stage)
{
    hu_bb_request_t req;

    memset(&req, 0, sizeof(req));
    parse_ok(&req,
             "#BB_HARMONIA stage_in source=/pfs/in destination=$HARMONIA_BB/in "
             "type=directory\n"
             "#BB_HARMONIA stage_in source=/pfs/f destination=${HARMONIA_BB}/f "
             "type=file\n"
             "#BB_HARMONIA stage_in source=/pfs/all destination=$HARMONIA_BB\n"
             "#BB_HARMONIA stage_out source=$HARMONIA_BB/out destination=/pfs/out\n"
             "#BB_HARMONIA stage_out destination=/pfs/..x/y.. type=file "
             "source=${HARMONIA_BB}/a..b\n",
             HU_BB_SRC_SCRIPT);
    ck_assert_int_eq(req.nstage_in, 3);
    ck_assert_int_eq(req.nstage_out, 2);
    ck_assert_str_eq(req.stage_in[0].source, "/pfs/in");
    ck_assert_str_eq(req.stage_in[0].destination, "$HARMONIA_BB/in");
    ck_assert_int_eq(req.stage_in[0].type, HU_BB_TYPE_DIRECTORY);
    ck_assert_int_eq(req.stage_in[0].line, 1);
    ck_assert_str_eq(req.stage_in[1].destination, "${HARMONIA_BB}/f");
    ck_assert_int_eq(req.stage_in[1].type, HU_BB_TYPE_FILE);
    ck_assert_str_eq(req.stage_in[2].destination, "$HARMONIA_BB");
    ck_assert_int_eq(req.stage_in[2].type, HU_BB_TYPE_UNSET);
    ck_assert_str_eq(req.stage_out[0].source, "$HARMONIA_BB/out");
    ck_assert_str_eq(req.stage_out[0].destination, "/pfs/out");
    ck_assert_int_eq(req.stage_out[0].line, 4);
    ck_assert_str_eq(req.stage_out[1].source, "${HARMONIA_BB}/a..b");
    ck_assert_str_eq(req.stage_out[1].destination, "/pfs/..x/y..");
    hu_bb_request_free(&req);
}
END_TEST

START_TEST(test_persistent)
{
    hu_bb_request_t req;
    hu_error_t err;

    memset(&req, 0, sizeof(req));
    parse_ok(&req,
             "#BB_HARMONIA create_persistent name=ckpt capacity=1TiB pool=nvme\n"
             "#BB_HARMONIA create_persistent name=b2 capacity=1GB\n"
             "#BB_HARMONIA use_persistent name=ckpt\n"
             "#BB_HARMONIA destroy_persistent name=old\n",
             HU_BB_SRC_SCRIPT);
    ck_assert_int_eq(req.npersist, 4);
    ck_assert_int_eq(req.persist[0].op, HU_BB_PERSIST_CREATE);
    ck_assert_str_eq(req.persist[0].name, "ckpt");
    ck_assert_uint_eq(req.persist[0].capacity, 1ULL << 40);
    ck_assert_str_eq(req.persist[0].pool, "nvme");
    ck_assert_ptr_null(req.persist[1].pool);
    ck_assert_int_eq(req.persist[2].op, HU_BB_PERSIST_USE);
    ck_assert_int_eq(req.persist[2].line, 3);
    ck_assert_uint_eq(req.persist[2].capacity, 0);
    ck_assert_int_eq(req.persist[3].op, HU_BB_PERSIST_DESTROY);
    ck_assert_str_eq(req.persist[3].name, "old");
    ck_assert_int_eq(hu_bb_validate(&req, &err), 0);
    hu_bb_request_free(&req);

    /* use and destroy of one name, and create + use, are allowed */
    parse_ok(&req,
             "#BB_HARMONIA use_persistent name=x\n"
             "#BB_HARMONIA destroy_persistent name=x\n"
             "#BB_HARMONIA create_persistent name=y capacity=1G\n"
             "#BB_HARMONIA use_persistent name=y",
             HU_BB_SRC_SCRIPT);
    ck_assert_int_eq(hu_bb_validate(&req, &err), 0);
    hu_bb_request_free(&req);
}
END_TEST

/* ------------------------------------------------------------------ canonical text */

START_TEST(test_canonical)
{
    canon_eq("#BB_HARMONIA jobbuffer capacity=200GiB nodes=2 pool=nvme", HU_BB_SRC_SCRIPT,
             "#BB_HARMONIA jobbuffer capacity=200GiB nodes=2 pool=nvme\n");
    canon_eq("jobbuffer capacity=0.5GiB", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA jobbuffer capacity=512MiB\n");
    canon_eq("jobbuffer capacity=1TB", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA jobbuffer capacity=1TB\n");
    canon_eq("jobbuffer capacity=1500MB", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA jobbuffer capacity=1500MB\n");
    canon_eq("jobbuffer capacity=1024000B", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA jobbuffer capacity=1000KiB\n");
    canon_eq("jobbuffer capacity=1B", HU_BB_SRC_BB_OPTION, "#BB_HARMONIA jobbuffer capacity=1B\n");
    canon_eq("jobbuffer capacity=1025B", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA jobbuffer capacity=1025B\n");
    canon_eq("jobbuffer capacity=9223372036854775808B", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA jobbuffer capacity=8EiB\n");
    canon_eq("jobbuffer capacity=18446744073709551615B", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA jobbuffer capacity=18446744073709551615B\n");
    /* w_iter in seconds, to the microsecond; defaults written after validation */
    canon_eq("iohints w_iter=10m io_volume=50GiB", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA iohints w_iter=600s io_volume=50GiB io=write "
             "priority=1\n");
    canon_eq("iohints w_iter=0.1s io_volume=1KB phases=3 io=read priority=7", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA iohints w_iter=0.1s io_volume=1KB phases=3 io=read "
             "priority=7\n");
    canon_eq("iohints w_iter=0.25m io_volume=1KB", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA iohints w_iter=15s io_volume=1KB io=write priority=1\n");
    canon_eq("iohints w_iter=0.000001s io_volume=1KB", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA iohints w_iter=0.000001s io_volume=1KB io=write "
             "priority=1\n");
    canon_eq("iohints w_iter=1.0000004s io_volume=1KB", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA iohints w_iter=1s io_volume=1KB io=write priority=1\n");
    canon_eq("iohints w_iter=0.0000007s io_volume=1KB", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA iohints w_iter=0.000001s io_volume=1KB io=write "
             "priority=1\n");
    canon_eq("iohints w_iter=1000000000s io_volume=1KB", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA iohints w_iter=1000000000s io_volume=1KB io=write "
             "priority=1\n");
    canon_eq("iohints w_iter=2-03:04:05 io_volume=1KB", HU_BB_SRC_BB_OPTION,
             "#BB_HARMONIA iohints w_iter=183845s io_volume=1KB io=write "
             "priority=1\n");
}
END_TEST

/* A whole request: directives in the canonical order. */
START_TEST(test_canonical_order)
{
    canon_eq("#BB_HARMONIA destroy_persistent name=old\n"
             "#BB_HARMONIA stage_out source=$HARMONIA_BB/out destination=/pfs/out "
             "type=directory\n"
             "#BB_HARMONIA stage_in source=/pfs/in destination=$HARMONIA_BB/in\n"
             "#BB_HARMONIA use_persistent name=shared\n"
             "#BB_HARMONIA create_persistent name=ckpt capacity=1TiB pool=nvme\n"
             "#BB_HARMONIA iohints w_iter=10m io_volume=50GiB phases=20\n"
             "#BB_HARMONIA jobbuffer capacity=200GiB nodes=2\n",
             HU_BB_SRC_SCRIPT,
             "#BB_HARMONIA jobbuffer capacity=200GiB nodes=2\n"
             "#BB_HARMONIA iohints w_iter=600s io_volume=50GiB phases=20 io=write "
             "priority=1\n"
             "#BB_HARMONIA create_persistent name=ckpt capacity=1TiB pool=nvme\n"
             "#BB_HARMONIA use_persistent name=shared\n"
             "#BB_HARMONIA stage_in source=/pfs/in destination=$HARMONIA_BB/in\n"
             "#BB_HARMONIA stage_out source=$HARMONIA_BB/out destination=/pfs/out "
             "type=directory\n"
             "#BB_HARMONIA destroy_persistent name=old\n");
    canon_eq("", HU_BB_SRC_SCRIPT, "");
}
END_TEST

/* Quoted values: blanks, quotes, backslashes and ';' survive the round trip. */
START_TEST(test_quoted_values)
{
    hu_bb_request_t req;

    memset(&req, 0, sizeof(req));
    parse_ok(&req,
             "#BB_HARMONIA stage_in source=\"/pfs/my data\" "
             "destination=\"$HARMONIA_BB/a \\\"b\\\" \\\\c\\x\" type=file",
             HU_BB_SRC_SCRIPT);
    ck_assert_str_eq(req.stage_in[0].source, "/pfs/my data");
    ck_assert_str_eq(req.stage_in[0].destination, "$HARMONIA_BB/a \"b\" \\c\\x");
    hu_bb_request_free(&req);

    canon_eq("#BB_HARMONIA stage_in source=\"/pfs/my data\" "
             "destination=\"$HARMONIA_BB/a \\\"b\\\" \\\\c\"\n"
             "#BB_HARMONIA stage_in source=\"/pfs/plain\" destination=$HARMONIA_BB/q\"\n"
             "#BB_HARMONIA stage_in source=\"/pfs/tab\there\" destination=$HARMONIA_BB\n"
             "#BB_HARMONIA stage_in source=/pfs/a;b destination=$HARMONIA_BB/c\\d\n"
             "#BB_HARMONIA jobbuffer capacity=\"1 GiB\"\n",
             HU_BB_SRC_SCRIPT,
             "#BB_HARMONIA jobbuffer capacity=1GiB\n"
             "#BB_HARMONIA stage_in source=\"/pfs/my data\" "
             "destination=\"$HARMONIA_BB/a \\\"b\\\" \\\\c\"\n"
             "#BB_HARMONIA stage_in source=/pfs/plain destination=\"$HARMONIA_BB/q\\\"\"\n"
             "#BB_HARMONIA stage_in source=\"/pfs/tab\there\" destination=$HARMONIA_BB\n"
             "#BB_HARMONIA stage_in source=\"/pfs/a;b\" destination=\"$HARMONIA_BB/c\\\\d\"\n");

    /* in --bb, a ';' inside a quoted value does not end the directive */
    parse_ok(&req,
             "stage_in source=\"/pfs/a;b\" destination=$HARMONIA_BB;"
             "jobbuffer capacity=1GiB",
             HU_BB_SRC_BB_OPTION);
    ck_assert_str_eq(req.stage_in[0].source, "/pfs/a;b");
    ck_assert(req.has_buffer);
    hu_bb_request_free(&req);
    /* but one in a bare value does */
    parse_bad("stage_in source=/pfs/a;b destination=$HARMONIA_BB", 49, HU_BB_SRC_BB_OPTION,
              "#BB_HARMONIA --bb item 1: stage_in: destination "
              "is missing (write destination=...)");
}
END_TEST

START_TEST(test_round_trip)
{
    static const char *texts[] = {
        "#BB_HARMONIA jobbuffer capacity=1B",
        "#BB_HARMONIA jobbuffer capacity=3.14159GB nodes=7 pool=p",
        "#BB_HARMONIA jobbuffer capacity=16383.999PiB",
        "#BB_HARMONIA jobbuffer capacity=12345678901234567890B",
        "#BB_HARMONIA iohints w_iter=0.1s io_volume=1GiB",
        "#BB_HARMONIA iohints w_iter=0.3m io_volume=0.3MB phases=1",
        "#BB_HARMONIA iohints w_iter=123.456789s io_volume=5B io=readwrite",
        "#BB_HARMONIA iohints w_iter=11574-01:46:39 io_volume=1EB priority=5",
        "#BB_HARMONIA iohints w_iter=0.000001s io_volume=1KiB",
        "#BB_HARMONIA iohints w_iter=\"31.7 d\" io_volume=\"1.7 TiB\"",
        "#BB_HARMONIA iohints w_iter=0.1234567s io_volume=1.7TiB",
        "#BB_HARMONIA create_persistent name=a capacity=1G\n"
        "#BB_HARMONIA create_persistent name=b capacity=2G pool=x\n"
        "#BB_HARMONIA use_persistent name=c\n"
        "#BB_HARMONIA destroy_persistent name=d\n",
        "#BB_HARMONIA use_persistent name=bb\n"
        "#BB_HARMONIA stage_in source=\"/p a\" destination=$HARMONIA_BB\n"
        "#BB_HARMONIA stage_in source=/p/\xc3\xa9t\xc3\xa9 destination=$HARMONIA_BB/"
        "\xe2\x82\xac type=file\n"
        "#BB_HARMONIA stage_out source=\"${HARMONIA_BB}/\\\"\" destination=\"/;\\\\\" "
        "type=directory\n"
        "#BB_HARMONIA stage_out source=$HARMONIA_BB/x=y destination=/a=b#c\n",
        "#BB_HARMONIA jobbuffer capacity=200GiB nodes=2 pool=nvme\n"
        "#BB_HARMONIA iohints w_iter=10m io_volume=50GiB phases=20 io=write "
        "priority=3\n"
        "#BB_HARMONIA create_persistent name=ckpt capacity=1TiB\n"
        "#BB_HARMONIA use_persistent name=ckpt\n"
        "#BB_HARMONIA stage_in source=/pfs/in destination=$HARMONIA_BB/in\n"
        "#BB_HARMONIA stage_out source=$HARMONIA_BB/out destination=/pfs/out\n"
        "#BB_HARMONIA destroy_persistent name=old\n",
    };

    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        for (int validate = 0; validate < 2; validate++) {
            static const hu_bb_source_t srcs[] = { HU_BB_SRC_CANONICAL, HU_BB_SRC_BB_OPTION };
            hu_bb_request_t r, r2;
            hu_error_t err;
            char *f, *f2;

            memset(&r, 0, sizeof(r));
            parse_ok(&r, texts[i], HU_BB_SRC_SCRIPT);
            if (validate)
                ck_assert_msg(hu_bb_validate(&r, &err) == 0, "%s", err.text);
            f = hu_bb_format(&r);
            ck_assert_ptr_nonnull(f);
            for (int s = 0; s < 2; s++) {
                memset(&r2, 0, sizeof(r2));
                parse_ok(&r2, f, srcs[s]);
                ck_assert_msg(req_equal(&r, &r2),
                              "text %zu: parse(format(r)) != r:"
                              "\n%s",
                              i, f);
                f2 = hu_bb_format(&r2);
                ck_assert_str_eq(f2, f);
                free(f2);
                hu_bb_request_free(&r2);
            }
            free(f);
            hu_bb_request_free(&r);
        }
    }
}
END_TEST

START_TEST(test_size_str)
{
    static const struct {
        uint64_t bytes;
        const char *want;
    } t[] = {
        { 0, "0B" },
        { 1, "1B" },
        { 999, "999B" },
        { 1000, "1KB" },
        { 1024, "1KiB" },
        { 1536, "1536B" },
        { 1024000, "1000KiB" },
        { 1000000000000ULL, "1TB" },
        { 1500000000ULL, "1500MB" },
        { 200 * GiB, "200GiB" },
        { 1000000000000000000ULL, "1EB" },
        { 1ULL << 63, "8EiB" },
        { UINT64_MAX, "18446744073709551615B" },
        { 15ULL << 60, "15EiB" },
        { 3ULL << 29, "1536MiB" },
    };
    char buf[32];

    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        uint64_t back;
        hu_error_t err;
        ck_assert_str_eq(hu_bb_size_str(t[i].bytes, buf, sizeof(buf)), t[i].want);
        ck_assert_int_eq(hu_parse_size(buf, 0, &back, &err), 0);
        ck_assert_uint_eq(back, t[i].bytes);
    }
    ck_assert_str_eq(hu_bb_io_str(HU_BB_IO_WRITE), "write");
    ck_assert_str_eq(hu_bb_io_str(HU_BB_IO_READ), "read");
    ck_assert_str_eq(hu_bb_io_str(HU_BB_IO_READWRITE), "readwrite");
    ck_assert_str_eq(hu_bb_io_str(HU_BB_IO_UNSET), "unset");
    ck_assert_str_eq(hu_bb_type_str(HU_BB_TYPE_FILE), "file");
    ck_assert_str_eq(hu_bb_type_str(HU_BB_TYPE_DIRECTORY), "directory");
    ck_assert_str_eq(hu_bb_type_str(HU_BB_TYPE_UNSET), "unset");
}
END_TEST

/* ------------------------------------------------------------------ sources */

START_TEST(test_collect_script)
{
    static const char script[] =
        "#!/bin/bash\n"                                  /* 1 */
        "#SBATCH -N 2\n"                                 /* 2 */
        "#DW jobdw capacity=10GB\n"                      /* 3 */
        "\n"                                             /* 4 */
        "   #BB_HARMONIA jobbuffer capacity=1GiB  \r\n"  /* 5 */
        "#BB_LUA pool=x\n"                               /* 6 */
        "# #BB_HARMONIA not at the start\n"              /* 7 */
        "#BB_HARMONIAX iohints\n"                        /* 8 */
        "\t#BB_HARMONIA\tuse_persistent name=a\n"        /* 9 */
        "srun ./app\n"                                   /* 10 */
        "#BB_HARMONIA iohints w_iter=1s io_volume=1B\n"; /* 11: after a command */
    char *c = hu_bb_collect_script(script);

    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c, "@5 #BB_HARMONIA jobbuffer capacity=1GiB\n"
                        "@9 #BB_HARMONIA\tuse_persistent name=a\n");
    free(c);
    c = hu_bb_collect_script(NULL);
    ck_assert_str_eq(c, "");
    free(c);
    c = hu_bb_collect_script("echo hi\n#BB_HARMONIA jobbuffer capacity=1GiB\n");
    ck_assert_str_eq(c, "");
    free(c);
    c = hu_bb_collect_script("#BB_HARMONIA jobbuffer capacity=1GiB"); /* no \n */
    ck_assert_str_eq(c, "@1 #BB_HARMONIA jobbuffer capacity=1GiB\n");
    free(c);
}
END_TEST

START_TEST(test_line_numbers)
{
    static const char script[] = "#!/bin/bash\n#SBATCH -N1\n\n# comment\n"
                                 "#BB_HARMONIA jobbuffer capacity=0GiB\n";
    char *c = hu_bb_collect_script(script);

    parse_bad(c, strlen(c), HU_BB_SRC_SCRIPT,
              "#BB_HARMONIA line 5: jobbuffer: capacity must be greater than zero");
    free(c);
    parse_bad("jobbuffer capacity=1GiB;iohints w_iter=0s io_volume=1GiB", 56, HU_BB_SRC_BB_OPTION,
              "#BB_HARMONIA --bb item 2: iohints: w_iter must be greater than zero");
    parse_bad("jobbuffer capacity=1GiB;;\n;jobbuffer capacity=1GiB", 50, HU_BB_SRC_BB_OPTION,
              "#BB_HARMONIA --bb item 5: jobbuffer: a second "
              "jobbuffer directive (only one per job)"); /* empty items count */
    parse_bad("#BB_HARMONIA jobbuffer capacity=1GiB\n"
              "#BB_HARMONIA jobbuffer capacity=2GiB\n",
              74, HU_BB_SRC_CANONICAL,
              "#BB_HARMONIA directive 2: jobbuffer: a second jobbuffer directive "
              "(only one per job)");
    bad("@1234 #BB_HARMONIA use_persistent name=",
        "#BB_HARMONIA line 1234: use_persistent: name has no value (write name=...)");
}
END_TEST

START_TEST(test_merge)
{
    static const char script[] =
        "#!/bin/bash\n"
        "#BB_HARMONIA jobbuffer capacity=100GiB\n"
        "#BB_HARMONIA stage_in source=/pfs/in destination=$HARMONIA_BB/in\n"
        "srun app\n";
    hu_bb_request_t req;
    hu_error_t err;
    char *c = hu_bb_collect_script(script);

    memset(&req, 0, sizeof(req));
    parse_ok(&req, c, HU_BB_SRC_SCRIPT);
    /* --bb: ';' separates, the prefix is optional, others' directives skipped */
    parse_ok(&req,
             " iohints w_iter=5m io_volume=10GiB ; #DW jobdw capacity=1GB;"
             "#BB_LUA x;#BB_HARMONIA stage_out source=$HARMONIA_BB/out "
             "destination=/pfs/out\n\n;  ;",
             HU_BB_SRC_BB_OPTION);
    ck_assert(req.has_buffer && req.has_hints);
    ck_assert_int_eq(req.nstage_in, 1);
    ck_assert_int_eq(req.nstage_out, 1);
    ck_assert_int_eq(req.stage_in[0].line, 3);
    ck_assert_int_eq(hu_bb_validate(&req, &err), 0);

    /* a second jobbuffer or iohints from --bb is an error */
    errno = 0;
    ck_assert_int_eq(hu_bb_parse(&req, "jobbuffer capacity=1GiB", 23, HU_BB_SRC_BB_OPTION, &err),
                     -1);
    ck_assert_str_eq(err.text, "#BB_HARMONIA --bb item 1: jobbuffer: a second "
                               "jobbuffer directive (only one per job)");
    ck_assert_int_eq(
        hu_bb_parse(&req, "iohints w_iter=1s io_volume=1B", 30, HU_BB_SRC_BB_OPTION, &err), -1);
    ck_assert_str_eq(err.text, "#BB_HARMONIA --bb item 1: iohints: a second "
                               "iohints directive (only one per job)");
    hu_bb_request_free(&req);
    free(c);

    /* script text read directly: lines without the prefix are not ours */
    memset(&req, 0, sizeof(req));
    parse_ok(&req,
             "#!/bin/sh\njobbuffer capacity=0B\n#DW x\necho\n"
             "#BB_HARMONIA use_persistent name=p\n",
             HU_BB_SRC_SCRIPT);
    ck_assert(!req.has_buffer);
    ck_assert_int_eq(req.npersist, 1);
    ck_assert_int_eq(req.persist[0].line, 5);
    hu_bb_request_free(&req);

    /* nothing to parse */
    ck_assert_int_eq(hu_bb_parse(&req, "", 0, HU_BB_SRC_BB_OPTION, &err), 0);
    ck_assert_int_eq(hu_bb_parse(&req, NULL, 0, HU_BB_SRC_BB_OPTION, &err), 0);
    ck_assert_int_eq(hu_bb_parse(&req, " ;\n; \t", 6, HU_BB_SRC_BB_OPTION, &err), 0);
    ck_assert(!req.has_buffer && req.npersist == 0);
    ck_assert_int_eq(hu_bb_parse(NULL, "x", 1, HU_BB_SRC_BB_OPTION, &err), -1);
    ck_assert_str_eq(err.text, "invalid arguments");
    ck_assert_int_eq(hu_bb_parse(&req, NULL, 1, HU_BB_SRC_BB_OPTION, &err), -1);
    hu_bb_request_free(NULL);
}
END_TEST

START_TEST(test_has_directives)
{
    ck_assert(hu_bb_has_directives("#BB_HARMONIA jobbuffer capacity=1G", false));
    ck_assert(!hu_bb_has_directives("jobbuffer capacity=1G", false));
    ck_assert(hu_bb_has_directives("jobbuffer capacity=1G", true));
    ck_assert(hu_bb_has_directives("#DW x; use_persistent name=a", true));
    ck_assert(!hu_bb_has_directives("#DW jobdw capacity=1GB", true));
    ck_assert(!hu_bb_has_directives("jobbuffers", true));
    ck_assert(!hu_bb_has_directives("", true));
    ck_assert(!hu_bb_has_directives(NULL, true));
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "verbs", .tests = { test_jobbuffer, test_iohints, test_stage, test_persistent, NULL } },
        { "canonical", .tests = { test_canonical, test_canonical_order, test_quoted_values,
                                  test_round_trip, test_size_str, NULL } },
        { "sources", .tests = { test_collect_script, test_line_numbers, test_merge,
                                test_has_directives, NULL } },
    };

    return tu_main("libhutil directives", tcases, TU_COUNT(tcases));
}
