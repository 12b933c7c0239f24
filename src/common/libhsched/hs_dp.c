/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_dp.c — Harmonia's dynamic programme: input checks, the model's evaluation of a
 * placement, the exact DP over (node, slot) waves and the exhaustive search.
 * doc/harmonia-dp.md gives the model (§1), the costs (§2), the recurrences (§3) and
 * the fallback (§4, hs_dp_greedy.c).
 */
#if HAVE_CONFIG_H
#include "harmonia_config.h"
#endif
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hs_dp.h"
#include "hs_dp_greedy.h"
#include "policy.h" /* hs_errprintf() */

static const char *cost_names[HS_DP_COST__COUNT] = {
    "harmonia-maxbw",      "harmonia-minstall", "harmonia-fairness",
    "harmonia-buffer-eff", "harmonia-priority",
};

const char *hs_dp_cost_name(hs_dp_cost_t cost)
{
    if ((int)cost < 0 || cost >= HS_DP_COST__COUNT)
        return NULL;
    return cost_names[cost];
}

int hs_dp_cost_from_policy(hs_policy_kind_t kind, hs_dp_cost_t *cost)
{
    switch (kind) {
    case HS_POL_HARMONIA_MAXBW:
        *cost = HS_DP_COST_MAXBW;
        return 0;
    case HS_POL_HARMONIA_MINSTALL:
        *cost = HS_DP_COST_MINSTALL;
        return 0;
    case HS_POL_HARMONIA_FAIRNESS:
        *cost = HS_DP_COST_FAIRNESS;
        return 0;
    case HS_POL_HARMONIA_BUFFER_EFF:
        *cost = HS_DP_COST_BUFFER_EFF;
        return 0;
    case HS_POL_HARMONIA_PRIORITY:
        *cost = HS_DP_COST_PRIORITY;
        return 0;
    default:
        errno = EINVAL;
        return -1;
    }
}

double hs_dp_if(const hs_dp_node_t *node, hs_dir_t dir, int c)
{
    return dpx_if(node, dir, c);
}

void hs_dp_node_from_buffer(hs_dp_node_t *node, const hs_buffer_t *buf)
{
    int k = buf->nmsca < 0 ? 0 : buf->nmsca > 16 ? 16 : buf->nmsca;

    memset(node, 0, sizeof(*node));
    node->capacity = buf->capacity;
    node->bandwidth = buf->bandwidth;
    memcpy(node->msca, buf->msca, sizeof(double) * (size_t)k);
    node->nmsca = k;
    k = buf->nmsca_read < 0 ? 0 : buf->nmsca_read > 16 ? 16 : buf->nmsca_read;
    memcpy(node->msca_read, buf->msca_read, sizeof(double) * (size_t)k);
    node->nmsca_read = k;
}

/* ------------------------------------------------------------ context */

static void dpx_fini(struct dpx *x)
{
    int saved = errno;

    free(x->alone);
    free(x->elig);
    free(x->bg);
    free(x->wvol);
    errno = saved;
}

static int check_curve(const double *v, int k, int j, const char *what, hu_error_t *err)
{
    if (k < 0 || k > 16)
        return hs_errprintf(err, EINVAL, "node %d: %s curve has %d points (0..16)", j, what, k);
    for (int c = 0; c < k; c++)
        if (!isfinite(v[c]) || v[c] <= -1.)
            return hs_errprintf(err, EINVAL, "node %d: %s MSCA(%d) = %g (must be > -1)", j, what,
                                c + 1, v[c]);
    return 0;
}

