/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_dp.c — Harmonia's dynamic programme (src/common/libhsched/hs_dp.[ch]).
 *
 *  - hand-checked cases for each of the five costs (numbers in the comments);
 *  - the DP equals exhaustive search on hundreds of generated instances of up to
 *    6 phases x 3 nodes x 8 slots (fixed seed, own PRNG), to 1e-9 relative, for the
 *    cost and (maxbw, fairness) the secondary;
 *  - the DP equals an independent oracle: the model of doc/harmonia-dp.md written
 *    again in this file (not from hs_dp_model.h) with its own enumeration;
 *  - allowed nodes, capacity, running streams, errors;
 *  - the fallback: never below the optimum, valid at 1,000 phases x 64 nodes.
 *
 * Model (doc/harmonia-dp.md §1): phase i in cell (node j, slot s) with c streams
 * takes T = v * If(c) / B_j, If(c) = c (1 + MSCA(c)); it ends at tau = s*Delta + T.
 */
#if HAVE_CONFIG_H
#include "harmonia_config.h"
#endif
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhsched/hs_dp.h"
#include "testutil.h"

#define REL 1e-9

static int close_rel(double a, double b)
{
    double s = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= REL * (s > 1. ? s : 1.);
}

/* ------------------------------------------------------------ fixtures */

/* "NVMe": B = 2, insensitive.  "HDD": B = 1.5, MSCA(c) = c - 1 so If(c) = c^2. */
static hs_dp_node_t nvme(double cap)
{
    return (hs_dp_node_t){ .bandwidth = 2., .capacity = cap };
}

static hs_dp_node_t hdd(double cap)
{
    hs_dp_node_t n = { .bandwidth = 1.5, .capacity = cap, .nmsca = 16 };

    for (int c = 1; c <= 16; c++)
        n.msca[c - 1] = (double)(c - 1);
    return n;
}

static hs_dp_phase_t phase(double v, int prio, double waited)
{
    return (hs_dp_phase_t){ .volume = v, .dir = HS_DIR_WRITE, .priority = prio, .waited = waited };
}

static hs_dp_problem_t problem(hs_dp_phase_t *ph, int n, hs_dp_node_t *nd, int m, int S, double dt)
{
    return (hs_dp_problem_t){
        .phases = ph, .nphases = n, .nodes = nd, .nnodes = m, .nslots = S, .slot = dt
    };
}

/* The hand cases' problem: phases x and y on nodes a and b, one slot of 100. */
typedef struct {
    hs_dp_node_t nd[2];
    hs_dp_phase_t ph[2];
    hs_dp_problem_t p;
    hs_dp_place_t pl[2];
} pair_t;

static void pair_init(pair_t *f, hs_dp_node_t a, hs_dp_node_t b, hs_dp_phase_t x, hs_dp_phase_t y)
{
    f->nd[0] = a;
    f->nd[1] = b;
    f->ph[0] = x;
    f->ph[1] = y;
    f->p = problem(f->ph, 2, f->nd, 2, 1, 100.);
}

static double solve(const hs_dp_problem_t *p, hs_dp_cost_t c, hs_dp_place_t *pl, double *sec)
{
    hs_dp_solution_t sol = { .place = pl };
    hu_error_t err = { "" };
    double v, s2;

    ck_assert_msg(hs_dp_place(p, c, &sol, &err) == 0, "%s: %s", hs_dp_cost_name(c), err.text);
    ck_assert(sol.exact);
    /* the reported cost is the model's cost of the placement */
    ck_assert_msg(hs_dp_evaluate(p, c, pl, &v, &s2, &err) == 0, "%s", err.text);
    ck_assert(close_rel(v, sol.cost));
    if (sec)
        *sec = sol.secondary;
    return sol.cost;
}

/* ------------------------------------------------------------ hand cases */

/* Two writes of 10 on {NVMe, HDD}, one slot (Delta = 100):
 *   both NVMe: c = 2, If = 2, T = 10*2/2 = 10 each         max 10,    sum 20
 *   split:     NVMe T = 10/2 = 5, HDD T = 10/1.5 = 6.667    max 6.667, sum 11.667
 *   both HDD:  If(2) = 2*2 = 4, T = 10*4/1.5 = 26.67 each    max 26.67
 * maxbw spreads (20/3), minstall too (35/3); fairness: alone = 10/2 = 5 for both,
 * split gives max(5/5, 6.667/5) = 4/3 vs 2 on NVMe. */
