/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nodes.c — bbmgrd's side of the buffer-node agents (see nodes.h, doc/bbnoded.md).
 *
 * Tasks.  A transfer whose buffer side is under an agent's mount becomes a task of
 * that agent, with the transfer's id.  The table here (tid -> task) is memory
 * only: the transfer itself is in the state database, and after a restart of
 * bbmgrd the recovery queues it again (a running transfer starts again, doc/api.md)
 * and core_mover_tick() dispatches it here again, with the same id.  An agent that
 * still runs it does not start it twice (nodeproto.h, the task table); one that
 * does not know it (restarted too) runs it again from the start, which the mover
 * makes safe (temporary names, rename into place).
 *
 * A result changes the core only for a task of the agent that sent it that is
 * still open: a duplicate or a late result finds the task gone (or the transfer
 * closed) and is ignored.  Replies are sent after the state they reflect is
 * committed (api.c), so an acknowledged result is never lost by a restart.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core_model.h"
#include "nodes.h"
#include "hmap.h"
#include "log.h"
#include "nodeproto.h"
#include "util.h"

/* Other I/O on a device counts once it was there in each of this many reports: a
 * burst of one interval (a job's writes ahead of its grant's pace, a measurement
 * cut unevenly) does not take bandwidth from the node. */
#define BW_REPORTS 3

typedef struct {
    char name[64];
    bool seen; /* reported since bbmgrd's start */
    bool down;
    double last_seen;  /* monotonic seconds (start time until a report) */
    double reported;   /* wall time of the last report */
    char agent[64];    /* instance id of the agent process */
    uint64_t gen;      /* generation of its directory set */
    uint64_t applied;  /* the generation the agent says it applied */
    bool sent_current; /* the agent has generation gen */
    np_status_t st;
    double foreign;           /* bytes/s of I/O on its device neither its own nor
                                   granted by bbmgrd */
    double granted;           /* bytes/s bbmgrd granted on the node at the last report */
    double fhist[BW_REPORTS]; /* foreign I/O of the last reports (a ring) */
    unsigned nf;              /* reports in it so far */
    double available;         /* what the scheduler counts on, bytes/s */
    bool bw_pending;          /* available differs from the scheduler's value */
    uint64_t polls, results, ignored;
    uint64_t bytes; /* copied by its transfers, as their results said */
    char reason[160];
} agent_t;

typedef struct {
    uint64_t id;
    int agent;
    bool syncing; /* done; its fsyncs go on on the agent */
    bool done;    /* done (fsync'd before): "durable" follows it in the
                                   outbox; dropped at the second listing after */
    bool done_listed;
    bool resync;
    bool stage_out, directory;
    double done_at;
    char job[64];
    uid_t uid;
    gid_t gid;
    char *user, *src, *dst;
    int part, nparts; /* a part of a spread transfer (mover_spec_t) */
    char **roots;
    unsigned run;
    int64_t max_bytes;  /* stage-in: the node's share of its buffer (0: none) */
    int64_t bytes_seen; /* bytes_done of its last result (counted in G.moved) */
} task_t;

static struct {
    bool init;
    agent_t *v;
    int n;
    hmap_t *by_name; /* node name -> agent index + 1 */
    hmap_t *tasks;   /* tid -> task_t */
    hmap_t *kept;    /* "<held owner>\t<node>" -> kept_id_t: the identity of
                                   a held buffer's directory on an agent's node, as
                                   state.db's kept_dirs records it */
    double start_wall;
    uint64_t down_events;
    double bw_rebuilt; /* monotonic time the scheduler was last rebuilt */
    nodes_moved_t moved;
    nodes_core_t cb; /* how it reports to the core (nodes_set_core()) */
} G;

void nodes_set_core(const nodes_core_t *cb)
{
    G.cb = *cb;
}

/* Built at the first call: the agents are the nodes of the sets with agent: true
 * (a restart applies a change of that key). */
