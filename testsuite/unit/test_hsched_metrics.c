/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_hsched_metrics.c — hs_metrics_compute() on hand-computed runs, and a tiny
 * fluid driver (decide, next_event, advance, finish) checking whole runs end to end.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "libhsched/hsched.h"
#include "hsched_testutil.h"
#include "testutil.h"

#define EPS 1e-9

/* ------------------------------------------------------------ a fluid driver */

typedef struct {
    uint64_t id;
    int nodes;
    double release;
    int instances;
    double w;      /* compute per instance */
    double vol;    /* bytes per phase */
    double w_iter; /* hint (0: none) */
    /* driver state */
    int state;     /* 0 not arrived, 1 computing, 2 in I/O, 3 gone */
    int done;      /* instances completed */
    double t_next; /* end of the current compute chunk */
} app_t;

/* Run the apps to completion under 'policy'; fill st[] (in app order).
 * Returns the number of decisions. */
static int run(const hs_platform_t *plat, const char *policy, app_t *apps, size_t n,
               hs_job_stats_t *st)
{
    hs_sched_t *s = ht_sched(plat, policy);
    hu_error_t err;
    double t = 0;
    int decisions = 0;
    size_t i;

    for (;;) {
        double next = hs_sched_next_event(s);
        bool left = false;
        uint64_t ids[64];
        size_t nc, k;

        for (i = 0; i < n; i++) {
            if (apps[i].state == 0)
                next = fmin(next, apps[i].release);
            else if (apps[i].state == 1)
                next = fmin(next, apps[i].t_next);
            if (apps[i].state != 3)
                left = true;
        }
        if (!left)
            break;
        ck_assert_msg(isfinite(next), "%s: stuck at t = %g", policy, t);
        ck_assert(next >= t);
        t = next;
        ck_assert_int_eq(hs_sched_advance(s, t), 0);
        /* phases done in the model */
        nc = hs_sched_completed(s, ids, 64);
        ck_assert(nc <= 64);
        for (k = 0; k < nc; k++) {
            for (i = 0; i < n && apps[i].id != ids[k]; i++)
                ;
            ck_assert(i < n && apps[i].state == 2);
            ck_assert_int_eq(hs_phase_finish(s, t, ids[k]), 0);
            if (++apps[i].done == apps[i].instances) {
                ck_assert_int_eq(hs_job_leave(s, t, apps[i].id), 0);
                apps[i].state = 3;
            } else {
                apps[i].state = 1;
                apps[i].t_next = t + apps[i].w;
            }
        }
        for (i = 0; i < n; i++) {
            app_t *a = &apps[i];
            if (a->state == 0 && a->release <= t) {
                hs_job_t j = { .id = a->id,
                               .nodes = a->nodes,
                               .release = a->release,
                               .w_iter = a->w_iter,
                               .instances = a->instances };
                ck_assert_int_eq(hs_job_arrive(s, t, &j, &err), 0);
                a->state = 1;
                a->t_next = t + a->w;
            }
        }
        for (i = 0; i < n; i++) {
            app_t *a = &apps[i];
            if (a->state == 1 && a->t_next <= t) {
                ck_assert_int_eq(hs_phase_request(s, t, a->id, a->vol, HS_DIR_WRITE, a->w, &err),
                                 0);
                a->state = 2;
            }
        }
        ck_assert(hs_sched_decide(s, t, NULL, 0) >= 0);
        decisions++;
        ck_assert(decisions < 100000);
    }
    for (i = 0; i < n; i++)
        ck_assert_int_eq(hs_job_stats(s, apps[i].id, &st[i]), 0);
    hs_sched_destroy(s);
    return decisions;
}

/* ------------------------------------------------------------ expected values */

/* The expected value of a double field of hs_job_stats_t (S), hs_app_metrics_t (P)
 * or hs_metrics_t (M), by name; fields_eq() checks a table of them on one struct,
 * within EPS. */
