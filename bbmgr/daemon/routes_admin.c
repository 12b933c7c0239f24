/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * routes_admin.c — the /v1 routes of the whole daemon (doc/api.md): buffer nodes and
 * pools, the schedule, the policy, status, history, held buffers, and the poll of
 * the buffer-node agents (whose report nodes.c applies).
 * Every handler runs with the core lock held.
 */
#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "routes_admin.h"
#include "routes_req.h"
#include "log.h"
#include "nodes.h"

/* ------------------------------------------------------------------ nodes, pools */
static void h_nodes(core_t *c, hreq_t *rq, reply_t *r)
{
    hreq_reply_json(r, 200, json_pack("{s:o}", "nodes", core_nodes_json(c)));
}

static int node_for(core_t *c, hreq_t *rq, reply_t *r)
{
    int idx = core_node_index(c, rq->args[0]);
    if (idx < 0)
        hreq_reply_error(r, 404, "name", "no buffer node %s", rq->args[0]);
    return idx;
}

static void h_node_get(core_t *c, hreq_t *rq, reply_t *r)
{
    int idx = node_for(c, rq, r);
    if (idx >= 0) {
        core_node_loads(c);
        hreq_reply_json(r, 200, core_node_json(c, idx));
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
        return (void)hreq_reply_error(r, 400, "reason", "at most 255 characters");
    if (core_node_drain(c, idx, drain, reason ? reason : drain ? "drained by admin" : NULL, &e) < 0)
        return rq_reply_cerr(r, &e);
    core_node_loads(c);
    hreq_reply_json(r, 200, core_node_json(c, idx));
}

static void h_node_drain(core_t *c, hreq_t *rq, reply_t *r)
{
    node_drain(c, rq, r, true);
}
static void h_node_resume(core_t *c, hreq_t *rq, reply_t *r)
{
    node_drain(c, rq, r, false);
}

static void h_pools(core_t *c, hreq_t *rq, reply_t *r)
{
    hreq_reply_json(r, 200, json_pack("{s:o}", "pools", core_pools_json(c)));
}

static void h_pool_get(core_t *c, hreq_t *rq, reply_t *r)
{
    json_t *p = core_pool_json_named(c, rq->args[0]);
    if (p)
        return hreq_reply_json(r, 200, p);
    hreq_reply_error(r, 404, "name", "no pool %s", rq->args[0]);
}

/* ------------------------------------------------------------------ schedule, policy */
static void h_schedule(core_t *c, hreq_t *rq, reply_t *r)
{
    const char *h = hreq_query(rq, "horizon");
    double horizon = 600;
    hu_error_t e = { "" };
    if (h && (hu_parse_duration(h, HU_DUR_BARE_SECONDS, &horizon, &e) < 0 || horizon <= 0))
        return (void)hreq_reply_error(r, 400, "horizon", "must be a positive duration");
    hreq_reply_json(r, 200, core_schedule_json(c, horizon));
}

static void h_policy_get(core_t *c, hreq_t *rq, reply_t *r)
{
    hreq_reply_json(r, 200, core_policy_json(c));
}

static void h_policy_set(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "id", F_STR, true }, { NULL, 0, false } };
    cerr_t e;
    if (!rq_need_admin(rq, r) || !rq_check_body(rq, r, spec, true))
        return;
    const char *id = rq_get_str(rq, "id");
    if (strlen(id) > 60)
        return (void)hreq_reply_error(r, 400, "id", "too long");
    if (core_set_policy(c, id, &e) < 0)
        return rq_reply_cerr(r, &e);
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
    json_object_set_new(o, "state",
                        json_pack("{s:s s:i s:I s:b}", "dir", core_cfg(c)->state_dir, "schema",
                                  STATE_SCHEMA_VERSION, "committed",
                                  (json_int_t)state_committed(core_state(c)), "durable",
                                  core_cfg(c)->state_durable));
    json_object_set_new(o, "caller",
                        json_pack("{s:I s:I s:b}", "uid", (json_int_t)rq->who->uid, "gid",
                                  (json_int_t)rq->who->gid, "admin", rq->who->admin));
    nodes_status_json(c, o); /* "agents", only when some are configured */
    hreq_reply_json(r, 200, o);
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
        return rq_reply_cerr(r, &e);
    hreq_reply_json(
        r, 200,
        json_pack("{s:s s:b s:I}", "job", rq->args[0], "released", 1, "bytes", (json_int_t)bytes));
}

