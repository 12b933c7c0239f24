/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_jobs.c — the live scheduler (libhsched with the real clock), jobs and their
 * I/O phases.
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
#include "core_bufdir.h"
#include "core_jobs.h"
#include "nodes.h"
#include "log.h"
#include "util.h"

/* ------------------------------------------------------------------ scheduler */
static int job_arrive(core_t *c, job_t *j, double now, hu_error_t *err)
{
    hu_error_t herr = { "" };
    int *alloc = NULL;
    hs_job_t hj = { 0 };
    hj.id = j->hs_id;
    hj.nodes = j->nodes > 0 ? j->nodes : 1;
    hj.release = isnan(j->begun) ? now : fmin(now, core_wall_to_hs(c, j->begun));
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
    core_put_phase(c, p);
    bl_debug("decision: grant phase %ju of job %s (%.4g bytes %s): %.4g B/s, share %.3f, "
             "buffer %s, waited %.3f s; policy %s",
             (uintmax_t)p->id, p->job->id, p->volume, p->dir, g->bw, g->share,
             g->buffer >= 0 && g->buffer < c->nnodes ? c->nodes[g->buffer].name : "-",
             p->granted - p->requested, c->policy_id);
    core_notify(c, p->id);
}

static const double dec_buckets[] = { 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4,
                                      1e-3, 2.5e-3, 5e-3, 1e-2, 1e-1 };

void core_reschedule(core_t *c, double now)
{
    double t0 = hu_mono();
    hs_policy_stats_t ps0, ps1;
    int n;

    (void)hs_sched_policy_stats(c->sched, &ps0);
    uint64_t bh0 = hs_sched_bound_hits(c->sched);
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
    double dt = hu_mono() - t0;
    int b = 0;
    /* a schedule computed ahead stopped at libhsched's decision budget: the
     * policy runs the best one it found (doc/performance.md, "Decision budget") */
    if (hs_sched_policy_stats(c->sched, &ps1) == 0 && ps1.budget_hits > ps0.budget_hits) {
        c->budget_hits += ps1.budget_hits - ps0.budget_hits;
        bl_warning("scheduler: policy %s stopped at its decision budget after %.3f s and "
                   "runs the best schedule found so far",
                   c->policy_id, dt);
    }
    /* phases that waited past their starvation bound: the core gives them a share
     * whatever the policy decided (doc/policies.md, "Starvation bound") */
    uint64_t bh1 = hs_sched_bound_hits(c->sched);
    if (bh1 > bh0) {
        c->bound_hits += bh1 - bh0;
        bl_info("scheduler: %ju phase(s) waited past the starvation bound under policy %s "
                "and get a share",
                (uintmax_t)(bh1 - bh0), c->policy_id);
    }
    while (b < 11 && dt > dec_buckets[b])
        b++;
    c->dec_hist[b]++;
    c->dec_sum += dt;
    c->decisions++;

    int granted = 0, waiting = 0;
    for (int i = 0; i < n; i++) {
        const hs_grant_t *g = &c->grants[i];
        job_t *j = hmap_iget(c->jobs_hs, g->id);
        if (!j || !j->phase || j->phase->on_hold)
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
                     "now (weight %.3g)",
                     (uintmax_t)p->id, j->id, c->policy_id, g->weight);
        }
    }
    c->sched_dirty = false;
    c->nwaiting = waiting;
    bl_debug("decision: t=%.6f policy %s: %d pending, %d granted, %d waiting, %.1f us", now,
             c->policy_id, n, granted, waiting, dt * 1e6);
}

void core_settle(core_t *c)
{
    if (c->sched_dirty)
        core_reschedule(c, core_hs_now(c));
}

