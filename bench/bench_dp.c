/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_dp.c — Harmonia DP decision time versus pending phases and buffer nodes
 * (doc/harmonia-dp.md §3.2, §4).  Prints figures; no timed assertions.
 *
 *   1. the exact DP alone (forced), 1..12 phases on 3 and 8 nodes, 8 slots;
 *   2. hs_dp_place() as the scheduler calls it (default budget: exact within the
 *      cap, fallback beyond), 10 / 100 / 1,000 / 10,000 phases on 4 / 16 / 64
 *      nodes, 8 slots, each of the five costs; the 1,000 x 64 point is marked
 *      against the 10 ms target.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libhsched/hs_dp.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rs = 0x2545F4914F6CDD1DULL;

static int rnd(int lo, int hi)
{
    rs ^= rs >> 12;
    rs ^= rs << 25;
    rs ^= rs >> 27;
    return lo + (int)((rs * 2685821657736338717ULL) % (uint64_t)(hi - lo + 1));
}

typedef struct {
    hs_dp_phase_t *ph;
    hs_dp_node_t *nd;
    int (*al)[8];
    hs_dp_place_t *pl;
    hs_dp_problem_t p;
} inst_t;

/* A mixed tier: 3 NVMe-like nodes (4 GB/s, MSCA 0.02 (c-1)) for 1 HDD-like one
 * (1.5 GB/s, MSCA 0.5 (c-1)); phases of 1..64 GB, 80% writes, waited 0..30 s,
 * priorities 1..10, half of them restricted to an 8-node job allocation. */
static int inst_make(inst_t *in, int n, int m, int S)
{
    memset(in, 0, sizeof(*in));
    in->ph = calloc((size_t)n + 1, sizeof(*in->ph));
    in->nd = calloc((size_t)m, sizeof(*in->nd));
    in->al = calloc((size_t)n + 1, sizeof(*in->al));
    in->pl = calloc((size_t)n + 1, sizeof(*in->pl));
    if (!in->ph || !in->nd || !in->al || !in->pl)
        return -1;
    for (int j = 0; j < m; j++) {
        hs_dp_node_t *d = &in->nd[j];
        int slow = j % 4 == 3;
        d->bandwidth = slow ? 1.5e9 : 4e9;
        d->capacity = 1e15;
        d->nmsca = 16;
        for (int c = 1; c <= 16; c++)
            d->msca[c - 1] = (slow ? 0.5 : 0.02) * (c - 1);
    }
    for (int i = 0; i < n; i++) {
        hs_dp_phase_t *ph = &in->ph[i];
        ph->job = (uint64_t)i;
        ph->volume = (double)rnd(1, 64) * 1e9;
        ph->dir = rnd(0, 4) ? HS_DIR_WRITE : HS_DIR_READ;
        ph->waited = rnd(0, 30);
        ph->stall = rnd(0, 100);
        ph->priority = rnd(1, 10);
        if (m > 8 && i % 2) {
            int base = rnd(0, m - 8);
            for (int k = 0; k < 8; k++)
                in->al[i][k] = base + k;
            ph->nallowed = 8;
            ph->allowed = in->al[i];
        }
    }
    in->p.phases = in->ph;
    in->p.nphases = n;
    in->p.nodes = in->nd;
    in->p.nnodes = m;
    in->p.nslots = S;
    in->p.slot = 10.; /* about the alone time of a 40 GB phase */
    return 0;
}

static void inst_free(inst_t *in)
{
    free(in->ph);
    free(in->nd);
    free(in->al);
    free(in->pl);
}

/* Median of 'reps' decisions, in ms; -1 on error. */
static double time_place(inst_t *in, hs_dp_cost_t c, int reps, hs_dp_solution_t *out)
{
    double t[31];
    hu_error_t err;

    if (reps > 31)
        reps = 31;
    for (int r = 0; r < reps; r++) {
        hs_dp_solution_t sol = { .place = in->pl };
        double t0 = now();
        if (hs_dp_place(&in->p, c, &sol, &err) < 0) {
            fprintf(stderr, "bench_dp: %s\n", err.text);
            return -1.;
        }
        t[r] = 1e3 * (now() - t0);
        *out = sol;
    }
    for (int a = 1; a < reps; a++) /* insertion sort */
        for (int b = a; b > 0 && t[b] < t[b - 1]; b--) {
            double x = t[b];
            t[b] = t[b - 1];
            t[b - 1] = x;
        }
    return t[reps / 2];
}

int main(void)
{
    static const int nphases[] = { 10, 100, 1000, 10000 };
    static const int nnodes[] = { 4, 16, 64 };
    const int S = 8;
    double target = -1.;

    printf("# Harmonia DP decision time (CPU time, median of repeated calls), %d slots\n", S);
    printf("\n## 1. exact DP (forced), time vs phases: O(M (S+1) 3^n)\n");
    printf("%8s %6s %14s %14s %12s\n", "phases", "nodes", "minstall_ms", "maxbw_ms", "steps");
    for (int m = 3; m <= 8; m += 5)
        for (int n = 1; n <= 12; n++) {
            inst_t in;
            hs_dp_solution_t s1, s2;
            if (inst_make(&in, n, m, S) < 0)
                return 1;
            in.p.method = HS_DP_EXACT;
            double a = time_place(&in, HS_DP_COST_MINSTALL, n < 10 ? 11 : 3, &s1);
            double b = time_place(&in, HS_DP_COST_MAXBW, n < 10 ? 11 : 3, &s2);
            printf("%8d %6d %14.3f %14.3f %12.3g\n", n, m, a, b, s1.steps);
            inst_free(&in);
        }

    printf("\n## 2. hs_dp_place() with the default budget (%.3g steps): exact within "
           "the cap, fallback beyond\n",
           HS_DP_BUDGET_DEFAULT);
    printf("%8s %6s %-20s %12s %8s %12s\n", "phases", "nodes", "cost", "time_ms", "method",
           "steps");
    for (size_t a = 0; a < sizeof(nphases) / sizeof(nphases[0]); a++)
        for (size_t b = 0; b < sizeof(nnodes) / sizeof(nnodes[0]); b++) {
            int n = nphases[a], m = nnodes[b];
            double worst = 0.;
            for (int c = 0; c < HS_DP_COST__COUNT; c++) {
                inst_t in;
                hs_dp_solution_t sol;
                if (inst_make(&in, n, m, S) < 0)
                    return 1;
                double t = time_place(&in, (hs_dp_cost_t)c, n >= 10000 ? 3 : 11, &sol);
                printf("%8d %6d %-20s %12.3f %8s %12.3g\n", n, m, hs_dp_cost_name((hs_dp_cost_t)c),
                       t, sol.exact ? "exact" : "fallback", sol.steps);
                if (t > worst)
                    worst = t;
                inst_free(&in);
            }
            if (n == 1000 && m == 64)
                target = worst;
        }
    printf("\n## target: 1,000 phases x 64 nodes, worst of the five costs: %.3f ms "
           "(target < 10 ms: %s)\n",
           target, target >= 0. && target < 10. ? "met" : "NOT met");
    return 0;
}
