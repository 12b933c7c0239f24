/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_sfq.c — unit tests of SFQ(D) / SFQ(D)+ (libhsched/hs_sfq.h):
 *   - hand-checked dispatch orders on small traces (orders worked out in comments),
 *   - the depth in cost units, backfill, its window and its starvation guard,
 *   - flows added / removed mid-trace, weight changes, cancel, errors,
 *   - a brute-force reference (tags computed eagerly on arrival, O(n) scans) replayed
 *     against the module on random traces: same dispatch order, same tags,
 *   - proportional sharing on a simulated device (weights 1:2:4:8:16:32).
 *
 * Tags, as in Jin, Chase, Kaur (SIGMETRICS 2004): S = max(v, F_prev(f)),
 * F = S + cost / weight.  In the traces, costs are in units of U = 1 MiB.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhsched/hs_sfq.h"
#include "testutil.h"

#define U (1024ULL * 1024ULL)

enum { FA = 1, FB = 2, FC = 3 };

static hs_sfq_t *mk(hs_sfq_mode_t mode, unsigned int depth, uint64_t slot, unsigned int bf_limit,
                    double window, hs_sfq_vtime_t vt)
{
    hs_sfq_params_t prm;
    hs_sfq_t *q;

    ck_assert_int_eq(hs_sfq_params_init(&prm, mode), 0);
    prm.depth = depth;
    prm.slot_bytes = slot;
    prm.bf_limit = bf_limit;
    prm.bf_window = window;
    prm.vtime = vt;
    q = hs_sfq_create(&prm);
    ck_assert_ptr_nonnull(q);
    return q;
}

static void enq(hs_sfq_t *q, uint64_t flow, uint64_t id, uint64_t cost)
{
    ck_assert_msg(hs_sfq_enqueue(q, flow, id, cost) == 0, "enqueue %ju: %s", (uintmax_t)id,
                  strerror(errno));
}

static uint64_t disp(hs_sfq_t *q)
{
    hs_sfq_req_t r;
    int rc = hs_sfq_dispatch(q, &r);
    ck_assert_int_ge(rc, 0);
    return rc == 1 ? r.id : 0;
}

static void expect(hs_sfq_t *q, uint64_t id)
{
    hs_sfq_req_t r;
    int rc = hs_sfq_dispatch(q, &r);
    if (id == 0)
        ck_assert_msg(rc == 0, "expected nothing, got %ju", rc == 1 ? (uintmax_t)r.id : 0);
    else
        ck_assert_msg(rc == 1 && r.id == id, "expected %ju, got %s%ju", (uintmax_t)id,
                      rc == 1 ? "" : "none ", rc == 1 ? (uintmax_t)r.id : 0);
}

static void done(hs_sfq_t *q, uint64_t id)
{
    ck_assert_msg(hs_sfq_complete(q, id) == 0, "complete %ju: %s", (uintmax_t)id, strerror(errno));
}

/* Run with depth 1 semantics: dispatch, complete, repeat; write the order. */
static void drain_serial(hs_sfq_t *q, uint64_t *order, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        order[i] = disp(q);
        ck_assert_uint_ne(order[i], 0);
        ck_assert_uint_eq(disp(q), 0); /* depth 1 is used up */
        done(q, order[i]);
    }
}

/* ids: A1..A4 = 11..14, B1..B4 = 21..24 */
#define A(i) (10 + (i))
#define B(i) (20 + (i))
#define C(i) (30 + (i))

/* Flows A and B with weights wa and wb; A queues A1..A<na> of cost ca each, then B
 * queues B1..B<nb> of cost cb each. */
static void two_flows(hs_sfq_t *q, double wa, int na, uint64_t ca, double wb, int nb, uint64_t cb)
{
    int i;

    ck_assert_int_eq(hs_sfq_flow_add(q, FA, wa), 0);
    ck_assert_int_eq(hs_sfq_flow_add(q, FB, wb), 0);
    for (i = 1; i <= na; i++)
        enq(q, FA, A(i), ca);
    for (i = 1; i <= nb; i++)
        enq(q, FB, B(i), cb);
}

/* The dispatch order 'got' is 'want' (n ids). */
static void same_order(const uint64_t *got, const uint64_t *want, int n)
{
    for (int i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "pos %d: got %ju want %ju", i, (uintmax_t)got[i],
                      (uintmax_t)want[i]);
}

/*
 * SFQ(D), D = 1, weights A:B = 1:2, every cost 1 U, all queued at v = 0, A first.
 *   A: S = 0, 1, 2, 3        (F = S + 1)
 *   B: S = 0, .5, 1, 1.5     (F = S + .5)
 * Increasing (S, arrival): A1(0,#1) B1(0,#5) B2(.5) A2(1,#2) B3(1,#7) B4(1.5) A3(2) A4(3).
 */
START_TEST(test_sfqd_d1)
{
    hs_sfq_t *q = mk(HS_SFQ_D, 1, 0, 0, 1.0, HS_SFQ_VT_LAST_START);
    const uint64_t want[8] = { A(1), B(1), B(2), A(2), B(3), B(4), A(3), A(4) };
    uint64_t got[8];

    two_flows(q, 1.0, 4, U, 2.0, 4, U);
    drain_serial(q, got, 8);
    ck_assert_uint_eq(disp(q), 0);
    same_order(got, want, 8);
    hs_sfq_destroy(q);
}
END_TEST

