/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_hsched_online.c — one hand-checkable decision per online policy.
 *
 * Unless said otherwise: N = 100 nodes, b = 1 B/s per node, B = 4 B/s, so a job on
 * beta nodes can use cap = min(beta, 4) B/s.  Numbers are worked out in comments.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhsched/hsched.h"
#include "hsched_testutil.h"
#include "testutil.h"

#define EPS 1e-9

static const hs_platform_t plat = { .nodes = 100, .node_bw = 1.0, .bw = 4.0 };

static hs_sched_t *mk(const char *policy)
{
    return ht_sched(&plat, policy);
}

static void arrive(hs_sched_t *s, double now, uint64_t id, int nodes, double w_iter)
{
    hs_job_t j = { .id = id, .nodes = nodes, .release = now, .w_iter = w_iter };
    hu_error_t err;

    ck_assert_msg(hs_job_arrive(s, now, &j, &err) == 0, "%s", err.text);
}

static void request(hs_sched_t *s, double now, uint64_t id, double vol, double w)
{
    ht_request(s, now, id, vol, HS_DIR_WRITE, w);
}

/* Decide at 'now' and return the grant of job 'id' out of g[]. */
static const hs_grant_t *grant(const hs_grant_t *g, int n, uint64_t id)
{
    int i;

    for (i = 0; i < n; i++) {
        if (g[i].id == id)
            return &g[i];
    }
    ck_abort_msg("no grant for job %ju", (uintmax_t)id);
    return NULL;
}

static double bw_of(const hs_grant_t *g, int n, uint64_t id)
{
    return grant(g, n, id)->bw;
}

/*
 * Scenarios with one decision: the jobs arrive at t = 0 (released at 0), ask in the
 * order of reqs[], and 'policy' decides once at 'at'.  A want names its grant by job
 * id, or (id 0) by its place in g[].
 */
typedef struct {
    uint64_t id;
    int nodes;
    double w_iter;
} job_spec_t;
typedef struct {
    double t;
    uint64_t id;
    double vol, w_done;
} req_spec_t;
typedef struct {
    uint64_t id;
    int idx;
    char what;
    double v;
} want_t; /* what: b w s */

typedef struct {
    const char *policy;
    job_spec_t jobs[4];
    req_spec_t reqs[4];
    double at;
    int ng; /* room in g[] */
    int n;  /* grants expected; -1: not checked */
    want_t want[6];
} onedecide_t;

static void start(hs_sched_t *s, const job_spec_t *jobs, const req_spec_t *reqs)
{
    int i;

    for (i = 0; i < 4 && jobs[i].id; i++)
        arrive(s, 0, jobs[i].id, jobs[i].nodes, jobs[i].w_iter);
    for (i = 0; i < 4 && reqs[i].id; i++)
        request(s, reqs[i].t, reqs[i].id, reqs[i].vol, reqs[i].w_done);
}

#define B(i, x) \
    { \
        .id = (i), .what = 'b', .v = (x) \
    }
#define BAT(k, x) \
    { \
        .idx = (k), .what = 'b', .v = (x) \
    }
#define W(i, x) \
    { \
        .id = (i), .what = 'w', .v = (x) \
    }
#define SAT(k, x) \
    { \
        .idx = (k), .what = 's', .v = (x) \
    }

