/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * workload.c — strict loader of bbsim workload files.
 *
 * Two steps: libyaml's event stream is turned into a small tree that keeps the
 * 1-based line and column of every node (anchors, aliases, several documents and
 * nesting deeper than WL_MAX_DEPTH are refused there); then a schema walk over that
 * tree fills a wl_t, refusing anything it does not know with "FILE:LINE:COL: reason".
 * The walk only follows the schema, so its cost is linear in the size of the input.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhsched/hsched.h"
#include "libhutil/hu_hostlist.h"
#include "libhutil/hutil.h"
#include "rng.h"
#include "workload.h"
#include "workload_yaml.h"

/* ---------------------------------------------------------------- sections */

/* An array of zeroed items of size bytes, one per node of the sequence seq; NULL,
 * and "out of memory" at seq into c->err, when there is no room. */
static void *items_of(ctx_t *c, const hu_ynode_t *seq, size_t size)
{
    void *v = calloc(seq->n, size);
    if (!v) {
        errno = ENOMEM;
        fail(c, seq, "out of memory");
    }
    return v;
}

/* Item i of the list 'list': its place, "list[i]", into where (len bytes); it must
 * be a mapping whose keys are among keys, else -1 with the error in c->err. */
static int map_item(ctx_t *c, const hu_ynode_t *item, const char *list, size_t i,
                    const char *const *keys, char *where, size_t len)
{
    snprintf(where, len, "%s[%zu]", list, i);
    if (wl_need_type(c, item, HU_YAML_MAP, where) < 0 || wl_check_keys(c, item, keys, where) < 0)
        return -1;
    return 0;
}

static int parse_buffers(ctx_t *c, const hu_ynode_t *n, wl_platform_t *p)
{
    static const char *const keys[] = { "name", "capacity", "bandwidth", "device", "count", NULL };
    char where[64];
    long v;

    if (wl_need_type(c, n, HU_YAML_SEQ, "buffers") < 0)
        return -1;
    p->buffers_line = n->line;
    p->buffers_col = n->col;
    if (n->n == 0)
        return 0;
    if (!(p->buffers = items_of(c, n, sizeof(*p->buffers))))
        return -1;
    for (size_t i = 0; i < n->n; i++) {
        const hu_ynode_t *b = n->kids[i];
        wl_buffer_t *bb = &p->buffers[p->nbuffers++];
        const hu_ynode_t *x;
        bb->line = b->line;
        bb->col = b->col;
        bb->count = 1;
        if (map_item(c, b, "buffers", i, keys, where, sizeof(where)) < 0)
            return -1;
        if (!(x = wl_need(c, b, "name", where)) || wl_parse_string(c, x, "name", &bb->name) < 0)
            return -1;
        if (wl_need_quantity(c, b, "capacity", where, Q_SIZE, true, &bb->capacity) < 0)
            return -1;
        if (wl_need_quantity(c, b, "bandwidth", where, Q_BANDWIDTH, true, &bb->bandwidth) < 0)
            return -1;
        if ((x = hu_ymap_get(b, "device")) && wl_parse_string(c, x, "device", &bb->device) < 0)
            return -1;
        if ((x = hu_ymap_get(b, "count"))) {
            if (wl_parse_int(c, x, "count", 1, 4096, &v) < 0)
                return -1;
            bb->count = (int)v;
        }
        /* the nodes of this entry: a host list, or name1..nameN with 'count' */
        {
            char **names = NULL;
            const char *why = NULL;
            const hu_ynode_t *nm = hu_ymap_get(b, "name");
            int k = wl_hostlist(bb->name, &names, &why);
            bool listed = strchr(bb->name, '[') || strchr(bb->name, ',');
            if (k < 0)
                return fail(c, nm, "bad host list '%s': %s", bb->name, why);
            if (listed && hu_ymap_get(b, "count") && bb->count != k) {
                hu_hostlist_free(names, k);
                return fail(c, hu_ymap_get(b, "count"),
                            "count is %d but '%s' names %d "
                            "node(s)",
                            bb->count, bb->name, k);
            }
            if (!listed && bb->count > 1) {
                hu_hostlist_free(names, k);
                names = NULL;
                k = 0;
                if (!(names = calloc((size_t)bb->count, sizeof(*names)))) {
                    errno = ENOMEM;
                    return fail(c, nm, "out of memory");
                }
                for (int q = 1; q <= bb->count; q++, k++) {
                    char nb[160];
                    snprintf(nb, sizeof(nb), "%s%d", bb->name, q);
                    if (!(names[k] = strdup(nb))) {
                        hu_hostlist_free(names, k);
                        errno = ENOMEM;
                        return fail(c, nm, "out of memory");
                    }
                }
            }
            bb->count = k;
            if (p->nbnodes + k > WL_MAX_BUFFER_NODES) {
                hu_hostlist_free(names, k);
                return fail(c, nm, "more than %d buffer nodes", WL_MAX_BUFFER_NODES);
            }
            {
                wl_bnode_t *nv = realloc(p->bnodes, (size_t)(p->nbnodes + k) * sizeof(*nv));
                if (!nv) {
                    hu_hostlist_free(names, k);
                    errno = ENOMEM;
                    return fail(c, nm, "out of memory");
                }
                p->bnodes = nv;
            }
            for (int q = 0; q < k; q++) {
                for (int o = 0; o < p->nbnodes; o++) {
                    if (!strcmp(p->bnodes[o].name, names[q])) {
                        int line = p->buffers[p->bnodes[o].entry].line;
                        const char *dup = names[q];
                        int rc = fail(c, nm,
                                      "duplicate buffer node '%s' (first at "
                                      "line %d)",
                                      dup, line);
                        hu_hostlist_free(names, k);
                        return rc;
                    }
                }
                p->bnodes[p->nbnodes].name = names[q];
                p->bnodes[p->nbnodes].entry = (int)i;
                p->nbnodes++;
                names[q] = NULL;
            }
            free(names);
        }
    }
    return 0;
}

