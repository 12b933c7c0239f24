/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core.c — bbmgrd's model: nodes, pools, jobs, allocations, persistent buffers,
 * phases, transfers; the live scheduler; recovery.
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
#include "core.h"
#include "log.h"
#include "nodes.h"

#define NOW_NAN NAN

int cerr_set(cerr_t *e, int status, const char *field, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        e->status = status;
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

static int phase_state_parse(const char *s)
{
    for (int i = 0; i <= PH_CANCELLED; i++)
        if (!strcmp(s, phase_state_name((phase_state_t)i)))
            return i;
    return -1;
}

static int xfer_state_parse(const char *s)
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

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double core_hs_now(core_t *c)
{
    double t = mono() - c->mono0 + c->hs_offset;
    if (t < c->hs_last)
        t = c->hs_last;
    c->hs_last = t;
    return t;
}

static double wall_to_hs(core_t *c, double wall)
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

static void notify(core_t *c, uint64_t pid)
{
    if (c->notify)
        c->notify(pid, c->notify_arg);
}

/* ------------------------------------------------------------------ persistence */
static double nan_if(bool cond, double v)
{
    return cond ? NAN : v;
}

static void put_job(core_t *c, job_t *j)
{
    j->updated = core_wall();
    state_put(c->st, ST_JOB_PUT, "siissidddsdsddddid", j->id, (int64_t)j->uid,
              (int64_t)j->gid, j->user, j->name, (int64_t)j->nodes, j->w_iter,
              j->io_volume, nan_if(j->phases < 0, (double)j->phases),
              j->io[0] ? j->io : NULL, nan_if(j->priority <= 0, j->priority),
              job_state_name(j->state), j->created, j->updated, j->begun, j->ended,
              (int64_t)j->nphases, j->bytes);
}

static void put_anodes(core_t *c, const char *kind, const char *owner, const alloc_t *a)
{
    state_put(c->st, ST_ANODE_DEL, "ss", kind, owner);
    for (int i = 0; i < a->n; i++)
        state_put(c->st, ST_ANODE_PUT, "sssi", kind, owner, c->nodes[a->v[i].node].name,
                  (int64_t)a->v[i].bytes);
}

static char *phase_nodes_str(core_t *c, phase_t *p)
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

static void put_phase(core_t *c, phase_t *p)
{
    char *nodes = p->state == PH_GRANTED || p->state == PH_FINISHED ? phase_nodes_str(c, p)
                                                                     : NULL;
    state_put(c->st, ST_PHASE_PUT, "isdssdddddsd", (int64_t)p->id, p->job->id, p->volume,
              p->dir, phase_state_name(p->state), p->requested, p->granted, p->finished,
              p->bytes, p->bw, nodes, p->w_done);
    free(nodes);
}

static void put_xfer(core_t *c, xfer_t *x)
{
    state_put(c->st, ST_XFER_PUT, "issssssdisdddd", (int64_t)x->id, x->job_id, x->kind,
              x->source, x->destination, x->type, xfer_state_name(x->state),
              nan_if(x->bytes_total < 0, (double)x->bytes_total), (int64_t)x->bytes_done,
              x->message, x->requested, x->start, x->finished,
              nan_if(x->durable < 0, (double)x->durable));
}

static void put_node(core_t *c, int idx)
{
    node_t *n = &c->nodes[idx];
    state_put(c->st, ST_NODE_PUT, "sssd", n->name, n->drained ? "drained" : "up", n->reason,
              core_wall());
}

/* ------------------------------------------------------------------ objects */
static void alloc_free_nodes(core_t *c, alloc_t *a)
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

static void xfer_free(xfer_t *x)
{
    if (x) {
        free(x->job_id);
        free(x->source);
        free(x->destination);
        free(x->message);
        free(x);
    }
}

static void job_free(job_t *j)
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
    for (int i = 0; i < j->nuses; i++)
        free(j->uses[i]);
    free(j->uses);
    free(j);
}

static void pbuf_free(pbuf_t *b)
{
    if (b) {
        free(b->alloc.v);
        for (int i = 0; i < b->nusers; i++)
            free(b->users[i]);
        free(b->users);
        free(b);
    }
}

static void held_free(held_t *h);
static void held_reason(held_t *h);
static bool mount_seen(core_t *c, const alloc_t *a, int i);
static held_t *held_add(core_t *c, const char *job, const char *owner);

static int strv_add(char ***v, int *n, const char *s)
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

static bool strv_del(char **v, int *n, const char *s)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(v[i], s)) {
            free(v[i]);
            v[i] = v[--(*n)];
            return true;
        }
    return false;
}

/* ------------------------------------------------------------------ nodes */
static int node_add(core_t *c, const char *name, const cfg_nodeset_t *ns, bool in_config)
{
    node_t *nv = realloc(c->nodes, (size_t)(c->nnodes + 1) * sizeof(node_t));
    if (!nv)
        return -1;
    c->nodes = nv;
    node_t *n = &c->nodes[c->nnodes];
    memset(n, 0, sizeof(*n));
    snprintf(n->name, sizeof(n->name), "%s", name);
    n->device = -1;
    n->in_config = in_config;
    if (ns) {
        n->capacity = ns->capacity;
        n->bandwidth = ns->bandwidth;
        n->pool = cfg_pool_index(c->cfg, ns->pool);
        n->device = *ns->device ? cfg_device_index(c->cfg, ns->device) : -1;
        n->mount = cfg_node_mount(ns->mount, name);
    } else {
        n->pool = 0;
        n->bandwidth = 1e9;
        n->mount = strdup("/");
        n->drained = true;
        n->reason = strdup("not in the configuration");
    }
    if (!n->mount)
        return -1;
    if (hmap_put(c->node_by_name, name, (void *)(intptr_t)(c->nnodes + 1)) < 0)
        return -1;
    c->nnodes++;
    return c->nnodes - 1;
}

int core_node_index(core_t *c, const char *name)
{
    intptr_t v = (intptr_t)hmap_get(c->node_by_name, name);
    return v ? (int)v - 1 : -1;
}

static int pools_load(core_t *c, const cfg_t *cfg)
{
    pool_t *pv = calloc((size_t)cfg->npools, sizeof(pool_t));
    if (!pv)
        return -1;
    for (int i = 0; i < cfg->npools; i++) {
        snprintf(pv[i].name, sizeof(pv[i].name), "%s", cfg->pools[i].name);
        pv[i].granularity = cfg->pools[i].granularity;
    }
    free(c->pools);
    c->pools = pv;
    c->npools = cfg->npools;
    return 0;
}

static int pool_index(core_t *c, const char *name)
{
    for (int i = 0; i < c->npools; i++)
        if (!strcmp(c->pools[i].name, name))
            return i;
    return -1;
}

/* ------------------------------------------------------------------ scheduler */
static int job_arrive(core_t *c, job_t *j, double now, hu_error_t *err)
{
    hs_error_t herr = { "" };
    int *alloc = NULL;
    hs_job_t hj = { 0 };
    hj.id = j->hs_id;
    hj.nodes = j->nodes > 0 ? j->nodes : 1;
    hj.release = isnan(j->begun) ? now : fmin(now, wall_to_hs(c, j->begun));
    if (hj.release < 0)
        hj.release = 0;
    hj.volume = isnan(j->io_volume) ? 0 : j->io_volume;
    hj.w_iter = isnan(j->w_iter) ? 0 : j->w_iter;
    hj.instances = j->phases > 0 ? (int)j->phases : 0;
    hj.priority = j->priority;
    if (j->alloc && j->alloc->n) {
        if (!(alloc = calloc((size_t)j->alloc->n, sizeof(int))))
            return hu_errprintf(err, "out of memory");
        for (int i = 0; i < j->alloc->n; i++)
            alloc[i] = j->alloc->v[i].node;
        hj.nalloc = j->alloc->n;
        hj.alloc = alloc;
    }
    int rc = hs_job_arrive(c->sched, now, &hj, &herr);
    free(alloc);
    if (rc < 0)
        return hu_errprintf(err, "scheduler refused job %s: %s", j->id, herr.text);
    j->in_sched = true;
    return 0;
}

static hs_dir_t dir_of(const char *d)
{
    return !strcmp(d, "read") ? HS_DIR_READ : HS_DIR_WRITE;
}

static void grant_phase(core_t *c, phase_t *p, const hs_grant_t *g)
{
    p->state = PH_GRANTED;
    p->granted = core_wall();
    c->n_granted++;
    c->stall_seconds += p->granted - p->requested;
    put_phase(c, p);
    bl_debug("decision: grant phase %ju of job %s (%.4g bytes %s): %.4g B/s, share %.3f, "
             "buffer %s, waited %.3f s; policy %s",
             (uintmax_t)p->id, p->job->id, p->volume, p->dir, g->bw, g->share,
             g->buffer >= 0 && g->buffer < c->nnodes ? c->nodes[g->buffer].name : "-",
             p->granted - p->requested, c->policy_id);
    notify(c, p->id);
}

static const double dec_buckets[] = { 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3,
                                      2.5e-3, 5e-3, 1e-2, 1e-1 };

static void reschedule(core_t *c, double now)
{
    double t0 = mono();
    int n;

    for (;;) {
        n = hs_sched_decide(c->sched, now, c->grants, c->grants_cap);
        if (n < 0) {
            bl_error("scheduler: decide failed: %s", strerror(errno));
            return;
        }
        if ((size_t)n <= c->grants_cap)
            break;
        size_t cap = (size_t)n * 2;
        hs_grant_t *g = realloc(c->grants, cap * sizeof(hs_grant_t));
        if (!g) {
            bl_error("scheduler: out of memory");
            return;
        }
        c->grants = g;
        c->grants_cap = cap;
    }
    double dt = mono() - t0;
    int b = 0;
    while (b < 11 && dt > dec_buckets[b])
        b++;
    c->dec_hist[b]++;
    c->dec_sum += dt;
    c->decisions++;

    int granted = 0, waiting = 0;
    for (int i = 0; i < n; i++) {
        const hs_grant_t *g = &c->grants[i];
        job_t *j = hmap_iget(c->jobs_hs, g->id);
        if (!j || !j->phase)
            continue;
        phase_t *p = j->phase;
        p->bw = g->bw;
        p->share = g->share;
        p->buffer = g->buffer;
        if (p->state == PH_WAITING && g->bw > 0)
            grant_phase(c, p, g);
        if (p->state == PH_GRANTED)
            granted++;
        else {
            waiting++;
            bl_debug("decision: phase %ju of job %s waits: policy %s gives it no bandwidth "
                     "now (weight %.3g)", (uintmax_t)p->id, j->id, c->policy_id, g->weight);
        }
    }
    c->sched_dirty = false;
    c->nwaiting = waiting;
    bl_debug("decision: t=%.6f policy %s: %d pending, %d granted, %d waiting, %.1f us",
             now, c->policy_id, n, granted, waiting, dt * 1e6);
}

void core_settle(core_t *c)
{
    if (c->sched_dirty)
        reschedule(c, core_hs_now(c));
}

