/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_core.c — libhsched's model: jobs, phases, time, fluid progress, the
 * scheduler's lifecycle and per-job accounting.  The buffer-node model lives in
 * hs_bnode.c, the decision in hs_decide.c (both over hs_model.h); the
 * policies in hs_online.c (and, plugged in through policy.h, in other files).
 *
 * Data layout (10^4 jobs and more):
 *   - jobs[] holds one record per known job (live or departed, so that statistics
 *     survive hs_job_leave()); free slots are chained for reuse by hs_job_forget();
 *   - an open-addressing hash table (linear probing, backward-shift deletion) maps
 *     job ids to jobs[] slots;
 *   - live[] and pend[] list the live jobs and the jobs with a pending phase; each job
 *     knows its position in them, so insertion and removal are O(1).
 * Events cost O(1) (progress is integrated lazily, per phase); a decision costs
 * O(K log K) (the sort by id in hs_decide.c, one by the policy's key there);
 * next_event and hs_sched_completed() scan the K pending phases.  The sort by id is
 * incremental: a decision keeps the last one's order and merges in the phases
 * requested since.
 * bbmgrd decides at every phase request under its core lock, so the decision's
 * constant factor matters too (doc/performance.md, "Decision cost (libhsched)"):
 * few passes over the K phases, compact per-stripe arrays, no libm call in them.
 *
 * Fluid model (doc/design.md §2): between two decisions, the phase of
 * job k progresses at the rate bw_k chosen by the last decision.  Every event first
 * integrates progress up to its time (lazily, see job_at()).  A phase is "complete
 * in the model" when the bytes left are at most HS_EPS_REL of its volume; it then
 * needs no bandwidth, and the driver is expected to call hs_phase_finish()
 * (hs_sched_completed() lists them).
 *
 * Which instances count in rho and rho~ at decision time t (for the policies): the
 * pending instance i counts in both.  Its compute chunk w(k,i) is over (it was
 * reported with the request) and its volume is known, so
 *     rho_k      = sum_{j<=i} w(k,j) / sum_{j<=i} (w(k,j) + time_io(k,j))
 *     rho~_k(t)  = sum_{j<=i} w(k,j) / (t - r_k)          (rho_k when t == r_k)
 * i.e. rho~ is the fraction of the job's life spent computing so far, and it decays
 * while the job waits for I/O, which is what the online heuristics react to.
 * (Counting only completed instances would give rho~ = 0 to every job in its first
 * phase and make MINDILATION blind until each job has finished one phase.)
 * The metrics at the end of a run count completed instances only (hs_job_stats()).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsched.h"
#include "policy.h"
#include "hs_bnode.h"
#include "hs_core_internal.h"
/* ------------------------------------------------------------------ helpers */

/* Slot of job 'id' in jobs[], or NO_SLOT. */
static size_t hfind(const hs_sched_t *s, uint64_t id)
{
    size_t mask, i;

    if (s->hcap == 0)
        return NO_SLOT;
    mask = s->hcap - 1;
    for (i = hs_hash64(id) & mask; s->htab[i]; i = (i + 1) & mask) {
        size_t slot = s->htab[i] - 1;
        if (s->jobs[slot].info.id == id)
            return slot;
    }
    return NO_SLOT;
}

static void hput_raw(size_t *tab, size_t cap, uint64_t id, size_t slot)
{
    size_t mask = cap - 1;
    size_t i = hs_hash64(id) & mask;

    while (tab[i])
        i = (i + 1) & mask;
    tab[i] = slot + 1;
}

static int hreserve(hs_sched_t *s, size_t count)
{
    size_t ncap, i;
    size_t *ntab;

    if (s->hcap && count * 2 <= s->hcap) /* load factor <= 1/2 */
        return 0;
    ncap = s->hcap ? s->hcap * 2 : 64;
    while (count * 2 > ncap)
        ncap *= 2;
    if (!(ntab = calloc(ncap, sizeof(*ntab))))
        return -1;
    for (i = 0; i < s->hcap; i++) {
        if (s->htab[i]) {
            size_t slot = s->htab[i] - 1;
            hput_raw(ntab, ncap, s->jobs[slot].info.id, slot);
        }
    }
    free(s->htab);
    s->htab = ntab;
    s->hcap = ncap;
    return 0;
}

/* Backward-shift deletion for linear probing. */
static void hdel(hs_sched_t *s, uint64_t id)
{
    size_t mask = s->hcap - 1;
    size_t i = hs_hash64(id) & mask;
    size_t j;

    while (s->htab[i] && s->jobs[s->htab[i] - 1].info.id != id)
        i = (i + 1) & mask;
    if (!s->htab[i])
        return;
    s->htab[i] = 0;
    j = i;
    for (;;) {
        size_t home;
        j = (j + 1) & mask;
        if (!s->htab[j])
            break;
        home = hs_hash64(s->jobs[s->htab[j] - 1].info.id) & mask;
        /* move htab[j] into the hole i if its home is not in (i, j] cyclically */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            s->htab[i] = s->htab[j];
            s->htab[j] = 0;
            i = j;
        }
    }
    s->hcount--;
}

