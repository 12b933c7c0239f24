/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * routes.c — the /v1 API (doc/api.md): the route table and its matching, the
 * batch of requests, and the routes of jobs, allocations, phases, stage-in and
 * stage-out, transfers and persistent buffers: validation of requests
 * (routes_req.c), authorisation, calls into the core, JSON replies.  Every handler
 * runs with the core lock held.  The routes of the whole daemon (nodes, pools,
 * policy, status, the agents' poll) are in routes_admin.c.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "routes.h"
#include "routes_admin.h"
#include "routes_req.h"
#include "log.h"

/* ------------------------------------------------------------------ jobs */
static void h_jobs_create(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "id", F_STR, true },     { "uid", F_INT, true },
                                    { "gid", F_INT, false },   { "user", F_STR, false },
                                    { "name", F_STR, false },  { "nodes", F_INT, false },
                                    { "hints", F_OBJ, false }, { NULL, 0, false } };
    long uid = 0, gid = -1, nodes = 1;
    bool created;
    cerr_t e;

    if (!rq_need_admin(rq, r) || !rq_check_body(rq, r, spec, true))
        return;
    const char *id = rq_get_str(rq, "id");
    if (!rq_check_name(r, "id", id) || !rq_get_int(rq, r, "uid", 0, 4294967294L, &uid)
        || !rq_get_int(rq, r, "gid", 0, 4294967294L, &gid)
        || !rq_get_int(rq, r, "nodes", 1, 10000000, &nodes))
        return;
    const char *user = rq_get_str(rq, "user"), *name = rq_get_str(rq, "name");
    if (user && (strlen(user) > 255 || !*user))
        return (void)hreq_reply_error(r, 400, "user", "must be 1 to 255 characters");
    if (name && strlen(name) > 255)
        return (void)hreq_reply_error(r, 400, "name", "must be at most 255 characters");
    if (core_job_register(c, id, (uid_t)uid, (gid_t)(gid >= 0 ? gid : uid), user, name, (int)nodes,
                          json_object_get(rq->body, "hints"), &created, &e)
        < 0)
        return rq_reply_cerr(r, &e);
    hreq_reply_json(r, created ? 201 : 200, core_job_json(c, core_job(c, id), true));
}

static void h_jobs_list(core_t *c, hreq_t *rq, reply_t *r)
{
    json_t *a = core_jobs_json(c, rq->who->admin, rq->who->uid, hreq_query(rq, "state"));
    hreq_reply_json(r, 200, json_pack("{s:o}", "jobs", a));
}

static void h_job_get(core_t *c, hreq_t *rq, reply_t *r)
{
    json_t *last;
    if (!core_job(c, rq->args[0]) && (last = core_ended_job(c, rq->args[0]))) {
        /* ended: its last state, to its owner and administrators */
        if (!rq->who->admin
            && (json_int_t)rq->who->uid != json_integer_value(json_object_get(last, "uid")))
            return (void)hreq_reply_error(r, 403, NULL, "job %s belongs to another user",
                                          rq->args[0]);
        return hreq_reply_json(r, 200, json_incref(last));
    }
    job_t *j = rq_job_for(c, rq, r);
    if (j)
        hreq_reply_json(r, 200, core_job_json(c, j, true));
}

static void h_job_end(core_t *c, hreq_t *rq, reply_t *r)
{
    cerr_t e;
    job_t *j = rq_admin_job_for(c, rq, r);
    if (!j)
        return;
    char id[64];
    snprintf(id, sizeof(id), "%s", j->id);
    if (core_job_end(c, j, &e) < 0)
        return rq_reply_cerr(r, &e);
    hreq_reply_json(r, 200, json_pack("{s:s s:s}", "id", id, "state", "ended"));
}

static void h_job_hints(core_t *c, hreq_t *rq, reply_t *r)
{
    cerr_t e;
    job_t *j = rq_job_for(c, rq, r);
    if (!j)
        return;
    if (!rq->body)
        return (void)hreq_reply_error(r, 400, NULL, "a JSON body is required");
    job_t save = *j;
    if (core_job_hints(c, j, rq->body, &e) < 0) {
        *j = save;
        return rq_reply_cerr(r, &e);
    }
    core_job_save(c, j);
    hreq_reply_json(r, 200, core_job_json(c, j, true));
}

