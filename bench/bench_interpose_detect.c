/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_interpose_detect — the accuracy of the interposer's phase detector
 * (src/lib/libharmonia/phasedet.c) on synthetic periodic programs: for w_iter
 * 1, 10 and 60 s and noise eta in each iteration's compute and I/O times
 * (uniform, +-eta), 200 programs of 16 phases each, replayed as the interposer
 * sees them (1 MiB calls, a poll every 10 ms).  Prints, per row: the phases found
 * over the true ones, the largest error of a phase's start over w_iter, and the
 * estimated w_iter's error after 3 and after 12 periods against the program's
 * nominal w_iter (mean, 95th percentile, share within 10%).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/lib/libharmonia/phasedet.h"

static unsigned long long rng = 88172645463325252ULL;

static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (rng >> 11) * (1.0 / 9007199254740992.0);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define NPH 16
#define RUNS 200

int main(void)
{
    const double ws[] = { 1, 10, 60 }, etas[] = { 0, 0.1, 0.25, 0.5 };
    printf("%6s %5s %9s %10s | %-28s | %-28s\n", "w_iter", "eta", "found", "start/w",
           "w_iter error after 3 periods", "after 12 periods");
    printf("%6s %5s %9s %10s | %8s %8s %9s | %8s %8s %9s\n", "", "", "", "max", "mean", "p95",
           "<=10%", "mean", "p95", "<=10%");
    for (size_t a = 0; a < sizeof(ws) / sizeof(ws[0]); a++)
        for (size_t b = 0; b < sizeof(etas) / sizeof(etas[0]); b++) {
            double w = ws[a], eta = etas[b], e3[RUNS], e12[RUNS], startmax = 0;
            long found = 0, truth = 0;
            for (int r = 0; r < RUNS; r++) {
                hm_pd_t pd;
                hm_pd_phase_t ph;
                double t = 5 * urand(), tick = 0, start[NPH], w_at[NPH + 1] = { 0 };
                int n = 0;
                hm_pd_init(&pd, NULL);
                double io = 0.2 * w, comp = w - io, call = 1 << 20;
                for (int i = 0; i < NPH; i++) {
                    double c = comp * (1 + eta * (2 * urand() - 1));
                    double d = io * (1 + eta * (2 * urand() - 1));
                    int ncalls = (int)(256 * d / io);
                    if (ncalls < 1)
                        ncalls = 1;
                    for (double end = t + c; tick < end; tick += 0.01)
                        if (hm_pd_poll(&pd, tick, 0, &ph) && n < NPH) {
                            if (fabs(ph.start - start[n]) / w > startmax)
                                startmax = fabs(ph.start - start[n]) / w;
                            w_at[++n] = hm_pd_w_iter(&pd);
                        }
                    t += c;
                    start[i] = t;
                    for (int k = 0; k < ncalls; k++) {
                        hm_pd_start(&pd, t, 0, &ph);
                        t += d / ncalls;
                        hm_pd_done(&pd, t, call);
                    }
                }
                if (hm_pd_flush(&pd, &ph) && n < NPH) {
                    if (fabs(ph.start - start[n]) / w > startmax)
                        startmax = fabs(ph.start - start[n]) / w;
                    w_at[++n] = hm_pd_w_iter(&pd);
                }
                found += n;
                truth += NPH;
                /* three periods: four phases closed; twelve: thirteen */
                e3[r] = fabs(w_at[4] - w) / w;
                e12[r] = fabs(w_at[13] - w) / w;
            }
            qsort(e3, RUNS, sizeof(double), cmp);
            qsort(e12, RUNS, sizeof(double), cmp);
            double m3 = 0, m12 = 0;
            int in3 = 0, in12 = 0;
            for (int r = 0; r < RUNS; r++) {
                m3 += e3[r] / RUNS;
                m12 += e12[r] / RUNS;
                in3 += e3[r] <= 0.1;
                in12 += e12[r] <= 0.1;
            }
            printf("%5.0fs %5.2f %4ld/%-4ld %10.4f | %7.1f%% %7.1f%% %8.0f%% | %7.1f%% %7.1f%% "
                   "%8.0f%%\n",
                   w, eta, found, truth, startmax, 100 * m3, 100 * e3[RUNS * 95 / 100],
                   100.0 * in3 / RUNS, 100 * m12, 100 * e12[RUNS * 95 / 100], 100.0 * in12 / RUNS);
        }
    return 0;
}
