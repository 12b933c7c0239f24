/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_online.c — the online policies: decided at each event from the current state
 * only (doc/design.md §3).  Each decide() fills v[i].bw for the pending phases; phases
 * already complete in the model (v[i].complete) need nothing and get 0.
 *
 * Notation (doc/design.md §2): B the I/O system's bandwidth, b a node's,
 * beta_k the nodes of job k, cap_k = min(beta_k b, B) the most job k can use.
 * Every decision sorts once: O(K log K) in the number K of pending phases.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hsched.h"
#include "policy.h"

/* --------------------------------------------------------------- scratch state */

typedef struct {
    double k[3];
    uint64_t id;
    size_t idx;
} sortkey_t;

typedef struct {
    size_t cap;
    sortkey_t *keys;
    size_t *order;
    double *w;
    hs_wf_item_t *wf;
} scratch_t;

static int scratch_create(const hs_ctx_t *ctx, void **state, hu_error_t *err)
{
    scratch_t *sc = calloc(1, sizeof(*sc));

    if (!sc) {
        if (err)
            strcpy(err->text, "out of memory");
        errno = ENOMEM;
        return -1;
    }
    *state = sc;
    return 0;
}

static void scratch_destroy(void *state)
{
    int saved = errno;
    scratch_t *sc = state;

    if (sc) {
        free(sc->keys);
        free(sc->order);
        free(sc->w);
        free(sc->wf);
        free(sc);
    }
    errno = saved;
}

static int scratch_reserve(scratch_t *sc, size_t n)
{
    size_t ncap;
    sortkey_t *keys;
    size_t *order;
    double *w;
    hs_wf_item_t *wf;

    if (n <= sc->cap)
        return 0;
    ncap = sc->cap ? sc->cap : 64;
    while (ncap < n)
        ncap *= 2;
    if ((keys = realloc(sc->keys, ncap * sizeof(*keys))))
        sc->keys = keys;
    if ((order = realloc(sc->order, ncap * sizeof(*order))))
        sc->order = order;
    if ((w = realloc(sc->w, ncap * sizeof(*w))))
        sc->w = w;
    if ((wf = realloc(sc->wf, ncap * sizeof(*wf))))
        sc->wf = wf;
    if (!keys || !order || !w || !wf) {
        errno = ENOMEM;
        return -1;
    }
    sc->cap = ncap;
    return 0;
}

static int cmp_double(double a, double b)
{
    return (a > b) - (a < b);
}

static int cmp_sortkey(const void *a, const void *b)
{
    const sortkey_t *x = a;
    const sortkey_t *y = b;
    int c, i;

    for (i = 0; i < 3; i++) {
        if ((c = cmp_double(x->k[i], y->k[i])))
            return c;
    }
    return (x->id > y->id) - (x->id < y->id);
}