static void h_job_begin(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "nodes", F_INT, false }, { NULL, 0, false } };
    long nodes = 0;
    cerr_t e;
    if (!rq_need_admin(rq, r) || !rq_check_body(rq, r, spec, false))
        return;
    job_t *j = rq_job_for(c, rq, r);
    if (!j || !rq_get_int(rq, r, "nodes", 1, 10000000, &nodes))
        return;
    if (core_job_begin(c, j, (int)nodes, &e) < 0)
        return rq_reply_cerr(r, &e);
    hreq_reply_json(r, 200, core_job_json(c, j, true));
}

/* ------------------------------------------------------------------ allocations */
static void h_alloc_create(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "capacity", F_SIZE, true },
                                    { "nodes", F_INT, false },
                                    { "pool", F_STR, false },
                                    { NULL, 0, false } };
    double cap = 0;
    long nodes = 0;
    bool created;
    cerr_t e;
    if (!rq_need_admin(rq, r) || !rq_check_body(rq, r, spec, true))
        return;
    job_t *j = rq_job_for(c, rq, r);
    if (!j || !rq_get_size(rq, r, "capacity", true, &cap)
        || !rq_get_int(rq, r, "nodes", 1, 100000, &nodes))
        return;
    const char *pool = rq_get_str(rq, "pool");
    if (pool && !rq_check_name(r, "pool", pool))
        return;
    if (core_alloc_create(c, j, (uint64_t)ceil(cap), (int)nodes, pool, &created, &e) < 0)
        return rq_reply_cerr(r, &e);
    hreq_reply_json(r, created ? 201 : 200, core_alloc_json(c, j, j->alloc, j->id));
}

static void h_alloc_get(core_t *c, hreq_t *rq, reply_t *r)
{
    job_t *j = rq_job_for(c, rq, r);
    if (!j)
        return;
    if (!j->alloc)
        return (void)hreq_reply_error(r, 404, NULL, "job %s has no allocation", j->id);
    hreq_reply_json(r, 200, core_alloc_json(c, j, j->alloc, j->id));
}

static void h_alloc_release(core_t *c, hreq_t *rq, reply_t *r)
{
    cerr_t e;
    job_t *j = rq_admin_job_for(c, rq, r);
    if (!j)
        return;
    if (core_alloc_release(c, j, &e) < 0)
        return rq_reply_cerr(r, &e);
    hreq_reply_json(r, 200, json_pack("{s:s s:b}", "job", j->id, "released", 1));
}

/* ------------------------------------------------------------------ phases */
static void h_phase_request(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "volume", F_SIZE, true }, { "direction", F_STR, false },
                                    { "w_done", F_DUR, false }, { "wait", F_DUR, false },
                                    { "member", F_STR, false }, { NULL, 0, false } };
    double volume = 0, w_done = -1, wait = 0;
    cerr_t e;
    if (!rq_check_body(rq, r, spec, true))
        return;
    const char *member = rq_get_str(rq, "member");
    if (member && !rq_check_name(r, "member", member))
        return;
    job_t *j = rq_job_for(c, rq, r);
    if (!j || !rq_get_size(rq, r, "volume", true, &volume) || !rq_get_dur(rq, r, "w_done", &w_done)
        || !rq_get_dur(rq, r, "wait", &wait))
        return;
    const char *dir = rq_get_str(rq, "direction");
    if (!dir)
        dir = j->io[0] ? j->io : "write";
    if (strcmp(dir, "write") && strcmp(dir, "read") && strcmp(dir, "readwrite"))
        return (void)hreq_reply_error(r, 400, "direction", "must be write, read or readwrite");
    phase_t *p = core_phase_request(c, j, volume, dir, w_done, &e);
    if (!p)
        return rq_reply_cerr(r, &e);
    if (member && core_phase_join(c, p, member, false, &e) < 0) {
        cerr_t e2;
        core_phase_finish(c, p, 0, &e2);
        return rq_reply_cerr(r, &e);
    }
    hreq_reply_json(r, 201, core_phase_json(c, p));
    if (p->state == PH_WAITING && wait > 0) {
        r->wait_phase = p->id;
        r->wait = fmin(wait, rq->max_wait);
    }
}

typedef struct {
    json_t *o;
    uid_t uid;
} dbphase_t;

