/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of bbsim's engine (sim/engine.c) on workloads whose schedule is known
 * by hand.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/sim.h"
#include "testutil.h"

static wl_jobs_t *run(const char *text, const char *policy, sim_result_t *res, bool rec)
{
    hu_error_t err;
    hu_error_t herr;
    hs_policy_t pol;
    wl_t *wl = wl_load_buffer(text, strlen(text), "e.yaml", &err);
    ck_assert_msg(wl != NULL, "%s", err.text);
    wl_jobs_t *jobs = wl_expand(wl, 1, &err);
    ck_assert(jobs != NULL);
    ck_assert_msg(hs_policy_parse(policy, &pol, &herr) == 0, "%s", herr.text);
    sim_opts_t opts = { .record = rec };
    int rc = sim_run(wl, jobs, &pol, &opts, res, &err);
    ck_assert_msg(rc == 0, "%s", err.text);
    wl_destroy(wl);
    return jobs; /* the result borrows the job names: free after it */
}

/* Free a run's result, then its jobs (the result borrows their names). */
static void done(sim_result_t *r, wl_jobs_t *j)
{
    sim_result_clear(r);
    wl_jobs_destroy(j);
}

/* A platform of n nodes of node_bw each sharing bw, and app 'a' alone on all of
 * them: the app's other keys follow. */
#define ALONE(n, node_bw, bw) \
    "platform:\n  nodes: " n "\n  node_bandwidth: " node_bw "\n  bandwidth: " bw "\n" \
    "apps:\n  - name: a\n    nodes: " n "\n"

/* One app alone: no congestion, so rho~ = rho and the makespan is exact. */
START_TEST(test_alone)
{
    sim_result_t r;
    wl_jobs_t *j = run(ALONE("10", "1 GB/s", "4 GB/s") "    release: 5 s\n    iterations: 3\n"
                                                       "    w: 10 s\n    io_volume: 20 GB\n",
                       "fairshare", &r, false);
    /* time_io = 20 GB / min(10 * 1, 4) GB/s = 5 s; 3 x (10 + 5) = 45 s */
    ck_assert(fabs(r.m.makespan - 45) < 1e-6);
    ck_assert(fabs(r.m.dilation - 1) < 1e-9);
    ck_assert(fabs(r.m.sys_efficiency - r.m.upper_limit) < 1e-9);
    ck_assert(fabs(r.m.upper_limit - 30. / 45.) < 1e-9);
    ck_assert(fabs(r.stats[0].end - 50) < 1e-6);
    /* arrive + 3 requests + 3 finishes + leave */
    ck_assert_int_eq((int)r.events, 8);
    done(&r, j);
}
END_TEST

#define TWO \
    "platform:\n  nodes: 20\n  node_bandwidth: 1 GB/s\n  bandwidth: 10 GB/s\n" \
    "apps:\n  - name: a\n    nodes: 10\n    iterations: 1\n    w: 10 s\n" \
    "    io_volume: 100 GB\n    count: 2\n"

/* Two identical apps asking at once: fair sharing ends both at 30 s; exclusive
 * access ends one at 20 s and the other at 30 s. */
START_TEST(test_two)
{
    sim_result_t r;
    wl_jobs_t *j = run(TWO, "fairshare", &r, true);
    ck_assert(fabs(r.stats[0].end - 30) < 1e-6);
    ck_assert(fabs(r.stats[1].end - 30) < 1e-6);
    ck_assert(fabs(r.m.dilation - 1.5) < 1e-9);
    ck_assert(r.traces != NULL);
    ck_assert_int_ge(r.traces[0].n, 2);
    ck_assert_int_eq(r.traces[0].segs[0].kind, SEG_COMPUTE);
    ck_assert(fabs(r.traces[0].segs[1].bw - 5e9) < 1);
    done(&r, j);

    j = run(TWO, "fcfs", &r, false);
    double e0 = r.stats[0].end, e1 = r.stats[1].end;
    ck_assert(fabs(fmin(e0, e1) - 20) < 1e-6);
    ck_assert(fabs(fmax(e0, e1) - 30) < 1e-6);
    ck_assert(fabs(r.m.makespan - 30) < 1e-6);
    done(&r, j);
}
END_TEST

/* Zero compute and per-iteration lists. */
START_TEST(test_zero_w)
{
    sim_result_t r;
    wl_jobs_t *j = run(ALONE("4", "1 GB/s", "2 GB/s") "    w: [0 s, 0 s, 1 s]\n"
                                                      "    io_volume: [2 GB, 4 GB, 2 GB]\n",
                       "mindilation", &r, false);
    ck_assert(fabs(r.m.makespan - 5) < 1e-6);
    ck_assert_int_eq(r.stats[0].phases, 3);
    done(&r, j);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = { { "core",
                                    .tests = { test_alone, test_two, test_zero_w, NULL } } };
    return tu_main("sim_engine", tcases, TU_COUNT(tcases));
}