static int cmp_wf(const void *a, const void *b)
{
    const hs_wf_item_t *x = a;
    const hs_wf_item_t *y = b;
    int c = cmp_double(x->key, y->key);

    if (c)
        return c;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* --------------------------------------------------------------- allocation */

/*
 * Gainaru §3.1: "favoring App(k) means that App(k) is executed as fast as possible,
 * with bandwidth min(b beta(k), bw_avail), where bw_avail is the available bandwidth
 * at the moment the decision is taken".  Favour in 'order'; the rest goes on.
 */
double hs_alloc_favour(hs_view_t *v, const size_t *order, size_t n, double B)
{
    double avail = B;
    size_t i;

    for (i = 0; i < n; i++) {
        hs_view_t *x = &v[order[i]];
        double bw = hs_fmin(x->cap, avail);
        if (bw <= 0 || x->complete)
            continue;
        x->bw = bw;
        x->weight = bw / B;
        avail -= bw;
        if (avail <= B * 1e-12)
            avail = 0;
    }
    return avail;
}

/*
 * Weighted max-min fairness by water-filling: find the level lambda such that
 * sum_j min(cap_j, lambda w_j) = B (or every entry is capped).  Sorting by cap_j/w_j,
 * the entries below the current level are capped and their leftover is shared by
 * the others in proportion to their weights.  O(n log n).
 */
double hs_alloc_waterfill(hs_view_t *v, const size_t *idx, const double *w, size_t n, double B,
                          hs_wf_item_t *sc)
{
    double avail = B;
    double level;
    size_t i, j;

    if (n == 0)
        return B;
    for (i = 0; i < n; i++) {
        sc[i].w = w[i];
        sc[i].idx = idx[i];
        sc[i].key = v[idx[i]].cap / w[i];
    }
    /* (key, idx) is a total order when idx[] has no duplicates: skip the sort when
     * the entries are already in order (equal caps and weights, the common case) */
    for (i = 1; i < n && cmp_wf(&sc[i - 1], &sc[i]) < 0; i++)
        ;
    if (i < n)
        qsort(sc, n, sizeof(*sc), cmp_wf);
    /* once sorted, .key holds the suffix sums of the weights (no cancellation as
     * a running "sum -= w" would have with weights of very different sizes) */
    {
        double sum = 0;
        for (i = n; i-- > 0;) {
            sum += sc[i].w;
            sc[i].key = sum;
        }
    }
    for (i = 0; i < n; i++) {
        hs_view_t *x = &v[sc[i].idx];
        level = avail / sc[i].key; /* avail / sum of remaining weights */
        if (x->cap <= level * sc[i].w) {
            x->bw = x->cap;
            avail -= x->cap;
            if (avail < 0)
                avail = 0;
            continue;
        }
        for (j = i; j < n; j++) {
            hs_view_t *y = &v[sc[j].idx];
            y->bw = hs_fmin(y->cap, level * sc[j].w);
        }
        return 0;
    }
    return avail;
}

int hs_iosets_class(double w_iter, double base)
{
    double l;

    if (!(w_iter > 0))
        w_iter = DBL_MIN;
    l = (base == 10) ? log10(w_iter) : log(w_iter) / log(base);
    if (l > 100000)
        l = 100000;
    if (l < -100000)
        l = -100000;
    return (int)lround(l);
}

/* Indices of the phases that still need bandwidth. */
static size_t active_set(const hs_view_t *v, size_t n, size_t *idx)
{
    size_t i, m = 0;

    for (i = 0; i < n; i++) {
        if (!v[i].complete)
            idx[m++] = i;
    }
    return m;
}

/* --------------------------------------------------------------- fairshare */

/*
 * fairshare (baseline, doc/design.md §3; the congestion of a PFS, Gainaru §1/§4.4 and
 * IO-Sets "Fair-share scheduling"): max-min fair sharing.  Every phase gets
 * min(cap_k, lambda) where lambda solves sum_k min(cap_k, lambda) = B (or all are
 * capped): equal shares of B, capped at min(beta_k b, B), leftovers redistributed.
 * Weight: 1/m for the m phases competing.
 * 'static' uses this too while there is no buffer tier (see doc/policies.md).
 */
static int fairshare_decide(void *state, const hs_ctx_t *ctx, hs_view_t *v, size_t n)
{
    scratch_t *sc = state;
    size_t m, i;

    if (scratch_reserve(sc, n) < 0)
        return -1;
    m = active_set(v, n, sc->order);
    for (i = 0; i < m; i++)
        sc->w[i] = 1.0;
    hs_alloc_waterfill(v, sc->order, sc->w, m, ctx->plat->bw, sc->wf);
    for (i = 0; i < m; i++)
        v[sc->order[i]].weight = 1.0 / m;
    return 0;
}

const hs_policy_ops_t hs_ops_fairshare = {
    .name = "fairshare",
    .create = scratch_create,
    .destroy = scratch_destroy,
    .decide = fairshare_decide,
};

/* --------------------------------------------------------------- fcfs */

/* Sort the active phases by key (filled by 'keyf') and favour them in that order. */
typedef void (*keyf_t)(const hs_ctx_t *ctx, const hs_view_t *x, double k[3], void *arg);

static int favour_by(scratch_t *sc, const hs_ctx_t *ctx, hs_view_t *v, size_t n, keyf_t keyf,
                     void *arg)
{
    size_t m, i;

    if (scratch_reserve(sc, n) < 0)
        return -1;
    m = active_set(v, n, sc->order);
    for (i = 0; i < m; i++) {
        sortkey_t *k = &sc->keys[i];
        k->idx = sc->order[i];
        k->id = v[k->idx].id;
        keyf(ctx, &v[k->idx], k->k, arg);
    }
    if (m > 1)
        qsort(sc->keys, m, sizeof(*sc->keys), cmp_sortkey);
    for (i = 0; i < m; i++)
        sc->order[i] = sc->keys[i].idx;
    hs_alloc_favour(v, sc->order, m, ctx->plat->bw);
    return 0;
}

static void fcfs_key(const hs_ctx_t *ctx, const hs_view_t *x, double k[3], void *arg)
{
    k[0] = x->request;
    k[1] = 0;
    k[2] = 0;
}

/*
 * fcfs (baseline; "exclusive access" in IO-Sets): favour (Gainaru §3.1) the phases
 * in the order of their requests (ties: job id).  The first gets min(beta b, B); if
 * it cannot use all of B the next one gets what is left, and so on.
 */
static int fcfs_decide(void *state, const hs_ctx_t *ctx, hs_view_t *v, size_t n)
{
    return favour_by(state, ctx, v, n, fcfs_key, NULL);
}

const hs_policy_ops_t hs_ops_fcfs = {
    .name = "fcfs",
    .create = scratch_create,
    .destroy = scratch_destroy,
    .decide = fcfs_decide,
};

/* --------------------------------------------------------------- Gainaru §3.1 */

/* rho~/rho, the dilation's inverse (1 when rho is 0: no compute at all). */
static double ratio(const hs_view_t *x)
{
    return x->rho > 0 ? x->rho_tilde / x->rho : 1.0;
}

enum { ORDER_RR, ORDER_MINDIL, ORDER_MAXSYS };

static void gainaru_key(const hs_ctx_t *ctx, const hs_view_t *x, double k[3], void *arg)
{
    int order = *(const int *)arg;

    /* -priority: phases that had bw > 0 at the previous decision go first */
    k[0] = (ctx->pol->priority && x->active) ? 0 : 1;
    switch (order) {
    case ORDER_RR:
        k[1] = x->last_io_end; /* longest ago first */
        break;
    case ORDER_MINDIL:
        k[1] = ratio(x); /* lowest rho~/rho first */
        break;
    default:
        k[1] = x->job->nodes * x->rho_tilde; /* lowest beta rho~ first */
        break;
    }
    k[2] = x->request;
}

/*
 * Gainaru §3.1 online heuristics; each favours (min(beta b, bw_avail), the rest to
 * the next) the pending phases in the order of a key, ties by request time then id:
 *   roundrobin   the job whose previous I/O ended the longest time ago (its release
 *                time if it has done none): "the application that finished the I/O
 *                transfer of its last instance the longest time ago is favored";
 *                with no congestion every phase gets its cap anyway;
 *   mindilation  the lowest rho~_k(t)/rho_k(t);
 *   maxsyseff    the lowest beta_k rho~_k(t);
 *   minmax:g     maxsyseff's order, unless some pending job has rho~/rho < g: then
 *                mindilation's order (doc/design.md §3: "maxsyseff unless some job has
 *                rho~/rho < gamma, then mindilation"); g = 1 is mindilation up to
 *                ties, g = 0 is maxsyseff.
 *   -priority    "always chooses applications that already started performing their
 *                I/O before favoring any other": phases with bw > 0 at the previous
 *                decision first (in the base order), then the others.
 * rho and rho~ count the pending instance (see hs_core.c).
 */
static int gainaru_decide(void *state, const hs_ctx_t *ctx, hs_view_t *v, size_t n)
{
    int order;
    size_t i;

    switch (ctx->pol->kind) {
    case HS_POL_ROUNDROBIN:
        order = ORDER_RR;
        break;
    case HS_POL_MINDILATION:
        order = ORDER_MINDIL;
        break;
    case HS_POL_MAXSYSEFF:
        order = ORDER_MAXSYS;
        break;
    case HS_POL_MINMAX:
        order = ORDER_MAXSYS;
        for (i = 0; i < n; i++) {
            if (!v[i].complete && ratio(&v[i]) < ctx->pol->gamma) {
                order = ORDER_MINDIL;
                break;
            }
        }
        break;
    default:
        errno = EINVAL;
        return -1;
    }
    return favour_by(state, ctx, v, n, gainaru_key, &order);
}

const hs_policy_ops_t hs_ops_gainaru = {
    .name = "gainaru-online",
    .create = scratch_create,
    .destroy = scratch_destroy,
    .decide = gainaru_decide,
};

/* --------------------------------------------------------------- IO-Sets */

/*
 * IO-Sets ([IO-Sets], "IO-Sets" and "Set-10 heuristic"):
 *   set10, set:<base>  job k is in set i = round(log_base w_iter_k) (w_iter assessed at
 *       the start of the phase); only one job per set does I/O: the earliest request
 *       of the set (ties: id); the active sets share B by x_i = p_i / sum_j p_j with
 *       p_i = base^-i, e.g. sets 1, 2, 3 get 0.90, 0.09, 0.009.  Work-conserving: a
 *       set whose job is capped at min(beta b, B) leaves the rest to the other sets
 *       by the same weights (weighted water-filling).  Exclusivity inside a set is
 *       kept even then.
 *   set-fairshare  the same sets, exclusive inside, equal weights between sets.
 *   priority-sharing  no sets: every pending phase shares B (water-filling) with
 *       weight base^-round(log_base w_iter_k).
 * Weights are computed as base^-(i - i_min) to stay in range; the weight reported
 * is the normalised one (x_i), 0 for jobs waiting in their set.
 */
static int iosets_decide(void *state, const hs_ctx_t *ctx, hs_view_t *v, size_t n)
{
    scratch_t *sc = state;
    const hs_policy_t *pol = ctx->pol;
    double base = pol->set_base > 1 ? pol->set_base : 10;
    size_t m, i, nh = 0;
    int cmin = 0;
    double sumw = 0;

    if (scratch_reserve(sc, n) < 0)
        return -1;
    m = active_set(v, n, sc->order);
    if (m == 0)
        return 0;
    for (i = 0; i < m; i++) {
        sortkey_t *k = &sc->keys[i];
        int c = hs_iosets_class(v[sc->order[i]].w_iter, base);
        k->idx = sc->order[i];
        k->id = v[k->idx].id;
        k->k[0] = c;
        k->k[1] = v[k->idx].request;
        k->k[2] = 0;
        if (i == 0 || c < cmin)
            cmin = c;
    }
    if (pol->kind == HS_POL_PRIORITY_SHARING) {
        for (i = 0; i < m; i++) {
            sc->order[i] = sc->keys[i].idx;
            sc->w[i] = fmax(pow(base, -(sc->keys[i].k[0] - cmin)), 1e-300);
            sumw += sc->w[i];
        }
        nh = m;
    } else {
        if (m > 1)
            qsort(sc->keys, m, sizeof(*sc->keys), cmp_sortkey);
        for (i = 0; i < m; i++) {
            if (i > 0 && sc->keys[i].k[0] == sc->keys[i - 1].k[0])
                continue; /* not the head of its set */
            sc->order[nh] = sc->keys[i].idx;
            if (pol->kind == HS_POL_SET)
                sc->w[nh] = fmax(pow(base, -(sc->keys[i].k[0] - cmin)), 1e-300);
            else
                sc->w[nh] = 1.0;
            sumw += sc->w[nh];
            nh++;
        }
    }
    hs_alloc_waterfill(v, sc->order, sc->w, nh, ctx->plat->bw, sc->wf);
    for (i = 0; i < nh; i++)
        v[sc->order[i]].weight = sc->w[i] / sumw;
    return 0;
}

const hs_policy_ops_t hs_ops_iosets = {
    .name = "iosets",
    .create = scratch_create,
    .destroy = scratch_destroy,
    .decide = iosets_decide,
};

/* vi: ts=4 sw=4 expandtab
 */