static int row_phase(sqlite3_stmt *s, void *arg)
{
    dbphase_t *d = arg;
    const char *cols[] = { "id",      "job",      "volume", "direction", "state", "requested",
                           "granted", "finished", "bytes",  "bandwidth", "nodes" };
    json_t *o = json_object();
    for (int i = 0; i < 11; i++) {
        json_t *v;
        switch (sqlite3_column_type(s, i)) {
        case SQLITE_INTEGER:
            v = json_integer(sqlite3_column_int64(s, i));
            break;
        case SQLITE_FLOAT:
            v = json_real(sqlite3_column_double(s, i));
            break;
        case SQLITE_TEXT:
            v = json_string((const char *)sqlite3_column_text(s, i));
            break;
        default:
            v = json_null();
        }
        json_object_set_new(o, cols[i], v);
    }
    /* nodes: "a,b" -> ["a","b"] */
    const char *nodes = json_string_value(json_object_get(o, "nodes"));
    json_t *arr = json_array();
    if (nodes) {
        char *dup = strdup(nodes), *save = NULL;
        for (char *t = dup ? strtok_r(dup, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
            json_array_append_new(arr, json_string(t));
        free(dup);
    }
    json_object_set_new(o, "nodes", arr);
    json_object_set_new(o, "grant", json_null());
    d->uid = (uid_t)sqlite3_column_int64(s, 11);
    if (json_is_array(d->o))
        json_array_append_new(d->o, o);
    else
        d->o = o;
    return json_is_array(d->o) ? 0 : 1;
}

#define PHASE_COLS \
    "p.id,p.job_id,p.volume,p.direction,p.state,p.requested,p.granted," \
    "p.finished,p.bytes,p.bandwidth,p.nodes,j.uid"

/* A phase that is no longer open: from the database (committed). */
static void phase_from_db(core_t *c, hreq_t *rq, uint64_t pid, reply_t *r)
{
    dbphase_t d = { NULL, 0 };
    if (state_query(core_state(c), row_phase, &d,
                    "SELECT " PHASE_COLS " FROM phases p JOIN jobs j"
                    " ON j.id=p.job_id WHERE p.id=?",
                    "i", (int64_t)pid)
        < 0)
        return (void)hreq_reply_error(r, 500, NULL, "state database read failed");
    if (!d.o)
        return (void)hreq_reply_error(r, 404, NULL, "no phase %ju", (uintmax_t)pid);
    if (!rq->who->admin && rq->who->uid != d.uid) {
        json_decref(d.o);
        return (void)hreq_reply_error(r, 403, NULL, "phase %ju belongs to another user's job",
                                      (uintmax_t)pid);
    }
    hreq_reply_json(r, 200, d.o);
}

void routes_phase_view(core_t *c, hreq_t *rq, uint64_t pid, reply_t *r)
{
    phase_t *p = core_phase(c, pid);
    if (!p)
        return phase_from_db(c, rq, pid, r);
    if (!rq->who->admin && rq->who->uid != p->job->uid)
        return (void)hreq_reply_error(r, 403, NULL, "phase %ju belongs to another user's job",
                                      (uintmax_t)pid);
    hreq_reply_json(r, 200, core_phase_json(c, p));
}

static void h_phase_get(core_t *c, hreq_t *rq, reply_t *r)
{
    uint64_t pid;
    bool ok;
    if (!rq_parse_u64(rq->args[0], &pid))
        return (void)hreq_reply_error(r, 400, "id", "must be a phase number");
    double wait = rq_query_wait(rq, r, &ok);
    if (!ok)
        return;
    /* until=closed: a granted phase is long-polled too, until it closes (a member
     * that left it waits for the job's next phase) */
    const char *until = hreq_query(rq, "until");
    if (until && strcmp(until, "closed"))
        return (void)hreq_reply_error(r, 400, "until", "must be closed");
    routes_phase_view(c, rq, pid, r);
    phase_t *p = core_phase(c, pid);
    if (r->status == 200 && p && wait > 0
        && (p->state == PH_WAITING || (until && p->state == PH_GRANTED))) {
        r->wait_phase = pid;
        r->wait = wait;
    }
}

static phase_t *phase_for(core_t *c, hreq_t *rq, reply_t *r, uint64_t *pid)
{
    if (!rq_parse_u64(rq->args[0], pid)) {
        hreq_reply_error(r, 400, "id", "must be a phase number");
        return NULL;
    }
    phase_t *p = core_phase(c, *pid);
    if (!p) {
        /* closed already: a retried finish gets the recorded outcome */
        phase_from_db(c, rq, *pid, r);
        return NULL;
    }
    if (!rq->who->admin && rq->who->uid != p->job->uid) {
        hreq_reply_error(r, 403, NULL, "phase %ju belongs to another user's job", (uintmax_t)*pid);
        return NULL;
    }
    return p;
}

/* A phase that closed, to the member that wants to join it: 409. */
static void phase_closed(reply_t *r, uint64_t pid)
{
    if (r->status == 200)
        hreq_reply_error(r, 409, NULL, "phase %ju is closed", (uintmax_t)pid);
}

static void h_phase_join(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "member", F_STR, true },
                                    { "rejoin", F_BOOL, false },
                                    { NULL, 0, false } };
    uint64_t pid;
    cerr_t e;
    if (!rq_check_body(rq, r, spec, true))
        return;
    const char *member = rq_get_str(rq, "member");
    if (!rq_check_name(r, "member", member))
        return;
    phase_t *p = phase_for(c, rq, r, &pid);
    if (!p)
        return phase_closed(r, pid);
    if (core_phase_join(c, p, member, json_is_true(json_object_get(rq->body, "rejoin")), &e) < 0)
        return rq_reply_cerr(r, &e);
    hreq_reply_json(r, 200, core_phase_json(c, p));
}