/*
 * SFQ(D) with D = 2 vs D = 1 on the same arrivals: A (w=1) queues A1..A4, the
 * scheduler dispatches what it may, then B (w=2) queues B1..B4; completions in
 * dispatch order.
 *
 * D = 2: A1 (S0) and A2 (S1) go at once, v = 1.  B arrives: B1 S = max(1, 0) = 1,
 *   B2 1.5, B3 2, B4 2.5; A3 S = 2, A4 3.
 *   done A1 -> B1 (1 < 2);  done A2 -> B2 (1.5);  done B1 -> A3 (2,#3 before B3 2,#7);
 *   done B2 -> B3 (2);  done A3 -> B4 (2.5);  done B3 -> A4 (3).
 *   Order A1 A2 B1 B2 A3 B3 B4 A4: the device ran ahead, B's tags start at v = 1.
 * D = 1: A1 goes, v = 0.  B1 S = 0, B2 .5, B3 1, B4 1.5; A2 S = 1.
 *   Order A1 B1 B2 A2 (1,#2) B3 (1,#7) B4 A3 A4.
 * Min-SFQ(D) with D = 2: v = min S in the system = 0 while A1 is outstanding, so
 *   B1 S = 0, B2 .5, B3 1, B4 1.5 and A3 (S2) waits: A1 A2 B1 B2 B3 B4 A3 A4.
 */
static void run_d2_trace(unsigned int depth, hs_sfq_vtime_t vt, const uint64_t *want)
{
    hs_sfq_t *q = mk(HS_SFQ_D, depth, 0, 0, 1.0, vt);
    uint64_t out[8], fifo[8];
    size_t nout = 0, head = 0, tail = 0;
    uint64_t id;
    int i;

    ck_assert_int_eq(hs_sfq_flow_add(q, FA, 1.0), 0);
    ck_assert_int_eq(hs_sfq_flow_add(q, FB, 2.0), 0);
    for (i = 1; i <= 4; i++)
        enq(q, FA, A(i), U);
    while ((id = disp(q)))
        out[nout++] = fifo[tail++] = id;
    for (i = 1; i <= 4; i++)
        enq(q, FB, B(i), U);
    while (head < tail) {
        done(q, fifo[head++]);
        while ((id = disp(q)))
            out[nout++] = fifo[tail++] = id;
    }
    ck_assert_uint_eq(nout, 8);
    for (i = 0; i < 8; i++)
        ck_assert_msg(out[i] == want[i], "D=%u vt=%d pos %d: got %ju want %ju", depth, (int)vt, i,
                      (uintmax_t)out[i], (uintmax_t)want[i]);
    hs_sfq_destroy(q);
}

START_TEST(test_sfqd_d2)
{
    const uint64_t d2[8] = { A(1), A(2), B(1), B(2), A(3), B(3), B(4), A(4) };
    const uint64_t d1[8] = { A(1), B(1), B(2), A(2), B(3), B(4), A(3), A(4) };
    const uint64_t min2[8] = { A(1), A(2), B(1), B(2), B(3), B(4), A(3), A(4) };

    run_d2_trace(2, HS_SFQ_VT_LAST_START, d2);
    run_d2_trace(1, HS_SFQ_VT_LAST_START, d1);
    run_d2_trace(2, HS_SFQ_VT_MIN_START, min2);
}
END_TEST

/*
 * Depth in cost units.  A (w=3) issues 3 U requests, B (w=1) 1 U requests; both
 * advance their tags by 1 per request: A 0,1,2 and B 0,1,2.
 * SFQ(D), D = 4 requests: A1 B1 A2 B2 all go: 8 U outstanding, two of them large.
 * SFQ(D)+, D = 4 slots of 1 U: A1 takes 3 slots, B1 the 4th: 4 U outstanding, A2 waits.
 */
START_TEST(test_plus_depth_units)
{
    hs_sfq_t *q;
    hs_sfq_stats_t st;
    int pass;

    for (pass = 0; pass < 2; pass++) {
        q = mk(pass ? HS_SFQ_D_PLUS : HS_SFQ_D, 4, U, 0, 1.0, HS_SFQ_VT_LAST_START);
        two_flows(q, 3.0, 3, 3 * U, 1.0, 3, U);
        expect(q, A(1));
        expect(q, B(1));
        if (!pass) {
            expect(q, A(2));
            expect(q, B(2));
        }
        expect(q, 0);
        ck_assert_int_eq(hs_sfq_stats(q, &st), 0);
        ck_assert_uint_eq(st.used, 4);
        ck_assert_uint_eq(st.outstanding, pass ? 2 : 4);
        if (pass) {
            ck_assert_uint_eq(hs_sfq_slots(q, 3 * U), 3);
            ck_assert_uint_eq(hs_sfq_slots(q, 3 * U + 1), 4);
            ck_assert_uint_eq(hs_sfq_slots(q, 1), 1);
            /* B1 done: 1 slot free, A2 (S1,#2) needs 3: no backfill (bf_limit 0) */
            done(q, B(1));
            expect(q, 0);
            done(q, A(1));
            expect(q, A(2)); /* S1,#2 before B2 S1,#5 */
            expect(q, B(2));
            expect(q, 0);
        }
        hs_sfq_destroy(q);
    }
}
END_TEST