START_TEST(test_hand_maxbw_minstall_fairness)
{
    pair_t f;
    double sec;

    pair_init(&f, nvme(100.), hdd(100.), phase(10., 1, 0.), phase(10., 1, 0.));
    ck_assert(close_rel(solve(&f.p, HS_DP_COST_MAXBW, f.pl, &sec), 20. / 3.));
    ck_assert(close_rel(sec, 35. / 3.));
    ck_assert_int_ne(f.pl[0].node, f.pl[1].node);
    ck_assert(close_rel(solve(&f.p, HS_DP_COST_MINSTALL, f.pl, NULL), 35. / 3.));
    ck_assert_int_ne(f.pl[0].node, f.pl[1].node);
    ck_assert(close_rel(solve(&f.p, HS_DP_COST_FAIRNESS, f.pl, &sec), 4. / 3.));
    ck_assert_int_ne(f.pl[0].node, f.pl[1].node);
    /* granted bandwidth = B / If: 2 on NVMe, 1.5 on HDD */
    for (int i = 0; i < 2; i++)
        ck_assert(close_rel(f.pl[i].bw, f.pl[i].node == 0 ? 2. : 1.5));
}
END_TEST

/* Same pair, capacity 100 on both, buffer-eff = sum over used nodes (F - W) * D:
 *   both NVMe: (100 - 20) * 10                     = 800
 *   split:     (100 - 10) * 5 + (100 - 10) * 6.667 = 1050
 *   both HDD:  (100 - 20) * 26.67                  = 2133
 * so buffer-eff packs both on the NVMe node, where maxbw spread them. With the HDD's
 * capacity at 12 and NVMe's at 500, packing on NVMe wastes (500-20)*10 = 4800 while
 * split wastes (500-10)*5 + (12-10)*6.667 = 2463.3: it splits. */
START_TEST(test_hand_buffer_eff)
{
    pair_t f;

    pair_init(&f, nvme(100.), hdd(100.), phase(10., 1, 0.), phase(10., 1, 0.));
    ck_assert(close_rel(solve(&f.p, HS_DP_COST_BUFFER_EFF, f.pl, NULL), 800.));
    ck_assert_int_eq(f.pl[0].node, 0);
    ck_assert_int_eq(f.pl[1].node, 0);
    ck_assert_int_eq(f.pl[0].concurrency, 2);

    f.nd[0].capacity = 500.;
    f.nd[1].capacity = 12.;
    ck_assert(
        close_rel(solve(&f.p, HS_DP_COST_BUFFER_EFF, f.pl, NULL), 490. * 5. + 2. * 10. / 1.5));
    ck_assert_int_ne(f.pl[0].node, f.pl[1].node);
}
END_TEST

/* Nodes B = 2 and B = 1, both insensitive, one slot.  A: v = 10, prio 1; B: v = 6,
 * prio 10.
 *   A fast, B slow: T_A = 5,  T_B = 6 : sum 11, weighted 5 + 60  = 65
 *   A slow, B fast: T_A = 10, T_B = 3 : sum 13, weighted 10 + 30 = 40
 *   both fast (c=2): T_A = 10, T_B = 6: sum 16, weighted 70
 * minstall gives the fast node to A (11), priority to B (40).  Fairness: alone
 * 5 and 3; the first two give max slowdown 2 (and so does "both fast"): a tie the
 * secondary (sum of finishes) breaks: 11. */
START_TEST(test_hand_priority)
{
    pair_t f;
    double sec;

    pair_init(&f, nvme(100.), nvme(100.), phase(10., 1, 0.), phase(6., 10, 0.));
    f.nd[1].bandwidth = 1.;
    ck_assert(close_rel(solve(&f.p, HS_DP_COST_MINSTALL, f.pl, NULL), 11.));
    ck_assert_int_eq(f.pl[0].node, 0);
    ck_assert(close_rel(solve(&f.p, HS_DP_COST_PRIORITY, f.pl, NULL), 40.));
    ck_assert_int_eq(f.pl[1].node, 0);
    ck_assert(close_rel(solve(&f.p, HS_DP_COST_FAIRNESS, f.pl, &sec), 2.));
    ck_assert(close_rel(sec, 11.));
    /* waiting adds to stall: waited 3 and 1 -> minstall 11 + 4, priority 40 + 13 */
    f.ph[0].waited = 3.;
    f.ph[1].waited = 1.;
    ck_assert(close_rel(solve(&f.p, HS_DP_COST_MINSTALL, f.pl, NULL), 15.));
    ck_assert(close_rel(solve(&f.p, HS_DP_COST_PRIORITY, f.pl, NULL), 53.));
}
END_TEST

/* Start slots: one node, B = 1, If(c) = c^2 (MSCA(c) = c - 1), two writes of 5,
 * S = 2, Delta = 5.
 *   both at slot 0: T = 5*4 = 20 each: sum 40, max 20
 *   one at 0 (T = 5, wave of 1 slot), one at 1 (tau = 5 + 5 = 10): sum 15, max 10
 * Serialising wins for every cost. */