/* MSCA values: numbers > -1, MSCA(1) = 0, at most 16. */
static int parse_msca(ctx_t *c, const hu_ynode_t *x, const char *what, double *out, int *nout)
{
    if (wl_need_type(c, x, HU_YAML_SEQ, what) < 0)
        return -1;
    if (x->n == 0)
        return fail(c, x, "'%s' is an empty list", what);
    if (x->n > 16)
        return fail(c, x, "'%s' has %zu values; at most 16", what, x->n);
    for (size_t j = 0; j < x->n; j++) {
        const hu_ynode_t *m = x->kids[j];
        char *end;
        double v;
        if (m->type != HU_YAML_SCALAR || m->len == 0)
            return fail(c, m, "'%s' values must be numbers > -1", what);
        errno = 0;
        v = strtod(m->str, &end);
        if (*end != '\0' || errno == ERANGE || !isfinite(v) || !(v > -1))
            return fail(c, m, "'%s' values must be numbers > -1", what);
        if (j == 0 && v != 0)
            return fail(c, m,
                        "'%s' starts with MSCA(1), which is 0 by definition "
                        "(BW(1)/BW(1) - 1)",
                        what);
        out[j] = v;
    }
    *nout = (int)x->n;
    return 0;
}

static int parse_devices(ctx_t *c, const hu_ynode_t *n, wl_platform_t *p)
{
    static const char *const keys[] = { "name", "msca", "msca_read", NULL };
    static const char *const builtin[] = WL_BUILTIN_DEVICES;
    char where[64];

    if (wl_need_type(c, n, HU_YAML_SEQ, "devices") < 0)
        return -1;
    if (n->n == 0)
        return 0;
    if (!(p->devices = items_of(c, n, sizeof(*p->devices))))
        return -1;
    for (size_t i = 0; i < n->n; i++) {
        const hu_ynode_t *d = n->kids[i];
        wl_device_t *dd = &p->devices[p->ndevices++];
        const hu_ynode_t *x;
        dd->line = d->line;
        dd->col = d->col;
        if (map_item(c, d, "devices", i, keys, where, sizeof(where)) < 0)
            return -1;
        if (!(x = wl_need(c, d, "name", where)) || wl_parse_string(c, x, "name", &dd->name) < 0)
            return -1;
        for (int q = 0; q < p->ndevices - 1; q++) {
            if (!strcmp(p->devices[q].name, dd->name))
                return fail(c, x, "duplicate device '%s' (first at line %d)", dd->name,
                            p->devices[q].line);
        }
        if ((x = hu_ymap_get(d, "msca")) && parse_msca(c, x, "msca", dd->msca, &dd->nmsca) < 0)
            return -1;
        if ((x = hu_ymap_get(d, "msca_read"))
            && parse_msca(c, x, "msca_read", dd->msca_read, &dd->nmsca_read) < 0)
            return -1;
        if (!hu_ymap_get(d, "msca")) {
            bool known = false;
            for (int q = 0; builtin[q]; q++)
                known = known || !strcmp(builtin[q], dd->name);
            if (!known)
                return fail(c, d,
                            "device '%s' needs 'msca' (its MSCA curve, "
                            "MSCA(c) for c = 1..16); built-in types are nvme, ssd "
                            "and hdd",
                            dd->name);
        }
    }
    return 0;
}