/* (Re)build the scheduler from the live jobs (start, recovery, node changes). */
static int sched_build(core_t *c, hu_error_t *err)
{
    hs_buffer_t *bufs = NULL;
    hs_error_t herr = { "" };
    hs_sched_t *s;
    double now = core_hs_now(c);

    if (c->nnodes && !(bufs = calloc((size_t)c->nnodes, sizeof(hs_buffer_t))))
        return hu_errprintf(err, "out of memory");
    for (int i = 0; i < c->nnodes; i++) {
        node_t *n = &c->nodes[i];
        snprintf(bufs[i].name, sizeof(bufs[i].name), "%s", n->name);
        bufs[i].capacity = (double)n->capacity;
        bufs[i].bandwidth = n->bandwidth;
        if (n->device >= 0 && n->device < c->cfg->ndevices) {
            const cfg_doubles_t *m = &c->cfg->devices[n->device].msca;
            for (int k = 0; k < m->n && k < 16; k++)
                bufs[i].msca[k] = m->v[k];
            bufs[i].nmsca = m->n < 16 ? m->n : 16;
        }
    }
    hs_platform_t plat = {
        .nodes = (int)c->cfg->platform_compute_nodes,
        .node_bw = c->cfg->platform_node_bandwidth,
        .bw = c->cfg->platform_pfs_bandwidth,
        .nbuffers = c->nnodes,
        .buffers = bufs,
    };
    s = hs_sched_create(&plat, &c->policy, &herr);
    free(bufs);
    if (!s)
        return hu_errprintf(err, "policy %s: %s", c->policy_id,
                            herr.text[0] ? herr.text : strerror(errno));
    hs_sched_t *old = c->sched;
    c->sched = s;
    void *v;
    for (void *it = hmap_first(c->jobs, &v); it; it = hmap_next(c->jobs, it, &v)) {
        job_t *j = v;
        j->in_sched = false;
        if (j->state != JOB_RUNNING)
            continue;
        if (job_arrive(c, j, now, err) < 0)
            goto error;
        if (j->phase) {
            phase_t *p = j->phase;
            if (hs_phase_request(s, now, j->hs_id, p->volume, dir_of(p->dir),
                                 isnan(p->w_done) ? 0 : p->w_done, &herr) < 0) {
                hu_errprintf(err, "scheduler refused phase %ju: %s", (uintmax_t)p->id,
                             herr.text);
                goto error;
            }
        }
    }
    hs_sched_destroy(old);
    return 0;
error:
    c->sched = old;
    hs_sched_destroy(s);
    for (void *it = hmap_first(c->jobs, &v); it; it = hmap_next(c->jobs, it, &v))
        ((job_t *)v)->in_sched = ((job_t *)v)->state == JOB_RUNNING && old;
    return -1;
}

int core_set_policy(core_t *c, const char *id, cerr_t *e)
{
    hs_policy_t pol;
    hs_error_t herr = { "" };
    double now = core_hs_now(c);

    if (hs_policy_parse(id, &pol, &herr) < 0)
        return cerr_set(e, 400, "id", "%s", herr.text);
    if (hs_sched_set_policy(c->sched, now, &pol, &herr) < 0)
        return cerr_set(e, 422, "id", "policy %s is not available: %s", id,
                        herr.text[0] ? herr.text : strerror(errno));
    c->policy = pol;
    hs_policy_name(&pol, c->policy_id, sizeof(c->policy_id));
    c->policy_override = true;
    state_put(c->st, ST_META_PUT, "ss", "policy", c->policy_id);
    bl_info("policy changed to %s", c->policy_id);
    reschedule(c, now);
    return 0;
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
    hmap_destroy(c->jobs);
    hmap_destroy(c->jobs_hs);
    hmap_destroy(c->phases);
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
    j->first_request = j->last_request = NAN;
    j->last_end = j->begun;
    j->hs_id = c->next_hs++;
    if (hmap_put(c->jobs, j->id, j) < 0 || hmap_iput(c->jobs_hs, j->hs_id, j) < 0) {
        job_free(j);
        goto fail;
    }
    r->count++;
    return 0;
fail:
    r->failed = true;
    return 1;
}

static int rec_alloc(sqlite3_stmt *s, void *arg)
{
    rec_t *r = arg;
    job_t *j = hmap_get(r->c->jobs, col_text(s, 0));
    if (!j) {
        r->skipped++;
        return 0;
    }
    alloc_t *a = calloc(1, sizeof(*a));
    if (!a) {
        r->failed = true;
        return 1;
    }
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
            if (!(h = held_add(c, job, owner))) {
                r->failed = true;
                return 1;
            }
        }
        h->a.reserved += bytes;
        a = &h->a;
    } else {
        pbuf_t *b = hmap_get(c->pbufs, owner);
        a = b ? &b->alloc : NULL;
    }
    if (!a) {
        r->skipped++;
        return 0;
    }
    int idx = core_node_index(c, node);
    if (idx < 0) {
        /* an allocation on a node no longer configured: keep it, drained */
        if ((idx = node_add(c, node, NULL, false)) < 0) {
            r->failed = true;
            return 1;
        }
        bl_warning("recovery: node %s holds allocations but is not configured: kept drained",
                   node);
    }
    node_t *n = &c->nodes[idx];
    if (!n->in_config)
        n->capacity += bytes;
    anode_t *nv = realloc(a->v, (size_t)(a->n + 1) * sizeof(anode_t));
    if (!nv) {
        r->failed = true;
        return 1;
    }
    a->v = nv;
    a->v[a->n].node = idx;
    a->v[a->n].bytes = bytes;
    a->n++;
    n->used += bytes;
    n->nallocs++;
    r->count++;
    return 0;
}

static int rec_held_xfer(sqlite3_stmt *s, void *arg)
{
    held_t *h = arg;
    if (!strcmp(col_text(s, 1), "failed")) {
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

/* Recovery: the stage-outs each held buffer waits for (made durable again by the
 * mover at its first tick: held_resolve() follows). */
#define HELD_PREFIX "persistent:"     /* held_t.job of a persistent buffer's */

/* The stage-outs whose source is under h's directories (a persistent buffer: they
 * may be of several jobs) or of h's job, pending or failed not durable. */
static void held_query(core_t *c, held_t *h)
{
    const char *name = h->job + strlen(HELD_PREFIX);
    char root[1200];
    if (strncmp(h->job, HELD_PREFIX, strlen(HELD_PREFIX))) {
        state_query(c->st, rec_held_xfer, h,
                    "SELECT id,state FROM transfers WHERE job_id=? AND kind='stage_out' AND"
                    " ((state='done' AND durable=0) OR (state='failed' AND message LIKE"
                    " 'not durable:%'))", "s", h->job);
        return;
    }
    for (int i = 0; i < h->a.n; i++) {
        if (mount_seen(c, &h->a, i))
            continue;
        snprintf(root, sizeof(root), "%s/persistent/%s", c->nodes[h->a.v[i].node].mount, name);
        state_query(c->st, rec_held_xfer, h,
                    "SELECT id,state FROM transfers WHERE kind='stage_out' AND"
                    " ((state='done' AND durable=0) OR (state='failed' AND message LIKE"
                    " 'not durable:%')) AND (COALESCE(held,source)=?1 OR"
                    " substr(COALESCE(held,source),1,length(?1)+1)=?1||'/')", "s", root);
    }
}

static void rec_held(core_t *c)
{
    for (int i = 0; i < c->nheld; i++) {
        held_t *h = c->held[i];
        held_query(c, h);
        held_reason(h);
        if (h->ntids == 0 && !h->kept) {
            alloc_free_nodes(c, &h->a);
            state_put(c->st, ST_ANODE_DEL, "ss", "held", h->owner);
            held_free(h);
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
    if (!b) {
        r->failed = true;
        return 1;
    }
    snprintf(b->name, sizeof(b->name), "%s", col_text(s, 0));
    b->uid = (uid_t)sqlite3_column_int64(s, 1);
    b->gid = (gid_t)sqlite3_column_int64(s, 2);
    snprintf(b->alloc.pool, sizeof(b->alloc.pool), "%s", col_text(s, 3));
    b->alloc.capacity = (uint64_t)sqlite3_column_int64(s, 4);
    b->alloc.reserved = (uint64_t)sqlite3_column_int64(s, 5);
    b->created = b->alloc.created = col_real(s, 6);
    if (hmap_put(r->c->pbufs, b->name, b) < 0) {
        pbuf_free(b);
        r->failed = true;
        return 1;
    }
    r->count++;
    return 0;
}

static int rec_puse(sqlite3_stmt *s, void *arg)
{
    rec_t *r = arg;
    pbuf_t *b = hmap_get(r->c->pbufs, col_text(s, 0));
    job_t *j = hmap_get(r->c->jobs, col_text(s, 1));
    if (!b || !j) {
        r->skipped++;
        return 0;
    }
    if (strv_add(&b->users, &b->nusers, j->id) < 0 || strv_add(&j->uses, &j->nuses, b->name) < 0) {
        r->failed = true;
        return 1;
    }
    return 0;
}

static int rec_phase(sqlite3_stmt *s, void *arg)
{
    rec_t *r = arg;
    core_t *c = r->c;
    uint64_t id = (uint64_t)sqlite3_column_int64(s, 0);
    job_t *j = hmap_get(c->jobs, col_text(s, 1));
    phase_t *p = calloc(1, sizeof(*p));
    if (!p) {
        r->failed = true;
        return 1;
    }
    p->id = id;
    p->volume = col_real(s, 2);
    snprintf(p->dir, sizeof(p->dir), "%s", col_text(s, 3));
    p->state = (phase_state_t)phase_state_parse(col_text(s, 4));
    p->requested = col_real(s, 5);
    p->granted = col_real(s, 6);
    p->finished = NAN;
    p->bytes = col_real(s, 8);
    p->bw = 0;
    p->buffer = -1;
    p->w_done = col_real(s, 11);
    if (!j || j->phase || j->state == JOB_ENDED) {
        /* orphan (job gone) or a second open phase: close it cleanly */
        job_t tmp = { 0 };
        snprintf(tmp.id, sizeof(tmp.id), "%s", col_text(s, 1));
        p->job = &tmp;
        p->state = PH_EXPIRED;
        p->finished = core_wall();
        put_phase(c, p);
        free(p);
        r->skipped++;
        return 0;
    }
    p->job = j;
    j->phase = p;
    if (hmap_iput(c->phases, p->id, p) < 0) {
        r->failed = true;
        return 1;
    }
    r->count++;
    return 0;
}

static int rec_xfer(sqlite3_stmt *s, void *arg)
{
    rec_t *r = arg;
    core_t *c = r->c;
    job_t *j = hmap_get(c->jobs, col_text(s, 1));
    xfer_t *x = calloc(1, sizeof(*x));
    if (!x) {
        r->failed = true;
        return 1;
    }
    x->id = (uint64_t)sqlite3_column_int64(s, 0);
    x->job_id = strdup(col_text(s, 1));
    snprintf(x->kind, sizeof(x->kind), "%s", col_text(s, 2));
    x->source = strdup(col_text(s, 3));
    x->destination = strdup(col_text(s, 4));
    snprintf(x->type, sizeof(x->type), "%s", col_text(s, 5));
    int st = xfer_state_parse(col_text(s, 6));
    x->state = st < 0 ? XF_FAILED : (xfer_state_t)st;
    x->bytes_total = sqlite3_column_type(s, 7) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 7);
    x->bytes_done = sqlite3_column_int64(s, 8);
    x->message = col_text(s, 9) ? strdup(col_text(s, 9)) : NULL;
    x->requested = col_real(s, 10);
    x->start = col_real(s, 11);
    x->finished = col_real(s, 12);
    x->durable = sqlite3_column_type(s, 13) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 13);
    if (!x->job_id || !x->source || !x->destination) {
        xfer_free(x);
        r->failed = true;
        return 1;
    }
    bool open = x->state == XF_QUEUED || x->state == XF_RUNNING;
    if (!j) {
        if (open) {
            x->state = XF_CANCELLED;
            x->finished = core_wall();
            put_xfer(c, x);
        }
        xfer_free(x);
        r->skipped++;
        return 0;
    }
    if (x->state == XF_RUNNING) {
        /* no mover survives a restart: the transfer starts again */
        x->state = XF_QUEUED;
        x->bytes_done = 0;
        x->durable = -1;
        put_xfer(c, x);
    }
    xfer_t **nv = realloc(j->xfers, (size_t)(j->nxfers + 1) * sizeof(xfer_t *));
    if (!nv) {
        xfer_free(x);
        r->failed = true;
        return 1;
    }
    j->xfers = nv;
    j->xfers[j->nxfers++] = x;
    if (open && hmap_iput(c->xfers, x->id, x) < 0) {
        r->failed = true;
        return 1;
    }
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

#define Q(fn, sql) \
    do { \
        memset(&r, 0, sizeof(r)); \
        r.c = c; \
        if (state_query(st, fn, &r, sql, NULL) < 0 || r.failed) \
            return hu_errprintf(err, "recovery failed on: %s", sql); \
        skipped += r.skipped; \
    } while (0)

    Q(rec_node_state, "SELECT name,state,reason FROM node_state");
    Q(rec_job, "SELECT id,uid,gid,user,name,nodes,w_iter,io_volume,phases,io,priority,"
               "state,created,updated,begun,nphases,bytes FROM jobs WHERE state!='ended'");
    njobs = r.count;
    Q(rec_alloc, "SELECT job_id,pool,capacity,reserved,nodes_requested,created FROM allocations");
    nalloc = r.count;
    Q(rec_pbuf, "SELECT name,uid,gid,pool,capacity,reserved,created FROM persistent");
    npbuf = r.count;
    Q(rec_anode, "SELECT kind,owner,node,bytes FROM alloc_nodes ORDER BY rowid");
    rec_held(c);
    Q(rec_puse, "SELECT name,job_id FROM persistent_use");
    Q(rec_phase, "SELECT id,job_id,volume,direction,state,requested,granted,finished,bytes,"
                 "bandwidth,nodes,w_done FROM phases WHERE state IN ('waiting','granted')"
                 " ORDER BY id DESC");
    nphase = r.count;
    Q(rec_xfer, "SELECT t.id,t.job_id,t.kind,t.source,t.destination,t.type,t.state,"
                "t.bytes_total,t.bytes_done,t.message,t.requested,t.start,t.finished,t.durable"
                " FROM transfers t JOIN jobs j ON j.id=t.job_id WHERE j.state!='ended'"
                " UNION ALL SELECT id,job_id,kind,source,destination,type,state,bytes_total,"
                "bytes_done,message,requested,start,finished,durable FROM transfers WHERE state"
                " IN ('queued','running') AND job_id NOT IN (SELECT id FROM jobs WHERE"
                " state!='ended') ORDER BY 1");
    nxfer = r.count;
#undef Q
    maxid = 0;
    state_query(st, rec_int, &maxid, "SELECT coalesce(max(id),0) FROM phases", NULL);
    c->next_phase = (uint64_t)maxid + 1;
    maxid = 0;
    state_query(st, rec_int, &maxid, "SELECT coalesce(max(id),0) FROM transfers", NULL);
    c->next_xfer = (uint64_t)maxid + 1;
    state_query(st, rec_meta_policy, policy, "SELECT value FROM meta WHERE key='policy'", NULL);
    if (*policy) {
        char want[64] = "";
        state_query(st, rec_meta_policy, want, "SELECT value FROM meta WHERE key='policy_config'",
                    NULL);
        hs_policy_t pol;
        /* an override set through the API holds until bbmgr.yaml's policy changes */
        if (!strcmp(want, c->cfg->policy_id) && hs_policy_parse(policy, &pol, NULL) == 0) {
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
    c->mono0 = mono();
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
            put_job(c, j);
        }
        if (p->state == PH_GRANTED && wall - p->granted > c->cfg->limits_grant_timeout) {
            p->state = PH_EXPIRED;
            p->finished = wall;
            put_phase(c, p);
            hmap_idel(c->phases, p->id);
            free(p);
            j->phase = NULL;
            expired++;
        } else if (p->state == PH_GRANTED) {
            reest++;
        }
    }
    if (sched_build(c, err) < 0)
        return -1;
    reschedule(c, core_hs_now(c));
    bl_info("recovered %d jobs, %d allocations, %d persistent buffers, %d open phases "
            "(%d grants re-established, %d expired), %d transfers; %d orphans closed; "
            "policy %s", njobs, nalloc, npbuf, nphase, reest, expired, nxfer, skipped,
            c->policy_id);
    return 0;
}

/* ------------------------------------------------------------------ jobs */
void core_job_save(core_t *c, job_t *j)
{
    put_job(c, j);
}

job_t *core_job(core_t *c, const char *id)
{
    return hmap_get(c->jobs, id);
}

static bool num_or_str(json_t *v, int kind, double *out, cerr_t *e, const char *field)
{
    /* kind 0: size, 1: duration */
    hu_error_t herr = { "" };
    if (json_is_number(v)) {
        *out = json_number_value(v);
        if (!(*out > 0) || !isfinite(*out))
            return cerr_set(e, 400, field, "must be positive"), false;
        return true;
    }
    if (json_is_string(v)) {
        int rc = kind == 0 ? hu_parse_size_d(json_string_value(v), HU_SIZE_BARE_BYTES, out, &herr)
                           : hu_parse_duration(json_string_value(v), HU_DUR_BARE_SECONDS, out,
                                               &herr);
        if (rc < 0)
            return cerr_set(e, 400, field, "%s", herr.text), false;
        if (!(*out > 0))
            return cerr_set(e, 400, field, "must be positive"), false;
        return true;
    }
    cerr_set(e, 400, field, "must be a number or a string with a unit");
    return false;
}

int core_job_hints(core_t *c, job_t *j, json_t *hints, cerr_t *e)
{
    const char *k;
    json_t *v;
    double w_iter = j->w_iter, io_volume = j->io_volume;
    long phases = j->phases;
    char io[12];
    int priority = j->priority;
    char field[80];

    snprintf(io, sizeof(io), "%s", j->io);
    if (!json_is_object(hints))
        return cerr_set(e, 400, "hints", "must be an object");
    json_object_foreach(hints, k, v) {
        snprintf(field, sizeof(field), "hints.%s", k);
        if (!strcmp(k, "w_iter")) {
            if (!num_or_str(v, 1, &w_iter, e, field))
                return -1;
        } else if (!strcmp(k, "io_volume")) {
            if (!num_or_str(v, 0, &io_volume, e, field))
                return -1;
        } else if (!strcmp(k, "phases")) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 100000000)
                return cerr_set(e, 400, field, "must be an integer in 1..100000000");
            phases = (long)json_integer_value(v);
        } else if (!strcmp(k, "io")) {
            const char *s = json_string_value(v);
            if (!s || (strcmp(s, "write") && strcmp(s, "read") && strcmp(s, "readwrite")))
                return cerr_set(e, 400, field, "must be write, read or readwrite");
            snprintf(io, sizeof(io), "%s", s);
        } else if (!strcmp(k, "priority")) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 10)
                return cerr_set(e, 400, field, "must be an integer in 1..10");
            priority = (int)json_integer_value(v);
        } else {
            return cerr_set(e, 400, field, "unknown hint (w_iter, io_volume, phases, io, priority)");
        }
    }
    j->w_iter = w_iter;
    j->io_volume = io_volume;
    j->phases = phases;
    snprintf(j->io, sizeof(j->io), "%s", io);
    j->priority = priority;
    return 0;
}

