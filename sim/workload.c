/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * workload.c — strict loader of bbsim workload files.
 *
 * Two steps: libyaml's event stream is turned into a small tree that keeps the
 * 1-based line and column of every node (anchors, aliases, several documents and
 * nesting deeper than WL_MAX_DEPTH are refused there); then a schema walk over that
 * tree fills a wl_t, refusing anything it does not know with "FILE:LINE:COL: reason".
 * The walk only follows the schema, so its cost is linear in the size of the input.
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
#include "workload.h"

/* ---------------------------------------------------------------- YAML tree */

typedef enum { YN_SCALAR, YN_MAP, YN_SEQ } yn_type_t;

typedef struct yn yn_t;
struct yn {
    yn_type_t type;
    char *str;              /* scalar text, NUL-terminated */
    size_t len;
    int line, col;          /* 1-based */
    yn_t **kids;            /* map: key, value, key, value ...; seq: items */
    size_t n, cap;
};

typedef struct {
    const char *file;
    wl_error_t *err;
    const char *buf;
    size_t len;
    size_t nnodes;
} ctx_t;

static int fail_at (ctx_t *c, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail_at (ctx_t *c, int line, int col, const char *fmt, ...)
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

#define fail(c, node, ...) fail_at ((c), (node)->line, (node)->col, __VA_ARGS__)

static void yn_free (yn_t *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        yn_free (n->kids[i]);
    free (n->kids);
    free (n->str);
    free (n);
}

static yn_t *yn_new (ctx_t *c, yn_type_t type, const yaml_mark_t *mark)
{
    yn_t *n;
    if (++c->nnodes > WL_MAX_NODES) {
        fail_at (c, (int)mark->line + 1, (int)mark->column + 1,
                 "too many YAML nodes (more than %d)", WL_MAX_NODES);
        return NULL;
    }
    if (!(n = calloc (1, sizeof (*n)))) {
        fail_at (c, (int)mark->line + 1, (int)mark->column + 1, "out of memory");
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
        fail_at (c, 1, 1, "out of memory while parsing YAML");
        errno = ENOMEM;
        return -1;
    }
    if (p->error == YAML_READER_ERROR) {
        offset_mark (c, p->problem_offset, &line, &col);
        return fail_at (c, line, col, "YAML syntax error: %s", problem);
    }
    line = (int)p->problem_mark.line + 1;
    col = (int)p->problem_mark.column + 1;
    if (p->context)
        return fail_at (c, line, col, "YAML syntax error: %s %s", problem,
                        p->context);
    return fail_at (c, line, col, "YAML syntax error: %s", problem);
}

/* Build the tree of the single document of the input. */
static yn_t *yaml_tree (ctx_t *c)
{
    yaml_parser_t p;
    yaml_event_t ev;
    yn_t *stack[WL_MAX_DEPTH + 1];
    int depth = 0;
    yn_t *root = NULL;
    int ndocs = 0;
    bool done = false;

    if (!yaml_parser_initialize (&p)) {
        fail_at (c, 1, 1, "cannot initialise the YAML parser");
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
                    fail_at (c, line, col, "only one YAML document is allowed");
                    goto error_ev;
                }
                break;
            case YAML_ALIAS_EVENT:
                fail_at (c, line, col, "anchors and aliases are not supported");
                goto error_ev;
            case YAML_SCALAR_EVENT:
                anchor = (const char *)ev.data.scalar.anchor;
                if (anchor)
                    goto anchor_error;
                if (!(n = yn_new (c, YN_SCALAR, &ev.start_mark)))
                    goto error_ev;
                if (!(n->str = malloc (ev.data.scalar.length + 1))) {
                    yn_free (n);
                    fail_at (c, line, col, "out of memory");
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
                    fail_at (c, line, col, "nesting deeper than %d levels",
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
                    yn_free (n);
                    goto error_ev;
                }
            }
            else if (!root)
                root = n;
            else {
                yn_free (n);    /* cannot happen with one document */
                fail_at (c, line, col, "unexpected node");
                goto error_ev;
            }
            if (n->type != YN_SCALAR)
                stack[depth++] = n;
        }
        yaml_event_delete (&ev);
        continue;
anchor_error:
        fail_at (c, line, col, "anchors and aliases are not supported");
error_ev:
        yaml_event_delete (&ev);
        goto error;
    }
    yaml_parser_delete (&p);
    if (!root) {
        fail_at (c, 1, 1, "empty workload: expected 'platform:' and 'apps:'");
        return NULL;
    }
    return root;
error:
    yaml_parser_delete (&p);
    yn_free (root);
    return NULL;
}

/* ---------------------------------------------------------------- schema helpers */