/* Progress is integrated lazily, per phase: j->done and j->st.io_wait hold the
 * state at j->t_sync, and the rate is constant until the next decision (which syncs
 * every pending phase).  job_at() computes the state at 'now' >= t_sync. */
static void job_at3(const struct job *j, double now, double *done, double *io_wait, double *bfull)
{
    double dt = now - j->t_sync;

    *done = j->done;
    *io_wait = j->st.io_wait;
    if (bfull)
        *bfull = j->st.buffer_full;
    if (!(dt > 0) || done_complete(j, j->done))
        return;
    if (j->rate > 0) {
        /* the same expression as hs_sched_next_event(): advancing exactly to the
         * time it returned completes the phase exactly */
        double tc = completion_time(j); /* before *done (may alias j->done) */
        double t0 = j->t_sync;
        if (now >= tc) {
            *done = j->vol;
            if (bfull && j->throttled)
                *bfull += tc - t0;
        } else {
            *done = hs_fmin(j->vol, j->done + j->rate * dt);
            if (bfull && j->throttled)
                *bfull += dt;
        }
    } else
        *io_wait += dt;
}

void job_at(const struct job *j, double now, double *done, double *io_wait)
{
    job_at3(j, now, done, io_wait, NULL);
}

bool phase_complete(const hs_sched_t *s, const struct job *j)
{
    double done, wait;

    job_at(j, s->now, &done, &wait);
    return done_complete(j, done);
}

static struct job *live_job(hs_sched_t *s, uint64_t id)
{
    size_t slot = hfind(s, id);

    if (slot == NO_SLOT || !s->jobs[slot].live)
        return NULL;
    return &s->jobs[slot];
}

/* The live job 'id' for an event at 'now', or NULL with errno = EINVAL (no scheduler,
 * time before the last event) or ENOENT (no such live job). */
static struct job *event_job(hs_sched_t *s, double now, uint64_t id)
{
    struct job *j;

    if (!s || check_time(s, now) < 0) {
        errno = EINVAL;
        return NULL;
    }
    if (!(j = live_job(s, id)))
        errno = ENOENT;
    return j;
}

static void pend_remove(hs_sched_t *s, struct job *j)
{
    size_t pos = j->pend_pos;
    size_t last = s->pend[--s->npend];

    s->pend[pos] = last;
    s->jobs[last].pend_pos = pos;
    j->pending = false;
    j->listed = false;
    j->rate = 0;
    j->weight = 0;
    j->active = false;
}

static void live_remove(hs_sched_t *s, struct job *j)
{
    size_t pos = j->live_pos;
    size_t last = s->live[--s->nlive];

    s->live[pos] = last;
    s->jobs[last].live_pos = pos;
    j->live = false;
}

