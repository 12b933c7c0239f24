/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_hsched_plan.c — the policies that plan ahead, inside the scheduler:
 * periodic-throu/-cong/persched (hs_pol_periodic.c, doc/periodic.md §8) and the
 * five harmonia-* policies (hs_pol_harmonia.c, doc/harmonia-dp.md §5), on cases
 * small enough to check by hand, plus every policy id driven to the end of a small
 * run with and without buffers.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhsched/hsched.h"
#include "libhsched/hs_periodic.h"
#include "hsched_testutil.h"
#include "testutil.h"

#define EPS 1e-9

/* ------------------------------------------------------------ a tiny driver */

typedef struct {
    uint64_t id;
    int nodes;
    double w, vol; /* per phase; also the hints */
    int iters;
    int prio;
    const int *alloc;
    int nalloc;
    hs_dir_t dir;
    /* run state */
    int done;
    double cend; /* compute end (INFINITY: in I/O or over) */
    double end;
} tjob_t;

typedef void (*check_f)(hs_sched_t *s, double t, const hs_grant_t *g, int n, void *arg);

/* Run the jobs (all released at 0) to the end; returns the number of steps. */
static int drive(hs_sched_t *s, tjob_t *jobs, int nj, check_f check, void *arg)
{
    hs_grant_t g[16];
    hu_error_t err;
    double t = 0;
    int left = nj, steps = 0, i;

    for (i = 0; i < nj; i++) {
        hs_job_t hj = { .id = jobs[i].id,
                        .nodes = jobs[i].nodes,
                        .release = 0,
                        .w = jobs[i].w,
                        .volume = jobs[i].vol,
                        .instances = jobs[i].iters,
                        .priority = jobs[i].prio,
                        .alloc = jobs[i].alloc,
                        .nalloc = jobs[i].nalloc };
        ck_assert_msg(hs_job_arrive(s, 0, &hj, &err) == 0, "arrive: %s", err.text);
        jobs[i].done = 0;
        jobs[i].cend = jobs[i].w;
        jobs[i].end = NAN;
    }
    while (left > 0) {
        double tn = hs_sched_next_event(s);
        uint64_t ids[16];
        size_t nc, q;
        int n;

        ck_assert_int_lt(++steps, 100000);
        for (i = 0; i < nj; i++)
            tn = fmin(tn, jobs[i].cend);
        ck_assert_msg(isfinite(tn), "stalled at t = %g", t);
        t = fmax(t, tn);
        ck_assert_int_eq(hs_sched_advance(s, t), 0);
        nc = hs_sched_completed(s, ids, 16);
        for (q = 0; q < nc; q++) {
            for (i = 0; i < nj && jobs[i].id != ids[q]; i++)
                ;
            ck_assert_int_lt(i, nj);
            ck_assert_int_eq(hs_phase_finish(s, t, ids[q]), 0);
            if (++jobs[i].done == jobs[i].iters) {
                jobs[i].end = t;
                ck_assert_int_eq(hs_job_leave(s, t, jobs[i].id), 0);
                left--;
            } else
                jobs[i].cend = t + jobs[i].w;
        }
        for (i = 0; i < nj; i++) {
            if (jobs[i].cend <= t) {
                jobs[i].cend = INFINITY;
                ck_assert_msg(
                    hs_phase_request(s, t, jobs[i].id, jobs[i].vol, jobs[i].dir, jobs[i].w, &err)
                        == 0,
                    "request: %s", err.text);
            }
        }
        n = hs_sched_decide(s, t, g, 16);
        ck_assert_msg(n >= 0, "decide at %g: %s", t, strerror(errno));
        if (check)
            check(s, t, g, n, arg);
    }
    return steps;
}

/* ------------------------------------------------------------ periodic */

/* Two identical jobs, B = beta b = 4, w = 6, vol = 8 (doc/periodic.md §6.1):
 * T = 8, I/O of one on [0,2[ and of the other on [2,4[.  Both ask at t = 6, when
 * the pattern is computed and anchored (t0 = 6); the replay grants exactly the
 * pattern's bandwidth, the jobs fall into step and run one period apart:
 * job 1 moves on [6,8[, [14,16[, [22,24[; job 2 on [8,10[, [16,18[, [24,26[. */
