/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_sfq.c — SFQ(D) and SFQ(D)+ request scheduling (see hs_sfq.h and doc/sfq.md).
 *
 * References, quoted in the comments below as:
 *   [JCK04]  W. Jin, J. S. Chase, J. Kaur, "Interposed proportional sharing for a storage
 *            service utility", SIGMETRICS 2004: SFQ(D), Min-SFQ(D).
 *   [GVC97]  P. Goyal, H. M. Vin, H. Cheng, "Start-time fair queueing", IEEE/ACM ToN
 *            5(5), 1997: the tags and the idle rule.
 *   [vPFS+]  [vPFS+], doc/design.md §9 (Ming Zhao et al.): SFQ(D)+, depth in cost units
 *            (slide 7) and backfilling (slide 8).
 *
 * Layout.  Each flow keeps its queued requests in a FIFO (within a flow, start tags
 * never decrease: S(r_{k+1}) = max(v, F(r_k)) >= S(r_k), so FIFO order is tag order).
 * Only the head of each flow carries a tag; the backlogged flows sit in a binary heap
 * keyed by (S(head), arrival sequence of head).  Tagging a request when it becomes its
 * flow's head gives the same tags as tagging it on arrival, because v never exceeds
 * the start tag of a request in the system, so for every request but a flow's first
 * max(v, F_prev) = F_prev either way (doc/sfq.md, "Lazy tags").  Request and flow ids
 * are found through two open-addressing hash tables.
 */
#if HAVE_CONFIG_H
#include "harmonia_config.h"
#endif
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hs_sfq.h"
#include "policy.h" /* hs_grow(), hs_hash64() */

#define NOIDX ((size_t)-1)

/* ------------------------------------------------------------------ heap */

/* A node of an indexed binary min-heap ordered by (key, seq).  Embedded in flows
 * (key = S of the flow's head) and in outstanding requests (key = S, Min-SFQ(D)). */
struct hnode {
    double key;
    uint64_t seq;
    size_t idx; /* position in the heap, NOIDX when not in it */
};

struct heap {
    struct hnode **a;
    size_t n;
    size_t cap;
};

/* SFQ order [GVC97]: increasing start tag, ties broken by arrival order. */
static bool hless(const struct hnode *x, const struct hnode *y)
{
    return x->key < y->key || (x->key == y->key && x->seq < y->seq);
}

static void hset(struct heap *h, size_t i, struct hnode *x)
{
    h->a[i] = x;
    x->idx = i;
}

static void sift_up(struct heap *h, size_t i)
{
    struct hnode *x = h->a[i];

    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!hless(x, h->a[p]))
            break;
        hset(h, i, h->a[p]);
        i = p;
    }
    hset(h, i, x);
}

static void sift_down(struct heap *h, size_t i)
{
    struct hnode *x = h->a[i];

    for (;;) {
        size_t l = 2 * i + 1, m = i;
        struct hnode *best = x;
        if (l < h->n && hless(h->a[l], best)) {
            m = l;
            best = h->a[l];
        }
        if (l + 1 < h->n && hless(h->a[l + 1], best))
            m = l + 1;
        if (m == i)
            break;
        hset(h, i, h->a[m]);
        i = m;
    }
    hset(h, i, x);
}

/* Make room for 'need' nodes, so that later pushes cannot fail. */
static int heap_reserve(struct heap *h, size_t need)
{
    return hs_grow(&h->a, &h->cap, need, sizeof(*h->a));
}

/* Capacity must have been reserved. */
static void heap_push(struct heap *h, struct hnode *x)
{
    hset(h, h->n++, x);
    sift_up(h, x->idx);
}

static void heap_remove(struct heap *h, struct hnode *x)
{
    size_t i = x->idx;
    struct hnode *last = h->a[--h->n];

    if (i < h->n) {
        hset(h, i, last);
        sift_up(h, i);
        sift_down(h, last->idx);
    }
    x->idx = NOIDX;
}