static int check_policy(const hs_policy_t *pol, hs_policy_t *out, hu_error_t *err)
{
    hs_policy_t p;
    char buf[64];

    if (!pol)
        return hs_errprintf(err, EINVAL, "no policy given");
    p = *pol;
    if ((int)p.kind < 0 || p.kind >= HS_POL__COUNT)
        return hs_errprintf(err, EINVAL, "unknown policy kind %d", (int)p.kind);
    if (p.priority && p.kind != HS_POL_ROUNDROBIN && p.kind != HS_POL_MINDILATION
        && p.kind != HS_POL_MAXSYSEFF && p.kind != HS_POL_MINMAX) {
        p.priority = false;
        return hs_errprintf(err, EINVAL, "policy %s has no -priority variant",
                            hs_policy_name(&p, buf, sizeof(buf)));
    }
    if (!(p.max_wait >= 0) || !isfinite(p.max_wait))
        return hs_errprintf(err, EINVAL, "max_wait must be a duration >= 0 (0: off)");
    if (!isfinite(p.starve_factor))
        return hs_errprintf(err, EINVAL,
                            "starvation bound: factor %g must be a "
                            "number (0: the default, < 0: off)",
                            p.starve_factor);
    if (!(p.starve_floor >= 0) || !isfinite(p.starve_floor))
        return hs_errprintf(err, EINVAL,
                            "starvation bound: floor %g must be a "
                            "duration >= 0 (0: the default)",
                            p.starve_floor);
    if (p.kind == HS_POL_MINMAX && !(p.gamma >= 0 && p.gamma <= 1))
        return hs_errprintf(err, EINVAL,
                            "minmax: gamma %g is out of range "
                            "(expected 0 <= gamma <= 1)",
                            p.gamma);
    if (p.kind == HS_POL_SET || p.kind == HS_POL_SET_FAIRSHARE
        || p.kind == HS_POL_PRIORITY_SHARING) {
        if (p.set_base == 0)
            p.set_base = 10;
        if (!(p.set_base > 1) || !isfinite(p.set_base))
            return hs_errprintf(err, EINVAL, "IO-Sets: base %g is invalid (expected a number > 1)",
                                p.set_base);
    }
    *out = p;
    return 0;
}

static int policy_start(hs_sched_t *s, const hs_policy_t *pol, const hs_policy_ops_t **opsp,
                        void **statep, hu_error_t *err)
{
    const hs_policy_ops_t *ops = s->ops_of(pol->kind);
    void *state = NULL;
    char buf[64];

    if (!ops)
        return hs_errprintf(err, ENOTSUP, "policy %s is not available in this build",
                            hs_policy_name(pol, buf, sizeof(buf)));
    if (ops->create) {
        hs_ctx_t ctx = {
            .plat = &s->plat, .pol = pol, .sched = s, .now = s->now, .ops_of = s->ops_of
        };
        if (ops->create(&ctx, &state, err) < 0)
            return -1;
    }
    *opsp = ops;
    *statep = state;
    return 0;
}

/* ------------------------------------------------------------------ lifecycle */

hs_sched_t *hs_core_create(const hs_platform_t *plat, const hs_policy_t *pol,
                           hs_policy_ops_f *ops_of, hu_error_t *err)
{
    hs_sched_t *s = NULL;
    hs_policy_t p;
    int i;

    if (!plat) {
        hs_errprintf(err, EINVAL, "no platform given");
        return NULL;
    }
    if (plat->nodes < 1) {
        hs_errprintf(err, EINVAL, "platform: nodes must be >= 1 (got %d)", plat->nodes);
        return NULL;
    }
    if (!(plat->node_bw > 0) || !isfinite(plat->node_bw)) {
        hs_errprintf(err, EINVAL, "platform: node bandwidth b must be > 0 (got %g)", plat->node_bw);
        return NULL;
    }
    if (!(plat->bw > 0) || !isfinite(plat->bw)) {
        hs_errprintf(err, EINVAL, "platform: I/O bandwidth B must be > 0 (got %g)", plat->bw);
        return NULL;
    }
    if (plat->nbuffers < 0 || (plat->nbuffers > 0 && !plat->buffers)) {
        hs_errprintf(err, EINVAL, "platform: invalid buffer list (%d buffers)", plat->nbuffers);
        return NULL;
    }
    for (i = 0; i < plat->nbuffers; i++) {
        const hs_buffer_t *b = &plat->buffers[i];
        int k;
        bool ok = !(b->nmsca < 0 || b->nmsca > 16 || b->nmsca_read < 0 || b->nmsca_read > 16
                    || !(b->capacity >= 0) || !(b->bandwidth >= 0) || isinf(b->bandwidth));
        for (k = 0; ok && k < b->nmsca; k++)
            ok = b->msca[k] > -1 && isfinite(b->msca[k]);
        for (k = 0; ok && k < b->nmsca_read; k++)
            ok = b->msca_read[k] > -1 && isfinite(b->msca_read[k]);
        if (!ok) {
            hs_errprintf(err, EINVAL, "platform: buffer %d (%.*s) is invalid", i,
                         (int)sizeof(b->name), b->name);
            return NULL;
        }
    }
    if (check_policy(pol, &p, err) < 0)
        return NULL;
    if (!(s = calloc(1, sizeof(*s))))
        goto nomem;
    s->plat = *plat;
    s->now = -INFINITY;
    s->ops_of = ops_of;
    s->free_head = NO_SLOT;
    if (plat->nbuffers > 0) {
        if (!(s->buffers = calloc(plat->nbuffers, sizeof(*s->buffers))))
            goto nomem;
        memcpy(s->buffers, plat->buffers, plat->nbuffers * sizeof(*s->buffers));
    }
    s->plat.buffers = s->buffers;
    if (plat->nbuffers > 0) {
        if (!(s->nodes = calloc(plat->nbuffers, sizeof(*s->nodes))))
            goto nomem;
        for (i = 0; i < plat->nbuffers; i++) {
            const hs_buffer_t *b = &s->buffers[i];
            s->nodes[i].cap = b->capacity > 0 ? b->capacity : INFINITY;
            s->nodes[i].bw = b->bandwidth > 0 ? b->bandwidth : plat->bw;
        }
    }
    s->bt = -INFINITY;
    s->pol = p;
    if (policy_start(s, &s->pol, &s->ops, &s->pstate, err) < 0)
        goto error;
    return s;
nomem:
    hs_errprintf(err, ENOMEM, "out of memory");
error:
    hs_sched_destroy(s);
    return NULL;
}

