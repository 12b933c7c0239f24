/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_bufdir.c — buffer directories: creation (from spares), teardown through the
 * trash, and the buffers held on disk after their allocation.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "libhsched/hsched.h"
#include "bufdir.h"
#include "core_bufdir.h"
#include "nodes.h"
#include "log.h"
#include "util.h"

/* ------------------------------------------------------------------ buffer directories
 * A job's directory is <mount>/<jobid>, a persistent buffer's
 * <mount>/persistent/<name>, on every node of the allocation (nodes sharing a mount
 * share the directory).  Created mode 0700 for the owner when the allocation is
 * made, removed with everything in it when it is released (by the mover's workers,
 * after the job's transfers have stopped).  Mounts that do not exist are left
 * alone (development set-ups with stage.mode scheduled or immediate). */
#define SPARE_DIR BUFDIR_SPARE
bool core_dir_name_ok(const char *name, bool job)
{
    return *name && strcmp(name, ".") && strcmp(name, "..") && !strchr(name, '/')
           && strcmp(name, MOVER_TRASH)
           && !(job && (!strcmp(name, "persistent") || !strcmp(name, SPARE_DIR)));
}

/*
 * Incarnations.  A buffer's name (a job id, which a requeued Slurm job keeps, or a
 * persistent buffer's name) is free again as soon as its buffer is gone from memory,
 * while its directory may still wait for its teardown (transfers stopping, a
 * stage-out to make durable).  A directory is never adopted: a new buffer whose
 * path is taken moves the old directory aside to <parent>/.harmonia-trash/<inode>.
 * <random> (a name no other directory can have, nobody can guess) under the mover's
 * lock, where its teardown and the stage-outs reading from it follow it, and gets a
 * directory of its own (bufdir_create(), relative to its parent).  A teardown moves
 * its directory there too before it empties it (bufdir_empty(), as the daemon, by
 * descriptors), and only if it is still the directory (device and inode) it was
 * for.  The trash directory is the daemon's, mode 0711: nobody else can list it.
 */
static bool trash_path(const char *path, const struct stat *st, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');
    char parent[1200];
    if (!slash)
        return false;
    snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0 || mover_trash_path(pfd, parent, st->st_ino, out, len) < 0) {
        if (errno == EPERM)
            bl_warning("%s/" MOVER_TRASH " is not a directory of uid %u writable by it alone: "
                       "not used",
                       parent, (unsigned)geteuid());
        else
            bl_warning("%s/" MOVER_TRASH ": %s", parent, strerror(errno));
        if (pfd >= 0)
            close(pfd);
        return false;
    }
    close(pfd);
    return true;
}

static int held_id_row(sqlite3_stmt *s, void *arg)
{
    (void)s;
    *(bool *)arg = true;
    return 1;
}

/* Is st, at path, the directory of a held buffer (kept_dirs)?  Its identity is
 * per node: of a node of bbmgrd (not an agent's) whose mount holds path.  With
 * only_kept, of one an administrator must release (not one that only waits for
 * its stage-outs to be durable). */
static bool held_id_of(core_t *c, const char *path, const struct stat *st, bool only_kept)
{
    bool found = false;
    for (int i = 0; i < c->nnodes && !found; i++)
        if (!nodes_is_agent(c, i) && util_path_under(path, c->nodes[i].mount))
            state_read(c->st, only_kept ? SR_KEPT_ID_KEPT : SR_KEPT_ID, held_id_row, &found, "sii",
                       c->nodes[i].name, (int64_t)st->st_dev, (int64_t)st->st_ino);
    return found;
}

bool core_held_id(core_t *c, const char *path, const struct stat *st)
{
    return held_id_of(c, path, st, false);
}

bool core_held_id_kept(core_t *c, const char *path, const struct stat *st)
{
    return held_id_of(c, path, st, true);
}

/* path is taken by an earlier buffer of the same name (lock held): move it aside
 * (its teardown follows, or one is queued).  false: it could not be. */