static void h_phase_finish(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "bytes", F_SIZE, false },
                                    { "member", F_STR, false },
                                    { NULL, 0, false } };
    double bytes = -1;
    uint64_t pid;
    bool ended = true;
    cerr_t e;
    if (!rq_check_body(rq, r, spec, false) || !rq_get_size(rq, r, "bytes", false, &bytes))
        return;
    const char *member = rq_get_str(rq, "member");
    if (member && !rq_check_name(r, "member", member))
        return;
    phase_t *p = phase_for(c, rq, r, &pid);
    if (!p)
        return;
    json_t *o = core_phase_json_closing(c, p);
    bool waiting = p->state == PH_WAITING;
    double vol = p->volume, mbytes = p->mbytes;
    bool shared = member && p->nmembers > 0, munknown = p->munknown;
    if ((member ? core_phase_leave(c, p, member, bytes, &ended, &e)
                : core_phase_finish(c, p, bytes, &e))
        < 0) {
        json_decref(o);
        return rq_reply_cerr(r, &e);
    }
    if (!ended) {
        /* other members are in it: it stays open */
        json_decref(o);
        return hreq_reply_json(r, 200, core_phase_json(c, p));
    }
    if (shared) { /* what the last member's leave recorded */
        bytes = munknown || bytes < 0 ? -1 : mbytes + bytes;
        json_t *m = json_object_get(o, "members");
        json_object_set_new(m, "left",
                            json_integer(json_integer_value(json_object_get(m, "in"))
                                         + json_integer_value(json_object_get(m, "left"))));
        json_object_set_new(m, "in", json_integer(0));
        json_object_set_new(m, "bytes", json_real(bytes >= 0 ? bytes : vol));
    }
    json_object_set_new(o, "state", json_string(waiting ? "cancelled" : "finished"));
    json_object_set_new(o, "finished", json_real(core_wall()));
    json_object_set_new(o, "bytes", json_real(bytes >= 0 ? bytes : waiting ? 0 : vol));
    hreq_reply_json(r, 200, o);
}

static void h_phase_progress(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "bytes", F_SIZE, true }, { NULL, 0, false } };
    double bytes = 0;
    uint64_t pid;
    cerr_t e;
    if (!rq_check_body(rq, r, spec, true) || !rq_get_size(rq, r, "bytes", false, &bytes))
        return;
    phase_t *p = phase_for(c, rq, r, &pid);
    if (!p)
        return phase_closed(r, pid);
    if (core_phase_progress(c, p, bytes, &e) < 0)
        return rq_reply_cerr(r, &e);
    hreq_reply_json(r, 200, core_phase_json(c, p));
}