void hs_sched_destroy(hs_sched_t *s)
{
    int saved = errno;
    size_t i;

    if (s) {
        if (s->ops && s->ops->destroy)
            s->ops->destroy(s->pstate);
        for (i = 0; i < s->jobs_len; i++) {
            free(s->jobs[i].alloc);
            free(s->jobs[i].place);
        }
        free(s->nodes);
        bscratch_free(s->bs);
        free(s->jobs);
        free(s->htab);
        free(s->live);
        free(s->pend);
        free(s->views);
        free(s->ids);
        free(s->ids_tmp);
        free(s->buffers);
        free(s);
    }
    errno = saved;
}

int hs_sched_set_policy(hs_sched_t *s, double now, const hs_policy_t *pol, hu_error_t *err)
{
    hs_policy_t p;
    const hs_policy_ops_t *ops;
    void *state;

    if (!s)
        return hs_errprintf(err, EINVAL, "no scheduler");
    if (check_time(s, now) < 0)
        return hs_errprintf(err, EINVAL, "time %g is before the last event (%g)", now, s->now);
    if (check_policy(pol, &p, err) < 0)
        return -1;
    if (policy_start(s, &p, &ops, &state, err) < 0)
        return -1;
    integrate(s, now);
    if (s->ops && s->ops->destroy)
        s->ops->destroy(s->pstate);
    s->pol = p;
    s->ops = ops;
    s->pstate = state;
    return 0;
}

/* ------------------------------------------------------------------ events */

