/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_pol_periodic.c — the periodic policies periodic-throu, periodic-cong and
 * persched plugged into the scheduler (doc/periodic.md §8).
 *
 * A pattern (hs_periodic.c) is computed for the live job mix from the jobs' hints
 * (w, volume), anchored at the time t0 of its computation, and replayed: at time t
 * a pending phase of job k gets hs_pattern_bw(p, k, (t - t0) mod T), capped by what
 * it can use; a phase asked outside its job's planned I/O waits for it.  The pattern
 * is recomputed when the mix changes (a job arrives or leaves), at the next
 * decision.  Jobs without usable hints, and jobs the pattern gives no instance,
 * share what the pattern leaves unused at that instant (max-min fair); so does a
 * phase left with a crumb (<= CRUMB of its volume) at the end of its slot, so that
 * rounding never costs a whole period.
 *
 * With a buffer tier the pattern is still computed on the PFS bandwidth B (the
 * papers' model has no buffers: it paces the writes at what the PFS absorbs); the
 * core calls decide() per buffer node with that node's BW(c), and a phase striped
 * over m nodes gets 1/m of its job's planned rate on each (scaled down when a node
 * cannot carry the sum).
 *
 * Pure: no clock.  The cost of each pattern is reported clock-free
 * (hs_sched_policy_stats(): segments visited); a driver times the decisions.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsched.h"
#include "policy.h"
#include "hs_periodic.h"

#define CRUMB 1e-6 /* a phase this close to done finishes on leftovers */
#define SNAP 1e-9  /* instants this close (relative to T) are one */

struct pjob {
    uint64_t id;
    int index; /* in the pattern, -1: not in it (no usable hints) */
};

struct pstate {
    hs_periodic_params_t prm;
    hs_platform_t plat; /* N, b, B of the scheduler; no buffers */
    const hs_sched_t *sched;
    hs_pattern_t *p;
    double t0; /* absolute time of the pattern's origin */
    double T;
    struct pjob *jobs; /* the mix the pattern was computed for, by id */
    size_t njobs, capjobs;
    hs_pjob_t *pj;
    size_t cappj;
    bool have; /* jobs[] describes a computed mix */
    /* decision scratch */
    size_t *idx;
    double *w;
    hs_wf_item_t *wsc;
    size_t capscratch;
    /* statistics */
    hs_policy_stats_t st;
    int best_jobs;
};

static int cmp_pjob(const void *a, const void *b)
{
    const struct pjob *x = a;
    const struct pjob *y = b;

    return (x->id > y->id) - (x->id < y->id);
}

static const struct pjob *find_job(const struct pstate *ps, uint64_t id)
{
    struct pjob key = { .id = id };

    if (ps->njobs == 0)
        return NULL;
    return bsearch(&key, ps->jobs, ps->njobs, sizeof(*ps->jobs), cmp_pjob);
}

static int p_create(const hs_ctx_t *ctx, void **state, hu_error_t *err)
{
    struct pstate *ps;
    hs_periodic_heuristic_t h;

    if (hs_periodic_from_policy(ctx->pol->kind, &h) < 0)
        return hs_errprintf(err, EINVAL, "not a periodic policy");
    if (!(ps = calloc(1, sizeof(*ps))))
        return hs_errprintf(err, ENOMEM, "out of memory");
    (void)hs_periodic_params_init(&ps->prm, h);
    if (ctx->pol->period_min > 0 && isfinite(ctx->pol->period_min))
        ps->prm.tmin = ctx->pol->period_min;
    /* every decision is bounded: UINT64_MAX is "no bound" (reproductions) */
    ps->prm.max_work = ctx->pol->max_work == UINT64_MAX ? 0
                       : ctx->pol->max_work             ? ctx->pol->max_work
                                                        : HS_PERIODIC_MAX_WORK;
    ps->plat.nodes = ctx->plat->nodes;
    ps->plat.node_bw = ctx->plat->node_bw;
    ps->plat.bw = ctx->plat->bw;
    ps->sched = ctx->sched;
    hs_policy_stats_reset(&ps->st);
    ps->st.plans = true;
    *state = ps;
    return 0;
}

static void p_destroy(void *state)
{
    struct pstate *ps = state;
    int saved = errno;

    if (ps) {
        hs_pattern_destroy(ps->p);
        free(ps->jobs);
        free(ps->pj);
        free(ps->idx);
        free(ps->w);
        free(ps->wsc);
        free(ps);
    }
    errno = saved;
}

