/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_hsched_auto.c — the policy 'auto' (doc/policies.md, "auto"): its choice on
 * small hand-checked figures, and its behaviour inside a scheduler (deterministic,
 * exposed, candidates checked).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhsched/hsched.h"
#include "libhsched/policy.h"
#include "testutil.h"

static hs_auto_fig_t fig(double sys, double dil, double stretch, double ios)
{
    return (hs_auto_fig_t){ true, sys, dil, stretch, ios };
}

/* A (0.50, 1.20), B (0.60, 1.30), C (0.70, 2.00).  The lowest dilation is 1.20:
 * factor 1.05 allows 1.26 (only A), factor 1.10 allows 1.32 (A and B: B has the
 * higher SysEff), factor 2 allows all (C). */
START_TEST(test_choose_dilation_bound)
{
    hs_auto_fig_t f[3] = { fig(0.5, 1.2, 3, 2), fig(0.6, 1.3, 2, 3), fig(0.7, 2.0, 1, 4) };
    int best;

    ck_assert_int_eq(hs_auto_choose(f, 3, 0, HS_AUTO_SYSEFF, 1.05, 0.02, &best), 0);
    ck_assert_int_eq(best, 0);
    ck_assert_int_eq(hs_auto_choose(f, 3, 0, HS_AUTO_SYSEFF, 1.10, 0.02, &best), 1);
    ck_assert_int_eq(hs_auto_choose(f, 3, 0, HS_AUTO_SYSEFF, 2.0, 0.02, &best), 2);
    /* the other objectives ignore the bound: the lowest value */
    ck_assert_int_eq(hs_auto_choose(f, 3, 0, HS_AUTO_STRETCH, 1.05, 0.02, &best), 2);
    ck_assert_int_eq(hs_auto_choose(f, 3, 2, HS_AUTO_IOSLOWDOWN, 1.05, 0.02, &best), 0);
}
END_TEST

/* Hysteresis 0.02 from A (SysEff 0.50): B at 0.505 (+1%) does not move it, B at
 * 0.52 (+4%) does.  A current policy that breaks the dilation bound is left even for
 * a smaller gain. */
START_TEST(test_choose_hysteresis)
{
    hs_auto_fig_t f[2] = { fig(0.50, 1.00, 1, 1), fig(0.505, 1.01, 1, 1) };
    int best;

    ck_assert_int_eq(hs_auto_choose(f, 2, 0, HS_AUTO_SYSEFF, 1.05, 0.02, &best), 0);
    ck_assert_int_eq(best, 1);
    f[1].sys_efficiency = 0.52;
    ck_assert_int_eq(hs_auto_choose(f, 2, 0, HS_AUTO_SYSEFF, 1.05, 0.02, &best), 1);
    /* A at dilation 1.10 > 1.05 x 1.01: out of the bound, left for B at +0.2% */
    f[0] = fig(0.50, 1.10, 1, 1);
    f[1] = fig(0.501, 1.01, 1, 1);
    ck_assert_int_eq(hs_auto_choose(f, 2, 0, HS_AUTO_SYSEFF, 1.05, 0.02, &best), 1);
    /* lower-is-better objectives: 0.99 x the current is not enough, 0.97 x is */
    f[0] = fig(0.5, 1, 2.00, 1);
    f[1] = fig(0.5, 1, 1.98, 1);
    ck_assert_int_eq(hs_auto_choose(f, 2, 0, HS_AUTO_STRETCH, 1.05, 0.02, &best), 0);
    f[1].stretch = 1.94;
    ck_assert_int_eq(hs_auto_choose(f, 2, 0, HS_AUTO_STRETCH, 1.05, 0.02, &best), 1);
}
END_TEST

/* Ties keep the earlier candidate; candidates not simulated (ok false) are never
 * chosen; with none, the current one stays. */
