/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_dp.h — Harmonia's dynamic programme: place pending I/O phases on buffer nodes
 * and start slots, interference-aware through MSCA, minimising one of the five
 * Harmonia costs (harmonia-maxbw, -minstall, -fairness, -buffer-eff, -priority).
 *
 * The model, the recurrences and every choice are written down in doc/harmonia-dp.md.
 * Pure: no I/O, no threads, no clock, no globals.  Times are seconds relative to the
 * decision ("now" = 0).  Errors follow hsched.h: -1 with errno set and 'err' filled.
 */
#ifndef HARMONIA_HS_DP_H
#define HARMONIA_HS_DP_H

#include <stdbool.h>
#include <stdint.h>

#include "libhsched/hsched.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HS_DP_MAX_SLOTS 64              /* S <= 64 */
#define HS_DP_EXACT_MAX_PHASES 16       /* the exact DP's bitmask limit */
#define HS_DP_BUDGET_DEFAULT 1.6e5      /* steps (a few ms); see doc §3.2, §4 */
#define HS_DP_EXACT_STEP_RATIO 4.       /* an exact-DP step costs ~1/4 of a fallback
                                           step: exact if its steps <= ratio*budget */

typedef enum {
    HS_DP_COST_MAXBW = 0,       /* min makespan of the batch (= max aggregate bw) */
    HS_DP_COST_MINSTALL,        /* min sum of (finish - request) */
    HS_DP_COST_FAIRNESS,        /* min max (finish - request) / alone time */
    HS_DP_COST_BUFFER_EFF,      /* min sum over used nodes of (free - written) * busy */
    HS_DP_COST_PRIORITY,        /* min sum of priority * (finish - request) */
    HS_DP_COST__COUNT
} hs_dp_cost_t;

typedef enum {
    HS_DP_AUTO = 0,             /* exact DP within the budget, else the fallback */
    HS_DP_EXACT,                /* exact DP whatever the budget (E2BIG if n > 16) */
    HS_DP_HEURISTIC,            /* the fallback (greedy + local search) only */
} hs_dp_method_t;

/* One pending I/O phase. */
typedef struct {
    uint64_t job;               /* caller's job id (not interpreted) */
    double volume;              /* bytes, > 0 */
    hs_dir_t dir;               /* selects the node's write or read MSCA curve */
    double waited;              /* now - request, s, >= 0 */
    double stall;               /* the job's stall so far, s, >= 0 (orders ties) */
    int priority;               /* 1..10; 0 means 1 */
    int nallowed;               /* the job's buffer allocation; 0: every node */
    const int *allowed;         /* node indices, borrowed */
} hs_dp_phase_t;

/* One buffer node. */
typedef struct {
    double capacity;            /* free bytes for writes (INFINITY: unlimited,
                                   not accepted by the buffer-eff cost) */
    double bandwidth;           /* B_j = BW(1), bytes/s, > 0 */
    double msca[16];            /* write curve (and default): msca[c-1] = MSCA(c) */
    int nmsca;                  /* valid entries, 0..16 (0: insensitive) */
    double msca_read[16];       /* read curve */
    int nmsca_read;             /* 0: reads use the write curve */
    int nrunning;               /* streams already running on the node */
    const double *running_end;  /* their expected end, s from now, borrowed */
} hs_dp_node_t;

typedef struct {
    int nphases;
    const hs_dp_phase_t *phases;
    int nnodes;
    const hs_dp_node_t *nodes;
    int nslots;                 /* S, 1..HS_DP_MAX_SLOTS */
    double slot;                /* Delta, s, > 0 */
    double budget;              /* steps; <= 0: HS_DP_BUDGET_DEFAULT */
    hs_dp_method_t method;
} hs_dp_problem_t;

/* Where and when a phase goes. */
typedef struct {
    int node;                   /* index into nodes */
    int slot;                   /* start slot: starts at slot * Delta */
    int concurrency;            /* streams in its cell, running ones included */
    double start;               /* s from now */
    double finish;              /* predicted end, s from now */
    double bw;                  /* granted rate, bytes/s = B_j / If(concurrency) */
} hs_dp_place_t;

typedef struct {
    hs_dp_place_t *place;       /* caller's array of nphases entries */
    double cost;                /* the policy's objective (doc §2) */
    double secondary;           /* sum of finishes for maxbw/fairness, else 0 */
    double bandwidth;           /* sum of volumes / makespan (informative) */
    bool exact;                 /* true: the optimum (exact DP or exhaustive) */
    double steps;               /* work done, in the budget's unit */
} hs_dp_solution_t;

/* Place every phase of 'p' minimising 'cost'.  Returns 0, or -1 with errno:
 * EINVAL (bad input), ENOSPC (the capacities cannot hold the writes; the fallback may
 * also say so when it fails to pack them), E2BIG (HS_DP_EXACT above 16 phases),
 * ENOMEM.  On failure sol->place is left unspecified. */
int hs_dp_place(const hs_dp_problem_t *p, hs_dp_cost_t cost, hs_dp_solution_t *sol,
                hs_error_t *err);

/* Enumerate every placement (for tests; exponential).  Same contract. */
int hs_dp_exhaustive(const hs_dp_problem_t *p, hs_dp_cost_t cost,
                     hs_dp_solution_t *sol, hs_error_t *err);

/* The five costs at once in one enumeration: sols[k] for cost k. */
int hs_dp_exhaustive_all(const hs_dp_problem_t *p,
                         hs_dp_solution_t sols[HS_DP_COST__COUNT], hs_error_t *err);

/* Check a placement (place[i].node and .slot given) and compute its cost; fills the
 * other fields of 'place'.  -1 with EINVAL if it is invalid (node not allowed, waves
 * overlapping on a node, capacity exceeded, bad slot). */
int hs_dp_evaluate(const hs_dp_problem_t *p, hs_dp_cost_t cost, hs_dp_place_t *place,
                   double *value, double *secondary, hs_error_t *err);

/* Interference factor If(c) = c * (1 + MSCA(c)) of a node for 'dir'. */
double hs_dp_if(const hs_dp_node_t *node, hs_dir_t dir, int c);

/* Fill a node from a platform buffer: capacity and bandwidth as given (0 stays 0:
 * the caller resolves "unknown"), both MSCA curves, no stream. */
void hs_dp_node_from_buffer(hs_dp_node_t *node, const hs_buffer_t *buf);

/* HS_POL_HARMONIA_* -> cost; -1 with EINVAL for other policies. */
int hs_dp_cost_from_policy(hs_policy_kind_t kind, hs_dp_cost_t *cost);
const char *hs_dp_cost_name(hs_dp_cost_t cost);

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_HS_DP_H */