START_TEST(test_hand_slots)
{
    hs_dp_node_t nd[1] = { hdd(100.) };
    hs_dp_phase_t ph[2] = { phase(5., 1, 0.), phase(5., 1, 0.) };
    hs_dp_problem_t p = problem(ph, 2, nd, 1, 2, 5.);
    hs_dp_place_t pl[2];

    nd[0].bandwidth = 1.;
    ck_assert(close_rel(solve(&p, HS_DP_COST_MINSTALL, pl, NULL), 15.));
    ck_assert_int_ne(pl[0].slot, pl[1].slot);
    ck_assert(close_rel(solve(&p, HS_DP_COST_MAXBW, pl, NULL), 10.));
    ck_assert_int_eq(pl[0].concurrency, 1);
    /* A longer slot-0 wave blocks slot 1: with Delta = 4 the first wave (T = 5)
     * lasts 2 slots, so the only valid placements put both in one wave:
     * at slot 0: 20 each (sum 40); at slot 1: 4 + 20 (sum 48). */
    p.slot = 4.;
    ck_assert(close_rel(solve(&p, HS_DP_COST_MINSTALL, pl, NULL), 40.));
    ck_assert_int_eq(pl[0].slot, pl[1].slot);
}
END_TEST

/* Running streams: one insensitive node B = 1 with a stream ending at t = 4;
 * S = 2, Delta = 5; one write of 6.
 *   slot 0: c = 2, T = 12: tau = 12;   slot 1: stream gone, tau = 5 + 6 = 11.
 * It waits for slot 1. */
START_TEST(test_hand_running)
{
    double end[1] = { 4. };
    hs_dp_node_t nd[1] = { nvme(100.) };
    hs_dp_phase_t ph[1] = { phase(6., 1, 0.) };
    hs_dp_problem_t p = problem(ph, 1, nd, 1, 2, 5.);
    hs_dp_place_t pl[1];

    nd[0].bandwidth = 1.;
    nd[0].nrunning = 1;
    nd[0].running_end = end;
    ck_assert(close_rel(solve(&p, HS_DP_COST_MAXBW, pl, NULL), 11.));
    ck_assert_int_eq(pl[0].slot, 1);
    ck_assert_int_eq(pl[0].concurrency, 1);
    end[0] = 50.; /* still running at slot 1: go now (12 < 5 + 12) */
    ck_assert(close_rel(solve(&p, HS_DP_COST_MAXBW, pl, NULL), 12.));
    ck_assert_int_eq(pl[0].slot, 0);
    ck_assert_int_eq(pl[0].concurrency, 2);
}
END_TEST

