/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_stage.h — stage-in and stage-out transfers of bbmgrd's core (core_stage.c) and
 * the glue to the data mover (bbmgrd's own, or a node's agent through nodes.c).
 * Above the allocations (core_alloc.h).
 */
#ifndef BBMGR_CORE_STAGE_H
#define BBMGR_CORE_STAGE_H

#include "core_model.h"

/* spread: a stage-in of a directory into, or a stage-out from, the job's directory on
 * the first node of a multi-node allocation becomes one transfer per node (parts
 * 0..n-1 with consecutive ids; returns part 0); otherwise it is one transfer. */
xfer_t *core_stage(core_t *c, job_t *j, const char *kind, const char *src, const char *dst,
                   const char *type, int64_t size, bool spread, cerr_t *e);
int core_xfer_update(core_t *c, xfer_t *x, const char *state, int64_t bytes_done,
                     int64_t bytes_total, const char *message, cerr_t *e);
/* A transfer by id, open or closed (closed ones are kept with their job), or NULL. */
xfer_t *core_xfer_any(core_t *c, uint64_t id);

/* A result of a transfer run elsewhere than bbmgrd's mover (a buffer-node agent,
 * nodes.c), applied as the mover's own results are (lock held). */
void core_mover_report(core_t *c, uint64_t tid, const char *job, mover_state_t st, int64_t done,
                       int64_t total, const char *msg);

/* Node lost of j's allocation is down (nodes.c) before j runs: its share of the
 * buffer moves to another node that has room (core_alloc_move_share()), and the
 * stage-ins into its directory there — running, queued or done, their data was
 * only there — are queued again with their destinations moved.  The number of
 * them, or -1 when j runs already or no node can take the share (nothing changed:
 * its transfers then fail as before). */
int core_restage_lost(core_t *c, job_t *j, int lost, const char *why);

/* ---- the timer (core.c): the mover's results, then the transfers due */
void core_mover_results(core_t *c);
void core_mover_tick(core_t *c, double wall);

#endif
