/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_core.c — libhsched's model: jobs, phases, time, fluid progress, decisions and
 * per-job accounting.  The policies live in hs_online.c (and, plugged in through
 * policy.h, in other files).
 *
 * Data layout (10^4 jobs and more):
 *   - jobs[] holds one record per known job (live or departed, so that statistics
 *     survive hs_job_leave()); free slots are chained for reuse by hs_job_forget();
 *   - an open-addressing hash table (linear probing, backward-shift deletion) maps
 *     job ids to jobs[] slots;
 *   - live[] and pend[] list the live jobs and the jobs with a pending phase; each job
 *     knows its position in them, so insertion and removal are O(1).
 * Events cost O(1) (progress is integrated lazily, per phase); a decision costs
 * O(K log K) (the sort by id here, one by the policy's key there); next_event and
 * hs_sched_completed() scan the K pending phases.  The sort by id is incremental:
 * a decision keeps the last one's order and merges in the phases requested since.
 * bbmgrd decides at every phase request under its core lock, so the decision's
 * constant factor matters too (doc/performance.md, "Decision cost (libhsched)"):
 * few passes over the K phases, compact per-stripe arrays, no libm call in them.
 *
 * Fluid model (doc/design.md §2): between two decisions, the phase of
 * job k progresses at the rate bw_k chosen by the last decision.  Every event first
 * integrates progress up to its time (lazily, see job_at()).  A phase is "complete
 * in the model" when the bytes left are at most HS_EPS_REL of its volume; it then
 * needs no bandwidth, and the driver is expected to call hs_phase_finish()
 * (hs_sched_completed() lists them).
 *
 * Which instances count in rho and rho~ at decision time t (for the policies): the
 * pending instance i counts in both.  Its compute chunk w(k,i) is over (it was
 * reported with the request) and its volume is known, so
 *     rho_k      = sum_{j<=i} w(k,j) / sum_{j<=i} (w(k,j) + time_io(k,j))
 *     rho~_k(t)  = sum_{j<=i} w(k,j) / (t - r_k)          (rho_k when t == r_k)
 * i.e. rho~ is the fraction of the job's life spent computing so far, and it decays
 * while the job waits for I/O, which is what the online heuristics react to.
 * (Counting only completed instances would give rho~ = 0 to every job in its first
 * phase and make MINDILATION blind until each job has finished one phase.)
 * The metrics at the end of a run count completed instances only (hs_job_stats()).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsched.h"
#include "policy.h"

#define NO_SLOT ((size_t)-1)

/* A job.  The fields a decision reads or writes for every pending phase come first
 * and together (about four cache lines with 'info'); the rest after. */
struct job {
    hs_job_t info;          /* info.alloc points at 'alloc' */
    /* the pending phase (hot: every decision) */
    double cap;             /* min(beta b, B) */
    double vol;
    double done;            /* bytes done at t_sync */
    double t_sync;
    double req;
    double w_done;
    double rate;            /* bw of the last decision */
    double weight;
    double w_iter;          /* w_iter used for this phase */
    double W;               /* sum of w(k,j) for j <= i, and the job's rho with this */
    double rho;             /* phase: fixed while it is pending (set at its request,
                               read by every decision: fill_view()) */
    double alone_bw;        /* the phase's rate alone on its placement */
    double last_io_end;     /* finish of the previous phase, r_k if none */
    int *place;             /* nodes of the pending phase (nplace; core-owned) */
    int nplace;
    int place0;             /* place[0] when nplace > 0: the decisions' per-phase
                               passes read it without loading place[] */
    int phase;              /* its instance number: st.phases + 1 */
    hs_dir_t dir;
    bool pending;
    bool active;            /* rate > 0 at the last decision */
    bool placed;            /* placement decided (buffer tier, doc/buffer-tier.md) */
    bool throttled;         /* rate limited by a full node at the last decision */
    bool listed;            /* in s->ids, the order of the last decision: set by
                               hs_sched_decide(), cleared when the phase ends */
    /* the rest */
    int *alloc;
    bool used;              /* slot holds a job (live or departed) */
    bool live;
    size_t live_pos;
    size_t next_free;
    size_t pend_pos;
    int place_cap;
    double arrive;          /* time of hs_job_arrive() */
    double held0;           /* sum over the allocation of node occupancy integrals
                               at arrival */
    double alloc_cap;       /* sum of the (finite) capacities of the allocation */
    /* history */
    double first_req;
    double last_req;
    int nreq;
    hs_job_stats_t st;      /* completed instances only */
};

struct hs_sched {
    hs_platform_t plat;
    hs_buffer_t *buffers;
    hs_policy_t pol;
    const hs_policy_ops_t *ops;
    void *pstate;
    double now;             /* time of the last event (-INFINITY before the first) */

    struct job *jobs;
    size_t jobs_len;        /* slots ever used */
    size_t jobs_cap;
    size_t free_head;

    size_t *htab;           /* slot + 1, 0 = empty */
    size_t hcap;            /* power of two */
    size_t hcount;

    size_t *live;
    size_t nlive;
    size_t live_cap;
    size_t *pend;
    size_t npend;
    size_t pend_cap;

    hs_view_t *views;       /* decision scratch */
    /* the pending phases by id: kept from one decision to the next (nids entries,
     * the jobs with 'listed' set), which then only sorts the phases requested in
     * between and merges them in */
    struct idsort { uint64_t id; size_t slot; } *ids;
    size_t nids;
    struct idsort *ids_tmp; /* radix sort buffer (scratch_cap entries) */
    size_t scratch_cap;

    /* buffer tier (nbuffers > 0) */
    struct bnode *nodes;
    double bt;              /* time the nodes' state refers to */
    struct bscratch *bs;
};

/* One buffer node's dynamic state.  Occupancy is piecewise linear between two
 * decisions (slope inflow - drain), clamped to [0, cap]. */
struct bnode {
    double cap;             /* bytes (INFINITY when the platform gave 0) */
    double bw;              /* B_j, bytes/s (B when the platform gave 0) */
    double occ;             /* bytes at s->bt */
    double occ_int;         /* integral of occ from creation to s->bt, byte.s */
    double inflow;          /* bytes/s written in (last decision) */
    double drain;           /* bytes/s drained to the PFS (last decision) */
    double readrate;        /* bytes/s read (last decision) */
    int streams;            /* streams moving data (last decision) */
    int placed;             /* pending phases placed on it */
    bool full;
    /* figures */
    double busy, conc_int, written, read, drained, occ_max, full_time;
    int conc_max;
};

/* ------------------------------------------------------------------ helpers */

int hs_errprintf(hs_error_t *err, int errnum, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof(err->text), fmt, ap);
        va_end(ap);
    }
    errno = errnum;
    return -1;
}

int hs_grow(void *ptrp, size_t *cap, size_t need, size_t elsize)
{
    void **p = ptrp;
    size_t ncap;
    void *np;

    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    if (ncap > SIZE_MAX / elsize || !(np = realloc(*p, ncap * elsize))) {
        errno = ENOMEM;
        return -1;
    }
    *p = np;
    *cap = ncap;
    return 0;
}

/* Slot of job 'id' in jobs[], or NO_SLOT. */
static size_t hfind(const hs_sched_t *s, uint64_t id)
{
    size_t mask, i;

    if (s->hcap == 0)
        return NO_SLOT;
    mask = s->hcap - 1;
    for (i = hs_hash64(id) & mask; s->htab[i]; i = (i + 1) & mask) {
        size_t slot = s->htab[i] - 1;
        if (s->jobs[slot].info.id == id)
            return slot;
    }
    return NO_SLOT;
}

static void hput_raw(size_t *tab, size_t cap, uint64_t id, size_t slot)
{
    size_t mask = cap - 1;
    size_t i = hs_hash64(id) & mask;

    while (tab[i])
        i = (i + 1) & mask;
    tab[i] = slot + 1;
}

static int hreserve(hs_sched_t *s, size_t count)
{
    size_t ncap, i;
    size_t *ntab;

    if (s->hcap && count * 2 <= s->hcap)    /* load factor <= 1/2 */
        return 0;
    ncap = s->hcap ? s->hcap * 2 : 64;
    while (count * 2 > ncap)
        ncap *= 2;
    if (!(ntab = calloc(ncap, sizeof(*ntab))))
        return -1;
    for (i = 0; i < s->hcap; i++) {
        if (s->htab[i]) {
            size_t slot = s->htab[i] - 1;
            hput_raw(ntab, ncap, s->jobs[slot].info.id, slot);
        }
    }
    free(s->htab);
    s->htab = ntab;
    s->hcap = ncap;
    return 0;
}

/* Backward-shift deletion for linear probing. */
static void hdel(hs_sched_t *s, uint64_t id)
{
    size_t mask = s->hcap - 1;
    size_t i = hs_hash64(id) & mask;
    size_t j;

    while (s->htab[i] && s->jobs[s->htab[i] - 1].info.id != id)
        i = (i + 1) & mask;
    if (!s->htab[i])
        return;
    s->htab[i] = 0;
    j = i;
    for (;;) {
        size_t home;
        j = (j + 1) & mask;
        if (!s->htab[j])
            break;
        home = hs_hash64(s->jobs[s->htab[j] - 1].info.id) & mask;
        /* move htab[j] into the hole i if its home is not in (i, j] cyclically */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            s->htab[i] = s->htab[j];
            s->htab[j] = 0;
            i = j;
        }
    }
    s->hcount--;
}

