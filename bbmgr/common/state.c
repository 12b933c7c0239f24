/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * state.c — SQLite state of bbmgrd: migrations, group-commit writer, reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "state.h"
#include "log.h"
#include "util.h"

/* ------------------------------------------------------------------ schema
 * Migration i brings the schema from version i to i+1.  Never edit a released
 * migration: add one. */
static const char *const migrations[] = {
    /* 0 -> 1: the core tables */
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE jobs(id TEXT PRIMARY KEY, uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
    " user TEXT, name TEXT, nodes INTEGER NOT NULL, w_iter REAL, io_volume REAL,"
    " phases INTEGER, io TEXT, priority INTEGER, state TEXT NOT NULL,"
    " created REAL NOT NULL, updated REAL NOT NULL, begun REAL, ended REAL,"
    " nphases INTEGER NOT NULL DEFAULT 0, bytes REAL NOT NULL DEFAULT 0);"
    "CREATE INDEX jobs_state ON jobs(state);"
    "CREATE TABLE allocations(job_id TEXT PRIMARY KEY, pool TEXT NOT NULL,"
    " capacity INTEGER NOT NULL, reserved INTEGER NOT NULL,"
    " nodes_requested INTEGER NOT NULL, created REAL NOT NULL);"
    "CREATE TABLE alloc_nodes(kind TEXT NOT NULL, owner TEXT NOT NULL, node TEXT NOT NULL,"
    " bytes INTEGER NOT NULL, PRIMARY KEY(kind, owner, node));"
    "CREATE TABLE persistent(name TEXT PRIMARY KEY, uid INTEGER NOT NULL,"
    " gid INTEGER NOT NULL, pool TEXT NOT NULL, capacity INTEGER NOT NULL,"
    " reserved INTEGER NOT NULL, created REAL NOT NULL);"
    "CREATE TABLE phases(id INTEGER PRIMARY KEY, job_id TEXT NOT NULL,"
    " volume REAL NOT NULL, direction TEXT NOT NULL, state TEXT NOT NULL,"
    " requested REAL NOT NULL, granted REAL, finished REAL, bytes REAL,"
    " bandwidth REAL, nodes TEXT, w_done REAL);"
    "CREATE INDEX phases_job ON phases(job_id);"
    "CREATE INDEX phases_open ON phases(state) WHERE state IN ('waiting','granted');"
    "CREATE TABLE transfers(id INTEGER PRIMARY KEY, job_id TEXT NOT NULL,"
    " kind TEXT NOT NULL, source TEXT NOT NULL, destination TEXT NOT NULL,"
    " type TEXT NOT NULL, state TEXT NOT NULL, bytes_total INTEGER,"
    " bytes_done INTEGER NOT NULL DEFAULT 0, message TEXT, requested REAL NOT NULL,"
    " start REAL, finished REAL);"
    "CREATE INDEX transfers_job ON transfers(job_id);"
    "CREATE TABLE node_state(name TEXT PRIMARY KEY, state TEXT NOT NULL, reason TEXT,"
    " updated REAL NOT NULL);",
    /* 1 -> 2: persistent buffer use by jobs, observed history for defaults */
    "CREATE TABLE persistent_use(name TEXT NOT NULL, job_id TEXT NOT NULL,"
    " since REAL NOT NULL, PRIMARY KEY(name, job_id));"
    "CREATE TABLE history(id INTEGER PRIMARY KEY, uid INTEGER NOT NULL, user TEXT,"
    " job_name TEXT, job_id TEXT, w_iter REAL, volume REAL, phases INTEGER,"
    " time REAL NOT NULL);"
    "CREATE INDEX history_key ON history(user, job_name);",
    /* 2 -> 3: durability of a transfer: NULL none promised, 0 done with its fsyncs
     * going on (a stage-out made durable after done), 1 on disk */
    "ALTER TABLE transfers ADD COLUMN durable INTEGER;"
    "CREATE INDEX transfers_syncing ON transfers(durable) WHERE durable=0;",
    /* 3 -> 4: where the source of a stage-out is held once its buffer directory was
     * moved aside for a new buffer of the same name (NULL: at its source) */
    "ALTER TABLE transfers ADD COLUMN held TEXT;",
    /* 4 -> 5: a transfer spread over the nodes of its job's allocation: part
     * `part` of `nparts` (NULL: a transfer of its own); the parts of one request
     * have consecutive ids, the first is part 0 */
    "ALTER TABLE transfers ADD COLUMN part INTEGER;"
    "ALTER TABLE transfers ADD COLUMN nparts INTEGER;",
    /* 5 -> 6: the directories of held buffers by identity (device, inode), never by
     * name: a release removes those, a trash sweep leaves them */
    "CREATE TABLE kept_dirs(owner TEXT NOT NULL, node TEXT NOT NULL, dev INTEGER NOT NULL,"
    " ino INTEGER NOT NULL, kept INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(dev, ino));"
    "CREATE INDEX kept_dirs_owner ON kept_dirs(owner);",
    /* 6 -> 7: a directory's identity is per node: two agents' nodes may have the
     * same device and inode numbers (the rows are kept) */
    "ALTER TABLE kept_dirs RENAME TO kept_dirs_6;"
    "CREATE TABLE kept_dirs(owner TEXT NOT NULL, node TEXT NOT NULL, dev INTEGER NOT NULL,"
    " ino INTEGER NOT NULL, kept INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(node, dev, ino));"
    "INSERT INTO kept_dirs(owner,node,dev,ino,kept)"
    " SELECT owner,node,dev,ino,kept FROM kept_dirs_6;"
    "DROP TABLE kept_dirs_6;"
    "CREATE INDEX kept_dirs_owner ON kept_dirs(owner);",
    /* 7 -> 8: a waiting phase held outside the scheduler (capacity.over: hold) stays
     * held across restarts */
    "ALTER TABLE phases ADD COLUMN held INTEGER NOT NULL DEFAULT 0;",
};
_Static_assert(sizeof(migrations) / sizeof(migrations[0]) == STATE_SCHEMA_VERSION,
               "one migration per schema version");

static const char *const stmt_sql[] = {
#define X(name, sql) sql,
    STATE_STMTS(X)
#undef X
};

static const char *const read_sql[] = {
#define X(name, sql) sql,
    STATE_READS(X)
#undef X
};

/* ------------------------------------------------------------------ ops */
typedef enum { SV_NULL, SV_INT, SV_REAL, SV_TEXT } sv_type_t;

typedef struct {
    sv_type_t t;
    union {
        int64_t i;
        double d;
        char *s;
    } u;
} sv_t;

#define OP_MAXARGS 18

typedef struct {
    int stmt;
    int n;
    sv_t v[OP_MAXARGS];
} op_t;

typedef struct {
    op_t *ops;
    size_t n, cap;
} batch_t;

struct state {
    char *dir;
    int lockfd;
    sqlite3 *db;  /* the writer's */
    sqlite3 *rdb; /* readers' */
    pthread_mutex_t rlock;
    sqlite3_stmt *stmts[ST__COUNT];
    sqlite3_stmt *tx[3]; /* BEGIN IMMEDIATE, COMMIT, ROLLBACK (tx_sql[]) */

    pthread_mutex_t lock;
    pthread_cond_t cond;      /* writer waits for work */
    pthread_cond_t done_cond; /* state_sync waits for commits */
    batch_t pending;
    uint64_t seq; /* last queued */
    uint64_t committed;
    bool failed;
    bool stop;
    bool running;
    pthread_t thread;
    state_commit_f cb;
    void *cb_arg;
    state_stats_t stats;
    int wal_frames; /* frames in the WAL after the last commit (writer) */
    /* Who uses the writer connection (st->db): the writer thread, or a request
     * thread committing inline (state_try_commit()); never both. */
    bool writer_busy; /* the writer thread has a batch or checkpoints */
    bool inline_busy; /* a request thread commits */
    bool ckpt_wanted; /* an inline commit left the WAL over the limit */
    int bg_ckpt;      /* BG_IDLE, BG_WANTED, BG_DONE: ckpt_due() */
    batch_t inl;      /* the inline committer's batch (reused) */
    bool no_inline;   /* BBMGRD_INLINE_COMMIT=0: always the writer (A/B) */
    /* Atomicity of a critical section of the daemon (state_hold()): the ops put
     * while a hold is open are not committed before it is released, so a change
     * made of several ops (a job's end closes its phase, frees its allocation and
     * marks the job) is never split over two transactions, where a kill between
     * them would leave half of it. */
    int holds;
    size_t mark_n;     /* the first mark_n ops of 'pending' are complete */
    uint64_t mark_seq; /* the seq of the last of them */
};

/* The writer checkpoints the WAL itself once it holds this many frames (4 KiB
 * pages: ~16 MiB), right after the commit's replies were released.  A checkpoint
 * from another connection (state_checkpoint()) never completes under a steady
 * stream of commits, so the WAL would grow without bound and every commit would
 * append to it (an fdatasync of a growing file costs about twice that of a
 * rewrite, on the bench machine: doc/performance.md).  Once a checkpoint has
 * copied everything, the next transaction starts the WAL over from its beginning:
 * commits rewrite the same file blocks. */
#define STATE_CKPT_FRAMES 4096
#define STATE_WAL_SIZE_LIMIT "67108864" /* bytes kept after a reset (64 MiB) */

static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
    state_t *st = arg;
    (void)db;
    (void)name;
    st->wal_frames = frames;
    return SQLITE_OK;
}