/* (Re)build the scheduler from the live jobs (start, recovery, node changes). */
int core_sched_build(core_t *c, hu_error_t *err)
{
    hs_buffer_t *bufs = NULL;
    hu_error_t herr = { "" };
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
        if (j->phase && !j->phase->on_hold) {
            phase_t *p = j->phase;
            if (hs_phase_request(s, now, j->hs_id, p->volume, dir_of(p->dir),
                                 isnan(p->w_done) ? 0 : p->w_done, &herr)
                < 0) {
                hu_errprintf(err, "scheduler refused phase %ju: %s", (uintmax_t)p->id, herr.text);
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
    hu_error_t herr = { "" };
    double now = core_hs_now(c);

    if (hs_policy_parse(id, &pol, &herr) < 0)
        return core_cerr_set(e, EINVAL, "id", "%s", herr.text);
    core_policy_bound(c->cfg, &pol);
    if (hs_sched_set_policy(c->sched, now, &pol, &herr) < 0)
        return core_cerr_set(e, EDOM, "id", "policy %s is not available: %s", id,
                             herr.text[0] ? herr.text : strerror(errno));
    c->policy = pol;
    hs_policy_name(&pol, c->policy_id, sizeof(c->policy_id));
    c->policy_override = true;
    state_put(c->st, ST_META_PUT, "ss", "policy", c->policy_id);
    bl_info("policy changed to %s", c->policy_id);
    core_reschedule(c, now);
    return 0;
}

/* ------------------------------------------------------------------ jobs */
void core_job_save(core_t *c, job_t *j)
{
    core_put_job(c, j);
}

json_t *core_ended_job(core_t *c, const char *id)
{
    for (int k = 1; k <= CORE_ENDED_KEEP; k++) {
        json_t *o = c->ended[(c->ended_next - k + CORE_ENDED_KEEP) % CORE_ENDED_KEEP];
        if (!o)
            break;
        const char *oid = json_string_value(json_object_get(o, "id"));
        if (oid && strcmp(oid, id) == 0)
            return o;
    }
    return NULL;
}

static bool num_or_str(json_t *v, int kind, double *out, cerr_t *e, const char *field)
{
    /* kind 0: size, 1: duration */
    hu_error_t herr = { "" };
    if (json_is_number(v)) {
        *out = json_number_value(v);
        if (!(*out > 0) || !isfinite(*out))
            return core_cerr_set(e, EINVAL, field, "must be positive"), false;
        return true;
    }
    if (json_is_string(v)) {
        int rc = kind == 0
                     ? hu_parse_size_d(json_string_value(v), HU_SIZE_BARE_BYTES, out, &herr)
                     : hu_parse_duration(json_string_value(v), HU_DUR_BARE_SECONDS, out, &herr);
        if (rc < 0)
            return core_cerr_set(e, EINVAL, field, "%s", herr.text), false;
        if (!(*out > 0))
            return core_cerr_set(e, EINVAL, field, "must be positive"), false;
        return true;
    }
    core_cerr_set(e, EINVAL, field, "must be a number or a string with a unit");
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
        return core_cerr_set(e, EINVAL, "hints", "must be an object");
    json_object_foreach (hints, k, v) {
        snprintf(field, sizeof(field), "hints.%s", k);
        if (!strcmp(k, "w_iter")) {
            if (!num_or_str(v, 1, &w_iter, e, field))
                return -1;
        } else if (!strcmp(k, "io_volume")) {
            if (!num_or_str(v, 0, &io_volume, e, field))
                return -1;
        } else if (!strcmp(k, "phases")) {
            if (!json_is_integer(v) || json_integer_value(v) < 1
                || json_integer_value(v) > 100000000)
                return core_cerr_set(e, EINVAL, field, "must be an integer in 1..100000000");
            phases = (long)json_integer_value(v);
        } else if (!strcmp(k, "io")) {
            const char *s = json_string_value(v);
            if (!s || (strcmp(s, "write") && strcmp(s, "read") && strcmp(s, "readwrite")))
                return core_cerr_set(e, EINVAL, field, "must be write, read or readwrite");
            snprintf(io, sizeof(io), "%s", s);
        } else if (!strcmp(k, "priority")) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 10)
                return core_cerr_set(e, EINVAL, field, "must be an integer in 1..10");
            priority = (int)json_integer_value(v);
        } else {
            return core_cerr_set(e, EINVAL, field,
                                 "unknown hint (w_iter, io_volume, phases, io, priority)");
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
            return core_cerr_set(e, EEXIST, "id", "job %s is registered for another user (uid %u)",
                                 id, (unsigned)j->uid);
        if (hints) {
            job_t save = *j;
            if (core_job_hints(c, j, hints, e) < 0) {
                *j = save;
                return -1;
            }
            core_put_job(c, j);
        }
        return 0;
    }
    if ((long)hmap_size(c->jobs) >= c->cfg->limits_max_jobs)
        return core_cerr_set(e, EAGAIN, "", "too many registered jobs (limits.max_jobs = %ld)",
                             c->cfg->limits_max_jobs);
    if (!(j = calloc(1, sizeof(*j))))
        return core_cerr_set(e, ENOMEM, "", "out of memory");
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
    j->last_end = NAN;
    j->learn_first = j->learn_last = NAN;
    if (hints && core_job_hints(c, j, hints, e) < 0) {
        core_job_free(j);
        return -1;
    }
    j->hs_id = c->next_hs++;
    if (hmap_put(c->jobs, j->id, j) < 0 || hmap_iput(c->jobs_hs, j->hs_id, j) < 0) {
        hmap_del(c->jobs, j->id);
        core_job_free(j);
        return core_cerr_set(e, ENOMEM, "", "out of memory");
    }
    core_put_job(c, j);
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
        return core_cerr_set(e, EIO, "", "%s", err.text);
    }
    core_put_job(c, j);
    return 0;
}

