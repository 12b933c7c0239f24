/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_json.h — the JSON views of bbmgrd's core, served by the routes
 * (core_json.c); lock held.  Above the scheduler (core_jobs.h): a view brings a
 * deferred decision up to date before it shows a bandwidth.
 */
#ifndef BBMGR_CORE_JSON_H
#define BBMGR_CORE_JSON_H

#include "core_model.h"

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
json_t *core_alloc_json(core_t *c, const job_t *j, const alloc_t *a, const char *owner_path);
json_t *core_phase_json(core_t *c, phase_t *p);
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

#endif