/* Check the problem and derive the context.  Side-effect free on failure. */
static int dpx_init(struct dpx *x, const hs_dp_problem_t *p, hs_dp_cost_t cost, hu_error_t *err)
{
    memset(x, 0, sizeof(*x));
    if (!p)
        return hs_errprintf(err, EINVAL, "no problem");
    if ((int)cost < 0 || cost >= HS_DP_COST__COUNT)
        return hs_errprintf(err, EINVAL, "unknown cost %d", (int)cost);
    if (p->nphases < 0 || (p->nphases > 0 && !p->phases))
        return hs_errprintf(err, EINVAL, "bad phase list");
    if (p->nnodes < 1 || !p->nodes)
        return hs_errprintf(err, EINVAL, "at least one buffer node is needed");
    if (p->nslots < 1 || p->nslots > HS_DP_MAX_SLOTS)
        return hs_errprintf(err, EINVAL, "slots = %d (1..%d)", p->nslots, HS_DP_MAX_SLOTS);
    if (!isfinite(p->slot) || p->slot <= 0.)
        return hs_errprintf(err, EINVAL, "slot length %g (must be > 0)", p->slot);
    if (p->method < HS_DP_AUTO || p->method > HS_DP_HEURISTIC)
        return hs_errprintf(err, EINVAL, "unknown method %d", (int)p->method);

    for (int j = 0; j < p->nnodes; j++) {
        const hs_dp_node_t *nd = &p->nodes[j];
        if (!isfinite(nd->bandwidth) || nd->bandwidth <= 0.)
            return hs_errprintf(err, EINVAL, "node %d: bandwidth %g", j, nd->bandwidth);
        if (isnan(nd->capacity) || nd->capacity < 0.)
            return hs_errprintf(err, EINVAL, "node %d: capacity %g", j, nd->capacity);
        if (cost == HS_DP_COST_BUFFER_EFF && !isfinite(nd->capacity))
            return hs_errprintf(err, EINVAL,
                                "node %d: harmonia-buffer-eff needs a "
                                "finite capacity",
                                j);
        if (check_curve(nd->msca, nd->nmsca, j, "write", err) < 0
            || check_curve(nd->msca_read, nd->nmsca_read, j, "read", err) < 0)
            return -1;
        if (nd->nrunning < 0 || (nd->nrunning > 0 && !nd->running_end))
            return hs_errprintf(err, EINVAL, "node %d: bad running streams", j);
        for (int r = 0; r < nd->nrunning; r++)
            if (isnan(nd->running_end[r]))
                return hs_errprintf(err, EINVAL, "node %d: running stream %d ends at NaN", j, r);
    }
    for (int i = 0; i < p->nphases; i++) {
        const hs_dp_phase_t *ph = &p->phases[i];
        if (!isfinite(ph->volume) || ph->volume <= 0.)
            return hs_errprintf(err, EINVAL, "phase %d: volume %g", i, ph->volume);
        if (ph->dir != HS_DIR_WRITE && ph->dir != HS_DIR_READ)
            return hs_errprintf(err, EINVAL, "phase %d: bad direction", i);
        if (!isfinite(ph->waited) || ph->waited < 0.)
            return hs_errprintf(err, EINVAL, "phase %d: waited %g", i, ph->waited);
        if (!isfinite(ph->stall) || ph->stall < 0.)
            return hs_errprintf(err, EINVAL, "phase %d: stall %g", i, ph->stall);
        if (ph->priority < 0 || ph->priority > 10)
            return hs_errprintf(err, EINVAL, "phase %d: priority %d (1..10)", i, ph->priority);
        if (ph->nallowed < 0 || (ph->nallowed > 0 && !ph->allowed))
            return hs_errprintf(err, EINVAL, "phase %d: bad allowed list", i);
        for (int k = 0; k < ph->nallowed; k++)
            if (ph->allowed[k] < 0 || ph->allowed[k] >= p->nnodes)
                return hs_errprintf(err, EINVAL, "phase %d: allowed node %d out of range", i,
                                    ph->allowed[k]);
    }

    x->p = p;
    x->cost = cost;
    x->n = p->nphases;
    x->m = p->nnodes;
    x->S = p->nslots;
    x->dt = p->slot;
    x->budget = p->budget > 0. ? p->budget : HS_DP_BUDGET_DEFAULT;
    size_t n = (size_t)x->n, m = (size_t)x->m;
    if (!(x->alone = calloc(n + 1, sizeof(double))) || !(x->elig = calloc(n * m + 1, 1))
        || !(x->bg = calloc(m * (size_t)x->S, sizeof(int)))
        || !(x->wvol = calloc(n + 1, sizeof(double)))) {
        dpx_fini(x);
        return hs_errprintf(err, ENOMEM, "out of memory");
    }
    for (int i = 0; i < x->n; i++) {
        const hs_dp_phase_t *ph = &p->phases[i];
        double best = 0.;
        if (ph->nallowed == 0)
            memset(&x->elig[(size_t)i * m], 1, m);
        for (int k = 0; k < ph->nallowed; k++)
            x->elig[(size_t)i * m + (size_t)ph->allowed[k]] = 1;
        for (int j = 0; j < x->m; j++)
            if (x->elig[(size_t)i * m + (size_t)j] && p->nodes[j].bandwidth > best)
                best = p->nodes[j].bandwidth;
        x->alone[i] = ph->volume / best;
        x->wvol[i] = ph->dir == HS_DIR_WRITE ? ph->volume : 0.;
    }
    for (int j = 0; j < x->m; j++) {
        const hs_dp_node_t *nd = &p->nodes[j];
        for (int s = 0; s < x->S; s++) {
            double t = dpx_start(x, s);
            int c = 0;
            for (int r = 0; r < nd->nrunning; r++)
                if (nd->running_end[r] > t)
                    c++;
            x->bg[j * x->S + s] = c;
        }
    }
    return 0;
}

