/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy.h — libhsched's internal policy interface (not installed, not public).
 *
 * The core (hs_core.c, hs_bnode.c, hs_decide.c over hs_model.h) owns jobs,
 * phases, time and accounting.  At each decision it builds one hs_view_t per
 * pending phase (sorted by job id) and hands the array to
 * the policy's decide(), which fills bw (and optionally weight, start, buffer) for
 * every entry.  The core then checks the result (0 <= bw <= cap, sum bw <= B within
 * HS_EPS_REL), stores the rates and integrates progress with them until the next
 * decision.
 *
 * Plugging a policy in (periodic, dp, ...): define a const hs_policy_ops_t in its
 * own file and return it from hs_policy_ops() (hs_sched.c) for its kinds.  Kinds
 * with no ops make hs_sched_create() fail with ENOTSUP.
 */
#ifndef HARMONIA_HSCHED_POLICY_H
#define HARMONIA_HSCHED_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsched.h"

/* One pending phase as a policy sees it.  Inputs are filled by the core. */
typedef struct {
    /* inputs */
    uint64_t id;
    const hs_job_t *job; /* the job's description and hints (core-owned copy) */
    double cap;          /* min(beta_k b, B): the most this phase can use */
    double volume;       /* bytes of the phase */
    double remaining;    /* bytes left (0 when complete in the model) */
    double request;      /* time of the phase request */
    double w_done;       /* w(k,i) reported with this request */
    double last_io_end;  /* finish time of the job's previous phase, r_k if none */
    double rho;          /* dedicated efficiency, instances 1..i (see hs_core.c) */
    double rho_tilde;    /* achieved efficiency at 'now', instances 1..i */
    double w_iter;       /* IO-Sets w_iter used for this phase (> 0) */
    int phase;           /* instance number i (1-based) */
    bool active;         /* bw > 0 at the previous decision (-priority variants) */
    bool complete;       /* remaining == 0 within HS_EPS_REL: needs no bandwidth */
    /* outputs (the core presets bw = 0, weight = 0, start = INFINITY, buffer = -1) */
    double bw;     /* bytes/s granted until the next decision */
    double weight; /* the policy's weight (SFQ(D)+); 0 when not granted */
    double start;  /* planned start; 'now' when bw > 0 for online policies */
    int buffer;    /* buffer node index, -1: the PFS */
    /* appended: buffer tier (doc/buffer-tier.md); unused without buffers */
    hs_dir_t dir;     /* input */
    bool started;     /* input: bytes already moved (placement is fixed) */
    int nplace;       /* input: nodes the phase is placed on (0: none yet or
                               the PFS); for a policy with 'places', the current
                               placement before its decide() */
    const int *place; /* input: those nodes (core-owned) */
} hs_view_t;

/* The ops for a policy kind, or NULL when not available in this build: the table
 * of hs_sched.c (hs_policy_ops()), handed down to the core and the policies that
 * run others (auto), which stand below it. */
struct hs_policy_ops;
typedef const struct hs_policy_ops *hs_policy_ops_f(hs_policy_kind_t kind);

/* What a decide() call may read besides the views. */
typedef struct {
    const hs_platform_t *plat; /* platform (buffers copied, owned by the core) */
    const hs_policy_t *pol;    /* the parsed policy */
    const hs_sched_t *sched;   /* for hs_core_* accessors below */
    double now;
    hs_policy_ops_f *ops_of; /* the policies' table (for auto's candidates) */
} hs_ctx_t;

typedef struct hs_policy_ops {
    const char *name;
    /* Optional: private state for this scheduler instance. */
    int (*create)(const hs_ctx_t *ctx, void **state, hu_error_t *err);
    void (*destroy)(void *state);
    /* Required: fill v[i].bw etc. for the n pending phases (v sorted by id).
     * Return 0, or -1 with errno set (the core then keeps the previous rates). */
    int (*decide)(void *state, const hs_ctx_t *ctx, hs_view_t *v, size_t n);
    /* Optional: next time a schedule computed ahead starts/stops something
     * (INFINITY if none); the core takes the min with transfer completions. */
    double (*next_event)(const void *state, double now);
    /* Appended (buffer tier).  false: with buffers, the core places each phase
     * (least-concurrent nodes of the job's allocation) and calls decide() once per
     * node with the phases striped on it (ctx->plat->bw = the node's BW(c)), and
     * once for the phases sent to the PFS.  true: decide() is called once with
     * every phase and sets v->buffer (a node of the job's allocation, or -1: the
     * PFS) and v->bw (the most the phase may use; 0: wait); the core keeps the
     * placement of a phase once it has moved data, and applies the MSCA model,
     * the drain and the full-buffer stalls on top of v->bw. */
    bool places;
    /* Appended: optional statistics of the schedules the policy computed
     * (hs_sched_policy_stats()); fills *st, which the core zeroes first. */
    void (*stats)(const void *state, hs_policy_stats_t *st);
} hs_policy_ops_t;

