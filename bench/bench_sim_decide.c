/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_sim_decide — cost of one libhsched decision with K jobs all doing I/O.
 *
 *   bench_sim_decide POLICY K [REPEAT]
 *
 * Builds a scheduler, makes K jobs arrive and ask for an I/O phase at t = 0, then
 * times REPEAT decisions at increasing times (each advances the model a little so
 * nothing is cached).  Prints "POLICY K microseconds-per-decision".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "libhsched/hsched.h"

static double now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main (int argc, char **argv)
{
    hs_policy_t pol;
    hs_error_t err;
    hs_platform_t plat = { .nodes = 0, .node_bw = 1e9, .bw = 100e9 };
    hs_sched_t *s;
    hs_grant_t *g;
    int k, rep;
    double t0, dt;

    if (argc < 3) {
        fprintf (stderr, "Usage: bench_sim_decide POLICY K [REPEAT]\n");
        return 2;
    }
    k = atoi (argv[2]);
    rep = argc > 3 ? atoi (argv[3]) : 0;
    if (k < 1 || hs_policy_parse (argv[1], &pol, &err) < 0) {
        fprintf (stderr, "bench_sim_decide: bad policy or K\n");
        return 2;
    }
    if (rep <= 0)
        rep = k >= 10000 ? 20 : k >= 1000 ? 200 : 2000;
    plat.nodes = 64 * k;
    if (!(s = hs_sched_create (&plat, &pol, &err)) || !(g = calloc (k, sizeof (*g)))) {
        fprintf (stderr, "bench_sim_decide: %s\n", err.text);
        return 1;
    }
    for (int i = 0; i < k; i++) {
        double w = i % 3 == 0 ? 10 : i % 3 == 1 ? 100 : 1000;
        hs_job_t j = { .id = (uint64_t)i, .nodes = 64, .release = 0, .w = w,
                       .volume = 1e12, .instances = 10 };
        if (hs_job_arrive (s, 0, &j, &err) < 0
            || hs_phase_request (s, 0, (uint64_t)i, 1e12 * (1 + i % 7), HS_DIR_WRITE,
                                 w, &err) < 0) {
            fprintf (stderr, "bench_sim_decide: %s\n", err.text);
            return 1;
        }
    }
    t0 = now ();
    for (int r = 0; r < rep; r++) {
        double t = 1e-3 * (r + 1);
        if (hs_sched_advance (s, t) < 0 || hs_sched_decide (s, t, g, (size_t)k) < 0) {
            perror ("hs_sched_decide");
            return 1;
        }
    }
    dt = now () - t0;
    printf ("%-14s K=%-6d %10.2f us/decision\n", argv[1], k, 1e6 * dt / rep);
    free (g);
    hs_sched_destroy (s);
    return 0;
}
