/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_alloc.c — buffer nodes and pools, placement of allocations, persistent
 * buffers, draining, and reconfiguration.
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
#include "nodes.h"
#include "log.h"

/* ------------------------------------------------------------------ nodes */
int core_node_add(core_t *c, const char *name, const cfg_nodeset_t *ns, bool in_config)
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
        n->bandwidth = n->bw_conf = ns->bandwidth;
        n->pool = cfg_pool_index(c->cfg, ns->pool);
        n->device = *ns->device ? cfg_device_index(c->cfg, ns->device) : -1;
        n->mount = cfg_node_mount(ns->mount, name);
    } else {
        n->pool = 0;
        n->bandwidth = n->bw_conf = 1e9;
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

int core_pools_load(core_t *c, const cfg_t *cfg)
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

/* ------------------------------------------------------------------ allocation */
typedef struct {
    int idx;
    int avail; /* tenths of its configured bandwidth the device has left */
    uint64_t free;
} cand_t;

/* Nodes whose devices have the most of their bandwidth left first (an agent
 * measures the other I/O on its device: doc/bbnoded.md; a node without an agent
 * has all of it), then the most free space, then the order of the configuration. */
static int cand_cmp(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    if (x->avail != y->avail)
        return y->avail - x->avail;
    if (x->free != y->free)
        return x->free > y->free ? -1 : 1;
    return x->idx - y->idx;
}

static int node_avail(const node_t *n)
{
    double f = n->bw_conf > 0 ? n->bandwidth / n->bw_conf : 1;
    return f >= 1 ? 10 : (int)lround(f * 10);
}

static uint64_t round_up(uint64_t v, uint64_t g)
{
    if (g <= 1)
        return v;
    return (v + g - 1) / g * g;
}

/* Place capacity bytes on nodes of pool p (see doc/api.md "Allocation"). */
static int place(core_t *c, uint64_t capacity, int nodes, int p, const char *field, alloc_t *out,
                 cerr_t *e)
{
    uint64_t gran = c->pools[p].granularity, maxcap = 0, total = 0, free_total = 0;
    int ncand = 0, npool = 0, rc = -1;
    size_t nn = (size_t)(c->nnodes ? c->nnodes : 1);
    cand_t *cand = calloc(nn, sizeof(cand_t));
    int *pick = calloc(nn, sizeof(int));

    if (!cand || !pick) {
        rc = core_cerr_set(e, ENOMEM, "", "out of memory");
        goto done;
    }
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
        cand[ncand].avail = node_avail(n);
        cand[ncand].free = n->capacity > n->used ? n->capacity - n->used : 0;
        free_total += cand[ncand].free;
        ncand++;
    }
    if (npool == 0) {
        rc = core_cerr_set(e, EDOM, "pool", "pool %s has no nodes", c->pools[p].name);
        goto done;
    }
    if (capacity > total || (nodes > 0 && nodes > npool)) {
        rc = core_cerr_set(e, EDOM, capacity > total ? field : "nodes",
                           "pool %s can never hold it: %d nodes, %ju bytes in all",
                           c->pools[p].name, npool, (uintmax_t)total);
        goto done;
    }
    int n_min = (int)((capacity + maxcap - 1) / maxcap);
    if (nodes > n_min)
        n_min = nodes;
    int n_target = (int)ceil(n_min * c->cfg->policy_overprovision - 1e-9);
    if (n_target > ncand)
        n_target = ncand;
    if (n_target < n_min)
        n_target = n_min;
    qsort(cand, (size_t)ncand, sizeof(cand_t), cand_cmp);
    for (int n = n_target; n >= n_min; n--) {
        uint64_t per = round_up((capacity + (uint64_t)n - 1) / (uint64_t)n, gran);
        int fit = 0; /* the first n in that order that have per bytes free */
        for (int k = 0; k < ncand && fit < n; k++)
            if (cand[k].free >= per)
                pick[fit++] = cand[k].idx;
        if (fit < n)
            continue;
        if (!(out->v = calloc((size_t)n, sizeof(anode_t)))) {
            rc = core_cerr_set(e, ENOMEM, "", "out of memory");
            goto done;
        }
        out->n = n;
        out->capacity = capacity;
        out->reserved = per * (uint64_t)n;
        snprintf(out->pool, sizeof(out->pool), "%s", c->pools[p].name);
        for (int k = 0; k < n; k++) {
            out->v[k].node = pick[k];
            out->v[k].bytes = per;
        }
        /* stable order by node index for display */
        for (int a = 1; a < n; a++)
            for (int b = a; b > 0 && out->v[b].node < out->v[b - 1].node; b--) {
                anode_t t = out->v[b];
                out->v[b] = out->v[b - 1];
                out->v[b - 1] = t;
            }
        rc = 0;
        goto done;
    }
    rc = core_cerr_set(e, ENOSPC, field,
                       "pool %s cannot hold %ju bytes on %d node(s) now "
                       "(%d nodes up, %ju bytes free)",
                       c->pools[p].name, (uintmax_t)capacity, n_min, ncand, (uintmax_t)free_total);
done:
    free(cand);
    free(pick);
    return rc;
}