START_TEST(test_choose_ties_and_missing)
{
    hs_auto_fig_t f[3] = { fig(0.6, 1.0, 1, 1), fig(0.6, 1.0, 1, 1), fig(0.9, 1.0, 1, 1) };
    int best;

    f[2].ok = false;
    ck_assert_int_eq(hs_auto_choose(f, 3, 1, HS_AUTO_SYSEFF, 1.05, 0, &best), 1);
    ck_assert_int_eq(best, 0);
    ck_assert_int_eq(hs_auto_choose(f, 3, 2, HS_AUTO_SYSEFF, 1.05, 0.02, &best), 0);
    f[0].ok = f[1].ok = false;
    ck_assert_int_eq(hs_auto_choose(f, 3, 1, HS_AUTO_SYSEFF, 1.05, 0.02, &best), 1);
    ck_assert_int_eq(best, -1);
}
END_TEST

/* ---------------------------------------------------------------- in a scheduler */

static const hs_platform_t plat = { 64, 1e9, 4e9, 0, NULL };

/* Four jobs (16 nodes each, cap 4 GB/s = B): two compute-heavy, two I/O-heavy; each
 * asks for a phase at its release; runs decide() at every event; returns the sum
 * of the granted rates over the decisions (a fingerprint of the run). */
static double run(const hs_policy_t *pol, hs_auto_state_t *ast)
{
    hu_error_t err;
    hs_sched_t *s = hs_sched_create(&plat, pol, &err);
    hs_grant_t g[8];
    double fp = 0, t = 0;
    int done = 0, phases[4] = { 0 };

    ck_assert_msg(s != NULL, "%s", err.text);
    for (int k = 0; k < 4; k++) {
        hs_job_t j = { .id = (uint64_t)k + 1,
                       .nodes = 16,
                       .release = k,
                       .w = k < 2 ? 100 : 10,
                       .volume = k < 2 ? 40e9 : 80e9 };
        ck_assert_int_eq(hs_job_arrive(s, k, &j, &err), 0);
        ck_assert_int_eq(hs_phase_request(s, k, j.id, j.volume, HS_DIR_WRITE, 0, &err), 0);
        ck_assert_int_ge(hs_sched_decide(s, k, g, 8), 0);
    }
    t = 3;
    while (done < 4 && t < 1e6) {
        uint64_t ids[8];
        size_t nc;
        int n;
        t = hs_sched_next_event(s);
        ck_assert(isfinite(t));
        ck_assert_int_eq(hs_sched_advance(s, t), 0);
        nc = hs_sched_completed(s, ids, 8);
        for (size_t q = 0; q < nc; q++) {
            int k = (int)ids[q] - 1;
            ck_assert_int_eq(hs_phase_finish(s, t, ids[q]), 0);
            if (++phases[k] == 3) {
                ck_assert_int_eq(hs_job_leave(s, t, ids[q]), 0);
                done++;
            } else /* no compute gap: the next phase at once (I/O pressure) */
                ck_assert_int_eq(hs_phase_request(s, t, ids[q], k < 2 ? 40e9 : 80e9, HS_DIR_WRITE,
                                                  k < 2 ? 100 : 10, &err),
                                 0);
        }
        n = hs_sched_decide(s, t, g, 8);
        ck_assert_int_ge(n, 0);
        for (int i = 0; i < n && i < 8; i++)
            fp += g[i].bw * (double)g[i].id * 1e-9;
    }
    ck_assert_int_eq(done, 4);
    if (ast)
        ck_assert_int_eq(hs_sched_auto_state(s, ast), 0);
    hs_sched_destroy(s);
    return fp;
}

START_TEST(test_auto_in_scheduler)
{
    hs_policy_t pol, fc;
    hs_auto_state_t a1, a2;
    hu_error_t err;
    double f1, f2, ffc;

    ck_assert_int_eq(hs_policy_parse("auto", &pol, &err), 0);
    ck_assert_int_eq(pol.kind, HS_POL_AUTO);
    f1 = run(&pol, &a1);
    f2 = run(&pol, &a2);
    ck_assert(f1 == f2); /* deterministic */
    ck_assert(a1.active);
    ck_assert_int_ge((int)a1.epochs, 1); /* at least the first decision */
    ck_assert_int_eq(a1.candidates, 7);
    ck_assert(strstr(HS_AUTO_CANDIDATES, a1.current) != NULL);
    ck_assert(a1.reason[0] != '\0');
    ck_assert(strcmp(a1.reason, a2.reason) == 0);

    /* one candidate: auto runs exactly that policy */
    snprintf(pol.auto_candidates, sizeof(pol.auto_candidates), "fcfs");
    ck_assert_int_eq(hs_policy_parse("fcfs", &fc, &err), 0);
    f1 = run(&pol, &a1);
    ffc = run(&fc, &a2);
    ck_assert(f1 == ffc);
    ck_assert_str_eq(a1.current, "fcfs");
    ck_assert_int_eq((int)a1.switches, 0);
    ck_assert(!a2.active);
}
END_TEST