/* x's key changed. */
static void heap_update(struct heap *h, struct hnode *x)
{
    sift_up(h, x->idx);
    sift_down(h, x->idx);
}

/* ------------------------------------------------------------------ hash map */

/* uint64 -> pointer, open addressing with linear probing and backward-shift deletion
 * (no tombstones).  A NULL value marks an empty bucket. */
struct map {
    uint64_t *keys;
    void **vals;
    size_t cap; /* power of two, or 0 */
    size_t n;
};

static size_t mhash(uint64_t k, size_t mask)
{
    return (size_t)hs_hash64(k) & mask;
}

static void *map_get(const struct map *m, uint64_t k)
{
    size_t i, mask;

    if (m->cap == 0)
        return NULL;
    mask = m->cap - 1;
    for (i = mhash(k, mask); m->vals[i]; i = (i + 1) & mask) {
        if (m->keys[i] == k)
            return m->vals[i];
    }
    return NULL;
}

static void map_put_nogrow(struct map *m, uint64_t k, void *v)
{
    size_t mask = m->cap - 1;
    size_t i = mhash(k, mask);

    while (m->vals[i])
        i = (i + 1) & mask;
    m->keys[i] = k;
    m->vals[i] = v;
    m->n++;
}

/* Room for 'need' entries at load <= 1/2, so that map_put_nogrow() cannot fail. */
static int map_reserve(struct map *m, size_t need)
{
    struct map nm = { 0 };
    size_t i;

    if (need * 2 <= m->cap)
        return 0;
    nm.cap = m->cap ? m->cap : 16;
    while (need * 2 > nm.cap)
        nm.cap *= 2;
    if (!(nm.keys = calloc(nm.cap, sizeof(*nm.keys)))
        || !(nm.vals = calloc(nm.cap, sizeof(*nm.vals)))) {
        free(nm.keys);
        errno = ENOMEM;
        return -1;
    }
    for (i = 0; i < m->cap; i++) {
        if (m->vals[i])
            map_put_nogrow(&nm, m->keys[i], m->vals[i]);
    }
    free(m->keys);
    free(m->vals);
    *m = nm;
    return 0;
}

static void map_del(struct map *m, uint64_t k)
{
    size_t mask, i, j;

    if (m->cap == 0)
        return;
    mask = m->cap - 1;
    for (i = mhash(k, mask); m->vals[i]; i = (i + 1) & mask) {
        if (m->keys[i] == k)
            break;
    }
    if (!m->vals[i])
        return;
    m->vals[i] = NULL;
    m->n--;
    /* shift back the entries of the probe run that may move into the hole */
    for (j = (i + 1) & mask; m->vals[j]; j = (j + 1) & mask) {
        size_t h = mhash(m->keys[j], mask);
        bool move = (i <= j) ? (h <= i || h > j) : (h <= i && h > j);
        if (move) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            m->vals[j] = NULL;
            i = j;
        }
    }
}

static void map_free(struct map *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
}

/* ------------------------------------------------------------------ objects */

struct flow;

struct req {
    uint64_t id;
    uint64_t cost;
    struct flow *flow; /* NULL once an outstanding request's flow was removed */
    struct req *prev;  /* in the flow's queue, or in its outstanding list */
    struct req *next;
    struct hnode on;       /* outstanding heap (Min-SFQ(D)); on.seq = arrival seq */
    double start;          /* S: valid once head of its flow, or outstanding */
    double finish;         /* F */
    unsigned int slots;    /* held while outstanding */
    unsigned int bypassed; /* times backfilled past while head [vPFS+ guard] */
    bool outstanding;
};

struct flow {
    uint64_t id;
    double weight;      /* phi_f */
    double last_finish; /* F_prev(f) [JCK04] */
    struct req *qhead;  /* queued requests, FIFO */
    struct req *qtail;
    struct req *out; /* outstanding requests (unordered list) */
    struct hnode hn; /* flow heap: key = S(qhead), seq = qhead's arrival seq */
    hs_sfq_flow_stats_t st;
};