struct replay_arg {
    hs_pattern_t *p;
    double t0;
    int checked;
};

static void replay_check(hs_sched_t *s, double t, const hs_grant_t *g, int n, void *arg)
{
    struct replay_arg *a = arg;
    int i;

    for (i = 0; i < n; i++) {
        hs_phase_info_t pi;
        int k = (int)g[i].id - 1;
        /* by hand (comment above): in each period of 8 s from t0, job 1 moves at
         * B = 4 on [0,2[, job 2 on [2,4[, nothing else */
        double u = fmod(t - a->t0, 8);
        double want = (k == 0 ? u < 2 : u >= 2 && u < 4) ? 4. : 0.;
        ck_assert_int_eq(hs_phase_info(s, g[i].id, &pi), 0);
        if (pi.complete || pi.volume - pi.done <= 1e-6 * pi.volume)
            continue;
        ck_assert_msg(ht_close(g[i].bw, want), "t = %g job %d: bw %g, by hand %g", t, k + 1,
                      g[i].bw, want);
        ck_assert_msg(ht_close(hs_pattern_bw(a->p, k, u), want),
                      "t = %g job %d: pattern %g, by hand %g", t, k + 1, hs_pattern_bw(a->p, k, u),
                      want);
        a->checked++;
    }
}

START_TEST(test_persched_replay)
{
    hs_platform_t plat = { .nodes = 2, .node_bw = 4, .bw = 4 };
    const char *ids[] = { "persched", "periodic-throu", "periodic-cong", NULL };

    for (int q = 0; ids[q]; q++) {
        hs_pjob_t pj[2] = { { 1, 6, 8 }, { 1, 6, 8 } };
        hs_periodic_params_t prm;
        hs_periodic_heuristic_t h;
        hs_policy_t pol;
        hu_error_t err;
        tjob_t jobs[2] = {
            { .id = 1, .nodes = 1, .w = 6, .vol = 8, .iters = 3 },
            { .id = 2, .nodes = 1, .w = 6, .vol = 8, .iters = 3 },
        };
        struct replay_arg a = { .t0 = 6 };
        hs_policy_stats_t st;
        hs_sched_t *s = ht_sched(&plat, ids[q]);

        ck_assert_int_eq(hs_policy_parse(ids[q], &pol, &err), 0);
        ck_assert_int_eq(hs_periodic_from_policy(pol.kind, &h), 0);
        ck_assert_int_eq(hs_periodic_params_init(&prm, h), 0);
        a.p = hs_pattern_compute(&plat, pj, 2, &prm, &err);
        ck_assert_ptr_nonnull(a.p);
        ck_assert(ht_close(hs_pattern_period(a.p), 8));
        drive(s, jobs, 2, replay_check, &a);
        ck_assert_int_gt(a.checked, 6);
        ck_assert_msg(ht_close(jobs[0].end, 24) && ht_close(jobs[1].end, 26), "%s: ends %g %g",
                      ids[q], jobs[0].end, jobs[1].end);
        ck_assert_int_eq(hs_sched_policy_stats(s, &st), 0);
        ck_assert(st.plans);
        ck_assert(ht_close(st.period, 8));
        ck_assert(ht_close(st.period_tmin, 8));
        ck_assert_int_eq(st.period_jobs, 2);
        ck_assert_int_eq(st.period_unscheduled, 0);
        ck_assert(ht_close(st.period_sys_efficiency, 0.75));
        ck_assert(ht_close(st.period_dilation, 1));
        /* computed at t = 6 (2 jobs), at t = 24 (job 1 left: 1 job) */
        ck_assert_int_eq((int)st.schedules, 2);
        ck_assert(st.work > 0);
        hs_pattern_destroy(a.p);
        hs_sched_destroy(s);
    }
}
END_TEST

/* A job without hints (w unknown) is not in the pattern: it gets what the pattern's
 * jobs leave at each instant; the pattern's job (w = 6, vol = 4, alone: T = 7, one
 * second of I/O at 4) is replayed as planned; next_event is the pattern's next
 * change. */