/* The look ahead's copy of a job carries its history (hs_core_job_copy_history()):
 * job 1 (16 nodes, cap 4 GB/s) computed 10 s, moved 8 GB alone (2 s dedicated) and
 * asked for a second phase after 5 s more; its copy has that accounting and gets
 * the pending phase's compute (5 s), and refuses a second copy once it requested. */
START_TEST(test_copy_history)
{
    hs_policy_t fc;
    hu_error_t err;
    hs_sched_t *src, *dst;
    hs_job_t j = { .id = 1, .nodes = 16, .release = 0, .w = 10, .volume = 8e9 };
    hs_job_stats_t a, b;
    double wd = -1;

    ck_assert_int_eq(hs_policy_parse("fcfs", &fc, &err), 0);
    src = hs_sched_create(&plat, &fc, &err);
    dst = hs_sched_create(&plat, &fc, &err);
    ck_assert(src && dst);
    ck_assert_int_eq(hs_job_arrive(src, 0, &j, &err), 0);
    ck_assert_int_eq(hs_phase_request(src, 10, 1, 8e9, HS_DIR_WRITE, 10, &err), 0);
    ck_assert_int_ge(hs_sched_decide(src, 10, NULL, 0), 0);
    ck_assert_int_eq(hs_sched_advance(src, 12), 0);
    ck_assert_int_eq(hs_phase_finish(src, 12, 1), 0);
    ck_assert_int_eq(hs_phase_request(src, 17, 1, 8e9, HS_DIR_WRITE, 5, &err), 0);
    ck_assert_int_eq(hs_job_arrive(dst, 17, &j, &err), 0);
    ck_assert_int_eq(hs_core_job_copy_history(dst, src, 0, &wd), 0);
    ck_assert(wd == 5);
    ck_assert_int_eq(hs_job_stats(src, 1, &a), 0);
    ck_assert_int_eq(hs_job_stats(dst, 1, &b), 0);
    ck_assert_int_eq(b.phases, 1);
    ck_assert(b.work == 10 && a.work == 10);
    ck_assert(fabs(b.io_dedicated - 2) < 1e-9 && b.io_dedicated == a.io_dedicated);
    ck_assert(b.bytes == 8e9 && b.io_time == a.io_time);
    ck_assert_int_eq(hs_phase_request(dst, 17, 1, 8e9, HS_DIR_WRITE, wd, &err), 0);
    ck_assert_int_eq(hs_core_job_copy_history(dst, src, 0, NULL), -1);
    ck_assert_int_eq(errno, EBUSY);
    ck_assert_int_eq(hs_core_job_copy_history(dst, src, 1, NULL), -1);
    ck_assert_int_eq(errno, EINVAL);
    hs_sched_destroy(src);
    hs_sched_destroy(dst);
}
END_TEST

/* The look ahead starts the buffer nodes from their fill.  One buffer node
 * (100 B, 10 B/s alone, no MSCA), a PFS of 1 B/s, one job (1 node, cap 100 B/s) of
 * one phase of 50 B after 50 s of compute.  Empty at the request (t = 50), the node
 * takes the phase in 5 s: the job ends at 55, rho~ = 50/55 and the Dilation is 1
 * (rho = 50 / (50 + 5)).  Filled to 100 B at the request, the node is full: the
 * phase goes at the drain rate, 1 B/s, and ends at 100 (rho~ = 0.5, Dilation
 * (50/55) / 0.5 = 20/11).  The projected figures of the epoch (the reason) are
 * those, and the run ends when the projection said. */
