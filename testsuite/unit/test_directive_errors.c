/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_directive_errors.c — the #BB_HARMONIA directive grammar (doc/design.md §4,
 * a contract): every error message, long lines, NUL and control bytes, non-ASCII
 * text, a failed parse leaving the request as it was, and the stage path checks.
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

/* ------------------------------------------------------------------ errors */

START_TEST(test_errors_verbs_keys)
{
    bad("#BB_HARMONIA jobbufer capacity=1GiB",
        "#BB_HARMONIA line 1: unknown directive 'jobbufer' (expected one of " VERBS ")");
    bad("#BB_HARMONIA JOBBUFFER capacity=1GiB",
        "#BB_HARMONIA line 1: unknown directive 'JOBBUFFER' (expected one of " VERBS ")");
    bad("#BB_HARMONIA", "#BB_HARMONIA line 1: empty directive (expected one of " VERBS ")");
    bad("#BB_HARMONIA   \t", "#BB_HARMONIA line 1: empty directive (expected one of " VERBS ")");
    parse_bad("bogus x=1", 9, HU_BB_SRC_BB_OPTION,
              "#BB_HARMONIA --bb item 1: unknown directive 'bogus' (expected one of " VERBS ")");
    bad("#BB_HARMONIA jobbuffer capacity=1GiB size=2",
        "#BB_HARMONIA line 1: jobbuffer: unknown key 'size' (jobbuffer takes "
        "capacity, nodes, pool)");
    bad("#BB_HARMONIA iohints w_iter=1s io_volume=1B phase=2",
        "#BB_HARMONIA line 1: iohints: unknown key 'phase' (iohints takes w_iter, "
        "io_volume, phases, io, priority, source, interpose)");
    bad("#BB_HARMONIA stage_in src=/a",
        "#BB_HARMONIA line 1: stage_in: unknown key 'src' (stage_in takes source, "
        "destination, type)");
    bad("#BB_HARMONIA stage_out Source=/a",
        "#BB_HARMONIA line 1: stage_out: unknown key 'Source' (stage_out takes "
        "source, destination, type)");
    bad("#BB_HARMONIA create_persistent name=a capacity=1G nodes=1",
        "#BB_HARMONIA line 1: create_persistent: unknown key 'nodes' "
        "(create_persistent takes name, capacity, pool)");
    bad("#BB_HARMONIA use_persistent name=a pool=b",
        "#BB_HARMONIA line 1: use_persistent: unknown key 'pool' (use_persistent "
        "takes name)");
    bad("#BB_HARMONIA destroy_persistent =a",
        "#BB_HARMONIA line 1: destroy_persistent: unknown key '' "
        "(destroy_persistent takes name)");
    bad("#BB_HARMONIA jobbuffer nodes=2",
        "#BB_HARMONIA line 1: jobbuffer: capacity is missing (write capacity=...)");
    bad("#BB_HARMONIA iohints w_iter=1s",
        "#BB_HARMONIA line 1: iohints: io_volume is missing (write io_volume=...)");
    bad("#BB_HARMONIA iohints io_volume=1B",
        "#BB_HARMONIA line 1: iohints: w_iter is missing (write w_iter=...)");
    bad("#BB_HARMONIA stage_in source=/a",
        "#BB_HARMONIA line 1: stage_in: destination is missing (write "
        "destination=...)");
    bad("#BB_HARMONIA stage_out destination=/a",
        "#BB_HARMONIA line 1: stage_out: source is missing (write source=...)");
    bad("#BB_HARMONIA create_persistent name=a",
        "#BB_HARMONIA line 1: create_persistent: capacity is missing (write "
        "capacity=...)");
    bad("#BB_HARMONIA use_persistent",
        "#BB_HARMONIA line 1: use_persistent: name is missing (write name=...)");
    bad("#BB_HARMONIA jobbuffer capacity=",
        "#BB_HARMONIA line 1: jobbuffer: capacity has no value (write "
        "capacity=...)");
    bad("#BB_HARMONIA jobbuffer capacity= nodes=2",
        "#BB_HARMONIA line 1: jobbuffer: capacity has no value (write "
        "capacity=...)");
    bad("#BB_HARMONIA jobbuffer capacity",
        "#BB_HARMONIA line 1: jobbuffer: capacity has no value (write "
        "capacity=...)");
    bad("#BB_HARMONIA jobbuffer capacity=\"\"",
        "#BB_HARMONIA line 1: jobbuffer: capacity has no value (write "
        "capacity=...)");
    bad("#BB_HARMONIA jobbuffer 1GiB", "#BB_HARMONIA line 1: jobbuffer: '1GiB' is not key=value");
    bad("#BB_HARMONIA jobbuffer capacity=1GiB capacity=2GiB",
        "#BB_HARMONIA line 1: jobbuffer: capacity is given twice");
    bad("#BB_HARMONIA jobbuffer capacity=1GiB\n#BB_HARMONIA jobbuffer capacity=2GiB",
        "#BB_HARMONIA line 2: jobbuffer: a second jobbuffer directive (only one "
        "per job)");
    bad("#BB_HARMONIA iohints w_iter=1s io_volume=1B\n\n"
        "#BB_HARMONIA iohints w_iter=1s io_volume=1B",
        "#BB_HARMONIA line 3: iohints: a second iohints directive (only one per "
        "job)");
}
END_TEST

