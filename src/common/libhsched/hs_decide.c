/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_decide.c — libhsched's decision: the pending phases in id order, their views,
 * the policy's grants checked and applied, the wait bounds, and the time of the
 * next event.  The state is hs_model.h's; the buffer tier's part of a
 * decision is in hs_bnode.c.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsched.h"
#include "policy.h"
#include "hs_bnode.h"
#include "hs_core_internal.h"
#include "hs_decide.h"

/* Check the policy's grants v[0..n[ against the model's constraints: each bw finite
 * and 0 <= bw <= cap, their sum <= B (both within HS_EPS_REL).  A complete phase's bw
 * becomes 0; with 'clamp', each bw is also clamped to its cap before it counts in
 * the sum.  0, or -1 with errno = EPROTO. */
int check_grants(hs_view_t *v, size_t n, double B, bool clamp)
{
    double sum = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        if (!isfinite(v[i].bw) || v[i].bw < 0 || v[i].bw > v[i].cap * (1 + HS_EPS_REL)) {
            errno = EPROTO;
            return -1;
        }
        if (v[i].complete)
            v[i].bw = 0;
        if (clamp)
            v[i].bw = hs_fmin(v[i].bw, v[i].cap);
        sum += v[i].bw;
    }
    if (sum > B * (1 + HS_EPS_REL)) {
        errno = EPROTO;
        return -1;
    }
    return 0;
}

/* Excess wait of a phase: the time since its request beyond what moving its done
 * bytes at its cap takes (a phase moving at its cap does not wait; one held at 0, or
 * at a crumb, does). */
double excess_wait(double now, double request, double done, double cap)
{
    return now - request - (cap > 0 ? done / cap : 0);
}

double hs_wait_bound(const hs_policy_t *pol, double volume, double cap)
{
    double t = INFINITY, k, floor;

    if (!pol)
        return INFINITY;
    if (pol->max_wait > 0)
        t = pol->max_wait;
    k = pol->starve_factor == 0 ? HS_STARVE_FACTOR_DEFAULT : pol->starve_factor;
    if (k > 0) {
        floor = pol->starve_floor > 0 ? pol->starve_floor : HS_STARVE_FLOOR_DEFAULT;
        t = hs_fmin(t, fmax(cap > 0 ? k * volume / cap : 0, floor));
    }
    return t;
}

/* Is either wait bound on? */
bool wait_bound_on(const hs_policy_t *pol)
{
    return pol->max_wait > 0 || pol->starve_factor >= 0;
}

/* Has the phase of view v reached its wait bound at 'now'? */
static bool reached_bound(const hs_sched_t *s, const hs_view_t *v, double now)
{
    return !v->complete
           && excess_wait(now, v->request, v->volume - v->remaining, v->cap)
                  >= hs_wait_bound(&s->pol, v->volume, v->cap) * (1 - HS_EPS_REL);
}

/* The wait bounds (hs_policy_t.max_wait and the starvation bound, doc/policies.md):
 * whatever the policy decided, a pending phase whose excess wait reached its bound
 * (hs_wait_bound()) gets at least min(cap, B / m), m = such phases (+1 when the
 * policy grants others, which keep that share between them: they are scaled down
 * to fit B), until it ends.  So a phase waits at most its bound before it gets a
 * real share (a crumb counts as waiting), whatever the policy's objective.  Each
 * phase that reaches its bound is counted once (s->bound_hits). */
void guard_waits(hs_sched_t *s, double now, size_t n)
{
    double B = s->plat.bw, given = 0, others = 0;
    size_t m = 0, granted = 0, i;

    for (i = 0; i < n; i++) {
        hs_view_t *v = &s->views[i];
        if (reached_bound(s, v, now)) {
            struct job *j = &s->jobs[s->ids[i].slot];
            if (!j->bounded) {
                j->bounded = true;
                s->bound_hits++;
            }
            m++;
        } else if (v->bw > 0)
            granted++;
    }
    if (m == 0)
        return;
    /* the phases the policy grants keep one share between them */
    if (granted > 0)
        m++;
    for (i = 0; i < n; i++) {
        hs_view_t *v = &s->views[i];
        if (reached_bound(s, v, now)) {
            double g = hs_fmin(v->cap, B / (double)m);
            if (v->bw < g)
                v->bw = g;
            v->weight = v->bw / B;
            v->start = now;
            given += v->bw;
        } else
            others += v->bw;
    }
    if (given + others > B) {
        double fg = given > B ? B / given : 1;
        double fo = others > 0 && given < B ? (B - given) / others : 0;
        for (i = 0; i < n; i++) {
            hs_view_t *v = &s->views[i];
            v->bw *= reached_bound(s, v, now) ? fg : fo;
            v->weight = v->bw > 0 ? v->bw / B : 0;
        }
    }
}

