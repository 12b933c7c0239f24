/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * workload_yaml.c — the first step of the workload loader (workload.c): libyaml's
 * event stream turned into a small tree that keeps every node's line and column,
 * and the schema's helpers on that tree (typed values, quantities with units,
 * distributions, host lists), each refusing a bad value with "FILE:LINE:COL:
 * reason".
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "libhsched/hsched.h"
#include "libhutil/hutil.h"
#include "rng.h"
#include "workload_yaml.h"

/* ---------------------------------------------------------------- YAML tree */




int wl_fail_at (ctx_t *c, int line, int col, const char *fmt, ...)
{
    if (c->err) {
        char msg[400];
        va_list ap;
        va_start (ap, fmt);
        vsnprintf (msg, sizeof (msg), fmt, ap);
        va_end (ap);
        snprintf (c->err->text, sizeof (c->err->text), "%s:%d:%d: %s",
                  c->file, line, col, msg);
    }
    errno = EINVAL;
    return -1;
}


void wl_yn_free (yn_t *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        wl_yn_free (n->kids[i]);
    free (n->kids);
    free (n->str);
    free (n);
}

static yn_t *yn_new (ctx_t *c, yn_type_t type, const yaml_mark_t *mark)
{
    yn_t *n;
    if (++c->nnodes > WL_MAX_NODES) {
        wl_fail_at (c, (int)mark->line + 1, (int)mark->column + 1,
                 "too many YAML nodes (more than %d)", WL_MAX_NODES);
        return NULL;
    }
    if (!(n = calloc (1, sizeof (*n)))) {
        wl_fail_at (c, (int)mark->line + 1, (int)mark->column + 1, "out of memory");
        errno = ENOMEM;
        return NULL;
    }
    n->type = type;
    n->line = (int)mark->line + 1;
    n->col = (int)mark->column + 1;
    return n;
}

static int yn_add (ctx_t *c, yn_t *parent, yn_t *kid)
{
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? parent->cap * 2 : 8;
        yn_t **k = realloc (parent->kids, cap * sizeof (*k));
        if (!k) {
            fail (c, kid, "out of memory");
            errno = ENOMEM;
            return -1;
        }
        parent->kids = k;
        parent->cap = cap;
    }
    parent->kids[parent->n++] = kid;
    return 0;
}

/* Line and column (1-based) of a byte offset, for reader errors. */
static void offset_mark (ctx_t *c, size_t off, int *line, int *col)
{
    int l = 1, k = 1;
    for (size_t i = 0; i < off && i < c->len; i++) {
        if (c->buf[i] == '\n') {
            l++;
            k = 1;
        }
        else
            k++;
    }
    *line = l;
    *col = k;
}

static int parser_fail (ctx_t *c, yaml_parser_t *p)
{
    int line, col;
    const char *problem = p->problem ? p->problem : "unknown error";

    if (p->error == YAML_MEMORY_ERROR) {
        wl_fail_at (c, 1, 1, "out of memory while parsing YAML");
        errno = ENOMEM;
        return -1;
    }
    if (p->error == YAML_READER_ERROR) {
        offset_mark (c, p->problem_offset, &line, &col);
        return wl_fail_at (c, line, col, "YAML syntax error: %s", problem);
    }
    line = (int)p->problem_mark.line + 1;
    col = (int)p->problem_mark.column + 1;
    if (p->context)
        return wl_fail_at (c, line, col, "YAML syntax error: %s %s", problem,
                        p->context);
    return wl_fail_at (c, line, col, "YAML syntax error: %s", problem);
}