static int check_time(const hs_sched_t *s, double now)
{
    if (!isfinite(now) || now < s->now) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

static bool done_complete(const struct job *j, double done)
{
    return j->vol - done <= HS_EPS_REL * j->vol;
}

/* Completion time of a granted phase at its current rate (j->rate > 0).  Fixed
 * between two decisions: it does not depend on when the phase was last synced. */
static double completion_time(const struct job *j)
{
    return j->t_sync + (j->vol - j->done) / j->rate;
}

/* Progress is integrated lazily, per phase: j->done and j->st.io_wait hold the
 * state at j->t_sync, and the rate is constant until the next decision (which syncs
 * every pending phase).  job_at() computes the state at 'now' >= t_sync. */
static void job_at3(const struct job *j, double now, double *done, double *io_wait,
                    double *bfull)
{
    double dt = now - j->t_sync;

    *done = j->done;
    *io_wait = j->st.io_wait;
    if (bfull)
        *bfull = j->st.buffer_full;
    if (!(dt > 0) || done_complete(j, j->done))
        return;
    if (j->rate > 0) {
        /* the same expression as hs_sched_next_event(): advancing exactly to the
         * time it returned completes the phase exactly */
        double tc = completion_time(j);     /* before *done (may alias j->done) */
        double t0 = j->t_sync;
        if (now >= tc) {
            *done = j->vol;
            if (bfull && j->throttled)
                *bfull += tc - t0;
        }
        else {
            *done = hs_fmin(j->vol, j->done + j->rate * dt);
            if (bfull && j->throttled)
                *bfull += dt;
        }
    }
    else
        *io_wait += dt;
}

static void job_at(const struct job *j, double now, double *done, double *io_wait)
{
    job_at3(j, now, done, io_wait, NULL);
}

static bool phase_complete(const hs_sched_t *s, const struct job *j)
{
    double done, wait;

    job_at(j, s->now, &done, &wait);
    return done_complete(j, done);
}

/* Bring a pending phase's state to s->now: job_at3(j, s->now, &j->done,
 * &j->st.io_wait, &j->st.buffer_full), written out so that it stores only what
 * changes (every decision syncs every pending phase: a granted phase that is not
 * throttled leaves j->st, in other cache lines, alone). */
static inline void sync_job(const hs_sched_t *s, struct job *j)
{
    double now = s->now, dt = now - j->t_sync;

    if (!j->pending || !(j->t_sync < now))
        return;
    if (dt > 0 && !done_complete(j, j->done)) {
        if (j->rate > 0) {
            double tc = completion_time(j);
            if (now >= tc) {
                if (j->throttled)
                    j->st.buffer_full += tc - j->t_sync;
                j->done = j->vol;
            }
            else {
                j->done = hs_fmin(j->vol, j->done + j->rate * dt);
                if (j->throttled)
                    j->st.buffer_full += dt;
            }
        }
        else
            j->st.io_wait += dt;
    }
    j->t_sync = now;
}

/* Move the clock to 'now' (>= s->now, checked by the caller).  O(1): the pending
 * phases are synced lazily. */
static void integrate(hs_sched_t *s, double now)
{
    if (now > s->now || s->now == -INFINITY)
        s->now = now;
}

static struct job *live_job(hs_sched_t *s, uint64_t id)
{
    size_t slot = hfind(s, id);

    if (slot == NO_SLOT || !s->jobs[slot].live)
        return NULL;
    return &s->jobs[slot];
}

/* The live job 'id' for an event at 'now', or NULL with errno = EINVAL (no scheduler,
 * time before the last event) or ENOENT (no such live job). */
static struct job *event_job(hs_sched_t *s, double now, uint64_t id)
{
    struct job *j;

    if (!s || check_time(s, now) < 0) {
        errno = EINVAL;
        return NULL;
    }
    if (!(j = live_job(s, id)))
        errno = ENOENT;
    return j;
}

static void pend_remove(hs_sched_t *s, struct job *j)
{
    size_t pos = j->pend_pos;
    size_t last = s->pend[--s->npend];

    s->pend[pos] = last;
    s->jobs[last].pend_pos = pos;
    j->pending = false;
    j->listed = false;
    j->rate = 0;
    j->weight = 0;
    j->active = false;
}

static void live_remove(hs_sched_t *s, struct job *j)
{
    size_t pos = j->live_pos;
    size_t last = s->live[--s->nlive];

    s->live[pos] = last;
    s->jobs[last].live_pos = pos;
    j->live = false;
}

static int check_policy(const hs_policy_t *pol, hs_policy_t *out, hs_error_t *err)
{
    hs_policy_t p;
    char buf[64];

    if (!pol)
        return hs_errprintf(err, EINVAL, "no policy given");
    p = *pol;
    if ((int)p.kind < 0 || p.kind >= HS_POL__COUNT)
        return hs_errprintf(err, EINVAL, "unknown policy kind %d", (int)p.kind);
    if (p.priority && p.kind != HS_POL_ROUNDROBIN && p.kind != HS_POL_MINDILATION
        && p.kind != HS_POL_MAXSYSEFF && p.kind != HS_POL_MINMAX) {
        p.priority = false;
        return hs_errprintf(err, EINVAL, "policy %s has no -priority variant",
                            hs_policy_name(&p, buf, sizeof(buf)));
    }
    if (!(p.max_wait >= 0) || !isfinite(p.max_wait))
        return hs_errprintf(err, EINVAL, "max_wait must be a duration >= 0 (0: off)");
    if (p.kind == HS_POL_MINMAX && !(p.gamma >= 0 && p.gamma <= 1))
        return hs_errprintf(err, EINVAL, "minmax: gamma %g is out of range "
                            "(expected 0 <= gamma <= 1)", p.gamma);
    if (p.kind == HS_POL_SET || p.kind == HS_POL_SET_FAIRSHARE
        || p.kind == HS_POL_PRIORITY_SHARING) {
        if (p.set_base == 0)
            p.set_base = 10;
        if (!(p.set_base > 1) || !isfinite(p.set_base))
            return hs_errprintf(err, EINVAL,
                                "IO-Sets: base %g is invalid (expected a number > 1)",
                                p.set_base);
    }
    *out = p;
    return 0;
}

static int policy_start(hs_sched_t *s, const hs_policy_t *pol,
                        const hs_policy_ops_t **opsp, void **statep, hs_error_t *err)
{
    const hs_policy_ops_t *ops = hs_policy_ops(pol->kind);
    void *state = NULL;
    char buf[64];

    if (!ops)
        return hs_errprintf(err, ENOTSUP, "policy %s is not available in this build",
                            hs_policy_name(pol, buf, sizeof(buf)));
    if (ops->create) {
        hs_ctx_t ctx = { .plat = &s->plat, .pol = pol, .sched = s, .now = s->now };
        if (ops->create(&ctx, &state, err) < 0)
            return -1;
    }
    *opsp = ops;
    *statep = state;
    return 0;
}

/* ------------------------------------------------------------------ buffer nodes */

static bool has_buffers(const hs_sched_t *s)
{
    return s->plat.nbuffers > 0;
}

/* Node b advanced by dt >= 0 at its current rates (pure): occupancy moves at
 * inflow - drain and stops at 0 or at the capacity; past that point the node passes
 * data through (empty: drains what comes in; full: takes what drains). */
static void node_at(const struct bnode *b, double dt, struct bnode *o)
{
    double slope = b->inflow - b->drain;
    double tl = dt;                     /* linear part */
    double rest = 0;                    /* clamped part */
    double occ1;

    *o = *b;
    if (!(dt > 0) || !isfinite(dt))
        return;
    if (slope > 0 && isfinite(b->cap)) {
        double th = (b->cap - b->occ) / slope;
        if (th < dt) {
            tl = th > 0 ? th : 0;
            rest = dt - tl;
        }
    }
    else if (slope < 0) {
        double th = b->occ / -slope;
        if (th < dt) {
            tl = th > 0 ? th : 0;
            rest = dt - tl;
        }
    }
    occ1 = b->occ + slope * tl;
    if (rest > 0)
        occ1 = slope > 0 ? b->cap : 0;
    if (occ1 < 0)
        occ1 = 0;
    if (occ1 > b->cap)
        occ1 = b->cap;
    o->occ = occ1;
    o->occ_int = b->occ_int + 0.5 * (b->occ + occ1) * tl + occ1 * rest;
    if (slope > 0) {                    /* clamped full: inflow limited to drain */
        o->written = b->written + b->inflow * tl + b->drain * rest;
        o->drained = b->drained + b->drain * dt;
    }
    else {                              /* clamped empty: drain limited to inflow */
        o->written = b->written + b->inflow * dt;
        o->drained = b->drained + b->drain * tl + b->inflow * rest;
    }
    o->read = b->read + b->readrate * dt;
    if (b->streams > 0) {
        o->busy = b->busy + dt;
        o->conc_int = b->conc_int + b->streams * dt;
    }
    if (b->full || (rest > 0 && slope > 0))
        o->full_time = b->full_time + (b->full ? dt : rest);
    if (occ1 > o->occ_max)
        o->occ_max = occ1;
}

static bool node_empty(const struct bnode *b)
{
    return b->occ <= HS_EPS_REL * (isfinite(b->cap) ? fmax(b->cap, 1.) : 1.);
}

static bool node_full(const struct bnode *b)
{
    return isfinite(b->cap) && b->cap - b->occ <= HS_EPS_REL * b->cap;
}

static void nodes_sync(hs_sched_t *s)
{
    int i;

    if (!has_buffers(s))
        return;
    if (!isfinite(s->bt)) {
        s->bt = s->now;
        return;
    }
    if (!(s->now > s->bt))
        return;
    for (i = 0; i < s->plat.nbuffers; i++) {
        struct bnode o;
        node_at(&s->nodes[i], s->now - s->bt, &o);
        if (node_empty(&o))
            o.occ = 0;
        else if (node_full(&o))
            o.occ = o.cap;
        s->nodes[i] = o;
    }
    s->bt = s->now;
}

/* Occupancy integral of node i at s->now. */
static double node_int_now(const hs_sched_t *s, int i)
{
    struct bnode o;

    node_at(&s->nodes[i], s->now - s->bt, &o);
    return o.occ_int;
}

/* The nodes a job may use: its allocation, or every node when it has none
 * (except under static, where no allocation means the PFS). */
static int job_nodes(const hs_sched_t *s, const struct job *j, const int **list)
{
    *list = j->alloc;
    if (j->info.nalloc > 0)
        return j->info.nalloc;
    if (s->pol.kind == HS_POL_STATIC)
        return 0;
    *list = NULL;                       /* all: 0..nbuffers-1 */
    return s->plat.nbuffers;
}

static int nodes_at(const int *list, int k)
{
    return list ? list[k] : k;
}

/* Stripe count of a job's phases. */
static int job_stripe(const hs_sched_t *s, const struct job *j)
{
    const int *list;
    int n = job_nodes(s, j, &list);
    int m;

    if (s->pol.kind == HS_POL_STATIC)
        return n;
    m = j->info.stripe > 0 ? j->info.stripe : 1;
    return m < n ? m : n;
}

static double buffers_sum_int(const hs_sched_t *s, const struct job *j)
{
    const int *list;
    int n = job_nodes(s, j, &list), k;
    double sum = 0;

    for (k = 0; k < n; k++)
        sum += node_int_now(s, nodes_at(list, k));
    return sum;
}

/* Job-level cap with buffers: min(beta b, sum of the 'stripe' largest B_j). */
static double job_cap_buffers(const hs_sched_t *s, const struct job *j)
{
    const int *list;
    int n = job_nodes(s, j, &list), m = job_stripe(s, j), k, r;
    double sum = 0, prev = INFINITY;
    int taken = 0;

    if (n == 0 || m == 0)
        return hs_fmin(j->info.nodes * s->plat.node_bw, s->plat.bw);
    /* m largest bandwidths (m passes over n; m and n are small) */
    for (r = 0; r < m; r++) {
        double best = -1;
        int cnt = 0;
        for (k = 0; k < n; k++) {
            double bw = s->nodes[nodes_at(list, k)].bw;
            if (bw < prev && bw > best)
                best = bw;
        }
        if (best < 0)
            break;
        for (k = 0; k < n; k++)
            cnt += s->nodes[nodes_at(list, k)].bw == best;
        while (cnt-- > 0 && taken < m) {
            sum += best;
            taken++;
        }
        prev = best;
        if (taken >= m)
            break;
    }
    return hs_fmin(j->info.nodes * s->plat.node_bw, sum);
}

static double place_alone_bw(const hs_sched_t *s, const struct job *j)
{
    double sum = 0;
    int k;

    if (j->nplace == 0)
        return hs_fmin(j->info.nodes * s->plat.node_bw, s->plat.bw);
    for (k = 0; k < j->nplace; k++)
        sum += s->nodes[j->place[k]].bw;
    return hs_fmin(j->info.nodes * s->plat.node_bw, sum);
}

/* Place the pending phase of j on 'nodes'; its rate alone there (alone_bw) is a
 * function of the placement and of constants, so it is computed here once rather
 * than at every decision. */
static int set_place(const hs_sched_t *s, struct job *j, const int *nodes, int n)
{
    if (n > j->place_cap) {
        int *p = realloc(j->place, (size_t)n * sizeof(*p));
        if (!p)
            return -1;
        j->place = p;
        j->place_cap = n;
    }
    if (n > 0)
        memcpy(j->place, nodes, (size_t)n * sizeof(*nodes));
    j->nplace = n;
    j->place0 = n > 0 ? nodes[0] : -1;
    j->placed = true;
    j->alone_bw = place_alone_bw(s, j);
    return 0;
}

/* Scratch of a buffer-mode decision (grown, never shrunk). */
struct bscratch {
    size_t ncap, scap, ncap_nodes;
    hs_view_t *gv;          /* views of one group */
    size_t *gidx;           /* group member -> stripe id */
    size_t *off;            /* n + 1: first stripe of phase i */
    size_t *sphase;         /* stripe -> phase index */
    int *snode;             /* stripe -> node */
    unsigned char *sflag;   /* stripe -> SF_* of its phase: the per-node loops test
                               these bytes instead of loading the phase's view */
    double *sgrant, *srate;
    size_t *sorder;         /* stripes sorted by node */
    size_t *nfirst;         /* nbuffers + 1 */
    double *pgrant, *prate;
    double *pcap;           /* phase -> its view's cap (compact: the per-phase
                               passes do not load the views' cache lines) */
    double *wcap, *wout;
    hs_wf_item_t *wsc;
    int *tmp;               /* placement scratch */
    size_t ns;              /* stripes (add_stripes()) */
    size_t *direct;         /* phases sent to the PFS (no stripe), in id order */
    size_t ndirect;
    bool *pthrottled;       /* phase -> limited by a full node (job.throttled) */
};

#define SF_READ 1           /* the phase reads (else writes) */
#define SF_DONE 2           /* the phase is complete in the model */

static void bscratch_free(struct bscratch *b)
{
    if (!b)
        return;
    free(b->gv);
    free(b->gidx);
    free(b->off);
    free(b->sphase);
    free(b->snode);
    free(b->sflag);
    free(b->direct);
    free(b->pthrottled);
    free(b->sgrant);
    free(b->srate);
    free(b->sorder);
    free(b->nfirst);
    free(b->pgrant);
    free(b->prate);
    free(b->pcap);
    free(b->wcap);
    free(b->wout);
    free(b->wsc);
    free(b->tmp);
    free(b);
}

static int bscratch_reserve(hs_sched_t *s, size_t n, size_t ns)
{
    struct bscratch *b = s->bs;
    size_t nb = (size_t)s->plat.nbuffers;
    size_t nn = n + nb + 1;             /* flows of the PFS water-filling */
    size_t need = ns > nn ? ns : nn;

    if (!b) {
        if (!(b = calloc(1, sizeof(*b))))
            return -1;
        s->bs = b;
    }
    if (n + 1 > b->ncap) {
        size_t c = n + 1 > 64 ? n + 1 : 64;
        void *p;
#define RE(f) if (!(p = realloc(b->f, c * sizeof(*b->f)))) return -1; b->f = p
        RE(off); RE(pgrant); RE(prate); RE(pcap); RE(direct); RE(pthrottled);
#undef RE
        b->ncap = c;
    }
    if (need > b->scap) {
        size_t c = need > 64 ? need : 64;
        void *p;
#define RE(f) if (!(p = realloc(b->f, c * sizeof(*b->f)))) return -1; b->f = p
        RE(gv); RE(gidx); RE(sphase); RE(snode); RE(sflag); RE(sgrant); RE(srate);
        RE(sorder);
        RE(wcap); RE(wout); RE(wsc);
#undef RE
        b->scap = c;
    }
    if (nb + 1 > b->ncap_nodes) {
        void *p;
        if (!(p = realloc(b->nfirst, (nb + 1) * sizeof(*b->nfirst))))
            return -1;
        b->nfirst = p;
        if (!(p = realloc(b->tmp, (nb + 1) * sizeof(*b->tmp))))
            return -1;
        b->tmp = p;
        b->ncap_nodes = nb + 1;
    }
    return 0;
}

static int cmp_wf_key(const void *a, const void *b)
{
    const hs_wf_item_t *x = a;
    const hs_wf_item_t *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Max-min fair sharing of 'total' among n flows with caps: out[i] = min(cap[i],
 * level).  O(n log n). */
static void waterfill(const double *cap, double *out, size_t n, double total,
                      hs_wf_item_t *sc)
{
    double avail = total;
    size_t i;

    for (i = 0; i < n; i++) {
        sc[i].key = cap[i] > 0 ? cap[i] : 0;
        sc[i].idx = i;
        out[i] = 0;
    }
    /* (key, idx) is a total order: skipping the sort when the entries are already
     * in order (equal caps, the common case) gives the same result */
    for (i = 1; i < n && cmp_wf_key(&sc[i - 1], &sc[i]) < 0; i++)
        ;
    if (i < n)
        qsort(sc, n, sizeof(*sc), cmp_wf_key);
    for (i = 0; i < n; i++) {
        double level = avail / (double)(n - i);
        if (sc[i].key <= level) {
            out[sc[i].idx] = sc[i].key;
            avail -= sc[i].key;
            if (avail < 0)
                avail = 0;
            continue;
        }
        for (; i < n; i++)
            out[sc[i].idx] = level;
        return;
    }
}

/* MSCA of a node for a mix of nw write and nr read streams (c = nw + nr). */
static double mix_bw(const hs_sched_t *s, int node, int nw, int nr)
{
    const hs_buffer_t *b = &s->plat.buffers[node];
    int c = nw + nr;
    double m;

    if (c <= 0)
        return s->nodes[node].bw;
    m = (nw * hs_msca(b, HS_DIR_WRITE, c) + nr * hs_msca(b, HS_DIR_READ, c)) / c;
    return s->nodes[node].bw / (1. + m);
}

/*
 * Place phase i (job j), which has no placement yet (policies without 'places'):
 * the m nodes of the job's allocation with the fewest placed phases, then the most
 * free space, then the lowest index; static: the whole allocation.  Counts it in
 * placed[].  hs_sched_decide() counts the phases placed already (not complete),
 * then calls this for the others in id order.
 */
static int place_phase(hs_sched_t *s, size_t i, struct job *j)
{
    struct bscratch *bs = s->bs;
    const int *list;
    int na, m, r, k;

    na = job_nodes(s, j, &list);
    m = job_stripe(s, j);
    if (s->pol.kind == HS_POL_STATIC) {
        for (r = 0; r < na; r++)
            bs->tmp[r] = nodes_at(list, r);
        m = na;
    }
    else {
        for (r = 0; r < m; r++) {
            int best = -1;
            for (k = 0; k < na; k++) {
                int x = nodes_at(list, k);
                const struct bnode *bx = &s->nodes[x];
                int q;
                bool taken = false;
                for (q = 0; q < r; q++)
                    taken = taken || bs->tmp[q] == x;
                if (taken)
                    continue;
                if (best < 0) {
                    best = x;
                    continue;
                }
                {
                    const struct bnode *bb = &s->nodes[best];
                    double fx = bx->cap - bx->occ, fb = bb->cap - bb->occ;
                    if (bx->placed < bb->placed
                        || (bx->placed == bb->placed
                            && (fx > fb || (fx == fb && x < best))))
                        best = x;
                }
            }
            bs->tmp[r] = best;
        }
    }
    if (set_place(s, j, bs->tmp, m) < 0)
        return -1;
    if (!s->views[i].complete) {
        for (r = 0; r < m; r++)
            s->nodes[bs->tmp[r]].placed++;
    }
    return 0;
}

/* The stripes of phase i (job j, placed), appended to bs's stripe arrays; its
 * view takes the placement and its cap there. */
static void add_stripes(hs_sched_t *s, size_t i, const struct job *j)
{
    struct bscratch *bs = s->bs;
    hs_view_t *v = &s->views[i];
    unsigned char f = (v->dir == HS_DIR_READ ? SF_READ : 0) | (v->complete ? SF_DONE : 0);
    size_t ns = bs->ns;
    int k;

    bs->off[i] = ns;
    v->cap = j->alone_bw;               /* set_place() computed it */
    bs->pcap[i] = v->cap;
    v->nplace = j->nplace;
    v->place = j->place;
    v->buffer = j->nplace > 0 ? j->place0 : -1;
    for (k = 0; k < j->nplace; k++) {
        bs->sphase[ns] = i;
        bs->snode[ns] = k == 0 ? j->place0 : j->place[k];
        bs->sflag[ns] = f;
        bs->sgrant[ns] = 0;
        bs->srate[ns] = 0;
        ns++;
    }
    if (j->nplace == 0)
        bs->direct[bs->ndirect++] = i;
    bs->pgrant[i] = 0;
    bs->prate[i] = 0;
    bs->pthrottled[i] = false;
    bs->ns = ns;
}

/* A policy with 'places' chose v->buffer: apply it to phases not started. */
static int apply_policy_places(hs_sched_t *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        hs_view_t *v = &s->views[i];
        struct job *j = &s->jobs[s->ids[i].slot];
        const int *list;
        int na = job_nodes(s, j, &list), k;
        bool ok = v->buffer == -1;
        if (j->placed && j->done > 0)
            continue;                   /* started: its placement is fixed */
        for (k = 0; k < na && !ok; k++)
            ok = nodes_at(list, k) == v->buffer;
        if (!ok) {
            errno = EPROTO;
            return -1;
        }
        if (set_place(s, j, &v->buffer, v->buffer < 0 ? 0 : 1) < 0)
            return -1;
    }
    return 0;
}

/* Check the policy's grants v[0..n[ against the model's constraints: each bw finite
 * and 0 <= bw <= cap, their sum <= B (both within HS_EPS_REL).  A complete phase's bw
 * becomes 0; with 'clamp', each bw is also clamped to its cap before it counts in
 * the sum.  0, or -1 with errno = EPROTO. */
static int check_grants(hs_view_t *v, size_t n, double B, bool clamp)
{
    double sum = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        if (!isfinite(v[i].bw) || v[i].bw < 0
            || v[i].bw > v[i].cap * (1 + HS_EPS_REL)) {
            errno = EPROTO;
            return -1;
        }
        if (v[i].complete)
            v[i].bw = 0;
        if (clamp)
            v[i].bw = hs_fmin(v[i].bw, v[i].cap);
        sum += v[i].bw;
    }
    if (sum > B * (1 + HS_EPS_REL)) {
        errno = EPROTO;
        return -1;
    }
    return 0;
}