/*
 * Backfill and its starvation guard.  SFQ(D)+, D = 4 slots of 1 U, bf_limit = 2,
 * window 1.  A (w=1) issues 4 U requests (S 0, 4, 8), B (w=1) 1 U requests (S 0..7).
 *   A1 (S0,#1) takes the 4 slots.           done A1 -> B1 B2 B3 B4 (S 0..3), v = 3
 *   head A2 (S4,#2; B5 has S4,#8) needs 4, none free.
 *   done B1 -> 1 free: B5 (S4 <= 4 + 4) backfilled, A2 bypassed once
 *   done B2 -> B6 (S5) backfilled, A2 bypassed twice = bf_limit: A2 now reserved
 *   done B3, B4, B5 -> nothing (1, 2, 3 free; A2 reserved)
 *   done B6 -> A2 (4 slots).               done A2 -> B7 (6) B8 (7), then A3 (S8)
 *   needs 4 with 2 free and no other flow queued: nothing; done B7, B8 -> A3.
 */
START_TEST(test_plus_backfill_guard)
{
    hs_sfq_t *q = mk(HS_SFQ_D_PLUS, 4, U, 2, 1.0, HS_SFQ_VT_LAST_START);
    hs_sfq_stats_t st;
    hs_sfq_req_t r;
    int i;

    two_flows(q, 1.0, 3, 4 * U, 1.0, 8, U);
    expect(q, A(1));
    expect(q, 0);
    done(q, A(1));
    for (i = 1; i <= 4; i++)
        expect(q, B(i));
    expect(q, 0);
    done(q, B(1));
    ck_assert_int_eq(hs_sfq_dispatch(q, &r), 1);
    ck_assert_uint_eq(r.id, B(5));
    ck_assert(r.backfilled);
    ck_assert_double_eq(r.start, 4.0 * U);
    expect(q, 0);
    done(q, B(2));
    expect(q, B(6));
    done(q, B(3));
    expect(q, 0); /* A2 is reserved */
    done(q, B(4));
    expect(q, 0);
    done(q, B(5));
    expect(q, 0);
    done(q, B(6));
    ck_assert_int_eq(hs_sfq_dispatch(q, &r), 1);
    ck_assert_uint_eq(r.id, A(2));
    ck_assert(!r.backfilled);
    ck_assert_uint_eq(r.slots, 4);
    expect(q, 0);
    done(q, A(2));
    expect(q, B(7));
    expect(q, B(8));
    expect(q, 0);
    done(q, B(7));
    expect(q, 0);
    done(q, B(8));
    expect(q, A(3));
    done(q, A(3));
    ck_assert_int_eq(hs_sfq_stats(q, &st), 0);
    ck_assert_uint_eq(st.backfills, 2);
    ck_assert_uint_ge(st.reserved_waits, 3);
    ck_assert_uint_eq(st.outstanding, 0);
    ck_assert_uint_eq(st.queued, 0);
    ck_assert_uint_eq(st.used, 0);
    hs_sfq_destroy(q);
}
END_TEST

/*
 * The backfill window.  Same flows, bf_limit = 100 (no practical guard), window 1:
 * with head A2 (S4, F8) only B heads with S <= 8 may backfill: B5..B9 (S 4..8),
 * not B10 (S9).  With window 0 (none) B keeps backfilling as long as the guard allows.
 */
START_TEST(test_plus_backfill_window)
{
    hs_sfq_t *q;
    int i, pass;

    for (pass = 0; pass < 2; pass++) {
        q = mk(HS_SFQ_D_PLUS, 4, U, 100, pass ? 0.0 : 1.0, HS_SFQ_VT_LAST_START);
        ck_assert_int_eq(hs_sfq_flow_add(q, FA, 1.0), 0);
        ck_assert_int_eq(hs_sfq_flow_add(q, FB, 1.0), 0);
        enq(q, FA, A(1), 4 * U);
        enq(q, FA, A(2), 4 * U);
        for (i = 1; i <= 12; i++)
            enq(q, FB, 100 + i, U);
        expect(q, A(1));
        done(q, A(1));
        for (i = 1; i <= 4; i++)
            expect(q, 100 + i);
        for (i = 1; i <= 5; i++) { /* B5..B9 backfill */
            done(q, 100 + i);
            expect(q, 100 + 4 + i);
        }
        done(q, 106);
        if (!pass) {
            expect(q, 0); /* B10 S9 > S(A2) + 4 = 8 */
            for (i = 7; i <= 9; i++)
                done(q, 100 + i);
            expect(q, A(2));
        } else {
            expect(q, 110); /* no window */
        }
        hs_sfq_destroy(q);
    }
}
END_TEST

/*
 * A request larger than D slots takes D (the whole depth) and goes alone once
 * nothing is outstanding.  D = 4 slots of 1 U, no backfill.
 *   B1 (S0) goes; A1 (10 U, S0 = v) arrives, needs min(4, 10) = 4 > 3 free: waits;
 *   done B1 -> A1 with 4 slots; B2 (S1) waits behind a full depth.
 */
