/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * routes.c — the /v1 API (doc/api.md): validation of requests, authorisation,
 * calls into the core, JSON replies.  Every handler runs with the core lock held.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "routes.h"
#include "log.h"
#include "nodes.h"

/* ------------------------------------------------------------------ errors */
/* The HTTP status of a core error (cerr_t, core.h). */
static int http_status(int code)
{
    switch (code) {
    case EINVAL: return 400;
    case EPERM: return 403;
    case ENOENT: return 404;
    case EEXIST:
    case EBUSY: return 409;
    case EDOM: return 422;
    case EAGAIN: return 503;
    case ENOSPC: return 507;
    default: return 500;
    }
}

static void reply_cerr(reply_t *r, const cerr_t *e)
{
    reply_error(r, http_status(e->code), e->field, "%s", e->msg);
}

/* ------------------------------------------------------------------ validation */
typedef enum { F_STR, F_INT, F_NUM, F_BOOL, F_SIZE, F_DUR, F_OBJ, F_ARR } ftype_t;

typedef struct {
    const char *name;
    ftype_t type;
    bool required;
} field_t;

static const char *ftype_name(ftype_t t)
{
    static const char *const n[] = { "a string", "an integer", "a number", "a boolean",
                                     "a size (bytes, or a string with a unit)",
                                     "a duration (seconds, or a string with a unit)",
                                     "an object", "an array" };
    return n[t];
}

/* Strict: every key known, of the right type; required ones present. */
static bool check_body(hreq_t *rq, reply_t *r, const field_t *spec, bool body_required)
{
    json_t *b = rq->body;
    const char *k;
    json_t *v;

    if (!b) {
        bool need = body_required;
        for (const field_t *f = spec; f->name && !need; f++)
            need = f->required;
        if (need) {
            reply_error(r, 400, NULL, "a JSON body is required");
            return false;
        }
        return true;
    }
    json_object_foreach(b, k, v) {
        const field_t *f = spec;
        while (f->name && strcmp(f->name, k))
            f++;
        if (!f->name) {
            char known[300] = "";
            for (const field_t *g = spec; g->name; g++)
                snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s",
                         g == spec ? "" : ", ", g->name);
            reply_error(r, 400, k, "unknown field (known: %s)", *known ? known : "none");
            return false;
        }
        bool ok;
        switch (f->type) {
        case F_STR: ok = json_is_string(v); break;
        case F_INT: ok = json_is_integer(v); break;
        case F_NUM: ok = json_is_number(v); break;
        case F_BOOL: ok = json_is_boolean(v); break;
        case F_SIZE: case F_DUR: ok = json_is_number(v) || json_is_string(v); break;
        case F_OBJ: ok = json_is_object(v); break;
        case F_ARR: ok = json_is_array(v); break;
        default: ok = false;
        }
        if (!ok) {
            reply_error(r, 400, k, "must be %s", ftype_name(f->type));
            return false;
        }
    }
    for (const field_t *f = spec; f->name; f++)
        if (f->required && !json_object_get(b, f->name)) {
            reply_error(r, 400, f->name, "is required");
            return false;
        }
    return true;
}

static const char *get_str(hreq_t *rq, const char *k)
{
    return rq->body ? json_string_value(json_object_get(rq->body, k)) : NULL;
}

static bool has(hreq_t *rq, const char *k)
{
    return rq->body && json_object_get(rq->body, k);
}

static bool get_int(hreq_t *rq, reply_t *r, const char *k, long lo, long hi, long *out)
{
    json_t *v = rq->body ? json_object_get(rq->body, k) : NULL;
    if (!v)
        return true;
    json_int_t i = json_integer_value(v);
    if (i < lo || i > hi) {
        reply_error(r, 400, k, "must be in %ld..%ld", lo, hi);
        return false;
    }
    *out = (long)i;
    return true;
}

