/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_alloc.h — buffer nodes and pools of bbmgrd's core (core_alloc.c): placement,
 * allocations and persistent buffers, drain, bandwidth, reconfiguration.  Above
 * the scheduler (core_jobs.h) and the buffer directories (core_bufdir.h).
 */
#ifndef BBMGR_CORE_ALLOC_H
#define BBMGR_CORE_ALLOC_H

#include "core_model.h"

int core_alloc_create(core_t *c, job_t *j, uint64_t capacity, int nodes, const char *pool,
                      bool *created, cerr_t *e);
int core_alloc_release(core_t *c, job_t *j, cerr_t *e);

pbuf_t *core_pbuf_create(core_t *c, const char *name, uid_t uid, gid_t gid, uint64_t capacity,
                         const char *pool, bool *created, cerr_t *e);
int core_pbuf_destroy(core_t *c, pbuf_t *b, cerr_t *e);
int core_pbuf_use(core_t *c, pbuf_t *b, job_t *j, cerr_t *e);
int core_pbuf_unuse(core_t *c, pbuf_t *b, job_t *j, cerr_t *e);

int core_node_drain(core_t *c, int idx, bool drain, const char *reason, cerr_t *e);
/* The bandwidth the scheduler counts on for node idx, as measured by its agent
 * (nodes.c): the scheduler is rebuilt with it.  0, or -1 (logged; unchanged). */
int core_node_set_bandwidth(core_t *c, int idx, double bw);

/* Apply a new configuration (SIGHUP): policy, limits, nodes added or drained.
 * Takes newcfg on success; on failure the running one stays. Lock not held. */
int core_reconfigure(core_t *c, cfg_t *newcfg, hu_error_t *err);

/* ---- for the core's files above */
int core_node_add(core_t *c, const char *name, const cfg_nodeset_t *ns, bool in_config);
int core_pools_load(core_t *c, const cfg_t *cfg);
int core_alloc_move_share(core_t *c, job_t *j, int lost);

#endif