START_TEST(test_plus_larger_than_depth)
{
    hs_sfq_t *q = mk(HS_SFQ_D_PLUS, 4, U, 0, 1.0, HS_SFQ_VT_LAST_START);
    hs_sfq_req_t r;

    ck_assert_int_eq(hs_sfq_flow_add(q, FA, 1.0), 0);
    ck_assert_int_eq(hs_sfq_flow_add(q, FB, 1.0), 0);
    enq(q, FB, B(1), U);
    expect(q, B(1));
    enq(q, FA, A(1), 10 * U);
    enq(q, FB, B(2), U);
    ck_assert_uint_eq(hs_sfq_slots(q, 10 * U), 4);
    expect(q, 0);
    done(q, B(1));
    ck_assert_int_eq(hs_sfq_dispatch(q, &r), 1);
    ck_assert_uint_eq(r.id, A(1));
    ck_assert_uint_eq(r.slots, 4);
    ck_assert_double_eq(r.finish, 10.0 * U);
    expect(q, 0);
    done(q, A(1));
    expect(q, B(2));
    hs_sfq_destroy(q);
}
END_TEST

/* Auto slot size: the smallest cost enqueued so far ("each slot represents the cost
 * of the smallest I/Os", vPFS+). */
START_TEST(test_plus_auto_slot)
{
    hs_sfq_t *q = mk(HS_SFQ_D_PLUS, 8, 0, 8, 1.0, HS_SFQ_VT_LAST_START);
    hs_sfq_stats_t st;

    ck_assert_int_eq(hs_sfq_flow_add(q, FA, 1.0), 0);
    enq(q, FA, 1, 4 * U);
    ck_assert_uint_eq(hs_sfq_slots(q, 4 * U), 1);
    enq(q, FA, 2, U);
    ck_assert_uint_eq(hs_sfq_slots(q, 4 * U), 4);
    ck_assert_uint_eq(hs_sfq_slots(q, 40 * U), 8);
    ck_assert_int_eq(hs_sfq_stats(q, &st), 0);
    ck_assert_uint_eq(st.slot_bytes, U);
    hs_sfq_destroy(q);
}
END_TEST

static uint64_t dropped[16];
static size_t ndropped;

static void drop_cb(uint64_t id, uint64_t cost, void *arg)
{
    ck_assert_ptr_eq(arg, &ndropped);
    ck_assert_uint_eq(cost, U);
    dropped[ndropped++] = id;
}

/*
 * Flows removed and added mid-trace.  SFQ(D), D = 1, A and B weight 1, cost 1 U.
 *   A: S 0,1,2; B: S 0,1,2.   A1 (0,#1) goes, done; B1 (0,#4) goes (outstanding).
 *   B removed: B2, B3 dropped; B1 stays outstanding and completes normally.
 *   A2 (S1) goes, v = 1.  C (w=1) added: C1 S = max(1, 0) = 1, C2 2, C3 3.
 *   done A2: heads A3 (S2,#3), C1 (S1) -> C1; then A3 (2,#3) before C2 (2,#8); C3.
 *   B added again as a new flow (F_prev = 0): B4 S = max(v, 0) = v.
 */
START_TEST(test_flows_mid_trace)
{
    hs_sfq_t *q = mk(HS_SFQ_D, 1, 0, 0, 1.0, HS_SFQ_VT_LAST_START);
    hs_sfq_flow_stats_t fs;
    hs_sfq_stats_t st;
    hs_sfq_req_t r;
    int i;

    two_flows(q, 1.0, 3, U, 1.0, 3, U);
    expect(q, A(1));
    done(q, A(1));
    expect(q, B(1));
    ndropped = 0;
    ck_assert_int_eq(hs_sfq_flow_remove(q, FB, drop_cb, &ndropped), 0);
    ck_assert_uint_eq(ndropped, 2);
    ck_assert_uint_eq(dropped[0], B(2));
    ck_assert_uint_eq(dropped[1], B(3));
    ck_assert_int_eq(hs_sfq_flow_stats(q, FB, &fs), -1);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_int_eq(hs_sfq_enqueue(q, FB, B(2), U), -1);
    ck_assert_int_eq(errno, ENOENT);
    expect(q, 0); /* B1 still holds the depth */
    done(q, B(1));
    expect(q, A(2));
    ck_assert_int_eq(hs_sfq_flow_add(q, FC, 1.0), 0);
    for (i = 1; i <= 3; i++)
        enq(q, FC, C(i), U);
    done(q, A(2));
    ck_assert_int_eq(hs_sfq_dispatch(q, &r), 1);
    ck_assert_uint_eq(r.id, C(1));
    ck_assert_double_eq(r.start, 1.0 * U);
    done(q, C(1));
    expect(q, A(3));
    done(q, A(3));
    expect(q, C(2));
    done(q, C(2));
    ck_assert_int_eq(hs_sfq_flow_add(q, FB, 1.0), 0);
    enq(q, FB, B(4), U);
    ck_assert_int_eq(hs_sfq_stats(q, &st), 0);
    /* v = S(C2) = 2; B4 S = 2 < S(C3) = 3 */
    ck_assert_double_eq(st.vtime, 2.0 * U);
    expect(q, B(4));
    done(q, B(4));
    expect(q, C(3));
    done(q, C(3));
    ck_assert_int_eq(hs_sfq_flow_stats(q, FC, &fs), 0);
    ck_assert_uint_eq(fs.completed_bytes, 3 * U);
    ck_assert_uint_eq(fs.queued, 0);
    ck_assert_int_eq(hs_sfq_flow_stats(q, FA, &fs), 0);
    ck_assert_uint_eq(fs.dispatched, 3);
    /* removing a flow with an outstanding request, then destroying: no leak */
    enq(q, FA, 99, U);
    expect(q, 99);
    ck_assert_int_eq(hs_sfq_flow_remove(q, FA, NULL, NULL), 0);
    hs_sfq_destroy(q);
}
END_TEST

