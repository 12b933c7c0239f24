/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_model.c — the bottom of bbmgrd's core, under every core_*.c file and the
 * agents' side (nodes.c): the error setter, the state names, the clocks and the
 * lock, the queued rows of the state writer, the objects' frees and the string
 * vectors, the lookups, a buffer's share of a mount, a job's weight in the mover,
 * the accessors.  It calls nothing of the core above it (core_model.h).
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
#include "libhutil/hu_error.h"
#include "core_model.h"
#include "log.h"
#include "util.h"


int core_cerr_set(cerr_t *e, int code, const char *field, const char *fmt, ...)
{
    va_list ap;
    if (!e)
        return -1;
    e->code = code;
    snprintf(e->field, sizeof(e->field), "%s", field ? field : "");
    va_start(ap, fmt);
    hu_verrprintf(&e->err, fmt, ap);
    va_end(ap);
    e->err.text[CERR_MSG_MAX - 1] = '\0';
    return -1;
}

const char *core_phase_state_name(phase_state_t s)
{
    static const char *const n[] = { "waiting", "granted", "finished", "expired", "cancelled" };
    return n[s];
}

const char *core_xfer_state_name(xfer_state_t s)
{
    static const char *const n[] = { "queued", "running", "done", "failed", "cancelled" };
    return n[s];
}

const char *core_job_state_name(job_state_t s)
{
    static const char *const n[] = { "registered", "running", "ended" };
    return n[s];
}

int core_phase_state_parse(const char *s)
{
    for (int i = 0; i <= PH_CANCELLED; i++)
        if (!strcmp(s, core_phase_state_name((phase_state_t)i)))
            return i;
    return -1;
}

int core_xfer_state_parse(const char *s)
{
    for (int i = 0; i <= XF_CANCELLED; i++)
        if (!strcmp(s, core_xfer_state_name((xfer_state_t)i)))
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

double core_wall_to_hs(core_t *c, double wall)
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

void core_notify(core_t *c, uint64_t pid)
{
    if (c->notify)
        c->notify(pid, c->notify_arg);
}

/* ------------------------------------------------------------------ persistence */
static double nan_if(bool cond, double v)
{
    return cond ? NAN : v;
}

void core_put_job(core_t *c, job_t *j)
{
    j->updated = core_wall();
    state_put(c->st, ST_JOB_PUT, "siissidddsdsddddid", j->id, (int64_t)j->uid, (int64_t)j->gid,
              j->user, j->name, (int64_t)j->nodes, j->w_iter, j->io_volume,
              nan_if(j->phases < 0, (double)j->phases), j->io[0] ? j->io : NULL,
              nan_if(j->priority <= 0, j->priority), core_job_state_name(j->state), j->created,
              j->updated, j->begun, j->ended, (int64_t)j->nphases, j->bytes);
}

void core_put_anodes(core_t *c, const char *kind, const char *owner, const alloc_t *a)
{
    state_put(c->st, ST_ANODE_DEL, "ss", kind, owner);
    for (int i = 0; i < a->n; i++)
        state_put(c->st, ST_ANODE_PUT, "sssi", kind, owner, c->nodes[a->v[i].node].name,
                  (int64_t)a->v[i].bytes);
}

char *core_phase_nodes_str(core_t *c, phase_t *p)
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

void core_put_phase(core_t *c, phase_t *p)
{
    char *nodes = p->state == PH_GRANTED || p->state == PH_FINISHED ? core_phase_nodes_str(c, p)
                                                                    : NULL;
    state_put(c->st, ST_PHASE_PUT, "isdssdddddsdi", (int64_t)p->id, p->job->id, p->volume, p->dir,
              core_phase_state_name(p->state), p->requested, p->granted, p->finished, p->bytes,
              p->bw, nodes, p->w_done, (int64_t)(p->on_hold && p->state == PH_WAITING));
    free(nodes);
}

void core_put_xfer(core_t *c, xfer_t *x)
{
    state_put(c->st, ST_XFER_PUT, "issssssdisdddddd", (int64_t)x->id, x->job_id, x->kind, x->source,
              x->destination, x->type, core_xfer_state_name(x->state),
              nan_if(x->bytes_total < 0, (double)x->bytes_total), (int64_t)x->bytes_done,
              x->message, x->requested, x->start, x->finished,
              nan_if(x->durable < 0, (double)x->durable), nan_if(x->nparts < 2, x->part),
              nan_if(x->nparts < 2, x->nparts));
}

void core_put_node(core_t *c, int idx)
{
    node_t *n = &c->nodes[idx];
    state_put(c->st, ST_NODE_PUT, "sssd", n->name, n->drained ? "drained" : "up", n->reason,
              core_wall());
}

/* ------------------------------------------------------------------ objects */
void core_alloc_free_nodes(core_t *c, alloc_t *a)
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

void core_xfer_free(xfer_t *x)
{
    if (x) {
        free(x->job_id);
        free(x->source);
        free(x->destination);
        free(x->message);
        free(x);
    }
}

void core_job_free(job_t *j)
{
    if (!j)
        return;
    free(j->user);
    free(j->name);
    if (j->alloc) {
        free(j->alloc->v);
        free(j->alloc);
    }
    if (j->phase)
        free(j->phase->members);
    free(j->phase);
    for (int i = 0; i < j->nxfers; i++)
        core_xfer_free(j->xfers[i]);
    free(j->xfers);
    util_strv_free(j->uses, j->nuses);
    free(j);
}

void core_pbuf_free(pbuf_t *b)
{
    if (b) {
        free(b->alloc.v);
        util_strv_free(b->users, b->nusers);
        free(b);
    }
}

int core_strv_add(char ***v, int *n, const char *s)
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

bool core_strv_del(char **v, int *n, const char *s)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(v[i], s)) {
            free(v[i]);
            v[i] = v[--(*n)];
            return true;
        }
    return false;
}

