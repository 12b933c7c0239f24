/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_periodic.c — periodic I/O schedules: Insert-In-Schedule-Throu/-Cong (Gainaru et
 * al., RR-8519 §3.2.3) and PerSched (Aupy, Gainaru, Le Fèvre, PMBS 2017).
 *
 * Symbols are those of doc/design.md §2: N nodes of bandwidth b, a shared
 * I/O system of bandwidth B; job k on beta_k nodes computes w_k then moves vol_k.
 *   cap_k     = min(beta_k b, B)            the most job k can ever get
 *   time_io_k = vol_k / cap_k               (Gainaru §2.1)
 *   rho_k     = w_k / (w_k + time_io_k)     (Gainaru §2.2)
 *   rho~_k    = n_per(k) w_k / T            (Gainaru §3.2, eq. (1))
 *
 * Representation while building (one "work" per period tried):
 *   - the bandwidth profile: breakpoints 0 = t[0] < t[1] < ... < t[S-1] < T, and
 *     used[i] = total bandwidth granted on [t[i], t[i+1][ (t[S] = T), kept in a
 *     gap buffer (TL_T(), TL_U()).  Every I/O piece lies inside one segment, so a
 *     segment's total is exact, and used[i] <= B always holds (Gainaru §3.2.1,
 *     constraint (ii)).  A bound on the used[] of each block of 64 entries of
 *     the arrays is kept in a tree for the first fit's long walks
 *     (hs_pp_bm_below()), by the profile's changes;
 *   - per job, its instances sorted by init_w (normalised into [0, T[), each with the
 *     span from init_w to the end of its I/O (w_k + I/O duration) and its pieces.
 * All times are kept normalised in [0, T[; "distances" along the circle are used for
 * the limits, so no unwrapped arithmetic perturbs the profile.
 *
 * The structures and the profile's accessors are in hs_periodic_model.h, the
 * profile's changes, its block maxima and the commit of an instance in
 * hs_periodic_profile.c, the first fit of Insert-In-Schedule in hs_periodic_ff.c,
 * the queries on a pattern in hs_pattern.c.
 *
 * Pure code: no I/O, no clock, no global state.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hs_periodic.h"
#include "hs_periodic_ff.h"
#include "hs_periodic_profile.h"
#include "policy.h" /* hs_errprintf(), hs_grow() */

/* ------------------------------------------------------------------ work */

static void work_free(struct work *wk)
{
    if (!wk)
        return;
    free(wk->t);
    free(wk->used);
    free(wk->bm);
    if (wk->job) {
        for (size_t k = 0; k < wk->K; k++) {
            free(wk->job[k].in);
            free(wk->job[k].cd);
        }
        free(wk->job);
    }
    free(wk->pool);
    free(wk->tmp);
    free(wk->ss);
    free(wk->rcand);
    memset(wk, 0, sizeof(*wk));
}

static int work_init(struct work *wk, size_t K)
{
    memset(wk, 0, sizeof(*wk));
    wk->K = K;
    wk->bmstale = true;
    wk->capseg = 64;
    if (!(wk->job = calloc(K, sizeof(*wk->job))) || !(wk->t = malloc(64 * sizeof(double)))
        || !(wk->used = malloc(64 * sizeof(double)))) {
        work_free(wk);
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* Empty pattern of period T: one segment [0, T[ with nothing granted. */
static void work_reset(struct work *wk, double T)
{
    wk->T = T;
    wk->teps = T * TIME_EPS;
    wk->nseg = 1;
    wk->t[0] = 0.;
    wk->used[0] = 0.;
    wk->gap = 1;
    wk->gaplen = wk->capseg - 1;
    wk->bmstale = true;
    wk->npool = 0;
    for (size_t k = 0; k < wk->K; k++) {
        wk->job[k].n = 0;
        wk->job[k].ncd = 0;
        wk->job[k].last = 0;
        wk->job[k].xmin = 0.;
        wk->job[k].active = true;
    }
}

/* ------------------------------------------------------------------ PerSched */

static int ss_cmp(const void *a, const void *b)
{
    const struct segsort *x = a, *y = b;

    if (x->a != y->a)
        return x->a < y->a ? 1 : -1; /* most available bandwidth first */
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Water-filling of one window [x, x + L[ (x a breakpoint): take the segments by
 * non-increasing avail_k, each fully (a partial one from its start), until vol_k is
 * covered.  Returns the I/O time D = sum of durations taken (-1 if vol_k does not
 * fit or D exceeds 'dbound', -3 if the budget refused a step); *span = furthest end, as a distance from x.  With
 * 'emit', the pieces go to wk->tmp. */
static double wf_window(struct work *wk, const struct ctx *c, size_t k, size_t nss, double x,
                        double L, double dbound, double *span, bool emit)
{
    double rem = c->jobs[k].volume, D = 0., far = 0.;

    wk->ntmp = 0;
    for (size_t s = 0; s < nss && rem > 0; s++) {
        size_t idx = wk->ss[s].idx;
        double a = wk->ss[s].a, ts = TL_T(wk, idx);
        double rel = dist_t(x, ts, wk->T);
        double len = seg_end(wk, idx) - ts, dur;

        if (!wk_charge(wk, 1))
            return -3;
        if (rel >= L + wk->teps)
            continue;
        if (len > L + wk->teps - rel)
            len = L + wk->teps - rel;
        if (rem <= a * len) {
            dur = rem / a;
            rem = 0;
        } else {
            dur = len;
            rem -= a * len;
        }
        D += dur;
        if (rel + dur > far)
            far = rel + dur;
        if (D > dbound)
            return -1;
        if (emit && hs_pp_tmp_push(wk, ts, fmin(ts + dur, seg_end(wk, idx)), a) < 0)
            return -2;
    }
    if (rem > 0)
        return -1;
    *span = far;
    return D;
}

/* Sort wk->tmp by distance from origin x (time order inside the window). */
static void tmp_sort_from(struct work *wk, double x)
{
    /* insertion sort: few pieces; the key is the distance from x on the circle */
    for (size_t i = 1; i < wk->ntmp; i++) {
        struct piece p = wk->tmp[i];
        double kp = dist_t(x, p.a, wk->T);
        size_t j = i;
        while (j > 0 && dist_t(x, wk->tmp[j - 1].a, wk->T) > kp) {
            wk->tmp[j] = wk->tmp[j - 1];
            j--;
        }
        wk->tmp[j] = p;
    }
}

/* PerSched, first instance of job k: water-filling.  The instance is alone in its
 * cycle, so its I/O must fit in a window [x, x + L[ with L = T - w_k, after its
 * compute chunk [x - w_k, x[.  Among windows starting at a breakpoint, take the one
 * whose water-filling needs the least I/O time D (= the highest mean bandwidth,
 * vol_k / D), then the shortest span, then the earliest x.  Shortcut: the global
 * water-filling over the whole period gives the least D of all; if its pieces fit in
 * one window of length L (T minus the largest circular hole between them), take it.
 * Returns 1, 0 (no room), -1 (ENOMEM). */
static int ps_first(struct work *wk, const struct ctx *c, size_t k)
{
    double w = c->jobs[k].w, T = wk->T, L = T - w;
    double bestD = INFINITY, bestspan = INFINITY, bestx = 0, span, D;
    size_t nss = 0, pos;
    int rc;
    bool found = false;

    if (L + wk->teps < c->tio[k])
        return 0;
    if (hs_grow(&wk->ss, &wk->capss, wk->nseg, sizeof(*wk->ss)) < 0)
        return -1;
    if (!wk_charge(wk, wk->nseg))
        return 0;
    for (size_t i = 0; i < wk->nseg; i++) {
        double a = seg_avail(wk, c, k, i);
        if (a > 0)
            wk->ss[nss++] = (struct segsort){ a, i };
    }
    if (!wk_charge(wk, wk_sortcost(nss)))
        return 0;
    qsort(wk->ss, nss, sizeof(*wk->ss), ss_cmp);

    /* global water-filling (window = the whole circle from 0) */
    D = wf_window(wk, c, k, nss, 0., T, INFINITY, &span, true);
    if (D == -2)
        return -1;
    if (D < 0)
        return 0; /* not enough bandwidth in the whole period */
    if (wk->ntmp > 0) {
        double maxhole = -1, start = 0;
        tmp_sort_from(wk, 0.);
        for (size_t i = 0; i < wk->ntmp; i++) {
            const struct piece *p = &wk->tmp[i], *q = &wk->tmp[(i + 1) % wk->ntmp];
            double hole = wk->ntmp == 1 ? T - (p->b - p->a) : dist_t(p->b, q->a, T);
            if (hole > maxhole) {
                maxhole = hole;
                start = q->a;
            }
        }
        if (T - maxhole <= L + wk->teps) {
            found = true;
            bestx = start;
            bestD = D;
        }
    }
    if (!found) {
        for (size_t i = 0; i < wk->nseg; i++) {
            double x = TL_T(wk, i);
            D = wf_window(wk, c, k, nss, x, L, bestD * (1 + 1e-12), &span, false);
            if (wk->truncated)
                return 0;
            if (D < 0)
                continue;
            if (D < bestD * (1 - 1e-12) || (D <= bestD * (1 + 1e-12) && span < bestspan)) {
                bestD = D;
                bestspan = span;
                bestx = x;
                found = true;
            }
        }
        if (!found)
            return 0;
    }
    D = wf_window(wk, c, k, nss, bestx, L, INFINITY, &span, true);
    if (D == -2)
        return -1;
    if (D < 0 || wk->ntmp == 0)
        return 0;
    if (!wk_charge(wk, wk_sortcost(wk->ntmp)))
        return 0;
    tmp_sort_from(wk, bestx);
    span = dist_t(bestx, wk->tmp[wk->ntmp - 1].a, T)
           + (wk->tmp[wk->ntmp - 1].b - wk->tmp[wk->ntmp - 1].a);
    if ((rc = hs_pp_commit_instance(wk, k, norm_t(bestx - w, T), w + span, false, &pos)) != 0)
        return rc < 0 ? -1 : 0;
    wk->job[k].last = pos;
    return 1;
}

/* PerSched, later instances of job k: right after the last one inserted.  Its compute
 * starts when that instance's I/O ends, g0; its I/O starts at g0 + w_k and takes, in
 * time order, all the bandwidth left: avail_k(t) = min(cap_k, B - used(t)), until
 * vol_k is moved, and must end before the next instance computes (g0 + gap).
 * Returns 1, 0 (no room), -1 (ENOMEM). */
static int ps_next(struct work *wk, const struct ctx *c, size_t k)
{
    struct wjob *j = &wk->job[k];
    const struct winst *li = &j->in[j->last];
    double w = c->jobs[k].w, T = wk->T;
    double gap = hs_pp_inst_room(wk, j, j->last) - li->span;
    double lmax = gap - w, rem = c->jobs[k].volume, dist = 0., cur;
    double g0 = li->io_end;
    size_t idx, pos;
    int rc;

    if (lmax + wk->teps < c->tio[k])
        return 0;
    wk->ntmp = 0;
    cur = norm_t(g0 + w, T);
    idx = tl_find(wk, cur);
    for (size_t steps = 0; steps <= wk->nseg && rem > 0; steps++) {
        double se = seg_end(wk, idx), len = se - cur;
        double room = lmax + wk->teps - dist;
        double a = seg_avail(wk, c, k, idx);

        if (!wk_charge(wk, 1))
            return 0;
        if (room <= 0)
            return 0;
        if (a > 0) {
            double usable = len < room ? len : room;
            if (rem <= a * usable) {
                double dur = rem / a;
                if (hs_pp_tmp_push(wk, cur, fmin(cur + dur, se), a) < 0)
                    return -1;
                dist += dur;
                rem = 0;
                break;
            }
            if (usable < len)
                return 0;
            if (hs_pp_tmp_push(wk, cur, se, a) < 0)
                return -1;
            rem -= a * len;
        }
        dist += len;
        cur = se;
        if (++idx == wk->nseg) {
            idx = 0;
            cur = 0.;
        }
    }
    if (rem > 0 || wk->ntmp == 0)
        return 0;
    if ((rc = hs_pp_commit_instance(wk, k, g0, w + dist, false, &pos)) != 0)
        return rc < 0 ? -1 : 0;
    j->last = pos;
    return 1;
}

/* ------------------------------------------------------------------ heuristics */

/* Job with the worst current dilation: the least n_per(k) (w_k + time_io_k), that is
 * the least rho~_k / rho_k = n_per(k) (w_k + time_io_k) / T.  Ties: PerSched takes
 * the largest w_k / time_io_k (PMBS 2017 code), Cong the smallest (the Throu order),
 * then the lowest index.  Returns K when no job is left. */
static size_t pick_worst(const struct work *wk, const struct ctx *c, bool persched)
{
    size_t best = c->K;
    double bv = INFINITY;

    for (size_t k = 0; k < c->K; k++) {
        double v;
        if (!wk->job[k].active)
            continue;
        v = (double)wk->job[k].n * (c->jobs[k].w + c->tio[k]);
        if (best == c->K || v < bv * (1 - 1e-12)) {
            best = k;
            bv = v;
        } else if (v <= bv * (1 + 1e-12)) {
            bool better = persched ? c->ratio[k] > c->ratio[best] : c->ratio[k] < c->ratio[best];
            if (better) {
                best = k;
                bv = v;
            }
        }
    }
    return best;
}

/* Objectives of the pattern (Gainaru §2.2 with eq. (1)):
 *   SysEfficiency = (1/N) sum_k beta_k n_per(k) w_k / T
 *   Dilation      = max_k rho_k / rho~_k = max_k T / (n_per(k) (w_k + time_io_k)) */
static void work_eval(struct work *wk, const struct ctx *c)
{
    wk->W = 0;
    wk->dil = 0;
    wk->nsched = 0;
    wk->ninst = 0;
    for (size_t k = 0; k < c->K; k++) {
        size_t n = wk->job[k].n;
        wk->W += (double)c->jobs[k].nodes * (double)n * c->jobs[k].w;
        wk->ninst += (int)n;
        if (n > 0) {
            double d = wk->T / ((double)n * (c->jobs[k].w + c->tio[k]));
            wk->nsched++;
            if (d > wk->dil)
                wk->dil = d;
        } else
            wk->dil = INFINITY;
    }
    wk->sys = wk->W / ((double)c->N * wk->T);
}

/* Is the budget of this build spent?  Then it keeps the instances it has: a
 * pattern with fewer instances than fit is still a valid one (every instance
 * was placed within the bandwidth left by the earlier ones). */
static bool spent(struct work *wk)
{
    if (wk->truncated)
        return true;
    if (wk->budget == 0 || wk->visits < wk->budget)
        return false;
    wk->truncated = true;
    return true;
}

/* Build the pattern of period T with the chosen heuristic (Gainaru §3.2.3: "greedily
 * add instances of the applications until no more instance can fit"). */
static int build(struct work *wk, const struct ctx *c, double T)
{
    int rc = 0;

    work_reset(wk, T);
    wk->truncated = false;
    /* the reset and the evaluation: a pass over the jobs each */
    (void)wk_charge(wk, 1 + 2 * (uint64_t)c->K / WK_JOBS);
    wk->reference = c->prm.reference;
    wk->jump = !wk->reference && c->prm.heuristic == HS_PERIODIC_THROU;
    switch (c->prm.heuristic) {
    case HS_PERIODIC_THROU:
        /* non-decreasing w_k / time_io_k; as many instances of each as fit */
        for (size_t o = 0; o < c->K && !spent(wk); o++) {
            while (!spent(wk) && (rc = hs_pp_ff_insert(wk, c, c->order[o])) == 1)
                (void)wk_charge(wk, 1);
            if (rc < 0)
                return -1;
        }
        break;
    case HS_PERIODIC_CONG:
    case HS_PERIODIC_PERSCHED: {
        bool ps = c->prm.heuristic == HS_PERIODIC_PERSCHED;
        size_t k;
        /* pick_worst(): a pass over the jobs */
        while (!spent(wk) && wk_charge(wk, 1 + (uint64_t)c->K / WK_JOBS)
               && (k = pick_worst(wk, c, ps)) < c->K) {
            if (ps)
                rc = wk->job[k].n == 0 ? ps_first(wk, c, k) : ps_next(wk, c, k);
            else
                rc = hs_pp_ff_insert(wk, c, k);
            if (rc < 0)
                return -1;
            if (rc == 0)
                wk->job[k].active = false;
        }
        break;
    }
    }
    work_eval(wk, c);
    return 0;
}

/* Is 'a' a better pattern than 'b'?  First the number of jobs with at least one
 * instance (a job left out would starve), then the heuristic's objective: Dilation
 * (then SysEfficiency) for Cong, SysEfficiency for Throu and PerSched.  Ties keep b,
 * the shorter period already found. */
static bool better(const struct work *a, const struct work *b, const struct ctx *c)
{
    if (a->nsched != b->nsched)
        return a->nsched > b->nsched;
    if (c->prm.heuristic == HS_PERIODIC_CONG) {
        if (a->dil < b->dil * (1 - CMP_EPS))
            return true;
        if (a->dil > b->dil * (1 + CMP_EPS))
            return false;
    }
    return a->sys > b->sys * (1 + CMP_EPS);
}

/* ------------------------------------------------------------------ export */

static int piece_cmp(const void *a, const void *b)
{
    const hs_ppiece_t *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

static int dbl_cmp(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (*x > *y) - (*x < *y);
}

/* Unwrapped pieces of instance i of job k into 'out' (touching pieces with the same
 * bandwidth merged): start = init_w + distance(init_w, a) (Gainaru §3.2.1: the I/O of
 * instance i lies in [endW_i, initW_{i+1}[).  Returns the count. */
static size_t export_pieces(const struct work *wk, const struct winst *in, hs_ppiece_t *out)
{
    size_t np = 0;

    for (size_t q = 0; q < in->np; q++) {
        const struct piece *s = &wk->pool[in->p0 + q];
        double ua = in->init_w + dist_t(in->init_w, s->a, wk->T);
        double ub = ua + (s->b - s->a);

        if (np > 0 && out[np - 1].bw == s->bw && fabs(out[np - 1].end - ua) <= wk->teps) {
            out[np - 1].end = ub;
            continue;
        }
        out[np++] = (hs_ppiece_t){ ua, ub, s->bw };
    }
    qsort(out, np, sizeof(*out), piece_cmp);
    return np;
}

/* Normalised pieces of job k, sorted, touching equal ones merged (for replay). */
static size_t export_replay(const struct work *wk, const struct wjob *j, hs_ppiece_t *out)
{
    size_t raw = 0, r = 0;

    for (size_t i = 0; i < j->n; i++) {
        for (size_t q = 0; q < j->in[i].np; q++) {
            const struct piece *s = &wk->pool[j->in[i].p0 + q];
            out[raw++] = (hs_ppiece_t){ s->a, s->b, s->bw };
        }
    }
    qsort(out, raw, sizeof(*out), piece_cmp);
    for (size_t q = 0; q < raw; q++) {
        if (r > 0 && out[r - 1].bw == out[q].bw && out[r - 1].end == out[q].start) {
            out[r - 1].end = out[q].end;
            continue;
        }
        out[r++] = out[q];
    }
    return r;
}

static hs_pattern_t *export_pattern(const struct work *wk, const struct ctx *c)
{
    hs_pattern_t *p;
    double T = wk->T;
    size_t ninst = 0, npc = 0, used = 0, nk = 0, nchg = 0, u = 0;

    if (!(p = calloc(1, sizeof(*p))))
        return NULL;
    p->T = T;
    p->K = (int)c->K;
    for (size_t k = 0; k < c->K; k++) {
        ninst += wk->job[k].n;
        for (size_t i = 0; i < wk->job[k].n; i++)
            npc += wk->job[k].in[i].np;
    }
    if (!(p->w = calloc(c->K, sizeof(*p->w))) || !(p->n = calloc(c->K, sizeof(*p->n)))
        || !(p->inst = calloc(c->K, sizeof(*p->inst))) || !(p->rep = calloc(c->K, sizeof(*p->rep)))
        || !(p->nrep = calloc(c->K, sizeof(*p->nrep)))
        || !(p->pieces = calloc(npc + 1, sizeof(*p->pieces)))
        || !(p->repstore = calloc(npc + 1, sizeof(*p->repstore)))
        || !(p->chg = calloc(1 + 2 * ninst + 2 * npc, sizeof(*p->chg))))
        goto error;
    p->chg[nchg++] = 0.;
    for (size_t k = 0; k < c->K; k++) {
        const struct wjob *j = &wk->job[k];

        p->w[k] = c->jobs[k].w;
        p->n[k] = (int)j->n;
        if (j->n == 0)
            continue;
        if (!(p->inst[k] = calloc(j->n, sizeof(*p->inst[k]))))
            goto error;
        for (size_t i = 0; i < j->n; i++) {
            hs_pinstance_t *o = &p->inst[k][i];
            size_t np = export_pieces(wk, &j->in[i], p->pieces + used);

            o->init_w = j->in[i].init_w;
            o->end_w = o->init_w + c->jobs[k].w;
            o->next_w = o->init_w + hs_pp_inst_room(wk, j, i);
            o->pieces = p->pieces + used;
            o->npieces = np;
            o->io_start = np ? o->pieces[0].start : o->end_w;
            o->io_end = np ? o->pieces[np - 1].end : o->end_w;
            used += np;
            p->chg[nchg++] = o->init_w;
            p->chg[nchg++] = norm_t(o->end_w, T);
        }
        p->rep[k] = p->repstore + nk;
        p->nrep[k] = export_replay(wk, j, p->rep[k]);
        for (size_t q = 0; q < p->nrep[k]; q++) {
            p->chg[nchg++] = p->rep[k][q].start;
            if (p->rep[k][q].end < T)
                p->chg[nchg++] = p->rep[k][q].end;
        }
        nk += p->nrep[k];
    }
    qsort(p->chg, nchg, sizeof(double), dbl_cmp);
    for (size_t i = 0; i < nchg; i++) {
        if (u == 0 || p->chg[i] != p->chg[u - 1])
            p->chg[u++] = p->chg[i];
    }
    p->nchg = u;
    p->st.period = T;
    p->st.sys_efficiency = wk->sys;
    p->st.dilation = wk->dil;
    p->st.jobs_unscheduled = (int)c->K - wk->nsched;
    p->st.instances = wk->ninst;
    return p;
error:
    hs_pattern_destroy(p);
    errno = ENOMEM;
    return NULL;
}

/* ------------------------------------------------------------------ API */

int hs_periodic_params_init(hs_periodic_params_t *prm, hs_periodic_heuristic_t h)
{
    if (!prm || (h != HS_PERIODIC_THROU && h != HS_PERIODIC_CONG && h != HS_PERIODIC_PERSCHED)) {
        errno = EINVAL;
        return -1;
    }
    prm->heuristic = h;
    prm->epsilon = 0.01;    /* PMBS 2017: epsilon = 1/100 */
    prm->tmax_factor = 10.; /* PMBS 2017: T_max = 10 T_min */
    prm->refine = h == HS_PERIODIC_PERSCHED;
    prm->tmin = 0.; /* computed: max_k (w_k + time_io_k) */
    prm->reference = false;
    prm->max_work = 0;
    return 0;
}

int hs_periodic_from_policy(hs_policy_kind_t kind, hs_periodic_heuristic_t *h)
{
    hs_periodic_heuristic_t v;

    switch (kind) {
    case HS_POL_PERIODIC_THROU:
        v = HS_PERIODIC_THROU;
        break;
    case HS_POL_PERIODIC_CONG:
        v = HS_PERIODIC_CONG;
        break;
    case HS_POL_PERSCHED:
        v = HS_PERIODIC_PERSCHED;
        break;
    default:
        errno = EINVAL;
        return -1;
    }
    if (!h) {
        errno = EINVAL;
        return -1;
    }
    *h = v;
    return 0;
}

static int check_input(const hs_platform_t *plat, const hs_pjob_t *jobs, size_t njobs,
                       const hs_periodic_params_t *prm, hu_error_t *err)
{
    if (!plat || !jobs || !prm)
        return hs_errprintf(err, EINVAL, "periodic: NULL argument");
    if (plat->nodes < 1)
        return hs_errprintf(err, EINVAL, "periodic: platform nodes must be >= 1");
    if (!(plat->node_bw > 0) || !isfinite(plat->node_bw))
        return hs_errprintf(err, EINVAL, "periodic: node bandwidth b must be > 0");
    if (!(plat->bw > 0) || !isfinite(plat->bw))
        return hs_errprintf(err, EINVAL, "periodic: I/O bandwidth B must be > 0");
    if (njobs == 0 || njobs > (size_t)1 << 24)
        return hs_errprintf(err, EINVAL, "periodic: need 1..%d jobs", 1 << 24);
    if (prm->heuristic != HS_PERIODIC_THROU && prm->heuristic != HS_PERIODIC_CONG
        && prm->heuristic != HS_PERIODIC_PERSCHED)
        return hs_errprintf(err, EINVAL, "periodic: unknown heuristic %d", (int)prm->heuristic);
    if (!(prm->epsilon > 0) || prm->epsilon > 1)
        return hs_errprintf(err, EINVAL, "periodic: epsilon must be in ]0, 1]");
    if (!(prm->tmax_factor >= 1) || prm->tmax_factor > 1e6)
        return hs_errprintf(err, EINVAL, "periodic: Tmax factor must be in [1, 1e6]");
    if (!(prm->tmin >= 0) || !isfinite(prm->tmin))
        return hs_errprintf(err, EINVAL,
                            "periodic: T_min must be a finite number >= 0 "
                            "(0: computed)");
    for (size_t k = 0; k < njobs; k++) {
        if (jobs[k].nodes < 1)
            return hs_errprintf(err, EINVAL, "periodic: job %zu: nodes must be >= 1", k);
        if (!(jobs[k].w > 0) || !isfinite(jobs[k].w))
            return hs_errprintf(err, EINVAL, "periodic: job %zu: w must be > 0", k);
        if (!(jobs[k].volume > 0) || !isfinite(jobs[k].volume))
            return hs_errprintf(err, EINVAL, "periodic: job %zu: volume must be > 0", k);
    }
    return 0;
}

static int ratio_cmp_ctx_less(const struct ctx *c, size_t a, size_t b)
{
    if (c->ratio[a] != c->ratio[b])
        return c->ratio[a] < c->ratio[b];
    return a < b;
}

/* Period search (Gainaru §3.2.3; PMBS 2017):
 *   T_min = max_k (w_k + time_io_k),  T_max = K' T_min,
 *   T_i = T_min (1 + epsilon)^i  for i = 0, 1, ... while T_i <= T_max,
 * keep the best pattern (better()).  Then, if prm->refine (PerSched's refinement),
 *   delta = (T_opt - T_opt / (1 + epsilon)) / floor(1 / epsilon),
 *   T = T_opt - j delta, j = 1 .. floor(1 / epsilon), T >= max_k (w_k + time_io_k)
 *   (which is T_min unless prm->tmin gave another one),
 * keeping each pattern whose work per period sum_k beta_k n_per(k) w_k (and number of
 * jobs served) is still that of T_opt (its SysEfficiency is then higher), and stopping
 * at the first one that loses work.
 * Complexity: (log K' / log(1 + epsilon) + 1/epsilon) patterns, each of
 * sum_k n_per(k) insertions; see doc/periodic.md. */
/* What is left of the budget for the next build (sets its limit); 0 when spent,
 * UINT64_MAX when unbounded. */
static uint64_t budget_left(const hs_periodic_params_t *prm, uint64_t visits, struct work *wk)
{
    if (prm->max_work == 0) {
        wk->budget = 0;
        return UINT64_MAX;
    }
    wk->budget = visits < prm->max_work ? prm->max_work - visits : 0;
    return wk->budget;
}

hs_pattern_t *hs_pattern_compute(const hs_platform_t *plat, const hs_pjob_t *jobs, size_t njobs,
                                 const hs_periodic_params_t *prm, hu_error_t *err)
{
    struct ctx c = { 0 };
    struct work wa = { 0 }, wb = { 0 };
    struct work *cur = &wa, *best = &wb, *swp;
    hs_pattern_t *p = NULL;
    double tmin = 0, tmax, topt, ul = 0, tfloor;
    int tried = 0, refined = 0;
    uint64_t visits = 0;
    bool have = false, hit = false;

    if (check_input(plat, jobs, njobs, prm, err) < 0)
        return NULL;
    c.K = njobs;
    c.jobs = jobs;
    c.N = plat->nodes;
    c.B = plat->bw;
    c.prm = *prm;
    if (!(c.cap = calloc(njobs, sizeof(double))) || !(c.tio = calloc(njobs, sizeof(double)))
        || !(c.ratio = calloc(njobs, sizeof(double))) || !(c.order = calloc(njobs, sizeof(size_t))))
        goto nomem;
    for (size_t k = 0; k < njobs; k++) {
        double bk = (double)jobs[k].nodes * plat->node_bw;
        c.cap[k] = bk < c.B ? bk : c.B;       /* min(beta_k b, B) */
        c.tio[k] = jobs[k].volume / c.cap[k]; /* time_io_k */
        c.ratio[k] = jobs[k].w / c.tio[k];
        if (jobs[k].w + c.tio[k] > tmin)
            tmin = jobs[k].w + c.tio[k];
        ul += jobs[k].nodes * (jobs[k].w / (jobs[k].w + c.tio[k]));
        /* insertion sort of the Throu order (stable: ties by index) */
        size_t pos = k;
        while (pos > 0 && ratio_cmp_ctx_less(&c, k, c.order[pos - 1])) {
            c.order[pos] = c.order[pos - 1];
            pos--;
        }
        c.order[pos] = k;
    }
    tfloor = tmin; /* the refinement never goes below this */
    if (prm->tmin > 0)
        tmin = prm->tmin; /* the search starts where the caller says */
    if (!isfinite(tmin))
        goto toolarge;
    tmax = prm->tmax_factor * tmin;
    if (work_init(&wa, njobs) < 0 || work_init(&wb, njobs) < 0)
        goto nomem;

    for (int i = 0;; i++) {
        double T = tmin * pow(1 + prm->epsilon, i);
        if (T > tmax * (1 + 1e-12) || (i > 0 && !(T > cur->T)))
            break;
        if (have && (budget_left(prm, visits, cur) == 0 || hit)) {
            hit = true;
            break; /* the best so far is the answer */
        }
        if (!have)
            (void)budget_left(prm, visits, cur);
        if (build(cur, &c, T) < 0)
            goto nomem;
        tried++;
        visits += cur->visits;
        cur->visits = 0;
        hit = hit || cur->truncated;
        if (!have || better(cur, best, &c)) {
            swp = cur;
            cur = best;
            best = swp;
            have = true;
        }
    }
    topt = best->T;
    if (prm->refine) {
        int nref = (int)floor(1. / prm->epsilon + 1e-9);
        double delta = (topt - topt / (1 + prm->epsilon)) / nref;
        double W0 = best->W;
        int n0 = best->nsched;

        for (int j = 1; j <= nref; j++) {
            double T = topt - j * delta;
            if (T < tfloor * (1 - 1e-12))
                break;
            if ((hit = hit || budget_left(prm, visits, cur) == 0))
                break;
            if (build(cur, &c, T) < 0)
                goto nomem;
            if (cur->truncated) {
                visits += cur->visits;
                cur->visits = 0;
                hit = true;
                break; /* a partial pattern never replaces the best */
            }
            tried++;
            refined++;
            visits += cur->visits;
            cur->visits = 0;
            if (cur->nsched < n0 || cur->W < W0 * (1 - CMP_EPS))
                break;
            swp = cur;
            cur = best;
            best = swp;
        }
    }
    if (!(p = export_pattern(best, &c)))
        goto nomem;
    p->st.tmin = tmin;
    p->st.tmax = tmax;
    p->st.t_search = topt;
    p->st.upper_limit = ul / c.N;
    p->st.periods_tried = tried;
    p->st.refine_steps = refined;
    p->st.segments_visited = visits;
    p->st.budget_hit = hit;
    goto out;
toolarge:
    hs_errprintf(err, EINVAL, "periodic: T_min is not finite");
    goto out;
nomem:
    hs_errprintf(err, ENOMEM, "periodic: out of memory");
out: /* p is NULL unless it succeeded */
    work_free(&wa);
    work_free(&wb);
    free(c.cap);
    free(c.tio);
    free(c.ratio);
    free(c.order);
    return p;
}
