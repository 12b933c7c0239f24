/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * state.h — bbmgrd's durable state: SQLite (WAL) with versioned migrations, and a
 * group-commit writer.
 *
 * The daemon's core changes its in-memory model under its lock and, in the same
 * critical section, queues the rows that express the change (state_put()).  A
 * writer thread takes everything queued so far, writes it in one transaction and
 * commits it (synchronous=FULL: fsync'd), then reports the highest sequence number
 * committed.  A request is answered only once the sequence number of everything it
 * changed, or saw, is committed: what the daemon acknowledges is on disk, and many
 * concurrent requests share one fsync.
 */
#ifndef BBMGR_STATE_H
#define BBMGR_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sqlite3.h>

#include "libhutil/hutil.h"

#define STATE_SCHEMA_VERSION 8

/* Statements the writer knows (name, SQL).  Parameters are bound in order. */
#define STATE_STMTS(X) \
    X(JOB_PUT, "INSERT OR REPLACE INTO jobs(id,uid,gid,user,name,nodes,w_iter," \
               "io_volume,phases,io,priority,state,created,updated,begun,ended,nphases,bytes)" \
               " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)") \
    X(ALLOC_PUT, "INSERT OR REPLACE INTO allocations(job_id,pool,capacity,reserved," \
                 "nodes_requested,created) VALUES(?,?,?,?,?,?)") \
    X(ALLOC_DEL, "DELETE FROM allocations WHERE job_id=?") \
    X(ANODE_PUT, "INSERT OR REPLACE INTO alloc_nodes(kind,owner,node,bytes) VALUES(?,?,?,?)") \
    X(ANODE_DEL, "DELETE FROM alloc_nodes WHERE kind=? AND owner=?") \
    X(PERS_PUT, "INSERT OR REPLACE INTO persistent(name,uid,gid,pool,capacity,reserved," \
                "created) VALUES(?,?,?,?,?,?,?)") \
    X(PERS_DEL, "DELETE FROM persistent WHERE name=?") \
    X(PUSE_PUT, "INSERT OR IGNORE INTO persistent_use(name,job_id,since) VALUES(?,?,?)") \
    X(PUSE_DEL, "DELETE FROM persistent_use WHERE name=? AND job_id=?") \
    X(PUSE_DEL_NAME, "DELETE FROM persistent_use WHERE name=?") \
    X(PUSE_DEL_JOB, "DELETE FROM persistent_use WHERE job_id=?") \
    X(PHASE_PUT, "INSERT OR REPLACE INTO phases(id,job_id,volume,direction,state," \
                 "requested,granted,finished,bytes,bandwidth,nodes,w_done,held)" \
                 " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)") \
    X(XFER_PUT, "INSERT OR REPLACE INTO transfers(id,job_id,kind,source,destination," \
                "type,state,bytes_total,bytes_done,message,requested,start,finished,durable,part," \
                "nparts) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)") \
    X(NODE_PUT, "INSERT OR REPLACE INTO node_state(name,state,reason,updated) VALUES(?,?,?,?)") \
    X(HIST_PUT, "INSERT INTO history(uid,user,job_name,job_id,w_iter,volume,phases,time)" \
                " VALUES(?,?,?,?,?,?,?,?)") \
    X(HIST_PRUNE, \
      "DELETE FROM history WHERE user=?1 AND job_name=?2 AND id NOT IN" \
      " (SELECT id FROM history WHERE user=?1 AND job_name=?2 ORDER BY id DESC LIMIT ?3)") \
    X(META_PUT, "INSERT OR REPLACE INTO meta(key,value) VALUES(?,?)") \
    /* appended: the hot path of a phase's close touches one row of each table in \
     * place (an INSERT OR REPLACE deletes and re-inserts, rewriting every index) */ \
    X(PHASE_CLOSE, "UPDATE phases SET state=?,finished=?,bytes=?,bandwidth=?,nodes=?" \
                   " WHERE id=?") \
    X(JOB_PROGRESS, "UPDATE jobs SET nphases=?,bytes=?,updated=? WHERE id=?") \
    /* a done stage-out of a job no longer in memory became durable, or could not */ \
    X(XFER_DURABLE, "UPDATE transfers SET durable=1 WHERE id=? AND state='done'") \
    X(XFER_NOT_DURABLE, "UPDATE transfers SET state='failed',durable=NULL,message=?" \
                        " WHERE id=? AND state='done'") \
    /* a buffer directory moved aside from ?1 to ?2: the stage-outs whose source it \
     * holds (durability pending, or failed) read from there */ \
    X(PRUNE_PHASES, \
      "DELETE FROM phases WHERE state NOT IN ('waiting','granted') AND" \
      " (finished<?1 OR id IN (SELECT id FROM phases WHERE state NOT IN ('waiting','granted')" \
      " ORDER BY id DESC LIMIT -1 OFFSET ?2))") \
    X(PRUNE_XFERS, "DELETE FROM transfers WHERE state IN ('done','failed','cancelled')" \
                   " AND NOT (state='done' AND COALESCE(durable,1)=0) AND NOT (state='failed' AND" \
                   " COALESCE(message,'') LIKE 'not durable:%') AND (finished<?1 OR id IN " \
                   "(SELECT id FROM transfers WHERE state IN" \
                   " ('done','failed','cancelled') ORDER BY id DESC LIMIT -1 OFFSET ?2))") \
    X(PRUNE_JOBS, "DELETE FROM jobs WHERE state='ended' AND ended<?1 AND id NOT IN" \
                  " (SELECT job_id FROM transfers) AND id NOT IN (SELECT job_id FROM phases)") \
    X(XFER_HELD, \
      "UPDATE transfers SET held=?2||substr(COALESCE(held,source),length(?1)+1)" \
      " WHERE kind='stage_out' AND (COALESCE(held,source)=?1" \
      " OR substr(COALESCE(held,source),1,length(?1)+1)=?1||'/')" \
      " AND ((state='done' AND durable=0) OR (state='failed' AND message LIKE 'not durable:%'))") \
    /* the directories of a held buffer by identity (owner: its held_t.owner), kept: \
     * a stage-out from it could not be made durable */ \
    X(KEPT_PUT, "INSERT OR REPLACE INTO kept_dirs(owner,node,dev,ino,kept) VALUES(?,?,?,?,?)") \
    X(KEPT_SET, "UPDATE kept_dirs SET kept=1 WHERE owner=?") \
    X(KEPT_DEL, "DELETE FROM kept_dirs WHERE owner=?")

typedef enum {
#define X(name, sql) ST_##name,
    STATE_STMTS(X)
#undef X
        ST__COUNT
} state_stmt_t;

/* The reads of recovery (name, SQL), next to the writes above: bbmgrd's core
 * rebuilds its model from them at the start (core_recover.c).  Parameters are
 * bound in order, rows come as from state_query(). */
#define STATE_READS(X) \
    X(NODE_STATES, "SELECT name,state,reason FROM node_state") \
    X(JOBS_OPEN, "SELECT id,uid,gid,user,name,nodes,w_iter,io_volume,phases,io,priority," \
                 "state,created,updated,begun,nphases,bytes FROM jobs WHERE state!='ended'") \
    X(ALLOCS, "SELECT job_id,pool,capacity,reserved,nodes_requested,created FROM allocations") \
    X(PERSISTENT, "SELECT name,uid,gid,pool,capacity,reserved,created FROM persistent") \
    X(ANODES, "SELECT kind,owner,node,bytes FROM alloc_nodes ORDER BY rowid") \
    X(PUSES, "SELECT name,job_id FROM persistent_use") \
    X(PHASES_OPEN, "SELECT id,job_id,volume,direction,state,requested,granted,finished,bytes," \
                   "bandwidth,nodes,w_done,held FROM phases WHERE state IN ('waiting','granted')" \
                   " ORDER BY id DESC") \
    X(XFERS_OPEN, \
      "SELECT t.id,t.job_id,t.kind,t.source,t.destination,t.type,t.state," \
      "t.bytes_total,t.bytes_done,t.message,t.requested,t.start,t.finished,t.durable," \
      "t.part,t.nparts FROM transfers t JOIN jobs j ON j.id=t.job_id WHERE j.state!='ended'" \
      " UNION ALL SELECT id,job_id,kind,source,destination,type,state,bytes_total," \
      "bytes_done,message,requested,start,finished,durable,part,nparts FROM transfers WHERE state" \
      " IN ('queued','running') AND job_id NOT IN (SELECT id FROM jobs WHERE" \
      " state!='ended') ORDER BY 1") \
    X(PHASE_MAX_ID, "SELECT coalesce(max(id),0) FROM phases") \
    X(XFER_MAX_ID, "SELECT coalesce(max(id),0) FROM transfers") \
    X(META, "SELECT value FROM meta WHERE key=?") \
    /* the stage-outs a held buffer waits for: of job ?, or reading from under ?1 */ \
    X(HELD_OF_JOB, "SELECT id,state FROM transfers WHERE job_id=? AND kind='stage_out' AND" \
                   " ((state='done' AND durable=0) OR (state='failed' AND message LIKE" \
                   " 'not durable:%'))") \
    X(HELD_UNDER, "SELECT id,state FROM transfers WHERE kind='stage_out' AND" \
                  " ((state='done' AND durable=0) OR (state='failed' AND message LIKE" \
                  " 'not durable:%')) AND (COALESCE(held,source)=?1 OR" \
                  " substr(COALESCE(held,source),1,length(?1)+1)=?1||'/')") \
    /* a row when a stage-out that could not be made durable reads from under ?1 */ \
    X(KEPT_UNDER, "SELECT 1 FROM transfers WHERE kind='stage_out' AND state='failed' AND" \
                  " (held=?1 OR substr(held,1,length(?1)+1)=?1||'/') LIMIT 1") \
    /* the directories recorded for a held buffer (ST_KEPT_PUT), and whether a \
     * device and inode is one of any held buffer */ \
    X(KEPT_OF, "SELECT node,dev,ino,kept FROM kept_dirs WHERE owner=?") \
    X(KEPT_ID, "SELECT 1 FROM kept_dirs WHERE node=? AND dev=? AND ino=? LIMIT 1") \
    /* the same, of a buffer an administrator must release (kept = 1) */ \
    X(KEPT_ID_KEPT, "SELECT 1 FROM kept_dirs WHERE node=? AND dev=? AND ino=? AND kept=1" \
                    " LIMIT 1") \
    /* the stage-outs done whose fsyncs had not finished, with their job's user */ \
    X(XFERS_SYNCING, "SELECT t.id,t.job_id,COALESCE(t.held,t.source),t.destination,t.type," \
                     "t.finished,j.uid,j.gid," \
                     "j.user FROM transfers t LEFT JOIN jobs j ON j.id=t.job_id WHERE t.durable=0" \
                     " AND t.state='done' AND t.kind='stage_out' ORDER BY t.id")

typedef enum {
#define X(name, sql) SR_##name,
    STATE_READS(X)
#undef X
        SR__COUNT
} state_read_t;

typedef struct state state_t;

/* Called by the writer thread after each commit with the highest sequence number
 * now durable; ok is false if the transaction failed (the daemon must stop: its
 * memory holds changes the disk does not). */
typedef void (*state_commit_f)(uint64_t seq, bool ok, void *arg);

/* Open (creating if needed) DIR/state.db, take DIR/bbmgrd.lock (one daemon per
 * directory), migrate the schema to STATE_SCHEMA_VERSION.  durable: synchronous=FULL
 * (else NORMAL). */
state_t *state_open(const char *dir, bool durable, hu_error_t *err);
void state_close(state_t *st); /* stops the writer after a final commit */

/* Schema version of the open database. */
int state_schema_version(state_t *st);

/* Start the writer thread. */
int state_start(state_t *st, state_commit_f cb, void *arg, hu_error_t *err);

/* Queue one statement; fmt gives the parameters: i (int64_t), d (double, NAN is
 * NULL), s (const char *, NULL is NULL).  Returns the sequence number, 0 on error
 * (ENOMEM). Call with the caller's own lock held so that order is kept. */
uint64_t state_put(state_t *st, state_stmt_t stmt, const char *fmt, ...);

uint64_t state_last_seq(state_t *st);  /* last queued */
uint64_t state_committed(state_t *st); /* last durable */
/* Block until everything queued so far is committed (or failed: -1). */
int state_sync(state_t *st);
/* Without a writer thread (tools, unit tests): write what is queued now. */
int state_flush(state_t *st, hu_error_t *err);

/* Read access (a second connection; WAL readers see committed data only).  Runs
 * sql with the given parameters (same fmt as state_put) and calls row() for each
 * result row; row returns non-zero to stop.  Serialised by an internal mutex. */
int state_query(state_t *st, int (*row)(sqlite3_stmt *s, void *arg), void *arg, const char *sql,
                const char *fmt, ...);
/* The same with one of the reads of STATE_READS, and its SQL (for messages). */
int state_read(state_t *st, state_read_t q, int (*row)(sqlite3_stmt *s, void *arg), void *arg,
               const char *fmt, ...);
const char *state_read_sql(state_read_t q);

/* Make the ops put between state_hold() and state_release() (nestable, any
 * thread) one unit: they are committed together, never split over two
 * transactions.  The daemon holds while it holds its core lock. */
void state_hold(state_t *st);
void state_release(state_t *st);

/* Commit what is queued on the calling thread when the writer is idle.  1: seq
 * 'want' is committed; 0: wait for the writer; -1: the database failed.  The
 * commit callback runs on the caller's thread: call without its locks. */
int state_try_commit(state_t *st, uint64_t want);

/* Copy the WAL into the database (PASSIVE: never blocks commits).  The daemon
 * calls this from its timer; the writer finishes the job when the WAL is long. */
int state_checkpoint(state_t *st);

/* state_checkpoint() when the writer asked for one (the WAL grew past its limit):
 * the daemon's timer calls it at every tick, off the commit path. */
void state_checkpoint_bg(state_t *st);

/* Statistics for /metrics. */
typedef struct {
    uint64_t commits;
    uint64_t statements;
    double commit_seconds; /* total time in COMMIT */
    uint64_t checkpoints;  /* run by the writer (WAL over STATE_CKPT_FRAMES) */
    double checkpoint_seconds;
    uint64_t inline_commits; /* of 'commits', made by state_try_commit() */
} state_stats_t;
void state_get_stats(state_t *st, state_stats_t *out);

#endif
