/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_pattern.c — the queries on a computed pattern (hs_periodic.h: period,
 * instances, the bandwidth and state of a job at a time in the period) and its
 * destruction; hs_periodic.c computes it.
 *
 * Pure code: no I/O, no clock, no global state.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hs_pattern.h"
#include "hs_periodic_model.h"

void hs_pattern_destroy(hs_pattern_t *p)
{
    int saved = errno;

    if (p) {
        if (p->inst) {
            for (int k = 0; k < p->K; k++)
                free(p->inst[k]);
        }
        free(p->inst);
        free(p->w);
        free(p->n);
        free(p->rep);
        free(p->nrep);
        free(p->pieces);
        free(p->repstore);
        free(p->chg);
        free(p);
    }
    errno = saved;
}

static bool bad_job(const hs_pattern_t *p, int job)
{
    if (!p || job < 0 || job >= p->K) {
        errno = EINVAL;
        return true;
    }
    return false;
}

double hs_pattern_period(const hs_pattern_t *p)
{
    if (!p) {
        errno = EINVAL;
        return NAN;
    }
    return p->T;
}

int hs_pattern_njobs(const hs_pattern_t *p)
{
    if (!p) {
        errno = EINVAL;
        return -1;
    }
    return p->K;
}

int hs_pattern_stats(const hs_pattern_t *p, hs_pattern_stats_t *st)
{
    if (!p || !st) {
        errno = EINVAL;
        return -1;
    }
    *st = p->st;
    return 0;
}

int hs_pattern_ninstances(const hs_pattern_t *p, int job)
{
    if (bad_job(p, job))
        return -1;
    return p->n[job];
}

int hs_pattern_instance(const hs_pattern_t *p, int job, int i, hs_pinstance_t *out)
{
    if (bad_job(p, job) || i < 0 || i >= p->n[job] || !out) {
        errno = EINVAL;
        return -1;
    }
    *out = p->inst[job][i];
    return 0;
}

/* rho~_k = n_per(k) w_k / T (Gainaru §3.2, eq. (1)). */
double hs_pattern_job_efficiency(const hs_pattern_t *p, int job)
{
    if (bad_job(p, job))
        return NAN;
    return p->n[job] * p->w[job] / p->T;
}

/* gamma_k(t) beta_k: the piece of job k containing t mod T (binary search over its
 * sorted, disjoint pieces), 0 outside (Gainaru §3.2.1: constant on each interval). */
double hs_pattern_bw(const hs_pattern_t *p, int job, double t_in_period)
{
    const hs_ppiece_t *r;
    size_t lo = 0, hi;
    double t;

    if (bad_job(p, job))
        return NAN;
    r = p->rep[job];
    hi = p->nrep[job];
    if (hi == 0)
        return 0.;
    t = norm_t(t_in_period, p->T);
    if (t < r[0].start)
        return 0.;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].start <= t)
            lo = mid;
        else
            hi = mid;
    }
    return t < r[lo].end ? r[lo].bw : 0.;
}

/* The pieces of job k are sorted and disjoint: from the first one starting at or
 * after a, those starting before b; O(log n + the pieces in [a, b]). */
double hs_pattern_bw_within(const hs_pattern_t *p, int job, double a, double b)
{
    const hs_ppiece_t *r;
    size_t lo = 0, hi;
    double best = 0.;

    if (bad_job(p, job))
        return NAN;
    r = p->rep[job];
    hi = p->nrep[job];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].start < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < p->nrep[job] && r[lo].start < b; lo++) {
        if (r[lo].end <= b && r[lo].bw > best)
            best = r[lo].bw;
    }
    return best;
}

/* sum_k beta_k gamma_k(t) <= B (Gainaru §3.2.1 (ii)). */
double hs_pattern_bw_total(const hs_pattern_t *p, double t_in_period)
{
    double s = 0.;

    if (!p) {
        errno = EINVAL;
        return NAN;
    }
    for (int k = 0; k < p->K; k++)
        s += hs_pattern_bw(p, k, t_in_period);
    return s;
}

/* The next of the S events of the period (Gainaru §3.2.1: compute starts and ends)
 * or bandwidth changes after t: min { c in chg : c > t }, else T. */
double hs_pattern_next_change(const hs_pattern_t *p, double t_in_period)
{
    size_t lo = 0, hi;
    double t;

    if (!p) {
        errno = EINVAL;
        return NAN;
    }
    t = norm_t(t_in_period, p->T);
    hi = p->nchg;
    /* first index with chg > t */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->chg[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->nchg ? p->chg[lo] : p->T;
}

/* Instance i owns [initW_i, initW_{i+1}[ (Gainaru §3.2.1): computing on
 * [initW_i, endW_i[, then in its I/O window: IO where the bandwidth is > 0, WAIT
 * elsewhere. */
hs_pstate_t hs_pattern_state(const hs_pattern_t *p, int job, double t_in_period, int *instance)
{
    const hs_pinstance_t *in;
    size_t lo = 0, hi;
    double t, u;
    int i;

    if (instance)
        *instance = -1;
    if (bad_job(p, job))
        return HS_PSTATE_NONE;
    if (p->n[job] == 0)
        return HS_PSTATE_NONE;
    in = p->inst[job];
    t = norm_t(t_in_period, p->T);
    if (t < in[0].init_w) {
        i = p->n[job] - 1;
        u = t + p->T;
    } else {
        hi = (size_t)p->n[job];
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (in[mid].init_w <= t)
                lo = mid;
            else
                hi = mid;
        }
        i = (int)lo;
        u = t;
    }
    if (instance)
        *instance = i;
    if (u < in[i].end_w)
        return HS_PSTATE_COMPUTE;
    return hs_pattern_bw(p, job, t) > 0 ? HS_PSTATE_IO : HS_PSTATE_WAIT;
}
