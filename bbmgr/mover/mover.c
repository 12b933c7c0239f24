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
 *
 * This file has the scheduling of a transfer's tasks, the worker threads and
 * the API; mover_copy.c runs PREPARE, CHUNK, FILE and SYNC (acting as the job's
 * user), mover_end.c FINISH, DURABLE, ABORT and RMTREE, and mover_base.c holds
 * the task FIFO, the helpers and mover_become(); their shared types are in
 * mover_base.h.
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
#include "mover_base.h"
#include "util.h"

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
    for (int k = 0; x->roots && k < x->nparts; k++)
        free(x->roots[k]);
    free(x->roots);
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
            mover_task_free(t);
        }
        free(j->id);
        free(j->key);
        free(j);
    }
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
            if (!(f->src = mover_pjoin(x->src, e->rel)) || !(f->dst = mover_pjoin(x->dst, e->rel))
                || !(f->tmp = mover_tmp_name(f->dst, x->tid, x->files[x->next_file]))) {
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
        task_t *t = mover_task_new(T_CHUNK, x);
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
                           t->len < META_COST ? META_COST : t->len)
            < 0) {
            char *msg = mover_xprintf("%s: scheduler: %s", mover_kind_name(x), strerror(errno));
            mover_task_free(t);
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
        mover_fifo_push(m, t);
        feed(m, t->x);
    }
}


static void job_release_deferred(mover_t *m, mjob_t *j)
{
    while (j->deferred) {
        task_t *t = j->deferred;
        j->deferred = t->next;
        mover_rm_release(m, t);
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
            task_t *t = mover_task_new(T_ABORT, x);
            if (t) {
                x->abort_queued = true;
                x->pending++;
                mover_fifo_push(m, t);
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
            task_t *t = mover_task_new(T_FINISH, x);
            if (!t) {
                xfer_abort(m, x, MV_FAILED, "out of memory");
                xfer_check(m, x);
                return;
            }
            x->finish_queued = true;
            x->pending++;
            mover_fifo_push(m, t);
            return;
        }
        if (!x->finish_done || x->pending > 0)
            return;
        if (x->sync_after) {
            /* done: every file is complete, verified and in place; now the fsyncs */
            if (!x->durable_queued) {
                task_t *t = mover_task_new(T_DURABLE, x);
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
                    mover_tq_push(&m->shead, &m->stail, &m->scond, t);
                    return;
                }
            }
            if (!x->durable_done && !x->durable_failed)
                return; /* (stopped: left to the next start) */
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
    mover_rm_recheck(m);
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
        return; /* aborting: they are in x->live, ABORT removes them */
    if (!force && x->nsyncq < SYNC_FILES && x->syncq_bytes < SYNC_BYTES)
        return;
    task_t *t = mover_task_new(T_SYNC, x);
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
    mover_tq_push(&m->shead, &m->stail, &m->scond, t);
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
        mover_task_free(t);
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
            file_ready(m, x, f, t); /* a one-chunk file, finished in the same task */
        } else if (t->ok && f->done == f->nchunks && !x->aborting) {
            task_t *ft = mover_task_new(T_FILE, x);
            if (!ft) {
                t->ok = false;
                t->msg = t->msg ? t->msg : strdup("out of memory");
            } else {
                ft->f = f;
                x->pending++;
                mover_fifo_push(m, ft);
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
            break; /* stopped: the next start makes it durable */
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
    mover_task_free(t);
    feed(m, x);
    dispatch(m);
    /* every file is fed and none is still being copied or verified: sync the rest */
    if (x->syncq && x->next_file == x->nfiles && x->files_left == x->nsyncq + x->nsyncing)
        syncq_flush(m, x, true);
    xfer_check(m, x);
}

/* ------------------------------------------------------------------ workers */
static void task_run(mover_t *m, worker_t *w, task_t *t)
{
    switch (t->kind) {
    case T_PREPARE:
        mover_run_prepare(m, t);
        break;
    case T_CHUNK:
        mover_run_chunk(m, w, t);
        break;
    case T_FILE:
        mover_run_file(m, t);
        break;
    case T_SYNC:
        mover_run_sync(m, t);
        break; /* (not reached: the syncer runs them) */
    case T_DURABLE:
        mover_run_durable(m, t);
        break; /* (same) */
    case T_FINISH:
        mover_run_finish(m, t);
        break;
    case T_ABORT:
        mover_run_abort(m, t);
        break;
    case T_RMTREE:
        mover_run_rmtree(m, t);
        break;
    }
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    mover_t *m = w->m;

    pthread_mutex_lock(&m->lock);
    for (;;) {
        while (!m->stop && !m->head) {
            double wait = m->left ? mover_left_due(m, hu_mono()) : 0;
            if (m->head)
                break;
            if (!m->left) {
                pthread_cond_wait(&m->cond, &m->lock);
            } else {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                double d = ts.tv_nsec * 1e-9 + fmin(fmax(wait, 0.01), 60);
                ts.tv_sec += (time_t)d;
                ts.tv_nsec = (long)((d - floor(d)) * 1e9);
                pthread_cond_timedwait(&m->cond, &m->lock, &ts);
            }
        }
        if (m->stop)
            break;
        task_t *t = mover_fifo_pop(m);
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
    mover_become(m, &m->self);
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
            syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0));
            mover_run_durable(m, t);
            syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
                    IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, IOPRIO_NORM));
        } else {
            mover_run_sync(m, t);
        }
        pthread_mutex_lock(&m->lock);
        m->busy--;
        task_done(m, t);
    }
    pthread_mutex_unlock(&m->lock);
    mover_become(m, &m->self);
    return NULL;
}