/*
 * Whether the committer (writer or inline, st->lock held) must checkpoint now,
 * after a commit that left wal_frames in the WAL.  Past STATE_CKPT_FRAMES the main
 * thread is first asked to copy the WAL into the database (state_checkpoint_bg(),
 * its own connection): commits go on meanwhile, where a checkpoint by the writer
 * held every commit, and so every reply, for about 2 ms (5 times a second at
 * 5,000 commits/s: 1 % of the replies).  Once that is done, the writer copies what
 * came since (a few frames) and the next commit restarts the WAL.  Past twice the
 * limit the writer does it all, as before.
 */
enum { BG_IDLE, BG_WANTED, BG_DONE };

static bool ckpt_due(state_t *st)
{
    if (st->wal_frames < STATE_CKPT_FRAMES)
        return false;
    if (st->bg_ckpt == BG_IDLE)
        st->bg_ckpt = BG_WANTED;
    return st->bg_ckpt == BG_DONE || st->wal_frames >= 2 * STATE_CKPT_FRAMES;
}

/* Writer thread, no transaction open. */
static void writer_checkpoint(state_t *st)
{
    int nlog = 0, nckpt = 0;
    double t0 = hu_mono();
    if (sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &nlog, &nckpt)
        != SQLITE_OK) {
        bl_debug("state: checkpoint: %s", sqlite3_errmsg(st->db));
        return;
    }
    pthread_mutex_lock(&st->lock);
    st->stats.checkpoints++;
    st->stats.checkpoint_seconds += hu_mono() - t0;
    if (st->bg_ckpt == BG_DONE)
        st->bg_ckpt = BG_IDLE;
    pthread_mutex_unlock(&st->lock);
    if (nckpt == nlog)
        st->wal_frames = 0; /* complete: the next commit restarts the WAL */
}