static void alloc_take(core_t *c, alloc_t *a)
{
    for (int i = 0; i < a->n; i++) {
        c->nodes[a->v[i].node].used += a->v[i].bytes;
        c->nodes[a->v[i].node].nallocs++;
    }
}

/* Node lost of j's allocation is down: its share goes to another node of the pool
 * that has room for it — one not in the allocation first (the allocation keeps its
 * width), in the placement's order, else a surviving node of the allocation — and
 * the job's directory is made there.  The new node's index, or -1 when none can
 * take it (the allocation is then unchanged). */
int core_alloc_move_share(core_t *c, job_t *j, int lost)
{
    alloc_t *a = j->alloc;
    int k = 0, best = -1, p = a ? pool_index(c, a->pool) : -1;
    cand_t bc = { 0 };
    bool bin = false;
    while (a && k < a->n && a->v[k].node != lost)
        k++;
    if (!a || k == a->n || p < 0)
        return -1;
    uint64_t bytes = a->v[k].bytes;
    for (int i = 0; i < c->nnodes; i++) {
        node_t *n = &c->nodes[i];
        bool in = false;
        if (i == lost || n->pool != p || !n->in_config || n->drained
            || n->used + bytes > n->capacity)
            continue;
        for (int q = 0; q < a->n && !in; q++)
            in = a->v[q].node == i;
        cand_t ci = { .idx = i, .avail = node_avail(n), .free = n->capacity - n->used };
        if (best < 0 || (bin && !in) || (bin == in && cand_cmp(&ci, &bc) < 0)) {
            best = i;
            bc = ci;
            bin = in;
        }
    }
    if (best < 0)
        return -1;
    c->nodes[lost].used -= bytes < c->nodes[lost].used ? bytes : c->nodes[lost].used;
    c->nodes[lost].nallocs--;
    c->nodes[best].used += bytes;
    if (bin) { /* a surviving node takes it on, in its place: one fewer */
        int q = 0;
        while (a->v[q].node != best)
            q++;
        a->v[q].bytes += bytes;
        a->v[k] = a->v[q];
        memmove(&a->v[q], &a->v[q + 1], (size_t)(a->n - q - 1) * sizeof(anode_t));
        a->n--;
    } else {
        alloc_t one = { .n = 1, .v = &a->v[k] };
        c->nodes[best].nallocs++;
        a->v[k].node = best;
        a->v[k].dirgen = 0;
        /* in the lost node's place: the first node is where $HARMONIA_BB is, and the
         * state keeps this order (core_put_anodes) */
        core_bufdirs_make(c, &one, false, j->id, j->uid, j->gid);
    }
    core_put_anodes(c, "job", j->id, a);
    return best;
}

static int pool_resolve(core_t *c, const char *pool, cerr_t *e)
{
    int p;
    if (pool && *pool) {
        if ((p = pool_index(c, pool)) < 0)
            return core_cerr_set(e, ENOENT, "pool", "no pool named '%s'", pool);
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
            return 0; /* the same request again: idempotent */
        return core_cerr_set(e, EEXIST, "capacity",
                             "job %s already has an allocation (%ju bytes in "
                             "pool %s): release it first",
                             j->id, (uintmax_t)j->alloc->capacity, j->alloc->pool);
    }
    alloc_t *a = calloc(1, sizeof(*a));
    if (!a)
        return core_cerr_set(e, ENOMEM, "", "out of memory");
    if (place(c, capacity, nodes, p, "capacity", a, e) < 0) {
        free(a);
        return -1;
    }
    if (core_bufdirs_check(c, a, e) < 0) {
        free(a->v);
        free(a);
        return -1;
    }
    a->nodes_requested = nodes > 0 ? nodes : 0;
    a->created = core_wall();
    alloc_take(c, a);
    j->alloc = a;
    state_put(c->st, ST_ALLOC_PUT, "ssiiid", j->id, a->pool, (int64_t)a->capacity,
              (int64_t)a->reserved, (int64_t)a->nodes_requested, a->created);
    core_put_anodes(c, "job", j->id, a);
    core_bufdirs_make(c, a, false, j->id, j->uid, j->gid);
    bl_debug("allocation: job %s gets %ju bytes on %d node(s) of pool %s", j->id,
             (uintmax_t)a->reserved, a->n, a->pool);
    *created = true;
    return 0;
}