struct hs_sfq {
    hs_sfq_params_t prm;
    uint64_t slot_bytes; /* effective slot size (auto: smallest cost so far) */
    double v;            /* virtual time */
    double max_finish;   /* largest finish tag dispatched (idle rule) */
    unsigned int used;   /* slots (or requests) outstanding */
    uint64_t seq;        /* arrival counter */
    struct heap flows;   /* backlogged flows by head start tag */
    struct heap outq;    /* outstanding requests by start tag (Min-SFQ(D) only) */
    struct map reqs;     /* id -> struct req (queued and outstanding) */
    struct map fmap;     /* id -> struct flow */
    size_t nqueued;
    size_t noutstanding;
    size_t *aux; /* backfill scan: a small heap of flow-heap indices */
    uint64_t dispatched;
    uint64_t backfills;
    uint64_t reserved_waits;
};

#define FLOW_OF(node) ((struct flow *)((char *)(node)-offsetof(struct flow, hn)))
#define REQ_OF(node) ((struct req *)((char *)(node)-offsetof(struct req, on)))

/* Flow 'id' of q (flow: true), or its request 'id' (queued or outstanding); NULL
 * with errno = EINVAL (no q) or ENOENT (no such flow or request). */
static void *lookup(const hs_sfq_t *q, bool flow, uint64_t id)
{
    void *x;

    if (!q) {
        errno = EINVAL;
        return NULL;
    }
    if (!(x = map_get(flow ? &q->fmap : &q->reqs, id)))
        errno = ENOENT;
    return x;
}

/* ------------------------------------------------------------------ params */

/* Defaults (doc/sfq.md): D = 8 [JCK04 use small depths, vPFS+ D = 10 on its slides],
 * slot = smallest cost seen [vPFS+ slide 7], bypass limit = D, scan 16, window 1.0. */
int hs_sfq_params_init(hs_sfq_params_t *prm, hs_sfq_mode_t mode)
{
    if (!prm || (mode != HS_SFQ_D && mode != HS_SFQ_D_PLUS)) {
        errno = EINVAL;
        return -1;
    }
    memset(prm, 0, sizeof(*prm));
    prm->mode = mode;
    prm->vtime = HS_SFQ_VT_LAST_START;
    prm->depth = 8;
    prm->slot_bytes = 0;
    prm->bf_limit = prm->depth;
    prm->bf_scan = 16;
    prm->bf_window = 1.0;
    return 0;
}

/* Scheduler state of [JCK04] SFQ(D): v = 0, no flow, depth D free. */
hs_sfq_t *hs_sfq_create(const hs_sfq_params_t *prm)
{
    hs_sfq_t *q;

    if (!prm || (prm->mode != HS_SFQ_D && prm->mode != HS_SFQ_D_PLUS)
        || (prm->vtime != HS_SFQ_VT_LAST_START && prm->vtime != HS_SFQ_VT_MIN_START)
        || prm->depth == 0 || prm->bf_scan == 0 || !isfinite(prm->bf_window)
        || prm->bf_window < 0) {
        errno = EINVAL;
        return NULL;
    }
    if (!(q = calloc(1, sizeof(*q))))
        return NULL;
    q->prm = *prm;
    q->slot_bytes = prm->slot_bytes;
    if (!(q->aux = calloc((size_t)prm->bf_scan + 3, sizeof(*q->aux)))) {
        free(q);
        return NULL;
    }
    return q;
}

static void flow_free_queue(hs_sfq_t *q, struct flow *f, hs_sfq_drop_f cb, void *arg)
{
    struct req *r = f->qhead;

    while (r) {
        struct req *next = r->next;
        if (cb)
            cb(r->id, r->cost, arg);
        if (q)
            map_del(&q->reqs, r->id);
        free(r);
        r = next;
    }
    f->qhead = f->qtail = NULL;
}

