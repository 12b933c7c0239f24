/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * workload_yaml.c — the first step of the workload loader (workload.c): the YAML
 * document as libhutil's reader gives it (hu_yaml.h: every node with its line and
 * column), and the schema's helpers on that tree (typed values, quantities with
 * units, distributions, host lists), each refusing a bad value with "FILE:LINE:COL:
 * reason".
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhsched/hsched.h"
#include "libhutil/hu_error.h"
#include "libhutil/hu_hostlist.h"
#include "libhutil/hu_yaml.h"
#include "libhutil/hutil.h"
#include "rng.h"
#include "workload_yaml.h"

/* ---------------------------------------------------------------- YAML tree */


/* The message cut at 399 bytes as it always was, after its position. */
#define WL_MSG_MAX 399

int wl_fail_at(ctx_t *c, int line, int col, const char *fmt, ...)
{
    if (c->err) {
        hu_error_t m;
        va_list ap;
        va_start(ap, fmt);
        hu_verrprintf(&m, fmt, ap);
        va_end(ap);
        hu_errprintf(c->err, "%s:%d:%d: %.*s", c->file, line, col, WL_MSG_MAX, m.text);
    }
    errno = EINVAL;
    return -1;
}


/* The one document of the input, libhutil's refusals worded as bbsim words them. */
hu_ydoc_t *wl_yaml_doc(ctx_t *c)
{
    static const hu_yaml_opts_t opts = {
        .max_depth = WL_MAX_DEPTH,
        .max_nodes = WL_MAX_NODES,
        .one_doc = true,
    };
    hu_yaml_t *y;
    hu_ydoc_t *doc = NULL, *more = NULL;
    hu_yaml_fail_t f;
    int rc;

    if (!(y = hu_yaml_open(c->buf, c->len, &opts, NULL))) {
        wl_fail_at(c, 1, 1, "cannot initialise the YAML parser");
        errno = ENOMEM;
        return NULL;
    }
    if ((rc = hu_yaml_next(y, &doc, &f, NULL)) == 0) {
        hu_yaml_close(y);
        wl_fail_at(c, 1, 1, "empty workload: expected 'platform:' and 'apps:'");
        return NULL;
    }
    if (rc > 0 && (rc = hu_yaml_next(y, &more, &f, NULL)) == 0) {
        hu_yaml_close(y);
        return doc;
    }
    hu_ydoc_free(more); /* one_doc: never a second one */
    hu_ydoc_free(doc);
    switch (f.why) {
    case HU_YAML_NOMEM:
        wl_fail_at(c, f.line, f.col, "out of memory");
        break;
    case HU_YAML_SYNTAX:
    case HU_YAML_ENCODING:
        wl_fail_at(c, f.line, f.col, "YAML syntax error: %s%s%s",
                   f.problem ? f.problem : "unknown error", f.context ? " " : "",
                   f.context ? f.context : "");
        break;
    case HU_YAML_ALIAS:
        wl_fail_at(c, f.line, f.col, "anchors and aliases are not supported");
        break;
    case HU_YAML_DEPTH:
        wl_fail_at(c, f.line, f.col, "nesting deeper than %d levels", WL_MAX_DEPTH);
        break;
    case HU_YAML_NODES:
        wl_fail_at(c, f.line, f.col, "too many YAML nodes (more than %d)", WL_MAX_NODES);
        break;
    case HU_YAML_DOCS:
    case HU_YAML_OK:
        wl_fail_at(c, f.line, f.col, "only one YAML document is allowed");
        break;
    }
    hu_yaml_close(y);
    errno = f.why == HU_YAML_NOMEM ? ENOMEM : EINVAL;
    return NULL;
}

/* ---------------------------------------------------------------- schema helpers */

const char *wl_type_name(hu_yaml_type_t t)
{
    return t == HU_YAML_MAP ? "a mapping" : t == HU_YAML_SEQ ? "a list" : "a value";
}