static int check_buffer_devices(ctx_t *c, const wl_platform_t *p)
{
    static const char *const builtin[] = WL_BUILTIN_DEVICES;
    for (int i = 0; i < p->nbuffers; i++) {
        bool found = p->buffers[i].device == NULL;
        for (int j = 0; builtin[j] && !found; j++)
            found = !strcmp(p->buffers[i].device, builtin[j]);
        for (int j = 0; j < p->ndevices && !found; j++)
            found = !strcmp(p->buffers[i].device, p->devices[j].name);
        if (!found)
            return wl_fail_at(c, p->buffers[i].line, p->buffers[i].col,
                              "buffers[%d]: unknown device '%s' (not in 'devices:' "
                              "and not one of nvme, ssd, hdd)",
                              i, p->buffers[i].device);
    }
    return 0;
}

static int parse_platform(ctx_t *c, const hu_ynode_t *n, wl_platform_t *p)
{
    static const char *const keys[] = { "nodes",   "node_bandwidth",    "bandwidth", "buffers",
                                        "devices", "over_provisioning", NULL };
    const hu_ynode_t *x;
    long v;

    if (wl_need_type(c, n, HU_YAML_MAP, "platform") < 0
        || wl_check_keys(c, n, keys, "platform") < 0)
        return -1;
    if (!(x = wl_need(c, n, "nodes", "platform"))
        || wl_parse_int(c, x, "nodes", 1, 100000000, &v) < 0)
        return -1;
    p->nodes = (int)v;
    if (wl_need_quantity(c, n, "node_bandwidth", "platform", Q_BANDWIDTH, true, &p->node_bw) < 0)
        return -1;
    if (wl_need_quantity(c, n, "bandwidth", "platform", Q_BANDWIDTH, true, &p->bw) < 0)
        return -1;
    if ((x = hu_ymap_get(n, "buffers")) && parse_buffers(c, x, p) < 0)
        return -1;
    if ((x = hu_ymap_get(n, "devices")) && parse_devices(c, x, p) < 0)
        return -1;
    if (check_buffer_devices(c, p) < 0)
        return -1;
    if ((x = hu_ymap_get(n, "over_provisioning"))) {
        char *end;
        if (x->type != HU_YAML_SCALAR || x->len == 0)
            return fail(c, x, "'over_provisioning' must be a number >= 1");
        errno = 0;
        p->overprovision = strtod(x->str, &end);
        if (*end != '\0' || errno == ERANGE || !isfinite(p->overprovision)
            || !(p->overprovision >= 1) || p->overprovision > 1000)
            return fail(c, x, "'over_provisioning' must be a number in [1, 1000]");
        if (p->nbuffers == 0)
            return fail(c, wl_key_node(n, "over_provisioning"),
                        "'over_provisioning' "
                        "needs 'buffers:'");
    }
    return 0;
}