static void batch_clear(batch_t *b)
{
    for (size_t i = 0; i < b->n; i++)
        for (int k = 0; k < b->ops[i].n; k++)
            if (b->ops[i].v[k].t == SV_TEXT)
                free(b->ops[i].v[k].u.s);
    b->n = 0;
}

static int vbind(sqlite3_stmt *s, const char *fmt, va_list ap)
{
    int k = 1;
    for (const char *f = fmt; *f; f++, k++) {
        int rc;
        switch (*f) {
        case 'i':
            rc = sqlite3_bind_int64(s, k, va_arg(ap, int64_t));
            break;
        case 'd': {
            double d = va_arg(ap, double);
            rc = isnan(d) ? sqlite3_bind_null(s, k) : sqlite3_bind_double(s, k, d);
            break;
        }
        case 's': {
            const char *t = va_arg(ap, const char *);
            rc = t ? sqlite3_bind_text(s, k, t, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(s, k);
            break;
        }
        default:
            return SQLITE_MISUSE;
        }
        if (rc != SQLITE_OK)
            return rc;
    }
    return SQLITE_OK;
}

uint64_t state_put(state_t *st, state_stmt_t stmt, const char *fmt, ...)
{
    op_t op = { .stmt = stmt, .n = 0 };
    va_list ap;
    uint64_t seq;

    va_start(ap, fmt);
    for (const char *f = fmt; *f && op.n < OP_MAXARGS; f++) {
        sv_t *v = &op.v[op.n++];
        switch (*f) {
        case 'i':
            v->t = SV_INT;
            v->u.i = va_arg(ap, int64_t);
            break;
        case 'd':
            v->u.d = va_arg(ap, double);
            v->t = isnan(v->u.d) ? SV_NULL : SV_REAL;
            break;
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s) {
                v->t = SV_NULL;
            } else {
                v->t = SV_TEXT;
                if (!(v->u.s = strdup(s))) {
                    op.n--;
                    goto nomem;
                }
            }
            break;
        }
        default:
            op.n--;
            goto nomem;
        }
    }
    va_end(ap);
    pthread_mutex_lock(&st->lock);
    if (st->pending.n == st->pending.cap) {
        size_t cap = st->pending.cap ? st->pending.cap * 2 : 256;
        op_t *ops = realloc(st->pending.ops, cap * sizeof(op_t));
        if (!ops) {
            pthread_mutex_unlock(&st->lock);
            goto nomem_unlocked;
        }
        st->pending.ops = ops;
        st->pending.cap = cap;
    }
    st->pending.ops[st->pending.n++] = op;
    seq = ++st->seq;
    if (st->holds == 0) {
        st->mark_n = st->pending.n;
        st->mark_seq = seq;
        pthread_cond_signal(&st->cond);
    }
    pthread_mutex_unlock(&st->lock);
    return seq;
