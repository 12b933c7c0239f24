/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_jobs.h — the live scheduler of bbmgrd's core (core_jobs.c): jobs, their I/O
 * phases, the decisions (libhsched driven with the real clock), the buffers' use
 * measured against their capacity, the leftovers of failed teardowns.  Above the
 * buffer directories (core_bufdir.h).
 */
#ifndef BBMGR_CORE_JOBS_H
#define BBMGR_CORE_JOBS_H

#include "core_model.h"

int core_job_register(core_t *c, const char *id, uid_t uid, gid_t gid, const char *user,
                      const char *name, int nodes, json_t *hints, bool *created, cerr_t *e);
int core_job_hints(core_t *c, job_t *j, json_t *hints, cerr_t *e);
void core_job_save(core_t *c, job_t *j); /* queue the job's row */
int core_job_begin(core_t *c, job_t *j, int nodes, cerr_t *e);
int core_job_end(core_t *c, job_t *j, cerr_t *e);
/* The last state (borrowed) of a job among the CORE_ENDED_KEEP that ended most
 * recently since bbmgrd started, NULL if none; a live job of that id wins. */
json_t *core_ended_job(core_t *c, const char *id);
/* The job's measured w_iter: the mean interval between the requests of the phases
 * it finished under this bbmgrd; NAN before two.  What GET /v1/jobs shows under
 * "learned" and what its end records in the history. */
double core_job_w_iter(const job_t *j);

phase_t *core_phase_request(core_t *c, job_t *j, double volume, const char *dir, double w_done,
                            cerr_t *e);
int core_phase_finish(core_t *c, phase_t *p, double bytes, cerr_t *e);
int core_phase_progress(core_t *c, phase_t *p, double bytes, cerr_t *e);
/* Members of a phase (doc/api.md, Phases of a job on several nodes).  Join: 0 (a
 * member already: nothing changes); -1 EBUSY when it left already or the phase
 * has PHASE_MEMBERS_MAX members; with rejoin, a member that left is one again
 * (what it reported stays counted: each leave adds its bytes).  Leave with its bytes (< 0: unknown): *ended
 * when it was the last and the phase finished with the members' bytes (p is
 * freed); a member that left already changes nothing (a retry), a name that never
 * joined adds its bytes; a phase with no member ends as core_phase_finish(). */
int core_phase_join(core_t *c, phase_t *p, const char *member, bool rejoin, cerr_t *e);
int core_phase_leave(core_t *c, phase_t *p, const char *member, double bytes, bool *ended,
                     cerr_t *e);

int core_set_policy(core_t *c, const char *id, cerr_t *e);
/* Bring a deferred decision up to date (lock held); a no-op when it is. */
void core_settle(core_t *c);

/* What failed teardowns left on node idx holds now (bbmgrd's mover or its agent):
 * counted in its used space, so no allocation counts on it, until it is gone. */
void core_node_leftover(core_t *c, int idx, uint64_t bytes);

/* ---- for the core's files above */
void core_reschedule(core_t *c, double now);
int core_sched_build(core_t *c, hu_error_t *err);
void core_phase_close(core_t *c, phase_t *p, phase_state_t how, double bytes);
void core_usage_tick(core_t *c, double wall);
void core_leftover_tick(core_t *c);
void core_usage_free(core_t *c);
const char *core_job_hold(core_t *c, const job_t *j, char *buf, size_t len);

#endif