START_TEST(test_periodic_leftovers)
{
    hs_platform_t plat = { .nodes = 2, .node_bw = 4, .bw = 4 };
    hs_sched_t *s = ht_sched(&plat, "persched");
    hs_job_t a = { .id = 1, .nodes = 1, .release = 0, .w = 6, .volume = 4 };
    hs_job_t b = { .id = 2, .nodes = 1, .release = 0 };
    hs_policy_stats_t st;
    hs_grant_t g[2];
    hu_error_t err;
    double t = 0, got1 = 0;
    int k;

    ck_assert_int_eq(hs_job_arrive(s, 0, &a, &err), 0);
    ck_assert_int_eq(hs_job_arrive(s, 0, &b, &err), 0);
    ck_assert_int_eq(hs_phase_request(s, 0, 1, 4, HS_DIR_WRITE, 0, &err), 0);
    ck_assert_int_eq(hs_phase_request(s, 0, 2, 1000, HS_DIR_WRITE, 0, &err), 0);
    ck_assert_int_eq(hs_sched_decide(s, 0, g, 2), 2);
    ck_assert_int_eq(hs_sched_policy_stats(s, &st), 0);
    ck_assert(ht_close(st.period, 7));
    ck_assert_int_eq(st.jobs_fallback, 1);
    ck_assert_int_eq(st.period_jobs, 1);
    for (k = 0; k < 8 && t < 7; k++) {
        double tn = fmin(hs_sched_next_event(s), 7);
        ck_assert(ht_close(g[0].bw + g[1].bw, 4));
        ck_assert(ht_close(g[0].bw, 0) || ht_close(g[0].bw, 4));
        ck_assert(tn > t);
        got1 += g[0].bw * (tn - t);
        t = tn;
        ck_assert_int_eq(hs_sched_advance(s, t), 0);
        if (hs_sched_completed(s, NULL, 0) == 1) {
            ck_assert_int_eq(hs_phase_finish(s, t, 1), 0);
            break;
        }
        ck_assert_int_eq(hs_sched_decide(s, t, g, 2), 2);
    }
    ck_assert_msg(ht_close(got1, 4), "job 1 moved %g in its period", got1);
    hs_sched_destroy(s);
}
END_TEST

/* ------------------------------------------------------------ harmonia */

/* Two nvme-like nodes (MSCA(2) = 0.035), 100 B free each, 1 B/s; two 10 B writes
 * allowed on both.  maxbw: spread (makespan 10 against 20 or 20.7 on one node);
 * buffer-eff: packed on one node (wasted capacity-time (100 - 20) x 20 = 1600 one
 * after the other, against 2 x (100 - 10) x 10 = 1800 spread). */
static void two_phases(const char *policy, int *b0, int *b1, double *bw0, double *bw1)
{
    hs_buffer_t buf[2];
    hs_platform_t plat = { .nodes = 4, .node_bw = 1, .bw = 1, .nbuffers = 2, .buffers = buf };
    static const int alloc[2] = { 0, 1 };
    hs_grant_t g[2];
    hu_error_t err;
    hs_sched_t *s;

    memset(buf, 0, sizeof(buf));
    for (int j = 0; j < 2; j++) {
        buf[j].capacity = 100;
        buf[j].bandwidth = 1;
        buf[j].msca[0] = 0;
        buf[j].msca[1] = 0.035;
        buf[j].nmsca = 2;
    }
    s = ht_sched(&plat, policy);
    for (uint64_t id = 1; id <= 2; id++) {
        hs_job_t j = { .id = id, .nodes = 2, .release = 0, .alloc = alloc, .nalloc = 2 };
        ck_assert_int_eq(hs_job_arrive(s, 0, &j, &err), 0);
        ck_assert_int_eq(hs_phase_request(s, 0, id, 10, HS_DIR_WRITE, 0, &err), 0);
    }
    ck_assert_int_eq(hs_sched_decide(s, 0, g, 2), 2);
    *b0 = g[0].buffer;
    *b1 = g[1].buffer;
    *bw0 = g[0].bw;
    *bw1 = g[1].bw;
    hs_sched_destroy(s);
}