static void init(core_t *c)
{
    if (G.init)
        return;
    G.init = true;
    G.start_wall = core_wall();
    for (int s = 0; s < c->cfg->nnodes; s++) {
        const cfg_nodeset_t *ns = &c->cfg->nodes[s];
        for (int i = 0; ns->agent && i < ns->names.n; i++) {
            agent_t *v = realloc(G.v, (size_t)(G.n + 1) * sizeof(*v));
            if (!v) {
                bl_error("agents: out of memory");
                return;
            }
            G.v = v;
            memset(&G.v[G.n], 0, sizeof(agent_t));
            snprintf(G.v[G.n].name, sizeof(G.v[G.n].name), "%s", ns->names.v[i]);
            G.v[G.n].last_seen = hu_mono();
            G.v[G.n].gen = 1;
            G.v[G.n].available = ns->bandwidth;
            G.n++;
        }
    }
    if (!G.n)
        return;
    G.by_name = hmap_create();
    G.tasks = hmap_create();
    G.kept = hmap_create();
    for (int i = 0; G.by_name && i < G.n; i++)
        hmap_put(G.by_name, G.v[i].name, (void *)(intptr_t)(i + 1));
    bl_info("agents: %d buffer node(s) served by bbnoded", G.n);
}

static int agent_of_node(core_t *c, int idx)
{
    init(c);
    if (!G.n || idx < 0 || idx >= c->nnodes)
        return -1;
    return (int)(intptr_t)hmap_get(G.by_name, c->nodes[idx].name) - 1;
}

bool nodes_is_agent(core_t *c, int idx)
{
    return agent_of_node(c, idx) >= 0;
}

uint64_t nodes_dir_gen(core_t *c, int idx)
{
    int a = agent_of_node(c, idx);
    return a < 0 ? 0 : G.v[a].gen;
}

bool nodes_alloc_ready(core_t *c, const alloc_t *al)
{
    for (int i = 0; al && i < al->n; i++) {
        int a = al->v[i].dirgen ? agent_of_node(c, al->v[i].node) : -1;
        if (a >= 0 && (G.v[a].down || G.v[a].applied < al->v[i].dirgen))
            return false;
    }
    return true;
}

bool nodes_dir_hook(core_t *c, int idx)
{
    int a = agent_of_node(c, idx);
    if (a < 0)
        return false;
    G.v[a].gen++;
    G.v[a].sent_current = false;
    return true;
}

static void task_free(task_t *t)
{
    if (!t)
        return;
    free(t->user);
    free(t->src);
    free(t->dst);
    for (int k = 0; t->roots && k < t->nparts; k++)
        free(t->roots[k]);
    free(t->roots);
    free(t);
}

bool nodes_dispatch(core_t *c, const mover_spec_t *spec, const char *buf)
{
    int a = -1;
    init(c);
    if (!G.n)
        return false;
    for (int i = 0; i < c->nnodes && a < 0; i++) {
        int k = agent_of_node(c, i);
        if (k >= 0 && util_path_under(buf, c->nodes[i].mount))
            a = k;
    }
    if (a < 0)
        return false;
    task_t *t = calloc(1, sizeof(*t)), *old;
    bool ok = t && (t->src = strdup(spec->src)) && (t->dst = strdup(spec->dst))
              && (!spec->user || (t->user = strdup(spec->user)));
    if (ok && spec->nparts > 1) {
        ok = (t->roots = calloc((size_t)spec->nparts, sizeof(char *))) != NULL;
        t->nparts = ok ? spec->nparts : 0;
        t->part = spec->part;
        for (int k = 0; ok && k < spec->nparts; k++)
            ok = (t->roots[k] = strdup(spec->roots[k])) != NULL;
    }
    if (!ok) {
        task_free(t);
        bl_error("agents: transfer %ju: out of memory", (uintmax_t)spec->tid);
        return false;
    }
    t->id = spec->tid;
    t->run = spec->run;
    t->agent = a;
    t->resync = spec->resync;
    t->syncing = spec->resync;
    t->stage_out = spec->stage_out;
    t->directory = spec->directory;
    t->done_at = spec->done_at;
    t->max_bytes = spec->stage_out ? 0 : spec->max_bytes;
    snprintf(t->job, sizeof(t->job), "%s", spec->job);
    t->uid = spec->uid;
    t->gid = spec->gid;
    if ((old = hmap_iget(G.tasks, t->id)))
        task_free(old);
    if (hmap_iput(G.tasks, t->id, t) < 0) {
        task_free(t);
        return false;
    }
    bl_debug("%s %ju of job %s handed to the agent of %s",
             spec->stage_out ? "stage_out" : "stage_in", (uintmax_t)t->id, t->job, G.v[a].name);
    return true;
}