/* Excess wait of a phase: the time since its request beyond what moving its done
 * bytes at its cap takes (a phase moving at its cap does not wait; one held at 0, or
 * at a crumb, does). */
static double excess_wait(double now, double request, double done, double cap)
{
    return now - request - (cap > 0 ? done / cap : 0);
}

/* The max-wait guard (hs_policy_t.max_wait, doc/policies.md): whatever the policy
 * decided, a pending phase whose excess wait reached max_wait gets at least
 * min(cap, B / m), m = such phases (+1 when the policy grants others, which keep
 * that share between them: they are scaled down to fit B), until it ends.  So a
 * phase waits at most max_wait before it gets a real share (a crumb counts as
 * waiting), whatever the policy's objective. */
static void guard_waits(hs_sched_t *s, double now, size_t n)
{
    double B = s->plat.bw, mw = s->pol.max_wait, given = 0, others = 0;
    size_t m = 0, granted = 0, i;

    for (i = 0; i < n; i++) {
        hs_view_t *v = &s->views[i];
        if (!v->complete && excess_wait(now, v->request, v->volume - v->remaining,
                                        v->cap) >= mw * (1 - HS_EPS_REL))
            m++;
        else if (v->bw > 0)
            granted++;
    }
    if (m == 0)
        return;
    /* the phases the policy grants keep one share between them */
    if (granted > 0)
        m++;
    for (i = 0; i < n; i++) {
        hs_view_t *v = &s->views[i];
        if (!v->complete && excess_wait(now, v->request, v->volume - v->remaining,
                                        v->cap) >= mw * (1 - HS_EPS_REL)) {
            double g = hs_fmin(v->cap, B / (double)m);
            if (v->bw < g)
                v->bw = g;
            v->weight = v->bw / B;
            v->start = now;
            given += v->bw;
        } else
            others += v->bw;
    }
    if (given + others > B) {
        double fg = given > B ? B / given : 1;
        double fo = others > 0 && given < B ? (B - given) / others : 0;
        for (i = 0; i < n; i++) {
            hs_view_t *v = &s->views[i];
            bool guarded = !v->complete
                && excess_wait(now, v->request, v->volume - v->remaining, v->cap)
                   >= mw * (1 - HS_EPS_REL);
            v->bw *= guarded ? fg : fo;
            v->weight = v->bw > 0 ? v->bw / B : 0;
        }
    }
}

