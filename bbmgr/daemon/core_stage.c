/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_stage.c — stage-in and stage-out transfers and the glue to the data mover.
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
#include "core_alloc.h"
#include "core_bufdir.h"
#include "core_jobs.h"
#include "core_stage.h"
#include "nodes.h"
#include "log.h"
#include "util.h"

/* ------------------------------------------------------------------ transfers */
/* The injected-timing rule: a stage transfer starts once no granted phase of
 * another job is expected to be running on the buffer nodes it touches; at once
 * when there is none (doc/api.md "Stage-in timing"). */
static double stage_start(core_t *c, job_t *j)
{
    double wall = core_wall(), start = wall;
    void *v;
    if (!j->alloc || j->alloc->n == 0)
        return start;
    core_settle(c); /* the granted phases' bandwidths */
    for (void *it = hmap_first(c->phases, &v); it; it = hmap_next(c->phases, it, &v)) {
        phase_t *p = v;
        if (p->state != PH_GRANTED || p->job == j || !p->job->alloc)
            continue;
        bool shared = false;
        for (int a = 0; a < j->alloc->n && !shared; a++)
            for (int b = 0; b < p->job->alloc->n; b++)
                if (j->alloc->v[a].node == p->job->alloc->v[b].node) {
                    shared = true;
                    break;
                }
        if (!shared)
            continue;
        double bw = p->bw;
        if (!(bw > 0)) {
            bw = 0;
            for (int b = 0; b < p->job->alloc->n; b++)
                bw += c->nodes[p->job->alloc->v[b].node].bandwidth;
        }
        double end = p->granted + (p->volume - p->bytes) / (bw > 0 ? bw : 1e9);
        if (end > start)
            start = end;
    }
    /* never further than grant_timeout: a phase that never ends must not block */
    if (start > wall + c->cfg->limits_grant_timeout)
        start = wall + c->cfg->limits_grant_timeout;
    return start;
}

static xfer_t *stage_one(core_t *c, job_t *j, const char *kind, const char *src, const char *dst,
                         const char *type, int64_t size, double start)
{
    xfer_t *x = calloc(1, sizeof(*x));
    xfer_t **nv;
    if (!x || !(x->job_id = strdup(j->id)) || !(x->source = strdup(src))
        || !(x->destination = strdup(dst)))
        goto nomem;
    x->id = c->next_xfer++;
    snprintf(x->kind, sizeof(x->kind), "%s", kind);
    snprintf(x->type, sizeof(x->type), "%s", type);
    x->bytes_total = size;
    x->requested = core_wall();
    x->start = start;
    x->finished = NAN;
    x->state = XF_QUEUED;
    x->durable = -1;
    if (!strcmp(c->cfg->stage_mode, "immediate")) {
        x->state = XF_DONE;
        x->start = x->finished = x->requested;
        x->bytes_done = size > 0 ? size : 0;
    }
    if (!(nv = realloc(j->xfers, (size_t)(j->nxfers + 1) * sizeof(xfer_t *))))
        goto nomem;
    j->xfers = nv;
    if (x->state == XF_QUEUED && hmap_iput(c->xfers, x->id, x) < 0)
        goto nomem;
    j->xfers[j->nxfers++] = x;
    return x;
nomem:
    core_xfer_free(x);
    return NULL;
}

/* The part of path below the job's directory on the first node of its
 * allocation ("" for that directory), or NULL when it is not below it. */
static const char *below_first(core_t *c, job_t *j, const char *path, char *root, size_t len)
{
    if (!j->alloc || j->alloc->n < 2)
        return NULL;
    snprintf(root, len, "%s/%s", c->nodes[j->alloc->v[0].node].mount, j->id);
    if (!util_path_under(path, root))
        return NULL;
    return path + strlen(root);
}