START_TEST(test_harmonia_spread_vs_pack)
{
    int b0, b1;
    double bw0, bw1;

    two_phases("harmonia-maxbw", &b0, &b1, &bw0, &bw1);
    ck_assert_int_ne(b0, b1);
    ck_assert(b0 >= 0 && b1 >= 0);
    ck_assert(ht_close(bw0, 1) && ht_close(bw1, 1));

    two_phases("harmonia-buffer-eff", &b0, &b1, &bw0, &bw1);
    ck_assert_int_eq(b0, b1);
    ck_assert(b0 >= 0);
    /* one node, one after the other: (100 - 20) x 20 = 1600, less than together
     * (1656) or spread (1800); the second waits for slot 1 */
    ck_assert_msg(ht_close(bw0 + bw1, 1) && ht_close(bw0 * bw1, 0), "%g %g", bw0, bw1);
}
END_TEST

/* No buffers, B = cap = 4 on 2 nodes: jobs 1 and 2 (priorities p1 and p2; 0: none)
 * on one node each ask at t = 0 for 8 and 4 bytes, under 'policy'. */
static hs_sched_t *pfs_pair(const char *policy, int p1, int p2)
{
    static const hs_platform_t plat = { .nodes = 2, .node_bw = 4, .bw = 4 };
    hs_sched_t *s = ht_sched(&plat, policy);
    hs_job_t j1 = { .id = 1, .nodes = 1, .release = 0, .priority = p1 };
    hs_job_t j2 = { .id = 2, .nodes = 1, .release = 0, .priority = p2 };
    hu_error_t err;

    ck_assert_int_eq(hs_job_arrive(s, 0, &j1, &err), 0);
    ck_assert_int_eq(hs_job_arrive(s, 0, &j2, &err), 0);
    ht_request(s, 0, 1, 8, HS_DIR_WRITE, 0);
    ht_request(s, 0, 2, 4, HS_DIR_WRITE, 0);
    return s;
}

/* Without buffers the PFS is one node with MSCA 0.  minstall, phases of 4 and 8
 * bytes at B = cap = 4: the shorter alone (1 s) first, the longer waits for slot 1
 * (Delta = median alone time 1.5 s): total stall 1 + 3.5 = 4.5 against 6 for both
 * at once.  The waiting phase's planned start is 1.5, and next_event says so. */
START_TEST(test_harmonia_pfs)
{
    hs_sched_t *s = pfs_pair("harmonia-minstall", 0, 0);
    hs_grant_t g[2];
    hs_policy_stats_t st;

    ck_assert_int_eq(hs_sched_decide(s, 0, g, 2), 2);
    ck_assert(ht_close(g[0].bw, 0));
    ck_assert(ht_close(g[0].start, 1.5));
    ck_assert(ht_close(g[1].bw, 4));
    ck_assert_int_eq(g[0].buffer, -1);
    ck_assert_int_eq(g[1].buffer, -1);
    ck_assert(ht_close(hs_sched_next_event(s), 1)); /* job 2 done first */
    ck_assert_int_eq(hs_sched_policy_stats(s, &st), 0);
    ck_assert(st.plans && st.schedules == 1 && st.exact == 1 && st.max_phases == 2);
    ck_assert(isnan(st.period));
    /* job 2 finishes at 1: job 1 is placed again, alone, and starts */
    ck_assert_int_eq(hs_sched_advance(s, 1), 0);
    ck_assert_int_eq(hs_phase_finish(s, 1, 2), 0);
    ck_assert_int_eq(hs_sched_decide(s, 1, g, 2), 1);
    ck_assert(ht_close(g[0].bw, 4));
    hs_sched_destroy(s);
}
END_TEST

/* harmonia-priority: the same two phases, the longer one with priority 10 goes
 * first (10 x 2 + 1 x 3.5... against 1 x 1 + 10 x 3.5). */
START_TEST(test_harmonia_priority)
{
    hs_sched_t *s = pfs_pair("harmonia-priority", 10, 1);
    hs_grant_t g[2];

    ck_assert_int_eq(hs_sched_decide(s, 0, g, 2), 2);
    ck_assert(ht_close(g[0].bw, 4));
    ck_assert(ht_close(g[1].bw, 0));
    hs_sched_destroy(s);
}
END_TEST

/* A write larger than any node it may use never fits: it starts at once (and is
 * throttled to the drain when the node fills) instead of waiting forever. */
