/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_options.c — libhutil's option tables (options.h): getopt_long's arrays
 * and the --help lines made from one table; an option's value among its words.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhutil/options.h"
#include "testutil.h"

static const hu_option_t options[] = {
    { "size", required_argument, 's', "SIZE", "largest file\nper stream" },
    { "no-read", no_argument, 1, NULL, "writes only" },
    { "quiet", no_argument, 'q', NULL, "no messages" },
    { "a-very-long-option", required_argument, 2, "VALUE", "past the column" },
    HU_OPTIONS_END,
};

/* The text hu_options_usage() prints, in a malloc'd string. */
static char *usage_text(const hu_option_t *opts, int width, const char *usage)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    ck_assert_ptr_nonnull(f);
    hu_options_usage(f, opts, width, usage);
    ck_assert_int_eq(fclose(f), 0);
    return buf;
}

/* Short options in table order, ':' after those with an argument, --help last. */
START_TEST(test_getopt_arrays)
{
    hu_getopt_t g;

    ck_assert_int_eq(hu_getopt_init(&g, options, "+"), 0);
    ck_assert_str_eq(g.shortopts, "+s:qh");
    ck_assert_str_eq(g.longopts[0].name, "size");
    ck_assert_int_eq(g.longopts[0].has_arg, required_argument);
    ck_assert_int_eq(g.longopts[0].val, 's');
    ck_assert_int_eq(g.longopts[1].val, 1);
    ck_assert_str_eq(g.longopts[4].name, "help");
    ck_assert_int_eq(g.longopts[4].val, 'h');
    ck_assert_ptr_null(g.longopts[5].name);
    ck_assert_int_eq(hu_getopt_init(&g, options, ""), 0);
    ck_assert_str_eq(g.shortopts, "s:qh");
}
END_TEST

/* getopt_long itself takes the arrays. */
START_TEST(test_getopt_parses)
{
    char *argv[] = {
        "prog", "-s", "4MiB", "--no-read", "--a-very-long-option=x", "-q", "arg", NULL
    };
    int argc = 7, opt, seen = 0;
    hu_getopt_t g;

    ck_assert_int_eq(hu_getopt_init(&g, options, ""), 0);
    optind = 0;
    while ((opt = getopt_long(argc, argv, g.shortopts, g.longopts, NULL)) != -1) {
        switch (opt) {
        case 's':
            ck_assert_str_eq(optarg, "4MiB");
            seen |= 1;
            break;
        case 1:
            seen |= 2;
            break;
        case 2:
            ck_assert_str_eq(optarg, "x");
            seen |= 4;
            break;
        case 'q':
            seen |= 8;
            break;
        default:
            ck_abort_msg("unexpected option %d", opt);
        }
    }
    ck_assert_int_eq(seen, 15);
    ck_assert_int_eq(optind, 6);
}
END_TEST

/* The help column, continuation lines, long options alone, and one space after
 * an option longer than the column. */
START_TEST(test_usage_lines)
{
    char *s = usage_text(options, 24, "Usage: prog\n\n");

    ck_assert_str_eq(s, "Usage: prog\n\n"
                        "  -s, --size SIZE       largest file\n"
                        "                        per stream\n"
                        "      --no-read         writes only\n"
                        "  -q, --quiet           no messages\n"
                        "      --a-very-long-option VALUE past the column\n"
                        "  -h, --help            this help\n");
    free(s);
}
END_TEST

/* A table with no options still has --help. */
START_TEST(test_empty_table)
{
    static const hu_option_t none[] = { HU_OPTIONS_END };
    hu_getopt_t g;
    char *s;

    ck_assert_int_eq(hu_getopt_init(&g, none, ""), 0);
    ck_assert_str_eq(g.shortopts, "h");
    ck_assert_str_eq(g.longopts[0].name, "help");
    ck_assert_ptr_null(g.longopts[1].name);
    s = usage_text(none, 10, "");
    ck_assert_str_eq(s, "  -h, --help this help\n");
    free(s);
}
END_TEST

/* More options than fit, or a prefix of more than one character: EINVAL. */
START_TEST(test_errors)
{
    static hu_option_t many[HU_OPTIONS_MAX + 2];
    hu_getopt_t g;

    for (int i = 0; i < HU_OPTIONS_MAX + 1; i++)
        many[i] = (hu_option_t){ "x", no_argument, 3, NULL, "" };
    errno = 0;
    ck_assert_int_eq(hu_getopt_init(&g, many, ""), -1);
    ck_assert_int_eq(errno, EINVAL);
    many[HU_OPTIONS_MAX] = (hu_option_t)HU_OPTIONS_END;
    ck_assert_int_eq(hu_getopt_init(&g, many, ""), 0);
    errno = 0;
    ck_assert_int_eq(hu_getopt_init(&g, options, "+-"), -1);
    ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* An option without help text is parsed but left out of --help. */
START_TEST(test_hidden_option)
{
    static const hu_option_t opts[] = {
        { "foreground", no_argument, 'F', NULL, NULL },
        { "quiet", no_argument, 'q', NULL, "no messages" },
        HU_OPTIONS_END,
    };
    hu_getopt_t g;
    char *s;

    ck_assert_int_eq(hu_getopt_init(&g, opts, ""), 0);
    ck_assert_str_eq(g.shortopts, "Fqh");
    ck_assert_str_eq(g.longopts[0].name, "foreground");
    s = usage_text(opts, 16, "");
    ck_assert_str_eq(s, "  -q, --quiet   no messages\n"
                        "  -h, --help    this help\n");
    free(s);
}
END_TEST

/* The value's index among the words; else -1 and a message that lists them. */
static const struct {
    const char *words[4];
    const char *value;
    int index;
    const char *message;
} choices[] = {
    { { "table", "json", "csv", NULL }, "json", 1, "" },
    { { "table", "json", "csv", NULL }, "csv", 2, "" },
    { { "table", "json", "csv", NULL },
      "xml",
      -1,
      "prog: --format must be table, json or csv, not 'xml'\n" },
    { { "read", "write", NULL }, "", -1, "prog: --format must be read or write, not ''\n" },
    { { "only", NULL }, "Only", -1, "prog: --format must be only, not 'Only'\n" },
};

START_TEST(test_choice)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(hu_option_choice(f, "prog", "--format", choices[_i].value, choices[_i].words),
                     choices[_i].index);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_str_eq(buf, choices[_i].message);
    free(buf);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "getopt", .tests = { test_getopt_arrays, test_getopt_parses, test_errors, NULL } },
        { "usage", .tests = { test_usage_lines, test_empty_table, test_hidden_option, NULL } },
        { "choice", .loops = { { test_choice, TU_COUNT(choices) } } },
    };

    return tu_main("libhutil options", tcases, TU_COUNT(tcases));
}

/*
 * vi: ts=4 sw=4 expandtab
 */