int core_job_register(core_t *c, const char *id, uid_t uid, gid_t gid, const char *user,
                      const char *name, int nodes, json_t *hints, bool *created, cerr_t *e)
{
    job_t *j = hmap_get(c->jobs, id);
    *created = false;
    if (j) {
        if (j->uid != uid)
            return cerr_set(e, 409, "id", "job %s is registered for another user (uid %u)",
                            id, (unsigned)j->uid);
        if (hints) {
            job_t save = *j;
            if (core_job_hints(c, j, hints, e) < 0) {
                *j = save;
                return -1;
            }
            put_job(c, j);
        }
        return 0;
    }
    if ((long)hmap_size(c->jobs) >= c->cfg->limits_max_jobs)
        return cerr_set(e, 503, "", "too many registered jobs (limits.max_jobs = %ld)",
                        c->cfg->limits_max_jobs);
    if (!(j = calloc(1, sizeof(*j))))
        return cerr_set(e, 500, "", "out of memory");
    snprintf(j->id, sizeof(j->id), "%s", id);
    j->uid = uid;
    j->gid = gid;
    j->user = user ? strdup(user) : NULL;
    j->name = name ? strdup(name) : NULL;
    j->nodes = nodes > 0 ? nodes : 1;
    j->w_iter = j->io_volume = NAN;
    j->phases = -1;
    j->state = JOB_REGISTERED;
    j->created = j->updated = core_wall();
    j->begun = j->ended = NAN;
    j->first_request = j->last_request = j->last_end = NAN;
    if (hints && core_job_hints(c, j, hints, e) < 0) {
        job_free(j);
        return -1;
    }
    j->hs_id = c->next_hs++;
    if (hmap_put(c->jobs, j->id, j) < 0 || hmap_iput(c->jobs_hs, j->hs_id, j) < 0) {
        hmap_del(c->jobs, j->id);
        job_free(j);
        return cerr_set(e, 500, "", "out of memory");
    }
    put_job(c, j);
    *created = true;
    return 0;
}

int core_job_begin(core_t *c, job_t *j, int nodes, cerr_t *e)
{
    hu_error_t err = { "" };
    if (j->state == JOB_RUNNING)
        return 0;
    if (nodes > 0)
        j->nodes = nodes;
    j->state = JOB_RUNNING;
    j->begun = j->last_end = core_wall();
    if (job_arrive(c, j, core_hs_now(c), &err) < 0) {
        j->state = JOB_REGISTERED;
        j->begun = NAN;
        return cerr_set(e, 500, "", "%s", err.text);
    }
    put_job(c, j);
    return 0;
}

static void phase_close(core_t *c, phase_t *p, phase_state_t how, double bytes)
{
    job_t *j = p->job;
    double now = core_hs_now(c);
    if (j->in_sched)
        hs_phase_finish(c->sched, now, j->hs_id);
    if (p->state == PH_WAITING && c->nwaiting > 0)
        c->nwaiting--;
    p->state = how;
    p->finished = core_wall();
    p->bytes = bytes;
    if (how == PH_FINISHED) {
        j->nphases++;
        j->bytes += bytes;
        c->n_finished++;
        c->bytes_finished += bytes;
    } else if (how == PH_EXPIRED) {
        c->n_expired++;
    }
    j->last_end = p->finished;
    /* both rows exist (queued before, in order): update them in place */
    char *nodes = how == PH_FINISHED ? phase_nodes_str(c, p) : NULL;
    state_put(c->st, ST_PHASE_CLOSE, "sdddsi", phase_state_name(p->state), p->finished,
              p->bytes, p->bw, nodes, (int64_t)p->id);
    free(nodes);
    j->updated = core_wall();
    state_put(c->st, ST_JOB_PROGRESS, "idds", (int64_t)j->nphases, j->bytes, j->updated, j->id);
    hmap_idel(c->phases, p->id);
    j->phase = NULL;
    uint64_t id = p->id;
    free(p);
    notify(c, id);
}

/* ------------------------------------------------------------------ buffer directories
 * A job's directory is <mount>/<jobid>, a persistent buffer's
 * <mount>/persistent/<name>, on every node of the allocation (nodes sharing a mount
 * share the directory).  Created mode 0700 for the owner when the allocation is
 * made, removed with everything in it when it is released (by the mover's workers,
 * after the job's transfers have stopped).  Mounts that do not exist are left
 * alone (development set-ups with stage.mode scheduled or immediate). */
#define SPARE_DIR ".harmonia-spare"
#define TRASH_DIR ".harmonia-trash"
static bool dir_name_ok(const char *name, bool job)
{
    return *name && strcmp(name, ".") && strcmp(name, "..") && !strchr(name, '/')
           && strcmp(name, TRASH_DIR)
           && !(job && (!strcmp(name, "persistent") || !strcmp(name, SPARE_DIR)));
}