int hs_job_arrive(hs_sched_t *s, double now, const hs_job_t *job, hu_error_t *err)
{
    size_t slot, old;
    struct job *j;
    int *alloc = NULL;
    int i;

    if (!s || !job)
        return hs_errprintf(err, EINVAL, "no scheduler or job");
    if (check_time(s, now) < 0)
        return hs_errprintf(err, EINVAL, "job %ju: time %g is before the last event (%g)",
                            (uintmax_t)job->id, now, s->now);
    if (job->nodes < 1)
        return hs_errprintf(err, EINVAL, "job %ju: nodes must be >= 1 (got %d)", (uintmax_t)job->id,
                            job->nodes);
    if (!isfinite(job->release) || job->release > now)
        return hs_errprintf(err, EINVAL, "job %ju: release %g must be a time <= now (%g)",
                            (uintmax_t)job->id, job->release, now);
    if (isnan(job->w) || isnan(job->volume) || isnan(job->w_iter) || isinf(job->w)
        || isinf(job->volume) || isinf(job->w_iter))
        return hs_errprintf(err, EINVAL, "job %ju: hints must be finite numbers",
                            (uintmax_t)job->id);
    if (job->instances < 0 || job->priority < 0 || job->priority > 10)
        return hs_errprintf(err, EINVAL, "job %ju: instances must be >= 0 and priority in 0..10",
                            (uintmax_t)job->id);
    if (job->nalloc < 0 || (job->nalloc > 0 && !job->alloc))
        return hs_errprintf(err, EINVAL, "job %ju: invalid buffer allocation list",
                            (uintmax_t)job->id);
    for (i = 0; i < job->nalloc; i++) {
        if (job->alloc[i] < 0 || job->alloc[i] >= s->plat.nbuffers)
            return hs_errprintf(err, EINVAL, "job %ju: buffer index %d out of range (%d buffers)",
                                (uintmax_t)job->id, job->alloc[i], s->plat.nbuffers);
        /* a node twice would be counted twice in the per-node scratch of a decision
         * (sized by the number of nodes): refuse it (the list is short: <= nbuffers) */
        for (int k = 0; k < i; k++)
            if (job->alloc[k] == job->alloc[i])
                return hs_errprintf(err, EINVAL, "job %ju: buffer index %d listed twice",
                                    (uintmax_t)job->id, job->alloc[i]);
    }
    old = hfind(s, job->id);
    if (old != NO_SLOT && s->jobs[old].live)
        return hs_errprintf(err, EEXIST, "job %ju is already known", (uintmax_t)job->id);

    if (job->nalloc > 0) {
        if (!(alloc = malloc(job->nalloc * sizeof(*alloc))))
            goto nomem;
        memcpy(alloc, job->alloc, job->nalloc * sizeof(*alloc));
    }
    if (hs_grow(&s->live, &s->live_cap, s->nlive + 1, sizeof(*s->live)) < 0
        || hs_grow(&s->pend, &s->pend_cap, s->nlive + 1, sizeof(*s->pend)) < 0)
        goto nomem;
    if (old != NO_SLOT) {
        /* a departed job's id comes back: its old record is replaced */
        slot = old;
        free(s->jobs[slot].alloc);
        free(s->jobs[slot].place);
    } else {
        if (hreserve(s, s->hcount + 1) < 0)
            goto nomem;
        if (s->free_head != NO_SLOT) {
            slot = s->free_head;
            s->free_head = s->jobs[slot].next_free;
        } else {
            if (hs_grow(&s->jobs, &s->jobs_cap, s->jobs_len + 1, sizeof(*s->jobs)) < 0)
                goto nomem;
            slot = s->jobs_len++;
        }
        hput_raw(s->htab, s->hcap, job->id, slot);
        s->hcount++;
    }
    integrate(s, now);
    j = &s->jobs[slot];
    memset(j, 0, sizeof(*j));
    j->info = *job;
    j->alloc = alloc;
    j->info.alloc = alloc;
    j->used = true;
    j->live = true;
    j->live_pos = s->nlive;
    s->live[s->nlive++] = slot;
    j->cap = hs_fmin(job->nodes * s->plat.node_bw, s->plat.bw);
    if (has_buffers(s)) {
        const int *list;
        int na = job_nodes(s, j, &list), k;
        j->cap = job_cap_buffers(s, j);
        j->arrive = now;
        j->held0 = buffers_sum_int(s, j);
        for (k = 0; k < na; k++) {
            double c = s->nodes[nodes_at(list, k)].cap;
            if (isfinite(c))
                j->alloc_cap += c;
        }
    }
    j->last_io_end = job->release;
    j->st.id = job->id;
    j->st.nodes = job->nodes;
    j->st.release = job->release;
    j->st.end = NAN;
    return 0;
nomem:
    free(alloc);
    return hs_errprintf(err, ENOMEM, "out of memory");
}

int hs_job_leave(hs_sched_t *s, double now, uint64_t id)
{
    struct job *j;

    if (!(j = event_job(s, now, id)))
        return -1;
    integrate(s, now);
    sync_job(s, j);
    if (j->pending)
        pend_remove(s, j);
    if (has_buffers(s)) {
        j->st.buf_held = buffers_sum_int(s, j) - j->held0;
        j->st.buf_alloc = j->alloc_cap * (now - j->arrive);
    }
    live_remove(s, j);
    j->st.end = now;
    return 0;
}