int core_alloc_release(core_t *c, job_t *j, cerr_t *e)
{
    if (!j->alloc)
        return core_cerr_set(e, ENOENT, "", "job %s has no allocation", j->id);
    return core_bufdir_alloc_release(c, j);
}

/* ------------------------------------------------------------------ persistent */
pbuf_t *core_pbuf_create(core_t *c, const char *name, uid_t uid, gid_t gid, uint64_t capacity,
                         const char *pool, bool *created, cerr_t *e)
{
    pbuf_t *b = hmap_get(c->pbufs, name);
    int p;
    *created = false;
    if ((p = pool_resolve(c, pool, e)) < 0)
        return NULL;
    if (b) {
        if (b->uid == uid && b->alloc.capacity == capacity
            && !strcmp(b->alloc.pool, c->pools[p].name))
            return b; /* idempotent */
        return core_cerr_set(e, EEXIST, "name", "persistent buffer '%s' already exists", name),
               NULL;
    }
    if ((long)hmap_size(c->pbufs) >= c->cfg->limits_max_persistent)
        return core_cerr_set(e, EAGAIN, "", "too many persistent buffers (limits.max_persistent)"),
               NULL;
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
            return core_cerr_set(e, EPERM, "name",
                                 "uid %u already owns %ld persistent buffer(s) "
                                 "(limits.persistent_per_user = %ld)",
                                 (unsigned)uid, n, c->cfg->limits_persistent_per_user),
                   NULL;
        if (lim && (capacity > lim || cap > lim - capacity))
            return core_cerr_set(e, EPERM, "capacity",
                                 "uid %u owns persistent buffers of %ju bytes: "
                                 "%ju more exceeds limits.persistent_capacity_per_user (%ju bytes)",
                                 (unsigned)uid, (uintmax_t)cap, (uintmax_t)capacity,
                                 (uintmax_t)lim),
                   NULL;
    }
    if (!(b = calloc(1, sizeof(*b))))
        return core_cerr_set(e, ENOMEM, "", "out of memory"), NULL;
    snprintf(b->name, sizeof(b->name), "%s", name);
    b->uid = uid;
    b->gid = gid;
    if (place(c, capacity, 0, p, "capacity", &b->alloc, e) < 0) {
        free(b);
        return NULL;
    }
    if (core_bufdirs_check(c, &b->alloc, e) < 0) {
        core_pbuf_free(b);
        return NULL;
    }
    b->created = b->alloc.created = core_wall();
    if (hmap_put(c->pbufs, b->name, b) < 0) {
        core_pbuf_free(b);
        return core_cerr_set(e, ENOMEM, "", "out of memory"), NULL;
    }
    alloc_take(c, &b->alloc);
    state_put(c->st, ST_PERS_PUT, "siisiid", b->name, (int64_t)uid, (int64_t)gid, b->alloc.pool,
              (int64_t)capacity, (int64_t)b->alloc.reserved, b->created);
    core_put_anodes(c, "persistent", b->name, &b->alloc);
    core_bufdirs_make(c, &b->alloc, true, b->name, b->uid, b->gid);
    *created = true;
    return b;
}

int core_pbuf_destroy(core_t *c, pbuf_t *b, cerr_t *e)
{
    if (b->nusers > 0)
        return core_cerr_set(e, EBUSY, "name", "persistent buffer '%s' is used by job %s", b->name,
                             b->users[0]);
    core_bufdirs_remove(c, &b->alloc, true, b->name, NULL, b->uid, b->gid);
    if (!core_pbuf_hold(c, b))
        core_alloc_free_nodes(c, &b->alloc);
    state_put(c->st, ST_PERS_DEL, "s", b->name);
    state_put(c->st, ST_ANODE_DEL, "ss", "persistent", b->name);
    state_put(c->st, ST_PUSE_DEL_NAME, "s", b->name);
    hmap_del(c->pbufs, b->name);
    core_pbuf_free(b);
    return 0;
}

