/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_model.h — the scheduler's state, shared by the three files of libhsched's
 * model and private to them: hs_bnode.c (buffer nodes, placement, MSCA shares;
 * hs_bnode.h), hs_core.c (lifecycle, jobs and phases, events, accounting;
 * hs_core_internal.h) and hs_decide.c (running the policy, applying its grants, the
 * max-wait guard; hs_decide.h), in that order from the bottom up.  Its helpers that
 * are not inline (hs_errprintf(), hs_grow()) are in hs_model.c.
 * The policies see the model only through policy.h.
 */
#ifndef HARMONIA_HSCHED_MODEL_H
#define HARMONIA_HSCHED_MODEL_H

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsched.h"
#include "policy.h"

#define NO_SLOT ((size_t)-1)

/* A job.  The fields a decision reads or writes for every pending phase come first
 * and together (about four cache lines with 'info'); the rest after. */
struct job {
    hs_job_t info; /* info.alloc points at 'alloc' */
    /* the pending phase (hot: every decision) */
    double cap; /* min(beta b, B) */
    double vol;
    double done; /* bytes done at t_sync */
    double t_sync;
    double req;
    double w_done;
    double rate; /* bw of the last decision */
    double weight;
    double w_iter;      /* w_iter used for this phase */
    double W;           /* sum of w(k,j) for j <= i, and the job's rho with this */
    double rho;         /* phase: fixed while it is pending (set at its request,
                               read by every decision: fill_view()) */
    double alone_bw;    /* the phase's rate alone on its placement */
    double last_io_end; /* finish of the previous phase, r_k if none */
    int *place;         /* nodes of the pending phase (nplace; core-owned) */
    int nplace;
    int place0; /* place[0] when nplace > 0: the decisions' per-phase
                               passes read it without loading place[] */
    int phase;  /* its instance number: st.phases + 1 */
    hs_dir_t dir;
    bool pending;
    bool active;    /* rate > 0 at the last decision */
    bool placed;    /* placement decided (buffer tier, doc/buffer-tier.md) */
    bool throttled; /* rate limited by a full node at the last decision */
    bool listed;    /* in s->ids, the order of the last decision: set by
                               hs_sched_decide(), cleared when the phase ends */
    bool bounded;   /* the pending phase reached its wait bound (counted in
                               s->bound_hits once) */
    /* the rest */
    int *alloc;
    bool used; /* slot holds a job (live or departed) */
    bool live;
    size_t live_pos;
    size_t next_free;
    size_t pend_pos;
    int place_cap;
    double arrive;    /* time of hs_job_arrive() */
    double held0;     /* sum over the allocation of node occupancy integrals
                               at arrival */
    double alloc_cap; /* sum of the (finite) capacities of the allocation */
    /* history */
    double first_req;
    double last_req;
    int nreq;
    hs_job_stats_t st; /* completed instances only */
};

struct hs_sched {
    hs_platform_t plat;
    hs_buffer_t *buffers;
    hs_policy_t pol;
    const hs_policy_ops_t *ops;
    void *pstate;
    hs_policy_ops_f *ops_of; /* the policies' table (hs_core_create()) */
    double now;              /* time of the last event (-INFINITY before the first) */

    struct job *jobs;
    size_t jobs_len; /* slots ever used */
    size_t jobs_cap;
    size_t free_head;

    size_t *htab; /* slot + 1, 0 = empty */
    size_t hcap;  /* power of two */
    size_t hcount;

    size_t *live;
    size_t nlive;
    size_t live_cap;
    size_t *pend;
    size_t npend;
    size_t pend_cap;

    hs_view_t *views; /* decision scratch */
    /* the pending phases by id: kept from one decision to the next (nids entries,
     * the jobs with 'listed' set), which then only sorts the phases requested in
     * between and merges them in */
    struct idsort {
        uint64_t id;
        size_t slot;
    } * ids;
    size_t nids;
    struct idsort *ids_tmp; /* radix sort buffer (scratch_cap entries) */
    size_t scratch_cap;