/* dpx_init() and an assignment of its size (*an, *as: a node and a slot per phase),
 * released by dpx_fini_assign().  On failure, -1 and nothing to release. */
static int dpx_init_assign(struct dpx *x, const hs_dp_problem_t *p, hs_dp_cost_t cost, int **an,
                           int **as, hu_error_t *err)
{
    *an = *as = NULL;
    if (dpx_init(x, p, cost, err) < 0)
        return -1;
    if (!(*an = calloc((size_t)x->n + 1, sizeof(int)))
        || !(*as = calloc((size_t)x->n + 1, sizeof(int)))) {
        free(*an);
        dpx_fini(x);
        return hs_errprintf(err, ENOMEM, "out of memory");
    }
    return 0;
}

static void dpx_fini_assign(struct dpx *x, int *an, int *as)
{
    free(an);
    free(as);
    dpx_fini(x);
}

/* ------------------------------------------------------------ evaluation */

/* Evaluate the placement (anode, aslot) under 'cost'.  Returns 0 and the value, or
 * -1 (EINVAL) if the placement breaks a rule of doc §1.1. */
static int dpx_eval(const struct dpx *x, hs_dp_cost_t cost, const int *anode, const int *aslot,
                    hs_dp_place_t *out, double *val, double *sec, double *bw, hu_error_t *err)
{
    int n = x->n, m = x->m, S = x->S;
    int *cnt = calloc((size_t)m * (size_t)S, sizeof(int));
    double *maxT = calloc((size_t)m * (size_t)S, sizeof(double));
    double *W = calloc((size_t)m, sizeof(double));
    double *D = calloc((size_t)m, sizeof(double));
    double v = 0., sumtau = 0., vol = 0., makespan = 0.;
    int rc = -1;

    if (!cnt || !maxT || !W || !D) {
        hs_errprintf(err, ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        int j = anode[i], s = aslot[i];
        if (j < 0 || j >= m || s < 0 || s >= S) {
            hs_errprintf(err, EINVAL, "phase %d: cell (%d,%d) out of range", i, j, s);
            goto done;
        }
        if (!x->elig[(size_t)i * (size_t)m + (size_t)j]) {
            hs_errprintf(err, EINVAL, "phase %d: node %d is not in its allocation", i, j);
            goto done;
        }
        cnt[j * S + s]++;
        W[j] += x->wvol[i];
    }
    for (int j = 0; j < m; j++)
        if (W[j] > x->p->nodes[j].capacity) {
            hs_errprintf(err, EINVAL, "node %d: %g bytes written, %g free", j, W[j],
                         x->p->nodes[j].capacity);
            goto done;
        }
    for (int i = 0; i < n; i++) {
        int j = anode[i], s = aslot[i], k = j * S + s;
        int c = cnt[k] + x->bg[k];
        double T = dpx_time(x, i, j, c);
        double tau = dpx_start(x, s) + T;
        double key = dpx_key(x, cost, i, tau);
        if (T > maxT[k])
            maxT[k] = T;
        if (tau > D[j])
            D[j] = tau;
        if (dpx_is_sum(cost))
            v += key;
        else if (cost != HS_DP_COST_BUFFER_EFF && key > v)
            v = key;
        sumtau += tau;
        vol += x->p->phases[i].volume;
        if (tau > makespan)
            makespan = tau;
        if (out) {
            out[i].concurrency = c;
            out[i].start = dpx_start(x, s);
            out[i].finish = tau;
            out[i].bw = x->p->phases[i].volume / T;
        }
    }
    for (int j = 0; j < m; j++) {
        int busy = 0;
        for (int s = 0; s < S; s++) {
            if (cnt[j * S + s] == 0)
                continue;
            if (s < busy) {
                hs_errprintf(err, EINVAL,
                             "node %d: the wave at slot %d starts before "
                             "the previous one ends (slot %d)",
                             j, s, busy);
                goto done;
            }
            busy = s + dpx_wave_len(maxT[j * S + s], x->dt, S - s);
        }
    }
    if (cost == HS_DP_COST_BUFFER_EFF) {
        v = 0.;
        for (int j = 0; j < m; j++)
            if (D[j] > 0.)
                v += dpx_bufeff(x, j, W[j], D[j]);
    }
    *val = v;
    if (sec)
        *sec = dpx_has_secondary(cost) ? sumtau : 0.;
    if (bw)
        *bw = makespan > 0. ? vol / makespan : 0.;
    rc = 0;
done:
    free(cnt);
    free(maxT);
    free(W);
    free(D);
    return rc;
}

int hs_dp_evaluate(const hs_dp_problem_t *p, hs_dp_cost_t cost, hs_dp_place_t *place, double *value,
                   double *secondary, hu_error_t *err)
{
    struct dpx x;
    int *an, *as;
    double v, sec;
    int rc = -1;

    if (!place || !value)
        return hs_errprintf(err, EINVAL, "no placement");
    if (dpx_init_assign(&x, p, cost, &an, &as, err) < 0)
        return -1;
    for (int i = 0; i < x.n; i++) {
        an[i] = place[i].node;
        as[i] = place[i].slot;
    }
    if (dpx_eval(&x, cost, an, as, place, &v, &sec, NULL, err) < 0)
        goto done;
    *value = v;
    if (secondary)
        *secondary = sec;
    rc = 0;
done:
    dpx_fini_assign(&x, an, as);
    return rc;
}

/* Fill the solution from an assignment (evaluates it: the reported values are the
 * model's, whatever algorithm produced the assignment). */
static int fill_solution(const struct dpx *x, const int *an, const int *as, hs_dp_solution_t *sol,
                         bool exact, double steps, hu_error_t *err)
{
    double v, sec, bw;

    if (dpx_eval(x, x->cost, an, as, sol->place, &v, &sec, &bw, err) < 0)
        return -1;
    for (int i = 0; i < x->n; i++) {
        sol->place[i].node = an[i];
        sol->place[i].slot = as[i];
    }
    sol->cost = v;
    sol->secondary = sec;
    sol->bandwidth = bw;
    sol->exact = exact;
    sol->steps = steps;
    return 0;
}

/* ------------------------------------------------------------ exact DP */

/* Work estimate of the exact DP (doc §3.2), both passes. */
static double exact_steps(const struct dpx *x)
{
    double w = 0.;

    for (int j = 0; j < x->m; j++) {
        int e = 0;
        for (int i = 0; i < x->n; i++)
            e += x->elig[(size_t)i * (size_t)x->m + (size_t)j];
        w += (double)x->S * (pow(3., e) + (double)e * pow(2., e)) + pow(3., x->n);
    }
    return dpx_has_secondary(x->cost) ? 2. * w : w;
}

struct dpw { /* work arrays of the exact DP */
    uint32_t N;
    double *cv;   /* cv[s*N + Y]: value of the wave Y at slot s */
    uint8_t *nx;  /* nx[s*N + Y]: first free slot after it */
    double *f;    /* f[s*N + T], s = 0..S */
    uint32_t *ch; /* ch[s*N + T]: chosen wave at s (0: none) */
    double *W;    /* W[T]: write volume */
    double *node; /* node value of T */
    double *gprev, *gcur;
    uint32_t *gch; /* gch[j*N + X]: T chosen for node j */
};

static void dpw_free(struct dpw *w)
{
    free(w->cv);
    free(w->nx);
    free(w->f);
    free(w->ch);
    free(w->W);
    free(w->node);
    free(w->gprev);
    free(w->gcur);
    free(w->gch);
}

static inline double comb(int sum, double a, double b)
{
    return sum ? a + b : (a > b ? a : b);
}

/* Tabulate the waves of node j and run its inner DP (doc §3.1): w->f[0*N + T] is the
 * best value of placing exactly T on j.  'pass2': value = sum of finishes, waves with a
 * key above theta forbidden (doc §3.3). */
static void node_inner(const struct dpx *x, struct dpw *w, int j, uint32_t E, int pass2,
                       double theta, double *steps)
{
    const uint32_t N = w->N;
    const int S = x->S;
    const int isum = pass2 || dpx_is_sum(x->cost);

    for (int s = 0; s < S; s++) {
        int b = x->bg[j * S + s];
        double t0 = dpx_start(x, s);
        for (uint32_t Y = E; Y; Y = (Y - 1) & E) {
            int c = __builtin_popcount(Y) + b;
            double v = 0., maxT = 0.;
            for (uint32_t r = Y; r; r &= r - 1) {
                int i = __builtin_ctz(r);
                double T = dpx_time(x, i, j, c);
                double tau = t0 + T;
                double key = dpx_key(x, x->cost, i, tau);
                if (T > maxT)
                    maxT = T;
                if (pass2) {
                    if (key > theta)
                        v = INFINITY;
                    v += tau;
                } else if (isum)
                    v += key;
                else if (key > v)
                    v = key;
            }
            w->cv[(size_t)s * N + Y] = v;
            w->nx[(size_t)s * N + Y] = (uint8_t)(s + dpx_wave_len(maxT, x->dt, S - s));
            *steps += (double)__builtin_popcount(Y);
        }
    }
    /* f(S, T) */
    for (uint32_t T = E;; T = (T - 1) & E) {
        w->f[(size_t)S * N + T] = T ? INFINITY : 0.;
        if (!T)
            break;
    }
    for (int s = S - 1; s >= 0; s--) {
        double *fs = &w->f[(size_t)s * N];
        const double *cvs = &w->cv[(size_t)s * N];
        const uint8_t *nxs = &w->nx[(size_t)s * N];
        for (uint32_t T = E;; T = (T - 1) & E) {
            double best = w->f[(size_t)(s + 1) * N + T];
            uint32_t arg = 0;
            for (uint32_t Y = T; Y; Y = (Y - 1) & T) {
                double a = cvs[Y], r;
                if (a == INFINITY)
                    continue;
                r = w->f[(size_t)nxs[Y] * N + (T ^ Y)];
                if (r == INFINITY)
                    continue;
                r = comb(isum, a, r);
                if (r < best) {
                    best = r;
                    arg = Y;
                }
            }
            fs[T] = best;
            if (w->ch)
                w->ch[(size_t)s * N + T] = arg;
            *steps += (double)(1u << __builtin_popcount(T));
            if (!T)
                break;
        }
    }
}

/* One pass of the exact DP; fills an/as and *val.  Returns 0, -1 (ENOSPC/ENOMEM). */
static int dp_exact_pass(const struct dpx *x, int pass2, double theta, int *an, int *as,
                         double *val, double *steps, hu_error_t *err)
{
    const int n = x->n, m = x->m, S = x->S;
    const uint32_t N = 1u << n, full = N - 1;
    const hs_dp_cost_t cost = x->cost;
    const int isum_out = pass2 || dpx_is_sum(cost) || cost == HS_DP_COST_BUFFER_EFF;
    struct dpw w = { .N = N };
    uint32_t *E = calloc((size_t)m, sizeof(uint32_t));
    int rc = -1;

    if (!E || !(w.cv = malloc((size_t)S * N * sizeof(double))) || !(w.nx = malloc((size_t)S * N))
        || !(w.f = malloc((size_t)(S + 1) * N * sizeof(double)))
        || !(w.W = malloc(N * sizeof(double))) || !(w.node = malloc(N * sizeof(double)))
        || !(w.gprev = malloc(N * sizeof(double))) || !(w.gcur = malloc(N * sizeof(double)))
        || !(w.gch = malloc((size_t)m * N * sizeof(uint32_t)))) {
        hs_errprintf(err, ENOMEM, "out of memory (exact DP, %d phases)", n);
        goto done;
    }
    for (int j = 0; j < m; j++)
        for (int i = 0; i < n; i++)
            if (x->elig[(size_t)i * (size_t)m + (size_t)j])
                E[j] |= 1u << i;

    for (int j = 0; j < m; j++) {
        const double F = x->p->nodes[j].capacity;
        node_inner(x, &w, j, E[j], pass2, theta, steps);
        /* node values; W[T] summed in ascending phase order (as dpx_eval does) */
        w.W[0] = 0.;
        for (uint32_t T = E[j]; T; T = (T - 1) & E[j]) {
            /* visited in decreasing order: W[T without its top bit] is not known
             * yet; compute it directly, in ascending order */
            double s = 0.;
            for (uint32_t r = T; r; r &= r - 1)
                s += x->wvol[__builtin_ctz(r)];
            w.W[T] = s;
        }
        for (uint32_t T = E[j];; T = (T - 1) & E[j]) {
            double v = w.f[T];
            if (w.W[T] > F)
                v = INFINITY;
            else if (cost == HS_DP_COST_BUFFER_EFF && !pass2 && T && v != INFINITY)
                v = dpx_bufeff(x, j, w.W[T], v);
            w.node[T] = v;
            if (!T)
                break;
        }
        /* outer step */
        double *g = j == 0 ? w.gprev : w.gcur;
        for (uint32_t X = 0; X <= full; X++) {
            uint32_t A = X & E[j];
            double best = INFINITY;
            uint32_t arg = 0;
            if (j == 0) {
                if (A == X) {
                    best = w.node[X];
                    arg = X;
                }
                *steps += 1.;
            } else {
                for (uint32_t T = A;; T = (T - 1) & A) {
                    double a = w.gprev[X ^ T], b;
                    if (a != INFINITY && (b = w.node[T]) != INFINITY) {
                        double r = comb(isum_out, a, b);
                        if (r < best) {
                            best = r;
                            arg = T;
                        }
                    }
                    *steps += 1.;
                    if (!T)
                        break;
                }
            }
            g[X] = best;
            w.gch[(size_t)j * N + X] = arg;
            if (X == full)
                break;
        }
        if (j > 0) {
            double *t = w.gprev;
            w.gprev = w.gcur;
            w.gcur = t;
        }
    }
    if (w.gprev[full] == INFINITY) {
        hs_errprintf(err, ENOSPC, "the buffer nodes' free capacity cannot hold the writes");
        goto done;
    }
    *val = w.gprev[full];

    /* reconstruct: node by node, re-running the inner DP with its argmins */
    if (!(w.ch = malloc((size_t)S * N * sizeof(uint32_t)))) {
        hs_errprintf(err, ENOMEM, "out of memory (exact DP, %d phases)", n);
        goto done;
    }
    uint32_t X = full;
    for (int j = m - 1; j >= 0; j--) {
        uint32_t T = w.gch[(size_t)j * N + X];
        double dummy = 0.;
        X ^= T;
        if (!T)
            continue;
        node_inner(x, &w, j, E[j], pass2, theta, &dummy);
        int s = 0;
        while (T) {
            uint32_t Y = s < S ? w.ch[(size_t)s * N + T] : 0;
            if (s >= S)
                break; /* cannot happen: f(S, T != 0) is infinite */
            if (!Y) {
                s++;
                continue;
            }
            for (uint32_t r = Y; r; r &= r - 1) {
                an[__builtin_ctz(r)] = j;
                as[__builtin_ctz(r)] = s;
            }
            T ^= Y;
            s = w.nx[(size_t)s * N + Y];
        }
    }
    rc = 0;
done:
    dpw_free(&w);
    free(E);
    return rc;
}

static int dp_exact(const struct dpx *x, int *an, int *as, double *steps, hu_error_t *err)
{
    double v;

    if (dp_exact_pass(x, 0, INFINITY, an, as, &v, steps, err) < 0)
        return -1;
    if (dpx_has_secondary(x->cost)) {
        double v2;
        if (dp_exact_pass(x, 1, v, an, as, &v2, steps, err) < 0)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ entry point */

int hs_dp_place(const hs_dp_problem_t *p, hs_dp_cost_t cost, hs_dp_solution_t *sol, hu_error_t *err)
{
    struct dpx x;
    int *an, *as;
    double steps = 0.;
    int rc = -1;
    bool exact;

    if (!sol || (p && p->nphases > 0 && !sol->place))
        return hs_errprintf(err, EINVAL, "no solution array");
    if (dpx_init_assign(&x, p, cost, &an, &as, err) < 0)
        return -1;
    switch (p->method) {
    case HS_DP_EXACT:
        if (x.n > HS_DP_EXACT_MAX_PHASES) {
            hs_errprintf(err, E2BIG, "exact DP: %d phases (at most %d)", x.n,
                         HS_DP_EXACT_MAX_PHASES);
            goto done;
        }
        exact = true;
        break;
    case HS_DP_HEURISTIC:
        exact = false;
        break;
    default:
        exact = x.n <= HS_DP_EXACT_MAX_PHASES
                && exact_steps(&x) <= HS_DP_EXACT_STEP_RATIO * x.budget;
        break;
    }
    if (exact) {
        if (x.n > 0 && dp_exact(&x, an, as, &steps, err) < 0)
            goto done;
    } else if (hs_dp_greedy(&x, an, as, &steps) < 0) {
        hs_errprintf(err, errno,
                     errno == ENOSPC ? "the fallback could not fit the writes in the free capacity"
                                     : "out of memory");
        goto done;
    }
    if (fill_solution(&x, an, as, sol, exact, steps, err) < 0)
        goto done;
    rc = 0;
done:
    dpx_fini_assign(&x, an, as);
    return rc;
}

/* ------------------------------------------------------------ exhaustive */

struct exh {
    const struct dpx *x;
    int cmax;
    double *Ttab; /* Ttab[(i*m + j)*(cmax+1) + c] */
    int *an, *as, *cnt;
    double *W, *maxT, *D;
    double best[HS_DP_COST__COUNT], bsec[HS_DP_COST__COUNT];
    int *ban[HS_DP_COST__COUNT], *bas[HS_DP_COST__COUNT];
    bool found;
    double leaves;
};

static void exh_leaf(struct exh *e)
{
    const struct dpx *x = e->x;
    const int n = x->n, m = x->m, S = x->S;
    double v[HS_DP_COST__COUNT] = { 0 }, sumtau = 0.;

    e->leaves += 1.;
    memset(e->maxT, 0, sizeof(double) * (size_t)m * (size_t)S);
    memset(e->D, 0, sizeof(double) * (size_t)m);
    for (int i = 0; i < n; i++) {
        int j = e->an[i], s = e->as[i], k = j * S + s;
        int c = e->cnt[k] + x->bg[k];
        double T = e->Ttab[((size_t)i * (size_t)m + (size_t)j) * (size_t)(e->cmax + 1) + (size_t)c];
        double tau = dpx_start(x, s) + T;
        double kf;
        if (T > e->maxT[k])
            e->maxT[k] = T;
        if (tau > e->D[j])
            e->D[j] = tau;
        if (tau > v[HS_DP_COST_MAXBW])
            v[HS_DP_COST_MAXBW] = tau;
        v[HS_DP_COST_MINSTALL] += dpx_key(x, HS_DP_COST_MINSTALL, i, tau);
        kf = dpx_key(x, HS_DP_COST_FAIRNESS, i, tau);
        if (kf > v[HS_DP_COST_FAIRNESS])
            v[HS_DP_COST_FAIRNESS] = kf;
        v[HS_DP_COST_PRIORITY] += dpx_key(x, HS_DP_COST_PRIORITY, i, tau);
        sumtau += tau;
    }
    for (int j = 0; j < m; j++) {
        int busy = 0;
        for (int s = 0; s < S; s++) {
            if (e->cnt[j * S + s] == 0)
                continue;
            if (s < busy)
                return; /* overlapping waves: not a valid placement */
            busy = s + dpx_wave_len(e->maxT[j * S + s], x->dt, S - s);
        }
    }
    for (int j = 0; j < m; j++)
        if (e->D[j] > 0.)
            v[HS_DP_COST_BUFFER_EFF] += dpx_bufeff(x, j, e->W[j], e->D[j]);
    for (int k = 0; k < HS_DP_COST__COUNT; k++) {
        bool better;
        if (!e->found)
            better = true;
        else if (dpx_has_secondary((hs_dp_cost_t)k))
            better = v[k] < e->best[k] || (v[k] == e->best[k] && sumtau < e->bsec[k]);
        else
            better = v[k] < e->best[k];
        if (better) {
            e->best[k] = v[k];
            e->bsec[k] = sumtau;
            memcpy(e->ban[k], e->an, sizeof(int) * (size_t)n);
            memcpy(e->bas[k], e->as, sizeof(int) * (size_t)n);
        }
    }
    e->found = true;
}

static void exh_rec(struct exh *e, int i)
{
    const struct dpx *x = e->x;

    if (i == x->n) {
        exh_leaf(e);
        return;
    }
    for (int j = 0; j < x->m; j++) {
        double w0;
        if (!x->elig[(size_t)i * (size_t)x->m + (size_t)j])
            continue;
        w0 = e->W[j];
        e->W[j] = w0 + x->wvol[i];
        if (e->W[j] <= x->p->nodes[j].capacity) {
            for (int s = 0; s < x->S; s++) {
                e->an[i] = j;
                e->as[i] = s;
                e->cnt[j * x->S + s]++;
                exh_rec(e, i + 1);
                e->cnt[j * x->S + s]--;
            }
        }
        e->W[j] = w0;
    }
}

int hs_dp_exhaustive_all(const hs_dp_problem_t *p, hs_dp_solution_t sols[HS_DP_COST__COUNT],
                         hu_error_t *err)
{
    struct dpx x[HS_DP_COST__COUNT];
    bool ok[HS_DP_COST__COUNT] = { false };
    struct exh e;
    int rc = -1;
    size_t n, m, cm;

    memset(&e, 0, sizeof(e));
    if (!sols)
        return hs_errprintf(err, EINVAL, "no solution array");
    for (int k = 0; k < HS_DP_COST__COUNT; k++) {
        if (p && p->nphases > 0 && !sols[k].place) {
            hs_errprintf(err, EINVAL, "no solution array");
            goto done;
        }
        if (dpx_init(&x[k], p, (hs_dp_cost_t)k, err) < 0) {
            /* only buffer-eff refuses what the others accept (infinite
             * capacities): it is then left out (cost NaN) */
            if (k == HS_DP_COST_BUFFER_EFF && ok[0])
                continue;
            goto done;
        }
        ok[k] = true;
    }
    n = (size_t)x[0].n;
    m = (size_t)x[0].m;
    e.x = &x[0];
    e.cmax = x[0].n;
    for (size_t k = 0; k < m * (size_t)x[0].S; k++)
        if (x[0].bg[k] > 0 && e.cmax < x[0].n + x[0].bg[k])
            e.cmax = x[0].n + x[0].bg[k];
    cm = (size_t)e.cmax + 1;
    if (!(e.Ttab = calloc(n * m * cm + 1, sizeof(double))) || !(e.an = calloc(n + 1, sizeof(int)))
        || !(e.as = calloc(n + 1, sizeof(int)))
        || !(e.cnt = calloc(m * (size_t)x[0].S, sizeof(int))) || !(e.W = calloc(m, sizeof(double)))
        || !(e.maxT = calloc(m * (size_t)x[0].S, sizeof(double)))
        || !(e.D = calloc(m, sizeof(double)))) {
        hs_errprintf(err, ENOMEM, "out of memory");
        goto done;
    }
    for (int k = 0; k < HS_DP_COST__COUNT; k++)
        if (!(e.ban[k] = calloc(n + 1, sizeof(int))) || !(e.bas[k] = calloc(n + 1, sizeof(int)))) {
            hs_errprintf(err, ENOMEM, "out of memory");
            goto done;
        }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < m; j++)
            for (size_t c = 1; c < cm; c++)
                e.Ttab[(i * m + j) * cm + c] = dpx_time(&x[0], (int)i, (int)j, (int)c);
    exh_rec(&e, 0);
    if (!e.found) {
        hs_errprintf(err, ENOSPC, "the buffer nodes' free capacity cannot hold the writes");
        goto done;
    }
    for (int k = 0; k < HS_DP_COST__COUNT; k++) {
        if (!ok[k]) {
            sols[k].cost = NAN;
            continue;
        }
        if (fill_solution(&x[k], e.ban[k], e.bas[k], &sols[k], true, e.leaves, err) < 0)
            goto done;
    }
    rc = 0;
done:
    for (int k = 0; k < HS_DP_COST__COUNT; k++) {
        free(e.ban[k]);
        free(e.bas[k]);
    }
    free(e.Ttab);
    free(e.an);
    free(e.as);
    free(e.cnt);
    free(e.W);
    free(e.maxT);
    free(e.D);
    for (int k = 0; k < HS_DP_COST__COUNT; k++)
        if (ok[k])
            dpx_fini(&x[k]);
    return rc;
}

int hs_dp_exhaustive(const hs_dp_problem_t *p, hs_dp_cost_t cost, hs_dp_solution_t *sol,
                     hu_error_t *err)
{
    hs_dp_solution_t sols[HS_DP_COST__COUNT];
    hs_dp_place_t *tmp = NULL;
    int n = p ? p->nphases : 0;
    int rc = -1;

    if (!sol || (int)cost < 0 || cost >= HS_DP_COST__COUNT)
        return hs_errprintf(err, EINVAL, "bad arguments");
    if (n < 0)
        return hs_errprintf(err, EINVAL, "bad phase list");
    if (!(tmp = calloc((size_t)n * HS_DP_COST__COUNT + 1, sizeof(*tmp))))
        return hs_errprintf(err, ENOMEM, "out of memory");
    for (int k = 0; k < HS_DP_COST__COUNT; k++)
        sols[k].place = &tmp[(size_t)k * (size_t)n];
    if (hs_dp_exhaustive_all(p, sols, err) < 0)
        goto done;
    if (cost == HS_DP_COST_BUFFER_EFF && isnan(sols[cost].cost)) {
        hs_errprintf(err, EINVAL, "harmonia-buffer-eff needs finite capacities");
        goto done;
    }
    hs_dp_place_t *keep = sol->place;
    *sol = sols[cost];
    sol->place = keep;
    if (n > 0)
        memcpy(sol->place, sols[cost].place, sizeof(*tmp) * (size_t)n);
    rc = 0;
done:
    free(tmp);
    return rc;
}