xfer_t *core_stage(core_t *c, job_t *j, const char *kind, const char *src, const char *dst,
                   const char *type, int64_t size, bool spread, cerr_t *e)
{
    bool out = !strcmp(kind, "stage_out");
    char root[1200], path[2400];
    const char *rel = NULL;
    double start = stage_start(c, j);
    /* a stage-in of a tree, or any stage-out, from or to the job's directory on the
     * first node of a multi-node allocation: one part on each node */
    if (spread && (out || !strcmp(type, "directory")))
        rel = below_first(c, j, out ? src : dst, root, sizeof(root));
    int n = rel ? j->alloc->n : 1, nx0 = j->nxfers;
    xfer_t *first = NULL;
    for (int k = 0; k < n; k++) {
        const char *buf = out ? src : dst;
        if (rel) {
            snprintf(path, sizeof(path), "%s/%s%s", c->nodes[j->alloc->v[k].node].mount, j->id,
                     rel);
            buf = path;
        }
        xfer_t *x = stage_one(c, j, kind, out ? buf : src, out ? dst : buf, type,
                              k == 0 ? size : -1, start);
        if (!x)
            goto nomem;
        if (rel) {
            x->part = k;
            x->nparts = n;
        }
        if (!first)
            first = x;
    }
    for (int i = nx0; i < j->nxfers; i++) {
        core_put_xfer(c, j->xfers[i]);
        bl_debug("stage: %s %ju of job %s%s scheduled at +%.3f s (%s)", kind,
                 (uintmax_t)j->xfers[i]->id, j->id, rel ? " (a part)" : "",
                 j->xfers[i]->start - j->xfers[i]->requested,
                 core_xfer_state_name(j->xfers[i]->state));
    }
    return first;
nomem:
    while (j->nxfers > nx0) {
        xfer_t *x = j->xfers[--j->nxfers];
        hmap_idel(c->xfers, x->id);
        core_xfer_free(x);
    }
    core_cerr_set(e, ENOMEM, "", "out of memory");
    return NULL;
}

xfer_t *core_xfer_any(core_t *c, uint64_t id)
{
    xfer_t *x = core_xfer(c, id);
    void *v;
    /* closed ones live with their job */
    for (void *it = hmap_first(c->jobs, &v); it && !x; it = hmap_next(c->jobs, it, &v))
        for (int i = 0; i < ((job_t *)v)->nxfers && !x; i++)
            if (((job_t *)v)->xfers[i]->id == id)
                x = ((job_t *)v)->xfers[i];
    return x;
}

int core_xfer_update(core_t *c, xfer_t *x, const char *state, int64_t bytes_done,
                     int64_t bytes_total, const char *message, cerr_t *e)
{
    int ns = state ? core_xfer_state_parse(state) : (int)x->state;
    if (ns < 0)
        return core_cerr_set(e, EINVAL, "state",
                             "must be queued, running, done, failed or cancelled");
    if (x->state != XF_QUEUED && x->state != XF_RUNNING)
        return core_cerr_set(e, EBUSY, "state", "transfer %ju is already %s", (uintmax_t)x->id,
                             core_xfer_state_name(x->state));
    if (message) {
        char *m = strdup(message);
        if (!m)
            return core_cerr_set(e, ENOMEM, "", "out of memory");
        free(x->message);
        x->message = m;
    }
    if (bytes_total >= 0)
        x->bytes_total = bytes_total;
    if (bytes_done >= 0)
        x->bytes_done = bytes_done;
    x->state = (xfer_state_t)ns;
    if (ns == XF_RUNNING && isnan(x->start))
        x->start = core_wall();
    if (ns >= XF_DONE) {
        x->finished = core_wall();
        hmap_idel(c->xfers, x->id);
        if (x->in_mover && c->mover)
            mover_cancel(c->mover, x->id, message ? message : "set through the API");
        x->in_mover = false;
    }
    core_put_xfer(c, x);
    return 0;
}

/* ------------------------------------------------------------------ mover */
/* Is path inside one of the job's buffers (its allocation, persistent buffers it
 * uses)?  The check is on the text (paths have no "..", see doc/api.md); the copy
 * itself runs as the job's user, so a symlink cannot take it further than the user
 * could go. */
static bool in_buffers(core_t *c, job_t *j, const char *path, uint64_t *cap)
{
    char root[1200];
    for (int i = 0; j->alloc && i < j->alloc->n; i++) {
        snprintf(root, sizeof(root), "%s/%s", c->nodes[j->alloc->v[i].node].mount, j->id);
        if (util_path_under(path, root)) {
            *cap = core_mount_share(c, j->alloc, i);
            return true;
        }
    }
    for (int u = 0; u < j->nuses; u++) {
        pbuf_t *b = hmap_get(c->pbufs, j->uses[u]);
        for (int i = 0; b && i < b->alloc.n; i++) {
            snprintf(root, sizeof(root), "%s/persistent/%s", c->nodes[b->alloc.v[i].node].mount,
                     b->name);
            if (util_path_under(path, root)) {
                *cap = core_mount_share(c, &b->alloc, i);
                return true;
            }
        }
    }
    return false;
}

static void xfer_close(core_t *c, xfer_t *x, xfer_state_t st, const char *msg)
{
    x->state = st;
    x->finished = core_wall();
    if (msg) {
        char *m = strdup(msg);
        if (m) {
            free(x->message);
            x->message = m;
        }
    }
    x->in_mover = false;
    hmap_idel(c->xfers, x->id);
    core_put_xfer(c, x);
}

/* Transfer tid of job, finished or not; NULL when its job is no longer in memory
 * (ended). */
