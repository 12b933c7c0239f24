/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hsched.h — Harmonia's scheduling core (libhsched).
 *
 * A pure library: no I/O, no threads, no clock, no global state.  A driver (bbsim's
 * discrete-event engine, or bbmgrd with the real clock) tells a scheduler instance
 * what happens — a job arrives or leaves, a job asks to start an I/O phase, a phase
 * finishes — always passing the current time, and asks it for the bandwidth each
 * pending phase receives until the next event.
 *
 * Units and precision
 *   - time: double, seconds since an origin chosen by the driver (bbsim: 0 at start;
 *     bbmgrd: seconds since its epoch).  A double keeps sub-microsecond resolution
 *     for runs up to ~10^8 s (3 years).
 *   - volumes: double, bytes.  Exact for integers up to 2^53 bytes (8 PiB) per phase;
 *     larger volumes are rounded to ~1 part in 10^16.
 *   - bandwidths: double, bytes per second.
 *   Comparisons of "is this phase done" use a relative tolerance HS_EPS_REL on the
 *   volume (see hs_sched_next_event()).
 *
 * Model (doc/design.md §2, doc/design.md §2): a platform of N compute nodes,
 * each with I/O bandwidth b, sharing an I/O system of bandwidth B.  Application k runs
 * on beta_k nodes, is released at r_k, and alternates compute chunks w(k,i) with I/O
 * transfers vol(k,i).  At any instant, the bandwidth given to k is at most
 * min(beta_k * b, B) and the sum over all jobs is at most B.
 *
 * Error convention (flux-core style): functions return 0 / a pointer on success and
 * -1 / NULL on failure with errno set; when a hu_error_t (libhutil's) is passed,
 * its text says what was wrong.  Functions have no side effect on failure.
 */
#ifndef HARMONIA_HSCHED_H
#define HARMONIA_HSCHED_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "../libhutil/hutil.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HS_EPS_REL 1e-9 /* relative tolerance on volumes and times */

/* ---------------------------------------------------------------- platform */

/* One buffer node of the burst-buffer tier (used from the buffer-tier issue on;
 * a platform with nbuffers == 0 behaves exactly as the plain model). */
typedef struct {
    char name[64];
    double capacity;  /* bytes */
    double bandwidth; /* bytes/s, one stream alone */
    double msca[16];  /* MSCA(c) for c = 1..16 (msca[0] = MSCA(1) = 0) */
    int nmsca;        /* number of valid entries in msca (0: insensitive) */
    /* appended (buffer tier, doc/buffer-tier.md) */
    double msca_read[16]; /* read curve, same convention as msca */
    int nmsca_read;       /* 0: reads use the write curve 'msca' */
    char device[32];      /* device type ("nvme", "ssd", "hdd", ...), for filters */
} hs_buffer_t;

typedef struct {
    int nodes;      /* N */
    double node_bw; /* b, bytes/s per compute node */
    double bw;      /* B, bytes/s of the shared I/O system (PFS) */
    int nbuffers;
    const hs_buffer_t *buffers; /* borrowed: copied by hs_sched_create() */
} hs_platform_t;

/* ---------------------------------------------------------------- policies */

typedef enum {
    HS_POL_FAIRSHARE = 0,
    HS_POL_FCFS,
    HS_POL_STATIC,
    HS_POL_ROUNDROBIN,
    HS_POL_MINDILATION,
    HS_POL_MAXSYSEFF,
    HS_POL_MINMAX,
    HS_POL_SET, /* set10 and set:<base> */
    HS_POL_SET_FAIRSHARE,
    HS_POL_PRIORITY_SHARING,
    HS_POL_PERIODIC_THROU,
    HS_POL_PERIODIC_CONG,
    HS_POL_PERSCHED,
    HS_POL_HARMONIA_MAXBW,
    HS_POL_HARMONIA_MINSTALL,
    HS_POL_HARMONIA_FAIRNESS,
    HS_POL_HARMONIA_BUFFER_EFF,
    HS_POL_HARMONIA_PRIORITY,
    HS_POL_AUTO, /* model-predictive choice among candidates */
    HS_POL__COUNT
} hs_policy_kind_t;

typedef struct {
    hs_policy_kind_t kind;
    bool priority;   /* the "-priority" variant (Gainaru §3.1) */
    double gamma;    /* minmax:<gamma>, in [0,1] */
    double set_base; /* set:<base>; 10 for set10 */
    /* appended: periodic policies (doc/periodic.md §2) */
    double period_min; /* > 0: T_min the period search starts from (s);
                               0: max_k (w_k + time_io_k) */
    /* appended: auto (doc/policies.md, "auto"); zero means the default */
    int auto_objective;        /* hs_auto_objective_t */
    double auto_factor;        /* dilation bound: factor x the lowest (1.05) */
    double auto_hysteresis;    /* relative gain needed to switch (0.01) */
    double auto_interval;      /* s between periodic epochs (0: a fifth of the horizon) */
    double auto_horizon;       /* s simulated ahead (0: 2 x the longest w + time_io) */
    char auto_candidates[256]; /* comma-separated policy ids ("": the default) */
    /* appended: the max-wait guard of every policy (doc/policies.md); 0: off */
    double max_wait; /* s: a phase whose excess wait (time since its request
                               beyond moving its done bytes at its cap) reaches it
                               gets min(cap, B / m) whatever the policy says */
    /* appended: the decision budget (doc/performance.md, "Decision budget") */
    uint64_t max_work; /* work units one decision of a policy that computes
                               schedules may spend (periodic: segments visited and
                               instances added), past which it answers with the
                               best schedule so far; 0: the policy's default,
                               UINT64_MAX: unbounded */
    /* appended: the starvation bound of every policy (doc/policies.md, "Starvation
     * bound"), on by default: a phase whose excess wait (as for max_wait) reaches
     * max(starve_factor x its exclusive duration vol / cap, starve_floor) gets a
     * share as under max_wait (both on: whichever comes first) */
    double starve_factor; /* k; 0: HS_STARVE_FACTOR_DEFAULT, < 0: off */
    double starve_floor;  /* s; 0: HS_STARVE_FLOOR_DEFAULT */
} hs_policy_t;

/* Defaults of the starvation bound (doc/policies.md says why these values). */
#define HS_STARVE_FACTOR_DEFAULT 200.0
#define HS_STARVE_FLOOR_DEFAULT 7200.0

typedef enum {
    HS_AUTO_SYSEFF = 0,     /* highest SysEff among dilation <= factor x the lowest */
    HS_AUTO_STRETCH = 1,    /* lowest max-stretch */
    HS_AUTO_IOSLOWDOWN = 2, /* lowest mean I/O slowdown */
} hs_auto_objective_t;

/* Candidates of 'auto' when none are given. */
#define HS_AUTO_CANDIDATES \
    "mindilation,fcfs,roundrobin,maxsyseff,minmax:0.5," \
    "set10,fairshare"

/* Parse a policy id of doc/design.md §3 ("fairshare", "minmax:0.5", "mindilation-priority",
 * "set10", "set:2", ...).  Returns 0, or -1 with errno = EINVAL and err filled. */
int hs_policy_parse(const char *id, hs_policy_t *pol, hu_error_t *err);

/* Canonical id of a parsed policy, written into buf (e.g. "minmax:0.5"). */
const char *hs_policy_name(const hs_policy_t *pol, char *buf, size_t len);

/* NULL-terminated list of the base ids accepted (for --help and error messages). */
const char *const *hs_policy_ids(void);

/* IO-Sets class of a w_iter: round(log_base w_iter), clamped to +-100000 (the set
 * policies group phases by it; bbmgrd weighs the mover's transfers by it). */
int hs_iosets_class(double w_iter, double base);

/* ---------------------------------------------------------------- jobs */

typedef enum { HS_DIR_WRITE = 0, HS_DIR_READ = 1 } hs_dir_t;

typedef struct {
    uint64_t id;    /* driver's job id, unique within an instance */
    int nodes;      /* beta_k >= 1 */
    double release; /* r_k */
    /* What is known ahead of time (hints; from the workload in bbsim, from the
     * #BB_HARMONIA iohints in bbmgrd).  <= 0 means unknown. */
    double w;      /* typical compute time between phases, s */
    double volume; /* typical volume of one phase, bytes */
    double w_iter; /* IO-Sets w_iter, s (if <= 0: w + volume/min(beta b, B),
                               then learnt online from phase starts) */
    int instances; /* n_tot (0: unknown) */
    int priority;  /* 1..10, for harmonia-priority (0: default 1) */
    /* Buffer nodes this job may use (indices into platform.buffers); empty means
     * "all" for the online policies and none for static. */
    int nalloc;
    const int *alloc; /* borrowed: copied */
    /* appended (buffer tier): number of nodes of 'alloc' a phase is striped over
     * (0: 1).  'static' ignores it and stripes over the whole allocation. */
    int stripe;
} hs_job_t;

/* ---------------------------------------------------------------- scheduler */

typedef struct hs_sched hs_sched_t;

hs_sched_t *hs_sched_create(const hs_platform_t *plat, const hs_policy_t *pol, hu_error_t *err);
void hs_sched_destroy(hs_sched_t *s); /* accepts NULL, keeps errno */

/* Change the policy of a live scheduler: takes effect at the next decision; jobs and
 * phases are kept (bbmgrd's "policy change without dropping jobs"). */
int hs_sched_set_policy(hs_sched_t *s, double now, const hs_policy_t *pol, hu_error_t *err);

/* Events.  'now' must never decrease between calls (EINVAL otherwise). Every event
 * first integrates the progress of active transfers from the last event to 'now'
 * at the rates of the last decision. */
int hs_job_arrive(hs_sched_t *s, double now, const hs_job_t *job, hu_error_t *err);
int hs_job_leave(hs_sched_t *s, double now, uint64_t id); /* drops its phase too */

/* Job 'id' finished a compute chunk of 'w_done' seconds (its w(k,i)) and asks to move
 * 'volume' bytes.  One phase per job at a time (EBUSY otherwise). */
int hs_phase_request(hs_sched_t *s, double now, uint64_t id, double volume, hs_dir_t dir,
                     double w_done, hu_error_t *err);

/* External progress report (bbmgrd: the client says how much it moved). Sets the
 * bytes done so far; the model otherwise integrates rate x time itself. */
int hs_phase_progress(hs_sched_t *s, double now, uint64_t id, double bytes_done);

/* The phase of job 'id' is over (all bytes moved, or the client says so). */
int hs_phase_finish(hs_sched_t *s, double now, uint64_t id);

/* Advance the model to 'now' without an event (integrates progress). */
int hs_sched_advance(hs_sched_t *s, double now);

/* ---------------------------------------------------------------- decisions */

typedef struct {
    uint64_t id;      /* job id */
    double bw;        /* bytes/s granted until the next event (0: waiting) */
    double share;     /* bw / B */
    int buffer;       /* buffer node index the phase goes to, -1: the PFS */
    double start;     /* planned start (>= now) for schedules computed ahead;
                               == now for online policies when bw > 0 */
    double remaining; /* bytes left in the phase */
    double weight;    /* the policy's weight for this job (SFQ(D)+ weights) */
    /* appended (buffer tier) */
    bool buffer_full; /* the rate is limited by a full buffer node (a stall) */
    int nbuffers;     /* buffer nodes the phase is striped over (0: the PFS;
                               'buffer' is the first of them) */
} hs_grant_t;

/* Recompute the allocation at time 'now' (after one or several events at 'now').
 * Fills 'out' with one entry per pending phase (granted or waiting), in a stable
 * order (by job id); returns the number of entries, or -1 with errno set.  When
 * 'out' is too small (n > cap), returns the needed count and fills 'cap' entries. */
int hs_sched_decide(hs_sched_t *s, double now, hs_grant_t *out, size_t cap);

/* Earliest future time at which something changes without an outside event: a
 * granted transfer completes at its current rate, or a schedule computed ahead
 * starts/stops a phase.  INFINITY when nothing is in flight. */
double hs_sched_next_event(const hs_sched_t *s);

/* Number of jobs known / with a pending phase. */
size_t hs_sched_njobs(const hs_sched_t *s);
size_t hs_sched_npending(const hs_sched_t *s);

/* ---------------------------------------------------------------- accounting */

/* Per-job accounting kept by the scheduler from the events it saw. */
typedef struct {
    uint64_t id;
    int nodes;
    double release; /* r_k */
    double end;     /* d_k: time of the last phase finish or job leave (NAN if still running) */
    int phases;     /* instances completed */
    double work;    /* sum of w(k,i) reported with phase requests */
    double io_dedicated; /* sum of time_io(k,i) = vol / min(beta b, B) */
    double io_time;      /* sum of (finish - request) over completed phases */
    double io_wait;      /* time phases spent with bw == 0 (not granted) */
    double bytes;        /* bytes moved */
    double w_iter_est;   /* w_iter used by the policy */
    /* appended (buffer tier).  If is computed on every platform (alone = the
     * dedicated time); the buffer figures are 0 on a platform without buffers. */
    double if_sum;      /* sum over completed phases of If = io time / alone time */
    double if_max;      /* largest If of a completed phase */
    double buffer_full; /* time phases were slowed by a full buffer node, s */
    double buf_held;    /* integral over the job's life of the bytes held by its
                               allocated buffer nodes, byte.s */
    double buf_alloc;   /* integral of the capacity of its allocated nodes, byte.s */
    double alloc_wait;  /* not set by the core: a driver's allocation wait, s */
} hs_job_stats_t;

int hs_job_stats(const hs_sched_t *s, uint64_t id, hs_job_stats_t *st);

/* ---------------------------------------------------------------- metrics */

/* Metrics of a finished run (doc/design.md §2).  Input: one record per application. */
typedef struct {
    double sys_efficiency; /* (1/N) sum beta_k rho~_k(d_k) */
    double upper_limit;    /* (1/N) sum beta_k rho_k */
    double dilation;       /* max_k rho_k / rho~_k(d_k) */
    double stretch_max;    /* max_k (d_k - r_k) / (work_k + io_dedicated_k) */
    double stretch_mean;
    double io_slowdown_mean; /* mean_k io_time_k / io_dedicated_k */
    double utilization;      /* sum beta_k work_k / (N * makespan) */
    double fairness;         /* Jain's index over per-job dilations */
    double stall_time;       /* sum_k (io_time_k - io_dedicated_k), s (>= 0 each) */
    double makespan;         /* max d_k - min r_k */
    /* appended */
    double dilation_mean;   /* mean_k rho_k / rho~_k(d_k) */
    double io_slowdown_max; /* max_k io_time_k / io_dedicated_k */
    double io_wait;         /* sum_k io_wait_k: time phases waited with no bandwidth, s */
} hs_metrics_t;

/* Per-app derived figures, filled by hs_metrics_compute() when 'per_app' != NULL. */
typedef struct {
    double rho;       /* work / (work + io_dedicated) */
    double rho_tilde; /* work / (end - release) */
    double dilation;  /* rho / rho_tilde */
    double stretch;
    double io_slowdown;
    double stall;
} hs_app_metrics_t;

/* 'N' is the platform's node count (the paper's N = sum beta_k when all nodes are
 * used; pass plat.nodes).  Returns 0, or -1 with errno = EINVAL (n == 0, N <= 0). */
int hs_metrics_compute(const hs_job_stats_t *apps, size_t n, int N, hs_metrics_t *m,
                       hs_app_metrics_t *per_app);

/* ---------------------------------------------------------------- additions
 * (appended after the first version of this interface; see doc/policies.md) */

/* Forget a departed job's record (its statistics): bbmgrd calls it once the job's
 * figures are stored, so that a long-running daemon does not grow.  0, or -1 with
 * errno = ENOENT (unknown id) or EBUSY (the job is still live). */
int hs_job_forget(hs_sched_t *s, uint64_t id);

/* Pending phases whose volume is done in the model (within HS_EPS_REL) but that were
 * not finished yet: the driver calls hs_phase_finish() for them.  Fills up to 'cap'
 * ids (in no particular order) and returns how many there are. */
size_t hs_sched_completed(const hs_sched_t *s, uint64_t *ids, size_t cap);

/* Time of the last event seen (-INFINITY before the first one). */
double hs_sched_now(const hs_sched_t *s);

/* The current phase of a live job, as the model sees it. */
typedef struct {
    uint64_t id;
    bool pending;   /* false: the job is computing (other fields 0) */
    bool complete;  /* volume done in the model, waiting for hs_phase_finish */
    double volume;  /* bytes requested */
    double done;    /* bytes moved so far */
    double request; /* time of the request */
    double bw;      /* rate of the last decision */
    double weight;  /* weight of the last decision */
    double w_iter;  /* w_iter used for this phase */
} hs_phase_info_t;

/* 0, or -1 with errno = ENOENT (no such live job) or EINVAL. */
int hs_phase_info(const hs_sched_t *s, uint64_t id, hs_phase_info_t *pi);

/* ---------------------------------------------------------------- buffer tier
 * (appended; the model is written down in doc/buffer-tier.md)
 *
 * A platform with nbuffers > 0 has a burst-buffer tier.  Each phase of a job goes to
 * buffer nodes of its allocation (hs_job_t.alloc): a write fills them, and every node
 * drains to the PFS in the background, the PFS bandwidth B being shared by the
 * draining nodes (and any phase sent to the PFS directly); a full node slows its
 * writers to its drain rate (a stall).  A node with c concurrent streams delivers
 * BW(c) = bandwidth / (1 + MSCA(c)) in all (doc/design.md §2).  Drivers must call
 * hs_sched_decide() at the times hs_sched_next_event() returns: a node filling up or
 * emptying changes the rates. */

#define HS_OVERPROVISION_DEFAULT 2.0

/* MSCA(c) of a buffer node for a direction: its curve, the last value held beyond
 * the curve, 0 for an empty curve or c <= 1. */
double hs_msca(const hs_buffer_t *b, hs_dir_t dir, int c);

/* Aggregate bandwidth of a node with c >= 1 streams: bandwidth / (1 + MSCA(c)). */
double hs_buffer_bw(const hs_buffer_t *b, hs_dir_t dir, int c);

/* Interference factor of one stream among c on the node: c (1 + MSCA(c)). */
double hs_buffer_if(const hs_buffer_t *b, hs_dir_t dir, int c);

/* Built-in device types: "nvme" (nearly flat), "ssd" (moderate), "hdd" (steep).
 * Illustrative curves (doc/buffer-tier.md), to be replaced by measured ones
 * ('bbmgr calibrate').  Fills b->msca, b->msca_read, their counts and b->device.
 * Returns 0, or -1 with errno = ENOENT for an unknown name. */
int hs_device_builtin(const char *name, hs_buffer_t *b);

/* NULL-terminated list of the built-in device names. */
const char *const *hs_device_names(void);

/* Buffer-node allocation (pure; bbsim and bbmgrd). */
typedef struct {
    double capacity;      /* bytes requested, > 0 */
    int nodes;            /* at least this many nodes (0: from the capacity alone) */
    const char *device;   /* only nodes of this device type (NULL or "": any) */
    double overprovision; /* factor >= 1 (0: HS_OVERPROVISION_DEFAULT) */
} hs_alloc_request_t;

typedef struct {
    int n;           /* nodes returned */
    int nbase;       /* the first nbase hold the reservation */
    double per_node; /* bytes reserved on each of them: capacity / nbase */
} hs_alloc_result_t;

/* Choose buffer nodes for a request, given 'reserved[j]' (bytes already reserved
 * on node j, nbuffers entries; NULL: none).  The base set is
 * max(nodes, ceil(capacity / largest eligible node capacity)) nodes, those with the
 * most unreserved capacity first (ties: lowest index), each of which must have
 * capacity / nbase unreserved; then up to ceil(nbase * overprovision) - nbase spare
 * nodes (eligible, not in the base set, with that much unreserved too; most free
 * first) are added without a reservation.  Writes the indices into 'nodes' (room
 * for 'cap'), the base nodes first.  Returns 0, or -1 with errno EINVAL (bad
 * request), ENOSPC (does not fit now; err says why) or ERANGE ('cap' too small).
 * The caller adds res->per_node to reserved[] of the base nodes. */
int hs_alloc_nodes(const hs_platform_t *plat, const double *reserved, const hs_alloc_request_t *req,
                   int *nodes, int cap, hs_alloc_result_t *res, hu_error_t *err);

/* State and figures of buffer node j (0 <= j < nbuffers) at the last event. */
typedef struct {
    double capacity;  /* bytes */
    double occupancy; /* bytes held now */
    double inflow;    /* bytes/s written into it (last decision) */
    double drain;     /* bytes/s drained to the PFS (last decision) */
    int streams;      /* phases moving data on it (last decision) */
    int placed;       /* pending phases placed on it */
    bool full;
    /* accumulated since hs_sched_create() */
    double busy;             /* time with at least one stream, s */
    double concurrency_mean; /* time-weighted mean of streams while busy */
    int concurrency_max;
    double written; /* bytes written into the node */
    double read;    /* bytes read from it */
    double drained; /* bytes drained to the PFS */
    double occupancy_max;
    double full_time; /* time full with writers waiting, s */
} hs_buffer_stats_t;

/* 0, or -1 with errno = EINVAL (no scheduler or j out of range). */
int hs_buffer_stats(const hs_sched_t *s, int j, hs_buffer_stats_t *st);

/* bbmgrd: the real occupancy of node j (the mover knows it); replaces the model's.
 * 0, or -1 with errno = EINVAL. */
int hs_buffer_set_occupancy(hs_sched_t *s, double now, int j, double bytes);

/* ---------------------------------------------------------------- schedule statistics
 * (appended with the periodic and Harmonia policies; doc/periodic.md §8,
 * doc/harmonia-dp.md §5).  The core has no clock: the cost is clock-free ("work");
 * a driver that wants seconds times hs_sched_decide() itself (bbsim does: the
 * decisions during which 'schedules' grew). */

typedef struct {
    bool plans;         /* the policy computes schedules (periodic, harmonia-*);
                               false: every other field is 0 */
    uint64_t schedules; /* schedules computed: periodic patterns, DP placements */
    double work;        /* clock-free cost, summed: periodic segments visited,
                               DP steps (hs_dp_solution_t.steps) */
    /* periodic policies (NAN/0 for the others) */
    double period;                /* T of the pattern computed for the largest job mix
                               (the first of them) */
    double period_tmin;           /* its T_min = max_k (w_k + time_io_k) */
    int period_jobs;              /* jobs in that pattern */
    int period_unscheduled;       /* of which with no instance in it (they get leftovers) */
    double period_sys_efficiency; /* that pattern's own SysEfficiency and */
    double period_dilation;       /* Dilation (steady state, Gainaru eq. (1)) */
    double period_last;           /* T of the pattern in force now */
    int jobs_fallback;            /* live jobs without usable hints (w, volume), now */
    /* Harmonia DP policies */
    uint64_t exact;     /* placements that are the DP's optimum */
    uint64_t held_back; /* phases held back because the free capacity was short */
    int max_phases;     /* largest batch placed at once */
    /* appended: schedules cut short by the decision budget (hs_policy_t.max_work):
     * the policy answered with the best one found within it */
    uint64_t budget_hits;
    /* appended: the most work units one schedule took (periodic policies: its
     * pattern's segments_visited, never above hs_policy_t.max_work) */
    double work_max;
} hs_policy_stats_t;

/* Statistics of the current policy's schedules since it was set.  0, or -1 with
 * errno = EINVAL. */
int hs_sched_policy_stats(const hs_sched_t *s, hs_policy_stats_t *st);

/* ---------------------------------------------------------------- auto
 * (appended; doc/policies.md, "auto") */

/* Parse an objective name: "syseff", "stretch" or "ioslowdown".  0, or -1 with
 * errno = EINVAL. */
int hs_auto_objective_parse(const char *name, int *objective);
const char *hs_auto_objective_name(int objective);

typedef struct {
    bool active;        /* the scheduler runs 'auto' (every other field 0) */
    char current[64];   /* id of the policy applied now */
    char reason[256];   /* why it was chosen (the last epoch) */
    uint64_t epochs;    /* decision epochs evaluated */
    uint64_t switches;  /* changes of the policy applied */
    double last_epoch;  /* time of the last epoch (-INFINITY before) */
    uint64_t work;      /* clock-free cost: simulated events, summed */
    uint64_t last_work; /* of the last epoch */
    int candidates;
    bool pending_keep; /* always false: a switch hands the grants in flight to
                               the new policy (kept for the layout) */
    /* appended */
    uint64_t guarded; /* epochs that ran fairshare by the guard (the look
                               ahead's premise did not hold) */
    uint64_t cut;     /* switches made while phases were granted (the new
                               policy decided their rates again) */
    /* appended: the look ahead against the run.  At an epoch whose simulations
     * ran every live job to the end of its known phases, the policy chosen (or
     * kept) projected when each job would end; a job that then ended without
     * another epoch projecting it again is checked: its error is |end -
     * projected end| / (end - time of the projection).  0 when the jobs kept to
     * their hints and no job arrived (doc/policies.md, "auto"). */
    uint64_t lookahead_checked; /* jobs checked */
    double lookahead_err_max;   /* their largest error */
    double lookahead_err_sum;   /* the sum of their errors (mean: / checked) */
} hs_auto_state_t;

/* State of 'auto' in scheduler s.  0 (st->active false for another policy), or -1
 * with errno = EINVAL. */
int hs_sched_auto_state(const hs_sched_t *s, hs_auto_state_t *st);

/* ---------------------------------------------------------------- starvation bound
 * (appended; doc/policies.md, "Starvation bound") */

/* The wait a phase of 'volume' bytes with cap 'cap' may have under 'pol' before the
 * core gives it a share: min(max_wait, max(k x volume / cap, floor)) with the
 * defaults filled in; INFINITY when both bounds are off. */
double hs_wait_bound(const hs_policy_t *pol, double volume, double cap);

/* Phases that reached their wait bound (max_wait or the starvation bound) since
 * hs_sched_create(): each was given a share by the core from then on, whatever
 * its policy decided.  0 for NULL. */
uint64_t hs_sched_bound_hits(const hs_sched_t *s);

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_HSCHED_H */
