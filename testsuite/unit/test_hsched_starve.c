/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_hsched_starve.c — the starvation bound (hs_policy_t.starve_factor and
 * starve_floor, doc/policies.md, "Starvation bound"): on by default, under every
 * policy a late, small phase that a long one holds back gets a share once its
 * excess wait reaches max(k x its time alone, floor).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhsched/hsched.h"
#include "simfuzz.h"
#include "testutil.h"

#define B 1e9       /* bytes/s: the I/O system, and each job's cap */
#define LONG 100e12 /* job 1's phase: 100,000 s alone */
#define SMALL 1e9   /* job 2's phase: 1 s alone */

/* Job 1 (w = 10 s) asks for LONG bytes at t = 10; job 2 arrives at t = 20, computes
 * 1 s and asks for SMALL bytes at t = 21: a late, small, one-iteration job.  Job 2
 * (w = 1000 s, 1 GB hints; its set under set10 is below job 1's, which weighs it
 * 1000 times less) waits behind job 1 under the exclusive policies.  Runs to the
 * end of both; returns job 2's finish time, *hits the phases that reached their
 * bound.  'factor', 'floor' as in hs_policy_t (0: the defaults). */
static double run(const char *id, double factor, double floor, uint64_t *hits)
{
    hs_platform_t plat = { 2, B, B, 0, NULL };
    hs_policy_t pol;
    hu_error_t err;
    hs_sched_t *s;
    hs_grant_t g[2];
    double t, end2 = NAN;
    int left = 2, steps;

    ck_assert_msg(hs_policy_parse(id, &pol, &err) == 0, "%s: %s", id, err.text);
    pol.starve_factor = factor;
    pol.starve_floor = floor;
    s = hs_sched_create(&plat, &pol, &err);
    ck_assert_msg(s != NULL, "%s: %s", id, err.text);
    {
        hs_job_t j = { .id = 1, .nodes = 1, .release = 0, .w = 10, .volume = LONG, .instances = 1 };
        ck_assert_int_eq(hs_job_arrive(s, 0, &j, &err), 0);
    }
    ck_assert_int_ge(hs_sched_decide(s, 0, g, 2), 0);
    ck_assert_int_eq(hs_phase_request(s, 10, 1, LONG, HS_DIR_WRITE, 10, &err), 0);
    ck_assert_int_ge(hs_sched_decide(s, 10, g, 2), 0);
    {
        hs_job_t j = {
            .id = 2, .nodes = 1, .release = 20, .w = 1000, .volume = SMALL, .instances = 1
        };
        ck_assert_int_eq(hs_job_arrive(s, 20, &j, &err), 0);
    }
    ck_assert_int_ge(hs_sched_decide(s, 20, g, 2), 0);
    ck_assert_int_eq(hs_phase_request(s, 21, 2, SMALL, HS_DIR_WRITE, 1, &err), 0);
    t = 21;
    for (steps = 0; left > 0 && steps < 100000; steps++) {
        uint64_t done[2];
        size_t nc;
        int n = hs_sched_decide(s, t, g, 2);
        ck_assert_msg(n >= 0, "%s: decide at %g", id, t);
        t = hs_sched_next_event(s);
        ck_assert_msg(isfinite(t), "%s: nothing in flight at %g", id, hs_sched_now(s));
        ck_assert_int_eq(hs_sched_advance(s, t), 0);
        nc = hs_sched_completed(s, done, 2);
        for (size_t q = 0; q < nc; q++) {
            ck_assert_int_eq(hs_phase_finish(s, t, done[q]), 0);
            ck_assert_int_eq(hs_job_leave(s, t, done[q]), 0);
            if (done[q] == 2)
                end2 = t;
            left--;
        }
    }
    ck_assert_msg(left == 0, "%s: %d jobs left after %d steps", id, left, steps);
    *hits = hs_sched_bound_hits(s);
    hs_sched_destroy(s);
    return end2;
}

/* With the bound at 'bound' seconds job 2 gets B / 2 at 21 + bound at the latest
 * and ends 2 s later (every policy); the policies that share end it sooner.  The
 * policies that miss it are listed in 'bad'. */