static void fill_case(double fill, double *sys, double *dil, double *end)
{
    hs_buffer_t b;
    hs_platform_t p = { .nodes = 1, .node_bw = 100, .bw = 1, .nbuffers = 1, .buffers = &b };
    int a0[1] = { 0 };
    hs_job_t j = { .id = 1,
                   .nodes = 1,
                   .release = 0,
                   .alloc = a0,
                   .nalloc = 1,
                   .instances = 1,
                   .w = 50,
                   .volume = 50 };
    hs_policy_t pol;
    hs_auto_state_t ast;
    hu_error_t err;
    hs_sched_t *s;
    const char *r;
    double t;

    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "bb0");
    b.capacity = 100;
    b.bandwidth = 10;
    ck_assert_int_eq(hs_policy_parse("auto", &pol, &err), 0);
    ck_assert_ptr_nonnull(s = hs_sched_create(&p, &pol, &err));
    ck_assert_int_eq(hs_job_arrive(s, 0, &j, &err), 0);
    if (fill > 0)
        ck_assert_int_eq(hs_buffer_set_occupancy(s, 50, 0, fill), 0);
    ck_assert_int_eq(hs_phase_request(s, 50, 1, 50, HS_DIR_WRITE, 50, &err), 0);
    ck_assert_int_ge(hs_sched_decide(s, 50, NULL, 0), 0);
    ck_assert_int_eq(hs_sched_auto_state(s, &ast), 0);
    ck_assert_int_eq((int)ast.epochs, 1);
    r = strstr(ast.reason, "syseff ");
    ck_assert_msg(r && sscanf(r, "syseff %lf with dilation %lf", sys, dil) == 2, "%s", ast.reason);
    t = 50;
    while (hs_sched_completed(s, NULL, 0) == 0) {
        t = hs_sched_next_event(s);
        ck_assert(isfinite(t));
        ck_assert_int_eq(hs_sched_advance(s, t), 0);
        ck_assert_int_ge(hs_sched_decide(s, t, NULL, 0), 0);
    }
    *end = t;
    hs_sched_destroy(s);
}

START_TEST(test_lookahead_buffer_fill)
{
    double sys, dil, end;

    fill_case(0, &sys, &dil, &end);
    ck_assert_msg(fabs(sys - 50. / 55.) < 1e-3 && fabs(dil - 1) < 1e-3, "empty: %g %g", sys, dil);
    ck_assert(fabs(end - 55) < 1e-6);
    fill_case(100, &sys, &dil, &end);
    ck_assert_msg(fabs(sys - 0.5) < 1e-3 && fabs(dil - 20. / 11.) < 1e-3, "full: %g %g", sys, dil);
    ck_assert(fabs(end - 100) < 1e-6);
}
END_TEST

/* The look ahead's copy of a pending phase stays on the buffer nodes the run placed
 * it on (hs_core_phase_copy()).  Four buffer nodes, two jobs allowed on all of
 * them, a phase on one node each: in the run job 1 asks first and goes to node 0,
 * job 2 to node 1, the least loaded.  In a copy where job 2 asks alone it would be
 * placed on node 0; copied, it is on node 1.  A job computing in the run (no phase
 * to copy) keeps the copy's own placement. */
static int granted_node(hs_sched_t *s, double now, uint64_t id)
{
    hs_grant_t g[4];
    int n = hs_sched_decide(s, now, g, 4);

    ck_assert_int_ge(n, 1);
    for (int i = 0; i < n; i++)
        if (g[i].id == id)
            return g[i].buffer;
    ck_abort_msg("no grant for job %llu", (unsigned long long)id);
    return -2;
}

