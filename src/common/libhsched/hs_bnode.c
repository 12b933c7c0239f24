/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_bnode.c — libhsched's buffer-node model (doc/buffer-tier.md): the nodes'
 * occupancy between decisions, the placement of pending phases on them, and a
 * decision's shares on a platform with buffers (the policy's grants per node, the
 * MSCA model, the PFS shared by the drains, full nodes limiting their writers).
 * The state is hs_model.h's.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsched.h"
#include "policy.h"
#include "hs_bnode.h"

/* ------------------------------------------------------------------ buffer nodes */

/* Node b advanced by dt >= 0 at its current rates (pure): occupancy moves at
 * inflow - drain and stops at 0 or at the capacity; past that point the node passes
 * data through (empty: drains what comes in; full: takes what drains). */
void node_at(const struct bnode *b, double dt, struct bnode *o)
{
    double slope = b->inflow - b->drain;
    double tl = dt;  /* linear part */
    double rest = 0; /* clamped part */
    double occ1;

    *o = *b;
    if (!(dt > 0) || !isfinite(dt))
        return;
    if (slope > 0 && isfinite(b->cap)) {
        double th = (b->cap - b->occ) / slope;
        if (th < dt) {
            tl = th > 0 ? th : 0;
            rest = dt - tl;
        }
    } else if (slope < 0) {
        double th = b->occ / -slope;
        if (th < dt) {
            tl = th > 0 ? th : 0;
            rest = dt - tl;
        }
    }
    occ1 = b->occ + slope * tl;
    if (rest > 0)
        occ1 = slope > 0 ? b->cap : 0;
    if (occ1 < 0)
        occ1 = 0;
    if (occ1 > b->cap)
        occ1 = b->cap;
    o->occ = occ1;
    o->occ_int = b->occ_int + 0.5 * (b->occ + occ1) * tl + occ1 * rest;
    if (slope > 0) { /* clamped full: inflow limited to drain */
        o->written = b->written + b->inflow * tl + b->drain * rest;
        o->drained = b->drained + b->drain * dt;
    } else { /* clamped empty: drain limited to inflow */
        o->written = b->written + b->inflow * dt;
        o->drained = b->drained + b->drain * tl + b->inflow * rest;
    }
    o->read = b->read + b->readrate * dt;
    if (b->streams > 0) {
        o->busy = b->busy + dt;
        o->conc_int = b->conc_int + b->streams * dt;
    }
    if (b->full || (rest > 0 && slope > 0))
        o->full_time = b->full_time + (b->full ? dt : rest);
    if (occ1 > o->occ_max)
        o->occ_max = occ1;
}

void nodes_sync(hs_sched_t *s)
{
    int i;

    if (!has_buffers(s))
        return;
    if (!isfinite(s->bt)) {
        s->bt = s->now;
        return;
    }
    if (!(s->now > s->bt))
        return;
    for (i = 0; i < s->plat.nbuffers; i++) {
        struct bnode o;
        node_at(&s->nodes[i], s->now - s->bt, &o);
        if (node_empty(&o))
            o.occ = 0;
        else if (node_full(&o))
            o.occ = o.cap;
        s->nodes[i] = o;
    }
    s->bt = s->now;
}

/* Occupancy integral of node i at s->now. */
static double node_int_now(const hs_sched_t *s, int i)
{
    struct bnode o;

    node_at(&s->nodes[i], s->now - s->bt, &o);
    return o.occ_int;
}

/* The nodes a job may use: its allocation, or every node when it has none
 * (except under static, where no allocation means the PFS). */
int job_nodes(const hs_sched_t *s, const struct job *j, const int **list)
{
    *list = j->alloc;
    if (j->info.nalloc > 0)
        return j->info.nalloc;
    if (s->pol.kind == HS_POL_STATIC)
        return 0;
    *list = NULL; /* all: 0..nbuffers-1 */
    return s->plat.nbuffers;
}

/* Stripe count of a job's phases. */
static int job_stripe(const hs_sched_t *s, const struct job *j)
{
    const int *list;
    int n = job_nodes(s, j, &list);
    int m;

    if (s->pol.kind == HS_POL_STATIC)
        return n;
    m = j->info.stripe > 0 ? j->info.stripe : 1;
    return m < n ? m : n;
}

