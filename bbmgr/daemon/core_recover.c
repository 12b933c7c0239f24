/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_recover.c — recovery of the model from the state database at start, and of
 * the stage-outs whose durability a stop interrupted.
 */
#include <dirent.h>
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
#include "core_alloc.h"
#include "core_bufdir.h"
#include "core_jobs.h"
#include "core_recover.h"
#include "nodes.h"
#include "log.h"
#include "util.h"

/* ------------------------------------------------------------------ recovery */
static const char *col_text(sqlite3_stmt *s, int i)
{
    return (const char *)sqlite3_column_text(s, i);
}

static double col_real(sqlite3_stmt *s, int i)
{
    return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN : sqlite3_column_double(s, i);
}

typedef struct {
    core_t *c;
    int count, skipped;
    bool failed;
} rec_t;

/* A row that cannot be taken in ends the scan, and the recovery fails. */
static int rec_stop(rec_t *r)
{
    r->failed = true;
    return 1;
}

/* A row of something gone (its job, its buffer) is passed over and counted. */
static int rec_skip(rec_t *r)
{
    r->skipped++;
    return 0;
}

static int rec_node_state(sqlite3_stmt *s, void *arg)
{
    rec_t *r = arg;
    int idx = core_node_index(r->c, col_text(s, 0));
    if (idx < 0)
        return 0;
    node_t *n = &r->c->nodes[idx];
    n->drained = !strcmp(col_text(s, 1), "drained");
    free(n->reason);
    n->reason = col_text(s, 2) ? strdup(col_text(s, 2)) : NULL;
    r->count++;
    return 0;
}

static int rec_job(sqlite3_stmt *s, void *arg)
{
    rec_t *r = arg;
    core_t *c = r->c;
    job_t *j = calloc(1, sizeof(*j));
    if (!j)
        goto fail;
    snprintf(j->id, sizeof(j->id), "%s", col_text(s, 0));
    j->uid = (uid_t)sqlite3_column_int64(s, 1);
    j->gid = (gid_t)sqlite3_column_int64(s, 2);
    j->user = col_text(s, 3) ? strdup(col_text(s, 3)) : NULL;
    j->name = col_text(s, 4) ? strdup(col_text(s, 4)) : NULL;
    j->nodes = sqlite3_column_int(s, 5);
    j->w_iter = col_real(s, 6);
    j->io_volume = col_real(s, 7);
    j->phases = sqlite3_column_type(s, 8) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 8);
    snprintf(j->io, sizeof(j->io), "%s", col_text(s, 9) ? col_text(s, 9) : "");
    j->priority = sqlite3_column_int(s, 10);
    j->state = !strcmp(col_text(s, 11), "running") ? JOB_RUNNING : JOB_REGISTERED;
    j->created = col_real(s, 12);
    j->updated = col_real(s, 13);
    j->begun = col_real(s, 14);
    j->ended = NAN;
    j->nphases = sqlite3_column_int64(s, 15);
    j->bytes = col_real(s, 16);
    if (isnan(j->bytes))
        j->bytes = 0;
    j->learn_first = j->learn_last = NAN;
    j->last_end = j->begun;
    j->hs_id = c->next_hs++;
    if (hmap_put(c->jobs, j->id, j) < 0 || hmap_iput(c->jobs_hs, j->hs_id, j) < 0) {
        core_job_free(j);
        goto fail;
    }
    r->count++;
    return 0;
fail:
    return rec_stop(r);
}

static int rec_alloc(sqlite3_stmt *s, void *arg)
{
    rec_t *r = arg;
    job_t *j = hmap_get(r->c->jobs, col_text(s, 0));
    if (!j)
        return rec_skip(r);
    alloc_t *a = calloc(1, sizeof(*a));
    if (!a)
        return rec_stop(r);
    snprintf(a->pool, sizeof(a->pool), "%s", col_text(s, 1));
    a->capacity = (uint64_t)sqlite3_column_int64(s, 2);
    a->reserved = (uint64_t)sqlite3_column_int64(s, 3);
    a->nodes_requested = sqlite3_column_int(s, 4);
    a->created = col_real(s, 5);
    j->alloc = a;
    r->count++;
    return 0;
}

