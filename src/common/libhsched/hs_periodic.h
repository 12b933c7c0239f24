/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_periodic.h — periodic I/O schedules ("patterns") for libhsched.
 *
 * A pattern is a regular period [0, T[ that repeats forever (Gainaru et al. RR-8519,
 * §3.2.1).  Within it, job k runs n_per(k) instances; instance i computes during
 * [initW_i, endW_i = initW_i + w_k[ and moves vol_k bytes in [endW_i, initW_{i+1}[
 * through a piecewise-constant bandwidth.  Three heuristics build one:
 *
 *   HS_PERIODIC_THROU     Insert-In-Schedule-Throu (Gainaru §3.2.3), SysEfficiency
 *   HS_PERIODIC_CONG      Insert-In-Schedule-Cong  (Gainaru §3.2.3), Dilation
 *   HS_PERIODIC_PERSCHED  PerSched (Aupy, Gainaru, Le Fèvre, PMBS 2017)
 *
 * doc/periodic.md describes the algorithms exactly as implemented.
 *
 * Pure code: no I/O, no threads, no clock, no global state.  The caller times
 * hs_pattern_compute() itself if it wants a wall-clock figure; the pattern reports a
 * clock-free cost (periods tried, segments visited).
 *
 * Replay (what a driver does with a pattern): the pattern is anchored at an absolute
 * time t0 chosen by the driver; at absolute time t, job k is in state
 * hs_pattern_state(p, k, t - t0) and is granted hs_pattern_bw(p, k, t - t0) bytes/s;
 * nothing changes before t0 + hs_pattern_next_change(p, (t - t0) mod T) (taken in the
 * current period).  Time arguments are reduced modulo T.
 */
#ifndef HARMONIA_HS_PERIODIC_H
#define HARMONIA_HS_PERIODIC_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "hsched.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    HS_PERIODIC_THROU = 0,      /* periodic-throu */
    HS_PERIODIC_CONG = 1,       /* periodic-cong */
    HS_PERIODIC_PERSCHED = 2,   /* persched */
} hs_periodic_heuristic_t;

typedef struct {
    hs_periodic_heuristic_t heuristic;
    double epsilon;         /* T grows by (1 + epsilon) per step; in ]0, 1] */
    double tmax_factor;     /* K': T_max = K' * T_min; >= 1 */
    bool refine;            /* PerSched's final refinement below T_opt (any heuristic) */
    double tmin;            /* > 0: start the period search at this T_min instead of
                               max_k (w_k + time_io_k) (PMBS 2017's runs used
                               hand-chosen values); 0: computed */
    bool reference;         /* build with the plain quadratic scans (every gap of
                               the job rebuilt and sorted per first-fit insertion,
                               a linear search per instance inserted): the same
                               patterns, slower; for tests and benchmarks */
    /* appended: the decision budget (doc/periodic.md, "Budget") */
    uint64_t max_work;      /* > 0: the computation spends at most this many
                               work units (every loop of it counts: segments and
                               candidates visited, sorts, moves, scans of the jobs;
                               doc/performance.md, "Decision budget") and returns
                               the best pattern so far (the one being built may
                               have fewer instances than fit); 0: unbounded */
} hs_periodic_params_t;

/* The budget of the periodic policies' decisions when the policy gives none
 * (hs_policy_t.max_work == 0; doc/performance.md, "Decision budget"). */
#define HS_PERIODIC_MAX_WORK 2000000ULL

/* Defaults: epsilon = 0.01, tmax_factor = 10, refine = (h == HS_PERIODIC_PERSCHED),
 * tmin = 0 (computed), max_work = 0 (unbounded; the policies set one).
 * Returns 0, or -1 with errno = EINVAL (prm NULL or h unknown). */
int hs_periodic_params_init(hs_periodic_params_t *prm, hs_periodic_heuristic_t h);

/* HS_POL_PERIODIC_THROU / _CONG / HS_POL_PERSCHED -> heuristic; -1, EINVAL otherwise. */
int hs_periodic_from_policy(hs_policy_kind_t kind, hs_periodic_heuristic_t *h);

/* One periodic job (Gainaru §2.1: w(k,i) = w_k, vol(k,i) = vol_k for every i). */
typedef struct {
    int nodes;              /* beta_k >= 1 */
    double w;               /* w_k > 0, seconds of compute per instance */
    double volume;          /* vol_k > 0, bytes moved per instance */
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
    const hs_ppiece_t *pieces;  /* borrowed from the pattern, sorted by start */
} hs_pinstance_t;

typedef struct {
    double period;          /* T of the pattern */
    double tmin;            /* T_min = max_k (w_k + time_io_k), or the one given */
    double tmax;            /* T_max = K' * T_min */
    double t_search;        /* best T of the geometric search (before refinement) */
    double sys_efficiency;  /* (1/N) sum_k beta_k n_per(k) w_k / T */
    double upper_limit;     /* (1/N) sum_k beta_k rho_k */
    double dilation;        /* max_k rho_k / rho~_k; INFINITY if a job has no instance */
    int jobs_unscheduled;   /* jobs with n_per = 0 (they would never get bandwidth) */
    int instances;          /* sum_k n_per(k) */
    int periods_tried;      /* patterns built: search + refinement */
    int refine_steps;       /* of which in the refinement */
    uint64_t segments_visited;  /* clock-free cost of the computation, in work
                                   units (never above max_work when it is set) */
    /* appended */
    bool budget_hit;        /* max_work was reached: the search stopped early */
} hs_pattern_stats_t;

typedef struct hs_pattern hs_pattern_t;

/* Compute a pattern for 'njobs' jobs on 'plat' (plat->nodes = N, node_bw = b, bw = B;
 * the buffer tier is ignored).  Returns the pattern, or NULL with errno set (EINVAL:
 * bad input, err says which; ENOMEM).  A pattern in which some job could not get any
 * instance is still returned (stats: jobs_unscheduled > 0, dilation = INFINITY). */
hs_pattern_t *hs_pattern_compute(const hs_platform_t *plat, const hs_pjob_t *jobs,
                                 size_t njobs, const hs_periodic_params_t *prm,
                                 hs_error_t *err);

void hs_pattern_destroy(hs_pattern_t *p);     /* accepts NULL, keeps errno */

double hs_pattern_period(const hs_pattern_t *p);
int hs_pattern_njobs(const hs_pattern_t *p);
int hs_pattern_stats(const hs_pattern_t *p, hs_pattern_stats_t *st);

/* n_per(k); -1 with errno = EINVAL for a bad job index. */
int hs_pattern_ninstances(const hs_pattern_t *p, int job);

/* Instance i (0 <= i < n_per(job), sorted by init_w); 0, or -1 with EINVAL. */
int hs_pattern_instance(const hs_pattern_t *p, int job, int i, hs_pinstance_t *out);

/* Periodic efficiency of job k: rho~_k = n_per(k) w_k / T (Gainaru eq. (1));
 * NAN with errno = EINVAL for a bad job index. */
double hs_pattern_job_efficiency(const hs_pattern_t *p, int job);

/* Bandwidth (bytes/s) planned for 'job' at 't_in_period' (reduced modulo T);
 * NAN with errno = EINVAL for a bad job index. */
double hs_pattern_bw(const hs_pattern_t *p, int job, double t_in_period);

/* The highest bandwidth of a piece of 'job' lying wholly inside [a, b] (0 <= a <= b
 * <= T, no reduction), 0 if none: the pieces a replay skips when it steps over
 * [a, b] at once.  NAN with errno = EINVAL for a bad job index. */
double hs_pattern_bw_within(const hs_pattern_t *p, int job, double a, double b);

/* Sum over all jobs of hs_pattern_bw() (never above B). */
double hs_pattern_bw_total(const hs_pattern_t *p, double t_in_period);

/* Smallest instant c in ]t, T] at which some job's state or bandwidth changes,
 * t = t_in_period reduced modulo T.  T itself (the period's end) always counts. */
double hs_pattern_next_change(const hs_pattern_t *p, double t_in_period);

typedef enum {
    HS_PSTATE_NONE = 0,     /* the job has no instance in the pattern */
    HS_PSTATE_COMPUTE,      /* computing: [init_w, end_w[ */
    HS_PSTATE_IO,           /* in its I/O window with bandwidth > 0 */
    HS_PSTATE_WAIT,         /* in its I/O window with no bandwidth */
} hs_pstate_t;

/* State of 'job' at 't_in_period'; if 'instance' is not NULL it receives the index of
 * the instance whose [init_w, next_w[ contains t (-1 for NONE).  HS_PSTATE_NONE with
 * errno = EINVAL for a bad job index. */
hs_pstate_t hs_pattern_state(const hs_pattern_t *p, int job, double t_in_period,
                             int *instance);

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_HS_PERIODIC_H */