static bool bufdir_aside(core_t *c, const char *path, const struct stat *st)
{
    char trash[1300];
    if (!trash_path(path, st, trash, sizeof(trash)))
        return false;
    if (c->mover ? mover_aside(c->mover, path, trash) < 0 : rename(path, trash) < 0) {
        if (errno == ENOENT)
            return true; /* its teardown moved it meanwhile: the path is free */
        bl_warning("buffer directory %s of an earlier buffer: move to %s: %s", path, trash,
                   strerror(errno));
        return false;
    }
    bl_info("buffer directory %s (inode %ju, uid %u) belongs to an earlier buffer of that "
            "name: moved to %s, a new one is made",
            path, (uintmax_t)st->st_ino, (unsigned)st->st_uid, trash);
    state_put(c->st, ST_XFER_HELD, "ss", path, trash);
    if (core_held_id(c, path, st)) {
        bl_warning("%s (inode %ju) is a held buffer's: kept in the trash until it is released",
                   trash, (uintmax_t)st->st_ino);
        return true;
    }
    if (c->mover
        && mover_rmtree(c->mover, NULL, trash, NULL, st->st_uid, st->st_gid, st->st_dev, st->st_ino)
               < 0)
        bl_warning("teardown of %s: %s", trash, strerror(errno));
    return true;
}

/*
 * Spare directories.  On this kind of machine a mkdir() costs 50-200 us of CPU
 * (ext4 without a journal scans the recently deleted inodes of the block group,
 * more of them the more files come and go), two per job at allocation, in the
 * request.  So while no allocation came for SPARE_IDLE seconds, core_tick() makes
 * up to BUFDIR_SPARE_MAX empty directories per mount in <mount>/.harmonia-spare (mode 0700,
 * owned by the daemon: nobody else can reach them), and an allocation renames one
 * into place, then gives it to its owner as before: a burst of submissions pays a
 * rename instead of a mkdir.  A directory is never used twice (teardown removes
 * it), so nothing of an earlier user (files, ACLs, xattrs) can be in it.
 */
#define SPARE_IDLE 1.0   /* seconds without an allocation before making spares */
#define SPARE_PER_TICK 8 /* mkdir()s per core_tick() (every 50 ms) */

/* The first node with the same mount as node idx: the one that keeps its spares. */
int core_mount_owner(core_t *c, int idx)
{
    for (int k = 0; k < idx; k++)
        if (!strcmp(c->nodes[k].mount, c->nodes[idx].mount))
            return k;
    return idx;
}

static bufdir_spares_t spares_of(node_t *n)
{
    return (bufdir_spares_t){ &n->spares, &n->spare_top, &n->spare_off };
}