/*
 * Weight change.  SFQ(D), D = 1, A and B weight 1, cost 1 U, six each.
 *   A1 (0,#1), B1 (0,#7) go; A2 was tagged S1 when A1 went.
 *   A's weight -> 4: A2 keeps S1, F = 1.25; A3 1.25, A4 1.5, A5 1.75, A6 2.
 *   B2 S1, B3 2, ...     Order: A2 (1,#2) B2 (1,#8) A3 A4 A5 A6 (2,#6) B3 (2,#9) B4 B5 B6.
 */
START_TEST(test_weight_change)
{
    hs_sfq_t *q = mk(HS_SFQ_D, 1, 0, 0, 1.0, HS_SFQ_VT_LAST_START);
    const uint64_t want[12] = { A(1), B(1), A(2), B(2), A(3), A(4),
                                A(5), A(6), B(3), B(4), B(5), B(6) };
    uint64_t got[12];
    hs_sfq_flow_stats_t fs;

    two_flows(q, 1.0, 6, U, 1.0, 6, U);
    drain_serial(q, got, 2);
    ck_assert_int_eq(hs_sfq_flow_set_weight(q, FA, 4.0), 0);
    ck_assert_int_eq(hs_sfq_flow_stats(q, FA, &fs), 0);
    ck_assert_double_eq(fs.weight, 4.0);
    drain_serial(q, got + 2, 10);
    ck_assert_uint_eq(disp(q), 0);
    same_order(got, want, 12);
    ck_assert_int_eq(hs_sfq_flow_set_weight(q, 77, 1.0), -1);
    ck_assert_int_eq(errno, ENOENT);
    hs_sfq_destroy(q);
}
END_TEST

/* Cancel: a queued head leaves, the flow's next request is tagged from F_prev. */
START_TEST(test_cancel)
{
    hs_sfq_t *q = mk(HS_SFQ_D, 1, 0, 0, 1.0, HS_SFQ_VT_LAST_START);

    ck_assert_int_eq(hs_sfq_flow_add(q, FA, 1.0), 0);
    ck_assert_int_eq(hs_sfq_flow_add(q, FB, 1.0), 0);
    enq(q, FA, A(1), U);
    enq(q, FA, A(2), U);
    enq(q, FA, A(3), U);
    enq(q, FB, B(1), U);
    expect(q, A(1));
    ck_assert_int_eq(hs_sfq_cancel(q, A(1)), -1);
    ck_assert_int_eq(errno, EBUSY);
    ck_assert_int_eq(hs_sfq_cancel(q, A(2)), 0); /* the head (S1) */
    ck_assert_int_eq(hs_sfq_cancel(q, A(2)), -1);
    ck_assert_int_eq(errno, ENOENT);
    done(q, A(1));
    expect(q, B(1)); /* S0 */
    done(q, B(1));
    expect(q, A(3)); /* S = F_prev = 1 */
    done(q, A(3));
    expect(q, 0);
    hs_sfq_destroy(q);
}
END_TEST

START_TEST(test_errors)
{
    hs_sfq_params_t prm;
    hs_sfq_t *q;

    ck_assert_int_eq(hs_sfq_params_init(NULL, HS_SFQ_D), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_sfq_params_init(&prm, (hs_sfq_mode_t)7), -1);
    ck_assert_int_eq(hs_sfq_params_init(&prm, HS_SFQ_D_PLUS), 0);
    ck_assert_uint_eq(prm.depth, 8);
    ck_assert_uint_eq(prm.bf_limit, 8);
    prm.depth = 0;
    errno = 0;
    ck_assert_ptr_null(hs_sfq_create(&prm));
    ck_assert_int_eq(errno, EINVAL);
    prm.depth = 4;
    prm.bf_window = -1;
    ck_assert_ptr_null(hs_sfq_create(&prm));
    prm.bf_window = NAN;
    ck_assert_ptr_null(hs_sfq_create(&prm));
    prm.bf_window = 1;
    prm.bf_scan = 0;
    ck_assert_ptr_null(hs_sfq_create(&prm));
    prm.bf_scan = 4;
    prm.vtime = (hs_sfq_vtime_t)9;
    ck_assert_ptr_null(hs_sfq_create(&prm));
    ck_assert_ptr_null(hs_sfq_create(NULL));
    prm.vtime = HS_SFQ_VT_LAST_START;
    ck_assert_ptr_nonnull(q = hs_sfq_create(&prm));

    ck_assert_int_eq(hs_sfq_flow_add(q, FA, 0.0), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_sfq_flow_add(q, FA, -1.0), -1);
    ck_assert_int_eq(hs_sfq_flow_add(q, FA, INFINITY), -1);
    ck_assert_int_eq(hs_sfq_flow_add(q, FA, NAN), -1);
    ck_assert_int_eq(hs_sfq_flow_add(q, FA, 1.0), 0);
    ck_assert_int_eq(hs_sfq_flow_add(q, FA, 1.0), -1);
    ck_assert_int_eq(errno, EEXIST);
    ck_assert_int_eq(hs_sfq_flow_set_weight(q, FA, 0.0), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_sfq_flow_remove(q, FB, NULL, NULL), -1);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_int_eq(hs_sfq_enqueue(q, FB, 1, U), -1);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_int_eq(hs_sfq_enqueue(q, FA, 1, 0), -1);
    ck_assert_int_eq(errno, EINVAL);
    enq(q, FA, 1, U);
    ck_assert_int_eq(hs_sfq_enqueue(q, FA, 1, U), -1);
    ck_assert_int_eq(errno, EEXIST);
    ck_assert_int_eq(hs_sfq_complete(q, 1), -1); /* only queued */
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_int_eq(hs_sfq_complete(q, 2), -1);
    ck_assert_int_eq(errno, ENOENT);
    expect(q, 1);
    ck_assert_int_eq(hs_sfq_enqueue(q, FA, 1, U), -1); /* outstanding: still in use */
    ck_assert_int_eq(errno, EEXIST);
    done(q, 1);
    ck_assert_int_eq(hs_sfq_complete(q, 1), -1);
    ck_assert_int_eq(errno, ENOENT);
    enq(q, FA, 1, U); /* the id is free again */
    ck_assert_int_eq(hs_sfq_dispatch(NULL, NULL), -1);
    ck_assert_int_eq(hs_sfq_stats(q, NULL), -1);
    ck_assert_uint_eq(hs_sfq_slots(NULL, 1), 0);
    hs_sfq_destroy(q);
    hs_sfq_destroy(NULL);
}
END_TEST

