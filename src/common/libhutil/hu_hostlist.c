/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hu_hostlist.c — Slurm-style host list expansion (grammar in hu_hostlist.h).
 *
 * Items are split on the commas outside brackets, then each item is expanded by
 * recursion on its first bracket group, its prefix built in a buffer of the longest
 * name.  A range's size is checked against the limit before any name of it is made.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hu_error.h"
#include "hu_hostlist.h"

typedef struct {
    const hu_hostlist_opts_t *o;
    char **v;
    int n, cap;
    hu_hostlist_fail_t *fail;
    hu_error_t *err;
} hl_t;

/* Record why (with errno) and the default wording; returns -1. */
static int hl_fail(hl_t *h, hu_hostlist_why_t why, int eno, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int hl_fail(hl_t *h, hu_hostlist_why_t why, int eno, const char *fmt, ...)
{
    if (h->fail)
        h->fail->why = why;
    va_list ap;
    va_start(ap, fmt);
    hu_verrprintf(h->err, fmt, ap);
    va_end(ap);
    errno = eno;
    return -1;
}

static int too_many(hl_t *h)
{
    return hl_fail(h, HU_HL_TOO_MANY, ERANGE, "host list expands to more than %d names",
                   h->o->max_names);
}

static int too_long(hl_t *h)
{
    return hl_fail(h, HU_HL_NAME_TOO_LONG, EINVAL, "host name too long");
}

/* The character a reason names; returns c. */
static char with_c(hl_t *h, char c)
{
    if (h->fail)
        h->fail->c = c;
    return c;
}

static int names_add(hl_t *h, const char *s, size_t len)
{
    if (h->n >= h->o->max_names)
        return too_many(h);
    if (h->n == h->cap) {
        int cap = h->cap ? h->cap * 2 : 16;
        if (cap > h->o->max_names)
            cap = h->o->max_names;
        char **v = realloc(h->v, (size_t)cap * sizeof(*v));
        if (!v)
            goto nomem;
        h->v = v;
        h->cap = cap;
    }
    if (!(h->v[h->n] = strndup(s, len)))
        goto nomem;
    h->n++;
    return 0;
nomem:
    return hl_fail(h, HU_HL_NOMEM, ENOMEM, "out of memory");
}

static int name_char(const hl_t *h, int c)
{
    if (h->o->flags & HU_HOSTLIST_STRICT)
        return isalnum(c) || c == '-' || c == '_' || c == '.';
    return 1;
}

/* A range bound at p: digits, at most max_bound. */
static int bound(hl_t *h, const char **p, unsigned long *out)
{
    char *end;
    errno = 0;
    *out = strtoul(*p, &end, 10);
    if (errno || (h->o->max_bound && *out > h->o->max_bound))
        return hl_fail(h, HU_HL_BOUND_TOO_LARGE, ERANGE, "range bound too large");
    *p = end;
    return 0;
}

/* Expand item[0..len) after the prefix pre[0..plen). */
static int expand_item(hl_t *h, const char *item, size_t len, char *pre, size_t plen)
{
    size_t i = 0;

    while (i < len && item[i] != '[') {
        if (!name_char(h, (unsigned char)item[i]))
            return hl_fail(h, HU_HL_BAD_CHAR, EINVAL, "invalid character '%c' in host name",
                           with_c(h, item[i]));
        if (plen + 1 > h->o->max_name_len)
            return too_long(h);
        pre[plen++] = item[i++];
    }
    if (i == len) {
        if (plen == 0)
            return hl_fail(h, HU_HL_EMPTY_NAME, EINVAL, "empty host name");
        if (memchr(pre, ']', plen)) /* only without HU_HOSTLIST_STRICT */
            return hl_fail(h, HU_HL_UNBALANCED_CLOSE, EINVAL, "unbalanced ']' in host list");
        return names_add(h, pre, plen);
    }
    /* item[i] == '[' */
    const char *close = memchr(item + i, ']', len - i);
    if (!close)
        return hl_fail(h, HU_HL_UNBALANCED_OPEN, EINVAL, "unbalanced '[' in host list");
    const char *p = item + i + 1;
    if (p == close)
        return hl_fail(h, HU_HL_EMPTY_RANGE, EINVAL, "empty range '[]' in host list");
    while (p < close) {
        if (!isdigit((unsigned char)*p))
            return hl_fail(h, HU_HL_RANGE_START, EINVAL, "range must start with a digit, not '%c'",
                           with_c(h, *p));
        const char *start = p;
        unsigned long lo, hi;
        if (bound(h, &p, &lo) < 0)
            return -1;
        int width = (int)(p - start);
        hi = lo;
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p))
                return hl_fail(h, HU_HL_NO_UPPER, EINVAL, "missing upper bound in range");
            if (bound(h, &p, &hi) < 0)
                return -1;
        }
        /* strict: the numbers' order before what follows them; else the reverse */
        bool strict = h->o->flags & HU_HOSTLIST_STRICT;
        if (!strict && p != close && *p != ',')
            return hl_fail(h, HU_HL_UNEXPECTED, EINVAL, "unexpected '%c' in range", with_c(h, *p));
        if (hi < lo) {
            if (h->fail) {
                h->fail->lo = lo;
                h->fail->hi = hi;
            }
            return hl_fail(h, HU_HL_DECREASING, EINVAL, "range %lu-%lu is decreasing", lo, hi);
        }
        if (hi - lo >= (unsigned long)h->o->max_names)
            return too_many(h);
        if (p != close && *p != ',')
            return hl_fail(h, HU_HL_UNEXPECTED, EINVAL, "unexpected '%c' in range", with_c(h, *p));
        /* strict: "[1,]" is refused; else it is "[1]" */
        if (*p == ',' && ++p == close && strict)
            return hl_fail(h, HU_HL_EMPTY_AFTER_COMMA, EINVAL, "empty range after ','");
        for (unsigned long k = lo; k <= hi; k++) {
            char num[256]; /* a bound's digits, zero padding included */
            int nl = snprintf(num, sizeof(num), "%0*lu", width, k);
            if (nl < 0 || (size_t)nl >= sizeof(num) || plen + (size_t)nl > h->o->max_name_len)
                return too_long(h);
            memcpy(pre + plen, num, (size_t)nl);
            size_t rest = (size_t)(item + len - (close + 1));
            if (expand_item(h, close + 1, rest, pre, plen + (size_t)nl) < 0)
                return -1;
        }
    }
    return 0;
}

