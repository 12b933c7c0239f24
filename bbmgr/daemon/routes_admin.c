/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * routes_admin.c — the /v1 routes of the whole daemon (doc/api.md): buffer nodes and
 * pools, the schedule, the policy, status, history, and the batch of requests.
 * Every handler runs with the core lock held.
 */
#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "routes_internal.h"
#include "log.h"
#include "nodes.h"

/* ------------------------------------------------------------------ nodes, pools */
static void h_nodes(core_t *c, hreq_t *rq, reply_t *r)
{
    reply_json(r, 200, json_pack("{s:o}", "nodes", core_nodes_json(c)));
}

static int node_for(core_t *c, hreq_t *rq, reply_t *r)
{
    int idx = core_node_index(c, rq->args[0]);
    if (idx < 0)
        reply_error(r, 404, "name", "no buffer node %s", rq->args[0]);
    return idx;
}

static void h_node_get(core_t *c, hreq_t *rq, reply_t *r)
{
    int idx = node_for(c, rq, r);
    if (idx >= 0) {
        core_node_loads(c);
        reply_json(r, 200, core_node_json(c, idx));
    }
}

static void node_drain(core_t *c, hreq_t *rq, reply_t *r, bool drain)
{
    static const field_t spec[] = { { "reason", F_STR, false }, { NULL, 0, false } };
    cerr_t e;
    if (!rq_need_admin(rq, r) || !rq_check_body(rq, r, spec, false))
        return;
    int idx = node_for(c, rq, r);
    if (idx < 0)
        return;
    const char *reason = rq_get_str(rq, "reason");
    if (reason && strlen(reason) > 255)
        return (void)reply_error(r, 400, "reason", "at most 255 characters");
    if (core_node_drain(c, idx, drain, reason ? reason : drain ? "drained by admin" : NULL, &e) < 0)
        return reply_cerr(r, &e);
    core_node_loads(c);
    reply_json(r, 200, core_node_json(c, idx));
}

static void h_node_drain(core_t *c, hreq_t *rq, reply_t *r) { node_drain(c, rq, r, true); }
static void h_node_resume(core_t *c, hreq_t *rq, reply_t *r) { node_drain(c, rq, r, false); }

static void h_pools(core_t *c, hreq_t *rq, reply_t *r)
{
    reply_json(r, 200, json_pack("{s:o}", "pools", core_pools_json(c)));
}

static void h_pool_get(core_t *c, hreq_t *rq, reply_t *r)
{
    json_t *p = core_pool_json_named(c, rq->args[0]);
    if (p)
        return reply_json(r, 200, p);
    reply_error(r, 404, "name", "no pool %s", rq->args[0]);
}

/* ------------------------------------------------------------------ schedule, policy */
static void h_schedule(core_t *c, hreq_t *rq, reply_t *r)
{
    const char *h = hreq_query(rq, "horizon");
    double horizon = 600;
    hu_error_t e = { "" };
    if (h && (hu_parse_duration(h, HU_DUR_BARE_SECONDS, &horizon, &e) < 0 || horizon <= 0))
        return (void)reply_error(r, 400, "horizon", "must be a positive duration");
    reply_json(r, 200, core_schedule_json(c, horizon));
}

static void h_policy_get(core_t *c, hreq_t *rq, reply_t *r)
{
    reply_json(r, 200, core_policy_json(c));
}

static void h_policy_set(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "id", F_STR, true }, { NULL, 0, false } };
    cerr_t e;
    if (!rq_need_admin(rq, r) || !rq_check_body(rq, r, spec, true))
        return;
    const char *id = rq_get_str(rq, "id");
    if (strlen(id) > 60)
        return (void)reply_error(r, 400, "id", "too long");
    if (core_set_policy(c, id, &e) < 0)
        return reply_cerr(r, &e);
    h_policy_get(c, rq, r);
}