int hs_job_forget(hs_sched_t *s, uint64_t id)
{
    size_t slot;
    struct job *j;

    if (!s) {
        errno = EINVAL;
        return -1;
    }
    if ((slot = hfind(s, id)) == NO_SLOT) {
        errno = ENOENT;
        return -1;
    }
    j = &s->jobs[slot];
    if (j->live) {
        errno = EBUSY;
        return -1;
    }
    hdel(s, id);
    free(j->alloc);
    free(j->place);
    memset(j, 0, sizeof(*j));
    j->next_free = s->free_head;
    s->free_head = slot;
    return 0;
}

/* w_iter of the phase just requested (IO-Sets): the hint, else w + volume/cap from
 * the hints, else the mean time between consecutive requests, else (first phase)
 * w_done + time_io of this phase. */
static double estimate_w_iter(const struct job *j)
{
    if (j->info.w_iter > 0)
        return j->info.w_iter;
    if (j->info.w > 0 && j->info.volume > 0)
        return j->info.w + j->info.volume / j->cap;
    if (j->nreq >= 2)
        return (j->last_req - j->first_req) / (j->nreq - 1);
    return j->w_done + j->vol / j->cap;
}

int hs_phase_request(hs_sched_t *s, double now, uint64_t id, double volume, hs_dir_t dir,
                     double w_done, hu_error_t *err)
{
    struct job *j;

    if (!s)
        return hs_errprintf(err, EINVAL, "no scheduler");
    if (check_time(s, now) < 0)
        return hs_errprintf(err, EINVAL, "job %ju: time %g is before the last event (%g)",
                            (uintmax_t)id, now, s->now);
    if (!(j = live_job(s, id)))
        return hs_errprintf(err, ENOENT, "job %ju is not known", (uintmax_t)id);
    if (j->pending)
        return hs_errprintf(err, EBUSY, "job %ju already has a phase in progress", (uintmax_t)id);
    if (!(volume >= 0) || !isfinite(volume))
        return hs_errprintf(err, EINVAL, "job %ju: volume %g must be >= 0", (uintmax_t)id, volume);
    if (!(w_done >= 0) || !isfinite(w_done))
        return hs_errprintf(err, EINVAL, "job %ju: w_done %g must be >= 0", (uintmax_t)id, w_done);
    if (dir != HS_DIR_WRITE && dir != HS_DIR_READ)
        return hs_errprintf(err, EINVAL, "job %ju: invalid direction %d", (uintmax_t)id, (int)dir);
    integrate(s, now);
    j->pending = true;
    j->pend_pos = s->npend;
    s->pend[s->npend++] = (size_t)(j - s->jobs);
    j->vol = volume;
    j->done = 0;
    j->t_sync = now;
    j->req = now;
    j->w_done = w_done;
    j->dir = dir;
    j->rate = 0;
    j->weight = 0;
    j->active = false;
    j->placed = false;
    j->nplace = 0;
    j->place0 = -1;
    j->throttled = false;
    j->bounded = false;
    j->alone_bw = 0;
    if (j->nreq++ == 0)
        j->first_req = now;
    j->last_req = now;
    j->w_iter = estimate_w_iter(j);
    j->st.w_iter_est = j->w_iter;
    {
        /* rho of the job with this phase (the file's header): st.work and
         * st.io_dedicated only change when the phase finishes */
        double TIO = j->st.io_dedicated + j->vol / j->cap;
        j->W = j->st.work + j->w_done;
        j->rho = (j->W + TIO > 0) ? j->W / (j->W + TIO) : 1.0;
        j->phase = j->st.phases + 1;
    }
    return 0;
}

static struct job *pending_job(hs_sched_t *s, double now, uint64_t id)
{
    struct job *j;

    if (!(j = event_job(s, now, id)))
        return NULL;
    if (!j->pending) {
        errno = EINVAL;
        return NULL;
    }
    return j;
}

int hs_phase_progress(hs_sched_t *s, double now, uint64_t id, double bytes_done)
{
    struct job *j;

    if (!(j = pending_job(s, now, id)))
        return -1;
    if (!(bytes_done >= 0) || !isfinite(bytes_done)) {
        errno = EINVAL;
        return -1;
    }
    integrate(s, now);
    sync_job(s, j);
    j->done = hs_fmin(bytes_done, j->vol);
    return 0;
}