static int parse_app(ctx_t *c, const hu_ynode_t *n, size_t idx, const wl_platform_t *p, wl_app_t *a)
{
    static const char *const keys[] = { "name",   "nodes",     "release",         "iterations",
                                        "w",      "io_volume", "count",           "io",
                                        "w_iter", "priority",  "buffer_capacity", "buffer_nodes",
                                        NULL };
    char where[64];
    const hu_ynode_t *x;
    long v;

    a->line = n->line;
    a->col = n->col;
    a->count = 1;
    if (map_item(c, n, "apps", idx, keys, where, sizeof(where)) < 0)
        return -1;
    if (!(x = wl_need(c, n, "name", where)) || wl_parse_string(c, x, "name", &a->name) < 0)
        return -1;
    if (!(x = wl_need(c, n, "nodes", where)) || wl_parse_int(c, x, "nodes", 1, 100000000, &v) < 0)
        return -1;
    if (v > p->nodes)
        return fail(c, x, "app '%s' needs %ld nodes but the platform has %d", a->name, v, p->nodes);
    a->nodes = (int)v;
    if ((x = hu_ymap_get(n, "release"))) {
        if (wl_parse_dist(c, x, Q_DURATION, "release", false, &a->release) < 0)
            return -1;
    }
    if (!(x = wl_need(c, n, "w", where)) || wl_parse_value(c, x, Q_DURATION, "w", false, &a->w) < 0)
        return -1;
    if (!(x = wl_need(c, n, "io_volume", where))
        || wl_parse_value(c, x, Q_SIZE, "io_volume", true, &a->volume) < 0)
        return -1;
    if ((x = hu_ymap_get(n, "iterations"))) {
        if (wl_parse_int(c, x, "iterations", 1, WL_MAX_ITERATIONS, &v) < 0)
            return -1;
        a->iterations = (int)v;
    }
    if (a->w.nlist && a->volume.nlist && a->w.nlist != a->volume.nlist)
        return fail(c, hu_ymap_get(n, "io_volume"),
                    "%s: 'w' has %d values but "
                    "'io_volume' has %d",
                    where, a->w.nlist, a->volume.nlist);
    if (a->iterations == 0) {
        a->iterations = a->w.nlist ? a->w.nlist : a->volume.nlist;
        if (a->iterations == 0)
            return fail(c, n, "missing key 'iterations' in %s", where);
    } else if (a->w.nlist && a->w.nlist != a->iterations)
        return fail(c, hu_ymap_get(n, "w"), "%s: 'w' has %d values but iterations is %d", where,
                    a->w.nlist, a->iterations);
    else if (a->volume.nlist && a->volume.nlist != a->iterations)
        return fail(c, hu_ymap_get(n, "io_volume"),
                    "%s: 'io_volume' has %d values but "
                    "iterations is %d",
                    where, a->volume.nlist, a->iterations);
    if ((x = hu_ymap_get(n, "count"))) {
        if (wl_parse_int(c, x, "count", 1, WL_MAX_JOBS, &v) < 0)
            return -1;
        a->count = (int)v;
    }
    if ((x = hu_ymap_get(n, "io"))) {
        if (x->type != HU_YAML_SCALAR || (strcmp(x->str, "write") && strcmp(x->str, "read")))
            return fail(c, x, "'io' must be write or read");
        a->io = !strcmp(x->str, "read") ? WL_IO_READ : WL_IO_WRITE;
    }
    if ((x = hu_ymap_get(n, "w_iter"))) {
        if (wl_parse_quantity(c, x, Q_DURATION, "w_iter", true, &a->w_iter) < 0)
            return -1;
    }
    if ((x = hu_ymap_get(n, "priority"))) {
        if (wl_parse_int(c, x, "priority", 1, 10, &v) < 0)
            return -1;
        a->priority = (int)v;
    }
    if ((x = hu_ymap_get(n, "buffer_capacity"))) {
        if (p->nbnodes == 0)
            return fail(c, wl_key_node(n, "buffer_capacity"),
                        "%s: 'buffer_capacity' "
                        "needs platform 'buffers:'",
                        where);
        if (wl_parse_quantity(c, x, Q_SIZE, "buffer_capacity", true, &a->buffer_capacity) < 0)
            return -1;
    }
    if ((x = hu_ymap_get(n, "buffer_nodes"))) {
        if (p->nbnodes == 0)
            return fail(c, wl_key_node(n, "buffer_nodes"),
                        "%s: 'buffer_nodes' needs "
                        "platform 'buffers:'",
                        where);
        if (wl_parse_int(c, x, "buffer_nodes", 1, p->nbnodes, &v) < 0)
            return -1;
        a->buffer_nodes = (int)v;
    }
    return 0;
}

