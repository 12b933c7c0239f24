/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hostlist.c — Slurm-style host list expansion.
 *
 * Grammar: list := item (',' item)* ; item := (text | '[' ranges ']')+ ;
 * ranges := range (',' range)* ; range := N | N '-' M (N <= M, zero padding kept
 * from N's width: "bb[01-10]" gives bb01..bb10).  Commas inside brackets separate
 * ranges, outside they separate items.  Names: letters, digits, '-', '_', '.'.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"

typedef struct {
    char **v;
    int n, cap;
} names_t;

static int names_add(names_t *ns, const char *s, size_t len, hu_error_t *err)
{
    if (ns->n >= HOSTLIST_MAX) {
        errno = ERANGE;
        return hu_errprintf(err, "host list expands to more than %d names", HOSTLIST_MAX);
    }
    if (ns->n == ns->cap) {
        int cap = ns->cap ? ns->cap * 2 : 16;
        char **v = realloc(ns->v, (size_t)cap * sizeof(*v));
        if (!v)
            goto nomem;
        ns->v = v;
        ns->cap = cap;
    }
    if (!(ns->v[ns->n] = strndup(s, len)))
        goto nomem;
    ns->n++;
    return 0;
nomem:
    errno = ENOMEM;
    return hu_errprintf(err, "out of memory");
}

static int valid_char(int c)
{
    return isalnum(c) || c == '-' || c == '_' || c == '.';
}

/* Expand item[pos..end) with prefix already built in 'pre'. */
static int expand_item(const char *item, size_t len, char *pre, size_t plen,
                       size_t precap, names_t *ns, hu_error_t *err)
{
    size_t i = 0;

    while (i < len && item[i] != '[') {
        if (!valid_char((unsigned char)item[i])) {
            errno = EINVAL;
            return hu_errprintf(err, "invalid character '%c' in host name", item[i]);
        }
        if (plen + 1 >= precap) {
            errno = EINVAL;
            return hu_errprintf(err, "host name too long");
        }
        pre[plen++] = item[i++];
    }
    if (i == len) {
        if (plen == 0) {
            errno = EINVAL;
            return hu_errprintf(err, "empty host name");
        }
        return names_add(ns, pre, plen, err);
    }
    /* item[i] == '[' */
    const char *close = memchr(item + i, ']', len - i);
    if (!close) {
        errno = EINVAL;
        return hu_errprintf(err, "unbalanced '[' in host list");
    }
    const char *p = item + i + 1;
    if (p == close) {
        errno = EINVAL;
        return hu_errprintf(err, "empty range '[]' in host list");
    }
    while (p < close) {
        char *end;
        if (!isdigit((unsigned char)*p)) {
            errno = EINVAL;
            return hu_errprintf(err, "range must start with a digit, not '%c'", *p);
        }
        const char *start = p;
        errno = 0;
        unsigned long lo = strtoul(p, &end, 10), hi;
        int width = (int)(end - start);
        if (errno || lo > 999999999UL) {
            errno = ERANGE;
            return hu_errprintf(err, "range bound too large");
        }
        p = end;
        hi = lo;
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p)) {
                errno = EINVAL;
                return hu_errprintf(err, "missing upper bound in range");
            }
            errno = 0;
            hi = strtoul(p, &end, 10);
            if (errno || hi > 999999999UL) {
                errno = ERANGE;
                return hu_errprintf(err, "range bound too large");
            }
            p = end;
            if (hi < lo) {
                errno = EINVAL;
                return hu_errprintf(err, "range %lu-%lu is decreasing", lo, hi);
            }
            if (hi - lo >= HOSTLIST_MAX) {
                errno = ERANGE;
                return hu_errprintf(err, "host list expands to more than %d names",
                                    HOSTLIST_MAX);
            }
        }
        if (p != close && *p != ',') {
            errno = EINVAL;
            return hu_errprintf(err, "unexpected '%c' in range", *p);
        }
        if (*p == ',') {
            p++;
            if (p == close) {
                errno = EINVAL;
                return hu_errprintf(err, "empty range after ','");
            }
        }
        for (unsigned long k = lo; k <= hi; k++) {
            char num[256];  /* a bound's digits, zero padding included */
            int nl = snprintf(num, sizeof(num), "%0*lu", width, k);
            if (nl < 0 || (size_t)nl >= sizeof(num) || plen + (size_t)nl >= precap) {
                errno = EINVAL;
                return hu_errprintf(err, "host name too long");
            }
            memcpy(pre + plen, num, (size_t)nl);
            size_t rest = (size_t)(item + len - (close + 1));
            if (expand_item(close + 1, rest, pre, plen + (size_t)nl, precap, ns, err) < 0)
                return -1;
        }
    }
    return 0;
}

int hostlist_expand(const char *expr, char ***names, int *count, hu_error_t *err)
{
    names_t ns = { 0 };
    char pre[256];
    const char *p = expr;

    if (!expr || !names || !count) {
        errno = EINVAL;
        return hu_errprintf(err, "invalid argument");
    }
    while (isspace((unsigned char)*p))
        p++;
    if (!*p) {
        errno = EINVAL;
        return hu_errprintf(err, "empty host list");
    }
    while (*p) {
        /* find the end of this item: a ',' outside brackets */
        const char *q = p;
        int depth = 0;
        while (*q && (depth > 0 || *q != ',')) {
            if (*q == '[') {
                if (depth++) {
                    errno = EINVAL;
                    hu_errprintf(err, "nested '[' in host list");
                    goto error;
                }
            } else if (*q == ']') {
                if (depth-- == 0) {
                    errno = EINVAL;
                    hu_errprintf(err, "unbalanced ']' in host list");
                    goto error;
                }
            }
            q++;
        }
        size_t len = (size_t)(q - p);
        while (len && isspace((unsigned char)p[len - 1]))
            len--;
        if (expand_item(p, len, pre, 0, sizeof(pre), &ns, err) < 0)
            goto error;
        if (*q == ',') {
            q++;
            while (isspace((unsigned char)*q))
                q++;
            if (!*q) {
                errno = EINVAL;
                hu_errprintf(err, "trailing ',' in host list");
                goto error;
            }
        }
        p = q;
    }
    *names = ns.v;
    *count = ns.n;
    return 0;
error:
    hostlist_free(ns.v, ns.n);
    return -1;
}

void hostlist_free(char **names, int count)
{
    if (names) {
        int saved = errno;
        for (int i = 0; i < count; i++)
            free(names[i]);
        free(names);
        errno = saved;
    }
}