/* core_tick(): make spares while allocations are quiet (lock held). */
void core_spares_fill(core_t *c, double wall)
{
    int budget = SPARE_PER_TICK;
    if (wall < c->spare_idle_from)
        return;
    for (int i = 0; i < c->nnodes && budget > 0; i++) {
        node_t *n = &c->nodes[i];
        int mfd;
        if (nodes_is_agent(c, i)) /* its agent keeps its spares */
            continue;
        if (!n->spare_role) /* once: nodes sharing a mount share its spares */
            n->spare_role = core_mount_owner(c, i) == i ? 1 : -1;
        if (n->spare_role < 0 || n->spares >= BUFDIR_SPARE_MAX || n->spare_off || !n->in_config
            || !core_mount_ok(c, i))
            continue;
        if ((mfd = open(n->mount, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
            continue;
        if (!quota_spares(&n->quota, c->cfg->capacity_enforce, mfd)) {
            close(mfd); /* its buffer directories are made limited, not renamed */
            continue;
        }
        int before = n->spares;
        bufdir_spares_fill(mfd, n->mount, spares_of(n), budget);
        budget -= n->spares > before ? n->spares - before : 1;
        close(mfd);
    }
}

bool core_mount_seen(core_t *c, const alloc_t *a, int i)
{
    for (int k = 0; k < i; k++)
        if (!strcmp(c->nodes[a->v[k].node].mount, c->nodes[a->v[i].node].mount))
            return true;
    return false;
}

bool core_mount_ok(core_t *c, int idx)
{
    node_t *n = &c->nodes[idx];
    struct stat st;
    if (stat(n->mount, &st) == 0 && S_ISDIR(st.st_mode))
        return true;
    if (!n->mount_warned && !strcmp(c->cfg->stage_mode, "mover"))
        bl_warning("buffer mount %s of node %s is not a directory: no buffer directories "
                   "there (said once)",
                   n->mount, n->name);
    n->mount_warned = true;
    return false;
}

/* capacity.enforce: btrfs or project: every mount of a's nodes that bbmgrd makes
 * directories on can enforce it, or the buffer is refused with the reason. */
int core_bufdirs_check(core_t *c, const alloc_t *a, cerr_t *e)
{
    hu_error_t why;
    for (int i = 0; i < a->n; i++) {
        if (nodes_dir_hook(c, a->v[i].node) || core_mount_seen(c, a, i)
            || !core_mount_ok(c, a->v[i].node))
            continue;
        node_t *sn = &c->nodes[core_mount_owner(c, a->v[i].node)];
        int mfd = open(sn->mount, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (mfd < 0)
            continue; /* said by core_bufdirs_make() */
        int rc = quota_check(&sn->quota, c->cfg->capacity_enforce, mfd, sn->mount, &why);
        close(mfd);
        if (rc < 0)
            return core_cerr_set(e, EDOM, "capacity", "node %s: %s", c->nodes[a->v[i].node].name,
                                 why.text);
    }
    return 0;
}

void core_bufdirs_make(core_t *c, alloc_t *a, bool persistent, const char *name, uid_t uid,
                       gid_t gid)
{
    char path[1200];
    if (!core_dir_name_ok(name, !persistent)) {
        bl_warning("no buffer directory for '%s': not usable as a directory name", name);
        return;
    }
    for (int i = 0; i < a->n; i++) {
        const char *mount = c->nodes[a->v[i].node].mount;
        if (nodes_dir_hook(c, a->v[i].node)) { /* its agent makes it */
            a->v[i].dirgen = nodes_dir_gen(c, a->v[i].node);
            continue;
        }
        if (core_mount_seen(c, a, i) || !core_mount_ok(c, a->v[i].node))
            continue;
        if (persistent) {
            int mfd = open(mount, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (mfd < 0 || (mkdirat(mfd, "persistent", 0755) < 0 && errno != EEXIST))
                bl_warning("mkdir %s/persistent: %s", mount, strerror(errno));
            if (mfd >= 0)
                close(mfd);
            snprintf(path, sizeof(path), "%s/persistent/%s", mount, name);
        } else {
            snprintf(path, sizeof(path), "%s/%s", mount, name);
        }
        c->spare_idle_from = core_wall() + SPARE_IDLE;
        struct stat st;
        if (lstat(path, &st) == 0 && !bufdir_aside(c, path, &st)) {
            bl_warning("no buffer directory %s: the path is taken", path);
            continue;
        }
        /* relative to the parent: <mount> or <mount>/persistent */
        node_t *sn = &c->nodes[core_mount_owner(c, a->v[i].node)];
        bufdir_spares_t sp = spares_of(sn);
        const char *what;
        int mfd = open(mount, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int pfd = mfd < 0 ? -1
                  : persistent
                      ? openat(mfd, "persistent", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                      : dup(mfd);
        /* capacity.enforce: limited by the file system where it can (quota.c) */
        hu_error_t qwhy;
        uint64_t cap = core_mount_share(c, a, i);
        int q = pfd < 0 ? 0
                        : quota_make(&sn->quota, c->cfg->capacity_enforce, pfd, name, sn->mount,
                                     a->capacity && a->capacity < cap ? a->capacity : cap, &qwhy);
        if (q < 0) {
            bl_error("buffer directory %s (owner %u:%u) not made: %s", path, (unsigned)uid,
                     (unsigned)gid, qwhy.text);
            close(pfd);
            close(mfd);
            continue;
        }
        if (pfd < 0
            || (q > 0
                    ? bufdir_own(pfd, name, uid, gid, &st, &what)
                    : bufdir_create(pfd, name, mfd, sn->mount,
                                    persistent || sn->spare_off ? NULL : &sp, uid, gid, &st, &what))
                   < 0) {
            bl_warning("buffer directory %s (owner %u:%u): %s: %s", path, (unsigned)uid,
                       (unsigned)gid, pfd < 0 ? "open its parent" : what, strerror(errno));
            if (pfd >= 0)
                close(pfd);
            if (mfd >= 0)
                close(mfd);
            continue;
        }
        close(pfd);
        close(mfd);
        bl_debug("buffer directory %s created for uid %u", path, (unsigned)uid);
    }
}

/* Queue the teardown of the buffer directory at path: of the directory there now
 * (device and inode), moved to the trash first. */
void core_bufdir_teardown(core_t *c, const char *job, const char *path, uid_t uid, gid_t gid)
{
    char trash[1300];
    struct stat st;
    if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        return;
    bool moved = trash_path(path, &st, trash, sizeof(trash));
    if (mover_rmtree(c->mover, job, path, moved ? trash : NULL, uid, gid, st.st_dev, st.st_ino) < 0)
        bl_warning("teardown of %s: %s", path, strerror(errno));
}

void core_bufdirs_remove(core_t *c, const alloc_t *a, bool persistent, const char *name,
                         const char *job, uid_t uid, gid_t gid)
{
    char path[1200];
    if (!c->mover || !core_dir_name_ok(name, !persistent))
        return;
    for (int i = 0; i < a->n; i++) {
        const char *mount = c->nodes[a->v[i].node].mount;
        if (nodes_dir_hook(c, a->v[i].node)) /* its agent removes it */
            continue;
        if (core_mount_seen(c, a, i))
            continue;
        snprintf(path, sizeof(path), persistent ? "%s/persistent/%s" : "%s/%s", mount, name);
        core_bufdir_teardown(c, job, path, uid, gid);
    }
}

/* ------------------------------------------------------------------ held buffers
 * A job's buffer is kept on disk after its allocation while a stage-out from it is
 * to be made durable, and for good if one could not be (its data may exist only
 * there).  Its space stays counted on its nodes until then (alloc_nodes rows of kind
 * 'held', so a restart counts it too), with the reason logged and shown in
 * GET /v1/status. */
static bool held_source(const xfer_t *x)
{
    return !strcmp(x->kind, "stage_out")
           && ((x->state == XF_DONE && x->durable == 0)
               || (x->state == XF_FAILED && x->message
                   && !strncmp(x->message, "not durable:", 12)));
}

void core_held_free(held_t *h)
{
    if (h) {
        free(h->a.v);
        free(h->tids);
        free(h);
    }
}

void core_held_reason(held_t *h)
{
    if (h->kept)
        snprintf(h->reason, sizeof(h->reason),
                 "a stage-out from it could not be made durable:"
                 " kept until an administrator removes it");
    else
        snprintf(h->reason, sizeof(h->reason),
                 "waits for %d stage-out(s) to be durable "
                 "(first: transfer %ju)",
                 h->ntids, (uintmax_t)(h->ntids ? h->tids[0] : 0));
}

held_t *core_held_add(core_t *c, const char *job, const char *owner)
{
    held_t *h = calloc(1, sizeof(*h));
    held_t **v = h ? realloc(c->held, (size_t)(c->nheld + 1) * sizeof(*v)) : NULL;
    if (!v) {
        free(h);
        return NULL;
    }
    c->held = v;
    v[c->nheld++] = h;
    snprintf(h->job, sizeof(h->job), "%s", job);
    snprintf(h->owner, sizeof(h->owner), "%s", owner);
    return h;
}

/* A stage-out of core_held_query(): one pending is waited for, one failed not durable
 * keeps the buffer. */
static int rec_held_xfer(sqlite3_stmt *s, void *arg)
{
    held_t *h = arg;
    if (!strcmp((const char *)sqlite3_column_text(s, 1), "failed")) {
        h->kept = true;
        return 0;
    }
    uint64_t *tv = realloc(h->tids, (size_t)(h->ntids + 1) * sizeof(*tv));
    if (!tv)
        return 1;
    h->tids = tv;
    tv[h->ntids++] = (uint64_t)sqlite3_column_int64(s, 0);
    return 0;
}

/* The stage-outs whose source is under h's directories (a persistent buffer: they
 * may be of several jobs) or of h's job, pending or failed not durable. */
void core_held_query(core_t *c, held_t *h)
{
    const char *name = h->job + strlen(HELD_PREFIX);
    char root[1200];
    if (strncmp(h->job, HELD_PREFIX, strlen(HELD_PREFIX))) {
        state_read(c->st, SR_HELD_OF_JOB, rec_held_xfer, h, "s", h->job);
        return;
    }
    for (int i = 0; i < h->a.n; i++) {
        if (core_mount_seen(c, &h->a, i))
            continue;
        snprintf(root, sizeof(root), "%s/persistent/%s", c->nodes[h->a.v[i].node].mount, name);
        state_read(c->st, SR_HELD_UNDER, rec_held_xfer, h, "s", root);
    }
}

/* Identity.  A held buffer's directories are recorded in state.db by device and
 * inode (kept_dirs, under the held buffer's owner key) when it is held: what a
 * release removes and what the trash sweep at start leaves alone is found by that,
 * never by the name, which anyone may take for a new buffer meanwhile (the held
 * directory is then moved to the trash, under a name of its own). */
static void held_ids_record(core_t *c, held_t *h, const char *name, bool pers)
{
    char path[1200];
    struct stat st;
    if (!core_dir_name_ok(name, !pers))
        return;
    for (int k = 0; k < h->a.n; k++) {
        int idx = h->a.v[k].node;
        if (nodes_is_agent(c, idx) || core_mount_seen(c, &h->a, k))
            continue;
        snprintf(path, sizeof(path), pers ? "%s/persistent/%s" : "%s/%s", c->nodes[idx].mount,
                 name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            state_put(c->st, ST_KEPT_PUT, "ssiii", h->owner, c->nodes[idx].name, (int64_t)st.st_dev,
                      (int64_t)st.st_ino, (int64_t)h->kept);
    }
}

typedef struct {
    core_t *c;
    held_t *h;
    const char *name;
    bool pers;
    int found, rows;
} release_t;

typedef struct {
    dev_t dev;
    ino_t ino;
    const char *parent;
    char *out;
    size_t len;
    bool found;
} byid_t;

static int byid_one(int tfd, const char *name, const struct stat *st, void *arg)
{
    byid_t *b = arg;
    (void)tfd;
    if (st->st_dev != b->dev || st->st_ino != b->ino)
        return 0;
    b->found = snprintf(b->out, b->len, "%s/" MOVER_TRASH "/%s", b->parent, name) < (int)b->len;
    return 1;
}

/* dir (under the open parent pfd, named 'parent') or an entry of its trash is the
 * directory dev/ino: its path in out.  The trash is read as bbnoded reads it
 * (bufdir_trash_each(): only when it is the daemon's alone). */
static bool find_by_id(int pfd, const char *parent, const char *name, dev_t dev, ino_t ino,
                       char *out, size_t len)
{
    struct stat st;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) && st.st_dev == dev
        && st.st_ino == ino)
        return snprintf(out, len, "%s/%s", parent, name) < (int)len;
    byid_t b = { dev, ino, parent, out, len, false };
    bufdir_trash_each(pfd, parent, byid_one, &b);
    return b.found;
}

/* A row of kept_dirs of the buffer being released: remove that directory, wherever
 * it is now (its name, or the trash), and nothing else. */
static int release_row(sqlite3_stmt *s, void *arg)
{
    release_t *r = arg;
    core_t *c = r->c;
    int idx = core_node_index(c, (const char *)sqlite3_column_text(s, 0));
    dev_t dev = (dev_t)sqlite3_column_int64(s, 1);
    ino_t ino = (ino_t)sqlite3_column_int64(s, 2);
    char parent[1200], path[1500];
    struct stat st;
    r->rows++;
    if (idx < 0 || !c->mover || nodes_is_agent(c, idx))
        return 0;
    snprintf(parent, sizeof(parent), "%s%s", c->nodes[idx].mount, r->pers ? "/persistent" : "");
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0)
        return 0;
    if (find_by_id(pfd, parent, r->name, dev, ino, path, sizeof(path)) && lstat(path, &st) == 0) {
        mover_unkeep(c->mover, path);
        if (mover_rmtree(c->mover, NULL, path, NULL, st.st_uid, st.st_gid, dev, ino) < 0)
            bl_warning("teardown of %s: %s", path, strerror(errno));
        else
            r->found++;
    } else {
        bl_warning("held buffer of '%s': its directory (device %ju, inode %ju) on %s is no "
                   "longer there: nothing removed",
                   r->h->job, (uintmax_t)dev, (uintmax_t)ino, c->nodes[idx].name);
    }
    close(pfd);
    return 0;
}

/* At the release of j's allocation: keep its space counted if a stage-out holds it. */
static bool alloc_hold(core_t *c, job_t *j)
{
    char root[1200], owner[160];
    held_t *h = NULL;
    for (int i = 0; i < j->nxfers; i++) {
        xfer_t *x = j->xfers[i];
        bool mine = false;
        if (!held_source(x))
            continue;
        for (int k = 0; k < j->alloc->n && !mine; k++) {
            snprintf(root, sizeof(root), "%s/%s", c->nodes[j->alloc->v[k].node].mount, j->id);
            mine = util_path_under(x->source, root);
        }
        if (!mine)
            continue;
        if (!h) {
            snprintf(owner, sizeof(owner), "%s@%ju", j->id, (uintmax_t)x->id);
            if (!(h = core_held_add(c, j->id, owner)))
                return false;
        }
        if (x->state == XF_FAILED) {
            h->kept = true;
        } else {
            uint64_t *tv = realloc(h->tids, (size_t)(h->ntids + 1) * sizeof(*tv));
            if (tv) {
                h->tids = tv;
                tv[h->ntids++] = x->id;
            }
        }
    }
    if (!h)
        return false;
    h->a = *j->alloc; /* its nodes and bytes, still counted */
    j->alloc->v = NULL;
    j->alloc->n = 0;
    core_put_anodes(c, "held", h->owner, &h->a);
    held_ids_record(c, h, j->id, false);
    core_held_reason(h);
    bl_warning("buffer of job %s (%ju bytes) stays on disk and counted: %s", h->job,
               (uintmax_t)h->a.reserved, h->reason);
    return true;
}

/* At the destruction of b: keep its space counted if a stage-out from it is still
 * to be made durable, or could not be (the database knows them: their jobs may
 * have ended). */
bool core_pbuf_hold(core_t *c, pbuf_t *b)
{
    char job[96], owner[160];
    held_t probe = { .a = b->alloc };
    snprintf(job, sizeof(job), HELD_PREFIX "%s", b->name);
    snprintf(probe.job, sizeof(probe.job), "%s", job);
    core_held_query(c, &probe);
    if (probe.ntids == 0 && !probe.kept) {
        free(probe.tids);
        return false;
    }
    snprintf(owner, sizeof(owner), "%s@%ju", job, (uintmax_t)(probe.ntids ? probe.tids[0] : 0));
    held_t *h = core_held_add(c, job, owner);
    if (!h) {
        free(probe.tids);
        return false;
    }
    h->tids = probe.tids;
    h->ntids = probe.ntids;
    h->kept = probe.kept;
    h->a = b->alloc;
    b->alloc.v = NULL;
    b->alloc.n = 0;
    core_put_anodes(c, "held", h->owner, &h->a);
    held_ids_record(c, h, b->name, true);
    core_held_reason(h);
    bl_warning("persistent buffer %s (%ju bytes) stays on disk and counted: %s", b->name,
               (uintmax_t)h->a.reserved, h->reason);
    return true;
}

static void held_drop(core_t *c, int i);

/* A done stage-out of an ended allocation became durable (ok) or could not. */
void core_held_resolve(core_t *c, uint64_t tid, bool ok)
{
    for (int i = 0; i < c->nheld; i++) {
        held_t *h = c->held[i];
        int k = 0;
        while (k < h->ntids && h->tids[k] != tid)
            k++;
        if (k == h->ntids)
            continue;
        h->tids[k] = h->tids[--h->ntids];
        if (!ok && !h->kept)
            state_put(c->st, ST_KEPT_SET, "s", h->owner);
        h->kept = h->kept || !ok;
        core_held_reason(h);
        if (h->ntids > 0 || h->kept) {
            if (!ok)
                bl_error("buffer of job %s (%ju bytes) stays on disk and counted: %s", h->job,
                         (uintmax_t)h->a.reserved, h->reason);
            continue;
        }
        bl_info("buffer of job %s: its stage-outs are durable, its %ju bytes are free again",
                h->job, (uintmax_t)h->a.reserved);
        held_drop(c, i--);
    }
}

/* Forget held buffer i: its space is free, and an agent that kept its directory
 * (listed with keep) now removes it. */
static void held_drop(core_t *c, int i)
{
    held_t *h = c->held[i];
    for (int k = 0; k < h->a.n; k++)
        nodes_dir_hook(c, h->a.v[k].node);
    core_alloc_free_nodes(c, &h->a);
    state_put(c->st, ST_ANODE_DEL, "ss", "held", h->owner);
    state_put(c->st, ST_KEPT_DEL, "s", h->owner);
    core_held_free(h);
    c->held[i] = c->held[--c->nheld];
}

int core_held_release(core_t *c, const char *job, uint64_t *bytes, cerr_t *e)
{
    int i = 0;
    while (i < c->nheld && strcmp(c->held[i]->job, job))
        i++;
    if (i == c->nheld)
        return core_cerr_set(e, ENOENT, "", "no buffer of '%s' is held", job);
    held_t *h = c->held[i];
    if (!h->kept)
        return core_cerr_set(e, EBUSY, "", "the buffer of '%s' %s: it goes by itself once durable",
                             job, h->reason);
    bool pers = !strncmp(job, HELD_PREFIX, strlen(HELD_PREFIX));
    release_t r = { .c = c, .h = h, .name = pers ? job + strlen(HELD_PREFIX) : job, .pers = pers };
    *bytes = h->a.reserved;
    /* its directories by identity: an agent's are removed by the agent once they
     * are no longer listed */
    state_read(c->st, SR_KEPT_OF, release_row, &r, "s", h->owner);
    if (r.rows == 0)
        bl_warning("held buffer of '%s': no directory of it is recorded by identity: nothing "
                   "removed by name (remove it by hand)",
                   job);
    bl_warning("held buffer of '%s' (%ju bytes) released by an administrator: removed", job,
               (uintmax_t)h->a.reserved);
    held_drop(c, i);
    return 0;
}

int core_bufdir_alloc_release(core_t *c, job_t *j)
{
    if (!j->alloc)
        return 0;
    core_bufdirs_remove(c, j->alloc, false, j->id, j->id, j->uid, j->gid);
    if (!alloc_hold(c, j))
        core_alloc_free_nodes(c, j->alloc);
    free(j->alloc);
    j->alloc = NULL;
    state_put(c->st, ST_ALLOC_DEL, "s", j->id);
    state_put(c->st, ST_ANODE_DEL, "ss", "job", j->id);
    return 0;
}