int hs_phase_finish(hs_sched_t *s, double now, uint64_t id)
{
    struct job *j;

    if (!(j = pending_job(s, now, id)))
        return -1;
    integrate(s, now);
    sync_job(s, j); /* its io_wait up to now */
    /* the instance is over: it counts with its requested volume */
    j->st.phases++;
    j->st.work += j->w_done;
    {
        /* with buffers, "alone" is the phase alone on the nodes it went to */
        double alone = has_buffers(s) && j->alone_bw > 0 ? j->alone_bw : j->cap;
        double ded = j->vol / alone;
        double ifac = ded > 0 ? (now - j->req) / ded : 1.0;
        j->st.io_dedicated += ded;
        j->st.if_sum += ifac;
        if (ifac > j->st.if_max)
            j->st.if_max = ifac;
    }
    j->st.io_time += now - j->req;
    j->st.bytes += j->vol;
    j->last_io_end = now;
    j->throttled = false;
    pend_remove(s, j);
    if (j->info.instances > 0 && j->st.phases >= j->info.instances)
        j->st.end = now;
    return 0;
}

int hs_sched_advance(hs_sched_t *s, double now)
{
    if (!s || check_time(s, now) < 0) {
        errno = EINVAL;
        return -1;
    }
    integrate(s, now);
    return 0;
}

size_t hs_sched_completed(const hs_sched_t *s, uint64_t *ids, size_t cap)
{
    size_t i, n = 0;

    if (!s)
        return 0;
    for (i = 0; i < s->npend; i++) {
        const struct job *j = &s->jobs[s->pend[i]];
        if (phase_complete(s, j)) {
            if (n < cap && ids)
                ids[n] = j->info.id;
            n++;
        }
    }
    return n;
}

double hs_sched_now(const hs_sched_t *s)
{
    return s ? s->now : NAN;
}

size_t hs_sched_njobs(const hs_sched_t *s)
{
    return s ? s->nlive : 0;
}

size_t hs_sched_npending(const hs_sched_t *s)
{
    return s ? s->npend : 0;
}

/* ------------------------------------------------------------------ accounting */

/* A job's statistics at s->now (io_wait of a waiting phase included). */
static void job_stats_now(const hs_sched_t *s, const struct job *j, hs_job_stats_t *st)
{
    *st = j->st;
    if (j->pending) {
        double done;
        job_at3(j, s->now, &done, &st->io_wait, &st->buffer_full);
    }
    if (j->live && has_buffers(s)) {
        st->buf_held = buffers_sum_int(s, j) - j->held0;
        st->buf_alloc = j->alloc_cap * (s->now - j->arrive);
    }
}

int hs_job_stats(const hs_sched_t *s, uint64_t id, hs_job_stats_t *st)
{
    size_t slot;

    if (!s || !st) {
        errno = EINVAL;
        return -1;
    }
    if ((slot = hfind(s, id)) == NO_SLOT) {
        errno = ENOENT;
        return -1;
    }
    job_stats_now(s, &s->jobs[slot], st);
    return 0;
}

int hs_phase_info(const hs_sched_t *s, uint64_t id, hs_phase_info_t *pi)
{
    size_t slot;
    const struct job *j;

    if (!s || !pi) {
        errno = EINVAL;
        return -1;
    }
    if ((slot = hfind(s, id)) == NO_SLOT || !s->jobs[slot].live) {
        errno = ENOENT;
        return -1;
    }
    j = &s->jobs[slot];
    memset(pi, 0, sizeof(*pi));
    pi->id = id;
    pi->pending = j->pending;
    if (j->pending) {
        double wait;
        pi->volume = j->vol;
        job_at(j, s->now, &pi->done, &wait);
        pi->request = j->req;
        pi->bw = j->rate;
        pi->weight = j->weight;
        pi->w_iter = j->w_iter;
        pi->complete = done_complete(j, pi->done);
    }
    return 0;
}

/* ------------------------------------------------------------------ policy access */

void hs_core_policy(const hs_sched_t *s, const hs_policy_ops_t **ops, const void **state)
{
    *ops = s ? s->ops : NULL;
    *state = s ? s->pstate : NULL;
}

size_t hs_core_njobs(const hs_sched_t *s)
{
    return s ? s->nlive : 0;
}

