/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_bufdir.h — the buffer directories of bbmgrd's core (core_bufdir.c): making and
 * removing them (bbmgrd's own nodes, or through their agents, nodes.c), the spares,
 * the trash, and the buffers held on disk after their allocation.  Above the model
 * and the agents' side; calls nothing else of the core.
 */
#ifndef BBMGR_CORE_BUFDIR_H
#define BBMGR_CORE_BUFDIR_H

#include "core_model.h"

/* An administrator frees a held buffer whose stage-out could not be made durable
 * (GET /v1/status "held", kept): its directories are removed, its space is free.
 * job: the job id, or "persistent:<name>".  ENOENT: none held; EBUSY: still waiting
 * for a stage-out to be durable (it goes by itself then). */
int core_held_release(core_t *c, const char *job, uint64_t *bytes, cerr_t *e);

/* ---- for the core's files above */
bool core_dir_name_ok(const char *name, bool job);
int core_mount_owner(core_t *c, int idx);
int core_bufdirs_check(core_t *c, const alloc_t *a, cerr_t *e);
void core_spares_fill(core_t *c, double wall);
bool core_mount_seen(core_t *c, const alloc_t *a, int i);
bool core_mount_ok(core_t *c, int idx);
void core_bufdirs_make(core_t *c, alloc_t *a, bool persistent, const char *name, uid_t uid,
                       gid_t gid);
void core_bufdir_teardown(core_t *c, const char *job, const char *path, uid_t uid, gid_t gid);
void core_bufdirs_remove(core_t *c, const alloc_t *a, bool persistent, const char *name,
                         const char *job, uid_t uid, gid_t gid);
int core_bufdir_alloc_release(core_t *c, job_t *j);
void core_held_free(held_t *h);
void core_held_reason(held_t *h);
bool core_held_id(core_t *c, const char *path, const struct stat *st);
bool core_held_id_kept(core_t *c, const char *path, const struct stat *st);
held_t *core_held_add(core_t *c, const char *job, const char *owner);
/* The stage-outs h waits for, from the state database (its tids, or kept). */
void core_held_query(core_t *c, held_t *h);
bool core_pbuf_hold(core_t *c, pbuf_t *b);
void core_held_resolve(core_t *c, uint64_t tid, bool ok);

#endif
