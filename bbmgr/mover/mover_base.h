/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mover_base.h — the mover's types and the functions its files share.
 * Private to libbbmover.  Its files are layers, each calling only those below:
 *
 *   mover.c        scheduling, workers, API
 *   mover_end.c    FINISH, DURABLE, ABORT and the teardown of buffer directories
 *   mover_copy.c   PREPARE, CHUNK, FILE, SYNC
 *   mover_base.c   the task FIFO and task objects, partial-file names, message
 *                  helpers, acting as the user
 */
#ifndef HARMONIA_MOVER_BASE_H
#define HARMONIA_MOVER_BASE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "libhsched/hs_sfq.h"
#include "checksum.h"
#include "hmap.h"
#include "mover_types.h"

#define SLOT_BYTES (256u * 1024u)  /* SFQ(D)+ slot: depth is counted in these */
#define META_COST 4096u            /* cost charged for an empty file */
#define REPORT_BYTES (64ull << 20) /* progress is recorded every 64 MiB ... */
#define REPORT_SECONDS 1.0         /* ... or every second */
#define MAX_GROUPS 256
#define SYNC_FILES 32             /* durable transfers: fsync in batches of files ... */
#define SYNC_BYTES (256ull << 20) /* ... or of bytes */
#define VBLOCK \
    (256u * 1024u) /* checksum unit: a chunk is read, hashed, written and
                                       verified in blocks that stay in the CPU's cache */
#define DURABLE_DEFER_MAX \
    5.0               /* s: a done stage-out's fsyncs wait for the copies at
                                       most this long (syncer_take) */
#define BOOT_MARGIN 5 /* s: uncertainty of the boot time (quick check) */
#define STOP_WAIT \
    5.0 /* s: mover_destroy() waits this long for the threads
                                       (a teardown in progress stops at its next entry) */

typedef enum { V_CHECKSUM, V_SIZE, V_NONE } verify_t;
typedef enum {
    T_PREPARE,
    T_CHUNK,
    T_FILE,
    T_SYNC,
    T_FINISH,
    T_DURABLE,
    T_ABORT,
    T_RMTREE
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
    char *rel;      /* relative to the roots; "" for the root itself */
    struct stat st; /* lstat of the source at the walk */
    bool made;      /* directory created by this transfer */
    bool skipped;   /* file already complete at the destination */
    bool foreign;   /* a part of a spread transfer: another part's file */
    int link_to;    /* E_HLINK: the entry (an E_FILE) it is a hard link of */
} entry_t;

typedef struct mxfer mxfer_t;
typedef struct mjob mjob_t;

typedef struct mfile {
    mxfer_t *x;
    struct mfile *next, *prev; /* x->live */
    const entry_t *e;
    char *src, *dst, *tmp;
    uint32_t nchunks, done; /* done: under m->lock */
    uint64_t verified;      /* bytes written and read back matching (atomic) */
    pthread_mutex_t lock;   /* opening */
    int sfd, dfd;
    bool opened;
    int open_err;
    char *open_msg;
    bool tmp_made;
    bool installed;      /* renamed into place */
    struct mfile *snext; /* x->syncq / a T_SYNC task's batch */
} mfile_t;

typedef struct task {
    task_kind_t kind;
    struct task *next;
    mxfer_t *x;
    mfile_t *f;
    uint32_t ci; /* chunk index */
    uint64_t off, len;
    bool ok;
    bool skipped;     /* not run: its transfer was stopping */
    bool file_done;   /* CHUNK of a one-chunk file: the FILE work was done too */
    bool to_sync;     /* FILE work done, durable: the file waits for a T_SYNC */
    mfile_t *batch;   /* T_SYNC: files to fsync and rename */
    double not_after; /* T_DURABLE: run by then even if copies still run */
    char *msg;        /* error, "stage_in PATH: what: strerror" */
    /* RMTREE */
    char *path;
    uid_t uid;
    gid_t gid;
    dev_t dev; /* the directory this teardown is for (0/0: unchecked) */
    ino_t ino;
    char *trash;    /* where it is moved before its content is removed */
    bool move_only; /* the daemon stops: only move it (the next start removes it) */
    int tries;      /* RMTREE of a leftover: removals that failed so far */
} task_t;

struct mjob {
    char *id;
    uint64_t flow;
    double weight;
    uint64_t bytes; /* served: chunk bytes completed */
    int nactive;    /* transfers not yet final */
    int nxfers;     /* transfers not yet forgotten */
    bool ended;
    char *key;         /* its key in m->jobs: the id, or once ended and a new job
                                   of the same id came, a key of its own (detached) */
    bool flow_removed; /* its SFQ flow is gone */
    task_t *deferred;  /* RMTREE waiting for nactive == 0 */
};

