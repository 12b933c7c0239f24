/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core.c — bbmgrd's model: the state names, the clocks and the lock, the queued
 * rows of the state writer, the objects' life, creation and the timer.
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
#include "core_internal.h"
#include "log.h"
#include "nodes.h"
#include "util.h"

int cerr_set(cerr_t *e, int code, const char *field, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        e->code = code;
        snprintf(e->field, sizeof(e->field), "%s", field ? field : "");
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        va_end(ap);
    }
    return -1;
}

const char *phase_state_name(phase_state_t s)
{
    static const char *const n[] = { "waiting", "granted", "finished", "expired", "cancelled" };
    return n[s];
}

const char *xfer_state_name(xfer_state_t s)
{
    static const char *const n[] = { "queued", "running", "done", "failed", "cancelled" };
    return n[s];
}

const char *job_state_name(job_state_t s)
{
    static const char *const n[] = { "registered", "running", "ended" };
    return n[s];
}

int phase_state_parse(const char *s)
{
    for (int i = 0; i <= PH_CANCELLED; i++)
        if (!strcmp(s, phase_state_name((phase_state_t)i)))
            return i;
    return -1;
}

int xfer_state_parse(const char *s)
{
    for (int i = 0; i <= XF_CANCELLED; i++)
        if (!strcmp(s, xfer_state_name((xfer_state_t)i)))
            return i;
    return -1;
}

/* ------------------------------------------------------------------ clocks */
double core_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double core_hs_now(core_t *c)
{
    double t = hu_mono() - c->mono0 + c->hs_offset;
    if (t < c->hs_last)
        t = c->hs_last;
    c->hs_last = t;
    return t;
}

double wall_to_hs(core_t *c, double wall)
{
    return wall - c->epoch;
}

/* A critical section of the core is one unit in the database: what it changes is
 * committed in one transaction or not at all (state_hold()). */
void core_lock(core_t *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->st)
        state_hold(c->st);
}

void core_unlock(core_t *c)
{
    if (c->st)
        state_release(c->st);
    pthread_mutex_unlock(&c->lock);
}

void core_set_notify(core_t *c, core_notify_f fn, void *arg)
{
    c->notify = fn;
    c->notify_arg = arg;
}

void notify(core_t *c, uint64_t pid)
{
    if (c->notify)
        c->notify(pid, c->notify_arg);
}

/* ------------------------------------------------------------------ persistence */
static double nan_if(bool cond, double v)
{
    return cond ? NAN : v;
}

void put_job(core_t *c, job_t *j)
{
    j->updated = core_wall();
    state_put(c->st, ST_JOB_PUT, "siissidddsdsddddid", j->id, (int64_t)j->uid,
              (int64_t)j->gid, j->user, j->name, (int64_t)j->nodes, j->w_iter,
              j->io_volume, nan_if(j->phases < 0, (double)j->phases),
              j->io[0] ? j->io : NULL, nan_if(j->priority <= 0, j->priority),
              job_state_name(j->state), j->created, j->updated, j->begun, j->ended,
              (int64_t)j->nphases, j->bytes);
}

void put_anodes(core_t *c, const char *kind, const char *owner, const alloc_t *a)
{
    state_put(c->st, ST_ANODE_DEL, "ss", kind, owner);
    for (int i = 0; i < a->n; i++)
        state_put(c->st, ST_ANODE_PUT, "sssi", kind, owner, c->nodes[a->v[i].node].name,
                  (int64_t)a->v[i].bytes);
}

char *phase_nodes_str(core_t *c, phase_t *p)
{
    const alloc_t *a = p->job ? p->job->alloc : NULL;
    size_t len = 1;
    char *s;
    if (!a || a->n == 0)
        return NULL;
    for (int i = 0; i < a->n; i++)
        len += strlen(c->nodes[a->v[i].node].name) + 1;
    if (!(s = calloc(1, len)))
        return NULL;
    for (int i = 0; i < a->n; i++) {
        if (i)
            strcat(s, ",");
        strcat(s, c->nodes[a->v[i].node].name);
    }
    return s;
}

void put_phase(core_t *c, phase_t *p)
{
    char *nodes = p->state == PH_GRANTED || p->state == PH_FINISHED ? phase_nodes_str(c, p)
                                                                     : NULL;
    state_put(c->st, ST_PHASE_PUT, "isdssdddddsd", (int64_t)p->id, p->job->id, p->volume,
              p->dir, phase_state_name(p->state), p->requested, p->granted, p->finished,
              p->bytes, p->bw, nodes, p->w_done);
    free(nodes);
}