/* size: a non-negative number of bytes or a string with a unit */
static bool get_size(hreq_t *rq, reply_t *r, const char *k, bool positive, double *out)
{
    json_t *v = rq->body ? json_object_get(rq->body, k) : NULL;
    hu_error_t e = { "" };
    if (!v)
        return true;
    if (json_is_number(v)) {
        *out = json_number_value(v);
    } else if (hu_parse_size_d(json_string_value(v), HU_SIZE_BARE_BYTES, out, &e) < 0) {
        reply_error(r, 400, k, "%s", e.text);
        return false;
    }
    if (!isfinite(*out) || *out < 0 || (positive && *out <= 0) || *out > 9.2e18) {
        reply_error(r, 400, k, positive ? "must be a positive size" : "must be a size >= 0");
        return false;
    }
    return true;
}

static bool get_dur(hreq_t *rq, reply_t *r, const char *k, double *out)
{
    json_t *v = rq->body ? json_object_get(rq->body, k) : NULL;
    hu_error_t e = { "" };
    if (!v)
        return true;
    if (json_is_number(v)) {
        *out = json_number_value(v);
    } else if (hu_parse_duration(json_string_value(v), HU_DUR_BARE_SECONDS, out, &e) < 0) {
        reply_error(r, 400, k, "%s", e.text);
        return false;
    }
    if (!isfinite(*out) || *out < 0 || *out > 1e9) {
        reply_error(r, 400, k, "must be a duration >= 0");
        return false;
    }
    return true;
}

static bool valid_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 63)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
            return false;
    return s[-1] != '.' || n > 1;
}

static bool check_name(reply_t *r, const char *field, const char *s)
{
    if (!valid_name(s) || !strcmp(s, ".") || !strcmp(s, "..")) {
        reply_error(r, 400, field, "must be 1 to 63 letters, digits, '_', '-' or '.'");
        return false;
    }
    return true;
}

static bool check_path(reply_t *r, const char *field, const char *s)
{
    if (!s || s[0] != '/' || strlen(s) > 4000 || strstr(s, "/../") || strstr(s, "\n")) {
        reply_error(r, 400, field, "must be an absolute path without '..' components");
        return false;
    }
    size_t n = strlen(s);
    if (n >= 3 && !strcmp(s + n - 3, "/..")) {
        reply_error(r, 400, field, "must be an absolute path without '..' components");
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ authorisation */
static bool need_admin(hreq_t *rq, reply_t *r)
{
    if (rq->who->admin)
        return true;
    reply_error(r, 403, NULL, "only SlurmUser and root may do this (you are uid %u)",
                (unsigned)rq->who->uid);
    return false;
}

/* The job named in the path, visible to the caller (admin or owner). */
static job_t *job_for(core_t *c, hreq_t *rq, reply_t *r)
{
    const char *id = rq->args[0];
    if (!check_name(r, "id", id))
        return NULL;
    job_t *j = core_job(c, id);
    if (!j) {
        reply_error(r, 404, "id", "no job %s", id);
        return NULL;
    }
    if (!rq->who->admin && rq->who->uid != j->uid) {
        reply_error(r, 403, NULL, "job %s belongs to another user", id);
        return NULL;
    }
    return j;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !isdigit((unsigned char)*s))
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v == 0)
        return false;
    *out = v;
    return true;
}

static double query_wait(hreq_t *rq, reply_t *r, bool *ok)
{
    const char *w = hreq_query(rq, "wait");
    double d = 0;
    hu_error_t e = { "" };
    *ok = true;
    if (!w)
        return 0;
    if (hu_parse_duration(w, HU_DUR_BARE_SECONDS, &d, &e) < 0 || d < 0) {
        reply_error(r, 400, "wait", "must be a duration in seconds");
        *ok = false;
        return 0;
    }
    return fmin(d, rq->max_wait);
}

