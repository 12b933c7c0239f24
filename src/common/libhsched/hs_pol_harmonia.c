/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_pol_harmonia.c — the five Harmonia policies (harmonia-maxbw, -minstall,
 * -fairness, -buffer-eff, -priority) plugged into the scheduler: at each decision
 * the pending phases that have not started are placed on buffer nodes and start
 * slots by the dynamic programme of hs_dp.c, with the policy's cost
 * (doc/harmonia-dp.md §5).
 *
 * One decision:
 *   1. nodes: one hs_dp_node_t per buffer node (curves, bandwidth), free capacity =
 *      capacity - occupancy - bytes still to come from the writes running there;
 *      the streams running there with their expected end (remaining / last rate);
 *   2. phases: every pending phase that has not moved a byte yet (volume, direction,
 *      waited = now - request, the job's stall so far, priority, allowed = the job's
 *      allocation, every node if empty);
 *   3. S = 8 slots of Delta = the median alone time of those phases;
 *   4. hs_dp_place(); on ENOSPC the largest write is held back and the DP re-run
 *      (a write larger than every allowed node is never given to the DP: it starts
 *      at once on its allowed node with the most free space, and the core throttles
 *      it to the drain when the node fills, so that nothing waits forever);
 *   5. slot 0: the phase starts now on its node; later slots wait (start = the
 *      planned start; a decision is asked for then); started phases keep their node
 *      and run on (the core shares each node's BW(c) among its streams).
 *
 * Without buffers the PFS is one node of bandwidth B with MSCA 0 (no interference:
 * If(c) = c) and unlimited capacity; the phases of slot 0 and the started ones share
 * B max-min (capped by what each can use), and what they cannot use goes to the
 * waiting phases in the order of their planned start.  harmonia-buffer-eff has no
 * buffer to be efficient with there (nor with nodes of unknown capacity) and uses
 * the maxbw cost.
 *
 * Pure and deterministic: the DP caps its own work in steps (HS_DP_BUDGET_DEFAULT).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsched.h"
#include "policy.h"
#include "hs_dp.h"

#define NSLOTS 8

struct hstate {
    hs_dp_cost_t cost;
    const hs_sched_t *sched;
    double next; /* absolute time of the next planned start */
    /* scratch, grown */
    size_t capv;
    hs_dp_phase_t *ph;
    hs_dp_place_t *pl;
    size_t *vi;   /* DP phase -> view index */
    size_t *cand; /* candidate view indices */
    bool *held;   /* per view: held back */
    double *alone;
    size_t *idx;
    double *w;
    hs_wf_item_t *wsc;
    int capn;
    hs_dp_node_t *nodes;
    double *run_end; /* per node, nrun[j] entries at run_off[j] */
    int *run_off;
    int *nrun;
    double *drain; /* per node, bytes/s at the last decision */
    hs_policy_stats_t st;
};

static int h_create(const hs_ctx_t *ctx, void **state, hu_error_t *err)
{
    struct hstate *hs;
    hs_dp_cost_t cost;

    if (hs_dp_cost_from_policy(ctx->pol->kind, &cost) < 0)
        return hs_errprintf(err, EINVAL, "not a harmonia-* policy");
    if (!(hs = calloc(1, sizeof(*hs))))
        return hs_errprintf(err, ENOMEM, "out of memory");
    hs->cost = cost;
    hs->sched = ctx->sched;
    hs->next = INFINITY;
    hs_policy_stats_reset(&hs->st);
    hs->st.plans = true;
    *state = hs;
    return 0;
}

static void h_destroy(void *state)
{
    struct hstate *hs = state;
    int saved = errno;

    if (hs) {
        free(hs->ph);
        free(hs->pl);
        free(hs->vi);
        free(hs->cand);
        free(hs->held);
        free(hs->alone);
        free(hs->idx);
        free(hs->w);
        free(hs->wsc);
        free(hs->nodes);
        free(hs->run_end);
        free(hs->run_off);
        free(hs->nrun);
        free(hs->drain);
        free(hs);
    }
    errno = saved;
}

static int reserve(struct hstate *hs, size_t n, int m)
{
    /* array f of hs to c elements (its content kept) */
#define RE(f, c) \
    do { \
        void *p_ = realloc(hs->f, (size_t)(c) * sizeof(*hs->f)); \
        if (!p_) \
            return -1; \
        hs->f = p_; \
    } while (0)
    if (n + 1 > hs->capv) {
        size_t c = hs->capv ? hs->capv : 16;
        while (c < n + 1)
            c *= 2;
        RE(ph, c);
        RE(pl, c);
        RE(vi, c);
        RE(cand, c);
        RE(held, c);
        RE(alone, c);
        RE(idx, c);
        RE(w, c);
        RE(wsc, c);
        RE(run_end, c);
        hs->capv = c;
    }
    if (m + 1 > hs->capn) {
        RE(nodes, m + 1);
        RE(run_off, m + 1);
        RE(nrun, m + 1);
        RE(drain, m + 1);
        hs->capn = m + 1;
    }
#undef RE
    return 0;
}

static bool started(const hs_view_t *v)
{
    return v->started || v->remaining < v->volume;
}

/* The node a started phase runs on (-1: the PFS, or none). */
static int run_node(const hs_view_t *v, int nb)
{
    if (nb == 0)
        return 0;
    return v->nplace > 0 ? v->place[0] : -1;
}

/* Is node j allowed for the job of v? */
static bool allowed(const hs_view_t *v, int j, int nb)
{
    int k;

    if (nb == 0 || v->job->nalloc == 0)
        return true;
    for (k = 0; k < v->job->nalloc; k++) {
        if (v->job->alloc[k] == j)
            return true;
    }
    return false;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Candidate q should be held back before candidate r (largest write first). */
static bool hold_before(const hs_view_t *a, const hs_view_t *b)
{
    if (a->volume != b->volume)
        return a->volume > b->volume;
    if (a->request != b->request)
        return a->request > b->request;
    return a->id > b->id;
}

/* The next candidate to hold back: the first by hold_before() among the writes not
 * held yet, as an index into hs->cand[0..nc[; nc when there is none. */
static size_t next_hold(const struct hstate *hs, const hs_view_t *v, size_t nc)
{
    size_t q, bq = nc;

    for (q = 0; q < nc; q++) {
        const hs_view_t *x = &v[hs->cand[q]];
        if (!hs->held[hs->cand[q]] && x->dir == HS_DIR_WRITE
            && (bq == nc || hold_before(x, &v[hs->cand[bq]])))
            bq = q;
    }
    return bq;
}

static int h_decide(void *state, const hs_ctx_t *ctx, hs_view_t *v, size_t n)
{
    struct hstate *hs = state;
    const hs_sched_t *s = ctx->sched;
    double now = ctx->now;
    int nb = hs_core_nbuffers(s);
    int M = nb > 0 ? nb : 1;
    hs_dp_cost_t cost = hs->cost;
    hs_dp_problem_t prob;
    hs_dp_solution_t sol;
    hu_error_t err;
    size_t i, nc = 0, nrun_tot = 0, nheld = 0;
    int j, np;
    double delta, earliest = INFINITY, total_free = 0, wvol = 0;
    bool finite_cap = true;

    hs->next = INFINITY;
    if (reserve(hs, n, M) < 0)
        return -1;

    /* 1. nodes */
    for (j = 0; j < M; j++) {
        hs_dp_node_t *d = &hs->nodes[j];
        if (nb > 0) {
            hs_node_state_t ns;
            if (hs_core_node_state(s, j, &ns) < 0)
                return -1;
            hs_dp_node_from_buffer(d, ns.buf);
            d->bandwidth = ns.bandwidth;
            d->capacity = isfinite(ns.capacity) ? fmax(0, ns.capacity - ns.occupancy) : INFINITY;
            hs->drain[j] = ns.drain > 0 ? ns.drain : 0;
        } else {
            memset(d, 0, sizeof(*d));
            d->capacity = INFINITY;
            d->bandwidth = ctx->plat->bw;
            hs->drain[j] = 0;
        }
        hs->nrun[j] = 0;
    }
    /* running streams, grouped by node */
    for (i = 0; i < n; i++) {
        if (!v[i].complete && started(&v[i]) && (j = run_node(&v[i], nb)) >= 0)
            hs->nrun[j]++;
    }
    for (j = 0; j < M; j++) {
        hs->run_off[j] = (int)nrun_tot;
        nrun_tot += (size_t)hs->nrun[j];
        hs->nodes[j].nrunning = hs->nrun[j];
        hs->nrun[j] = 0; /* now a cursor */
    }
    for (i = 0; i < n; i++) {
        hs_phase_info_t pi;
        double rate, end;
        if (v[i].complete || !started(&v[i]) || (j = run_node(&v[i], nb)) < 0)
            continue;
        rate = hs_phase_info(s, v[i].id, &pi) == 0 ? pi.bw : 0;
        if (!(rate > 0))
            rate =
                hs->nodes[j].bandwidth / hs_dp_if(&hs->nodes[j], v[i].dir, hs->nodes[j].nrunning);
        end = v[i].remaining / rate;
        hs->run_end[hs->run_off[j] + hs->nrun[j]++] = end;
        if (v[i].dir == HS_DIR_WRITE && isfinite(hs->nodes[j].capacity))
            hs->nodes[j].capacity = fmax(0, hs->nodes[j].capacity - v[i].remaining);
    }
    for (j = 0; j < M; j++) {
        hs->nodes[j].running_end = hs->nrun[j] ? &hs->run_end[hs->run_off[j]] : NULL;
        if (!isfinite(hs->nodes[j].capacity))
            finite_cap = false;
    }
    if (cost == HS_DP_COST_BUFFER_EFF && (nb == 0 || !finite_cap))
        cost = HS_DP_COST_MAXBW;

    /* 2. candidates; a write that fits no allowed node even empty starts at once */
    for (i = 0; i < n; i++) {
        hs->held[i] = false;
        if (v[i].complete || started(&v[i]))
            continue;
        if (nb > 0 && v[i].dir == HS_DIR_WRITE) {
            double best = -1, bestfree = -1;
            int bj = -1;
            for (j = 0; j < nb; j++) {
                hs_node_state_t ns;
                if (!allowed(&v[i], j, nb) || hs_core_node_state(s, j, &ns) < 0)
                    continue;
                best = fmax(best, ns.capacity);
                if (hs->nodes[j].capacity > bestfree) {
                    bestfree = hs->nodes[j].capacity;
                    bj = j;
                }
            }
            if (bj >= 0 && v[i].volume > best) {
                v[i].buffer = bj;
                v[i].bw = v[i].cap;
                v[i].start = now;
                continue;
            }
        }
        hs->cand[nc++] = i;
        if (nb > 0 && v[i].dir == HS_DIR_WRITE)
            wvol += v[i].volume;
    }
    /* 3. the slot: the median alone time of the candidates; a node's free space
     * counts what it drains during one slot (at the last decision's rate) */
    for (i = 0; i < nc; i++) {
        const hs_view_t *y = &v[hs->cand[i]];
        double bj = 0;
        for (j = 0; j < M; j++) {
            if (allowed(y, j, nb))
                bj = fmax(bj, hs->nodes[j].bandwidth);
        }
        hs->alone[i] = y->volume / fmin(y->cap, bj);
    }
    delta = 1;
    if (nc > 0) {
        memcpy(hs->w, hs->alone, nc * sizeof(double));
        qsort(hs->w, nc, sizeof(double), cmp_dbl);
        delta = nc % 2 ? hs->w[nc / 2] : 0.5 * (hs->w[nc / 2 - 1] + hs->w[nc / 2]);
        if (!(delta > 0) || !isfinite(delta))
            delta = 1;
    }
    for (j = 0; j < M && nb > 0; j++) {
        if (isfinite(hs->nodes[j].capacity)) {
            hs->nodes[j].capacity += hs->drain[j] * delta;
            total_free += hs->nodes[j].capacity;
        }
    }
    /* hold back the largest writes while they cannot all fit in the free space */
    while (finite_cap && nb > 0 && wvol > total_free) {
        size_t bq = next_hold(hs, v, nc);
        if (bq == nc)
            break;
        hs->held[hs->cand[bq]] = true;
        wvol -= v[hs->cand[bq]].volume;
        nheld++;
    }

    /* 4. the DP, holding back the largest write on ENOSPC */
    for (;;) {
        np = 0;
        for (i = 0; i < nc; i++) {
            size_t x = hs->cand[i];
            hs_view_t *y = &v[x];
            hs_dp_phase_t *p = &hs->ph[np];
            hs_job_stats_t js;
            if (hs->held[x])
                continue;
            memset(p, 0, sizeof(*p));
            p->job = y->id;
            p->volume = y->volume;
            p->dir = nb > 0 ? y->dir : HS_DIR_WRITE;
            p->waited = fmax(0, now - y->request);
            if (hs_job_stats(s, y->id, &js) == 0)
                p->stall = fmax(0, js.io_time - js.io_dedicated);
            p->priority = y->job->priority;
            if (nb > 0) {
                p->nallowed = y->job->nalloc;
                p->allowed = y->job->alloc;
            }
            hs->vi[np] = x;
            np++;
        }
        if (np == 0)
            break;
        memset(&prob, 0, sizeof(prob));
        prob.nphases = np;
        prob.phases = hs->ph;
        prob.nnodes = M;
        prob.nodes = hs->nodes;
        prob.nslots = NSLOTS;
        prob.slot = delta;
        prob.method = HS_DP_AUTO;
        memset(&sol, 0, sizeof(sol));
        sol.place = hs->pl;
        if (hs_dp_place(&prob, cost, &sol, &err) == 0)
            break;
        if (errno != ENOSPC)
            return -1;
        {
            size_t bq = next_hold(hs, v, nc);
            if (bq == nc)
                return -1; /* ENOSPC without a write: cannot be */
            hs->held[hs->cand[bq]] = true;
            nheld++;
        }
    }

    /* 5. apply */
    if (np > 0) {
        hs->st.schedules++;
        hs->st.work += sol.steps;
        if (sol.exact)
            hs->st.exact++;
        if (np > hs->st.max_phases)
            hs->st.max_phases = np;
    }
    hs->st.held_back += nheld;
    for (i = 0; i < (size_t)np; i++) {
        const hs_dp_place_t *pl = &hs->pl[i];
        hs_view_t *y = &v[hs->vi[i]];
        y->buffer = nb > 0 ? pl->node : -1;
        if (pl->slot == 0) {
            y->bw = nb > 0 ? y->cap : fmin(y->cap, pl->bw);
            y->start = now;
        } else {
            y->bw = 0;
            y->start = now + pl->start;
            earliest = fmin(earliest, pl->start);
        }
    }
    for (i = 0; i < n; i++) {
        if (v[i].complete || !started(&v[i]))
            continue;
        v[i].buffer = nb > 0 && v[i].nplace > 0 ? v[i].place[0] : -1;
        v[i].bw = v[i].cap;
        v[i].start = now;
    }
    if (nheld > 0)
        earliest = fmin(earliest, delta);
    if (nb == 0) {
        /* the PFS: started and slot-0 phases share B max-min; leftovers to the
         * waiting ones in the order of their planned start */
        size_t k = 0;
        double left;
        for (i = 0; i < n; i++) {
            if (v[i].bw > 0) {
                hs->idx[k] = i;
                hs->w[k++] = 1.;
                v[i].bw = 0;
            }
        }
        left = hs_alloc_waterfill(v, hs->idx, hs->w, k, ctx->plat->bw, hs->wsc);
        if (left > ctx->plat->bw * 1e-12) {
            size_t q, m = 0;
            for (i = 0; i < (size_t)np; i++) {
                if (hs->pl[i].slot > 0)
                    hs->idx[m++] = hs->vi[i];
            }
            /* insertion sort by planned start, then id (m is small) */
            for (q = 1; q < m; q++) {
                size_t x = hs->idx[q], r = q;
                while (r > 0
                       && (v[hs->idx[r - 1]].start > v[x].start
                           || (v[hs->idx[r - 1]].start == v[x].start
                               && v[hs->idx[r - 1]].id > v[x].id))) {
                    hs->idx[r] = hs->idx[r - 1];
                    r--;
                }
                hs->idx[r] = x;
            }
            for (q = 0; q < m && left > ctx->plat->bw * 1e-12; q++) {
                hs_view_t *y = &v[hs->idx[q]];
                y->bw = fmin(y->cap, left);
                y->start = now;
                left -= y->bw;
            }
        }
    }
    for (i = 0; i < n; i++) {
        if (v[i].bw > 0)
            v[i].weight = v[i].bw / ctx->plat->bw;
    }
    if (isfinite(earliest))
        hs->next = now + fmax(earliest, 1e-9 * fmax(1., fabs(now)));
    return 0;
}

static double h_next_event(const void *state, double now)
{
    const struct hstate *hs = state;

    if (!hs || !(hs->next > now) || hs_sched_npending(hs->sched) == 0)
        return INFINITY;
    return hs->next;
}

static void h_stats(const void *state, hs_policy_stats_t *st)
{
    const struct hstate *hs = state;

    if (hs)
        *st = hs->st;
}

const hs_policy_ops_t hs_ops_harmonia = {
    .name = "harmonia",
    .create = h_create,
    .destroy = h_destroy,
    .decide = h_decide,
    .next_event = h_next_event,
    .places = true,
    .stats = h_stats,
};

/* vi: ts=4 sw=4 expandtab
 */