void put_xfer(core_t *c, xfer_t *x)
{
    state_put(c->st, ST_XFER_PUT, "issssssdisdddddd", (int64_t)x->id, x->job_id, x->kind,
              x->source, x->destination, x->type, xfer_state_name(x->state),
              nan_if(x->bytes_total < 0, (double)x->bytes_total), (int64_t)x->bytes_done,
              x->message, x->requested, x->start, x->finished,
              nan_if(x->durable < 0, (double)x->durable), nan_if(x->nparts < 2, x->part),
              nan_if(x->nparts < 2, x->nparts));
}

void put_node(core_t *c, int idx)
{
    node_t *n = &c->nodes[idx];
    state_put(c->st, ST_NODE_PUT, "sssd", n->name, n->drained ? "drained" : "up", n->reason,
              core_wall());
}

/* ------------------------------------------------------------------ objects */
void alloc_free_nodes(core_t *c, alloc_t *a)
{
    for (int i = 0; i < a->n; i++) {
        node_t *n = &c->nodes[a->v[i].node];
        n->used -= a->v[i].bytes < n->used ? a->v[i].bytes : n->used;
        n->nallocs--;
    }
    free(a->v);
    a->v = NULL;
    a->n = 0;
}

void xfer_free(xfer_t *x)
{
    if (x) {
        free(x->job_id);
        free(x->source);
        free(x->destination);
        free(x->message);
        free(x);
    }
}

void job_free(job_t *j)
{
    if (!j)
        return;
    free(j->user);
    free(j->name);
    if (j->alloc) {
        free(j->alloc->v);
        free(j->alloc);
    }
    free(j->phase);
    for (int i = 0; i < j->nxfers; i++)
        xfer_free(j->xfers[i]);
    free(j->xfers);
    util_strv_free(j->uses, j->nuses);
    free(j);
}

void pbuf_free(pbuf_t *b)
{
    if (b) {
        free(b->alloc.v);
        util_strv_free(b->users, b->nusers);
        free(b);
    }
}

int strv_add(char ***v, int *n, const char *s)
{
    char **nv = realloc(*v, (size_t)(*n + 1) * sizeof(char *));
    if (!nv)
        return -1;
    *v = nv;
    if (!(nv[*n] = strdup(s)))
        return -1;
    (*n)++;
    return 0;
}

bool strv_del(char **v, int *n, const char *s)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(v[i], s)) {
            free(v[i]);
            v[i] = v[--(*n)];
            return true;
        }
    return false;
}