/* ------------------------------------------------------------------ jobs */
static void h_jobs_create(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = {
        { "id", F_STR, true }, { "uid", F_INT, true }, { "gid", F_INT, false },
        { "user", F_STR, false }, { "name", F_STR, false }, { "nodes", F_INT, false },
        { "hints", F_OBJ, false }, { NULL, 0, false }
    };
    long uid = 0, gid = -1, nodes = 1;
    bool created;
    cerr_t e;

    if (!need_admin(rq, r) || !check_body(rq, r, spec, true))
        return;
    const char *id = get_str(rq, "id");
    if (!check_name(r, "id", id) || !get_int(rq, r, "uid", 0, 4294967294L, &uid)
        || !get_int(rq, r, "gid", 0, 4294967294L, &gid)
        || !get_int(rq, r, "nodes", 1, 10000000, &nodes))
        return;
    const char *user = get_str(rq, "user"), *name = get_str(rq, "name");
    if (user && (strlen(user) > 255 || !*user))
        return (void)reply_error(r, 400, "user", "must be 1 to 255 characters");
    if (name && strlen(name) > 255)
        return (void)reply_error(r, 400, "name", "must be at most 255 characters");
    if (core_job_register(c, id, (uid_t)uid, (gid_t)(gid >= 0 ? gid : uid), user, name,
                          (int)nodes, json_object_get(rq->body, "hints"), &created, &e) < 0)
        return reply_cerr(r, &e);
    reply_json(r, created ? 201 : 200, core_job_json(c, core_job(c, id), true));
}

static void h_jobs_list(core_t *c, hreq_t *rq, reply_t *r)
{
    json_t *a = core_jobs_json(c, rq->who->admin, rq->who->uid, hreq_query(rq, "state"));
    reply_json(r, 200, json_pack("{s:o}", "jobs", a));
}

static void h_job_get(core_t *c, hreq_t *rq, reply_t *r)
{
    job_t *j = job_for(c, rq, r);
    if (j)
        reply_json(r, 200, core_job_json(c, j, true));
}

static void h_job_end(core_t *c, hreq_t *rq, reply_t *r)
{
    cerr_t e;
    if (!need_admin(rq, r))
        return;
    job_t *j = job_for(c, rq, r);
    if (!j)
        return;
    char id[64];
    snprintf(id, sizeof(id), "%s", j->id);
    if (core_job_end(c, j, &e) < 0)
        return reply_cerr(r, &e);
    reply_json(r, 200, json_pack("{s:s s:s}", "id", id, "state", "ended"));
}

static void h_job_hints(core_t *c, hreq_t *rq, reply_t *r)
{
    cerr_t e;
    job_t *j = job_for(c, rq, r);
    if (!j)
        return;
    if (!rq->body)
        return (void)reply_error(r, 400, NULL, "a JSON body is required");
    job_t save = *j;
    if (core_job_hints(c, j, rq->body, &e) < 0) {
        *j = save;
        return reply_cerr(r, &e);
    }
    core_job_save(c, j);
    reply_json(r, 200, core_job_json(c, j, true));
}

static void h_job_begin(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "nodes", F_INT, false }, { NULL, 0, false } };
    long nodes = 0;
    cerr_t e;
    if (!need_admin(rq, r) || !check_body(rq, r, spec, false))
        return;
    job_t *j = job_for(c, rq, r);
    if (!j || !get_int(rq, r, "nodes", 1, 10000000, &nodes))
        return;
    if (core_job_begin(c, j, (int)nodes, &e) < 0)
        return reply_cerr(r, &e);
    reply_json(r, 200, core_job_json(c, j, true));
}

/* ------------------------------------------------------------------ allocations */
static void h_alloc_create(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = {
        { "capacity", F_SIZE, true }, { "nodes", F_INT, false }, { "pool", F_STR, false },
        { NULL, 0, false }
    };
    double cap = 0;
    long nodes = 0;
    bool created;
    cerr_t e;
    if (!need_admin(rq, r) || !check_body(rq, r, spec, true))
        return;
    job_t *j = job_for(c, rq, r);
    if (!j || !get_size(rq, r, "capacity", true, &cap)
        || !get_int(rq, r, "nodes", 1, 100000, &nodes))
        return;
    const char *pool = get_str(rq, "pool");
    if (pool && !check_name(r, "pool", pool))
        return;
    if (core_alloc_create(c, j, (uint64_t)ceil(cap), (int)nodes, pool, &created, &e) < 0)
        return reply_cerr(r, &e);
    reply_json(r, created ? 201 : 200, core_alloc_json(c, j, j->alloc, j->id));
}

static void h_alloc_get(core_t *c, hreq_t *rq, reply_t *r)
{
    job_t *j = job_for(c, rq, r);
    if (!j)
        return;
    if (!j->alloc)
        return (void)reply_error(r, 404, NULL, "job %s has no allocation", j->id);
    reply_json(r, 200, core_alloc_json(c, j, j->alloc, j->id));
}