START_TEST(test_errors_values)
{
    static const char *nodes[] = { "0",  "-1", "100001", "2x",
                                   "+2", " 2", "1.5",    "99999999999999999999999" };
    char text[128], msg[256];

    for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
        snprintf(text, sizeof(text),
                 "#BB_HARMONIA jobbuffer capacity=1G "
                 "nodes=\"%s\"",
                 nodes[i]);
        snprintf(msg, sizeof(msg),
                 "#BB_HARMONIA line 1: jobbuffer: nodes '%s' is "
                 "not a whole number from 1 to 100000",
                 nodes[i]);
        bad(text, msg);
    }
    bad("#BB_HARMONIA jobbuffer capacity=0B",
        "#BB_HARMONIA line 1: jobbuffer: capacity must be greater than zero");
    bad("#BB_HARMONIA jobbuffer capacity=0.1B",
        "#BB_HARMONIA line 1: jobbuffer: capacity must be greater than zero");
    bad("#BB_HARMONIA jobbuffer capacity=10",
        "#BB_HARMONIA line 1: jobbuffer: capacity: size '10' has no unit (write "
        "e.g. '10GiB' or '10B')");
    bad("#BB_HARMONIA jobbuffer capacity=16EiB",
        "#BB_HARMONIA line 1: jobbuffer: capacity: size '16EiB' is too large "
        "(sizes must be below 16 EiB)");
    bad("#BB_HARMONIA jobbuffer capacity=18446744073709551616B",
        "#BB_HARMONIA line 1: jobbuffer: capacity: size '18446744073709551616B' is "
        "too large (sizes must be below 16 EiB)");
    bad("#BB_HARMONIA jobbuffer capacity=-1GiB",
        "#BB_HARMONIA line 1: jobbuffer: capacity: size '-1GiB' is negative");
    bad("#BB_HARMONIA jobbuffer capacity=1GiBs",
        "#BB_HARMONIA line 1: jobbuffer: capacity: unknown size unit 'GiBs' in "
        "'1GiBs' (use B, KB, MB, GB, TB, PB, EB, KiB, MiB, GiB, TiB, PiB, EiB)");
    bad("#BB_HARMONIA jobbuffer capacity=1G pool=1nvme",
        "#BB_HARMONIA line 1: jobbuffer: pool '1nvme' is not a valid name " NAME_RULE);
    bad("#BB_HARMONIA jobbuffer capacity=1G pool=nv/me",
        "#BB_HARMONIA line 1: jobbuffer: pool 'nv/me' is not a valid name " NAME_RULE);
    bad("#BB_HARMONIA create_persistent name=a capacity=1G pool=_x",
        "#BB_HARMONIA line 1: create_persistent: pool '_x' is not a valid name " NAME_RULE);
    bad("#BB_HARMONIA create_persistent name=a capacity=0KB",
        "#BB_HARMONIA line 1: create_persistent: capacity must be greater than "
        "zero");

    bad("#BB_HARMONIA iohints w_iter=0s io_volume=1GiB",
        "#BB_HARMONIA line 1: iohints: w_iter must be greater than zero");
    bad("#BB_HARMONIA iohints w_iter=00:00 io_volume=1GiB",
        "#BB_HARMONIA line 1: iohints: w_iter must be greater than zero");
    bad("#BB_HARMONIA iohints w_iter=10 io_volume=1GiB",
        "#BB_HARMONIA line 1: iohints: w_iter: duration '10' has no unit (write "
        "e.g. '10s', '10m' or '10h')");
    bad("#BB_HARMONIA iohints w_iter=00:61 io_volume=1GiB",
        "#BB_HARMONIA line 1: iohints: w_iter: duration '00:61' has minutes or "
        "seconds above 59");
    bad("#BB_HARMONIA iohints w_iter=1-02:03 io_volume=1GiB",
        "#BB_HARMONIA line 1: iohints: w_iter: duration '1-02:03' is not "
        "[[D-]HH:]MM:SS");
    bad("#BB_HARMONIA iohints w_iter=5 weeks io_volume=1GiB",
        "#BB_HARMONIA line 1: iohints: 'weeks' is not key=value");
    bad("#BB_HARMONIA iohints w_iter=\"5 weeks\" io_volume=1GiB",
        "#BB_HARMONIA line 1: iohints: w_iter: unknown duration unit 'weeks' in "
        "'5 weeks' (use s, m, h or d)");
    bad("#BB_HARMONIA iohints w_iter=1000000000.000001s io_volume=1GiB",
        "#BB_HARMONIA line 1: iohints: w_iter '1000000000.000001s' is too long "
        "(at most 1000000000s, about 31 years)");
    bad("#BB_HARMONIA iohints w_iter=0.0000004s io_volume=1GiB",
        "#BB_HARMONIA line 1: iohints: w_iter '0.0000004s' is shorter than "
        "0.000001s");
    bad("#BB_HARMONIA iohints w_iter=1s io_volume=0GiB",
        "#BB_HARMONIA line 1: iohints: io_volume must be greater than zero");
    bad("#BB_HARMONIA iohints w_iter=1s io_volume=1",
        "#BB_HARMONIA line 1: iohints: io_volume: size '1' has no unit (write "
        "e.g. '1GiB' or '1B')");
    bad("#BB_HARMONIA iohints w_iter=1s io_volume=1B phases=0",
        "#BB_HARMONIA line 1: iohints: phases '0' is not a whole number from 1 to "
        "100000000");
    bad("#BB_HARMONIA iohints w_iter=1s io_volume=1B phases=100000001",
        "#BB_HARMONIA line 1: iohints: phases '100000001' is not a whole number "
        "from 1 to 100000000");
    bad("#BB_HARMONIA iohints w_iter=1s io_volume=1B io=bogus",
        "#BB_HARMONIA line 1: iohints: io 'bogus' is not write, read or readwrite");
    bad("#BB_HARMONIA iohints w_iter=1s io_volume=1B io=Write",
        "#BB_HARMONIA line 1: iohints: io 'Write' is not write, read or readwrite");
    bad("#BB_HARMONIA iohints w_iter=1s io_volume=1B priority=0",
        "#BB_HARMONIA line 1: iohints: priority '0' is not a whole number from 1 "
        "to 10");
    bad("#BB_HARMONIA iohints w_iter=1s io_volume=1B priority=11",
        "#BB_HARMONIA line 1: iohints: priority '11' is not a whole number from 1 "
        "to 10");
    bad("#BB_HARMONIA iohints w_iter=1s io_volume=1B priority=high",
        "#BB_HARMONIA line 1: iohints: priority 'high' is not a whole number from "
        "1 to 10");
}
END_TEST