static int is_blank(const hl_t *h, int c)
{
    return (h->o->flags & HU_HOSTLIST_STRICT) && isspace(c);
}

int hu_hostlist_expand(const char *expr, const hu_hostlist_opts_t *opts, char ***names, int *count,
                       hu_hostlist_fail_t *fail, hu_error_t *err)
{
    hl_t h = { .o = opts, .fail = fail, .err = err };
    char pre[256];
    const char *p = expr;

    if (fail)
        memset(fail, 0, sizeof(*fail));
    if (!expr || !opts || !names || !count || opts->max_names <= 0 || opts->max_name_len == 0
        || opts->max_name_len >= sizeof(pre)) {
        errno = EINVAL;
        return hu_errprintf(err, "invalid argument");
    }
    while (is_blank(&h, (unsigned char)*p))
        p++;
    if (!*p) {
        hl_fail(&h, HU_HL_EMPTY_LIST, EINVAL, "empty host list");
        goto error;
    }
    while (*p) {
        /* the end of this item: a ',' outside brackets */
        const char *q = p;
        int depth = 0;
        bool strict = opts->flags & HU_HOSTLIST_STRICT;
        while (*q && (depth != 0 || *q != ',')) {
            if (*q == '[' && depth++ > 0 && strict) {
                hl_fail(&h, HU_HL_NESTED, EINVAL, "nested '[' in host list");
                goto error;
            }
            if (*q == ']' && depth-- == 0 && strict) {
                hl_fail(&h, HU_HL_UNBALANCED_CLOSE, EINVAL, "unbalanced ']' in host list");
                goto error;
            }
            q++;
        }
        size_t len = (size_t)(q - p);
        while (len && is_blank(&h, (unsigned char)p[len - 1]))
            len--;
        if (expand_item(&h, p, len, pre, 0) < 0)
            goto error;
        if (*q == ',') {
            q++;
            while (is_blank(&h, (unsigned char)*q))
                q++;
            if (!*q) {
                hl_fail(&h, HU_HL_TRAILING_COMMA, EINVAL, "trailing ',' in host list");
                goto error;
            }
        }
        p = q;
    }
    *names = h.v;
    *count = h.n;
    return 0;
error:
    hu_hostlist_free(h.v, h.n);
    return -1;
}

void hu_hostlist_free(char **names, int count)
{
    if (names) {
        int saved = errno;
        for (int i = 0; i < count; i++)
            free(names[i]);
        free(names);
        errno = saved;
    }
}