/* Is the task still to be run (or made durable) by its agent? */
static bool task_open(core_t *c, const task_t *t)
{
    if (t->syncing)
        return true;
    xfer_t *x = core_xfer(c, t->id);
    return x && x->in_mover && x->state == XF_RUNNING;
}

static void task_close(uint64_t id)
{
    task_free(hmap_idel(G.tasks, id));
}

static void apply_bandwidth(core_t *c, int a);
static void bandwidth_flush(core_t *c);

/* ------------------------------------------------------------------ down */
static void fail_tasks(core_t *c, int a, const char *why)
{
    void *v;
    uint64_t ids[256];
    int n;
    do {
        n = 0;
        for (void *it = hmap_first(G.tasks, &v); it && n < 256; it = hmap_next(G.tasks, it, &v))
            if (((task_t *)v)->agent == a)
                ids[n++] = ((task_t *)v)->id;
        for (int i = 0; i < n; i++) {
            task_t *t = hmap_iget(G.tasks, ids[i]);
            char msg[400];
            if (t->syncing) {
                snprintf(msg, sizeof(msg),
                         "buffer node %s down (%s): stage-out may not be "
                         "durable",
                         G.v[a].name, why);
                G.cb.report(c, t->id, t->job, MV_NOT_DURABLE, 0, -1, msg);
            } else if (task_open(c, t)) {
                /* (the stage-ins of jobs not yet running were moved to another
                 * node when the node went down, move_waiting_jobs(): not open) */
                snprintf(msg, sizeof(msg),
                         t->stage_out ? "buffer node %s down (%s): stage-out data lost"
                                      : "buffer node %s down (%s): stage-in not completed",
                         G.v[a].name, why);
                G.cb.report(c, t->id, t->job, MV_FAILED, 0, -1, msg);
            }
            task_close(ids[i]);
        }
    } while (n == 256);
}

static bool alloc_has(core_t *c, const alloc_t *a, const char *node)
{
    for (int i = 0; a && i < a->n; i++)
        if (!strcmp(c->nodes[a->v[i].node].name, node))
            return true;
    return false;
}

/* Node idx is down: the jobs that have not started yet get their share of the
 * buffer on another node, and their stage-ins into it run again there (the
 * core's restage_lost; a job that has started keeps its allocation: what it
 * wrote there was only there). */
static void move_waiting_jobs(core_t *c, int idx)
{
    void *v;
    for (void *it = hmap_first(c->jobs, &v); it; it = hmap_next(c->jobs, it, &v)) {
        job_t *j = v;
        if (j->state == JOB_REGISTERED && alloc_has(c, j->alloc, c->nodes[idx].name)
            && G.cb.restage_lost(c, j, idx, "down (no report)") < 0)
            bl_warning("job %s: no other buffer node can take its share on %s: it stays there",
                       j->id, c->nodes[idx].name);
    }
}

void nodes_tick(core_t *c, double wall)
{
    (void)wall;
    init(c);
    double now = hu_mono();
    for (int a = 0; a < G.n; a++) {
        agent_t *g = &G.v[a];
        int idx = core_node_index(c, g->name);
        if (!g->down && now - g->last_seen > c->cfg->agents_down_after) {
            cerr_t e;
            g->down = true;
            G.down_events++;
            snprintf(g->reason, sizeof(g->reason), "%s: no report for %.0f s%s", NODES_DOWN_REASON,
                     now - g->last_seen, g->seen ? "" : " since bbmgrd's start");
            bl_error("buffer node %s: %s", g->name, g->reason);
            if (idx >= 0 && !c->nodes[idx].drained)
                G.cb.drain(c, idx, true, g->reason, &e);
            if (idx >= 0)
                move_waiting_jobs(c, idx);
        }
        if (g->down)
            fail_tasks(c, a, "no report");
    }
    bandwidth_flush(c);
}

static void agent_up(core_t *c, int a)
{
    agent_t *g = &G.v[a];
    int idx = core_node_index(c, g->name);
    cerr_t e;
    if (g->down)
        bl_info("buffer node %s: its agent reports again (down for %.1f s): back in service "
                "after its directories are checked",
                g->name, hu_mono() - g->last_seen);
    g->down = false;
    g->reason[0] = '\0';
    if (idx >= 0 && c->nodes[idx].drained && c->nodes[idx].reason
        && !strncmp(c->nodes[idx].reason, NODES_DOWN_REASON, strlen(NODES_DOWN_REASON)))
        G.cb.drain(c, idx, false, NULL, &e);
}

