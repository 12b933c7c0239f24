/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_internal.h — what the files of bbmgrd's core (core*.c) share and nothing
 * else uses: the types only they see, the functions one of them defines for
 * another, and their constants.
 * core.h is the interface of the core to the rest of bbmgrd.
 */
#ifndef BBMGR_CORE_INTERNAL_H
#define BBMGR_CORE_INTERNAL_H

#include "bufdir.h"
#include "core.h"
#include "util.h"

/* The space of a job's buffer whose directory outlives its allocation: it holds the
 * source of stage-outs whose durability is pending, or one that could not be made
 * durable (kept).  It stays counted as used on its nodes until its directory goes. */
struct held {
    char owner[160];            /* "<job>@<first stage-out>": alloc_nodes kind 'held' */
    char job[96];               /* the job, or "persistent:<name>" */
    alloc_t a;                  /* nodes and bytes only */
    uint64_t *tids;             /* stage-outs whose durability is pending */
    int ntids;
    bool kept;                  /* one could not be made durable: held until an
                                   administrator removes it */
    char reason[300];
};

/* The core's state: private to the core's files (core*.c) and to nodes.c and
 * metrics.c, the agents' side of the core and its /metrics renderer, which read
 * the node table and the counters under the core's lock.  Everything else goes
 * through core.h's functions. */
struct core {
    pthread_mutex_t lock;
    double spare_idle_from;     /* core_wall() after which spares may be made */
    double prune_next;          /* core_wall() of the next removal of closed rows */
    cfg_t *cfg;                 /* owned; replaced by core_reconfigure() */
    state_t *st;                /* borrowed */
    /* clock: scheduler time = monotonic seconds since mono0 + hs_offset */
    double mono0, hs_offset, epoch, hs_last;
    hs_sched_t *sched;
    hs_policy_t policy;         /* its starvation bound: core_policy_bound() */
    char policy_id[64];
    bool policy_override;       /* set through the API, persisted in meta */
    node_t *nodes;
    int nnodes;
    hmap_t *node_by_name;       /* name -> node index + 1 */
    pool_t *pools;
    int npools;
    hmap_t *jobs;               /* id -> job_t (not ended) */
    /* last state of the jobs that ended most recently (GET /v1/jobs/ID after the
     * end): a ring, the newest at ended_next - 1; lost when bbmgrd restarts */
#define CORE_ENDED_KEEP 256
    json_t *ended[CORE_ENDED_KEEP];
    int ended_next;
    hmap_t *jobs_hs;            /* hs_id -> job_t */
    hmap_t *phases;             /* phase id -> phase_t (open ones) */
    hmap_t *pbufs;              /* name -> pbuf_t */
    hmap_t *xfers;              /* id -> xfer_t (not finished) */
    uint64_t next_phase, next_xfer, next_hs;
    hs_grant_t *grants;
    size_t grants_cap;
    double started;             /* Unix time of start */
    core_notify_f notify;
    void *notify_arg;
    mover_t *mover;             /* borrowed (bbmgrd.c owns it); NULL: none */
    held_t **held;              /* buffers of ended allocations still on disk */
    int nheld;
    bool durability_recovered;  /* stage-outs done but not durable at the start: handed
                                   to the mover (at its first tick) */
    /* the walk measuring the buffers' use (usage_tick()): the owners to walk
     * ("j:ID" or "p:NAME"), the one walked, its allocation's slot, its sum */
    bufdir_usage_t *uw;
    char **uw_list;
    int uw_n, uw_i, uw_slot;
    uint64_t uw_sum;
    bool uw_missing;            /* an agent's node of it has not reported its figure */
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
    uint64_t budget_hits;       /* decisions cut short by libhsched's budget */
    uint64_t bound_hits;        /* phases given a share by the starvation bound */
    uint64_t dec_hist[12];      /* decision latency buckets, see metrics.c */
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
#define HELD_PREFIX "persistent:"     /* held_t.job of a persistent buffer's */

/* core.c */
int phase_state_parse(const char *s);
int xfer_state_parse(const char *s);
double wall_to_hs(core_t *c, double wall);
void notify(core_t *c, uint64_t pid);
void put_job(core_t *c, job_t *j);
void put_anodes(core_t *c, const char *kind, const char *owner, const alloc_t *a);
char *phase_nodes_str(core_t *c, phase_t *p);
void put_phase(core_t *c, phase_t *p);
void put_xfer(core_t *c, xfer_t *x);
void put_node(core_t *c, int idx);
void alloc_free_nodes(core_t *c, alloc_t *a);
void xfer_free(xfer_t *x);
void job_free(job_t *j);
void pbuf_free(pbuf_t *b);
int strv_add(char ***v, int *n, const char *s);
bool strv_del(char **v, int *n, const char *s);

/* core_alloc.c */
int node_add(core_t *c, const char *name, const cfg_nodeset_t *ns, bool in_config);
int pools_load(core_t *c, const cfg_t *cfg);

/* core_jobs.c */
void reschedule(core_t *c, double now);
int sched_build(core_t *c, hu_error_t *err);
void phase_close(core_t *c, phase_t *p, phase_state_t how, double bytes);
void usage_tick(core_t *c, double wall);
void leftover_tick(core_t *c);
void usage_free(core_t *c);
const char *core_job_hold(core_t *c, const job_t *j, char *buf, size_t len);

/* core_recover.c */
void held_query(core_t *c, held_t *h);
void recover_durability(core_t *c);

/* core_bufdir.c */
bool dir_name_ok(const char *name, bool job);
int mount_owner(core_t *c, int idx);
/* The bytes of allocation a on the mount of its node i (core_stage.c). */
uint64_t mount_share(core_t *c, const alloc_t *a, int i);
int bufdirs_check(core_t *c, const alloc_t *a, cerr_t *e);
void spares_fill(core_t *c, double wall);
bool mount_seen(core_t *c, const alloc_t *a, int i);
bool mount_ok(core_t *c, int idx);
void bufdirs_make(core_t *c, alloc_t *a, bool persistent, const char *name,
                  uid_t uid, gid_t gid);
void bufdir_teardown(core_t *c, const char *job, const char *path, uid_t uid, gid_t gid);
void bufdirs_remove(core_t *c, const alloc_t *a, bool persistent, const char *name,
                    const char *job, uid_t uid, gid_t gid);
int alloc_move_share(core_t *c, job_t *j, int lost);
void held_free(held_t *h);
void held_reason(held_t *h);
bool held_id(core_t *c, const char *path, const struct stat *st);
bool held_id_kept(core_t *c, const char *path, const struct stat *st);
held_t *held_add(core_t *c, const char *job, const char *owner);
bool pbuf_hold(core_t *c, pbuf_t *b);
void held_resolve(core_t *c, uint64_t tid, bool ok);
int alloc_release(core_t *c, job_t *j);

/* core_stage.c */
void mover_tick(core_t *c, double wall);

#endif
