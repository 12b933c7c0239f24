/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_dp_model.h — the prediction model shared by the exact DP (hs_dp.c), the
 * exhaustive search and the fallback (hs_dp_greedy.c).  Every time, key and wave
 * length is computed by the functions below only, so that the DP, the exhaustive
 * search and hs_dp_evaluate() produce bit-identical values for the same placement
 * (doc/harmonia-dp.md §3.3 relies on it).
 */
#ifndef HARMONIA_HS_DP_MODEL_H
#define HARMONIA_HS_DP_MODEL_H

#include <math.h>
#include <stdint.h>

#include "hs_dp_types.h"

/* Decision context: the problem plus derived per-phase / per-node data. */
struct dpx {
    const hs_dp_problem_t *p;
    hs_dp_cost_t cost;
    int n, m, S;
    double dt;
    double budget;
    double *alone;       /* a_i = v_i / max_{j allowed} B_j */
    unsigned char *elig; /* elig[i * m + j] */
    int *bg;             /* bg[j * S + s]: running streams at slot s */
    double *wvol;        /* write volume of phase i (0 for reads) */
};

/* Is the cost a sum of per-phase keys (true) or a max (false)?  buffer-eff: its
 * per-node inner combination is a max (D_j), its outer one a sum. */
static inline int dpx_is_sum(hs_dp_cost_t c)
{
    return c == HS_DP_COST_MINSTALL || c == HS_DP_COST_PRIORITY;
}

static inline int dpx_has_secondary(hs_dp_cost_t c)
{
    return c == HS_DP_COST_MAXBW || c == HS_DP_COST_FAIRNESS;
}

/* MSCA(c), the last measured value held beyond the curve (doc §1.1). */
static inline double dpx_msca(const hs_dp_node_t *nd, hs_dir_t dir, int c)
{
    const double *v = nd->msca;
    int k = nd->nmsca;

    if (dir == HS_DIR_READ && nd->nmsca_read > 0) {
        v = nd->msca_read;
        k = nd->nmsca_read;
    }
    if (k <= 0)
        return 0.;
    if (c < 1)
        c = 1;
    return v[(c <= k ? c : k) - 1];
}

/* Interference factor If(c) = c (1 + MSCA(c)): time with c streams / time alone. */
static inline double dpx_if(const hs_dp_node_t *nd, hs_dir_t dir, int c)
{
    return (double)c * (1. + dpx_msca(nd, dir, c));
}

/* T_i: transfer time of phase i on node j with c streams in its cell. */
static inline double dpx_time(const struct dpx *x, int i, int j, int c)
{
    const hs_dp_phase_t *ph = &x->p->phases[i];
    const hs_dp_node_t *nd = &x->p->nodes[j];

    return ph->volume * dpx_if(nd, ph->dir, c) / nd->bandwidth;
}

static inline double dpx_start(const struct dpx *x, int s)
{
    return (double)s * x->dt;
}

static inline int dpx_prio(const hs_dp_phase_t *ph)
{
    return ph->priority > 0 ? ph->priority : 1;
}

/* The per-phase key of cost c for a finish tau (doc §2; the sources of each choice
 * are given there):
 *   maxbw      tau                     makespan of the batch -> aggregate bandwidth
 *   minstall   waited + tau            stall = finish - request (doc/design.md §2)
 *   fairness   (waited + tau) / alone  slowdown, min-max (standard online surrogate)
 *   buffer-eff tau                     D_j = max tau on node j (wasted cap.-time)
 *   priority   prio * (waited + tau)   priority-weighted stall ([Harmonia]'s 5th) */
static inline double dpx_key(const struct dpx *x, hs_dp_cost_t c, int i, double tau)
{
    const hs_dp_phase_t *ph = &x->p->phases[i];

    switch (c) {
    case HS_DP_COST_MINSTALL:
        return ph->waited + tau;
    case HS_DP_COST_FAIRNESS:
        return (ph->waited + tau) / x->alone[i];
    case HS_DP_COST_PRIORITY:
        return (double)dpx_prio(ph) * (ph->waited + tau);
    case HS_DP_COST_MAXBW:
    case HS_DP_COST_BUFFER_EFF:
    default:
        return tau;
    }
}

/* Wave length in slots: L = max(1, ceil(maxT / Delta)), with a relative tolerance so
 * that a wave of exactly k slots is k, not k+1.  Capped at 'cap'. */
static inline int dpx_wave_len(double maxT, double dt, int cap)
{
    double q = maxT / dt;
    double f = floor(q);
    int L;

    if (q - f <= HS_EPS_REL * (q > 1. ? q : 1.))
        L = (int)(q > (double)cap ? cap : f);
    else
        L = (int)(q > (double)cap ? cap : f + 1.);
    if (L < 1)
        L = 1;
    return L > cap ? cap : L;
}

/* buffer-eff node value: (F_j - W_j) * D_j for a used node (doc §2). */
static inline double dpx_bufeff(const struct dpx *x, int j, double W, double D)
{
    return (x->p->nodes[j].capacity - W) * D;
}

#endif /* HARMONIA_HS_DP_MODEL_H */
