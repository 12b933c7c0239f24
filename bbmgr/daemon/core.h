/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core.h — bbmgrd's in-memory model: buffer nodes, pools, jobs, allocations,
 * persistent buffers, phases and transfers, the live scheduler (libhsched driven
 * with the real clock), and recovery from the state database.
 *
 * One mutex guards everything here (core_lock()); every change is queued to the
 * state writer (state_put()) inside the same critical section, so the database sees
 * changes in the order memory did.  The HTTP layer answers a request only after
 * what it changed or saw is committed (see api.c).
 *
 * The core's files (what they share with each other only is in core_internal.h):
 *   core.c          the top: creation and destruction, the timer (tick) that
 *                   drives the files below
 *   core_model.c    the bottom, which calls none of them: the error setter, state
 *                   names, clocks, the lock, rows queued to the state writer, the
 *                   objects' frees, string vectors
 *   core_jobs.c     the live scheduler, jobs and their I/O phases
 *   core_alloc.c    buffer nodes and pools, placement, persistent buffers, drain,
 *                   reconfiguration
 *   core_bufdir.c   buffer directories, spares, the trash, buffers held on disk
 *   core_stage.c    stage-in/stage-out transfers and the glue to the data mover
 *   core_recover.c  recovery from state.db (its reads are in state.h) and of the
 *                   durability a stop interrupted
 *   core_json.c     the JSON views served by the routes
 * Errors are cerr_t with an errno-style code; routes.c chooses the HTTP status.
 */
#ifndef BBMGR_CORE_H
#define BBMGR_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

#include "libhsched/hsched.h"
#include "config.h"
#include "hmap.h"
#include "mover.h"
#include "quota.h"
#include "state.h"

typedef struct core core_t;
typedef struct job job_t;

typedef struct {
    char name[64];
    int pool;                   /* index in core->pools */
    uint64_t capacity;
    uint64_t used;              /* allocated bytes (jobs + persistent), and leftover */
    uint64_t leftover;          /* what failed teardowns left on it, measured, until a
                                   later try removes it (core_node_leftover()) */
    double bandwidth;           /* what the scheduler counts on: bw_conf, or less when
                                   the node's agent measures other I/O on its device */
    double bw_conf;             /* bandwidth in bbmgr.yaml */
    char *mount;
    int device;                 /* index in cfg->devices, -1: none */
    bool drained;
    char *reason;
    bool in_config;             /* false: removed from bbmgr.yaml, kept drained while used */
    int nallocs;                /* allocations using it */
    int active;                 /* granted phases on it */
    double load;                /* bytes/s of granted phases on it */
    uint64_t measured;          /* what the buffer directories on it hold, as last
                                   measured (core_node_loads()) */
    int nmeasured;              /* allocations on it with a figure */
    bool mount_warned;          /* "mount is not a directory" logged once */
    int spares;                 /* empty directories ready in <mount>/.harmonia-spare */
    unsigned spare_top;         /* they are named spare_top - spares .. spare_top - 1 */
    bool spare_off;             /* the spare directory is unusable (logged once) */
    quota_mount_t quota;        /* what its mount enforces (capacity.enforce, quota.c) */
    signed char spare_role;     /* 0: not known yet, 1: keeps its mount's spares,
                                 * -1: shares the mount of an earlier node */
} node_t;

typedef struct {
    char name[64];
    uint64_t granularity;
} pool_t;

typedef struct {
    int node;
    uint64_t bytes;
    uint64_t dirgen;            /* an agent's node: the generation of its directory set
                                   that first holds this directory (0: none awaited) */
    /* an agent's node: what its agent last measured the directory to hold ("usage"
     * of its report, nodes.c), and the directory's identity; used_at 0: not yet */
    uint64_t used, used_dev, used_ino;
    double used_at;
} anode_t;

typedef struct {
    char pool[64];
    uint64_t capacity;          /* asked */
    uint64_t reserved;          /* sum over nodes (>= capacity) */
    int nodes_requested;
    double created;
    int n;
    anode_t *v;
} alloc_t;

typedef enum { PH_WAITING, PH_GRANTED, PH_FINISHED, PH_EXPIRED, PH_CANCELLED } phase_state_t;