/* Printable, bounded copy of a scalar for messages. */
static const char *show(const hu_ynode_t *n, char *buf, size_t len)
{
    size_t j = 0;
    for (size_t i = 0; i < n->len && j + 4 < len; i++) {
        unsigned char ch = (unsigned char)n->str[i];
        buf[j++] = (ch >= 0x20 && ch != 0x7f) ? (char)ch : '?';
    }
    if (j + 4 >= len && n->len > j) {
        buf[j++] = '.';
        buf[j++] = '.';
        buf[j++] = '.';
    }
    buf[j] = '\0';
    return buf;
}

/* Check that a map has only 'allowed' keys (NULL-terminated), unique and scalar. */
int wl_check_keys(ctx_t *c, const hu_ynode_t *map, const char *const *allowed, const char *where)
{
    char b[80];
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const hu_ynode_t *k = map->kids[i];
        bool ok = false;
        if (k->type != HU_YAML_SCALAR)
            return fail(c, k, "keys must be plain names in %s", where);
        for (const char *const *a = allowed; *a; a++) {
            if (strlen(*a) == k->len && !strcmp(*a, k->str)) {
                ok = true;
                break;
            }
        }
        if (!ok)
            return fail(c, k, "unknown key '%s' in %s", show(k, b, sizeof(b)), where);
        for (size_t j = 0; j < i; j += 2) {
            if (!strcmp(map->kids[j]->str, k->str))
                return fail(c, k, "duplicate key '%s' in %s", k->str, where);
        }
    }
    return 0;
}

const hu_ynode_t *wl_need(ctx_t *c, const hu_ynode_t *map, const char *key, const char *where)
{
    const hu_ynode_t *x = hu_ymap_get(map, key);
    if (!x)
        fail(c, map, "missing key '%s' in %s", key, where);
    return x;
}

int wl_need_quantity(ctx_t *c, const hu_ynode_t *map, const char *key, const char *where,
                     qkind_t kind, bool positive, double *out)
{
    const hu_ynode_t *x = wl_need(c, map, key, where);
    return x ? wl_parse_quantity(c, x, kind, key, positive, out) : -1;
}

const hu_ynode_t *wl_key_node(const hu_ynode_t *map, const char *key)
{
    const hu_ynode_t *k = hu_ymap_key(map, key);
    return k ? k : map;
}

int wl_need_type(ctx_t *c, const hu_ynode_t *n, hu_yaml_type_t t, const char *what)
{
    if (n->type != t)
        return fail(c, n, "'%s' must be %s, not %s", what, wl_type_name(t), wl_type_name(n->type));
    return 0;
}

int wl_parse_int(ctx_t *c, const hu_ynode_t *n, const char *what, long min, long max, long *out)
{
    char b[80];
    char *end;
    long v;

    if (n->type != HU_YAML_SCALAR)
        return fail(c, n, "'%s' must be an integer, not %s", what, wl_type_name(n->type));
    if (n->len == 0)
        return fail(c, n, "missing value for '%s'", what);
    if (n->str[0] == '-' && n->len > 1 && n->str[1] >= '0' && n->str[1] <= '9')
        return fail(c, n, "%s must be >= %ld", what, min);
    for (size_t i = 0; i < n->len; i++) {
        if (n->str[i] < '0' || n->str[i] > '9')
            return fail(c, n, "'%s' must be an integer, not '%s'", what, show(n, b, sizeof(b)));
    }
    errno = 0;
    v = strtol(n->str, &end, 10);
    if (errno == ERANGE || v > max)
        return fail(c, n, "%s must be <= %ld", what, max);
    if (v < min)
        return fail(c, n, "%s must be >= %ld", what, min);
    *out = v;
    return 0;
}


static const char *qkind_name(qkind_t k)
{
    return k == Q_DURATION ? "duration" : k == Q_SIZE ? "size" : "bandwidth";
}