const hs_job_t *hs_core_job(const hs_sched_t *s, size_t i)
{
    if (!s || i >= s->nlive)
        return NULL;
    return &s->jobs[s->live[i]].info;
}

int hs_core_job_stats(const hs_sched_t *s, size_t i, hs_job_stats_t *st, bool *pending)
{
    const struct job *j;

    if (!s || i >= s->nlive) {
        errno = EINVAL;
        return -1;
    }
    j = &s->jobs[s->live[i]];
    if (st)
        job_stats_now(s, j, st);
    if (pending)
        *pending = j->pending;
    return 0;
}

double hs_core_job_last_io_end(const hs_sched_t *s, size_t i)
{
    if (!s || i >= s->nlive)
        return NAN;
    return s->jobs[s->live[i]].last_io_end;
}

double hs_core_last_io_end(const hs_sched_t *s, uint64_t id)
{
    size_t slot = s ? hfind(s, id) : NO_SLOT;

    return slot == NO_SLOT ? NAN : s->jobs[slot].last_io_end;
}

int hs_core_phase_backdate(hs_sched_t *s, uint64_t id, double req)
{
    struct job *j = s ? live_job(s, id) : NULL;
    if (!j || !j->pending || !(req <= j->req) || !isfinite(req)) {
        errno = EINVAL;
        return -1;
    }
    j->req = req;
    return 0;
}

int hs_core_phase_copy(hs_sched_t *dst, const hs_sched_t *src, uint64_t id)
{
    const struct job *js = src ? live_job((hs_sched_t *)src, id) : NULL;
    struct job *jd = dst ? live_job(dst, id) : NULL;

    if (!js || !jd || !jd->pending || dst->plat.nbuffers != src->plat.nbuffers) {
        errno = EINVAL;
        return -1;
    }
    if (!js->pending)
        return 0;
    jd->w_iter = js->w_iter;
    jd->st.w_iter_est = js->w_iter;
    jd->first_req = js->first_req;
    jd->last_req = js->last_req;
    if (!js->placed || dst->plat.nbuffers == 0)
        return 0;
    return bnode_set_place(dst, jd, js->place, js->nplace);
}

int hs_core_job_copy_history(hs_sched_t *dst, const hs_sched_t *src, size_t i, double *w_done)
{
    const struct job *js;
    struct job *jd;
    size_t slot;

    if (!dst || !src || i >= src->nlive) {
        errno = EINVAL;
        return -1;
    }
    js = &src->jobs[src->live[i]];
    if ((slot = hfind(dst, js->info.id)) == NO_SLOT || !dst->jobs[slot].live) {
        errno = EINVAL;
        return -1;
    }
    jd = &dst->jobs[slot];
    if (jd->nreq > 0) {
        errno = EBUSY;
        return -1;
    }
    jd->st.phases = js->st.phases;
    jd->st.work = js->st.work;
    jd->st.io_dedicated = js->st.io_dedicated;
    jd->st.io_time = js->st.io_time;
    jd->st.io_wait = js->st.io_wait;
    jd->st.bytes = js->st.bytes;
    jd->st.if_sum = js->st.if_sum;
    jd->st.if_max = js->st.if_max;
    jd->last_io_end = js->last_io_end;
    /* the requests so far: a job without w and volume hints has its w_iter
     * estimated from them (estimate_w_iter()) */
    jd->nreq = js->nreq - (js->pending ? 1 : 0);
    jd->first_req = js->first_req;
    jd->last_req = js->last_req;
    if (w_done)
        *w_done = js->pending ? js->w_done : 0;
    return 0;
}

/* ------------------------------------------------------------------ schedule stats */

void hs_policy_stats_reset(hs_policy_stats_t *st)
{
    memset(st, 0, sizeof(*st));
    st->period = NAN;
    st->period_tmin = NAN;
    st->period_last = NAN;
    st->period_sys_efficiency = NAN;
    st->period_dilation = NAN;
}

int hs_sched_policy_stats(const hs_sched_t *s, hs_policy_stats_t *st)
{
    if (!s || !st) {
        errno = EINVAL;
        return -1;
    }
    hs_policy_stats_reset(st);
    if (s->ops && s->ops->stats)
        s->ops->stats(s->pstate, st);
    return 0;
}

/* vi: ts=4 sw=4 expandtab
 */