int core_pbuf_use(core_t *c, pbuf_t *b, job_t *j, cerr_t *e)
{
    for (int i = 0; i < b->nusers; i++)
        if (!strcmp(b->users[i], j->id))
            return 0;
    if (core_strv_add(&b->users, &b->nusers, j->id) < 0
        || core_strv_add(&j->uses, &j->nuses, b->name) < 0)
        return core_cerr_set(e, ENOMEM, "", "out of memory");
    state_put(c->st, ST_PUSE_PUT, "ssd", b->name, j->id, core_wall());
    return 0;
}

int core_pbuf_unuse(core_t *c, pbuf_t *b, job_t *j, cerr_t *e)
{
    if (!core_strv_del(b->users, &b->nusers, j->id))
        return core_cerr_set(e, ENOENT, "", "job %s does not use '%s'", j->id, b->name);
    core_strv_del(j->uses, &j->nuses, b->name);
    state_put(c->st, ST_PUSE_DEL, "ss", b->name, j->id);
    return 0;
}

/* ------------------------------------------------------------------ nodes */
int core_node_drain(core_t *c, int idx, bool drain, const char *reason, cerr_t *e)
{
    node_t *n = &c->nodes[idx];
    if (!drain && !n->in_config)
        return core_cerr_set(e, EBUSY, "", "node %s is not in the configuration", n->name);
    n->drained = drain;
    free(n->reason);
    n->reason = drain && reason ? strdup(reason) : NULL;
    core_put_node(c, idx);
    bl_info("node %s %s%s%s", n->name, drain ? "drained" : "resumed", drain && reason ? ": " : "",
            drain && reason ? reason : "");
    return 0;
}

int core_node_set_bandwidth(core_t *c, int idx, double bw)
{
    hu_error_t err = { "" };
    double old = c->nodes[idx].bandwidth;
    c->nodes[idx].bandwidth = bw;
    if (core_sched_build(c, &err) < 0) {
        c->nodes[idx].bandwidth = old;
        bl_error("node %s: scheduler kept at %.0f B/s: %s", c->nodes[idx].name, old, err.text);
        return -1;
    }
    core_reschedule(c, core_hs_now(c));
    return 0;
}

/* ------------------------------------------------------------------ reconfigure */
int core_reconfigure(core_t *c, cfg_t *nc, hu_error_t *err)
{
    char restart[512];
    hs_policy_t pol;
    hu_error_t herr = { "" };

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
                if ((idx = core_node_add(c, ns->names.v[k], ns, true)) < 0)
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
            n->bandwidth = n->bw_conf = ns->bandwidth;
            n->pool = pool_index(c, ns->pool);
            n->device = *ns->device ? cfg_device_index(nc, ns->device) : -1;
            n->in_config = true;
            if (n->reason && !strcmp(n->reason, "removed from the configuration")) {
                n->drained = false;
                free(n->reason);
                n->reason = NULL;
                core_put_node(c, idx);
            }
        }
    }
    for (int i = 0; i < c->nnodes; i++) {
        node_t *n = &c->nodes[i];
        if (!n->in_config
            && !(n->drained && n->reason && !strcmp(n->reason, "removed from the configuration"))) {
            n->drained = true;
            free(n->reason);
            n->reason = strdup("removed from the configuration");
            core_put_node(c, i);
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
    /* the starvation bound follows the file, whatever the policy */
    bool bound_changed = old->policy_starve_factor != nc->policy_starve_factor
                         || old->policy_starve_floor != nc->policy_starve_floor
                         || old->policy_decision_budget != nc->policy_decision_budget;
    core_policy_bound(nc, &c->policy);
    if (bound_changed && !(changed || policy_changed)) {
        hu_error_t herr2 = { "" };
        if (hs_sched_set_policy(c->sched, core_hs_now(c), &c->policy, &herr2) < 0)
            bl_error("reload: starvation bound: %s (kept the previous one)", herr2.text);
    }
    if (changed || policy_changed) {
        hs_policy_t prev = c->policy;
        if (core_sched_build(c, err) < 0) {
            c->policy = prev;
            core_unlock(c);
            bl_error("reload: scheduler: %s (kept the previous scheduler)", err->text);
            cfg_destroy(old);
            return 0;
        }
    }
    core_reschedule(c, core_hs_now(c));
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