nomem:
    va_end(ap);
nomem_unlocked:
    for (int k = 0; k < op.n; k++)
        if (op.v[k].t == SV_TEXT)
            free(op.v[k].u.s);
    errno = ENOMEM;
    return 0;
}

static int exec_op(state_t *st, const op_t *op)
{
    sqlite3_stmt *s = st->stmts[op->stmt];
    int rc = SQLITE_OK;
    for (int k = 0; k < op->n && rc == SQLITE_OK; k++) {
        const sv_t *v = &op->v[k];
        switch (v->t) {
        case SV_NULL:
            rc = sqlite3_bind_null(s, k + 1);
            break;
        case SV_INT:
            rc = sqlite3_bind_int64(s, k + 1, v->u.i);
            break;
        case SV_REAL:
            rc = sqlite3_bind_double(s, k + 1, v->u.d);
            break;
        case SV_TEXT:
            rc = sqlite3_bind_text(s, k + 1, v->u.s, -1, SQLITE_STATIC);
            break;
        }
    }
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(s);
        if (rc == SQLITE_DONE)
            rc = SQLITE_OK;
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc;
}

/* The transaction's statements, prepared once: sqlite3_exec() would parse and
 * compile them at every commit (a tenth of a commit's instructions). */
enum { TX_BEGIN, TX_COMMIT, TX_ROLLBACK };
static const char *const tx_sql[] = { "BEGIN IMMEDIATE", "COMMIT", "ROLLBACK" };

