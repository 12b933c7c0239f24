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
 * doc/mover.md has the details.
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

typedef struct mover mover_t;

typedef enum {
    MV_RUNNING = 0,
    MV_DONE,            /* complete, verified, under its final names */
    MV_FAILED,
    MV_CANCELLED,
    MV_DONE_SYNCING,    /* done as MV_DONE, and its fsyncs go on: MV_DURABLE or
                           MV_NOT_DURABLE follows */
    MV_DURABLE,         /* a done transfer is on disk (after MV_DONE of a transfer
                           fsync'd before done, or after MV_DONE_SYNCING) */
    MV_NOT_DURABLE,     /* its fsyncs failed, or the re-run of a recovery failed: the
                           copy may not be on disk (message says why) */
} mover_state_t;

#define MOVER_MAX_PARTS 64      /* nodes a transfer can be spread over */

/* A transfer handed to the mover (strings are copied). */
typedef struct {
    uint64_t tid;
    const char *job;            /* job id: the SFQ flow */
    double weight;              /* the policy's weight for the job (> 0) */
    uid_t uid;                  /* the job's user: every file access is made as it */
    gid_t gid;
    const char *user;           /* user name (supplementary groups), may be NULL */
    bool stage_out;             /* false: stage-in (copies belong to uid/gid) */
    bool directory;             /* type directory (else file) */
    const char *src, *dst;
    /* Recovery of a stage-out recorded done whose fsyncs had not finished: copy again
     * what is not known to be intact (files complete at the destination, changed
     * since the boot, are kept), fsync everything, report MV_DURABLE (or
     * MV_NOT_DURABLE), nothing else.  Not cancelled by the end of its job. */
    bool resync;
    double done_at;             /* resync: wall-clock time the transfer was done */
    int64_t max_bytes;          /* stage-in: the capacity of the buffer it writes into;
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
    unsigned run;               /* agents: how many times bbmgrd ran it again (not used
                                   by the mover) */
} mover_spec_t;

mover_t *mover_create(const cfg_t *cfg, hu_error_t *err);
/* Stops the workers (each finishes its current chunk) and removes the partial
 * files of unfinished transfers; their state is not reported (they stay running in
 * the database and are queued again at the next start).  Accepts NULL. */
void mover_destroy(mover_t *m);

int mover_submit(mover_t *m, const mover_spec_t *spec);      /* -1 / ENOMEM, EEXIST */
bool mover_has(mover_t *m, uint64_t tid);

/* Stop a transfer (its partial files are removed, then it reports cancelled). */
void mover_cancel(mover_t *m, uint64_t tid, const char *why);
/* The job ended: cancel its transfers, drop its queued requests, forget its flow. */
void mover_job_end(mover_t *m, const char *job);
/* The policy changed the job's weight (no-op when unchanged or unknown job). */
void mover_set_weight(mover_t *m, const char *job, double weight);

/* Remove the tree at path (a buffer directory at teardown; first moved to trash when
 * not NULL), as the daemon, by descriptors and without recursion (bufdir_empty();
 * uid/gid: its owner, for the logs).  Never
 * blocks: the removal waits in the mover until the transfers of job (when not NULL)
 * have stopped, and until no stage-out reading from under path is still to be made
 * durable; it is dropped (with a warning) if a stage-out from under path could not
 * be made durable.  dev/ino (not both 0): the directory it is for; anything else
 * found at path then is left alone. */
int mover_rmtree(mover_t *m, const char *job, const char *path, const char *trash, uid_t uid,
                 gid_t gid, dev_t dev, ino_t ino);
/* An administrator released the buffer at path: the sources under it that a
 * stage-out which could not be made durable kept are no longer kept, so that a
 * removal of path may run.  Returns how many were. */
int mover_unkeep(mover_t *m, const char *path);
/* The trash of a directory of buffers (bufdir.h): a buffer directory is moved
 * there, to <parent>/.harmonia-trash/<inode>.<random>, before it is emptied, so that
 * its name is free at once and nothing below it is reached through a name again. */
#define MOVER_TRASH ".harmonia-trash"
/* bufdir_trash_path(): out = "<parent>/.harmonia-trash/<ino>.<random>", pfd the open
 * parent; the trash is made (0711) if missing.  -1: it could not be made (errno), or
 * it is not a directory of this process's uid that only it can list or write
 * (EPERM), or out is too short. */
int mover_trash_path(int pfd, const char *parent, ino_t ino, char *out, size_t len);
/* rename(from, to) of a buffer directory a new buffer needs the name of, under the
 * mover's lock: the stage-outs that read from it, and its teardown, follow it (so the
 * late teardown of an earlier buffer of that name never reaches the new one). */
int mover_aside(mover_t *m, const char *from, const char *to);

/* Collect results: cb is called for each transfer whose state or progress must be
 * recorded: final states always (the transfer is forgotten after its last one),
 * progress at most every second or 64 MiB.  job: the transfer's job id. */
typedef void (*mover_report_f)(uint64_t tid, const char *job, mover_state_t state,
                               int64_t bytes_done, int64_t bytes_total, const char *message,
                               void *arg);
void mover_poll(mover_t *m, mover_report_f cb, void *arg);

/* For /metrics. */
typedef struct {
    uint64_t bytes;             /* bytes copied (chunks completed) */
    uint64_t files;             /* files completed */
    uint64_t chunks;            /* SFQ requests completed */
    uint64_t backfills;         /* of which backfilled by SFQ(D)+ */
    uint64_t done, failed, cancelled;   /* transfers finished, by outcome */
    int running;                /* transfers in the mover */
    int threads, busy;
} mover_stats_t;
void mover_get_stats(mover_t *m, mover_stats_t *st);
/* What failed teardowns left (kept in the trash and tried again, mover_rmtree()):
 * the bytes they held when last measured (st_blocks, as bufdir_usage_step()), of
 * those under 'under' (all when NULL), until a later try removes them.  Returns how
 * many there are. */
int mover_leftover(mover_t *m, const char *under, uint64_t *bytes);
typedef void (*mover_job_f)(const char *job, double weight, uint64_t bytes, int transfers,
                            void *arg);
void mover_foreach_job(mover_t *m, mover_job_f cb, void *arg);

#endif