/* Does the live mix differ from the one the pattern was computed for? */
static bool mix_changed(const struct pstate *ps, const hs_sched_t *s)
{
    size_t n = hs_core_njobs(s), i;

    if (!ps->have || n != ps->njobs)
        return true;
    for (i = 0; i < n; i++) {
        const hs_job_t *j = hs_core_job(s, i);
        if (!j || !find_job(ps, j->id))
            return true;
    }
    return false;
}

/* Hints of a job for the pattern: w > 0 and volume > 0, w from w_iter if needed. */
static bool job_hints(const struct pstate *ps, const hs_job_t *j, hs_pjob_t *pj)
{
    double cap = fmin(j->nodes * ps->plat.node_bw, ps->plat.bw);
    double w = j->w;

    if (!(j->volume > 0) || !isfinite(j->volume))
        return false;
    if (!(w > 0) && j->w_iter > 0)
        w = j->w_iter - j->volume / cap;
    if (!(w > 0) || !isfinite(w))
        return false;
    pj->nodes = j->nodes;
    pj->w = w;
    pj->volume = j->volume;
    return true;
}

/* Compute the pattern of the live mix, anchored at 'now'. */
static int rebuild(struct pstate *ps, const hs_sched_t *s, double now)
{
    size_t n = hs_core_njobs(s), i;
    size_t K = 0;
    hs_pattern_t *p = NULL;
    hu_error_t err;

    ps->have = false; /* until this succeeds */
    if (hs_grow(&ps->jobs, &ps->capjobs, n + 1, sizeof(*ps->jobs)) < 0
        || hs_grow(&ps->pj, &ps->cappj, n + 1, sizeof(*ps->pj)) < 0)
        return -1;
    for (i = 0; i < n; i++) {
        ps->jobs[i].id = hs_core_job(s, i)->id;
        ps->jobs[i].index = (int)i; /* the core's index, for now */
    }
    if (n > 1)
        qsort(ps->jobs, n, sizeof(*ps->jobs), cmp_pjob);
    /* pattern indices in id order, so the pattern does not depend on the core's
     * internal order of its live jobs */
    for (i = 0; i < n; i++) {
        const hs_job_t *j = hs_core_job(s, (size_t)ps->jobs[i].index);
        ps->jobs[i].index = -1;
        if (j && job_hints(ps, j, &ps->pj[K]))
            ps->jobs[i].index = (int)K++;
    }
    if (K > 0) {
        hs_pattern_stats_t pst;
        if (!(p = hs_pattern_compute(&ps->plat, ps->pj, K, &ps->prm, &err)))
            return -1;
        (void)hs_pattern_stats(p, &pst);
        ps->st.schedules++;
        ps->st.work += (double)pst.segments_visited;
        ps->st.work_max = fmax(ps->st.work_max, (double)pst.segments_visited);
        ps->st.period_last = pst.period;
        if (pst.budget_hit)
            ps->st.budget_hits++;
        if ((int)K > ps->best_jobs) {
            ps->best_jobs = (int)K;
            ps->st.period = pst.period;
            ps->st.period_tmin = pst.tmin;
            ps->st.period_jobs = (int)K;
            ps->st.period_unscheduled = pst.jobs_unscheduled;
            ps->st.period_sys_efficiency = pst.sys_efficiency;
            ps->st.period_dilation = pst.dilation;
        }
    } else
        ps->st.period_last = NAN;
    hs_pattern_destroy(ps->p);
    ps->p = p;
    ps->T = p ? hs_pattern_period(p) : 0;
    ps->t0 = now;
    ps->njobs = n;
    ps->have = true;
    ps->st.jobs_fallback = (int)(n - K);
    return 0;
}

/* Position in the period at absolute time 'now', snapped forward onto a change
 * instant (or the period's end) when within rounding of it, so that a decision at
 * the time next_event() returned sees the new state.  *raw (if not NULL): the
 * position before the snap. */
static double period_pos(const struct pstate *ps, double now, double *raw)
{
    double T = ps->T;
    double tol = fmax(SNAP * T, 4 * fabs(now) * 2.2e-16);
    double u = fmod(now - ps->t0, T);
    double c;

    if (u < 0)
        u += T;
    if (raw)
        *raw = u;
    if (u >= T - tol)
        return 0;
    /* change instants closer than tol to each other count as one */
    for (c = hs_pattern_next_change(ps->p, u); c - u <= tol; c = hs_pattern_next_change(ps->p, u)) {
        if (c >= T - tol)
            return 0;
        u = c;
    }
    return u;
}