double buffers_sum_int(const hs_sched_t *s, const struct job *j)
{
    const int *list;
    int n = job_nodes(s, j, &list), k;
    double sum = 0;

    for (k = 0; k < n; k++)
        sum += node_int_now(s, nodes_at(list, k));
    return sum;
}

/* Job-level cap with buffers: min(beta b, sum of the 'stripe' largest B_j). */
double job_cap_buffers(const hs_sched_t *s, const struct job *j)
{
    const int *list;
    int n = job_nodes(s, j, &list), m = job_stripe(s, j), k, r;
    double sum = 0, prev = INFINITY;
    int taken = 0;

    if (n == 0 || m == 0)
        return hs_fmin(j->info.nodes * s->plat.node_bw, s->plat.bw);
    /* m largest bandwidths (m passes over n; m and n are small) */
    for (r = 0; r < m; r++) {
        double best = -1;
        int cnt = 0;
        for (k = 0; k < n; k++) {
            double bw = s->nodes[nodes_at(list, k)].bw;
            if (bw < prev && bw > best)
                best = bw;
        }
        if (best < 0)
            break;
        for (k = 0; k < n; k++)
            cnt += s->nodes[nodes_at(list, k)].bw == best;
        while (cnt-- > 0 && taken < m) {
            sum += best;
            taken++;
        }
        prev = best;
        if (taken >= m)
            break;
    }
    return hs_fmin(j->info.nodes * s->plat.node_bw, sum);
}

static double place_alone_bw(const hs_sched_t *s, const struct job *j)
{
    double sum = 0;
    int k;

    if (j->nplace == 0)
        return hs_fmin(j->info.nodes * s->plat.node_bw, s->plat.bw);
    for (k = 0; k < j->nplace; k++)
        sum += s->nodes[j->place[k]].bw;
    return hs_fmin(j->info.nodes * s->plat.node_bw, sum);
}

/* Place the pending phase of j on 'nodes'; its rate alone there (alone_bw) is a
 * function of the placement and of constants, so it is computed here once rather
 * than at every decision. */
static int set_place(const hs_sched_t *s, struct job *j, const int *nodes, int n)
{
    if (n > j->place_cap) {
        int *p = realloc(j->place, (size_t)n * sizeof(*p));
        if (!p)
            return -1;
        j->place = p;
        j->place_cap = n;
    }
    if (n > 0)
        memcpy(j->place, nodes, (size_t)n * sizeof(*nodes));
    j->nplace = n;
    j->place0 = n > 0 ? nodes[0] : -1;
    j->placed = true;
    j->alone_bw = place_alone_bw(s, j);
    return 0;
}

void bscratch_free(struct bscratch *b)
{
    if (!b)
        return;
    free(b->gv);
    free(b->gidx);
    free(b->off);
    free(b->sphase);
    free(b->snode);
    free(b->sflag);
    free(b->direct);
    free(b->pthrottled);
    free(b->sgrant);
    free(b->srate);
    free(b->sorder);
    free(b->nfirst);
    free(b->pgrant);
    free(b->prate);
    free(b->pcap);
    free(b->wcap);
    free(b->wout);
    free(b->wsc);
    free(b->tmp);
    free(b);
}

int bscratch_reserve(hs_sched_t *s, size_t n, size_t ns)
{
    struct bscratch *b = s->bs;
    size_t nb = (size_t)s->plat.nbuffers;
    size_t nn = n + nb + 1; /* flows of the PFS water-filling */
    size_t need = ns > nn ? ns : nn;

    if (!b) {
        if (!(b = calloc(1, sizeof(*b))))
            return -1;
        s->bs = b;
    }
    if (n + 1 > b->ncap) {
        size_t c = n + 1 > 64 ? n + 1 : 64;
        void *p;
#define RE(f) \
    if (!(p = realloc(b->f, c * sizeof(*b->f)))) \
        return -1; \
    b->f = p
        RE(off);
        RE(pgrant);
        RE(prate);
        RE(pcap);
        RE(direct);
        RE(pthrottled);
#undef RE
        b->ncap = c;
    }
    if (need > b->scap) {
        size_t c = need > 64 ? need : 64;
        void *p;
#define RE(f) \
    if (!(p = realloc(b->f, c * sizeof(*b->f)))) \
        return -1; \
    b->f = p
        RE(gv);
        RE(gidx);
        RE(sphase);
        RE(snode);
        RE(sflag);
        RE(sgrant);
        RE(srate);
        RE(sorder);
        RE(wcap);
        RE(wout);
        RE(wsc);
#undef RE
        b->scap = c;
    }
    if (nb + 1 > b->ncap_nodes) {
        void *p;
        if (!(p = realloc(b->nfirst, (nb + 1) * sizeof(*b->nfirst))))
            return -1;
        b->nfirst = p;
        if (!(p = realloc(b->tmp, (nb + 1) * sizeof(*b->tmp))))
            return -1;
        b->tmp = p;
        b->ncap_nodes = nb + 1;
    }
    return 0;
}