static const onedecide_t onedecide[] = {
/*
     * fairshare (water-filling).  Jobs 1 (1 node, cap 1), 2 (8 nodes, cap 4) and 3
     * (4 nodes, cap 4) all in I/O.  Equal share 4/3 > cap 1 for job 1: it gets 1, the
     * 3 B/s left are split 1.5 / 1.5.  'static' does the same for now.
     */
#define WATERFILL(pol) \
    { \
        pol, { { 1, 1, 0 }, { 2, 8, 0 }, { 3, 4, 0 } }, \
            { { 0, 1, 10, 0 }, { 0, 2, 10, 0 }, { 0, 3, 10, 0 } }, 0, 3, 3, \
        { \
            B(1, 1.0), B(2, 1.5), B(3, 1.5), W(2, 1.0 / 3) \
        } \
    }
    WATERFILL("fairshare"),
    WATERFILL("static"),
#undef WATERFILL
    /* fairshare: two jobs with large caps share equally: 2 and 2. */
    { "fairshare",
      { { 1, 50, 0 }, { 2, 50, 0 } },
      { { 0, 1, 10, 0 }, { 0, 2, 10, 0 } },
      0,
      2,
      2,
      { BAT(0, 2), BAT(1, 2) } },
    /* fcfs with one job able to take all of B: exclusive (id 2 asks first). */
    { "fcfs",
      { { 1, 8, 0 }, { 2, 8, 0 } },
      { { 0, 2, 100, 0 }, { 1, 1, 100, 1 } },
      1,
      2,
      2,
      { BAT(0, 0) /* job 1 */, BAT(1, 4) /* job 2 */ } },
    /*
     * set10, work-conserving between sets: job 1 (set 1, 1 node: cap 1) and job 2
     * (set 2, 4 nodes: cap 4).  Weights 0.1 and 0.01 would give 3.64 and 0.36; job 1
     * is capped at 1, the 3 B/s left go to set 2: job 2 gets min(4, 3) = 3.
     * A second job of set 1 (job 3, cap 4, asking later) stays out: exclusive.
     */
    { "set10",
      { { 1, 1, 10 }, { 2, 4, 100 }, { 3, 4, 10 } },
      { { 0, 1, 100, 0 }, { 0, 2, 100, 0 }, { 1, 3, 100, 0 } },
      1,
      3,
      -1,
      { B(1, 1), B(2, 3), B(3, 0) } },
    /* set:2: w_iter 2, 4, 8 -> sets 1, 2, 3, p = 1/2, 1/4, 1/8 -> x = 4/7, 2/7, 1/7. */
    { "set:2",
      { { 1, 4, 2 }, { 2, 4, 4 }, { 3, 4, 8 } },
      { { 0, 1, 100, 0 }, { 0, 2, 100, 0 }, { 0, 3, 100, 0 } },
      0,
      3,
      -1,
      { B(1, 16.0 / 7), B(2, 8.0 / 7), B(3, 4.0 / 7) } },
    /*
     * set-fairshare: sets as set10, exclusive inside, equal shares between sets.
     * Jobs 1 (set 1), 2 (set 2), 3 (set 3), 4 (set 1, later): 4/3 each for 1, 2, 3;
     * 0 for 4.
     */
    { "set-fairshare",
      { { 1, 4, 10 }, { 2, 4, 100 }, { 3, 4, 1000 }, { 4, 4, 9 } },
      { { 0, 1, 100, 0 }, { 0, 2, 100, 0 }, { 0, 3, 100, 0 }, { 1, 4, 100, 1 } },
      1,
      4,
      -1,
      { B(1, 4.0 / 3), B(2, 4.0 / 3), B(3, 4.0 / 3), B(4, 0) } },
    /*
     * priority-sharing: no sets.  Jobs 1 and 4 (w_iter 10 and 9: class 1, weight 0.1)
     * and 2 (w_iter 100: class 2, weight 0.01) share B = 4 by weights 0.1 : 0.1 : 0.01:
     * 4 x 0.1/0.21 = 1.9048 each for 1 and 4, 4 x 0.01/0.21 = 0.1905 for 2.
     */
    { "priority-sharing",
      { { 1, 4, 10 }, { 2, 4, 100 }, { 4, 4, 9 } },
      { { 0, 1, 100, 0 }, { 0, 2, 100, 0 }, { 1, 4, 100, 1 } },
      1,
      3,
      -1,
      { B(1, 4 * 0.1 / 0.21), B(4, 4 * 0.1 / 0.21), B(2, 4 * 0.01 / 0.21), W(2, 0.01 / 0.21) } },
    /* IO-Sets with a learnt w_iter: no hints; the first phase's w_iter is
     * w_done + time_io = 95 + 20/4 = 100 -> set 2; job 2's is 9 + 4/4 = 10 -> set 1. */
    { "set10",
      { { 1, 4, 0 }, { 2, 4, 0 } },
      { { 95, 1, 20, 95 }, { 95, 2, 4, 9 } },
      95,
      2,
      2,
      { SAT(0, 0.01 / (0.1 + 0.01)), SAT(1, 0.1 / (0.1 + 0.01)) } },
};

