/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_periodic_types.h — the types of the periodic schedules (heuristics and their
 * parameters, periodic jobs, a pattern's pieces, instances, statistics and states),
 * apart from the functions of hs_periodic.h so that the construction's lower files
 * (hs_periodic_model.h, hs_pattern.c, hs_periodic_profile.c, hs_periodic_ff.c) stand
 * below hs_periodic.c.  Included by hs_periodic.h.
 */
#ifndef HARMONIA_HS_PERIODIC_TYPES_H
#define HARMONIA_HS_PERIODIC_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "hsched.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    HS_PERIODIC_THROU = 0,    /* periodic-throu */
    HS_PERIODIC_CONG = 1,     /* periodic-cong */
    HS_PERIODIC_PERSCHED = 2, /* persched */
} hs_periodic_heuristic_t;

typedef struct {
    hs_periodic_heuristic_t heuristic;
    double epsilon;     /* T grows by (1 + epsilon) per step; in ]0, 1] */
    double tmax_factor; /* K': T_max = K' * T_min; >= 1 */
    bool refine;        /* PerSched's final refinement below T_opt (any heuristic) */
    double tmin;        /* > 0: start the period search at this T_min instead of
                               max_k (w_k + time_io_k) (PMBS 2017's runs used
                               hand-chosen values); 0: computed */
    bool reference;     /* build with the plain quadratic scans (every gap of
                               the job rebuilt and sorted per first-fit insertion,
                               a linear search per instance inserted): the same
                               patterns, slower; for tests and benchmarks */
    /* appended: the decision budget (doc/periodic.md, "Budget") */
    uint64_t max_work; /* > 0: the computation spends at most this many
                               work units (every loop of it counts: segments and
                               candidates visited, sorts, moves, scans of the jobs;
                               doc/performance.md, "Decision budget") and returns
                               the best pattern so far (the one being built may
                               have fewer instances than fit); 0: unbounded */
} hs_periodic_params_t;

/* One periodic job (Gainaru §2.1: w(k,i) = w_k, vol(k,i) = vol_k for every i). */
typedef struct {
    int nodes;     /* beta_k >= 1 */
    double w;      /* w_k > 0, seconds of compute per instance */
    double volume; /* vol_k > 0, bytes moved per instance */
} hs_pjob_t;

/* A piece of I/O: job k moves at 'bw' bytes/s (the whole job, i.e. beta_k * gamma)
 * during [start, end[.  Times are "unwrapped": relative to the period origin of the
 * instance's init_w, so they may exceed T (reduce modulo T to place them). */
typedef struct {
    double start;
    double end;
    double bw;
} hs_ppiece_t;

/* One instance of a job in the pattern (Gainaru §3.2.1 notation).  Unwrapped times:
 * 0 <= init_w < T, init_w <= end_w <= io_start <= io_end <= next_w <= init_w + T,
 * where next_w is initW of the job's next instance (its own init_w + T when alone).
 * The compute chunk is [init_w, end_w[; the I/O window [end_w, next_w[ holds the
 * pieces (sum of (end - start) * bw = vol_k); in the rest of the window the job waits. */
typedef struct {
    double init_w;
    double end_w;
    double io_start;
    double io_end;
    double next_w;
    size_t npieces;
    const hs_ppiece_t *pieces; /* borrowed from the pattern, sorted by start */
} hs_pinstance_t;

typedef struct {
    double period;             /* T of the pattern */
    double tmin;               /* T_min = max_k (w_k + time_io_k), or the one given */
    double tmax;               /* T_max = K' * T_min */
    double t_search;           /* best T of the geometric search (before refinement) */
    double sys_efficiency;     /* (1/N) sum_k beta_k n_per(k) w_k / T */
    double upper_limit;        /* (1/N) sum_k beta_k rho_k */
    double dilation;           /* max_k rho_k / rho~_k; INFINITY if a job has no instance */
    int jobs_unscheduled;      /* jobs with n_per = 0 (they would never get bandwidth) */
    int instances;             /* sum_k n_per(k) */
    int periods_tried;         /* patterns built: search + refinement */
    int refine_steps;          /* of which in the refinement */
    uint64_t segments_visited; /* clock-free cost of the computation, in work
                                   units (never above max_work when it is set) */
    /* appended */
    bool budget_hit; /* max_work was reached: the search stopped early */
} hs_pattern_stats_t;

typedef struct hs_pattern hs_pattern_t;

typedef enum {
    HS_PSTATE_NONE = 0, /* the job has no instance in the pattern */
    HS_PSTATE_COMPUTE,  /* computing: [init_w, end_w[ */
    HS_PSTATE_IO,       /* in its I/O window with bandwidth > 0 */
    HS_PSTATE_WAIT,     /* in its I/O window with no bandwidth */
} hs_pstate_t;

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_HS_PERIODIC_TYPES_H */