/* ------------------------------------------------------------------ create */
core_t *core_create(cfg_t *cfg, state_t *st, hu_error_t *err)
{
    core_t *c = calloc(1, sizeof(*c));
    hs_error_t herr = { "" };

    if (!c) {
        errno = ENOMEM;
        hu_errprintf(err, "out of memory");
        cfg_destroy(cfg);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    c->cfg = cfg;
    c->st = st;
    c->next_phase = c->next_xfer = c->next_hs = 1;
    c->started = core_wall();
    if (!(c->node_by_name = hmap_create()) || !(c->jobs = hmap_create())
        || !(c->jobs_hs = hmap_create()) || !(c->phases = hmap_create())
        || !(c->pbufs = hmap_create()) || !(c->xfers = hmap_create())
        || pools_load(c, cfg) < 0) {
        errno = ENOMEM;
        hu_errprintf(err, "out of memory");
        goto error;
    }
    for (int i = 0; i < cfg->nnodes; i++)
        for (int k = 0; k < cfg->nodes[i].names.n; k++)
            if (node_add(c, cfg->nodes[i].names.v[k], &cfg->nodes[i], true) < 0) {
                errno = ENOMEM;
                hu_errprintf(err, "out of memory");
                goto error;
            }
    if (hs_policy_parse(cfg->policy_id, &c->policy, &herr) < 0) {
        errno = EINVAL;
        hu_errprintf(err, "policy.id: %s", herr.text);
        goto error;
    }
    core_policy_bound(cfg, &c->policy);
    hs_policy_name(&c->policy, c->policy_id, sizeof(c->policy_id));
    return c;
error:
    core_destroy(c);
    return NULL;
}

void core_destroy(core_t *c)
{
    if (!c)
        return;
    int saved = errno;
    void *v;
    if (c->jobs)
        for (void *it = hmap_first(c->jobs, &v); it; it = hmap_next(c->jobs, it, &v))
            job_free(v);
    if (c->pbufs)
        for (void *it = hmap_first(c->pbufs, &v); it; it = hmap_next(c->pbufs, it, &v))
            pbuf_free(v);
    for (int i = 0; i < c->nheld; i++)
        held_free(c->held[i]);
    free(c->held);
    for (int i = 0; i < CORE_ENDED_KEEP; i++)
        json_decref(c->ended[i]);
    hmap_destroy(c->jobs);
    hmap_destroy(c->jobs_hs);
    hmap_destroy(c->phases);
    usage_free(c);
    hmap_destroy(c->pbufs);
    hmap_destroy(c->xfers);
    hmap_destroy(c->node_by_name);
    for (int i = 0; i < c->nnodes; i++) {
        free(c->nodes[i].mount);
        free(c->nodes[i].reason);
    }
    free(c->nodes);
    free(c->pools);
    free(c->grants);
    hs_sched_destroy(c->sched);
    cfg_destroy(c->cfg);
    pthread_mutex_destroy(&c->lock);
    free(c);
    errno = saved;
}

/* ------------------------------------------------------------------ tick */
void core_tick(core_t *c)
{
    double wall = core_wall();
    void *v;
    phase_t *expire[64];
    int nexp = 0;

    core_lock(c);
    for (void *it = hmap_first(c->phases, &v); it && nexp < 64; it = hmap_next(c->phases, it, &v)) {
        phase_t *p = v;
        if (p->state == PH_GRANTED && wall - p->granted > c->cfg->limits_grant_timeout)
            expire[nexp++] = p;
    }
    for (int i = 0; i < nexp; i++) {
        bl_warning("phase %ju of job %s expired: granted %.0f s ago and not finished",
                   (uintmax_t)expire[i]->id, expire[i]->job->id, wall - expire[i]->granted);
        phase_close(c, expire[i], PH_EXPIRED, expire[i]->bytes);
    }
    if (!strcmp(c->cfg->stage_mode, "scheduled")) {
        xfer_t *done[64];
        int nd = 0;
        for (void *it = hmap_first(c->xfers, &v); it && nd < 64; it = hmap_next(c->xfers, it, &v)) {
            xfer_t *x = v;
            if (x->state == XF_QUEUED && wall >= x->start)
                done[nd++] = x;
        }
        for (int i = 0; i < nd; i++) {
            /* no data mover yet: a transfer is done at its scheduled start */
            done[i]->state = XF_DONE;
            done[i]->finished = wall;
            if (done[i]->bytes_total > 0)
                done[i]->bytes_done = done[i]->bytes_total;
            hmap_idel(c->xfers, done[i]->id);
            put_xfer(c, done[i]);
        }
    }
    if (c->mover)
        mover_tick(c, wall);
    nodes_tick(c, wall);
    spares_fill(c, wall);
    usage_tick(c, wall);
    leftover_tick(c);
    if (wall >= c->prune_next) {
        /* closed rows go after limits.keep_closed (or beyond keep_closed_count), so
         * that state.db does not grow with every phase ever requested */
        double before = wall - c->cfg->limits_keep_closed;
        int64_t keep = c->cfg->limits_keep_closed_count;
        c->prune_next = wall + fmin(10.0, fmax(c->cfg->limits_keep_closed / 4, 0.2));
        state_put(c->st, ST_PRUNE_PHASES, "di", before, keep);
        state_put(c->st, ST_PRUNE_XFERS, "di", before, keep);
        state_put(c->st, ST_PRUNE_JOBS, "d", before);
    }
    double now = core_hs_now(c);
    if (nexp > 0 || c->sched_dirty || hs_sched_next_event(c->sched) <= now)
        reschedule(c, now);
    core_unlock(c);
}


/* ------------------------------------------------------------------ accessors */
cfg_t *core_cfg(core_t *c)
{
    return c->cfg;
}

state_t *core_state(core_t *c)
{
    return c->st;
}

double core_started(core_t *c)
{
    return c->started;
}

void core_set_mover(core_t *c, mover_t *m)
{
    c->mover = m;
}
