/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_pattern.h — the queries of a computed periodic pattern (hs_pattern.c); the
 * pattern itself comes from hs_pattern_compute() (hs_periodic.h).  Included by
 * hs_periodic.h.
 */
#ifndef HARMONIA_HS_PATTERN_H
#define HARMONIA_HS_PATTERN_H

#include "hs_periodic_types.h"

#ifdef __cplusplus
extern "C" {
#endif

void hs_pattern_destroy(hs_pattern_t *p); /* accepts NULL, keeps errno */

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

/* State of 'job' at 't_in_period'; if 'instance' is not NULL it receives the index of
 * the instance whose [init_w, next_w[ contains t (-1 for NONE).  HS_PSTATE_NONE with
 * errno = EINVAL for a bad job index. */
hs_pstate_t hs_pattern_state(const hs_pattern_t *p, int job, double t_in_period, int *instance);

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_HS_PATTERN_H */
