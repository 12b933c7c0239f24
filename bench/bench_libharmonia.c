/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_libharmonia — a job of N tiny I/O phases (one 4 KiB pwrite each) separated
 * by compute phases (a busy loop), with or without libharmonia around each phase.
 * Prints "key=value" figures: run time, mean/p50/p99 cost of begin+end per phase.
 *
 *   bench_libharmonia --phases 1000 --compute 0.01 --dir DIR [--no-harmonia]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harmonia/harmonia.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static volatile double sink;

static void busy(double s)
{
    double t0 = now_s(), x = sink;
    if (s <= 0)
        return;
    do {
        for (int i = 0; i < 2000; i++)
            x = x * 1.0000001 + 1e-9;
        sink = x;
    } while (now_s() - t0 < s);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "phases", required_argument, NULL, 'n' },
        { "compute", required_argument, NULL, 'c' },
        { "dir", required_argument, NULL, 'd' },
        { "no-harmonia", no_argument, NULL, 'N' },
        { NULL, 0, NULL, 0 },
    };
    int phases = 1000, opt;
    double compute = 0.01;
    const char *dir = "/tmp";
    bool use = true;
    harmonia_t *h = NULL;
    char path[4096], block[4096];

    while ((opt = getopt_long(argc, argv, "n:c:d:N", longopts, NULL)) != -1) {
        switch (opt) {
        case 'n':
            phases = atoi(optarg);
            break;
        case 'c':
            compute = atof(optarg);
            break;
        case 'd':
            dir = optarg;
            break;
        case 'N':
            use = false;
            break;
        default:
            fprintf(stderr, "usage: bench_libharmonia [--phases N] [--compute S] "
                            "[--dir DIR] [--no-harmonia]\n");
            return 2;
        }
    }
    if (phases < 1) {
        fprintf(stderr, "bench_libharmonia: --phases must be >= 1\n");
        return 2;
    }
    double *cost = calloc((size_t)phases, sizeof(double));
    double *cbeg = calloc((size_t)phases, sizeof(double));
    double *cend = calloc((size_t)phases, sizeof(double));
    if (!cost || !cbeg || !cend)
        return 1;
    snprintf(path, sizeof(path), "%s/bench_libharmonia.%d", dir, (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "bench_libharmonia: %s: %s\n", path, strerror(errno));
        return 1;
    }
    memset(block, 'h', sizeof(block));
    if (use && harmonia_init(&h, NULL) < 0) {
        fprintf(stderr, "bench_libharmonia: harmonia_init: %s\n", strerror(errno));
        return 1;
    }
    int gated = 0;
    double t0 = now_s();
    for (int i = 0; i < phases; i++) {
        harmonia_grant_t g = { 0 };
        busy(compute);
        double a = now_s();
        if (h)
            harmonia_phase_begin(h, sizeof(block), HARMONIA_WRITE, &g);
        double b = now_s();
        if (pwrite(fd, block, sizeof(block), (off_t)(i % 256) * 4096) != sizeof(block)) {
            fprintf(stderr, "bench_libharmonia: write: %s\n", strerror(errno));
            return 1;
        }
        double c = now_s();
        if (h)
            harmonia_phase_end(h, sizeof(block));
        double d = now_s();
        cost[i] = (b - a) + (d - c);
        cbeg[i] = b - a;
        cend[i] = d - c;
        gated += g.gated;
    }
    double run = now_s() - t0;
    const char *mode = h ? harmonia_mode_name(harmonia_mode(h)) : "none";
    harmonia_finalize(h);
    close(fd);
    unlink(path);
    double sum = 0;
    for (int i = 0; i < phases; i++)
        sum += cost[i];
    qsort(cost, (size_t)phases, sizeof(double), cmp_d);
    qsort(cbeg, (size_t)phases, sizeof(double), cmp_d);
    qsort(cend, (size_t)phases, sizeof(double), cmp_d);
    printf("mode=%s phases=%d gated=%d compute_s=%g run_s=%.4f phase_cost_mean_us=%.1f "
           "phase_cost_p50_us=%.1f phase_cost_p99_us=%.1f\n",
           mode, phases, gated, compute, run, sum / phases * 1e6, cost[phases / 2] * 1e6,
           cost[(int)(phases * 0.99)] * 1e6);
    printf("  begin_p50_us=%.1f begin_p99_us=%.1f end_p50_us=%.1f end_p99_us=%.1f\n",
           cbeg[phases / 2] * 1e6, cbeg[(int)(phases * 0.99)] * 1e6, cend[phases / 2] * 1e6,
           cend[(int)(phases * 0.99)] * 1e6);
    free(cost);
    free(cbeg);
    free(cend);
    return 0;
}
