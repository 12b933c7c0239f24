/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bufdir.c — buffer directories by descriptors (see bufdir.h).
 *
 * The removal of a tree.  A user controls everything below a buffer directory:
 * its depth (a chain of directories as deep as the file system's inodes allow),
 * its names, its types, and it may change it while it is removed (a process left
 * running with its working directory inside).  So:
 *   - no recursion: the walk keeps, per level, the device and inode of the
 *     directory and the name it has in its parent, on the heap, and one open
 *     descriptor (the current directory); it goes down with openat(name) and up
 *     with openat(".."), checked against the device and inode it came from;
 *   - each directory is given to the daemon (mode 0700) before it is read: from
 *     then on nobody but the daemon adds, renames or removes anything in it, so
 *     that each scan only finds fewer entries and the walk ends;
 *   - never a symbolic link followed, never a device opened (O_NONBLOCK), never
 *     another file system entered (a directory of another device is an error),
 *     but for a btrfs subvolume the user made below the buffer, of the same file
 *     system and mount (quota_nested()): it is made writable (a read-only
 *     snapshot), emptied, taken out of the buffer's level-1 qgroup and removed
 *     as any directory; that qgroup is destroyed once the top is empty
 *     (quota_tree_drop());
 *   - a wide directory is read in batches of BATCH subdirectory names, so that
 *     memory is bounded per level and a directory is read again only once a batch
 *     is done.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bufdir.h"
#include "log.h"
#include "quota.h"

#define BATCH 1024           /* subdirectory names kept per level between two reads */
#define BTRFS_SUBVOL_INO 256 /* the inode of a btrfs subvolume's root */

typedef struct {
    dev_t dev;
    ino_t ino;
    char *name;  /* its name in the level above (NULL at the top) */
    char **pend; /* subdirectories to empty, then remove */
    size_t npend;
    bool clean;  /* the last read found nothing left */
    bool failed; /* something in it could not be removed: not read again */
    bool subvol; /* a subvolume made below the top (quota_nested()) */
} level_t;

typedef struct {
    bufdir_rm_t *o;
    hu_error_t *why; /* may be NULL */
    int err;         /* first error */
    bool fatal;      /* the walk cannot go on (stopped, lost its way, no memory) */
    dev_t dev;       /* the file system walked */
    quota_tree_t qt; /* to tell the subvolumes made below the top */
} walk_t;

static void note(walk_t *w, int err, size_t depth, const char *name, const char *what)
{
    if (w->err)
        return;
    w->err = err;
    hu_errprintf(w->why, "%s '%.200s' at depth %zu: %s", what, name, depth, strerror(err));
}

static bool stopping(const walk_t *w)
{
    return w->o->stop && __atomic_load_n(w->o->stop, __ATOMIC_RELAXED);
}

/* The directory open at fd becomes o->uid's alone before it is read. */
static int lock_dir(walk_t *w, int fd, const struct stat *st)
{
    if ((st->st_uid != w->o->uid || st->st_gid != w->o->gid)
        && fchown(fd, w->o->uid, w->o->gid) < 0)
        return -1;
    if ((st->st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0)
        return -1;
    return 0;
}

static void level_free(level_t *l)
{
    for (size_t i = 0; i < l->npend; i++)
        free(l->pend[i]);
    free(l->pend);
    free(l->name);
    memset(l, 0, sizeof(*l));
}

/* Read the directory at fd (level l, depth): remove what is not a directory and
 * the empty directories, keep the names of the others (BATCH at most). */
static void scan(walk_t *w, int fd, level_t *l, size_t depth)
{
    int sfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = sfd >= 0 ? fdopendir(sfd) : NULL;
    struct dirent *e;
    bool kept = false;
    if (!d) {
        if (sfd >= 0)
            close(sfd);
        note(w, errno, depth, ".", "read");
        l->failed = true;
        return;
    }
    if (!(l->pend = l->pend ? l->pend : calloc(BATCH, sizeof(char *)))) {
        closedir(d);
        note(w, ENOMEM, depth, ".", "read");
        l->failed = true;
        return;
    }
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        unsigned char type = e->d_type;
        if (!strcmp(n, ".") || !strcmp(n, ".."))
            continue;
        if (stopping(w))
            break;
        if (type == DT_UNKNOWN) {
            struct stat st;
            if (fstatat(fd, n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT) {
                    note(w, errno, depth, n, "stat");
                    l->failed = true;
                }
                continue;
            }
            type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
        }
        if (type == DT_DIR && w->qt.top) {
            /* a subvolume of the user's: out of the buffer's qgroup before it goes */
            struct stat st;
            if (fstatat(fd, n, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == BTRFS_SUBVOL_INO
                && l->npend < BATCH) {
                kept = true;
                if (!(l->pend[l->npend] = strdup(n))) {
                    note(w, ENOMEM, depth, n, "remove");
                    l->failed = true;
                    break;
                }
                l->npend++;
                continue;
            }
        }
        if (type != DT_DIR) {
            if (unlinkat(fd, n, 0) == 0 || errno == ENOENT) {
                w->o->removed++;
            } else {
                note(w, errno, depth, n, "remove");
                l->failed = true;
            }
            continue;
        }
        if (unlinkat(fd, n, AT_REMOVEDIR) == 0 || errno == ENOENT) {
            w->o->removed++;
            continue;
        }
        if (errno != ENOTEMPTY && errno != EEXIST && errno != EACCES && errno != EPERM) {
            note(w, errno, depth, n, "remove");
            l->failed = true;
            continue;
        }
        kept = true;
        if (l->npend == BATCH)
            continue; /* the next batch: read again once this one is done */
        if (!(l->pend[l->npend] = strdup(n))) {
            note(w, ENOMEM, depth, n, "remove");
            l->failed = true;
            break;
        }
        l->npend++;
    }
    closedir(d);
    l->clean = !kept && !l->failed;
}

int bufdir_empty(int dfd, bufdir_rm_t *o, hu_error_t *why)
{
    walk_t w = { .o = o, .why = why };
    level_t *v = NULL;
    size_t n = 0, cap = 0;
    struct stat st;
    int cur = fcntl(dfd, F_DUPFD_CLOEXEC, 0);

    o->removed = 0;
    o->depth = 0;
    if (why)
        why->text[0] = '\0';
    if (cur < 0 || fstat(cur, &st) < 0 || !S_ISDIR(st.st_mode)) {
        note(&w, cur < 0 ? errno : S_ISDIR(st.st_mode) ? errno : ENOTDIR, 0, ".", "open");
        goto out;
    }
    w.dev = st.st_dev;
    quota_tree_init(&w.qt, cur, &st);
    if (lock_dir(&w, cur, &st) < 0) {
        note(&w, errno, 0, ".", "lock");
        goto out;
    }
    if (!(v = calloc(cap = 64, sizeof(*v)))) {
        note(&w, ENOMEM, 0, ".", "walk");
        goto out;
    }
    v[n++] = (level_t){ .dev = st.st_dev, .ino = st.st_ino };
    /* an error below a directory (a file that cannot be removed) does not end the
     * walk: every other directory is still reached, given to the daemon and emptied,
     * so that what is left is only what failed, and nothing of it is the user's */
    while (n > 0 && !w.fatal) {
        level_t *l = &v[n - 1];
        if (stopping(&w)) {
            w.err = 0; /* the reason is that one */
            note(&w, EINTR, n, ".", "stopped");
            w.fatal = true;
            break;
        }
        if (n > o->depth)
            o->depth = n;
        if (l->npend == 0 && !l->clean && !l->failed)
            scan(&w, cur, l, n);
        if (l->npend > 0) {
            char *name = l->pend[--l->npend];
            int c = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            if (c < 0) {
                /* gone, or no longer a directory: removed as what it is now */
                if (errno == ENOTDIR || errno == ELOOP) {
                    if (unlinkat(cur, name, 0) < 0 && errno != ENOENT) {
                        note(&w, errno, n, name, "remove");
                        l->failed = true;
                    }
                } else if (errno != ENOENT) {
                    note(&w, errno, n, name, "open");
                    l->failed = true;
                }
                free(name);
                continue;
            }
            /* another device: only a subvolume the user made (same file system,
             * same mount) is entered */
            int fe = fstat(c, &st) < 0 ? errno : 0;
            bool sub = !fe && st.st_dev != l->dev, other = sub && !quota_nested(&w.qt, c, &st);
            if (fe || other || (sub && quota_nested_rw(c) < 0) || lock_dir(&w, c, &st) < 0) {
                note(&w,
                     other ? EXDEV
                     : fe  ? fe
                           : errno,
                     n, name, other ? "another file system is mounted at" : "lock");
                l->failed = true;
                close(c);
                free(name);
                continue;
            }
            if (n == cap) {
                level_t *nv = realloc(v, 2 * cap * sizeof(*v));
                if (!nv) {
                    note(&w, ENOMEM, n, name, "walk");
                    w.fatal = true;
                    close(c);
                    free(name);
                    break;
                }
                v = nv;
                cap *= 2;
            }
            v[n++] = (level_t){ .dev = st.st_dev, .ino = st.st_ino, .name = name, .subvol = sub };
            close(cur);
            cur = c;
            continue;
        }
        if (n == 1)
            break; /* the top: empty, or failed */
        /* this level is done: up, to the directory it was reached from; a subvolume
         * of the user's leaves the buffer's qgroup once empty (the kernel refuses
         * that while the group is over its limit) */
        if (l->subvol && !l->failed && quota_nested_leave(&w.qt, cur) < 0)
            bl_warning("teardown: subvolume '%s' out of the buffer's qgroup 1/%ju: %s", l->name,
                       (uintmax_t)w.qt.top, strerror(errno));
        int up = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (up < 0 || fstat(up, &st) < 0 || st.st_dev != v[n - 2].dev
            || st.st_ino != v[n - 2].ino) {
            note(&w, up < 0 ? errno : ESTALE, n, "..", "go up to the parent");
            w.fatal = true;
            if (up >= 0)
                close(up);
            break;
        }
        close(cur);
        cur = up;
        bool failed = l->failed;
        char *name = l->name;
        l->name = NULL;
        level_free(l);
        n--;
        if (failed) {
            v[n - 1].failed = true;
        } else if (unlinkat(cur, name, AT_REMOVEDIR) == 0 || errno == ENOENT) {
            o->removed++;
        } else {
            note(&w, errno, n, name, "remove");
            v[n - 1].failed = true;
        }
        v[n - 1].clean = false; /* read again once its batch is done */
        free(name);
    }
    if (!w.err && quota_tree_drop(&w.qt, cur) < 0)
        bl_warning("teardown: the buffer's qgroup 1/%ju: %s (btrfs qgroup destroy)",
                   (uintmax_t)w.qt.top, strerror(errno));
out:
    for (size_t i = 0; i < n; i++)
        level_free(&v[i]);
    free(v);
    if (cur >= 0)
        close(cur);
    if (w.err) {
        errno = w.err;
        return -1;
    }
    return 0;
}

int bufdir_trash_path(int pfd, const char *parent, ino_t ino, char *out, size_t len)
{
    struct stat ts;
    uint64_t rnd;
    if (mkdirat(pfd, BUFDIR_TRASH, 0711) < 0 && errno != EEXIST)
        return -1;
    if (fstatat(pfd, BUFDIR_TRASH, &ts, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(ts.st_mode)
        || ts.st_uid != geteuid() || (ts.st_mode & 0066)) {
        errno = EPERM;
        return -1;
    }
    if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return -1;
    if ((size_t)snprintf(out, len, "%s/" BUFDIR_TRASH "/%ju.%016" PRIx64, parent, (uintmax_t)ino,
                         rnd)
        >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int bufdir_trash_each(int pfd, const char *parent, bufdir_trash_f fn, void *arg)
{
    int tfd =
        openat(pfd, BUFDIR_TRASH, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    struct dirent *e;
    DIR *d;
    if (tfd < 0)
        return 0;
    if (fstat(tfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 0066)) {
        bl_warning("%s/" BUFDIR_TRASH " is not a directory of uid %u that only it can list "
                   "or write: not used",
                   parent, (unsigned)geteuid());
        close(tfd);
        return 0;
    }
    if (!(d = fdopendir(tfd))) {
        close(tfd);
        return -1;
    }
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")
            || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
            continue;
        if (fn(dirfd(d), e->d_name, &st, arg))
            break;
    }
    closedir(d);
    return 0;
}

/* <mfd>/.harmonia-spare, made if missing: a directory of ours, 0700. */
static int spare_fd(int mfd, const char *mount, bufdir_spares_t s)
{
    struct stat st;
    int fd;
    if (*s.off)
        return -1;
    if (mkdirat(mfd, BUFDIR_SPARE, 0700) < 0 && errno != EEXIST)
        goto off;
    fd = openat(mfd, BUFDIR_SPARE, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        goto off;
    if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700) {
        close(fd);
        errno = EPERM;
        goto off;
    }
    return fd;
off:
    bl_warning("spare directories in %s/" BUFDIR_SPARE ": %s (none on this mount)", mount,
               errno == EPERM ? "not a directory of this daemon's uid with mode 0700"
                              : strerror(errno));
    *s.off = true;
    return -1;
}

void bufdir_spares_fill(int mfd, const char *mount, bufdir_spares_t s, int budget)
{
    char n[32];
    int fd;
    if (*s.n >= BUFDIR_SPARE_MAX || (fd = spare_fd(mfd, mount, s)) < 0)
        return;
    while (*s.n < BUFDIR_SPARE_MAX && budget-- > 0) {
        snprintf(n, sizeof(n), "%u", *s.top);
        /* EEXIST: one of an earlier run, empty and ours */
        if (mkdirat(fd, n, 0700) < 0 && errno != EEXIST) {
            bl_warning("spare directory %s/" BUFDIR_SPARE "/%s: %s", mount, n, strerror(errno));
            *s.off = true;
            break;
        }
        (*s.top)++;
        (*s.n)++;
    }
    close(fd);
}

bool bufdir_spare_take(int mfd, const char *mount, bufdir_spares_t s, int pfd, const char *name)
{
    char n[32];
    int fd;
    if (*s.n <= 0 || (fd = spare_fd(mfd, mount, s)) < 0)
        return false;
    while (*s.n > 0) {
        (*s.n)--;
        (*s.top)--;
        snprintf(n, sizeof(n), "%u", *s.top);
        if (renameat(fd, n, pfd, name) == 0) {
            close(fd);
            return true;
        }
        if (errno != ENOENT) {
            bl_warning("spare directory %s/" BUFDIR_SPARE "/%s -> %s: %s", mount, n, name,
                       strerror(errno));
            break;
        }
    }
    close(fd);
    return false;
}

int bufdir_create(int pfd, const char *name, int mfd, const char *mount, const bufdir_spares_t *s,
                  uid_t uid, gid_t gid, struct stat *st, const char **what)
{
    if (!(s && bufdir_spare_take(mfd, mount, *s, pfd, name)) && mkdirat(pfd, name, 0700) < 0) {
        *what = "mkdir";
        return -1;
    }
    return bufdir_own(pfd, name, uid, gid, st, what);
}

int bufdir_own(int pfd, const char *name, uid_t uid, gid_t gid, struct stat *st, const char **what)
{
    int fd, e;
    fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *what = "open";
        return -1;
    }
    if (fstat(fd, st) < 0 || st->st_uid != geteuid()) {
        e = errno;
        close(fd);
        *what = "not the directory made for it";
        errno = st->st_uid != geteuid() ? EEXIST : e;
        return -1;
    }
    if (fchown(fd, uid, gid) < 0 || fchmod(fd, 0700) < 0 || fstat(fd, st) < 0) {
        e = errno;
        close(fd);
        *what = "owner";
        errno = e;
        return -1;
    }
    close(fd);
    return 0;
}

/* ------------------------------------------------------------------ usage
 * A depth-first walk kept on the heap: per level the device, inode and name of the
 * directory and the names of its subdirectories still to visit; the directory of
 * the deepest level is the one open descriptor (and its DIR while it is read), kept
 * between steps.  Up is openat(".."), checked against the level above.
 * Where the file system gives handles and the caller may open by them (root: a
 * daemon), each directory is also kept by its handle and reached by it, down and
 * up: a user moving directories about during the walk (to make it fail, or miss
 * what they hold) does not change what it finds; a directory is walked once. */
typedef struct {
    char *name;
    struct file_handle *fh; /* NULL: none (reached by its name) */
} usub_t;

typedef struct {
    dev_t dev;
    ino_t ino;
    struct file_handle *fh; /* of this level's directory; NULL: up is ".." */
    usub_t *sub;
    size_t nsub, cap;
} ulevel_t;

struct bufdir_usage {
    int fd; /* the deepest level's directory, -1: no walk going on */
    DIR *d; /* while that directory is read */
    ulevel_t *lv;
    size_t nlv, caplv;
    dev_t dev;
    quota_tree_t qt; /* to tell the subvolumes made below the top */
    uint64_t bytes;
    ino_t *seen; /* inodes of files of several links met (open addressing, 0: free),
                               and of the directories walked by handle */
    size_t nseen, capseen;
    bool nofh; /* handles refused (not root, not supported): by names only */
};

bufdir_usage_t *bufdir_usage_new(void)
{
    bufdir_usage_t *u = calloc(1, sizeof(*u));
    if (u)
        u->fd = -1;
    return u;
}

static void usage_reset(bufdir_usage_t *u)
{
    if (u->d)
        closedir(u->d);
    if (u->fd >= 0)
        close(u->fd);
    for (size_t i = 0; i < u->nlv; i++) {
        for (size_t k = 0; k < u->lv[i].nsub; k++) {
            free(u->lv[i].sub[k].name);
            free(u->lv[i].sub[k].fh);
        }
        free(u->lv[i].sub);
        free(u->lv[i].fh);
    }
    free(u->seen);
    u->d = NULL;
    u->fd = -1;
    u->nlv = 0;
    u->seen = NULL;
    u->nseen = u->capseen = 0;
    u->bytes = 0;
}

void bufdir_usage_free(bufdir_usage_t *u)
{
    if (!u)
        return;
    usage_reset(u);
    free(u->lv);
    free(u);
}

/* true when ino was not met yet in this walk (and it is now) */
static bool usage_first(bufdir_usage_t *u, ino_t ino)
{
    if (ino == 0)
        return true;
    if (2 * (u->nseen + 1) > u->capseen) {
        size_t cap = u->capseen ? 2 * u->capseen : 64;
        ino_t *t = calloc(cap, sizeof(ino_t));
        if (!t)
            return true; /* counted again rather than not at all */
        for (size_t i = 0; i < u->capseen; i++)
            if (u->seen[i])
                for (size_t h = (size_t)u->seen[i] % cap;; h = (h + 1) % cap)
                    if (!t[h]) {
                        t[h] = u->seen[i];
                        break;
                    }
        free(u->seen);
        u->seen = t;
        u->capseen = cap;
    }
    for (size_t h = (size_t)ino % u->capseen;; h = (h + 1) % u->capseen) {
        if (u->seen[h] == ino)
            return false;
        if (!u->seen[h]) {
            u->seen[h] = ino;
            u->nseen++;
            return true;
        }
    }
}

/* The handle of <fd>/name (fd itself when name is ""), never following a link;
 * NULL: none (the walk goes by names). */
static struct file_handle *usage_handle(bufdir_usage_t *u, int fd, const char *name)
{
    union {
        struct file_handle fh;
        char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
    } h;
    int mount_id;
    if (u->nofh)
        return NULL;
    h.fh.handle_bytes = MAX_HANDLE_SZ;
    if (name_to_handle_at(fd, name, &h.fh, &mount_id, *name ? 0 : AT_EMPTY_PATH) < 0) {
        if (errno == EOPNOTSUPP || errno == ENOSYS)
            u->nofh = true;
        return NULL;
    }
    struct file_handle *r = malloc(sizeof(*r) + h.fh.handle_bytes);
    if (r)
        memcpy(r, &h.fh, sizeof(*r) + h.fh.handle_bytes);
    return r;
}

/* The directory of handle fh, on the file system of fd, or -1 (errno); a refusal
 * (no CAP_DAC_READ_SEARCH) turns handles off for this walker. */
static int usage_open(bufdir_usage_t *u, int fd, struct file_handle *fh)
{
    int r = open_by_handle_at(fd, fh, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    if (r < 0 && (errno == EPERM || errno == ENOSYS || errno == EOPNOTSUPP))
        u->nofh = true;
    return r;
}

/* fh: the directory's handle, the level's from then on (NULL: none) */
static int usage_push(bufdir_usage_t *u, int fd, const struct stat *st, struct file_handle *fh)
{
    if (u->nlv == u->caplv) {
        size_t cap = u->caplv ? 2 * u->caplv : 16;
        ulevel_t *t = realloc(u->lv, cap * sizeof(*t));
        if (!t)
            return -1;
        u->lv = t;
        u->caplv = cap;
    }
    int rfd = dup(fd);
    if (rfd < 0)
        return -1;
    if (!(u->d = fdopendir(rfd))) {
        close(rfd);
        return -1;
    }
    u->lv[u->nlv++] = (ulevel_t){ st->st_dev, st->st_ino, fh, NULL, 0, 0 };
    return 0;
}

/* What tells an inode met in the walk: its number and device (the subvolumes of a
 * btrfs each number theirs from 256) */
static ino_t usage_key(const struct stat *st)
{
    return st->st_ino ^ ((ino_t)st->st_dev << 40);
}

static int usage_keep(bufdir_usage_t *u, ulevel_t *l, int fd, const char *name)
{
    if (l->nsub == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        usub_t *t = realloc(l->sub, cap * sizeof(*t));
        if (!t)
            return -1;
        l->sub = t;
        l->cap = cap;
    }
    if (!(l->sub[l->nsub].name = strdup(name)))
        return -1;
    l->sub[l->nsub++].fh = usage_handle(u, fd, name);
    return 0;
}

static int usage_fail(bufdir_usage_t *u, int err)
{
    usage_reset(u);
    errno = err;
    return -1;
}

int bufdir_usage_step(bufdir_usage_t *u, int dfd, unsigned long *budget, uint64_t *bytes)
{
    struct stat st;
    if (u->fd < 0) {
        if ((u->fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
            return usage_fail(u, errno);
        if (fstat(u->fd, &st) < 0)
            return usage_fail(u, errno);
        struct file_handle *fh = usage_handle(u, u->fd, "");
        if (usage_push(u, u->fd, &st, fh) < 0) {
            free(fh);
            return usage_fail(u, errno);
        }
        u->dev = st.st_dev;
        quota_tree_init(&u->qt, u->fd, &st);
        u->bytes = (uint64_t)st.st_blocks * 512;
    }
    while (*budget > 0) {
        ulevel_t *top = &u->lv[u->nlv - 1];
        if (u->d) {
            struct dirent *e;
            errno = 0;
            if (!(e = readdir(u->d))) {
                if (errno)
                    return usage_fail(u, errno);
                closedir(u->d);
                u->d = NULL;
                continue;
            }
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            (*budget)--;
            if (fstatat(u->fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue; /* gone meanwhile */
            if (S_ISDIR(st.st_mode)) {
                u->bytes += (uint64_t)st.st_blocks * 512;
                if ((st.st_dev == top->dev || (u->qt.btrfs && st.st_ino == BTRFS_SUBVOL_INO))
                    && usage_keep(u, top, u->fd, e->d_name) < 0)
                    return usage_fail(u, ENOMEM);
            } else if (st.st_nlink <= 1 || usage_first(u, usage_key(&st))) {
                u->bytes += (uint64_t)st.st_blocks * 512;
            }
            continue;
        }
        (*budget)--;
        if (top->nsub > 0) { /* down into the next subdirectory */
            usub_t sub = top->sub[--top->nsub];
            /* by its handle, wherever it is now (once), else by its name */
            int fd = sub.fh ? usage_open(u, u->fd, sub.fh) : -1;
            if (fd < 0 && (!sub.fh || u->nofh))
                fd = openat(u->fd, sub.name,
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            free(sub.name);
            if (fd < 0) {
                free(sub.fh);
                continue; /* gone, or not a directory any more */
            }
            /* another device: only a subvolume the user made (same file system, same
             * mount) is entered */
            if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode)
                || (st.st_dev != top->dev && !quota_nested(&u->qt, fd, &st))
                || (sub.fh && !u->nofh && !usage_first(u, usage_key(&st)))) {
                free(sub.fh);
                close(fd);
                continue;
            }
            /* a subvolume of the user's counts in the buffer's qgroup from now on
             * (EEXIST: it does already; ENOENT: the buffer has no level-1 qgroup) */
            if (st.st_dev != top->dev && quota_nested_join(&u->qt, fd) < 0 && errno != ENOENT)
                bl_debug("usage: a subvolume below the buffer into its qgroup: %s",
                         strerror(errno));
            if (usage_push(u, fd, &st, sub.fh) < 0) {
                free(sub.fh);
                close(fd);
                return usage_fail(u, errno);
            }
            close(u->fd);
            u->fd = fd;
            continue;
        }
        free(top->sub);
        free(top->fh);
        if (--u->nlv == 0) { /* the walk is complete */
            *bytes = u->bytes;
            usage_reset(u);
            return 1;
        }
        top = &u->lv[u->nlv - 1];
        int fd = top->fh ? usage_open(u, u->fd, top->fh) : -1;
        if (fd < 0 && (!top->fh || u->nofh))
            fd = openat(u->fd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != top->dev || st.st_ino != top->ino) {
            if (fd >= 0)
                close(fd);
            return usage_fail(u, ESTALE);
        }
        close(u->fd);
        u->fd = fd;
    }
    return 0;
}
