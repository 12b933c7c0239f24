/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_json.c — the JSON views of the model served by the routes.
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
#include "core_jobs.h"
#include "core_json.h"
#include "nodes.h"
#include "log.h"

/* ------------------------------------------------------------------ JSON */
static json_t *jnum(double v)
{
    return isnan(v) ? json_null() : json_real(v);
}

/* Ready: every directory is made (nodes_alloc_ready) and, before the job runs, no
 * stage-in of it is queued or running (one run again on another node after its
 * node was lost: core_restage_lost). */
static bool alloc_ready(core_t *c, const job_t *j, const alloc_t *a)
{
    for (int i = 0; j && j->state == JOB_REGISTERED && i < j->nxfers; i++)
        if (!strcmp(j->xfers[i]->kind, "stage_in")
            && (j->xfers[i]->state == XF_QUEUED || j->xfers[i]->state == XF_RUNNING))
            return false;
    return nodes_alloc_ready(c, a);
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
    return json_pack("{s:s s:I s:I s:i s:o s:o s:b}", "pool", a->pool, "capacity",
                     (json_int_t)a->capacity, "reserved", (json_int_t)a->reserved,
                     "nodes_requested", a->nodes_requested, "created", jnum(a->created), "nodes",
                     nodes, "ready", alloc_ready(c, j, a));
}

/* The measured use of a buffer (doc/security.md, Capacity); null before the first
 * complete walk. */
static json_t *usage_json(const bb_usage_t *u, uint64_t capacity)
{
    if (!(u->at > 0))
        return json_null();
    return json_pack("{s:I s:I s:b s:o}", "used", (json_int_t)u->bytes, "capacity",
                     (json_int_t)capacity, "over", u->over, "measured", jnum(u->at));
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
        core_settle(c); /* its bandwidth and share */
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
                buffer = a->v[i].node; /* the scheduler's pick was drained */
            snprintf(path, sizeof(path), "%s/%s", n->mount, p->job->id);
            json_array_append_new(nodes, json_string(n->name));
            json_array_append_new(paths, json_string(path));
        }
        grant = json_pack("{s:o s:o s:o s:f s:f s:s s:o}", "start", jnum(p->granted), "nodes",
                          nodes, "paths", paths, "bandwidth", p->bw, "share", p->share, "target",
                          a && a->n ? "buffer" : "pfs", "buffer",
                          buffer >= 0 && buffer < c->nnodes ? json_string(c->nodes[buffer].name)
                                                            : json_null());
        if (json_array_size(paths) > 0)
            json_object_set(grant, "path", json_array_get(paths, 0));
    }
    json_t *o = json_pack("{s:I s:s s:f s:s s:s s:o s:o s:o s:f s:o}", "id", (json_int_t)p->id,
                          "job", p->job->id, "volume", p->volume, "direction", p->dir, "state",
                          core_phase_state_name(p->state), "requested", jnum(p->requested),
                          "granted", jnum(p->granted), "finished", jnum(p->finished), "bytes",
                          p->bytes, "grant", grant);
    /* waiting outside the scheduler (capacity.over: hold): why */
    char why[400];
    const char *hold =
        p->on_hold && p->state == PH_WAITING ? core_job_hold(c, p->job, why, sizeof(why)) : NULL;
    if (o)
        json_object_set_new(o, "hold",
                            hold ? json_string(hold)
                            : p->on_hold && p->state == PH_WAITING
                                ? json_string("held until its buffers are back under "
                                              "their capacity (capacity.over: hold)")
                                : json_null());
    /* shared by several nodes (doc/api.md): how many are in it, how many left */
    if (o && p->nmembers > 0)
        json_object_set_new(o, "members",
                            json_pack("{s:i s:i s:f}", "in", p->nmembers - p->nleft, "left",
                                      p->nleft, "bytes", p->mbytes));
    return o;
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
    json_t *o = json_pack(
        "{s:I s:s s:s s:s s:s s:s s:s s:o s:I s:o s:o s:o s:o s:b}", "id", (json_int_t)x->id, "job",
        x->job_id, "kind", x->kind, "source", x->source, "destination", x->destination, "type",
        x->type, "state", core_xfer_state_name(x->state), "bytes_total",
        x->bytes_total >= 0 ? json_integer(x->bytes_total) : json_null(), "bytes_done",
        (json_int_t)x->bytes_done, "message", x->message ? json_string(x->message) : json_null(),
        "requested", jnum(x->requested), "start", jnum(x->start), "finished", jnum(x->finished),
        "durable", x->durable == 1);
    if (o && x->nparts > 1) {
        json_object_set_new(o, "part", json_integer(x->part));
        json_object_set_new(o, "nparts", json_integer(x->nparts));
    }
    return o;
}