static int rec_anode(sqlite3_stmt *s, void *arg)
{
    rec_t *r = arg;
    core_t *c = r->c;
    const char *kind = col_text(s, 0), *owner = col_text(s, 1), *node = col_text(s, 2);
    uint64_t bytes = (uint64_t)sqlite3_column_int64(s, 3);
    alloc_t *a = NULL;
    if (!strcmp(kind, "job")) {
        job_t *j = hmap_get(c->jobs, owner);
        a = j ? j->alloc : NULL;
    } else if (!strcmp(kind, "held")) {
        held_t *h = NULL;
        for (int i = 0; i < c->nheld && !h; i++)
            if (!strcmp(c->held[i]->owner, owner))
                h = c->held[i];
        if (!h) {
            char job[96];
            snprintf(job, sizeof(job), "%.*s", (int)strcspn(owner, "@"), owner);
            if (!(h = core_held_add(c, job, owner)))
                return rec_stop(r);
        }
        h->a.reserved += bytes;
        a = &h->a;
    } else {
        pbuf_t *b = hmap_get(c->pbufs, owner);
        a = b ? &b->alloc : NULL;
    }
    if (!a)
        return rec_skip(r);
    int idx = core_node_index(c, node);
    if (idx < 0) {
        /* an allocation on a node no longer configured: keep it, drained */
        if ((idx = core_node_add(c, node, NULL, false)) < 0)
            return rec_stop(r);
        bl_warning("recovery: node %s holds allocations but is not configured: kept drained", node);
    }
    node_t *n = &c->nodes[idx];
    if (!n->in_config)
        n->capacity += bytes;
    anode_t *nv = realloc(a->v, (size_t)(a->n + 1) * sizeof(anode_t));
    if (!nv)
        return rec_stop(r);
    a->v = nv;
    a->v[a->n].node = idx;
    a->v[a->n].bytes = bytes;
    a->v[a->n].used = a->v[a->n].used_dev = a->v[a->n].used_ino = 0;
    a->v[a->n].used_at = 0;
    /* an agent's node: ready once the agent applied a set of this process */
    a->v[a->n].dirgen = nodes_is_agent(c, idx) ? 1 : 0;
    a->n++;
    n->used += bytes;
    n->nallocs++;
    r->count++;
    return 0;
}

/* Recovery: the stage-outs each held buffer waits for (core_held_query(); made durable
 * again by the mover at its first tick: core_held_resolve() follows). */
static int rec_kept_row(sqlite3_stmt *s, void *arg)
{
    held_t *h = arg;
    if (sqlite3_column_int(s, 3))
        h->kept = true; /* recorded kept: whatever the transfers say now */
    return 0;
}

static void rec_held(core_t *c)
{
    for (int i = 0; i < c->nheld; i++) {
        held_t *h = c->held[i];
        core_held_query(c, h);
        state_read(c->st, SR_KEPT_OF, rec_kept_row, h, "s", h->owner);
        core_held_reason(h);
        if (h->ntids == 0 && !h->kept) {
            core_alloc_free_nodes(c, &h->a);
            state_put(c->st, ST_ANODE_DEL, "ss", "held", h->owner);
            state_put(c->st, ST_KEPT_DEL, "s", h->owner);
            core_held_free(h);
            c->held[i--] = c->held[--c->nheld];
            continue;
        }
        bl_warning("recovery: buffer of job %s (%ju bytes) stays counted: %s", h->job,
                   (uintmax_t)h->a.reserved, h->reason);
    }
}

static int rec_pbuf(sqlite3_stmt *s, void *arg)
{
    rec_t *r = arg;
    pbuf_t *b = calloc(1, sizeof(*b));
    if (!b)
        return rec_stop(r);
    snprintf(b->name, sizeof(b->name), "%s", col_text(s, 0));
    b->uid = (uid_t)sqlite3_column_int64(s, 1);
    b->gid = (gid_t)sqlite3_column_int64(s, 2);
    snprintf(b->alloc.pool, sizeof(b->alloc.pool), "%s", col_text(s, 3));
    b->alloc.capacity = (uint64_t)sqlite3_column_int64(s, 4);
    b->alloc.reserved = (uint64_t)sqlite3_column_int64(s, 5);
    b->created = b->alloc.created = col_real(s, 6);
    if (hmap_put(r->c->pbufs, b->name, b) < 0) {
        core_pbuf_free(b);
        return rec_stop(r);
    }
    r->count++;
    return 0;
}

