/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_hsched_events.c — libhsched's event interface: jobs, phases, fluid progress,
 * next_event, finish, leave, errors, accounting, scale.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "libhsched/hsched.h"
#include "hsched_testutil.h"
#include "testutil.h"

#define EPS 1e-9

/* Platform used by most tests: N = 10 nodes, b = 1 B/s per node, B = 4 B/s. */
static hs_platform_t plat10 = { .nodes = 10, .node_bw = 1.0, .bw = 4.0 };

static hs_sched_t *mk(const char *policy)
{
    return ht_sched(&plat10, policy);
}

/* hs_job_arrive() that must succeed. */
static void arrive_job(hs_sched_t *s, double now, const hs_job_t *j)
{
    hu_error_t err;

    ck_assert_msg(hs_job_arrive(s, now, j, &err) == 0, "arrive %ju: %s", (uintmax_t)j->id,
                  err.text);
}

static void arrive(hs_sched_t *s, double now, uint64_t id, int nodes)
{
    hs_job_t j = { .id = id, .nodes = nodes, .release = now };

    arrive_job(s, now, &j);
}

/* The accounting of a job the scheduler must know. */
static hs_job_stats_t stats(hs_sched_t *s, uint64_t id)
{
    hs_job_stats_t st;

    ck_assert_msg(hs_job_stats(s, id, &st) == 0, "stats of %ju", (uintmax_t)id);
    return st;
}

static void request(hs_sched_t *s, double now, uint64_t id, double vol, double w)
{
    ht_request(s, now, id, vol, HS_DIR_WRITE, w);
}

/* Jobs 1 and 2 on 4 nodes each (cap 4) arrive and ask for 8 bytes at t = 0. */
static void two_jobs_ask(hs_sched_t *s)
{
    arrive(s, 0, 1, 4);
    arrive(s, 0, 2, 4);
    request(s, 0, 1, 8, 0);
    request(s, 0, 2, 8, 0);
}

START_TEST(test_create_errors)
{
    hs_policy_t pol;
    hu_error_t err;
    hs_platform_t p = plat10;

    ck_assert_int_eq(hs_policy_parse("fairshare", &pol, &err), 0);
    p.nodes = 0;
    errno = 0;
    ck_assert_ptr_null(hs_sched_create(&p, &pol, &err));
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_ptr_nonnull(strstr(err.text, "nodes"));
    p = plat10;
    p.bw = 0;
    ck_assert_ptr_null(hs_sched_create(&p, &pol, &err));
    ck_assert_int_eq(errno, EINVAL);
    p = plat10;
    p.node_bw = NAN;
    ck_assert_ptr_null(hs_sched_create(&p, &pol, &err));
    ck_assert_ptr_null(hs_sched_create(NULL, &pol, &err));
    ck_assert_ptr_null(hs_sched_create(&plat10, NULL, &err));
    /* a hand-built minmax with gamma out of range is refused too */
    pol.kind = HS_POL_MINMAX;
    pol.gamma = 1.5;
    pol.priority = false;
    ck_assert_ptr_null(hs_sched_create(&plat10, &pol, &err));
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_ptr_nonnull(strstr(err.text, "gamma"));
    /* destroy accepts NULL and keeps errno */
    errno = 1234;
    hs_sched_destroy(NULL);
    ck_assert_int_eq(errno, 1234);
}
END_TEST

/*
 * Two jobs under fairshare, B = 4, b = 1.  Job 1 on 2 nodes (cap 2), job 2 on 8 nodes
 * (cap min(8, 4) = 4).  At t = 0 both ask: job 1 4 bytes, job 2 8 bytes.
 *   decide(0): equal shares 2 and 2 (job 1's cap is 2, so nothing is left over).
 *   job 1 completes at 4/2 = 2; at t = 1 each has moved 2 bytes.
 *   at t = 2: job 1 done (4), job 2 has 4 left; after finish(1), decide(2) gives job 2
 *   its cap 4: completes at 2 + 4/4 = 3.
 */