static int cmp_wf_key(const void *a, const void *b)
{
    const hs_wf_item_t *x = a;
    const hs_wf_item_t *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Max-min fair sharing of 'total' among n flows with caps: out[i] = min(cap[i],
 * level).  O(n log n). */
static void waterfill(const double *cap, double *out, size_t n, double total, hs_wf_item_t *sc)
{
    double avail = total;
    size_t i;

    for (i = 0; i < n; i++) {
        sc[i].key = cap[i] > 0 ? cap[i] : 0;
        sc[i].idx = i;
        out[i] = 0;
    }
    /* (key, idx) is a total order: skipping the sort when the entries are already
     * in order (equal caps, the common case) gives the same result */
    for (i = 1; i < n && cmp_wf_key(&sc[i - 1], &sc[i]) < 0; i++)
        ;
    if (i < n)
        qsort(sc, n, sizeof(*sc), cmp_wf_key);
    for (i = 0; i < n; i++) {
        double level = avail / (double)(n - i);
        if (sc[i].key <= level) {
            out[sc[i].idx] = sc[i].key;
            avail -= sc[i].key;
            if (avail < 0)
                avail = 0;
            continue;
        }
        for (; i < n; i++)
            out[sc[i].idx] = level;
        return;
    }
}

/* MSCA of a node for a mix of nw write and nr read streams (c = nw + nr). */
static double mix_bw(const hs_sched_t *s, int node, int nw, int nr)
{
    const hs_buffer_t *b = &s->plat.buffers[node];
    int c = nw + nr;
    double m;

    if (c <= 0)
        return s->nodes[node].bw;
    m = (nw * hs_msca(b, HS_DIR_WRITE, c) + nr * hs_msca(b, HS_DIR_READ, c)) / c;
    return s->nodes[node].bw / (1. + m);
}

/*
 * Place phase i (job j), which has no placement yet (policies without 'places'):
 * the m nodes of the job's allocation with the fewest placed phases, then the most
 * free space, then the lowest index; static: the whole allocation.  Counts it in
 * placed[].  hs_sched_decide() counts the phases placed already (not complete),
 * then calls this for the others in id order.
 */
int place_phase(hs_sched_t *s, size_t i, struct job *j)
{
    struct bscratch *bs = s->bs;
    const int *list;
    int na, m, r, k;

    na = job_nodes(s, j, &list);
    m = job_stripe(s, j);
    if (s->pol.kind == HS_POL_STATIC) {
        for (r = 0; r < na; r++)
            bs->tmp[r] = nodes_at(list, r);
        m = na;
    } else {
        for (r = 0; r < m; r++) {
            int best = -1;
            for (k = 0; k < na; k++) {
                int x = nodes_at(list, k);
                const struct bnode *bx = &s->nodes[x];
                int q;
                bool taken = false;
                for (q = 0; q < r; q++)
                    taken = taken || bs->tmp[q] == x;
                if (taken)
                    continue;
                if (best < 0) {
                    best = x;
                    continue;
                }
                {
                    const struct bnode *bb = &s->nodes[best];
                    double fx = bx->cap - bx->occ, fb = bb->cap - bb->occ;
                    if (bx->placed < bb->placed
                        || (bx->placed == bb->placed && (fx > fb || (fx == fb && x < best))))
                        best = x;
                }
            }
            bs->tmp[r] = best;
        }
    }
    if (set_place(s, j, bs->tmp, m) < 0)
        return -1;
    if (!s->views[i].complete) {
        for (r = 0; r < m; r++)
            s->nodes[bs->tmp[r]].placed++;
    }
    return 0;
}

/* Job j's pending phase takes the placement 'nodes' (n of them) as it is, with no
 * choice of its own (a look-ahead copy of a live phase, hs_core_phase_copy()). */
int bnode_set_place(const hs_sched_t *s, struct job *j, const int *nodes, int n)
{
    for (int k = 0; k < n; k++)
        if (nodes[k] < 0 || nodes[k] >= s->plat.nbuffers) {
            errno = EINVAL;
            return -1;
        }
    return set_place(s, j, nodes, n);
}

/* The stripes of phase i (job j, placed), appended to bs's stripe arrays; its
 * view takes the placement and its cap there. */
void add_stripes(hs_sched_t *s, size_t i, const struct job *j)
{
    struct bscratch *bs = s->bs;
    hs_view_t *v = &s->views[i];
    unsigned char f = (v->dir == HS_DIR_READ ? SF_READ : 0) | (v->complete ? SF_DONE : 0);
    size_t ns = bs->ns;
    int k;

    bs->off[i] = ns;
    v->cap = j->alone_bw; /* set_place() computed it */
    bs->pcap[i] = v->cap;
    v->nplace = j->nplace;
    v->place = j->place;
    v->buffer = j->nplace > 0 ? j->place0 : -1;
    for (k = 0; k < j->nplace; k++) {
        bs->sphase[ns] = i;
        bs->snode[ns] = k == 0 ? j->place0 : j->place[k];
        bs->sflag[ns] = f;
        bs->sgrant[ns] = 0;
        bs->srate[ns] = 0;
        ns++;
    }
    if (j->nplace == 0)
        bs->direct[bs->ndirect++] = i;
    bs->pgrant[i] = 0;
    bs->prate[i] = 0;
    bs->pthrottled[i] = false;
    bs->ns = ns;
}

/* A policy with 'places' chose v->buffer: apply it to phases not started. */
static int apply_policy_places(hs_sched_t *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        hs_view_t *v = &s->views[i];
        struct job *j = &s->jobs[s->ids[i].slot];
        const int *list;
        int na = job_nodes(s, j, &list), k;
        bool ok = v->buffer == -1;
        if (j->placed && j->done > 0)
            continue; /* started: its placement is fixed */
        for (k = 0; k < na && !ok; k++)
            ok = nodes_at(list, k) == v->buffer;
        if (!ok) {
            errno = EPROTO;
            return -1;
        }
        if (set_place(s, j, &v->buffer, v->buffer < 0 ? 0 : 1) < 0)
            return -1;
    }
    return 0;
}