const char *core_stage_summary(const job_t *j, const char *kind)
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
    json_t *o = json_pack("{s:s s:I s:I s:o s:o s:i s:s s:o s:o s:o s:o s:I s:f s:s s:s}", "id",
                          j->id, "uid", (json_int_t)j->uid, "gid", (json_int_t)j->gid, "user",
                          j->user ? json_string(j->user) : json_null(), "name",
                          j->name ? json_string(j->name) : json_null(), "nodes", j->nodes, "state",
                          core_job_state_name(j->state), "created", jnum(j->created), "begun",
                          jnum(j->begun), "ended", jnum(j->ended), "hints", hints, "phases_done",
                          (json_int_t)j->nphases, "bytes", j->bytes, "stage_in",
                          core_stage_summary(j, "stage_in"), "stage_out",
                          core_stage_summary(j, "stage_out"));
    json_object_set_new(o, "allocation",
                        j->alloc ? core_alloc_json(c, j, j->alloc, j->id) : json_null());
    json_object_set_new(o, "phase", j->phase ? core_phase_json(c, j->phase) : json_null());
    /* what its finished phases taught (doc/api.md): what its end records */
    json_object_set_new(
        o, "learned",
        json_pack("{s:o s:o s:I}", "w_iter", jnum(core_job_w_iter(j)), "io_volume",
                  j->nphases > 0 ? json_real(j->bytes / (double)j->nphases) : json_null(), "phases",
                  (json_int_t)j->nphases));
    json_object_set_new(o, "usage",
                        j->alloc ? usage_json(&j->usage, j->alloc->capacity) : json_null());
    /* its phases held (capacity.over: hold, doc/security.md, Capacity): why */
    char why[400];
    const char *hold = j->state != JOB_ENDED ? core_job_hold(c, j, why, sizeof(why)) : NULL;
    json_object_set_new(o, "hold", hold ? json_string(hold) : json_null());
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
                          json_object_get(a, "pool"), "capacity", (json_int_t)b->alloc.capacity,
                          "reserved", (json_int_t)b->alloc.reserved, "nodes",
                          json_object_get(a, "nodes"), "created", jnum(b->created), "users", users);
    json_object_set_new(o, "usage", usage_json(&b->usage, b->alloc.capacity));
    json_decref(a);
    return o;
}

static void node_measured_add(core_t *c, const alloc_t *a)
{
    for (int k = 0; a && k < a->n; k++)
        if (a->v[k].used_at > 0) {
            c->nodes[a->v[k].node].measured += a->v[k].used;
            c->nodes[a->v[k].node].nmeasured++;
        }
}

void core_node_loads(core_t *c)
{
    void *v;
    core_settle(c);
    for (int i = 0; i < c->nnodes; i++) {
        c->nodes[i].active = 0;
        c->nodes[i].load = 0;
        c->nodes[i].measured = 0;
        c->nodes[i].nmeasured = 0;
    }
    for (void *it = hmap_first(c->jobs, &v); it; it = hmap_next(c->jobs, it, &v))
        node_measured_add(c, ((job_t *)v)->alloc);
    for (void *it = hmap_first(c->pbufs, &v); it; it = hmap_next(c->pbufs, it, &v))
        node_measured_add(c, &((pbuf_t *)v)->alloc);
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
    json_t *o =
        json_pack("{s:s s:s s:o s:I s:I s:I s:f s:s s:s s:o s:b s:i s:i s:f}", "name", n->name,
                  "pool", c->pools[n->pool].name, "device",
                  n->device >= 0 ? json_string(c->cfg->devices[n->device].name) : json_null(),
                  "capacity", (json_int_t)n->capacity, "used", (json_int_t)n->used, "free",
                  (json_int_t)(n->capacity > n->used ? n->capacity - n->used : 0), "bandwidth",
                  n->bandwidth, "mount", n->mount, "state", n->drained ? "drained" : "up", "reason",
                  n->reason ? json_string(n->reason) : json_null(), "configured", n->in_config,
                  "allocations", n->nallocs, "active_phases", n->active, "load", n->load);
    /* what its buffer directories hold, measured (doc/security.md, Capacity): null
     * while none of its allocations has a figure yet */
    json_object_set_new(o, "measured",
                        n->nmeasured > 0 || n->nallocs == 0 ? json_integer((json_int_t)n->measured)
                                                            : json_null());
    /* what failed teardowns left there, tried again until gone: part of used */
    json_object_set_new(o, "leftover", json_integer((json_int_t)n->leftover));
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
    return json_pack("{s:s s:I s:i s:i s:I s:I s:I}", "name", c->pools[idx].name, "granularity",
                     (json_int_t)c->pools[idx].granularity, "nodes", nodes, "nodes_up", up,
                     "capacity", (json_int_t)cap, "used", (json_int_t)used, "free",
                     (json_int_t)free_b);
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
                json_array_append_new(nodes, json_string(c->nodes[p->job->alloc->v[i].node].name));
        json_array_append_new(
            phases, json_pack("{s:I s:s s:s s:s s:f s:o s:o s:f s:f s:o}", "id", (json_int_t)p->id,
                              "job", p->job->id, "user", p->job->user ? p->job->user : "", "state",
                              core_phase_state_name(p->state), "requested", p->requested, "start",
                              jnum(start), "expected_end", jnum(end), "bandwidth", p->bw, "volume",
                              p->volume, "nodes", nodes));
    }
    for (void *it = hmap_first(c->xfers, &v); it; it = hmap_next(c->xfers, it, &v)) {
        xfer_t *x = v;
        if (x->start > wall + horizon)
            continue;
        json_array_append_new(xfers,
                              json_pack("{s:I s:s s:s s:s s:o}", "id", (json_int_t)x->id, "job",
                                        x->job_id, "kind", x->kind, "state",
                                        core_xfer_state_name(x->state), "start", jnum(x->start)));
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
        json_array_append_new(held,
                              json_pack("{s:s s:I s:o s:b s:s}", "job", c->held[i]->job, "bytes",
                                        (json_int_t)c->held[i]->a.reserved, "nodes", nodes, "kept",
                                        c->held[i]->kept, "reason", c->held[i]->reason));
    }
    return json_pack("{s:s s:b s:{s:i s:i} s:{s:i s:i s:I s:I} s:{s:i s:i s:i} s:i s:i s:I"
                     " s:o}",
                     "policy", c->policy_id, "policy_override", c->policy_override, "jobs",
                     "registered", reg, "running", run, "phases", "waiting", waiting, "granted",
                     granted, "finished", (json_int_t)c->n_finished, "expired",
                     (json_int_t)c->n_expired, "nodes", "total", c->nnodes, "drained", drained,
                     "pools", c->npools, "persistent", (int)hmap_size(c->pbufs), "transfers_open",
                     (int)hmap_size(c->xfers), "decisions", (json_int_t)c->decisions, "held", held);
}