void core_phase_close(core_t *c, phase_t *p, phase_state_t how, double bytes)
{
    job_t *j = p->job;
    double now = core_hs_now(c);
    if (j->in_sched && !p->on_hold)
        hs_phase_finish(c->sched, now, j->hs_id);
    if (p->state == PH_WAITING && !p->on_hold && c->nwaiting > 0)
        c->nwaiting--;
    p->state = how;
    p->finished = core_wall();
    p->bytes = bytes;
    if (how == PH_FINISHED) {
        j->nphases++;
        j->bytes += bytes;
        if (j->learn_n++ == 0)
            j->learn_first = p->requested;
        j->learn_last = p->requested;
        c->n_finished++;
        c->bytes_finished += bytes;
    } else if (how == PH_EXPIRED) {
        c->n_expired++;
    }
    j->last_end = p->finished;
    /* both rows exist (queued before, in order): update them in place */
    char *nodes = how == PH_FINISHED ? core_phase_nodes_str(c, p) : NULL;
    state_put(c->st, ST_PHASE_CLOSE, "sdddsi", core_phase_state_name(p->state), p->finished,
              p->bytes, p->bw, nodes, (int64_t)p->id);
    free(nodes);
    j->updated = core_wall();
    state_put(c->st, ST_JOB_PROGRESS, "idds", (int64_t)j->nphases, j->bytes, j->updated, j->id);
    hmap_idel(c->phases, p->id);
    j->phase = NULL;
    uint64_t id = p->id;
    free(p->members);
    free(p);
    core_notify(c, id);
}

double core_job_w_iter(const job_t *j)
{
    if (j->learn_n < 2 || !isfinite(j->learn_first) || !isfinite(j->learn_last))
        return NAN;
    return (j->learn_last - j->learn_first) / (double)(j->learn_n - 1);
}