/* Build the tree of the single document of the input. */
yn_t *wl_yaml_tree (ctx_t *c)
{
    yaml_parser_t p;
    yaml_event_t ev;
    yn_t *stack[WL_MAX_DEPTH + 1];
    int depth = 0;
    yn_t *root = NULL;
    int ndocs = 0;
    bool done = false;

    if (!yaml_parser_initialize (&p)) {
        wl_fail_at (c, 1, 1, "cannot initialise the YAML parser");
        errno = ENOMEM;
        return NULL;
    }
    yaml_parser_set_input_string (&p, (const unsigned char *)c->buf, c->len);
    while (!done) {
        yn_t *n = NULL;
        const char *anchor = NULL;
        if (!yaml_parser_parse (&p, &ev)) {
            parser_fail (c, &p);
            goto error;
        }
        int line = (int)ev.start_mark.line + 1;
        int col = (int)ev.start_mark.column + 1;
        switch (ev.type) {
            case YAML_STREAM_END_EVENT:
                done = true;
                break;
            case YAML_DOCUMENT_START_EVENT:
                if (++ndocs > 1) {
                    wl_fail_at (c, line, col, "only one YAML document is allowed");
                    goto error_ev;
                }
                break;
            case YAML_ALIAS_EVENT:
                wl_fail_at (c, line, col, "anchors and aliases are not supported");
                goto error_ev;
            case YAML_SCALAR_EVENT:
                anchor = (const char *)ev.data.scalar.anchor;
                if (anchor)
                    goto anchor_error;
                if (!(n = yn_new (c, YN_SCALAR, &ev.start_mark)))
                    goto error_ev;
                if (!(n->str = malloc (ev.data.scalar.length + 1))) {
                    wl_yn_free (n);
                    wl_fail_at (c, line, col, "out of memory");
                    errno = ENOMEM;
                    goto error_ev;
                }
                memcpy (n->str, ev.data.scalar.value, ev.data.scalar.length);
                n->str[ev.data.scalar.length] = '\0';
                n->len = ev.data.scalar.length;
                break;
            case YAML_SEQUENCE_START_EVENT:
            case YAML_MAPPING_START_EVENT:
                anchor = ev.type == YAML_SEQUENCE_START_EVENT
                         ? (const char *)ev.data.sequence_start.anchor
                         : (const char *)ev.data.mapping_start.anchor;
                if (anchor)
                    goto anchor_error;
                if (depth >= WL_MAX_DEPTH) {
                    wl_fail_at (c, line, col, "nesting deeper than %d levels",
                             WL_MAX_DEPTH);
                    goto error_ev;
                }
                if (!(n = yn_new (c, ev.type == YAML_SEQUENCE_START_EVENT
                                     ? YN_SEQ : YN_MAP, &ev.start_mark)))
                    goto error_ev;
                break;
            case YAML_SEQUENCE_END_EVENT:
            case YAML_MAPPING_END_EVENT:
                if (depth > 0)
                    depth--;
                break;
            default:
                break;
        }
        if (n) {
            if (depth > 0) {
                if (yn_add (c, stack[depth - 1], n) < 0) {
                    wl_yn_free (n);
                    goto error_ev;
                }
            }
            else if (!root)
                root = n;
            else {
                wl_yn_free (n);    /* cannot happen with one document */
                wl_fail_at (c, line, col, "unexpected node");
                goto error_ev;
            }
            if (n->type != YN_SCALAR)
                stack[depth++] = n;
        }
        yaml_event_delete (&ev);
        continue;
anchor_error:
        wl_fail_at (c, line, col, "anchors and aliases are not supported");
error_ev:
        yaml_event_delete (&ev);
        goto error;
    }
    yaml_parser_delete (&p);
    if (!root) {
        wl_fail_at (c, 1, 1, "empty workload: expected 'platform:' and 'apps:'");
        return NULL;
    }
    return root;
error:
    yaml_parser_delete (&p);
    wl_yn_free (root);
    return NULL;
}

/* ---------------------------------------------------------------- schema helpers */

const char *wl_type_name (yn_type_t t)
{
    return t == YN_MAP ? "a mapping" : t == YN_SEQ ? "a list" : "a value";
}

/* Printable, bounded copy of a scalar for messages. */
static const char *show (const yn_t *n, char *buf, size_t len)
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
int wl_check_keys (ctx_t *c, const yn_t *map, const char *const *allowed,
                const char *where)
{
    char b[80];
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const yn_t *k = map->kids[i];
        bool ok = false;
        if (k->type != YN_SCALAR)
            return fail (c, k, "keys must be plain names in %s", where);
        for (const char *const *a = allowed; *a; a++) {
            if (strlen (*a) == k->len && !strcmp (*a, k->str)) {
                ok = true;
                break;
            }
        }
        if (!ok)
            return fail (c, k, "unknown key '%s' in %s", show (k, b, sizeof (b)),
                         where);
        for (size_t j = 0; j < i; j += 2) {
            if (!strcmp (map->kids[j]->str, k->str))
                return fail (c, k, "duplicate key '%s' in %s", k->str, where);
        }
    }
    return 0;
}

/* Index of key's node among map's kids (its value follows it), or map->n. */
static size_t find_key (const yn_t *map, const char *key)
{
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const yn_t *k = map->kids[i];
        if (k->type == YN_SCALAR && !strcmp (k->str, key))
            return i;
    }
    return map->n;
}

