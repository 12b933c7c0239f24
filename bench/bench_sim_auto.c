/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_sim_auto — cost of one decision epoch of the policy 'auto'.
 *
 *   bench_sim_auto [K ...]          (default: 100 1000)
 *
 * For each K: a platform of 16 K compute nodes (b = 1 GB/s, B = 1.6 K GB/s), K
 * jobs of 16 nodes with IO-Sets-like hints (w = 10, 100 or 1000 s, I/O 20 % of the
 * compute at the full rate): half of them released over the first 1000 s, each
 * asking for its first phase at once, the other half half-way through their first
 * compute at T = 2000 s (so that every job keeps to its hints, and auto's guard,
 * which runs fairshare while a compute has gone on longer than 1.5x its hint, lets
 * the look ahead decide).  Then 20 epochs from T: one job leaves, a new one arrives
 * and asks for a phase (a mix change, so every decision is an epoch), one
 * decision.  The same
 * steps are timed under fcfs.  Prints the median and longest time per epoch and the
 * targets (5 ms at 100 jobs, 50 ms at 1000); nothing is asserted.
 *
 * Each K is run twice: jobs without a known number of phases (auto judges the
 * candidates at the end of a window), then ("K/end") jobs of 2 phases each (auto
 * simulates them to the end of their known phases when those fit its budget).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libhsched/hsched.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int instances; /* phases of each job (0: unknown) */
#define T0 2000.0     /* the first timed epoch */

static hs_job_t job(uint64_t id, double t)
{
    double w = pow(10, 1 + (double)(id % 3));
    hs_job_t j = { .id = id,
                   .nodes = 16,
                   .release = t,
                   .w = w,
                   .volume = 0.2 * w * 16e9,
                   .instances = instances };
    return j;
}

/* A job's release: half of them ask for a phase at once (released over the first
 * 1000 s), the others are half-way through their first compute at T0. */
struct arrival {
    double release;
    int k;
};

static int arrival_cmp(const void *a, const void *b)
{
    const struct arrival *x = a, *y = b;
    if (x->release != y->release)
        return x->release < y->release ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

static int dcmp(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (*x > *y) - (*x < *y);
}

/* Time the epochs of 'policy' with K jobs; median and max seconds per epoch. */
static int bench(const char *policy, int K, double *mean, double *max, hs_auto_state_t *ast)
{
    hs_platform_t plat = { 16 * K, 1e9, 1.6e9 * K, 0, NULL };
    hs_policy_t pol;
    hu_error_t err;
    hs_sched_t *s;
    hs_grant_t *g = calloc((size_t)K + 1, sizeof(*g));
    double t = 0, dts[20];
    int steps = 20;

    if (!g || hs_policy_parse(policy, &pol, &err) < 0
        || !(s = hs_sched_create(&plat, &pol, &err))) {
        fprintf(stderr, "bench_sim_auto: %s\n", err.text);
        return -1;
    }
    /* the jobs in the order of their release */
    struct arrival *arr = calloc((size_t)K, sizeof(*arr));
    if (!arr)
        return -1;
    for (int k = 0; k < K; k++) {
        double w = pow(10, 1 + (double)((k + 1) % 3));
        arr[k] = (struct arrival){ k % 2 == 0 ? 1000.0 * k / K : T0 - 0.5 * w, k };
    }
    qsort(arr, (size_t)K, sizeof(*arr), arrival_cmp);
    for (int i = 0; i < K; i++) {
        int k = arr[i].k;
        hs_job_t j = job((uint64_t)k + 1, arr[i].release);
        t = j.release;
        if (hs_job_arrive(s, t, &j, &err) < 0
            || (k % 2 == 0
                && hs_phase_request(s, t, j.id, j.volume, HS_DIR_WRITE, j.w, &err) < 0)) {
            fprintf(stderr, "bench_sim_auto: %s\n", err.text);
            free(arr);
            return -1;
        }
    }
    free(arr);
    t = T0;
    if (hs_sched_decide(s, t, g, (size_t)K + 1) < 0)
        return -1;
    *max = 0;
    for (int e = 0; e < steps; e++) {
        hs_job_t j = job((uint64_t)(K + e + 1), t + 0.1);
        double t0, dt;
        t += 0.1;
        if (hs_job_leave(s, t, (uint64_t)e + 1) < 0 || hs_job_arrive(s, t, &j, &err) < 0
            || hs_phase_request(s, t, j.id, j.volume, HS_DIR_WRITE, j.w, &err) < 0)
            return -1;
        t0 = now_s();
        if (hs_sched_decide(s, t, g, (size_t)K + 1) < 0)
            return -1;
        dt = now_s() - t0;
        dts[e] = dt;
        if (dt > *max)
            *max = dt;
    }
    qsort(dts, (size_t)steps, sizeof(double), dcmp);
    *mean = dts[steps / 2];
    if (ast)
        hs_sched_auto_state(s, ast);
    hs_sched_destroy(s);
    free(g);
    return 0;
}

int main(int argc, char **argv)
{
    int ks[8] = { 100, 1000 }, nk = 2;

    if (argc > 1) {
        nk = 0;
        for (int i = 1; i < argc && nk < 8; i++)
            if (atoi(argv[i]) > 0)
                ks[nk++] = atoi(argv[i]);
    }
    printf("%9s %10s %10s %10s %10s %8s %10s %s\n", "K", "median(ms)", "max(ms)", "fcfs(ms)",
           "target", "epochs", "events", "policy in force");
    for (int r = 0; r < 2 * nk; r++) {
        double am, ax, fm, fx;
        hs_auto_state_t st;
        int i = r / 2;
        char label[16];
        instances = r % 2 ? 2 : 0;
        if (bench("auto", ks[i], &am, &ax, &st) < 0 || bench("fcfs", ks[i], &fm, &fx, NULL) < 0)
            return 1;
        snprintf(label, sizeof(label), "%d%s", ks[i], instances ? "/end" : "");
        printf("%9s %10.3f %10.3f %10.3f %10s %8llu %10llu %s\n", label, am * 1e3, ax * 1e3,
               fm * 1e3,
               ks[i] <= 100    ? "5"
               : ks[i] <= 1000 ? "50"
                               : "-",
               (unsigned long long)st.epochs, (unsigned long long)st.last_work, st.current);
    }
    return 0;
}
