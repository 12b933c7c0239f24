/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mover.c — stage-in/out copies with SFQ(D)+ between jobs (see mover.h and
 * doc/mover.md).
 *
 * A transfer goes through tasks run by the worker threads:
 *
 *   PREPARE   walk the source as the job's user (symlinks in the tree are not
 *             followed), check every file is readable, create the directories
 *             and symlinks, skip files already complete at the destination
 *   CHUNK     one chunk of one file: an SFQ(D)+ request of cost = its bytes;
 *             the first chunk of a file opens the source and creates
 *             ".<name>.harmonia-partial-<tid>" in the destination directory
 *             (the chunk of a one-chunk file also does that file's FILE work)
 *             (with verify checksum each block is read back and compared as soon
 *             as it is written)
 *   FILE      the last chunk is done: verify (size; every byte read back), check
 *             the source is unchanged, mode, owner, times; then rename into place,
 *             or (fsync'd before done) the file waits, open, in the sync queue
 *   SYNC      transfers fsync'd before done (stage-in into a persistent buffer or
 *             with mover.durable_stage_in, stage-out with durable_before_done): a
 *             batch of up to SYNC_FILES verified files: write back, fsync each,
 *             then rename each into place
 *   FINISH    every file is in place: directory attributes, fsync of directories
 *             (transfers fsync'd before done).  The transfer is then done.
 *   DURABLE   stage-outs (not durable_before_done), after done: write back and
 *             fsync every file, then every directory, of the destination; then the
 *             transfer is durable, and only then may its source be removed
 *   ABORT     failed or cancelled: close and remove the partial files
 *   RMTREE    teardown of a buffer directory
 *
 * Only CHUNK tasks go through the SFQ(D)+ queue (hs_sfq_t, guarded by m->lock);
 * the others go straight to the FIFO the workers take work from.  Dispatched
 * chunks join the same FIFO, so the order of the copies is the order SFQ(D)+
 * dispatches them in, and at most D slots of copies are in flight.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/ioprio.h>

#include "libhsched/hs_sfq.h"
#include "checksum.h"
#include "hmap.h"
#include "log.h"
#include "mover.h"
#include "util.h"

#define SLOT_BYTES (256u * 1024u)     /* SFQ(D)+ slot: depth is counted in these */
#define META_COST 4096u             /* cost charged for an empty file */
#define REPORT_BYTES (64ull << 20)  /* progress is recorded every 64 MiB ... */
#define REPORT_SECONDS 1.0          /* ... or every second */
#define MAX_GROUPS 256
#define SYNC_FILES 32               /* durable transfers: fsync in batches of files ... */
#define SYNC_BYTES (256ull << 20)   /* ... or of bytes */
#define VBLOCK (256u * 1024u)       /* checksum unit: a chunk is read, hashed, written and
                                       verified in blocks that stay in the CPU's cache */
#define DURABLE_DEFER_MAX 5.0      /* s: a done stage-out's fsyncs wait for the copies at
                                       most this long (syncer_take) */
#define BOOT_MARGIN 5               /* s: uncertainty of the boot time (quick check) */
#define STOP_WAIT 5.0               /* s: mover_destroy() waits this long for the threads,
                                       and runs teardowns this long */

typedef enum { V_CHECKSUM, V_SIZE, V_NONE } verify_t;
typedef enum {
    T_PREPARE, T_CHUNK, T_FILE, T_SYNC, T_FINISH, T_DURABLE, T_ABORT, T_RMTREE
} task_kind_t;
typedef enum { E_DIR, E_FILE, E_LINK, E_HLINK } etype_t;

typedef struct {
    uid_t uid;
    gid_t gid;
    int ngroups;
    gid_t groups[MAX_GROUPS];
} ident_t;

typedef struct {
    etype_t type;
    char *rel;                  /* relative to the roots; "" for the root itself */
    struct stat st;             /* lstat of the source at the walk */
    bool made;                  /* directory created by this transfer */
    bool skipped;               /* file already complete at the destination */
    int link_to;                /* E_HLINK: the entry (an E_FILE) it is a hard link of */
} entry_t;

typedef struct mxfer mxfer_t;
typedef struct mjob mjob_t;

typedef struct mfile {
    mxfer_t *x;
    struct mfile *next, *prev;  /* x->live */
    const entry_t *e;
    char *src, *dst, *tmp;
    uint32_t nchunks, done;     /* done: under m->lock */
    uint64_t verified;          /* bytes written and read back matching (atomic) */
    pthread_mutex_t lock;       /* opening */
    int sfd, dfd;
    bool opened;
    int open_err;
    char *open_msg;
    bool tmp_made;
    bool installed;             /* renamed into place */
    struct mfile *snext;        /* x->syncq / a T_SYNC task's batch */
} mfile_t;

typedef struct task {
    task_kind_t kind;
    struct task *next;
    mxfer_t *x;
    mfile_t *f;
    uint32_t ci;                /* chunk index */
    uint64_t off, len;
    bool ok;
    bool skipped;               /* not run: its transfer was stopping */
    bool file_done;             /* CHUNK of a one-chunk file: the FILE work was done too */
    bool to_sync;               /* FILE work done, durable: the file waits for a T_SYNC */
    mfile_t *batch;             /* T_SYNC: files to fsync and rename */
    double not_after;           /* T_DURABLE: run by then even if copies still run */
    char *msg;                  /* error, "stage_in PATH: what: strerror" */
    /* RMTREE */
    char *path;
    uid_t uid;
    gid_t gid;
    dev_t dev;                  /* the directory this teardown is for (0/0: unchecked) */
    ino_t ino;
    char *trash;                /* where it is moved before its content is removed */
    bool move_only;             /* the daemon stops: only move it (the next start removes it) */
} task_t;

struct mjob {
    char *id;
    uint64_t flow;
    double weight;
    uint64_t bytes;             /* served: chunk bytes completed */
    int nactive;                /* transfers not yet final */
    int nxfers;                 /* transfers not yet forgotten */
    bool ended;
    char *key;                  /* its key in m->jobs: the id, or once ended and a new job
                                   of the same id came, a key of its own (detached) */
    bool flow_removed;          /* its SFQ flow is gone */
    task_t *deferred;           /* RMTREE waiting for nactive == 0 */
};

struct mxfer {
    uint64_t tid;
    mjob_t *job;
    bool stage_out, directory;
    bool sync_each;             /* fsync the copies (batched) before they are renamed,
                                   and the directories before done */
    bool sync_after;            /* fsync the files and directories after done (T_DURABLE):
                                   stage-outs without durable_before_done, recoveries */
    bool resync;                /* recovery of a done stage-out (mover_spec_t) */
    bool dst_only;              /* resync whose source is gone: fsync the destination */
    double done_at;
    bool copied;                /* sync_after: every file in place, FINISH done */
    bool done_reported;         /* ... and reported (MV_DONE_SYNCING) */
    bool durable_queued, durable_done, durable_failed;
    char *src, *dst;
    char *hold;                 /* stage-out: where its source is now (teardown moves a
                                   buffer aside: mover_rebase()); under m->lock */
    char *user;
    ident_t id;
    int64_t max_bytes;          /* stage-in: refuse a source larger than this (0: none) */
    int max_entries;            /* mover.max_entries */
    hmap_t *inodes;             /* "dev:ino" -> entry + 1 of files with several links */
    entry_t *ents;
    int nents, cents;
    int *files;                 /* indices of the files to copy */
    int nfiles;
    int next_file;
    uint32_t next_chunk;
    mfile_t *cur;               /* being fed */
    mfile_t *live;              /* fed, not yet finished */
    int queued;                 /* chunks in the SFQ queue */
    int pending;                /* tasks not completed (queued ones included) */
    int files_left;
    mfile_t *syncq;             /* durable: verified files waiting for their fsync */
    int nsyncq, nsyncing;       /* files in syncq, in T_SYNC tasks */
    uint64_t syncq_bytes;
    bool prepared, finish_queued, finish_done;
    bool aborting, abort_queued, abort_done;
    bool final, cancel_reported;
    mover_state_t result;
    char *msg;
    char *note;                 /* skipped special files */
    int nspecial;
    int64_t total, done;
    int64_t rep_done;
    double rep_time;
    bool rep_total;
};

typedef struct {
    mover_t *m;
    pthread_t thr;
    unsigned char *buf;         /* a chunk (copy_file_range fallback) or a block */
    unsigned char *rbuf;        /* verify checksum: a block read back from the copy */
} worker_t;

struct mover {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    /* T_SYNC tasks are run by their own thread, so that no copying worker waits
     * for the disk in fsync (fsyncs of one file system queue on its journal anyway) */
    task_t *shead, *stail;
    pthread_cond_t scond;
    pthread_t syncer;
    bool syncer_started;
    bool stop;
    hs_sfq_t *q;
    task_t *head, *tail;        /* FIFO of runnable tasks */
    hmap_t *jobs;               /* id -> mjob_t */
    hmap_t *xfers;              /* tid -> mxfer_t */
    uint64_t next_flow;
    worker_t *w;
    int nthreads, busy;
    int wbusy;                  /* copying workers busy (busy counts the syncer too) */
    bool defer_durable;         /* T_DURABLE waits for the copies (below) */
    uint64_t chunk;
    int backlog;                /* chunks kept queued per transfer */
    verify_t verify;
    cksum_alg_t alg;
    double rate, tnext;
    bool root;                  /* can act as other users */
    bool durable_in;            /* mover.durable_stage_in */
    bool durable_out;           /* mover.durable_before_done */
    int max_entries;            /* mover.max_entries */
    task_t *rmwait;             /* RMTREE waiting for stage-outs from under its path */
    char **kept;                /* sources of stage-outs that could not be made durable:
                                   never removed */
    int nkept;
    char **pbufs;               /* "<mount>/persistent/" of every node set */
    int npbufs;
    time_t boot;                /* wall-clock time of the boot */
    ident_t self;
    mover_stats_t st;
};

/* ------------------------------------------------------------------ helpers */

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

static char *pjoin(const char *a, const char *b)
{
    if (!*b)
        return strdup(a);
    return xprintf("%s%s%s", a, a[strlen(a) - 1] == '/' ? "" : "/", b);
}

static const char *kind_name(const mxfer_t *x)
{
    return x->stage_out ? "stage_out" : "stage_in";
}

/* An error message for task t, once. */
static int tfail(task_t *t, int err, const char *path, const char *what)
{
    char eb[128];
    if (!t->msg)
        t->msg = xprintf("%s %s: %s: %s", kind_name(t->x), path, what,
                         strerror_r(err, eb, sizeof(eb)));
    t->ok = false;
    errno = err;
    return -1;
}

/* A file copied to an existing directory goes into it under its own name (as cp). */
static int dst_into_dir(task_t *t, mxfer_t *x)
{
    const char *b = strrchr(x->src, '/');
    char *nd = pjoin(x->dst, b ? b + 1 : x->src);
    if (!nd)
        return tfail(t, ENOMEM, x->dst, "path");
    free(x->dst);
    x->dst = nd;
    return 0;
}

static int tfailmsg(task_t *t, const char *path, const char *what)
{
    if (!t->msg)
        t->msg = xprintf("%s %s: %s", kind_name(t->x), path, what);
    t->ok = false;
    return -1;
}

/* The identity this thread acts as (valid: set by become() and not changed since:
 * only become() changes it), so that consecutive tasks of one user cost no syscall. */
static __thread ident_t cur_id;
static __thread bool cur_valid;

static __thread bool caps_dropped;

/* This thread's effective capabilities: none (none), or its permitted ones back.
 * Acting as a user, the thread keeps no privilege at all: setfsuid() already drops
 * those of file access, and this the others, CAP_SYS_RESOURCE first (so that the
 * user's quota and the file system's reserved blocks apply to what is written on
 * the user's behalf).  Capabilities are per thread. */
static int caps_effective(bool none)
{
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    if (syscall(SYS_capget, &h, d) < 0)
        return -1;
    for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
        d[i].effective = none ? 0 : d[i].permitted;
    if (syscall(SYS_capset, &h, d) < 0)
        return -1;
    caps_dropped = none;
    return 0;
}

static bool ident_eq(const ident_t *a, const ident_t *b)
{
    return a->uid == b->uid && a->gid == b->gid && a->ngroups == b->ngroups
           && !memcmp(a->groups, b->groups, (size_t)a->ngroups * sizeof(gid_t));
}

/* Act as id for file access (this thread only: setfsuid/setfsgid and a raw
 * setgroups, which glibc would otherwise apply to every thread). */
static int become(mover_t *m, const ident_t *id)
{
    if (!m->root) {
        if (id->uid != m->self.uid) {
            errno = EPERM;
            return -1;
        }
        return 0;
    }
    if (cur_valid && ident_eq(&cur_id, id))
        return 0;
    cur_valid = false;
    if (caps_dropped && caps_effective(false) < 0)
        return -1;
    if (syscall(SYS_setgroups, (size_t)id->ngroups, id->groups) < 0)
        return -1;
    setfsgid(id->gid);
    if ((gid_t)setfsgid((gid_t)-1) != id->gid)
        goto eperm;
    setfsuid(id->uid);
    if ((uid_t)setfsuid((uid_t)-1) != id->uid)
        goto eperm;
    if (id->uid != m->self.uid && caps_effective(true) < 0)
        return -1;
    cur_id.uid = id->uid;
    cur_id.gid = id->gid;
    cur_id.ngroups = id->ngroups;
    memcpy(cur_id.groups, id->groups, (size_t)id->ngroups * sizeof(gid_t));
    cur_valid = true;
    return 0;
eperm:
    errno = EPERM;
    return -1;
}

static void ident_user(ident_t *id, uid_t uid, gid_t gid, const char *user)
{
    char buf[4096];
    struct passwd pw, *res = NULL;
    int n = MAX_GROUPS;

    id->uid = uid;
    id->gid = gid;
    id->groups[0] = gid;
    id->ngroups = 1;
    if (user && *user)
        getpwnam_r(user, &pw, buf, sizeof(buf), &res);
    if (!res || res->pw_uid != uid)
        getpwuid_r(uid, &pw, buf, sizeof(buf), &res);
    if (res && getgrouplist(res->pw_name, gid, id->groups, &n) >= 0)
        id->ngroups = n;
}

/* ------------------------------------------------------------------ FIFO */
/* Append t to the task list head..tail and wake one thread waiting on cond. */
static void tq_push(task_t **head, task_t **tail, pthread_cond_t *cond, task_t *t)
{
    t->next = NULL;
    if (*tail)
        (*tail)->next = t;
    else
        *head = t;
    *tail = t;
    pthread_cond_signal(cond);
}

static void fifo_push(mover_t *m, task_t *t)
{
    tq_push(&m->head, &m->tail, &m->cond, t);
}

/* Take the first task of the list head..tail (NULL if empty). */
static task_t *tq_pop(task_t **head, task_t **tail)
{
    task_t *t = *head;
    if (t) {
        *head = t->next;
        if (!*head)
            *tail = NULL;
    }
    return t;
}

static task_t *fifo_pop(mover_t *m)
{
    return tq_pop(&m->head, &m->tail);
}

static void task_free(task_t *t)
{
    if (t) {
        free(t->msg);
        free(t->path);
        free(t->trash);
        free(t);
    }
}

static task_t *task_new(task_kind_t kind, mxfer_t *x)
{
    task_t *t = calloc(1, sizeof(*t));
    if (t) {
        t->kind = kind;
        t->x = x;
        t->ok = true;
    }
    return t;
}

/* ------------------------------------------------------------------ objects */
static void mfile_free(mfile_t *f)
{
    if (!f)
        return;
    free(f->src);
    free(f->dst);
    free(f->tmp);
    free(f->open_msg);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

static void live_del(mxfer_t *x, mfile_t *f)
{
    if (f->prev)
        f->prev->next = f->next;
    else
        x->live = f->next;
    if (f->next)
        f->next->prev = f->prev;
    f->next = f->prev = NULL;
}

static void xfer_free(mxfer_t *x)
{
    if (!x)
        return;
    while (x->live) {
        mfile_t *f = x->live;
        live_del(x, f);
        mfile_free(f);
    }
    for (int i = 0; i < x->nents; i++)
        free(x->ents[i].rel);
    free(x->ents);
    hmap_destroy(x->inodes);
    free(x->files);
    free(x->src);
    free(x->dst);
    free(x->hold);
    free(x->user);
    free(x->msg);
    free(x->note);
    free(x);
}

static void job_free(mjob_t *j)
{
    if (j) {
        while (j->deferred) {
            task_t *t = j->deferred;
            j->deferred = t->next;
            task_free(t);
        }
        free(j->id);
        free(j->key);
        free(j);
    }
}

/* The temporary name of a file being copied: .<name>.harmonia-partial-<tid> in its
 * destination directory (a shorter one when the name is long). */
static char *tmp_name(const char *dst, uint64_t tid, int idx)
{
    const char *slash = strrchr(dst, '/');
    const char *base = slash ? slash + 1 : dst;
    int dirlen = slash ? (int)(slash - dst) : 0;
    if (strlen(base) + 40 > NAME_MAX)
        return xprintf("%.*s/.harmonia-partial-%ju-%d", dirlen, dst, (uintmax_t)tid, idx);
    return xprintf("%.*s/.%s.harmonia-partial-%ju", dirlen, dst, base, (uintmax_t)tid);
}

/* ------------------------------------------------------------------ scheduling
 * (all under m->lock) */
static void xfer_abort(mover_t *m, mxfer_t *x, mover_state_t how, const char *msg)
{
    (void)m;
    if (x->aborting || x->final || x->finish_done)
        return;
    __atomic_store_n(&x->aborting, true, __ATOMIC_RELEASE);
    x->result = how;
    free(x->msg);
    x->msg = msg ? strdup(msg) : NULL;
}

static void feed(mover_t *m, mxfer_t *x)
{
    /* durable: at most 2 x SYNC_FILES files of x in T_SYNC tasks (each holds an open
     * file), more wait until one is done: x's own SYNC task calls feed() again */
    while (!x->aborting && x->prepared && x->queued < m->backlog && x->next_file < x->nfiles
           && x->nsyncing < 2 * SYNC_FILES) {
        const entry_t *e = &x->ents[x->files[x->next_file]];
        if (!x->cur) {
            mfile_t *f = calloc(1, sizeof(*f));
            uint64_t size = (uint64_t)e->st.st_size;
            if (!f)
                goto nomem;
            pthread_mutex_init(&f->lock, NULL);
            f->x = x;
            f->e = e;
            f->sfd = f->dfd = -1;
            f->nchunks = size ? (uint32_t)((size + m->chunk - 1) / m->chunk) : 1;
            if (!(f->src = pjoin(x->src, e->rel)) || !(f->dst = pjoin(x->dst, e->rel))
                || !(f->tmp = tmp_name(f->dst, x->tid, x->files[x->next_file]))) {
                mfile_free(f);
                goto nomem;
            }
            f->next = x->live;
            if (x->live)
                x->live->prev = f;
            x->live = f;
            x->cur = f;
        }
        mfile_t *f = x->cur;
        task_t *t = task_new(T_CHUNK, x);
        if (!t)
            goto nomem;
        uint64_t size = (uint64_t)e->st.st_size;
        t->f = f;
        t->ci = x->next_chunk;
        t->off = (uint64_t)t->ci * m->chunk;
        t->len = size > t->off ? size - t->off : 0;
        if (t->len > m->chunk)
            t->len = m->chunk;
        if (hs_sfq_enqueue(m->q, x->job->flow, (uint64_t)(uintptr_t)t,
                           t->len < META_COST ? META_COST : t->len) < 0) {
            char *msg = xprintf("%s: scheduler: %s", kind_name(x), strerror(errno));
            task_free(t);
            xfer_abort(m, x, MV_FAILED, msg);
            free(msg);
            return;
        }
        x->queued++;
        x->pending++;
        if (++x->next_chunk == f->nchunks) {
            x->cur = NULL;
            x->next_chunk = 0;
            x->next_file++;
        }
    }
    return;
nomem:
    xfer_abort(m, x, MV_FAILED, "out of memory");
}

static void dispatch(mover_t *m)
{
    hs_sfq_req_t r;
    while (hs_sfq_dispatch(m->q, &r) == 1) {
        task_t *t = (task_t *)(uintptr_t)r.id;
        t->x->queued--;
        if (r.backfilled)
            m->st.backfills++;
        fifo_push(m, t);
        feed(m, t->x);
    }
}

/* A stage-out needs its source while it copies, and until it is durable: a crash
 * before then makes the next start copy again from it. */
static bool holds_source(const mxfer_t *x)
{
    return x->stage_out && !x->aborting && !x->final;
}

/* The teardown t runs now (FIFO), waits in m->rmwait while a stage-out holds a
 * source under its path, or never runs if a stage-out from under its path could
 * not be made durable (its data may exist only there). */
static void rm_release(mover_t *m, task_t *t)
{
    void *v;
    for (int i = 0; i < m->nkept; i++)
        if (util_path_under(m->kept[i], t->path)) {
            bl_warning("teardown: %s is kept: the stage-out from %s could not be made "
                       "durable (remove it by hand once the data is safe)", t->path,
                       m->kept[i]);
            task_free(t);
            return;
        }
    for (void *it = hmap_first(m->xfers, &v); it; it = hmap_next(m->xfers, it, &v)) {
        const mxfer_t *x = v;
        const char *src = x->hold ? x->hold : x->src;
        if (holds_source(x) && (util_path_under(src, t->path) || util_path_under(t->path, src))) {
            bl_debug("teardown: %s waits for stage-out %ju to be durable", t->path,
                     (uintmax_t)x->tid);
            t->next = m->rmwait;
            m->rmwait = t;
            return;
        }
    }
    fifo_push(m, t);
}

static void rm_recheck(mover_t *m)
{
    task_t *l = m->rmwait;
    m->rmwait = NULL;
    while (l) {
        task_t *t = l;
        l = t->next;
        rm_release(m, t);
    }
}

static void job_release_deferred(mover_t *m, mjob_t *j)
{
    while (j->deferred) {
        task_t *t = j->deferred;
        j->deferred = t->next;
        rm_release(m, t);
    }
}

/* Decide what comes next for x after any change. */
static void xfer_check(mover_t *m, mxfer_t *x)
{
    if (x->final)
        return;
    if (x->aborting) {
        if (x->pending > 0)
            return;
        if (!x->abort_queued) {
            task_t *t = task_new(T_ABORT, x);
            if (t) {
                x->abort_queued = true;
                x->pending++;
                fifo_push(m, t);
                return;
            }
            /* no memory even for that: leave partial files to the next start */
        } else if (!x->abort_done) {
            return;
        }
    } else {
        if (!x->prepared || x->next_file < x->nfiles || x->files_left > 0)
            return;
        if (!x->finish_queued) {
            task_t *t = task_new(T_FINISH, x);
            if (!t) {
                xfer_abort(m, x, MV_FAILED, "out of memory");
                xfer_check(m, x);
                return;
            }
            x->finish_queued = true;
            x->pending++;
            fifo_push(m, t);
            return;
        }
        if (!x->finish_done || x->pending > 0)
            return;
        if (x->sync_after) {
            /* done: every file is complete, verified and in place; now the fsyncs */
            if (!x->durable_queued) {
                task_t *t = task_new(T_DURABLE, x);
                if (!t) {
                    x->durable_failed = true;
                    free(x->msg);
                    x->msg = strdup("out of memory");
                } else {
                    x->copied = true;
                    if (!x->resync)
                        m->st.done++;
                    x->durable_queued = true;
                    x->pending++;
                    t->not_after = hu_mono() + DURABLE_DEFER_MAX;
                    tq_push(&m->shead, &m->stail, &m->scond, t);
                    return;
                }
            }
            if (!x->durable_done && !x->durable_failed)
                return;     /* (stopped: left to the next start) */
            x->result = x->durable_done ? MV_DONE : MV_FAILED;
        } else {
            x->result = MV_DONE;
        }
    }
    x->final = true;
    if (x->result == MV_DONE) {
        if (!x->sync_after)
            m->st.done++;
    } else if (x->result == MV_FAILED) {
        m->st.failed++;
    } else {
        m->st.cancelled++;
    }
    if (x->result != MV_DONE && x->stage_out && (x->copied || x->resync)) {
        /* the copy was done, but may not be on disk: its source stays */
        char **v = realloc(m->kept, (size_t)(m->nkept + 1) * sizeof(char *));
        if (v && (v[m->nkept] = strdup(x->hold ? x->hold : x->src))) {
            m->kept = v;
            m->nkept++;
        } else if (v) {
            m->kept = v;
        }
    }
    if (--x->job->nactive == 0)
        job_release_deferred(m, x->job);
    rm_recheck(m);
}

/* A file is finished (installed under its final name, or failed and removed). */
static void file_gone(mover_t *m, mxfer_t *x, mfile_t *f, bool ok)
{
    live_del(x, f);
    mfile_free(f);
    x->files_left--;
    if (ok)
        m->st.files++;
}

/* Durable transfers: the verified files waiting for their fsync go to a T_SYNC task
 * once there are SYNC_FILES of them or SYNC_BYTES, or when force. */
static void syncq_flush(mover_t *m, mxfer_t *x, bool force)
{
    if (!x->syncq || x->aborting)
        return;     /* aborting: they are in x->live, ABORT removes them */
    if (!force && x->nsyncq < SYNC_FILES && x->syncq_bytes < SYNC_BYTES)
        return;
    task_t *t = task_new(T_SYNC, x);
    if (!t) {
        xfer_abort(m, x, MV_FAILED, "out of memory");
        return;
    }
    t->batch = x->syncq;
    x->nsyncing += x->nsyncq;
    x->syncq = NULL;
    x->nsyncq = 0;
    x->syncq_bytes = 0;
    x->pending++;
    tq_push(&m->shead, &m->stail, &m->scond, t);
}

/* The FILE work of f was done by t (a T_FILE, or the T_CHUNK of a one-chunk file). */
static void file_ready(mover_t *m, mxfer_t *x, mfile_t *f, task_t *t)
{
    if (!t->to_sync) {
        file_gone(m, x, f, t->ok);
        return;
    }
    f->snext = x->syncq;
    x->syncq = f;
    x->nsyncq++;
    x->syncq_bytes += (uint64_t)f->e->st.st_size;
    syncq_flush(m, x, false);
}

/* Called with m->lock held once t has run. */
static void task_done(mover_t *m, task_t *t)
{
    mxfer_t *x = t->x;
    mfile_t *f = t->f;

    switch (t->kind) {
    case T_RMTREE:
        task_free(t);
        return;
    case T_PREPARE:
        if (t->ok) {
            x->prepared = true;
            x->files_left = x->nfiles;
        }
        break;
    case T_CHUNK:
        hs_sfq_complete(m->q, (uint64_t)(uintptr_t)t);
        f->done++;
        if (t->ok && !t->skipped && t->len) {
            x->done += (int64_t)t->len;
            x->job->bytes += t->len;
            m->st.bytes += t->len;
        }
        m->st.chunks++;
        if (t->file_done) {
            file_ready(m, x, f, t);     /* a one-chunk file, finished in the same task */
        } else if (t->ok && f->done == f->nchunks && !x->aborting) {
            task_t *ft = task_new(T_FILE, x);
            if (!ft) {
                t->ok = false;
                t->msg = t->msg ? t->msg : strdup("out of memory");
            } else {
                ft->f = f;
                x->pending++;
                fifo_push(m, ft);
            }
        }
        break;
    case T_FILE:
        file_ready(m, x, f, t);
        break;
    case T_SYNC:
        while (t->batch) {
            mfile_t *b = t->batch;
            t->batch = b->snext;
            x->nsyncing--;
            file_gone(m, x, b, b->installed);
        }
        break;
    case T_FINISH:
        if (t->ok)
            x->finish_done = true;
        break;
    case T_DURABLE:
        if (t->skipped)
            break;      /* stopped: the next start makes it durable */
        if (t->ok) {
            x->durable_done = true;
        } else {
            x->durable_failed = true;
            free(x->msg);
            x->msg = t->msg ? strdup(t->msg) : NULL;
        }
        break;
    case T_ABORT:
        x->abort_done = true;
        break;
    }
    if (!t->ok)
        xfer_abort(m, x, MV_FAILED, t->msg ? t->msg : "failed");
    x->pending--;
    task_free(t);
    feed(m, x);
    dispatch(m);
    /* every file is fed and none is still being copied or verified: sync the rest */
    if (x->syncq && x->next_file == x->nfiles && x->files_left == x->nsyncq + x->nsyncing)
        syncq_flush(m, x, true);
    xfer_check(m, x);
}

/* ------------------------------------------------------------------ PREPARE */
static int ents_add(mxfer_t *x, etype_t type, const char *rel, const struct stat *st)
{
    if (x->nents == x->cents) {
        int n = x->cents ? x->cents * 2 : 64;
        entry_t *v = realloc(x->ents, (size_t)n * sizeof(entry_t));
        if (!v)
            return -1;
        x->ents = v;
        x->cents = n;
    }
    entry_t *e = &x->ents[x->nents];
    memset(e, 0, sizeof(*e));
    if (!(e->rel = strdup(rel)))
        return -1;
    e->type = type;
    e->st = *st;
    x->nents++;
    return 0;
}

static int note_special(mxfer_t *x, const char *path)
{
    if (x->nspecial++ == 0) {
        free(x->note);
        x->note = strdup(path);
    }
    return 0;
}

/* A file with several links: the entry of its first name in the tree (then this one
 * is made a hard link of it, as cp -a does), or -1 (it is the first: noted). */
static int hlink_of(mxfer_t *x, const struct stat *st)
{
    char key[48];
    snprintf(key, sizeof(key), "%jx:%jx", (uintmax_t)st->st_dev, (uintmax_t)st->st_ino);
    if (!x->inodes && !(x->inodes = hmap_create()))
        return -1;
    intptr_t v = (intptr_t)hmap_get(x->inodes, key);
    if (v)
        return (int)v - 1;
    hmap_put(x->inodes, key, (void *)(intptr_t)(x->nents + 1));
    return -1;
}

/* Walk the tree at root (the source; the destination for a recovery whose source
 * is gone) from rel. */
static int walk_dir(task_t *t, const char *root, const char *rel)
{
    mxfer_t *x = t->x;
    char *dpath = pjoin(root, rel);
    DIR *d = NULL;
    struct dirent *de;
    int rc = -1;

    if (!dpath)
        return tfail(t, ENOMEM, root, "walk");
    if (!(d = opendir(dpath))) {
        tfail(t, errno, dpath, "open directory");
        goto out;
    }
    for (;;) {
        errno = 0;
        if (!(de = readdir(d))) {
            if (errno) {
                tfail(t, errno, dpath, "read directory");
                goto out;
            }
            break;
        }
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char *crel = *rel ? xprintf("%s/%s", rel, de->d_name) : strdup(de->d_name);
        char *cpath = crel ? pjoin(root, crel) : NULL;
        struct stat st;
        int r = 0;
        if (!crel || !cpath) {
            free(crel);
            free(cpath);
            tfail(t, ENOMEM, dpath, "walk");
            goto out;
        }
        if (x->max_entries > 0 && x->nents >= x->max_entries) {
            char what[96];
            snprintf(what, sizeof(what), "more than %d entries (mover.max_entries): refused",
                     x->max_entries);
            r = tfailmsg(t, x->src, what);
        } else if (lstat(cpath, &st) < 0)
            r = tfail(t, errno, cpath, "stat");
        else if (S_ISDIR(st.st_mode))
            r = ents_add(x, E_DIR, crel, &st) < 0 ? tfail(t, ENOMEM, cpath, "walk")
                                                  : walk_dir(t, root, crel);
        else if (S_ISREG(st.st_mode)) {
            int first = st.st_nlink > 1 ? hlink_of(x, &st) : -1;
            if (faccessat(AT_FDCWD, cpath, R_OK, AT_EACCESS) < 0)
                r = tfail(t, errno, cpath, "not readable by the job's user");
            else if (ents_add(x, first >= 0 ? E_HLINK : E_FILE, crel, &st) < 0)
                r = tfail(t, ENOMEM, cpath, "walk");
            else if (first >= 0)
                x->ents[x->nents - 1].link_to = first;
        } else if (S_ISLNK(st.st_mode)) {
            if (ents_add(x, E_LINK, crel, &st) < 0)
                r = tfail(t, ENOMEM, cpath, "walk");
        } else {
            note_special(x, cpath);
        }
        free(crel);
        free(cpath);
        if (r < 0)
            goto out;
        if (__atomic_load_n(&x->aborting, __ATOMIC_ACQUIRE))
            goto out;
    }
    rc = 0;
out:
    if (d)
        closedir(d);
    free(dpath);
    return rc;
}

/* mkdir -p of the parents of path, as the current user (mode 0755). */
static int mkparents(task_t *t, const char *path)
{
    char *p = strdup(path);
    if (!p)
        return tfail(t, ENOMEM, path, "mkdir");
    for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        if (mkdir(p, 0755) < 0 && errno != EEXIST) {
            tfail(t, errno, p, "mkdir");
            free(p);
            return -1;
        }
        *s = '/';
    }
    free(p);
    return 0;
}

static int make_dir(task_t *t, entry_t *e, const char *path)
{
    struct stat st;
    if (mkdir(path, 0700) == 0) {
        e->made = true;
        return 0;
    }
    if (errno != EEXIST)
        return tfail(t, errno, path, "mkdir");
    if (lstat(path, &st) < 0)
        return tfail(t, errno, path, "stat");
    if (!S_ISDIR(st.st_mode))
        return tfailmsg(t, path, "exists and is not a directory");
    return 0;
}

/* have: the current owner when known (NULL: unknown), to skip a chown that
 * would change nothing */
static void set_owner(mxfer_t *x, const entry_t *e, int fd, const char *path, int flags,
                      const struct stat *have)
{
    uid_t uid = x->stage_out ? e->st.st_uid : x->id.uid;
    gid_t gid = x->stage_out ? e->st.st_gid : x->id.gid;
    if (have && have->st_uid == uid && have->st_gid == gid)
        return;
    int rc = fd >= 0 ? fchown(fd, uid, gid) : fchownat(AT_FDCWD, path, uid, gid, flags);
    /* stage-out as the user: a buffer file owned by someone else stays the user's */
    if (rc < 0 && errno != EPERM)
        bl_debug("mover: transfer %ju: chown %s: %s", (uintmax_t)x->tid, path, strerror(errno));
}

static int make_link(task_t *t, const entry_t *e, const char *src, const char *dst)
{
    char target[PATH_MAX + 1], have[PATH_MAX + 1];
    ssize_t n = readlink(src, target, PATH_MAX), h;
    struct timespec ts[2] = { e->st.st_atim, e->st.st_mtim };
    char *tmp;

    if (n < 0)
        return tfail(t, errno, src, "readlink");
    target[n] = '\0';
    h = readlink(dst, have, PATH_MAX);
    if (h == n && !memcmp(have, target, (size_t)n))
        return 0;   /* already there */
    if (!(tmp = tmp_name(dst, t->x->tid, -1)))
        return tfail(t, ENOMEM, dst, "symlink");
    unlink(tmp);
    if (symlink(target, tmp) < 0) {
        tfail(t, errno, dst, "symlink");
        free(tmp);
        return -1;
    }
    set_owner(t->x, e, -1, tmp, AT_SYMLINK_NOFOLLOW, NULL);
    utimensat(AT_FDCWD, tmp, ts, AT_SYMLINK_NOFOLLOW);
    if (rename(tmp, dst) < 0) {
        tfail(t, errno, dst, "rename");
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

/* A complete copy from an earlier run (a restart): a final name only ever holds a
 * verified copy whose mtime was set from the source last, so the same size, mtime
 * and mode mean the same content (the quick check rsync makes).  A copy is renamed
 * before its fsync unless the transfer is fsync'd before done, so it is trusted
 * only if its inode changed after the boot (ctime): a copy whose data a crash of
 * the machine may have lost is made again.  (After a crash of bbmgrd alone the
 * page cache still holds what the kernel did not write yet.) */
static bool already_there(const mover_t *m, const entry_t *e, const char *dst)
{
    struct stat st;
    return lstat(dst, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == e->st.st_size
           && st.st_ctim.tv_sec > m->boot + BOOT_MARGIN
           && st.st_mtim.tv_sec == e->st.st_mtim.tv_sec
           && st.st_mtim.tv_nsec == e->st.st_mtim.tv_nsec
           && (st.st_mode & 07777) == (e->st.st_mode & 07777);
}

/* A recovery whose source is gone (same boot): walk the destination; nothing is
 * copied, T_DURABLE fsyncs what is there. */
static int prepare_dst_only(mover_t *m, task_t *t)
{
    mxfer_t *x = t->x;
    struct stat st;
    int64_t total = 0;

    bl_warning("mover: transfer %ju: recovery: %s is gone; the destination %s, written in "
               "this boot, is made durable as it is", (uintmax_t)x->tid, x->src, x->dst);
    x->dst_only = true;
    if (stat(x->dst, &st) < 0)
        return tfail(t, errno, x->dst, "stat");
    if (S_ISDIR(st.st_mode) && !x->directory) {
        if (dst_into_dir(t, x) < 0)
            return -1;
        if (stat(x->dst, &st) < 0)
            return tfail(t, errno, x->dst, "stat");
    }
    if (ents_add(x, S_ISDIR(st.st_mode) ? E_DIR : E_FILE, "", &st) < 0)
        return tfail(t, ENOMEM, x->dst, "walk");
    if (S_ISDIR(st.st_mode) && walk_dir(t, x->dst, "") < 0)
        return -1;
    for (int i = 0; i < x->nents; i++)
        if (x->ents[i].type == E_FILE)
            total += x->ents[i].st.st_size;
    x->nspecial = 0;
    pthread_mutex_lock(&m->lock);
    x->total = total;
    x->done = total;
    pthread_mutex_unlock(&m->lock);
    return 0;
}

static int run_prepare(mover_t *m, task_t *t)
{
    mxfer_t *x = t->x;
    struct stat st;
    int64_t total = 0, skipped = 0;

    ident_user(&x->id, x->id.uid, x->id.gid, x->user);
    if (become(m, &x->id) < 0)
        return tfailmsg(t, x->src, m->root ? "cannot act as the job's user"
                                           : "bbmgrd is not root: cannot act as the job's user");
    if (stat(x->src, &st) < 0) {
        if (!x->resync || errno != ENOENT)
            return tfail(t, errno, x->src, "stat");
        /* a recovery whose source is gone: the page cache of this boot still has
         * what the copy wrote, so the destination as it is can be made durable;
         * after a reboot it may have lost data, and nothing can tell */
        if (!(x->done_at > (double)(m->boot + BOOT_MARGIN)))
            return tfailmsg(t, x->src, "gone, and the machine restarted since the stage-out "
                                       "was done: its copy cannot be checked");
        return prepare_dst_only(m, t);
    }
    if (x->directory) {
        if (!S_ISDIR(st.st_mode))
            return tfailmsg(t, x->src, "not a directory (type is directory)");
        if (ents_add(x, E_DIR, "", &st) < 0)
            return tfail(t, ENOMEM, x->src, "walk");
        if (walk_dir(t, x->src, "") < 0)
            return -1;
    } else {
        struct stat dst;
        if (!S_ISREG(st.st_mode))
            return tfailmsg(t, x->src, S_ISDIR(st.st_mode)
                                           ? "is a directory (use type=directory)"
                                           : "not a regular file");
        if (faccessat(AT_FDCWD, x->src, R_OK, AT_EACCESS) < 0)
            return tfail(t, errno, x->src, "not readable by the job's user");
        if (stat(x->dst, &dst) == 0 && S_ISDIR(dst.st_mode) && dst_into_dir(t, x) < 0)
            return -1;
        if (ents_add(x, E_FILE, "", &st) < 0)
            return tfail(t, ENOMEM, x->src, "walk");
    }
    if (x->max_bytes > 0) {
        /* the copy writes every byte of the source's size (holes included): a
         * source larger than the buffer would only fill it for everyone on it */
        int64_t size = 0;
        for (int i = 0; i < x->nents; i++)
            if (x->ents[i].type == E_FILE)
                size += x->ents[i].st.st_size;
        if (size > x->max_bytes) {
            char what[160];
            snprintf(what, sizeof(what), "%jd bytes, more than the capacity of the buffer "
                     "(%jd bytes): refused", (intmax_t)size, (intmax_t)x->max_bytes);
            return tfailmsg(t, x->src, what);
        }
    }
    if (__atomic_load_n(&x->aborting, __ATOMIC_ACQUIRE))
        return 0;
    if (mkparents(t, x->dst) < 0)
        return -1;
    if (!(x->files = calloc((size_t)x->nents + 1, sizeof(int))))
        return tfail(t, ENOMEM, x->src, "walk");
    for (int i = 0; i < x->nents; i++) {
        entry_t *e = &x->ents[i];
        char *s = pjoin(x->src, e->rel), *d = pjoin(x->dst, e->rel);
        int r = 0;
        if (!s || !d)
            r = tfail(t, ENOMEM, x->src, "path");
        else if (e->type == E_DIR)
            r = make_dir(t, e, d);
        else if (e->type == E_LINK)
            r = make_link(t, e, s, d);
        else if (e->type == E_HLINK)
            r = 0;      /* at FINISH, once its first name is in place */
        else {
            total += e->st.st_size;
            if ((e->skipped = already_there(m, e, d)))
                skipped += e->st.st_size;
            else
                x->files[x->nfiles++] = i;
        }
        free(s);
        free(d);
        if (r < 0)
            return -1;
    }
    pthread_mutex_lock(&m->lock);
    x->total = total;
    x->done += skipped;
    pthread_mutex_unlock(&m->lock);
    if (skipped)
        bl_info("mover: transfer %ju: %jd bytes already complete at the destination (skipped)",
                (uintmax_t)x->tid, (intmax_t)skipped);
    return 0;
}

/* ------------------------------------------------------------------ CHUNK */
/*
 * Open path for reading only if it is a regular file, and (want) the one the walk
 * saw: a FIFO, socket or device put there by the user since is never opened (an open
 * may block, or act on a device), a symlink never followed.  The path is first
 * opened O_PATH (which opens nothing), checked with fstat, then reopened through
 * /proc/self/fd (the same inode, whatever the path is now); O_NONBLOCK in any case.
 * -1 with errno; ENODEV: not a regular file, ESTALE: not the file the walk saw.
 */
static int open_regular(const char *path, const struct stat *want)
{
    struct stat st;
    char proc[64];
    int fd, e;
    int pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0)
        return -1;
    if (fstat(pfd, &st) < 0)
        goto fail;
    if (!S_ISREG(st.st_mode)) {
        errno = ENODEV;
        goto fail;
    }
    if (want && (st.st_ino != want->st_ino || st.st_dev != want->st_dev)) {
        errno = ESTALE;
        goto fail;
    }
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
    fd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)      /* no /proc: by the path again, checked below */
        fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
    e = errno;
    close(pfd);
    if (fd < 0) {
        errno = e;
        return -1;
    }
    struct stat now;
    if (fstat(fd, &now) < 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
        close(fd);
        errno = ESTALE;
        return -1;
    }
    return fd;
fail:
    e = errno;
    close(pfd);
    errno = e;
    return -1;
}

static int file_open(mover_t *m, task_t *t, mfile_t *f)
{
    struct stat st;
    int rc = 0;
    (void)m;
    pthread_mutex_lock(&f->lock);
    if (f->opened) {
        if (f->open_err) {
            t->msg = f->open_msg ? strdup(f->open_msg) : NULL;
            t->ok = false;
            rc = -1;
        }
        goto out;
    }
    f->opened = true;
    if ((f->sfd = open_regular(f->src, &f->e->st)) < 0) {
        rc = errno == ENODEV || errno == ESTALE
                 ? tfailmsg(t, f->src, "replaced during the transfer (not the file the walk saw)")
                 : tfail(t, errno, f->src, "open");
        goto fail;
    }
    if (fstat(f->sfd, &st) < 0) {
        rc = tfail(t, errno, f->src, "stat");
        goto fail;
    }
    if (!S_ISREG(st.st_mode) || st.st_ino != f->e->st.st_ino || st.st_dev != f->e->st.st_dev) {
        rc = tfailmsg(t, f->src, "replaced during the transfer");
        goto fail;
    }
    posix_fadvise(f->sfd, 0, 0, POSIX_FADV_SEQUENTIAL);
    /* a stale partial file (of a run cut by a crash) is removed first */
    for (int tries = 0;; tries++) {
        f->dfd = open(f->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (f->dfd >= 0)
            break;
        if (errno != EEXIST || tries > 0) {
            rc = tfail(t, errno, f->dst, "create");
            goto fail;
        }
        if (unlink(f->tmp) < 0 && errno != ENOENT) {
            rc = tfail(t, errno, f->tmp, "remove a stale partial file");
            goto fail;
        }
    }
    f->tmp_made = true;
    goto out;
fail:
    f->open_err = errno ? errno : EIO;
    f->open_msg = t->msg ? strdup(t->msg) : NULL;
out:
    pthread_mutex_unlock(&f->lock);
    return rc;
}

static void throttle(mover_t *m, uint64_t len)
{
    double start;
    if (!(m->rate > 0) || !len)
        return;
    pthread_mutex_lock(&m->lock);
    double now = hu_mono();
    start = m->tnext > now ? m->tnext : now;
    m->tnext = start + (double)len / m->rate;
    pthread_mutex_unlock(&m->lock);
    double d = start - now;
    if (d > 0) {
        struct timespec ts = { (time_t)d, (long)((d - floor(d)) * 1e9) };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
}

static int read_full(int fd, unsigned char *buf, uint64_t len, uint64_t off)
{
    uint64_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) {
            errno = ENODATA;    /* the source shrank */
            return -1;
        }
        got += (uint64_t)n;
    }
    return 0;
}

static int write_full(int fd, const unsigned char *buf, uint64_t len, uint64_t off)
{
    uint64_t put = 0;
    while (put < len) {
        ssize_t n = pwrite(fd, buf + put, len - put, (off_t)(off + put));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        put += (uint64_t)n;
    }
    return 0;
}

/* Start writing the chunk back now (without waiting), so that the fsync before the
 * rename finds little left to write: the device writes while the next chunks are
 * read, as a streaming copy would. */
static void start_writeback(int fd, uint64_t off, uint64_t len)
{
    sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
}

static int file_complete(mover_t *m, task_t *t);
static void file_cleanup(mfile_t *f);

/* A chunk that is all hole in the source: not written (the copy keeps the hole;
 * file_complete() gives the copy its size). */
static bool chunk_is_hole(const mfile_t *f, const task_t *t)
{
    if ((uint64_t)f->e->st.st_blocks * 512 >= (uint64_t)f->e->st.st_size)
        return false;   /* not sparse */
    off_t data = lseek(f->sfd, (off_t)t->off, SEEK_DATA);
    return (data < 0 && errno == ENXIO) || (data >= 0 && (uint64_t)data >= t->off + t->len);
}

static int copy_chunk(mover_t *m, worker_t *w, task_t *t)
{
    mfile_t *f = t->f;
    mxfer_t *x = t->x;

    if (chunk_is_hole(f, t)) {
        __atomic_add_fetch(&f->verified, t->len, __ATOMIC_RELAXED);
        return 0;
    }

    if (m->verify == V_CHECKSUM) {
        /* the whole chunk is read ahead at once: the blocks are read in small
         * preads, and the chunks of one file read by several workers at once would
         * defeat the kernel's sequential read-ahead */
        if (t->len > VBLOCK)
            posix_fadvise(f->sfd, (off_t)t->off, (off_t)t->len, POSIX_FADV_WILLNEED);
        for (uint64_t done = 0; done < t->len; done += VBLOCK) {
            uint64_t off = t->off + done, len = t->len - done < VBLOCK ? t->len - done : VBLOCK;
            if (read_full(f->sfd, w->buf, len, off) < 0)
                return tfail(t, errno, f->src, errno == ENODATA ? "shrank during the transfer"
                                                                : "read");
            uint64_t sum = cksum(m->alg, w->buf, len);
            if (write_full(f->dfd, w->buf, len, off) < 0)
                return tfail(t, errno, f->dst, "write");
            /* read the block back from the copy at the offset it was meant for, while
             * the data is still in the CPU's cache, into a buffer of its own */
            if (read_full(f->dfd, w->rbuf, len, off) < 0)
                return tfail(t, errno == ENODATA ? EIO : errno, f->dst, "read back");
            if (cksum(m->alg, w->rbuf, len) != sum) {
                char what[96];
                snprintf(what, sizeof(what), "checksum mismatch at offset %ju", (uintmax_t)off);
                return tfailmsg(t, f->dst, what);
            }
            __atomic_add_fetch(&f->verified, len, __ATOMIC_RELAXED);
        }
    } else {
        /* no checksum to compute: let the kernel copy */
        loff_t in = (loff_t)t->off, out = (loff_t)t->off;
        uint64_t left = t->len;
        while (left > 0) {
            ssize_t n = copy_file_range(f->sfd, &in, f->dfd, &out, left, 0);
            if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS
                          || errno == EOPNOTSUPP)) {
                uint64_t off = (uint64_t)in;
                if (read_full(f->sfd, w->buf, left, off) < 0)
                    return tfail(t, errno, f->src, "read");
                if (write_full(f->dfd, w->buf, left, off) < 0)
                    return tfail(t, errno, f->dst, "write");
                break;
            }
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                return tfail(t, errno, f->dst, "copy");
            }
            if (n == 0)
                return tfail(t, ENODATA, f->src, "shrank during the transfer");
            left -= (uint64_t)n;
        }
    }
    /* fsync'd before done: start writing back now, so that the device writes while
     * the next chunks are read and the fsync finds little left to do */
    if (x->sync_each)
        start_writeback(f->dfd, t->off, t->len);
    return 0;
}