static int rec_puse(sqlite3_stmt *s, void *arg)
{
    rec_t *r = arg;
    pbuf_t *b = hmap_get(r->c->pbufs, col_text(s, 0));
    job_t *j = hmap_get(r->c->jobs, col_text(s, 1));
    if (!b || !j)
        return rec_skip(r);
    if (core_strv_add(&b->users, &b->nusers, j->id) < 0
        || core_strv_add(&j->uses, &j->nuses, b->name) < 0)
        return rec_stop(r);
    return 0;
}

static int rec_phase(sqlite3_stmt *s, void *arg)
{
    rec_t *r = arg;
    core_t *c = r->c;
    uint64_t id = (uint64_t)sqlite3_column_int64(s, 0);
    job_t *j = hmap_get(c->jobs, col_text(s, 1));
    phase_t *p = calloc(1, sizeof(*p));
    if (!p)
        return rec_stop(r);
    p->id = id;
    p->volume = col_real(s, 2);
    snprintf(p->dir, sizeof(p->dir), "%s", col_text(s, 3));
    p->state = (phase_state_t)core_phase_state_parse(col_text(s, 4));
    p->requested = col_real(s, 5);
    p->granted = col_real(s, 6);
    p->finished = NAN;
    p->bytes = col_real(s, 8);
    p->bw = 0;
    p->buffer = -1;
    p->w_done = col_real(s, 11);
    /* held before the stop: held until its buffers are measured again */
    p->on_hold = p->held_before = p->state == PH_WAITING && sqlite3_column_int(s, 12);
    if (!j || j->phase || j->state == JOB_ENDED) {
        /* orphan (job gone) or a second open phase: close it cleanly */
        job_t tmp = { 0 };
        snprintf(tmp.id, sizeof(tmp.id), "%s", col_text(s, 1));
        p->job = &tmp;
        p->state = PH_EXPIRED;
        p->finished = core_wall();
        core_put_phase(c, p);
        free(p);
        return rec_skip(r);
    }
    p->job = j;
    j->phase = p;
    if (hmap_iput(c->phases, p->id, p) < 0)
        return rec_stop(r);
    r->count++;
    return 0;
}

static int rec_xfer(sqlite3_stmt *s, void *arg)
{
    rec_t *r = arg;
    core_t *c = r->c;
    job_t *j = hmap_get(c->jobs, col_text(s, 1));
    xfer_t *x = calloc(1, sizeof(*x));
    if (!x)
        return rec_stop(r);
    x->id = (uint64_t)sqlite3_column_int64(s, 0);
    x->job_id = strdup(col_text(s, 1));
    snprintf(x->kind, sizeof(x->kind), "%s", col_text(s, 2));
    x->source = strdup(col_text(s, 3));
    x->destination = strdup(col_text(s, 4));
    snprintf(x->type, sizeof(x->type), "%s", col_text(s, 5));
    int st = core_xfer_state_parse(col_text(s, 6));
    x->state = st < 0 ? XF_FAILED : (xfer_state_t)st;
    x->bytes_total = sqlite3_column_type(s, 7) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 7);
    x->bytes_done = sqlite3_column_int64(s, 8);
    x->message = col_text(s, 9) ? strdup(col_text(s, 9)) : NULL;
    x->requested = col_real(s, 10);
    x->start = col_real(s, 11);
    x->finished = col_real(s, 12);
    x->durable = sqlite3_column_type(s, 13) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 13);
    if (sqlite3_column_type(s, 15) != SQLITE_NULL) {
        x->part = sqlite3_column_int(s, 14);
        x->nparts = sqlite3_column_int(s, 15);
    }
    if (!x->job_id || !x->source || !x->destination) {
        core_xfer_free(x);
        return rec_stop(r);
    }
    bool open = x->state == XF_QUEUED || x->state == XF_RUNNING;
    if (!j) {
        if (open) {
            x->state = XF_CANCELLED;
            x->finished = core_wall();
            core_put_xfer(c, x);
        }
        core_xfer_free(x);
        return rec_skip(r);
    }
    if (x->state == XF_RUNNING) {
        /* no mover survives a restart: the transfer starts again */
        x->state = XF_QUEUED;
        x->bytes_done = 0;
        x->durable = -1;
        core_put_xfer(c, x);
    }
    xfer_t **nv = realloc(j->xfers, (size_t)(j->nxfers + 1) * sizeof(xfer_t *));
    if (!nv) {
        core_xfer_free(x);
        return rec_stop(r);
    }
    j->xfers = nv;
    j->xfers[j->nxfers++] = x;
    if (open && hmap_iput(c->xfers, x->id, x) < 0)
        return rec_stop(r);
    r->count++;
    return 0;
}

