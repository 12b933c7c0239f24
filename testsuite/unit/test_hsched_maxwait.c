/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_hsched_maxwait.c — the max-wait guard (hs_policy_t.max_wait,
 * doc/policies.md): whatever the policy, a phase waits at most max_wait before it
 * gets a share of the bandwidth.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "libhsched/hsched.h"
#include "testutil.h"

/* B = 1 GB/s, each job's cap = B.  Job 1 asks for 100 GB at t = 0; job 2 for 1 GB
 * at t = 1.  fcfs (like maxsyseff or set10 against a short job) holds job 2 until
 * job 1 is done: it finishes at 101 s.  With max_wait = 10 s, job 2's excess wait
 * reaches 10 s at t = 11: the core asks for a decision then (next_event), job 2
 * gets B / 2 (job 1 keeps the other share) and finishes at 11 + 1 / 0.5 = 13 s.
 * Returns job 2's finish time; *first the time of its first grant. */
static double run(const char *id, double max_wait, double *first)
{
    hs_platform_t plat = { 2, 1e9, 1e9, 0, NULL };
    hs_policy_t pol;
    hu_error_t err;
    hs_sched_t *s;
    hs_grant_t g[2];
    double t = 0, end2 = NAN;
    int left = 2;

    ck_assert_int_eq(hs_policy_parse(id, &pol, &err), 0);
    pol.max_wait = max_wait;
    s = hs_sched_create(&plat, &pol, &err);
    ck_assert_msg(s != NULL, "%s", err.text);
    *first = NAN;
    for (uint64_t k = 1; k <= 2; k++) {
        hs_job_t j = { .id = k, .nodes = 1, .release = 0, .w = 10, .volume = 1e9 };
        ck_assert_int_eq(hs_job_arrive(s, 0, &j, &err), 0);
    }
    ck_assert_int_eq(hs_phase_request(s, 0, 1, 100e9, HS_DIR_WRITE, 0, &err), 0);
    ck_assert_int_ge(hs_sched_decide(s, 0, g, 2), 0);
    ck_assert_int_eq(hs_phase_request(s, 1, 2, 1e9, HS_DIR_WRITE, 0, &err), 0);
    t = 1;
    for (int steps = 0; left > 0 && steps < 100; steps++) {
        uint64_t ids[2];
        size_t nc;
        int n = hs_sched_decide(s, t, g, 2);
        ck_assert_int_ge(n, 0);
        for (int i = 0; i < n; i++)
            if (g[i].id == 2 && g[i].bw > 0 && isnan(*first))
                *first = t;
        t = hs_sched_next_event(s);
        ck_assert(isfinite(t));
        ck_assert_int_eq(hs_sched_advance(s, t), 0);
        nc = hs_sched_completed(s, ids, 2);
        for (size_t q = 0; q < nc; q++) {
            ck_assert_int_eq(hs_phase_finish(s, t, ids[q]), 0);
            if (ids[q] == 2)
                end2 = t;
            left--;
        }
    }
    ck_assert_int_eq(left, 0);
    hs_sched_destroy(s);
    return end2;
}

START_TEST(test_wait_bounded)
{
    static const char *const ids[] = { "fcfs",      "maxsyseff",  "set10", "mindilation",
                                       "fairshare", "roundrobin", "auto" };
    double first, end;

    /* without the guard fcfs holds job 2 for the whole of job 1 */
    end = run("fcfs", 0, &first);
    ck_assert(fabs(end - 101) < 1e-6);
    ck_assert(fabs(first - 100) < 1e-6);
    /* with it: first grant at 11 s at the latest, for every policy */
    end = run("fcfs", 10, &first);
    ck_assert_msg(fabs(first - 11) < 1e-6, "first grant at %g", first);
    ck_assert_msg(fabs(end - 13) < 1e-6, "end at %g", end);
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        end = run(ids[i], 10, &first);
        ck_assert_msg(first <= 11 + 1e-6, "%s: first grant at %g", ids[i], first);
        ck_assert_msg(end <= 13 + 1e-6, "%s: job 2 ends at %g", ids[i], end);
    }
}
END_TEST

START_TEST(test_bad_max_wait)
{
    hs_platform_t plat = { 2, 1e9, 1e9, 0, NULL };
    hs_policy_t pol;
    hu_error_t err;

    ck_assert_int_eq(hs_policy_parse("fcfs", &pol, &err), 0);
    ck_assert(pol.max_wait == 0);
    pol.max_wait = -1;
    ck_assert_ptr_null(hs_sched_create(&plat, &pol, &err));
    pol.max_wait = INFINITY;
    ck_assert_ptr_null(hs_sched_create(&plat, &pol, &err));
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "core", .tests = { test_wait_bounded, test_bad_max_wait, NULL } },
    };

    return tu_main("hsched_maxwait", tcases, TU_COUNT(tcases));
}