/* ------------------------------------------------------------------ kept data
 * A held buffer's directory on an agent's node is known to bbmgrd by the device
 * and inode the agent reported for it (the directory at its name when first
 * listed with keep), recorded in state.db (kept_dirs, as embedded mode records
 * its own) and listed with it from then on: the agent keeps that identity
 * whatever buffer takes the name, and removes exactly it, at its name or in the
 * trash, once it is no longer listed (the release). */
typedef struct {
    uint64_t dev, ino;
} kept_id_t;

static int kept_row(sqlite3_stmt *s, void *arg)
{
    const char **want = arg;
    kept_id_t *id = (kept_id_t *)want[1];
    if (strcmp((const char *)sqlite3_column_text(s, 0), want[0]))
        return 0;
    id->dev = (uint64_t)sqlite3_column_int64(s, 1);
    id->ino = (uint64_t)sqlite3_column_int64(s, 2);
    return 1;
}

/* The recorded identity of held buffer h's directory on agent a; false: none yet. */
static bool kept_id(core_t *c, const held_t *h, int a, kept_id_t *out)
{
    char key[256];
    snprintf(key, sizeof(key), "%s\t%s", h->owner, G.v[a].name);
    kept_id_t *id = G.kept ? hmap_get(G.kept, key) : NULL;
    if (!id && G.kept) { /* recorded by an earlier process */
        kept_id_t got = { 0, 0 };
        const char *want[2] = { G.v[a].name, (const char *)&got };
        state_read(c->st, SR_KEPT_OF, kept_row, want, "s", h->owner);
        if (got.ino && (id = malloc(sizeof(*id)))) {
            *id = got;
            if (hmap_put(G.kept, key, id) < 0) {
                free(id);
                id = NULL;
                *out = got;
                return true;
            }
        }
    }
    if (id)
        *out = *id;
    return id != NULL;
}

/* The agent reports the identity of a directory listed with keep without one. */
static void kept_reported(core_t *c, int a, const np_dir_t *d)
{
    char key[256];
    for (int i = 0; i < c->nheld; i++) {
        held_t *h = c->held[i];
        bool pers = !strncmp(h->job, HELD_PREFIX, strlen(HELD_PREFIX));
        const char *name = pers ? h->job + strlen(HELD_PREFIX) : h->job;
        kept_id_t id;
        if (pers != d->persistent || strcmp(name, d->name) || !alloc_has(c, &h->a, G.v[a].name)
            || kept_id(c, h, a, &id))
            continue;
        kept_id_t *v = malloc(sizeof(*v));
        snprintf(key, sizeof(key), "%s\t%s", h->owner, G.v[a].name);
        if (!v || hmap_put(G.kept, key, v) < 0) {
            free(v);
            return;
        }
        *v = (kept_id_t){ d->dev, d->ino };
        state_put(c->st, ST_KEPT_PUT, "ssiii", h->owner, G.v[a].name, (int64_t)d->dev,
                  (int64_t)d->ino, (int64_t)h->kept);
        bl_info("buffer node %s: held buffer of '%s' is its directory of device %ju, inode %ju",
                G.v[a].name, h->job, (uintmax_t)d->dev, (uintmax_t)d->ino);
        nodes_dir_hook(c, core_node_index(c, G.v[a].name));
        return;
    }
}

/* ------------------------------------------------------------------ poll */

/* The bytes of allocation al on the mount of node name: the limit its agent's file
 * system may set on the directory (never more than the capacity asked for); 0
 * under capacity.enforce: none. */
static uint64_t dir_capacity(core_t *c, const alloc_t *al, const char *name)
{
    if (!strcmp(c->cfg->capacity_enforce, "none"))
        return 0; /* not said: agents of a release before the key parse it */
    for (int i = 0; i < al->n; i++)
        if (!strcmp(c->nodes[al->v[i].node].name, name)) {
            uint64_t s = core_mount_share(c, al, i);
            return al->capacity && al->capacity < s ? al->capacity : s;
        }
    return 0;
}