/* Allowed nodes (over-provisioning = any node of the allocation), capacity, reads. */
START_TEST(test_allowed_capacity)
{
    int only_hdd[1] = { 1 };
    pair_t f;
    hs_dp_solution_t sol = { .place = f.pl };
    hu_error_t err;

    pair_init(&f, nvme(15.), hdd(100.), phase(10., 1, 0.), phase(10., 1, 0.));
    /* NVMe holds only one write of 10: buffer-eff must split,
     * (15 - 10) * 5 + (100 - 10) * 6.667 = 625 */
    for (int c = 0; c < HS_DP_COST__COUNT; c++) {
        solve(&f.p, (hs_dp_cost_t)c, f.pl, NULL);
        ck_assert_int_ne(f.pl[0].node, f.pl[1].node);
    }
    ck_assert(close_rel(solve(&f.p, HS_DP_COST_BUFFER_EFF, f.pl, NULL), 625.));
    /* reads take no capacity: both reads can share the NVMe */
    f.ph[0].dir = f.ph[1].dir = HS_DIR_READ;
    solve(&f.p, HS_DP_COST_BUFFER_EFF, f.pl, NULL);
    ck_assert_int_eq(f.pl[0].node, 0);
    ck_assert_int_eq(f.pl[1].node, 0);
    f.ph[0].dir = f.ph[1].dir = HS_DIR_WRITE;

    /* phase 0 may only use the HDD */
    f.ph[0].nallowed = 1;
    f.ph[0].allowed = only_hdd;
    for (int c = 0; c < HS_DP_COST__COUNT; c++) {
        solve(&f.p, (hs_dp_cost_t)c, f.pl, NULL);
        ck_assert_int_eq(f.pl[0].node, 1);
    }
    /* alone time of phase 0 is now on its best allowed node: 10 / 1.5 */
    ck_assert(close_rel(solve(&f.p, HS_DP_COST_FAIRNESS, f.pl, NULL), 1.));

    /* no room at all: ENOSPC, from the DP and from the fallback */
    f.nd[0].capacity = 5.;
    f.nd[1].capacity = 5.;
    for (int m = HS_DP_EXACT; m <= HS_DP_HEURISTIC; m++) {
        f.p.method = (hs_dp_method_t)m;
        errno = 0;
        ck_assert_int_eq(hs_dp_place(&f.p, HS_DP_COST_MINSTALL, &sol, &err), -1);
        ck_assert_int_eq(errno, ENOSPC);
    }
    /* an invalid placement is refused by hs_dp_evaluate */
    f.nd[0].capacity = f.nd[1].capacity = 100.;
    f.p.method = HS_DP_AUTO;
    f.pl[0].node = 0; /* not allowed for phase 0 */
    f.pl[0].slot = 0;
    f.pl[1].node = 1;
    f.pl[1].slot = 0;
    double v;
    ck_assert_int_eq(hs_dp_evaluate(&f.p, HS_DP_COST_MAXBW, f.pl, &v, NULL, &err), -1);
    ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(test_errors)
{
    hs_dp_node_t nd[1] = { nvme(INFINITY) };
    hs_dp_phase_t ph[1] = { phase(1., 1, 0.) };
    hs_dp_problem_t p = problem(ph, 1, nd, 1, 1, 1.);
    hs_dp_place_t pl[1];
    hs_dp_solution_t sol = { .place = pl };
    hu_error_t err;
    hs_dp_cost_t c;

    /* unlimited capacity is fine, except for buffer-eff */
    ck_assert_int_eq(hs_dp_place(&p, HS_DP_COST_MAXBW, &sol, &err), 0);
    ck_assert_int_eq(hs_dp_place(&p, HS_DP_COST_BUFFER_EFF, &sol, &err), -1);
    ck_assert_int_eq(errno, EINVAL);
    nd[0].capacity = 10.;
    ph[0].volume = 0.;
    ck_assert_int_eq(hs_dp_place(&p, HS_DP_COST_MAXBW, &sol, &err), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert(strstr(err.text, "volume") != NULL);
    ph[0].volume = 1.;
    p.nslots = HS_DP_MAX_SLOTS + 1;
    ck_assert_int_eq(hs_dp_place(&p, HS_DP_COST_MAXBW, &sol, &err), -1);
    p.nslots = 1;
    nd[0].nmsca = 1;
    nd[0].msca[0] = -1.;
    ck_assert_int_eq(hs_dp_place(&p, HS_DP_COST_MAXBW, &sol, &err), -1);
    nd[0].nmsca = 0;
    ck_assert_int_eq(hs_dp_place(&p, (hs_dp_cost_t)99, &sol, &err), -1);
    /* zero phases: nothing to do */
    p.nphases = 0;
    ck_assert_int_eq(hs_dp_place(&p, HS_DP_COST_MINSTALL, &sol, &err), 0);
    ck_assert(sol.cost == 0.);
    /* policy mapping */
    ck_assert_int_eq(hs_dp_cost_from_policy(HS_POL_HARMONIA_PRIORITY, &c), 0);
    ck_assert_int_eq(c, HS_DP_COST_PRIORITY);
    ck_assert_int_eq(hs_dp_cost_from_policy(HS_POL_FCFS, &c), -1);
    ck_assert_str_eq(hs_dp_cost_name(HS_DP_COST_BUFFER_EFF), "harmonia-buffer-eff");
    /* If(c) holds the last MSCA value beyond the curve */
    hs_dp_node_t h = hdd(1.);
    h.nmsca = 3;
    ck_assert(close_rel(hs_dp_if(&h, HS_DIR_WRITE, 3), 9.));
    ck_assert(close_rel(hs_dp_if(&h, HS_DIR_WRITE, 5), 15.));
    ck_assert(close_rel(hs_dp_if(&h, HS_DIR_READ, 2), 4.));
    /* the exact DP refuses more than 16 phases */
    hs_dp_phase_t many[17];
    hs_dp_place_t mpl[17];
    hs_dp_solution_t msol = { .place = mpl };
    for (int i = 0; i < 17; i++)
        many[i] = phase(1., 1, 0.);
    hs_dp_problem_t q = problem(many, 17, nd, 1, 1, 1.);
    q.method = HS_DP_EXACT;
    ck_assert_int_eq(hs_dp_place(&q, HS_DP_COST_MINSTALL, &msol, &err), -1);
    ck_assert_int_eq(errno, E2BIG);
}
END_TEST

/* ------------------------------------------------------------ generator */

typedef struct {
    uint64_t s;
} rng_t;

static uint64_t rng_next(rng_t *r) /* xorshift64* */
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ULL;
}

static int rng_int(rng_t *r, int lo, int hi) /* [lo, hi] */
{
    return lo + (int)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

#define GMAX_N 16
#define GMAX_M 64

typedef struct {
    hs_dp_phase_t ph[GMAX_N];
    int allowed[GMAX_N][GMAX_M];
    hs_dp_node_t nd[GMAX_M];
    double ends[GMAX_M][3];
    hs_dp_problem_t p;
} inst_t;

/* Volumes, times and capacities are small integers or halves, so that sums are exact
 * (the capacity test W <= F then has no rounding). */
static void gen_curve(rng_t *r, double *v, int *k)
{
    int type = rng_int(r, 0, 4);

    *k = type == 0 ? 0 : rng_int(r, 1, 16);
    for (int c = 1; c <= *k; c++) {
        switch (type) {
        case 1:
            v[c - 1] = 0.05 * (c - 1);
            break; /* SSD-like */
        case 2:
            v[c - 1] = 0.5 * (c - 1);
            break; /* HDD-like */
        case 3:
            v[c - 1] = c == 1 ? 0. : c <= 3 ? -0.25 : 0.1 * c;
            break; /* queue depth */
        default:
            v[c - 1] = (double)rng_int(r, 0, 8) / 4.;
            break; /* arbitrary */
        }
    }
}

static void gen(rng_t *r, inst_t *in, int n, int m, int S)
{
    static const double bws[] = { 1., 1.5, 2., 4. };
    static const double dts[] = { 1., 2., 5., 10. };

    memset(in, 0, sizeof(*in));
    for (int j = 0; j < m; j++) {
        hs_dp_node_t *nd = &in->nd[j];
        nd->bandwidth = bws[rng_int(r, 0, 3)];
        nd->capacity = rng_int(r, 0, 3) == 0 ? (double)rng_int(r, 4, 20) : 1e6;
        gen_curve(r, nd->msca, &nd->nmsca);
        if (rng_int(r, 0, 2) == 0)
            gen_curve(r, nd->msca_read, &nd->nmsca_read);
        nd->nrunning = rng_int(r, 0, 3) == 0 ? rng_int(r, 1, 3) : 0;
        for (int k = 0; k < nd->nrunning; k++)
            in->ends[j][k] = (double)rng_int(r, 1, 30) / 2.;
        nd->running_end = in->ends[j];
    }
    for (int i = 0; i < n; i++) {
        hs_dp_phase_t *ph = &in->ph[i];
        ph->job = (uint64_t)i + 1;
        ph->volume = (double)rng_int(r, 1, 20) / 2.;
        ph->dir = rng_int(r, 0, 3) == 0 ? HS_DIR_READ : HS_DIR_WRITE;
        ph->waited = (double)rng_int(r, 0, 6);
        ph->stall = (double)rng_int(r, 0, 6);
        ph->priority = rng_int(r, 0, 10);
        if (m > 1 && rng_int(r, 0, 2) == 0) {
            for (int j = 0; j < m; j++)
                if (rng_int(r, 0, 1))
                    in->allowed[i][ph->nallowed++] = j;
            if (ph->nallowed == 0)
                in->allowed[i][ph->nallowed++] = rng_int(r, 0, m - 1);
            ph->allowed = in->allowed[i];
        }
    }
    in->p = problem(in->ph, n, in->nd, m, S, dts[rng_int(r, 0, 3)]);
}

static double leaves(const inst_t *in)
{
    double l = 1.;
    for (int i = 0; i < in->p.nphases; i++) {
        int a = in->ph[i].nallowed ? in->ph[i].nallowed : in->p.nnodes;
        l *= (double)(a * in->p.nslots);
    }
    return l;
}

static int ncompared, nenospc, nfull;

/* ------------------------------------------------------------ independent oracle
 * The model of doc/harmonia-dp.md §1-2 written again here, from the document and
 * not from hs_dp_model.h (which the library's DP and exhaustive search share),
 * with its own enumeration of every placement: a cost-model error shared by the DP
 * and the library's exhaustive search still shows here. */

/* MSCA of 'c' streams: the measured curve, its last value held beyond it; no
 * curve: 0.  Reads use the read curve when there is one. */
static double or_msca(const hs_dp_node_t *nd, hs_dir_t d, int c)
{
    const double *v = nd->msca;
    int k = nd->nmsca;
    if (d == HS_DIR_READ && nd->nmsca_read > 0) {
        v = nd->msca_read;
        k = nd->nmsca_read;
    }
    if (k == 0)
        return 0.;
    return v[(c < k ? c : k) - 1];
}

static int or_allowed(const hs_dp_phase_t *ph, int j)
{
    if (ph->nallowed == 0)
        return 1;
    for (int k = 0; k < ph->nallowed; k++)
        if (ph->allowed[k] == j)
            return 1;
    return 0;
}

/* Cost (and secondary) of placing phase i on node[i], slot[i]; 0 if valid. */
static int or_eval(const hs_dp_problem_t *p, hs_dp_cost_t cost, const int *node, const int *slot,
                   double *val, double *sec)
{
    int n = p->nphases, m = p->nnodes, S = p->nslots;
    double tau[GMAX_N], used[GMAX_M] = { 0 }, busy[GMAX_M] = { 0 };
    int has[GMAX_M] = { 0 };

    for (int i = 0; i < n; i++) {
        const hs_dp_phase_t *ph = &p->phases[i];
        const hs_dp_node_t *nd = &p->nodes[node[i]];
        if (!or_allowed(ph, node[i]))
            return -1;
        int c = 0; /* phases of this decision in the cell */
        for (int k = 0; k < n; k++)
            c += node[k] == node[i] && slot[k] == slot[i];
        for (int r = 0; r < nd->nrunning; r++) /* streams still running then */
            c += nd->running_end[r] > slot[i] * p->slot;
        double interf = c * (1. + or_msca(nd, ph->dir, c));
        tau[i] = slot[i] * p->slot + ph->volume * interf / nd->bandwidth;
        if (ph->dir == HS_DIR_WRITE)
            used[node[i]] += ph->volume;
        has[node[i]] = 1;
        if (tau[i] > busy[node[i]])
            busy[node[i]] = tau[i];
    }
    for (int j = 0; j < m; j++) {
        if (used[j] > p->nodes[j].capacity)
            return -1;
        /* one wave at a time: a wave at slot s holds the node max(1, ceil(T/Delta))
         * slots, T its longest member's duration */
        int next = 0;
        for (int s2 = 0; s2 < S; s2++) {
            double longest = -1.;
            for (int i = 0; i < n; i++)
                if (node[i] == j && slot[i] == s2 && tau[i] - s2 * p->slot > longest)
                    longest = tau[i] - s2 * p->slot;
            if (longest < 0.)
                continue;
            if (s2 < next)
                return -1;
            int len = (int)ceil(longest / p->slot);
            next = s2 + (len > 1 ? len : 1);
        }
    }
    double v = 0., sum = 0.;
    for (int i = 0; i < n; i++) {
        const hs_dp_phase_t *ph = &p->phases[i];
        double best = 0., stall = ph->waited + tau[i];
        for (int j = 0; j < m; j++)
            if (or_allowed(ph, j) && p->nodes[j].bandwidth > best)
                best = p->nodes[j].bandwidth;
        sum += tau[i];
        switch (cost) {
        case HS_DP_COST_MAXBW:
            v = fmax(v, tau[i]);
            break;
        case HS_DP_COST_MINSTALL:
            v += stall;
            break;
        case HS_DP_COST_FAIRNESS:
            v = fmax(v, stall / (ph->volume / best));
            break;
        case HS_DP_COST_PRIORITY:
            v += (ph->priority ? ph->priority : 1) * stall;
            break;
        default:
            break;
        }
    }
    if (cost == HS_DP_COST_BUFFER_EFF)
        for (int j = 0; j < m; j++)
            if (has[j])
                v += (p->nodes[j].capacity - used[j]) * busy[j];
    *val = v;
    *sec = cost == HS_DP_COST_MAXBW || cost == HS_DP_COST_FAIRNESS ? sum : 0.;
    return 0;
}

/* Every placement, by counting in base m*S; the least cost, then secondary. */
static int or_best(const hs_dp_problem_t *p, hs_dp_cost_t cost, double *val, double *sec)
{
    int n = p->nphases, cells = p->nnodes * p->nslots, found = 0;
    int node[GMAX_N], slot[GMAX_N], digit[GMAX_N] = { 0 };

    for (;;) {
        double v, s2;
        for (int i = 0; i < n; i++) {
            node[i] = digit[i] / p->nslots;
            slot[i] = digit[i] % p->nslots;
        }
        if (or_eval(p, cost, node, slot, &v, &s2) == 0
            && (!found || (v < *val && !close_rel(v, *val)) || (close_rel(v, *val) && s2 < *sec))) {
            if (!found || !close_rel(v, *val))
                *val = v;
            *sec = s2;
            found = 1;
        }
        int i = 0;
        while (i < n && ++digit[i] == cells)
            digit[i++] = 0;
        if (i == n)
            return found;
    }
}

/* The DP against the independent model on 400 small generated instances (up to
 * 4 phases x 2 nodes x 3 slots), every cost: the same optimum (or none), and the
 * library's evaluation of the DP's placement equal to the oracle's. */
START_TEST(test_dp_vs_independent_oracle)
{
    rng_t r = { 0x5eed0123456789abULL };
    static inst_t in;
    int compared = 0;

    for (int t = 0; t < 400; t++) {
        gen(&r, &in, rng_int(&r, 1, 4), rng_int(&r, 1, 2), rng_int(&r, 1, 3));
        for (int k = 0; k < HS_DP_COST__COUNT; k++) {
            hs_dp_place_t pl[GMAX_N];
            hs_dp_solution_t sol = { .place = pl };
            hu_error_t err = { "" };
            double ov = 0., os = 0.;
            int found = or_best(&in.p, (hs_dp_cost_t)k, &ov, &os);
            int rc = hs_dp_place(&in.p, (hs_dp_cost_t)k, &sol, &err);
            ck_assert_msg((rc == 0) == found, "instance %d %s: DP %d, oracle %s", t,
                          hs_dp_cost_name((hs_dp_cost_t)k), rc, found ? "found" : "none");
            if (!found)
                continue;
            ck_assert_msg(close_rel(sol.cost, ov), "instance %d %s: DP %.17g, oracle %.17g", t,
                          hs_dp_cost_name((hs_dp_cost_t)k), sol.cost, ov);
            if (k == HS_DP_COST_MAXBW || k == HS_DP_COST_FAIRNESS)
                ck_assert_msg(close_rel(sol.secondary, os),
                              "instance %d %s: secondary DP %.17g, oracle %.17g", t,
                              hs_dp_cost_name((hs_dp_cost_t)k), sol.secondary, os);
            int node[GMAX_N], slot[GMAX_N];
            double v, s2;
            for (int i = 0; i < in.p.nphases; i++) {
                node[i] = pl[i].node;
                slot[i] = pl[i].slot;
            }
            ck_assert_msg(or_eval(&in.p, (hs_dp_cost_t)k, node, slot, &v, &s2) == 0,
                          "instance %d %s: the DP's placement is invalid in the model", t,
                          hs_dp_cost_name((hs_dp_cost_t)k));
            ck_assert(close_rel(v, sol.cost));
            compared++;
        }
    }
    ck_assert_int_ge(compared, 1000);
}
END_TEST

/* Compare DP and exhaustive on one instance, all five costs. */
static void compare(inst_t *in, int idx)
{
    hs_dp_place_t xp[HS_DP_COST__COUNT][GMAX_N], dp[GMAX_N];
    hs_dp_solution_t xs[HS_DP_COST__COUNT];
    hu_error_t err = { "" };
    int rx;

    for (int k = 0; k < HS_DP_COST__COUNT; k++)
        xs[k].place = xp[k];
    rx = hs_dp_exhaustive_all(&in->p, xs, &err);
    ck_assert_msg(rx == 0 || errno == ENOSPC, "instance %d: %s", idx, err.text);
    for (int k = 0; k < HS_DP_COST__COUNT; k++) {
        hs_dp_solution_t ds = { .place = dp };
        int rd = hs_dp_place(&in->p, (hs_dp_cost_t)k, &ds, &err);
        if (rx < 0) {
            ck_assert_msg(rd < 0 && errno == ENOSPC,
                          "instance %d %s: DP found a "
                          "placement, exhaustive none",
                          idx, hs_dp_cost_name((hs_dp_cost_t)k));
            continue;
        }
        ck_assert_msg(rd == 0, "instance %d %s: %s", idx, hs_dp_cost_name((hs_dp_cost_t)k),
                      err.text);
        ck_assert(ds.exact);
        ck_assert_msg(close_rel(ds.cost, xs[k].cost),
                      "instance %d (%d phases, %d nodes, %d slots) %s: DP %.17g, "
                      "exhaustive %.17g",
                      idx, in->p.nphases, in->p.nnodes, in->p.nslots,
                      hs_dp_cost_name((hs_dp_cost_t)k), ds.cost, xs[k].cost);
        ck_assert_msg(close_rel(ds.secondary, xs[k].secondary),
                      "instance %d %s: secondary DP %.17g, exhaustive %.17g", idx,
                      hs_dp_cost_name((hs_dp_cost_t)k), ds.secondary, xs[k].secondary);
        /* the placement is valid and is worth what the DP says */
        double v;
        ck_assert_msg(hs_dp_evaluate(&in->p, (hs_dp_cost_t)k, dp, &v, NULL, &err) == 0,
                      "instance %d: %s", idx, err.text);
        ck_assert(close_rel(v, ds.cost));
    }
    if (rx < 0)
        nenospc++;
    else
        ncompared++;
}

/* Hundreds of generated instances of up to 6 phases x 3 nodes x 8 slots: every size
 * in that box is drawn, except that instances whose exhaustive search exceeds 3e6
 * leaves are redrawn (the test stays fast under sanitizers); the full 6 x 3 x 8 box
 * is covered by test_dp_vs_exhaustive_full. */
START_TEST(test_dp_vs_exhaustive)
{
    rng_t r = { 0x5eed0fdeadbeefULL };
    inst_t in;
    int count = 0;

    while (count < 600) {
        int n = rng_int(&r, 1, 6), m = rng_int(&r, 1, 3), S = rng_int(&r, 1, 8);
        gen(&r, &in, n, m, S);
        if (leaves(&in) > 3e6)
            continue;
        compare(&in, count);
        count++;
    }
    fprintf(stderr,
            "test_dp: DP == exhaustive on %d instances (x5 costs), "
            "%d infeasible in both\n",
            ncompared, nenospc);
    ck_assert_int_ge(ncompared, 500);
}
END_TEST

/* The full box: 6 phases on 3 nodes with 8 slots, every phase allowed everywhere
 * (24^6 = 1.9e8 placements each). */
START_TEST(test_dp_vs_exhaustive_full)
{
    rng_t r = { 0xf0115eedULL };
    inst_t in;

    gen(&r, &in, 6, 3, 8);
    for (int i = 0; i < 6; i++)
        in.ph[i].nallowed = 0;
    compare(&in, -1);
    nfull++;
    fprintf(stderr, "test_dp: DP == exhaustive on a full 6 x 3 x 8 instance\n");
}
END_TEST

/* The fallback is never better than the optimum, and is valid; report its gap. */
START_TEST(test_fallback_vs_exact)
{
    rng_t r = { 42 };
    inst_t in;
    double gap[HS_DP_COST__COUNT] = { 0 };
    int cnt[HS_DP_COST__COUNT] = { 0 };

    for (int t = 0; t < 60; t++) {
        gen(&r, &in, rng_int(&r, 2, 9), rng_int(&r, 1, 4), rng_int(&r, 1, 4));
        for (int k = 0; k < HS_DP_COST__COUNT; k++) {
            hs_dp_place_t a[GMAX_N], b[GMAX_N];
            hs_dp_solution_t se = { .place = a }, sh = { .place = b };
            hu_error_t err;
            double v;
            in.p.method = HS_DP_EXACT;
            if (hs_dp_place(&in.p, (hs_dp_cost_t)k, &se, &err) < 0) {
                ck_assert_int_eq(errno, ENOSPC);
                continue;
            }
            in.p.method = HS_DP_HEURISTIC;
            if (hs_dp_place(&in.p, (hs_dp_cost_t)k, &sh, &err) < 0) {
                ck_assert_int_eq(errno, ENOSPC); /* packing may fail */
                continue;
            }
            ck_assert(!sh.exact);
            ck_assert(hs_dp_evaluate(&in.p, (hs_dp_cost_t)k, b, &v, NULL, &err) == 0);
            ck_assert_msg(sh.cost >= se.cost * (1. - REL) - 1e-12,
                          "fallback %.17g below the optimum %.17g", sh.cost, se.cost);
            gap[k] += se.cost > 0. ? sh.cost / se.cost - 1. : 0.;
            cnt[k]++;
        }
    }
    for (int k = 0; k < HS_DP_COST__COUNT; k++)
        fprintf(stderr, "test_dp: fallback mean gap %-20s %6.2f%% over %d instances\n",
                hs_dp_cost_name((hs_dp_cost_t)k), cnt[k] ? 100. * gap[k] / cnt[k] : 0., cnt[k]);
}
END_TEST

/* 1,000 phases over 64 nodes: completes (fallback), valid placement. */
START_TEST(test_large)
{
    rng_t r = { 7 };
    const int n = 1000, m = 64, S = 8;
    hs_dp_phase_t *ph = calloc(n, sizeof(*ph));
    hs_dp_node_t *nd = calloc(m, sizeof(*nd));
    hs_dp_place_t *pl = calloc(n, sizeof(*pl));
    int(*al)[8] = calloc(n, sizeof(*al));

    ck_assert(ph && nd && pl && al);
    for (int j = 0; j < m; j++) {
        nd[j].bandwidth = j % 4 == 3 ? 1.5e9 : 4e9;
        nd[j].capacity = 4e12;
        nd[j].nmsca = 16;
        for (int c = 1; c <= 16; c++)
            nd[j].msca[c - 1] = j % 4 == 3 ? 0.5 * (c - 1) : 0.02 * (c - 1);
    }
    for (int i = 0; i < n; i++) {
        ph[i].volume = (double)rng_int(&r, 1, 64) * 1e9;
        ph[i].dir = rng_int(&r, 0, 4) ? HS_DIR_WRITE : HS_DIR_READ;
        ph[i].waited = rng_int(&r, 0, 30);
        ph[i].priority = rng_int(&r, 1, 10);
        if (i % 2) { /* a job allocation of 8 nodes */
            int base = rng_int(&r, 0, m - 8);
            for (int k = 0; k < 8; k++)
                al[i][k] = base + k;
            ph[i].nallowed = 8;
            ph[i].allowed = al[i];
        }
    }
    hs_dp_problem_t p = problem(ph, n, nd, m, S, 10.);
    for (int k = 0; k < HS_DP_COST__COUNT; k++) {
        hs_dp_solution_t sol = { .place = pl };
        hu_error_t err;
        double v;
        ck_assert_msg(hs_dp_place(&p, (hs_dp_cost_t)k, &sol, &err) == 0, "%s", err.text);
        ck_assert(!sol.exact);
        ck_assert(isfinite(sol.cost) && sol.cost > 0.);
        for (int i = 0; i < n; i++) {
            ck_assert(pl[i].node >= 0 && pl[i].node < m);
            ck_assert(pl[i].slot >= 0 && pl[i].slot < S);
            if (ph[i].nallowed)
                ck_assert(pl[i].node >= al[i][0] && pl[i].node <= al[i][7]);
        }
        ck_assert(hs_dp_evaluate(&p, (hs_dp_cost_t)k, pl, &v, NULL, &err) == 0);
        ck_assert(close_rel(v, sol.cost));
    }
    free(ph);
    free(nd);
    free(pl);
    free(al);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "hand", .timeout = 300,
          .tests = { test_hand_maxbw_minstall_fairness, test_hand_buffer_eff, test_hand_priority,
                     test_hand_slots, test_hand_running, test_allowed_capacity, test_errors,
                     test_fallback_vs_exact, test_large, NULL } },
        { "exhaustive", .timeout = 600,
          .tests = { test_dp_vs_exhaustive, test_dp_vs_exhaustive_full,
                     test_dp_vs_independent_oracle, NULL } },
    };
    SRunner *sr = srunner_create(tu_suite("dp", tcases, TU_COUNT(tcases)));
    int nf;

    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