START_TEST(test_fairshare_progress)
{
    hs_sched_t *s = mk("fairshare");
    hs_grant_t g[4];
    hs_phase_info_t pi;
    hs_job_stats_t st;
    uint64_t ids[4];

    ck_assert(isinf(hs_sched_next_event(s)));
    arrive(s, 0, 2, 8);
    arrive(s, 0, 1, 2);
    request(s, 0, 2, 8, 0);
    request(s, 0, 1, 4, 0);
    ck_assert_uint_eq(hs_sched_njobs(s), 2);
    ck_assert_uint_eq(hs_sched_npending(s), 2);
    /* before any decision nothing moves: the only event ahead is the starvation
     * bound of the two waiting phases (its floor: each would take 2 s alone) */
    ck_assert_double_eq_tol(hs_sched_next_event(s), HS_STARVE_FLOOR_DEFAULT, EPS);
    ck_assert_int_eq(hs_sched_decide(s, 0, g, 4), 2);
    ck_assert_uint_eq(g[0].id, 1); /* stable order by id */
    ck_assert_uint_eq(g[1].id, 2);
    ck_assert_double_eq_tol(g[0].bw, 2, EPS);
    ck_assert_double_eq_tol(g[1].bw, 2, EPS);
    ck_assert_double_eq_tol(g[0].share, 0.5, EPS);
    ck_assert_double_eq_tol(g[0].start, 0, EPS);
    ck_assert_int_eq(g[0].buffer, -1);
    ck_assert_double_eq_tol(g[1].remaining, 8, EPS);
    ck_assert_double_eq_tol(hs_sched_next_event(s), 2, EPS);

    ck_assert_int_eq(hs_sched_advance(s, 1), 0);
    ck_assert_int_eq(hs_phase_info(s, 1, &pi), 0);
    ck_assert(pi.pending && !pi.complete);
    ck_assert_double_eq_tol(pi.done, 2, EPS);
    ck_assert_double_eq_tol(pi.bw, 2, EPS);
    ck_assert_double_eq_tol(hs_sched_next_event(s), 2, EPS);
    ck_assert_uint_eq(hs_sched_completed(s, ids, 4), 0);

    ck_assert_int_eq(hs_sched_advance(s, hs_sched_next_event(s)), 0);
    ck_assert_uint_eq(hs_sched_completed(s, ids, 4), 1);
    ck_assert_uint_eq(ids[0], 1);
    /* a phase complete in the model: next_event is now */
    ck_assert_double_eq_tol(hs_sched_next_event(s), 2, EPS);
    ck_assert_int_eq(hs_phase_finish(s, 2, 1), 0);
    ck_assert_uint_eq(hs_sched_npending(s), 1);
    ck_assert_int_eq(hs_sched_decide(s, 2, g, 4), 1);
    ck_assert_uint_eq(g[0].id, 2);
    ck_assert_double_eq_tol(g[0].bw, 4, EPS);
    ck_assert_double_eq_tol(g[0].remaining, 4, EPS);
    ck_assert_double_eq_tol(hs_sched_next_event(s), 3, EPS);

    st = stats(s, 1);
    ck_assert_int_eq(st.phases, 1);
    ck_assert_double_eq_tol(st.io_time, 2, EPS);
    ck_assert_double_eq_tol(st.io_dedicated, 2, EPS); /* 4 / min(2*1, 4) */
    ck_assert_double_eq_tol(st.bytes, 4, EPS);
    ck_assert_double_eq_tol(st.io_wait, 0, EPS);
    ck_assert(isnan(st.end)); /* still running */

    ck_assert_int_eq(hs_sched_advance(s, 3), 0);
    ck_assert_int_eq(hs_phase_finish(s, 3, 2), 0);
    st = stats(s, 2);
    ck_assert_double_eq_tol(st.io_time, 3, EPS);
    ck_assert_double_eq_tol(st.io_dedicated, 2, EPS); /* 8 / 4 */
    ck_assert(isinf(hs_sched_next_event(s)));
    hs_sched_destroy(s);
}
END_TEST

/* A too-small output array: decide returns the needed count and fills 'cap'. */
START_TEST(test_decide_small_out)
{
    hs_sched_t *s = mk("fairshare");
    hs_grant_t g[1];

    arrive(s, 0, 5, 1);
    arrive(s, 0, 3, 1);
    request(s, 0, 5, 1, 0);
    request(s, 0, 3, 1, 0);
    ck_assert_int_eq(hs_sched_decide(s, 0, g, 1), 2);
    ck_assert_uint_eq(g[0].id, 3);
    ck_assert_int_eq(hs_sched_decide(s, 0, NULL, 0), 2);
    hs_sched_destroy(s);
}
END_TEST