static void drop_cb(uint64_t id, uint64_t cost, void *arg)
{
    task_t *t = (task_t *)(uintptr_t)id;
    (void)cost;
    (void)arg;
    t->x->queued--;
    t->x->pending--;
    mover_task_free(t);
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
                : !strcmp(cfg->mover_verify, "size")   ? V_SIZE
                                                       : V_NONE;
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
    m->max_entries = cfg->mover_max_entries > INT_MAX / 2 ? INT_MAX / 2
                                                          : (int)cfg->mover_max_entries;
    const char *dd = getenv("BBMGRD_DEFER_DURABLE"); /* 0: for A/B runs */
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
            if (!mnt || !(m->pbufs[m->npbufs++] = mover_xprintf("%.*s/persistent/", (int)n, mnt))) {
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
    if (!(m->q = hs_sfq_create(&prm)) || !(m->jobs = hmap_create()) || !(m->xfers = hmap_create())
        || !(m->lefts = hmap_create())) {
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
    /* BBMGRD_MOVER_STACK: the worker threads' stack size in bytes (the tests shrink
     * it to show that no walk over a user's tree depends on it; doc/mover.md) */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    const char *ss = getenv("BBMGRD_MOVER_STACK");
    if (ss && *ss) {
        unsigned long long v = strtoull(ss, NULL, 10);
        if (v >= 65536 && pthread_attr_setstacksize(&attr, (size_t)v) != 0)
            bl_warning("mover: BBMGRD_MOVER_STACK=%s: not a usable stack size (ignored)", ss);
    }
    for (int i = 0; i < m->nthreads; i++) {
        int rc = pthread_create(&m->w[i].thr, &attr, worker_main, &m->w[i]);
        if (rc != 0) {
            m->nthreads = i;
            errno = rc;
            hu_errprintf(err, "mover: cannot start worker threads: %s", strerror(rc));
            pthread_attr_destroy(&attr);
            goto error;
        }
    }
    pthread_attr_destroy(&attr);
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

/* With the workers gone: empty the FIFO, running its teardowns in this thread;
 * past until, they only move their trees (the next start removes them). */
static void stop_teardowns(mover_t *m, double until)
{
    task_t *t;

    while ((t = mover_fifo_pop(m))) {
        if (t->kind == T_RMTREE) {
            t->move_only = hu_mono() > until;
            mover_run_rmtree(m, t);
        }
        mover_task_free(t);
    }
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
                 "not waited for",
                 stuck, STOP_WAIT);
        errno = saved;
        return;
    }
    /* queued T_SYNC tasks: their files are in their transfers' live lists; queued
     * T_DURABLE tasks: their transfers stay done and not durable in the database,
     * and the next start makes them durable */
    while (m->shead) {
        task_t *t = m->shead;
        m->shead = t->next;
        mover_task_free(t);
    }
    /* the workers are gone: tidy up in this thread */
    if (m->jobs)
        for (void *it = hmap_first(m->jobs, &v); it; it = hmap_next(m->jobs, it, &v))
            if (!((mjob_t *)v)->flow_removed)
                hs_sfq_flow_remove(m->q, ((mjob_t *)v)->flow, drop_cb, NULL);
    task_t *t;
    stop_teardowns(m, until);
    /* teardowns still waiting: those a stage-out to be made durable holds are left
     * to the next start (its recovery removes them once the copy is durable) */
    if (m->jobs)
        for (void *it = hmap_first(m->jobs, &v); it; it = hmap_next(m->jobs, it, &v))
            job_release_deferred(m, v);
    while ((t = m->rmwait)) {
        m->rmwait = t->next;
        bl_info("teardown of %s left to the next start: a stage-out from it is not durable yet",
                t->path);
        mover_task_free(t);
    }
    while ((t = m->left)) {
        m->left = t->next;
        bl_info("teardown of %s left to the next start (the trash sweep tries again)", t->path);
        mover_task_free(t);
    }
    stop_teardowns(m, until);
    if (m->xfers)
        for (void *it = hmap_first(m->xfers, &v); it; it = hmap_next(m->xfers, it, &v)) {
            mxfer_t *x = v;
            task_t ab = { .kind = T_ABORT, .x = x, .ok = true };
            mover_run_abort(m, &ab);
            xfer_free(x);
        }
    mover_become(m, &m->self);
    if (m->jobs)
        for (void *it = hmap_first(m->jobs, &v); it; it = hmap_next(m->jobs, it, &v))
            job_free(v);
    hmap_destroy(m->xfers);
    hmap_destroy(m->jobs);
    mover_left_forget_all(m);
    /* queued/outstanding chunk tasks were freed with the FIFO or belong to freed
     * transfers' SFQ entries: the SFQ object holds only ids */
    hs_sfq_destroy(m->q);
    for (int i = 0; m->w && i < m->nthreads; i++) {
        free(m->w[i].buf);
        free(m->w[i].rbuf);
    }
    free(m->w);
    util_strv_free(m->pbufs, m->npbufs);
    util_strv_free(m->kept, m->nkept);
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
        char *key = mover_xprintf("\001%ju", (uintmax_t)j->flow);
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
        || (spec->user && !(x->user = strdup(spec->user))) || !(t = mover_task_new(T_PREPARE, x)))
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
    if (spec->nparts > 1) {
        bool bad = spec->nparts > MOVER_MAX_PARTS || spec->part < 0 || spec->part >= spec->nparts;
        if (bad || !(x->roots = calloc((size_t)spec->nparts, sizeof(char *)))) {
            errno = bad ? EINVAL : ENOMEM;
            xfer_free(x);
            mover_task_free(t);
            return -1;
        }
        x->nparts = spec->nparts;
        x->part = spec->part;
        for (int k = 0; k < x->nparts; k++)
            if (!spec->roots[k] || !(x->roots[k] = strdup(spec->roots[k])))
                goto nomem;
    }
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
        mover_task_free(t);
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
    mover_fifo_push(m, t);
    pthread_mutex_unlock(&m->lock);
    bl_debug("mover: transfer %ju of job %s: %s%s %s -> %s (weight %.3g, %s)", (uintmax_t)x->tid,
             spec->job, x->resync ? "recovery of " : "", mover_kind_name(x), x->src, x->dst,
             j->weight,
             x->sync_each    ? "fsync'd before done"
             : x->sync_after ? "fsync'd after done"
                             : "not fsync'd");
    return 0;
nomem:
    xfer_free(x);
    mover_task_free(t);
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
            note = mover_xprintf("skipped %d file(s) that are neither regular files, directories "
                                 "nor symlinks (first: %s)",
                                 x->nspecial, x->note ? x->note : "?");
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
            continue; /* done: no progress left to report */
        bool total_new = x->total >= 0 && !x->rep_total;
        if (total_new
            || (x->done != x->rep_done
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
            continue; /* an earlier job of the same id */
        cb(j->id, j->weight, j->bytes, j->nactive, arg);
    }
    pthread_mutex_unlock(&m->lock);
}