START_TEST(test_errors_names)
{
    char text[256], name[80];

    bad("#BB_HARMONIA use_persistent name=9x",
        "#BB_HARMONIA line 1: use_persistent: name '9x' is not a valid buffer name " NAME_RULE);
    bad("#BB_HARMONIA destroy_persistent name=a/b",
        "#BB_HARMONIA line 1: destroy_persistent: name 'a/b' is not a valid buffer "
        "name " NAME_RULE);
    bad("#BB_HARMONIA create_persistent name=\"a b\" capacity=1G",
        "#BB_HARMONIA line 1: create_persistent: name 'a b' is not a valid buffer "
        "name " NAME_RULE);
    bad("#BB_HARMONIA use_persistent name=a\n#BB_HARMONIA use_persistent name=a",
        "#BB_HARMONIA line 2: use_persistent: persistent buffer 'a' is named twice");
    /* names of 63 characters are accepted, 64 refused */
    memset(name, 'n', 63);
    name[63] = '\0';
    snprintf(text, sizeof(text), "#BB_HARMONIA jobbuffer capacity=1G pool=%s", name);
    hu_bb_request_t req;
    memset(&req, 0, sizeof(req));
    parse_ok(&req, text, HU_BB_SRC_SCRIPT);
    hu_bb_request_free(&req);
    strcat(name, "n");
    snprintf(text, sizeof(text), "#BB_HARMONIA use_persistent name=%s", name);
    char msg[512];
    snprintf(msg, sizeof(msg),
             "#BB_HARMONIA line 1: use_persistent: name '%s' is "
             "not a valid buffer name " NAME_RULE,
             name);
    bad(text, msg);
}
END_TEST

START_TEST(test_errors_paths)
{
    bad("#BB_HARMONIA stage_in source=pfs/in destination=$HARMONIA_BB/in",
        "#BB_HARMONIA line 1: stage_in: source 'pfs/in' is a relative path: give "
        "an absolute path");
    bad("#BB_HARMONIA stage_out source=$HARMONIA_BB/o destination=./out",
        "#BB_HARMONIA line 1: stage_out: destination './out' is a relative path: "
        "give an absolute path");
    bad("#BB_HARMONIA stage_in source=/pfs/in destination=/tmp/x",
        "#BB_HARMONIA line 1: stage_in: destination '/tmp/x' must be inside the "
        "job buffer: start it with $HARMONIA_BB/");
    bad("#BB_HARMONIA stage_in source=/pfs/in destination=HARMONIA_BB/x",
        "#BB_HARMONIA line 1: stage_in: destination 'HARMONIA_BB/x' must be inside "
        "the job buffer: start it with $HARMONIA_BB/");
    bad("#BB_HARMONIA stage_in source=/pfs/in destination=$HARMONIA_BBX",
        "#BB_HARMONIA line 1: stage_in: destination '$HARMONIA_BBX' must be "
        "$HARMONIA_BB or start with $HARMONIA_BB/");
    bad("#BB_HARMONIA stage_out source=/pfs/x destination=/pfs/out",
        "#BB_HARMONIA line 1: stage_out: source '/pfs/x' must be inside the job "
        "buffer: start it with $HARMONIA_BB/");
    bad("#BB_HARMONIA stage_in source=$HARMONIA_BB/x destination=$HARMONIA_BB/y",
        "#BB_HARMONIA line 1: stage_in: source '$HARMONIA_BB/x' must be a file "
        "system path, not the job buffer");
    bad("#BB_HARMONIA stage_in source=/pfs/in destination=$HARMONIA_BB/../x",
        "#BB_HARMONIA line 1: stage_in: destination '$HARMONIA_BB/../x' may not "
        "contain '..'");
    bad("#BB_HARMONIA stage_out source=${HARMONIA_BB}/a/.. destination=/x",
        "#BB_HARMONIA line 1: stage_out: source '${HARMONIA_BB}/a/..' may not "
        "contain '..'");
    bad("#BB_HARMONIA stage_in source=/pfs/../etc destination=$HARMONIA_BB",
        "#BB_HARMONIA line 1: stage_in: source '/pfs/../etc' may not contain '..'");
    bad("#BB_HARMONIA stage_out source=$HARMONIA_BB destination=/..",
        "#BB_HARMONIA line 1: stage_out: destination '/..' may not contain '..'");
    /* the one path rule of bbmgrd and its agents: no '.' component either */
    bad("#BB_HARMONIA stage_in source=/pfs/./in destination=$HARMONIA_BB",
        "#BB_HARMONIA line 1: stage_in: source '/pfs/./in' may not contain a '.' "
        "component");
    bad("#BB_HARMONIA stage_out source=$HARMONIA_BB/. destination=/x",
        "#BB_HARMONIA line 1: stage_out: source '$HARMONIA_BB/.' may not contain a '.' "
        "component");
    bad("#BB_HARMONIA stage_in source=/a destination=$HARMONIA_BB type=link",
        "#BB_HARMONIA line 1: stage_in: type 'link' is not file or directory");
    bad("#BB_HARMONIA stage_in source=/a destination=$HARMONIA_BB type=File",
        "#BB_HARMONIA line 1: stage_in: type 'File' is not file or directory");
}
END_TEST