static void check_bounded(const char *id, double factor, double floor, double bound, char *bad,
                          size_t cap)
{
    uint64_t hits;
    double end = run(id, factor, floor, &hits);

    if (!(end <= 21 + bound + 2 * (1 + 1e-9)) || hits > 1)
        snprintf(bad + strlen(bad), cap - strlen(bad),
                 " %s (job 2 ends at %.6g s, "
                 "bound %g s, %ju hits)",
                 id, end, bound, (uintmax_t)hits);
}

START_TEST(test_default_bound)
{
    double bound = fmax(HS_STARVE_FACTOR_DEFAULT * SMALL / B, HS_STARVE_FLOOR_DEFAULT);
    hs_policy_t pol;
    hu_error_t err;
    char bad[4096] = "";

    ck_assert_int_eq(hs_policy_parse("fcfs", &pol, &err), 0);
    ck_assert(pol.starve_factor == 0 && pol.starve_floor == 0); /* the default */
    ck_assert(hs_wait_bound(&pol, SMALL, B) == bound);
    ck_assert(bound < LONG / B / 2);                     /* the test means something */
    for (const char *const *id = sf_policies; *id; id++) /* every id */
        check_bounded(*id, 0, 0, bound, bad, sizeof(bad));
    ck_assert_msg(bad[0] == '\0', "past the default bound:%s", bad);
}
END_TEST

START_TEST(test_set_bound)
{
    char bad[8192] = "";

    /* k = 20, floor 60 s: job 2's bound is 60 s; k = 200, floor 10 s: 200 s */
    for (const char *const *id = sf_policies; *id; id++) {
        check_bounded(*id, 20, 60, 60, bad, sizeof(bad));
        check_bounded(*id, 200, 10, 200, bad, sizeof(bad));
    }
    ck_assert_msg(bad[0] == '\0', "past the bound:%s", bad);
}
END_TEST

/* What the bound is for: without it the exclusive policies hold job 2 for the whole
 * of job 1's phase; with it, fcfs serves it at the bound and counts one hit. */
START_TEST(test_off_starves)
{
    static const char *const exclusive[] = { "fcfs", "maxsyseff", "roundrobin" };
    uint64_t hits;
    double end;

    for (size_t i = 0; i < sizeof(exclusive) / sizeof(exclusive[0]); i++) {
        end = run(exclusive[i], -1, 0, &hits);
        ck_assert_msg(end >= 10 + LONG / B, "%s: job 2 ends at %g", exclusive[i], end);
        ck_assert_int_eq(hits, 0);
    }
    end = run("fcfs", 0, 0, &hits);
    ck_assert_msg(
        fabs(end - (21 + fmax(HS_STARVE_FACTOR_DEFAULT * SMALL / B, HS_STARVE_FLOOR_DEFAULT) + 2))
            < 1e-6,
        "end %g", end);
    ck_assert_int_eq(hits, 1);
    /* fairshare never lets it wait: no hit */
    end = run("fairshare", 0, 0, &hits);
    ck_assert_msg(end < 21 + 3, "end %g", end);
    ck_assert_int_eq(hits, 0);
}
END_TEST

START_TEST(test_bad_bound)
{
    hs_platform_t plat = { 2, B, B, 0, NULL };
    hs_policy_t pol;
    hu_error_t err;

    ck_assert_int_eq(hs_policy_parse("fcfs", &pol, &err), 0);
    pol.starve_factor = NAN;
    ck_assert_ptr_null(hs_sched_create(&plat, &pol, &err));
    ck_assert_msg(strstr(err.text, "starvation bound") != NULL, "%s", err.text);
    pol.starve_factor = 0;
    pol.starve_floor = -1;
    ck_assert_ptr_null(hs_sched_create(&plat, &pol, &err));
    ck_assert_msg(strstr(err.text, "floor") != NULL, "%s", err.text);
    /* off, and max_wait off: no bound at all */
    pol.starve_floor = 0;
    pol.starve_factor = -1;
    ck_assert(isinf(hs_wait_bound(&pol, SMALL, B)));
    /* both on: whichever comes first */
    pol.max_wait = 30;
    ck_assert(hs_wait_bound(&pol, SMALL, B) == 30);
    pol.starve_factor = 2;
    pol.starve_floor = 1;
    ck_assert(hs_wait_bound(&pol, SMALL, B) == 2);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "core",
          .tests = { test_default_bound, test_set_bound, test_off_starves, test_bad_bound, NULL } },
    };

    return tu_main("hsched_starve", tcases, TU_COUNT(tcases));
}
