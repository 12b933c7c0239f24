/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_dp_types.h — the limits and types of Harmonia's dynamic programme (the problem,
 * its nodes and phases, a placement, a solution), apart from the functions of hs_dp.h
 * so that the model (hs_dp_model.h) and the fallback (hs_dp_greedy.c) stand below
 * the DP that calls them.  Included by hs_dp.h.
 */
#ifndef HARMONIA_HS_DP_TYPES_H
#define HARMONIA_HS_DP_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "libhsched/hsched.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HS_DP_MAX_SLOTS 64         /* S <= 64 */
#define HS_DP_EXACT_MAX_PHASES 16  /* the exact DP's bitmask limit */
#define HS_DP_BUDGET_DEFAULT 1.6e5 /* steps (a few ms); see doc §3.2, §4 */
#define HS_DP_EXACT_STEP_RATIO \
    4. /* an exact-DP step costs ~1/4 of a fallback
                                           step: exact if its steps <= ratio*budget */

typedef enum {
    HS_DP_COST_MAXBW = 0,  /* min makespan of the batch (= max aggregate bw) */
    HS_DP_COST_MINSTALL,   /* min sum of (finish - request) */
    HS_DP_COST_FAIRNESS,   /* min max (finish - request) / alone time */
    HS_DP_COST_BUFFER_EFF, /* min sum over used nodes of (free - written) * busy */
    HS_DP_COST_PRIORITY,   /* min sum of priority * (finish - request) */
    HS_DP_COST__COUNT
} hs_dp_cost_t;

typedef enum {
    HS_DP_AUTO = 0,  /* exact DP within the budget, else the fallback */
    HS_DP_EXACT,     /* exact DP whatever the budget (E2BIG if n > 16) */
    HS_DP_HEURISTIC, /* the fallback (greedy + local search) only */
} hs_dp_method_t;

/* One pending I/O phase. */
typedef struct {
    uint64_t job;       /* caller's job id (not interpreted) */
    double volume;      /* bytes, > 0 */
    hs_dir_t dir;       /* selects the node's write or read MSCA curve */
    double waited;      /* now - request, s, >= 0 */
    double stall;       /* the job's stall so far, s, >= 0 (orders ties) */
    int priority;       /* 1..10; 0 means 1 */
    int nallowed;       /* the job's buffer allocation; 0: every node */
    const int *allowed; /* node indices, borrowed */
} hs_dp_phase_t;

/* One buffer node. */
typedef struct {
    double capacity;           /* free bytes for writes (INFINITY: unlimited,
                                   not accepted by the buffer-eff cost) */
    double bandwidth;          /* B_j = BW(1), bytes/s, > 0 */
    double msca[16];           /* write curve (and default): msca[c-1] = MSCA(c) */
    int nmsca;                 /* valid entries, 0..16 (0: insensitive) */
    double msca_read[16];      /* read curve */
    int nmsca_read;            /* 0: reads use the write curve */
    int nrunning;              /* streams already running on the node */
    const double *running_end; /* their expected end, s from now, borrowed */
} hs_dp_node_t;

typedef struct {
    int nphases;
    const hs_dp_phase_t *phases;
    int nnodes;
    const hs_dp_node_t *nodes;
    int nslots;    /* S, 1..HS_DP_MAX_SLOTS */
    double slot;   /* Delta, s, > 0 */
    double budget; /* steps; <= 0: HS_DP_BUDGET_DEFAULT */
    hs_dp_method_t method;
} hs_dp_problem_t;

/* Where and when a phase goes. */
typedef struct {
    int node;        /* index into nodes */
    int slot;        /* start slot: starts at slot * Delta */
    int concurrency; /* streams in its cell, running ones included */
    double start;    /* s from now */
    double finish;   /* predicted end, s from now */
    double bw;       /* granted rate, bytes/s = B_j / If(concurrency) */
} hs_dp_place_t;

typedef struct {
    hs_dp_place_t *place; /* caller's array of nphases entries */
    double cost;          /* the policy's objective (doc §2) */
    double secondary;     /* sum of finishes for maxbw/fairness, else 0 */
    double bandwidth;     /* sum of volumes / makespan (informative) */
    bool exact;           /* true: the optimum (exact DP or exhaustive) */
    double steps;         /* work done, in the budget's unit */
} hs_dp_solution_t;

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_HS_DP_TYPES_H */