yn_t *wl_get (const yn_t *map, const char *key)
{
    size_t i = find_key (map, key);
    return i < map->n ? map->kids[i + 1] : NULL;
}

const yn_t *wl_need (ctx_t *c, const yn_t *map, const char *key, const char *where)
{
    const yn_t *x = wl_get (map, key);
    if (!x)
        fail (c, map, "missing key '%s' in %s", key, where);
    return x;
}

int wl_need_quantity (ctx_t *c, const yn_t *map, const char *key, const char *where,
                   qkind_t kind, bool positive, double *out)
{
    const yn_t *x = wl_need (c, map, key, where);
    return x ? wl_parse_quantity (c, x, kind, key, positive, out) : -1;
}

const yn_t *wl_key_node (const yn_t *map, const char *key)
{
    size_t i = find_key (map, key);
    return i < map->n ? map->kids[i] : map;
}

int wl_need_type (ctx_t *c, const yn_t *n, yn_type_t t, const char *what)
{
    if (n->type != t)
        return fail (c, n, "'%s' must be %s, not %s", what, wl_type_name (t),
                     wl_type_name (n->type));
    return 0;
}

int wl_parse_int (ctx_t *c, const yn_t *n, const char *what, long min, long max,
               long *out)
{
    char b[80];
    char *end;
    long v;

    if (n->type != YN_SCALAR)
        return fail (c, n, "'%s' must be an integer, not %s", what,
                     wl_type_name (n->type));
    if (n->len == 0)
        return fail (c, n, "missing value for '%s'", what);
    if (n->str[0] == '-' && n->len > 1 && n->str[1] >= '0' && n->str[1] <= '9')
        return fail (c, n, "%s must be >= %ld", what, min);
    for (size_t i = 0; i < n->len; i++) {
        if (n->str[i] < '0' || n->str[i] > '9')
            return fail (c, n, "'%s' must be an integer, not '%s'", what,
                         show (n, b, sizeof (b)));
    }
    errno = 0;
    v = strtol (n->str, &end, 10);
    if (errno == ERANGE || v > max)
        return fail (c, n, "%s must be <= %ld", what, max);
    if (v < min)
        return fail (c, n, "%s must be >= %ld", what, min);
    *out = v;
    return 0;
}


static const char *qkind_name (qkind_t k)
{
    return k == Q_DURATION ? "duration" : k == Q_SIZE ? "size" : "bandwidth";
}

/* A quantity with its unit.  'positive': must be > 0 (else >= 0). */
int wl_parse_quantity (ctx_t *c, const yn_t *n, qkind_t kind, const char *what,
                    bool positive, double *out)
{
    char b[80];
    const char *s;
    char *end;
    hu_error_t herr = { .text = "" };
    double v;
    int rc;

    if (n->type != YN_SCALAR)
        return fail (c, n, "'%s' must be a %s such as '%s', not %s", what,
                     qkind_name (kind), kind == Q_DURATION ? "70 s"
                     : kind == Q_SIZE ? "128.2 GB" : "3 GB/s", wl_type_name (n->type));
    s = n->str;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '\0')
        return fail (c, n, "missing value for '%s'", what);
    if (strlen (s) != n->len - (size_t)(s - n->str))
        return fail (c, n, "bad %s for '%s': contains a NUL byte", qkind_name (kind),
                     what);
    if (*s == '-')
        return fail (c, n, "%s must be %s", what, positive ? "> 0" : ">= 0");
    errno = 0;
    v = strtod (s, &end);
    if (end != s) {
        while (*end == ' ' || *end == '\t')
            end++;
        if (*end == '\0')
            return fail (c, n, "missing unit in '%s'", show (n, b, sizeof (b)));
    }
    switch (kind) {
        case Q_DURATION:
            rc = hu_parse_duration (s, 0, &v, &herr);
            break;
        case Q_SIZE:
            rc = hu_parse_size_d (s, 0, &v, &herr);
            break;
        default:
            rc = hu_parse_bandwidth (s, &v, &herr);
            break;
    }
    if (rc < 0)
        return fail (c, n, "bad %s '%s' for '%s'%s%s", qkind_name (kind),
                     show (n, b, sizeof (b)), what, herr.text[0] ? ": " : "",
                     herr.text);
    if (!isfinite (v) || v < 0)
        return fail (c, n, "bad %s '%s' for '%s'", qkind_name (kind),
                     show (n, b, sizeof (b)), what);
    if (positive && v <= 0)
        return fail (c, n, "%s must be > 0", what);
    *out = v;
    return 0;
}