static json_t *dirs_json(core_t *c, int a)
{
    json_t *arr = json_array();
    void *v;
    for (void *it = hmap_first(c->jobs, &v); it; it = hmap_next(c->jobs, it, &v)) {
        job_t *j = v;
        if (alloc_has(c, j->alloc, G.v[a].name) && np_dir_name_ok(j->id, false)) {
            np_dir_t d = { .name = j->id,
                           .uid = j->uid,
                           .gid = j->gid,
                           .inc = j->alloc->created,
                           .capacity = dir_capacity(c, j->alloc, G.v[a].name) };
            json_array_append_new(arr, np_dir_json(&d));
        }
    }
    for (void *it = hmap_first(c->pbufs, &v); it; it = hmap_next(c->pbufs, it, &v)) {
        pbuf_t *b = v;
        if (alloc_has(c, &b->alloc, G.v[a].name) && np_dir_name_ok(b->name, true)) {
            np_dir_t d = { .name = b->name,
                           .persistent = true,
                           .uid = b->uid,
                           .gid = b->gid,
                           .inc = b->alloc.created,
                           .capacity = dir_capacity(c, &b->alloc, G.v[a].name) };
            json_array_append_new(arr, np_dir_json(&d));
        }
    }
    /* held buffers: their directories stay on the node until bbmgrd lets them go
     * (durable at last, or released by an administrator), listed with their
     * identity once the agent said it, whatever live buffer has the name now (the
     * held one was moved aside when it was made).  Without it, the agent records
     * the directory at the name, unless a live buffer of the name is listed too,
     * and releases nothing kept while one is listed without (kept_release()). */
    for (int i = 0; i < c->nheld; i++) {
        const held_t *h = c->held[i];
        bool pers = !strncmp(h->job, HELD_PREFIX, strlen(HELD_PREFIX));
        const char *name = pers ? h->job + strlen(HELD_PREFIX) : h->job;
        kept_id_t id = { 0, 0 };
        if (!alloc_has(c, &h->a, G.v[a].name) || !np_dir_name_ok(name, pers))
            continue;
        kept_id(c, h, a, &id);
        np_dir_t d = {
            .name = name, .persistent = pers, .keep = true, .dev = id.dev, .ino = id.ino
        };
        json_array_append_new(arr, np_dir_json(&d));
    }
    return arr;
}

static json_t *tasks_json(core_t *c, int a)
{
    json_t *arr = json_array();
    void *v;
    uint64_t gone[256];
    int ngone = 0;
    for (void *it = hmap_first(G.tasks, &v); it; it = hmap_next(G.tasks, it, &v)) {
        task_t *t = v;
        if (t->agent != a)
            continue;
        if (!task_open(c, t)) {
            if (t->done && !t->done_listed)
                t->done_listed = true; /* its "durable" may be in the next report */
            else if (ngone < 256)
                gone[ngone++] = t->id;
            continue;
        }
        job_t *j = core_job(c, t->job);
        np_task_t nt = {
            .tid = t->id,
            .job = t->job,
            .weight = j ? core_job_weight(c, j) : 1.0,
            .uid = t->uid,
            .gid = t->gid,
            .user = t->user,
            .stage_out = t->stage_out,
            .directory = t->directory,
            .resync = t->syncing,
            .done_at = t->done_at,
            .src = t->src,
            .dst = t->dst,
            .part = t->part,
            .nparts = t->nparts,
            .run = t->run,
            .max_bytes = t->max_bytes,
        };
        for (int k = 0; k < t->nparts; k++)
            nt.roots[k] = t->roots[k];
        if (t->syncing && !t->resync) {
            /* a restarted agent must only make it durable, not copy it again */
            xfer_t *x = core_xfer(c, t->id);
            nt.done_at = x ? x->finished : core_wall();
        }
        json_array_append_new(arr, np_task_json(&nt));
    }
    for (int i = 0; i < ngone; i++)
        task_close(gone[i]);
    return arr;
}