/* Phase i striped over m > 0 stripes: m x the least of its stripes' x[], at most
 * its cap. */
static inline double stripes_min(const hs_sched_t *s, size_t i, const double *x)
{
    const struct bscratch *bs = s->bs;
    size_t m = bs->off[i + 1] - bs->off[i], st;
    double mn = INFINITY;

    if (m == 1) {
        /* the usual single stripe: hs_fmin(INFINITY, x) is x, or INFINITY when x
         * is a NaN, and 1 x mn is mn */
        mn = x[bs->off[i]];
        return hs_fmin(mn != mn ? INFINITY : mn, bs->pcap[i]);
    }
    for (st = bs->off[i]; st < bs->off[i + 1]; st++)
        mn = hs_fmin(mn, x[st]);
    return hs_fmin((double)m * mn, bs->pcap[i]);
}

/* Each of phase i's m stripes gets v / m (exactly v for the usual single stripe). */
static inline void stripes_spread(const struct bscratch *bs, size_t i, double v, double *x)
{
    size_t m = bs->off[i + 1] - bs->off[i], st;

    if (m == 1)
        x[bs->off[i]] = v;
    else
        for (st = bs->off[i]; st < bs->off[i + 1]; st++)
            x[st] = v / (double)m;
}

/* phase rate = m x min over its stripes of the stripe rate; stripes follow it. */
static void stripes_follow(hs_sched_t *s, size_t n)
{
    struct bscratch *bs = s->bs;
    size_t i;

    for (i = 0; i < n; i++) {
        size_t m = bs->off[i + 1] - bs->off[i];
        if (m == 0)
            continue;
        bs->prate[i] = stripes_min(s, i, bs->srate);
        stripes_spread(bs, i, bs->prate[i], bs->srate);
    }
}

