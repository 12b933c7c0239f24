/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core.h — bbmgrd's in-memory model: buffer nodes, pools, jobs, allocations,
 * persistent buffers, phases and transfers, the live scheduler (libhsched driven
 * with the real clock), and recovery from the state database.  The interface of
 * the core to the rest of bbmgrd (the routes, api.c, metrics.c, bbmgrd.c): the
 * headers of its layers, and its creation, destruction and timer.
 *
 * One mutex guards everything here (core_lock()); every change is queued to the
 * state writer (state_put()) inside the same critical section, so the database sees
 * changes in the order memory did.  The HTTP layer answers a request only after
 * what it changed or saw is committed (see api.c).
 *
 * The core's files, from the top down; each includes and calls only the headers
 * of the files below it (testsuite/layers holds it):
 *   core.c          the top: creation and destruction, the timer (tick) that
 *                   drives the files below
 *   core_json.c     the JSON views served by the routes
 *   core_recover.c  recovery from state.db (its reads are in state.h) and of the
 *                   durability a stop interrupted
 *   core_stage.c    stage-in/stage-out transfers and the glue to the data mover
 *   core_alloc.c    buffer nodes and pools, placement, persistent buffers, drain,
 *                   reconfiguration
 *   core_jobs.c     the live scheduler, jobs and their I/O phases
 *   core_bufdir.c   buffer directories, spares, the trash, buffers held on disk
 *   nodes.c         the buffer-node agents' side (nodes.h): it reports to the
 *                   core through the callbacks core.c gives it
 *   core_model.c    the bottom, which calls none of them: the objects and the
 *                   core's state, the error setter, state names, clocks, the lock,
 *                   lookups, rows queued to the state writer, the objects' frees,
 *                   string vectors
 * Where a lower file must tell a higher one, it calls a pointer the higher one set
 * (nodes_core_t; core_t.job_view, the view kept of a job that ends).
 * Errors are cerr_t with an errno-style code; routes_req.c chooses the HTTP status.
 */
#ifndef BBMGR_CORE_H
#define BBMGR_CORE_H

#include "core_model.h"
#include "core_bufdir.h"
#include "core_jobs.h"
#include "core_alloc.h"
#include "core_stage.h"
#include "core_recover.h"
#include "core_json.h"

core_t *core_create(cfg_t *cfg, state_t *st, hu_error_t *err); /* takes cfg */
void core_destroy(core_t *c);

/* Periodic work (timer): expire grants, complete scheduled transfers, follow
 * the scheduler's own next event.  Lock not held. */
void core_tick(core_t *c);

#endif