typedef struct {
    uint64_t id;
    job_t *job;
    double volume;
    char dir[12];
    phase_state_t state;
    double requested, granted, finished;    /* Unix times; NAN: not yet */
    double bytes;
    double bw;                  /* current share, bytes/s */
    double share;               /* bw / B */
    int buffer;                 /* node index chosen by the policy, -1: none */
    double w_done;
    bool on_hold;               /* waiting outside the scheduler: its job's buffer is
                                   over its capacity (capacity.over: hold); stored
                                   (phases.held) */
    bool held_before;           /* held when bbmgrd last stopped (recovered): held
                                   until its buffers are measured again */
} phase_t;

typedef enum { XF_QUEUED, XF_RUNNING, XF_DONE, XF_FAILED, XF_CANCELLED } xfer_state_t;

typedef struct {
    uint64_t id;
    char *job_id;
    char kind[12];              /* stage_in | stage_out */
    char *source, *destination;
    char type[12];              /* file | directory */
    xfer_state_t state;
    int64_t bytes_total;        /* -1: unknown */
    int64_t bytes_done;
    char *message;
    double requested, start, finished;
    bool in_mover;              /* handed to the data mover (stage.mode: mover) */
    int durable;                /* -1: no fsync promised (NULL); 0: done, its fsyncs
                                   going on; 1: on disk (fsync'd) */
    unsigned run;               /* times it was queued again after done (agents: a new
                                   run of the same id); not stored */
    bool relink;                /* part 0 of a spread stage-in: run again once done */
    int part, nparts;           /* spread over the allocation's nodes: part `part` (its
                                   buffer side on slot `part`) of `nparts`, the parts
                                   of one request at ids id - part ...; nparts 0: a
                                   transfer of its own (doc/bbnoded.md, Data layout) */
} xfer_t;

/* What a buffer's directories hold, as last measured (core_jobs.c, usage_tick()):
 * the st_blocks of everything below them, hard links once per directory. */
typedef struct {
    uint64_t bytes;
    double at;                  /* Unix time of the last complete walk; 0: none yet */
    bool over;                  /* bytes > the allocation's capacity */
} bb_usage_t;

typedef enum { JOB_REGISTERED, JOB_RUNNING, JOB_ENDED } job_state_t;

struct job {
    char id[64];
    uid_t uid;
    gid_t gid;
    char *user;
    char *name;
    int nodes;
    double w_iter;              /* hints; NAN: none */
    double io_volume;
    long phases;                /* -1: none */
    char io[12];                /* write | read | readwrite | "" */
    int priority;               /* 1..10, 0: none */
    job_state_t state;
    double created, updated, begun, ended;
    uint64_t hs_id;             /* id inside the scheduler */
    bool in_sched;
    alloc_t *alloc;
    phase_t *phase;             /* the open phase (waiting or granted), at most one */
    long nphases;               /* finished phases */
    double bytes;               /* bytes of finished phases */
    double last_end;            /* end of the previous phase (or begin) */
    /* learned from the phases finished under this bbmgrd (not stored: after a
     * restart it learns again): the requests of the first and latest of them,
     * and how many they were (core_job_w_iter) */
    double learn_first, learn_last;
    long learn_n;
    xfer_t **xfers;
    int nxfers;
    char **uses;                /* persistent buffers used */
    int nuses;
    bb_usage_t usage;           /* measured use of its buffer directories */
};

typedef struct {
    char name[64];
    uid_t uid;
    gid_t gid;
    alloc_t alloc;
    double created;
    char **users;               /* job ids using it */
    int nusers;
    bb_usage_t usage;
} pbuf_t;

/* A buffer kept on disk after its allocation (core_internal.h). */
typedef struct held held_t;

/* Error of a core operation: what kind of failure (an errno value), the field at
 * fault, a reason.  The core knows nothing of HTTP: the routes choose the status
 * from the code.  EINVAL: a bad value; EPERM: not allowed for this user; ENOENT:
 * no such thing; EEXIST: conflicts with what exists; EBUSY: not in the state that
 * allows it; EDOM: can never be done (beyond what the pool or policy offers);
 * ENOSPC: no room now; EAGAIN: a limit reached, try later; ENOMEM, EIO: the
 * daemon's own failure. */
typedef struct {
    int code;
    char field[64];
    char msg[320];
} cerr_t;