/* ------------------------------------------------------------------ status, history */
static void h_status(core_t *c, hreq_t *rq, reply_t *r)
{
    json_t *o = core_status_json(c);
    json_object_set_new(o, "version", json_string(PACKAGE_VERSION));
    json_object_set_new(o, "started", json_real(core_started(c)));
    json_object_set_new(o, "uptime", json_real(core_wall() - core_started(c)));
    json_object_set_new(o, "auth", json_string(core_cfg(c)->auth_type));
    json_object_set_new(o, "state", json_pack("{s:s s:i s:I s:b}", "dir", core_cfg(c)->state_dir,
                                              "schema", STATE_SCHEMA_VERSION, "committed",
                                              (json_int_t)state_committed(core_state(c)), "durable",
                                              core_cfg(c)->state_durable));
    json_object_set_new(o, "caller", json_pack("{s:I s:I s:b}", "uid", (json_int_t)rq->who->uid,
                                               "gid", (json_int_t)rq->who->gid, "admin",
                                               rq->who->admin));
    nodes_status_json(c, o);        /* "agents", only when some are configured */
    reply_json(r, 200, o);
}

typedef struct {
    long n;
    double w_iter, volume;
    long nw;
} hist_t;

static int row_hist(sqlite3_stmt *s, void *arg)
{
    hist_t *h = arg;
    h->n = sqlite3_column_int64(s, 0);
    h->nw = sqlite3_column_int64(s, 1);
    h->w_iter = sqlite3_column_type(s, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 2);
    h->volume = sqlite3_column_type(s, 3) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 3);
    return 1;
}

/* An administrator frees a buffer kept after a stage-out that could not be made
 * durable (GET /v1/status "held"). */
static void h_held_release(core_t *c, hreq_t *rq, reply_t *r)
{
    cerr_t e;
    uint64_t bytes = 0;
    if (!rq_need_admin(rq, r))
        return;
    if (core_held_release(c, rq->args[0], &bytes, &e) < 0)
        return reply_cerr(r, &e);
    reply_json(r, 200, json_pack("{s:s s:b s:I}", "job", rq->args[0], "released", 1,
                                 "bytes", (json_int_t)bytes));
}

static void h_history(core_t *c, hreq_t *rq, reply_t *r)
{
    const char *user = hreq_query(rq, "user"), *name = hreq_query(rq, "name");
    hist_t h = { 0, NAN, NAN, 0 };
    if (!user || !*user)
        return (void)reply_error(r, 400, "user", "is required");
    if (!name)
        name = "";
    if (!rq->who->admin) {
        struct passwd pw, *res = NULL;
        char buf[1024];
        if (getpwuid_r(rq->who->uid, &pw, buf, sizeof(buf), &res) != 0 || !res
            || strcmp(res->pw_name, user))
            return (void)reply_error(r, 403, "user", "you may read only your own history");
    }
    if (state_query(core_state(c), row_hist, &h, "SELECT count(*),count(w_iter),avg(w_iter),avg(volume)"
                    " FROM (SELECT w_iter,volume FROM history WHERE user=? AND job_name=?"
                    " ORDER BY id DESC LIMIT ?)", "ssi", user, name,
                    (int64_t)core_cfg(c)->limits_history_keep) < 0)
        return (void)reply_error(r, 500, NULL, "state database read failed");
    reply_json(r, 200, json_pack("{s:s s:s s:i s:o s:o}", "user", user, "name", name, "jobs",
                                 (int)h.n, "w_iter",
                                 h.nw > 0 && !isnan(h.w_iter) ? json_real(h.w_iter) : json_null(),
                                 "io_volume", h.n > 0 && !isnan(h.volume) ? json_real(h.volume)
                                                                          : json_null()));
}

/* ------------------------------------------------------------------ batch */
#define BATCH_MAX 256
/* A user's batch (not an administrator's) holds the core lock, and builds its reply,
 * within these: the items after are not run (503, send them again). */
#define BATCH_USER_SECONDS 0.05
#define BATCH_USER_REPLY (4u << 20)