struct mxfer {
    uint64_t tid;
    mjob_t *job;
    bool stage_out, directory;
    bool sync_each;  /* fsync the copies (batched) before they are renamed,
                                   and the directories before done */
    bool sync_after; /* fsync the files and directories after done (T_DURABLE):
                                   stage-outs without durable_before_done, recoveries */
    bool resync;     /* recovery of a done stage-out (mover_spec_t) */
    bool dst_only;   /* resync whose source is gone: fsync the destination */
    double done_at;
    bool copied;        /* sync_after: every file in place, FINISH done */
    bool done_reported; /* ... and reported (MV_DONE_SYNCING) */
    bool durable_queued, durable_done, durable_failed;
    char *src, *dst;
    char *hold; /* stage-out: where its source is now (teardown moves a
                                   buffer aside: mover_rebase()); under m->lock */
    char *user;
    ident_t id;
    int64_t max_bytes; /* stage-in: refuse a source larger than this (0: none) */
    int part, nparts;  /* a part of a spread transfer (mover_spec_t) */
    char **roots;      /* nparts: the job's directory on each node */
    int max_entries;   /* mover.max_entries */
    hmap_t *inodes;    /* "dev:ino" -> entry + 1 of files with several links */
    entry_t *ents;
    int nents, cents;
    int *files; /* indices of the files to copy */
    int nfiles;
    int next_file;
    uint32_t next_chunk;
    mfile_t *cur;  /* being fed */
    mfile_t *live; /* fed, not yet finished */
    int queued;    /* chunks in the SFQ queue */
    int pending;   /* tasks not completed (queued ones included) */
    int files_left;
    mfile_t *syncq;       /* durable: verified files waiting for their fsync */
    int nsyncq, nsyncing; /* files in syncq, in T_SYNC tasks */
    uint64_t syncq_bytes;
    bool prepared, finish_queued, finish_done;
    bool aborting, abort_queued, abort_done;
    bool final, cancel_reported;
    mover_state_t result;
    char *msg;
    char *note; /* skipped special files */
    int nspecial;
    int64_t total, done;
    int64_t rep_done;
    double rep_time;
    bool rep_total;
};

typedef struct {
    mover_t *m;
    pthread_t thr;
    unsigned char *buf;  /* a chunk (copy_file_range fallback) or a block */
    unsigned char *rbuf; /* verify checksum: a block read back from the copy */
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
    task_t *head, *tail; /* FIFO of runnable tasks */
    hmap_t *jobs;        /* id -> mjob_t */
    hmap_t *xfers;       /* tid -> mxfer_t */
    uint64_t next_flow;
    worker_t *w;
    int nthreads, busy;
    int wbusy;          /* copying workers busy (busy counts the syncer too) */
    bool defer_durable; /* T_DURABLE waits for the copies (below) */
    uint64_t chunk;
    int backlog; /* chunks kept queued per transfer */
    verify_t verify;
    cksum_alg_t alg;
    double rate, tnext;
    bool root;        /* can act as other users */
    bool durable_in;  /* mover.durable_stage_in */
    bool durable_out; /* mover.durable_before_done */
    int max_entries;  /* mover.max_entries */
    task_t *rmwait;   /* RMTREE waiting for stage-outs from under its path */
    task_t *left;     /* RMTREE of what a teardown could not remove, tried again
                                   at not_after (hu_mono()) */
    hmap_t *lefts;    /* path of each such leftover -> uint64_t *: the bytes it
                                   held when last measured (mover_leftover()) */
    char **kept;      /* sources of stage-outs that could not be made durable:
                                   never removed */
    int nkept;
    char **pbufs; /* "<mount>/persistent/" of every node set */
    int npbufs;
    time_t boot; /* wall-clock time of the boot */
    ident_t self;
    mover_stats_t st;
};

/* ---- shared between the mover's files (lock rules as in mover.c) ---- */
/* mover_base.c */
void mover_tq_push(task_t **head, task_t **tail, pthread_cond_t *cond, task_t *t);
task_t *mover_tq_pop(task_t **head, task_t **tail);
void mover_fifo_push(mover_t *m, task_t *t);
task_t *mover_fifo_pop(mover_t *m);
void mover_task_free(task_t *t);
task_t *mover_task_new(task_kind_t kind, mxfer_t *x);
char *mover_tmp_name(const char *dst, uint64_t tid, int idx);
char *mover_xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *mover_pjoin(const char *a, const char *b);
const char *mover_kind_name(const mxfer_t *x);
int mover_tfail(task_t *t, int err, const char *path, const char *what);
int mover_become(mover_t *m, const ident_t *id);
void mover_set_owner(mxfer_t *x, const entry_t *e, int fd, const char *path, int flags,
                     const struct stat *have);

/* mover_copy.c */
int mover_run_prepare(mover_t *m, task_t *t);
int mover_open_regular(const char *path, const struct stat *want);
int mover_run_chunk(mover_t *m, worker_t *w, task_t *t);
void mover_file_cleanup(mfile_t *f);
int mover_run_file(mover_t *m, task_t *t);
int mover_run_sync(mover_t *m, task_t *t);

/* mover_end.c */
int mover_run_finish(mover_t *m, task_t *t);
int mover_run_durable(mover_t *m, task_t *t);
void mover_run_abort(mover_t *m, task_t *t);
void mover_run_rmtree(mover_t *m, task_t *t);
void mover_rm_release(mover_t *m, task_t *t);
void mover_rm_recheck(mover_t *m);
double mover_left_due(mover_t *m, double now);
void mover_left_forget_all(mover_t *m);

#endif