START_TEST(test_errors_quotes)
{
    bad("#BB_HARMONIA stage_in source=\"/pfs/in destination=$HARMONIA_BB",
        "#BB_HARMONIA line 1: stage_in: source: the quoted value has no closing "
        "'\"'");
    bad("#BB_HARMONIA stage_in source=\"/pfs/in\\\"",
        "#BB_HARMONIA line 1: stage_in: source: the quoted value has no closing "
        "'\"'");
    bad("#BB_HARMONIA stage_in source=\"/pfs/in\"x destination=$HARMONIA_BB",
        "#BB_HARMONIA line 1: stage_in: source: unexpected text after the closing "
        "'\"'");
    parse_bad("stage_in source=\"/a;b destination=$HARMONIA_BB;jobbuffer "
              "capacity=1G",
              60, HU_BB_SRC_BB_OPTION,
              "#BB_HARMONIA --bb item 1: stage_in: source: the quoted value has no "
              "closing '\"'");
}
END_TEST

START_TEST(test_errors_limits)
{
    hu_bb_request_t req;
    hu_error_t err;
    char line[128];

    memset(&req, 0, sizeof(req));
    for (int i = 0; i < HU_BB_MAX_STAGE; i++) {
        snprintf(line, sizeof(line), "stage_%s source=%s%d destination=%s%d", i % 2 ? "in" : "out",
                 i % 2 ? "/p" : "$HARMONIA_BB/", i, i % 2 ? "$HARMONIA_BB/" : "/p", i);
        parse_ok(&req, line, HU_BB_SRC_BB_OPTION);
    }
    ck_assert_int_eq(hu_bb_parse(&req, "stage_in source=/x destination=$HARMONIA_BB", 43,
                                 HU_BB_SRC_BB_OPTION, &err),
                     -1);
    ck_assert_str_eq(err.text, "#BB_HARMONIA --bb item 1: stage_in: too many "
                               "stage_in/stage_out directives (at most 64)");
    for (int i = 0; i < HU_BB_MAX_PERSIST; i++) {
        snprintf(line, sizeof(line), "use_persistent name=p%d", i);
        parse_ok(&req, line, HU_BB_SRC_BB_OPTION);
    }
    ck_assert_int_eq(hu_bb_parse(&req, "destroy_persistent name=z", 25, HU_BB_SRC_BB_OPTION, &err),
                     -1);
    ck_assert_str_eq(err.text, "#BB_HARMONIA --bb item 1: destroy_persistent: too "
                               "many persistent-buffer directives (at most 16)");
    hu_bb_request_free(&req);
}
END_TEST

START_TEST(test_validate)
{
    hu_bb_request_t req;
    hu_error_t err;

    validate_bad("#BB_HARMONIA iohints w_iter=1s io_volume=1B\n"
                 "#BB_HARMONIA stage_in source=/a destination=$HARMONIA_BB",
                 HU_BB_SRC_SCRIPT,
                 "#BB_HARMONIA line 2: stage_in needs a buffer: "
                 "add a jobbuffer or use_persistent directive");
    validate_bad("@7 #BB_HARMONIA stage_out source=$HARMONIA_BB destination=/a", HU_BB_SRC_SCRIPT,
                 "#BB_HARMONIA line 7: stage_out needs a buffer: "
                 "add a jobbuffer or use_persistent directive");
    validate_bad("create_persistent name=p capacity=1G;"
                 "stage_out source=$HARMONIA_BB destination=/a",
                 HU_BB_SRC_BB_OPTION,
                 "#BB_HARMONIA --bb item 2: stage_out needs a buffer: "
                 "add a jobbuffer or use_persistent directive");
    validate_bad("jobbuffer capacity=1GiB;iohints w_iter=1s io_volume=2GiB", HU_BB_SRC_BB_OPTION,
                 "#BB_HARMONIA: iohints: io_volume 2GiB is larger "
                 "than the jobbuffer capacity 1GiB: one I/O phase must fit in the "
                 "buffer");
    validate_bad("jobbuffer capacity=1B;iohints w_iter=1s io_volume=1.5KB", HU_BB_SRC_BB_OPTION,
                 "#BB_HARMONIA: iohints: io_volume 1500B is "
                 "larger than the jobbuffer capacity 1B: one I/O phase must fit in "
                 "the buffer");
    validate_bad("create_persistent name=ckpt capacity=1G\n"
                 "destroy_persistent name=ckpt",
                 HU_BB_SRC_BB_OPTION,
                 "#BB_HARMONIA --bb item 2: persistent buffer 'ckpt' is both created and "
                 "destroyed by the job");

    /* accepted: equal volume and capacity; a stage with use_persistent; no hints */
    memset(&req, 0, sizeof(req));
    parse_ok(&req, "jobbuffer capacity=1GiB;iohints w_iter=1s io_volume=1024MiB",
             HU_BB_SRC_BB_OPTION);
    ck_assert_int_eq(hu_bb_validate(&req, &err), 0);
    hu_bb_request_free(&req);
    parse_ok(&req,
             "use_persistent name=p;stage_in source=/a destination="
             "$HARMONIA_BB",
             HU_BB_SRC_BB_OPTION);
    ck_assert_int_eq(hu_bb_validate(&req, &err), 0);
    ck_assert_int_eq(req.io, HU_BB_IO_UNSET); /* no hints: nothing normalised */
    ck_assert_int_eq(req.priority, 0);
    hu_bb_request_free(&req);
    parse_ok(&req, "iohints w_iter=1s io_volume=1EiB", HU_BB_SRC_BB_OPTION);
    ck_assert_int_eq(hu_bb_validate(&req, &err), 0); /* no buffer to compare */
    hu_bb_request_free(&req);
}
END_TEST