static void apply_result(core_t *c, int a, const np_result_t *r)
{
    task_t *t = hmap_iget(G.tasks, r->id);
    agent_t *g = &G.v[a];
    if (!t || t->agent != a) {
        g->ignored++;
        return;
    }
    switch (r->state) {
    case MV_RUNNING:
    case MV_DONE:
    case MV_FAILED:
    case MV_CANCELLED:
    case MV_DONE_SYNCING:
        if (t->syncing || t->done) { /* already done: a late copy of that */
            g->ignored++;
            return;
        }
        if (!task_open(c, t)) {
            g->ignored++;
            task_close(r->id);
            return;
        }
        /* what the agent copied: progress since its last result (a run started
         * again, by a restarted agent, counts from 0 again) */
        if (r->bytes_done > t->bytes_seen) {
            G.moved.bytes += (uint64_t)(r->bytes_done - t->bytes_seen);
            g->bytes += (uint64_t)(r->bytes_done - t->bytes_seen);
        }
        t->bytes_seen = r->bytes_done;
        if (r->state == MV_DONE || r->state == MV_DONE_SYNCING)
            G.moved.done++;
        else if (r->state == MV_FAILED)
            G.moved.failed++;
        else if (r->state == MV_CANCELLED)
            G.moved.cancelled++;
        G.cb.report(c, r->id, t->job, r->state, r->bytes_done, r->bytes_total, r->message);
        if (r->state == MV_DONE_SYNCING)
            t->syncing = true;
        else if (r->state == MV_DONE)
            t->done = true;
        else if (r->state != MV_RUNNING)
            task_close(r->id);
        break;
    case MV_DURABLE:
    case MV_NOT_DURABLE:
        if (!t->syncing && !t->done) {
            g->ignored++;
            return;
        }
        G.cb.report(c, r->id, t->job, r->state, r->bytes_done, r->bytes_total, r->message);
        task_close(r->id);
        break;
    }
    g->results++;
}

/* What agent a measured a buffer directory of its node to hold: kept in the
 * allocation's entry for the node, summed by core_usage_tick() (core_jobs.c) into the
 * buffer's use with the figures of bbmgrd's own walk.  A buffer it no longer has
 * on that node (ended, moved) is ignored. */
static void usage_reported(core_t *c, int a, const np_usage_t *u)
{
    int node = (int)(intptr_t)hmap_get(c->node_by_name, G.v[a].name) - 1;
    alloc_t *al = NULL;
    if (u->persistent) {
        pbuf_t *b = hmap_get(c->pbufs, u->name);
        al = b ? &b->alloc : NULL;
    } else {
        job_t *j = hmap_get(c->jobs, u->name);
        al = j ? j->alloc : NULL;
    }
    for (int k = 0; al && node >= 0 && k < al->n; k++)
        if (al->v[k].node == node) {
            al->v[k].used = u->used;
            al->v[k].used_dev = u->dev;
            al->v[k].used_ino = u->ino;
            al->v[k].used_at = core_wall();
        }
}

bool nodes_serves(core_t *c, const char *node)
{
    init(c);
    return G.n && hmap_get(G.by_name, node);
}

json_t *nodes_report(core_t *c, const char *node, const nodes_report_t *rp)
{
    int a = G.n ? (int)(intptr_t)hmap_get(G.by_name, node) - 1 : -1;
    const char *gen = rp->dirs;

    if (a < 0)
        return NULL;
    agent_t *g = &G.v[a];
    if (strcmp(g->agent, rp->agent)) {
        bl_info("buffer node %s: agent %s %s", g->name, rp->agent,
                *g->agent ? "restarted (its directories are checked again)" : "connected");
        snprintf(g->agent, sizeof(g->agent), "%s", rp->agent);
        g->sent_current = false;
    }
    if (g->down)
        g->sent_current = false; /* coming back: its directories are checked */
    agent_up(c, a);
    g->seen = true;
    g->last_seen = hu_mono();
    g->reported = core_wall();
    g->st = rp->status;
    G.cb.leftover(c, (int)(intptr_t)hmap_get(c->node_by_name, g->name) - 1,
                  rp->status.leftover_bytes);
    g->polls++;
    for (size_t i = 0; i < rp->nresults; i++)
        apply_result(c, a, &rp->results[i]);
    for (size_t i = 0; i < rp->nkept; i++)
        kept_reported(c, a, &rp->kept[i]);
    for (size_t i = 0; i < rp->nusage; i++)
        usage_reported(c, a, &rp->usage[i]);
    apply_bandwidth(c, a);

    char cur[64];
    /* the set the agent applied, if it is one of this process's */
    snprintf(cur, sizeof(cur), "%.0f-", G.start_wall);
    if (gen && !strncmp(gen, cur, strlen(cur))) {
        char *end;
        unsigned long long v = strtoull(gen + strlen(cur), &end, 10);
        if (!*end && v <= g->gen)
            g->applied = v;
    }
    snprintf(cur, sizeof(cur), "%.0f-%ju", G.start_wall, (uintmax_t)g->gen);
    json_t *out = json_pack("{s:s s:f s:s s:o}", "node", g->name, "interval",
                            c->cfg->agents_interval, "dirs_gen", cur, "tasks", tasks_json(c, a));
    if (!g->sent_current || !gen || strcmp(gen, cur)) {
        json_object_set_new(out, "dirs", dirs_json(c, a));
        g->sent_current = true;
    }
    return out;
}