START_TEST(test_onedecide)
{
    const onedecide_t *c = &onedecide[_i];
    hs_sched_t *s = mk(c->policy);
    hs_grant_t g[4];
    int n, k;

    start(s, c->jobs, c->reqs);
    n = hs_sched_decide(s, c->at, g, c->ng);
    if (c->n >= 0)
        ck_assert_int_eq(n, c->n);
    for (k = 0; k < 6 && c->want[k].what; k++) {
        const want_t *w = &c->want[k];
        const hs_grant_t *gr = w->id ? grant(g, n, w->id) : &g[w->idx];
        double got = w->what == 'b' ? gr->bw : w->what == 'w' ? gr->weight : gr->share;
        ck_assert_msg(fabs(got - w->v) < EPS, "%s: job %ju/#%d %c %.17g, want %.17g", c->policy,
                      (uintmax_t)w->id, w->idx, w->what, got, w->v);
    }
    hs_sched_destroy(s);
}
END_TEST

/*
 * fcfs = Gainaru's favouring in request order: each gets min(beta b, bw_avail).
 * Job 3 (1 node, cap 1) asks at t = 0, job 1 (2 nodes, cap 2) at t = 1, job 2
 * (8 nodes, cap 4) at t = 2.  At t = 2: job 3 gets min(1, 4) = 1, job 1 min(2, 3) = 2,
 * job 2 min(4, 1) = 1.  Then job 4 (cap 4) asks at t = 3: nothing is left, it waits.
 */
START_TEST(test_fcfs_favouring)
{
    hs_sched_t *s = mk("fcfs");
    hs_grant_t g[4];
    int n;

    start(s, (const job_spec_t[4]){ { 1, 2, 0 }, { 2, 8, 0 }, { 3, 1, 0 }, { 4, 8, 0 } },
          (const req_spec_t[4]){ { 0, 3, 100, 0 }, { 1, 1, 100, 1 }, { 2, 2, 100, 2 } });
    n = hs_sched_decide(s, 2, g, 4);
    ck_assert_int_eq(n, 3);
    ck_assert_double_eq_tol(bw_of(g, n, 3), 1, EPS);
    ck_assert_double_eq_tol(bw_of(g, n, 1), 2, EPS);
    ck_assert_double_eq_tol(bw_of(g, n, 2), 1, EPS);
    request(s, 3, 4, 100, 3);
    n = hs_sched_decide(s, 3, g, 4);
    ck_assert_int_eq(n, 4);
    ck_assert_double_eq_tol(bw_of(g, n, 4), 0, EPS);
    ck_assert_double_eq_tol(grant(g, n, 4)->weight, 0, EPS);
    ck_assert_double_eq_tol(grant(g, n, 3)->weight, 0.25, EPS); /* bw / B */
    hs_sched_destroy(s);
}
END_TEST

/* The history of both roundrobin tests: jobs 1 and 2 on 4 nodes; job 2 does 4 bytes
 * from t = 2 to 3 (3 is the next event: checked when 'check_next'), job 1 from 4 to 5. */
static void rr_history(hs_sched_t *s, hs_grant_t *g, int ng, bool check_next)
{
    arrive(s, 0, 1, 4, 0);
    arrive(s, 0, 2, 4, 0);
    request(s, 2, 2, 4, 2);
    ck_assert_int_eq(hs_sched_decide(s, 2, g, ng), 1);
    if (check_next)
        ck_assert_double_eq_tol(hs_sched_next_event(s), 3, EPS);
    ck_assert_int_eq(hs_phase_finish(s, 3, 2), 0);
    request(s, 4, 1, 4, 4);
    ck_assert_int_eq(hs_sched_decide(s, 4, g, ng), 1);
    ck_assert_int_eq(hs_phase_finish(s, 5, 1), 0);
}

