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
#include "hs_periodic_types.h"
#include "hs_pattern.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The budget of the periodic policies' decisions when the policy gives none
 * (hs_policy_t.max_work == 0; doc/performance.md, "Decision budget"). */
#define HS_PERIODIC_MAX_WORK 2000000ULL

/* Defaults: epsilon = 0.01, tmax_factor = 10, refine = (h == HS_PERIODIC_PERSCHED),
 * tmin = 0 (computed), max_work = 0 (unbounded; the policies set one).
 * Returns 0, or -1 with errno = EINVAL (prm NULL or h unknown). */
int hs_periodic_params_init(hs_periodic_params_t *prm, hs_periodic_heuristic_t h);

/* HS_POL_PERIODIC_THROU / _CONG / HS_POL_PERSCHED -> heuristic; -1, EINVAL otherwise. */
int hs_periodic_from_policy(hs_policy_kind_t kind, hs_periodic_heuristic_t *h);

/* Compute a pattern for 'njobs' jobs on 'plat' (plat->nodes = N, node_bw = b, bw = B;
 * the buffer tier is ignored).  Returns the pattern, or NULL with errno set (EINVAL:
 * bad input, err says which; ENOMEM).  A pattern in which some job could not get any
 * instance is still returned (stats: jobs_unscheduled > 0, dilation = INFINITY). */
hs_pattern_t *hs_pattern_compute(const hs_platform_t *plat, const hs_pjob_t *jobs, size_t njobs,
                                 const hs_periodic_params_t *prm, hu_error_t *err);

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_HS_PERIODIC_H */
