/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_model.h — the model of bbmgrd's core, its bottom layer (core_model.c): the
 * objects (buffer nodes, pools, jobs, allocations, persistent buffers, phases,
 * transfers, held buffers) and the core's state, and what every file above uses
 * on them: the error setter, the clocks and the lock, lookups, the rows queued
 * to the state writer, the frees, string vectors, the state names.  It calls
 * nothing of the core above it (core.h lists the layers).
 */
#ifndef BBMGR_CORE_MODEL_H
#define BBMGR_CORE_MODEL_H

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <jansson.h>

#include "libhsched/hsched.h"
#include "libhutil/hutil.h"
#include "bufdir.h"
#include "config.h"
#include "hmap.h"
#include "mover.h"
#include "quota.h"
#include "state.h"
#include "util.h"

typedef struct core core_t;
typedef struct job job_t;

typedef struct {
    char name[64];
    int pool; /* index in core->pools */
    uint64_t capacity;
    uint64_t used;     /* allocated bytes (jobs + persistent), and leftover */
    uint64_t leftover; /* what failed teardowns left on it, measured, until a
                                   later try removes it (core_node_leftover()) */
    double bandwidth;  /* what the scheduler counts on: bw_conf, or less when
                                   the node's agent measures other I/O on its device */
    double bw_conf;    /* bandwidth in bbmgr.yaml */
    char *mount;
    int device; /* index in cfg->devices, -1: none */
    bool drained;
    char *reason;
    bool in_config;         /* false: removed from bbmgr.yaml, kept drained while used */
    int nallocs;            /* allocations using it */
    int active;             /* granted phases on it */
    double load;            /* bytes/s of granted phases on it */
    uint64_t measured;      /* what the buffer directories on it hold, as last
                                   measured (core_node_loads()) */
    int nmeasured;          /* allocations on it with a figure */
    bool mount_warned;      /* "mount is not a directory" logged once */
    int spares;             /* empty directories ready in <mount>/.harmonia-spare */
    unsigned spare_top;     /* they are named spare_top - spares .. spare_top - 1 */
    bool spare_off;         /* the spare directory is unusable (logged once) */
    quota_mount_t quota;    /* what its mount enforces (capacity.enforce, quota.c) */
    signed char spare_role; /* 0: not known yet, 1: keeps its mount's spares,
                                 * -1: shares the mount of an earlier node */
} node_t;

typedef struct {
    char name[64];
    uint64_t granularity;
} pool_t;

typedef struct {
    int node;
    uint64_t bytes;
    uint64_t dirgen; /* an agent's node: the generation of its directory set
                                   that first holds this directory (0: none awaited) */
    /* an agent's node: what its agent last measured the directory to hold ("usage"
     * of its report, nodes.c), and the directory's identity; used_at 0: not yet */
    uint64_t used, used_dev, used_ino;
    double used_at;
} anode_t;

typedef struct {
    char pool[64];
    uint64_t capacity; /* asked */
    uint64_t reserved; /* sum over nodes (>= capacity) */
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
    double requested, granted, finished; /* Unix times; NAN: not yet */
    double bytes;
    double bw;    /* current share, bytes/s */
    double share; /* bw / B */
    int buffer;   /* node index chosen by the policy, -1: none */
    double w_done;
    bool on_hold;     /* waiting outside the scheduler: its job's buffer is
                                   over its capacity (capacity.over: hold); stored
                                   (phases.held) */
    bool held_before; /* held when bbmgrd last stopped (recovered): held
                                   until its buffers are measured again */
    /* Its members (doc/api.md, Phases of a job on several nodes): the nodes that
     * share it, each joins and leaves once; the last to leave finishes it with the
     * bytes of all.  None (nmembers 0): the first finish ends it, as ever.  Not
     * stored: a recovered phase has none. */
    struct phase_member *members;
    int nmembers, nleft;
    double mbytes; /* bytes reported by the members that left */
    bool munknown; /* one left without its bytes */
} phase_t;