static void h_history(core_t *c, hreq_t *rq, reply_t *r)
{
    const char *user = hreq_query(rq, "user"), *name = hreq_query(rq, "name");
    hist_t h = { 0, NAN, NAN, 0 };
    if (!user || !*user)
        return (void)hreq_reply_error(r, 400, "user", "is required");
    if (!name)
        name = "";
    if (!rq->who->admin) {
        struct passwd pw, *res = NULL;
        char buf[1024];
        if (getpwuid_r(rq->who->uid, &pw, buf, sizeof(buf), &res) != 0 || !res
            || strcmp(res->pw_name, user))
            return (void)hreq_reply_error(r, 403, "user", "you may read only your own history");
    }
    if (state_query(core_state(c), row_hist, &h,
                    "SELECT count(*),count(w_iter),avg(w_iter),avg(volume)"
                    " FROM (SELECT w_iter,volume FROM history WHERE user=? AND job_name=?"
                    " ORDER BY id DESC LIMIT ?)",
                    "ssi", user, name, (int64_t)core_cfg(c)->limits_history_keep)
        < 0)
        return (void)hreq_reply_error(r, 500, NULL, "state database read failed");
    hreq_reply_json(
        r, 200,
        json_pack("{s:s s:s s:i s:o s:o}", "user", user, "name", name, "jobs", (int)h.n, "w_iter",
                  h.nw > 0 && !isnan(h.w_iter) ? json_real(h.w_iter) : json_null(), "io_volume",
                  h.n > 0 && !isnan(h.volume) ? json_real(h.volume) : json_null()));
}

/* ------------------------------------------------------------------ agents */
/* The reasons a report is refused for, cut where they always were (a 400-byte
 * text): the answer is the same whatever the longer names in it. */
#define REFUSAL_MAX 399

/* POST /v1/agents/<node>: a buffer-node agent's poll (doc/bbnoded.md): its report is
 * checked whole here, then applied by nodes.c, which answers with its tasks. */