static void h_job_phases(core_t *c, hreq_t *rq, reply_t *r)
{
    job_t *j = rq_job_for(c, rq, r);
    const char *lim = hreq_query(rq, "limit");
    long limit = lim ? strtol(lim, NULL, 10) : 100;
    if (!j)
        return;
    if (limit < 1 || limit > 10000)
        return (void)hreq_reply_error(r, 400, "limit", "must be in 1..10000");
    dbphase_t d = { json_array(), 0 };
    if (state_query(core_state(c), row_phase, &d,
                    "SELECT " PHASE_COLS " FROM phases p JOIN jobs j"
                    " ON j.id=p.job_id WHERE p.job_id=? ORDER BY p.id DESC LIMIT ?",
                    "si", j->id, (int64_t)limit)
        < 0) {
        json_decref(d.o);
        return (void)hreq_reply_error(r, 500, NULL, "state database read failed");
    }
    /* the open phase from memory (the database may lag behind it by one commit) */
    if (j->phase) {
        for (size_t i = 0; i < json_array_size(d.o); i++)
            if (json_integer_value(json_object_get(json_array_get(d.o, i), "id"))
                == (json_int_t)j->phase->id) {
                json_array_remove(d.o, i);
                break;
            }
        json_array_insert_new(d.o, 0, core_phase_json(c, j->phase));
    }
    hreq_reply_json(r, 200, json_pack("{s:s s:o}", "job", j->id, "phases", d.o));
}

/* ------------------------------------------------------------------ stage */
static void stage_create(core_t *c, hreq_t *rq, reply_t *r, const char *kind)
{
    static const field_t spec[] = { { "source", F_STR, true },   { "destination", F_STR, true },
                                    { "type", F_STR, false },    { "size", F_SIZE, false },
                                    { "spread", F_BOOL, false }, { NULL, 0, false } };
    double size = -1;
    cerr_t e;
    if (!rq_need_admin(rq, r) || !rq_check_body(rq, r, spec, true))
        return;
    job_t *j = rq_job_for(c, rq, r);
    if (!j)
        return;
    const char *src = rq_get_str(rq, "source"), *dst = rq_get_str(rq, "destination");
    const char *type = rq_get_str(rq, "type");
    if (!rq_check_path(r, "source", src) || !rq_check_path(r, "destination", dst)
        || !rq_get_size(rq, r, "size", false, &size))
        return;
    if (!type)
        type = "file";
    if (strcmp(type, "file") && strcmp(type, "directory"))
        return (void)hreq_reply_error(r, 400, "type", "must be file or directory");
    json_t *sp = json_object_get(rq->body, "spread");
    xfer_t *x = core_stage(c, j, kind, src, dst, type, size >= 0 ? (int64_t)size : -1,
                           json_is_true(sp), &e);
    if (!x)
        return rq_reply_cerr(r, &e);
    hreq_reply_json(r, 201, core_xfer_json(c, x));
}

static void stage_get(core_t *c, hreq_t *rq, reply_t *r, const char *kind)
{
    job_t *j = rq_job_for(c, rq, r);
    if (!j)
        return;
    json_t *a = json_array();
    for (int i = 0; i < j->nxfers; i++)
        if (!strcmp(j->xfers[i]->kind, kind))
            json_array_append_new(a, core_xfer_json(c, j->xfers[i]));
    hreq_reply_json(r, 200,
                    json_pack("{s:s s:s s:s s:o}", "job", j->id, "kind", kind, "state",
                              core_stage_summary(j, kind), "transfers", a));
}

static void h_stage_in(core_t *c, hreq_t *rq, reply_t *r)
{
    stage_create(c, rq, r, "stage_in");
}
static void h_stage_out(core_t *c, hreq_t *rq, reply_t *r)
{
    stage_create(c, rq, r, "stage_out");
}
static void h_stage_in_get(core_t *c, hreq_t *rq, reply_t *r)
{
    stage_get(c, rq, r, "stage_in");
}
static void h_stage_out_get(core_t *c, hreq_t *rq, reply_t *r)
{
    stage_get(c, rq, r, "stage_out");
}

static xfer_t *xfer_for(core_t *c, hreq_t *rq, reply_t *r)
{
    uint64_t id;
    if (!rq_parse_u64(rq->args[0], &id)) {
        hreq_reply_error(r, 400, "id", "must be a transfer number");
        return NULL;
    }
    xfer_t *x = core_xfer_any(c, id);
    if (!x)
        hreq_reply_error(r, 404, "id", "no open transfer %ju", (uintmax_t)id);
    return x;
}

static void h_xfer_get(core_t *c, hreq_t *rq, reply_t *r)
{
    if (!rq_need_admin(rq, r))
        return;
    xfer_t *x = xfer_for(c, rq, r);
    if (x)
        hreq_reply_json(r, 200, core_xfer_json(c, x));
}