/*
 * Incarnations.  A buffer's name (a job id, which a requeued Slurm job keeps, or a
 * persistent buffer's name) is free again as soon as its buffer is gone from memory,
 * while its directory may still wait for its teardown (transfers stopping, a
 * stage-out to make durable).  A directory is never adopted: a new buffer whose
 * path is taken moves the old directory aside to <parent>/.harmonia-trash/<inode>
 * (a name no other directory can have) under the mover's lock, where its teardown
 * and the stage-outs reading from it follow it, and gets a directory of its own.
 * A teardown moves its directory there too before it empties it, and only if it is
 * still the directory (device and inode) it was for.  The trash directory is the
 * daemon's, mode 0711: the content of each entry is still reachable only by its
 * owner (0700), who is the one the teardown acts as.
 */
static bool trash_path(const char *path, const struct stat *st, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');
    struct stat ts;
    if (!slash)
        return false;
    snprintf(out, len, "%.*s/" TRASH_DIR, (int)(slash - path), path);
    if (mkdir(out, 0711) < 0 && errno != EEXIST) {
        bl_warning("mkdir %s: %s", out, strerror(errno));
        return false;
    }
    if (lstat(out, &ts) < 0 || !S_ISDIR(ts.st_mode) || ts.st_uid != geteuid()
        || (ts.st_mode & 022)) {
        bl_warning("%s is not a directory of uid %u writable by it alone: not used", out,
                   (unsigned)geteuid());
        return false;
    }
    size_t n = strlen(out);
    snprintf(out + n, len - n, "/%ju", (uintmax_t)st->st_ino);
    return true;
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
            return true;    /* its teardown moved it meanwhile: the path is free */
        bl_warning("buffer directory %s of an earlier buffer: move to %s: %s", path, trash,
                   strerror(errno));
        return false;
    }
    bl_info("buffer directory %s (inode %ju, uid %u) belongs to an earlier buffer of that "
            "name: moved to %s, a new one is made", path, (uintmax_t)st->st_ino,
            (unsigned)st->st_uid, trash);
    state_put(c->st, ST_XFER_HELD, "ss", path, trash);
    if (c->mover && mover_rmtree(c->mover, NULL, trash, NULL, st->st_uid, st->st_gid,
                                 st->st_dev, st->st_ino) < 0)
        bl_warning("teardown of %s: %s", trash, strerror(errno));
    return true;
}

/*
 * Spare directories.  On this kind of machine a mkdir() costs 50-200 us of CPU
 * (ext4 without a journal scans the recently deleted inodes of the block group,
 * more of them the more files come and go), two per job at allocation, in the
 * request.  So while no allocation came for SPARE_IDLE seconds, core_tick() makes
 * up to SPARE_MAX empty directories per mount in <mount>/.harmonia-spare (mode 0700,
 * owned by the daemon: nobody else can reach them), and an allocation renames one
 * into place, then gives it to its owner as before: a burst of submissions pays a
 * rename instead of a mkdir.  A directory is never used twice (teardown removes
 * it), so nothing of an earlier user (files, ACLs, xattrs) can be in it.
 */
#define SPARE_MAX 32            /* per mount */
#define SPARE_IDLE 1.0          /* seconds without an allocation before making spares */
#define SPARE_PER_TICK 8        /* mkdir()s per core_tick() (every 50 ms) */

static bool mount_ok(core_t *c, int idx);
static bool path_under(const char *path, const char *root);

/* The first node with the same mount as node idx: the one that keeps its spares. */
static int mount_owner(core_t *c, int idx)
{
    for (int k = 0; k < idx; k++)
        if (!strcmp(c->nodes[k].mount, c->nodes[idx].mount))
            return k;
    return idx;
}

/* <mount>/.harmonia-spare exists, is a directory of ours and nobody else's. */
static bool spare_dir_ok(node_t *n, char *dir, size_t len)
{
    struct stat st;
    snprintf(dir, len, "%s/" SPARE_DIR, n->mount);
    if (n->spare_off)
        return false;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        bl_warning("spare directories: mkdir %s: %s (no spares on this mount)", dir,
                   strerror(errno));
        n->spare_off = true;
        return false;
    }
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()
        || (st.st_mode & 077)) {
        bl_warning("spare directories: %s is not a directory of uid %u with mode 0700: "
                   "not used", dir, (unsigned)geteuid());
        n->spare_off = true;
        return false;
    }
    return true;
}

/* Rename a spare of node idx's mount to path.  false: none (make it with mkdir). */
static bool spare_take(core_t *c, int idx, const char *path)
{
    node_t *n = &c->nodes[mount_owner(c, idx)];
    char sp[1300];
    while (n->spares > 0 && !n->spare_off) {
        n->spares--;
        n->spare_top--;
        snprintf(sp, sizeof(sp), "%s/" SPARE_DIR "/%u", n->mount, n->spare_top);
        if (rename(sp, path) == 0)
            return true;
        if (errno != ENOENT) {
            bl_warning("spare directory %s -> %s: %s", sp, path, strerror(errno));
            return false;
        }
    }
    return false;
}

/* core_tick(): make spares while allocations are quiet (lock held). */
static void spares_fill(core_t *c, double wall)
{
    int budget = SPARE_PER_TICK;
    char dir[1200], sp[1300];
    if (wall < c->spare_idle_from)
        return;
    for (int i = 0; i < c->nnodes && budget > 0; i++) {
        node_t *n = &c->nodes[i];
        if (nodes_is_agent(c, i))   /* its agent keeps its spares */
            continue;
        if (!n->spare_role)     /* once: nodes sharing a mount share its spares */
            n->spare_role = mount_owner(c, i) == i ? 1 : -1;
        if (n->spare_role < 0 || n->spares >= SPARE_MAX || n->spare_off || !n->in_config
            || !mount_ok(c, i) || !spare_dir_ok(n, dir, sizeof(dir)))
            continue;
        while (n->spares < SPARE_MAX && budget-- > 0) {
            snprintf(sp, sizeof(sp), "%s/%u", dir, n->spare_top);
            if (mkdir(sp, 0700) < 0 && errno != EEXIST) {   /* EEXIST: one of an earlier run */
                bl_warning("spare directories: mkdir %s: %s", sp, strerror(errno));
                n->spare_off = true;
                break;
            }
            n->spare_top++;
            n->spares++;
        }
    }
}

static bool mount_seen(core_t *c, const alloc_t *a, int i)
{
    for (int k = 0; k < i; k++)
        if (!strcmp(c->nodes[a->v[k].node].mount, c->nodes[a->v[i].node].mount))
            return true;
    return false;
}

static bool mount_ok(core_t *c, int idx)
{
    node_t *n = &c->nodes[idx];
    struct stat st;
    if (stat(n->mount, &st) == 0 && S_ISDIR(st.st_mode))
        return true;
    if (!n->mount_warned && !strcmp(c->cfg->stage_mode, "mover"))
        bl_warning("buffer mount %s of node %s is not a directory: no buffer directories "
                   "there (said once)", n->mount, n->name);
    n->mount_warned = true;
    return false;
}

static void bufdirs_make(core_t *c, const alloc_t *a, bool persistent, const char *name,
                         uid_t uid, gid_t gid)
{
    char path[1200];
    if (!dir_name_ok(name, !persistent)) {
        bl_warning("no buffer directory for '%s': not usable as a directory name", name);
        return;
    }
    for (int i = 0; i < a->n; i++) {
        const char *mount = c->nodes[a->v[i].node].mount;
        int fd;
        if (nodes_dir_hook(c, a->v[i].node))   /* its agent makes it */
            continue;
        if (mount_seen(c, a, i) || !mount_ok(c, a->v[i].node))
            continue;
        if (persistent) {
            snprintf(path, sizeof(path), "%s/persistent", mount);
            if (mkdir(path, 0755) < 0 && errno != EEXIST)
                bl_warning("mkdir %s: %s", path, strerror(errno));
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
        if (!persistent && spare_take(c, a->v[i].node, path)) {
            /* an empty directory of ours, renamed into place: owner below */
        } else if (mkdir(path, 0700) < 0) {
            bl_warning("mkdir %s: %s", path, strerror(errno));
            continue;
        }
        if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
            bl_warning("buffer directory %s: %s", path, strerror(errno));
            continue;
        }
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
            bl_warning("buffer directory %s: not the directory made for it", path);
            close(fd);
            continue;
        }
        if (fchown(fd, uid, gid) < 0 || fchmod(fd, 0700) < 0)
            bl_warning("buffer directory %s: owner %u:%u: %s", path, (unsigned)uid,
                       (unsigned)gid, strerror(errno));
        close(fd);
        bl_debug("buffer directory %s created for uid %u", path, (unsigned)uid);
    }
}

/* Queue the teardown of the buffer directory at path: of the directory there now
 * (device and inode), moved to the trash first. */
static void bufdir_teardown(core_t *c, const char *job, const char *path, uid_t uid, gid_t gid)
{
    char trash[1300];
    struct stat st;
    if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        return;
    bool moved = trash_path(path, &st, trash, sizeof(trash));
    if (mover_rmtree(c->mover, job, path, moved ? trash : NULL, uid, gid, st.st_dev,
                     st.st_ino) < 0)
        bl_warning("teardown of %s: %s", path, strerror(errno));
}