/* ------------------------------------------------------------------ bytes */

/* A "#BB_HARMONIA stage_in ..." directive of exactly n bytes. */
static char *directive_of_length(size_t n)
{
    static const char head[] = "#BB_HARMONIA stage_in destination=$HARMONIA_BB "
                               "source=/";
    char *s = malloc(n + 1);

    ck_assert_ptr_nonnull(s);
    memcpy(s, head, strlen(head));
    memset(s + strlen(head), 'x', n - strlen(head));
    s[n] = '\0';
    return s;
}

START_TEST(test_long_lines)
{
    hu_bb_request_t req;
    char *s = directive_of_length(HU_BB_MAX_LINE);
    char *c;
    char *script;

    memset(&req, 0, sizeof(req));
    parse_ok(&req, s, HU_BB_SRC_SCRIPT);
    ck_assert_uint_eq(strlen(req.stage_in[0].source), HU_BB_MAX_LINE - 54);
    hu_bb_request_free(&req);
    /* the "@N " mark and surrounding blanks do not count */
    script = malloc(HU_BB_MAX_LINE + 64);
    ck_assert_ptr_nonnull(script);
    snprintf(script, HU_BB_MAX_LINE + 64, "#!/bin/sh\n  %s \r\n", s);
    c = hu_bb_collect_script(script);
    parse_ok(&req, c, HU_BB_SRC_SCRIPT);
    ck_assert_int_eq(req.stage_in[0].line, 2);
    hu_bb_request_free(&req);
    free(c);
    free(s);

    s = directive_of_length(HU_BB_MAX_LINE + 1);
    bad(s, "#BB_HARMONIA line 1: the directive is 4097 bytes long (at most 4096)");
    snprintf(script, HU_BB_MAX_LINE + 64, "#!/bin/sh\n\n%s\n", s);
    c = hu_bb_collect_script(script);
    parse_bad(c, strlen(c), HU_BB_SRC_SCRIPT,
              "#BB_HARMONIA line 3: the directive is 4097 bytes long (at most 4096)");
    free(c);
    free(script);
    free(s);
}
END_TEST

START_TEST(test_long_lines_bb)
{
    hu_bb_request_t req;
    hu_error_t err;
    size_t n = 3 * HU_BB_MAX_LINE;
    char *s = malloc(n + 64);

    ck_assert_ptr_nonnull(s);
    /* a bare --bb directive over the limit */
    memset(s, 0, n + 64);
    strcpy(s, "use_persistent name=");
    memset(s + strlen(s), 'a', n);
    parse_bad(s, strlen(s), HU_BB_SRC_BB_OPTION,
              "#BB_HARMONIA --bb item 1: the directive is 12308 bytes long (at most "
              "4096)");
    /* a bare --bb item at the limit gains the "#BB_HARMONIA " prefix when it is
     * normalised: refused, since the stored canonical text must parse again */
    memset(s, 0, n + 64);
    strcpy(s, "jobbuffer capacity=1GiB;stage_in source=/");
    {
        size_t item = strlen("stage_in source=/");
        size_t pad = HU_BB_MAX_LINE - item - strlen(" destination=$HARMONIA_BB/x");
        memset(s + strlen(s), 'p', pad);
        strcat(s, " destination=$HARMONIA_BB/x");
    }
    parse_bad(s, strlen(s), HU_BB_SRC_BB_OPTION,
              "#BB_HARMONIA: stage_in: the directive is 4109 bytes long once "
              "normalised (at most 4096)");
    /* another plugin's long line is not ours to refuse */
    memset(s, 0, n + 64);
    strcpy(s, "#DW jobdw x=");
    memset(s + strlen(s), 'a', n);
    strcat(s, ";jobbuffer capacity=1G");
    memset(&req, 0, sizeof(req));
    ck_assert_msg(hu_bb_parse(&req, s, strlen(s), HU_BB_SRC_BB_OPTION, &err) == 0, "%s", err.text);
    ck_assert(req.has_buffer);
    hu_bb_request_free(&req);
    free(s);
}
END_TEST