/* hs_sched.c: the ops for a policy kind, or NULL when not available in this build
 * (an hs_policy_ops_f). */
const hs_policy_ops_t *hs_policy_ops(hs_policy_kind_t kind);

/* hs_core.c: hs_sched_create() with the policies' table it looks the kinds up in
 * (hs_sched_create() gives hs_policy_ops; auto's look ahead, the one it was given). */
hs_sched_t *hs_core_create(const hs_platform_t *plat, const hs_policy_t *pol,
                           hs_policy_ops_f *ops_of, hu_error_t *err);

/* hs_online.c: the online policies of this file set. */
extern const hs_policy_ops_t hs_ops_fairshare; /* fairshare, static */
extern const hs_policy_ops_t hs_ops_fcfs;
extern const hs_policy_ops_t hs_ops_gainaru; /* roundrobin, mindilation, maxsyseff,
                                                    minmax (and -priority) */
extern const hs_policy_ops_t hs_ops_iosets;  /* set10/set:<b>, set-fairshare,
                                                    priority-sharing */
/* hs_pol_periodic.c: periodic-throu, periodic-cong, persched (doc/periodic.md §8). */
extern const hs_policy_ops_t hs_ops_periodic;
/* hs_pol_harmonia.c: the five harmonia-* policies (doc/harmonia-dp.md §5). */
extern const hs_policy_ops_t hs_ops_harmonia;
/* hs_pol_auto.c: auto, a model-predictive choice among other policies. */
extern const hs_policy_ops_t hs_ops_auto;

/* auto's figures of one candidate over the simulated horizon, and its choice:
 * objective HS_AUTO_SYSEFF takes the highest sys_efficiency among the candidates
 * (ok) whose dilation is at most factor x the lowest; HS_AUTO_STRETCH and
 * HS_AUTO_IOSLOWDOWN the lowest stretch / ioslowdown; ties keep the earlier
 * candidate.  The current one 'cur' stays unless the winner beats it by more than
 * 'hyst' (relative), or (syseff) 'cur' breaks the dilation bound by more than
 * 'hyst' too (dilation > factor x lowest x (1 + hyst)).  Returns the
 * index to run; *best (if not NULL) gets the winner, -1 if no candidate is ok. */
typedef struct {
    bool ok;
    double sys_efficiency, dilation, stretch, ioslowdown;
} hs_auto_fig_t;
int hs_auto_choose(const hs_auto_fig_t *f, int n, int cur, int objective, double factor,
                   double hyst, int *best);

/* ---- helpers shared by libhsched's files (hs_core.c) ---- */

/* Format the message into err->text (when err is not NULL), set errno = errnum and
 * return -1. */