static void bufdirs_remove(core_t *c, const alloc_t *a, bool persistent, const char *name,
                           const char *job, uid_t uid, gid_t gid)
{
    char path[1200];
    if (!c->mover || !dir_name_ok(name, !persistent))
        return;
    for (int i = 0; i < a->n; i++) {
        const char *mount = c->nodes[a->v[i].node].mount;
        if (nodes_dir_hook(c, a->v[i].node))   /* its agent removes it */
            continue;
        if (mount_seen(c, a, i))
            continue;
        snprintf(path, sizeof(path), persistent ? "%s/persistent/%s" : "%s/%s", mount, name);
        bufdir_teardown(c, job, path, uid, gid);
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

static void held_free(held_t *h)
{
    if (h) {
        free(h->a.v);
        free(h->tids);
        free(h);
    }
}

static void held_reason(held_t *h)
{
    if (h->kept)
        snprintf(h->reason, sizeof(h->reason), "a stage-out from it could not be made durable:"
                 " kept until an administrator removes it");
    else
        snprintf(h->reason, sizeof(h->reason), "waits for %d stage-out(s) to be durable "
                 "(first: transfer %ju)", h->ntids, (uintmax_t)(h->ntids ? h->tids[0] : 0));
}

static held_t *held_add(core_t *c, const char *job, const char *owner)
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
            mine = path_under(x->source, root);
        }
        if (!mine)
            continue;
        if (!h) {
            snprintf(owner, sizeof(owner), "%s@%ju", j->id, (uintmax_t)x->id);
            if (!(h = held_add(c, j->id, owner)))
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
    h->a = *j->alloc;               /* its nodes and bytes, still counted */
    j->alloc->v = NULL;
    j->alloc->n = 0;
    put_anodes(c, "held", h->owner, &h->a);
    held_reason(h);
    bl_warning("buffer of job %s (%ju bytes) stays on disk and counted: %s", h->job,
               (uintmax_t)h->a.reserved, h->reason);
    return true;
}

/* At the destruction of b: keep its space counted if a stage-out from it is still
 * to be made durable, or could not be (the database knows them: their jobs may
 * have ended). */
static bool pbuf_hold(core_t *c, pbuf_t *b)
{
    char job[96], owner[160];
    held_t probe = { .a = b->alloc };
    snprintf(job, sizeof(job), HELD_PREFIX "%s", b->name);
    snprintf(probe.job, sizeof(probe.job), "%s", job);
    held_query(c, &probe);
    if (probe.ntids == 0 && !probe.kept) {
        free(probe.tids);
        return false;
    }
    snprintf(owner, sizeof(owner), "%s@%ju", job,
             (uintmax_t)(probe.ntids ? probe.tids[0] : 0));
    held_t *h = held_add(c, job, owner);
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
    put_anodes(c, "held", h->owner, &h->a);
    held_reason(h);
    bl_warning("persistent buffer %s (%ju bytes) stays on disk and counted: %s", b->name,
               (uintmax_t)h->a.reserved, h->reason);
    return true;
}

/* A done stage-out of an ended allocation became durable (ok) or could not. */
static void held_resolve(core_t *c, uint64_t tid, bool ok)
{
    for (int i = 0; i < c->nheld; i++) {
        held_t *h = c->held[i];
        int k = 0;
        while (k < h->ntids && h->tids[k] != tid)
            k++;
        if (k == h->ntids)
            continue;
        h->tids[k] = h->tids[--h->ntids];
        h->kept = h->kept || !ok;
        held_reason(h);
        if (h->ntids > 0 || h->kept) {
            if (!ok)
                bl_error("buffer of job %s (%ju bytes) stays on disk and counted: %s", h->job,
                         (uintmax_t)h->a.reserved, h->reason);
            continue;
        }
        bl_info("buffer of job %s: its stage-outs are durable, its %ju bytes are free again",
                h->job, (uintmax_t)h->a.reserved);
        alloc_free_nodes(c, &h->a);
        state_put(c->st, ST_ANODE_DEL, "ss", "held", h->owner);
        held_free(h);
        c->held[i--] = c->held[--c->nheld];
    }
}

static int alloc_release(core_t *c, job_t *j)
{
    if (!j->alloc)
        return 0;
    bufdirs_remove(c, j->alloc, false, j->id, j->id, j->uid, j->gid);
    if (!alloc_hold(c, j))
        alloc_free_nodes(c, j->alloc);
    free(j->alloc);
    j->alloc = NULL;
    state_put(c->st, ST_ALLOC_DEL, "s", j->id);
    state_put(c->st, ST_ANODE_DEL, "ss", "job", j->id);
    return 0;
}

int core_job_end(core_t *c, job_t *j, cerr_t *e)
{
    double now;
    if (j->phase)
        phase_close(c, j->phase, PH_CANCELLED, 0);
    if (c->mover)
        mover_job_end(c->mover, j->id);     /* before the teardown of its directories */
    alloc_release(c, j);
    for (int i = 0; i < j->nuses; i++) {
        pbuf_t *b = hmap_get(c->pbufs, j->uses[i]);
        if (b)
            strv_del(b->users, &b->nusers, j->id);
    }
    state_put(c->st, ST_PUSE_DEL_JOB, "s", j->id);
    for (int i = 0; i < j->nxfers; i++) {
        xfer_t *x = j->xfers[i];
        if (x->state == XF_QUEUED || x->state == XF_RUNNING) {
            x->state = XF_CANCELLED;
            x->finished = core_wall();
            x->message = x->message ? x->message : strdup("job ended");
            x->in_mover = false;
            put_xfer(c, x);
            hmap_idel(c->xfers, x->id);
        }
    }
    /* the scheduler's clock only moves forward: read it after phase_close() used it */
    now = core_hs_now(c);
    if (j->in_sched && hs_job_leave(c->sched, now, j->hs_id) < 0)
        bl_error("scheduler: job %s could not leave: %s", j->id, strerror(errno));
    j->in_sched = false;
    /* what this job taught us, for the defaults of the next ones */
    if (j->nphases > 0) {
        double w_iter = j->nphases > 1 && !isnan(j->first_request)
                            ? (j->last_request - j->first_request) / (double)(j->nphases - 1)
                            : NAN;
        const char *user = j->user ? j->user : "";
        const char *name = j->name ? j->name : "";
        state_put(c->st, ST_HIST_PUT, "isssddid", (int64_t)j->uid, user, name, j->id, w_iter,
                  j->bytes / (double)j->nphases, (int64_t)j->nphases, core_wall());
        state_put(c->st, ST_HIST_PRUNE, "ssi", user, name, (int64_t)c->cfg->limits_history_keep);
    }
    j->state = JOB_ENDED;
    j->ended = core_wall();
    put_job(c, j);
    hmap_del(c->jobs, j->id);
    hmap_idel(c->jobs_hs, j->hs_id);
    job_free(j);
    reschedule(c, now);
    return 0;
}

/* ------------------------------------------------------------------ allocation */
typedef struct {
    int idx;
    uint64_t free;
} cand_t;

static int cand_cmp(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    if (x->free != y->free)
        return x->free > y->free ? -1 : 1;
    return x->idx - y->idx;
}

static uint64_t round_up(uint64_t v, uint64_t g)
{
    if (g <= 1)
        return v;
    return (v + g - 1) / g * g;
}

/* Place capacity bytes on nodes of pool p (see doc/api.md "Allocation"). */
static int place(core_t *c, uint64_t capacity, int nodes, int p, const char *field,
                 alloc_t *out, cerr_t *e)
{
    uint64_t gran = c->pools[p].granularity, maxcap = 0, total = 0;
    int ncand = 0, npool = 0;
    cand_t *cand = calloc((size_t)(c->nnodes ? c->nnodes : 1), sizeof(cand_t));

    if (!cand)
        return cerr_set(e, 500, "", "out of memory");
    for (int i = 0; i < c->nnodes; i++) {
        node_t *n = &c->nodes[i];
        if (n->pool != p || !n->in_config)
            continue;
        npool++;
        total += n->capacity;
        if (n->capacity > maxcap)
            maxcap = n->capacity;
        if (n->drained)
            continue;
        cand[ncand].idx = i;
        cand[ncand].free = n->capacity > n->used ? n->capacity - n->used : 0;
        ncand++;
    }
    if (npool == 0) {
        free(cand);
        return cerr_set(e, 422, "pool", "pool %s has no nodes", c->pools[p].name);
    }
    uint64_t need = (capacity + maxcap - 1) / maxcap;
    if (capacity > total || (nodes > 0 && nodes > npool)) {
        free(cand);
        return cerr_set(e, 422, capacity > total ? field : "nodes",
                        "pool %s can never hold it: %d nodes, %ju bytes in all",
                        c->pools[p].name, npool, (uintmax_t)total);
    }
    int n_min = (int)need;
    if (nodes > n_min)
        n_min = nodes;
    int n_target = (int)ceil(n_min * c->cfg->policy_overprovision - 1e-9);
    if (n_target > ncand)
        n_target = ncand;
    if (n_target < n_min)
        n_target = n_min;
    qsort(cand, (size_t)ncand, sizeof(cand_t), cand_cmp);
    for (int n = n_target; n >= n_min; n--) {
        if (n > ncand)
            continue;
        uint64_t per = round_up((capacity + (uint64_t)n - 1) / (uint64_t)n, gran);
        if (cand[n - 1].free < per)
            continue;
        out->v = calloc((size_t)n, sizeof(anode_t));
        if (!out->v) {
            free(cand);
            return cerr_set(e, 500, "", "out of memory");
        }
        out->n = n;
        out->capacity = capacity;
        out->reserved = per * (uint64_t)n;
        snprintf(out->pool, sizeof(out->pool), "%s", c->pools[p].name);
        for (int k = 0; k < n; k++) {
            out->v[k].node = cand[k].idx;
            out->v[k].bytes = per;
        }
        /* stable order by node index for display */
        for (int a = 1; a < n; a++)
            for (int b = a; b > 0 && out->v[b].node < out->v[b - 1].node; b--) {
                anode_t t = out->v[b];
                out->v[b] = out->v[b - 1];
                out->v[b - 1] = t;
            }
        free(cand);
        return 0;
    }
    uint64_t free_total = 0;
    for (int k = 0; k < ncand; k++)
        free_total += cand[k].free;
    free(cand);
    return cerr_set(e, 507, field, "pool %s cannot hold %ju bytes on %d node(s) now "
                    "(%d nodes up, %ju bytes free)", c->pools[p].name, (uintmax_t)capacity,
                    n_min, ncand, (uintmax_t)free_total);
}

static void alloc_take(core_t *c, alloc_t *a)
{
    for (int i = 0; i < a->n; i++) {
        c->nodes[a->v[i].node].used += a->v[i].bytes;
        c->nodes[a->v[i].node].nallocs++;
    }
}

static int pool_resolve(core_t *c, const char *pool, cerr_t *e)
{
    int p;
    if (pool && *pool) {
        if ((p = pool_index(c, pool)) < 0)
            return cerr_set(e, 404, "pool", "no pool named '%s'", pool);
        return p;
    }
    p = pool_index(c, "default");
    return p >= 0 ? p : 0;
}

int core_alloc_create(core_t *c, job_t *j, uint64_t capacity, int nodes, const char *pool,
                      bool *created, cerr_t *e)
{
    int p;
    *created = false;
    if ((p = pool_resolve(c, pool, e)) < 0)
        return -1;
    if (j->alloc) {
        if (j->alloc->capacity == capacity && !strcmp(j->alloc->pool, c->pools[p].name)
            && (nodes <= 0 || nodes == j->alloc->nodes_requested))
            return 0;   /* the same request again: idempotent */
        return cerr_set(e, 409, "capacity", "job %s already has an allocation (%ju bytes in "
                        "pool %s): release it first", j->id, (uintmax_t)j->alloc->capacity,
                        j->alloc->pool);
    }
    alloc_t *a = calloc(1, sizeof(*a));
    if (!a)
        return cerr_set(e, 500, "", "out of memory");
    if (place(c, capacity, nodes, p, "capacity", a, e) < 0) {
        free(a);
        return -1;
    }
    a->nodes_requested = nodes > 0 ? nodes : 0;
    a->created = core_wall();
    alloc_take(c, a);
    j->alloc = a;
    state_put(c->st, ST_ALLOC_PUT, "ssiiid", j->id, a->pool, (int64_t)a->capacity,
              (int64_t)a->reserved, (int64_t)a->nodes_requested, a->created);
    put_anodes(c, "job", j->id, a);
    bufdirs_make(c, a, false, j->id, j->uid, j->gid);
    bl_debug("allocation: job %s gets %ju bytes on %d node(s) of pool %s", j->id,
             (uintmax_t)a->reserved, a->n, a->pool);
    *created = true;
    return 0;
}

int core_alloc_release(core_t *c, job_t *j, cerr_t *e)
{
    if (!j->alloc)
        return cerr_set(e, 404, "", "job %s has no allocation", j->id);
    return alloc_release(c, j);
}

/* ------------------------------------------------------------------ phases */
phase_t *core_phase(core_t *c, uint64_t id)
{
    return hmap_iget(c->phases, id);
}

phase_t *core_phase_request(core_t *c, job_t *j, double volume, const char *dir,
                            double w_done, cerr_t *e)
{
    hs_error_t herr = { "" };
    phase_t *p;
    double now, wall;

    if (j->phase)
        return cerr_set(e, 409, "", "job %s already has an open phase (%ju): finish it first",
                        j->id, (uintmax_t)j->phase->id), NULL;
    if (j->state != JOB_RUNNING && core_job_begin(c, j, 0, e) < 0)
        return NULL;
    now = core_hs_now(c);
    wall = core_wall();
    if (w_done < 0)
        w_done = isnan(j->last_end) ? 0 : fmax(0, wall - j->last_end);
    if (hs_phase_request(c->sched, now, j->hs_id, volume, dir_of(dir), w_done, &herr) < 0)
        return cerr_set(e, errno == EBUSY ? 409 : 500, "", "scheduler: %s", herr.text), NULL;
    if (!(p = calloc(1, sizeof(*p)))) {
        hs_phase_finish(c->sched, now, j->hs_id);
        return cerr_set(e, 500, "", "out of memory"), NULL;
    }
    p->id = c->next_phase++;
    p->job = j;
    p->volume = volume;
    snprintf(p->dir, sizeof(p->dir), "%s", dir);
    p->state = PH_WAITING;
    p->requested = wall;
    p->granted = p->finished = NAN;
    p->bytes = 0;
    p->buffer = -1;
    p->w_done = w_done;
    if (hmap_iput(c->phases, p->id, p) < 0) {
        hs_phase_finish(c->sched, now, j->hs_id);
        free(p);
        return cerr_set(e, 500, "", "out of memory"), NULL;
    }
    j->phase = p;
    if (isnan(j->first_request))
        j->first_request = wall;
    j->last_request = wall;
    c->n_requested++;
    /* one decision covers this request and any deferred one; a granted phase's row
     * is written by grant_phase(), a waiting one's here (same critical section) */
    reschedule(c, now);
    if (p->state == PH_WAITING)
        put_phase(c, p);
    return p;
}

int core_phase_finish(core_t *c, phase_t *p, double bytes, cerr_t *e)
{
    double now;
    bool waiting = p->state == PH_WAITING;
    if (bytes < 0)
        bytes = waiting ? 0 : p->volume;
    phase_close(c, p, waiting ? PH_CANCELLED : PH_FINISHED, bytes);
    if (c->nwaiting > 0) {
        /* the freed bandwidth may grant a waiting phase: decide now */
        now = core_hs_now(c);
        reschedule(c, now);
    } else {
        /* nothing can be granted: only the shares of granted phases change, and
         * nobody reads them before the next decision (core_settle()) */
        c->sched_dirty = true;
        c->decisions_deferred++;
    }
    return 0;
}

int core_phase_progress(core_t *c, phase_t *p, double bytes, cerr_t *e)
{
    if (p->state != PH_GRANTED)
        return cerr_set(e, 409, "", "phase %ju is not granted", (uintmax_t)p->id);
    if (bytes > p->volume)
        bytes = p->volume;
    p->bytes = bytes;
    hs_phase_progress(c->sched, core_hs_now(c), p->job->hs_id, bytes);
    return 0;
}

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
    core_settle(c);         /* the granted phases' bandwidths */
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

xfer_t *core_stage(core_t *c, job_t *j, const char *kind, const char *src, const char *dst,
                   const char *type, int64_t size, cerr_t *e)
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
    x->start = stage_start(c, j);
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
    put_xfer(c, x);
    bl_debug("stage: %s %ju of job %s scheduled at +%.3f s (%s)", kind, (uintmax_t)x->id, j->id,
             x->start - x->requested, xfer_state_name(x->state));
    return x;
nomem:
    xfer_free(x);
    cerr_set(e, 500, "", "out of memory");
    return NULL;
}