/* The field of a batch error: "requests[i]" or "requests[i].key". */
static void batch_error(reply_t *r, int i, const char *key, const char *msg)
{
    size_t n = (key ? strlen(key) : 0) + 32;
    char *f = malloc(n);
    if (!f) {
        reply_error(r, 500, NULL, "out of memory");
        return;
    }
    if (key)
        snprintf(f, n, "requests[%d].%s", i, key);
    else
        snprintf(f, n, "requests[%d]", i);
    reply_error(r, 400, f, "%s", msg);
    free(f);
}

/* Does p name POST /v1/batch's path (as routes_match() would: repeated and trailing
 * '/' do not count)? */
static bool batch_path(const char *p)
{
    while (*p == '/')
        p++;
    if (strncmp(p, "v1/", 3))
        return false;
    p += 3;
    while (*p == '/')
        p++;
    if (strncmp(p, "batch", 5))
        return false;
    p += 5;
    while (*p == '/')
        p++;
    return !*p;
}

/* Item i's string field key, or NULL after a 400 naming it. */
static const char *batch_str(json_t *it, int i, const char *key, reply_t *r)
{
    json_t *v = json_object_get(it, key);
    if (!v || !json_is_string(v)) {
        batch_error(r, i, key, v ? "must be a string" : "is required");
        return NULL;
    }
    return json_string_value(v);
}

/* One item, checked before anything runs. */
static bool batch_item_ok(json_t *it, int i, reply_t *r)
{
    const char *k, *m, *p;
    json_t *v;

    if (!json_is_object(it)) {
        batch_error(r, i, NULL, "must be an object");
        return false;
    }
    json_object_foreach(it, k, v) {
        if (strcmp(k, "method") && strcmp(k, "path") && strcmp(k, "body")) {
            batch_error(r, i, k, "unknown field (known: method, path, body)");
            return false;
        }
    }
    if (!(m = batch_str(it, i, "method", r)))
        return false;
    if (strcmp(m, "GET") && strcmp(m, "POST") && strcmp(m, "PUT") && strcmp(m, "DELETE")) {
        batch_error(r, i, "method", "must be one of GET, POST, PUT, DELETE");
        return false;
    }
    if (!(p = batch_str(it, i, "path", r)))
        return false;
    if (strncmp(p, "/v1/", 4)) {
        batch_error(r, i, "path", "must start with /v1/");
        return false;
    }
    if (strchr(p, '?')) {
        batch_error(r, i, "path", "query strings are not supported in a batch");
        return false;
    }
    if (batch_path(p)) {
        batch_error(r, i, "path", "a batch cannot contain a batch");
        return false;
    }
    v = json_object_get(it, "body");
    if (v && !json_is_object(v)) {
        batch_error(r, i, "body", "must be an object");
        return false;
    }
    return true;
}

/*
 * POST /v1/batch: several requests of the same caller in one exchange.  The whole
 * batch is validated first (nothing runs if it is malformed); then each item runs
 * in order as the same request alone would (routes_match(), the route's handler,
 * the caller's rights), here under the core lock process() took: one critical
 * section, so one state barrier and one commit covers every item.  Items are
 * independent: a failed one does not stop the next, nothing is undone.  They
 * never long-poll (max_wait 0) and see no query arguments (conn NULL).
 */