static void h_xfer_update(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "state", F_STR, false },
                                    { "bytes_done", F_SIZE, false },
                                    { "bytes_total", F_SIZE, false },
                                    { "message", F_STR, false },
                                    { NULL, 0, false } };
    double done = -1, total = -1;
    cerr_t e;
    if (!rq_need_admin(rq, r) || !rq_check_body(rq, r, spec, true)
        || !rq_get_size(rq, r, "bytes_done", false, &done)
        || !rq_get_size(rq, r, "bytes_total", false, &total))
        return;
    xfer_t *x = xfer_for(c, rq, r);
    if (!x)
        return;
    const char *msg = rq_get_str(rq, "message");
    if (msg && strlen(msg) > 1000)
        return (void)hreq_reply_error(r, 400, "message", "at most 1000 characters");
    if (core_xfer_update(c, x, rq_get_str(rq, "state"), (int64_t)done, (int64_t)total, msg, &e) < 0)
        return rq_reply_cerr(r, &e);
    hreq_reply_json(r, 200, core_xfer_json(c, x));
}

/* ------------------------------------------------------------------ persistent */
static void h_pbuf_create(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "name", F_STR, true },  { "capacity", F_SIZE, true },
                                    { "pool", F_STR, false }, { "uid", F_INT, false },
                                    { "gid", F_INT, false },  { NULL, 0, false } };
    double cap = 0;
    long uid = rq->who->uid, gid = rq->who->gid;
    bool created;
    cerr_t e;
    if (!rq_check_body(rq, r, spec, true))
        return;
    const char *name = rq_get_str(rq, "name"), *pool = rq_get_str(rq, "pool");
    if (!rq_check_bufname(r, "name", name) || (pool && !rq_check_name(r, "pool", pool))
        || !rq_get_size(rq, r, "capacity", true, &cap))
        return;
    if ((rq_has(rq, "uid") || rq_has(rq, "gid")) && !rq->who->admin)
        return (void)hreq_reply_error(r, 403, "uid",
                                      "only SlurmUser and root create buffers for "
                                      "another user");
    if (!rq_get_int(rq, r, "uid", 0, 4294967294L, &uid)
        || !rq_get_int(rq, r, "gid", 0, 4294967294L, &gid))
        return;
    pbuf_t *b =
        core_pbuf_create(c, name, (uid_t)uid, (gid_t)gid, (uint64_t)ceil(cap), pool, &created, &e);
    if (!b)
        return rq_reply_cerr(r, &e);
    hreq_reply_json(r, created ? 201 : 200, core_pbuf_json(c, b));
}

static void h_pbuf_list(core_t *c, hreq_t *rq, reply_t *r)
{
    hreq_reply_json(r, 200, json_pack("{s:o}", "persistent", core_pbufs_json(c)));
}

static pbuf_t *pbuf_for(core_t *c, hreq_t *rq, reply_t *r, bool owner_only)
{
    if (!rq_check_name(r, "name", rq->args[0]))
        return NULL;
    pbuf_t *b = core_pbuf(c, rq->args[0]);
    if (!b) {
        hreq_reply_error(r, 404, "name", "no persistent buffer '%s'", rq->args[0]);
        return NULL;
    }
    if (owner_only && !rq->who->admin && rq->who->uid != b->uid) {
        hreq_reply_error(r, 403, NULL, "persistent buffer '%s' belongs to another user", b->name);
        return NULL;
    }
    return b;
}

static void h_pbuf_get(core_t *c, hreq_t *rq, reply_t *r)
{
    pbuf_t *b = pbuf_for(c, rq, r, false);
    if (b)
        hreq_reply_json(r, 200, core_pbuf_json(c, b));
}

static void h_pbuf_destroy(core_t *c, hreq_t *rq, reply_t *r)
{
    cerr_t e;
    pbuf_t *b = pbuf_for(c, rq, r, true);
    if (!b)
        return;
    char name[64];
    snprintf(name, sizeof(name), "%s", b->name);
    if (core_pbuf_destroy(c, b, &e) < 0)
        return rq_reply_cerr(r, &e);
    hreq_reply_json(r, 200, json_pack("{s:s s:b}", "name", name, "destroyed", 1));
}