xfer_t *core_xfer(core_t *c, uint64_t id)
{
    return hmap_iget(c->xfers, id);
}

int core_xfer_update(core_t *c, xfer_t *x, const char *state, int64_t bytes_done,
                     int64_t bytes_total, const char *message, cerr_t *e)
{
    int ns = state ? xfer_state_parse(state) : (int)x->state;
    if (ns < 0)
        return cerr_set(e, 400, "state", "must be queued, running, done, failed or cancelled");
    if (x->state != XF_QUEUED && x->state != XF_RUNNING)
        return cerr_set(e, 409, "state", "transfer %ju is already %s", (uintmax_t)x->id,
                        xfer_state_name(x->state));
    if (message) {
        char *m = strdup(message);
        if (!m)
            return cerr_set(e, 500, "", "out of memory");
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
    put_xfer(c, x);
    return 0;
}

/* ------------------------------------------------------------------ persistent */
pbuf_t *core_pbuf(core_t *c, const char *name)
{
    return hmap_get(c->pbufs, name);
}

pbuf_t *core_pbuf_create(core_t *c, const char *name, uid_t uid, gid_t gid,
                         uint64_t capacity, const char *pool, bool *created, cerr_t *e)
{
    pbuf_t *b = hmap_get(c->pbufs, name);
    int p;
    *created = false;
    if ((p = pool_resolve(c, pool, e)) < 0)
        return NULL;
    if (b) {
        if (b->uid == uid && b->alloc.capacity == capacity
            && !strcmp(b->alloc.pool, c->pools[p].name))
            return b;   /* idempotent */
        return cerr_set(e, 409, "name", "persistent buffer '%s' already exists", name), NULL;
    }
    if ((long)hmap_size(c->pbufs) >= c->cfg->limits_max_persistent)
        return cerr_set(e, 503, "", "too many persistent buffers (limits.max_persistent)"), NULL;
    if (uid != 0 && uid != c->cfg->slurm_uid) {
        /* per owner, whoever asks: the plugin's lists are not the only way in */
        long n = 0;
        uint64_t cap = 0, lim = c->cfg->limits_persistent_capacity_per_user;
        void *v;
        for (void *it = hmap_first(c->pbufs, &v); it; it = hmap_next(c->pbufs, it, &v))
            if (((pbuf_t *)v)->uid == uid) {
                n++;
                cap += ((pbuf_t *)v)->alloc.capacity;
            }
        if (n >= c->cfg->limits_persistent_per_user)
            return cerr_set(e, 403, "name", "uid %u already owns %ld persistent buffer(s) "
                            "(limits.persistent_per_user = %ld)", (unsigned)uid, n,
                            c->cfg->limits_persistent_per_user), NULL;
        if (lim && (capacity > lim || cap > lim - capacity))
            return cerr_set(e, 403, "capacity", "uid %u owns persistent buffers of %ju bytes: "
                            "%ju more exceeds limits.persistent_capacity_per_user (%ju bytes)",
                            (unsigned)uid, (uintmax_t)cap, (uintmax_t)capacity,
                            (uintmax_t)lim), NULL;
    }
    if (!(b = calloc(1, sizeof(*b))))
        return cerr_set(e, 500, "", "out of memory"), NULL;
    snprintf(b->name, sizeof(b->name), "%s", name);
    b->uid = uid;
    b->gid = gid;
    if (place(c, capacity, 0, p, "capacity", &b->alloc, e) < 0) {
        free(b);
        return NULL;
    }
    b->created = b->alloc.created = core_wall();
    if (hmap_put(c->pbufs, b->name, b) < 0) {
        pbuf_free(b);
        return cerr_set(e, 500, "", "out of memory"), NULL;
    }
    alloc_take(c, &b->alloc);
    state_put(c->st, ST_PERS_PUT, "siisiid", b->name, (int64_t)uid, (int64_t)gid, b->alloc.pool,
              (int64_t)capacity, (int64_t)b->alloc.reserved, b->created);
    put_anodes(c, "persistent", b->name, &b->alloc);
    bufdirs_make(c, &b->alloc, true, b->name, b->uid, b->gid);
    *created = true;
    return b;
}

int core_pbuf_destroy(core_t *c, pbuf_t *b, cerr_t *e)
{
    if (b->nusers > 0)
        return cerr_set(e, 409, "name", "persistent buffer '%s' is used by job %s", b->name,
                        b->users[0]);
    bufdirs_remove(c, &b->alloc, true, b->name, NULL, b->uid, b->gid);
    if (!pbuf_hold(c, b))
        alloc_free_nodes(c, &b->alloc);
    state_put(c->st, ST_PERS_DEL, "s", b->name);
    state_put(c->st, ST_ANODE_DEL, "ss", "persistent", b->name);
    state_put(c->st, ST_PUSE_DEL_NAME, "s", b->name);
    hmap_del(c->pbufs, b->name);
    pbuf_free(b);
    return 0;
}

int core_pbuf_use(core_t *c, pbuf_t *b, job_t *j, cerr_t *e)
{
    for (int i = 0; i < b->nusers; i++)
        if (!strcmp(b->users[i], j->id))
            return 0;
    if (strv_add(&b->users, &b->nusers, j->id) < 0 || strv_add(&j->uses, &j->nuses, b->name) < 0)
        return cerr_set(e, 500, "", "out of memory");
    state_put(c->st, ST_PUSE_PUT, "ssd", b->name, j->id, core_wall());
    return 0;
}

int core_pbuf_unuse(core_t *c, pbuf_t *b, job_t *j, cerr_t *e)
{
    if (!strv_del(b->users, &b->nusers, j->id))
        return cerr_set(e, 404, "", "job %s does not use '%s'", j->id, b->name);
    strv_del(j->uses, &j->nuses, b->name);
    state_put(c->st, ST_PUSE_DEL, "ss", b->name, j->id);
    return 0;
}

/* ------------------------------------------------------------------ nodes */
int core_node_drain(core_t *c, int idx, bool drain, const char *reason, cerr_t *e)
{
    node_t *n = &c->nodes[idx];
    if (!drain && !n->in_config)
        return cerr_set(e, 409, "", "node %s is not in the configuration", n->name);
    n->drained = drain;
    free(n->reason);
    n->reason = drain && reason ? strdup(reason) : NULL;
    put_node(c, idx);
    bl_info("node %s %s%s%s", n->name, drain ? "drained" : "resumed", drain && reason ? ": " : "",
            drain && reason ? reason : "");
    return 0;
}

int core_node_set_bandwidth(core_t *c, int idx, double bw)
{
    hu_error_t err = { "" };
    double old = c->nodes[idx].bandwidth;
    c->nodes[idx].bandwidth = bw;
    if (sched_build(c, &err) < 0) {
        c->nodes[idx].bandwidth = old;
        bl_error("node %s: scheduler kept at %.0f B/s: %s", c->nodes[idx].name, old, err.text);
        return -1;
    }
    reschedule(c, core_hs_now(c));
    return 0;
}

/* ------------------------------------------------------------------ reconfigure */
int core_reconfigure(core_t *c, cfg_t *nc, hu_error_t *err)
{
    char restart[512];
    hs_policy_t pol;
    hs_error_t herr = { "" };

    if (hs_policy_parse(nc->policy_id, &pol, &herr) < 0)
        return hu_errprintf(err, "policy.id: %s", herr.text);
    if (cfg_restart_needed(c->cfg, nc, restart, sizeof(restart)) > 0)
        bl_warning("reload: %s changed: takes effect at the next restart", restart);
    core_lock(c);
    cfg_t *old = c->cfg;
    /* pools: new ones appear, known ones keep their index (nodes refer to them) */
    for (int i = 0; i < nc->npools; i++) {
        int p = pool_index(c, nc->pools[i].name);
        if (p >= 0) {
            c->pools[p].granularity = nc->pools[i].granularity;
            continue;
        }
        pool_t *pv = realloc(c->pools, (size_t)(c->npools + 1) * sizeof(pool_t));
        if (!pv)
            goto nomem;
        c->pools = pv;
        snprintf(pv[c->npools].name, sizeof(pv[0].name), "%s", nc->pools[i].name);
        pv[c->npools].granularity = nc->pools[i].granularity;
        c->npools++;
    }
    c->cfg = nc;
    /* nodes: update known, add new, drain the removed ones */
    bool changed = false;
    for (int i = 0; i < c->nnodes; i++)
        c->nodes[i].in_config = false;
    for (int s = 0; s < nc->nnodes; s++) {
        const cfg_nodeset_t *ns = &nc->nodes[s];
        for (int k = 0; k < ns->names.n; k++) {
            int idx = core_node_index(c, ns->names.v[k]);
            if (idx < 0) {
                if ((idx = node_add(c, ns->names.v[k], ns, true)) < 0)
                    goto nomem;
                bl_info("reload: node %s added", ns->names.v[k]);
                changed = true;
                continue;
            }
            node_t *n = &c->nodes[idx];
            char *m = cfg_node_mount(ns->mount, ns->names.v[k]);
            if (!m)
                goto nomem;
            free(n->mount);
            n->mount = m;
            /* mounts may have moved: spares are counted again (core_tick) */
            n->spare_role = 0;
            n->spares = 0;
            n->spare_top = 0;
            n->spare_off = false;
            if (n->capacity != ns->capacity || n->bandwidth != ns->bandwidth)
                changed = true;
            n->capacity = ns->capacity;
            n->bandwidth = ns->bandwidth;
            n->pool = pool_index(c, ns->pool);
            n->device = *ns->device ? cfg_device_index(nc, ns->device) : -1;
            n->in_config = true;
            if (n->reason && !strcmp(n->reason, "removed from the configuration")) {
                n->drained = false;
                free(n->reason);
                n->reason = NULL;
                put_node(c, idx);
            }
        }
    }
    for (int i = 0; i < c->nnodes; i++) {
        node_t *n = &c->nodes[i];
        if (!n->in_config && !(n->drained && n->reason
                               && !strcmp(n->reason, "removed from the configuration"))) {
            n->drained = true;
            free(n->reason);
            n->reason = strdup("removed from the configuration");
            put_node(c, i);
            bl_info("reload: node %s removed from the configuration: drained", n->name);
        }
    }
    /* policy: the file's policy wins when it changed in the file */
    bool policy_changed = strcmp(old->policy_id, nc->policy_id) != 0;
    if (policy_changed) {
        c->policy = pol;
        hs_policy_name(&pol, c->policy_id, sizeof(c->policy_id));
        c->policy_override = false;
        state_put(c->st, ST_META_PUT, "ss", "policy", c->policy_id);
        state_put(c->st, ST_META_PUT, "ss", "policy_config", nc->policy_id);
    }
    if (changed || policy_changed) {
        hs_policy_t prev = c->policy;
        if (sched_build(c, err) < 0) {
            c->policy = prev;
            core_unlock(c);
            bl_error("reload: scheduler: %s (kept the previous scheduler)", err->text);
            cfg_destroy(old);
            return 0;
        }
    }
    reschedule(c, core_hs_now(c));
    core_unlock(c);
    cfg_destroy(old);
    bl_info("reload: configuration %s applied (policy %s, %d nodes)", nc->path, c->policy_id,
            c->nnodes);
    return 0;
nomem:
    c->cfg = old;
    core_unlock(c);
    errno = ENOMEM;
    return hu_errprintf(err, "out of memory");
}

/* ------------------------------------------------------------------ mover */
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

static bool path_under(const char *path, const char *root)
{
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        n--;
    return !strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/');
}

/* Is path inside one of the job's buffers (its allocation, persistent buffers it
 * uses)?  The check is on the text (paths have no "..", see doc/api.md); the copy
 * itself runs as the job's user, so a symlink cannot take it further than the user
 * could go. */
static bool in_buffers(core_t *c, job_t *j, const char *path, uint64_t *cap)
{
    char root[1200];
    for (int i = 0; j->alloc && i < j->alloc->n; i++) {
        snprintf(root, sizeof(root), "%s/%s", c->nodes[j->alloc->v[i].node].mount, j->id);
        if (path_under(path, root)) {
            *cap = j->alloc->reserved;
            return true;
        }
    }
    for (int u = 0; u < j->nuses; u++) {
        pbuf_t *b = hmap_get(c->pbufs, j->uses[u]);
        for (int i = 0; b && i < b->alloc.n; i++) {
            snprintf(root, sizeof(root), "%s/persistent/%s", c->nodes[b->alloc.v[i].node].mount,
                     b->name);
            if (path_under(path, root)) {
                *cap = b->alloc.reserved;
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
    put_xfer(c, x);
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
        return;     /* closed through the API meanwhile */
    if (ok)
        bl_debug("transfer %ju of job %s is durable", (uintmax_t)tid, job);
    else
        bl_error("%s %ju of job %s: %s; its source is kept", x ? x->kind : "transfer",
                 (uintmax_t)tid, job, text);
    held_resolve(c, tid, ok);
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
    put_xfer(c, x);
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
        return;     /* closed meanwhile (job ended, or set through the API) */
    x->bytes_done = done;
    if (total >= 0)
        x->bytes_total = total;
    if (st == MV_RUNNING) {
        put_xfer(c, x);
        return;
    }
    /* done with its fsyncs going on: durable (or not) later */
    x->durable = st == MV_DONE_SYNCING ? 0 : -1;
    if (st == MV_DONE_SYNCING)
        st = MV_DONE;
    xfer_close(c, x, st == MV_DONE ? XF_DONE : st == MV_FAILED ? XF_FAILED : XF_CANCELLED, msg);
    if (st == MV_DONE)
        bl_info("%s %ju of job %s done: %jd bytes in %.3f s%s%s", x->kind, (uintmax_t)x->id,
                x->job_id, (intmax_t)done, x->finished - x->start, msg ? ": " : "",
                msg ? msg : "");
    else
        bl_warning("%s %ju of job %s %s: %s", x->kind, (uintmax_t)x->id, x->job_id,
                   xfer_state_name(x->state), msg ? msg : "");
}

void core_mover_report(core_t *c, uint64_t tid, const char *job, mover_state_t st,
                       int64_t done, int64_t total, const char *msg)
{
    on_mover_report(tid, job, st, done, total, msg, c);
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
        .tid = tid, .job = job, .weight = j ? core_job_weight(c, j) : 1.0, .uid = uid,
        .gid = gid, .user = col_text(s, 8), .stage_out = true,
        .directory = !strcmp(col_text(s, 4), "directory"), .src = col_text(s, 2),
        .dst = col_text(s, 3), .resync = true, .done_at = col_real(s, 5),
    };
    if (!nodes_dispatch(c, &spec, spec.src) && mover_submit(c->mover, &spec) < 0) {
        bl_error("recovery: stage-out %ju: %s (left to the next start)", (uintmax_t)tid,
                 strerror(errno));
        return 0;
    }
    bl_info("recovery: stage-out %ju of job %s was done but not yet durable: made durable "
            "again from %s", (uintmax_t)tid, job, spec.src);
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
 * they hold the source of a stage-out that could not be made durable (kept, as
 * before the stop), or wait for one being made durable again (the mover holds
 * them). */
static void trash_sweep(core_t *c, const char *mount, const char *sub)
{
    char dir[1200], path[1500];
    struct stat st;
    DIR *d;
    struct dirent *de;
    snprintf(dir, sizeof(dir), "%s%s/" TRASH_DIR, mount, sub);
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()
        || !(d = opendir(dir)))
        return;
    while ((de = readdir(d))) {
        bool kept = false;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode))
            continue;
        state_query(c->st, rec_exists, &kept,
                    "SELECT 1 FROM transfers WHERE kind='stage_out' AND state='failed' AND"
                    " (held=?1 OR substr(held,1,length(?1)+1)=?1||'/') LIMIT 1", "s", path);
        if (kept) {
            bl_warning("%s is kept: it holds the source of a stage-out that could not be made "
                       "durable (remove it by hand once the data is safe)", path);
            continue;
        }
        if (mover_rmtree(c->mover, NULL, path, NULL, st.st_uid, st.st_gid, st.st_dev,
                         st.st_ino) < 0)
            bl_warning("teardown of %s: %s", path, strerror(errno));
    }
    closedir(d);
}

static void recover_durability(core_t *c)
{
    resync_t r = { .c = c };
    char path[1200];

    state_query(c->st, rec_syncing, &r,
                "SELECT t.id,t.job_id,COALESCE(t.held,t.source),t.destination,t.type,"
                "t.finished,j.uid,j.gid,"
                "j.user FROM transfers t LEFT JOIN jobs j ON j.id=t.job_id WHERE t.durable=0"
                " AND t.state='done' AND t.kind='stage_out' ORDER BY t.id", NULL);
    /* jobs that ended: their buffer directories (the allocation is gone: every
     * mount is looked at) go once their stage-outs are durable */
    for (int k = 0; k < r.nended; k++) {
        const ended_job_t *e = &r.ended[k];
        for (int i = 0; dir_name_ok(e->job, true) && i < c->nnodes; i++) {
            bool seen = false;
            for (int p = 0; p < i && !seen; p++)
                seen = !strcmp(c->nodes[p].mount, c->nodes[i].mount);
            if (seen || nodes_is_agent(c, i))      /* an agent's: it removes it */
                continue;
            snprintf(path, sizeof(path), "%s/%s", c->nodes[i].mount, e->job);
            bufdir_teardown(c, e->job, path, e->uid, e->gid);
        }
        mover_job_end(c->mover, e->job);
    }
    for (int i = 0; i < c->nnodes; i++)
        if (mount_owner(c, i) == i && mount_ok(c, i)) {
            trash_sweep(c, c->nodes[i].mount, "");
            trash_sweep(c, c->nodes[i].mount, "/persistent");
        }
    if (r.n)
        bl_info("recovery: %d stage-out(s) to make durable again", r.n);
    free(r.ended);
}

/* Timer: results of the mover, transfers whose start has come, weights. */
static void mover_tick(core_t *c, double wall)
{
    void *v;
    xfer_t *due[64];
    int nd = 0;

    mover_poll(c->mover, on_mover_report, c);
    if (!c->durability_recovered) {
        c->durability_recovered = true;
        recover_durability(c);
    }
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
            .tid = x->id, .job = j->id, .weight = core_job_weight(c, j), .uid = j->uid,
            .gid = j->gid, .user = j->user, .stage_out = out,
            .directory = !strcmp(x->type, "directory"), .src = x->source,
            .dst = x->destination, .max_bytes = out ? 0 : (int64_t)cap,
        };
        if (!nodes_dispatch(c, &spec, buf) && mover_submit(c->mover, &spec) < 0) {
            bl_error("mover: transfer %ju: %s (retried)", (uintmax_t)x->id, strerror(errno));
            continue;
        }
        x->in_mover = true;
        x->state = XF_RUNNING;
        x->bytes_done = 0;
        put_xfer(c, x);
    }
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