/* Optional 'scheduler:' mapping: settings of the policies (doc/workload-format.md). */
static int parse_scheduler(ctx_t *c, const hu_ynode_t *n, wl_t *wl)
{
    static const char *const keys[] = { "period_min",      "auto_candidates",
                                        "auto_objective",  "auto_dilation_factor",
                                        "auto_hysteresis", "auto_interval",
                                        "auto_horizon",    NULL };
    const hu_ynode_t *x;
    char *str = NULL;

    if (wl_need_type(c, n, HU_YAML_MAP, "scheduler") < 0
        || wl_check_keys(c, n, keys, "scheduler") < 0)
        return -1;
    if ((x = hu_ymap_get(n, "period_min"))
        && wl_parse_quantity(c, x, Q_DURATION, "period_min", true, &wl->period_min) < 0)
        return -1;
    if ((x = hu_ymap_get(n, "max_wait"))
        && wl_parse_quantity(c, x, Q_DURATION, "max_wait", true, &wl->max_wait) < 0)
        return -1;
    if ((x = hu_ymap_get(n, "auto_interval"))
        && wl_parse_quantity(c, x, Q_DURATION, "auto_interval", true, &wl->auto_interval) < 0)
        return -1;
    if ((x = hu_ymap_get(n, "auto_horizon"))
        && wl_parse_quantity(c, x, Q_DURATION, "auto_horizon", true, &wl->auto_horizon) < 0)
        return -1;
    if ((x = hu_ymap_get(n, "auto_candidates"))) {
        if (wl_parse_string(c, x, "auto_candidates", &str) < 0)
            return -1;
        snprintf(wl->auto_candidates, sizeof(wl->auto_candidates), "%s", str);
        free(str);
    }
    if ((x = hu_ymap_get(n, "auto_objective"))) {
        if (wl_parse_string(c, x, "auto_objective", &str) < 0)
            return -1;
        if (hs_auto_objective_parse(str, &wl->auto_objective) < 0) {
            free(str);
            return fail(c, x,
                        "'auto_objective' must be syseff, stretch or "
                        "ioslowdown");
        }
        free(str);
    }
    if ((x = hu_ymap_get(n, "auto_dilation_factor"))) {
        char *end;
        errno = 0;
        wl->auto_factor = x->type == HU_YAML_SCALAR ? strtod(x->str, &end) : NAN;
        if (x->type != HU_YAML_SCALAR || *end || errno || !(wl->auto_factor >= 1)
            || wl->auto_factor > 100)
            return fail(c, x, "'auto_dilation_factor' must be a number in [1, 100]");
    }
    if ((x = hu_ymap_get(n, "auto_hysteresis"))) {
        char *end;
        errno = 0;
        wl->auto_hysteresis = x->type == HU_YAML_SCALAR ? strtod(x->str, &end) : NAN;
        if (x->type != HU_YAML_SCALAR || *end || errno || !(wl->auto_hysteresis >= 0)
            || !(wl->auto_hysteresis < 1))
            return fail(c, x, "'auto_hysteresis' must be a number in [0, 1[");
    }
    return 0;
}