static xfer_t *xfer_of_job(core_t *c, const char *job, uint64_t tid)
{
    job_t *j = job ? hmap_get(c->jobs, job) : NULL;
    for (int i = 0; j && i < j->nxfers; i++)
        if (j->xfers[i]->id == tid)
            return j->xfers[i];
    return NULL;
}

/* The fsyncs of a done transfer are over: it is durable, or it is not and fails
 * (its copy may not be on disk; the mover keeps its source). */
static void xfer_durability(core_t *c, uint64_t tid, const char *job, bool ok, const char *msg)
{
    xfer_t *x = xfer_of_job(c, job, tid);
    char text[1200];
    snprintf(text, sizeof(text), "not durable: %s", msg ? msg : "fsync failed");
    if (x && x->state != XF_DONE)
        return; /* closed through the API meanwhile */
    if (ok)
        bl_debug("transfer %ju of job %s is durable", (uintmax_t)tid, job);
    else
        bl_error("%s %ju of job %s: %s; its source is kept", x ? x->kind : "transfer",
                 (uintmax_t)tid, job, text);
    core_held_resolve(c, tid, ok);
    if (!x) {
        if (ok)
            state_put(c->st, ST_XFER_DURABLE, "i", (int64_t)tid);
        else
            state_put(c->st, ST_XFER_NOT_DURABLE, "si", text, (int64_t)tid);
        return;
    }
    if (ok) {
        x->durable = 1;
    } else {
        char *m = strdup(text);
        x->state = XF_FAILED;
        x->durable = -1;
        if (m) {
            free(x->message);
            x->message = m;
        }
    }
    core_put_xfer(c, x);
}

static void requeue(core_t *c, xfer_t *x)
{
    x->state = XF_QUEUED;
    x->in_mover = false;
    x->start = core_wall();
    x->finished = NAN;
    x->bytes_done = 0;
    x->durable = -1;
    core_put_xfer(c, x);
}

static void on_mover_report(uint64_t tid, const char *job, mover_state_t st, int64_t done,
                            int64_t total, const char *msg, void *arg)
{
    core_t *c = arg;
    if (st == MV_DURABLE || st == MV_NOT_DURABLE) {
        xfer_durability(c, tid, job, st == MV_DURABLE, msg);
        return;
    }
    xfer_t *x = hmap_iget(c->xfers, tid);
    if (!x || !x->in_mover)
        return; /* closed meanwhile (job ended, or set through the API) */
    x->bytes_done = done;
    if (total >= 0)
        x->bytes_total = total;
    if (st == MV_RUNNING) {
        core_put_xfer(c, x);
        return;
    }
    if (st == MV_DONE && x->relink) {
        /* part 0 of a spread stage-in whose links must name a part's new node */
        x->relink = false;
        x->run++;
        requeue(c, x);
        bl_info("stage_in %ju of job %s: run again for the links to a moved part", (uintmax_t)x->id,
                x->job_id);
        return;
    }
    /* done with its fsyncs going on: durable (or not) later */
    x->durable = st == MV_DONE_SYNCING ? 0 : -1;
    if (st == MV_DONE_SYNCING)
        st = MV_DONE;
    xfer_close(c, x, st == MV_DONE ? XF_DONE : st == MV_FAILED ? XF_FAILED : XF_CANCELLED, msg);
    if (st == MV_DONE)
        bl_info("%s %ju of job %s done: %jd bytes in %.3f s%s%s", x->kind, (uintmax_t)x->id,
                x->job_id, (intmax_t)done, x->finished - x->start, msg ? ": " : "", msg ? msg : "");
    else
        bl_warning("%s %ju of job %s %s: %s", x->kind, (uintmax_t)x->id, x->job_id,
                   core_xfer_state_name(x->state), msg ? msg : "");
}