START_TEST(test_nul_and_control)
{
    static const char nul[] = "#BB_HARMONIA jobbuffer capacity=1GiB\0 nodes=2";
    char ctl[64];

    parse_bad(nul, sizeof(nul) - 1, HU_BB_SRC_SCRIPT,
              "#BB_HARMONIA: the directives contain a NUL byte (at byte 36)");
    parse_bad("\0", 1, HU_BB_SRC_BB_OPTION,
              "#BB_HARMONIA: the directives contain a NUL byte (at byte 0)");
    bad("#BB_HARMONIA jobbuffer capacity=1GiB\x01",
        "#BB_HARMONIA line 1: control character 0x01 in the directive");
    bad("#BB_HARMONIA jobbuffer\x1b[31m capacity=1GiB",
        "#BB_HARMONIA line 1: control character 0x1b in the directive");
    bad("#BB_HARMONIA jobbuffer capacity=1GiB\rnodes=2",
        "#BB_HARMONIA line 1: control character 0x0d in the directive");
    bad("#BB_HARMONIA use_persistent name=a\n#BB_HARMONIA stage_in "
        "source=\"/a\x7f\x08\" destination=$HARMONIA_BB",
        "#BB_HARMONIA line 2: control character 0x08 in the directive");
    /* others' lines may hold anything but NUL */
    hu_bb_request_t req;
    memset(&req, 0, sizeof(req));
    snprintf(ctl, sizeof(ctl), "#DW \x01\x02;jobbuffer capacity=1GiB\r\n");
    parse_ok(&req, ctl, HU_BB_SRC_BB_OPTION);
    ck_assert(req.has_buffer);
    hu_bb_request_free(&req);
    /* a tab is a blank */
    parse_ok(&req, "#BB_HARMONIA\tjobbuffer\tcapacity=1GiB\tnodes=1", HU_BB_SRC_SCRIPT);
    ck_assert_uint_eq(req.nodes, 1);
    hu_bb_request_free(&req);
}
END_TEST

START_TEST(test_non_ascii)
{
    hu_bb_request_t req;

    /* UTF-8 in paths is fine, and is kept byte for byte */
    memset(&req, 0, sizeof(req));
    parse_ok(&req,
             "#BB_HARMONIA stage_in source=/pfs/\xc3\xa9t\xc3\xa9 "
             "destination=$HARMONIA_BB/\xe2\x82\xac\xf0\x9f\x92\xbe",
             HU_BB_SRC_SCRIPT);
    ck_assert_str_eq(req.stage_in[0].source, "/pfs/\xc3\xa9t\xc3\xa9");
    ck_assert_str_eq(req.stage_in[0].destination, "$HARMONIA_BB/\xe2\x82\xac\xf0\x9f\x92\xbe");
    hu_bb_request_free(&req);
    /* invalid UTF-8 too: paths are bytes */
    parse_ok(&req, "#BB_HARMONIA stage_in source=/\xff\xfe destination=$HARMONIA_BB",
             HU_BB_SRC_SCRIPT);
    hu_bb_request_free(&req);

    /* in a verb or a key: refused, the bytes escaped in the message */
    bad("#BB_HARMONIA j\xc3\xb6"
        "bbuffer capacity=1G",
        "#BB_HARMONIA line 1: unknown directive 'j\\xc3\\xb6bbuffer' (expected one "
        "of " VERBS ")");
    bad("#BB_HARMONIA jobbuffer capacit\xc3\xa9=1G",
        "#BB_HARMONIA line 1: jobbuffer: unknown key 'capacit\\xc3\\xa9' (jobbuffer "
        "takes capacity, nodes, pool)");
    /* a no-break space is not a blank */
    bad("#BB_HARMONIA jobbuffer capacity=1G\xc2\xa0nodes=2",
        "#BB_HARMONIA line 1: jobbuffer: capacity: unexpected '\xc2\xa0nodes=2' "
        "after size");
    /* names are ASCII */
    bad("#BB_HARMONIA use_persistent name=caf\xc3\xa9",
        "#BB_HARMONIA line 1: use_persistent: name 'caf\xc3\xa9' is not a valid "
        "buffer name " NAME_RULE);
}
END_TEST

START_TEST(test_long_token_message)
{
    char text[600], msg[400];

    /* a long unknown verb is cut in the message */
    strcpy(text, "#BB_HARMONIA ");
    memset(text + 13, 'v', 500);
    text[513] = '\0';
    snprintf(msg, sizeof(msg),
             "#BB_HARMONIA line 1: unknown directive '%.72s...' "
             "(expected one of " VERBS ")",
             text + 13);
    bad(text, msg);
    /* escapes are not cut in the middle */
    strcpy(text, "#BB_HARMONIA ");
    for (int i = 0; i < 100; i++)
        text[13 + i] = (char)0xe9;
    text[113] = '\0';
    hu_bb_request_t req;
    hu_error_t err;
    memset(&req, 0, sizeof(req));
    ck_assert_int_eq(hu_bb_parse(&req, text, strlen(text), HU_BB_SRC_SCRIPT, &err), -1);
    ck_assert_msg(strstr(err.text, "'\\xe9\\xe9") && strstr(err.text, "\\xe9...'"), "%s", err.text);
}
END_TEST

/* A failed parse leaves the request as it was, and frees what it added. */
START_TEST(test_failure_leaves_request)
{
    static const char *bad_texts[] = {
        /* adds a stage, a persistent buffer and hints, then fails */
        "stage_in source=/p/2 destination=$HARMONIA_BB/2;use_persistent name=u;"
        "iohints w_iter=1s io_volume=1B;create_persistent name=c capacity=1G pool=q;"
        "jobbuffer capacity=1G",
        "stage_out source=$HARMONIA_BB/o destination=/o;bogus",
        "use_persistent name=first", /* named twice */
        "create_persistent name=n capacity=1G pool=p;nul\0",
        "iohints w_iter=1s io_volume=1B;jobbuffer capacity=2G",
    };
    static const size_t bad_lens[] = { 0, 0, 0, 49, 0 };
    hu_bb_request_t req, saved;
    hu_error_t err;
    char *before, *after;

    memset(&req, 0, sizeof(req));
    parse_ok(&req,
             "jobbuffer capacity=1GiB pool=nvme;use_persistent name=first;"
             "stage_in source=/p/1 destination=$HARMONIA_BB/1",
             HU_BB_SRC_BB_OPTION);
    memcpy(&saved, &req, sizeof(req));
    before = hu_bb_format(&req);
    for (size_t i = 0; i < sizeof(bad_texts) / sizeof(bad_texts[0]); i++) {
        size_t len = bad_lens[i] ? bad_lens[i] : strlen(bad_texts[i]);
        ck_assert_msg(hu_bb_parse(&req, bad_texts[i], len, HU_BB_SRC_BB_OPTION, &err) == -1,
                      "text %zu accepted", i);
        ck_assert_msg(memcmp(&req, &saved, sizeof(req)) == 0, "text %zu changed the request (%s)",
                      i, err.text);
        after = hu_bb_format(&req);
        ck_assert_str_eq(after, before);
        free(after);
    }
    /* and it still takes good directives */
    parse_ok(&req, "iohints w_iter=1s io_volume=1B", HU_BB_SRC_BB_OPTION);
    ck_assert(req.has_hints);
    ck_assert_str_eq(req.pool, "nvme");
    free(before);
    hu_bb_request_free(&req);
}
END_TEST

