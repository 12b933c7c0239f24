/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * workload_model.h — the error type, the values and the limits of bbsim's workload
 * files, shared by the loader (workload.c) and the YAML layer below it
 * (workload_yaml.c).  Included by workload.h.
 */
#ifndef BBSIM_WORKLOAD_MODEL_H
#define BBSIM_WORKLOAD_MODEL_H

#include "../src/common/libhutil/hutil.h"

/* A number drawn per use: a fixed value or a distribution. */
typedef enum {
    WL_DIST_FIXED = 0,
    WL_DIST_NORMAL,      /* a = mean, b = sd; negative draws are redrawn */
    WL_DIST_UNIFORM,     /* a = min, b = max */
    WL_DIST_EXPONENTIAL, /* a = mean */
} wl_dist_kind_t;

typedef struct {
    wl_dist_kind_t kind;
    double a, b;
} wl_dist_t;

/* A value of an app: one distribution for every iteration, or one per iteration. */
typedef struct {
    wl_dist_t one;   /* used when nlist == 0 */
    wl_dist_t *list; /* per-iteration values (nlist of them) */
    int nlist;
} wl_value_t;

/* ---------------------------------------------------------------- limits */

#define WL_MAX_BUFFER_NODES 4096   /* buffer nodes of a platform */
#define WL_MAX_DEPTH 32            /* nesting of YAML collections */
#define WL_MAX_NODES (1 << 22)     /* YAML nodes in one file */
#define WL_MAX_JOBS 1000000        /* jobs after replication */
#define WL_MAX_ITERATIONS 10000000 /* sum over jobs of iterations */

#endif /* BBSIM_WORKLOAD_MODEL_H */