typedef struct {
    const char *name;
    size_t off;
    double want;
} field_t;
#define S(f, v) \
    { \
#f, offsetof(hs_job_stats_t, f), (v) \
    }
#define P(f, v) \
    { \
#f, offsetof(hs_app_metrics_t, f), (v) \
    }
#define M(f, v) \
    { \
#f, offsetof(hs_metrics_t, f), (v) \
    }
#define FIELDS_EQ(obj, ...) \
    do { \
        const field_t t_[] = { __VA_ARGS__ }; \
        fields_eq(#obj, &(obj), t_, TU_COUNT(t_)); \
    } while (0)

static void fields_eq(const char *what, const void *obj, const field_t *t, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        double got = *(const double *)((const char *)obj + t[k].off);

        ck_assert_msg(fabs(got - t[k].want) < EPS, "%s.%s = %.17g, want %.17g", what, t[k].name,
                      got, t[k].want);
    }
}

/* N = 8 nodes, b = 1 B/s, B = 4 B/s. */
static const hs_platform_t plat8 = { .nodes = 8, .node_bw = 1.0, .bw = 4.0 };

static void two_identical(app_t *a)
{
    /* 4 nodes each (cap 4 = B), released at 0, 2 instances of w = 10 s and 20 bytes
     * (time_io = 20 / 4 = 5 s) */
    app_t x = { .id = 1, .nodes = 4, .release = 0, .instances = 2, .w = 10, .vol = 20 };

    a[0] = x;
    a[1] = x;
    a[1].id = 2;
}

/*
 * fcfs, two identical jobs (see two_identical()):
 *   t = 10  both ask; job 1 (lower id) gets 4 B/s -> done at 15; job 2 waits
 *   t = 15  job 1 computes until 25; job 2 gets 4 -> done at 20
 *   t = 20  job 2 computes until 30
 *   t = 25  job 1 asks, alone -> done at 30: job 1 ends at d_1 = 30
 *   t = 30  job 2 asks -> done at 35: d_2 = 35
 * work 20 each, io_dedicated 10 each, io_time 10 and 15, io_wait 0 and 5.
 * rho = 20/30 = 2/3 for both; rho~_1 = 20/30, rho~_2 = 20/35 = 4/7;
 * dilations 1 and (2/3)/(4/7) = 7/6;
 * SysEfficiency = (4 x 2/3 + 4 x 4/7) / 8 = 13/21; upper limit = 2/3;
 * stretch 30/30 = 1 and 35/30 = 7/6 (mean 13/12); I/O slowdown 1 and 1.5 (mean 1.25);
 * utilization = (4 x 20 + 4 x 20) / (8 x 35) = 4/7; stall 0 + 5 = 5; makespan 35;
 * Jain over dilations (1, 7/6): (13/6)^2 / (2 (1 + 49/36)) = 169/170.
 */
START_TEST(test_fcfs_two_identical)
{
    app_t a[2];
    hs_job_stats_t st[2];
    hs_metrics_t m;
    hs_app_metrics_t pa[2];

    two_identical(a);
    run(&plat8, "fcfs", a, 2, st);
    ck_assert_int_eq(st[0].phases, 2);
    FIELDS_EQ(st[0], S(end, 30), S(work, 20), S(io_dedicated, 10), S(io_time, 10), S(io_wait, 0));
    FIELDS_EQ(st[1], S(end, 35), S(io_time, 15), S(io_wait, 5), S(bytes, 40));

    ck_assert_int_eq(hs_metrics_compute(st, 2, plat8.nodes, &m, pa), 0);
    FIELDS_EQ(pa[0], P(rho, 2.0 / 3), P(dilation, 1));
    FIELDS_EQ(pa[1], P(rho_tilde, 4.0 / 7), P(dilation, 7.0 / 6), P(stretch, 7.0 / 6),
              P(io_slowdown, 1.5), P(stall, 5));
    FIELDS_EQ(m, M(sys_efficiency, 13.0 / 21), M(upper_limit, 2.0 / 3), M(dilation, 7.0 / 6),
              M(dilation_mean, 13.0 / 12), M(stretch_max, 7.0 / 6), M(stretch_mean, 13.0 / 12),
              M(io_slowdown_mean, 1.25), M(io_slowdown_max, 1.5), M(utilization, 4.0 / 7),
              M(fairness, 169.0 / 170), M(stall_time, 5), M(io_wait, 5), M(makespan, 35));
}
END_TEST