/* ------------------------------------------------------------ reference model */

static unsigned int irand(unsigned int n)
{
    unsigned int k = (unsigned int)(tu_urand() * n);
    return k < n ? k : n - 1;
}

/*
 * Brute-force SFQ(D) / SFQ(D)+ with tags computed eagerly on arrival, as written in
 * Jin et al.: S = max(v(arrival), F of the flow's previous request), F = S + c/w.
 * Dispatch: the queued request with the smallest (S, arrival); backfill among the
 * first request of every other flow, in (S, arrival) order, at most 'scan' of them,
 * within the window, the first that fits.  O(n) per operation.
 */
#define RMAX 4096
#define RFLOWS 6

typedef struct {
    uint64_t id, cost;
    int flow;
    double s, f;
    uint64_t seq;
    int state; /* 0 free, 1 queued, 2 outstanding */
    unsigned int slots, bypassed;
} rreq_t;

typedef struct {
    hs_sfq_params_t prm;
    double v, maxf;
    double w[RFLOWS];
    double flast[RFLOWS]; /* F of the last request enqueued (eager) */
    rreq_t r[RMAX];
    size_t n;
    uint64_t seq, slot;
    unsigned int used;
} ref_t;

static bool rless(const rreq_t *x, const rreq_t *y)
{
    return x->s < y->s || (x->s == y->s && x->seq < y->seq);
}

static unsigned int ref_slots(const ref_t *m, uint64_t cost)
{
    uint64_t k;
    if (m->prm.mode == HS_SFQ_D)
        return 1;
    k = (cost + m->slot - 1) / m->slot;
    if (k < 1)
        k = 1;
    return k > m->prm.depth ? m->prm.depth : (unsigned int)k;
}

static double ref_v(ref_t *m)
{
    size_t i, live = 0;
    double mn = INFINITY;
    for (i = 0; i < m->n; i++) {
        if (m->r[i].state) {
            live++;
            if (m->r[i].s < mn)
                mn = m->r[i].s;
        }
    }
    if (!live)
        m->v = fmax(m->v, m->maxf);
    else if (m->prm.vtime == HS_SFQ_VT_MIN_START)
        m->v = fmax(m->v, mn);
    return m->v;
}

static void ref_enqueue(ref_t *m, int flow, uint64_t id, uint64_t cost)
{
    rreq_t *r = &m->r[m->n++];
    double v = ref_v(m);
    ck_assert(m->n <= RMAX);
    r->id = id;
    r->cost = cost;
    r->flow = flow;
    r->s = fmax(v, m->flast[flow]);
    r->f = r->s + (double)cost / m->w[flow];
    m->flast[flow] = r->f;
    r->seq = ++m->seq;
    r->state = 1;
    r->bypassed = 0;
    if (m->prm.slot_bytes == 0 && (m->slot == 0 || cost < m->slot))
        m->slot = cost;
}

static rreq_t *ref_flow_first(ref_t *m, int flow)
{
    rreq_t *best = NULL;
    size_t i;
    for (i = 0; i < m->n; i++) {
        if (m->r[i].state == 1 && m->r[i].flow == flow && (!best || rless(&m->r[i], best)))
            best = &m->r[i];
    }
    return best;
}

static rreq_t *ref_dispatch(ref_t *m, bool *backfilled)
{
    rreq_t *heads[RFLOWS], *h = NULL, *c = NULL;
    int nh = 0, fl, i, j;
    unsigned int free, examined = 0;
    double limit = INFINITY;

    for (fl = 0; fl < RFLOWS; fl++) {
        rreq_t *x = ref_flow_first(m, fl);
        if (x)
            heads[nh++] = x;
    }
    for (i = 1; i < nh; i++) /* insertion sort by (S, seq) */
        for (j = i; j > 0 && rless(heads[j], heads[j - 1]); j--) {
            rreq_t *t = heads[j];
            heads[j] = heads[j - 1];
            heads[j - 1] = t;
        }
    if (nh == 0 || m->used >= m->prm.depth)
        return NULL;
    free = m->prm.depth - m->used;
    h = heads[0];
    *backfilled = false;
    if (ref_slots(m, h->cost) <= free)
        c = h;
    else if (m->prm.mode == HS_SFQ_D_PLUS && m->prm.bf_limit > 0 && h->bypassed < m->prm.bf_limit) {
        if (m->prm.bf_window > 0)
            limit = h->s + m->prm.bf_window * (h->f - h->s);
        for (i = 1; i < nh && examined < m->prm.bf_scan; i++) {
            examined++;
            if (heads[i]->s > limit + 1e-12 * fabs(limit))
                break;
            if (ref_slots(m, heads[i]->cost) <= free) {
                c = heads[i];
                h->bypassed++;
                *backfilled = true;
                break;
            }
        }
    }
    if (!c)
        return NULL;
    if (m->prm.vtime == HS_SFQ_VT_LAST_START)
        m->v = fmax(m->v, h->s);
    m->maxf = fmax(m->maxf, c->f);
    c->state = 2;
    c->slots = ref_slots(m, c->cost);
    m->used += c->slots;
    return c;
}