/* A quantity with its unit.  'positive': must be > 0 (else >= 0). */
int wl_parse_quantity(ctx_t *c, const hu_ynode_t *n, qkind_t kind, const char *what, bool positive,
                      double *out)
{
    char b[80];
    const char *s;
    char *end;
    hu_error_t herr = { .text = "" };
    double v;
    int rc;

    if (n->type != HU_YAML_SCALAR)
        return fail(c, n, "'%s' must be a %s such as '%s', not %s", what, qkind_name(kind),
                    kind == Q_DURATION ? "70 s"
                    : kind == Q_SIZE   ? "128.2 GB"
                                       : "3 GB/s",
                    wl_type_name(n->type));
    s = n->str;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '\0')
        return fail(c, n, "missing value for '%s'", what);
    if (strlen(s) != n->len - (size_t)(s - n->str))
        return fail(c, n, "bad %s for '%s': contains a NUL byte", qkind_name(kind), what);
    if (*s == '-')
        return fail(c, n, "%s must be %s", what, positive ? "> 0" : ">= 0");
    errno = 0;
    v = strtod(s, &end);
    if (end != s) {
        while (*end == ' ' || *end == '\t')
            end++;
        if (*end == '\0')
            return fail(c, n, "missing unit in '%s'", show(n, b, sizeof(b)));
    }
    switch (kind) {
    case Q_DURATION:
        rc = hu_parse_duration(s, 0, &v, &herr);
        break;
    case Q_SIZE:
        rc = hu_parse_size_d(s, 0, &v, &herr);
        break;
    default:
        rc = hu_parse_bandwidth(s, &v, &herr);
        break;
    }
    if (rc < 0)
        return fail(c, n, "bad %s '%s' for '%s'%s%s", qkind_name(kind), show(n, b, sizeof(b)), what,
                    herr.text[0] ? ": " : "", herr.text);
    if (!isfinite(v) || v < 0)
        return fail(c, n, "bad %s '%s' for '%s'", qkind_name(kind), show(n, b, sizeof(b)), what);
    if (positive && v <= 0)
        return fail(c, n, "%s must be > 0", what);
    *out = v;
    return 0;
}