    /* buffer tier (nbuffers > 0) */
    struct bnode *nodes;
    double bt; /* time the nodes' state refers to */
    struct bscratch *bs;
    uint64_t bound_hits; /* phases that reached their wait bound */
};

/* One buffer node's dynamic state.  Occupancy is piecewise linear between two
 * decisions (slope inflow - drain), clamped to [0, cap]. */
struct bnode {
    double cap;      /* bytes (INFINITY when the platform gave 0) */
    double bw;       /* B_j, bytes/s (B when the platform gave 0) */
    double occ;      /* bytes at s->bt */
    double occ_int;  /* integral of occ from creation to s->bt, byte.s */
    double inflow;   /* bytes/s written in (last decision) */
    double drain;    /* bytes/s drained to the PFS (last decision) */
    double readrate; /* bytes/s read (last decision) */
    int streams;     /* streams moving data (last decision) */
    int placed;      /* pending phases placed on it */
    bool full;
    /* figures */
    double busy, conc_int, written, read, drained, occ_max, full_time;
    int conc_max;
};

/* Scratch of a buffer-mode decision (grown, never shrunk). */
struct bscratch {
    size_t ncap, scap, ncap_nodes;
    hs_view_t *gv;        /* views of one group */
    size_t *gidx;         /* group member -> stripe id */
    size_t *off;          /* n + 1: first stripe of phase i */
    size_t *sphase;       /* stripe -> phase index */
    int *snode;           /* stripe -> node */
    unsigned char *sflag; /* stripe -> SF_* of its phase: the per-node loops test
                               these bytes instead of loading the phase's view */
    double *sgrant, *srate;
    size_t *sorder; /* stripes sorted by node */
    size_t *nfirst; /* nbuffers + 1 */
    double *pgrant, *prate;
    double *pcap; /* phase -> its view's cap (compact: the per-phase
                               passes do not load the views' cache lines) */
    double *wcap, *wout;
    hs_wf_item_t *wsc;
    int *tmp;       /* placement scratch */
    size_t ns;      /* stripes (add_stripes()) */
    size_t *direct; /* phases sent to the PFS (no stripe), in id order */
    size_t ndirect;
    bool *pthrottled; /* phase -> limited by a full node (job.throttled) */
};

#define SF_READ 1 /* the phase reads (else writes) */
#define SF_DONE 2 /* the phase is complete in the model */
/* ------------------------------------------------------------------ helpers */

static inline int check_time(const hs_sched_t *s, double now)
{
    if (!isfinite(now) || now < s->now) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

static inline bool done_complete(const struct job *j, double done)
{
    return j->vol - done <= HS_EPS_REL * j->vol;
}

/* Completion time of a granted phase at its current rate (j->rate > 0).  Fixed
 * between two decisions: it does not depend on when the phase was last synced. */
static inline double completion_time(const struct job *j)
{
    return j->t_sync + (j->vol - j->done) / j->rate;
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
            } else {
                j->done = hs_fmin(j->vol, j->done + j->rate * dt);
                if (j->throttled)
                    j->st.buffer_full += dt;
            }
        } else
            j->st.io_wait += dt;
    }
    j->t_sync = now;
}

/* Move the clock to 'now' (>= s->now, checked by the caller).  O(1): the pending
 * phases are synced lazily. */
static inline void integrate(hs_sched_t *s, double now)
{
    if (now > s->now || s->now == -INFINITY)
        s->now = now;
}

static inline bool has_buffers(const hs_sched_t *s)
{
    return s->plat.nbuffers > 0;
}

static inline bool node_empty(const struct bnode *b)
{
    return b->occ <= HS_EPS_REL * (isfinite(b->cap) ? fmax(b->cap, 1.) : 1.);
}

static inline bool node_full(const struct bnode *b)
{
    return isfinite(b->cap) && b->cap - b->occ <= HS_EPS_REL * b->cap;
}

static inline int nodes_at(const int *list, int k)
{
    return list ? list[k] : k;
}

#endif /* HARMONIA_HSCHED_MODEL_H */