static void h_pbuf_use(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "job", F_STR, true }, { NULL, 0, false } };
    cerr_t e;
    if (!rq_check_body(rq, r, spec, true))
        return;
    pbuf_t *b = pbuf_for(c, rq, r, true);
    if (!b)
        return;
    const char *jid = rq_get_str(rq, "job");
    if (!rq_check_name(r, "job", jid))
        return;
    job_t *j = core_job(c, jid);
    if (!j)
        return (void)hreq_reply_error(r, 404, "job", "no job %s", jid);
    if (!rq->who->admin && j->uid != rq->who->uid)
        return (void)hreq_reply_error(r, 403, "job", "job %s belongs to another user", jid);
    if (!rq->who->admin && b->uid != j->uid)
        return (void)hreq_reply_error(r, 403, "job", "the buffer's owner is not the job's owner");
    if (core_pbuf_use(c, b, j, &e) < 0)
        return rq_reply_cerr(r, &e);
    hreq_reply_json(r, 200, core_pbuf_json(c, b));
}

static void h_pbuf_unuse(core_t *c, hreq_t *rq, reply_t *r)
{
    cerr_t e;
    pbuf_t *b = pbuf_for(c, rq, r, true);
    if (!b || !rq_check_name(r, "job", rq->args[1]))
        return;
    job_t *j = core_job(c, rq->args[1]);
    if (!j)
        return (void)hreq_reply_error(r, 404, "job", "no job %s", rq->args[1]);
    if (core_pbuf_unuse(c, b, j, &e) < 0)
        return rq_reply_cerr(r, &e);
    hreq_reply_json(r, 200, core_pbuf_json(c, b));
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
        hreq_reply_error(r, 500, NULL, "out of memory");
        return;
    }
    if (key)
        snprintf(f, n, "requests[%d].%s", i, key);
    else
        snprintf(f, n, "requests[%d]", i);
    hreq_reply_error(r, 400, f, "%s", msg);
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
    json_object_foreach (it, k, v) {
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
    char pcopy[2048]; /* routes_match() refuses longer paths (404) */

    if (!rq_check_body(rq, r, spec, true))
        return;
    json_t *reqs = json_object_get(rq->body, "requests");
    size_t n = json_array_size(reqs);
    if (n < 1 || n > BATCH_MAX)
        return (void)hreq_reply_error(r, 400, "requests", "must hold 1 to %d requests", BATCH_MAX);
    for (size_t i = 0; i < n; i++)
        if (!batch_item_ok(json_array_get(reqs, i), (int)i, r))
            return;
    json_t *replies = json_array();
    if (!replies)
        return (void)hreq_reply_error(r, 500, NULL, "out of memory");
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
                hreq_reply_error(&ir, 405, NULL, "method %s not allowed on %s", method, path);
            else
                hreq_reply_error(&ir, 404, NULL, "no such resource: %s", path);
        } else if (body && !rt->body) {
            hreq_reply_error(&ir, 400, NULL, "%s %s takes no body", method, path);
        } else if (rt->fn == h_batch) { /* cannot happen: batch_item_ok() */
            hreq_reply_error(&ir, 400, "path", "a batch cannot contain a batch");
        } else if (!rq->who->admin
                   && (core_wall() - t0 > BATCH_USER_SECONDS || bytes > BATCH_USER_REPLY)) {
            hreq_reply_error(&ir, 503, NULL,
                             "not run: the batch used its share of the daemon "
                             "(%.0f ms or %u MiB of replies); send the items from this one again",
                             BATCH_USER_SECONDS * 1e3, BATCH_USER_REPLY >> 20);
        } else {
            hreq_t sub = {
                .api = rq->api, .who = rq->who, .body = body, .conn = NULL, .max_wait = 0
            };
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
    hreq_reply_json(r, 200, json_pack("{s:o}", "replies", replies));
    if (!r->body)
        hreq_reply_error(r, 500, NULL, "out of memory");
    r->items = (unsigned)n;
}