/* Call the policy on the views of one group (indices bs->gidx[] into the stripe
 * arrays), with B = 'B'.  Fills bs->sgrant of the members. */
static int group_decide(hs_sched_t *s, const hs_ctx_t *ctx, size_t g, double B,
                        bool stripes)
{
    struct bscratch *bs = s->bs;
    hs_platform_t plat = s->plat;
    hs_ctx_t c2 = *ctx;
    size_t q;

    plat.bw = B;
    c2.plat = &plat;
    for (q = 0; q < g; q++) {
        size_t st = bs->gidx[q];
        size_t i = stripes ? bs->sphase[st] : st;
        size_t m = stripes ? bs->off[i + 1] - bs->off[i] : 1;   /* nplace */
        hs_view_t *v = &bs->gv[q];
        *v = s->views[i];
        if (m != 1) {                   /* x / 1 == x: one stripe needs none */
            v->cap /= (double)m;
            v->volume /= (double)m;
            v->remaining /= (double)m;
        }
        v->cap = hs_fmin(v->cap, B);
        v->bw = 0;
        v->weight = 0;
        v->start = INFINITY;
    }
    if (g > 0 && s->ops->decide(s->pstate, &c2, bs->gv, g) < 0)
        return -1;
    if (check_grants(bs->gv, g, B, false) < 0)
        return -1;
    for (q = 0; q < g; q++) {
        size_t st = bs->gidx[q];
        size_t i = stripes ? bs->sphase[st] : st;
        if (stripes)
            bs->sgrant[st] = hs_fmin(bs->gv[q].bw, bs->gv[q].cap);
        else
            bs->pgrant[i] = hs_fmin(bs->gv[q].bw, bs->gv[q].cap);
        if (bs->gv[q].bw > 0 || !stripes) {
            s->views[i].weight = bs->gv[q].weight;
            if (bs->gv[q].start < s->views[i].start)
                s->views[i].start = bs->gv[q].start;
        }
    }
    return 0;
}

/* Phase i striped over m > 0 stripes: m x the least of its stripes' x[], at most
 * its cap. */
static inline double stripes_min(const hs_sched_t *s, size_t i, const double *x)
{
    const struct bscratch *bs = s->bs;
    size_t m = bs->off[i + 1] - bs->off[i], st;
    double mn = INFINITY;

    if (m == 1) {
        /* the usual single stripe: hs_fmin(INFINITY, x) is x, or INFINITY when x
         * is a NaN, and 1 x mn is mn */
        mn = x[bs->off[i]];
        return hs_fmin(mn != mn ? INFINITY : mn, bs->pcap[i]);
    }
    for (st = bs->off[i]; st < bs->off[i + 1]; st++)
        mn = hs_fmin(mn, x[st]);
    return hs_fmin((double)m * mn, bs->pcap[i]);
}

/* Each of phase i's m stripes gets v / m (exactly v for the usual single stripe). */
static inline void stripes_spread(const struct bscratch *bs, size_t i, double v, double *x)
{
    size_t m = bs->off[i + 1] - bs->off[i], st;

    if (m == 1)
        x[bs->off[i]] = v;
    else
        for (st = bs->off[i]; st < bs->off[i + 1]; st++)
            x[st] = v / (double)m;
}

/* phase rate = m x min over its stripes of the stripe rate; stripes follow it. */
static void stripes_follow(hs_sched_t *s, size_t n)
{
    struct bscratch *bs = s->bs;
    size_t i;

    for (i = 0; i < n; i++) {
        size_t m = bs->off[i + 1] - bs->off[i];
        if (m == 0)
            continue;
        bs->prate[i] = stripes_min(s, i, bs->srate);
        stripes_spread(bs, i, bs->prate[i], bs->srate);
    }
}

/* Share each node's BW(c) among its granted stripes, capped by 'caps' (per stripe). */
static void device_share(hs_sched_t *s, const double *caps)
{
    struct bscratch *bs = s->bs;
    int k;

    for (k = 0; k < s->plat.nbuffers; k++) {
        size_t a = bs->nfirst[k], b = bs->nfirst[k + 1], q, g = 0;
        int nw = 0, nr = 0;
        for (q = a; q < b; q++) {
            size_t st = bs->sorder[q];
            if (caps[st] > 0) {
                if (bs->sflag[st] & SF_READ)
                    nr++;
                else
                    nw++;
                bs->wcap[g++] = caps[st];
            }
        }
        waterfill(bs->wcap, bs->wout, g, mix_bw(s, k, nw, nr), bs->wsc);
        g = 0;
        for (q = a; q < b; q++) {
            size_t st = bs->sorder[q];
            bs->srate[st] = caps[st] > 0 ? bs->wout[g++] : 0;
        }
    }
}

/*
 * One decision on a platform with buffers (doc/buffer-tier.md §3):
 *   1. placement; 2. the policy's grants (per node, or once for 'places'
 *   policies; static: none); 3. the MSCA model per node; 4. the PFS shared by the
 *   drains and the phases sent to it; 5. full nodes limit their writers to their
 *   drain.  Leaves the rates in s->views[i].bw.
 */