/* ------------------------------------------------------------------ views */
void nodes_moved(core_t *c, nodes_moved_t *out)
{
    init(c);
    *out = G.moved;
}

void nodes_node_json(core_t *c, int idx, json_t *o)
{
    int a = agent_of_node(c, idx);
    if (a < 0 || !o)
        return;
    agent_t *g = &G.v[a];
    json_t *ag = json_pack("{s:s s:o s:b s:I}", "state",
                           g->down   ? "down"
                           : g->seen ? "up"
                                     : "waiting",
                           "reason", *g->reason ? json_string(g->reason) : json_null(), "busy",
                           g->st.busy, "polls", (json_int_t)g->polls);
    if (g->seen) {
        json_object_set_new(ag, "age", json_real(hu_mono() - g->last_seen));
        json_object_set_new(ag, "status", np_status_json(&g->st));
        json_object_set_new(ag, "foreign_bw", json_real(g->foreign));
        json_object_set_new(ag, "granted_bw", json_real(g->granted));
        json_object_set_new(ag, "available_bw", json_real(g->available));
    }
    json_object_set_new(o, "agent", ag);
}

void nodes_status_json(core_t *c, json_t *o)
{
    int up = 0;
    init(c);
    if (!G.n || !o)
        return;
    json_t *down = json_array();
    for (int a = 0; a < G.n; a++) {
        if (G.v[a].down)
            json_array_append_new(
                down, json_pack("{s:s s:s}", "node", G.v[a].name, "reason", G.v[a].reason));
        else
            up += G.v[a].seen;
    }
    json_object_set_new(o, "agents",
                        json_pack("{s:i s:i s:o}", "total", G.n, "up", up, "down", down));
}

typedef struct {
    char *buf;
    size_t len, cap;
} sb_t;