START_TEST(test_copy_place)
{
    hs_buffer_t b[4];
    hs_platform_t p = { .nodes = 4, .node_bw = 10e9, .bw = 4e9, .nbuffers = 4, .buffers = b };
    int all[4] = { 0, 1, 2, 3 };
    hs_job_t j1 = {
        .id = 1, .nodes = 2, .alloc = all, .nalloc = 4, .stripe = 1, .w = 10, .volume = 8e9
    };
    hs_job_t j2 = j1;
    hs_policy_t fs;
    hu_error_t err;
    hs_sched_t *src, *dst;

    memset(b, 0, sizeof(b));
    for (int k = 0; k < 4; k++) {
        snprintf(b[k].name, sizeof(b[k].name), "bb%d", k);
        b[k].capacity = 100e9;
        b[k].bandwidth = 1e9;
    }
    j2.id = 2;
    ck_assert_int_eq(hs_policy_parse("fairshare", &fs, &err), 0);
    ck_assert_ptr_nonnull(src = hs_sched_create(&p, &fs, &err));
    ck_assert_ptr_nonnull(dst = hs_sched_create(&p, &fs, &err));
    ck_assert_int_eq(hs_job_arrive(src, 0, &j1, &err), 0);
    ck_assert_int_eq(hs_job_arrive(src, 0, &j2, &err), 0);
    ck_assert_int_eq(hs_phase_request(src, 10, 1, 8e9, HS_DIR_WRITE, 10, &err), 0);
    ck_assert_int_eq(granted_node(src, 10, 1), 0);
    ck_assert_int_eq(hs_phase_request(src, 11, 2, 8e9, HS_DIR_WRITE, 11, &err), 0);
    ck_assert_int_eq(granted_node(src, 11, 2), 1);

    /* job 2 alone in the copy: its own placement is node 0, the run's is 1 */
    ck_assert_int_eq(hs_job_arrive(dst, 11, &j2, &err), 0);
    ck_assert_int_eq(hs_core_phase_copy(dst, src, 2), -1); /* no phase yet */
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_phase_request(dst, 11, 2, 8e9, HS_DIR_WRITE, 11, &err), 0);
    ck_assert_int_eq(hs_core_phase_copy(dst, src, 2), 0);
    ck_assert_int_eq(granted_node(dst, 11, 2), 1);
    ck_assert_int_eq(hs_core_phase_copy(dst, src, 3), -1); /* no such job */
    ck_assert_int_eq(errno, EINVAL);
    hs_sched_destroy(dst);

    /* job 2 computing in the run: nothing to copy, the copy places it itself */
    ck_assert_int_eq(hs_sched_advance(src, 19), 0);
    ck_assert_int_eq(hs_phase_finish(src, 19, 2), 0);
    ck_assert_ptr_nonnull(dst = hs_sched_create(&p, &fs, &err));
    ck_assert_int_eq(hs_job_arrive(dst, 19, &j2, &err), 0);
    ck_assert_int_eq(hs_phase_request(dst, 19, 2, 8e9, HS_DIR_WRITE, 0, &err), 0);
    ck_assert_int_eq(hs_core_phase_copy(dst, src, 2), 0);
    ck_assert_int_eq(granted_node(dst, 19, 2), 0);
    hs_sched_destroy(src);
    hs_sched_destroy(dst);
}
END_TEST

/* The look ahead against the run (hs_auto_state_t.lookahead_*).  Two jobs keep to
 * their hints (16 nodes each, cap 4 GB/s = B; 3 phases of 8 GB after 10 s of
 * compute each, the second released 5 s later) and leave 100 s after their last
 * phase, as bbmgrd's jobs leave when Slurm ends them: every projected end is the
 * end of the job's last phase, 0 error (checked when a third job's phase has the
 * policy decide again).  A job whose phases are off its hints, within what the
 * guard lets through (11 GB, not 8), ends elsewhere than projected. */