/* ------------------------------------------------------------------ lookups */
int core_node_index(core_t *c, const char *name)
{
    intptr_t v = (intptr_t)hmap_get(c->node_by_name, name);
    return v ? (int)v - 1 : -1;
}

pbuf_t *core_pbuf(core_t *c, const char *name)
{
    return hmap_get(c->pbufs, name);
}

job_t *core_job(core_t *c, const char *id)
{
    return hmap_get(c->jobs, id);
}

phase_t *core_phase(core_t *c, uint64_t id)
{
    return hmap_iget(c->phases, id);
}

xfer_t *core_xfer(core_t *c, uint64_t id)
{
    return hmap_iget(c->xfers, id);
}

/* ------------------------------------------------------------------ shares */
/* The bytes of allocation a on the mount of its node i: its share there (nodes
 * that share a mount share the directory, and their shares). */
uint64_t core_mount_share(core_t *c, const alloc_t *a, int i)
{
    uint64_t sum = 0;
    for (int k = 0; k < a->n; k++)
        if (!strcmp(c->nodes[a->v[k].node].mount, c->nodes[a->v[i].node].mount))
            sum += a->v[k].bytes;
    return sum;
}

/* The policy's weight for a job's share of the mover (core.h). */
double core_job_weight(core_t *c, const job_t *j)
{
    switch (c->policy.kind) {
    case HS_POL_SET:
    case HS_POL_PRIORITY_SHARING: {
        double base = c->policy.set_base > 1 ? c->policy.set_base : 10;
        int cls = isnan(j->w_iter) || !(j->w_iter > 0) ? 0 : hs_iosets_class(j->w_iter, base);
        if (cls > 30)
            cls = 30;
        if (cls < -30)
            cls = -30;
        return pow(base, -cls);
    }
    case HS_POL_HARMONIA_PRIORITY:
        return j->priority > 0 ? j->priority : 1;
    default:
        return 1.0;
    }
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
