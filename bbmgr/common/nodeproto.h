/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nodeproto.h — the messages between bbmgrd and its buffer-node agents (bbnoded),
 * and the agent's table of tasks (doc/api.md, "Buffer-node agents").
 *
 * Pure: JSON in and out, no I/O, no threads.  bbmgrd (nodes.c) and bbnoded
 * (agent.c) both use it, and testsuite/unit/test_nodeproto.c tests it alone.
 *
 * The agent pulls: it POSTs /v1/agents/<node> every agents.interval with its
 * device status and the results of its transfers, and gets back the transfers it
 * must run and (when they changed) the buffer directories its mount must hold.
 * A task's id is its transfer's id; every message may be duplicated or come late
 * without changing anything (the rules are in np_table_* below and in nodes.c).
 */
#ifndef BBMGR_NODEPROTO_H
#define BBMGR_NODEPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

#include "libhutil/hutil.h"
#include "mover.h"

#define NP_VERSION 1

/* Device status of one agent (one mount). */
typedef struct {
    uint64_t free_bytes, used_bytes;
    bool busy;                /* a transfer is copying */
    double read_bw, write_bw; /* bytes/s over the last interval */
    double interval;          /* seconds the bandwidths are measured over */
    int queue;                /* transfers in the agent's mover */
    uint64_t errors;          /* failed transfers and device errors since the start */
    /* the whole device (block device counters), its transfers and anybody else's;
     * < 0: unknown (no block device under the mount) */
    double device_read_bw, device_write_bw;
    /* what failed teardowns left on the mount, measured, until removed (absent: 0) */
    uint64_t leftover_bytes;
} np_status_t;

/* Bytes/s of the device's I/O the agent did not make (0 when unknown). */
double np_status_foreign(const np_status_t *s);

json_t *np_status_json(const np_status_t *s);
/* 0, or -1 with a reason naming the field in msg. */
int np_status_parse(json_t *o, np_status_t *s, hu_error_t *err);

/* A transfer given to an agent: what its mover is handed.  A stage-in carries
 * max_bytes ("max_bytes", the node's share of the buffer it writes into) and the
 * agent's mover refuses a source larger than that; absent (0): no limit.
 * Parsed, its strings point into the JSON it was parsed from. */
typedef mover_spec_t np_task_t;

json_t *np_task_json(const np_task_t *t);
int np_task_parse(json_t *o, np_task_t *t, hu_error_t *err);

/* A result of a transfer, as mover_poll() gave it. */
typedef struct {
    uint64_t id;
    mover_state_t state;
    int64_t bytes_done, bytes_total;
    const char *message; /* may be NULL */
} np_result_t;

json_t *np_result_json(const np_result_t *r);
int np_result_parse(json_t *o, np_result_t *r, hu_error_t *err);

/* A message made safe to log and to send, whatever bytes users put in the file
 * names it quotes: control characters and bytes that are not UTF-8 become '?', cut
 * at a character boundary to at most NP_MESSAGE_MAX bytes (out: NP_MESSAGE_MAX + 1
 * bytes).  Returns out. */
char *np_message_clean(const char *in, char *out);

const char *np_state_name(mover_state_t s);
int np_state_parse(const char *s); /* -1: unknown */

/* A buffer directory the agent's mount must hold. */
typedef struct {
    const char *name; /* job id, or the persistent buffer's name */
    bool persistent;  /* <mount>/persistent/<name>, else <mount>/<name> */
    uid_t uid;
    gid_t gid;
    double inc;        /* the incarnation: the creation time (Unix seconds) of
                                   the allocation or persistent buffer it is for; a
                                   directory made for another one is never adopted
                                   (0: not said) */
    bool keep;         /* a buffer bbmgrd still holds after its allocation (a
                                   stage-out from it to be made durable, or one that
                                   could not be): never made, never adopted, never
                                   removed as an orphan while listed; uid and gid are
                                   not used */
    uint64_t capacity; /* the buffer's bytes on this node's mount, which the
                                   agent's file system may enforce (capacity.enforce;
                                   0: not said, measured only) */
    uint64_t dev, ino; /* keep: the kept directory's identity, found by it at
                                   its name or in the trash, whatever buffer has the
                                   name now (0, 0: not known yet: the agent reports the
                                   directory at the name, "kept" in its report) */
} np_dir_t;