static void la_run(double vol2, hs_auto_state_t *ast)
{
    hs_policy_t pol;
    hu_error_t err;
    hs_sched_t *s;
    double next[2] = { 10, 15 }, left_at[2] = { INFINITY, INFINITY }, t = 0;
    int phases[2] = { 0 }, gone = 0;

    ck_assert_int_eq(hs_policy_parse("auto", &pol, &err), 0);
    ck_assert_ptr_nonnull(s = hs_sched_create(&plat, &pol, &err));
    for (int k = 0; k < 2; k++) {
        hs_job_t j = { .id = (uint64_t)k + 1,
                       .nodes = 16,
                       .release = 5.0 * k,
                       .instances = 3,
                       .w = 10,
                       .volume = 8e9 };
        ck_assert_int_eq(hs_job_arrive(s, j.release, &j, &err), 0);
        ck_assert_int_ge(hs_sched_decide(s, j.release, NULL, 0), 0);
    }
    while (gone < 2) {
        double tn = hs_sched_next_event(s);
        uint64_t ids[2];
        size_t nc;
        for (int k = 0; k < 2; k++)
            tn = fmin(tn, fmin(next[k], left_at[k]));
        ck_assert(isfinite(tn) && tn < 1e4);
        t = tn;
        ck_assert_int_eq(hs_sched_advance(s, t), 0);
        nc = hs_sched_completed(s, ids, 2);
        for (size_t q = 0; q < nc; q++) {
            int k = (int)ids[q] - 1;
            ck_assert_int_eq(hs_phase_finish(s, t, ids[q]), 0);
            if (++phases[k] == 3)
                left_at[k] = t + 100;
            else
                next[k] = t + 10;
        }
        for (int k = 0; k < 2; k++) {
            if (next[k] <= t) {
                next[k] = INFINITY;
                ck_assert_int_eq(
                    hs_phase_request(s, t, (uint64_t)k + 1, k ? vol2 : 8e9, HS_DIR_WRITE, 10, &err),
                    0);
            }
            if (left_at[k] <= t) {
                left_at[k] = INFINITY;
                ck_assert_int_eq(hs_job_leave(s, t, (uint64_t)k + 1), 0);
                gone++;
            }
        }
        ck_assert_int_ge(hs_sched_decide(s, t, NULL, 0), 0);
    }
    {
        /* the policy is asked (and auto checks the jobs gone) once a phase is
         * pending again */
        hs_job_t j3 = { .id = 3, .nodes = 16, .release = t + 1, .w = 10, .volume = 8e9 };
        ck_assert_int_eq(hs_job_arrive(s, t + 1, &j3, &err), 0);
        ck_assert_int_eq(hs_phase_request(s, t + 1, 3, 8e9, HS_DIR_WRITE, 0, &err), 0);
        ck_assert_int_ge(hs_sched_decide(s, t + 1, NULL, 0), 0);
    }
    ck_assert_int_eq(hs_sched_auto_state(s, ast), 0);
    hs_sched_destroy(s);
}

START_TEST(test_lookahead_check)
{
    hs_auto_state_t a;

    la_run(8e9, &a);
    ck_assert_msg(a.lookahead_checked == 2 && a.lookahead_err_max == 0,
                  "at the hints: %llu checked, error %g", (unsigned long long)a.lookahead_checked,
                  a.lookahead_err_max);
    la_run(11e9, &a);
    ck_assert_msg(a.lookahead_checked >= 1 && a.lookahead_err_max > 0.01,
                  "off the hints: %llu checked, error %g", (unsigned long long)a.lookahead_checked,
                  a.lookahead_err_max);
}
END_TEST

START_TEST(test_auto_bad_settings)
{
    hs_policy_t pol;
    hu_error_t err;

    ck_assert_int_eq(hs_policy_parse("auto", &pol, &err), 0);
    snprintf(pol.auto_candidates, sizeof(pol.auto_candidates), "fcfs,static");
    ck_assert_ptr_null(hs_sched_create(&plat, &pol, &err));
    ck_assert(strstr(err.text, "'static' cannot be a candidate") != NULL);
    snprintf(pol.auto_candidates, sizeof(pol.auto_candidates), "fcfs,,set10");
    ck_assert_ptr_null(hs_sched_create(&plat, &pol, &err));
    snprintf(pol.auto_candidates, sizeof(pol.auto_candidates), "nosuch");
    ck_assert_ptr_null(hs_sched_create(&plat, &pol, &err));
    ck_assert(strstr(err.text, "nosuch") != NULL);
    pol.auto_candidates[0] = '\0';
    pol.auto_factor = 0.5;
    ck_assert_ptr_null(hs_sched_create(&plat, &pol, &err));
    ck_assert(strstr(err.text, "factor") != NULL);
    {
        int o;
        ck_assert_int_eq(hs_auto_objective_parse("stretch", &o), 0);
        ck_assert_int_eq(o, HS_AUTO_STRETCH);
        ck_assert_int_eq(hs_auto_objective_parse("fast", &o), -1);
        ck_assert_int_eq(errno, EINVAL);
    }
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "core", .tests = { test_choose_dilation_bound, test_choose_hysteresis,
                             test_choose_ties_and_missing, test_auto_in_scheduler,
                             test_auto_bad_settings, test_copy_history, test_copy_place,
                             test_lookahead_buffer_fill, test_lookahead_check, NULL } },
    };

    return tu_main("hsched_auto", tcases, TU_COUNT(tcases));
}