/* ------------------------------------------------------------------ JSON */
static json_t *jnum(double v)
{
    return isnan(v) ? json_null() : json_real(v);
}

json_t *core_alloc_json(core_t *c, const job_t *j, const alloc_t *a, const char *owner_path)
{
    json_t *nodes = json_array();
    for (int i = 0; i < a->n; i++) {
        const node_t *n = &c->nodes[a->v[i].node];
        char path[1200];
        snprintf(path, sizeof(path), "%s/%s", n->mount, owner_path);
        json_array_append_new(nodes, json_pack("{s:s s:I s:s}", "name", n->name, "bytes",
                                               (json_int_t)a->v[i].bytes, "path", path));
    }
    return json_pack("{s:s s:I s:I s:i s:o s:o}", "pool", a->pool, "capacity",
                     (json_int_t)a->capacity, "reserved", (json_int_t)a->reserved,
                     "nodes_requested", a->nodes_requested, "created", jnum(a->created),
                     "nodes", nodes);
}

/* Does a granted phase use node k of its job's allocation?  A drained node is
 * left out while another node of the allocation is up: the phase goes to the
 * job's other (over-provisioned, spare) nodes; with every node drained, all
 * of them stay (the data is still there). */
static bool phase_uses_node(const core_t *c, const alloc_t *a, int k)
{
    if (!c->nodes[a->v[k].node].drained)
        return true;
    for (int i = 0; i < a->n; i++)
        if (!c->nodes[a->v[i].node].drained)
            return false;
    return true;
}