static void ref_complete(ref_t *m, rreq_t *r)
{
    m->used -= r->slots;
    r->state = 0;
}

static void run_reference(hs_sfq_mode_t mode, hs_sfq_vtime_t vt, uint64_t slot, unsigned int scan,
                          double window, int steps)
{
    static ref_t m;
    hs_sfq_t *q;
    uint64_t nextid = 1000;
    size_t ndisp = 0;
    int fl, step;

    memset(&m, 0, sizeof(m));
    ck_assert_int_eq(hs_sfq_params_init(&m.prm, mode), 0);
    m.prm.vtime = vt;
    m.prm.depth = 1 + irand(8);
    m.prm.slot_bytes = slot;
    m.prm.bf_limit = irand(4);
    m.prm.bf_scan = scan;
    m.prm.bf_window = window;
    m.slot = slot;
    ck_assert_ptr_nonnull(q = hs_sfq_create(&m.prm));
    for (fl = 0; fl < RFLOWS; fl++) {
        m.w[fl] = 1 + irand(5);
        ck_assert_int_eq(hs_sfq_flow_add(q, (uint64_t)fl, m.w[fl]), 0);
    }
    for (step = 0; step < steps && m.n < RMAX - 8; step++) {
        double u = tu_urand();
        if (u < 0.45) {
            static const uint64_t sizes[5] = { 1, 2, 3, 5, 13 };
            int f = (int)irand(RFLOWS);
            uint64_t cost = sizes[irand(5)] * 65536;
            ref_enqueue(&m, f, nextid, cost);
            enq(q, (uint64_t)f, nextid, cost);
            nextid++;
        } else if (u < 0.75) {
            bool bf;
            rreq_t *x;
            hs_sfq_req_t got;
            while ((x = ref_dispatch(&m, &bf))) {
                ck_assert_int_eq(hs_sfq_dispatch(q, &got), 1);
                ck_assert_msg(got.id == x->id, "step %d: got %ju want %ju", step, (uintmax_t)got.id,
                              (uintmax_t)x->id);
                ck_assert(got.backfilled == bf);
                ck_assert(fabs(got.start - x->s) <= 1e-9 * fmax(1, x->s));
                ck_assert(fabs(got.finish - x->f) <= 1e-9 * fmax(1, x->f));
                ck_assert_uint_eq(got.slots, x->slots);
                ndisp++;
            }
            ck_assert_int_eq(hs_sfq_dispatch(q, &got), 0);
        } else {
            size_t i, cand[RMAX], nc = 0;
            for (i = 0; i < m.n; i++)
                if (m.r[i].state == 2)
                    cand[nc++] = i;
            if (nc) {
                rreq_t *x = &m.r[cand[irand((unsigned int)nc)]];
                done(q, x->id);
                ref_complete(&m, x);
            }
        }
        {
            hs_sfq_stats_t st;
            ck_assert_int_eq(hs_sfq_stats(q, &st), 0);
            ck_assert_uint_eq(st.used, m.used);
            ck_assert_uint_le(st.used, m.prm.depth);
        }
    }
    ck_assert_uint_gt(ndisp, 50);
    hs_sfq_destroy(q);
}

START_TEST(test_reference_random)
{
    int rep;
    for (rep = 0; rep < 40; rep++) {
        run_reference(HS_SFQ_D, HS_SFQ_VT_LAST_START, 65536, 16, 1.0, 1500);
        run_reference(HS_SFQ_D, HS_SFQ_VT_MIN_START, 65536, 16, 1.0, 1500);
        run_reference(HS_SFQ_D_PLUS, HS_SFQ_VT_LAST_START, 65536, 16, 1.0, 1500);
        run_reference(HS_SFQ_D_PLUS, HS_SFQ_VT_LAST_START, 0, 2, 1.0, 1500);
        run_reference(HS_SFQ_D_PLUS, HS_SFQ_VT_MIN_START, 131072, 3, 0.0, 1500);
        run_reference(HS_SFQ_D_PLUS, HS_SFQ_VT_LAST_START, 65536, 1, 2.5, 1500);
    }
}
END_TEST

/* ------------------------------------------------------- simulated device */

/*
 * Six backlogged flows with weights 1:2:4:8:16:32 served by a simulated device of
 * fixed bandwidth BW that shares itself equally among the outstanding requests
 * (processor sharing) — at most D requests (SFQ(D)) or D slots (SFQ(D)+).  Every flow
 * keeps 'backlog' requests queued at all times.  Served bytes are counted as they are
 * transferred; the run stops after 'total' bytes.  Returns the max relative error of
 * served(i)/served(0) against w(i)/w(0), and prints the ratios.
 */