static int tx_step(state_t *st, int which)
{
    int rc = sqlite3_step(st->tx[which]);
    sqlite3_reset(st->tx[which]);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Write batch b in one transaction.  Returns 0 or -1 (err filled). */
static int write_batch(state_t *st, batch_t *b, hu_error_t *err)
{
    int rc;

    if (b->n == 0)
        return 0;
    if ((rc = tx_step(st, TX_BEGIN)) != SQLITE_OK)
        goto error;
    for (size_t i = 0; i < b->n; i++) {
        if ((rc = exec_op(st, &b->ops[i])) != SQLITE_OK) {
            hu_errprintf(err, "%s: %s", stmt_sql[b->ops[i].stmt], sqlite3_errmsg(st->db));
            tx_step(st, TX_ROLLBACK);
            errno = EIO;
            return -1;
        }
    }
    double t0 = hu_mono();
    if ((rc = tx_step(st, TX_COMMIT)) != SQLITE_OK) {
        hu_errprintf(err, "sqlite: %s", sqlite3_errmsg(st->db));
        tx_step(st, TX_ROLLBACK);
        errno = EIO;
        return -1;
    }
    st->stats.commit_seconds += hu_mono() - t0;
    st->stats.commits++;
    st->stats.statements += b->n;
    return 0;
error:
    hu_errprintf(err, "sqlite: %s", sqlite3_errmsg(st->db));
    errno = EIO;
    return -1;
}

/* Move the complete ops of 'pending' (the first mark_n) into *into (empty),
 * leaving those of an open hold.  Returns the seq of the last op taken.  Lock held. */
static uint64_t take_marked(state_t *st, batch_t *into)
{
    uint64_t hi = st->mark_seq;
    if (st->mark_n == st->pending.n) {
        batch_t tmp = st->pending;
        st->pending = *into;
        *into = tmp;
    } else {
        /* rare: a hold is open; copy the complete ops, keep the rest in order */
        if (into->cap < st->mark_n) {
            op_t *ops = realloc(into->ops, st->mark_n * sizeof(op_t));
            if (!ops)
                return 0; /* retried at the next wake-up */
            into->ops = ops;
            into->cap = st->mark_n;
        }
        memcpy(into->ops, st->pending.ops, st->mark_n * sizeof(op_t));
        into->n = st->mark_n;
        memmove(st->pending.ops, st->pending.ops + st->mark_n,
                (st->pending.n - st->mark_n) * sizeof(op_t));
        st->pending.n -= st->mark_n;
    }
    st->mark_n = 0;
    return hi;
}

void state_hold(state_t *st)
{
    pthread_mutex_lock(&st->lock);
    st->holds++;
    pthread_mutex_unlock(&st->lock);
}

void state_release(state_t *st)
{
    pthread_mutex_lock(&st->lock);
    if (st->holds > 0 && --st->holds == 0 && st->mark_n != st->pending.n) {
        st->mark_n = st->pending.n;
        st->mark_seq = st->seq;
        pthread_cond_signal(&st->cond);
    }
    pthread_mutex_unlock(&st->lock);
}

static void *writer(void *arg)
{
    state_t *st = arg;
    batch_t mine = { 0 };

    pthread_mutex_lock(&st->lock);
    for (;;) {
        while (((st->mark_n == 0 && !st->ckpt_wanted) || st->inline_busy) && !st->stop)
            pthread_cond_wait(&st->cond, &st->lock);
        if (st->inline_busy) { /* stopping: let the inline commit finish first */
            pthread_cond_wait(&st->done_cond, &st->lock);
            continue;
        }
        if (st->stop && st->mark_n == 0 && st->pending.n > 0 && st->holds > 0) {
            /* stopping inside a hold: its ops are written when it is released */
            pthread_cond_wait(&st->cond, &st->lock);
            continue;
        }
        if (st->stop && st->mark_n == 0 && st->pending.n > 0) {
            st->mark_n = st->pending.n;
            st->mark_seq = st->seq;
        }
        if (st->mark_n == 0 && st->stop)
            break;
        if (st->mark_n == 0) {
            /* a checkpoint asked for by an inline commit */
            st->ckpt_wanted = false;
            st->writer_busy = true;
            bool due = ckpt_due(st);
            pthread_mutex_unlock(&st->lock);
            if (due)
                writer_checkpoint(st);
            pthread_mutex_lock(&st->lock);
            st->writer_busy = false;
            pthread_cond_broadcast(&st->done_cond);
            continue;
        }
        /* take the complete ops: the writer owns 'mine' while handlers fill 'pending' */
        uint64_t hi = take_marked(st, &mine);
        if (mine.n == 0)
            continue;
        st->writer_busy = true;
        pthread_mutex_unlock(&st->lock);

        hu_error_t err = { "" };
        bool ok = write_batch(st, &mine, &err) == 0;
        if (!ok)
            bl_error("state: commit failed: %s", err.text);
        batch_clear(&mine);

        pthread_mutex_lock(&st->lock);
        if (ok)
            st->committed = hi;
        else
            st->failed = true;
        bool due = ok && ckpt_due(st);
        pthread_cond_broadcast(&st->done_cond);
        pthread_mutex_unlock(&st->lock);
        if (st->cb)
            st->cb(hi, ok, st->cb_arg);
        if (due)
            writer_checkpoint(st);
        pthread_mutex_lock(&st->lock);
        st->writer_busy = false;
        pthread_cond_broadcast(&st->done_cond);
        if (!ok)
            break; /* nothing more can be trusted: the daemon stops */
    }
    pthread_mutex_unlock(&st->lock);
    batch_clear(&mine);
    free(mine.ops);
    return NULL;
}

/*
 * Commit on the calling thread when the writer is idle (a lone request: saves the
 * hand-off to the writer and the wake-up back, two context switches of a round
 * trip); otherwise leave it to the writer.  Everything queued so far is committed
 * in one transaction, in order, exactly as the writer would, and the commit
 * callback runs (it releases the other replies waiting for it).  Returns 1 when
 * seq 'want' is committed, 0 when the caller must wait for the writer, -1 when the
 * database failed.  Must not be called with a lock the commit callback takes.
 */
int state_try_commit(state_t *st, uint64_t want)
{
    pthread_mutex_lock(&st->lock);
    if (st->failed) {
        pthread_mutex_unlock(&st->lock);
        return -1;
    }
    if (st->committed >= want) {
        pthread_mutex_unlock(&st->lock);
        return 1;
    }
    if (st->no_inline || !st->running || st->stop || st->writer_busy || st->inline_busy
        || st->mark_n == 0 || st->mark_seq < want) {
        pthread_mutex_unlock(&st->lock);
        return 0;
    }
    uint64_t hi = take_marked(st, &st->inl);
    if (st->inl.n == 0) {
        pthread_mutex_unlock(&st->lock);
        return 0;
    }
    st->inline_busy = true;
    pthread_mutex_unlock(&st->lock);

    hu_error_t err = { "" };
    bool ok = write_batch(st, &st->inl, &err) == 0;
    if (!ok)
        bl_error("state: commit failed: %s", err.text);
    batch_clear(&st->inl);

    pthread_mutex_lock(&st->lock);
    if (ok) {
        st->committed = hi;
        st->stats.inline_commits++;
    } else
        st->failed = true;
    st->inline_busy = false;
    if (!ok || ckpt_due(st))
        st->ckpt_wanted = ok;
    pthread_cond_broadcast(&st->done_cond);
    pthread_cond_signal(&st->cond); /* the writer: what came meanwhile, a checkpoint */
    pthread_mutex_unlock(&st->lock);
    if (st->cb)
        st->cb(hi, ok, st->cb_arg);
    return ok ? 1 : -1;
}

int state_start(state_t *st, state_commit_f cb, void *arg, hu_error_t *err)
{
    int e;
    st->cb = cb;
    st->cb_arg = arg;
    const char *ic = getenv("BBMGRD_INLINE_COMMIT");
    st->no_inline = ic && !strcmp(ic, "0");
    if ((e = pthread_create(&st->thread, NULL, writer, st)) != 0) {
        errno = e;
        return hu_errprintf(err, "pthread_create: %s", strerror(e));
    }
    st->running = true;
    return 0;
}

int state_flush(state_t *st, hu_error_t *err)
{
    int rc;
    pthread_mutex_lock(&st->lock);
    batch_t b = st->pending;
    uint64_t hi = st->seq;
    memset(&st->pending, 0, sizeof(st->pending));
    st->mark_n = 0;
    pthread_mutex_unlock(&st->lock);
    rc = write_batch(st, &b, err);
    batch_clear(&b);
    free(b.ops);
    pthread_mutex_lock(&st->lock);
    if (rc == 0)
        st->committed = hi;
    else
        st->failed = true;
    pthread_mutex_unlock(&st->lock);
    return rc;
}

uint64_t state_last_seq(state_t *st)
{
    pthread_mutex_lock(&st->lock);
    uint64_t s = st->seq;
    pthread_mutex_unlock(&st->lock);
    return s;
}

uint64_t state_committed(state_t *st)
{
    pthread_mutex_lock(&st->lock);
    uint64_t s = st->committed;
    pthread_mutex_unlock(&st->lock);
    return s;
}

int state_sync(state_t *st)
{
    int rc = 0;
    if (!st->running)
        return state_flush(st, NULL);
    pthread_mutex_lock(&st->lock);
    uint64_t want = st->seq;
    while (st->committed < want && !st->failed)
        pthread_cond_wait(&st->done_cond, &st->lock);
    if (st->failed) {
        errno = EIO;
        rc = -1;
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

int state_checkpoint(state_t *st)
{
    /* PASSIVE: copies what it can without blocking the writer; the read
     * connection is used so that the writer's commits never wait behind it.
     * A checkpoint cannot run on a read-only connection: open a short-lived one. */
    sqlite3 *db = NULL;
    const char *path = sqlite3_db_filename(st->db, "main");
    int rc = -1, nlog = 0, nckpt = 0;
    if (!path
        || sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL)
               != SQLITE_OK)
        goto out;
    sqlite3_busy_timeout(db, 100);
    /* a new connection knows the database is in WAL mode once it has read it:
     * before, the checkpoint does nothing (nlog and nckpt -1) */
    if (sqlite3_exec(db, "SELECT 1 FROM sqlite_master LIMIT 1", NULL, NULL, NULL) == SQLITE_OK
        && sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, &nlog, &nckpt)
               == SQLITE_OK)
        rc = 0;
out:
    if (db)
        sqlite3_close(db);
    return rc;
}

void state_checkpoint_bg(state_t *st)
{
    pthread_mutex_lock(&st->lock);
    bool want = st->bg_ckpt == BG_WANTED;
    pthread_mutex_unlock(&st->lock);
    if (!want)
        return;
    state_checkpoint(st);
    pthread_mutex_lock(&st->lock);
    st->bg_ckpt = BG_DONE; /* even when it failed: the writer then does it */
    pthread_mutex_unlock(&st->lock);
}

void state_get_stats(state_t *st, state_stats_t *out)
{
    pthread_mutex_lock(&st->lock);
    *out = st->stats;
    pthread_mutex_unlock(&st->lock);
}

/* ------------------------------------------------------------------ open */
static int exec(sqlite3 *db, const char *sql, hu_error_t *err)
{
    char *emsg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &emsg) != SQLITE_OK) {
        hu_errprintf(err, "sqlite: %s: %s", sql, emsg ? emsg : "error");
        sqlite3_free(emsg);
        errno = EIO;
        return -1;
    }
    return 0;
}