static void h_alloc_release(core_t *c, hreq_t *rq, reply_t *r)
{
    cerr_t e;
    if (!need_admin(rq, r))
        return;
    job_t *j = job_for(c, rq, r);
    if (!j)
        return;
    if (core_alloc_release(c, j, &e) < 0)
        return reply_cerr(r, &e);
    reply_json(r, 200, json_pack("{s:s s:b}", "job", j->id, "released", 1));
}

/* ------------------------------------------------------------------ phases */
static void h_phase_request(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = {
        { "volume", F_SIZE, true }, { "direction", F_STR, false }, { "w_done", F_DUR, false },
        { "wait", F_DUR, false }, { NULL, 0, false }
    };
    double volume = 0, w_done = -1, wait = 0;
    cerr_t e;
    if (!check_body(rq, r, spec, true))
        return;
    job_t *j = job_for(c, rq, r);
    if (!j || !get_size(rq, r, "volume", true, &volume) || !get_dur(rq, r, "w_done", &w_done)
        || !get_dur(rq, r, "wait", &wait))
        return;
    const char *dir = get_str(rq, "direction");
    if (!dir)
        dir = j->io[0] ? j->io : "write";
    if (strcmp(dir, "write") && strcmp(dir, "read") && strcmp(dir, "readwrite"))
        return (void)reply_error(r, 400, "direction", "must be write, read or readwrite");
    phase_t *p = core_phase_request(c, j, volume, dir, w_done, &e);
    if (!p)
        return reply_cerr(r, &e);
    reply_json(r, 201, core_phase_json(c, p));
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
    const char *cols[] = { "id", "job", "volume", "direction", "state", "requested",
                           "granted", "finished", "bytes", "bandwidth", "nodes" };
    json_t *o = json_object();
    for (int i = 0; i < 11; i++) {
        json_t *v;
        switch (sqlite3_column_type(s, i)) {
        case SQLITE_INTEGER: v = json_integer(sqlite3_column_int64(s, i)); break;
        case SQLITE_FLOAT: v = json_real(sqlite3_column_double(s, i)); break;
        case SQLITE_TEXT: v = json_string((const char *)sqlite3_column_text(s, i)); break;
        default: v = json_null();
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

#define PHASE_COLS "p.id,p.job_id,p.volume,p.direction,p.state,p.requested,p.granted," \
                   "p.finished,p.bytes,p.bandwidth,p.nodes,j.uid"

/* A phase that is no longer open: from the database (committed). */
static void phase_from_db(core_t *c, hreq_t *rq, uint64_t pid, reply_t *r)
{
    dbphase_t d = { NULL, 0 };
    if (state_query(core_state(c), row_phase, &d, "SELECT " PHASE_COLS " FROM phases p JOIN jobs j"
                    " ON j.id=p.job_id WHERE p.id=?", "i", (int64_t)pid) < 0)
        return (void)reply_error(r, 500, NULL, "state database read failed");
    if (!d.o)
        return (void)reply_error(r, 404, NULL, "no phase %ju", (uintmax_t)pid);
    if (!rq->who->admin && rq->who->uid != d.uid) {
        json_decref(d.o);
        return (void)reply_error(r, 403, NULL, "phase %ju belongs to another user's job",
                                 (uintmax_t)pid);
    }
    reply_json(r, 200, d.o);
}

void routes_phase_view(core_t *c, hreq_t *rq, uint64_t pid, reply_t *r)
{
    phase_t *p = core_phase(c, pid);
    if (!p)
        return phase_from_db(c, rq, pid, r);
    if (!rq->who->admin && rq->who->uid != p->job->uid)
        return (void)reply_error(r, 403, NULL, "phase %ju belongs to another user's job",
                                 (uintmax_t)pid);
    reply_json(r, 200, core_phase_json(c, p));
}

static void h_phase_get(core_t *c, hreq_t *rq, reply_t *r)
{
    uint64_t pid;
    bool ok;
    if (!parse_u64(rq->args[0], &pid))
        return (void)reply_error(r, 400, "id", "must be a phase number");
    double wait = query_wait(rq, r, &ok);
    if (!ok)
        return;
    routes_phase_view(c, rq, pid, r);
    phase_t *p = core_phase(c, pid);
    if (r->status == 200 && p && p->state == PH_WAITING && wait > 0) {
        r->wait_phase = pid;
        r->wait = wait;
    }
}

static phase_t *phase_for(core_t *c, hreq_t *rq, reply_t *r, uint64_t *pid)
{
    if (!parse_u64(rq->args[0], pid)) {
        reply_error(r, 400, "id", "must be a phase number");
        return NULL;
    }
    phase_t *p = core_phase(c, *pid);
    if (!p) {
        /* closed already: a retried finish gets the recorded outcome */
        phase_from_db(c, rq, *pid, r);
        return NULL;
    }
    if (!rq->who->admin && rq->who->uid != p->job->uid) {
        reply_error(r, 403, NULL, "phase %ju belongs to another user's job", (uintmax_t)*pid);
        return NULL;
    }
    return p;
}

static void h_phase_finish(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "bytes", F_SIZE, false }, { NULL, 0, false } };
    double bytes = -1;
    uint64_t pid;
    cerr_t e;
    if (!check_body(rq, r, spec, false) || !get_size(rq, r, "bytes", false, &bytes))
        return;
    phase_t *p = phase_for(c, rq, r, &pid);
    if (!p)
        return;
    json_t *o = core_phase_json_closing(c, p);
    bool waiting = p->state == PH_WAITING;
    double vol = p->volume;
    if (core_phase_finish(c, p, bytes, &e) < 0) {
        json_decref(o);
        return reply_cerr(r, &e);
    }
    json_object_set_new(o, "state", json_string(waiting ? "cancelled" : "finished"));
    json_object_set_new(o, "finished", json_real(core_wall()));
    json_object_set_new(o, "bytes", json_real(bytes >= 0 ? bytes : waiting ? 0 : vol));
    reply_json(r, 200, o);
}

static void h_phase_progress(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "bytes", F_SIZE, true }, { NULL, 0, false } };
    double bytes = 0;
    uint64_t pid;
    cerr_t e;
    if (!check_body(rq, r, spec, true) || !get_size(rq, r, "bytes", false, &bytes))
        return;
    phase_t *p = phase_for(c, rq, r, &pid);
    if (!p) {
        if (r->status == 200)
            reply_error(r, 409, NULL, "phase %ju is closed", (uintmax_t)pid);
        return;
    }
    if (core_phase_progress(c, p, bytes, &e) < 0)
        return reply_cerr(r, &e);
    reply_json(r, 200, core_phase_json(c, p));
}

