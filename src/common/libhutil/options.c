/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * options.c — getopt_long's arrays and --help lines from one option table.
 */
#include <errno.h>
#include <string.h>

#include "options.h"

static const hu_option_t help = { "help", no_argument, 'h', NULL, "this help" };

/* A table's options, then --help. */
static const hu_option_t *first(const hu_option_t *opts)
{
    return opts->name ? opts : &help;
}

static const hu_option_t *next(const hu_option_t *o)
{
    if (o == &help)
        return NULL;
    return o[1].name ? o + 1 : &help;
}

static int is_short(int val)
{
    return val > ' ' && val < 127;
}

int hu_getopt_init(hu_getopt_t *g, const hu_option_t *opts, const char *prefix)
{
    size_t len = strlen(prefix);
    int n = 0;

    if (len > 1)
        goto error;
    memset(g, 0, sizeof(*g));
    memcpy(g->shortopts, prefix, len);
    for (const hu_option_t *o = first(opts); o; o = next(o)) {
        if (n == HU_OPTIONS_MAX + 1)
            goto error;
        g->longopts[n++] = (struct option){ o->name, o->has_arg, NULL, o->val };
        if (is_short(o->val)) {
            g->shortopts[len++] = (char)o->val;
            if (o->has_arg == required_argument)
                g->shortopts[len++] = ':';
        }
    }
    return 0;
error:
    errno = EINVAL;
    return -1;
}

void hu_options_usage(FILE *f, const hu_option_t *opts, int width, const char *usage)
{
    fputs(usage, f);
    for (const hu_option_t *o = first(opts); o; o = next(o)) {
        int n;
        if (!o->help)
            continue;
        if (is_short(o->val))
            n = fprintf(f, "  -%c, --%s", o->val, o->name);
        else
            n = fprintf(f, "      --%s", o->name);
        if (o->arg)
            n += fprintf(f, " %s", o->arg);
        fprintf(f, "%*s", n < width ? width - n : 1, "");
        for (const char *h = o->help; *h; h++) {
            fputc(*h, f);
            if (*h == '\n')
                fprintf(f, "%*s", width, "");
        }
        fputc('\n', f);
    }
}

int hu_option_choice(FILE *f, const char *prog, const char *name, const char *value,
                     const char *const *words)
{
    int n;

    for (n = 0; words[n]; n++)
        if (!strcmp(value, words[n]))
            return n;
    fprintf(f, "%s: %s must be ", prog, name);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", words[i]);
    fprintf(f, ", not '%s'\n", value);
    return -1;
}
