/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mover_end.c — the end of a transfer and of a buffer directory (see mover.c for
 * the task life cycle): FINISH (directory attributes, fsyncs of a transfer
 * fsync'd before done), DURABLE (the fsyncs of a done stage-out), ABORT (partial
 * files removed), and RMTREE, the teardown of a buffer directory, which waits
 * while a stage-out from under it is not durable and never runs when one could
 * not be made durable.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "bufdir.h"
#include "mover_base.h"
#include "mover_end.h"
#include "util.h"

/* ------------------------------------------------------------------ FINISH, DURABLE, ABORT */
/* Open a file or directory of the destination to fsync it, as the job's user (the
 * calling thread acts as x->id).  -1 with errno when it cannot be opened, or with
 * ENODEV when a file is no longer a regular file.  A directory the user made
 * unreadable is opened by the daemon: opening one has no side effect. */
static int sync_open(mover_t *m, mxfer_t *x, const char *path, bool dir)
{
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (dir ? O_DIRECTORY : 0);
    int fd = dir ? open(path, flags) : mover_open_regular(path, NULL);
    if (fd < 0 && dir && errno == EACCES && mover_become(m, &m->self) == 0) {
        fd = open(path, flags);
        int e = errno;
        if (mover_become(m, &x->id) < 0 && fd >= 0) {
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
 * by the user); -1 (mover_tfail) when the fsync failed. */
static int sync_path(mover_t *m, task_t *t, const char *path, bool dir)
{
    int fd = sync_open(m, t->x, path, dir);
    if (fd < 0) {
        if (changed_by_user(errno)) {
            bl_debug("mover: transfer %ju: not fsync'd, changed since the copy: %s: %s",
                     (uintmax_t)t->x->tid, path, strerror(errno));
            return 0;
        }
        return mover_tfail(t, errno, path, "open to fsync");
    }
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    return rc < 0 ? mover_tfail(t, e, path, "fsync") : 0;
}

/* fsync of the entry e of x at the destination. */
static int sync_entry(mover_t *m, task_t *t, const entry_t *e)
{
    char *p = mover_pjoin(t->x->dst, e->rel);
    int rc = p ? sync_path(m, t, p, e->type == E_DIR) : mover_tfail(t, ENOMEM, t->x->dst, "path");
    free(p);
    return rc;
}

/* fsync of the directory that holds dst (the transfer's top entry). */
static int sync_parent(mover_t *m, task_t *t, const char *dst)
{
    char *parent = strdup(dst), *s;
    int rc = 0;
    if (!parent)
        return mover_tfail(t, ENOMEM, dst, "path");
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
    char *to = mover_pjoin(x->dst, x->ents[e->link_to].rel), *d = mover_pjoin(x->dst, e->rel);
    struct stat a, b;
    int rc = 0;
    if (!to || !d) {
        rc = mover_tfail(t, ENOMEM, x->dst, "path");
    } else if (link(to, d) < 0) {
        if (errno != EEXIST)
            rc = mover_tfail(t, errno, d, "link");
        else if (lstat(to, &a) < 0 || lstat(d, &b) < 0 || a.st_ino != b.st_ino
                 || a.st_dev != b.st_dev) {
            /* another file under that name (an earlier run): replaced */
            char *tmp = mover_tmp_name(d, x->tid, -2);
            if (!tmp || (unlink(tmp), link(to, tmp)) < 0 || rename(tmp, d) < 0)
                rc = mover_tfail(t, tmp ? errno : ENOMEM, d, "link");
            if (tmp && rc < 0)
                unlink(tmp);
            free(tmp);
        }
    }
    free(to);
    free(d);
    return rc;
}

int mover_run_finish(mover_t *m, task_t *t)
{
    mxfer_t *x = t->x;
    if (mover_become(m, &x->id) < 0)
        return mover_tfail(t, errno, x->dst, "act as the job's user");
    if (x->dst_only)
        return 0; /* a recovery of the destination alone: nothing to set */
    for (int i = 0; i < x->nents; i++)
        if (x->ents[i].type == E_HLINK && !x->ents[i].foreign && make_hlink(t, &x->ents[i]) < 0)
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
        char *d = mover_pjoin(x->dst, e->rel);
        struct timespec ts[2] = { e->st.st_atim, e->st.st_mtim };
        if (!d)
            return mover_tfail(t, ENOMEM, x->dst, "path");
        if (attrs) {
            mover_set_owner(x, e, -1, d, AT_SYMLINK_NOFOLLOW, NULL);
            if (fchmodat(AT_FDCWD, d, e->st.st_mode & 07777, 0) < 0
                || utimensat(AT_FDCWD, d, ts, AT_SYMLINK_NOFOLLOW) < 0) {
                mover_tfail(t, errno, d, "set attributes");
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
int mover_run_durable(mover_t *m, task_t *t)
{
    mxfer_t *x = t->x;
    int nfiles = 0, ndirs = 0;
    double t0 = hu_mono(), tp[3];

    if (mover_become(m, &x->id) < 0)
        return mover_tfail(t, errno, x->dst, "act as the job's user");
    for (int pass = 0; pass < 3; pass++) {
        for (int i = 0; i < x->nents; i++) {
            entry_t *e = &x->ents[i];
            if (e->type != E_FILE)
                continue;
            if (__atomic_load_n(&m->stop, __ATOMIC_ACQUIRE)) {
                t->skipped = true;
                return 0;
            }
            char *f = mover_pjoin(x->dst, e->rel);
            int rc = 0, fd;
            if (!f)
                return mover_tfail(t, ENOMEM, x->dst, "path");
            if (pass == 2) {
                rc = sync_path(m, t, f, false);
                nfiles++;
            } else if ((fd = sync_open(m, x, f, false)) >= 0) {
                /* pass 0 takes no error: the next passes report them */
                if (pass == 0)
                    sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
                else if (sync_file_range(fd, 0, 0,
                                         SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE
                                             | SYNC_FILE_RANGE_WAIT_AFTER)
                         < 0)
                    rc = mover_tfail(t, errno, f, "write back");
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
             "directories %.3f s)",
             (uintmax_t)x->tid, nfiles, ndirs + 1, t1 - t0, tp[0] - t0, tp[1] - tp[0],
             tp[2] - tp[1], t1 - tp[2]);
    return 0;
}

void mover_run_abort(mover_t *m, task_t *t)
{
    mxfer_t *x = t->x;
    if (mover_become(m, &x->id) < 0)
        mover_become(m, &m->self);
    for (mfile_t *f = x->live; f; f = f->next)
        mover_file_cleanup(f);
}

/* ------------------------------------------------------------------ RMTREE */
/* A teardown that could not remove everything (an I/O error, a file system mounted
 * inside): what is left stays in the trash, every directory of it that the walk
 * reached the daemon's (0700) and its top mode 0, so that no process of the user
 * left inside adds to it, and it is tried again, at growing intervals (1 s to
 * LEFT_RETRY_MAX), until it is gone or the daemon stops (the trash sweep at the
 * next start tries again).  Each failed try is logged with the reason. */
#define LEFT_RETRY_MAX 60.0
#define LEFT_MEASURE_STEP 65536 /* entries per step of a leftover's measure */

/* The bytes the leftover open at fd holds (bufdir_usage_step(), in steps until
 * complete or the mover stops); 0 when it cannot be measured. */
static uint64_t left_measure(mover_t *m, int fd)
{
    uint64_t bytes = 0;
    bufdir_usage_t *u = bufdir_usage_new();
    int r = 0;
    while (u && r == 0 && !__atomic_load_n(&m->stop, __ATOMIC_RELAXED)) {
        unsigned long budget = LEFT_MEASURE_STEP;
        r = bufdir_usage_step(u, fd, &budget, &bytes);
    }
    bufdir_usage_free(u);
    return r > 0 ? bytes : 0;
}

/* The leftover at path holds bytes (set) or is gone (!set): mover_leftover(). */
typedef struct {
    uint64_t bytes;
    char path[];
} left_rec_t;

static void left_count(mover_t *m, const char *path, bool set, uint64_t bytes)
{
    pthread_mutex_lock(&m->lock);
    left_rec_t *v = hmap_get(m->lefts, path);
    if (set && !v && (v = malloc(sizeof(*v) + strlen(path) + 1))) {
        strcpy(v->path, path);
        if (hmap_put(m->lefts, path, v) < 0) {
            free(v);
            v = NULL;
        }
    }
    if (set && v)
        v->bytes = bytes;
    else if (!set)
        free(hmap_del(m->lefts, path));
    pthread_mutex_unlock(&m->lock);
}

/* mover_destroy(): no lock needed any more. */
void mover_left_forget_all(mover_t *m)
{
    void *v;
    if (!m->lefts)
        return;
    for (void *it = hmap_first(m->lefts, &v); it; it = hmap_next(m->lefts, it, &v))
        free(v);
    hmap_destroy(m->lefts);
    m->lefts = NULL;
}

int mover_leftover(mover_t *m, const char *under, uint64_t *bytes)
{
    void *v;
    int n = 0;
    *bytes = 0;
    pthread_mutex_lock(&m->lock);
    for (void *it = hmap_first(m->lefts, &v); it; it = hmap_next(m->lefts, it, &v)) {
        const left_rec_t *r = v;
        if (!under || util_path_under(r->path, under)) {
            *bytes += r->bytes;
            n++;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return n;
}

static void left_keep(mover_t *m, const task_t *t, const char *dir, const struct stat *st,
                      const char *why, const bufdir_rm_t *o)
{
    task_t *r = mover_task_new(T_RMTREE, NULL);
    int tries = t->tries + 1;
    double delay = fmin(ldexp(1.0, tries > 6 ? 6 : tries - 1), LEFT_RETRY_MAX);
    if (!r || !(r->path = strdup(dir))) {
        mover_task_free(r);
        bl_error("teardown of %s: %s (%lu entries removed, depth %zu): what is left stays "
                 "in %s until the next start",
                 t->path, why, o->removed, o->depth, dir);
        return;
    }
    bl_error("teardown of %s: %s (%lu entries removed, depth %zu): what is left stays in %s, "
             "the daemon's alone, and is tried again in %.0f s (try %d)",
             t->path, why, o->removed, o->depth, dir, delay, tries);
    r->uid = t->uid;
    r->gid = t->gid;
    r->dev = st->st_dev;
    r->ino = st->st_ino;
    r->tries = tries;
    r->not_after = hu_mono() + delay;
    pthread_mutex_lock(&m->lock);
    if (m->stop) {
        mover_task_free(r);
    } else {
        r->next = m->left;
        m->left = r;
        pthread_cond_signal(&m->cond);
    }
    pthread_mutex_unlock(&m->lock);
}

/* (m->lock held) the leftovers due at now go to the FIFO; the time until the next */
double mover_left_due(mover_t *m, double now)
{
    double wait = LEFT_RETRY_MAX;
    task_t **pp = &m->left;
    while (*pp) {
        task_t *t = *pp;
        if (t->not_after <= now) {
            *pp = t->next;
            t->next = NULL;
            mover_fifo_push(m, t);
            continue;
        }
        wait = fmin(wait, t->not_after - now);
        pp = &t->next;
    }
    return wait;
}

void mover_run_rmtree(mover_t *m, task_t *t)
{
    struct stat st;
    bool ours = false;
    const char *dir = t->path;
    mover_become(m, &m->self);
    /* first moved aside to a name of its own, under m->lock (mover_aside() moves
     * directories under it too): a new buffer may take the name at once, and nothing
     * below ever reaches it */
    pthread_mutex_lock(&m->lock);
    if (lstat(t->path, &st) == 0 && S_ISDIR(st.st_mode)) {
        ours = !(t->dev || t->ino) || (st.st_dev == t->dev && st.st_ino == t->ino);
        if (!ours)
            bl_warning("teardown: %s is no longer the directory it was for (inode %ju, now "
                       "%ju): left alone",
                       t->path, (uintmax_t)t->ino, (uintmax_t)st.st_ino);
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
    if (!ours && t->tries > 0)
        left_count(m, t->path, false, 0);
    if (!ours || (t->move_only && dir != t->path))
        return;
    /* everything below, by descriptors and without recursion (bufdir.c), as the
     * daemon: each directory is the daemon's (0700) before it is read, so that a
     * process of the user left inside adds nothing to what is being removed */
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat now;
    bufdir_rm_t o = { .stop = &m->stop, .uid = m->self.uid, .gid = m->self.gid };
    hu_error_t why = { "" };
    int rc = -1;
    if (fd < 0 || fstat(fd, &now) < 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
        hu_errprintf(&why, "open: %s", fd < 0 ? strerror(errno) : "replaced meanwhile");
    } else {
        rc = bufdir_empty(fd, &o, &why);
    }
    if (rc < 0 && fd >= 0 && m->root)
        fchmod(fd, 0); /* not even a directory the user's process is in is theirs */
    if (rc < 0 && fd >= 0 && !__atomic_load_n(&m->stop, __ATOMIC_RELAXED))
        /* counted in its node's use until gone */
        left_count(m, dir, true, left_measure(m, fd));
    if (fd >= 0)
        close(fd);
    if (__atomic_load_n(&m->stop, __ATOMIC_RELAXED)) {
        bl_info("teardown of %s: stopped with the mover; the rest of %s is removed at "
                "the next start",
                t->path, dir);
        return;
    }
    if (rc < 0) {
        left_keep(m, t, dir, &st, why.text, &o);
        return;
    }
    if (t->tries > 0)
        left_count(m, dir, false, 0);
    if (rmdir(dir) < 0 && errno != ENOENT)
        bl_warning("teardown: remove %s: %s", dir, strerror(errno));
    else if (dir != t->path)
        bl_debug("teardown: removed %s (moved to %s first)", t->path, dir);
    else
        bl_debug("teardown: removed %s", t->path);
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
void mover_rm_release(mover_t *m, task_t *t)
{
    void *v;
    for (int i = 0; i < m->nkept; i++)
        if (util_path_under(m->kept[i], t->path)) {
            bl_warning("teardown: %s is kept: the stage-out from %s could not be made "
                       "durable (remove it by hand once the data is safe)",
                       t->path, m->kept[i]);
            mover_task_free(t);
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
    mover_fifo_push(m, t);
}

void mover_rm_recheck(mover_t *m)
{
    task_t *l = m->rmwait;
    m->rmwait = NULL;
    while (l) {
        task_t *t = l;
        l = t->next;
        mover_rm_release(m, t);
    }
}

int mover_trash_path(int pfd, const char *parent, ino_t ino, char *out, size_t len)
{
    return bufdir_trash_path(pfd, parent, ino, out, len);
}

int mover_rmtree(mover_t *m, const char *job, const char *path, const char *trash, uid_t uid,
                 gid_t gid, dev_t dev, ino_t ino)
{
    task_t *t = mover_task_new(T_RMTREE, NULL);
    if (!t || !(t->path = strdup(path)) || (trash && !(t->trash = strdup(trash)))) {
        mover_task_free(t);
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
        mover_rm_release(m, t);
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
    return util_path_under(p, from) ? mover_xprintf("%s%s", to, p + strlen(from)) : NULL;
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