void hs_sfq_destroy(hs_sfq_t *q)
{
    int saved = errno;
    size_t i;

    if (!q)
        return;
    /* every request, queued or outstanding, is in the request map */
    for (i = 0; i < q->reqs.cap; i++)
        free(q->reqs.vals[i]);
    for (i = 0; i < q->fmap.cap; i++)
        free(q->fmap.vals[i]);
    map_free(&q->reqs);
    map_free(&q->fmap);
    free(q->flows.a);
    free(q->outq.a);
    free(q->aux);
    free(q);
    errno = saved;
}

/* ------------------------------------------------------------------ tags */

/* SFQ(D)+ depth in cost units [vPFS+ slide 7]: slots(r) = min(D, max(1,
 * ceil(cost / slot))); SFQ(D) [JCK04] counts requests: slots(r) = 1. */
static unsigned int slots_of(const hs_sfq_t *q, uint64_t cost)
{
    uint64_t n;

    if (q->prm.mode == HS_SFQ_D || q->slot_bytes == 0)
        return 1;
    n = cost / q->slot_bytes + (cost % q->slot_bytes != 0);
    if (n < 1)
        n = 1;
    if (n > q->prm.depth)
        n = q->prm.depth;
    return (unsigned int)n;
}

unsigned int hs_sfq_slots(const hs_sfq_t *q, uint64_t cost)
{
    if (!q) {
        errno = EINVAL;
        return 0;
    }
    return slots_of(q, cost);
}

/* Virtual time used to tag a new head.
 *   [JCK04] SFQ(D):     v = S of the last request dispatched (maintained in go()).
 *   [JCK04] Min-SFQ(D): v = min S over the requests in the system, i.e. over the
 *                       outstanding requests and the flow heads.
 *   [GVC97] idle rule:  when nothing is queued or outstanding, v = max F dispatched.
 * v never decreases. */
static double vtime_now(hs_sfq_t *q)
{
    if (q->nqueued == 0 && q->noutstanding == 0) {
        if (q->max_finish > q->v)
            q->v = q->max_finish;
    } else if (q->prm.vtime == HS_SFQ_VT_MIN_START) {
        double m = INFINITY;
        if (q->outq.n > 0)
            m = q->outq.a[0]->key;
        if (q->flows.n > 0 && q->flows.a[0]->key < m)
            m = q->flows.a[0]->key;
        if (isfinite(m) && m > q->v)
            q->v = m;
    }
    return q->v;
}

/* Tag f's (new) head r [GVC97, JCK04]: S = max(v, F_prev(f)), F = S + cost / phi_f.
 * The caller puts f in the flow heap or updates its position. */
static void tag_head(hs_sfq_t *q, struct flow *f)
{
    struct req *r = f->qhead;
    double v = vtime_now(q);

    r->start = v > f->last_finish ? v : f->last_finish;
    r->finish = r->start + (double)r->cost / f->weight;
    r->bypassed = 0;
    f->hn.key = r->start;
    f->hn.seq = r->on.seq;
}

/* ------------------------------------------------------------------ flows */

/* A new flow of weight phi_f > 0 with F_prev(f) = 0 [JCK04]: its first request is
 * tagged S = max(v, 0) = v. */
int hs_sfq_flow_add(hs_sfq_t *q, uint64_t flow, double weight)
{
    struct flow *f;

    if (!q || !(weight > 0) || !isfinite(weight)) {
        errno = EINVAL;
        return -1;
    }
    if (map_get(&q->fmap, flow)) {
        errno = EEXIST;
        return -1;
    }
    if (map_reserve(&q->fmap, q->fmap.n + 1) < 0 || heap_reserve(&q->flows, q->fmap.n + 1) < 0)
        return -1;
    if (!(f = calloc(1, sizeof(*f))))
        return -1;
    f->id = flow;
    f->weight = weight;
    f->last_finish = 0;
    f->hn.idx = NOIDX;
    f->st.weight = weight;
    map_put_nogrow(&q->fmap, flow, f);
    return 0;
}