/* Share each node's BW(c) among its granted stripes, capped by 'caps' (per stripe). */
static void device_share(hs_sched_t *s, const double *caps)
{
    struct bscratch *bs = s->bs;
    int k;

    for (k = 0; k < s->plat.nbuffers; k++) {
        size_t a = bs->nfirst[k], b = bs->nfirst[k + 1], q, g = 0;
        int nw = 0, nr = 0;
        for (q = a; q < b; q++) {
            size_t st = bs->sorder[q];
            if (caps[st] > 0) {
                if (bs->sflag[st] & SF_READ)
                    nr++;
                else
                    nw++;
                bs->wcap[g++] = caps[st];
            }
        }
        waterfill(bs->wcap, bs->wout, g, mix_bw(s, k, nw, nr), bs->wsc);
        g = 0;
        for (q = a; q < b; q++) {
            size_t st = bs->sorder[q];
            bs->srate[st] = caps[st] > 0 ? bs->wout[g++] : 0;
        }
    }
}

/*
 * One decision on a platform with buffers (doc/buffer-tier.md §3):
 *   1. placement; 2. the policy's grants (per node, or once for 'places'
 *   policies; static: none); 3. the MSCA model per node; 4. the PFS shared by the
 *   drains and the phases sent to it; 5. full nodes limit their writers to their
 *   drain.  Leaves the rates in s->views[i].bw.
 */
