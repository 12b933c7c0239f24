/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * engine.c — bbsim's discrete-event loop around one libhsched instance.
 *
 * Each job alternates compute chunks w(k,i) (dedicated nodes: never slowed) and I/O
 * phases vol(k,i) whose bandwidth libhsched decides.  The loop takes the earliest of
 *   - the next compute end or release (a binary heap),
 *   - hs_sched_next_event() (a granted transfer completes, or a schedule computed
 *     ahead starts or stops a phase),
 * applies every event due at that time (finishes first, then releases and phase
 * requests), then asks for one decision.  Costs per step are proportional to the
 * number of pending phases plus log(jobs).
 *
 * Guards: time never goes backwards; a step that changes nothing is counted and too
 * many in a row is an error ("no progress"); pending phases with nothing granted and
 * no future event is an error ("stalled"); the total number of steps is bounded.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libhutil/hu_error.h"
#include "libhutil/hutil.h"
#include "sim.h"

typedef enum { EV_RELEASE = 0, EV_COMPUTE_END = 1 } ev_kind_t;

typedef struct {
    double t;
    int job;
    int kind;
} ev_t;

typedef struct {
    ev_t *v;
    size_t n, cap;
} heap_t;

static bool ev_less(const ev_t *a, const ev_t *b)
{
    if (a->t != b->t)
        return a->t < b->t;
    if (a->kind != b->kind)
        return a->kind < b->kind;
    return a->job < b->job;
}

static int heap_push(heap_t *h, ev_t e)
{
    size_t i;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        ev_t *v = realloc(h->v, cap * sizeof(*v));
        if (!v)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ev_less(&e, &h->v[p]))
            break;
        h->v[i] = h->v[p];
        i = p;
    }
    h->v[i] = e;
    return 0;
}

static ev_t heap_pop(heap_t *h)
{
    ev_t top = h->v[0];
    ev_t last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const ev_t *best = &last;
        if (l < h->n && ev_less(&h->v[l], best)) {
            m = l;
            best = &h->v[l];
        }
        if (r < h->n && ev_less(&h->v[r], best))
            m = r;
        if (m == i)
            break;
        h->v[i] = h->v[m];
        i = m;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}

typedef enum { J_WAITING = 0, J_COMPUTE, J_IO, J_DONE } jstate_t;

typedef struct {
    jstate_t state;
    int it;             /* current iteration */
    double phase_start; /* I/O request time */
    double seg_bw;      /* bw of the open I/O segment (trace) */
    double seg_t0;
    bool seg_full; /* the open I/O segment is a buffer-full stall */
    /* buffer tier */
    int *alloc; /* buffer nodes given at arrival */
    int nalloc, nbase;
    double per_node; /* bytes reserved on each of the nbase first */
    double t_arrive;
} jrun_t;

/* The buffer allocator's state during a run (bbsim allocates; libhsched decides). */
typedef struct {
    bool on;
    const hs_platform_t *plat;
    double *reserved; /* bytes reserved per node */
    int *scratch;     /* nbuffers */
    double factor;    /* over-provisioning */
    int *queue;       /* jobs waiting for buffer nodes (FIFO) */
    int qhead, qtail;
} balloc_t;

static int efail(hu_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int efail(hu_error_t *err, const char *fmt, ...)
{
    int e = errno ? errno : EINVAL;
    va_list ap;
    va_start(ap, fmt);
    hu_verrprintf(err, fmt, ap);
    va_end(ap);
    errno = e;
    return -1;
}

static int trace_add(sim_trace_t *tr, double t0, double t1, double bw, sim_seg_kind_t kind)
{
    if (t1 <= t0)
        return 0;
    if (tr->n > 0) {
        sim_seg_t *last = &tr->segs[tr->n - 1];
        if (last->kind == kind && last->bw == bw && last->t1 == t0) {
            last->t1 = t1;
            return 0;
        }
    }
    if (tr->n == tr->cap) {
        int cap = tr->cap ? tr->cap * 2 : 16;
        sim_seg_t *s = realloc(tr->segs, (size_t)cap * sizeof(*s));
        if (!s)
            return -1;
        tr->segs = s;
        tr->cap = cap;
    }
    tr->segs[tr->n++] = (sim_seg_t){ .t0 = t0, .t1 = t1, .bw = bw, .kind = kind };
    return 0;
}

void sim_result_clear(sim_result_t *res)
{
    int saved = errno;
    if (!res)
        return;
    if (res->traces) {
        for (int i = 0; i < res->napps; i++)
            free(res->traces[i].segs);
        free(res->traces);
    }
    free(res->names);
    free(res->stats);
    free(res->app);
    free(res->devs);
    free(res->nalloc);
    memset(res, 0, sizeof(*res));
    errno = saved;
}


static double mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return n ? s / n : 0;
}