int core_job_end(core_t *c, job_t *j, cerr_t *e)
{
    double now;
    if (j->phase)
        core_phase_close(c, j->phase, PH_CANCELLED, 0);
    if (c->mover)
        mover_job_end(c->mover, j->id); /* before the teardown of its directories */
    core_bufdir_alloc_release(c, j);
    for (int i = 0; i < j->nuses; i++) {
        pbuf_t *b = hmap_get(c->pbufs, j->uses[i]);
        if (b)
            core_strv_del(b->users, &b->nusers, j->id);
    }
    state_put(c->st, ST_PUSE_DEL_JOB, "s", j->id);
    for (int i = 0; i < j->nxfers; i++) {
        xfer_t *x = j->xfers[i];
        if (x->state == XF_QUEUED || x->state == XF_RUNNING) {
            x->state = XF_CANCELLED;
            x->finished = core_wall();
            x->message = x->message ? x->message : strdup("job ended");
            x->in_mover = false;
            core_put_xfer(c, x);
            hmap_idel(c->xfers, x->id);
        }
    }
    /* the scheduler's clock only moves forward: read it after core_phase_close() used it */
    now = core_hs_now(c);
    if (j->in_sched && hs_job_leave(c->sched, now, j->hs_id) < 0)
        bl_error("scheduler: job %s could not leave: %s", j->id, strerror(errno));
    j->in_sched = false;
    /* what this job taught us, for the defaults of the next ones */
    if (j->nphases > 0) {
        double w_iter = core_job_w_iter(j);
        const char *user = j->user ? j->user : "";
        const char *name = j->name ? j->name : "";
        state_put(c->st, ST_HIST_PUT, "isssddid", (int64_t)j->uid, user, name, j->id, w_iter,
                  j->bytes / (double)j->nphases, (int64_t)j->nphases, core_wall());
        state_put(c->st, ST_HIST_PRUNE, "ssi", user, name, (int64_t)c->cfg->limits_history_keep);
    }
    j->state = JOB_ENDED;
    j->ended = core_wall();
    core_put_job(c, j);
    /* its last state, for GET /v1/jobs/ID right after (allocation, phase: null) */
    json_decref(c->ended[c->ended_next]);
    c->ended[c->ended_next] = c->job_view(c, j, true);
    c->ended_next = (c->ended_next + 1) % CORE_ENDED_KEEP;
    hmap_del(c->jobs, j->id);
    hmap_idel(c->jobs_hs, j->hs_id);
    core_job_free(j);
    core_reschedule(c, now);
    return 0;
}

/* ------------------------------------------------------------------ capacity
 * No quota holds a buffer to its capacity here: bbmgrd measures what each buffer
 * directory of its own nodes holds (agents measure theirs), one bounded step of a
 * walk per tick, and acts as capacity.over says (doc/security.md, Capacity). */
#define USAGE_PER_TICK 4096 /* entries looked at per core_tick() (every 50 ms) */

void core_usage_free(core_t *c)
{
    for (int i = 0; i < c->uw_n; i++)
        free(c->uw_list[i]);
    free(c->uw_list);
    c->uw_list = NULL;
    c->uw_n = c->uw_i = c->uw_slot = 0;
    c->uw_sum = 0;
    c->uw_missing = false;
    bufdir_usage_free(c->uw);
    c->uw = NULL;
}

static char *usage_key(char kind, const char *name)
{
    size_t len = strlen(name) + 3;
    char *k = malloc(len);
    if (k)
        snprintf(k, len, "%c:%s", kind, name);
    return k;
}

static void usage_list(core_t *c)
{
    void *v;
    core_usage_free(c);
    size_t n = hmap_size(c->jobs) + hmap_size(c->pbufs);
    if (!n || !(c->uw_list = calloc(n, sizeof(char *))) || !(c->uw = bufdir_usage_new()))
        return;
    for (void *it = hmap_first(c->jobs, &v); it && (size_t)c->uw_n < n;
         it = hmap_next(c->jobs, it, &v))
        if (((job_t *)v)->alloc && (c->uw_list[c->uw_n] = usage_key('j', ((job_t *)v)->id)))
            c->uw_n++;
    for (void *it = hmap_first(c->pbufs, &v); it && (size_t)c->uw_n < n;
         it = hmap_next(c->pbufs, it, &v))
        if ((c->uw_list[c->uw_n] = usage_key('p', ((pbuf_t *)v)->name)))
            c->uw_n++;
}

static void hold_release(core_t *c);