int decide_buffers(hs_sched_t *s, const hs_ctx_t *ctx, size_t n, hs_group_decide_fn decide_group)
{
    struct bscratch *bs = s->bs; /* reserved by hs_sched_decide() */
    int nb = s->plat.nbuffers, k;
    size_t i, st, ns, nf;
    double B = s->plat.bw;
    bool from_stripes = false;

    /* 1. placement, and the stripes: hs_sched_decide() did both while it filled
     * the views, except for the policies that place (views' buffer set there) */
    if (s->ops->places) {
        if (n > 0 && s->ops->decide(s->pstate, ctx, s->views, n) < 0)
            return -1;
        if (apply_policy_places(s, n) < 0)
            return -1;
        for (i = 0; i < n; i++)
            add_stripes(s, i, &s->jobs[s->ids[i].slot]);
    }
    ns = bs->ns;
    bs->off[n] = ns;

    /* stripes by node (counting sort) */
    for (k = 0; k <= nb; k++)
        bs->nfirst[k] = 0;
    for (st = 0; st < ns; st++)
        bs->nfirst[bs->snode[st] + 1]++;
    for (k = 0; k < nb; k++)
        bs->nfirst[k + 1] += bs->nfirst[k];
    for (k = 0; k < nb; k++)
        s->nodes[k].streams = (int)bs->nfirst[k]; /* reused as a cursor */
    for (st = 0; st < ns; st++)
        bs->sorder[s->nodes[bs->snode[st]].streams++] = st;

    /* 2. grants */
    if (s->ops->places) {
        for (i = 0; i < n; i++) {
            hs_view_t *v = &s->views[i];
            if (!isfinite(v->bw) || v->bw < 0) {
                errno = EPROTO;
                return -1;
            }
            bs->pgrant[i] = v->complete ? 0 : hs_fmin(v->bw, v->cap);
        }
    } else if (s->pol.kind == HS_POL_STATIC) {
        for (i = 0; i < n; i++)
            bs->pgrant[i] = s->views[i].complete ? 0 : s->views[i].cap;
    } else {
        size_t g = 0;
        /* the PFS group */
        for (g = 0; g < bs->ndirect; g++)
            bs->gidx[g] = bs->direct[g];
        if (g > 0 && decide_group(s, ctx, g, B, false) < 0)
            return -1;
        /* one group per node, B = BW(c) of the streams it lets run */
        for (k = 0; k < nb; k++) {
            size_t a = bs->nfirst[k], b = bs->nfirst[k + 1], q;
            int nw = 0, nr = 0, c, it;
            g = 0;
            for (q = a; q < b; q++) {
                size_t x = bs->sorder[q];
                if (bs->sflag[x] & SF_DONE)
                    continue;
                bs->gidx[g++] = x;
                if (bs->sflag[x] & SF_READ)
                    nr++;
                else
                    nw++;
            }
            if (g == 0)
                continue;
            c = nw + nr;
            for (it = 0; it < 3; it++) {
                int gw = 0, gr = 0;
                if (decide_group(s, ctx, g, mix_bw(s, k, nw, nr), true) < 0)
                    return -1;
                for (q = 0; q < g; q++) {
                    if (bs->sgrant[bs->gidx[q]] > 0) {
                        if (bs->sflag[bs->gidx[q]] & SF_READ)
                            gr++;
                        else
                            gw++;
                    }
                }
                if (gw + gr == c || gw + gr == 0)
                    break;
                nw = gw;
                nr = gr;
                c = gw + gr;
            }
        }
        /* a striped phase's grant is m x the least of its stripes' grants: done
         * in the next loop, with which it shares the pass */
        from_stripes = true;
    }

    /* 3. the device model: BW(c) of each node shared max-min among its granted
     * stripes (twice: what a stripe cannot use because of another node goes to
     * the others) */
    for (i = 0; i < n; i++) {
        size_t m = bs->off[i + 1] - bs->off[i];
        if (m == 0) {
            bs->prate[i] = bs->pgrant[i];
            continue;
        }
        if (from_stripes)
            bs->pgrant[i] = stripes_min(s, i, bs->sgrant);
        stripes_spread(bs, i, bs->pgrant[i], bs->sgrant);
    }
    device_share(s, bs->sgrant);
    /* second pass: a stripe is capped by what its phase's other stripes got, and
     * what it leaves goes to the others on its node */
    for (i = 0; i < n; i++) {
        size_t m = bs->off[i + 1] - bs->off[i];
        if (m == 1) { /* pgrant / 1, and no other stripe */
            bs->sgrant[bs->off[i]] = bs->pgrant[i];
            continue;
        }
        for (st = bs->off[i]; st < bs->off[i + 1]; st++) {
            double c = bs->pgrant[i] / (double)m;
            size_t t2;
            for (t2 = bs->off[i]; t2 < bs->off[i + 1]; t2++) {
                if (t2 != st)
                    c = hs_fmin(c, bs->srate[t2]);
            }
            bs->sgrant[st] = c;
        }
    }
    device_share(s, bs->sgrant);
    stripes_follow(s, n);

    /* 4. the PFS: max-min among the drains and the direct phases */
    for (k = 0; k < nb; k++) {
        struct bnode *b = &s->nodes[k];
        double in = 0;
        size_t q;
        for (q = bs->nfirst[k]; q < bs->nfirst[k + 1]; q++) {
            size_t x = bs->sorder[q];
            if (!(bs->sflag[x] & SF_READ))
                in += bs->srate[x];
        }
        b->inflow = in;
        /* a node holding data drains at up to B_j; an empty one passes through
         * what comes in */
        bs->wcap[k] = node_empty(b) ? hs_fmin(b->bw, in) : b->bw;
    }
    for (nf = 0; nf < bs->ndirect; nf++)
        bs->wcap[nb + nf] = bs->pgrant[bs->direct[nf]];
    waterfill(bs->wcap, bs->wout, nb + bs->ndirect, B, bs->wsc);
    for (k = 0; k < nb; k++)
        s->nodes[k].drain = bs->wout[k];
    for (nf = 0; nf < bs->ndirect; nf++)
        bs->prate[bs->direct[nf]] = bs->wout[nb + nf];

    /* 5. full nodes: writers get what drains (pthrottled[] was reset by
     * add_stripes(); the store loop copies it into the jobs) */
    for (k = 0; k < nb; k++) {
        struct bnode *b = &s->nodes[k];
        size_t q, g = 0;
        b->full = node_full(b);
        if (!b->full || !(b->inflow > b->drain * (1 + HS_EPS_REL)))
            continue;
        for (q = bs->nfirst[k]; q < bs->nfirst[k + 1]; q++) {
            size_t x = bs->sorder[q];
            if (!(bs->sflag[x] & SF_READ) && bs->srate[x] > 0)
                bs->wcap[g++] = bs->srate[x];
        }
        waterfill(bs->wcap, bs->wout, g, b->drain, bs->wsc);
        g = 0;
        for (q = bs->nfirst[k]; q < bs->nfirst[k + 1]; q++) {
            size_t x = bs->sorder[q];
            if (!(bs->sflag[x] & SF_READ) && bs->srate[x] > 0) {
                if (bs->wout[g] < bs->srate[x])
                    bs->pthrottled[bs->sphase[x]] = true;
                bs->srate[x] = bs->wout[g++];
            }
        }
    }
    stripes_follow(s, n);

    /* the nodes' rates from the final stripe rates */
    for (k = 0; k < nb; k++) {
        struct bnode *b = &s->nodes[k];
        size_t q;
        double in = 0, rd = 0;
        int c = 0;
        for (q = bs->nfirst[k]; q < bs->nfirst[k + 1]; q++) {
            size_t x = bs->sorder[q];
            if (bs->srate[x] <= 0)
                continue;
            c++;
            if (bs->sflag[x] & SF_READ)
                rd += bs->srate[x];
            else
                in += bs->srate[x];
        }
        b->inflow = in;
        b->readrate = rd;
        b->streams = c;
        if (c > b->conc_max)
            b->conc_max = c;
        if (node_empty(b))
            b->drain = hs_fmin(b->drain, in); /* empty: drains what comes */
    }
    /* the final rates, checked as check_grants(views, n, INFINITY, false) would
     * (in the same pass): each within its cap (complete phases have 0); the
     * nodes' model, not B, bounds their sum */
    for (i = 0; i < n; i++) {
        hs_view_t *v = &s->views[i];
        v->bw = v->complete ? 0 : hs_fmin(bs->prate[i], v->cap);
        if (s->pol.kind == HS_POL_STATIC || s->ops->places) {
            if (v->bw > 0 && !(v->weight > 0))
                v->weight = v->bw / fmax(v->cap, 1e-300);
        }
        if (!isfinite(v->bw) || v->bw < 0 || v->bw > v->cap * (1 + HS_EPS_REL)) {
            errno = EPROTO;
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ buffer access */

int hs_core_nbuffers(const hs_sched_t *s)
{
    return s ? s->plat.nbuffers : 0;
}

int hs_buffer_stats(const hs_sched_t *s, int j, hs_buffer_stats_t *st)
{
    struct bnode o;

    if (!s || !st || j < 0 || j >= s->plat.nbuffers) {
        errno = EINVAL;
        return -1;
    }
    node_at(&s->nodes[j], isfinite(s->bt) ? s->now - s->bt : 0, &o);
    *st = (hs_buffer_stats_t){
        .capacity = o.cap,
        .occupancy = o.occ,
        .inflow = o.inflow,
        .drain = o.drain,
        .streams = o.streams,
        .placed = o.placed,
        .full = node_full(&o),
        .busy = o.busy,
        .concurrency_mean = o.busy > 0 ? o.conc_int / o.busy : 0,
        .concurrency_max = o.conc_max,
        .written = o.written,
        .read = o.read,
        .drained = o.drained,
        .occupancy_max = o.occ_max,
        .full_time = o.full_time,
    };
    return 0;
}

/* The scheduler's view of a node is a part of its figures (one computation). */
int hs_core_node_state(const hs_sched_t *s, int j, hs_node_state_t *ns)
{
    hs_buffer_stats_t st;

    if (!ns || hs_buffer_stats(s, j, &st) < 0) {
        errno = EINVAL;
        return -1;
    }
    *ns = (hs_node_state_t){
        .buf = &s->plat.buffers[j],
        .capacity = st.capacity,
        .bandwidth = s->nodes[j].bw,
        .occupancy = st.occupancy,
        .inflow = st.inflow,
        .drain = st.drain,
        .streams = st.streams,
        .placed = st.placed,
        .full = st.full,
    };
    return 0;
}

int hs_buffer_set_occupancy(hs_sched_t *s, double now, int j, double bytes)
{
    struct bnode *b;

    if (!s || j < 0 || j >= s->plat.nbuffers || check_time(s, now) < 0 || !(bytes >= 0)
        || !isfinite(bytes)) {
        errno = EINVAL;
        return -1;
    }
    integrate(s, now);
    nodes_sync(s);
    b = &s->nodes[j];
    b->occ = hs_fmin(bytes, b->cap);
    if (b->occ > b->occ_max)
        b->occ_max = b->occ;
    return 0;
}
