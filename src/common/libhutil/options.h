/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * options.h — a command's options in one table.  getopt_long's arrays and the
 * option lines of the command's --help are made from it, so an option is
 * written once.  -h, --help ("this help") is added to every table:
 *
 *   static const hu_option_t options[] = {
 *       { "block", required_argument, 'b', "SIZE", "request size (default 1MiB)" },
 *       { "no-read", no_argument, 2, NULL, "writes only" },
 *       HU_OPTIONS_END,
 *   };
 *   hu_getopt_t g;
 *   hu_getopt_init(&g, options, "");
 *   while ((opt = getopt_long(argc, argv, g.shortopts, g.longopts, NULL)) != -1)
 *       ... case 'h': hu_options_usage(stdout, options, 24, "Usage: cmd\n\n"); ...
 *
 * prints "Usage: cmd", a blank line, then
 *   "  -b, --block SIZE      request size (default 1MiB)"
 *   "      --no-read         writes only"
 *   "  -h, --help            this help"
 */
#ifndef HARMONIA_OPTIONS_H
#define HARMONIA_OPTIONS_H

#include <getopt.h>
#include <stdio.h>

/* The text of a macro's value: "1.." HU_XSTR(MAX_STREAMS) in a help string. */
#define HU_STR(x) #x
#define HU_XSTR(x) HU_STR(x)

typedef struct {
    const char *name; /* long name, without "--"; NULL ends the table */
    int has_arg;      /* no_argument or required_argument */
    int val;          /* what getopt_long returns: the short option's letter,
                         * or a number below ' ' for a long option alone */
    const char *arg;  /* name of the argument in the help; NULL: none */
    const char *help; /* '\n' starts a continuation line; NULL: not listed
                         * in --help (an option kept for compatibility) */
} hu_option_t;

#define HU_OPTIONS_END \
    { \
        NULL, 0, 0, NULL, NULL \
    }

#define HU_OPTIONS_MAX 32 /* in a table, --help not counted */

typedef struct {
    struct option longopts[HU_OPTIONS_MAX + 2];
    char shortopts[2 * HU_OPTIONS_MAX + 3];
} hu_getopt_t;

/* Fill g from opts; shortopts starts with prefix ("", or "+" to stop at the
 * first operand).  -1/EINVAL if there are more than HU_OPTIONS_MAX options or
 * the prefix is longer than one character. */
int hu_getopt_init(hu_getopt_t *g, const hu_option_t *opts, const char *prefix);

/* Print usage, then one line per option (and per continuation line of its
 * help), the help text starting at column width. */
void hu_options_usage(FILE *f, const hu_option_t *opts, int width, const char *usage);

/* The index of an option's value among words (a NULL-terminated list): "--format
 * json" with { "table", "json", "csv", NULL } is 1.  When it is none of them, -1
 * after "PROG: --format must be table, json or csv, not 'VALUE'" on f. */
int hu_option_choice(FILE *f, const char *prog, const char *name, const char *value,
                     const char *const *words);

#endif
