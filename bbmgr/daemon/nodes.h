/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nodes.h — bbmgrd's side of the buffer-node agents (bbnoded, doc/bbnoded.md).
 *
 * A node set with `agent: true` in bbmgr.yaml is served by one bbnoded per node:
 * its buffer directories are made and removed by the agent, and the transfers
 * whose buffer side is under its mount are run by the agent's mover instead of
 * bbmgrd's.  Agents pull (POST /v1/agents/<node>, doc/api.md).  With no agent
 * configured every function here is a no-op and bbmgrd runs as it always did.
 *
 * Every function is called with the core lock held.  The module keeps its state
 * beside the core (one bbmgrd, one core); what must survive a restart is derived
 * from the core's own durable state (transfers, allocations, persistent buffers).
 *
 * It sits below the core's operations (core_bufdir.c, core_jobs.c, core_stage.c
 * call it) and above its model (core_model.h): what it tells the core goes
 * through the callbacks the core gives it (nodes_core_t), as bbmgrd's mover
 * reports through its own (mover.h).
 */
#ifndef BBMGR_NODES_H
#define BBMGR_NODES_H

#include <stdbool.h>
#include <jansson.h>

#include "core_model.h"
#include "mover.h"
#include "nodeproto.h"

/* How this module reports to the core: core.c gives them at core_create(); each is
 * called with the core lock held. */
typedef struct {
    /* a result of a transfer run by an agent, applied as the mover's own are */
    void (*report)(core_t *c, uint64_t tid, const char *job, mover_state_t st, int64_t done,
                   int64_t total, const char *msg);
    /* node lost of j's allocation is down before j runs: its share moves (the
     * number of stage-ins queued again, or -1: it stays) */
    int (*restage_lost)(core_t *c, job_t *j, int lost, const char *why);
    /* drain (or resume) node idx, giving the reason */
    int (*drain)(core_t *c, int idx, bool drain, const char *reason, cerr_t *e);
    /* the bandwidth the scheduler counts on for node idx, as its agent measured */
    int (*set_bandwidth)(core_t *c, int idx, double bw);
    /* recompute each node's active phases and load (node_t.load) */
    void (*loads)(core_t *c);
    /* what failed teardowns left on node idx */
    void (*leftover)(core_t *c, int idx, uint64_t bytes);
} nodes_core_t;
void nodes_set_core(const nodes_core_t *cb);

/* Prefix of the drain reason of a node whose agent is down (the drain is lifted
 * when the agent reports again; a drain by an administrator is left alone). */
#define NODES_DOWN_REASON "buffer node agent down"

/* Node idx is served by an agent: its buffer directories changed (the agent gets
 * the new set at its next poll).  false: not an agent's node (bbmgrd does it). */
bool nodes_dir_hook(core_t *c, int idx);
bool nodes_is_agent(core_t *c, int idx);
/* The generation of node idx's directory set now (0: not an agent's node). */
uint64_t nodes_dir_gen(core_t *c, int idx);
/* Every directory of allocation a on an agent's node is made: its agent applied
 * a directory set at least as new as the one that first held it (anode_t.dirgen);
 * a job must not start before (its directory would not be there yet). */
bool nodes_alloc_ready(core_t *c, const alloc_t *a);

/* The transfer of spec has its buffer side (buf) under the mount of an agent's
 * node: it is queued for that agent (true).  false: bbmgrd's own mover runs it. */
bool nodes_dispatch(core_t *c, const mover_spec_t *spec, const char *buf);

/* Timer (core_tick): agents silent for agents.down_after are marked down. */
void nodes_tick(core_t *c, double wall);

/* Directories a report may say the identity of ("kept") */
#define NODES_KEPT_MAX 64

/* An agent's report (POST /v1/agents/<node>, checked by its route in
 * routes_admin.c): who sends it, what it did, what its device holds. */
typedef struct {
    const char *agent; /* the agent process's instance id */
    const char *dirs;  /* the generation of the directory set it applied;
                                   NULL: none said */
    np_status_t status;
    const np_result_t *results;
    size_t nresults;
    const np_dir_t *kept; /* identities of directories listed with keep */
    size_t nkept;
    const np_usage_t *usage; /* what its buffer directories hold */
    size_t nusage;
} nodes_report_t;

/* Whether node (a name) is served by an agent in the configuration. */
bool nodes_serves(core_t *c, const char *node);
/* Apply the report of node's agent: the body of the reply (its tasks, and its
 * directory set when it has not the current one); NULL when node has no agent. */
json_t *nodes_report(core_t *c, const char *node, const nodes_report_t *rp);

/* Views: the agent's status added to a node's JSON; Prometheus lines (malloc'd,
 * NULL when there are no agents). */
void nodes_node_json(core_t *c, int idx, json_t *o);
char *nodes_metrics(core_t *c);
/* What the agents' movers did since bbmgrd's start, as their results said: bytes
 * copied (progress of every run of a transfer) and transfers finished by outcome;
 * added to bbmgrd's own mover's in /metrics. */
typedef struct {
    uint64_t bytes, done, failed, cancelled;
} nodes_moved_t;
void nodes_moved(core_t *c, nodes_moved_t *out);
/* GET /v1/status: "agents": {"total", "up", "down": [{"node", "reason"}]}; nothing
 * when no agent is configured. */
void nodes_status_json(core_t *c, json_t *o);

#endif