static int decide_buffers(hs_sched_t *s, const hs_ctx_t *ctx, size_t n)
{
    struct bscratch *bs = s->bs;        /* reserved by hs_sched_decide() */
    int nb = s->plat.nbuffers, k;
    size_t i, st, ns, nf;
    double B = s->plat.bw;
    bool from_stripes = false;

    /* 1. placement, and the stripes: hs_sched_decide() did both while it filled
     * the views, except for the policies that place (views' buffer set there) */
    if (s->ops->places) {
        if (n > 0 && s->ops->decide(s->pstate, ctx, s->views, n) < 0)
            return -1;
        if (apply_policy_places(s, n) < 0)
            return -1;
        for (i = 0; i < n; i++)
            add_stripes(s, i, &s->jobs[s->ids[i].slot]);
    }
    ns = bs->ns;
    bs->off[n] = ns;

    /* stripes by node (counting sort) */
    for (k = 0; k <= nb; k++)
        bs->nfirst[k] = 0;
    for (st = 0; st < ns; st++)
        bs->nfirst[bs->snode[st] + 1]++;
    for (k = 0; k < nb; k++)
        bs->nfirst[k + 1] += bs->nfirst[k];
    for (k = 0; k < nb; k++)
        s->nodes[k].streams = (int)bs->nfirst[k];      /* reused as a cursor */
    for (st = 0; st < ns; st++)
        bs->sorder[s->nodes[bs->snode[st]].streams++] = st;

    /* 2. grants */
    if (s->ops->places) {
        for (i = 0; i < n; i++) {
            hs_view_t *v = &s->views[i];
            if (!isfinite(v->bw) || v->bw < 0) {
                errno = EPROTO;
                return -1;
            }
            bs->pgrant[i] = v->complete ? 0 : hs_fmin(v->bw, v->cap);
        }
    }
    else if (s->pol.kind == HS_POL_STATIC) {
        for (i = 0; i < n; i++)
            bs->pgrant[i] = s->views[i].complete ? 0 : s->views[i].cap;
    }
    else {
        size_t g = 0;
        /* the PFS group */
        for (g = 0; g < bs->ndirect; g++)
            bs->gidx[g] = bs->direct[g];
        if (g > 0 && group_decide(s, ctx, g, B, false) < 0)
            return -1;
        /* one group per node, B = BW(c) of the streams it lets run */
        for (k = 0; k < nb; k++) {
            size_t a = bs->nfirst[k], b = bs->nfirst[k + 1], q;
            int nw = 0, nr = 0, c, it;
            g = 0;
            for (q = a; q < b; q++) {
                size_t x = bs->sorder[q];
                if (bs->sflag[x] & SF_DONE)
                    continue;
                bs->gidx[g++] = x;
                if (bs->sflag[x] & SF_READ)
                    nr++;
                else
                    nw++;
            }
            if (g == 0)
                continue;
            c = nw + nr;
            for (it = 0; it < 3; it++) {
                int gw = 0, gr = 0;
                if (group_decide(s, ctx, g, mix_bw(s, k, nw, nr), true) < 0)
                    return -1;
                for (q = 0; q < g; q++) {
                    if (bs->sgrant[bs->gidx[q]] > 0) {
                        if (bs->sflag[bs->gidx[q]] & SF_READ)
                            gr++;
                        else
                            gw++;
                    }
                }
                if (gw + gr == c || gw + gr == 0)
                    break;
                nw = gw;
                nr = gr;
                c = gw + gr;
            }
        }
        /* a striped phase's grant is m x the least of its stripes' grants: done
         * in the next loop, with which it shares the pass */
        from_stripes = true;
    }

    /* 3. the device model: BW(c) of each node shared max-min among its granted
     * stripes (twice: what a stripe cannot use because of another node goes to
     * the others) */
    for (i = 0; i < n; i++) {
        size_t m = bs->off[i + 1] - bs->off[i];
        if (m == 0) {
            bs->prate[i] = bs->pgrant[i];
            continue;
        }
        if (from_stripes)
            bs->pgrant[i] = stripes_min(s, i, bs->sgrant);
        stripes_spread(bs, i, bs->pgrant[i], bs->sgrant);
    }
    device_share(s, bs->sgrant);
    /* second pass: a stripe is capped by what its phase's other stripes got, and
     * what it leaves goes to the others on its node */
    for (i = 0; i < n; i++) {
        size_t m = bs->off[i + 1] - bs->off[i];
        if (m == 1) {                   /* pgrant / 1, and no other stripe */
            bs->sgrant[bs->off[i]] = bs->pgrant[i];
            continue;
        }
        for (st = bs->off[i]; st < bs->off[i + 1]; st++) {
            double c = bs->pgrant[i] / (double)m;
            size_t t2;
            for (t2 = bs->off[i]; t2 < bs->off[i + 1]; t2++) {
                if (t2 != st)
                    c = hs_fmin(c, bs->srate[t2]);
            }
            bs->sgrant[st] = c;
        }
    }
    device_share(s, bs->sgrant);
    stripes_follow(s, n);

    /* 4. the PFS: max-min among the drains and the direct phases */
    for (k = 0; k < nb; k++) {
        struct bnode *b = &s->nodes[k];
        double in = 0;
        size_t q;
        for (q = bs->nfirst[k]; q < bs->nfirst[k + 1]; q++) {
            size_t x = bs->sorder[q];
            if (!(bs->sflag[x] & SF_READ))
                in += bs->srate[x];
        }
        b->inflow = in;
        /* a node holding data drains at up to B_j; an empty one passes through
         * what comes in */
        bs->wcap[k] = node_empty(b) ? hs_fmin(b->bw, in) : b->bw;
    }
    for (nf = 0; nf < bs->ndirect; nf++)
        bs->wcap[nb + nf] = bs->pgrant[bs->direct[nf]];
    waterfill(bs->wcap, bs->wout, nb + bs->ndirect, B, bs->wsc);
    for (k = 0; k < nb; k++)
        s->nodes[k].drain = bs->wout[k];
    for (nf = 0; nf < bs->ndirect; nf++)
        bs->prate[bs->direct[nf]] = bs->wout[nb + nf];

    /* 5. full nodes: writers get what drains (pthrottled[] was reset by
     * add_stripes(); the store loop copies it into the jobs) */
    for (k = 0; k < nb; k++) {
        struct bnode *b = &s->nodes[k];
        size_t q, g = 0;
        b->full = node_full(b);
        if (!b->full || !(b->inflow > b->drain * (1 + HS_EPS_REL)))
            continue;
        for (q = bs->nfirst[k]; q < bs->nfirst[k + 1]; q++) {
            size_t x = bs->sorder[q];
            if (!(bs->sflag[x] & SF_READ) && bs->srate[x] > 0)
                bs->wcap[g++] = bs->srate[x];
        }
        waterfill(bs->wcap, bs->wout, g, b->drain, bs->wsc);
        g = 0;
        for (q = bs->nfirst[k]; q < bs->nfirst[k + 1]; q++) {
            size_t x = bs->sorder[q];
            if (!(bs->sflag[x] & SF_READ) && bs->srate[x] > 0) {
                if (bs->wout[g] < bs->srate[x])
                    bs->pthrottled[bs->sphase[x]] = true;
                bs->srate[x] = bs->wout[g++];
            }
        }
    }
    stripes_follow(s, n);

    /* the nodes' rates from the final stripe rates */
    for (k = 0; k < nb; k++) {
        struct bnode *b = &s->nodes[k];
        size_t q;
        double in = 0, rd = 0;
        int c = 0;
        for (q = bs->nfirst[k]; q < bs->nfirst[k + 1]; q++) {
            size_t x = bs->sorder[q];
            if (bs->srate[x] <= 0)
                continue;
            c++;
            if (bs->sflag[x] & SF_READ)
                rd += bs->srate[x];
            else
                in += bs->srate[x];
        }
        b->inflow = in;
        b->readrate = rd;
        b->streams = c;
        if (c > b->conc_max)
            b->conc_max = c;
        if (node_empty(b))
            b->drain = hs_fmin(b->drain, in);          /* empty: drains what comes */
    }
    /* the final rates, checked as check_grants(views, n, INFINITY, false) would
     * (in the same pass): each within its cap (complete phases have 0); the
     * nodes' model, not B, bounds their sum */
    for (i = 0; i < n; i++) {
        hs_view_t *v = &s->views[i];
        v->bw = v->complete ? 0 : hs_fmin(bs->prate[i], v->cap);
        if (s->pol.kind == HS_POL_STATIC || s->ops->places) {
            if (v->bw > 0 && !(v->weight > 0))
                v->weight = v->bw / fmax(v->cap, 1e-300);
        }
        if (!isfinite(v->bw) || v->bw < 0 || v->bw > v->cap * (1 + HS_EPS_REL)) {
            errno = EPROTO;
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ lifecycle */

hs_sched_t *hs_sched_create(const hs_platform_t *plat, const hs_policy_t *pol,
                            hs_error_t *err)
{
    hs_sched_t *s = NULL;
    hs_policy_t p;
    int i;

    if (!plat) {
        hs_errprintf(err, EINVAL, "no platform given");
        return NULL;
    }
    if (plat->nodes < 1) {
        hs_errprintf(err, EINVAL, "platform: nodes must be >= 1 (got %d)",
                     plat->nodes);
        return NULL;
    }
    if (!(plat->node_bw > 0) || !isfinite(plat->node_bw)) {
        hs_errprintf(err, EINVAL, "platform: node bandwidth b must be > 0 (got %g)",
                     plat->node_bw);
        return NULL;
    }
    if (!(plat->bw > 0) || !isfinite(plat->bw)) {
        hs_errprintf(err, EINVAL, "platform: I/O bandwidth B must be > 0 (got %g)",
                     plat->bw);
        return NULL;
    }
    if (plat->nbuffers < 0 || (plat->nbuffers > 0 && !plat->buffers)) {
        hs_errprintf(err, EINVAL, "platform: invalid buffer list (%d buffers)",
                     plat->nbuffers);
        return NULL;
    }
    for (i = 0; i < plat->nbuffers; i++) {
        const hs_buffer_t *b = &plat->buffers[i];
        int k;
        bool ok = !(b->nmsca < 0 || b->nmsca > 16 || b->nmsca_read < 0
                    || b->nmsca_read > 16 || !(b->capacity >= 0)
                    || !(b->bandwidth >= 0) || isinf(b->bandwidth));
        for (k = 0; ok && k < b->nmsca; k++)
            ok = b->msca[k] > -1 && isfinite(b->msca[k]);
        for (k = 0; ok && k < b->nmsca_read; k++)
            ok = b->msca_read[k] > -1 && isfinite(b->msca_read[k]);
        if (!ok) {
            hs_errprintf(err, EINVAL, "platform: buffer %d (%.*s) is invalid", i,
                         (int)sizeof(b->name), b->name);
            return NULL;
        }
    }
    if (check_policy(pol, &p, err) < 0)
        return NULL;
    if (!(s = calloc(1, sizeof(*s))))
        goto nomem;
    s->plat = *plat;
    s->now = -INFINITY;
    s->free_head = NO_SLOT;
    if (plat->nbuffers > 0) {
        if (!(s->buffers = calloc(plat->nbuffers, sizeof(*s->buffers))))
            goto nomem;
        memcpy(s->buffers, plat->buffers, plat->nbuffers * sizeof(*s->buffers));
    }
    s->plat.buffers = s->buffers;
    if (plat->nbuffers > 0) {
        if (!(s->nodes = calloc(plat->nbuffers, sizeof(*s->nodes))))
            goto nomem;
        for (i = 0; i < plat->nbuffers; i++) {
            const hs_buffer_t *b = &s->buffers[i];
            s->nodes[i].cap = b->capacity > 0 ? b->capacity : INFINITY;
            s->nodes[i].bw = b->bandwidth > 0 ? b->bandwidth : plat->bw;
        }
    }
    s->bt = -INFINITY;
    s->pol = p;
    if (policy_start(s, &s->pol, &s->ops, &s->pstate, err) < 0)
        goto error;
    return s;
nomem:
    hs_errprintf(err, ENOMEM, "out of memory");
error:
    hs_sched_destroy(s);
    return NULL;
}

void hs_sched_destroy(hs_sched_t *s)
{
    int saved = errno;
    size_t i;

    if (s) {
        if (s->ops && s->ops->destroy)
            s->ops->destroy(s->pstate);
        for (i = 0; i < s->jobs_len; i++) {
            free(s->jobs[i].alloc);
            free(s->jobs[i].place);
        }
        free(s->nodes);
        bscratch_free(s->bs);
        free(s->jobs);
        free(s->htab);
        free(s->live);
        free(s->pend);
        free(s->views);
        free(s->ids);
        free(s->ids_tmp);
        free(s->buffers);
        free(s);
    }
    errno = saved;
}

int hs_sched_set_policy(hs_sched_t *s, double now, const hs_policy_t *pol,
                        hs_error_t *err)
{
    hs_policy_t p;
    const hs_policy_ops_t *ops;
    void *state;

    if (!s)
        return hs_errprintf(err, EINVAL, "no scheduler");
    if (check_time(s, now) < 0)
        return hs_errprintf(err, EINVAL, "time %g is before the last event (%g)", now,
                            s->now);
    if (check_policy(pol, &p, err) < 0)
        return -1;
    if (policy_start(s, &p, &ops, &state, err) < 0)
        return -1;
    integrate(s, now);
    if (s->ops && s->ops->destroy)
        s->ops->destroy(s->pstate);
    s->pol = p;
    s->ops = ops;
    s->pstate = state;
    return 0;
}

/* ------------------------------------------------------------------ events */

int hs_job_arrive(hs_sched_t *s, double now, const hs_job_t *job, hs_error_t *err)
{
    size_t slot, old;
    struct job *j;
    int *alloc = NULL;
    int i;

    if (!s || !job)
        return hs_errprintf(err, EINVAL, "no scheduler or job");
    if (check_time(s, now) < 0)
        return hs_errprintf(err, EINVAL,
                            "job %ju: time %g is before the last event (%g)",
                            (uintmax_t)job->id, now, s->now);
    if (job->nodes < 1)
        return hs_errprintf(err, EINVAL, "job %ju: nodes must be >= 1 (got %d)",
                            (uintmax_t)job->id, job->nodes);
    if (!isfinite(job->release) || job->release > now)
        return hs_errprintf(err, EINVAL,
                            "job %ju: release %g must be a time <= now (%g)",
                            (uintmax_t)job->id, job->release, now);
    if (isnan(job->w) || isnan(job->volume) || isnan(job->w_iter)
        || isinf(job->w) || isinf(job->volume) || isinf(job->w_iter))
        return hs_errprintf(err, EINVAL, "job %ju: hints must be finite numbers",
                            (uintmax_t)job->id);
    if (job->instances < 0 || job->priority < 0 || job->priority > 10)
        return hs_errprintf(err, EINVAL,
                            "job %ju: instances must be >= 0 and priority in 0..10",
                            (uintmax_t)job->id);
    if (job->nalloc < 0 || (job->nalloc > 0 && !job->alloc))
        return hs_errprintf(err, EINVAL, "job %ju: invalid buffer allocation list",
                            (uintmax_t)job->id);
    for (i = 0; i < job->nalloc; i++) {
        if (job->alloc[i] < 0 || job->alloc[i] >= s->plat.nbuffers)
            return hs_errprintf(err, EINVAL,
                                "job %ju: buffer index %d out of range (%d buffers)",
                                (uintmax_t)job->id, job->alloc[i], s->plat.nbuffers);
        /* a node twice would be counted twice in the per-node scratch of a decision
         * (sized by the number of nodes): refuse it (the list is short: <= nbuffers) */
        for (int k = 0; k < i; k++)
            if (job->alloc[k] == job->alloc[i])
                return hs_errprintf(err, EINVAL, "job %ju: buffer index %d listed twice",
                                    (uintmax_t)job->id, job->alloc[i]);
    }
    old = hfind(s, job->id);
    if (old != NO_SLOT && s->jobs[old].live)
        return hs_errprintf(err, EEXIST, "job %ju is already known",
                            (uintmax_t)job->id);

    if (job->nalloc > 0) {
        if (!(alloc = malloc(job->nalloc * sizeof(*alloc))))
            goto nomem;
        memcpy(alloc, job->alloc, job->nalloc * sizeof(*alloc));
    }
    if (hs_grow(&s->live, &s->live_cap, s->nlive + 1, sizeof(*s->live)) < 0
        || hs_grow(&s->pend, &s->pend_cap, s->nlive + 1, sizeof(*s->pend)) < 0)
        goto nomem;
    if (old != NO_SLOT) {
        /* a departed job's id comes back: its old record is replaced */
        slot = old;
        free(s->jobs[slot].alloc);
        free(s->jobs[slot].place);
    }
    else {
        if (hreserve(s, s->hcount + 1) < 0)
            goto nomem;
        if (s->free_head != NO_SLOT) {
            slot = s->free_head;
            s->free_head = s->jobs[slot].next_free;
        }
        else {
            if (hs_grow(&s->jobs, &s->jobs_cap, s->jobs_len + 1,
                        sizeof(*s->jobs)) < 0)
                goto nomem;
            slot = s->jobs_len++;
        }
        hput_raw(s->htab, s->hcap, job->id, slot);
        s->hcount++;
    }
    integrate(s, now);
    j = &s->jobs[slot];
    memset(j, 0, sizeof(*j));
    j->info = *job;
    j->alloc = alloc;
    j->info.alloc = alloc;
    j->used = true;
    j->live = true;
    j->live_pos = s->nlive;
    s->live[s->nlive++] = slot;
    j->cap = hs_fmin(job->nodes * s->plat.node_bw, s->plat.bw);
    if (has_buffers(s)) {
        const int *list;
        int na = job_nodes(s, j, &list), k;
        j->cap = job_cap_buffers(s, j);
        j->arrive = now;
        j->held0 = buffers_sum_int(s, j);
        for (k = 0; k < na; k++) {
            double c = s->nodes[nodes_at(list, k)].cap;
            if (isfinite(c))
                j->alloc_cap += c;
        }
    }
    j->last_io_end = job->release;
    j->st.id = job->id;
    j->st.nodes = job->nodes;
    j->st.release = job->release;
    j->st.end = NAN;
    return 0;
nomem:
    free(alloc);
    return hs_errprintf(err, ENOMEM, "out of memory");
}

int hs_job_leave(hs_sched_t *s, double now, uint64_t id)
{
    struct job *j;

    if (!(j = event_job(s, now, id)))
        return -1;
    integrate(s, now);
    sync_job(s, j);
    if (j->pending)
        pend_remove(s, j);
    if (has_buffers(s)) {
        j->st.buf_held = buffers_sum_int(s, j) - j->held0;
        j->st.buf_alloc = j->alloc_cap * (now - j->arrive);
    }
    live_remove(s, j);
    j->st.end = now;
    return 0;
}

int hs_job_forget(hs_sched_t *s, uint64_t id)
{
    size_t slot;
    struct job *j;

    if (!s) {
        errno = EINVAL;
        return -1;
    }
    if ((slot = hfind(s, id)) == NO_SLOT) {
        errno = ENOENT;
        return -1;
    }
    j = &s->jobs[slot];
    if (j->live) {
        errno = EBUSY;
        return -1;
    }
    hdel(s, id);
    free(j->alloc);
    free(j->place);
    memset(j, 0, sizeof(*j));
    j->next_free = s->free_head;
    s->free_head = slot;
    return 0;
}

/* w_iter of the phase just requested (IO-Sets): the hint, else w + volume/cap from
 * the hints, else the mean time between consecutive requests, else (first phase)
 * w_done + time_io of this phase. */
static double estimate_w_iter(const struct job *j)
{
    if (j->info.w_iter > 0)
        return j->info.w_iter;
    if (j->info.w > 0 && j->info.volume > 0)
        return j->info.w + j->info.volume / j->cap;
    if (j->nreq >= 2)
        return (j->last_req - j->first_req) / (j->nreq - 1);
    return j->w_done + j->vol / j->cap;
}

int hs_phase_request(hs_sched_t *s, double now, uint64_t id, double volume,
                     hs_dir_t dir, double w_done, hs_error_t *err)
{
    struct job *j;

    if (!s)
        return hs_errprintf(err, EINVAL, "no scheduler");
    if (check_time(s, now) < 0)
        return hs_errprintf(err, EINVAL,
                            "job %ju: time %g is before the last event (%g)",
                            (uintmax_t)id, now, s->now);
    if (!(j = live_job(s, id)))
        return hs_errprintf(err, ENOENT, "job %ju is not known", (uintmax_t)id);
    if (j->pending)
        return hs_errprintf(err, EBUSY, "job %ju already has a phase in progress",
                            (uintmax_t)id);
    if (!(volume >= 0) || !isfinite(volume))
        return hs_errprintf(err, EINVAL, "job %ju: volume %g must be >= 0",
                            (uintmax_t)id, volume);
    if (!(w_done >= 0) || !isfinite(w_done))
        return hs_errprintf(err, EINVAL, "job %ju: w_done %g must be >= 0",
                            (uintmax_t)id, w_done);
    if (dir != HS_DIR_WRITE && dir != HS_DIR_READ)
        return hs_errprintf(err, EINVAL, "job %ju: invalid direction %d",
                            (uintmax_t)id, (int)dir);
    integrate(s, now);
    j->pending = true;
    j->pend_pos = s->npend;
    s->pend[s->npend++] = (size_t)(j - s->jobs);
    j->vol = volume;
    j->done = 0;
    j->t_sync = now;
    j->req = now;
    j->w_done = w_done;
    j->dir = dir;
    j->rate = 0;
    j->weight = 0;
    j->active = false;
    j->placed = false;
    j->nplace = 0;
    j->place0 = -1;
    j->throttled = false;
    j->alone_bw = 0;
    if (j->nreq++ == 0)
        j->first_req = now;
    j->last_req = now;
    j->w_iter = estimate_w_iter(j);
    j->st.w_iter_est = j->w_iter;
    {
        /* rho of the job with this phase (the file's header): st.work and
         * st.io_dedicated only change when the phase finishes */
        double TIO = j->st.io_dedicated + j->vol / j->cap;
        j->W = j->st.work + j->w_done;
        j->rho = (j->W + TIO > 0) ? j->W / (j->W + TIO) : 1.0;
        j->phase = j->st.phases + 1;
    }
    return 0;
}

static struct job *pending_job(hs_sched_t *s, double now, uint64_t id)
{
    struct job *j;

    if (!(j = event_job(s, now, id)))
        return NULL;
    if (!j->pending) {
        errno = EINVAL;
        return NULL;
    }
    return j;
}

int hs_phase_progress(hs_sched_t *s, double now, uint64_t id, double bytes_done)
{
    struct job *j;

    if (!(j = pending_job(s, now, id)))
        return -1;
    if (!(bytes_done >= 0) || !isfinite(bytes_done)) {
        errno = EINVAL;
        return -1;
    }
    integrate(s, now);
    sync_job(s, j);
    j->done = hs_fmin(bytes_done, j->vol);
    return 0;
}

int hs_phase_finish(hs_sched_t *s, double now, uint64_t id)
{
    struct job *j;

    if (!(j = pending_job(s, now, id)))
        return -1;
    integrate(s, now);
    sync_job(s, j);             /* its io_wait up to now */
    /* the instance is over: it counts with its requested volume */
    j->st.phases++;
    j->st.work += j->w_done;
    {
        /* with buffers, "alone" is the phase alone on the nodes it went to */
        double alone = has_buffers(s) && j->alone_bw > 0 ? j->alone_bw : j->cap;
        double ded = j->vol / alone;
        double ifac = ded > 0 ? (now - j->req) / ded : 1.0;
        j->st.io_dedicated += ded;
        j->st.if_sum += ifac;
        if (ifac > j->st.if_max)
            j->st.if_max = ifac;
    }
    j->st.io_time += now - j->req;
    j->st.bytes += j->vol;
    j->last_io_end = now;
    j->throttled = false;
    pend_remove(s, j);
    if (j->info.instances > 0 && j->st.phases >= j->info.instances)
        j->st.end = now;
    return 0;
}

int hs_sched_advance(hs_sched_t *s, double now)
{
    if (!s || check_time(s, now) < 0) {
        errno = EINVAL;
        return -1;
    }
    integrate(s, now);
    return 0;
}

/* ------------------------------------------------------------------ decisions */

static int cmp_idsort(const void *a, const void *b)
{
    const struct idsort *x = a;
    const struct idsort *y = b;

    return (x->id > y->id) - (x->id < y->id);
}

/* Sort ids[] by id (ids are unique, so every correct sort gives the same order):
 * an LSD radix sort on the bytes that differ, O(n) per pass, instead of qsort's
 * O(n log n) calls through a comparison function; small arrays by qsort. */
static void sort_ids(struct idsort *ids, struct idsort *tmp, size_t n)
{
    uint64_t all_or = 0, all_and = ~(uint64_t)0;
    size_t i, count[256];
    int shift;

    if (n < 2)
        return;
    for (i = 1; i < n && ids[i - 1].id < ids[i].id; i++)
        ;
    if (i == n)
        return;                         /* already in order */
    if (n < 64 || !tmp) {
        qsort(ids, n, sizeof(*ids), cmp_idsort);
        return;
    }
    for (i = 0; i < n; i++) {
        all_or |= ids[i].id;
        all_and &= ids[i].id;
    }
    for (shift = 0; shift < 64; shift += 8) {
        struct idsort *t;
        size_t sum = 0;
        if ((((all_or ^ all_and) >> shift) & 0xff) == 0)
            continue;                   /* this byte is the same in every id */
        memset(count, 0, sizeof(count));
        for (i = 0; i < n; i++)
            count[(ids[i].id >> shift) & 0xff]++;
        for (i = 0; i < 256; i++) {
            size_t c = count[i];
            count[i] = sum;
            sum += c;
        }
        for (i = 0; i < n; i++)
            tmp[count[(ids[i].id >> shift) & 0xff]++] = ids[i];
        t = ids;                        /* copy back: ids[] is the caller's */
        memcpy(t, tmp, n * sizeof(*t));
    }
}

/* The view of a pending phase (synced by the caller).  Every field is written (no
 * memset of the whole view first); the buffer-tier inputs are those of the phase
 * with buffers, zero without. */
/* Before the views, for each pending phase of a decision: bring it to s->now; with
 * buffers, return the most stripes it may have (to size the scratch) and, when the
 * core places phases ('core_places'), count it on its nodes if it is placed and not
 * complete (place_phase() needs these counts before it places any other). */
static size_t decide_prepare(hs_sched_t *s, struct job *j, bool buffers,
                             bool core_places)
{
    const int *list;
    int k;

    sync_job(s, j);
    if (!buffers)
        return 0;
    if (core_places && j->placed && !done_complete(j, j->done)) {
        for (k = 0; k < j->nplace; k++)
            s->nodes[k == 0 ? j->place0 : j->place[k]].placed++;
    }
    return (size_t)job_nodes(s, j, &list);
}

/* ids[0, m) and ids[m, n) are sorted by id: merge them into ids[0, n) (tmp: room
 * for n - m entries). */
static void merge_ids(struct idsort *ids, size_t m, size_t n, struct idsort *tmp)
{
    size_t a = m, b = n - m, k = n;

    if (a == 0 || b == 0 || ids[m - 1].id < ids[m].id)
        return;                         /* one run, or already in order */
    memcpy(tmp, ids + m, b * sizeof(*tmp));
    while (b > 0) {                     /* from the end: ids[k..n) is final */
        if (a > 0 && ids[a - 1].id > tmp[b - 1].id)
            ids[--k] = ids[--a];
        else
            ids[--k] = tmp[--b];
    }
}

static void fill_view(const hs_sched_t *s, const struct job *j, hs_view_t *v,
                      bool buffers)
{
    double life = s->now - j->info.release;

    v->id = j->info.id;
    v->job = &j->info;
    v->cap = j->cap;
    v->volume = j->vol;
    v->complete = done_complete(j, j->done);
    v->remaining = v->complete ? 0 : j->vol - j->done;
    v->request = j->req;
    v->w_done = j->w_done;
    v->last_io_end = j->last_io_end;
    v->rho = j->rho;
    v->rho_tilde = (life > 0) ? j->W / life : j->rho;
    v->w_iter = j->w_iter;
    v->phase = j->phase;
    v->active = j->active;
    v->bw = 0;
    v->weight = 0;
    v->start = INFINITY;
    v->buffer = -1;
    v->dir = buffers ? j->dir : HS_DIR_WRITE;
    v->started = buffers && j->done > 0;
    v->nplace = buffers ? j->nplace : 0;
    v->place = buffers ? j->place : NULL;
}

int hs_sched_decide(hs_sched_t *s, double now, hs_grant_t *out, size_t cap)
{
    hs_ctx_t ctx;
    size_t n, i, ns = 0, nold = 0, nnew;
    bool buffers, core_places;

    if (!s || (cap > 0 && !out) || check_time(s, now) < 0) {
        errno = EINVAL;
        return -1;
    }
    n = s->npend;
    if (n > (size_t)INT32_MAX) {
        errno = EOVERFLOW;
        return -1;
    }
    if (!s->ops) {
        errno = ENOTSUP;
        return -1;
    }
    if (n > s->scratch_cap) {
        size_t c1 = s->scratch_cap, c2 = s->scratch_cap, c3 = s->scratch_cap;
        if (hs_grow(&s->views, &c1, n, sizeof(*s->views)) < 0
            || hs_grow(&s->ids, &c2, n, sizeof(*s->ids)) < 0
            || hs_grow(&s->ids_tmp, &c3, n, sizeof(*s->ids_tmp)) < 0)
            return -1;
        s->scratch_cap = c1 < c2 ? c1 : c2;
        if (c3 < s->scratch_cap)
            s->scratch_cap = c3;
    }
    integrate(s, now);
    nodes_sync(s);
    buffers = has_buffers(s);
    core_places = buffers && !s->ops->places;
    if (core_places) {
        int k;
        for (k = 0; k < s->plat.nbuffers; k++)
            s->nodes[k].placed = 0;
    }
    /* Prepare every pending phase (decide_prepare()), and sort them by id: the
     * last decision's order without the phases that ended since (they are no
     * longer 'listed'), then the phases requested since, sorted and merged in.
     * ids are unique: the order is the one a full sort gives. */
    for (i = 0; i < s->nids; i++) {
        struct job *j = &s->jobs[s->ids[i].slot];
        if (!j->listed)
            continue;
        ns += decide_prepare(s, j, buffers, core_places);
        s->ids[nold++] = s->ids[i];
    }
    nnew = nold;
    for (i = 0; i < n; i++) {
        struct job *j = &s->jobs[s->pend[i]];
        if (j->listed)
            continue;
        ns += decide_prepare(s, j, buffers, core_places);
        j->listed = true;
        s->ids[nnew].slot = s->pend[i];
        s->ids[nnew++].id = j->info.id;
    }
    s->nids = n;                        /* nnew == n: each pending phase once */
    sort_ids(s->ids + nold, s->ids_tmp, n - nold);
    merge_ids(s->ids, nold, n, s->ids_tmp);
    if (buffers) {
        if (bscratch_reserve(s, n, ns + n) < 0)
            return -1;
        s->bs->ns = 0;
        s->bs->ndirect = 0;
    }
    /* the views; when the core places phases, it places those with no placement
     * yet (in id order: each sees the ones before it) and sets the stripes up in
     * the same pass */
    for (i = 0; i < n; i++) {
        struct job *j = &s->jobs[s->ids[i].slot];
        hs_view_t *v = &s->views[i];
        fill_view(s, j, v, buffers);
        if (core_places) {
            if (!j->placed && place_phase(s, i, j) < 0)
                return -1;
            add_stripes(s, i, j);
        }
        else if (buffers)       /* a policy that places sees the placement so far */
            v->buffer = j->placed && j->nplace > 0 ? j->place0 : -1;
    }

    ctx.plat = &s->plat;
    ctx.pol = &s->pol;
    ctx.sched = s;
    ctx.now = now;
    if (buffers) {
        if (decide_buffers(s, &ctx, n) < 0)     /* checks its rates */
            return -1;
        goto store;
    }
    if (n > 0 && s->ops->decide(s->pstate, &ctx, s->views, n) < 0)
        return -1;

    /* check what the policy did: the model's constraints must hold */
    if (check_grants(s->views, n, s->plat.bw, true) < 0)
        return -1;
    if (s->pol.max_wait > 0)
        guard_waits(s, now, n);
store:
    for (i = 0; i < n; i++) {
        hs_view_t *v = &s->views[i];
        struct job *j = &s->jobs[s->ids[i].slot];
        j->rate = v->bw;
        j->weight = v->weight;
        j->active = v->bw > 0;
        if (buffers)
            j->throttled = s->bs->pthrottled[i];
        if (v->bw > 0 && !(v->start <= now))
            v->start = now;
        if (i < cap) {
            out[i].id = v->id;
            out[i].bw = v->bw;
            out[i].share = v->bw / s->plat.bw;
            out[i].buffer = v->buffer;
            out[i].start = v->start;
            out[i].remaining = v->remaining;
            out[i].weight = v->weight;
            out[i].buffer_full = j->throttled;
            out[i].nbuffers = j->nplace;
        }
    }
    return (int)n;
}

double hs_sched_next_event(const hs_sched_t *s)
{
    double t = INFINITY;
    size_t i;

    if (!s)
        return INFINITY;
    for (i = 0; i < s->npend; i++) {
        const struct job *j = &s->jobs[s->pend[i]];
        if (phase_complete(s, j))
            t = hs_fmin(t, s->now);
        else if (j->rate > 0)
            t = hs_fmin(t, completion_time(j));
        if (s->pol.max_wait > 0 && !has_buffers(s) && !phase_complete(s, j)
            && j->rate < j->cap) {
            /* when its excess wait reaches max_wait (it grows at 1 - rate/cap) */
            double done, w, ex;
            job_at(j, s->now, &done, &w);
            ex = excess_wait(s->now, j->req, done, j->cap);
            /* the same threshold as guard_waits(); past it the phase is guarded */
            if (ex < s->pol.max_wait * (1 - HS_EPS_REL))
                t = hs_fmin(t, fmax(s->now + (s->pol.max_wait - ex)
                                             / (1 - j->rate / j->cap),
                                    nextafter(s->now, INFINITY)));
        }
    }
    if (s->ops && s->ops->next_event)
        t = hs_fmin(t, s->ops->next_event(s->pstate, s->now));
    if (has_buffers(s) && isfinite(s->bt)) {
        int k;
        for (k = 0; k < s->plat.nbuffers; k++) {
            struct bnode o;
            double slope;
            node_at(&s->nodes[k], s->now - s->bt, &o);
            slope = o.inflow - o.drain;
            if (slope > 0 && !node_full(&o) && isfinite(o.cap))
                t = hs_fmin(t, s->now + (o.cap - o.occ) / slope);
            else if (slope < 0 && !node_empty(&o))
                t = hs_fmin(t, s->now + o.occ / -slope);
        }
    }
    return t;
}

size_t hs_sched_completed(const hs_sched_t *s, uint64_t *ids, size_t cap)
{
    size_t i, n = 0;

    if (!s)
        return 0;
    for (i = 0; i < s->npend; i++) {
        const struct job *j = &s->jobs[s->pend[i]];
        if (phase_complete(s, j)) {
            if (n < cap && ids)
                ids[n] = j->info.id;
            n++;
        }
    }
    return n;
}

double hs_sched_now(const hs_sched_t *s)
{
    return s ? s->now : NAN;
}

size_t hs_sched_njobs(const hs_sched_t *s)
{
    return s ? s->nlive : 0;
}

size_t hs_sched_npending(const hs_sched_t *s)
{
    return s ? s->npend : 0;
}

/* ------------------------------------------------------------------ accounting */

/* A job's statistics at s->now (io_wait of a waiting phase included). */
static void job_stats_now(const hs_sched_t *s, const struct job *j, hs_job_stats_t *st)
{
    *st = j->st;
    if (j->pending) {
        double done;
        job_at3(j, s->now, &done, &st->io_wait, &st->buffer_full);
    }
    if (j->live && has_buffers(s)) {
        st->buf_held = buffers_sum_int(s, j) - j->held0;
        st->buf_alloc = j->alloc_cap * (s->now - j->arrive);
    }
}

int hs_job_stats(const hs_sched_t *s, uint64_t id, hs_job_stats_t *st)
{
    size_t slot;

    if (!s || !st) {
        errno = EINVAL;
        return -1;
    }
    if ((slot = hfind(s, id)) == NO_SLOT) {
        errno = ENOENT;
        return -1;
    }
    job_stats_now(s, &s->jobs[slot], st);
    return 0;
}

int hs_phase_info(const hs_sched_t *s, uint64_t id, hs_phase_info_t *pi)
{
    size_t slot;
    const struct job *j;

    if (!s || !pi) {
        errno = EINVAL;
        return -1;
    }
    if ((slot = hfind(s, id)) == NO_SLOT || !s->jobs[slot].live) {
        errno = ENOENT;
        return -1;
    }
    j = &s->jobs[slot];
    memset(pi, 0, sizeof(*pi));
    pi->id = id;
    pi->pending = j->pending;
    if (j->pending) {
        double wait;
        pi->volume = j->vol;
        job_at(j, s->now, &pi->done, &wait);
        pi->request = j->req;
        pi->bw = j->rate;
        pi->weight = j->weight;
        pi->w_iter = j->w_iter;
        pi->complete = done_complete(j, pi->done);
    }
    return 0;
}

/* ------------------------------------------------------------------ policy access */

void hs_core_policy(const hs_sched_t *s, const hs_policy_ops_t **ops,
                    const void **state)
{
    *ops = s ? s->ops : NULL;
    *state = s ? s->pstate : NULL;
}

size_t hs_core_njobs(const hs_sched_t *s)
{
    return s ? s->nlive : 0;
}

const hs_job_t *hs_core_job(const hs_sched_t *s, size_t i)
{
    if (!s || i >= s->nlive)
        return NULL;
    return &s->jobs[s->live[i]].info;
}

int hs_core_job_stats(const hs_sched_t *s, size_t i, hs_job_stats_t *st, bool *pending)
{
    const struct job *j;

    if (!s || i >= s->nlive) {
        errno = EINVAL;
        return -1;
    }
    j = &s->jobs[s->live[i]];
    if (st)
        job_stats_now(s, j, st);
    if (pending)
        *pending = j->pending;
    return 0;
}

/* ------------------------------------------------------------------ buffer access */

int hs_core_nbuffers(const hs_sched_t *s)
{
    return s ? s->plat.nbuffers : 0;
}

int hs_core_node_state(const hs_sched_t *s, int j, hs_node_state_t *ns)
{
    struct bnode o;

    if (!s || !ns || j < 0 || j >= s->plat.nbuffers) {
        errno = EINVAL;
        return -1;
    }
    node_at(&s->nodes[j], isfinite(s->bt) ? s->now - s->bt : 0, &o);
    ns->buf = &s->plat.buffers[j];
    ns->capacity = o.cap;
    ns->bandwidth = o.bw;
    ns->occupancy = o.occ;
    ns->inflow = o.inflow;
    ns->drain = o.drain;
    ns->streams = o.streams;
    ns->placed = o.placed;
    ns->full = node_full(&o);
    return 0;
}

int hs_buffer_stats(const hs_sched_t *s, int j, hs_buffer_stats_t *st)
{
    struct bnode o;

    if (!s || !st || j < 0 || j >= s->plat.nbuffers) {
        errno = EINVAL;
        return -1;
    }
    node_at(&s->nodes[j], isfinite(s->bt) ? s->now - s->bt : 0, &o);
    memset(st, 0, sizeof(*st));
    st->capacity = o.cap;
    st->occupancy = o.occ;
    st->inflow = o.inflow;
    st->drain = o.drain;
    st->streams = o.streams;
    st->placed = o.placed;
    st->full = node_full(&o);
    st->busy = o.busy;
    st->concurrency_mean = o.busy > 0 ? o.conc_int / o.busy : 0;
    st->concurrency_max = o.conc_max;
    st->written = o.written;
    st->read = o.read;
    st->drained = o.drained;
    st->occupancy_max = o.occ_max;
    st->full_time = o.full_time;
    return 0;
}

int hs_buffer_set_occupancy(hs_sched_t *s, double now, int j, double bytes)
{
    struct bnode *b;

    if (!s || j < 0 || j >= s->plat.nbuffers || check_time(s, now) < 0
        || !(bytes >= 0) || !isfinite(bytes)) {
        errno = EINVAL;
        return -1;
    }
    integrate(s, now);
    nodes_sync(s);
    b = &s->nodes[j];
    b->occ = hs_fmin(bytes, b->cap);
    if (b->occ > b->occ_max)
        b->occ_max = b->occ;
    return 0;
}

/* ------------------------------------------------------------------ schedule stats */

void hs_policy_stats_reset(hs_policy_stats_t *st)
{
    memset(st, 0, sizeof(*st));
    st->period = NAN;
    st->period_tmin = NAN;
    st->period_last = NAN;
    st->period_sys_efficiency = NAN;
    st->period_dilation = NAN;
}

int hs_sched_policy_stats(const hs_sched_t *s, hs_policy_stats_t *st)
{
    if (!s || !st) {
        errno = EINVAL;
        return -1;
    }
    hs_policy_stats_reset(st);
    if (s->ops && s->ops->stats)
        s->ops->stats(s->pstate, st);
    return 0;
}

/* vi: ts=4 sw=4 expandtab
 */
