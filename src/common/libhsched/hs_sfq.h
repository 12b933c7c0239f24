/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_sfq.h — proportional-share request scheduling between flows (jobs):
 * SFQ(D) and SFQ(D)+.
 *
 * SFQ(D) is start-time fair queueing with a depth D (Jin, Chase, Kaur, "Interposed
 * proportional sharing for a storage service utility", SIGMETRICS 2004); SFQ(D)+ is
 * the variant of vPFS+ ([vPFS+], doc/design.md §9, slides 7-8) that counts the depth in cost
 * units and backfills small requests.  doc/sfq.md describes the algorithm exactly as
 * implemented; in short:
 *
 *   tags     a request r of flow f (weight phi_f > 0) gets, when it becomes the head
 *            of f's FIFO queue (equivalent to tagging on arrival, see doc/sfq.md),
 *                S(r) = max(v, F_prev(f)),   F(r) = S(r) + cost(r) / phi_f
 *            where F_prev(f) is the finish tag of f's previous request (0 for a new
 *            flow) and v is the scheduler's virtual time.
 *   order    requests go in increasing (S, arrival order); a flow's own requests go in
 *            the order they were enqueued.
 *   depth    SFQ(D):  at most D requests outstanding (dispatched, not completed).
 *            SFQ(D)+: D slots of 'slot_bytes' each; a request takes
 *                     slots(r) = min(D, max(1, ceil(cost / slot_bytes)))
 *                     so a request larger than D slots still goes, alone.
 *   backfill SFQ(D)+ only: when the head H (smallest (S, arrival)) needs more slots
 *            than are free, the first other flow head c, in (S, arrival) order among at
 *            most 'bf_scan' candidates, with slots(c) <= free and
 *                S(c) <= S(H) + bf_window * (F(H) - S(H))   (when bf_window > 0)
 *            is dispatched instead ("backfilled").  Starvation guard: H is bypassed at
 *            most 'bf_limit' times; then it is reserved (nothing else is dispatched
 *            while it waits, it goes as soon as its slots are free: at the latest when
 *            nothing is outstanding).
 *   v        HS_SFQ_VT_LAST_START (SFQ(D) of Jin et al., the default): v is the start
 *            tag of the last request dispatched in start-tag order (a backfill
 *            advances v only to S(H), never past the head it jumped over).
 *            HS_SFQ_VT_MIN_START (Min-SFQ(D)): v is the smallest start tag of the
 *            requests in the system (outstanding, or at a flow head).
 *            Both: v never decreases, and when the system empties (nothing queued or
 *            outstanding) v jumps to the largest finish tag dispatched (Goyal's SFQ
 *            idle rule), so an idle flow earns no credit.
 *
 * Cost: enqueue, dispatch, complete, cancel are O(log n) (a binary heap of flows keyed
 * by their head's start tag, hash tables for ids); the backfill scan visits at most
 * bf_scan heads (O(bf_scan log bf_scan)).  Min-SFQ(D) keeps a second heap of the
 * outstanding requests.
 *
 * Pure code: no I/O, no threads, no clock, no global state; not thread-safe (the
 * caller serialises calls on one hs_sfq_t).  Errors: -1 / NULL with errno set.
 */
#ifndef HARMONIA_HS_SFQ_H
#define HARMONIA_HS_SFQ_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    HS_SFQ_D = 0,      /* depth = number of outstanding requests */
    HS_SFQ_D_PLUS = 1, /* depth = cost slots, with backfill (vPFS+) */
} hs_sfq_mode_t;

typedef enum {
    HS_SFQ_VT_LAST_START = 0, /* SFQ(D): start tag of the last dispatched request */
    HS_SFQ_VT_MIN_START = 1,  /* Min-SFQ(D): min start tag of requests in system */
} hs_sfq_vtime_t;

typedef struct {
    hs_sfq_mode_t mode;
    hs_sfq_vtime_t vtime;
    unsigned int depth;    /* D >= 1: requests (SFQ(D)) or slots (SFQ(D)+) */
    uint64_t slot_bytes;   /* SFQ(D)+: bytes per slot; 0 = the smallest cost enqueued
                             * so far (vPFS+: "each slot represents the cost of the
                             * smallest I/Os"); ignored by SFQ(D) */
    unsigned int bf_limit; /* SFQ(D)+: bypasses of one head before it is reserved;
                             * 0 disables backfill */
    unsigned int bf_scan;  /* SFQ(D)+: heads examined per backfill attempt, >= 1 */
    double bf_window;      /* SFQ(D)+: > 0: a backfilled request must have
                             * S <= S(H) + bf_window * (F(H) - S(H)); 0: no window */
} hs_sfq_params_t;

typedef struct hs_sfq hs_sfq_t;