#define NF 6

static double simulate(const char *label, hs_sfq_mode_t mode, hs_sfq_vtime_t vt, unsigned int depth,
                       uint64_t slot, bool mixed, double total)
{
    static const uint64_t sizes[4] = { 64 << 10, 256 << 10, 1 << 20, 4 << 20 };
    const double bw = 1e9; /* bytes/s; the ratios do not depend on it */
    const int backlog = 4;
    hs_sfq_params_t prm;
    hs_sfq_t *q;
    double served[NF] = { 0 }, sum = 0, t = 0, maxerr = 0;
    struct {
        uint64_t id;
        int flow;
        double rem;
    } out[64];
    int nout = 0, i, k;
    uint64_t nextid = 1;
    hs_sfq_stats_t st;

    ck_assert_int_eq(hs_sfq_params_init(&prm, mode), 0);
    prm.depth = depth;
    prm.slot_bytes = slot;
    prm.vtime = vt;
    prm.bf_limit = depth;
    ck_assert_ptr_nonnull(q = hs_sfq_create(&prm));
    for (i = 0; i < NF; i++) {
        ck_assert_int_eq(hs_sfq_flow_add(q, (uint64_t)i, (double)(1 << i)), 0);
        for (k = 0; k < backlog; k++, nextid++)
            enq(q, (uint64_t)i, nextid, mixed ? sizes[irand(4)] : (1 << 20));
    }
    while (sum < total) {
        hs_sfq_req_t r;
        double dt, minrem = INFINITY;
        while (hs_sfq_dispatch(q, &r) == 1) {
            ck_assert_int_lt(nout, 64);
            out[nout].id = r.id;
            out[nout].flow = (int)r.flow;
            out[nout].rem = (double)r.cost;
            nout++;
            enq(q, r.flow, nextid++, mixed ? sizes[irand(4)] : (1 << 20));
        }
        ck_assert_int_gt(nout, 0);
        for (i = 0; i < nout; i++)
            minrem = fmin(minrem, out[i].rem);
        dt = minrem * nout / bw;
        t += dt;
        for (i = 0; i < nout; i++) {
            out[i].rem -= minrem;
            served[out[i].flow] += minrem;
            sum += minrem;
        }
        for (i = 0; i < nout;) {
            if (out[i].rem <= 0.5) {
                done(q, out[i].id);
                out[i] = out[--nout];
            } else
                i++;
        }
    }
    ck_assert_int_eq(hs_sfq_stats(q, &st), 0);
    printf("%-34s", label);
    for (i = 1; i < NF; i++) {
        double ratio = served[i] / served[0];
        double err = fabs(ratio / (double)(1 << i) - 1);
        maxerr = fmax(maxerr, err);
        printf(" %6.2f:1", ratio);
    }
    printf("  max err %.2f%%  (%.1f GB in %.2f s simulated, %ju backfills)\n", 100 * maxerr,
           sum / 1e9, t, (uintmax_t)st.backfills);
    hs_sfq_destroy(q);
    return maxerr;
}

START_TEST(test_share_simulated)
{
    const double total = 40e9;
    double e;

    static const struct {
        const char *name;
        hs_sfq_mode_t mode;
        hs_sfq_vtime_t vt;
        unsigned int depth;
        uint64_t slot;
        bool mixed;
    } runs[] = {
        { "SFQ(D)  D=8, 1 MiB", HS_SFQ_D, HS_SFQ_VT_LAST_START, 8, 0, false },
        { "SFQ(D)  D=1, 1 MiB", HS_SFQ_D, HS_SFQ_VT_LAST_START, 1, 0, false },
        { "Min-SFQ(D) D=8, 1 MiB", HS_SFQ_D, HS_SFQ_VT_MIN_START, 8, 0, false },
        { "SFQ(D)  D=8, mixed sizes", HS_SFQ_D, HS_SFQ_VT_LAST_START, 8, 0, true },
        { "SFQ(D)+ D=64x64KiB, mixed sizes", HS_SFQ_D_PLUS, HS_SFQ_VT_LAST_START, 64, 64 << 10,
          true },
        { "SFQ(D)+ D=16 auto slot, mixed", HS_SFQ_D_PLUS, HS_SFQ_VT_LAST_START, 16, 0, true },
        { "Min-SFQ(D)+ D=64x64KiB, mixed", HS_SFQ_D_PLUS, HS_SFQ_VT_MIN_START, 64, 64 << 10, true },
    };

    printf("targets                             2:1 4:1 8:1 16:1 32:1\n");
    for (size_t k = 0; k < TU_COUNT(runs); k++) {
        e = simulate(runs[k].name, runs[k].mode, runs[k].vt, runs[k].depth, runs[k].slot,
                     runs[k].mixed, total);
        ck_assert_double_lt(e, 0.05);
    }
    fflush(stdout);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "core", .timeout = 120,
          .tests = { test_sfqd_d1, test_sfqd_d2, test_plus_depth_units, test_plus_backfill_guard,
                     test_plus_backfill_window, test_plus_larger_than_depth, test_plus_auto_slot,
                     test_flows_mid_trace, test_weight_change, test_cancel, test_errors,
                     test_reference_random, test_share_simulated, NULL } },
    };

    return tu_main("sfq", tcases, TU_COUNT(tcases));
}