int wl_parse_string (ctx_t *c, const yn_t *n, const char *what, char **out)
{
    if (n->type != YN_SCALAR)
        return fail (c, n, "'%s' must be a string, not %s", what,
                     wl_type_name (n->type));
    if (n->len == 0)
        return fail (c, n, "'%s' must not be empty", what);
    if (n->len > 128)
        return fail (c, n, "'%s' is longer than 128 characters", what);
    for (size_t i = 0; i < n->len; i++) {
        unsigned char ch = (unsigned char)n->str[i];
        if (ch < 0x20 || ch == 0x7f)
            return fail (c, n, "'%s' contains a control character", what);
    }
    if (!(*out = strdup (n->str))) {
        fail (c, n, "out of memory");
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* A distribution mapping {dist: normal, mean: X, sd: Y} or a plain quantity. */
int wl_parse_dist (ctx_t *c, const yn_t *n, qkind_t kind, const char *what,
                bool positive, wl_dist_t *d)
{
    static const char *const k_normal[] = { "dist", "mean", "sd", NULL };
    static const char *const k_uniform[] = { "dist", "min", "max", NULL };
    static const char *const k_exp[] = { "dist", "mean", NULL };
    const yn_t *dn;
    char b[80];

    if (n->type == YN_SCALAR) {
        d->kind = WL_DIST_FIXED;
        d->b = 0;
        return wl_parse_quantity (c, n, kind, what, positive, &d->a);
    }
    if (n->type != YN_MAP)
        return fail (c, n, "'%s' must be a %s or a distribution, not %s", what,
                     qkind_name (kind), wl_type_name (n->type));
    if (!(dn = wl_get (n, "dist")))
        return fail (c, n, "missing key 'dist' in %s (normal, uniform or "
                     "exponential)", what);
    if (dn->type != YN_SCALAR)
        return fail (c, dn, "'dist' must be normal, uniform or exponential");
    if (!strcmp (dn->str, "normal")) {
        if (wl_check_keys (c, n, k_normal, what) < 0)
            return -1;
        d->kind = WL_DIST_NORMAL;
        if (wl_need_quantity (c, n, "mean", what, kind, positive, &d->a) < 0)
            return -1;
        if (wl_need_quantity (c, n, "sd", what, kind, false, &d->b) < 0)
            return -1;
    }
    else if (!strcmp (dn->str, "uniform")) {
        if (wl_check_keys (c, n, k_uniform, what) < 0)
            return -1;
        d->kind = WL_DIST_UNIFORM;
        if (wl_need_quantity (c, n, "min", what, kind, false, &d->a) < 0)
            return -1;
        if (wl_need_quantity (c, n, "max", what, kind, positive, &d->b) < 0)
            return -1;
        if (d->b < d->a)
            return fail (c, wl_get (n, "max"), "max must be >= min in %s", what);
    }
    else if (!strcmp (dn->str, "exponential")) {
        if (wl_check_keys (c, n, k_exp, what) < 0)
            return -1;
        d->kind = WL_DIST_EXPONENTIAL;
        d->b = 0;
        if (wl_need_quantity (c, n, "mean", what, kind, true, &d->a) < 0)
            return -1;
    }
    else
        return fail (c, dn, "unknown distribution '%s' (normal, uniform or "
                     "exponential)", show (dn, b, sizeof (b)));
    return 0;
}

/* A value that may also be a per-iteration list. */
int wl_parse_value (ctx_t *c, const yn_t *n, qkind_t kind, const char *what,
                 bool positive, wl_value_t *v)
{
    if (n->type != YN_SEQ)
        return wl_parse_dist (c, n, kind, what, positive, &v->one);
    if (n->n == 0)
        return fail (c, n, "'%s' is an empty list", what);
    if (!(v->list = calloc (n->n, sizeof (*v->list)))) {
        fail (c, n, "out of memory");
        errno = ENOMEM;
        return -1;
    }
    v->nlist = (int)n->n;
    for (size_t i = 0; i < n->n; i++) {
        if (n->kids[i]->type == YN_SEQ)
            return fail (c, n->kids[i], "'%s': lists cannot be nested", what);
        if (wl_parse_dist (c, n->kids[i], kind, what, positive, &v->list[i]) < 0)
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- host lists */

/* Append a name to a list (grown by doubling). */
int wl_names_add (char ***v, int *n, int *cap, const char *s, size_t len)
{
    char *d;
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        char **nv = realloc (*v, (size_t)nc * sizeof (*nv));
        if (!nv)
            return -1;
        *v = nv;
        *cap = nc;
    }
    if (!(d = malloc (len + 1)))
        return -1;
    memcpy (d, s, len);
    d[len] = '\0';
    (*v)[(*n)++] = d;
    return 0;
}

void wl_names_free (char **v, int n)
{
    for (int i = 0; i < n; i++)
        free (v[i]);
    free (v);
}

/*
 * Expand one host-list item "pre[a-b,c]post[...]" (Slurm style; numbers keep the
 * width of the lower bound when it has leading zeros) by recursion on the first
 * bracket group.  Appends to v.  Returns 0, or -1 with 'why' set.
 */
static int hl_item (const char *s, size_t len, char ***v, int *n, int *cap,
                    const char **why)
{
    const char *lb = memchr (s, '[', len), *rb, *p;
    char buf[300];

    if (!lb) {
        if (memchr (s, ']', len)) {
            *why = "unbalanced ']'";
            return -1;
        }
        if (len == 0 || len >= 128) {
            *why = len ? "a node name is longer than 127 characters"
                       : "empty node name";
            return -1;
        }
        if (*n >= WL_MAX_BUFFER_NODES) {
            *why = "more than 4096 buffer nodes";
            return -1;
        }
        return wl_names_add (v, n, cap, s, len) < 0 ? (*why = "out of memory", -1) : 0;
    }
    if (!(rb = memchr (lb, ']', len - (size_t)(lb - s)))) {
        *why = "unbalanced '['";
        return -1;
    }
    if (rb == lb + 1) {
        *why = "empty range '[]'";
        return -1;
    }
    for (p = lb + 1; p < rb;) {
        const char *e = memchr (p, ',', (size_t)(rb - p));
        const char *dash;
        char *end;
        unsigned long a, b;
        int width;
        if (!e)
            e = rb;
        dash = memchr (p, '-', (size_t)(e - p));
        if (p == e || *p < '0' || *p > '9') {
            *why = "ranges must be numbers such as [01-04,07]";
            return -1;
        }
        errno = 0;
        a = strtoul (p, &end, 10);
        if (errno || end != (dash ? dash : e)) {
            *why = "ranges must be numbers such as [01-04,07]";
            return -1;
        }
        width = (*p == '0' && end - p > 1) ? (int)(end - p) : 0;
        b = a;
        if (dash) {
            if (dash + 1 >= e || dash[1] < '0' || dash[1] > '9') {
                *why = "ranges must be numbers such as [01-04,07]";
                return -1;
            }
            b = strtoul (dash + 1, &end, 10);
            if (errno || end != e) {
                *why = "ranges must be numbers such as [01-04,07]";
                return -1;
            }
            if (b < a) {
                *why = "a range goes down";
                return -1;
            }
        }
        if (b - a >= WL_MAX_BUFFER_NODES) {
            *why = "more than 4096 buffer nodes";
            return -1;
        }
        for (unsigned long x = a; x <= b; x++) {
            int k = snprintf (buf, sizeof (buf), "%.*s%0*lu%.*s", (int)(lb - s), s,
                              width, x, (int)(len - (size_t)(rb + 1 - s)), rb + 1);
            if (k < 0 || (size_t)k >= sizeof (buf)) {
                *why = "a node name is longer than 127 characters";
                return -1;
            }
            if (hl_item (buf, (size_t)k, v, n, cap, why) < 0)
                return -1;
        }
        p = e < rb ? e + 1 : rb;
    }
    return 0;
}

/* Expand "bb[01-04,07],io1" into names.  Returns the count, or -1 with 'why'. */
int wl_hostlist (const char *expr, char ***out, const char **why)
{
    char **v = NULL;
    int n = 0, cap = 0, depth = 0;
    const char *p = expr, *start = expr;

    for (;; p++) {
        if (*p == '[')
            depth++;
        else if (*p == ']')
            depth--;
        if ((*p == ',' && depth == 0) || *p == '\0') {
            if (hl_item (start, (size_t)(p - start), &v, &n, &cap, why) < 0) {
                wl_names_free (v, n);
                return -1;
            }
            if (*p == '\0')
                break;
            start = p + 1;
        }
    }
    *out = v;
    return n;
}