int hs_errprintf(hu_error_t *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Make room for 'need' elements of 'elsize' bytes in the array *ptrp (a pointer to
 * the array's pointer) of capacity *cap: the capacity doubles from 16 until it holds
 * them.  0, or -1 with errno = ENOMEM (the array and *cap are left as they were). */
int hs_grow(void *ptrp, size_t *cap, size_t need, size_t elsize);

/* Hash of a 64-bit id for the open-addressing tables (splitmix64 finaliser). */
static inline uint64_t hs_hash64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* fmin() without a call.  GCC keeps fmin() a call into libm (through the PLT) unless
 * -ffinite-math-only, and a decision calls it about ten times per pending phase.
 * The result is fmin()'s for every input but signalling NaNs: a NaN argument yields
 * the other one (both NaN: 'a'); otherwise the smaller, and of two equal values
 * (+0 and -0 included) the second — what glibc's x86-64 fmin() (minsd) returns, so
 * that decisions keep the same bits. */
static inline double hs_fmin(double a, double b)
{
    return (a < b || b != b) ? a : b;
}

/* The statistics of a policy that computed no schedule yet: zeroes, and NAN for the
 * figures of its period (hs_sched_policy_stats()). */
void hs_policy_stats_reset(hs_policy_stats_t *st);

/* ---- helpers shared by policies (hs_online.c) ---- */

/* Gainaru §3.1 "favouring": walk 'order' (indices into v) and give each phase
 * min(cap, bw_avail); what is left goes to the next.  Returns bandwidth left. */
double hs_alloc_favour(hs_view_t *v, const size_t *order, size_t n, double B);

/* Weighted max-min fair sharing (water-filling) of B among the entries of 'idx'
 * (indices into v) with weights w[j] > 0 and caps v[idx[j]].cap: each gets
 * min(cap, lambda * w) with lambda the largest level such that the sum <= B.
 * Unused capacity of capped entries is redistributed by the same weights.
 * 'scratch' must hold n entries.  Returns bandwidth left (> 0 only if all capped). */
typedef struct {
    double key;
    double w;
    size_t idx;
} hs_wf_item_t;
double hs_alloc_waterfill(hs_view_t *v, const size_t *idx, const double *w, size_t n, double B,
                          hs_wf_item_t *scratch);

/* ---- read access to the scheduler's jobs, for policies that plan ahead ---- */

/* The policy running in s and its state (for hs_sched_auto_state()). */
void hs_core_policy(const hs_sched_t *s, const hs_policy_ops_t **ops, const void **state);
size_t hs_core_njobs(const hs_sched_t *s);                  /* live jobs */
const hs_job_t *hs_core_job(const hs_sched_t *s, size_t i); /* i < hs_core_njobs() */
/* Live job i's accounting so far (end = NAN) and whether it has a pending phase. */
int hs_core_job_stats(const hs_sched_t *s, size_t i, hs_job_stats_t *st, bool *pending);
/* When live job i's last I/O phase finished (its release if none has), NAN if i is
 * out of range. */
double hs_core_job_last_io_end(const hs_sched_t *s, size_t i);
/* The same for the job of that id, live or gone (until hs_job_forget()); NAN if
 * there is none. */
double hs_core_last_io_end(const hs_sched_t *s, uint64_t id);
/* Give live job i of 'src' the same history in 'dst' (a look-ahead copy, auto):
 * its accounting (work, I/O, phases), its requests before the pending phase and
 * the end of its last I/O, copied into the
 * job of that id in dst, which must have arrived and not requested a phase yet.
 * *w_done (if not NULL) gets the compute reported with src's pending phase (0: none).
 * 0, or -1 with errno = EINVAL (no such job) or EBUSY (dst's job has requested). */
int hs_core_job_copy_history(hs_sched_t *dst, const hs_sched_t *src, size_t i, double *w_done);

/* The pending phase of job id takes the request time req, at most the time it was
 * requested at: the look ahead requests a copy of a live pending phase now, and
 * gives it back the time of the run's request, which the policies order and age
 * phases by (fcfs, the excess wait).  0, or -1 with errno = EINVAL. */
int hs_core_phase_backdate(hs_sched_t *s, uint64_t id, double req);

/* The pending phase of job id in 'dst' (a look-ahead copy, auto) takes what the
 * live phase in 'src' was given at its request, rather than what the copy's state
 * gives it now: its w_iter (IO-Sets' class) and the buffer nodes it was placed on
 * (it stays on the nodes it writes to).  Nothing is done when src's job has no
 * pending phase.  0, or -1 with errno = EINVAL (no such job, no pending phase in
 * dst, or the two platforms differ in buffer nodes). */
int hs_core_phase_copy(hs_sched_t *dst, const hs_sched_t *src, uint64_t id);

/* ---- buffer tier: node state, for policies that place phases (DP) ---- */

typedef struct {
    const hs_buffer_t *buf; /* description: name, curves, device type */
    double capacity;        /* bytes (INFINITY when the platform gave 0) */
    double bandwidth;       /* B_j = BW(1), bytes/s (B when the platform gave 0) */
    double occupancy;       /* bytes held at the time of the call's decision */
    double inflow;          /* bytes/s written in, last decision */
    double drain;           /* bytes/s drained to the PFS, last decision */
    int streams;            /* streams moving data on it, last decision */
    int placed;             /* pending phases (not complete) placed on it */
    bool full;              /* occupancy >= capacity */
} hs_node_state_t;

int hs_core_nbuffers(const hs_sched_t *s);
/* State of node j; 0, or -1 with errno = EINVAL. */
int hs_core_node_state(const hs_sched_t *s, int j, hs_node_state_t *ns);

#endif /* HARMONIA_HSCHED_POLICY_H */
