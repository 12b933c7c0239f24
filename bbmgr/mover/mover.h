/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mover.h — bbmgrd's data mover: stage-in and stage-out copies.
 *
 * A small fixed pool of worker threads copies files and directory trees between a
 * PFS path and a job's buffer directory.  Each chunk of a file is one SFQ(D)+
 * request (libhsched/hs_sfq.h) of cost = its bytes, in the flow of its job, with the
 * weight the policy gives the job; the SFQ object is guarded by the mover's own
 * mutex.  Workers act as the job's user (per-thread setfsuid/setfsgid and
 * supplementary groups), write each file under a temporary name, verify it, set its
 * attributes and rename it into place.  Stage-outs are made durable (fsync of every
 * file and directory) after they are done, on the mover's sync thread, and the
 * buffer they read from is not removed before that (mover.durable_before_done:
 * fsync'd before done instead, as stage-ins into persistent buffers always are).
 * doc/mover.md has the details.  The types every layer of the mover uses are in
 * mover_types.h, the teardown's API in mover_end.h; this file includes both.
 *
 * Locking: the daemon calls in with its core lock held; the mover takes its own
 * lock inside (core -> mover, never the other way).  Workers never take the core
 * lock: their results are collected by mover_poll(), called from the daemon's
 * timer under the core lock, which applies them through the state writer.
 */
#ifndef BBMGR_MOVER_H
#define BBMGR_MOVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "libhutil/hutil.h"
#include "mover_end.h"
#include "mover_types.h"

/* A transfer handed to the mover (strings are copied). */
typedef struct {
    uint64_t tid;
    const char *job; /* job id: the SFQ flow */
    double weight;   /* the policy's weight for the job (> 0) */
    uid_t uid;       /* the job's user: every file access is made as it */
    gid_t gid;
    const char *user; /* user name (supplementary groups), may be NULL */
    bool stage_out;   /* false: stage-in (copies belong to uid/gid) */
    bool directory;   /* type directory (else file) */
    const char *src, *dst;
    /* Recovery of a stage-out recorded done whose fsyncs had not finished: copy again
     * what is not known to be intact (files complete at the destination, changed
     * since the boot, are kept), fsync everything, report MV_DURABLE (or
     * MV_NOT_DURABLE), nothing else.  Not cancelled by the end of its job. */
    bool resync;
    double done_at;    /* resync: wall-clock time the transfer was done */
    int64_t max_bytes; /* stage-in: the capacity of the buffer it writes into;
                                   a source larger than this fails (0: no limit) */
    /* Part `part` of a transfer spread over the nodes of an allocation (nparts >= 2;
     * 0: a transfer of its own); roots[k] is the job's directory on node k, and the
     * buffer side of part k is the same path below roots[k].  A stage-in part walks
     * the whole source, gives its files to the parts by size (largest first, each to
     * the part with the fewest bytes so far; ties by name, then by the lower part)
     * and copies its own; part 0 also makes, for every file given to part k, a
     * symbolic link to that file under roots[k].  A stage-out part copies what is
     * under its source on its node, leaves out symbolic links into any roots[k] (the
     * part of that node copies what they name), and finds nothing to do when its
     * source is missing (part 0 excepted). */
    int part, nparts;
    const char *roots[MOVER_MAX_PARTS];
    unsigned run; /* agents: how many times bbmgrd ran it again (not used
                                   by the mover) */
} mover_spec_t;

mover_t *mover_create(const cfg_t *cfg, hu_error_t *err);
/* Stops the workers (each finishes its current chunk) and removes the partial
 * files of unfinished transfers; their state is not reported (they stay running in
 * the database and are queued again at the next start).  Accepts NULL. */
void mover_destroy(mover_t *m);

int mover_submit(mover_t *m, const mover_spec_t *spec); /* -1 / ENOMEM, EEXIST */
bool mover_has(mover_t *m, uint64_t tid);

/* Stop a transfer (its partial files are removed, then it reports cancelled). */
void mover_cancel(mover_t *m, uint64_t tid, const char *why);
/* The job ended: cancel its transfers, drop its queued requests, forget its flow. */
void mover_job_end(mover_t *m, const char *job);
/* The policy changed the job's weight (no-op when unchanged or unknown job). */
void mover_set_weight(mover_t *m, const char *job, double weight);

/* Collect results: cb is called for each transfer whose state or progress must be
 * recorded: final states always (the transfer is forgotten after its last one),
 * progress at most every second or 64 MiB.  job: the transfer's job id. */
typedef void (*mover_report_f)(uint64_t tid, const char *job, mover_state_t state,
                               int64_t bytes_done, int64_t bytes_total, const char *message,
                               void *arg);
void mover_poll(mover_t *m, mover_report_f cb, void *arg);

void mover_get_stats(mover_t *m, mover_stats_t *st);
typedef void (*mover_job_f)(const char *job, double weight, uint64_t bytes, int transfers,
                            void *arg);
void mover_foreach_job(mover_t *m, mover_job_f cb, void *arg);

#endif