static const char *type_name (yn_type_t t)
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
static int check_keys (ctx_t *c, const yn_t *map, const char *const *allowed,
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

static yn_t *get (const yn_t *map, const char *key)
{
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const yn_t *k = map->kids[i];
        if (k->type == YN_SCALAR && !strcmp (k->str, key))
            return map->kids[i + 1];
    }
    return NULL;
}

static const yn_t *key_node (const yn_t *map, const char *key)
{
    for (size_t i = 0; i + 1 < map->n; i += 2) {
        const yn_t *k = map->kids[i];
        if (k->type == YN_SCALAR && !strcmp (k->str, key))
            return k;
    }
    return map;
}

static int need_type (ctx_t *c, const yn_t *n, yn_type_t t, const char *what)
{
    if (n->type != t)
        return fail (c, n, "'%s' must be %s, not %s", what, type_name (t),
                     type_name (n->type));
    return 0;
}

static int parse_int (ctx_t *c, const yn_t *n, const char *what, long min, long max,
                      long *out)
{
    char b[80];
    char *end;
    long v;

    if (n->type != YN_SCALAR)
        return fail (c, n, "'%s' must be an integer, not %s", what,
                     type_name (n->type));
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

typedef enum { Q_DURATION, Q_SIZE, Q_BANDWIDTH } qkind_t;

static const char *qkind_name (qkind_t k)
{
    return k == Q_DURATION ? "duration" : k == Q_SIZE ? "size" : "bandwidth";
}

/* A quantity with its unit.  'positive': must be > 0 (else >= 0). */
static int parse_quantity (ctx_t *c, const yn_t *n, qkind_t kind, const char *what,
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
                     : kind == Q_SIZE ? "128.2 GB" : "3 GB/s", type_name (n->type));
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

static int parse_string (ctx_t *c, const yn_t *n, const char *what, char **out)
{
    if (n->type != YN_SCALAR)
        return fail (c, n, "'%s' must be a string, not %s", what,
                     type_name (n->type));
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
static int parse_dist (ctx_t *c, const yn_t *n, qkind_t kind, const char *what,
                       bool positive, wl_dist_t *d)
{
    static const char *const k_normal[] = { "dist", "mean", "sd", NULL };
    static const char *const k_uniform[] = { "dist", "min", "max", NULL };
    static const char *const k_exp[] = { "dist", "mean", NULL };
    const yn_t *dn, *x;
    char b[80];

    if (n->type == YN_SCALAR) {
        d->kind = WL_DIST_FIXED;
        d->b = 0;
        return parse_quantity (c, n, kind, what, positive, &d->a);
    }
    if (n->type != YN_MAP)
        return fail (c, n, "'%s' must be a %s or a distribution, not %s", what,
                     qkind_name (kind), type_name (n->type));
    if (!(dn = get (n, "dist")))
        return fail (c, n, "missing key 'dist' in %s (normal, uniform or "
                     "exponential)", what);
    if (dn->type != YN_SCALAR)
        return fail (c, dn, "'dist' must be normal, uniform or exponential");
    if (!strcmp (dn->str, "normal")) {
        if (check_keys (c, n, k_normal, what) < 0)
            return -1;
        d->kind = WL_DIST_NORMAL;
        if (!(x = get (n, "mean")))
            return fail (c, n, "missing key 'mean' in %s", what);
        if (parse_quantity (c, x, kind, "mean", positive, &d->a) < 0)
            return -1;
        if (!(x = get (n, "sd")))
            return fail (c, n, "missing key 'sd' in %s", what);
        if (parse_quantity (c, x, kind, "sd", false, &d->b) < 0)
            return -1;
    }
    else if (!strcmp (dn->str, "uniform")) {
        if (check_keys (c, n, k_uniform, what) < 0)
            return -1;
        d->kind = WL_DIST_UNIFORM;
        if (!(x = get (n, "min")))
            return fail (c, n, "missing key 'min' in %s", what);
        if (parse_quantity (c, x, kind, "min", false, &d->a) < 0)
            return -1;
        if (!(x = get (n, "max")))
            return fail (c, n, "missing key 'max' in %s", what);
        if (parse_quantity (c, x, kind, "max", positive, &d->b) < 0)
            return -1;
        if (d->b < d->a)
            return fail (c, x, "max must be >= min in %s", what);
    }
    else if (!strcmp (dn->str, "exponential")) {
        if (check_keys (c, n, k_exp, what) < 0)
            return -1;
        d->kind = WL_DIST_EXPONENTIAL;
        d->b = 0;
        if (!(x = get (n, "mean")))
            return fail (c, n, "missing key 'mean' in %s", what);
        if (parse_quantity (c, x, kind, "mean", true, &d->a) < 0)
            return -1;
    }
    else
        return fail (c, dn, "unknown distribution '%s' (normal, uniform or "
                     "exponential)", show (dn, b, sizeof (b)));
    return 0;
}

/* A value that may also be a per-iteration list. */
static int parse_value (ctx_t *c, const yn_t *n, qkind_t kind, const char *what,
                        bool positive, wl_value_t *v)
{
    if (n->type != YN_SEQ)
        return parse_dist (c, n, kind, what, positive, &v->one);
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
        if (parse_dist (c, n->kids[i], kind, what, positive, &v->list[i]) < 0)
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- host lists */

/* Append a name to a list (grown by doubling). */
static int names_add (char ***v, int *n, int *cap, const char *s, size_t len)
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

static void names_free (char **v, int n)
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
        return names_add (v, n, cap, s, len) < 0 ? (*why = "out of memory", -1) : 0;
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
static int hostlist (const char *expr, char ***out, const char **why)
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
                names_free (v, n);
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

/* ---------------------------------------------------------------- sections */

static int parse_buffers (ctx_t *c, const yn_t *n, wl_platform_t *p)
{
    static const char *const keys[] = { "name", "capacity", "bandwidth", "device",
                                        "count", NULL };
    char where[64];
    long v;

    if (need_type (c, n, YN_SEQ, "buffers") < 0)
        return -1;
    p->buffers_line = n->line;
    p->buffers_col = n->col;
    if (n->n == 0)
        return 0;
    if (!(p->buffers = calloc (n->n, sizeof (*p->buffers)))) {
        errno = ENOMEM;
        return fail (c, n, "out of memory");
    }
    for (size_t i = 0; i < n->n; i++) {
        const yn_t *b = n->kids[i];
        wl_buffer_t *bb = &p->buffers[p->nbuffers++];
        const yn_t *x;
        snprintf (where, sizeof (where), "buffers[%zu]", i);
        bb->line = b->line;
        bb->col = b->col;
        bb->count = 1;
        if (need_type (c, b, YN_MAP, where) < 0 || check_keys (c, b, keys, where) < 0)
            return -1;
        if (!(x = get (b, "name")))
            return fail (c, b, "missing key 'name' in %s", where);
        if (parse_string (c, x, "name", &bb->name) < 0)
            return -1;
        if (!(x = get (b, "capacity")))
            return fail (c, b, "missing key 'capacity' in %s", where);
        if (parse_quantity (c, x, Q_SIZE, "capacity", true, &bb->capacity) < 0)
            return -1;
        if (!(x = get (b, "bandwidth")))
            return fail (c, b, "missing key 'bandwidth' in %s", where);
        if (parse_quantity (c, x, Q_BANDWIDTH, "bandwidth", true, &bb->bandwidth) < 0)
            return -1;
        if ((x = get (b, "device")) && parse_string (c, x, "device", &bb->device) < 0)
            return -1;
        if ((x = get (b, "count"))) {
            if (parse_int (c, x, "count", 1, 4096, &v) < 0)
                return -1;
            bb->count = (int)v;
        }
        /* the nodes of this entry: a host list, or name1..nameN with 'count' */
        {
            char **names = NULL;
            const char *why = NULL;
            const yn_t *nm = get (b, "name");
            int k = hostlist (bb->name, &names, &why);
            bool listed = strchr (bb->name, '[') || strchr (bb->name, ',');
            if (k < 0)
                return fail (c, nm, "bad host list '%s': %s", bb->name, why);
            if (listed && get (b, "count") && bb->count != k) {
                names_free (names, k);
                return fail (c, get (b, "count"), "count is %d but '%s' names %d "
                             "node(s)", bb->count, bb->name, k);
            }
            if (!listed && bb->count > 1) {
                names_free (names, k);
                names = NULL;
                k = 0;
                for (int q = 1; q <= bb->count; q++) {
                    char nb[160];
                    int cap = k, l = snprintf (nb, sizeof (nb), "%s%d", bb->name, q);
                    if (names_add (&names, &k, &cap, nb, (size_t)l) < 0) {
                        names_free (names, k);
                        errno = ENOMEM;
                        return fail (c, nm, "out of memory");
                    }
                }
            }
            bb->count = k;
            if (p->nbnodes + k > WL_MAX_BUFFER_NODES) {
                names_free (names, k);
                return fail (c, nm, "more than %d buffer nodes", WL_MAX_BUFFER_NODES);
            }
            {
                wl_bnode_t *nv = realloc (p->bnodes, (size_t)(p->nbnodes + k)
                                          * sizeof (*nv));
                if (!nv) {
                    names_free (names, k);
                    errno = ENOMEM;
                    return fail (c, nm, "out of memory");
                }
                p->bnodes = nv;
            }
            for (int q = 0; q < k; q++) {
                for (int o = 0; o < p->nbnodes; o++) {
                    if (!strcmp (p->bnodes[o].name, names[q])) {
                        int line = p->buffers[p->bnodes[o].entry].line;
                        const char *dup = names[q];
                        int rc = fail (c, nm, "duplicate buffer node '%s' (first at "
                                       "line %d)", dup, line);
                        names_free (names, k);
                        return rc;
                    }
                }
                p->bnodes[p->nbnodes].name = names[q];
                p->bnodes[p->nbnodes].entry = (int)i;
                p->nbnodes++;
                names[q] = NULL;
            }
            free (names);
        }
    }
    return 0;
}

/* MSCA values: numbers > -1, MSCA(1) = 0, at most 16. */
static int parse_msca (ctx_t *c, const yn_t *x, const char *what, double *out,
                       int *nout)
{
    if (need_type (c, x, YN_SEQ, what) < 0)
        return -1;
    if (x->n == 0)
        return fail (c, x, "'%s' is an empty list", what);
    if (x->n > 16)
        return fail (c, x, "'%s' has %zu values; at most 16", what, x->n);
    for (size_t j = 0; j < x->n; j++) {
        const yn_t *m = x->kids[j];
        char *end;
        double v;
        if (m->type != YN_SCALAR || m->len == 0)
            return fail (c, m, "'%s' values must be numbers > -1", what);
        errno = 0;
        v = strtod (m->str, &end);
        if (*end != '\0' || errno == ERANGE || !isfinite (v) || !(v > -1))
            return fail (c, m, "'%s' values must be numbers > -1", what);
        if (j == 0 && v != 0)
            return fail (c, m, "'%s' starts with MSCA(1), which is 0 by definition "
                         "(BW(1)/BW(1) - 1)", what);
        out[j] = v;
    }
    *nout = (int)x->n;
    return 0;
}

static int parse_devices (ctx_t *c, const yn_t *n, wl_platform_t *p)
{
    static const char *const keys[] = { "name", "msca", "msca_read", NULL };
    static const char *const builtin[] = WL_BUILTIN_DEVICES;
    char where[64];

    if (need_type (c, n, YN_SEQ, "devices") < 0)
        return -1;
    if (n->n == 0)
        return 0;
    if (!(p->devices = calloc (n->n, sizeof (*p->devices)))) {
        errno = ENOMEM;
        return fail (c, n, "out of memory");
    }
    for (size_t i = 0; i < n->n; i++) {
        const yn_t *d = n->kids[i];
        wl_device_t *dd = &p->devices[p->ndevices++];
        const yn_t *x;
        snprintf (where, sizeof (where), "devices[%zu]", i);
        dd->line = d->line;
        dd->col = d->col;
        if (need_type (c, d, YN_MAP, where) < 0 || check_keys (c, d, keys, where) < 0)
            return -1;
        if (!(x = get (d, "name")))
            return fail (c, d, "missing key 'name' in %s", where);
        if (parse_string (c, x, "name", &dd->name) < 0)
            return -1;
        for (int q = 0; q < p->ndevices - 1; q++) {
            if (!strcmp (p->devices[q].name, dd->name))
                return fail (c, x, "duplicate device '%s' (first at line %d)",
                             dd->name, p->devices[q].line);
        }
        if ((x = get (d, "msca")) && parse_msca (c, x, "msca", dd->msca, &dd->nmsca) < 0)
            return -1;
        if ((x = get (d, "msca_read"))
            && parse_msca (c, x, "msca_read", dd->msca_read, &dd->nmsca_read) < 0)
            return -1;
        if (!get (d, "msca")) {
            bool known = false;
            for (int q = 0; builtin[q]; q++)
                known = known || !strcmp (builtin[q], dd->name);
            if (!known)
                return fail (c, d, "device '%s' needs 'msca' (its MSCA curve, "
                             "MSCA(c) for c = 1..16); built-in types are nvme, ssd "
                             "and hdd", dd->name);
        }
    }
    return 0;
}

static int check_buffer_devices (ctx_t *c, const wl_platform_t *p)
{
    static const char *const builtin[] = WL_BUILTIN_DEVICES;
    for (int i = 0; i < p->nbuffers; i++) {
        bool found = p->buffers[i].device == NULL;
        for (int j = 0; builtin[j] && !found; j++)
            found = !strcmp (p->buffers[i].device, builtin[j]);
        for (int j = 0; j < p->ndevices && !found; j++)
            found = !strcmp (p->buffers[i].device, p->devices[j].name);
        if (!found)
            return fail_at (c, p->buffers[i].line, p->buffers[i].col,
                            "buffers[%d]: unknown device '%s' (not in 'devices:' "
                            "and not one of nvme, ssd, hdd)", i,
                            p->buffers[i].device);
    }
    return 0;
}

static int parse_platform (ctx_t *c, const yn_t *n, wl_platform_t *p)
{
    static const char *const keys[] = { "nodes", "node_bandwidth", "bandwidth",
                                        "buffers", "devices", "over_provisioning",
                                        NULL };
    const yn_t *x;
    long v;

    if (need_type (c, n, YN_MAP, "platform") < 0
        || check_keys (c, n, keys, "platform") < 0)
        return -1;
    if (!(x = get (n, "nodes")))
        return fail (c, n, "missing key 'nodes' in platform");
    if (parse_int (c, x, "nodes", 1, 100000000, &v) < 0)
        return -1;
    p->nodes = (int)v;
    if (!(x = get (n, "node_bandwidth")))
        return fail (c, n, "missing key 'node_bandwidth' in platform");
    if (parse_quantity (c, x, Q_BANDWIDTH, "node_bandwidth", true, &p->node_bw) < 0)
        return -1;
    if (!(x = get (n, "bandwidth")))
        return fail (c, n, "missing key 'bandwidth' in platform");
    if (parse_quantity (c, x, Q_BANDWIDTH, "bandwidth", true, &p->bw) < 0)
        return -1;
    if ((x = get (n, "buffers")) && parse_buffers (c, x, p) < 0)
        return -1;
    if ((x = get (n, "devices")) && parse_devices (c, x, p) < 0)
        return -1;
    if (check_buffer_devices (c, p) < 0)
        return -1;
    if ((x = get (n, "over_provisioning"))) {
        char *end;
        if (x->type != YN_SCALAR || x->len == 0)
            return fail (c, x, "'over_provisioning' must be a number >= 1");
        errno = 0;
        p->overprovision = strtod (x->str, &end);
        if (*end != '\0' || errno == ERANGE || !isfinite (p->overprovision)
            || !(p->overprovision >= 1) || p->overprovision > 1000)
            return fail (c, x, "'over_provisioning' must be a number in [1, 1000]");
        if (p->nbuffers == 0)
            return fail (c, key_node (n, "over_provisioning"), "'over_provisioning' "
                         "needs 'buffers:'");
    }
    return 0;
}

static int parse_app (ctx_t *c, const yn_t *n, size_t idx, const wl_platform_t *p,
                      wl_app_t *a)
{
    static const char *const keys[] = { "name", "nodes", "release", "iterations",
                                        "w", "io_volume", "count", "io", "w_iter",
                                        "priority", "buffer_capacity",
                                        "buffer_nodes", NULL };
    char where[64];
    const yn_t *x;
    long v;

    snprintf (where, sizeof (where), "apps[%zu]", idx);
    a->line = n->line;
    a->col = n->col;
    a->count = 1;
    if (need_type (c, n, YN_MAP, where) < 0 || check_keys (c, n, keys, where) < 0)
        return -1;
    if (!(x = get (n, "name")))
        return fail (c, n, "missing key 'name' in %s", where);
    if (parse_string (c, x, "name", &a->name) < 0)
        return -1;
    if (!(x = get (n, "nodes")))
        return fail (c, n, "missing key 'nodes' in %s", where);
    if (parse_int (c, x, "nodes", 1, 100000000, &v) < 0)
        return -1;
    if (v > p->nodes)
        return fail (c, x, "app '%s' needs %ld nodes but the platform has %d",
                     a->name, v, p->nodes);
    a->nodes = (int)v;
    if ((x = get (n, "release"))) {
        if (parse_dist (c, x, Q_DURATION, "release", false, &a->release) < 0)
            return -1;
    }
    if (!(x = get (n, "w")))
        return fail (c, n, "missing key 'w' in %s", where);
    if (parse_value (c, x, Q_DURATION, "w", false, &a->w) < 0)
        return -1;
    if (!(x = get (n, "io_volume")))
        return fail (c, n, "missing key 'io_volume' in %s", where);
    if (parse_value (c, x, Q_SIZE, "io_volume", true, &a->volume) < 0)
        return -1;
    if ((x = get (n, "iterations"))) {
        if (parse_int (c, x, "iterations", 1, WL_MAX_ITERATIONS, &v) < 0)
            return -1;
        a->iterations = (int)v;
    }
    if (a->w.nlist && a->volume.nlist && a->w.nlist != a->volume.nlist)
        return fail (c, get (n, "io_volume"), "%s: 'w' has %d values but "
                     "'io_volume' has %d", where, a->w.nlist, a->volume.nlist);
    if (a->iterations == 0) {
        a->iterations = a->w.nlist ? a->w.nlist : a->volume.nlist;
        if (a->iterations == 0)
            return fail (c, n, "missing key 'iterations' in %s", where);
    }
    else if (a->w.nlist && a->w.nlist != a->iterations)
        return fail (c, get (n, "w"), "%s: 'w' has %d values but iterations is %d",
                     where, a->w.nlist, a->iterations);
    else if (a->volume.nlist && a->volume.nlist != a->iterations)
        return fail (c, get (n, "io_volume"), "%s: 'io_volume' has %d values but "
                     "iterations is %d", where, a->volume.nlist, a->iterations);
    if ((x = get (n, "count"))) {
        if (parse_int (c, x, "count", 1, WL_MAX_JOBS, &v) < 0)
            return -1;
        a->count = (int)v;
    }
    if ((x = get (n, "io"))) {
        if (x->type != YN_SCALAR
            || (strcmp (x->str, "write") && strcmp (x->str, "read")))
            return fail (c, x, "'io' must be write or read");
        a->io = !strcmp (x->str, "read") ? WL_IO_READ : WL_IO_WRITE;
    }
    if ((x = get (n, "w_iter"))) {
        if (parse_quantity (c, x, Q_DURATION, "w_iter", true, &a->w_iter) < 0)
            return -1;
    }
    if ((x = get (n, "priority"))) {
        if (parse_int (c, x, "priority", 1, 10, &v) < 0)
            return -1;
        a->priority = (int)v;
    }
    if ((x = get (n, "buffer_capacity"))) {
        if (p->nbnodes == 0)
            return fail (c, key_node (n, "buffer_capacity"), "%s: 'buffer_capacity' "
                         "needs platform 'buffers:'", where);
        if (parse_quantity (c, x, Q_SIZE, "buffer_capacity", true,
                            &a->buffer_capacity) < 0)
            return -1;
    }
    if ((x = get (n, "buffer_nodes"))) {
        if (p->nbnodes == 0)
            return fail (c, key_node (n, "buffer_nodes"), "%s: 'buffer_nodes' needs "
                         "platform 'buffers:'", where);
        if (parse_int (c, x, "buffer_nodes", 1, p->nbnodes, &v) < 0)
            return -1;
        a->buffer_nodes = (int)v;
    }
    return 0;
}

/* Optional 'scheduler:' mapping: settings of the policies (doc/workload-format.md). */
static int parse_scheduler (ctx_t *c, const yn_t *n, wl_t *wl)
{
    static const char *const keys[] = { "period_min", "auto_candidates",
                                        "auto_objective", "auto_dilation_factor",
                                        "auto_hysteresis", "auto_interval",
                                        "auto_horizon", NULL };
    const yn_t *x;
    char *str = NULL;

    if (need_type (c, n, YN_MAP, "scheduler") < 0
        || check_keys (c, n, keys, "scheduler") < 0)
        return -1;
    if ((x = get (n, "period_min"))
        && parse_quantity (c, x, Q_DURATION, "period_min", true, &wl->period_min) < 0)
        return -1;
    if ((x = get (n, "max_wait"))
        && parse_quantity (c, x, Q_DURATION, "max_wait", true, &wl->max_wait) < 0)
        return -1;
    if ((x = get (n, "auto_interval"))
        && parse_quantity (c, x, Q_DURATION, "auto_interval", true,
                           &wl->auto_interval) < 0)
        return -1;
    if ((x = get (n, "auto_horizon"))
        && parse_quantity (c, x, Q_DURATION, "auto_horizon", true,
                           &wl->auto_horizon) < 0)
        return -1;
    if ((x = get (n, "auto_candidates"))) {
        if (parse_string (c, x, "auto_candidates", &str) < 0)
            return -1;
        snprintf (wl->auto_candidates, sizeof (wl->auto_candidates), "%s", str);
        free (str);
    }
    if ((x = get (n, "auto_objective"))) {
        if (parse_string (c, x, "auto_objective", &str) < 0)
            return -1;
        if (hs_auto_objective_parse (str, &wl->auto_objective) < 0) {
            free (str);
            return fail (c, x, "'auto_objective' must be syseff, stretch or "
                         "ioslowdown");
        }
        free (str);
    }
    if ((x = get (n, "auto_dilation_factor"))) {
        char *end;
        errno = 0;
        wl->auto_factor = x->type == YN_SCALAR ? strtod (x->str, &end) : NAN;
        if (x->type != YN_SCALAR || *end || errno || !(wl->auto_factor >= 1)
            || wl->auto_factor > 100)
            return fail (c, x, "'auto_dilation_factor' must be a number in [1, 100]");
    }
    if ((x = get (n, "auto_hysteresis"))) {
        char *end;
        errno = 0;
        wl->auto_hysteresis = x->type == YN_SCALAR ? strtod (x->str, &end) : NAN;
        if (x->type != YN_SCALAR || *end || errno || !(wl->auto_hysteresis >= 0)
            || !(wl->auto_hysteresis < 1))
            return fail (c, x, "'auto_hysteresis' must be a number in [0, 1[");
    }
    return 0;
}

static int parse_root (ctx_t *c, const yn_t *root, wl_t *wl)
{
    static const char *const keys[] = { "platform", "apps", "scheduler", NULL };
    const yn_t *plat, *apps, *sched;
    double total = 0;
    long jobs = 0;

    if (root->type != YN_MAP)
        return fail (c, root, "a workload must be a mapping with 'platform:' and "
                     "'apps:', not %s", type_name (root->type));
    if (check_keys (c, root, keys, "the workload") < 0)
        return -1;
    if (!(plat = get (root, "platform")))
        return fail (c, root, "missing key 'platform'");
    if (parse_platform (c, plat, &wl->plat) < 0)
        return -1;
    if ((sched = get (root, "scheduler")) && parse_scheduler (c, sched, wl) < 0)
        return -1;
    if (!(apps = get (root, "apps")))
        return fail (c, root, "missing key 'apps'");
    if (apps->type != YN_SEQ)
        return fail (c, apps, "'apps' must be a list, not %s", type_name (apps->type));
    if (apps->n == 0)
        return fail (c, key_node (root, "apps"), "'apps' is empty");
    if (!(wl->apps = calloc (apps->n, sizeof (*wl->apps)))) {
        errno = ENOMEM;
        return fail (c, apps, "out of memory");
    }
    for (size_t i = 0; i < apps->n; i++) {
        wl_app_t *a = &wl->apps[wl->napps++];
        if (parse_app (c, apps->kids[i], i, &wl->plat, a) < 0)
            return -1;
        for (int j = 0; j < wl->napps - 1; j++) {
            if (!strcmp (wl->apps[j].name, a->name))
                return fail (c, get (apps->kids[i], "name"), "duplicate app name "
                             "'%s' (first at line %d)", a->name, wl->apps[j].line);
        }
        jobs += a->count;
        total += (double)a->count * a->iterations;
        if (jobs > WL_MAX_JOBS)
            return fail (c, apps->kids[i], "more than %d jobs in all", WL_MAX_JOBS);
        if (total > WL_MAX_ITERATIONS)
            return fail (c, apps->kids[i], "more than %d iterations in all (count x "
                         "iterations)", WL_MAX_ITERATIONS);
    }
    return 0;
}

/* ---------------------------------------------------------------- public */

static void value_free (wl_value_t *v)
{
    free (v->list);
}

void wl_destroy (wl_t *wl)
{
    int saved = errno;
    if (!wl)
        return;
    for (int i = 0; i < wl->napps; i++) {
        free (wl->apps[i].name);
        value_free (&wl->apps[i].w);
        value_free (&wl->apps[i].volume);
    }
    free (wl->apps);
    for (int i = 0; i < wl->plat.nbuffers; i++) {
        free (wl->plat.buffers[i].name);
        free (wl->plat.buffers[i].device);
    }
    free (wl->plat.buffers);
    for (int i = 0; i < wl->plat.ndevices; i++)
        free (wl->plat.devices[i].name);
    for (int i = 0; i < wl->plat.nbnodes; i++)
        free (wl->plat.bnodes[i].name);
    free (wl->plat.bnodes);
    free (wl->plat.devices);
    free (wl->file);
    free (wl);
    errno = saved;
}

wl_t *wl_load_buffer (const char *buf, size_t len, const char *name, wl_error_t *err)
{
    ctx_t c = { .file = name ? name : "<input>", .err = err, .buf = buf, .len = len };
    yn_t *root = NULL;
    wl_t *wl = NULL;

    if (err)
        err->text[0] = '\0';
    if (!buf && len) {
        errno = EINVAL;
        return NULL;
    }
    if (!(wl = calloc (1, sizeof (*wl))) || !(wl->file = strdup (c.file))) {
        fail_at (&c, 1, 1, "out of memory");
        errno = ENOMEM;
        goto error;
    }
    if (!(root = yaml_tree (&c)))
        goto error;
    if (parse_root (&c, root, wl) < 0)
        goto error;
    yn_free (root);
    return wl;
error:
    yn_free (root);
    wl_destroy (wl);
    if (errno != ENOMEM)
        errno = EINVAL;
    return NULL;
}

wl_t *wl_load_file (const char *path, wl_error_t *err)
{
    FILE *f;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    wl_t *wl;
    bool is_stdin = !strcmp (path, "-");

    if (!(f = is_stdin ? stdin : fopen (path, "r"))) {
        int e = errno;
        if (err)
            snprintf (err->text, sizeof (err->text), "%s: %s", path, strerror (e));
        errno = e;
        return NULL;
    }
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb;
            if (ncap > ((size_t)1 << 31) || !(nb = realloc (buf, ncap))) {
                if (err)
                    snprintf (err->text, sizeof (err->text), "%s: file too large",
                              path);
                free (buf);
                if (!is_stdin)
                    fclose (f);
                errno = EFBIG;
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        size_t r = fread (buf + len, 1, cap - len, f);
        len += r;
        if (r == 0)
            break;
    }
    if (ferror (f)) {
        int e = errno;
        if (err)
            snprintf (err->text, sizeof (err->text), "%s: %s", path, strerror (e));
        free (buf);
        if (!is_stdin)
            fclose (f);
        errno = e ? e : EIO;
        return NULL;
    }
    if (!is_stdin)
        fclose (f);
    wl = wl_load_buffer (buf, len, is_stdin ? "<stdin>" : path, err);
    free (buf);
    return wl;
}

/* ---------------------------------------------------------------- expansion */

static double draw (rng_t *r, const wl_dist_t *d, bool positive)
{
    double v = d->a;
    int tries = 0;

    switch (d->kind) {
        case WL_DIST_FIXED:
            return d->a;
        case WL_DIST_NORMAL:
            do {
                v = rng_normal (r, d->a, d->b);
            } while ((v < 0 || (positive && v <= 0)) && ++tries < 100);
            if (v < 0 || (positive && v <= 0))
                v = d->a;
            return v;
        case WL_DIST_UNIFORM:
            v = rng_uniform (r, d->a, d->b);
            if (positive && v <= 0)
                v = d->b;
            return v;
        case WL_DIST_EXPONENTIAL:
            do {
                v = rng_exponential (r, d->a);
            } while (positive && v <= 0 && ++tries < 100);
            if (positive && v <= 0)
                v = d->a;
            return v;
    }
    return v;
}

void wl_jobs_destroy (wl_jobs_t *jobs)
{
    int saved = errno;
    if (!jobs)
        return;
    for (int i = 0; i < jobs->njobs; i++) {
        free (jobs->jobs[i].name);
        free (jobs->jobs[i].w);
        free (jobs->jobs[i].volume);
    }
    free (jobs->jobs);
    free (jobs);
    errno = saved;
}

wl_jobs_t *wl_expand (const wl_t *wl, uint64_t seed, wl_error_t *err)
{
    wl_jobs_t *jobs = NULL;
    long total = 0;
    rng_t r;

    if (!wl) {
        errno = EINVAL;
        return NULL;
    }
    for (int i = 0; i < wl->napps; i++)
        total += wl->apps[i].count;
    if (!(jobs = calloc (1, sizeof (*jobs)))
        || !(jobs->jobs = calloc ((size_t)total, sizeof (*jobs->jobs))))
        goto nomem;
    rng_seed (&r, seed);
    for (int i = 0; i < wl->napps; i++) {
        const wl_app_t *a = &wl->apps[i];
        for (int k = 0; k < a->count; k++) {
            wl_job_t *j = &jobs->jobs[jobs->njobs++];
            size_t nl = strlen (a->name) + 16;
            if (!(j->name = malloc (nl)))
                goto nomem;
            if (a->count > 1)
                snprintf (j->name, nl, "%s#%d", a->name, k + 1);
            else
                snprintf (j->name, nl, "%s", a->name);
            j->app = i;
            j->nodes = a->nodes;
            j->release = draw (&r, &a->release, false);
            j->iterations = a->iterations;
            j->io = a->io;
            j->w_iter = a->w_iter;
            j->priority = a->priority;
            j->buffer_nodes = a->buffer_nodes;
            if (!(j->w = malloc ((size_t)a->iterations * sizeof (double)))
                || !(j->volume = malloc ((size_t)a->iterations * sizeof (double))))
                goto nomem;
            for (int it = 0; it < a->iterations; it++) {
                j->w[it] = draw (&r, a->w.nlist ? &a->w.list[it] : &a->w.one, false);
                j->volume[it] = draw (&r, a->volume.nlist ? &a->volume.list[it]
                                      : &a->volume.one, true);
                if (j->volume[it] > j->buffer_capacity)
                    j->buffer_capacity = j->volume[it];
            }
            if (a->buffer_capacity > 0)
                j->buffer_capacity = a->buffer_capacity;
        }
    }
    return jobs;
nomem:
    if (err)
        snprintf (err->text, sizeof (err->text), "%s: out of memory expanding the "
                  "workload", wl->file);
    wl_jobs_destroy (jobs);
    errno = ENOMEM;
    return NULL;
}