static void h_batch(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "requests", F_ARR, true }, { NULL, 0, false } };
    char pcopy[2048];           /* routes_match() refuses longer paths (404) */

    if (!rq_check_body(rq, r, spec, true))
        return;
    json_t *reqs = json_object_get(rq->body, "requests");
    size_t n = json_array_size(reqs);
    if (n < 1 || n > BATCH_MAX)
        return (void)reply_error(r, 400, "requests", "must hold 1 to %d requests", BATCH_MAX);
    for (size_t i = 0; i < n; i++)
        if (!batch_item_ok(json_array_get(reqs, i), (int)i, r))
            return;
    json_t *replies = json_array();
    if (!replies)
        return (void)reply_error(r, 500, NULL, "out of memory");
    double t0 = core_wall();
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(reqs, i);
        const char *method = json_string_value(json_object_get(it, "method"));
        const char *path = json_string_value(json_object_get(it, "path"));
        json_t *body = json_object_get(it, "body");
        const char *args[4] = { NULL };
        const route_t *rt = NULL;
        reply_t ir = { 0 };
        int status = 404;
        size_t plen = strlen(path);

        if (plen < sizeof(pcopy)) {
            memcpy(pcopy, path, plen + 1);
            rt = routes_match(method, pcopy, args, &status);
        }
        if (!rt) {
            if (status == 405)
                reply_error(&ir, 405, NULL, "method %s not allowed on %s", method, path);
            else
                reply_error(&ir, 404, NULL, "no such resource: %s", path);
        } else if (body && !rt->body) {
            reply_error(&ir, 400, NULL, "%s %s takes no body", method, path);
        } else if (rt->fn == h_batch) {     /* cannot happen: batch_item_ok() */
            reply_error(&ir, 400, "path", "a batch cannot contain a batch");
        } else if (!rq->who->admin && (core_wall() - t0 > BATCH_USER_SECONDS
                                       || bytes > BATCH_USER_REPLY)) {
            reply_error(&ir, 503, NULL, "not run: the batch used its share of the daemon "
                        "(%.0f ms or %u MiB of replies); send the items from this one again",
                        BATCH_USER_SECONDS * 1e3, BATCH_USER_REPLY >> 20);
        } else {
            hreq_t sub = { .api = rq->api, .who = rq->who, .body = body, .conn = NULL,
                           .max_wait = 0 };
            memcpy(sub.args, args, sizeof(args));
            rt->fn(c, &sub, &ir);
        }
        /* what send_reply() would send: a text reply becomes a JSON string */
        json_t *b;
        if (ir.text) {
            b = json_string(ir.text);
            free(ir.text);
            if (!b)
                b = json_null();
        } else if (ir.body) {
            b = ir.body;
        } else {
            b = json_null();
            if (!ir.status)
                ir.status = 204;
        }
        json_t *o = json_object();
        if (!rq->who->admin)
            bytes += json_dumpb(b, NULL, 0, JSON_COMPACT);
        json_object_set_new(o, "status", json_integer(ir.status));
        json_object_set_new(o, "body", b);
        json_array_append_new(replies, o);
        bl_debug("api: batch item %d: %s %s -> %d", (int)i, method, path, ir.status);
    }
    reply_json(r, 200, json_pack("{s:o}", "replies", replies));
    if (!r->body)
        reply_error(r, 500, NULL, "out of memory");
    r->items = (unsigned)n;
}

/* ------------------------------------------------------------------ table */
const route_t routes_admin[] = {
    { "GET",    "/v1/status",                  h_status,        false },
    { "GET",    "/v1/nodes",                   h_nodes,         false },
    { "GET",    "/v1/nodes/*",                 h_node_get,      false },
    { "POST",   "/v1/nodes/*/drain",           h_node_drain,    true },
    { "POST",   "/v1/nodes/*/resume",          h_node_resume,   true },
    { "GET",    "/v1/pools",                   h_pools,         false },
    { "GET",    "/v1/pools/*",                 h_pool_get,      false },
    { "GET",    "/v1/schedule",                h_schedule,      false },
    { "GET",    "/v1/policy",                  h_policy_get,    false },
    { "PUT",    "/v1/policy",                  h_policy_set,    true },
    { "GET",    "/v1/history",                 h_history,       false },
    { "DELETE", "/v1/held/*",                  h_held_release,  false },
    { "POST",   "/v1/batch",                   h_batch,         true },
    { "POST",   "/v1/agents/*",                nodes_route_poll, true },
};
const size_t routes_admin_n = sizeof(routes_admin) / sizeof(routes_admin[0]);