/* phi_f changes for service not yet tagged: the head keeps S and gets
 * F = S + cost / phi_f(new) [GVC97 tags]; later requests use the new weight. */
int hs_sfq_flow_set_weight(hs_sfq_t *q, uint64_t flow, double weight)
{
    struct flow *f;

    if (!q || !(weight > 0) || !isfinite(weight)) {
        errno = EINVAL;
        return -1;
    }
    if (!(f = lookup(q, true, flow)))
        return -1;
    f->weight = weight;
    f->st.weight = weight;
    if (f->qhead)
        f->qhead->finish = f->qhead->start + (double)f->qhead->cost / weight;
    return 0;
}

/* Drop the flow: its queued requests leave the tag order of [JCK04] (the others'
 * tags S = max(v, F_prev) are unaffected); outstanding ones keep their slots. */
int hs_sfq_flow_remove(hs_sfq_t *q, uint64_t flow, hs_sfq_drop_f drop_cb, void *arg)
{
    struct flow *f;
    struct req *r;

    if (!(f = lookup(q, true, flow)))
        return -1;
    if (f->hn.idx != NOIDX)
        heap_remove(&q->flows, &f->hn);
    q->nqueued -= f->st.queued;
    flow_free_queue(q, f, drop_cb, arg);
    for (r = f->out; r; r = r->next)
        r->flow = NULL;
    map_del(&q->fmap, flow);
    free(f);
    return 0;
}

/* ------------------------------------------------------------------ requests */

/* Arrival of request r at flow f [JCK04]: r joins f's FIFO; if f was idle, r is its
 * head and is tagged now, S = max(v, F_prev(f)), F = S + cost / phi_f. */
int hs_sfq_enqueue(hs_sfq_t *q, uint64_t flow, uint64_t id, uint64_t cost)
{
    struct flow *f;
    struct req *r;

    if (!q || cost == 0) {
        errno = EINVAL;
        return -1;
    }
    if (!(f = lookup(q, true, flow)))
        return -1;
    if (map_get(&q->reqs, id)) {
        errno = EEXIST;
        return -1;
    }
    if (map_reserve(&q->reqs, q->reqs.n + 1) < 0)
        return -1;
    if (q->prm.vtime == HS_SFQ_VT_MIN_START && heap_reserve(&q->outq, q->reqs.n + 1) < 0)
        return -1;
    if (!(r = calloc(1, sizeof(*r))))
        return -1;
    r->id = id;
    r->cost = cost;
    r->flow = f;
    r->on.seq = ++q->seq;
    r->on.idx = NOIDX;
    map_put_nogrow(&q->reqs, id, r);

    /* [vPFS+ slide 7] "each slot represents the cost of the smallest I/Os" */
    if (q->prm.slot_bytes == 0 && (q->slot_bytes == 0 || cost < q->slot_bytes))
        q->slot_bytes = cost;

    r->prev = f->qtail;
    if (f->qtail)
        f->qtail->next = r;
    else
        f->qhead = r;
    f->qtail = r;
    f->st.queued++;
    f->st.queued_bytes += cost;
    if (f->qhead == r) {
        tag_head(q, f); /* before counting r: v of the system without it */
        heap_push(&q->flows, &f->hn);
    }
    q->nqueued++;
    return 0;
}

/* Unlink r from the list of a flow that starts at *head (the queue, or the
 * outstanding list) and, when tail is not NULL, ends at *tail. */
static void req_unlink(struct req *r, struct req **head, struct req **tail)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        *head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    else if (tail)
        *tail = r->prev;
    r->prev = r->next = NULL;
}

/* Unlink r from its flow's queue; if it was the head, tag the next one. */
static void unqueue(hs_sfq_t *q, struct req *r)
{
    struct flow *f = r->flow;
    bool was_head = (f->qhead == r);

    req_unlink(r, &f->qhead, &f->qtail);
    f->st.queued--;
    f->st.queued_bytes -= r->cost;
    q->nqueued--;
    if (was_head) {
        if (f->qhead) {
            tag_head(q, f);
            heap_update(&q->flows, &f->hn);
        } else
            heap_remove(&q->flows, &f->hn);
    }
}