START_TEST(test_harmonia_too_big)
{
    hs_buffer_t buf;
    hs_platform_t plat = { .nodes = 4, .node_bw = 1, .bw = 0.5, .nbuffers = 1, .buffers = &buf };
    tjob_t jobs[1] = { { .id = 1, .nodes = 2, .w = 1, .vol = 30, .iters = 2 } };
    hs_sched_t *s;

    memset(&buf, 0, sizeof(buf));
    buf.capacity = 10;
    buf.bandwidth = 2;
    s = ht_sched(&plat, "harmonia-buffer-eff");
    drive(s, jobs, 1, NULL, NULL);
    ck_assert(isfinite(jobs[0].end) && jobs[0].end > 0);
    hs_sched_destroy(s);
}
END_TEST

/* ------------------------------------------------------------ every id runs */

START_TEST(test_every_policy_runs)
{
    const char *const *ids = hs_policy_ids();
    hs_buffer_t buf[3];
    static const int a1[2] = { 0, 1 }, a2[2] = { 1, 2 };

    memset(buf, 0, sizeof(buf));
    for (int j = 0; j < 3; j++) {
        ck_assert_int_eq(hs_device_builtin(j == 2 ? "hdd" : "ssd", &buf[j]), 0);
        buf[j].capacity = 40;
        buf[j].bandwidth = 2;
    }
    for (int withbuf = 0; withbuf < 2; withbuf++) {
        hs_platform_t plat = { .nodes = 8,
                               .node_bw = 1,
                               .bw = 2,
                               .nbuffers = withbuf ? 3 : 0,
                               .buffers = withbuf ? buf : NULL };
        for (int i = 0; ids[i]; i++) {
            char id[64];
            const char *lt = strchr(ids[i], '<');
            tjob_t jobs[4] = {
                { .id = 1, .nodes = 2, .w = 3, .vol = 8, .iters = 4, .prio = 2 },
                { .id = 2, .nodes = 2, .w = 5, .vol = 6, .iters = 3, .alloc = a1, .nalloc = 2 },
                { .id = 3,
                  .nodes = 4,
                  .w = 2,
                  .vol = 12,
                  .iters = 3,
                  .alloc = a2,
                  .nalloc = 2,
                  .prio = 9 },
                { .id = 4, .nodes = 1, .w = 0, .vol = 4, .iters = 5, .dir = HS_DIR_READ },
            };
            hs_sched_t *s;
            if (lt) { /* minmax:<gamma>, set:<base> */
                snprintf(id, sizeof(id), "%.*s%s%s", (int)(lt - ids[i]), ids[i],
                         !strncmp(ids[i], "set", 3) ? "2" : "0.5",
                         strchr(lt, '>')[1] ? strchr(lt, '>') + 1 : "");
            } else
                snprintf(id, sizeof(id), "%s", ids[i]);
            if (!withbuf) {
                jobs[1].nalloc = 0;
                jobs[2].nalloc = 0;
            }
            s = ht_sched(&plat, id);
            drive(s, jobs, 4, NULL, NULL);
            for (int k = 0; k < 4; k++)
                ck_assert_msg(isfinite(jobs[k].end), "%s: job %d", id, k + 1);
            hs_sched_destroy(s);
        }
    }
}
END_TEST

START_TEST(test_stats_online)
{
    hs_platform_t plat = { .nodes = 2, .node_bw = 4, .bw = 4 };
    hs_sched_t *s = ht_sched(&plat, "fairshare");
    hs_policy_stats_t st;

    ck_assert_int_eq(hs_sched_policy_stats(s, &st), 0);
    ck_assert(!st.plans && st.schedules == 0 && isnan(st.period));
    errno = 0;
    ck_assert_int_eq(hs_sched_policy_stats(NULL, &st), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_sched_policy_stats(s, NULL), -1);
    hs_sched_destroy(s);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "plan", .timeout = 120,
          .tests = { test_persched_replay, test_periodic_leftovers, test_harmonia_spread_vs_pack,
                     test_harmonia_pfs, test_harmonia_priority, test_harmonia_too_big,
                     test_every_policy_runs, test_stats_online, NULL } },
    };

    return tu_main("hsched_plan", tcases, TU_COUNT(tcases));
}
