/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_periodic.c — time to compute periodic patterns (periodic-throu,
 * periodic-cong, persched): PerSched's set 5 and job mixes of 60, 200 and 1000 jobs
 * (or the sizes given on the command line).  For each, the fast construction and
 * the plain quadratic one (hs_periodic_params_t.reference, same patterns) are timed
 * in the same run and their ratio printed; with --ref PROGRAM, an external
 * implementation of PerSched is timed on the same inputs too.  Prints figures;
 * asserts nothing about time (it checks that fast and plain give the same period
 * and SysEfficiency).
 *
 * Units: the bandwidth unit is the node bandwidth b = 1 (PMBS 2017's convention),
 * so a volume is in "b-seconds".
 *
 * Set 5 (PMBS 2017): two Turbulence2 (64 nodes, w = 76.8 s, vol = 23580) and one
 * PlasmaPhysics (512 nodes, w = 483456 s, vol = 3430400) on B = 300; T_min = 495000
 * as in the paper's runs (--set5-tmin 0: computed).
 *
 * Mixes (deterministic, --seed): beta_k uniform in 1..32, N = sum beta_k,
 * B = 0.3 N; w_k = 10^c (1 + 0.1 u) with the class c in {1, 2, 3} drawn uniformly
 * (IO-Sets' short, medium and long jobs); rho_k uniform in [0.70, 0.95], so
 * time_io_k = w_k (1 - rho_k) / rho_k and vol_k = time_io_k min(beta_k, B).
 * Short jobs get hundreds of instances per pattern.
 *
 * --ref PROGRAM: run "PROGRAM FILE B TMIN" where FILE holds one "w vol nodes" line
 * per job; PROGRAM prints "seconds sys_efficiency dilation period" on one line.
 * The plain construction is skipped above --plain-max jobs (default 200): it is
 * quadratic.  --only NAME times one heuristic (periodic-throu, periodic-cong or
 * persched), e.g. under a profiler.  --cpu times the process's CPU time instead of
 * the elapsed time (a loaded, shared host: the ratios between heuristics then
 * vary less from run to run); the --ref figure is what PROGRAM prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "libhsched/hs_periodic.h"

static unsigned long long state;

static double urand(void)
{
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return (double)((state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static clockid_t clk = CLOCK_MONOTONIC; /* --cpu: CLOCK_PROCESS_CPUTIME_ID */

static double now(void)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int dcmp(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (*x > *y) - (*x < *y);
}

static void gen(int K, hs_platform_t *plat, hs_pjob_t *jobs)
{
    int N = 0;

    for (int k = 0; k < K; k++) {
        jobs[k].nodes = 1 + (int)(urand() * 32);
        N += jobs[k].nodes;
    }
    plat->nodes = N;
    plat->node_bw = 1;
    plat->bw = 0.3 * N;
    plat->nbuffers = 0;
    plat->buffers = NULL;
    for (int k = 0; k < K; k++) {
        double cap = fmin(jobs[k].nodes, plat->bw);
        double rho = 0.70 + 0.25 * urand();
        int cls = 1 + (int)(urand() * 3);
        double tio;
        jobs[k].w = pow(10, cls) * (1 + 0.1 * urand());
        tio = jobs[k].w * (1 - rho) / rho;
        jobs[k].volume = tio * cap;
    }
}

/* Median time of 'reps' computations; *st gets the statistics. */
static double timed(const hs_platform_t *plat, const hs_pjob_t *jobs, int K,
                    const hs_periodic_params_t *prm, int reps, hs_pattern_stats_t *st)
{
    double t[16];
    hu_error_t err;
    int nr = reps > 16 ? 16 : reps;

    for (int r = 0; r < nr; r++) {
        double t0 = now();
        hs_pattern_t *p = hs_pattern_compute(plat, jobs, (size_t)K, prm, &err);
        t[r] = now() - t0;
        if (!p) {
            fprintf(stderr, "bench_periodic: %s\n", err.text);
            exit(1);
        }
        hs_pattern_stats(p, st);
        hs_pattern_destroy(p);
    }
    qsort(t, (size_t)nr, sizeof(double), dcmp);
    return t[nr / 2];
}

/* The external implementation on the same input; -1 if it failed. */
static double run_ref(const char *prog, const hs_platform_t *plat, const hs_pjob_t *jobs, int K,
                      double tmin, double *se, double *dil, double *T)
{
    char path[] = "/tmp/bench_periodic.XXXXXX", cmd[4096], line[256];
    int fd = mkstemp(path);
    FILE *f;
    double secs = -1;

    if (fd < 0 || !(f = fdopen(fd, "w")))
        return -1;
    for (int k = 0; k < K; k++)
        fprintf(f, "%.17g %.17g %d\n", jobs[k].w, jobs[k].volume, jobs[k].nodes);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "'%s' '%s' %.17g %.17g", prog, path, plat->bw, tmin);
    if ((f = popen(cmd, "r"))) {
        while (fgets(line, sizeof(line), f)) {
            if (sscanf(line, "%lf %lf %lf %lf", &secs, se, dil, T) == 4)
                break;
            secs = -1;
        }
        pclose(f);
    }
    unlink(path);
    return secs;
}

static const char *names[3] = { "periodic-throu", "periodic-cong", "persched" };
static int only = -1; /* --only: the index in names[], -1 for all */

static void row(const char *name, const hs_platform_t *plat, const hs_pjob_t *jobs, int K,
                double tmin, int reps, int plain_max, const char *ref)
{
    for (int h = 0; h < 3; h++) {
        hs_periodic_params_t prm;
        hs_pattern_stats_t st, sp;
        double tf, tp = NAN, tr = NAN, rse = NAN, rdil = NAN, rT = NAN;

        if (only >= 0 && h != only)
            continue;
        hs_periodic_params_init(&prm, (hs_periodic_heuristic_t)h);
        prm.tmin = tmin;
        tf = timed(plat, jobs, K, &prm, reps, &st);
        if (K <= plain_max) {
            prm.reference = true;
            tp = timed(plat, jobs, K, &prm, 1, &sp);
            if (sp.period != st.period || sp.sys_efficiency != st.sys_efficiency) {
                fprintf(stderr, "bench_periodic: %s %s: plain and fast differ\n", name, names[h]);
                exit(1);
            }
        }
        if (ref && h == 2)
            tr = run_ref(ref, plat, jobs, K, st.tmin, &rse, &rdil, &rT);
        printf("%-8s %5d %-15s %10.1f %10.1f %6d %7.4f %8.4f %9.3f %9.3f %7.1f", name, K, names[h],
               st.tmin, st.period, st.instances, st.sys_efficiency, st.dilation, tf * 1e3, tp * 1e3,
               tp / tf);
        if (ref && h == 2)
            printf("   ref: %9.3f ms  ours/ref %5.3f  SysEff %.4f Dil %.4f T %.1f", tr * 1e3,
                   tf / tr, rse, rdil, rT);
        printf("\n");
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    int ks[16] = { 60, 200, 1000 }, nk = 3, reps = 3, user = 0, plain_max = 200;
    unsigned long long seed = 1;
    double set5_tmin = 495000;
    const char *ref = NULL;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--plain-max") && i + 1 < argc)
            plain_max = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--set5-tmin") && i + 1 < argc)
            set5_tmin = atof(argv[++i]);
        else if (!strcmp(argv[i], "--ref") && i + 1 < argc)
            ref = argv[++i];
        else if (!strcmp(argv[i], "--cpu"))
            clk = CLOCK_PROCESS_CPUTIME_ID;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            const char *h = argv[++i];
            for (only = 2; only >= 0 && strcmp(names[only], h); only--)
                ;
            if (only < 0) {
                fprintf(stderr, "bench_periodic: unknown heuristic %s\n", h);
                return 2;
            }
        } else if (user < 16 && atoi(argv[i]) > 0) {
            ks[user++] = atoi(argv[i]);
            nk = user;
        } else {
            fprintf(stderr, "usage: bench_periodic [--seed N] [--reps N] [--plain-max K] "
                            "[--set5-tmin T] [--ref PROGRAM] [--only HEURISTIC] [--cpu] [K ...]\n");
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    printf("# fast: this construction; plain: the quadratic one (same patterns); "
           "times are medians (ms)\n");
    printf("%-8s %5s %-15s %10s %10s %6s %7s %8s %9s %9s %7s\n", "input", "K", "heuristic", "T_min",
           "T", "inst", "SysEff", "Dilation", "fast(ms)", "plain(ms)", "ratio");
    {
        const hs_pjob_t set5[3] = {
            { 64, 76.8, 23580 },
            { 64, 76.8, 23580 },
            { 512, 483456, 3430400 },
        };
        const hs_platform_t plat = { 640, 1, 300, 0, NULL };
        row("set5", &plat, set5, 3, set5_tmin, reps, plain_max, ref);
    }
    for (int i = 0; i < nk; i++) {
        int K = ks[i];
        hs_pjob_t *jobs = calloc((size_t)K, sizeof(*jobs));
        hs_platform_t plat;
        char name[32];

        if (!jobs)
            return 1;
        state = seed * 0x9E3779B97F4A7C15ULL + (unsigned long long)K;
        gen(K, &plat, jobs);
        snprintf(name, sizeof(name), "mix%d", K);
        row(name, &plat, jobs, K, 0, reps, plain_max, ref);
        free(jobs);
    }
    return 0;
}