/* The platform's buffer nodes for libhsched: built-in device curves, then the
 * workload's 'devices:' entries over them. */
static hs_buffer_t *make_buffers(const wl_t *wl)
{
    const wl_platform_t *p = &wl->plat;
    hs_buffer_t *b = calloc((size_t)p->nbnodes, sizeof(*b));
    if (!b)
        return NULL;
    for (int k = 0; k < p->nbnodes; k++) {
        const wl_buffer_t *e = &p->buffers[p->bnodes[k].entry];
        snprintf(b[k].name, sizeof(b[k].name), "%s", p->bnodes[k].name);
        b[k].capacity = e->capacity;
        b[k].bandwidth = e->bandwidth;
        if (!e->device)
            continue;
        (void)hs_device_builtin(e->device, &b[k]); /* ENOENT: not built in */
        snprintf(b[k].device, sizeof(b[k].device), "%s", e->device);
        for (int d = 0; d < p->ndevices; d++) {
            const wl_device_t *dv = &p->devices[d];
            if (strcmp(dv->name, e->device))
                continue;
            if (dv->nmsca > 0) {
                memset(b[k].msca, 0, sizeof(b[k].msca));
                memcpy(b[k].msca, dv->msca, sizeof(double) * (size_t)dv->nmsca);
                b[k].nmsca = dv->nmsca;
                b[k].nmsca_read = 0; /* reads follow it unless given */
            }
            if (dv->nmsca_read > 0) {
                memset(b[k].msca_read, 0, sizeof(b[k].msca_read));
                memcpy(b[k].msca_read, dv->msca_read, sizeof(double) * (size_t)dv->nmsca_read);
                b[k].nmsca_read = dv->nmsca_read;
            }
        }
    }
    return b;
}

/* Give job e its buffer nodes (if the tier has room) and make it arrive at t.
 * *started is false when it must wait for room.  Returns 0 or -1 (err filled). */
static int job_start(hs_sched_t *s, const wl_t *wl, const wl_jobs_t *jobs, int e, double t,
                     bool queued, jrun_t *jr, heap_t *heap, balloc_t *ba, sim_result_t *res,
                     const char *pname, bool *started, hu_error_t *err)
{
    const wl_job_t *jb = &jobs->jobs[e];
    hu_error_t herr = { .text = "" };
    hs_job_t hj = {
        .id = (uint64_t)e,
        .nodes = jb->nodes,
        .release = queued ? jb->release : t,
        .w = mean(jb->w, jb->iterations),
        .volume = mean(jb->volume, jb->iterations),
        .w_iter = jb->w_iter,
        .instances = jb->iterations,
        .priority = jb->priority,
    };

    *started = false;
    if (ba->on) {
        hs_alloc_request_t rq = { .capacity = jb->buffer_capacity,
                                  .nodes = jb->buffer_nodes,
                                  .overprovision = ba->factor };
        hs_alloc_result_t ar;
        if (hs_alloc_nodes(ba->plat, ba->reserved, &rq, ba->scratch, ba->plat->nbuffers, &ar, &herr)
            < 0) {
            if (errno == ENOSPC)
                return 0;
            return efail(err, "%s: policy %s: job %s: %s", wl->file, pname, jb->name, herr.text);
        }
        free(jr[e].alloc);
        if (!(jr[e].alloc = malloc((size_t)ar.n * sizeof(int)))) {
            errno = ENOMEM;
            return efail(err, "%s: out of memory", wl->file);
        }
        memcpy(jr[e].alloc, ba->scratch, (size_t)ar.n * sizeof(int));
        jr[e].nalloc = ar.n;
        jr[e].nbase = ar.nbase;
        jr[e].per_node = ar.per_node;
        for (int k = 0; k < ar.nbase; k++)
            ba->reserved[jr[e].alloc[k]] += ar.per_node;
        hj.alloc = jr[e].alloc;
        hj.nalloc = ar.n;
        hj.stripe = ar.nbase;
        res->nalloc[e] = ar.n;
    }
    if (hs_job_arrive(s, t, &hj, &herr) < 0)
        return efail(err, "%s: policy %s: job %s: %s", wl->file, pname, jb->name, herr.text);
    res->events++;
    jr[e].t_arrive = t;
    jr[e].state = J_COMPUTE;
    if (res->traces && trace_add(&res->traces[e], t, t + jb->w[0], 0, SEG_COMPUTE) < 0)
        goto nomem;
    if (heap_push(heap, (ev_t){ t + jb->w[0], e, EV_COMPUTE_END }) < 0)
        goto nomem;
    *started = true;
    return 0;
nomem:
    errno = ENOMEM;
    return efail(err, "%s: out of memory", wl->file);
}