/*
 * roundrobin: favour the job whose last I/O ended the longest time ago.  Jobs 1, 2
 * on 4 nodes (cap 4).  Job 2 does 4 bytes from t = 2 to 3; job 1 from t = 4 to 5.
 * Both ask at t = 10 (job 1 first): job 2's I/O ended at 3 < 5, so job 2 gets 4,
 * job 1 waits.  A job with no I/O yet counts from its release: job 3 (released at 1,
 * cap 4) asking at t = 10 goes before both.
 */
START_TEST(test_roundrobin)
{
    hs_sched_t *s = mk("roundrobin");
    hs_grant_t g[3];
    int n;

    rr_history(s, g, 3, true);
    request(s, 10, 1, 4, 5);
    request(s, 10, 2, 4, 7);
    n = hs_sched_decide(s, 10, g, 3);
    ck_assert_int_eq(n, 2);
    ck_assert_double_eq_tol(bw_of(g, n, 2), 4, EPS);
    ck_assert_double_eq_tol(bw_of(g, n, 1), 0, EPS);
    {
        /* job 3 arrives at 10 but was released at 1 */
        hs_job_t j = { .id = 3, .nodes = 4, .release = 1 };
        hu_error_t err;
        ck_assert_int_eq(hs_job_arrive(s, 10, &j, &err), 0);
    }
    request(s, 10, 3, 4, 9);
    n = hs_sched_decide(s, 10, g, 3);
    ck_assert_int_eq(n, 3);
    ck_assert_double_eq_tol(bw_of(g, n, 3), 4, EPS);
    ck_assert_double_eq_tol(bw_of(g, n, 2), 0, EPS);
    hs_sched_destroy(s);
}
END_TEST

/*
 * Gainaru §3.1 keys.  Both jobs released at 0, single phase requested at t = 10:
 *   A (id 1): 1 node (cap 1), w_done 9, 1 byte  -> time_io 1
 *       rho = 9/(9+1) = 0.9, rho~ = 9/10 = 0.9, rho~/rho = 1.0, beta rho~ = 0.9
 *   B (id 2): 4 nodes (cap 4), w_done 3, 8 bytes -> time_io 2
 *       rho = 3/(3+2) = 0.6, rho~ = 3/10 = 0.3, rho~/rho = 0.5, beta rho~ = 1.2
 * mindilation favours B (0.5 < 1.0): B gets min(4, 4) = 4, A gets 0.
 * maxsyseff favours A (0.9 < 1.2): A gets min(1, 4) = 1, B gets min(4, 3) = 3.
 * minmax:0.6: B's ratio 0.5 < 0.6 -> mindilation's order (B 4, A 0);
 * minmax:0.4: no ratio below 0.4 -> maxsyseff's order (A 1, B 3).
 */
static void setup_ab(hs_sched_t *s)
{
    hs_job_t a = { .id = 1, .nodes = 1, .release = 0 };
    hs_job_t b = { .id = 2, .nodes = 4, .release = 0 };
    hu_error_t err;

    ck_assert_int_eq(hs_job_arrive(s, 0, &a, &err), 0);
    ck_assert_int_eq(hs_job_arrive(s, 0, &b, &err), 0);
    request(s, 10, 1, 1, 9);
    request(s, 10, 2, 8, 3);
}

/* The decision at 'now' grants both jobs: A (id 1) bw_a, B (id 2) bw_b. */
static void decide_ab(hs_sched_t *s, double now, const char *policy, double bw_a, double bw_b)
{
    hs_grant_t g[2];

    ck_assert_int_eq(hs_sched_decide(s, now, g, 2), 2);
    ck_assert_msg(fabs(g[0].bw - bw_a) < EPS && fabs(g[1].bw - bw_b) < EPS,
                  "%s: A %g (want %g), B %g (want %g)", policy, g[0].bw, bw_a, g[1].bw, bw_b);
}

static void check_ab(const char *policy, double bw_a, double bw_b)
{
    hs_sched_t *s = mk(policy);

    setup_ab(s);
    decide_ab(s, 10, policy, bw_a, bw_b);
    hs_sched_destroy(s);
}

