/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_periodic.c — time to compute periodic patterns (periodic-throu, periodic-cong,
 * persched) for K = 10, 50, 200 jobs (or the K given on the command line), with the
 * period found.  Prints figures; asserts nothing about time.
 *
 * Workload (deterministic, --seed): beta_k uniform in 1..32, N = sum beta_k,
 * b = 50 MB/s per node, B = 0.3 N b; w_k log-uniform in [100, 1000] s; rho_k uniform
 * in [0.70, 0.95], so time_io_k = w_k (1 - rho_k) / rho_k and
 * vol_k = time_io_k min(beta_k b, B).  The I/O load sum_k vol_k / (w_k + time_io_k)
 * is printed as a fraction of B.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include "libhsched/hs_periodic.h"

static unsigned long long state;

static double urand(void)
{
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return (double)((state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int dcmp(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (*x > *y) - (*x < *y);
}

static void gen(int K, hs_platform_t *plat, hs_pjob_t *jobs, double *load)
{
    int N = 0;
    double b = 50e6, l = 0;

    for (int k = 0; k < K; k++) {
        jobs[k].nodes = 1 + (int)(urand() * 32);
        N += jobs[k].nodes;
    }
    plat->nodes = N;
    plat->node_bw = b;
    plat->bw = 0.3 * N * b;
    plat->nbuffers = 0;
    plat->buffers = NULL;
    for (int k = 0; k < K; k++) {
        double cap = fmin(jobs[k].nodes * b, plat->bw);
        double rho = 0.70 + 0.25 * urand();
        double tio;
        jobs[k].w = 100 * pow(10, urand());
        tio = jobs[k].w * (1 - rho) / rho;
        jobs[k].volume = tio * cap;
        l += jobs[k].volume / (jobs[k].w + tio);
    }
    *load = l / plat->bw;
}

int main(int argc, char **argv)
{
    static const char *names[3] = { "periodic-throu", "periodic-cong", "persched" };
    int ks[16] = { 10, 50, 200 }, nk = 3, reps = 3;
    unsigned long long seed = 1;
    int user = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (user < 16 && atoi(argv[i]) > 0) {
            ks[user++] = atoi(argv[i]);
            nk = user;
        } else {
            fprintf(stderr, "usage: bench_periodic [--seed N] [--reps N] [K ...]\n");
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    printf("%-5s %-15s %9s %9s %6s %6s %6s %5s %7s %7s %8s %10s %10s\n", "K",
           "heuristic", "T_min(s)", "T(s)", "T/Tmin", "tried", "inst", "unsch",
           "SysEff", "upper", "Dilation", "visits", "time(ms)");
    for (int i = 0; i < nk; i++) {
        int K = ks[i];
        hs_pjob_t *jobs = calloc((size_t)K, sizeof(*jobs));
        hs_platform_t plat;
        double load;

        if (!jobs)
            return 1;
        state = seed * 0x9E3779B97F4A7C15ULL + (unsigned long long)K;
        gen(K, &plat, jobs, &load);
        printf("# K=%d N=%d B=%.3g B/s I/O load=%.2f of B\n", K, plat.nodes, plat.bw,
               load);
        for (int h = 0; h < 3; h++) {
            hs_periodic_params_t prm;
            hs_pattern_stats_t st;
            hs_error_t err;
            double t[64];
            int r, nr = reps > 64 ? 64 : reps;

            hs_periodic_params_init(&prm, (hs_periodic_heuristic_t)h);
            for (r = 0; r < nr; r++) {
                double t0 = now();
                hs_pattern_t *p = hs_pattern_compute(&plat, jobs, (size_t)K, &prm, &err);
                t[r] = now() - t0;
                if (!p) {
                    fprintf(stderr, "bench_periodic: %s\n", err.text);
                    return 1;
                }
                hs_pattern_stats(p, &st);
                hs_pattern_destroy(p);
            }
            qsort(t, (size_t)nr, sizeof(double), dcmp);
            printf("%-5d %-15s %9.1f %9.1f %6.3f %6d %6d %5d %7.4f %7.4f %8.4f %10llu "
                   "%10.2f\n", K, names[h], st.tmin, st.period, st.period / st.tmin,
                   st.periods_tried, st.instances, st.jobs_unscheduled,
                   st.sys_efficiency, st.upper_limit, st.dilation,
                   (unsigned long long)st.segments_visited, t[nr / 2] * 1e3);
            fflush(stdout);
        }
        free(jobs);
    }
    return 0;
}