/* ------------------------------------------------------------------ paths */

static char tmpdir[64];

static void make_tmp(void)
{
    char path[128];
    FILE *f;

    strcpy(tmpdir, "/tmp/test_directive.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(path, sizeof(path), "%s/file", tmpdir);
    ck_assert_ptr_nonnull((f = fopen(path, "w")));
    fclose(f);
    snprintf(path, sizeof(path), "%s/dir", tmpdir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
}

static void remove_tmp(void)
{
    char path[128];

    snprintf(path, sizeof(path), "%s/file", tmpdir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/dir", tmpdir);
    rmdir(path);
    rmdir(tmpdir);
}

/* hu_bb_check_paths() on "stage_<dir> ..." built from fmt (with %s = tmpdir);
 * msg NULL: must pass, else must fail with msg (%s = tmpdir). */
static void paths(const char *fmt, const char *msgfmt, int eno)
{
    char text[512], msg[512];
    hu_bb_request_t req;
    hu_error_t err = { "" };

    snprintf(text, sizeof(text), fmt, tmpdir, tmpdir);
    memset(&req, 0, sizeof(req));
    parse_ok(&req, text, HU_BB_SRC_BB_OPTION);
    errno = 0;
    if (!msgfmt) {
        ck_assert_msg(hu_bb_check_paths(&req, &err) == 0, "%s: %s", text, err.text);
    } else {
        snprintf(msg, sizeof(msg), msgfmt, tmpdir, tmpdir);
        ck_assert_int_eq(hu_bb_check_paths(&req, &err), -1);
        ck_assert_int_eq(errno, eno);
        ck_assert_str_eq(err.text, msg);
    }
    hu_bb_request_free(&req);
}

START_TEST(test_check_paths)
{
    make_tmp();
    paths("stage_in source=%s/file destination=$HARMONIA_BB/f type=file", NULL, 0);
    paths("stage_in source=%s/file destination=$HARMONIA_BB/f", NULL, 0);
    paths("stage_in source=%s/dir destination=$HARMONIA_BB/d type=directory", NULL, 0);
    paths("stage_in source=%s/dir/ destination=$HARMONIA_BB/d", NULL, 0);
    paths("stage_in source=%s/file destination=$HARMONIA_BB/d type=directory",
          "#BB_HARMONIA --bb item 1: stage_in: source '%s/file' is not a directory "
          "(type=directory)",
          EINVAL);
    paths("stage_in source=%s/dir destination=$HARMONIA_BB/f type=file",
          "#BB_HARMONIA --bb item 1: stage_in: source '%s/dir' is not a regular file "
          "(type=file)",
          EINVAL);
    paths("jobbuffer capacity=1G;stage_in source=%s/nope destination=$HARMONIA_BB",
          "#BB_HARMONIA --bb item 2: stage_in: source '%s/nope' does not exist (No such "
          "file or directory)",
          ENOENT);
    paths("stage_out source=$HARMONIA_BB/o destination=%s/out", NULL, 0);
    paths("stage_out source=$HARMONIA_BB/o destination=%s/dir/out type=file", NULL, 0);
    paths("stage_out source=$HARMONIA_BB/o destination=%s/newdir/", NULL, 0);
    paths("stage_out source=$HARMONIA_BB/o destination=%s//", NULL, 0);
    paths("stage_out source=$HARMONIA_BB/o destination=/", NULL, 0);
    paths("stage_out source=$HARMONIA_BB/o destination=/out", NULL, 0);
    paths("stage_out source=$HARMONIA_BB/o destination=%s/nodir/out",
          "#BB_HARMONIA --bb item 1: stage_out: the directory of destination "
          "'%s/nodir/out' does not exist",
          ENOENT);
    paths("stage_out source=$HARMONIA_BB/o destination=%s/file/out",
          "#BB_HARMONIA --bb item 1: stage_out: the directory of destination "
          "'%s/file/out' does not exist",
          ENOENT);
    /* the first failure is reported: stage_in before stage_out */
    paths("stage_out source=$HARMONIA_BB/o destination=%s/nodir/out;"
          "stage_in source=%s/nope destination=$HARMONIA_BB",
          "#BB_HARMONIA --bb item 2: stage_in: source '%s/nope' does not exist (No such "
          "file or directory)",
          ENOENT);
    remove_tmp();
}
END_TEST

/* DataWarp's lines in a script: refused, with the #BB_HARMONIA line to write. */
START_TEST(test_foreign_lines)
{
    static const struct {
        const char *script, *msg;
    } rows[] = {
        { "#!/bin/bash\n#SBATCH -N1\n#DW jobdw type=scratch access_mode=striped "
          "capacity=10GiB\nhostname\n",
          "#BB_HARMONIA line 3: '#DW jobdw' is DataWarp's syntax, which burst_buffer/harmonia "
          "does not read (the job would run without it): write '#BB_HARMONIA jobbuffer "
          "capacity=10GiB' instead (see harmonia-directives(5))" },
        { "#!/bin/sh\n\n#DW stage_in source=/pfs/in destination=$DW_JOB_STRIPED/in "
          "type=directory\n",
          "#BB_HARMONIA line 3: '#DW stage_in' is DataWarp's syntax, which "
          "burst_buffer/harmonia does not read (the job would run without it): write "
          "'#BB_HARMONIA stage_in source=/pfs/in destination=$HARMONIA_BB/in "
          "type=directory' instead (see harmonia-directives(5))" },
        { "#DW persistentdw name=ckpt\n",
          "#BB_HARMONIA line 1: '#DW persistentdw' is DataWarp's syntax, which "
          "burst_buffer/harmonia does not read (the job would run without it): write "
          "'#BB_HARMONIA use_persistent name=ckpt' instead (see harmonia-directives(5))" },
        { "#!/bin/sh\n#BB create_persistent name=p capacity=1TiB access_mode=striped "
          "type=scratch\n",
          "#BB_HARMONIA line 2: '#BB create_persistent' is DataWarp's syntax, which "
          "burst_buffer/harmonia does not read (the job would run without it): write "
          "'#BB_HARMONIA create_persistent name=p capacity=1TiB' instead (see "
          "harmonia-directives(5))" },
        { "#!/bin/sh\n#DW jobdw type=scratch\n",
          "#BB_HARMONIA line 2: '#DW jobdw' is DataWarp's syntax, which burst_buffer/harmonia "
          "does not read (the job would run without it): write '#BB_HARMONIA jobbuffer "
          "capacity=SIZE' instead (see harmonia-directives(5))" },
        { "#!/bin/sh\n#DW swap 10GiB\n",
          "#BB_HARMONIA line 2: '#DW swap' is a directive of another burst buffer plugin "
          "(DataWarp), which burst_buffer/harmonia does not read and has no equivalent of: "
          "remove it (see harmonia-directives(5))" },
        /* not directives: after the first command, other prefixes, ours */
        { "#!/bin/sh\nhostname\n#DW jobdw capacity=1GiB\n", NULL },
        { "#!/bin/sh\n#BB_HARMONIA jobbuffer capacity=1GiB\n#DWX a\n#BB_LUA x\n", NULL },
        { "", NULL },
    };

    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        hu_error_t err = { "" };
        if (!rows[i].msg) {
            ck_assert_msg(hu_bb_check_foreign(rows[i].script, &err) == 0, "row %zu: %s", i,
                          err.text);
            continue;
        }
        ck_assert_int_eq(hu_bb_check_foreign(rows[i].script, &err), -1);
        ck_assert_str_eq(err.text, rows[i].msg);
    }
    ck_assert_int_eq(hu_bb_check_foreign(NULL, NULL), 0);

    /* one directive (a --bb item) */
    char out[256];
    const char *t = "  #DW jobdw capacity=1GiB type=scratch";
    ck_assert_int_eq(hu_bb_dw_equivalent(t, strlen(t), out, sizeof(out)), 1);
    ck_assert_str_eq(out, "#BB_HARMONIA jobbuffer capacity=1GiB");
    t = "#DW swap 1GiB";
    ck_assert_int_eq(hu_bb_dw_equivalent(t, strlen(t), out, sizeof(out)), 0);
    t = "jobbuffer capacity=1GiB";
    ck_assert_int_eq(hu_bb_dw_equivalent(t, strlen(t), out, sizeof(out)), -1);
    t = "#DW persistentdw name=a;jobbuffer"; /* only the bytes given */
    ck_assert_int_eq(hu_bb_dw_equivalent(t, 23, out, sizeof(out)), 1);
    ck_assert_str_eq(out, "#BB_HARMONIA use_persistent name=a");
    /* a small buffer: cut, terminated */
    char small[16];
    t = "#DW stage_in source=/a/very/long/path destination=$DW_JOB_STRIPED/x";
    ck_assert_int_eq(hu_bb_dw_equivalent(t, strlen(t), small, sizeof(small)), 1);
    ck_assert_str_eq(small, "#BB_HARMONIA st");
    t = "#DW create_persistent name=p";
    ck_assert_int_eq(hu_bb_dw_equivalent(t, strlen(t), small, sizeof(small)), 1);
    ck_assert_str_eq(small, "#BB_HARMONIA cr");
    t = "#DW jobdw";
    ck_assert_int_eq(hu_bb_dw_equivalent(t, strlen(t), small, sizeof(small)), 1);
    ck_assert_str_eq(small, "#BB_HARMONIA jo");
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "errors", .tests = { test_errors_verbs_keys, test_errors_values, test_errors_names,
                               test_errors_paths, test_errors_quotes, test_errors_limits,
                               test_validate, test_failure_leaves_request, NULL } },
        { "bytes", .tests = { test_long_lines, test_long_lines_bb, test_nul_and_control,
                              test_non_ascii, test_long_token_message, NULL } },
        { "paths", .tests = { test_check_paths, NULL } },
        { "foreign", .tests = { test_foreign_lines, NULL } },
    };

    return tu_main("libhutil directives: errors", tcases, TU_COUNT(tcases));
}