START_TEST(test_mindilation)
{
    check_ab("mindilation", 0, 4);
}
END_TEST

START_TEST(test_maxsyseff)
{
    check_ab("maxsyseff", 1, 3);
}
END_TEST

START_TEST(test_minmax)
{
    check_ab("minmax:0.6", 0, 4);
    check_ab("minmax:0.4", 1, 3);
    check_ab("minmax:1", 0, 4); /* = mindilation */
    check_ab("minmax:0", 1, 3); /* = maxsyseff */
}
END_TEST

/*
 * -priority: a job that had bw > 0 at the previous decision goes first.
 * mindilation-priority: A asks alone at t = 10 and gets 1; B asks at t = 10 too;
 * at the next decision plain mindilation would give B 4 and A 0, the priority variant
 * keeps A first (1) and B gets the rest (3).
 * maxsyseff-priority: B asks alone first and gets 4; then A asks: plain maxsyseff
 * would give A 1 and B 3; the priority variant keeps B first: B 4, A 0.
 * Once a job's phase is finished it is no longer "doing I/O".
 */
/* A asks (alone) and 'policy' decides, then B asks and it decides again: 'first' is
 * the job that asks first (1: A, 2: B), 'first_bw' its grant alone (NAN: not
 * checked), bw_a and bw_b the grants of the second decision. */
typedef struct {
    const char *policy;
    uint64_t first;
    double first_bw, bw_a, bw_b;
    bool b_finishes; /* then B finishes at 12 and asks again (maxsyseff-priority) */
} prio_case_t;

static const prio_case_t prio_cases[] = {
    { "mindilation-priority", 1, 1, 1, 3, false },
    /* the same sequence without -priority: B first */
    { "mindilation", 1, NAN, 0, 4, false },
    /* maxsyseff-priority: B keeps going */
    { "maxsyseff-priority", 2, 4, 0, 4, true },
    /* minmax:g-priority: A active first, whatever the threshold says */
    { "minmax:0.6-priority", 1, NAN, 1, 3, false },
};

START_TEST(test_priority_variants)
{
    hs_job_t a = { .id = 1, .nodes = 1, .release = 0 };
    hs_job_t b = { .id = 2, .nodes = 4, .release = 0 };
    const req_spec_t req_a = { 10, 1, 1, 9 }, req_b = { 10, 2, 8, 3 };
    hu_error_t err;
    hs_grant_t g[2];
    size_t k;

    for (k = 0; k < TU_COUNT(prio_cases); k++) {
        const prio_case_t *c = &prio_cases[k];
        const req_spec_t *r1 = c->first == 1 ? &req_a : &req_b;
        const req_spec_t *r2 = c->first == 1 ? &req_b : &req_a;
        hs_sched_t *s = mk(c->policy);

        ck_assert_int_eq(hs_job_arrive(s, 0, &a, &err), 0);
        ck_assert_int_eq(hs_job_arrive(s, 0, &b, &err), 0);
        request(s, r1->t, r1->id, r1->vol, r1->w_done);
        ck_assert_int_eq(hs_sched_decide(s, 10, g, 2), 1);
        if (!isnan(c->first_bw))
            ck_assert_double_eq_tol(g[0].bw, c->first_bw, EPS);
        request(s, r2->t, r2->id, r2->vol, r2->w_done);
        decide_ab(s, 10, c->policy, c->bw_a, c->bw_b);
        if (c->b_finishes) {
            /* B finishes at 12; A is then alone and B asks again at 12: A has bw > 0
             * at the decision of t = 12, so A stays first at the next one even though
             * maxsyseff alone would also pick A here (A 0.9 < B's) */
            ck_assert_double_eq_tol(hs_sched_next_event(s), 12, EPS);
            ck_assert_int_eq(hs_phase_finish(s, 12, 2), 0);
            ck_assert_int_eq(hs_sched_decide(s, 12, g, 2), 1);
            ck_assert_double_eq_tol(g[0].bw, 1, EPS);
            request(s, 12, 2, 8, 0);
            decide_ab(s, 12, c->policy, 1, 3);
        }
        hs_sched_destroy(s);
    }
}
END_TEST

