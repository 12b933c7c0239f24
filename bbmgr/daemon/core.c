/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core.c — the top of bbmgrd's core: its creation and destruction, the timer
 * (core_tick) that drives the other core_*.c files, and the accessors.  The
 * helpers every core file uses are below it, in core_model.c.
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
#include "nodes.h"
#include "log.h"
#include "util.h"


/* ------------------------------------------------------------------ create */
/* What the agents' side (nodes.c, below the core's operations) tells the core. */
static const nodes_core_t nodes_core = {
    .report = core_mover_report,
    .restage_lost = core_restage_lost,
    .drain = core_node_drain,
    .set_bandwidth = core_node_set_bandwidth,
    .loads = core_node_loads,
    .leftover = core_node_leftover,
};

core_t *core_create(cfg_t *cfg, state_t *st, hu_error_t *err)
{
    core_t *c = calloc(1, sizeof(*c));
    hu_error_t herr = { "" };

    if (!c) {
        errno = ENOMEM;
        hu_errprintf(err, "out of memory");
        cfg_destroy(cfg);
        return NULL;
    }
    pthread_mutex_init(&c->lock, NULL);
    nodes_set_core(&nodes_core);
    c->job_view = core_job_json;
    c->cfg = cfg;
    c->st = st;
    c->next_phase = c->next_xfer = c->next_hs = 1;
    c->started = core_wall();
    if (!(c->node_by_name = hmap_create()) || !(c->jobs = hmap_create())
        || !(c->jobs_hs = hmap_create()) || !(c->phases = hmap_create())
        || !(c->pbufs = hmap_create()) || !(c->xfers = hmap_create())
        || core_pools_load(c, cfg) < 0) {
        errno = ENOMEM;
        hu_errprintf(err, "out of memory");
        goto error;
    }
    for (int i = 0; i < cfg->nnodes; i++)
        for (int k = 0; k < cfg->nodes[i].names.n; k++)
            if (core_node_add(c, cfg->nodes[i].names.v[k], &cfg->nodes[i], true) < 0) {
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
            core_job_free(v);
    if (c->pbufs)
        for (void *it = hmap_first(c->pbufs, &v); it; it = hmap_next(c->pbufs, it, &v))
            core_pbuf_free(v);
    for (int i = 0; i < c->nheld; i++)
        core_held_free(c->held[i]);
    free(c->held);
    for (int i = 0; i < CORE_ENDED_KEEP; i++)
        json_decref(c->ended[i]);
    hmap_destroy(c->jobs);
    hmap_destroy(c->jobs_hs);
    hmap_destroy(c->phases);
    core_usage_free(c);
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
        core_phase_close(c, expire[i], PH_EXPIRED, expire[i]->bytes);
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
            core_put_xfer(c, done[i]);
        }
    }
    if (c->mover) {
        core_mover_results(c);
        if (!c->durability_recovered) {
            c->durability_recovered = true;
            core_recover_durability(c);
        }
        core_mover_tick(c, wall);
    }
    nodes_tick(c, wall);
    core_spares_fill(c, wall);
    core_usage_tick(c, wall);
    core_leftover_tick(c);
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
        core_reschedule(c, now);
    core_unlock(c);
}