static json_t *phase_json(core_t *c, phase_t *p, bool settle)
{
    json_t *grant = json_null();
    if (settle && p->state == PH_GRANTED)
        core_settle(c);     /* its bandwidth and share */
    if (p->state == PH_GRANTED) {
        json_t *nodes = json_array(), *paths = json_array();
        const alloc_t *a = p->job->alloc;
        int buffer = p->buffer;
        for (int i = 0; a && i < a->n; i++) {
            const node_t *n = &c->nodes[a->v[i].node];
            char path[1200];
            if (!phase_uses_node(c, a, i))
                continue;
            if (buffer >= 0 && buffer < c->nnodes && c->nodes[buffer].drained)
                buffer = a->v[i].node;  /* the scheduler's pick was drained */
            snprintf(path, sizeof(path), "%s/%s", n->mount, p->job->id);
            json_array_append_new(nodes, json_string(n->name));
            json_array_append_new(paths, json_string(path));
        }
        grant = json_pack("{s:o s:o s:o s:f s:f s:s s:o}", "start", jnum(p->granted),
                          "nodes", nodes, "paths", paths, "bandwidth", p->bw, "share", p->share,
                          "target", a && a->n ? "buffer" : "pfs", "buffer",
                          buffer >= 0 && buffer < c->nnodes
                              ? json_string(c->nodes[buffer].name) : json_null());
        if (json_array_size(paths) > 0)
            json_object_set(grant, "path", json_array_get(paths, 0));
    }
    return json_pack("{s:I s:s s:f s:s s:s s:o s:o s:o s:f s:o}", "id", (json_int_t)p->id,
                     "job", p->job->id, "volume", p->volume, "direction", p->dir, "state",
                     phase_state_name(p->state), "requested", jnum(p->requested), "granted",
                     jnum(p->granted), "finished", jnum(p->finished), "bytes", p->bytes,
                     "grant", grant);
}

json_t *core_phase_json(core_t *c, phase_t *p)
{
    return phase_json(c, p, true);
}

json_t *core_phase_json_closing(core_t *c, phase_t *p)
{
    return phase_json(c, p, false);
}

json_t *core_xfer_json(core_t *c, xfer_t *x)
{
    return json_pack("{s:I s:s s:s s:s s:s s:s s:s s:o s:I s:o s:o s:o s:o s:b}", "id",
                     (json_int_t)x->id, "job", x->job_id, "kind", x->kind, "source", x->source,
                     "destination", x->destination, "type", x->type, "state",
                     xfer_state_name(x->state), "bytes_total",
                     x->bytes_total >= 0 ? json_integer(x->bytes_total) : json_null(),
                     "bytes_done", (json_int_t)x->bytes_done, "message",
                     x->message ? json_string(x->message) : json_null(), "requested",
                     jnum(x->requested), "start", jnum(x->start), "finished", jnum(x->finished),
                     "durable", x->durable == 1);
}

static const char *stage_summary(job_t *j, const char *kind)
{
    int n = 0, done = 0, failed = 0, running = 0;
    for (int i = 0; i < j->nxfers; i++) {
        xfer_t *x = j->xfers[i];
        if (strcmp(x->kind, kind))
            continue;
        n++;
        if (x->state == XF_DONE)
            done++;
        else if (x->state == XF_FAILED || x->state == XF_CANCELLED)
            failed++;
        else if (x->state == XF_RUNNING)
            running++;
    }
    if (n == 0)
        return "none";
    if (failed)
        return "failed";
    if (done == n)
        return "done";
    return running ? "running" : "queued";
}

json_t *core_job_json(core_t *c, job_t *j, bool detail)
{
    json_t *hints = json_pack("{s:o s:o s:o s:o s:o}", "w_iter", jnum(j->w_iter), "io_volume",
                              jnum(j->io_volume), "phases",
                              j->phases > 0 ? json_integer(j->phases) : json_null(), "io",
                              j->io[0] ? json_string(j->io) : json_null(), "priority",
                              j->priority > 0 ? json_integer(j->priority) : json_null());
    json_t *o = json_pack("{s:s s:I s:I s:o s:o s:i s:s s:o s:o s:o s:o s:I s:f s:s s:s}",
                          "id", j->id, "uid", (json_int_t)j->uid, "gid", (json_int_t)j->gid,
                          "user", j->user ? json_string(j->user) : json_null(), "name",
                          j->name ? json_string(j->name) : json_null(), "nodes", j->nodes,
                          "state", job_state_name(j->state), "created", jnum(j->created),
                          "begun", jnum(j->begun), "ended", jnum(j->ended), "hints", hints,
                          "phases_done", (json_int_t)j->nphases, "bytes", j->bytes,
                          "stage_in", stage_summary(j, "stage_in"), "stage_out",
                          stage_summary(j, "stage_out"));
    json_object_set_new(o, "allocation", j->alloc ? core_alloc_json(c, j, j->alloc, j->id)
                                                  : json_null());
    json_object_set_new(o, "phase", j->phase ? core_phase_json(c, j->phase) : json_null());
    if (detail) {
        json_t *uses = json_array();
        for (int i = 0; i < j->nuses; i++)
            json_array_append_new(uses, json_string(j->uses[i]));
        json_object_set_new(o, "persistent", uses);
    }
    return o;
}

json_t *core_pbuf_json(core_t *c, pbuf_t *b)
{
    char owner[128];
    json_t *users = json_array();
    for (int i = 0; i < b->nusers; i++)
        json_array_append_new(users, json_string(b->users[i]));
    snprintf(owner, sizeof(owner), "persistent/%s", b->name);
    json_t *a = core_alloc_json(c, NULL, &b->alloc, owner);
    json_t *o = json_pack("{s:s s:I s:I s:O s:I s:I s:O s:o s:o}", "name", b->name, "uid",
                          (json_int_t)b->uid, "gid", (json_int_t)b->gid, "pool",
                          json_object_get(a, "pool"), "capacity",
                          (json_int_t)b->alloc.capacity, "reserved",
                          (json_int_t)b->alloc.reserved, "nodes", json_object_get(a, "nodes"),
                          "created", jnum(b->created), "users", users);
    json_decref(a);
    return o;
}

void core_node_loads(core_t *c)
{
    void *v;
    core_settle(c);
    for (int i = 0; i < c->nnodes; i++) {
        c->nodes[i].active = 0;
        c->nodes[i].load = 0;
    }
    for (void *it = hmap_first(c->phases, &v); it; it = hmap_next(c->phases, it, &v)) {
        phase_t *p = v;
        const alloc_t *a = p->job->alloc;
        if (p->state != PH_GRANTED || !a || a->n == 0)
            continue;
        int used = 0;
        for (int k = 0; k < a->n; k++)
            used += phase_uses_node(c, a, k);
        for (int k = 0; k < a->n; k++) {
            if (!phase_uses_node(c, a, k))
                continue;
            c->nodes[a->v[k].node].active++;
            c->nodes[a->v[k].node].load += p->bw / used;
        }
    }
}

json_t *core_node_json(core_t *c, int idx)
{
    node_t *n = &c->nodes[idx];
    if (idx == 0)
        core_node_loads(c);
    json_t *o = json_pack("{s:s s:s s:o s:I s:I s:I s:f s:s s:s s:o s:b s:i s:i s:f}", "name",
                     n->name, "pool", c->pools[n->pool].name, "device",
                     n->device >= 0 ? json_string(c->cfg->devices[n->device].name) : json_null(),
                     "capacity", (json_int_t)n->capacity, "used", (json_int_t)n->used, "free",
                     (json_int_t)(n->capacity > n->used ? n->capacity - n->used : 0),
                     "bandwidth", n->bandwidth, "mount", n->mount, "state",
                     n->drained ? "drained" : "up", "reason",
                     n->reason ? json_string(n->reason) : json_null(), "configured",
                     n->in_config, "allocations", n->nallocs, "active_phases", n->active,
                     "load", n->load);
    nodes_node_json(c, idx, o);
    return o;
}

json_t *core_pool_json(core_t *c, int idx)
{
    uint64_t cap = 0, used = 0, free_b = 0;
    int nodes = 0, up = 0;
    for (int i = 0; i < c->nnodes; i++) {
        node_t *n = &c->nodes[i];
        if (n->pool != idx || !n->in_config)
            continue;
        nodes++;
        cap += n->capacity;
        used += n->used;
        if (!n->drained) {
            up++;
            free_b += n->capacity > n->used ? n->capacity - n->used : 0;
        }
    }
    return json_pack("{s:s s:I s:i s:i s:I s:I s:I}", "name", c->pools[idx].name,
                     "granularity", (json_int_t)c->pools[idx].granularity, "nodes", nodes,
                     "nodes_up", up, "capacity", (json_int_t)cap, "used", (json_int_t)used,
                     "free", (json_int_t)free_b);
}

json_t *core_schedule_json(core_t *c, double horizon)
{
    json_t *phases = json_array(), *xfers = json_array();
    double wall = core_wall();
    void *v;
    core_settle(c);
    for (void *it = hmap_first(c->phases, &v); it; it = hmap_next(c->phases, it, &v)) {
        phase_t *p = v;
        double start = p->state == PH_GRANTED ? p->granted : NAN;
        double end = NAN;
        if (p->state == PH_GRANTED && p->bw > 0)
            end = fmax(wall, p->granted + p->volume / p->bw);
        json_t *nodes = json_array();
        for (int i = 0; p->job->alloc && i < p->job->alloc->n; i++)
            if (p->state != PH_GRANTED || phase_uses_node(c, p->job->alloc, i))
                json_array_append_new(nodes,
                                      json_string(c->nodes[p->job->alloc->v[i].node].name));
        json_array_append_new(phases, json_pack("{s:I s:s s:s s:s s:f s:o s:o s:f s:f s:o}",
                              "id", (json_int_t)p->id, "job", p->job->id, "user",
                              p->job->user ? p->job->user : "", "state",
                              phase_state_name(p->state), "requested", p->requested,
                              "start", jnum(start), "expected_end", jnum(end), "bandwidth",
                              p->bw, "volume", p->volume, "nodes", nodes));
    }
    for (void *it = hmap_first(c->xfers, &v); it; it = hmap_next(c->xfers, it, &v)) {
        xfer_t *x = v;
        if (x->start > wall + horizon)
            continue;
        json_array_append_new(xfers, json_pack("{s:I s:s s:s s:s s:o}", "id", (json_int_t)x->id,
                              "job", x->job_id, "kind", x->kind, "state",
                              xfer_state_name(x->state), "start", jnum(x->start)));
    }
    return json_pack("{s:f s:f s:s s:o s:o}", "now", wall, "horizon", horizon, "policy",
                     c->policy_id, "phases", phases, "transfers", xfers);
}

json_t *core_status_json(core_t *c)
{
    int reg = 0, run = 0, waiting = 0, granted = 0, drained = 0;
    void *v;
    for (void *it = hmap_first(c->jobs, &v); it; it = hmap_next(c->jobs, it, &v))
        ((job_t *)v)->state == JOB_RUNNING ? run++ : reg++;
    for (void *it = hmap_first(c->phases, &v); it; it = hmap_next(c->phases, it, &v))
        ((phase_t *)v)->state == PH_GRANTED ? granted++ : waiting++;
    for (int i = 0; i < c->nnodes; i++)
        drained += c->nodes[i].drained;
    json_t *held = json_array();
    for (int i = 0; i < c->nheld; i++) {
        json_t *nodes = json_array();
        for (int k = 0; k < c->held[i]->a.n; k++)
            json_array_append_new(nodes, json_string(c->nodes[c->held[i]->a.v[k].node].name));
        json_array_append_new(held, json_pack("{s:s s:I s:o s:b s:s}", "job", c->held[i]->job,
                                              "bytes", (json_int_t)c->held[i]->a.reserved,
                                              "nodes", nodes, "kept", c->held[i]->kept,
                                              "reason", c->held[i]->reason));
    }
    return json_pack("{s:s s:b s:{s:i s:i} s:{s:i s:i s:I s:I} s:{s:i s:i s:i} s:i s:i s:I"
                     " s:o}",
                     "policy", c->policy_id, "policy_override", c->policy_override, "jobs",
                     "registered", reg, "running", run, "phases", "waiting", waiting,
                     "granted", granted, "finished", (json_int_t)c->n_finished, "expired",
                     (json_int_t)c->n_expired, "nodes", "total", c->nnodes, "drained", drained,
                     "pools", c->npools, "persistent", (int)hmap_size(c->pbufs),
                     "transfers_open", (int)hmap_size(c->xfers), "decisions",
                     (json_int_t)c->decisions, "held", held);
}