static int parse_root(ctx_t *c, const hu_ynode_t *root, wl_t *wl)
{
    static const char *const keys[] = { "platform", "apps", "scheduler", NULL };
    const hu_ynode_t *plat, *apps, *sched;
    double total = 0, nodes = 0;
    long jobs = 0;

    if (root->type != HU_YAML_MAP)
        return fail(c, root,
                    "a workload must be a mapping with 'platform:' and "
                    "'apps:', not %s",
                    wl_type_name(root->type));
    if (wl_check_keys(c, root, keys, "the workload") < 0)
        return -1;
    if (!(plat = hu_ymap_get(root, "platform")))
        return fail(c, root, "missing key 'platform'");
    if (parse_platform(c, plat, &wl->plat) < 0)
        return -1;
    if ((sched = hu_ymap_get(root, "scheduler")) && parse_scheduler(c, sched, wl) < 0)
        return -1;
    if (!(apps = hu_ymap_get(root, "apps")))
        return fail(c, root, "missing key 'apps'");
    if (apps->type != HU_YAML_SEQ)
        return fail(c, apps, "'apps' must be a list, not %s", wl_type_name(apps->type));
    if (apps->n == 0)
        return fail(c, wl_key_node(root, "apps"), "'apps' is empty");
    if (!(wl->apps = items_of(c, apps, sizeof(*wl->apps))))
        return -1;
    for (size_t i = 0; i < apps->n; i++) {
        wl_app_t *a = &wl->apps[wl->napps++];
        if (parse_app(c, apps->kids[i], i, &wl->plat, a) < 0)
            return -1;
        for (int j = 0; j < wl->napps - 1; j++) {
            if (!strcmp(wl->apps[j].name, a->name))
                return fail(c, hu_ymap_get(apps->kids[i], "name"),
                            "duplicate app name "
                            "'%s' (first at line %d)",
                            a->name, wl->apps[j].line);
        }
        jobs += a->count;
        total += (double)a->count * a->iterations;
        /* The model (Gainaru et al. §2.1) gives every job its own nodes for its
         * whole run, all jobs at once: more nodes than the platform has would be
         * a machine that does not exist (and SysEff above 1). */
        nodes += (double)a->count * a->nodes;
        if (nodes > wl->plat.nodes)
            return fail(c, hu_ymap_get(apps->kids[i], "nodes"),
                        "apps need %.0f nodes "
                        "together with app '%s' (nodes x count, summed) but the "
                        "platform has %d: every job keeps its own nodes for its "
                        "whole run",
                        nodes, a->name, wl->plat.nodes);
        if (jobs > WL_MAX_JOBS)
            return fail(c, apps->kids[i], "more than %d jobs in all", WL_MAX_JOBS);
        if (total > WL_MAX_ITERATIONS)
            return fail(c, apps->kids[i],
                        "more than %d iterations in all (count x "
                        "iterations)",
                        WL_MAX_ITERATIONS);
    }
    return 0;
}

/* ---------------------------------------------------------------- public */

static void value_free(wl_value_t *v)
{
    free(v->list);
}

void wl_destroy(wl_t *wl)
{
    int saved = errno;
    if (!wl)
        return;
    for (int i = 0; i < wl->napps; i++) {
        free(wl->apps[i].name);
        value_free(&wl->apps[i].w);
        value_free(&wl->apps[i].volume);
    }
    free(wl->apps);
    for (int i = 0; i < wl->plat.nbuffers; i++) {
        free(wl->plat.buffers[i].name);
        free(wl->plat.buffers[i].device);
    }
    free(wl->plat.buffers);
    for (int i = 0; i < wl->plat.ndevices; i++)
        free(wl->plat.devices[i].name);
    for (int i = 0; i < wl->plat.nbnodes; i++)
        free(wl->plat.bnodes[i].name);
    free(wl->plat.bnodes);
    free(wl->plat.devices);
    free(wl->file);
    free(wl);
    errno = saved;
}

wl_t *wl_load_buffer(const char *buf, size_t len, const char *name, hu_error_t *err)
{
    ctx_t c = { .file = name ? name : "<input>", .err = err, .buf = buf, .len = len };
    hu_ydoc_t *doc = NULL;
    wl_t *wl = NULL;

    if (err)
        err->text[0] = '\0';
    if (!buf && len) {
        errno = EINVAL;
        return NULL;
    }
    if (!(wl = calloc(1, sizeof(*wl))) || !(wl->file = strdup(c.file))) {
        wl_fail_at(&c, 1, 1, "out of memory");
        errno = ENOMEM;
        goto error;
    }
    if (!(doc = wl_yaml_doc(&c)))
        goto error;
    if (parse_root(&c, hu_ydoc_root(doc), wl) < 0)
        goto error;
    hu_ydoc_free(doc);
    return wl;
error:
    hu_ydoc_free(doc);
    wl_destroy(wl);
    if (errno != ENOMEM)
        errno = EINVAL;
    return NULL;
}