/* A queued request leaves before service: the flow's F_prev is unchanged, so its
 * next head is tagged S = max(v, F_prev(f)) [JCK04]. */
int hs_sfq_cancel(hs_sfq_t *q, uint64_t id)
{
    struct req *r;

    if (!(r = lookup(q, false, id)))
        return -1;
    if (r->outstanding) {
        errno = EBUSY;
        return -1;
    }
    map_del(&q->reqs, id);
    unqueue(q, r);
    free(r);
    return 0;
}

/* The backfill scan's heap q->aux[0..*na[: a binary min-heap of indices into the flow
 * heap's array a[0..n[, by a[idx] order.  Push the children of a[top] onto it. */
static void aux_push_children(hs_sfq_t *q, struct hnode **a, size_t n, size_t *na, size_t top)
{
    size_t c;

    for (c = 2 * top + 1; c <= 2 * top + 2 && c < n; c++) {
        size_t k = (*na)++;
        while (k > 0 && hless(a[c], a[q->aux[(k - 1) / 2]])) {
            q->aux[k] = q->aux[(k - 1) / 2];
            k = (k - 1) / 2;
        }
        q->aux[k] = c;
    }
}

/* Best-first walk of the flow heap below its root, in (S, arrival) order, over at
 * most bf_scan heads: the first one that fits 'free' slots and starts within the
 * window, S(c) <= S(H) + bf_window * (F(H) - S(H)) [vPFS+ slide 8 backfill]. */
static struct req *backfill_find(hs_sfq_t *q, const struct req *head, unsigned int free)
{
    struct hnode **a = q->flows.a;
    size_t n = q->flows.n, na = 0;
    unsigned int examined = 0;
    double limit = INFINITY;

    if (q->prm.bf_window > 0) {
        limit = head->start + q->prm.bf_window * (head->finish - head->start);
        limit += 1e-12 * fabs(limit);
    }
    aux_push_children(q, a, n, &na, 0); /* the root's children */
    while (na > 0 && examined < q->prm.bf_scan) {
        size_t top = q->aux[0], k;
        struct req *r = FLOW_OF(a[top])->qhead;

        /* pop */
        q->aux[0] = q->aux[--na];
        for (k = 0;;) {
            size_t l = 2 * k + 1, m = k;
            if (l < na && hless(a[q->aux[l]], a[q->aux[m]]))
                m = l;
            if (l + 1 < na && hless(a[q->aux[l + 1]], a[q->aux[m]]))
                m = l + 1;
            if (m == k)
                break;
            size_t t = q->aux[k];
            q->aux[k] = q->aux[m];
            q->aux[m] = t;
            k = m;
        }
        examined++;
        if (r->start > limit)
            break; /* every later head starts later still */
        if (slots_of(q, r->cost) <= free)
            return r;
        aux_push_children(q, a, n, &na, top);
    }
    return NULL;
}

/* Dispatch r (head of its flow, or a backfilled head).  [JCK04] SFQ(D): v = S of the
 * dispatched request; here v = max(v, S(H)) where H is the head in start-tag order, so
 * a backfill never moves v past the request it jumped over.  F_prev(f) = F(r). */