static int get_version(sqlite3 *db)
{
    sqlite3_stmt *s;
    int v = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return v;
}

static int migrate(sqlite3 *db, hu_error_t *err)
{
    int v = get_version(db);
    if (v < 0) {
        errno = EIO;
        return hu_errprintf(err, "cannot read the schema version: %s", sqlite3_errmsg(db));
    }
    if (v > STATE_SCHEMA_VERSION) {
        errno = EPROTO;
        return hu_errprintf(err,
                            "state.db has schema version %d, newer than this "
                            "bbmgrd's %d: refusing to touch it",
                            v, STATE_SCHEMA_VERSION);
    }
    for (; v < STATE_SCHEMA_VERSION; v++) {
        char setv[64];
        snprintf(setv, sizeof(setv), "PRAGMA user_version = %d", v + 1);
        if (exec(db, "BEGIN IMMEDIATE", err) < 0)
            return -1;
        if (exec(db, migrations[v], err) < 0 || exec(db, setv, err) < 0) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
        if (exec(db, "COMMIT", err) < 0)
            return -1;
        bl_info("state: schema migrated to version %d", v + 1);
    }
    return 0;
}

int state_schema_version(state_t *st)
{
    return get_version(st->db);
}

state_t *state_open(const char *dir, bool durable, hu_error_t *err)
{
    state_t *st = NULL;
    char *path = NULL, *lpath = NULL;
    struct stat sb;

    if (!(st = calloc(1, sizeof(*st))))
        goto nomem;
    st->lockfd = -1;
    pthread_mutex_init(&st->lock, NULL);
    pthread_mutex_init(&st->rlock, NULL);
    pthread_cond_init(&st->cond, NULL);
    pthread_cond_init(&st->done_cond, NULL);
    if (!(st->dir = strdup(dir)))
        goto nomem;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        hu_errprintf(err, "%s: %s", dir, strerror(errno));
        goto error;
    }
    if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        hu_errprintf(err, "%s: not a directory", dir);
        goto error;
    }
    if (sb.st_mode & S_IWOTH) {
        errno = EPERM;
        hu_errprintf(err, "%s: writable by others: refusing to keep state there", dir);
        goto error;
    }
    if (asprintf(&lpath, "%s/bbmgrd.lock", dir) < 0 || asprintf(&path, "%s/state.db", dir) < 0)
        goto nomem;
    if ((st->lockfd = open(lpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
        hu_errprintf(err, "%s: %s", lpath, strerror(errno));
        goto error;
    }
    if (flock(st->lockfd, LOCK_EX | LOCK_NB) < 0) {
        errno = EBUSY;
        hu_errprintf(err, "%s: another bbmgrd uses this state directory", dir);
        goto error;
    }
    if (sqlite3_open_v2(path, &st->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL)
        != SQLITE_OK) {
        errno = EIO;
        hu_errprintf(err, "%s: %s", path, st->db ? sqlite3_errmsg(st->db) : "cannot open");
        goto error;
    }
    sqlite3_busy_timeout(st->db, 5000);
    if (exec(st->db, "PRAGMA journal_mode=WAL", err) < 0
        || exec(st->db, durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", err) < 0
        || exec(st->db, "PRAGMA foreign_keys=OFF", err) < 0
        /* checkpoints run outside the commit path (writer_checkpoint(),
         * state_checkpoint()) */
        || exec(st->db, "PRAGMA wal_autocheckpoint=0", err) < 0
        || exec(st->db, "PRAGMA journal_size_limit=" STATE_WAL_SIZE_LIMIT, err) < 0
        || migrate(st->db, err) < 0)
        goto error;
    sqlite3_wal_hook(st->db, wal_hook, st);
    for (int i = 0; i < ST__COUNT; i++)
        if (sqlite3_prepare_v3(st->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &st->stmts[i],
                               NULL)
            != SQLITE_OK) {
            errno = EIO;
            hu_errprintf(err, "sqlite: %s: %s", stmt_sql[i], sqlite3_errmsg(st->db));
            goto error;
        }
    for (int i = 0; i < 3; i++)
        if (sqlite3_prepare_v3(st->db, tx_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &st->tx[i], NULL)
            != SQLITE_OK) {
            errno = EIO;
            hu_errprintf(err, "sqlite: %s: %s", tx_sql[i], sqlite3_errmsg(st->db));
            goto error;
        }
    if (sqlite3_open_v2(path, &st->rdb, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL)
        != SQLITE_OK) {
        errno = EIO;
        hu_errprintf(err, "%s: %s", path, st->rdb ? sqlite3_errmsg(st->rdb) : "cannot open");
        goto error;
    }
    sqlite3_busy_timeout(st->rdb, 5000);
    free(path);
    free(lpath);
    return st;
nomem:
    errno = ENOMEM;
    hu_errprintf(err, "out of memory");
error:
    free(path);
    free(lpath);
    state_close(st);
    return NULL;
}

void state_close(state_t *st)
{
    if (!st)
        return;
    int saved = errno;
    if (st->running) {
        pthread_mutex_lock(&st->lock);
        st->stop = true;
        pthread_cond_signal(&st->cond);
        pthread_mutex_unlock(&st->lock);
        pthread_join(st->thread, NULL);
    } else if (st->db && st->pending.n && !st->failed) {
        state_flush(st, NULL);
    }
    batch_clear(&st->pending);
    free(st->pending.ops);
    free(st->inl.ops);
    for (int i = 0; i < ST__COUNT; i++)
        sqlite3_finalize(st->stmts[i]);
    for (int i = 0; i < 3; i++)
        sqlite3_finalize(st->tx[i]);
    if (st->rdb)
        sqlite3_close(st->rdb);
    if (st->db)
        sqlite3_close(st->db);
    if (st->lockfd >= 0)
        close(st->lockfd);
    pthread_mutex_destroy(&st->lock);
    pthread_mutex_destroy(&st->rlock);
    pthread_cond_destroy(&st->cond);
    pthread_cond_destroy(&st->done_cond);
    free(st->dir);
    free(st);
    errno = saved;
}

static int vquery(state_t *st, int (*row)(sqlite3_stmt *s, void *arg), void *arg, const char *sql,
                  const char *fmt, va_list ap)
{
    sqlite3_stmt *s = NULL;
    int rc;

    pthread_mutex_lock(&st->rlock);
    if ((rc = sqlite3_prepare_v2(st->rdb, sql, -1, &s, NULL)) != SQLITE_OK)
        goto error;
    rc = vbind(s, fmt ? fmt : "", ap);
    if (rc != SQLITE_OK)
        goto error;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW)
        if (row && row(s, arg))
            break;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        goto error;
    sqlite3_finalize(s);
    pthread_mutex_unlock(&st->rlock);
    return 0;
error:
    bl_error("state: query failed: %s: %s", sql, sqlite3_errmsg(st->rdb));
    sqlite3_finalize(s);
    pthread_mutex_unlock(&st->rlock);
    errno = EIO;
    return -1;
}

int state_query(state_t *st, int (*row)(sqlite3_stmt *s, void *arg), void *arg, const char *sql,
                const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vquery(st, row, arg, sql, fmt, ap);
    va_end(ap);
    return rc;
}

int state_read(state_t *st, state_read_t q, int (*row)(sqlite3_stmt *s, void *arg), void *arg,
               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vquery(st, row, arg, read_sql[q], fmt, ap);
    va_end(ap);
    return rc;
}

const char *state_read_sql(state_read_t q)
{
    return read_sql[q];
}