static void h_agent_poll(core_t *c, hreq_t *rq, reply_t *r)
{
    static const char *const keys[] = { "version", "agent", "dirs",  "status",
                                        "results", "kept",  "usage", NULL };
    hu_error_t why; /* a refusal, cut at REFUSAL_MAX in the answer */
    const char *k;
    json_t *val, *b = rq->body;

    bool served = nodes_serves(c, rq->args[0]);
    if (rq->who->uid != 0 && rq->who->uid != geteuid())
        return (void)hreq_reply_error(r, 403, NULL,
                                      "only the daemon user (root) may act as a "
                                      "buffer-node agent");
    if (!served)
        return (void)hreq_reply_error(r, 403, NULL,
                                      "node %s is not served by an agent in the "
                                      "configuration (nodes: agent: true)",
                                      rq->args[0]);
    if (!b)
        return (void)hreq_reply_error(r, 400, NULL, "a JSON body is required");
    json_object_foreach (b, k, val) {
        const char *const *p = keys;
        while (*p && strcmp(*p, k))
            p++;
        if (!*p)
            return (void)hreq_reply_error(r, 400, k,
                                          "unknown field (known: version, agent, dirs, "
                                          "status, results, kept, usage)");
    }
    json_t *ver = json_object_get(b, "version"), *id = json_object_get(b, "agent");
    json_t *gen = json_object_get(b, "dirs"), *st = json_object_get(b, "status");
    json_t *res = json_object_get(b, "results");
    if (!json_is_integer(ver) || json_integer_value(ver) != NP_VERSION)
        return (void)hreq_reply_error(r, 400, "version", "must be %d", NP_VERSION);
    if (!json_is_string(id) || !*json_string_value(id) || strlen(json_string_value(id)) >= 64)
        return (void)hreq_reply_error(r, 400, "agent", "must be a string of 1 to 63 characters");
    if (gen && !json_is_string(gen))
        return (void)hreq_reply_error(r, 400, "dirs", "must be a string");
    if (res && !json_is_array(res))
        return (void)hreq_reply_error(r, 400, "results", "must be an array");
    json_t *kept = json_object_get(b, "kept");
    np_dir_t kd[NODES_KEPT_MAX];
    size_t nkd = json_array_size(kept);
    if (kept && (!json_is_array(kept) || nkd > NODES_KEPT_MAX))
        return (void)hreq_reply_error(r, 400, "kept", "must be an array of at most %d directories",
                                      NODES_KEPT_MAX);
    for (size_t i = 0; i < nkd; i++) {
        int rc = np_dir_parse(json_array_get(kept, i), &kd[i], &why);
        if (rc < 0 || !kd[i].keep || !kd[i].ino)
            return (void)hreq_reply_error(r, 400, "kept", "%.*s", REFUSAL_MAX,
                                          rc < 0 ? why.text
                                                 : "each directory "
                                                   "has keep, dev and ino");
    }
    json_t *usage = json_object_get(b, "usage");
    np_usage_t uv[NP_USAGE_MAX];
    size_t nuv = json_array_size(usage);
    if (usage && (!json_is_array(usage) || nuv > NP_USAGE_MAX))
        return (void)hreq_reply_error(r, 400, "usage", "must be an array of at most %d entries",
                                      NP_USAGE_MAX);
    for (size_t i = 0; i < nuv; i++)
        if (np_usage_parse(json_array_get(usage, i), &uv[i], &why) < 0)
            return (void)hreq_reply_error(r, 400, "usage", "%.*s", REFUSAL_MAX, why.text);
    np_status_t status;
    if (!st)
        return (void)hreq_reply_error(r, 400, "status", "is required");
    if (np_status_parse(st, &status, &why) < 0)
        return (void)hreq_reply_error(r, 400, "status", "%.*s", REFUSAL_MAX, why.text);
    size_t nres = json_array_size(res);
    np_result_t *rv = calloc(nres ? nres : 1, sizeof(*rv));
    if (!rv)
        return (void)hreq_reply_error(r, 500, NULL, "out of memory");
    for (size_t i = 0; i < nres; i++)
        if (np_result_parse(json_array_get(res, i), &rv[i], &why) < 0) {
            free(rv);
            return (void)hreq_reply_error(r, 400, "results", "%.*s", REFUSAL_MAX, why.text);
        }

    /* everything checked: apply */
    nodes_report_t rp = {
        .agent = json_string_value(id),
        .dirs = gen ? json_string_value(gen) : NULL,
        .status = status,
        .results = rv,
        .nresults = nres,
        .kept = kd,
        .nkept = nkd,
        .usage = uv,
        .nusage = nuv,
    };
    hreq_reply_json(r, 200, nodes_report(c, rq->args[0], &rp));
    free(rv);
}

/* ------------------------------------------------------------------ table */
const route_t routes_admin[] = {
    { "GET", "/v1/status", h_status, false },
    { "GET", "/v1/nodes", h_nodes, false },
    { "GET", "/v1/nodes/*", h_node_get, false },
    { "POST", "/v1/nodes/*/drain", h_node_drain, true },
    { "POST", "/v1/nodes/*/resume", h_node_resume, true },
    { "GET", "/v1/pools", h_pools, false },
    { "GET", "/v1/pools/*", h_pool_get, false },
    { "GET", "/v1/schedule", h_schedule, false },
    { "GET", "/v1/policy", h_policy_get, false },
    { "PUT", "/v1/policy", h_policy_set, true },
    { "GET", "/v1/history", h_history, false },
    { "DELETE", "/v1/held/*", h_held_release, false },
    { "POST", "/v1/agents/*", h_agent_poll, true },
};
const size_t routes_admin_n = sizeof(routes_admin) / sizeof(routes_admin[0]);