/*
 * fairshare, the same two jobs: at t = 10 both get 2 B/s and finish at 20; again at
 * 30 -> 40.  d = 40 both; io_time 20; rho~ = 20/40 = 1/2; dilation (2/3)/(1/2) = 4/3;
 * SysEfficiency = (4 x 1/2 x 2) / 8 = 1/2 (< fcfs's 13/21: exclusive access wins for
 * identical jobs); fairness 1; stall 10 + 10 = 20.
 */
START_TEST(test_fairshare_two_identical)
{
    app_t a[2];
    hs_job_stats_t st[2];
    hs_metrics_t m;

    two_identical(a);
    run(&plat8, "fairshare", a, 2, st);
    FIELDS_EQ(st[0], S(end, 40));
    FIELDS_EQ(st[1], S(end, 40));
    ck_assert_int_eq(hs_metrics_compute(st, 2, plat8.nodes, &m, NULL), 0);
    FIELDS_EQ(m, M(sys_efficiency, 0.5), M(dilation, 4.0 / 3), M(fairness, 1), M(stall_time, 20),
              M(makespan, 40));
}
END_TEST

/*
 * set10 end to end: job 1 (w_iter 10: set 1) and job 2 (w_iter 100: set 2), 4 nodes
 * each, one phase of 40 bytes after w = 10, both released at 0.
 *   t = 10: x_1 = 0.1/0.11 = 10/11, x_2 = 1/11: 40/11 and 4/11 B/s.
 *   job 1 ends at 10 + 40 / (40/11) = 21; job 2 has moved 11 x 4/11 = 4 bytes,
 *   then alone at 4 B/s: 36 / 4 = 9 s more -> 30.
 */
START_TEST(test_set10_run)
{
    app_t a[2] = {
        { .id = 1, .nodes = 4, .release = 0, .instances = 1, .w = 10, .vol = 40, .w_iter = 10 },
        { .id = 2, .nodes = 4, .release = 0, .instances = 1, .w = 10, .vol = 40, .w_iter = 100 },
    };
    hs_job_stats_t st[2];

    run(&plat8, "set10", a, 2, st);
    ck_assert_double_eq_tol(st[0].end, 21, EPS);
    ck_assert_double_eq_tol(st[1].end, 30, EPS);
}
END_TEST