/* ------------------------------------------------------------------ listings */
json_t *core_jobs_json(core_t *c, bool admin, uid_t uid, const char *state)
{
    json_t *a = json_array();
    void *v;
    for (void *it = hmap_first(c->jobs, &v); it; it = hmap_next(c->jobs, it, &v)) {
        job_t *j = v;
        if (!admin && j->uid != uid)
            continue;
        if (state && strcmp(state, core_job_state_name(j->state)))
            continue;
        json_array_append_new(a, core_job_json(c, j, false));
    }
    return a;
}

json_t *core_pbufs_json(core_t *c)
{
    json_t *a = json_array();
    void *v;
    for (void *it = hmap_first(c->pbufs, &v); it; it = hmap_next(c->pbufs, it, &v))
        json_array_append_new(a, core_pbuf_json(c, v));
    return a;
}

json_t *core_nodes_json(core_t *c)
{
    json_t *a = json_array();
    for (int i = 0; i < c->nnodes; i++)
        json_array_append_new(a, core_node_json(c, i));
    return a;
}

json_t *core_pools_json(core_t *c)
{
    json_t *a = json_array();
    for (int i = 0; i < c->npools; i++)
        json_array_append_new(a, core_pool_json(c, i));
    return a;
}

json_t *core_pool_json_named(core_t *c, const char *name)
{
    for (int i = 0; i < c->npools; i++)
        if (!strcmp(c->pools[i].name, name))
            return core_pool_json(c, i);
    return NULL;
}

json_t *core_policy_json(core_t *c)
{
    json_t *ids = json_array();
    const char *const *v = hs_policy_ids();
    for (int i = 0; v && v[i]; i++)
        json_array_append_new(ids, json_string(v[i]));
    json_t *o = json_pack("{s:s s:b s:s s:o}", "id", c->policy_id, "override", c->policy_override,
                          "configured", c->cfg->policy_id, "known", ids);
    hs_auto_state_t as;
    if (o && hs_sched_auto_state(c->sched, &as) == 0 && as.active) {
        /* the look ahead against the run (doc/policies.md, "auto") */
        bool chk = as.lookahead_checked > 0;
        json_t *la = json_pack(
            "{s:I s:o s:o}", "checked", (json_int_t)as.lookahead_checked, "error_max",
            chk ? json_real(as.lookahead_err_max) : json_null(), "error_mean",
            chk ? json_real(as.lookahead_err_sum / (double)as.lookahead_checked) : json_null());
        json_object_set_new(
            o, "auto",
            json_pack("{s:s s:s s:I s:I s:o s:o}", "current", as.current, "reason", as.reason,
                      "epochs", (json_int_t)as.epochs, "switches", (json_int_t)as.switches,
                      "last_epoch",
                      isfinite(as.last_epoch) ? json_real(as.last_epoch) : json_null(), "lookahead",
                      la ? la : json_null()));
    }
    return o;
}
