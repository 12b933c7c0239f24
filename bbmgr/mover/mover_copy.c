/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mover_copy.c — the copy of a transfer (see mover.c for the task life cycle):
 * acting as the job's user, PREPARE (the walk of the source), CHUNK (one chunk
 * of one file, verified as it is written), FILE (verify and install a copied
 * file) and SYNC (fsync a batch of files before they are renamed into place).
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
#include "mover_base.h"
#include "quota.h"
#include "util.h"

/* ------------------------------------------------------------------ helpers */
/* A file copied to an existing directory goes into it under its own name (as cp). */
static int dst_into_dir(task_t *t, mxfer_t *x)
{
    const char *b = strrchr(x->src, '/');
    char *nd = mover_pjoin(x->dst, b ? b + 1 : x->src);
    if (!nd)
        return mover_tfail(t, ENOMEM, x->dst, "path");
    free(x->dst);
    x->dst = nd;
    return 0;
}

static int tfailmsg(task_t *t, const char *path, const char *what)
{
    if (!t->msg)
        t->msg = mover_xprintf("%s %s: %s", mover_kind_name(t->x), path, what);
    t->ok = false;
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

/* The walk of a tree the user controls, without recursion: per level (on the heap)
 * the directory's device and inode, its path relative to the root and the names it
 * held when it was read; one descriptor open (the directory being looked at).
 * Down is openat(name, O_NOFOLLOW) checked against the fstatat() that saw a
 * directory, up is openat("..") checked against the level above: a tree moved
 * under the walk fails the transfer instead of being walked elsewhere.  Any depth
 * is walked (the copy then fails with ENAMETOOLONG on paths past PATH_MAX).  The
 * source of a stage-out (a buffer) is walked on its own file system only, and in
 * the btrfs subvolumes its user made in it (quota_nested()): another file system
 * mounted in it fails the transfer. */
typedef struct {
    dev_t dev;
    ino_t ino;
    char *rel;
    char **names;
    size_t n, i;
} wlevel_t;

static void wlevel_free(wlevel_t *l)
{
    for (size_t k = l->i; k < l->n; k++)
        free(l->names[k]);
    free(l->names);
    free(l->rel);
}

static int wfail(task_t *t, int err, const char *root, const char *rel, const char *what)
{
    char *path = *rel ? mover_pjoin(root, rel) : NULL;
    mover_tfail(t, err, path ? path : root, what);
    free(path);
    return -1;
}

static int wfailmsg(task_t *t, const char *root, const char *rel, const char *what)
{
    char *path = *rel ? mover_pjoin(root, rel) : NULL;
    tfailmsg(t, path ? path : root, what);
    free(path);
    return -1;
}

static int too_many(task_t *t)
{
    char what[96];
    snprintf(what, sizeof(what), "more than %d entries (mover.max_entries): refused",
             t->x->max_entries);
    return tfailmsg(t, t->x->src, what);
}

/* The names in the directory open at fd (not . and ..) into l; the walk holds at
 * most mover.max_entries entries, so no more names than that are kept. */
static int read_names(task_t *t, int fd, wlevel_t *l, const char *root)
{
    mxfer_t *x = t->x;
    int sfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = sfd >= 0 ? fdopendir(sfd) : NULL;
    struct dirent *de;
    size_t cap = 0;
    if (!d) {
        if (sfd >= 0)
            close(sfd);
        return wfail(t, errno, root, l->rel, "open directory");
    }
    for (;;) {
        errno = 0;
        if (!(de = readdir(d))) {
            if (errno) {
                closedir(d);
                return wfail(t, errno, root, l->rel, "read directory");
            }
            break;
        }
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (x->max_entries > 0 && (size_t)x->nents + l->n >= (size_t)x->max_entries) {
            closedir(d);
            return too_many(t);
        }
        if (l->n == cap) {
            char **nv = realloc(l->names, (cap = cap ? 2 * cap : 16) * sizeof(char *));
            if (!nv) {
                closedir(d);
                return wfail(t, ENOMEM, root, l->rel, "walk");
            }
            l->names = nv;
        }
        if (!(l->names[l->n] = strdup(de->d_name))) {
            closedir(d);
            return wfail(t, ENOMEM, root, l->rel, "walk");
        }
        l->n++;
    }
    closedir(d);
    return 0;
}

/* Walk the tree at root (the source; the destination for a recovery whose source
 * is gone), a directory already in the entries (rel ""). */
static int walk_dir(task_t *t, const char *root)
{
    mxfer_t *x = t->x;
    wlevel_t *v = NULL;
    size_t n = 0, cap = 0;
    struct stat st;
    int rc = -1;
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    bool one_fs = x->stage_out && !strcmp(root, x->src);
    quota_tree_t qt;

    if (fd < 0 || fstat(fd, &st) < 0) {
        wfail(t, errno, root, "", "open directory");
        goto out;
    }
    quota_tree_init(&qt, fd, &st);
    if (!(v = calloc(cap = 16, sizeof(*v))) || !(v[0].rel = strdup(""))) {
        wfail(t, ENOMEM, root, "", "walk");
        goto out;
    }
    v[0].dev = st.st_dev;
    v[0].ino = st.st_ino;
    n = 1;
    if (read_names(t, fd, &v[0], root) < 0)
        goto out;
    while (n > 0) {
        wlevel_t *l = &v[n - 1];
        if (__atomic_load_n(&x->aborting, __ATOMIC_ACQUIRE))
            goto out;
        if (l->i == l->n) {
            /* this level is done: up, to the directory it was reached from */
            wlevel_free(l);
            if (--n == 0)
                break;
            int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (up < 0 || fstat(up, &st) < 0 || st.st_dev != v[n - 1].dev
                || st.st_ino != v[n - 1].ino) {
                if (up >= 0)
                    close(up);
                wfailmsg(t, root, v[n - 1].rel, "moved during the walk");
                goto out;
            }
            close(fd);
            fd = up;
            continue;
        }
        char *name = l->names[l->i++];
        char *crel = *l->rel ? mover_xprintf("%s/%s", l->rel, name) : strdup(name);
        int r = 0;
        if (!crel) {
            free(name);
            wfail(t, ENOMEM, root, l->rel, "walk");
            goto out;
        }
        if (x->max_entries > 0 && x->nents >= x->max_entries)
            r = too_many(t);
        else if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            r = wfail(t, errno, root, crel, "stat");
        else if (S_ISDIR(st.st_mode)) {
            struct stat cs;
            int c = -1;
            if (ents_add(x, E_DIR, crel, &st) < 0)
                r = wfail(t, ENOMEM, root, crel, "walk");
            else if ((c = openat(fd, name,
                                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC))
                     < 0)
                r = wfail(t, errno, root, crel, "open directory");
            else if (fstat(c, &cs) < 0 || cs.st_dev != st.st_dev || cs.st_ino != st.st_ino)
                r = wfailmsg(t, root, crel, "replaced during the walk");
            else if (one_fs && cs.st_dev != l->dev && !quota_nested(&qt, c, &cs))
                r = wfailmsg(t, root, crel,
                             "another file system is mounted there, not part "
                             "of the buffer: not copied");
            else if (n == cap) {
                wlevel_t *nv = realloc(v, 2 * cap * sizeof(*v));
                if (!nv)
                    r = wfail(t, ENOMEM, root, crel, "walk");
                else
                    v = nv, cap *= 2;
            }
            if (r < 0) {
                if (c >= 0)
                    close(c);
            } else {
                v[n++] = (wlevel_t){ .dev = st.st_dev, .ino = st.st_ino, .rel = crel };
                crel = NULL;
                close(fd);
                fd = c;
                r = read_names(t, fd, &v[n - 1], root);
            }
        } else if (S_ISREG(st.st_mode)) {
            int first = st.st_nlink > 1 ? hlink_of(x, &st) : -1;
            if (faccessat(fd, name, R_OK, AT_EACCESS) < 0)
                r = wfail(t, errno, root, crel, "not readable by the job's user");
            else if (ents_add(x, first >= 0 ? E_HLINK : E_FILE, crel, &st) < 0)
                r = wfail(t, ENOMEM, root, crel, "walk");
            else if (first >= 0)
                x->ents[x->nents - 1].link_to = first;
        } else if (S_ISLNK(st.st_mode)) {
            if (ents_add(x, E_LINK, crel, &st) < 0)
                r = wfail(t, ENOMEM, root, crel, "walk");
        } else {
            char *cpath = mover_pjoin(root, crel);
            note_special(x, cpath ? cpath : crel);
            free(cpath);
        }
        free(name);
        free(crel);
        if (r < 0)
            goto out;
    }
    rc = 0;
out:
    for (size_t k = 0; k < n; k++)
        wlevel_free(&v[k]);
    free(v);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* mkdir -p of the parents of path, as the current user (mode 0755). */
static int mkparents(task_t *t, const char *path)
{
    char *p = strdup(path);
    if (!p)
        return mover_tfail(t, ENOMEM, path, "mkdir");
    for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        if (mkdir(p, 0755) < 0 && errno != EEXIST) {
            mover_tfail(t, errno, p, "mkdir");
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
        return mover_tfail(t, errno, path, "mkdir");
    if (lstat(path, &st) < 0)
        return mover_tfail(t, errno, path, "stat");
    if (!S_ISDIR(st.st_mode))
        return tfailmsg(t, path, "exists and is not a directory");
    return 0;
}

/* A symbolic link to target at dst, put in place by a rename (whatever was there). */
static int put_link(task_t *t, const entry_t *e, const char *target, const char *dst)
{
    char have[PATH_MAX + 1];
    size_t n = strlen(target);
    ssize_t h = readlink(dst, have, PATH_MAX);
    struct timespec ts[2] = { e->st.st_atim, e->st.st_mtim };
    char *tmp;

    if (h >= 0 && (size_t)h == n && !memcmp(have, target, n))
        return 0; /* already there */
    if (!(tmp = mover_tmp_name(dst, t->x->tid, -1)))
        return mover_tfail(t, ENOMEM, dst, "symlink");
    unlink(tmp);
    if (symlink(target, tmp) < 0) {
        mover_tfail(t, errno, dst, "symlink");
        free(tmp);
        return -1;
    }
    mover_set_owner(t->x, e, -1, tmp, AT_SYMLINK_NOFOLLOW, NULL);
    utimensat(AT_FDCWD, tmp, ts, AT_SYMLINK_NOFOLLOW);
    if (rename(tmp, dst) < 0) {
        mover_tfail(t, errno, dst, "rename");
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

static int make_link(task_t *t, const entry_t *e, const char *src, const char *dst)
{
    char target[PATH_MAX + 1];
    struct stat st;
    ssize_t n = readlink(src, target, PATH_MAX);
    if (n < 0)
        return mover_tfail(t, errno, src, "readlink");
    /* a recovery never puts a link over a file: the file may be one that another
     * part of a spread stage-out copied there for this link (the recovery does not
     * know the parts) */
    if (t->x->resync && lstat(dst, &st) == 0 && !S_ISLNK(st.st_mode))
        return 0;
    target[n] = '\0';
    return put_link(t, e, target, dst);
}

/* ------------------------------------------------------------------ spread parts */
/* Is the symbolic link at path one into the job's directory on some node (made by
 * a spread stage-in, or by the job)?  A stage-out part leaves it out: the part of
 * that node copies the file it names. */
static bool link_into_roots(const mxfer_t *x, const char *path)
{
    char target[PATH_MAX + 1];
    ssize_t n = x->nparts > 1 ? readlink(path, target, PATH_MAX) : -1;
    if (n <= 0)
        return false;
    target[n] = '\0';
    for (int k = 0; k < x->nparts; k++)
        if (util_path_under(target, x->roots[k]))
            return true;
    return false;
}

static int by_size_then_name(const void *a, const void *b, void *arg)
{
    const entry_t *ents = arg, *ea = &ents[*(const int *)a], *eb = &ents[*(const int *)b];
    if (ea->st.st_size != eb->st.st_size)
        return ea->st.st_size > eb->st.st_size ? -1 : 1;
    return strcmp(ea->rel, eb->rel);
}

/* A part of a spread stage-in: which part copies each file (largest first, each to
 * the part with the fewest bytes so far, the lower part on a tie; a hard link goes
 * with the name it links to).  Every part walks the same source and computes the
 * same answer, so no part needs to hear from another.  owner[i]: the part of entry
 * i (-1: every part, a directory; 0: a symbolic link of the source). */
static int assign_parts(task_t *t, int *owner)
{
    mxfer_t *x = t->x;
    int *idx = calloc((size_t)x->nents + 1, sizeof(int)), n = 0;
    int64_t load[MOVER_MAX_PARTS] = { 0 };
    if (!idx)
        return mover_tfail(t, ENOMEM, x->src, "walk");
    for (int i = 0; i < x->nents; i++) {
        owner[i] = x->ents[i].type == E_DIR ? -1 : 0;
        if (x->ents[i].type == E_FILE)
            idx[n++] = i;
    }
    qsort_r(idx, (size_t)n, sizeof(int), by_size_then_name, x->ents);
    for (int f = 0; f < n; f++) {
        int best = 0;
        for (int k = 1; k < x->nparts; k++)
            if (load[k] < load[best])
                best = k;
        owner[idx[f]] = best;
        load[best] += x->ents[idx[f]].st.st_size;
    }
    for (int i = 0; i < x->nents; i++)
        if (x->ents[i].type == E_HLINK)
            owner[i] = owner[x->ents[i].link_to];
    free(idx);
    return 0;
}

/* Part 0 of a spread stage-in: the name of a file another part copies is a
 * symbolic link to it, in that part's node (roots[k] + the same path). */
static int link_to_part(task_t *t, const entry_t *e, int k, const char *d)
{
    mxfer_t *x = t->x;
    const char *below = x->dst + strlen(x->roots[x->part]);
    char *target = mover_xprintf("%s%s/%s", x->roots[k], below, e->rel);
    if (!target)
        return mover_tfail(t, ENOMEM, d, "symlink");
    int rc = put_link(t, e, target, d);
    free(target);
    return rc;
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
           && st.st_ctim.tv_sec > m->boot + BOOT_MARGIN && st.st_mtim.tv_sec == e->st.st_mtim.tv_sec
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
               "this boot, is made durable as it is",
               (uintmax_t)x->tid, x->src, x->dst);
    x->dst_only = true;
    if (stat(x->dst, &st) < 0)
        return mover_tfail(t, errno, x->dst, "stat");
    if (S_ISDIR(st.st_mode) && !x->directory) {
        if (dst_into_dir(t, x) < 0)
            return -1;
        if (stat(x->dst, &st) < 0)
            return mover_tfail(t, errno, x->dst, "stat");
    }
    if (ents_add(x, S_ISDIR(st.st_mode) ? E_DIR : E_FILE, "", &st) < 0)
        return mover_tfail(t, ENOMEM, x->dst, "walk");
    if (S_ISDIR(st.st_mode) && walk_dir(t, x->dst) < 0)
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

int mover_run_prepare(mover_t *m, task_t *t)
{
    mxfer_t *x = t->x;
    struct stat st;
    int64_t total = 0, skipped = 0;

    ident_user(&x->id, x->id.uid, x->id.gid, x->user);
    if (mover_become(m, &x->id) < 0)
        return tfailmsg(t, x->src,
                        m->root ? "cannot act as the job's user"
                                : "bbmgrd is not root: cannot act as the job's user");
    int lrc = x->stage_out && x->nparts > 1 ? lstat(x->src, &st) : 0;
    bool dup = false; /* a lower part is on the same node (a share moved there) */
    for (int k = 0; x->stage_out && k < x->part; k++)
        dup = dup || !strcmp(x->roots[k], x->roots[x->part]);
    if (x->stage_out && x->nparts > 1
        && (dup || (lrc < 0 && errno == ENOENT && x->part > 0)
            || (lrc == 0 && S_ISLNK(st.st_mode) && link_into_roots(x, x->src)))) {
        /* a part of a spread stage-out with nothing on its node */
        bl_debug("mover: transfer %ju: part %d of %d: nothing at %s", (uintmax_t)x->tid, x->part,
                 x->nparts, x->src);
        if (!(x->files = calloc(1, sizeof(int))))
            return mover_tfail(t, ENOMEM, x->src, "walk");
        pthread_mutex_lock(&m->lock);
        x->total = 0;
        pthread_mutex_unlock(&m->lock);
        return 0;
    }
    if (stat(x->src, &st) < 0) {
        if (!x->resync || errno != ENOENT)
            return mover_tfail(t, errno, x->src, "stat");
        /* a recovery whose source is gone: the page cache of this boot still has
         * what the copy wrote, so the destination as it is can be made durable;
         * after a reboot it may have lost data, and nothing can tell */
        if (!(x->done_at > (double)(m->boot + BOOT_MARGIN)))
            return tfailmsg(t, x->src,
                            "gone, and the machine restarted since the stage-out "
                            "was done: its copy cannot be checked");
        return prepare_dst_only(m, t);
    }
    if (x->directory) {
        if (!S_ISDIR(st.st_mode))
            return tfailmsg(t, x->src, "not a directory (type is directory)");
        if (ents_add(x, E_DIR, "", &st) < 0)
            return mover_tfail(t, ENOMEM, x->src, "walk");
        if (walk_dir(t, x->src) < 0)
            return -1;
    } else {
        struct stat dst;
        if (!S_ISREG(st.st_mode))
            return tfailmsg(t, x->src,
                            S_ISDIR(st.st_mode) ? "is a directory (use type=directory)"
                                                : "not a regular file");
        if (faccessat(AT_FDCWD, x->src, R_OK, AT_EACCESS) < 0)
            return mover_tfail(t, errno, x->src, "not readable by the job's user");
        if (stat(x->dst, &dst) == 0 && S_ISDIR(dst.st_mode) && dst_into_dir(t, x) < 0)
            return -1;
        if (ents_add(x, E_FILE, "", &st) < 0)
            return mover_tfail(t, ENOMEM, x->src, "walk");
    }
    if (__atomic_load_n(&x->aborting, __ATOMIC_ACQUIRE))
        return 0;
    int *owner = NULL;
    bool spread_in = !x->stage_out && x->nparts > 1 && x->directory;
    if (spread_in
        && (!(owner = calloc((size_t)x->nents + 1, sizeof(int))) || assign_parts(t, owner) < 0)) {
        free(owner);
        return owner ? -1 : mover_tfail(t, ENOMEM, x->src, "walk");
    }
    if (x->max_bytes > 0) {
        /* the copy writes every byte of the source's size (holes included): a
         * source larger than the buffer would only fill it for everyone on it.
         * max_bytes is this node's share: a part of a spread stage-in counts the
         * files given to it */
        int64_t size = 0;
        for (int i = 0; i < x->nents; i++)
            if (x->ents[i].type == E_FILE && (!owner || owner[i] < 0 || owner[i] == x->part))
                size += x->ents[i].st.st_size;
        if (size > x->max_bytes) {
            char what[200];
            snprintf(what, sizeof(what),
                     "%jd bytes, more than the capacity of the buffer on "
                     "this node (%jd bytes): refused",
                     (intmax_t)size, (intmax_t)x->max_bytes);
            free(owner);
            return tfailmsg(t, x->src, what);
        }
    }
    if (mkparents(t, x->dst) < 0) {
        free(owner);
        return -1;
    }
    if (!(x->files = calloc((size_t)x->nents + 1, sizeof(int)))) {
        free(owner);
        return mover_tfail(t, ENOMEM, x->src, "walk");
    }
    for (int i = 0; i < x->nents; i++) {
        entry_t *e = &x->ents[i];
        char *s = mover_pjoin(x->src, e->rel), *d = mover_pjoin(x->dst, e->rel);
        int r = 0;
        e->foreign = owner && owner[i] >= 0 && owner[i] != x->part;
        if (!s || !d)
            r = mover_tfail(t, ENOMEM, x->src, "path");
        else if (e->type == E_DIR)
            r = make_dir(t, e, d);
        else if (e->foreign)
            r = x->part == 0 && strcmp(x->roots[owner[i]], x->roots[0])
                    ? link_to_part(t, e, owner[i], d)
                    : 0;
        else if (e->type == E_LINK && x->stage_out && link_into_roots(x, s))
            r = 0; /* the part of the node it names copies that file */
        else if (e->type == E_LINK)
            r = make_link(t, e, s, d);
        else if (e->type == E_HLINK)
            r = 0; /* at FINISH, once its first name is in place */
        else {
            total += e->st.st_size;
            if ((e->skipped = already_there(m, e, d)))
                skipped += e->st.st_size;
            else
                x->files[x->nfiles++] = i;
        }
        free(s);
        free(d);
        if (r < 0) {
            free(owner);
            return -1;
        }
    }
    free(owner);
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
int mover_open_regular(const char *path, const struct stat *want)
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
    if (fd < 0 && errno == ENOENT) /* no /proc: by the path again, checked below */
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
    if ((f->sfd = mover_open_regular(f->src, &f->e->st)) < 0) {
        rc = errno == ENODEV || errno == ESTALE
                 ? tfailmsg(t, f->src, "replaced during the transfer (not the file the walk saw)")
                 : mover_tfail(t, errno, f->src, "open");
        goto fail;
    }
    if (fstat(f->sfd, &st) < 0) {
        rc = mover_tfail(t, errno, f->src, "stat");
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
            rc = mover_tfail(t, errno, f->dst, "create");
            goto fail;
        }
        if (unlink(f->tmp) < 0 && errno != ENOENT) {
            rc = mover_tfail(t, errno, f->tmp, "remove a stale partial file");
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

/* pread or pwrite of exactly len bytes at off; a read that meets the end of the
 * file fails with ENODATA (the source shrank). */
static int rw_full(int fd, unsigned char *buf, uint64_t len, uint64_t off, bool wr)
{
    uint64_t did = 0;
    while (did < len) {
        ssize_t n = wr ? pwrite(fd, buf + did, len - did, (off_t)(off + did))
                       : pread(fd, buf + did, len - did, (off_t)(off + did));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ENODATA;
            return -1;
        }
        did += (uint64_t)n;
    }
    return 0;
}

static int read_full(int fd, unsigned char *buf, uint64_t len, uint64_t off)
{
    return rw_full(fd, buf, len, off, false);
}

static int write_full(int fd, const unsigned char *buf, uint64_t len, uint64_t off)
{
    return rw_full(fd, (unsigned char *)buf, len, off, true);
}

/* Start writing the chunk back now (without waiting), so that the fsync before the
 * rename finds little left to write: the device writes while the next chunks are
 * read, as a streaming copy would. */
static void start_writeback(int fd, uint64_t off, uint64_t len)
{
    sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
}

static int file_complete(mover_t *m, task_t *t);

/* A chunk that is all hole in the source: not written (the copy keeps the hole;
 * file_complete() gives the copy its size). */
static bool chunk_is_hole(const mfile_t *f, const task_t *t)
{
    if ((uint64_t)f->e->st.st_blocks * 512 >= (uint64_t)f->e->st.st_size)
        return false; /* not sparse */
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
                return mover_tfail(t, errno, f->src,
                                   errno == ENODATA ? "shrank during the transfer" : "read");
            uint64_t sum = cksum(m->alg, w->buf, len);
            if (write_full(f->dfd, w->buf, len, off) < 0)
                return mover_tfail(t, errno, f->dst, "write");
            /* read the block back from the copy at the offset it was meant for, while
             * the data is still in the CPU's cache, into a buffer of its own */
            if (read_full(f->dfd, w->rbuf, len, off) < 0)
                return mover_tfail(t, errno == ENODATA ? EIO : errno, f->dst, "read back");
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
            if (n < 0
                && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
                uint64_t off = (uint64_t)in;
                if (read_full(f->sfd, w->buf, left, off) < 0)
                    return mover_tfail(t, errno, f->src, "read");
                if (write_full(f->dfd, w->buf, left, off) < 0)
                    return mover_tfail(t, errno, f->dst, "write");
                break;
            }
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                return mover_tfail(t, errno, f->dst, "copy");
            }
            if (n == 0)
                return mover_tfail(t, ENODATA, f->src, "shrank during the transfer");
            left -= (uint64_t)n;
        }
    }
    /* fsync'd before done: start writing back now, so that the device writes while
     * the next chunks are read and the fsync finds little left to do */
    if (x->sync_each)
        start_writeback(f->dfd, t->off, t->len);
    return 0;
}

int mover_run_chunk(mover_t *m, worker_t *w, task_t *t)
{
    mfile_t *f = t->f;
    mxfer_t *x = t->x;

    if (__atomic_load_n(&x->aborting, __ATOMIC_ACQUIRE)) {
        t->skipped = true;
        return 0;
    }
    if (mover_become(m, &x->id) < 0)
        return mover_tfail(t, errno, f->src, "act as the job's user");
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
            mover_file_cleanup(f);
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ FILE */
void mover_file_cleanup(mfile_t *f)
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
        return mover_tfail(t, errno, f->dst, "close");
    if (rename(f->tmp, f->dst) < 0)
        return mover_tfail(t, errno, f->dst, "rename");
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
        return mover_tfail(t, errno, f->dst, "stat");
    if (dst.st_size < e->st.st_size) {
        /* trailing chunks that were holes */
        if (ftruncate(f->dfd, e->st.st_size) < 0 || fstat(f->dfd, &dst) < 0)
            return mover_tfail(t, errno, f->dst, "set size");
    }
    if (verify_copy(m, t, f, &dst) < 0)
        return -1;
    if (fstat(f->sfd, &st) < 0)
        return mover_tfail(t, errno, f->src, "stat");
    if (st.st_size != e->st.st_size || st.st_mtim.tv_sec != e->st.st_mtim.tv_sec
        || st.st_mtim.tv_nsec != e->st.st_mtim.tv_nsec)
        return tfailmsg(t, f->src, "changed during the transfer");
    mover_set_owner(x, e, f->dfd, f->dst, 0, &dst);
    /* (after the chown, which clears set-user-ID and set-group-ID bits) */
    if ((dst.st_mode & 07777) != (e->st.st_mode & 07777)
        && fchmod(f->dfd, e->st.st_mode & 07777) < 0)
        return mover_tfail(t, errno, f->dst, "chmod");
    if (futimens(f->dfd, ts) < 0)
        return mover_tfail(t, errno, f->dst, "set times");
    close(f->sfd);
    f->sfd = -1;
    if (x->sync_each) {
        t->to_sync = true;
        return 0;
    }
    return file_install(t, f);
}

int mover_run_file(mover_t *m, task_t *t)
{
    mfile_t *f = t->f;
    mxfer_t *x = t->x;

    if (mover_become(m, &x->id) < 0) {
        mover_tfail(t, errno, f->src, "act as the job's user");
        goto fail;
    }
    if (__atomic_load_n(&x->aborting, __ATOMIC_ACQUIRE))
        goto fail;
    if (file_complete(m, t) < 0)
        goto fail;
    return 0;
fail:
    t->to_sync = false;
    mover_file_cleanup(f);
    return t->ok ? 0 : -1;
}

/* ------------------------------------------------------------------ SYNC */
/* A batch of verified files of a durable transfer: write back the data of all of
 * them, then fsync each (after the first, the journal commit has usually covered
 * the others), then rename each into place.  No file gets its final name before
 * its data and attributes are on disk. */
int mover_run_sync(mover_t *m, task_t *t)
{
    mxfer_t *x = t->x;
    mfile_t *f;

    if (mover_become(m, &x->id) < 0) {
        mover_tfail(t, errno, x->dst, "act as the job's user");
        goto fail;
    }
    if (__atomic_load_n(&x->aborting, __ATOMIC_ACQUIRE))
        goto fail;
    for (f = t->batch; f; f = f->snext)
        sync_file_range(f->dfd, 0, 0, SYNC_FILE_RANGE_WRITE);
    for (f = t->batch; f; f = f->snext)
        sync_file_range(f->dfd, 0, 0,
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE
                            | SYNC_FILE_RANGE_WAIT_AFTER);
    for (f = t->batch; f; f = f->snext)
        if (fsync(f->dfd) < 0) {
            mover_tfail(t, errno, f->dst, "fsync");
            goto fail;
        }
    for (f = t->batch; f; f = f->snext)
        if (file_install(t, f) < 0)
            goto fail;
    return 0;
fail:
    /* the files not yet renamed are removed; renamed ones are complete and durable */
    for (f = t->batch; f; f = f->snext)
        mover_file_cleanup(f);
    return t->ok ? 0 : -1;
}