wl_t *wl_load_file(const char *path, hu_error_t *err)
{
    FILE *f;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    wl_t *wl;
    bool is_stdin = !strcmp(path, "-");

    if (!(f = is_stdin ? stdin : fopen(path, "r"))) {
        int e = errno;
        if (err)
            snprintf(err->text, sizeof(err->text), "%s: %s", path, strerror(e));
        errno = e;
        return NULL;
    }
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb;
            if (ncap > ((size_t)1 << 31) || !(nb = realloc(buf, ncap))) {
                if (err)
                    snprintf(err->text, sizeof(err->text), "%s: file too large", path);
                free(buf);
                if (!is_stdin)
                    fclose(f);
                errno = EFBIG;
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        int e = errno;
        if (err)
            snprintf(err->text, sizeof(err->text), "%s: %s", path, strerror(e));
        free(buf);
        if (!is_stdin)
            fclose(f);
        errno = e ? e : EIO;
        return NULL;
    }
    if (!is_stdin)
        fclose(f);
    wl = wl_load_buffer(buf, len, is_stdin ? "<stdin>" : path, err);
    free(buf);
    return wl;
}

/* ---------------------------------------------------------------- expansion */

static double draw(rng_t *r, const wl_dist_t *d, bool positive)
{
    double v = d->a;
    int tries = 0;

    switch (d->kind) {
    case WL_DIST_FIXED:
        return d->a;
    case WL_DIST_NORMAL:
        do {
            v = rng_normal(r, d->a, d->b);
        } while ((v < 0 || (positive && v <= 0)) && ++tries < 100);
        if (v < 0 || (positive && v <= 0))
            v = d->a;
        return v;
    case WL_DIST_UNIFORM:
        v = rng_uniform(r, d->a, d->b);
        if (positive && v <= 0)
            v = d->b;
        return v;
    case WL_DIST_EXPONENTIAL:
        do {
            v = rng_exponential(r, d->a);
        } while (positive && v <= 0 && ++tries < 100);
        if (positive && v <= 0)
            v = d->a;
        return v;
    }
    return v;
}

void wl_jobs_destroy(wl_jobs_t *jobs)
{
    int saved = errno;
    if (!jobs)
        return;
    for (int i = 0; i < jobs->njobs; i++) {
        free(jobs->jobs[i].name);
        free(jobs->jobs[i].w);
        free(jobs->jobs[i].volume);
    }
    free(jobs->jobs);
    free(jobs);
    errno = saved;
}

wl_jobs_t *wl_expand(const wl_t *wl, uint64_t seed, hu_error_t *err)
{
    wl_jobs_t *jobs = NULL;
    long total = 0;
    rng_t r;

    if (!wl) {
        errno = EINVAL;
        return NULL;
    }
    for (int i = 0; i < wl->napps; i++)
        total += wl->apps[i].count;
    if (!(jobs = calloc(1, sizeof(*jobs)))
        || !(jobs->jobs = calloc((size_t)total, sizeof(*jobs->jobs))))
        goto nomem;
    rng_seed(&r, seed);
    for (int i = 0; i < wl->napps; i++) {
        const wl_app_t *a = &wl->apps[i];
        for (int k = 0; k < a->count; k++) {
            wl_job_t *j = &jobs->jobs[jobs->njobs++];
            size_t nl = strlen(a->name) + 16;
            if (!(j->name = malloc(nl)))
                goto nomem;
            if (a->count > 1)
                snprintf(j->name, nl, "%s#%d", a->name, k + 1);
            else
                snprintf(j->name, nl, "%s", a->name);
            j->app = i;
            j->nodes = a->nodes;
            j->release = draw(&r, &a->release, false);
            j->iterations = a->iterations;
            j->io = a->io;
            j->w_iter = a->w_iter;
            j->priority = a->priority;
            j->buffer_nodes = a->buffer_nodes;
            if (!(j->w = malloc((size_t)a->iterations * sizeof(double)))
                || !(j->volume = malloc((size_t)a->iterations * sizeof(double))))
                goto nomem;
            for (int it = 0; it < a->iterations; it++) {
                j->w[it] = draw(&r, a->w.nlist ? &a->w.list[it] : &a->w.one, false);
                j->volume[it] =
                    draw(&r, a->volume.nlist ? &a->volume.list[it] : &a->volume.one, true);
                if (j->volume[it] > j->buffer_capacity)
                    j->buffer_capacity = j->volume[it];
            }
            if (a->buffer_capacity > 0)
                j->buffer_capacity = a->buffer_capacity;
        }
    }
    return jobs;
nomem:
    if (err)
        snprintf(err->text, sizeof(err->text),
                 "%s: out of memory expanding the "
                 "workload",
                 wl->file);
    wl_jobs_destroy(jobs);
    errno = ENOMEM;
    return NULL;
}