/* A job left at t: give its reservation back and start the waiting jobs that fit
 * now, in arrival order. */
static int job_release_buffers(hs_sched_t *s, const wl_t *wl, const wl_jobs_t *jobs, int e,
                               double t, jrun_t *jr, heap_t *heap, balloc_t *ba, sim_result_t *res,
                               const char *pname, hu_error_t *err)
{
    if (!ba->on)
        return 0;
    for (int k = 0; k < jr[e].nbase; k++) {
        double *r = &ba->reserved[jr[e].alloc[k]];
        *r -= jr[e].per_node;
        if (*r < 1e-6 * jr[e].per_node)
            *r = 0;
    }
    jr[e].nbase = 0;
    while (ba->qhead < ba->qtail) {
        bool started;
        if (job_start(s, wl, jobs, ba->queue[ba->qhead], t, true, jr, heap, ba, res, pname,
                      &started, err)
            < 0)
            return -1;
        if (!started)
            break;
        ba->qhead++;
    }
    return 0;
}

int sim_run(const wl_t *wl, const wl_jobs_t *jobs, const hs_policy_t *pol, const sim_opts_t *opts,
            sim_result_t *res, hu_error_t *err)
{
    hs_platform_t plat = {
        .nodes = wl->plat.nodes,
        .node_bw = wl->plat.node_bw,
        .bw = wl->plat.bw,
    };
    hu_error_t herr = { .text = "" };
    hs_sched_t *s = NULL;
    heap_t heap = { 0 };
    jrun_t *jr = NULL;
    hs_grant_t *grants = NULL;
    int ngrants = 0;
    int n = jobs->njobs;
    int ndone = 0;
    int rc = -1;
    double t = -INFINITY;
    uint64_t steps = 0, idle = 0;
    uint64_t max_steps;
    double w0;
    char pname[64];
    hs_buffer_t *bufs = NULL;
    balloc_t ba = { .on = false };

    memset(res, 0, sizeof(*res));
    hs_policy_name(pol, pname, sizeof(pname));
    snprintf(res->policy, sizeof(res->policy), "%s", pname);
    res->kind = pol->kind;
    res->napps = n;
    res->bw = wl->plat.bw;
    res->has_buffers = wl->plat.nbnodes > 0;
    res->buffer_efficiency = NAN;
    if (n <= 0) {
        errno = EINVAL;
        return efail(err, "%s: no jobs", wl->file);
    }
    if (!(res->names = calloc((size_t)n, sizeof(*res->names)))
        || !(res->stats = calloc((size_t)n, sizeof(*res->stats)))
        || !(res->app = calloc((size_t)n, sizeof(*res->app)))
        || !(jr = calloc((size_t)n, sizeof(*jr))) || !(grants = calloc((size_t)n, sizeof(*grants))))
        goto nomem;
    if (opts && opts->record && !(res->traces = calloc((size_t)n, sizeof(*res->traces))))
        goto nomem;
    max_steps = opts && opts->max_steps ? opts->max_steps : 0;
    if (!max_steps) {
        uint64_t phases = 0;
        for (int i = 0; i < n; i++)
            phases += (uint64_t)jobs->jobs[i].iterations;
        /* Online policies need at most a few steps per phase; schedules computed
         * ahead may add start/stop events.  Generous, but finite. */
        max_steps = 64 * (phases + (uint64_t)n) + 1000000;
    }
    if (res->has_buffers) {
        int nb = wl->plat.nbnodes;
        if (!(bufs = make_buffers(wl)) || !(ba.reserved = calloc((size_t)nb, sizeof(double)))
            || !(ba.scratch = calloc((size_t)nb, sizeof(int)))
            || !(ba.queue = calloc((size_t)n, sizeof(int)))
            || !(res->nalloc = calloc((size_t)n, sizeof(int))))
            goto nomem;
        plat.nbuffers = nb;
        plat.buffers = bufs;
        ba.on = true;
        ba.plat = &plat;
        /* static is DataWarp-like: exactly what the capacity needs */
        ba.factor = pol->kind == HS_POL_STATIC   ? 1.0
                    : wl->plat.overprovision > 0 ? wl->plat.overprovision
                                                 : HS_OVERPROVISION_DEFAULT;
        res->overprovision = ba.factor;
        /* a request that does not fit an empty tier would wait forever */
        for (int i = 0; i < n; i++) {
            const wl_job_t *jb = &jobs->jobs[i];
            const wl_app_t *a = &wl->apps[jb->app];
            hs_alloc_request_t rq = { .capacity = jb->buffer_capacity,
                                      .nodes = jb->buffer_nodes,
                                      .overprovision = 1 };
            hs_alloc_result_t ar;
            if (hs_alloc_nodes(&plat, NULL, &rq, ba.scratch, nb, &ar, &herr) < 0) {
                errno = EINVAL;
                efail(err,
                      "%s:%d:%d: app '%s' cannot get buffer nodes even on an "
                      "empty tier: %s",
                      wl->file, a->line, a->col, a->name, herr.text);
                goto error;
            }
        }
    }
    if (!(s = hs_sched_create(&plat, pol, &herr))) {
        efail(err, "%s: policy %s: %s", wl->file, pname, herr.text);
        goto error;
    }
    for (int i = 0; i < n; i++) {
        res->names[i] = jobs->jobs[i].name;
        if (heap_push(&heap, (ev_t){ jobs->jobs[i].release, i, EV_RELEASE }) < 0)
            goto nomem;
    }

    w0 = hu_mono();
    while (ndone < n) {
        double t_sched = hs_sched_next_event(s);
        double t_heap = heap.n ? heap.v[0].t : INFINITY;
        double tn = fmin(t_sched, t_heap);
        bool progress = false;

        if (++steps > max_steps) {
            errno = ELOOP;
            efail(err,
                  "%s: policy %s: more than %llu steps without finishing "
                  "(t = %.9g s); giving up",
                  wl->file, pname, (unsigned long long)max_steps, t);
            goto error;
        }
        if (isnan(tn) || tn == INFINITY) {
            errno = EDEADLK;
            efail(err,
                  "%s: policy %s stalled at t = %.9g s: %zu phase(s) waiting, "
                  "nothing granted and no future event",
                  wl->file, pname, t, hs_sched_npending(s));
            goto error;
        }
        if (tn < t)
            tn = t; /* never go backwards (rounding in next_event) */
        /* time moving on is progress: a schedule computed ahead may change rates
         * many times during one long phase (the step bound still holds) */
        progress = tn > t;
        t = tn;
        if (hs_sched_advance(s, t) < 0) {
            efail(err, "%s: policy %s: hs_sched_advance(%.9g): %s", wl->file, pname, t,
                  strerror(errno));
            goto error;
        }

        /* 1. phases completing now, judged from the last decision */
        for (int g = 0; g < ngrants; g++) {
            hs_grant_t *gr = &grants[g];
            int j = (int)gr->id;
            double left, tol;
            if (gr->bw <= 0 || jr[j].state != J_IO)
                continue;
            left = gr->remaining - gr->bw * (t - gr->start);
            tol = HS_EPS_REL * fmax(jobs->jobs[j].volume[jr[j].it], 1.);
            if (left > tol && gr->start + gr->remaining / gr->bw > t + 1e-12 * fmax(1., fabs(t)))
                continue;
            if (hs_phase_finish(s, t, gr->id) < 0) {
                efail(err, "%s: policy %s: hs_phase_finish(%s, t = %.9g): %s", wl->file, pname,
                      jobs->jobs[j].name, t, strerror(errno));
                goto error;
            }
            res->events++;
            progress = true;
            gr->bw = 0;
            if (res->traces) {
                if (trace_add(&res->traces[j], jr[j].seg_t0, t, jr[j].seg_bw,
                              jr[j].seg_full ? SEG_STALL : SEG_IO)
                    < 0)
                    goto nomem;
            }
            if (++jr[j].it >= jobs->jobs[j].iterations) {
                jr[j].state = J_DONE;
                ndone++;
                if (hs_job_stats(s, (uint64_t)j, &res->stats[j]) < 0) {
                    efail(err, "%s: hs_job_stats(%s): %s", wl->file, jobs->jobs[j].name,
                          strerror(errno));
                    goto error;
                }
                res->stats[j].alloc_wait = jr[j].t_arrive - jobs->jobs[j].release;
                if (hs_job_leave(s, t, (uint64_t)j) < 0) {
                    efail(err, "%s: hs_job_leave(%s): %s", wl->file, jobs->jobs[j].name,
                          strerror(errno));
                    goto error;
                }
                res->events++;
                if (job_release_buffers(s, wl, jobs, j, t, jr, &heap, &ba, res, pname, err) < 0)
                    goto error;
            } else {
                double w = jobs->jobs[j].w[jr[j].it];
                jr[j].state = J_COMPUTE;
                if (res->traces && trace_add(&res->traces[j], t, t + w, 0, SEG_COMPUTE) < 0)
                    goto nomem;
                if (heap_push(&heap, (ev_t){ t + w, j, EV_COMPUTE_END }) < 0)
                    goto nomem;
            }
        }

        /* 2. releases and compute ends due now (zero-length computes included) */
        while (heap.n && heap.v[0].t <= t) {
            ev_t e = heap_pop(&heap);
            const wl_job_t *jb = &jobs->jobs[e.job];
            progress = true;
            if (e.kind == EV_RELEASE) {
                bool started = false;
                if (ba.qhead < ba.qtail)
                    ba.queue[ba.qtail++] = e.job; /* FIFO: others wait */
                else {
                    if (job_start(s, wl, jobs, e.job, t, false, jr, &heap, &ba, res, pname,
                                  &started, err)
                        < 0)
                        goto error;
                    if (!started)
                        ba.queue[ba.qtail++] = e.job;
                }
            } else {
                int it = jr[e.job].it;
                if (hs_phase_request(s, t, (uint64_t)e.job, jb->volume[it],
                                     jb->io == WL_IO_READ ? HS_DIR_READ : HS_DIR_WRITE, jb->w[it],
                                     &herr)
                    < 0) {
                    efail(err, "%s: policy %s: job %s: phase %d: %s", wl->file, pname, jb->name,
                          it + 1, herr.text);
                    goto error;
                }
                res->events++;
                jr[e.job].state = J_IO;
                jr[e.job].phase_start = t;
                jr[e.job].seg_t0 = t;
                jr[e.job].seg_bw = 0;
                jr[e.job].seg_full = false;
            }
        }

        /* 3. one decision for everything that happened at t */
        if (ndone == n)
            break;
        {
            hs_policy_stats_t ps0, ps1;
            hs_auto_state_t as0, as1;
            double w1, w2;
            int k;
            (void)hs_sched_policy_stats(s, &ps0);
            (void)hs_sched_auto_state(s, &as0);
            w1 = hu_mono();
            k = hs_sched_decide(s, t, grants, (size_t)n);
            w2 = hu_mono() - w1;
            res->decide_wall += w2;
            res->decide_wall_max = fmax(res->decide_wall_max, w2);
            (void)hs_sched_policy_stats(s, &ps1);
            (void)hs_sched_auto_state(s, &as1);
            if (as1.epochs > as0.epochs) {
                res->auto_wall += w2;
                res->auto_wall_max = fmax(res->auto_wall_max, w2);
            }
            if (ps1.schedules > ps0.schedules) {
                res->sched_wall += w2;
                res->sched_wall_max = fmax(res->sched_wall_max, w2);
            }
            if (k < 0) {
                efail(err, "%s: policy %s: hs_sched_decide(t = %.9g): %s", wl->file, pname, t,
                      strerror(errno));
                goto error;
            }
            if (k > n) {
                errno = EOVERFLOW;
                efail(err, "%s: policy %s: %d decisions for %d jobs", wl->file, pname, k, n);
                goto error;
            }
            ngrants = k;
            res->decisions++;
        }
        for (int g = 0; g < ngrants; g++) {
            hs_grant_t *gr = &grants[g];
            int j = (int)gr->id;
            if (gr->id >= (uint64_t)n || jr[j].state != J_IO) {
                errno = EPROTO;
                efail(err, "%s: policy %s: decision for unknown phase (id %llu)", wl->file, pname,
                      (unsigned long long)gr->id);
                goto error;
            }
            if (!(gr->bw >= 0) || !isfinite(gr->bw))
                gr->bw = 0;
            if (gr->start > t + 1e-12 * fmax(1., fabs(t)))
                gr->bw = 0; /* planned ahead: not moving yet */
            gr->start = t;  /* from here on: the time 'remaining' refers to */
            if (res->traces && (gr->bw != jr[j].seg_bw || gr->buffer_full != jr[j].seg_full)) {
                if (trace_add(&res->traces[j], jr[j].seg_t0, t, jr[j].seg_bw,
                              jr[j].seg_full ? SEG_STALL : SEG_IO)
                    < 0)
                    goto nomem;
                jr[j].seg_t0 = t;
                jr[j].seg_bw = gr->bw;
                jr[j].seg_full = gr->buffer_full;
            }
        }
        if (progress)
            idle = 0;
        else if (++idle > 10000) {
            errno = ELOOP;
            efail(err,
                  "%s: policy %s made no progress at t = %.9g s (%zu phase(s) "
                  "pending)",
                  wl->file, pname, t, hs_sched_npending(s));
            goto error;
        }
    }
    res->wall = hu_mono() - w0;
    (void)hs_sched_policy_stats(s, &res->pstats);
    (void)hs_sched_auto_state(s, &res->auto_st);
    res->bound_hits = hs_sched_bound_hits(s);

    if (hs_metrics_compute(res->stats, (size_t)n, wl->plat.nodes, &res->m, res->app) < 0) {
        efail(err, "%s: hs_metrics_compute: %s", wl->file, strerror(errno));
        goto error;
    }
    if (res->has_buffers) {
        double held = 0, alloc = 0, ifs = 0;
        long phases = 0;
        for (int i = 0; i < n; i++) {
            const hs_job_stats_t *st = &res->stats[i];
            held += st->buf_held;
            alloc += st->buf_alloc;
            ifs += st->if_sum;
            phases += st->phases;
            res->if_max = fmax(res->if_max, st->if_max);
            res->buffer_full += st->buffer_full;
            res->alloc_wait += st->alloc_wait;
        }
        res->buffer_efficiency = alloc > 0 ? held / alloc : NAN;
        res->if_mean = phases > 0 ? ifs / (double)phases : NAN;
        res->ndevs = wl->plat.nbnodes;
        if (!(res->devs = calloc((size_t)res->ndevs, sizeof(*res->devs))))
            goto nomem;
        for (int k = 0; k < res->ndevs; k++) {
            res->devs[k].name = wl->plat.bnodes[k].name;
            snprintf(res->devs[k].device, sizeof(res->devs[k].device), "%s", bufs[k].device);
            if (hs_buffer_stats(s, k, &res->devs[k].st) < 0) {
                efail(err, "%s: hs_buffer_stats: %s", wl->file, strerror(errno));
                goto error;
            }
        }
    }
    rc = 0;
    goto out;
nomem:
    errno = ENOMEM;
    efail(err, "%s: out of memory", wl->file);
error:
    sim_result_clear(res);
out:
    hs_sched_destroy(s);
    free(heap.v);
    if (jr) {
        for (int i = 0; i < n; i++)
            free(jr[i].alloc);
    }
    free(jr);
    free(grants);
    free(bufs);
    free(ba.reserved);
    free(ba.scratch);
    free(ba.queue);
    return rc;
}