/* roundrobin-priority: the job in I/O keeps going although the other ended its last
 * I/O longer ago (setup as test_roundrobin, but job 1 asks and is decided alone). */
START_TEST(test_roundrobin_priority)
{
    hs_sched_t *s = mk("roundrobin-priority");
    hs_grant_t g[2];

    rr_history(s, g, 2, false);
    request(s, 10, 1, 40, 5);
    ck_assert_int_eq(hs_sched_decide(s, 10, g, 2), 1);
    request(s, 10, 2, 4, 7);
    decide_ab(s, 10, "roundrobin-priority", 4, 0); /* job 1 keeps going */
    hs_sched_destroy(s);
}
END_TEST

/*
 * set10, the IO-Sets example: jobs with w_iter 10, 100, 1000 are in sets 1, 2, 3,
 * p = 0.1, 0.01, 0.001; x_1 = 0.1/0.111 = 0.9009, x_2 = 0.09009, x_3 = 0.009009.
 * Each job on 4 nodes (cap 4 = B): no cap binds, bw = 4 x_i.
 * Job 4 (w_iter 12: set round(1.08) = 1) asks after job 1: exclusive inside a set, it
 * waits.  When job 1 finishes, job 4 takes set 1's share.
 */
START_TEST(test_set10_shares)
{
    hs_sched_t *s = mk("set10");
    hs_grant_t g[4];
    const double sum = 0.1 + 0.01 + 0.001;
    int n;

    start(s, (const job_spec_t[4]){ { 1, 4, 10 }, { 2, 4, 100 }, { 3, 4, 1000 }, { 4, 4, 12 } },
          (const req_spec_t[4]){
              { 0, 1, 1000, 0 }, { 0, 2, 1000, 0 }, { 0, 3, 1000, 0 }, { 1, 4, 1000, 1 } });
    n = hs_sched_decide(s, 1, g, 4);
    ck_assert_int_eq(n, 4);
    ck_assert_double_eq_tol(grant(g, n, 1)->share, 0.1 / sum, EPS);
    ck_assert_double_eq_tol(grant(g, n, 2)->share, 0.01 / sum, EPS);
    ck_assert_double_eq_tol(grant(g, n, 3)->share, 0.001 / sum, EPS);
    ck_assert_double_eq_tol(grant(g, n, 1)->share, 0.90, 0.001);
    ck_assert_double_eq_tol(grant(g, n, 2)->share, 0.09, 0.001);
    ck_assert_double_eq_tol(grant(g, n, 3)->share, 0.009, 0.0001);
    ck_assert_double_eq_tol(grant(g, n, 1)->weight, 0.1 / sum, EPS);
    ck_assert_double_eq_tol(grant(g, n, 4)->bw, 0, EPS);
    ck_assert_double_eq_tol(grant(g, n, 4)->weight, 0, EPS);
    ck_assert_int_eq(hs_phase_finish(s, 2, 1), 0);
    n = hs_sched_decide(s, 2, g, 4);
    ck_assert_int_eq(n, 3);
    ck_assert_double_eq_tol(grant(g, n, 4)->share, 0.1 / sum, EPS);
    hs_sched_destroy(s);
}
END_TEST

/* Decisions with many pending phases (the daemon's case): the ids are sorted by a
 * radix sort and the water-filling skips its sort when the entries are in order
 * already; the grants must not depend on the order in which the jobs came, with
 * equal and with different caps, without and with buffer nodes. */