/* Fill e (when not NULL) and return -1. */
int cerr_set(cerr_t *e, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

typedef void (*core_notify_f)(uint64_t phase_id, void *arg);

/* The core's state.  The rest of bbmgrd (routes.c, nodes.c, metrics.c) reads its
 * fields under the lock; what only the core's own files (core*.c) share is in
 * core_internal.h. */

core_t *core_create(cfg_t *cfg, state_t *st, hu_error_t *err);     /* takes cfg */
void core_destroy(core_t *c);
int core_recover(core_t *c, hu_error_t *err);
void core_set_notify(core_t *c, core_notify_f fn, void *arg);

void core_lock(core_t *c);
void core_unlock(core_t *c);

/* Clocks. */
double core_wall(void);
double core_hs_now(core_t *c);

/* Apply a new configuration (SIGHUP): policy, limits, nodes added or drained.
 * Takes newcfg on success; on failure the running one stays. Lock not held. */
int core_reconfigure(core_t *c, cfg_t *newcfg, hu_error_t *err);

/* Periodic work (timer): expire grants, complete scheduled transfers, follow
 * the scheduler's own next event.  Lock not held. */
void core_tick(core_t *c);

/* ---- operations (lock held) ---- */
job_t *core_job(core_t *c, const char *id);
int core_job_register(core_t *c, const char *id, uid_t uid, gid_t gid, const char *user,
                      const char *name, int nodes, json_t *hints, bool *created, cerr_t *e);
int core_job_hints(core_t *c, job_t *j, json_t *hints, cerr_t *e);
void core_job_save(core_t *c, job_t *j);       /* queue the job's row */
int core_job_begin(core_t *c, job_t *j, int nodes, cerr_t *e);
int core_job_end(core_t *c, job_t *j, cerr_t *e);

int core_alloc_create(core_t *c, job_t *j, uint64_t capacity, int nodes, const char *pool,
                      bool *created, cerr_t *e);
int core_alloc_release(core_t *c, job_t *j, cerr_t *e);

phase_t *core_phase_request(core_t *c, job_t *j, double volume, const char *dir,
                            double w_done, cerr_t *e);
phase_t *core_phase(core_t *c, uint64_t id);
int core_phase_finish(core_t *c, phase_t *p, double bytes, cerr_t *e);
int core_phase_progress(core_t *c, phase_t *p, double bytes, cerr_t *e);

/* spread: a stage-in of a directory into, or a stage-out from, the job's directory on
 * the first node of a multi-node allocation becomes one transfer per node (parts
 * 0..n-1 with consecutive ids; returns part 0); otherwise it is one transfer. */
xfer_t *core_stage(core_t *c, job_t *j, const char *kind, const char *src, const char *dst,
                   const char *type, int64_t size, bool spread, cerr_t *e);
xfer_t *core_xfer(core_t *c, uint64_t id);
int core_xfer_update(core_t *c, xfer_t *x, const char *state, int64_t bytes_done,
                     int64_t bytes_total, const char *message, cerr_t *e);

pbuf_t *core_pbuf(core_t *c, const char *name);
pbuf_t *core_pbuf_create(core_t *c, const char *name, uid_t uid, gid_t gid,
                         uint64_t capacity, const char *pool, bool *created, cerr_t *e);
int core_pbuf_destroy(core_t *c, pbuf_t *b, cerr_t *e);
int core_pbuf_use(core_t *c, pbuf_t *b, job_t *j, cerr_t *e);
int core_pbuf_unuse(core_t *c, pbuf_t *b, job_t *j, cerr_t *e);

/* An administrator frees a held buffer whose stage-out could not be made durable
 * (GET /v1/status "held", kept): its directories are removed, its space is free.
 * job: the job id, or "persistent:<name>".  ENOENT: none held; EBUSY: still waiting
 * for a stage-out to be durable (it goes by itself then). */
int core_held_release(core_t *c, const char *job, uint64_t *bytes, cerr_t *e);

int core_node_index(core_t *c, const char *name);
int core_node_drain(core_t *c, int idx, bool drain, const char *reason, cerr_t *e);
int core_set_policy(core_t *c, const char *id, cerr_t *e);
/* The bandwidth the scheduler counts on for node idx, as measured by its agent
 * (nodes.c): the scheduler is rebuilt with it.  0, or -1 (logged; unchanged). */
int core_node_set_bandwidth(core_t *c, int idx, double bw);

/* The policy's weight for a job's share of the mover (SFQ(D)+ flow weight):
 * set10/set:<b> and priority-sharing: the IO-Sets priority b^-round(log_b w_iter)
 * (no w_iter hint: class 0); harmonia-priority: the priority hint; others: 1. */
double core_job_weight(core_t *c, const job_t *j);

/* A result of a transfer run elsewhere than bbmgrd's mover (a buffer-node agent,
 * nodes.c), applied as the mover's own results are (lock held). */
void core_mover_report(core_t *c, uint64_t tid, const char *job, mover_state_t st,
                       int64_t done, int64_t total, const char *msg);

/* Node lost of j's allocation is down (nodes.c) before j runs: its share of the
 * buffer moves to another node that has room (alloc_move_share()), and the
 * stage-ins into its directory there — running, queued or done, their data was
 * only there — are queued again with their destinations moved.  The number of
 * them, or -1 when j runs already or no node can take the share (nothing changed:
 * its transfers then fail as before). */
int core_restage_lost(core_t *c, job_t *j, int lost, const char *why);

/* Bring a deferred decision up to date (lock held); a no-op when it is. */
void core_settle(core_t *c);

/* ---- the core's configuration, state and services (for bbmgrd.c and routes.c) ---- */
cfg_t *core_cfg(core_t *c);                 /* the running configuration */
state_t *core_state(core_t *c);             /* the SQLite state (reads only) */
double core_started(core_t *c);             /* Unix time of the daemon's start */
void core_set_mover(core_t *c, mover_t *m); /* borrowed; NULL: none */
/* What failed teardowns left on node idx holds now (bbmgrd's mover or its agent):
 * counted in its used space, so no allocation counts on it, until it is gone. */
void core_node_leftover(core_t *c, int idx, uint64_t bytes);
/* A transfer by id, open or closed (closed ones are kept with their job), or NULL. */
xfer_t *core_xfer_any(core_t *c, uint64_t id);

/* ---- JSON views (lock held) ---- */
/* Jobs visible to uid (all when admin), of one state (NULL: any), as summaries. */
json_t *core_jobs_json(core_t *c, bool admin, uid_t uid, const char *state);
json_t *core_pbufs_json(core_t *c);
json_t *core_nodes_json(core_t *c);
json_t *core_pools_json(core_t *c);
/* One pool by name, or NULL when there is none. */
json_t *core_pool_json_named(core_t *c, const char *name);
/* The policy in force, the configured one, the ids known and auto's state. */
json_t *core_policy_json(core_t *c);
json_t *core_job_json(core_t *c, job_t *j, bool detail);
/* The last state (borrowed) of a job among the CORE_ENDED_KEEP that ended most
 * recently since bbmgrd started, NULL if none; a live job of that id wins. */
json_t *core_ended_job(core_t *c, const char *id);
json_t *core_alloc_json(core_t *c, const job_t *j, const alloc_t *a, const char *owner_path);
json_t *core_phase_json(core_t *c, phase_t *p);
/* The job's measured w_iter: the mean interval between the requests of the phases
 * it finished under this bbmgrd; NAN before two.  What GET /v1/jobs shows under
 * "learned" and what its end records in the history. */
double core_job_w_iter(const job_t *j);
/* The same for a phase about to be closed: its share as of the latest decision,
 * without bringing a deferred decision up to date first. */
json_t *core_phase_json_closing(core_t *c, phase_t *p);
json_t *core_xfer_json(core_t *c, xfer_t *x);
/* The state of a job's stage-ins or stage-outs (kind) as one word: none, failed
 * (one failed or was cancelled), done (all), running (one is), else queued. */
const char *core_stage_summary(const job_t *j, const char *kind);
json_t *core_pbuf_json(core_t *c, pbuf_t *b);
/* Recompute each node's active phases and load from the current grants. */
void core_node_loads(core_t *c);
json_t *core_node_json(core_t *c, int idx);
json_t *core_pool_json(core_t *c, int idx);
json_t *core_schedule_json(core_t *c, double horizon);
json_t *core_status_json(core_t *c);

const char *phase_state_name(phase_state_t s);
const char *xfer_state_name(xfer_state_t s);
const char *job_state_name(job_state_t s);

#endif