static void usage_done(core_t *c, const char *kind, const char *name, bb_usage_t *u,
                       uint64_t capacity, uint64_t bytes)
{
    bool over = bytes > capacity, was = u->over;
    const char *mode = c->cfg->capacity_over;
    if (over != u->over)
        bl_warning("capacity: %s %s holds %ju bytes, %s its capacity %ju bytes%s", kind, name,
                   (uintmax_t)bytes, over ? "over" : "back under", (uintmax_t)capacity,
                   !over                     ? ""
                   : !strcmp(mode, "refuse") ? ": its I/O phases are refused until it frees space"
                   : !strcmp(mode, "hold")   ? ": its I/O phases are held until it frees space"
                                             : "");
    u->bytes = bytes;
    u->over = over;
    u->at = core_wall();
    if (was && !over)
        hold_release(c);
}

/* The figure agent node k of a reported ("usage", nodes.c) into the sum, once per
 * directory (nodes sharing a mount report the same identity); false: none yet. */
static bool usage_agent(core_t *c, const alloc_t *a, int k)
{
    const anode_t *s = &a->v[k];
    if (!(s->used_at > 0))
        return false;
    for (int i = 0; i < k; i++)
        if (a->v[i].used_at > 0 && s->used_ino && a->v[i].used_dev == s->used_dev
            && a->v[i].used_ino == s->used_ino)
            return true;
    c->uw_sum += s->used;
    return true;
}

/* One bounded step of the walk over the buffer directories on bbmgrd's own nodes;
 * the agents' nodes add what their agents reported.  Lock held. */
