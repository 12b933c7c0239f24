/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the interposer's phase detector (src/lib/libharmonia/phasedet.c,
 * compiled in): synthetic traces of periodic programs (w_iter 1 to 60 s, noise
 * eta up to 0.5 in the job's w_iter as in IO-Sets and in each iteration's compute
 * and I/O times), aperiodic programs, a single final write, the merging of the
 * views of several processes, the hints, and a trace recorded from a real shell
 * loop of dd (trace_dd_loop.h).
 *
 * A trace is replayed as the interposer sees it: each call's start and end go to
 * hm_pd_start()/hm_pd_done(), and hm_pd_poll() runs every 10 ms in between (the
 * interposer's agent thread polls at that period).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "../../src/lib/libharmonia/phasedet.h"
#include "testutil.h"
#include "trace_dd_loop.h"

#define TICK 0.01
#define MAXPH 512

typedef struct {
    double t0, t1, bytes;
} call_t;

typedef struct {
    call_t *c;
    size_t n, cap;
    double start[MAXPH]; /* true phase starts */
    double bytes[MAXPH];
    int nph;
} trace_t;

static void add_call(trace_t *tr, double t0, double t1, double bytes)
{
    if (tr->n == tr->cap) {
        tr->cap = tr->cap ? 2 * tr->cap : 1024;
        tr->c = realloc(tr->c, tr->cap * sizeof(*tr->c));
        ck_assert(tr->c != NULL);
    }
    tr->c[tr->n++] = (call_t){ t0, t1, bytes };
}

/* Uniform in [-1, 1). */
static double sym(void)
{
    return 2 * tu_urand() - 1;
}

/* A periodic program: nph iterations of compute then one I/O phase of 'volume'
 * bytes in 1 MiB calls at 'bw' bytes/s, w_iter = compute + I/O.  eta_job: the
 * job's w_iter is w * (1 + eta_job * N(0,1)-ish) as IO-Sets draws it (at least 1 s);
 * eta_it: each
 * iteration's compute and I/O times vary by a factor 1 + eta_it * U(-1, 1). */
static void periodic(trace_t *tr, double w, double io_frac, int nph, double eta_job, double eta_it)
{
    const double call = 1 << 20;
    double t = 5.0 * tu_urand();
    if (eta_job > 0) {
        /* sum of 4 uniforms, rescaled to unit variance, clamped to stay positive */
        double z = (sym() + sym() + sym() + sym()) * sqrt(3.0) / 2;
        double f = 1 + eta_job * z;
        /* within the range the detector is asked to cover: w_iter >= 1 s */
        w = w * f < 1 ? 1 : w * f;
    }
    double io = w * io_frac, comp = w - io, bw = 256.0 * call / io;
    for (int i = 0; i < nph; i++) {
        double c = comp * (1 + eta_it * sym()), d = io * (1 + eta_it * sym());
        t += c;
        tr->start[tr->nph] = t;
        int ncalls = (int)(d * bw / call);
        if (ncalls < 1)
            ncalls = 1;
        for (int k = 0; k < ncalls; k++) {
            double t1 = t + d / ncalls;
            add_call(tr, t, t1, call);
            t = t1;
        }
        tr->bytes[tr->nph++] = ncalls * call;
    }
}

typedef struct {
    double start[MAXPH], end[MAXPH], bytes[MAXPH];
    int n;
    double w_at[MAXPH]; /* the w_iter estimate when phase i closed */
} found_t;

static void note(found_t *f, const hm_pd_t *pd, const hm_pd_phase_t *ph)
{
    ck_assert_int_lt(f->n, MAXPH);
    f->start[f->n] = ph->start;
    f->end[f->n] = ph->end;
    f->bytes[f->n] = ph->bytes;
    f->w_at[f->n] = hm_pd_w_iter(pd);
    f->n++;
}

/* Replay with polls every TICK; the phases found in *f. */
static void replay(const trace_t *tr, hm_pd_t *pd, found_t *f)
{
    hm_pd_phase_t ph;
    double tick = tr->n ? floor(tr->c[0].t0 / TICK) * TICK : 0;
    memset(f, 0, sizeof(*f));
    for (size_t i = 0; i < tr->n; i++) {
        const call_t *c = &tr->c[i];
        for (; tick < c->t0; tick += TICK)
            if (hm_pd_poll(pd, tick, 0, &ph))
                note(f, pd, &ph);
        if (hm_pd_start(pd, c->t0, 0, &ph) & HM_PD_ENDED)
            note(f, pd, &ph);
        /* polls while the call is in flight never close the phase */
        for (; tick < c->t1; tick += TICK)
            ck_assert_int_eq(hm_pd_poll(pd, tick, 1, &ph), 0);
        hm_pd_done(pd, c->t1, c->bytes);
    }
    if (hm_pd_flush(pd, &ph))
        note(f, pd, &ph);
}

/* Every true phase found once, its start within w/10. */
static void check_starts(const trace_t *tr, const found_t *f, double w)
{
    ck_assert_msg(f->n == tr->nph, "%d phases found, %d true", f->n, tr->nph);
    for (int i = 0; i < tr->nph; i++) {
        ck_assert_msg(fabs(f->start[i] - tr->start[i]) <= w / 10,
                      "phase %d found at %.3f, true %.3f", i, f->start[i], tr->start[i]);
        ck_assert_msg(fabs(f->bytes[i] - tr->bytes[i]) < 1, "phase %d: %.0f bytes, true %.0f", i,
                      f->bytes[i], tr->bytes[i]);
    }
}

static const struct {
    double w, io_frac, eta_job, eta_it;
} periodic_rows[] = {
    { 1, 0.2, 0, 0 },    { 1, 0.5, 0, 0 },   { 2, 0.3, 0, 0 },      { 10, 0.1, 0, 0 },
    { 60, 0.05, 0, 0 },  { 60, 0.3, 0, 0 },  { 1, 0.2, 0.5, 0 },    { 10, 0.2, 0.5, 0 },
    { 60, 0.1, 0.5, 0 }, { 1, 0.2, 0, 0.1 }, { 10, 0.2, 0, 0.1 },   { 60, 0.2, 0, 0.1 },
    { 1, 0.2, 0, 0.5 },  { 5, 0.3, 0, 0.5 }, { 30, 0.2, 0.5, 0.5 }, { 60, 0.4, 0, 0.5 },
};

/* Periodic programs, 20 seeds each: every phase found, its start within w/10; the
 * w_iter estimate once three periods are seen within 10% of the job's w_iter
 * (eta_it <= 0.1) or of the mean of the intervals it saw (eta_it = 0.5: the
 * iterations themselves vary by up to 50%, no estimator knows more after three of
 * them); after 12 periods within 10% of the job's w_iter in every case. */
START_TEST(test_periodic)
{
    for (int seed = 1; seed <= 20; seed++) {
        trace_t tr = { 0 };
        hm_pd_t pd;
        found_t f;
        tu_seed(1000 * (_i + 1) + seed);
        periodic(&tr, periodic_rows[_i].w, periodic_rows[_i].io_frac, 16, periodic_rows[_i].eta_job,
                 periodic_rows[_i].eta_it);
        double wtrue = (tr.start[tr.nph - 1] - tr.start[0]) / (tr.nph - 1);
        double wnom = periodic_rows[_i].w;
        hm_pd_init(&pd, NULL);
        replay(&tr, &pd, &f);
        check_starts(&tr, &f, wnom);
        /* after three periods: the fourth phase has closed */
        double w3 = f.w_at[3], seen = (tr.start[3] - tr.start[0]) / 3;
        double ref =
            periodic_rows[_i].eta_it <= 0.1 ? (periodic_rows[_i].eta_job > 0 ? wtrue : wnom) : seen;
        ck_assert_msg(fabs(w3 - ref) <= 0.1 * ref,
                      "row %d seed %d: w_iter %.3f after 3 "
                      "periods, true %.3f",
                      _i, seed, w3, ref);
        ck_assert_msg(fabs(f.w_at[12] - wtrue) <= 0.1 * wtrue,
                      "row %d seed %d: w_iter %.3f "
                      "after 12 periods, true %.3f",
                      _i, seed, f.w_at[12], wtrue);
        ck_assert(hm_pd_volume(&pd) > 0);
        if (periodic_rows[_i].eta_it <= 0.1)
            ck_assert(hm_pd_periodic(&pd));
        free(tr.c);
    }
}
END_TEST

/* Aperiodic: compute times drawn from 1 s to 40 s (log-uniform), phases of 1 to 300
 * calls: every phase found where it starts (an idle time longer than the longest
 * gap, 1 s, always separates two phases); not taken for periodic. */
START_TEST(test_aperiodic)
{
    for (int seed = 1; seed <= 20; seed++) {
        trace_t tr = { 0 };
        hm_pd_t pd;
        found_t f;
        double t = 0;
        tu_seed(seed);
        for (int i = 0; i < 30; i++) {
            t += exp(log(40.0) * tu_urand());
            tr.start[tr.nph] = t;
            int n = 1 + (int)(300 * tu_urand());
            for (int k = 0; k < n; k++, t += 0.002)
                add_call(&tr, t, t + 0.002, 4096);
            tr.bytes[tr.nph++] = n * 4096.0;
        }
        hm_pd_init(&pd, NULL);
        replay(&tr, &pd, &f);
        check_starts(&tr, &f, 0.3);
        ck_assert(!hm_pd_periodic(&pd));
        free(tr.c);
    }
}
END_TEST

/* One write at the end of a long computation: one phase, its bytes, no w_iter. */
START_TEST(test_single_final_write)
{
    trace_t tr = { 0 };
    hm_pd_t pd;
    found_t f;
    tr.start[0] = 3600;
    for (int k = 0; k < 100; k++)
        add_call(&tr, 3600 + k * 0.01, 3600 + (k + 1) * 0.01, 1 << 20);
    tr.bytes[0] = 100.0 * (1 << 20);
    tr.nph = 1;
    hm_pd_init(&pd, NULL);
    replay(&tr, &pd, &f);
    check_starts(&tr, &f, 1);
    ck_assert(hm_pd_w_iter(&pd) == 0);
    ck_assert(hm_pd_volume(&pd) == 100.0 * (1 << 20));
    ck_assert(!hm_pd_periodic(&pd));
    free(tr.c);
}
END_TEST

/* Pauses inside a phase (a Python loop computing 150 ms between its writes) do not
 * split it once seen: the gap grows past twice the pause. */
START_TEST(test_pauses_inside_a_phase)
{
    trace_t tr = { 0 };
    hm_pd_t pd;
    found_t f;
    double t = 0;
    for (int i = 0; i < 10; i++) {
        t += 10;
        tr.start[tr.nph] = t;
        for (int k = 0; k < 8; k++, t += 0.15 + 0.05)
            add_call(&tr, t, t + 0.05, 1e6);
        tr.bytes[tr.nph++] = 8e6;
    }
    hm_pd_init(&pd, NULL);
    replay(&tr, &pd, &f);
    /* the first phase may be split (nothing known yet); from the second one on,
     * each phase is found whole */
    ck_assert_int_ge(f.n, 10);
    ck_assert_int_le(f.n, 17);
    int first = f.n - 9;
    for (int i = 1; i < 10; i++) {
        ck_assert(fabs(f.start[first + i - 1] - tr.start[i]) < 1e-9);
        ck_assert(fabs(f.bytes[first + i - 1] - 8e6) < 1);
    }
    ck_assert(fabs(hm_pd_w_iter(&pd) - (10 + 8 * 0.2)) < 0.1 * (10 + 8 * 0.2));
    free(tr.c);
}
END_TEST

/* Hints are the estimates before a phase is seen, and set the first gap. */
START_TEST(test_hints)
{
    hm_pd_params_t p;
    hm_pd_t pd;
    hm_pd_params_default(&p);
    p.hint_w_iter = 600;
    p.hint_volume = 5e10;
    hm_pd_init(&pd, &p);
    ck_assert(hm_pd_w_iter(&pd) == 600 && hm_pd_volume(&pd) == 5e10);
    ck_assert(hm_pd_gap(&pd) == p.gap_max);
    p.hint_w_iter = 0.4;
    hm_pd_init(&pd, &p);
    ck_assert(hm_pd_gap(&pd) == p.gap_min);
    hm_pd_init(&pd, NULL);
    ck_assert(hm_pd_w_iter(&pd) == 0 && hm_pd_volume(&pd) == 0);
    ck_assert(hm_pd_gap(&pd) == 0.25);
}
END_TEST

/* The ranks of an MPI program see the same phase: recorded in one history, it is
 * one phase with the bytes of all; the next phase is a new one. */
START_TEST(test_merge_processes)
{
    hm_pd_hist_t h = { .magic = HM_PD_MAGIC, .size = sizeof(h) };
    hm_pd_phase_t a = { 10, 12, 100, 0 }, b = { 10.01, 12.2, 50, 0 }, c = { 9.9, 11, 7, 0 };
    hm_pd_phase_t d = { 20, 21, 100, 0 }, e = { 20.05, 21, 100, 0 };
    hm_pd_record(&h, &a, 0.25);
    hm_pd_record(&h, &b, 0.25);
    hm_pd_record(&h, &c, 0.25);
    ck_assert(h.nphases == 1 && h.last.bytes == 157 && h.last.start == 9.9 && h.last.end == 12.2);
    hm_pd_record(&h, &d, 0.25);
    hm_pd_record(&h, &e, 0.25);
    ck_assert(h.nphases == 2 && h.ninterval == 1 && fabs(h.interval[0] - 10.1) < 1e-9);
    ck_assert(fabs(h.idle[0] - 7.8) < 1e-9 && h.volume[1] == 200);
    ck_assert(hm_pd_hist_valid(&h));
    h.interval[3] = NAN;
    ck_assert(!hm_pd_hist_valid(&h));
    h.interval[3] = 0;
    h.size = 7;
    ck_assert(!hm_pd_hist_valid(&h));
}
END_TEST

/* A poll inside a call, or less than the gap after it, never closes the phase;
 * one at the gap does. */
START_TEST(test_poll)
{
    hm_pd_t pd;
    hm_pd_phase_t ph;
    hm_pd_init(&pd, NULL);
    ck_assert_int_eq(hm_pd_poll(&pd, 0, 0, &ph), 0);
    ck_assert_int_eq(hm_pd_start(&pd, 1, 0, &ph), HM_PD_BEGIN);
    ck_assert_int_eq(hm_pd_poll(&pd, 100, 1, &ph), 0); /* in flight */
    hm_pd_done(&pd, 100, 5);
    ck_assert_int_eq(hm_pd_poll(&pd, 100.2, 0, &ph), 0);
    ck_assert_int_eq(hm_pd_start(&pd, 100.2, 0, &ph), 0); /* same phase */
    hm_pd_done(&pd, 100.3, 5);
    ck_assert_int_eq(hm_pd_poll(&pd, 100.55, 0, &ph), 1);
    ck_assert(ph.start == 1 && ph.end == 100.3 && ph.bytes == 10);
    /* a call after the gap with no poll in between ends the old phase itself */
    ck_assert_int_eq(hm_pd_start(&pd, 200, 0, &ph), HM_PD_BEGIN);
    hm_pd_done(&pd, 201, 1);
    ck_assert_int_eq(hm_pd_start(&pd, 300, 0, &ph), HM_PD_BEGIN | HM_PD_ENDED);
    ck_assert(ph.start == 200 && ph.end == 201);
    ck_assert(fabs(hm_pd_w_iter(&pd) - 199) < 1e-9);
}
END_TEST

/* A phase ended too soon (a rank waiting for another node): the next call
 * continues it when its idle time is under four gaps before anything is learned,
 * then under half the median idle time between phases; rejoined, it starts at the
 * last phase's start, its idle time is a pause inside it (the gap grows to cover
 * it), and recorded it merges into that phase with its new bytes only. */
START_TEST(test_rejoin)
{
    hm_pd_t pd;
    hm_pd_phase_t ph;
    hm_pd_init(&pd, NULL);
    ck_assert(hm_pd_rejoin_idle(&pd) == 1.0); /* 4 x 0.25 */
    ck_assert_int_eq(hm_pd_start(&pd, 10, 0, &ph), HM_PD_BEGIN);
    ck_assert(!hm_pd_may_rejoin(&pd)); /* nothing closed yet */
    hm_pd_done(&pd, 10.5, 100);
    ck_assert_int_eq(hm_pd_poll(&pd, 10.8, 0, &ph), 1);
    ck_assert_int_eq(hm_pd_start(&pd, 11.6, 0, &ph), HM_PD_BEGIN); /* idle 1.1 */
    ck_assert(!hm_pd_may_rejoin(&pd));
    hm_pd_init(&pd, NULL);
    hm_pd_start(&pd, 10, 0, &ph);
    hm_pd_done(&pd, 10.5, 100);
    ck_assert_int_eq(hm_pd_poll(&pd, 10.8, 0, &ph), 1);
    ck_assert_int_eq(hm_pd_start(&pd, 11.2, 0, &ph), HM_PD_BEGIN); /* idle 0.7 */
    ck_assert(hm_pd_may_rejoin(&pd));
    hm_pd_rejoin(&pd);
    hm_pd_done(&pd, 11.5, 40);
    ck_assert_int_eq(hm_pd_poll(&pd, 12, 0, &ph), 1);
    ck_assert(ph.start == 10 && ph.end == 11.5 && ph.bytes == 40);
    ck_assert(pd.h.nphases == 1 && pd.h.last.bytes == 140 && pd.h.nidle == 0);
    ck_assert(pd.h.volume[0] == 140 && pd.h.pause >= 0.7 - 1e-9);
    ck_assert(hm_pd_gap(&pd) == 1.0); /* 2 x 0.7, within gap_max */
    /* phases 10 s apart, 8 s idle: half of it qualifies, no more */
    for (int i = 1; i <= 3; i++) {
        hm_pd_start(&pd, 10 + 10 * i, 0, &ph);
        hm_pd_done(&pd, 11.5 + 10 * i, 140);
        ck_assert_int_eq(hm_pd_poll(&pd, 13 + 10 * i, 0, &ph), 1);
    }
    ck_assert(fabs(hm_pd_rejoin_idle(&pd) - 4.25) < 1e-9);
    hm_pd_start(&pd, 41.5 + 4.5, 0, &ph);
    ck_assert(!hm_pd_may_rejoin(&pd));
}
END_TEST

/* A sync of the phase's data (fsync at a checkpoint's end) ends the phase after
 * sync_gap (0.1 s) rather than the gap the pauses inside phases have grown to; a sync
 * before half the learned volume, or more bytes after the sync, keep the gap. */
START_TEST(test_sync_ends_the_phase)
{
    hm_pd_params_t p;
    hm_pd_t pd;
    hm_pd_phase_t ph;
    hm_pd_params_default(&p);
    p.gap_init = 1.0;
    hm_pd_init(&pd, &p);
    /* phases of 4 calls with 0.6 s pauses (a rank waiting inside a collective
     * call), 20 s apart: the gap grows to gap_max */
    for (int i = 0; i < 4; i++) {
        double t = 20.0 * i;
        for (int k = 0; k < 4; k++) {
            hm_pd_start(&pd, t + 0.7 * k, 0, &ph);
            hm_pd_done(&pd, t + 0.7 * k + 0.1, 100);
        }
        ck_assert_int_eq(hm_pd_poll(&pd, t + 5, 0, &ph), 1);
    }
    ck_assert(pd.gap == 1.0 && hm_pd_volume(&pd) == 400);
    /* this phase: 400 bytes, then its fsync ends at 82.5 */
    for (int k = 0; k < 4; k++) {
        hm_pd_start(&pd, 80 + 0.7 * k, 0, &ph);
        hm_pd_done(&pd, 80 + 0.7 * k + 0.1, 100);
    }
    hm_pd_start(&pd, 82.3, 0, &ph);
    hm_pd_sync(&pd, 82.5);
    hm_pd_done(&pd, 82.5, 0);
    ck_assert(pd.gap == 0.1);
    ck_assert_int_eq(hm_pd_poll(&pd, 82.55, 0, &ph), 0);
    ck_assert_int_eq(hm_pd_poll(&pd, 82.61, 0, &ph), 1);
    ck_assert(ph.start == 80 && ph.end == 82.5 && ph.bytes == 400);
    ck_assert(pd.gap == 1.0 && pd.h.nphases == 5);
    /* a sync at a quarter of the volume: the phase goes on through a pause */
    hm_pd_start(&pd, 100, 0, &ph);
    hm_pd_done(&pd, 100.1, 100);
    hm_pd_sync(&pd, 100.2);
    ck_assert(pd.gap == 1.0);
    ck_assert_int_eq(hm_pd_poll(&pd, 100.6, 0, &ph), 0);
    ck_assert_int_eq(hm_pd_start(&pd, 100.8, 0, &ph), 0); /* the same phase */
    hm_pd_done(&pd, 100.9, 300);
    /* synced at the end, then more bytes: the gap is back */
    hm_pd_sync(&pd, 101.0);
    ck_assert(pd.gap == 0.1);
    ck_assert_int_eq(hm_pd_start(&pd, 101.05, 0, &ph), 0);
    hm_pd_done(&pd, 101.1, 100);
    ck_assert(pd.gap == 1.0);
    ck_assert_int_eq(hm_pd_poll(&pd, 101.5, 0, &ph), 0);
    ck_assert_int_eq(hm_pd_poll(&pd, 102.2, 0, &ph), 1);
    ck_assert(ph.start == 100 && ph.bytes == 500);
    /* a new history (another process's phase) keeps the synced gap */
    hm_pd_start(&pd, 120, 0, &ph);
    hm_pd_done(&pd, 120.1, 400);
    hm_pd_sync(&pd, 120.2);
    hm_pd_hist_t h = pd.h;
    hm_pd_set_hist(&pd, &h);
    ck_assert(pd.gap == 0.1);
    ck_assert_int_eq(hm_pd_poll(&pd, 120.31, 0, &ph), 1);
    ck_assert(!pd.synced);
    hm_pd_sync(&pd, 130); /* no phase open */
    ck_assert(!pd.synced);
    /* nothing learned yet: the first phase keeps its gap */
    hm_pd_init(&pd, NULL);
    hm_pd_start(&pd, 1, 0, &ph);
    hm_pd_done(&pd, 1.2, 10);
    hm_pd_sync(&pd, 1.3);
    ck_assert(pd.gap == 0.25 && !pd.synced);
}
END_TEST

/* The recorded trace: sh -c 'for i in 1..8; do sleep 2; dd bs=1M count=64 of=F;
 * done' under strace (the writes to F).  Every dd is found as one phase, w_iter
 * within 10% of the measured interval. */
START_TEST(test_recorded_dd_loop)
{
    trace_t tr = { 0 };
    hm_pd_t pd;
    found_t f;
    double prev = -1;
    for (size_t i = 0; i < TU_COUNT(trace_dd_loop); i++) {
        const double *r = trace_dd_loop[i];
        if (prev < 0 || r[0] - prev > 1.0) {
            tr.start[tr.nph] = r[0];
            tr.bytes[tr.nph++] = 0;
        }
        tr.bytes[tr.nph - 1] += r[2];
        add_call(&tr, r[0], r[1], r[2]);
        prev = r[1];
    }
    ck_assert_int_ge(tr.nph, 6);
    double wtrue = (tr.start[tr.nph - 1] - tr.start[0]) / (tr.nph - 1);
    hm_pd_init(&pd, NULL);
    replay(&tr, &pd, &f);
    check_starts(&tr, &f, wtrue);
    ck_assert(fabs(f.w_at[3] - wtrue) <= 0.1 * wtrue);
    ck_assert(hm_pd_periodic(&pd));
    free(tr.c);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "traces", .timeout = 60,
          .tests = { test_aperiodic, test_single_final_write, test_pauses_inside_a_phase,
                     test_recorded_dd_loop, NULL },
          .loops = { { test_periodic, TU_COUNT(periodic_rows) } } },
        { "rules", .tests = { test_hints, test_merge_processes, test_poll, test_rejoin,
                              test_sync_ends_the_phase, NULL } },
    };
    return tu_main("interpose_detect", tcases, TU_COUNT(tcases));
}