static int run_chunk(mover_t *m, worker_t *w, task_t *t)
{
    mfile_t *f = t->f;
    mxfer_t *x = t->x;

    if (__atomic_load_n(&x->aborting, __ATOMIC_ACQUIRE)) {
        t->skipped = true;
        return 0;
    }
    if (become(m, &x->id) < 0)
        return tfail(t, errno, f->src, "act as the job's user");
    if (file_open(m, t, f) < 0)
        return -1;
    if (t->len) {
        throttle(m, t->len);
        if (__atomic_load_n(&x->aborting, __ATOMIC_ACQUIRE)) {
            t->skipped = true;
            return 0;
        }
        if (copy_chunk(m, w, t) < 0)
            return -1;
    }
    if (f->nchunks == 1) {
        /* a small file: its FILE work here, without another hand-off */
        t->file_done = true;
        if (file_complete(m, t) < 0) {
            file_cleanup(f);
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ FILE */
static void file_cleanup(mfile_t *f)
{
    if (f->dfd >= 0)
        close(f->dfd);
    if (f->sfd >= 0)
        close(f->sfd);
    f->dfd = f->sfd = -1;
    if (f->tmp_made && unlink(f->tmp) < 0 && errno != ENOENT)
        bl_warning("mover: cannot remove the partial file %s: %s", f->tmp, strerror(errno));
    f->tmp_made = false;
}

/* Verify the copy once every chunk is written: its size (verify size and
 * checksum), and with verify checksum that every byte was read back and matched
 * (each block was, right after its write: copy_chunk()).  st: fstat of the copy. */
static int verify_copy(mover_t *m, task_t *t, mfile_t *f, const struct stat *st)
{
    const entry_t *e = f->e;

    if (m->verify == V_NONE)
        return 0;
    if (st->st_size != e->st.st_size)
        return tfailmsg(t, f->dst, "size of the copy differs from the source");
    if (m->verify == V_CHECKSUM
        && __atomic_load_n(&f->verified, __ATOMIC_RELAXED) != (uint64_t)e->st.st_size)
        return tfailmsg(t, f->dst, "not every block of the copy was verified");
    return 0;
}

/* Close the copy and give it its final name. */
static int file_install(task_t *t, mfile_t *f)
{
    int rc = close(f->dfd);
    f->dfd = -1;
    if (rc < 0)
        return tfail(t, errno, f->dst, "close");
    if (rename(f->tmp, f->dst) < 0)
        return tfail(t, errno, f->dst, "rename");
    f->tmp_made = false;
    f->installed = true;
    return 0;
}

/* Every chunk of f is written: verify, check the source is unchanged, owner, mode,
 * times.  Not durable: close and rename into place.  Durable: the file stays open
 * under its temporary name for a T_SYNC (fsync, then rename). */
static int file_complete(mover_t *m, task_t *t)
{
    mfile_t *f = t->f;
    mxfer_t *x = t->x;
    const entry_t *e = f->e;
    struct stat st, dst;
    struct timespec ts[2] = { e->st.st_atim, e->st.st_mtim };

    if (fstat(f->dfd, &dst) < 0)
        return tfail(t, errno, f->dst, "stat");
    if (dst.st_size < e->st.st_size) {
        /* trailing chunks that were holes */
        if (ftruncate(f->dfd, e->st.st_size) < 0 || fstat(f->dfd, &dst) < 0)
            return tfail(t, errno, f->dst, "set size");
    }
    if (verify_copy(m, t, f, &dst) < 0)
        return -1;
    if (fstat(f->sfd, &st) < 0)
        return tfail(t, errno, f->src, "stat");
    if (st.st_size != e->st.st_size || st.st_mtim.tv_sec != e->st.st_mtim.tv_sec
        || st.st_mtim.tv_nsec != e->st.st_mtim.tv_nsec)
        return tfailmsg(t, f->src, "changed during the transfer");
    set_owner(x, e, f->dfd, f->dst, 0, &dst);
    /* (after the chown, which clears set-user-ID and set-group-ID bits) */
    if ((dst.st_mode & 07777) != (e->st.st_mode & 07777)
        && fchmod(f->dfd, e->st.st_mode & 07777) < 0)
        return tfail(t, errno, f->dst, "chmod");
    if (futimens(f->dfd, ts) < 0)
        return tfail(t, errno, f->dst, "set times");
    close(f->sfd);
    f->sfd = -1;
    if (x->sync_each) {
        t->to_sync = true;
        return 0;
    }
    return file_install(t, f);
}

static int run_file(mover_t *m, task_t *t)
{
    mfile_t *f = t->f;
    mxfer_t *x = t->x;

    if (become(m, &x->id) < 0) {
        tfail(t, errno, f->src, "act as the job's user");
        goto fail;
    }
    if (__atomic_load_n(&x->aborting, __ATOMIC_ACQUIRE))
        goto fail;
    if (file_complete(m, t) < 0)
        goto fail;
    return 0;
fail:
    t->to_sync = false;
    file_cleanup(f);
    return t->ok ? 0 : -1;
}

/* ------------------------------------------------------------------ SYNC */
/* A batch of verified files of a durable transfer: write back the data of all of
 * them, then fsync each (after the first, the journal commit has usually covered
 * the others), then rename each into place.  No file gets its final name before
 * its data and attributes are on disk. */
static int run_sync(mover_t *m, task_t *t)
{
    mxfer_t *x = t->x;
    mfile_t *f;

    if (become(m, &x->id) < 0) {
        tfail(t, errno, x->dst, "act as the job's user");
        goto fail;
    }
    if (__atomic_load_n(&x->aborting, __ATOMIC_ACQUIRE))
        goto fail;
    for (f = t->batch; f; f = f->snext)
        sync_file_range(f->dfd, 0, 0, SYNC_FILE_RANGE_WRITE);
    for (f = t->batch; f; f = f->snext)
        sync_file_range(f->dfd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE
                                          | SYNC_FILE_RANGE_WAIT_AFTER);
    for (f = t->batch; f; f = f->snext)
        if (fsync(f->dfd) < 0) {
            tfail(t, errno, f->dst, "fsync");
            goto fail;
        }
    for (f = t->batch; f; f = f->snext)
        if (file_install(t, f) < 0)
            goto fail;
    return 0;
fail:
    /* the files not yet renamed are removed; renamed ones are complete and durable */
    for (f = t->batch; f; f = f->snext)
        file_cleanup(f);
    return t->ok ? 0 : -1;
}

/* ------------------------------------------------------------------ FINISH, DURABLE, ABORT */
/* Open a file or directory of the destination to fsync it, as the job's user (the
 * calling thread acts as x->id).  -1 with errno when it cannot be opened, or with
 * ENODEV when a file is no longer a regular file.  A directory the user made
 * unreadable is opened by the daemon: opening one has no side effect. */
static int sync_open(mover_t *m, mxfer_t *x, const char *path, bool dir)
{
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (dir ? O_DIRECTORY : 0);
    int fd = dir ? open(path, flags) : open_regular(path, NULL);
    if (fd < 0 && dir && errno == EACCES && become(m, &m->self) == 0) {
        fd = open(path, flags);
        int e = errno;
        if (become(m, &x->id) < 0 && fd >= 0) {
            close(fd);
            fd = -1;
            e = EPERM;
        }
        errno = e;
    }
    if (fd >= 0 && !dir) {
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            errno = ENODEV;
            return -1;
        }
    }
    return fd;
}

/* The user may remove, replace or lock away their own copy once it is done: then
 * there is nothing of ours left to make durable at that path. */
static bool changed_by_user(int err)
{
    return err == ENOENT || err == ENOTDIR || err == ELOOP || err == EACCES || err == EPERM
           || err == ENODEV || err == ESTALE;
}

/* fsync path (a file, or a directory: dir).  0 when done or nothing to do (changed
 * by the user); -1 (tfail) when the fsync failed. */
static int sync_path(mover_t *m, task_t *t, const char *path, bool dir)
{
    int fd = sync_open(m, t->x, path, dir);
    if (fd < 0) {
        if (changed_by_user(errno)) {
            bl_debug("mover: transfer %ju: not fsync'd, changed since the copy: %s: %s",
                     (uintmax_t)t->x->tid, path, strerror(errno));
            return 0;
        }
        return tfail(t, errno, path, "open to fsync");
    }
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    return rc < 0 ? tfail(t, e, path, "fsync") : 0;
}

/* fsync of the entry e of x at the destination. */
static int sync_entry(mover_t *m, task_t *t, const entry_t *e)
{
    char *p = pjoin(t->x->dst, e->rel);
    int rc = p ? sync_path(m, t, p, e->type == E_DIR) : tfail(t, ENOMEM, t->x->dst, "path");
    free(p);
    return rc;
}

/* fsync of the directory that holds dst (the transfer's top entry). */
static int sync_parent(mover_t *m, task_t *t, const char *dst)
{
    char *parent = strdup(dst), *s;
    int rc = 0;
    if (!parent)
        return tfail(t, ENOMEM, dst, "path");
    if ((s = strrchr(parent, '/'))) {
        s[s == parent ? 1 : 0] = '\0';
        rc = sync_path(m, t, parent, true);
    }
    free(parent);
    return rc;
}

/* The hard link e of the tree, to its first name (in place by now). */
static int make_hlink(task_t *t, const entry_t *e)
{
    mxfer_t *x = t->x;
    char *to = pjoin(x->dst, x->ents[e->link_to].rel), *d = pjoin(x->dst, e->rel);
    struct stat a, b;
    int rc = 0;
    if (!to || !d) {
        rc = tfail(t, ENOMEM, x->dst, "path");
    } else if (link(to, d) < 0) {
        if (errno != EEXIST)
            rc = tfail(t, errno, d, "link");
        else if (lstat(to, &a) < 0 || lstat(d, &b) < 0 || a.st_ino != b.st_ino
                 || a.st_dev != b.st_dev) {
            /* another file under that name (an earlier run): replaced */
            char *tmp = tmp_name(d, x->tid, -2);
            if (!tmp || (unlink(tmp), link(to, tmp)) < 0 || rename(tmp, d) < 0)
                rc = tfail(t, tmp ? errno : ENOMEM, d, "link");
            if (tmp && rc < 0)
                unlink(tmp);
            free(tmp);
        }
    }
    free(to);
    free(d);
    return rc;
}

static int run_finish(mover_t *m, task_t *t)
{
    mxfer_t *x = t->x;
    if (become(m, &x->id) < 0)
        return tfail(t, errno, x->dst, "act as the job's user");
    if (x->dst_only)
        return 0;       /* a recovery of the destination alone: nothing to set */
    for (int i = 0; i < x->nents; i++)
        if (x->ents[i].type == E_HLINK && make_hlink(t, &x->ents[i]) < 0)
            return -1;
    /* fsync'd before done: files found complete at the start (a restart) were not
     * copied now, and a run without fsync may have written them */
    for (int i = 0; x->sync_each && i < x->nents; i++) {
        entry_t *e = &x->ents[i];
        if (e->type == E_FILE && e->skipped && sync_entry(m, t, e) < 0)
            return -1;
    }
    /* directories, deepest first; the root only if this transfer created it */
    for (int i = x->nents - 1; i >= 0; i--) {
        entry_t *e = &x->ents[i];
        if (e->type != E_DIR)
            continue;
        bool attrs = *e->rel || e->made;
        if (!attrs && !x->sync_each)
            continue;
        char *d = pjoin(x->dst, e->rel);
        struct timespec ts[2] = { e->st.st_atim, e->st.st_mtim };
        if (!d)
            return tfail(t, ENOMEM, x->dst, "path");
        if (attrs) {
            set_owner(x, e, -1, d, AT_SYMLINK_NOFOLLOW, NULL);
            if (fchmodat(AT_FDCWD, d, e->st.st_mode & 07777, 0) < 0
                || utimensat(AT_FDCWD, d, ts, AT_SYMLINK_NOFOLLOW) < 0) {
                tfail(t, errno, d, "set attributes");
                free(d);
                return -1;
            }
        }
        int rc = x->sync_each ? sync_path(m, t, d, true) : 0;
        free(d);
        if (rc < 0)
            return -1;
    }
    return x->sync_each ? sync_parent(m, t, x->dst) : 0;
}

/* A stage-out is done (every file verified and under its final name): make it
 * durable.  1. Start the write-back of every file, so that the device has the whole
 * tree queued; 2. wait for the data of each (an error here is an fsync error: the
 * kernel reports a write-back error once); 3. fsync each file: the first one
 * commits the journal, which by then covers the others, so that one commit serves
 * the tree instead of one per file; 4. fsync each directory, deepest first, and
 * the destination's parent: the renames.  Files are reopened by their path (as the
 * job's user, never following a symlink), so no descriptor is held from the copy
 * to here.  Stops between files when the mover stops (the next start makes the
 * transfer durable). */
static int run_durable(mover_t *m, task_t *t)
{
    mxfer_t *x = t->x;
    int nfiles = 0, ndirs = 0;
    double t0 = hu_mono(), tp[3];

    if (become(m, &x->id) < 0)
        return tfail(t, errno, x->dst, "act as the job's user");
    for (int pass = 0; pass < 3; pass++) {
        for (int i = 0; i < x->nents; i++) {
            entry_t *e = &x->ents[i];
            if (e->type != E_FILE)
                continue;
            if (__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
                t->skipped = true;
                return 0;
            }
            char *f = pjoin(x->dst, e->rel);
            int rc = 0, fd;
            if (!f)
                return tfail(t, ENOMEM, x->dst, "path");
            if (pass == 2) {
                rc = sync_path(m, t, f, false);
                nfiles++;
            } else if ((fd = sync_open(m, x, f, false)) >= 0) {
                /* pass 0 takes no error: the next passes report them */
                if (pass == 0)
                    sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
                else if (sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE
                                                       | SYNC_FILE_RANGE_WRITE
                                                       | SYNC_FILE_RANGE_WAIT_AFTER) < 0)
                    rc = tfail(t, errno, f, "write back");
                close(fd);
            }
            free(f);
            if (rc < 0)
                return -1;
        }
        tp[pass] = hu_mono();
    }
    for (int i = x->nents - 1; i >= 0; i--) {
        entry_t *e = &x->ents[i];
        if (e->type != E_DIR)
            continue;
        if (sync_entry(m, t, e) < 0)
            return -1;
        ndirs++;
    }
    if (sync_parent(m, t, x->dst) < 0)
        return -1;
    double t1 = hu_mono();
    bl_debug("mover: transfer %ju durable: %d files and %d directories fsync'd in %.3f s "
             "(write-back started %.3f s, data written %.3f s, files fsync'd %.3f s, "
             "directories %.3f s)", (uintmax_t)x->tid, nfiles, ndirs + 1, t1 - t0,
             tp[0] - t0, tp[1] - tp[0], tp[2] - tp[1], t1 - tp[2]);
    return 0;
}

static void run_abort(mover_t *m, task_t *t)
{
    mxfer_t *x = t->x;
    if (become(m, &x->id) < 0)
        become(m, &m->self);
    for (mfile_t *f = x->live; f; f = f->next)
        file_cleanup(f);
}

/* ------------------------------------------------------------------ RMTREE */
/* Directories of the tree become writable by their owner, so that read-only ones
 * copied from the PFS can be emptied. */
static int rm_prep(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag == FTW_D && (st->st_mode & 0300) != 0300)
        chmod(path, (st->st_mode & 07777) | 0700);
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    if (ftw->level == 0)
        return 0;   /* the directory itself: by the daemon, after */
    if ((flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT)
        bl_warning("teardown: remove %s: %s", path, strerror(errno));
    return 0;
}

static void run_rmtree(mover_t *m, task_t *t)
{
    ident_t id = { .uid = t->uid, .gid = t->gid, .ngroups = 1, .groups = { t->gid } };
    struct stat st;
    bool ours = false;
    const char *dir = t->path;
    become(m, &m->self);
    /* first moved aside to a name of its own, under m->lock (mover_aside() moves
     * directories under it too): a new buffer may take the name at once, and nothing
     * below ever reaches it */
    pthread_mutex_lock(&m->lock);
    if (lstat(t->path, &st) == 0 && S_ISDIR(st.st_mode)) {
        ours = !(t->dev || t->ino) || (st.st_dev == t->dev && st.st_ino == t->ino);
        if (!ours)
            bl_warning("teardown: %s is no longer the directory it was for (inode %ju, now "
                       "%ju): left alone", t->path, (uintmax_t)t->ino, (uintmax_t)st.st_ino);
        else if (t->trash && strcmp(t->path, t->trash)) {
            if (rename(t->path, t->trash) < 0) {
                bl_warning("teardown: move %s to %s: %s (removed in place)", t->path, t->trash,
                           strerror(errno));
            } else {
                dir = t->trash;
            }
        }
    }
    pthread_mutex_unlock(&m->lock);
    if (!ours || (t->move_only && dir != t->path))
        return;
    /* the content as its owner (never following a symlink the user may plant),
     * the directory itself, in the daemon's mount directory, as the daemon */
    if (become(m, &id) < 0)
        become(m, &m->self);
    nftw(dir, rm_prep, 32, FTW_PHYS | FTW_MOUNT);
    nftw(dir, rm_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    become(m, &m->self);
    if (rmdir(dir) < 0 && errno != ENOENT)
        bl_warning("teardown: remove %s: %s", dir, strerror(errno));
    else if (dir != t->path)
        bl_debug("teardown: removed %s (moved to %s first)", t->path, dir);
    else
        bl_debug("teardown: removed %s", t->path);
}

/* ------------------------------------------------------------------ workers */
static void task_run(mover_t *m, worker_t *w, task_t *t)
{
    switch (t->kind) {
    case T_PREPARE: run_prepare(m, t); break;
    case T_CHUNK: run_chunk(m, w, t); break;
    case T_FILE: run_file(m, t); break;
    case T_SYNC: run_sync(m, t); break;     /* (not reached: the syncer runs them) */
    case T_DURABLE: run_durable(m, t); break;   /* (same) */
    case T_FINISH: run_finish(m, t); break;
    case T_ABORT: run_abort(m, t); break;
    case T_RMTREE: run_rmtree(m, t); break;
    }
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    mover_t *m = w->m;

    pthread_mutex_lock(&m->lock);
    for (;;) {
        while (!m->stop && !m->head)
            pthread_cond_wait(&m->cond, &m->lock);
        if (m->stop)
            break;
        task_t *t = fifo_pop(m);
        m->busy++;
        m->wbusy++;
        pthread_mutex_unlock(&m->lock);
        task_run(m, w, t);
        pthread_mutex_lock(&m->lock);
        m->busy--;
        m->wbusy--;
        task_done(m, t);
    }
    pthread_mutex_unlock(&m->lock);
    become(m, &m->self);
    return NULL;
}

/*
 * The syncer's next task (lock held), or NULL and how long to wait for one.  The
 * write-back that makes a done stage-out durable (T_DURABLE) would compete for the
 * disk with the copies still running, and nothing waits for it but the teardown of
 * the buffer it was read from: it waits while copies run, at most
 * DURABLE_DEFER_MAX seconds after it was queued (then it runs, at idle I/O
 * priority).  A T_SYNC gates a transfer's done and never waits.
 */
static task_t *syncer_take(mover_t *m, double *wait)
{
    bool copying = m->defer_durable && (m->head || m->wbusy > 0);
    double now = copying ? hu_mono() : 0;
    task_t *prev = NULL, *t;

    *wait = 0.05;
    for (t = m->shead; t; prev = t, t = t->next) {
        if (t->kind != T_DURABLE || !copying || now >= t->not_after)
            break;
        if (t->not_after - now < *wait)
            *wait = t->not_after - now;
    }
    if (!t)
        return NULL;
    if (prev)
        prev->next = t->next;
    else
        m->shead = t->next;
    if (m->stail == t)
        m->stail = prev;
    t->next = NULL;
    return t;
}

static void *syncer_main(void *arg)
{
    mover_t *m = arg;
    task_t *t = NULL;
    double wait;

    pthread_mutex_lock(&m->lock);
    for (;;) {
        while (!m->stop && !(t = syncer_take(m, &wait))) {
            if (!m->shead) {
                pthread_cond_wait(&m->scond, &m->lock);
            } else {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                double d = ts.tv_nsec * 1e-9 + fmax(wait, 0.001);
                ts.tv_sec += (time_t)d;
                ts.tv_nsec = (long)((d - floor(d)) * 1e9);
                pthread_cond_timedwait(&m->scond, &m->lock, &ts);
            }
        }
        if (m->stop)
            break;
        m->busy++;
        pthread_mutex_unlock(&m->lock);
        if (t->kind == T_DURABLE) {
            /* the write-back of done stage-outs yields the disk to the copies still
             * running: I/O class idle for this thread (bios take the class of the
             * thread that submits them).  Not forever: mq-deadline serves a waiting
             * request after prio_aging_expire (10 s), BFQ the idle class every
             * 200 ms; 'none' ignores classes. */
            syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
                    IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0));
            run_durable(m, t);
            syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
                    IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, IOPRIO_NORM));
        } else {
            run_sync(m, t);
        }
        pthread_mutex_lock(&m->lock);
        m->busy--;
        task_done(m, t);
    }
    pthread_mutex_unlock(&m->lock);
    become(m, &m->self);
    return NULL;
}