int wl_parse_string(ctx_t *c, const hu_ynode_t *n, const char *what, char **out)
{
    if (n->type != HU_YAML_SCALAR)
        return fail(c, n, "'%s' must be a string, not %s", what, wl_type_name(n->type));
    if (n->len == 0)
        return fail(c, n, "'%s' must not be empty", what);
    if (n->len > 128)
        return fail(c, n, "'%s' is longer than 128 characters", what);
    for (size_t i = 0; i < n->len; i++) {
        unsigned char ch = (unsigned char)n->str[i];
        if (ch < 0x20 || ch == 0x7f)
            return fail(c, n, "'%s' contains a control character", what);
    }
    if (!(*out = strdup(n->str))) {
        fail(c, n, "out of memory");
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* A distribution mapping {dist: normal, mean: X, sd: Y} or a plain quantity. */
int wl_parse_dist(ctx_t *c, const hu_ynode_t *n, qkind_t kind, const char *what, bool positive,
                  wl_dist_t *d)
{
    static const char *const k_normal[] = { "dist", "mean", "sd", NULL };
    static const char *const k_uniform[] = { "dist", "min", "max", NULL };
    static const char *const k_exp[] = { "dist", "mean", NULL };
    const hu_ynode_t *dn;
    char b[80];

    if (n->type == HU_YAML_SCALAR) {
        d->kind = WL_DIST_FIXED;
        d->b = 0;
        return wl_parse_quantity(c, n, kind, what, positive, &d->a);
    }
    if (n->type != HU_YAML_MAP)
        return fail(c, n, "'%s' must be a %s or a distribution, not %s", what, qkind_name(kind),
                    wl_type_name(n->type));
    if (!(dn = hu_ymap_get(n, "dist")))
        return fail(c, n,
                    "missing key 'dist' in %s (normal, uniform or "
                    "exponential)",
                    what);
    if (dn->type != HU_YAML_SCALAR)
        return fail(c, dn, "'dist' must be normal, uniform or exponential");
    if (!strcmp(dn->str, "normal")) {
        if (wl_check_keys(c, n, k_normal, what) < 0)
            return -1;
        d->kind = WL_DIST_NORMAL;
        if (wl_need_quantity(c, n, "mean", what, kind, positive, &d->a) < 0)
            return -1;
        if (wl_need_quantity(c, n, "sd", what, kind, false, &d->b) < 0)
            return -1;
    } else if (!strcmp(dn->str, "uniform")) {
        if (wl_check_keys(c, n, k_uniform, what) < 0)
            return -1;
        d->kind = WL_DIST_UNIFORM;
        if (wl_need_quantity(c, n, "min", what, kind, false, &d->a) < 0)
            return -1;
        if (wl_need_quantity(c, n, "max", what, kind, positive, &d->b) < 0)
            return -1;
        if (d->b < d->a)
            return fail(c, hu_ymap_get(n, "max"), "max must be >= min in %s", what);
    } else if (!strcmp(dn->str, "exponential")) {
        if (wl_check_keys(c, n, k_exp, what) < 0)
            return -1;
        d->kind = WL_DIST_EXPONENTIAL;
        d->b = 0;
        if (wl_need_quantity(c, n, "mean", what, kind, true, &d->a) < 0)
            return -1;
    } else
        return fail(c, dn,
                    "unknown distribution '%s' (normal, uniform or "
                    "exponential)",
                    show(dn, b, sizeof(b)));
    return 0;
}

/* A value that may also be a per-iteration list. */
int wl_parse_value(ctx_t *c, const hu_ynode_t *n, qkind_t kind, const char *what, bool positive,
                   wl_value_t *v)
{
    if (n->type != HU_YAML_SEQ)
        return wl_parse_dist(c, n, kind, what, positive, &v->one);
    if (n->n == 0)
        return fail(c, n, "'%s' is an empty list", what);
    if (!(v->list = calloc(n->n, sizeof(*v->list)))) {
        fail(c, n, "out of memory");
        errno = ENOMEM;
        return -1;
    }
    v->nlist = (int)n->n;
    for (size_t i = 0; i < n->n; i++) {
        if (n->kids[i]->type == HU_YAML_SEQ)
            return fail(c, n->kids[i], "'%s': lists cannot be nested", what);
        if (wl_parse_dist(c, n->kids[i], kind, what, positive, &v->list[i]) < 0)
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- host lists */

/* Expand "bb[01-04,07],io1" into names (libhutil's expander, any character but
 * ',', '[' and ']' in a name).  Returns the count, or -1 with 'why' worded as bbsim
 * always worded it. */
int wl_hostlist(const char *expr, char ***out, const char **why)
{
    static const hu_hostlist_opts_t opts = {
        .max_names = WL_MAX_BUFFER_NODES,
        .max_name_len = 127,
        .max_bound = 0,
        .flags = 0,
    };
    hu_hostlist_fail_t f;
    int n;

    if (hu_hostlist_expand(expr, &opts, out, &n, &f, NULL) == 0)
        return n;
    switch (f.why) {
    case HU_HL_EMPTY_LIST:
    case HU_HL_EMPTY_NAME:
    case HU_HL_TRAILING_COMMA:
        *why = "empty node name";
        break;
    case HU_HL_NAME_TOO_LONG:
        *why = "a node name is longer than 127 characters";
        break;
    case HU_HL_UNBALANCED_OPEN:
        *why = "unbalanced '['";
        break;
    case HU_HL_UNBALANCED_CLOSE:
        *why = "unbalanced ']'";
        break;
    case HU_HL_EMPTY_RANGE:
        *why = "empty range '[]'";
        break;
    case HU_HL_DECREASING:
        *why = "a range goes down";
        break;
    case HU_HL_TOO_MANY:
        *why = "more than 4096 buffer nodes";
        break;
    case HU_HL_NOMEM:
        *why = "out of memory";
        break;
    default: /* a range that is not N or N-M, a nested '[' */
        *why = "ranges must be numbers such as [01-04,07]";
        break;
    }
    return -1;
}