int core_restage_lost(core_t *c, job_t *j, int lost, const char *why)
{
    char from[1200], to[1200];
    int n = 0, dst;
    if (j->state != JOB_REGISTERED || !j->alloc)
        return -1;
    snprintf(from, sizeof(from), "%s/%s", c->nodes[lost].mount, j->id);
    if ((dst = core_alloc_move_share(c, j, lost)) < 0)
        return -1;
    snprintf(to, sizeof(to), "%s/%s", c->nodes[dst].mount, j->id);
    for (int i = 0; i < j->nxfers; i++) {
        xfer_t *x = j->xfers[i];
        size_t len;
        char *d;
        if (strcmp(x->kind, "stage_in") || x->state == XF_FAILED || x->state == XF_CANCELLED
            || !util_path_under(x->destination, from)
            || !(d = malloc(len = strlen(to) + strlen(x->destination + strlen(from)) + 1)))
            continue;
        snprintf(d, len, "%s%s", to, x->destination + strlen(from));
        free(x->destination);
        x->destination = d;
        if (x->state == XF_DONE && hmap_iput(c->xfers, x->id, x) < 0) {
            xfer_close(c, x, XF_FAILED, "out of memory");
            continue;
        }
        requeue(c, x);
        n++;
        /* part 0 of a spread stage-in links to the files of the other parts: it
         * runs again too, so that its links name the part's new node (the files it
         * copied itself are found complete and kept) */
        for (int k = 0; x->nparts > 1 && x->part > 0 && k < j->nxfers; k++) {
            xfer_t *p0 = j->xfers[k];
            if (p0->id != x->id - (uint64_t)x->part || p0->part != 0)
                continue;
            if (p0->state == XF_RUNNING)
                p0->relink = true; /* again once done (on_mover_report) */
            else if (p0->state == XF_DONE && hmap_iput(c->xfers, p0->id, p0) == 0) {
                p0->run++;
                requeue(c, p0);
                n++;
            }
        }
    }
    bl_warning("job %s: buffer node %s %s: its share of the buffer moved to %s, %d stage-in(s) "
               "run again there",
               j->id, c->nodes[lost].name, why, c->nodes[dst].name, n);
    return n;
}

void core_mover_report(core_t *c, uint64_t tid, const char *job, mover_state_t st, int64_t done,
                       int64_t total, const char *msg)
{
    on_mover_report(tid, job, st, done, total, msg, c);
}

/* Timer: results of the mover. */
void core_mover_results(core_t *c)
{
    mover_poll(c->mover, on_mover_report, c);
}

/* Timer, after the results (and, at the first tick, the recovery of the durability
 * a stop interrupted): transfers whose start has come, weights. */
void core_mover_tick(core_t *c, double wall)
{
    void *v;
    xfer_t *due[64];
    int nd = 0;

    bool mover_mode = !strcmp(c->cfg->stage_mode, "mover");
    for (void *it = hmap_first(c->xfers, &v); it; it = hmap_next(c->xfers, it, &v)) {
        xfer_t *x = v;
        job_t *j = hmap_get(c->jobs, x->job_id);
        if (x->in_mover) {
            if (j)
                mover_set_weight(c->mover, j->id, core_job_weight(c, j));
        } else if (mover_mode && x->state == XF_QUEUED && wall >= x->start && nd < 64) {
            due[nd++] = x;
        }
    }
    for (int i = 0; i < nd; i++) {
        xfer_t *x = due[i];
        job_t *j = hmap_get(c->jobs, x->job_id);
        bool out = !strcmp(x->kind, "stage_out");
        const char *buf = out ? x->source : x->destination;
        char msg[1400];
        uint64_t cap = 0;
        if (!j) {
            xfer_close(c, x, XF_CANCELLED, "job ended");
            continue;
        }
        if (!in_buffers(c, j, buf, &cap)) {
            snprintf(msg, sizeof(msg), "%s %s is outside the job's buffers (%s)",
                     out ? "source" : "destination", buf,
                     j->alloc || j->nuses ? "its allocation and persistent buffers"
                                          : "the job has no allocation");
            bl_warning("%s %ju of job %s refused: %s", x->kind, (uintmax_t)x->id, j->id, msg);
            xfer_close(c, x, XF_FAILED, msg);
            continue;
        }
        mover_spec_t spec = {
            .tid = x->id,
            .job = j->id,
            .weight = core_job_weight(c, j),
            .uid = j->uid,
            .gid = j->gid,
            .user = j->user,
            .stage_out = out,
            .directory = !strcmp(x->type, "directory"),
            .src = x->source,
            .dst = x->destination,
            .max_bytes = out ? 0 : (int64_t)cap,
        };
        char rootv[MOVER_MAX_PARTS][1200];
        if (x->nparts > 1) {
            if (!j->alloc || j->alloc->n != x->nparts || x->nparts > MOVER_MAX_PARTS) {
                xfer_close(c, x, XF_FAILED,
                           "the job's allocation no longer has the nodes "
                           "this transfer was spread over");
                continue;
            }
            for (int k = 0; k < x->nparts; k++) {
                snprintf(rootv[k], sizeof(rootv[k]), "%s/%s", c->nodes[j->alloc->v[k].node].mount,
                         j->id);
                spec.roots[k] = rootv[k];
            }
            spec.part = x->part;
            spec.nparts = x->nparts;
            spec.run = x->run;
        }
        if (!nodes_dispatch(c, &spec, buf) && mover_submit(c->mover, &spec) < 0) {
            bl_error("mover: transfer %ju: %s (retried)", (uintmax_t)x->id, strerror(errno));
            continue;
        }
        x->in_mover = true;
        x->state = XF_RUNNING;
        x->bytes_done = 0;
        core_put_xfer(c, x);
    }
}
