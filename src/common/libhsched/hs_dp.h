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
#include "libhsched/hs_dp_types.h"

#ifdef __cplusplus
extern "C" {
#endif


/* Place every phase of 'p' minimising 'cost'.  Returns 0, or -1 with errno:
 * EINVAL (bad input), ENOSPC (the capacities cannot hold the writes; the fallback may
 * also say so when it fails to pack them), E2BIG (HS_DP_EXACT above 16 phases),
 * ENOMEM.  On failure sol->place is left unspecified. */
int hs_dp_place(const hs_dp_problem_t *p, hs_dp_cost_t cost, hs_dp_solution_t *sol,
                hu_error_t *err);

/* Enumerate every placement (for tests; exponential).  Same contract. */
int hs_dp_exhaustive(const hs_dp_problem_t *p, hs_dp_cost_t cost, hs_dp_solution_t *sol,
                     hu_error_t *err);

/* The five costs at once in one enumeration: sols[k] for cost k. */
int hs_dp_exhaustive_all(const hs_dp_problem_t *p, hs_dp_solution_t sols[HS_DP_COST__COUNT],
                         hu_error_t *err);

/* Check a placement (place[i].node and .slot given) and compute its cost; fills the
 * other fields of 'place'.  -1 with EINVAL if it is invalid (node not allowed, waves
 * overlapping on a node, capacity exceeded, bad slot). */
int hs_dp_evaluate(const hs_dp_problem_t *p, hs_dp_cost_t cost, hs_dp_place_t *place, double *value,
                   double *secondary, hu_error_t *err);

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