static void sb(sb_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb(sb_t *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(b->buf ? b->buf + b->len : NULL, b->buf ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if (b->buf && (size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)n + 256;
        char *nb = realloc(b->buf, cap);
        if (!nb)
            return;
        if (!b->buf)
            nb[0] = '\0';
        b->buf = nb;
        b->cap = cap;
    }
}

char *nodes_metrics(core_t *c)
{
    sb_t b = { 0 };
    init(c);
    if (!G.n)
        return NULL;
    static const struct {
        const char *name, *type, *help;
    } m[] = {
        { "harmonia_agent_up", "gauge", "1 if the node's agent reports, 0 if it is down." },
        { "harmonia_agent_busy", "gauge", "1 if the agent's device is copying." },
        { "harmonia_agent_free_bytes", "gauge", "Free bytes of the agent's device." },
        { "harmonia_agent_used_bytes", "gauge", "Used bytes of the agent's device." },
        { "harmonia_agent_read_bandwidth", "gauge",
          "Bytes/s read from the device by stage-outs over the last interval." },
        { "harmonia_agent_write_bandwidth", "gauge",
          "Bytes/s written to the device by stage-ins over the last interval." },
        { "harmonia_agent_queue", "gauge", "Transfers in the agent's mover." },
        { "harmonia_agent_errors_total", "counter",
          "Failed transfers and device errors reported by the agent." },
        { "harmonia_agent_report_age_seconds", "gauge", "Seconds since the agent's last report." },
        { "harmonia_agent_foreign_bandwidth", "gauge",
          "Bytes/s of I/O on the device that is neither the agent's nor granted by bbmgrd (0: "
          "unknown)." },
        { "harmonia_agent_available_bandwidth", "gauge",
          "Bytes/s the scheduler counts on for the node." },
        { "harmonia_agent_bytes_total", "counter",
          "Bytes copied by the agent's transfers (also in harmonia_mover_bytes_total)." },
    };
    double now = hu_mono();
    for (size_t k = 0; k < sizeof(m) / sizeof(*m); k++) {
        sb(&b, "# HELP %s %s\n# TYPE %s %s\n", m[k].name, m[k].help, m[k].name, m[k].type);
        for (int a = 0; a < G.n; a++) {
            const agent_t *g = &G.v[a];
            double v = 0;
            switch (k) {
            case 0:
                v = !g->down && g->seen;
                break;
            case 1:
                v = g->st.busy;
                break;
            case 2:
                v = (double)g->st.free_bytes;
                break;
            case 3:
                v = (double)g->st.used_bytes;
                break;
            case 4:
                v = g->st.read_bw;
                break;
            case 5:
                v = g->st.write_bw;
                break;
            case 6:
                v = g->st.queue;
                break;
            case 7:
                v = (double)g->st.errors;
                break;
            case 8:
                v = now - g->last_seen;
                break;
            case 9:
                v = g->foreign;
                break;
            case 10:
                v = g->available;
                break;
            default:
                v = (double)g->bytes;
                break;
            }
            sb(&b, "%s{node=\"%s\"} %.17g\n", m[k].name, g->name, v);
        }
    }
    sb(&b,
       "# HELP harmonia_agent_down_total Times an agent was marked down.\n"
       "# TYPE harmonia_agent_down_total counter\nharmonia_agent_down_total %ju\n",
       (uintmax_t)G.down_events);
    return b.buf;
}

/* ------------------------------------------------------------------ bandwidth */
static double conf_bandwidth(core_t *c, const char *name)
{
    for (int s = 0; s < c->cfg->nnodes; s++)
        for (int i = 0; i < c->cfg->nodes[s].names.n; i++)
            if (!strcmp(c->cfg->nodes[s].names.v[i], name))
                return c->cfg->nodes[s].bandwidth;
    return 0;
}

/* The scheduler counts on what the device has left: the configured bandwidth less
 * the I/O the agent measured on the device that it did not make itself and that
 * bbmgrd did not grant (the jobs' phases on the node: a job writing into its
 * buffer at its granted rate is not another writer), never below BW_FLOOR of it.
 * The grants are those of now or of the previous report, whichever is larger (the
 * device's figures are of the interval between them: a phase that ended in it
 * still wrote in it); the other I/O is the least of the last BW_REPORTS reports'.  Changes smaller than BW_STEP of it are ignored; the scheduler
 * is rebuilt with the changed values at most every BW_HOLD seconds, one rebuild
 * for all the nodes that changed meanwhile. */
#define BW_FLOOR 0.1
#define BW_STEP 0.1
#define BW_HOLD 1.0

static void bandwidth_flush(core_t *c)
{
    double now = hu_mono();
    int last = -1;
    if (now - G.bw_rebuilt < BW_HOLD)
        return;
    for (int a = 0; a < G.n; a++) {
        agent_t *g = &G.v[a];
        int idx = core_node_index(c, g->name);
        if (!g->bw_pending || idx < 0)
            continue;
        g->bw_pending = false;
        bl_info("buffer node %s: %.0f MB/s of other I/O on its device: the scheduler counts "
                "on %.0f MB/s",
                g->name, g->foreign / 1e6, g->available / 1e6);
        if (last >= 0) /* every one but the last: the last one's rebuild takes them */
            c->nodes[core_node_index(c, G.v[last].name)].bandwidth = G.v[last].available;
        last = a;
    }
    if (last >= 0) {
        G.cb.set_bandwidth(c, core_node_index(c, G.v[last].name), G.v[last].available);
        G.bw_rebuilt = now;
    }
}

static void apply_bandwidth(core_t *c, int a)
{
    agent_t *g = &G.v[a];
    int idx = core_node_index(c, g->name);
    double conf = conf_bandwidth(c, g->name);
    if (idx < 0 || !(conf > 0))
        return;
    G.cb.loads(c);
    double granted = c->nodes[idx].load;
    g->fhist[g->nf++ % BW_REPORTS] = fmax(0, np_status_foreign(&g->st) - fmax(granted, g->granted));
    g->granted = granted;
    g->foreign = g->fhist[0];
    for (unsigned k = 1; k < BW_REPORTS && k < g->nf; k++)
        g->foreign = fmin(g->foreign, g->fhist[k]);
    g->available = fmax(BW_FLOOR * conf, conf - g->foreign);
    g->bw_pending = fabs(g->available - c->nodes[idx].bandwidth) >= BW_STEP * conf;
    bandwidth_flush(c);
}