/* One dispatched request, as returned by hs_sfq_dispatch(). */
typedef struct {
    uint64_t id;        /* the caller's request id */
    uint64_t flow;      /* its flow (job) */
    uint64_t cost;      /* bytes */
    unsigned int slots; /* depth it holds until hs_sfq_complete() (1 in SFQ(D)) */
    double start;       /* S */
    double finish;      /* F */
    bool backfilled;    /* went ahead of a head that did not fit (SFQ(D)+) */
} hs_sfq_req_t;

typedef struct {
    double vtime;        /* v */
    unsigned int depth;  /* D */
    unsigned int used;   /* slots (SFQ(D)+) or requests (SFQ(D)) outstanding */
    uint64_t slot_bytes; /* current slot size (0 before any enqueue in auto mode) */
    size_t flows;
    size_t queued;           /* requests waiting */
    size_t outstanding;      /* requests dispatched, not completed */
    uint64_t dispatched;     /* requests dispatched so far */
    uint64_t backfills;      /* of which backfilled */
    uint64_t reserved_waits; /* dispatch calls that returned nothing because the head
                             * was reserved by the starvation guard */
} hs_sfq_stats_t;

typedef struct {
    double weight;
    double last_finish; /* F_prev(f) */
    size_t queued;
    size_t outstanding;
    uint64_t queued_bytes;
    uint64_t dispatched_bytes;
    uint64_t completed_bytes;
    uint64_t dispatched; /* requests */
    uint64_t backfilled; /* requests of this flow that were backfilled */
} hs_sfq_flow_stats_t;

/* Called by hs_sfq_flow_remove() for each queued request it drops. */
typedef void (*hs_sfq_drop_f)(uint64_t id, uint64_t cost, void *arg);

/* Defaults for a mode: depth 8, slot_bytes 0 (auto), vtime LAST_START, bf_limit = depth,
 * bf_scan 16, bf_window 1.0.  -1 / EINVAL on NULL or unknown mode. */
int hs_sfq_params_init(hs_sfq_params_t *prm, hs_sfq_mode_t mode);

/* -1 / EINVAL on invalid parameters (depth 0, bf_scan 0, bf_window < 0 or not finite,
 * unknown mode or vtime); ENOMEM. */
hs_sfq_t *hs_sfq_create(const hs_sfq_params_t *prm);
void hs_sfq_destroy(hs_sfq_t *q); /* NULL ok; keeps errno */

/* Flows.  weight > 0 and finite (EINVAL); add: EEXIST if present; others: ENOENT.
 * set_weight: applies to the service not yet tagged: the current head keeps its start
 * tag, every later request is tagged with the new weight.
 * remove: drops the flow's queued requests (drop_cb, if not NULL, sees each); its
 * outstanding requests stay valid and must still be completed.  The id may be added
 * again at once, as a new flow (F_prev = 0). */
int hs_sfq_flow_add(hs_sfq_t *q, uint64_t flow, double weight);
int hs_sfq_flow_set_weight(hs_sfq_t *q, uint64_t flow, double weight);
int hs_sfq_flow_remove(hs_sfq_t *q, uint64_t flow, hs_sfq_drop_f drop_cb, void *arg);

/* Queue request 'id' (unique among queued and outstanding requests: EEXIST) of 'cost'
 * bytes (> 0: EINVAL; charge metadata operations a nominal cost) for 'flow' (ENOENT).
 * Arrival order is the order of the calls. */
int hs_sfq_enqueue(hs_sfq_t *q, uint64_t flow, uint64_t id, uint64_t cost);

/* Withdraw a queued (not yet dispatched) request.  ENOENT if unknown, EBUSY if it is
 * outstanding. */
int hs_sfq_cancel(hs_sfq_t *q, uint64_t id);

/* The next request allowed to go now: returns 1 and fills *out (may be NULL), 0 if none
 * (nothing queued, depth used up, or the head is reserved and does not fit yet),
 * -1 / EINVAL if q is NULL.  The request is outstanding until hs_sfq_complete(). */
int hs_sfq_dispatch(hs_sfq_t *q, hs_sfq_req_t *out);

/* Request 'id' finished: frees its slots.  ENOENT if unknown, EINVAL if only queued. */
int hs_sfq_complete(hs_sfq_t *q, uint64_t id);

int hs_sfq_stats(const hs_sfq_t *q, hs_sfq_stats_t *st);
int hs_sfq_flow_stats(const hs_sfq_t *q, uint64_t flow, hs_sfq_flow_stats_t *st);

/* Slots a request of 'cost' bytes would take now (1 in SFQ(D); 0 with errno EINVAL
 * on NULL q). */
unsigned int hs_sfq_slots(const hs_sfq_t *q, uint64_t cost);

#ifdef __cplusplus
}
#endif

#endif /* HARMONIA_HS_SFQ_H */