/* ------------------------------------------------------------------ table */
/* The routes of this file; routes_admin[] has the others. */
static const route_t routes_jobs[] = {
    { "GET", "/v1/jobs", h_jobs_list, false },
    { "POST", "/v1/jobs", h_jobs_create, true },
    { "GET", "/v1/jobs/*", h_job_get, false },
    { "DELETE", "/v1/jobs/*", h_job_end, false },
    { "PUT", "/v1/jobs/*/hints", h_job_hints, true },
    { "POST", "/v1/jobs/*/begin", h_job_begin, true },
    { "POST", "/v1/jobs/*/allocation", h_alloc_create, true },
    { "GET", "/v1/jobs/*/allocation", h_alloc_get, false },
    { "DELETE", "/v1/jobs/*/allocation", h_alloc_release, false },
    { "POST", "/v1/jobs/*/phases", h_phase_request, true },
    { "GET", "/v1/jobs/*/phases", h_job_phases, false },
    { "POST", "/v1/jobs/*/stage_in", h_stage_in, true },
    { "GET", "/v1/jobs/*/stage_in", h_stage_in_get, false },
    { "POST", "/v1/jobs/*/stage_out", h_stage_out, true },
    { "GET", "/v1/jobs/*/stage_out", h_stage_out_get, false },
    { "GET", "/v1/phases/*", h_phase_get, false },
    { "POST", "/v1/phases/*/finish", h_phase_finish, true },
    { "POST", "/v1/phases/*/join", h_phase_join, true },
    { "POST", "/v1/phases/*/progress", h_phase_progress, true },
    { "GET", "/v1/transfers/*", h_xfer_get, false },
    { "PUT", "/v1/transfers/*", h_xfer_update, true },
    { "GET", "/v1/persistent", h_pbuf_list, false },
    { "POST", "/v1/persistent", h_pbuf_create, true },
    { "GET", "/v1/persistent/*", h_pbuf_get, false },
    { "DELETE", "/v1/persistent/*", h_pbuf_destroy, false },
    { "POST", "/v1/persistent/*/use", h_pbuf_use, true },
    { "DELETE", "/v1/persistent/*/use/*", h_pbuf_unuse, false },
    { "POST", "/v1/batch", h_batch, true },
};

/* The longest path routes_match() takes. */
#define ROUTE_PATH_MAX 2048

/* The next segment of a path at s (its length in *n), past any '/': NULL at the
 * end.  Empty segments are skipped, as strtok_r() skips them below. */
static const char *segment(const char *s, size_t *n)
{
    while (*s == '/')
        s++;
    *n = strcspn(s, "/");
    return *n ? s : NULL;
}

/* Whether path matches pattern ('*' matches any one segment), compared in place:
 * this runs for every route until one matches, on every request. */
static bool match(const char *pattern, const char *path)
{
    const char *a = pattern, *b = path;
    size_t na, nb;
    for (;;) {
        a = segment(a, &na);
        b = segment(b, &nb);
        if (!a || !b)
            return !a && !b;
        if (!(na == 1 && *a == '*') && (na != nb || memcmp(a, b, na)))
            return false;
        a += na;
        b += nb;
    }
}

/* The route of table v (n routes) for method+path; NULL when none (and *path_ok set
 * when a route of another method has that path). */
static const route_t *find(const route_t *v, size_t n, const char *method, const char *path,
                           bool *path_ok)
{
    for (size_t i = 0; i < n; i++) {
        if (!match(v[i].pattern, path))
            continue;
        *path_ok = true;
        if (!strcmp(v[i].method, method))
            return &v[i];
    }
    return NULL;
}

const route_t *routes_match(const char *method, char *path, const char **args, int *status)
{
    const route_t *found;
    bool path_ok = false;
    size_t n = strlen(path);

    *status = 404;
    if (n == 0 || n >= ROUTE_PATH_MAX || path[0] != '/')
        return NULL;
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    found = find(routes_jobs, sizeof(routes_jobs) / sizeof(routes_jobs[0]), method, path, &path_ok);
    if (!found)
        found = find(routes_admin, routes_admin_n, method, path, &path_ok);
    if (!found) {
        if (path_ok)
            *status = 405;
        return NULL;
    }
    /* args point into path: recompute them there */
    for (int k = 0; k < 4; k++)
        args[k] = NULL;
    int na = 0;
    char *sp = NULL, *pp = NULL, pat[128];
    snprintf(pat, sizeof(pat), "%s", found->pattern);
    char *a = strtok_r(pat, "/", &pp), *b = strtok_r(path, "/", &sp);
    while (a && b) {
        if (!strcmp(a, "*") && na < 4)
            args[na++] = b;
        a = strtok_r(NULL, "/", &pp);
        b = strtok_r(NULL, "/", &sp);
    }
    return found;
}