static int rec_int(sqlite3_stmt *s, void *arg)
{
    *(int64_t *)arg = sqlite3_column_int64(s, 0);
    return 1;
}

static int rec_meta_policy(sqlite3_stmt *s, void *arg)
{
    snprintf(arg, 64, "%s", col_text(s, 0));
    return 1;
}

int core_recover(core_t *c, hu_error_t *err)
{
    rec_t r;
    int64_t maxid;
    int njobs, nalloc, npbuf, nphase, nxfer, skipped = 0;
    char policy[64] = "";
    state_t *st = c->st;

#define Q(fn, q) \
    do { \
        memset(&r, 0, sizeof(r)); \
        r.c = c; \
        if (state_read(st, q, fn, &r, NULL) < 0 || r.failed) \
            return hu_errprintf(err, "recovery failed on: %s", state_read_sql(q)); \
        skipped += r.skipped; \
    } while (0)

    Q(rec_node_state, SR_NODE_STATES);
    Q(rec_job, SR_JOBS_OPEN);
    njobs = r.count;
    Q(rec_alloc, SR_ALLOCS);
    nalloc = r.count;
    Q(rec_pbuf, SR_PERSISTENT);
    npbuf = r.count;
    Q(rec_anode, SR_ANODES);
    rec_held(c);
    Q(rec_puse, SR_PUSES);
    Q(rec_phase, SR_PHASES_OPEN);
    nphase = r.count;
    Q(rec_xfer, SR_XFERS_OPEN);
    nxfer = r.count;
#undef Q
    maxid = 0;
    state_read(st, SR_PHASE_MAX_ID, rec_int, &maxid, NULL);
    c->next_phase = (uint64_t)maxid + 1;
    maxid = 0;
    state_read(st, SR_XFER_MAX_ID, rec_int, &maxid, NULL);
    c->next_xfer = (uint64_t)maxid + 1;
    state_read(st, SR_META, rec_meta_policy, policy, "s", "policy");
    if (*policy) {
        char want[64] = "";
        state_read(st, SR_META, rec_meta_policy, want, "s", "policy_config");
        hs_policy_t pol;
        /* an override set through the API holds until bbmgr.yaml's policy changes */
        if (!strcmp(want, c->cfg->policy_id) && hs_policy_parse(policy, &pol, NULL) == 0) {
            core_policy_bound(c->cfg, &pol);
            c->policy = pol;
            hs_policy_name(&pol, c->policy_id, sizeof(c->policy_id));
            c->policy_override = true;
        }
    }
    state_put(st, ST_META_PUT, "ss", "policy_config", c->cfg->policy_id);

    /* the clock: scheduler time 0 is before every running job's begin */
    double wall = core_wall(), epoch = wall;
    void *v;
    for (void *it = hmap_first(c->jobs, &v); it; it = hmap_next(c->jobs, it, &v)) {
        job_t *j = v;
        if (j->state == JOB_RUNNING && !isnan(j->begun) && j->begun < epoch)
            epoch = j->begun;
    }
    c->epoch = epoch - 1.0;
    c->mono0 = hu_mono();
    c->hs_offset = wall - c->epoch;
    c->hs_last = 0;

    /* in-flight grants: re-established unless past grant_timeout */
    int reest = 0, expired = 0;
    for (void *it = hmap_first(c->jobs, &v); it; it = hmap_next(c->jobs, it, &v)) {
        job_t *j = v;
        phase_t *p = j->phase;
        if (!p)
            continue;
        if (j->state != JOB_RUNNING) {
            /* a phase implies the job had begun */
            j->state = JOB_RUNNING;
            if (isnan(j->begun))
                j->begun = p->requested;
            core_put_job(c, j);
        }
        if (p->state == PH_GRANTED && wall - p->granted > c->cfg->limits_grant_timeout) {
            p->state = PH_EXPIRED;
            p->finished = wall;
            core_put_phase(c, p);
            hmap_idel(c->phases, p->id);
            free(p);
            j->phase = NULL;
            expired++;
        } else if (p->state == PH_GRANTED) {
            reest++;
        }
    }
    if (core_sched_build(c, err) < 0)
        return -1;
    core_reschedule(c, core_hs_now(c));
    bl_info("recovered %d jobs, %d allocations, %d persistent buffers, %d open phases "
            "(%d grants re-established, %d expired), %d transfers; %d orphans closed; "
            "policy %s",
            njobs, nalloc, npbuf, nphase, reest, expired, nxfer, skipped, c->policy_id);
    return 0;
}