uint64_t hs_sched_bound_hits(const hs_sched_t *s)
{
    return s ? s->bound_hits : 0;
}

/* Call the policy on the views of one group (indices bs->gidx[] into the stripe
 * arrays), with B = 'B'.  Fills bs->sgrant of the members. */
int group_decide(hs_sched_t *s, const hs_ctx_t *ctx, size_t g, double B, bool stripes)
{
    struct bscratch *bs = s->bs;
    hs_platform_t plat = s->plat;
    hs_ctx_t c2 = *ctx;
    size_t q;

    plat.bw = B;
    c2.plat = &plat;
    for (q = 0; q < g; q++) {
        size_t st = bs->gidx[q];
        size_t i = stripes ? bs->sphase[st] : st;
        size_t m = stripes ? bs->off[i + 1] - bs->off[i] : 1; /* nplace */
        hs_view_t *v = &bs->gv[q];
        *v = s->views[i];
        if (m != 1) { /* x / 1 == x: one stripe needs none */
            v->cap /= (double)m;
            v->volume /= (double)m;
            v->remaining /= (double)m;
        }
        v->cap = hs_fmin(v->cap, B);
        v->bw = 0;
        v->weight = 0;
        v->start = INFINITY;
    }
    if (g > 0 && s->ops->decide(s->pstate, &c2, bs->gv, g) < 0)
        return -1;
    if (check_grants(bs->gv, g, B, false) < 0)
        return -1;
    for (q = 0; q < g; q++) {
        size_t st = bs->gidx[q];
        size_t i = stripes ? bs->sphase[st] : st;
        if (stripes)
            bs->sgrant[st] = hs_fmin(bs->gv[q].bw, bs->gv[q].cap);
        else
            bs->pgrant[i] = hs_fmin(bs->gv[q].bw, bs->gv[q].cap);
        if (bs->gv[q].bw > 0 || !stripes) {
            s->views[i].weight = bs->gv[q].weight;
            if (bs->gv[q].start < s->views[i].start)
                s->views[i].start = bs->gv[q].start;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ decisions */

static int cmp_idsort(const void *a, const void *b)
{
    const struct idsort *x = a;
    const struct idsort *y = b;

    return (x->id > y->id) - (x->id < y->id);
}

/* Sort ids[] by id (ids are unique, so every correct sort gives the same order):
 * an LSD radix sort on the bytes that differ, O(n) per pass, instead of qsort's
 * O(n log n) calls through a comparison function; small arrays by qsort. */
static void sort_ids(struct idsort *ids, struct idsort *tmp, size_t n)
{
    uint64_t all_or = 0, all_and = ~(uint64_t)0;
    size_t i, count[256];
    int shift;

    if (n < 2)
        return;
    for (i = 1; i < n && ids[i - 1].id < ids[i].id; i++)
        ;
    if (i == n)
        return; /* already in order */
    if (n < 64 || !tmp) {
        qsort(ids, n, sizeof(*ids), cmp_idsort);
        return;
    }
    for (i = 0; i < n; i++) {
        all_or |= ids[i].id;
        all_and &= ids[i].id;
    }
    for (shift = 0; shift < 64; shift += 8) {
        struct idsort *t;
        size_t sum = 0;
        if ((((all_or ^ all_and) >> shift) & 0xff) == 0)
            continue; /* this byte is the same in every id */
        memset(count, 0, sizeof(count));
        for (i = 0; i < n; i++)
            count[(ids[i].id >> shift) & 0xff]++;
        for (i = 0; i < 256; i++) {
            size_t c = count[i];
            count[i] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++)
            tmp[count[(ids[i].id >> shift) & 0xff]++] = ids[i];
        t = ids; /* copy back: ids[] is the caller's */
        memcpy(t, tmp, n * sizeof(*t));
    }
}

/* The view of a pending phase (synced by the caller).  Every field is written (no
 * memset of the whole view first); the buffer-tier inputs are those of the phase
 * with buffers, zero without. */
/* Before the views, for each pending phase of a decision: bring it to s->now; with
 * buffers, return the most stripes it may have (to size the scratch) and, when the
 * core places phases ('core_places'), count it on its nodes if it is placed and not
 * complete (place_phase() needs these counts before it places any other). */
static size_t decide_prepare(hs_sched_t *s, struct job *j, bool buffers, bool core_places)
{
    const int *list;
    int k;

    sync_job(s, j);
    if (!buffers)
        return 0;
    if (core_places && j->placed && !done_complete(j, j->done)) {
        for (k = 0; k < j->nplace; k++)
            s->nodes[k == 0 ? j->place0 : j->place[k]].placed++;
    }
    return (size_t)job_nodes(s, j, &list);
}

/* ids[0, m) and ids[m, n) are sorted by id: merge them into ids[0, n) (tmp: room
 * for n - m entries). */
static void merge_ids(struct idsort *ids, size_t m, size_t n, struct idsort *tmp)
{
    size_t a = m, b = n - m, k = n;

    if (a == 0 || b == 0 || ids[m - 1].id < ids[m].id)
        return; /* one run, or already in order */
    memcpy(tmp, ids + m, b * sizeof(*tmp));
    while (b > 0) { /* from the end: ids[k..n) is final */
        if (a > 0 && ids[a - 1].id > tmp[b - 1].id)
            ids[--k] = ids[--a];
        else
            ids[--k] = tmp[--b];
    }
}

static void fill_view(const hs_sched_t *s, const struct job *j, hs_view_t *v, bool buffers)
{
    double life = s->now - j->info.release;

    v->id = j->info.id;
    v->job = &j->info;
    v->cap = j->cap;
    v->volume = j->vol;
    v->complete = done_complete(j, j->done);
    v->remaining = v->complete ? 0 : j->vol - j->done;
    v->request = j->req;
    v->w_done = j->w_done;
    v->last_io_end = j->last_io_end;
    v->rho = j->rho;
    v->rho_tilde = (life > 0) ? j->W / life : j->rho;
    v->w_iter = j->w_iter;
    v->phase = j->phase;
    v->active = j->active;
    v->bw = 0;
    v->weight = 0;
    v->start = INFINITY;
    v->buffer = -1;
    v->dir = buffers ? j->dir : HS_DIR_WRITE;
    v->started = buffers && j->done > 0;
    v->nplace = buffers ? j->nplace : 0;
    v->place = buffers ? j->place : NULL;
}

int hs_sched_decide(hs_sched_t *s, double now, hs_grant_t *out, size_t cap)
{
    hs_ctx_t ctx;
    size_t n, i, ns = 0, nold = 0, nnew;
    bool buffers, core_places;

    if (!s || (cap > 0 && !out) || check_time(s, now) < 0) {
        errno = EINVAL;
        return -1;
    }
    n = s->npend;
    if (n > (size_t)INT32_MAX) {
        errno = EOVERFLOW;
        return -1;
    }
    if (!s->ops) {
        errno = ENOTSUP;
        return -1;
    }
    if (n > s->scratch_cap) {
        size_t c1 = s->scratch_cap, c2 = s->scratch_cap, c3 = s->scratch_cap;
        if (hs_grow(&s->views, &c1, n, sizeof(*s->views)) < 0
            || hs_grow(&s->ids, &c2, n, sizeof(*s->ids)) < 0
            || hs_grow(&s->ids_tmp, &c3, n, sizeof(*s->ids_tmp)) < 0)
            return -1;
        s->scratch_cap = c1 < c2 ? c1 : c2;
        if (c3 < s->scratch_cap)
            s->scratch_cap = c3;
    }
    integrate(s, now);
    nodes_sync(s);
    buffers = has_buffers(s);
    core_places = buffers && !s->ops->places;
    if (core_places) {
        int k;
        for (k = 0; k < s->plat.nbuffers; k++)
            s->nodes[k].placed = 0;
    }
    /* Prepare every pending phase (decide_prepare()), and sort them by id: the
     * last decision's order without the phases that ended since (they are no
     * longer 'listed'), then the phases requested since, sorted and merged in.
     * ids are unique: the order is the one a full sort gives. */
    for (i = 0; i < s->nids; i++) {
        struct job *j = &s->jobs[s->ids[i].slot];
        if (!j->listed)
            continue;
        ns += decide_prepare(s, j, buffers, core_places);
        s->ids[nold++] = s->ids[i];
    }
    nnew = nold;
    for (i = 0; i < n; i++) {
        struct job *j = &s->jobs[s->pend[i]];
        if (j->listed)
            continue;
        ns += decide_prepare(s, j, buffers, core_places);
        j->listed = true;
        s->ids[nnew].slot = s->pend[i];
        s->ids[nnew++].id = j->info.id;
    }
    s->nids = n;  /* nnew == n: each pending phase once */
    if (n > nold) /* s->ids is NULL until a phase is pending */
        sort_ids(s->ids + nold, s->ids_tmp, n - nold);
    merge_ids(s->ids, nold, n, s->ids_tmp);
    if (buffers) {
        if (bscratch_reserve(s, n, ns + n) < 0)
            return -1;
        s->bs->ns = 0;
        s->bs->ndirect = 0;
    }
    /* the views; when the core places phases, it places those with no placement
     * yet (in id order: each sees the ones before it) and sets the stripes up in
     * the same pass */
    for (i = 0; i < n; i++) {
        struct job *j = &s->jobs[s->ids[i].slot];
        hs_view_t *v = &s->views[i];
        fill_view(s, j, v, buffers);
        if (core_places) {
            if (!j->placed && place_phase(s, i, j) < 0)
                return -1;
            add_stripes(s, i, j);
        } else if (buffers) /* a policy that places sees the placement so far */
            v->buffer = j->placed && j->nplace > 0 ? j->place0 : -1;
    }

    ctx.plat = &s->plat;
    ctx.pol = &s->pol;
    ctx.sched = s;
    ctx.now = now;
    if (buffers) {
        if (decide_buffers(s, &ctx, n, group_decide) < 0) /* checks its rates */
            return -1;
        goto store;
    }
    if (n > 0 && s->ops->decide(s->pstate, &ctx, s->views, n) < 0)
        return -1;

    /* check what the policy did: the model's constraints must hold */
    if (check_grants(s->views, n, s->plat.bw, true) < 0)
        return -1;
    if (wait_bound_on(&s->pol))
        guard_waits(s, now, n);
store:
    for (i = 0; i < n; i++) {
        hs_view_t *v = &s->views[i];
        struct job *j = &s->jobs[s->ids[i].slot];
        j->rate = v->bw;
        j->weight = v->weight;
        j->active = v->bw > 0;
        if (buffers)
            j->throttled = s->bs->pthrottled[i];
        if (v->bw > 0 && !(v->start <= now))
            v->start = now;
        if (i < cap) {
            out[i].id = v->id;
            out[i].bw = v->bw;
            out[i].share = v->bw / s->plat.bw;
            out[i].buffer = v->buffer;
            out[i].start = v->start;
            out[i].remaining = v->remaining;
            out[i].weight = v->weight;
            out[i].buffer_full = j->throttled;
            out[i].nbuffers = j->nplace;
        }
    }
    return (int)n;
}


double hs_sched_next_event(const hs_sched_t *s)
{
    double t = INFINITY;
    size_t i;
    bool bound;

    if (!s)
        return INFINITY;
    bound = wait_bound_on(&s->pol) && !has_buffers(s);
    for (i = 0; i < s->npend; i++) {
        const struct job *j = &s->jobs[s->pend[i]];
        if (phase_complete(s, j))
            t = hs_fmin(t, s->now);
        else if (j->rate > 0)
            t = hs_fmin(t, completion_time(j));
        if (bound && !phase_complete(s, j) && j->rate < j->cap) {
            /* when its excess wait reaches its bound (it grows at 1 - rate/cap) */
            double done, w, ex, mw = hs_wait_bound(&s->pol, j->vol, j->cap);
            job_at(j, s->now, &done, &w);
            ex = excess_wait(s->now, j->req, done, j->cap);
            /* the same threshold as guard_waits(); past it the phase is guarded */
            if (ex < mw * (1 - HS_EPS_REL))
                t = hs_fmin(t, fmax(s->now + (mw - ex) / (1 - j->rate / j->cap),
                                    nextafter(s->now, INFINITY)));
        }
    }
    if (s->ops && s->ops->next_event)
        t = hs_fmin(t, s->ops->next_event(s->pstate, s->now));
    if (has_buffers(s) && isfinite(s->bt)) {
        int k;
        for (k = 0; k < s->plat.nbuffers; k++) {
            struct bnode o;
            double slope;
            node_at(&s->nodes[k], s->now - s->bt, &o);
            slope = o.inflow - o.drain;
            if (slope > 0 && !node_full(&o) && isfinite(o.cap))
                t = hs_fmin(t, s->now + (o.cap - o.occ) / slope);
            else if (slope < 0 && !node_empty(&o))
                t = hs_fmin(t, s->now + o.occ / -slope);
        }
    }
    return t;
}