/* The most members one phase takes (POST /v1/phases/{id}/join: 409 past it). */
#define PHASE_MEMBERS_MAX 1024

struct phase_member {
    char name[64];
    bool left;
};

typedef enum { XF_QUEUED, XF_RUNNING, XF_DONE, XF_FAILED, XF_CANCELLED } xfer_state_t;

typedef struct {
    uint64_t id;
    char *job_id;
    char kind[12]; /* stage_in | stage_out */
    char *source, *destination;
    char type[12]; /* file | directory */
    xfer_state_t state;
    int64_t bytes_total; /* -1: unknown */
    int64_t bytes_done;
    char *message;
    double requested, start, finished;
    bool in_mover;    /* handed to the data mover (stage.mode: mover) */
    int durable;      /* -1: no fsync promised (NULL); 0: done, its fsyncs
                                   going on; 1: on disk (fsync'd) */
    unsigned run;     /* times it was queued again after done (agents: a new
                                   run of the same id); not stored */
    bool relink;      /* part 0 of a spread stage-in: run again once done */
    int part, nparts; /* spread over the allocation's nodes: part `part` (its
                                   buffer side on slot `part`) of `nparts`, the parts
                                   of one request at ids id - part ...; nparts 0: a
                                   transfer of its own (doc/bbnoded.md, Data layout) */
} xfer_t;

/* What a buffer's directories hold, as last measured (core_jobs.c, core_usage_tick()):
 * the st_blocks of everything below them, hard links once per directory. */
typedef struct {
    uint64_t bytes;
    double at; /* Unix time of the last complete walk; 0: none yet */
    bool over; /* bytes > the allocation's capacity */
} bb_usage_t;

typedef enum { JOB_REGISTERED, JOB_RUNNING, JOB_ENDED } job_state_t;

struct job {
    char id[64];
    uid_t uid;
    gid_t gid;
    char *user;
    char *name;
    int nodes;
    double w_iter; /* hints; NAN: none */
    double io_volume;
    long phases;  /* -1: none */
    char io[12];  /* write | read | readwrite | "" */
    int priority; /* 1..10, 0: none */
    job_state_t state;
    double created, updated, begun, ended;
    uint64_t hs_id; /* id inside the scheduler */
    bool in_sched;
    alloc_t *alloc;
    phase_t *phase;  /* the open phase (waiting or granted), at most one */
    long nphases;    /* finished phases */
    double bytes;    /* bytes of finished phases */
    double last_end; /* end of the previous phase (or begin) */
    /* learned from the phases finished under this bbmgrd (not stored: after a
     * restart it learns again): the requests of the first and latest of them,
     * and how many they were (core_job_w_iter) */
    double learn_first, learn_last;
    long learn_n;
    xfer_t **xfers;
    int nxfers;
    char **uses; /* persistent buffers used */
    int nuses;
    bb_usage_t usage; /* measured use of its buffer directories */
};

typedef struct {
    char name[64];
    uid_t uid;
    gid_t gid;
    alloc_t alloc;
    double created;
    char **users; /* job ids using it */
    int nusers;
    bb_usage_t usage;
} pbuf_t;

/* A buffer kept on disk after its allocation (below). */
typedef struct held held_t;

/* Error of a core operation: what kind of failure (an errno value), the field at
 * fault, a reason.  The core knows nothing of HTTP: the routes choose the status
 * from the code.  EINVAL: a bad value; EPERM: not allowed for this user; ENOENT:
 * no such thing; EEXIST: conflicts with what exists; EBUSY: not in the state that
 * allows it; EDOM: can never be done (beyond what the pool or policy offers);
 * ENOSPC: no room now; EAGAIN: a limit reached, try later; ENOMEM, EIO: the
 * daemon's own failure.  The reason is the project's error text (libhutil's
 * hu_error_t), cut at CERR_MSG_MAX bytes as the API's reasons always were. */