/* The bandwidth of job k's piece the snap of period_pos() stepped over, from the
 * raw position u0 to u: a piece shorter than the snap (SNAP x T: a job with a few
 * bytes to move) would otherwise never be granted, every decision landing past it,
 * and its job would wait for ever while the replay steps through the pattern's
 * instants.  Granted at the decision that skips it, the phase moves its bytes at
 * that rate (its completion is an event of the core).  0 when the snap moved
 * nothing or skipped no piece of k. */
static double skipped_bw(const struct pstate *ps, int k, double now, double u0, double u)
{
    double T = ps->T, a, b = u;
    /* the rounding of the raw position: the piece may start just before it */
    double r = fmin(SNAP * T, 8 * (fabs(now) + T) * 2.2e-16);

    if (u == u0)
        return 0;
    if (u < u0)
        b = T; /* snapped onto the period's end */
    a = u0 - r > 0 ? u0 - r : 0;
    return hs_pattern_bw_within(ps->p, k, a, b);
}

static int scratch(struct pstate *ps, size_t n)
{
    size_t c1 = ps->capscratch, c2 = ps->capscratch, c3 = ps->capscratch;

    if (n <= ps->capscratch)
        return 0;
    if (hs_grow(&ps->idx, &c1, n, sizeof(*ps->idx)) < 0
        || hs_grow(&ps->w, &c2, n, sizeof(*ps->w)) < 0
        || hs_grow(&ps->wsc, &c3, n, sizeof(*ps->wsc)) < 0)
        return -1;
    ps->capscratch = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    return 0;
}

static int p_decide(void *state, const hs_ctx_t *ctx, hs_view_t *v, size_t n)
{
    struct pstate *ps = state;
    double B = ctx->plat->bw;
    double u = 0, u0 = 0, sum = 0;
    size_t i, nf = 0;

    if (mix_changed(ps, ctx->sched) && rebuild(ps, ctx->sched, ctx->now) < 0)
        return -1;
    if (scratch(ps, n) < 0)
        return -1;
    if (ps->p)
        u = period_pos(ps, ctx->now, &u0);
    for (i = 0; i < n; i++) {
        const struct pjob *pj;
        double m, bw;
        if (v[i].complete)
            continue;
        pj = find_job(ps, v[i].id);
        if (!pj || pj->index < 0 || !ps->p || hs_pattern_ninstances(ps->p, pj->index) <= 0) {
            ps->idx[nf++] = i; /* not in the pattern: leftovers */
            continue;
        }
        m = v[i].nplace > 0 ? (double)v[i].nplace : 1.;
        bw = hs_pattern_bw(ps->p, pj->index, u) / m;
        if (!(bw > 0))
            bw = skipped_bw(ps, pj->index, ctx->now, u0, u) / m;
        if (!(bw > 0)) {
            if (v[i].remaining <= CRUMB * v[i].volume)
                ps->idx[nf++] = i; /* a crumb: leftovers too */
            continue;
        }
        v[i].bw = fmin(v[i].cap, bw);
        sum += v[i].bw;
    }
    if (sum > B) { /* a node slower than the plan */
        double f = B / sum;
        sum = 0;
        for (i = 0; i < n; i++) {
            v[i].bw *= f;
            sum += v[i].bw;
        }
    }
    for (i = 0; i < n; i++) {
        if (v[i].bw > 0) {
            v[i].weight = v[i].bw / B;
            v[i].start = ctx->now;
        }
    }
    if (nf > 0 && B - sum > B * 1e-12) {
        for (i = 0; i < nf; i++)
            ps->w[i] = 1.;
        (void)hs_alloc_waterfill(v, ps->idx, ps->w, nf, fmin(B, B - sum), ps->wsc);
        for (i = 0; i < nf; i++) {
            hs_view_t *x = &v[ps->idx[i]];
            if (x->bw > 0) {
                x->weight = x->bw / B;
                x->start = ctx->now;
            }
        }
    }
    return 0;
}

static double p_next_event(const void *state, double now)
{
    const struct pstate *ps = state;
    double u, c;

    if (!ps || !ps->p || hs_sched_npending(ps->sched) == 0)
        return INFINITY;
    u = period_pos(ps, now, NULL);
    c = hs_pattern_next_change(ps->p, u);
    if (!(c > u))
        return INFINITY;
    return fmax(now + (c - u), nextafter(now, INFINITY));
}

static void p_stats(const void *state, hs_policy_stats_t *st)
{
    const struct pstate *ps = state;

    if (ps)
        *st = ps->st;
}

const hs_policy_ops_t hs_ops_periodic = {
    .name = "periodic",
    .create = p_create,
    .destroy = p_destroy,
    .decide = p_decide,
    .next_event = p_next_event,
    .places = false,
    .stats = p_stats,
};

/* vi: ts=4 sw=4 expandtab
 */
