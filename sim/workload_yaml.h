/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * workload_yaml.h — the YAML layer of bbsim's workload loader (workload_yaml.c: the
 * YAML document read by libhutil's hu_yaml, the schema's value parsers, host lists),
 * used by the
 * schema walk and the expansion above it (workload.c).  Private to libbbsim.
 */
#ifndef BBSIM_WORKLOAD_YAML_H
#define BBSIM_WORKLOAD_YAML_H

#include <stdbool.h>
#include <stddef.h>

#include "libhutil/hu_yaml.h"
#include "workload_model.h"

typedef struct {
    const char *file;
    hu_error_t *err;
    const char *buf;
    size_t len;
} ctx_t;

typedef enum { Q_DURATION, Q_SIZE, Q_BANDWIDTH } qkind_t;

/* "FILE:LINE:COL: reason" into c->err; returns -1. */
int wl_fail_at(ctx_t *c, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define fail(c, node, ...) wl_fail_at((c), (node)->line, (node)->col, __VA_ARGS__)
/* The one document of c->buf (libhutil's reader, its refusals into c->err). */
hu_ydoc_t *wl_yaml_doc(ctx_t *c);
const char *wl_type_name(hu_yaml_type_t t);
int wl_check_keys(ctx_t *c, const hu_ynode_t *map, const char *const *allowed, const char *where);
/* hu_ymap_get() of a key that must be there: NULL, and "missing key 'KEY' in WHERE" at
 * map into c->err, when it is not. */
const hu_ynode_t *wl_need(ctx_t *c, const hu_ynode_t *map, const char *key, const char *where);
const hu_ynode_t *wl_key_node(const hu_ynode_t *map, const char *key);
int wl_need_type(ctx_t *c, const hu_ynode_t *n, hu_yaml_type_t t, const char *what);
int wl_parse_int(ctx_t *c, const hu_ynode_t *n, const char *what, long min, long max, long *out);
int wl_parse_quantity(ctx_t *c, const hu_ynode_t *n, qkind_t kind, const char *what, bool positive,
                      double *out);
int wl_parse_string(ctx_t *c, const hu_ynode_t *n, const char *what, char **out);
/* wl_parse_quantity() of the key that must be there (wl_need()), the key naming it. */
int wl_need_quantity(ctx_t *c, const hu_ynode_t *map, const char *key, const char *where,
                     qkind_t kind, bool positive, double *out);
int wl_parse_dist(ctx_t *c, const hu_ynode_t *n, qkind_t kind, const char *what, bool positive,
                  wl_dist_t *d);
int wl_parse_value(ctx_t *c, const hu_ynode_t *n, qkind_t kind, const char *what, bool positive,
                   wl_value_t *v);
/* Expand a host list (libhutil's hu_hostlist_expand(), free with hu_hostlist_free()):
 * the count, or -1 and why in bbsim's words. */
int wl_hostlist(const char *expr, char ***out, const char **why);

#endif