#define CERR_MSG_MAX 320
typedef struct {
    int code;
    char field[64];
    hu_error_t err;
} cerr_t;

/* Fill e (when not NULL) and return -1. */
int core_cerr_set(cerr_t *e, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

typedef void (*core_notify_f)(uint64_t phase_id, void *arg);

/* The space of a job's buffer whose directory outlives its allocation: it holds the
 * source of stage-outs whose durability is pending, or one that could not be made
 * durable (kept).  It stays counted as used on its nodes until its directory goes. */
struct held {
    char owner[160]; /* "<job>@<first stage-out>": alloc_nodes kind 'held' */
    char job[96];    /* the job, or "persistent:<name>" */
    alloc_t a;       /* nodes and bytes only */
    uint64_t *tids;  /* stage-outs whose durability is pending */
    int ntids;
    bool kept; /* one could not be made durable: held until an
                                   administrator removes it */
    char reason[300];
};

/* The core's state: read and written by the core's files (core*.c) and by nodes.c
 * and metrics.c, the agents' side of the core and its /metrics renderer, which
 * read the node table and the counters under the core's lock.  The rest of
 * bbmgrd (the routes, api.c, bbmgrd.c) goes through the functions of core.h. */
struct core {
    pthread_mutex_t lock;
    double spare_idle_from; /* core_wall() after which spares may be made */
    double prune_next;      /* core_wall() of the next removal of closed rows */
    cfg_t *cfg;             /* owned; replaced by core_reconfigure() */
    state_t *st;            /* borrowed */
    /* clock: scheduler time = monotonic seconds since mono0 + hs_offset */
    double mono0, hs_offset, epoch, hs_last;
    hs_sched_t *sched;
    hs_policy_t policy; /* its starvation bound: core_policy_bound() */
    char policy_id[64];
    bool policy_override; /* set through the API, persisted in meta */
    node_t *nodes;
    int nnodes;
    hmap_t *node_by_name; /* name -> node index + 1 */
    pool_t *pools;
    int npools;
    hmap_t *jobs; /* id -> job_t (not ended) */
    /* last state of the jobs that ended most recently (GET /v1/jobs/ID after the
     * end): a ring, the newest at ended_next - 1; lost when bbmgrd restarts */
#define CORE_ENDED_KEEP 256
    json_t *ended[CORE_ENDED_KEEP];
    int ended_next;
    /* the view kept of a job that ends (core_job_json(): the views are above the
     * jobs, core.c gives it) */
    json_t *(*job_view)(core_t *c, job_t *j, bool detail);
    hmap_t *jobs_hs; /* hs_id -> job_t */
    hmap_t *phases;  /* phase id -> phase_t (open ones) */
    hmap_t *pbufs;   /* name -> pbuf_t */
    hmap_t *xfers;   /* id -> xfer_t (not finished) */
    uint64_t next_phase, next_xfer, next_hs;
    hs_grant_t *grants;
    size_t grants_cap;
    double started; /* Unix time of start */
    core_notify_f notify;
    void *notify_arg;
    mover_t *mover; /* borrowed (bbmgrd.c owns it); NULL: none */
    held_t **held;  /* buffers of ended allocations still on disk */
    int nheld;
    bool durability_recovered; /* stage-outs done but not durable at the start: handed
                                   to the mover (at its first tick) */
    /* the walk measuring the buffers' use (core_usage_tick()): the owners to walk
     * ("j:ID" or "p:NAME"), the one walked, its allocation's slot, its sum */
    bufdir_usage_t *uw;
    char **uw_list;
    int uw_n, uw_i, uw_slot;
    uint64_t uw_sum;
    bool uw_missing; /* an agent's node of it has not reported its figure */
    /* counters for /metrics */
    uint64_t n_granted, n_finished, n_expired, n_requested;
    double bytes_finished, stall_seconds;
    uint64_t decisions;
    /* Deferred decisions: an event that cannot grant anything (a phase closes
     * while no phase waits) only marks the decision stale; it is recomputed by the
     * next event that needs it, before anything reads a bandwidth (core_settle()),
     * or by the next tick.  nwaiting: waiting phases as of the last decision, less
     * those closed since (never below the truth). */
    bool sched_dirty;
    int nwaiting;
    uint64_t decisions_deferred;
    uint64_t budget_hits;  /* decisions cut short by libhsched's budget */
    uint64_t bound_hits;   /* phases given a share by the starvation bound */
    uint64_t dec_hist[12]; /* decision latency buckets, see metrics.c */
    double dec_sum;
};

#define NOW_NAN NAN

/* The bounds of bbmgr.yaml (policy.starve_factor, policy.starve_floor,
 * policy.decision_budget) into a parsed policy: every hs_policy_parse() of the
 * core is followed by it. */
static inline void core_policy_bound(const cfg_t *cfg, hs_policy_t *pol)
{
    pol->starve_factor = cfg->policy_starve_factor > 0 ? cfg->policy_starve_factor : -1;
    pol->starve_floor = cfg->policy_starve_floor;
    pol->max_work = (uint64_t)cfg->policy_decision_budget;
}
#define HELD_PREFIX "persistent:" /* held_t.job of a persistent buffer's */

/* ---- the lock, the clocks, the notification of a phase's change */
void core_lock(core_t *c);
void core_unlock(core_t *c);
double core_wall(void);
double core_hs_now(core_t *c);
double core_wall_to_hs(core_t *c, double wall);
void core_set_notify(core_t *c, core_notify_f fn, void *arg);
void core_notify(core_t *c, uint64_t pid);

/* ---- the core's configuration, state and services (for bbmgrd.c and routes.c) */
cfg_t *core_cfg(core_t *c);                 /* the running configuration */
state_t *core_state(core_t *c);             /* the SQLite state (reads only) */
double core_started(core_t *c);             /* Unix time of the daemon's start */
void core_set_mover(core_t *c, mover_t *m); /* borrowed; NULL: none */

/* ---- lookups (lock held): NULL or -1 when there is none */
job_t *core_job(core_t *c, const char *id);
phase_t *core_phase(core_t *c, uint64_t id);
xfer_t *core_xfer(core_t *c, uint64_t id); /* an open one */
pbuf_t *core_pbuf(core_t *c, const char *name);
int core_node_index(core_t *c, const char *name);

/* The bytes of allocation a on the mount of its node i (nodes that share a mount
 * share the directory, and their shares). */
uint64_t core_mount_share(core_t *c, const alloc_t *a, int i);
/* The policy's weight for a job's share of the mover (SFQ(D)+ flow weight):
 * set10/set:<b> and priority-sharing: the IO-Sets priority b^-round(log_b w_iter)
 * (no w_iter hint: class 0); harmonia-priority: the priority hint; others: 1. */
double core_job_weight(core_t *c, const job_t *j);

/* ---- rows queued to the state writer */
void core_put_job(core_t *c, job_t *j);
void core_put_anodes(core_t *c, const char *kind, const char *owner, const alloc_t *a);
char *core_phase_nodes_str(core_t *c, phase_t *p);
void core_put_phase(core_t *c, phase_t *p);
void core_put_xfer(core_t *c, xfer_t *x);
void core_put_node(core_t *c, int idx);

/* ---- frees, string vectors, state names */
void core_alloc_free_nodes(core_t *c, alloc_t *a);
void core_xfer_free(xfer_t *x);
void core_job_free(job_t *j);
void core_pbuf_free(pbuf_t *b);
int core_strv_add(char ***v, int *n, const char *s);
bool core_strv_del(char **v, int *n, const char *s);
const char *core_phase_state_name(phase_state_t s);
const char *core_xfer_state_name(xfer_state_t s);
const char *core_job_state_name(job_state_t s);
int core_phase_state_parse(const char *s);
int core_xfer_state_parse(const char *s);

#endif