json_t *np_dir_json(const np_dir_t *d);
int np_dir_parse(json_t *o, np_dir_t *d, hu_error_t *err);
/* A name usable as one directory (not ".", "..", no '/', not a reserved name). */
bool np_dir_name_ok(const char *name, bool persistent);

/* What the agent measured one of its buffer directories to hold ("usage" of a
 * report, at most NP_USAGE_MAX entries): the st_blocks of everything below it,
 * hard links once (bufdir_usage_step()), at the end of a complete walk; dev and
 * ino: the directory's identity (a mount shared by several nodes is counted once
 * per buffer by bbmgrd).  Parsed, name points into the JSON. */
#define NP_USAGE_MAX 64
typedef struct {
    const char *name; /* job id, or the persistent buffer's name */
    bool persistent;
    uint64_t used;     /* bytes, below 2^63 */
    uint64_t dev, ino; /* each below 2^63 */
} np_usage_t;

json_t *np_usage_json(const np_usage_t *u);
int np_usage_parse(json_t *o, np_usage_t *u, hu_error_t *err);

/*
 * The agent's table of tasks.
 *
 * A task is RUNNING from its first listing until the mover's first final result
 * (done, failed, cancelled); a done stage-out is then SYNCING until durable (or
 * not); then FINISHED.  Results wait in an outbox, each with a sequence number,
 * until a reply acknowledges the request that carried them (np_table_acked()):
 * progress of a task replaces its older progress; final results stay in order.
 *
 * What bbmgrd lists decides the rest (np_table_listed()):
 *  - a listed task the table does not know is new: it must be submitted (also
 *    after a restart of the agent, which forgets everything: it re-runs it);
 *  - a listed task the table knows is not submitted again, whatever its state
 *    (a listing that crossed its result on the wire), unless it is FINISHED, its
 *    results acknowledged, and listed with a higher run (runs: NULL, all 0):
 *    bbmgrd runs it again (part 0 of a spread stage-in whose links must name a
 *    part's new node);
 *  - a RUNNING task no longer listed was cancelled (or its job ended): it must be
 *    cancelled (once: it is FINISHED from then on);
 *  - a FINISHED task no longer listed, whose results are all acknowledged, is
 *    forgotten.  A SYNCING one is kept: its durability is still to be reported.
 */
typedef enum { NPT_RUNNING = 0, NPT_SYNCING, NPT_FINISHED } np_tstate_t;

typedef struct np_table np_table_t;

np_table_t *np_table_create(void);
void np_table_destroy(np_table_t *t);

/* A result from the mover.  Unknown ids are ignored (0 returned); -1: ENOMEM.
 * Its message is kept as np_message_clean() makes it. */
int np_table_result(np_table_t *t, const np_result_t *r);

/* The oldest results of the outbox as a JSON array, as many as fit in budget bytes
 * of compact JSON (measured, not estimated: whatever users name their files, the
 * report fits), at least one: a first result larger than budget alone goes without
 * its message (saying so); *upto gets the last sequence number in it (pass it to
 * np_table_acked() once the reply came). */
#define NP_MESSAGE_MAX 1000
json_t *np_table_outbox(np_table_t *t, size_t budget, uint64_t *upto);
void np_table_acked(np_table_t *t, uint64_t upto);
size_t np_table_pending(const np_table_t *t); /* results not yet acknowledged */

/* The ids bbmgrd listed in its reply.  submit (n_submit) gets the listed ids to
 * hand to the mover (they are now RUNNING), cancel (n_cancel) the RUNNING ids to
 * cancel; both arrays are malloc'd by the table (free them).  -1: ENOMEM. */
int np_table_listed(np_table_t *t, const uint64_t *ids, const unsigned *runs, size_t n,
                    uint64_t **submit, size_t *n_submit, uint64_t **cancel, size_t *n_cancel);

/* State of a task; -1 when unknown. */
int np_table_state(const np_table_t *t, uint64_t id);
size_t np_table_size(const np_table_t *t);

#endif