/* Invariants on a small mixed workload, under every online policy. */
START_TEST(test_invariants_all_policies)
{
    static const char *pols[] = { "fairshare",
                                  "fcfs",
                                  "static",
                                  "roundrobin",
                                  "roundrobin-priority",
                                  "mindilation",
                                  "mindilation-priority",
                                  "maxsyseff",
                                  "maxsyseff-priority",
                                  "minmax:0.5",
                                  "minmax:0.5-priority",
                                  "set10",
                                  "set:2",
                                  "set-fairshare",
                                  "priority-sharing",
                                  NULL };
    const hs_platform_t plat = { .nodes = 64, .node_bw = 1e8, .bw = 1e9 };
    int k;

    for (k = 0; pols[k]; k++) {
        app_t a[5] = {
            { .id = 10, .nodes = 16, .release = 0, .instances = 5, .w = 7, .vol = 3e9 },
            { .id = 11, .nodes = 4, .release = 1, .instances = 8, .w = 3, .vol = 2e8 },
            { .id = 12, .nodes = 32, .release = 2.5, .instances = 3, .w = 20, .vol = 9e9 },
            { .id = 13, .nodes = 1, .release = 0, .instances = 12, .w = 1, .vol = 5e7 },
            { .id = 14,
              .nodes = 8,
              .release = 4,
              .instances = 4,
              .w = 11,
              .vol = 1e9,
              .w_iter = 13 },
        };
        hs_job_stats_t st[5];
        hs_app_metrics_t pa[5];
        hs_metrics_t m;
        int i;

        run(&plat, pols[k], a, 5, st);
        ck_assert_int_eq(hs_metrics_compute(st, 5, plat.nodes, &m, pa), 0);
        for (i = 0; i < 5; i++) {
            ck_assert_int_eq(st[i].phases, a[i].instances);
            ck_assert_double_eq_tol(st[i].bytes, a[i].instances * a[i].vol, 1);
            ck_assert_double_eq_tol(st[i].work, a[i].instances * a[i].w, 1e-6);
            ck_assert_msg(st[i].io_time >= st[i].io_dedicated * (1 - 1e-9),
                          "%s: job %d faster than dedicated", pols[k], i);
            ck_assert(pa[i].dilation >= 1 - 1e-9);
            ck_assert(pa[i].stretch >= 1 - 1e-9);
            ck_assert(isfinite(st[i].end));
        }
        ck_assert_msg(m.sys_efficiency <= m.upper_limit + 1e-12, "%s", pols[k]);
        ck_assert(m.fairness > 0 && m.fairness <= 1 + 1e-12);
        ck_assert(m.utilization > 0 && m.utilization <= 1);
    }
}
END_TEST

/* hs_metrics_compute() directly: conventions and errors. */
START_TEST(test_metrics_direct)
{
    hs_job_stats_t st[2] = {
        /* 2 nodes, 10 s of work, 5 s dedicated I/O, 8 s of actual I/O, released 0,
         * ended 18: rho = 10/15, rho~ = 10/18, dilation 18/15 = 1.2, stretch 1.2,
         * I/O slowdown 1.6, stall 3 */
        { .id = 1,
          .nodes = 2,
          .release = 0,
          .end = 18,
          .phases = 1,
          .work = 10,
          .io_dedicated = 5,
          .io_time = 8 },
        /* no I/O at all: rho = rho~ = 1 (work 6 over 6 s) */
        { .id = 2, .nodes = 2, .release = 2, .end = 8, .phases = 0, .work = 6 },
    };
    hs_app_metrics_t pa[2];
    hs_metrics_t m;

    ck_assert_int_eq(hs_metrics_compute(st, 2, 4, &m, pa), 0);
    FIELDS_EQ(pa[0], P(dilation, 1.2), P(stretch, 1.2), P(io_slowdown, 1.6), P(stall, 3));
    FIELDS_EQ(pa[1], P(rho, 1), P(dilation, 1), P(io_slowdown, 1));
    FIELDS_EQ(m,
              /* (2 x 10/18 + 2 x 1) / 4 */
              M(sys_efficiency, (20.0 / 18 + 2) / 4), M(upper_limit, (20.0 / 15 + 2) / 4),
              M(makespan, 18), M(utilization, (2 * 10 + 2 * 6) / (4 * 18.0)),
              /* Jain over (1.2, 1): 2.2^2 / (2 x 2.44) */
              M(fairness, 4.84 / 4.88));

    errno = 0;
    ck_assert_int_eq(hs_metrics_compute(st, 0, 4, &m, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_metrics_compute(st, 2, 0, &m, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_metrics_compute(NULL, 2, 4, &m, NULL), -1);
    st[1].end = NAN; /* a job still running */
    ck_assert_int_eq(hs_metrics_compute(st, 2, 4, &m, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "metrics", .timeout = 60,
          .tests = { test_fcfs_two_identical, test_fairshare_two_identical, test_set10_run,
                     test_invariants_all_policies, test_metrics_direct, NULL } },
    };

    return tu_main("hsched_metrics", tcases, TU_COUNT(tcases));
}