void core_usage_tick(core_t *c, double wall)
{
    unsigned long budget = USAGE_PER_TICK;
    bool listed = false;
    (void)wall;
    while (budget > 0) {
        if (c->uw_i >= c->uw_n) {
            if (listed)
                return;
            hold_release(c); /* also after capacity.over changed */
            usage_list(c);
            listed = true;
            if (!c->uw_n)
                return;
        }
        const char *key = c->uw_list[c->uw_i];
        bool pers = key[0] == 'p';
        job_t *j = pers ? NULL : hmap_get(c->jobs, key + 2);
        pbuf_t *b = pers ? hmap_get(c->pbufs, key + 2) : NULL;
        alloc_t *a = pers ? (b ? &b->alloc : NULL) : (j ? j->alloc : NULL);
        if (!a || !core_dir_name_ok(key + 2, !pers)) {
            c->uw_i++, c->uw_slot = 0, c->uw_sum = 0, c->uw_missing = false;
            continue;
        }
        if (c->uw_slot >= a->n) {
            /* with a node whose agent did not report yet, the last total stays */
            if (!c->uw_missing)
                usage_done(c, pers ? "persistent buffer" : "job", key + 2,
                           pers ? &b->usage : &j->usage, a->capacity, c->uw_sum);
            c->uw_i++, c->uw_slot = 0, c->uw_sum = 0, c->uw_missing = false;
            continue;
        }
        int k = c->uw_slot, node = a->v[k].node;
        if (nodes_is_agent(c, node)) {
            if (!usage_agent(c, a, k))
                c->uw_missing = true;
            c->uw_slot++;
            budget--;
            continue;
        }
        if (core_mount_seen(c, a, k) || !core_mount_ok(c, node)) {
            c->uw_slot++;
            budget--;
            continue;
        }
        int mfd = open(c->nodes[node].mount, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int pfd = mfd < 0 ? -1
                  : pers
                      ? openat(mfd, "persistent", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                      : dup(mfd);
        int dfd = pfd < 0 ? -1
                          : openat(pfd, key + 2,
                                   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        uint64_t bytes = 0;
        int r = dfd < 0 ? -1 : bufdir_usage_step(c->uw, dfd, &budget, &bytes);
        if (dfd >= 0)
            close(dfd);
        if (pfd >= 0)
            close(pfd);
        if (mfd >= 0)
            close(mfd);
        if (r == 0)
            return;
        if (r > 0) {
            c->uw_sum += bytes;
            a->v[k].used = bytes; /* the node's figure (bbmgr nodes, MEASURED) */
            a->v[k].used_at = core_wall();
        } else if (dfd < 0) { /* gone: a walk of it left half-way is dropped */
            bufdir_usage_free(c->uw);
            if (!(c->uw = bufdir_usage_new())) {
                core_usage_free(c);
                return;
            }
        } else {
            /* abandoned (the tree moved under it, as its owner may make it do at
             * will): the buffer keeps its last total, never one without this node */
            c->uw_missing = true;
        }
        c->uw_slot++;
        budget = budget > 0 ? budget - 1 : 0;
    }
}

/* ------------------------------------------------------------------ leftovers
 * A teardown that could not remove everything keeps what is left in the trash and
 * tries again (mover_end.c): until it is gone, its bytes are its node's. */
void core_node_leftover(core_t *c, int idx, uint64_t bytes)
{
    node_t *n = idx >= 0 && idx < c->nnodes ? &c->nodes[idx] : NULL;
    if (!n || n->leftover == bytes)
        return;
    if (!n->leftover || !bytes)
        bl_info("node %s: %ju bytes left by failed teardowns%s", n->name, (uintmax_t)bytes,
                bytes ? ": counted as used until removed" : "");
    n->used -= n->leftover < n->used ? n->leftover : n->used;
    n->used += bytes;
    n->leftover = bytes;
}

/* bbmgrd's own nodes: what its mover's failed teardowns left under each mount
 * (nodes sharing a mount: counted on the first). */
void core_leftover_tick(core_t *c)
{
    for (int i = 0; c->mover && i < c->nnodes; i++) {
        uint64_t bytes = 0;
        bool first = true;
        if (nodes_is_agent(c, i) || !c->nodes[i].mount)
            continue;
        for (int k = 0; k < i && first; k++)
            first = nodes_is_agent(c, k) || !c->nodes[k].mount
                    || strcmp(c->nodes[k].mount, c->nodes[i].mount);
        if (first)
            mover_leftover(c->mover, c->nodes[i].mount, &bytes);
        core_node_leftover(c, i, bytes);
    }
}

/* Why the phases of j are refused or held: its buffer, or a persistent buffer it
 * uses, is over its capacity (doc/security.md, Capacity); NULL: they are not. */
static const char *over_capacity(core_t *c, const job_t *j, char *buf, size_t len)
{
    const char *mode = c->cfg->capacity_over;
    bool hold = !strcmp(mode, "hold");
    if (!hold && strcmp(mode, "refuse"))
        return NULL;
    if (j->usage.over && j->alloc) {
        snprintf(buf, len,
                 "job %s: its buffer holds %ju bytes, over its capacity of %ju "
                 "bytes: %s until it frees space (capacity.over: %s)",
                 j->id, (uintmax_t)j->usage.bytes, (uintmax_t)j->alloc->capacity,
                 hold ? "its I/O phases wait, held," : "no I/O phase is granted", mode);
        return buf;
    }
    for (int i = 0; i < j->nuses; i++) {
        pbuf_t *b = hmap_get(c->pbufs, j->uses[i]);
        if (b && b->usage.over) {
            snprintf(buf, len,
                     "persistent buffer %s holds %ju bytes, over its capacity of "
                     "%ju bytes: %s until it frees space (capacity.over: %s)",
                     b->name, (uintmax_t)b->usage.bytes, (uintmax_t)b->alloc.capacity,
                     hold ? "the I/O phases of the jobs using it wait, held,"
                          : "no I/O phase of the jobs using it is granted",
                     mode);
            return buf;
        }
    }
    return NULL;
}

/* A phase held when bbmgrd stopped stays held until every buffer of its job has
 * been measured since the start: the figures of before the stop are not kept. */
static bool held_unmeasured(core_t *c, const job_t *j)
{
    if (!j->phase || !j->phase->held_before)
        return false;
    if (j->alloc && !(j->usage.at > 0))
        return true;
    for (int i = 0; i < j->nuses; i++) {
        pbuf_t *b = hmap_get(c->pbufs, j->uses[i]);
        if (b && !(b->usage.at > 0))
            return true;
    }
    return false;
}

/* Why j's I/O phases are held (capacity.over: hold), or NULL (GET /v1/jobs/ID "hold"). */
const char *core_job_hold(core_t *c, const job_t *j, char *buf, size_t len)
{
    if (strcmp(c->cfg->capacity_over, "hold"))
        return NULL;
    if (held_unmeasured(c, j)) {
        snprintf(buf, len,
                 "job %s: its I/O phase was held, over capacity, when bbmgrd "
                 "stopped: it waits, held, until its buffers are measured again "
                 "(capacity.over: hold)",
                 j->id);
        return buf;
    }
    return over_capacity(c, j, buf, len);
}

/* The held phases whose jobs are no longer over (or capacity.over no longer
 * holds) go to the scheduler, as if requested now. */
static void hold_release(core_t *c)
{
    void *v;
    char why[400];
    bool any = false;
    double now = core_hs_now(c);
    for (void *it = hmap_first(c->jobs, &v); it; it = hmap_next(c->jobs, it, &v)) {
        job_t *j = v;
        phase_t *p = j->phase;
        hu_error_t herr = { "" };
        if (!p || !p->on_hold || core_job_hold(c, j, why, sizeof(why)))
            continue;
        if (!j->in_sched
            || hs_phase_request(c->sched, now, j->hs_id, p->volume, dir_of(p->dir), p->w_done,
                                &herr)
                   < 0) {
            bl_error("capacity: held phase %ju of job %s could not be released: %s",
                     (uintmax_t)p->id, j->id, herr.text[0] ? herr.text : "not scheduled");
            continue;
        }
        p->on_hold = p->held_before = false;
        core_put_phase(c, p); /* held no more, also after a restart */
        any = true;
        bl_info("capacity: phase %ju of job %s released: its buffers are back under their "
                "capacity",
                (uintmax_t)p->id, j->id);
    }
    if (any)
        core_reschedule(c, now);
}

phase_t *core_phase_request(core_t *c, job_t *j, double volume, const char *dir, double w_done,
                            cerr_t *e)
{
    hu_error_t herr = { "" };
    phase_t *p;
    double now, wall;

    if (j->phase)
        return core_cerr_set(e, EBUSY, "",
                             "job %s already has an open phase (%ju): finish it first", j->id,
                             (uintmax_t)j->phase->id),
               NULL;
    char over[400];
    /* over its capacity: refused, or held (waiting outside the scheduler) */
    bool hold = over_capacity(c, j, over, sizeof(over)) != NULL;
    if (hold && strcmp(c->cfg->capacity_over, "hold"))
        return core_cerr_set(e, ENOSPC, "", "%s", over), NULL;
    if (j->state != JOB_RUNNING && core_job_begin(c, j, 0, e) < 0)
        return NULL;
    now = core_hs_now(c);
    wall = core_wall();
    if (w_done < 0)
        w_done = isnan(j->last_end) ? 0 : fmax(0, wall - j->last_end);
    if (!hold && hs_phase_request(c->sched, now, j->hs_id, volume, dir_of(dir), w_done, &herr) < 0)
        return core_cerr_set(e, errno == EBUSY ? EBUSY : EIO, "", "scheduler: %s", herr.text), NULL;
    if (!(p = calloc(1, sizeof(*p)))) {
        if (!hold)
            hs_phase_finish(c->sched, now, j->hs_id);
        return core_cerr_set(e, ENOMEM, "", "out of memory"), NULL;
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
    p->on_hold = hold;
    if (hmap_iput(c->phases, p->id, p) < 0) {
        if (!hold)
            hs_phase_finish(c->sched, now, j->hs_id);
        free(p);
        return core_cerr_set(e, ENOMEM, "", "out of memory"), NULL;
    }
    j->phase = p;
    c->n_requested++;
    /* one decision covers this request and any deferred one; a granted phase's row
     * is written by grant_phase(), a waiting one's here (same critical section) */
    if (hold)
        bl_info("capacity: phase %ju of job %s held: %s", (uintmax_t)p->id, j->id, over);
    else
        core_reschedule(c, now);
    if (p->state == PH_WAITING)
        core_put_phase(c, p);
    return p;
}

int core_phase_finish(core_t *c, phase_t *p, double bytes, cerr_t *e)
{
    double now;
    bool waiting = p->state == PH_WAITING;
    if (bytes < 0)
        bytes = waiting ? 0 : p->volume;
    core_phase_close(c, p, waiting ? PH_CANCELLED : PH_FINISHED, bytes);
    if (c->nwaiting > 0) {
        /* the freed bandwidth may grant a waiting phase: decide now */
        now = core_hs_now(c);
        core_reschedule(c, now);
    } else {
        /* nothing can be granted: only the shares of granted phases change, and
         * nobody reads them before the next decision (core_settle()) */
        c->sched_dirty = true;
        c->decisions_deferred++;
    }
    return 0;
}

int core_phase_join(core_t *c, phase_t *p, const char *member, bool rejoin, cerr_t *e)
{
    (void)c;
    for (int i = 0; i < p->nmembers; i++) {
        if (strcmp(p->members[i].name, member))
            continue;
        if (p->members[i].left && rejoin) {
            /* it left too soon (its bytes so far are counted): a member again,
             * its next leave adds the bytes it moves from now on */
            p->members[i].left = false;
            p->nleft--;
            return 0;
        }
        if (p->members[i].left)
            return core_cerr_set(e, EBUSY, "member",
                                 "member %s left phase %ju already: it joins "
                                 "the job's next phase",
                                 member, (uintmax_t)p->id);
        return 0;
    }
    if (strlen(member) >= sizeof(p->members[0].name))
        return core_cerr_set(e, EINVAL, "member", "longer than %zu characters",
                             sizeof(p->members[0].name) - 1);
    if (p->nmembers >= PHASE_MEMBERS_MAX)
        return core_cerr_set(e, EBUSY, "member",
                             "phase %ju has %d members already, the most a "
                             "phase takes",
                             (uintmax_t)p->id, PHASE_MEMBERS_MAX);
    if ((p->nmembers & (p->nmembers - 1)) == 0) {
        /* 0, 1, 2, 4, ...: grow to the next power of two */
        int n = p->nmembers ? 2 * p->nmembers : 1;
        struct phase_member *m = realloc(p->members, (size_t)n * sizeof(*m));
        if (!m)
            return core_cerr_set(e, ENOMEM, "", "out of memory");
        p->members = m;
    }
    struct phase_member *m = &p->members[p->nmembers++];
    snprintf(m->name, sizeof(m->name), "%s", member);
    m->left = false;
    return 0;
}

int core_phase_leave(core_t *c, phase_t *p, const char *member, double bytes, bool *ended,
                     cerr_t *e)
{
    int i;
    *ended = false;
    if (p->nmembers == 0) {
        *ended = true;
        return core_phase_finish(c, p, bytes, e);
    }
    for (i = 0; i < p->nmembers && strcmp(p->members[i].name, member); i++)
        ;
    if (i < p->nmembers && p->members[i].left)
        return 0; /* a retried leave */
    /* a member, or a node that could not join: its bytes count */
    if (bytes < 0)
        p->munknown = true;
    else
        p->mbytes += bytes;
    if (i == p->nmembers)
        return 0;
    p->members[i].left = true;
    if (++p->nleft < p->nmembers)
        return 0;
    *ended = true;
    return core_phase_finish(c, p, p->munknown ? -1 : p->mbytes, e);
}

int core_phase_progress(core_t *c, phase_t *p, double bytes, cerr_t *e)
{
    if (p->state != PH_GRANTED)
        return core_cerr_set(e, EBUSY, "", "phase %ju is not granted", (uintmax_t)p->id);
    if (bytes > p->volume)
        bytes = p->volume;
    p->bytes = bytes;
    hs_phase_progress(c->sched, core_hs_now(c), p->job->hs_id, bytes);
    return 0;
}