static void h_job_phases(core_t *c, hreq_t *rq, reply_t *r)
{
    job_t *j = job_for(c, rq, r);
    const char *lim = hreq_query(rq, "limit");
    long limit = lim ? strtol(lim, NULL, 10) : 100;
    if (!j)
        return;
    if (limit < 1 || limit > 10000)
        return (void)reply_error(r, 400, "limit", "must be in 1..10000");
    dbphase_t d = { json_array(), 0 };
    if (state_query(core_state(c), row_phase, &d, "SELECT " PHASE_COLS " FROM phases p JOIN jobs j"
                    " ON j.id=p.job_id WHERE p.job_id=? ORDER BY p.id DESC LIMIT ?", "si",
                    j->id, (int64_t)limit) < 0) {
        json_decref(d.o);
        return (void)reply_error(r, 500, NULL, "state database read failed");
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
    reply_json(r, 200, json_pack("{s:s s:o}", "job", j->id, "phases", d.o));
}

/* ------------------------------------------------------------------ stage */
static void stage_create(core_t *c, hreq_t *rq, reply_t *r, const char *kind)
{
    static const field_t spec[] = {
        { "source", F_STR, true }, { "destination", F_STR, true }, { "type", F_STR, false },
        { "size", F_SIZE, false }, { NULL, 0, false }
    };
    double size = -1;
    cerr_t e;
    if (!need_admin(rq, r) || !check_body(rq, r, spec, true))
        return;
    job_t *j = job_for(c, rq, r);
    if (!j)
        return;
    const char *src = get_str(rq, "source"), *dst = get_str(rq, "destination");
    const char *type = get_str(rq, "type");
    if (!check_path(r, "source", src) || !check_path(r, "destination", dst)
        || !get_size(rq, r, "size", false, &size))
        return;
    if (!type)
        type = "file";
    if (strcmp(type, "file") && strcmp(type, "directory"))
        return (void)reply_error(r, 400, "type", "must be file or directory");
    xfer_t *x = core_stage(c, j, kind, src, dst, type, size >= 0 ? (int64_t)size : -1, &e);
    if (!x)
        return reply_cerr(r, &e);
    reply_json(r, 201, core_xfer_json(c, x));
}

static void stage_get(core_t *c, hreq_t *rq, reply_t *r, const char *kind)
{
    job_t *j = job_for(c, rq, r);
    if (!j)
        return;
    json_t *a = json_array();
    for (int i = 0; i < j->nxfers; i++)
        if (!strcmp(j->xfers[i]->kind, kind))
            json_array_append_new(a, core_xfer_json(c, j->xfers[i]));
    reply_json(r, 200, json_pack("{s:s s:s s:s s:o}", "job", j->id, "kind", kind, "state",
                                 core_stage_summary(j, kind), "transfers", a));
}

static void h_stage_in(core_t *c, hreq_t *rq, reply_t *r) { stage_create(c, rq, r, "stage_in"); }
static void h_stage_out(core_t *c, hreq_t *rq, reply_t *r) { stage_create(c, rq, r, "stage_out"); }
static void h_stage_in_get(core_t *c, hreq_t *rq, reply_t *r) { stage_get(c, rq, r, "stage_in"); }
static void h_stage_out_get(core_t *c, hreq_t *rq, reply_t *r) { stage_get(c, rq, r, "stage_out"); }

static xfer_t *xfer_for(core_t *c, hreq_t *rq, reply_t *r)
{
    uint64_t id;
    if (!parse_u64(rq->args[0], &id)) {
        reply_error(r, 400, "id", "must be a transfer number");
        return NULL;
    }
    xfer_t *x = core_xfer_any(c, id);
    if (!x)
        reply_error(r, 404, "id", "no open transfer %ju", (uintmax_t)id);
    return x;
}

static void h_xfer_get(core_t *c, hreq_t *rq, reply_t *r)
{
    if (!need_admin(rq, r))
        return;
    xfer_t *x = xfer_for(c, rq, r);
    if (x)
        reply_json(r, 200, core_xfer_json(c, x));
}

static void h_xfer_update(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = {
        { "state", F_STR, false }, { "bytes_done", F_SIZE, false },
        { "bytes_total", F_SIZE, false }, { "message", F_STR, false }, { NULL, 0, false }
    };
    double done = -1, total = -1;
    cerr_t e;
    if (!need_admin(rq, r) || !check_body(rq, r, spec, true)
        || !get_size(rq, r, "bytes_done", false, &done)
        || !get_size(rq, r, "bytes_total", false, &total))
        return;
    xfer_t *x = xfer_for(c, rq, r);
    if (!x)
        return;
    const char *msg = get_str(rq, "message");
    if (msg && strlen(msg) > 1000)
        return (void)reply_error(r, 400, "message", "at most 1000 characters");
    if (core_xfer_update(c, x, get_str(rq, "state"), (int64_t)done, (int64_t)total, msg, &e) < 0)
        return reply_cerr(r, &e);
    reply_json(r, 200, core_xfer_json(c, x));
}

/* ------------------------------------------------------------------ persistent */
static void h_pbuf_create(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = {
        { "name", F_STR, true }, { "capacity", F_SIZE, true }, { "pool", F_STR, false },
        { "uid", F_INT, false }, { "gid", F_INT, false }, { NULL, 0, false }
    };
    double cap = 0;
    long uid = rq->who->uid, gid = rq->who->gid;
    bool created;
    cerr_t e;
    if (!check_body(rq, r, spec, true))
        return;
    const char *name = get_str(rq, "name"), *pool = get_str(rq, "pool");
    if (!check_name(r, "name", name) || (pool && !check_name(r, "pool", pool))
        || !get_size(rq, r, "capacity", true, &cap))
        return;
    if ((has(rq, "uid") || has(rq, "gid")) && !rq->who->admin)
        return (void)reply_error(r, 403, "uid", "only SlurmUser and root create buffers for "
                                 "another user");
    if (!get_int(rq, r, "uid", 0, 4294967294L, &uid) || !get_int(rq, r, "gid", 0, 4294967294L, &gid))
        return;
    pbuf_t *b = core_pbuf_create(c, name, (uid_t)uid, (gid_t)gid, (uint64_t)ceil(cap), pool,
                                 &created, &e);
    if (!b)
        return reply_cerr(r, &e);
    reply_json(r, created ? 201 : 200, core_pbuf_json(c, b));
}

static void h_pbuf_list(core_t *c, hreq_t *rq, reply_t *r)
{
    reply_json(r, 200, json_pack("{s:o}", "persistent", core_pbufs_json(c)));
}

static pbuf_t *pbuf_for(core_t *c, hreq_t *rq, reply_t *r, bool owner_only)
{
    if (!check_name(r, "name", rq->args[0]))
        return NULL;
    pbuf_t *b = core_pbuf(c, rq->args[0]);
    if (!b) {
        reply_error(r, 404, "name", "no persistent buffer '%s'", rq->args[0]);
        return NULL;
    }
    if (owner_only && !rq->who->admin && rq->who->uid != b->uid) {
        reply_error(r, 403, NULL, "persistent buffer '%s' belongs to another user", b->name);
        return NULL;
    }
    return b;
}

static void h_pbuf_get(core_t *c, hreq_t *rq, reply_t *r)
{
    pbuf_t *b = pbuf_for(c, rq, r, false);
    if (b)
        reply_json(r, 200, core_pbuf_json(c, b));
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
        return reply_cerr(r, &e);
    reply_json(r, 200, json_pack("{s:s s:b}", "name", name, "destroyed", 1));
}

static void h_pbuf_use(core_t *c, hreq_t *rq, reply_t *r)
{
    static const field_t spec[] = { { "job", F_STR, true }, { NULL, 0, false } };
    cerr_t e;
    if (!check_body(rq, r, spec, true))
        return;
    pbuf_t *b = pbuf_for(c, rq, r, true);
    if (!b)
        return;
    const char *jid = get_str(rq, "job");
    if (!check_name(r, "job", jid))
        return;
    job_t *j = core_job(c, jid);
    if (!j)
        return (void)reply_error(r, 404, "job", "no job %s", jid);
    if (!rq->who->admin && j->uid != rq->who->uid)
        return (void)reply_error(r, 403, "job", "job %s belongs to another user", jid);
    if (!rq->who->admin && b->uid != j->uid)
        return (void)reply_error(r, 403, "job", "the buffer's owner is not the job's owner");
    if (core_pbuf_use(c, b, j, &e) < 0)
        return reply_cerr(r, &e);
    reply_json(r, 200, core_pbuf_json(c, b));
}

static void h_pbuf_unuse(core_t *c, hreq_t *rq, reply_t *r)
{
    cerr_t e;
    pbuf_t *b = pbuf_for(c, rq, r, true);
    if (!b || !check_name(r, "job", rq->args[1]))
        return;
    job_t *j = core_job(c, rq->args[1]);
    if (!j)
        return (void)reply_error(r, 404, "job", "no job %s", rq->args[1]);
    if (core_pbuf_unuse(c, b, j, &e) < 0)
        return reply_cerr(r, &e);
    reply_json(r, 200, core_pbuf_json(c, b));
}

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
    if (!need_admin(rq, r) || !check_body(rq, r, spec, false))
        return;
    int idx = node_for(c, rq, r);
    if (idx < 0)
        return;
    const char *reason = get_str(rq, "reason");
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
    if (!need_admin(rq, r) || !check_body(rq, r, spec, true))
        return;
    const char *id = get_str(rq, "id");
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

    if (!check_body(rq, r, spec, true))
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

/* An administrator frees a buffer kept after a stage-out that could not be made
 * durable (GET /v1/status "held"). */
static void h_held_release(core_t *c, hreq_t *rq, reply_t *r)
{
    cerr_t e;
    uint64_t bytes = 0;
    if (!need_admin(rq, r))
        return;
    if (core_held_release(c, rq->args[0], &bytes, &e) < 0)
        return reply_cerr(r, &e);
    reply_json(r, 200, json_pack("{s:s s:b s:I}", "job", rq->args[0], "released", 1,
                                 "bytes", (json_int_t)bytes));
}

/* ------------------------------------------------------------------ table */
static const route_t routes[] = {
    { "GET",    "/v1/status",                  h_status,        false },
    { "GET",    "/v1/jobs",                    h_jobs_list,     false },
    { "POST",   "/v1/jobs",                    h_jobs_create,   true },
    { "GET",    "/v1/jobs/*",                  h_job_get,       false },
    { "DELETE", "/v1/jobs/*",                  h_job_end,       false },
    { "PUT",    "/v1/jobs/*/hints",            h_job_hints,     true },
    { "POST",   "/v1/jobs/*/begin",            h_job_begin,     true },
    { "POST",   "/v1/jobs/*/allocation",       h_alloc_create,  true },
    { "GET",    "/v1/jobs/*/allocation",       h_alloc_get,     false },
    { "DELETE", "/v1/jobs/*/allocation",       h_alloc_release, false },
    { "POST",   "/v1/jobs/*/phases",           h_phase_request, true },
    { "GET",    "/v1/jobs/*/phases",           h_job_phases,    false },
    { "POST",   "/v1/jobs/*/stage_in",         h_stage_in,      true },
    { "GET",    "/v1/jobs/*/stage_in",         h_stage_in_get,  false },
    { "POST",   "/v1/jobs/*/stage_out",        h_stage_out,     true },
    { "GET",    "/v1/jobs/*/stage_out",        h_stage_out_get, false },
    { "GET",    "/v1/phases/*",                h_phase_get,     false },
    { "POST",   "/v1/phases/*/finish",         h_phase_finish,  true },
    { "POST",   "/v1/phases/*/progress",       h_phase_progress, true },
    { "GET",    "/v1/transfers/*",             h_xfer_get,      false },
    { "PUT",    "/v1/transfers/*",             h_xfer_update,   true },
    { "GET",    "/v1/persistent",              h_pbuf_list,     false },
    { "POST",   "/v1/persistent",              h_pbuf_create,   true },
    { "GET",    "/v1/persistent/*",            h_pbuf_get,      false },
    { "DELETE", "/v1/persistent/*",            h_pbuf_destroy,  false },
    { "POST",   "/v1/persistent/*/use",        h_pbuf_use,      true },
    { "DELETE", "/v1/persistent/*/use/*",      h_pbuf_unuse,    false },
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

/* Match path against pattern; fills args. */
static bool match(const char *pattern, const char *path, const char **args, char *buf,
                  size_t buflen)
{
    /* buf: a copy of path we cut into segments */
    int na = 0;
    snprintf(buf, buflen, "%s", path);
    char *sp = NULL, *pp = NULL;
    char pat[128];
    snprintf(pat, sizeof(pat), "%s", pattern);
    char *a = strtok_r(pat, "/", &pp), *b = strtok_r(buf, "/", &sp);
    while (a && b) {
        if (!strcmp(a, "*")) {
            if (na < 4)
                args[na++] = b;
        } else if (strcmp(a, b)) {
            return false;
        }
        a = strtok_r(NULL, "/", &pp);
        b = strtok_r(NULL, "/", &sp);
    }
    return !a && !b;
}

const route_t *routes_match(const char *method, char *path, const char **args, int *status)
{
    static __thread char buf[2048];
    const route_t *found = NULL;
    bool path_ok = false;
    size_t n = strlen(path);

    *status = 404;
    if (n == 0 || n >= sizeof(buf) || path[0] != '/')
        return NULL;
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        const char *tmp[4] = { NULL };
        if (!match(routes[i].pattern, path, tmp, buf, sizeof(buf)))
            continue;
        path_ok = true;
        if (strcmp(routes[i].method, method))
            continue;
        found = &routes[i];
        /* args point into path: recompute them there */
        for (int k = 0; k < 4; k++)
            args[k] = NULL;
        {
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
        }
        return found;
    }
    if (path_ok)
        *status = 405;
    return NULL;
}