START_TEST(test_event_errors)
{
    hs_sched_t *s = mk("fairshare");
    hs_job_t j = { .id = 7, .nodes = 1, .release = 0 };
    hu_error_t err;

    arrive(s, 0, 7, 1);
    /* duplicate arrival */
    ck_assert_int_eq(hs_job_arrive(s, 0, &j, &err), -1);
    ck_assert_int_eq(errno, EEXIST);
    /* bad nodes */
    j.id = 8;
    j.nodes = 0;
    ck_assert_int_eq(hs_job_arrive(s, 0, &j, &err), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_ptr_nonnull(strstr(err.text, "nodes"));
    /* release in the future */
    j.nodes = 1;
    j.release = 5;
    ck_assert_int_eq(hs_job_arrive(s, 0, &j, &err), -1);
    ck_assert_int_eq(errno, EINVAL);
    /* buffer index out of range */
    {
        int a[1] = { 0 };
        j.release = 0;
        j.nalloc = 1;
        j.alloc = a;
        ck_assert_int_eq(hs_job_arrive(s, 0, &j, &err), -1);
        ck_assert_int_eq(errno, EINVAL);
        j.nalloc = 0;
        j.alloc = NULL;
    }
    /* unknown job */
    ck_assert_int_eq(hs_phase_request(s, 0, 99, 1, HS_DIR_WRITE, 0, &err), -1);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_int_eq(hs_phase_finish(s, 0, 99), -1);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_int_eq(hs_job_leave(s, 0, 99), -1);
    ck_assert_int_eq(errno, ENOENT);
    /* finish with no phase */
    ck_assert_int_eq(hs_phase_finish(s, 0, 7), -1);
    ck_assert_int_eq(errno, EINVAL);
    /* bad volume / w_done / direction */
    ck_assert_int_eq(hs_phase_request(s, 0, 7, -1, HS_DIR_WRITE, 0, &err), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_phase_request(s, 0, 7, NAN, HS_DIR_WRITE, 0, &err), -1);
    ck_assert_int_eq(hs_phase_request(s, 0, 7, 1, HS_DIR_WRITE, -2, &err), -1);
    ck_assert_int_eq(hs_phase_request(s, 0, 7, 1, (hs_dir_t)5, 0, &err), -1);
    /* one phase at a time */
    request(s, 1, 7, 10, 1);
    ck_assert_int_eq(hs_phase_request(s, 1, 7, 1, HS_DIR_READ, 0, &err), -1);
    ck_assert_int_eq(errno, EBUSY);
    ck_assert_ptr_nonnull(strstr(err.text, "already"));
    /* time going backwards */
    ck_assert_int_eq(hs_sched_advance(s, 0.5), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_sched_decide(s, 0.5, NULL, 0), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_phase_finish(s, 0.5, 7), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_phase_progress(s, 0.5, 7, 1), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_job_leave(s, 0.5, 7), -1);
    ck_assert_int_eq(errno, EINVAL);
    j.id = 9;
    ck_assert_int_eq(hs_job_arrive(s, 0.5, &j, &err), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_ptr_nonnull(strstr(err.text, "before"));
    ck_assert_int_eq(hs_sched_advance(s, NAN), -1);
    ck_assert_int_eq(errno, EINVAL);
    /* the failed calls changed nothing: the phase is still there */
    ck_assert_uint_eq(hs_sched_npending(s), 1);
    ck_assert_uint_eq(hs_sched_njobs(s), 1);
    /* progress: negative refused */
    ck_assert_int_eq(hs_phase_progress(s, 1, 7, -1), -1);
    ck_assert_int_eq(errno, EINVAL);
    hs_sched_destroy(s);
}
END_TEST

/*
 * Leave while in I/O (fairshare, B = 4): jobs 1 and 2 on 4 nodes each (cap 4) ask for
 * 8 bytes at t = 0: 2 B/s each.  Job 2 leaves at t = 1: its phase is dropped, job 1
 * keeps its rate until the next decision, then gets 4 B/s: 6 bytes left at t = 1,
 * done at 1 + 6/4 = 2.5.
 */
START_TEST(test_leave_in_io)
{
    hs_sched_t *s = mk("fairshare");
    hs_grant_t g[2];
    hs_job_stats_t st;

    two_jobs_ask(s);
    ck_assert_int_eq(hs_sched_decide(s, 0, g, 2), 2);
    ck_assert_double_eq_tol(g[0].bw, 2, EPS);
    ck_assert_int_eq(hs_job_leave(s, 1, 2), 0);
    ck_assert_uint_eq(hs_sched_njobs(s), 1);
    ck_assert_uint_eq(hs_sched_npending(s), 1);
    ck_assert_double_eq_tol(hs_sched_next_event(s), 4, EPS); /* still at 2 B/s */
    ck_assert_int_eq(hs_sched_decide(s, 1, g, 2), 1);
    ck_assert_double_eq_tol(g[0].bw, 4, EPS);
    ck_assert_double_eq_tol(hs_sched_next_event(s), 2.5, EPS);
    /* the departed job keeps its record; its unfinished phase does not count */
    st = stats(s, 2);
    ck_assert_double_eq_tol(st.end, 1, EPS);
    ck_assert_int_eq(st.phases, 0);
    ck_assert_double_eq_tol(st.bytes, 0, EPS);
    ck_assert_int_eq(hs_phase_finish(s, 1, 2), -1);
    ck_assert_int_eq(errno, ENOENT);
    /* forget: only departed jobs */
    ck_assert_int_eq(hs_job_forget(s, 1), -1);
    ck_assert_int_eq(errno, EBUSY);
    ck_assert_int_eq(hs_job_forget(s, 2), 0);
    ck_assert_int_eq(hs_job_stats(s, 2, &st), -1);
    ck_assert_int_eq(errno, ENOENT);
    /* the id may come back */
    arrive(s, 2, 2, 1);
    ck_assert_uint_eq(hs_sched_njobs(s), 2);
    hs_sched_destroy(s);
}
END_TEST

/*
 * External progress and io_wait (fcfs, B = 4).  Jobs 1 and 2 on 4 nodes (cap 4) ask
 * 8 bytes at t = 0; fcfs favours job 1 (same request time: lower id): 4 B/s, job 2
 * waits.  At t = 1 the client of job 1 says it moved only 2 bytes: 6 left, done at
 * 1 + 6/4 = 2.5.  Job 2 waited 2.5 s when it gets the bandwidth.
 */
START_TEST(test_progress_and_wait)
{
    hs_sched_t *s = mk("fcfs");
    hs_grant_t g[2];

    two_jobs_ask(s);
    ck_assert_int_eq(hs_sched_decide(s, 0, g, 2), 2);
    ck_assert_double_eq_tol(g[0].bw, 4, EPS);
    ck_assert_double_eq_tol(g[1].bw, 0, EPS);
    ck_assert(isinf(g[1].start));
    ck_assert_double_eq_tol(hs_sched_next_event(s), 2, EPS);
    ck_assert_int_eq(hs_phase_progress(s, 1, 1, 2), 0);
    ck_assert_double_eq_tol(hs_sched_next_event(s), 2.5, EPS);
    ck_assert_int_eq(hs_sched_advance(s, 2.5), 0);
    ck_assert_int_eq(hs_phase_finish(s, 2.5, 1), 0);
    ck_assert_int_eq(hs_sched_decide(s, 2.5, g, 2), 1);
    ck_assert_double_eq_tol(g[0].bw, 4, EPS);
    ck_assert_double_eq_tol(stats(s, 2).io_wait, 2.5, EPS);
    ck_assert_double_eq_tol(stats(s, 1).io_wait, 0, EPS);
    hs_sched_destroy(s);
}
END_TEST

/* A phase of 0 bytes is complete at once and takes no bandwidth. */
START_TEST(test_zero_volume)
{
    hs_sched_t *s = mk("fairshare");
    hs_grant_t g[2];
    uint64_t id;

    arrive(s, 0, 1, 1);
    request(s, 3, 1, 0, 3);
    ck_assert_double_eq_tol(hs_sched_next_event(s), 3, EPS);
    ck_assert_int_eq(hs_sched_decide(s, 3, g, 2), 1);
    ck_assert_double_eq_tol(g[0].bw, 0, EPS);
    ck_assert_uint_eq(hs_sched_completed(s, &id, 1), 1);
    ck_assert_int_eq(hs_phase_finish(s, 3, 1), 0);
    hs_sched_destroy(s);
}
END_TEST

/* instances known: the end is set when the last one finishes */
START_TEST(test_end_on_last_instance)
{
    hs_sched_t *s = mk("fairshare");
    hs_job_t j = { .id = 1, .nodes = 4, .release = 0, .instances = 2 };
    hs_job_stats_t st;

    arrive_job(s, 0, &j);
    request(s, 1, 1, 4, 1);
    ck_assert_int_eq(hs_sched_decide(s, 1, NULL, 0), 1);
    ck_assert_double_eq_tol(hs_sched_next_event(s), 2, EPS);
    ck_assert_int_eq(hs_phase_finish(s, 2, 1), 0);
    ck_assert(isnan(stats(s, 1).end));
    request(s, 3, 1, 4, 1);
    ck_assert_int_eq(hs_sched_decide(s, 3, NULL, 0), 1);
    ck_assert_int_eq(hs_phase_finish(s, 4, 1), 0);
    st = stats(s, 1);
    ck_assert_double_eq_tol(st.end, 4, EPS);
    ck_assert_double_eq_tol(st.work, 2, EPS);
    ck_assert_int_eq(st.phases, 2);
    /* w_iter learnt: first phase w_done + time_io = 1 + 1; then (3 - 1) / 1 = 2 */
    ck_assert_double_eq_tol(st.w_iter_est, 2, EPS);
    hs_sched_destroy(s);
}
END_TEST

/* w_iter: hint, else w + volume / cap, else learnt. */
START_TEST(test_w_iter_estimate)
{
    const struct {
        hs_job_t job;
        double want;
    } rows[] = {
        { { .id = 1, .nodes = 2, .w_iter = 50 }, 50 },
        { { .id = 2, .nodes = 2, .w = 10, .volume = 8 }, 14 }, /* 10 + 8 / min(2, 4) */
        { { .id = 3, .nodes = 2, .volume = 8 }, 6 },           /* first phase: 5 + 2 / 2 */
    };
    hs_sched_t *s = mk("set10");

    for (size_t i = 0; i < TU_COUNT(rows); i++)
        arrive_job(s, 0, &rows[i].job);
    for (size_t i = 0; i < TU_COUNT(rows); i++)
        request(s, 5, rows[i].job.id, 2, 5);
    for (size_t i = 0; i < TU_COUNT(rows); i++)
        ck_assert_double_eq_tol(stats(s, rows[i].job.id).w_iter_est, rows[i].want, EPS);
    hs_sched_destroy(s);
}
END_TEST

/* Live policy change keeps jobs and phases. */
START_TEST(test_set_policy)
{
    hs_sched_t *s = mk("fcfs");
    hs_policy_t pol;
    hu_error_t err;
    hs_grant_t g[2];

    two_jobs_ask(s);
    ck_assert_int_eq(hs_sched_decide(s, 0, g, 2), 2);
    ck_assert_double_eq_tol(g[1].bw, 0, EPS);
    ck_assert_int_eq(hs_policy_parse("fairshare", &pol, &err), 0);
    ck_assert_int_eq(hs_sched_set_policy(s, 1, &pol, &err), 0);
    ck_assert_int_eq(hs_sched_decide(s, 1, g, 2), 2);
    ck_assert_double_eq_tol(g[0].bw, 2, EPS);
    ck_assert_double_eq_tol(g[1].bw, 2, EPS);
    ck_assert_double_eq_tol(g[0].remaining, 4, EPS);
    /* an invalid policy is refused and the old one stays */
    ck_assert_int_eq(hs_policy_parse("minmax:0.5", &pol, &err), 0);
    pol.gamma = 2;
    ck_assert_int_eq(hs_sched_set_policy(s, 1, &pol, &err), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_sched_decide(s, 1, g, 2), 2);
    ck_assert_double_eq_tol(g[1].bw, 2, EPS);
    hs_sched_destroy(s);
}
END_TEST

/* Independent instances in one process. */
START_TEST(test_instances_independent)
{
    hs_sched_t *a = mk("fcfs");
    hs_sched_t *b = mk("fairshare");
    hs_grant_t g[2];

    two_jobs_ask(a);
    arrive(b, 100, 1, 4);
    ck_assert_int_eq(hs_sched_decide(a, 0, g, 2), 2); /* a's time is its own */
    ck_assert_int_eq(hs_sched_decide(b, 100, g, 2), 0);
    ck_assert_uint_eq(hs_sched_njobs(a), 2);
    ck_assert_uint_eq(hs_sched_njobs(b), 1);
    hs_sched_destroy(a);
    hs_sched_destroy(b);
}
END_TEST

/*
 * Scale: 10,000 jobs, all pending, decided under each online policy; then they
 * leave in a scattered order (hash deletion and slot reuse).  Invariants: one grant
 * per phase, sorted by id, sum bw <= B, each bw <= cap.
 */
START_TEST(test_scale)
{
    static const char *pols[] = { "fairshare",          "fcfs",       "roundrobin", "mindilation",
                                  "maxsyseff-priority", "minmax:0.5", "set10",      "set-fairshare",
                                  "priority-sharing",   NULL };
    const size_t n = 10000;
    hs_platform_t p = { .nodes = 100000, .node_bw = 1e6, .bw = 1e9 };
    hs_grant_t *g = calloc(n, sizeof(*g));
    int k;

    ck_assert_ptr_nonnull(g);
    for (k = 0; pols[k]; k++) {
        hs_policy_t pol;
        hu_error_t err;
        hs_sched_t *s;
        size_t i;
        double sum = 0;

        ck_assert_int_eq(hs_policy_parse(pols[k], &pol, &err), 0);
        ck_assert_ptr_nonnull(s = hs_sched_create(&p, &pol, &err));
        for (i = 0; i < n; i++) {
            uint64_t id = (i * 7919) % n + 1000; /* scattered ids */
            hs_job_t j = {
                .id = id, .nodes = 1 + (int)(i % 64), .release = 0, .w_iter = 1 + (double)(i % 5000)
            };
            ck_assert_int_eq(hs_job_arrive(s, 0, &j, &err), 0);
        }
        for (i = 0; i < n; i++) {
            uint64_t id = (i * 7919) % n + 1000;
            ck_assert_int_eq(hs_phase_request(s, (double)i * 1e-3, id, 1e6 * (1 + i % 13),
                                              HS_DIR_WRITE, (double)(i % 17), &err),
                             0);
        }
        ck_assert_int_eq(hs_sched_decide(s, 20, g, n), (int)n);
        for (i = 0; i < n; i++) {
            if (i > 0)
                ck_assert(g[i - 1].id < g[i].id);
            ck_assert(g[i].bw >= 0);
            sum += g[i].bw;
        }
        ck_assert_msg(sum <= p.bw * (1 + 1e-9), "%s: sum %g", pols[k], sum);
        /* IO-Sets keeps one job per set even when their caps leave B unused */
        if (strncmp(pols[k], "set", 3) != 0)
            ck_assert_msg(sum >= p.bw * (1 - 1e-9), "%s: not work-conserving (%g)", pols[k], sum);
        for (i = 0; i < n; i += 3) {
            uint64_t id = (i * 7919) % n + 1000;
            ck_assert_int_eq(hs_job_leave(s, 21, id), 0);
            if (i % 2)
                ck_assert_int_eq(hs_job_forget(s, id), 0);
        }
        ck_assert_int_eq(hs_sched_decide(s, 21, g, n), (int)(n - (n + 2) / 3));
        for (i = 0; i < n; i++) {
            uint64_t id = (i * 7919) % n + 1000;
            hs_job_stats_t st;
            int rc = hs_job_stats(s, id, &st);
            if (i % 3 == 0 && i % 2)
                ck_assert_int_eq(rc, -1);
            else
                ck_assert_int_eq(rc, 0);
        }
        hs_sched_destroy(s);
    }
    free(g);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "events", .timeout = 60,
          .tests = { test_create_errors, test_fairshare_progress, test_decide_small_out,
                     test_event_errors, test_leave_in_io, test_progress_and_wait, test_zero_volume,
                     test_end_on_last_instance, test_w_iter_estimate, test_set_policy,
                     test_instances_independent, test_scale, NULL } },
    };

    return tu_main("hsched_events", tcases, TU_COUNT(tcases));
}