static void go(hs_sfq_t *q, struct req *r, const struct req *head, unsigned int slots,
               bool backfilled, hs_sfq_req_t *out)
{
    struct flow *f = r->flow;

    if (q->prm.vtime == HS_SFQ_VT_LAST_START && head->start > q->v)
        q->v = head->start;
    if (r->finish > q->max_finish)
        q->max_finish = r->finish;
    f->last_finish = r->finish;

    unqueue(q, r); /* tags f's next head, if any */
    r->outstanding = true;
    r->slots = slots;
    r->next = f->out;
    if (f->out)
        f->out->prev = r;
    f->out = r;
    q->used += slots;
    q->noutstanding++;
    if (q->prm.vtime == HS_SFQ_VT_MIN_START) {
        r->on.key = r->start;
        heap_push(&q->outq, &r->on);
    }
    q->dispatched++;
    f->st.outstanding++;
    f->st.dispatched++;
    f->st.dispatched_bytes += r->cost;
    if (backfilled) {
        q->backfills++;
        f->st.backfilled++;
    }
    if (out) {
        out->id = r->id;
        out->flow = f->id;
        out->cost = r->cost;
        out->slots = slots;
        out->start = r->start;
        out->finish = r->finish;
        out->backfilled = backfilled;
    }
}

/* [JCK04] SFQ(D): while fewer than D requests are outstanding, dispatch the queued
 * request with the smallest start tag.  [vPFS+] SFQ(D)+: D counts slots, the head H
 * goes if slots(H) <= free; otherwise, unless H was already bypassed bf_limit times,
 * the first fitting head within the window is backfilled. */
int hs_sfq_dispatch(hs_sfq_t *q, hs_sfq_req_t *out)
{
    struct req *h, *c;
    unsigned int free, need;

    if (!q) {
        errno = EINVAL;
        return -1;
    }
    if (q->flows.n == 0 || q->used >= q->prm.depth)
        return 0;
    free = q->prm.depth - q->used;
    h = FLOW_OF(q->flows.a[0])->qhead;
    need = slots_of(q, h->cost);
    if (need <= free) {
        go(q, h, h, need, false, out);
        return 1;
    }
    if (q->prm.mode != HS_SFQ_D_PLUS || q->prm.bf_limit == 0)
        return 0;
    if (h->bypassed >= q->prm.bf_limit) {
        q->reserved_waits++; /* starvation guard: H is reserved */
        return 0;
    }
    if (!(c = backfill_find(q, h, free)))
        return 0;
    h->bypassed++;
    go(q, c, h, slots_of(q, c->cost), true, out);
    return 1;
}

/* Completion frees the request's slots [vPFS+ slide 7]; tags are not affected
 * (SFQ(D) tags depend on dispatch order only [JCK04]). */
int hs_sfq_complete(hs_sfq_t *q, uint64_t id)
{
    struct req *r;
    struct flow *f;

    if (!(r = lookup(q, false, id)))
        return -1;
    if (!r->outstanding) {
        errno = EINVAL;
        return -1;
    }
    map_del(&q->reqs, id);
    if ((f = r->flow)) {
        req_unlink(r, &f->out, NULL);
        f->st.outstanding--;
        f->st.completed_bytes += r->cost;
    }
    if (r->on.idx != NOIDX)
        heap_remove(&q->outq, &r->on);
    q->used -= r->slots;
    q->noutstanding--;
    free(r);
    return 0;
}

/* ------------------------------------------------------------------ stats */

int hs_sfq_stats(const hs_sfq_t *q, hs_sfq_stats_t *st)
{
    if (!q || !st) {
        errno = EINVAL;
        return -1;
    }
    memset(st, 0, sizeof(*st));
    st->vtime = q->v;
    st->depth = q->prm.depth;
    st->used = q->used;
    st->slot_bytes = q->prm.mode == HS_SFQ_D ? 0 : q->slot_bytes;
    st->flows = q->fmap.n;
    st->queued = q->nqueued;
    st->outstanding = q->noutstanding;
    st->dispatched = q->dispatched;
    st->backfills = q->backfills;
    st->reserved_waits = q->reserved_waits;
    return 0;
}

int hs_sfq_flow_stats(const hs_sfq_t *q, uint64_t flow, hs_sfq_flow_stats_t *st)
{
    const struct flow *f;

    if (!q || !st) {
        errno = EINVAL;
        return -1;
    }
    if (!(f = lookup(q, true, flow)))
        return -1;
    *st = f->st;
    st->last_finish = f->last_finish;
    return 0;
}