/* Recovery of the stage-outs recorded done whose fsyncs had not finished (a crash
 * of bbmgrd or of the machine): each is handed to the mover again (mover_spec_t
 * resync: files complete at the destination and changed in this boot are only
 * fsync'd, the others copied again from the buffer, then everything is fsync'd).
 * The buffer directories of a job that ended meanwhile were kept for this: they
 * are removed once the copy is durable. */
typedef struct {
    char job[64];
    uid_t uid;
    gid_t gid;
} ended_job_t;

typedef struct {
    core_t *c;
    ended_job_t *ended;
    int nended;
    int n;
} resync_t;

static int rec_syncing(sqlite3_stmt *s, void *arg)
{
    resync_t *r = arg;
    core_t *c = r->c;
    uint64_t tid = (uint64_t)sqlite3_column_int64(s, 0);
    const char *job = col_text(s, 1);
    if (!job || !col_text(s, 2) || !col_text(s, 3))
        return 0;
    if (sqlite3_column_type(s, 6) == SQLITE_NULL) {
        bl_error("recovery: stage-out %ju: its job %s is unknown: it cannot be made durable",
                 (uintmax_t)tid, job);
        state_put(c->st, ST_XFER_NOT_DURABLE, "si", "not durable: its job is unknown",
                  (int64_t)tid);
        return 0;
    }
    job_t *j = hmap_get(c->jobs, job);
    uid_t uid = (uid_t)sqlite3_column_int64(s, 6);
    gid_t gid = (gid_t)sqlite3_column_int64(s, 7);
    mover_spec_t spec = {
        .tid = tid,
        .job = job,
        .weight = j ? core_job_weight(c, j) : 1.0,
        .uid = uid,
        .gid = gid,
        .user = col_text(s, 8),
        .stage_out = true,
        .directory = !strcmp(col_text(s, 4), "directory"),
        .src = col_text(s, 2),
        .dst = col_text(s, 3),
        .resync = true,
        .done_at = col_real(s, 5),
    };
    if (!nodes_dispatch(c, &spec, spec.src) && mover_submit(c->mover, &spec) < 0) {
        bl_error("recovery: stage-out %ju: %s (left to the next start)", (uintmax_t)tid,
                 strerror(errno));
        return 0;
    }
    bl_info("recovery: stage-out %ju of job %s was done but not yet durable: made durable "
            "again from %s",
            (uintmax_t)tid, job, spec.src);
    r->n++;
    if (!j && strlen(job) < sizeof(r->ended[0].job)) {
        for (int i = 0; i < r->nended; i++)
            if (!strcmp(r->ended[i].job, job))
                return 0;
        ended_job_t *v = realloc(r->ended, (size_t)(r->nended + 1) * sizeof(*v));
        if (!v)
            return 0;
        r->ended = v;
        snprintf(v[r->nended].job, sizeof(v[r->nended].job), "%s", job);
        v[r->nended].uid = uid;
        v[r->nended].gid = gid;
        r->nended++;
    }
    return 0;
}