static void order_run(const char *policy, bool buffers, bool equal_caps, bool shuffled,
                      hs_grant_t *g, int *n1, int *n2)
{
    enum { K = 300 };
    hs_buffer_t b[4];
    hs_platform_t p = { .nodes = 1000, .node_bw = 1.0, .bw = 150.0 };
    hu_error_t err;
    hs_sched_t *s;
    int i;

    memset(b, 0, sizeof(b));
    for (i = 0; i < 4; i++) {
        snprintf(b[i].name, sizeof(b[i].name), "bb%d", i);
        b[i].capacity = 1e12;
        b[i].bandwidth = 40.0 + i;
    }
    if (buffers) {
        p.nbuffers = 4;
        p.buffers = b;
    }
    s = ht_sched(&p, policy);
    for (i = 0; i < K; i++) {
        int k = shuffled ? (i * 7919) % K : i; /* 7919 is prime to K */
        /* ids differ in several bytes, up to bit 40 */
        uint64_t id = ((uint64_t)(k % 3) << 40) + (uint64_t)k * 65537 + 1;
        hs_job_t j = {
            .id = id, .nodes = equal_caps ? 1 : 1 + k % 5, .release = 0, .w_iter = 1 + k % 7
        };
        ck_assert_msg(hs_job_arrive(s, 0, &j, &err) == 0, "%s", err.text);
        ck_assert(hs_phase_request(s, 0, id, 10.0 + k, HS_DIR_WRITE, 1.0, &err) == 0);
    }
    *n1 = hs_sched_decide(s, 0, g, K);
    ck_assert_int_eq(*n1, K);
    for (i = 1; i < *n1; i++)
        ck_assert(g[i - 1].id < g[i].id);
    /* a third of the phases end, in an order that differs between the runs */
    for (i = 0; i < K; i += 3) {
        int k = shuffled ? (i * 7919) % K : i;
        uint64_t id = ((uint64_t)(k % 3) << 40) + (uint64_t)k * 65537 + 1;
        if (k % 3 == 0)
            ck_assert(hs_phase_finish(s, 0.5, id) == 0);
    }
    *n2 = hs_sched_decide(s, 0.5, g + K, K);
    for (i = 1; i < *n2; i++)
        ck_assert(g[K + i - 1].id < g[K + i].id);
    hs_sched_destroy(s);
}

START_TEST(test_decide_order_large)
{
    static const char *const pols[] = { "fairshare", "fcfs", "set10", "mindilation" };
    static hs_grant_t a[600], b[600];
    int pi, mode, n1, n2, m1, m2, i;

    for (pi = 0; pi < 4; pi++)
        for (mode = 0; mode < 4; mode++) {
            bool buffers = mode & 1, equal = mode & 2;
            order_run(pols[pi], buffers, equal, false, a, &n1, &n2);
            order_run(pols[pi], buffers, equal, true, b, &m1, &m2);
            ck_assert_int_eq(n1, m1);
            ck_assert_int_eq(n2, m2);
            for (i = 0; i < n1; i++) {
                ck_assert(a[i].id == b[i].id);
                ck_assert_msg(memcmp(&a[i].bw, &b[i].bw, sizeof(double)) == 0,
                              "%s mode %d: job %ju: %.17g != %.17g", pols[pi], mode,
                              (uintmax_t)a[i].id, a[i].bw, b[i].bw);
                ck_assert(a[i].buffer == b[i].buffer);
            }
            for (i = 0; i < n2; i++) {
                ck_assert(a[300 + i].id == b[300 + i].id);
                ck_assert(memcmp(&a[300 + i].bw, &b[300 + i].bw, sizeof(double)) == 0);
            }
            if (pi == 0 && !buffers && equal) {
                /* fairshare, equal caps (1.0 each), 300 phases on 150: 0.5 each */
                for (i = 0; i < n1; i++)
                    ck_assert(fabs(a[i].bw - 0.5) < EPS);
            }
        }
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "online",
          .tests = { test_fcfs_favouring, test_roundrobin, test_roundrobin_priority,
                     test_mindilation, test_maxsyseff, test_minmax, test_priority_variants,
                     test_set10_shares, test_decide_order_large, NULL },
          /* one iteration a row of onedecide[] (fairshare, static, fairshare equal,
           * fcfs exclusive, set10 capped, set:2, set-fairshare, priority-sharing,
           * set10 learnt) */
          .loops = { { test_onedecide, (int)TU_COUNT(onedecide) } } },
    };

    return tu_main("hsched_online", tcases, TU_COUNT(tcases));
}