static void drop_cb(uint64_t id, uint64_t cost, void *arg)
{
    task_t *t = (task_t *)(uintptr_t)id;
    (void)cost;
    (void)arg;
    t->x->queued--;
    t->x->pending--;
    task_free(t);
}

/* ------------------------------------------------------------------ API */
mover_t *mover_create(const cfg_t *cfg, hu_error_t *err)
{
    mover_t *m = calloc(1, sizeof(*m));
    hs_sfq_params_t prm;

    if (!m) {
        hu_errprintf(err, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&m->lock, NULL);
    pthread_cond_init(&m->cond, NULL);
    pthread_cond_init(&m->scond, NULL);
    m->chunk = cfg->mover_chunk;
    m->verify = !strcmp(cfg->mover_verify, "checksum") ? V_CHECKSUM
                : !strcmp(cfg->mover_verify, "size") ? V_SIZE : V_NONE;
    if (cksum_parse(cfg->mover_checksum, &m->alg) < 0) {
        hu_errprintf(err, "mover.checksum: unknown algorithm %s", cfg->mover_checksum);
        goto error;
    }
    if (cksum_selftest() < 0) {
        hu_errprintf(err, "mover: the checksum self-test failed (miscompiled?)");
        goto error;
    }
    m->rate = cfg->mover_max_rate;
    m->durable_in = cfg->mover_durable_stage_in;
    m->durable_out = cfg->mover_durable_before_done;
    m->max_entries = cfg->mover_max_entries > INT_MAX / 2 ? INT_MAX / 2 : (int)cfg->mover_max_entries;
    const char *dd = getenv("BBMGRD_DEFER_DURABLE");   /* 0: for A/B runs */
    m->defer_durable = !(dd && *dd == '0');
    {
        struct timespec rt, bt;
        clock_gettime(CLOCK_REALTIME, &rt);
        clock_gettime(CLOCK_BOOTTIME, &bt);
        m->boot = rt.tv_sec - bt.tv_sec;
    }
    /* persistent buffers outlive the job: a stage-in into one is always durable
     * (one prefix per node: a mount may hold %n, the node's name) */
    int nnames = 0;
    for (int i = 0; i < cfg->nnodes; i++)
        nnames += cfg->nodes[i].names.n;
    if (nnames > 0 && !(m->pbufs = calloc((size_t)nnames, sizeof(char *)))) {
        hu_errprintf(err, "out of memory");
        goto error;
    }
    for (int i = 0; i < cfg->nnodes; i++)
        for (int k = 0; k < cfg->nodes[i].names.n; k++) {
            char *mnt = cfg_node_mount(cfg->nodes[i].mount ? cfg->nodes[i].mount : "",
                                       cfg->nodes[i].names.v[k]);
            size_t n = mnt ? strlen(mnt) : 0;
            while (n > 1 && mnt[n - 1] == '/')
                n--;
            if (!mnt || !(m->pbufs[m->npbufs++] = xprintf("%.*s/persistent/", (int)n, mnt))) {
                free(mnt);
                hu_errprintf(err, "out of memory");
                goto error;
            }
            free(mnt);
        }
    m->root = geteuid() == 0;
    m->self.uid = geteuid();
    m->self.gid = getegid();
    int n = getgroups(MAX_GROUPS, m->self.groups);
    m->self.ngroups = n > 0 ? n : 0;
    m->next_flow = 1;
    /* SFQ(D)+: D slots of 256 KiB; keep several times the in-flight chunks queued
     * per transfer so that a backlogged job keeps its share */
    hs_sfq_params_init(&prm, HS_SFQ_D_PLUS);
    prm.depth = (unsigned int)cfg->mover_depth;
    prm.slot_bytes = SLOT_BYTES;
    prm.bf_limit = prm.depth;
    uint64_t inflight = ((uint64_t)prm.depth * SLOT_BYTES + m->chunk - 1) / m->chunk;
    m->backlog = (int)(inflight * 2 < 4 ? 4 : inflight * 2 > 256 ? 256 : inflight * 2);
    if (!(m->q = hs_sfq_create(&prm)) || !(m->jobs = hmap_create())
        || !(m->xfers = hmap_create())) {
        hu_errprintf(err, "mover: %s", strerror(errno));
        goto error;
    }
    m->nthreads = (int)cfg->mover_threads;
    if (!(m->w = calloc((size_t)m->nthreads, sizeof(worker_t)))) {
        hu_errprintf(err, "out of memory");
        goto error;
    }
    for (int i = 0; i < m->nthreads; i++) {
        m->w[i].m = m;
        if (posix_memalign((void **)&m->w[i].buf, 4096, m->chunk) != 0
            || (m->verify == V_CHECKSUM
                && posix_memalign((void **)&m->w[i].rbuf, 4096, VBLOCK) != 0)) {
            hu_errprintf(err, "mover: out of memory for %d buffers of %ju bytes", m->nthreads,
                         (uintmax_t)m->chunk);
            goto error;
        }
    }
    for (int i = 0; i < m->nthreads; i++) {
        int rc = pthread_create(&m->w[i].thr, NULL, worker_main, &m->w[i]);
        if (rc != 0) {
            m->nthreads = i;
            errno = rc;
            hu_errprintf(err, "mover: cannot start worker threads: %s", strerror(rc));
            goto error;
        }
    }
    {
        int rc = pthread_create(&m->syncer, NULL, syncer_main, m);
        if (rc != 0) {
            errno = rc;
            hu_errprintf(err, "mover: cannot start the sync thread: %s", strerror(rc));
            goto error;
        }
        m->syncer_started = true;
    }
    if (!m->root)
        bl_warning("mover: bbmgrd is not root: it can only move data of its own user (uid %u)",
                   (unsigned)m->self.uid);
    if (m->verify == V_CHECKSUM && !strcmp(cksum_impl(m->alg), "crc32c-sw"))
        bl_warning("mover: this CPU has no CRC-32C instruction: crc32c runs in software, "
                   "several times slower than mover.checksum: xxh64");
    bl_info("mover: %d threads, chunk %ju, SFQ(D)+ depth %u x %u KiB, verify %s (%s), "
            "stage-in into job buffers %s, stage-out fsync'd %s done%s",
            m->nthreads, (uintmax_t)m->chunk, prm.depth, SLOT_BYTES / 1024, cfg->mover_verify,
            cksum_impl(m->alg), m->durable_in ? "fsync'd" : "not fsync'd",
            m->durable_out ? "before" : "after", m->rate > 0 ? ", rate capped" : "");
    return m;
error:
    mover_destroy(m);
    return NULL;
}

/* pthread_join, giving up at the monotonic time until: -1 then. */
static int join_until(pthread_t thr, double until)
{
    struct timespec ts;
    double d = until - hu_mono();
    clock_gettime(CLOCK_REALTIME, &ts);
    d = (d > 0 ? d : 0) + ts.tv_nsec * 1e-9;
    ts.tv_sec += (time_t)d;
    ts.tv_nsec = (long)((d - floor(d)) * 1e9);
    return pthread_timedjoin_np(thr, NULL, &ts) == 0 ? 0 : -1;
}

void mover_destroy(mover_t *m)
{
    if (!m)
        return;
    int saved = errno;
    void *v;
    pthread_mutex_lock(&m->lock);
    m->stop = true;
    pthread_cond_broadcast(&m->cond);
    pthread_cond_broadcast(&m->scond);
    pthread_mutex_unlock(&m->lock);
    /* each worker finishes its current task; one stuck in a system call (a file
     * system that does not answer) is not waited for beyond STOP_WAIT: the daemon
     * then stops without tidying up here (what it leaves is done at the next start) */
    double until = hu_mono() + STOP_WAIT;
    int stuck = 0;
    for (int i = 0; m->w && i < m->nthreads; i++)
        stuck += join_until(m->w[i].thr, until) < 0;
    if (m->syncer_started)
        stuck += join_until(m->syncer, until) < 0;
    if (stuck) {
        bl_error("mover: %d thread(s) did not stop within %.0f s (stuck in a system call): "
                 "not waited for", stuck, STOP_WAIT);
        errno = saved;
        return;
    }
    /* queued T_SYNC tasks: their files are in their transfers' live lists; queued
     * T_DURABLE tasks: their transfers stay done and not durable in the database,
     * and the next start makes them durable */
    while (m->shead) {
        task_t *t = m->shead;
        m->shead = t->next;
        task_free(t);
    }
    /* the workers are gone: tidy up in this thread */
    if (m->jobs)
        for (void *it = hmap_first(m->jobs, &v); it; it = hmap_next(m->jobs, it, &v))
            if (!((mjob_t *)v)->flow_removed)
                hs_sfq_flow_remove(m->q, ((mjob_t *)v)->flow, drop_cb, NULL);
    task_t *t;
    while ((t = fifo_pop(m))) {
        if (t->kind == T_RMTREE) {
            t->move_only = hu_mono() > until;
            run_rmtree(m, t);
        }
        task_free(t);
    }
    /* teardowns still waiting: those a stage-out to be made durable holds are left
     * to the next start (its recovery removes them once the copy is durable) */
    if (m->jobs)
        for (void *it = hmap_first(m->jobs, &v); it; it = hmap_next(m->jobs, it, &v)) {
            mjob_t *j = v;
            while (j->deferred) {
                t = j->deferred;
                j->deferred = t->next;
                rm_release(m, t);
            }
        }
    while ((t = m->rmwait)) {
        m->rmwait = t->next;
        bl_info("teardown of %s left to the next start: a stage-out from it is not durable yet",
                t->path);
        task_free(t);
    }
    while ((t = fifo_pop(m))) {
        t->move_only = hu_mono() > until;
        run_rmtree(m, t);
        task_free(t);
    }
    if (m->xfers)
        for (void *it = hmap_first(m->xfers, &v); it; it = hmap_next(m->xfers, it, &v)) {
            mxfer_t *x = v;
            task_t ab = { .kind = T_ABORT, .x = x, .ok = true };
            run_abort(m, &ab);
            xfer_free(x);
        }
    become(m, &m->self);
    if (m->jobs)
        for (void *it = hmap_first(m->jobs, &v); it; it = hmap_next(m->jobs, it, &v))
            job_free(v);
    hmap_destroy(m->xfers);
    hmap_destroy(m->jobs);
    /* queued/outstanding chunk tasks were freed with the FIFO or belong to freed
     * transfers' SFQ entries: the SFQ object holds only ids */
    hs_sfq_destroy(m->q);
    for (int i = 0; m->w && i < m->nthreads; i++) {
        free(m->w[i].buf);
        free(m->w[i].rbuf);
    }
    free(m->w);
    for (int i = 0; i < m->npbufs; i++)
        free(m->pbufs[i]);
    free(m->pbufs);
    for (int i = 0; i < m->nkept; i++)
        free(m->kept[i]);
    free(m->kept);
    pthread_cond_destroy(&m->cond);
    pthread_cond_destroy(&m->scond);
    pthread_mutex_destroy(&m->lock);
    free(m);
    errno = saved;
}

/* An ended job whose transfers are all forgotten. */
static void job_forget(mover_t *m, mjob_t *j)
{
    job_release_deferred(m, j);
    if (!j->flow_removed)
        hs_sfq_flow_remove(m->q, j->flow, NULL, NULL);
    hmap_del(m->jobs, j->key ? j->key : j->id);
    job_free(j);
}

static mjob_t *job_get(mover_t *m, const char *id, double weight)
{
    mjob_t *j = hmap_get(m->jobs, id);
    if (j && !j->ended)
        return j;
    if (j) {
        /* a new job with the id of an ended one (a requeued Slurm job): a flow and
         * teardowns of its own; the old one lives on, under a key of its own, through
         * its transfers until they are forgotten */
        char *key = xprintf("\001%ju", (uintmax_t)j->flow);
        if (!key || hmap_put(m->jobs, key, j) < 0) {
            free(key);
            errno = ENOMEM;
            return NULL;
        }
        hmap_del(m->jobs, id);
        free(j->key);
        j->key = key;
        j = NULL;
    }
    if (!(j = calloc(1, sizeof(*j))) || !(j->id = strdup(id)))
        goto nomem;
    j->flow = m->next_flow++;
    j->weight = weight > 0 && isfinite(weight) ? weight : 1.0;
    if (hs_sfq_flow_add(m->q, j->flow, j->weight) < 0)
        goto nomem;
    if (hmap_put(m->jobs, j->id, j) < 0) {
        hs_sfq_flow_remove(m->q, j->flow, NULL, NULL);
        goto nomem;
    }
    return j;
nomem:
    job_free(j);
    errno = ENOMEM;
    return NULL;
}

int mover_submit(mover_t *m, const mover_spec_t *spec)
{
    mxfer_t *x = calloc(1, sizeof(*x));
    task_t *t = NULL;
    if (!x || !(x->src = strdup(spec->src)) || !(x->dst = strdup(spec->dst))
        || (spec->stage_out && !(x->hold = strdup(spec->src)))
        || (spec->user && !(x->user = strdup(spec->user))) || !(t = task_new(T_PREPARE, x)))
        goto nomem;
    /* no trailing slashes */
    for (size_t n = strlen(x->src); n > 1 && x->src[n - 1] == '/'; n--)
        x->src[n - 1] = '\0';
    for (size_t n = strlen(x->dst); n > 1 && x->dst[n - 1] == '/'; n--)
        x->dst[n - 1] = '\0';
    for (size_t n = x->hold ? strlen(x->hold) : 0; n > 1 && x->hold[n - 1] == '/'; n--)
        x->hold[n - 1] = '\0';
    x->max_bytes = spec->stage_out ? 0 : spec->max_bytes;
    x->max_entries = m->max_entries;
    x->tid = spec->tid;
    x->stage_out = spec->stage_out;
    x->directory = spec->directory;
    x->id.uid = spec->uid;
    x->id.gid = spec->gid;
    x->resync = x->stage_out && spec->resync;
    x->done_at = spec->done_at;
    /* stage-outs: fsync'd after done unless durable_before_done (and always after
     * done for a recovery); stage-ins: before done into a persistent buffer, or
     * with durable_stage_in, else not at all */
    x->sync_each = x->stage_out ? m->durable_out && !x->resync : m->durable_in;
    for (int i = 0; !x->stage_out && !x->sync_each && i < m->npbufs; i++) {
        size_t n = strlen(m->pbufs[i]);
        x->sync_each = !strncmp(x->dst, m->pbufs[i], n)
                       || (!strncmp(x->dst, m->pbufs[i], n - 1) && !x->dst[n - 1]);
    }
    x->sync_after = x->stage_out && !x->sync_each;
    x->total = -1;
    x->rep_time = hu_mono();
    pthread_mutex_lock(&m->lock);
    if (hmap_iget(m->xfers, x->tid)) {
        pthread_mutex_unlock(&m->lock);
        xfer_free(x);
        task_free(t);
        errno = EEXIST;
        return -1;
    }
    mjob_t *j = job_get(m, spec->job, spec->weight);
    if (!j || hmap_iput(m->xfers, x->tid, x) < 0) {
        pthread_mutex_unlock(&m->lock);
        goto nomem;
    }
    x->job = j;
    j->nactive++;
    j->nxfers++;
    x->pending++;
    fifo_push(m, t);
    pthread_mutex_unlock(&m->lock);
    bl_debug("mover: transfer %ju of job %s: %s%s %s -> %s (weight %.3g, %s)",
             (uintmax_t)x->tid, spec->job, x->resync ? "recovery of " : "", kind_name(x), x->src,
             x->dst, j->weight, x->sync_each    ? "fsync'd before done"
                                : x->sync_after ? "fsync'd after done"
                                                : "not fsync'd");
    return 0;
nomem:
    xfer_free(x);
    task_free(t);
    errno = ENOMEM;
    return -1;
}

bool mover_has(mover_t *m, uint64_t tid)
{
    pthread_mutex_lock(&m->lock);
    bool has = hmap_iget(m->xfers, tid) != NULL;
    pthread_mutex_unlock(&m->lock);
    return has;
}

void mover_cancel(mover_t *m, uint64_t tid, const char *why)
{
    pthread_mutex_lock(&m->lock);
    mxfer_t *x = hmap_iget(m->xfers, tid);
    if (x) {
        xfer_abort(m, x, MV_CANCELLED, why);
        xfer_check(m, x);
    }
    pthread_mutex_unlock(&m->lock);
}

void mover_job_end(mover_t *m, const char *job)
{
    void *v;
    pthread_mutex_lock(&m->lock);
    mjob_t *j = hmap_get(m->jobs, job);
    if (!j) {
        pthread_mutex_unlock(&m->lock);
        return;
    }
    bool keep = false;
    for (void *it = hmap_first(m->xfers, &v); it; it = hmap_next(m->xfers, it, &v)) {
        mxfer_t *x = v;
        if (x->job != j)
            continue;
        /* a recovery goes on (the job's buffer waits for it); so do the fsyncs of a
         * done stage-out (xfer_abort() leaves a done transfer alone) */
        if (x->resync)
            keep = keep || !x->finish_done;
        else
            xfer_abort(m, x, MV_CANCELLED, "job ended");
    }
    /* queued chunks go now; outstanding ones finish their chunk and stop (a
     * recovery still copying keeps the flow until the job is forgotten: the chunks
     * of the others are dropped as they come) */
    if (!keep && !j->flow_removed) {
        hs_sfq_flow_remove(m->q, j->flow, drop_cb, NULL);
        j->flow_removed = true;
    }
    j->ended = true;
    for (void *it = hmap_first(m->xfers, &v); it; it = hmap_next(m->xfers, it, &v))
        if (((mxfer_t *)v)->job == j)
            xfer_check(m, v);
    dispatch(m);
    if (j->nxfers == 0)
        job_forget(m, j);
    pthread_mutex_unlock(&m->lock);
}

void mover_set_weight(mover_t *m, const char *job, double weight)
{
    if (!(weight > 0) || !isfinite(weight))
        return;
    pthread_mutex_lock(&m->lock);
    mjob_t *j = hmap_get(m->jobs, job);
    if (j && !j->ended && j->weight != weight) {
        if (hs_sfq_flow_set_weight(m->q, j->flow, weight) == 0) {
            bl_debug("mover: job %s weight %.3g -> %.3g", job, j->weight, weight);
            j->weight = weight;
        }
    }
    pthread_mutex_unlock(&m->lock);
}

int mover_rmtree(mover_t *m, const char *job, const char *path, const char *trash, uid_t uid,
                 gid_t gid, dev_t dev, ino_t ino)
{
    task_t *t = task_new(T_RMTREE, NULL);
    if (!t || !(t->path = strdup(path)) || (trash && !(t->trash = strdup(trash)))) {
        task_free(t);
        errno = ENOMEM;
        return -1;
    }
    t->uid = uid;
    t->gid = gid;
    t->dev = dev;
    t->ino = ino;
    pthread_mutex_lock(&m->lock);
    mjob_t *j = job ? hmap_get(m->jobs, job) : NULL;
    if (j && j->nactive > 0) {
        t->next = j->deferred;
        j->deferred = t;
    } else {
        rm_release(m, t);
    }
    pthread_mutex_unlock(&m->lock);
    return 0;
}

int mover_unkeep(mover_t *m, const char *path)
{
    int k = 0, n;
    pthread_mutex_lock(&m->lock);
    for (int i = 0; i < m->nkept; i++) {
        if (util_path_under(m->kept[i], path)) {
            bl_info("mover: %s is no longer kept (released)", m->kept[i]);
            free(m->kept[i]);
        } else {
            m->kept[k++] = m->kept[i];
        }
    }
    n = m->nkept - k;
    m->nkept = k;
    pthread_mutex_unlock(&m->lock);
    return n;
}

/* Replace the prefix from by to in p (a copy), or NULL when p is not under from. */
static char *rebased(const char *p, const char *from, const char *to)
{
    return util_path_under(p, from) ? xprintf("%s%s", to, p + strlen(from)) : NULL;
}

/* (m->lock held) a teardown of 'from' is now one of 'to' */
static void rm_rebase(task_t *l, const char *from, const char *to, bool fifo)
{
    for (task_t *t = l; t; t = t->next) {
        char *n;
        if ((fifo && t->kind != T_RMTREE) || strcmp(t->path, from) || !(n = strdup(to)))
            continue;
        free(t->path);
        t->path = n;
    }
}

int mover_aside(mover_t *m, const char *from, const char *to)
{
    void *v;
    pthread_mutex_lock(&m->lock);
    if (rename(from, to) < 0) {
        int e = errno;
        pthread_mutex_unlock(&m->lock);
        errno = e;
        return -1;
    }
    rm_rebase(m->head, from, to, true);
    rm_rebase(m->rmwait, from, to, false);
    for (void *it = hmap_first(m->jobs, &v); it; it = hmap_next(m->jobs, it, &v))
        rm_rebase(((mjob_t *)v)->deferred, from, to, false);
    for (void *it = hmap_first(m->xfers, &v); it; it = hmap_next(m->xfers, it, &v)) {
        mxfer_t *x = v;
        char *n = x->hold ? rebased(x->hold, from, to) : NULL;
        if (n) {
            free(x->hold);
            x->hold = n;
        }
    }
    for (int i = 0; i < m->nkept; i++) {
        char *n = rebased(m->kept[i], from, to);
        if (n) {
            free(m->kept[i]);
            m->kept[i] = n;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return 0;
}

void mover_poll(mover_t *m, mover_report_f cb, void *arg)
{
    double now = hu_mono();
    void *v;
    mxfer_t *gone[64];
    int ngone = 0;

    pthread_mutex_lock(&m->lock);
    for (void *it = hmap_first(m->xfers, &v); it; it = hmap_next(m->xfers, it, &v)) {
        mxfer_t *x = v;
        const char *job = x->job->id;
        char *note = NULL;
        if ((x->copied || (x->final && x->result == MV_DONE)) && x->nspecial)
            note = xprintf("skipped %d file(s) that are neither regular files, directories "
                           "nor symlinks (first: %s)", x->nspecial, x->note ? x->note : "?");
        if (x->copied && !x->done_reported) {
            /* done; its fsyncs go on (a recovery was reported done long ago) */
            x->done_reported = true;
            if (!x->resync)
                cb(x->tid, job, MV_DONE_SYNCING, x->done, x->total, note, arg);
        }
        if (x->final) {
            if (ngone < 64) {
                if (x->result == MV_DONE) {
                    if (!x->sync_after)
                        cb(x->tid, job, MV_DONE, x->done, x->total, note, arg);
                    if (x->sync_each || x->sync_after)
                        cb(x->tid, job, MV_DURABLE, x->done, x->total, NULL, arg);
                } else if (x->copied || x->resync) {
                    cb(x->tid, job, MV_NOT_DURABLE, x->done, x->total, x->msg, arg);
                } else {
                    cb(x->tid, job, x->result, x->done, x->total, x->msg, arg);
                }
                gone[ngone++] = x;
            }
            free(note);
            continue;
        }
        free(note);
        if (x->copied)
            continue;       /* done: no progress left to report */
        bool total_new = x->total >= 0 && !x->rep_total;
        if (total_new || (x->done != x->rep_done
                          && (now - x->rep_time >= REPORT_SECONDS
                              || (uint64_t)(x->done - x->rep_done) >= REPORT_BYTES))) {
            cb(x->tid, job, MV_RUNNING, x->done, x->total, NULL, arg);
            x->rep_done = x->done;
            x->rep_time = now;
            x->rep_total = x->total >= 0;
        }
    }
    for (int i = 0; i < ngone; i++) {
        mxfer_t *x = gone[i];
        mjob_t *j = x->job;
        hmap_idel(m->xfers, x->tid);
        xfer_free(x);
        if (--j->nxfers == 0 && j->ended)
            job_forget(m, j);
    }
    pthread_mutex_unlock(&m->lock);
}

void mover_get_stats(mover_t *m, mover_stats_t *st)
{
    pthread_mutex_lock(&m->lock);
    *st = m->st;
    st->running = (int)hmap_size(m->xfers);
    st->threads = m->nthreads;
    st->busy = m->busy;
    pthread_mutex_unlock(&m->lock);
}

void mover_foreach_job(mover_t *m, mover_job_f cb, void *arg)
{
    void *v;
    pthread_mutex_lock(&m->lock);
    for (void *it = hmap_first(m->jobs, &v); it; it = hmap_next(m->jobs, it, &v)) {
        mjob_t *j = v;
        if (j->key)
            continue;   /* an earlier job of the same id */
        cb(j->id, j->weight, j->bytes, j->nactive, arg);
    }
    pthread_mutex_unlock(&m->lock);
}