static int rec_exists(sqlite3_stmt *s, void *arg)
{
    (void)s;
    *(bool *)arg = true;
    return 1;
}

/* Directories moved to the trash whose teardown a stop cut: removed now, unless
 * they hold the source of a stage-out that could not be made durable or are a
 * held buffer's (by device and inode: kept, as before the stop), or wait for one
 * being made durable again (the mover holds them). */
typedef struct {
    core_t *c;
    const char *dir;
} sweep_t;

static int sweep_one(int tfd, const char *name, const struct stat *st, void *arg)
{
    sweep_t *w = arg;
    char path[1500];
    bool kept = false;
    (void)tfd;
    snprintf(path, sizeof(path), "%s/%s", w->dir, name);
    state_read(w->c->st, SR_KEPT_UNDER, rec_exists, &kept, "s", path);
    /* a held buffer's directory, by identity: kept until an administrator
     * releases it, or while a stage-out not yet durable reads from under it (a
     * buffer that only waited for its stage-outs keeps nothing else: the
     * teardown that waited with it would no longer find this one here) */
    if (!kept && core_held_id(w->c, path, st)) {
        kept = core_held_id_kept(w->c, path, st);
        if (!kept)
            state_read(w->c->st, SR_HELD_UNDER, rec_exists, &kept, "s", path);
    }
    if (kept) {
        bl_warning("%s is kept: it holds the source of a stage-out that could not be made "
                   "durable (remove it by hand once the data is safe)",
                   path);
        return 0;
    }
    if (mover_rmtree(w->c->mover, NULL, path, NULL, st->st_uid, st->st_gid, st->st_dev, st->st_ino)
        < 0)
        bl_warning("teardown of %s: %s", path, strerror(errno));
    return 0;
}

static void trash_sweep(core_t *c, const char *mount, const char *sub)
{
    char parent[1200], dir[1300];
    snprintf(parent, sizeof(parent), "%s%s", mount, sub);
    snprintf(dir, sizeof(dir), "%s/" MOVER_TRASH, parent);
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    sweep_t w = { .c = c, .dir = dir };
    if (pfd < 0)
        return;
    bufdir_trash_each(pfd, parent, sweep_one, &w);
    close(pfd);
}

void core_recover_durability(core_t *c)
{
    resync_t r = { .c = c };
    char path[1200];

    state_read(c->st, SR_XFERS_SYNCING, rec_syncing, &r, NULL);
    /* jobs that ended: their buffer directories (the allocation is gone: every
     * mount is looked at) go once their stage-outs are durable */
    for (int k = 0; k < r.nended; k++) {
        const ended_job_t *e = &r.ended[k];
        for (int i = 0; core_dir_name_ok(e->job, true) && i < c->nnodes; i++) {
            bool seen = false;
            for (int p = 0; p < i && !seen; p++)
                seen = !strcmp(c->nodes[p].mount, c->nodes[i].mount);
            if (seen || nodes_is_agent(c, i)) /* an agent's: it removes it */
                continue;
            snprintf(path, sizeof(path), "%s/%s", c->nodes[i].mount, e->job);
            core_bufdir_teardown(c, e->job, path, e->uid, e->gid);
        }
        mover_job_end(c->mover, e->job);
    }
    for (int i = 0; i < c->nnodes; i++)
        if (core_mount_owner(c, i) == i && core_mount_ok(c, i)) {
            trash_sweep(c, c->nodes[i].mount, "");
            trash_sweep(c, c->nodes[i].mount, "/persistent");
        }
    if (r.n)
        bl_info("recovery: %d stage-out(s) to make durable again", r.n);
    free(r.ended);
}
