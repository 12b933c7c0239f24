/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_steps.c - burst_buffer/harmonia: the agent's steps, the requests to
 *  bbmgrd for each job, one at a time or in one POST /v1/batch.
 *  How the plugin works: burst_buffer_harmonia.c.
\*****************************************************************************/

#include "bbh_model.h"
#include "bbh_steps.h"

/* ------------------------------------------------------------------ bbmgrd */

/* $HARMONIA_BB/x -> <path>/x */
static char *_expand(const char *s, const char *bb_path)
{
    const char *rest = NULL;

    if (!strncmp(s, "$HARMONIA_BB", 12))
        rest = s + 12;
    else if (!strncmp(s, "${HARMONIA_BB}", 14))
        rest = s + 14;
    if (!rest || !bb_path)
        return xstrdup(s);
    return xstrdup_printf("%s%s", bb_path, rest);
}

extern void bbh_work_free(work_t *w)
{
    xfree(w->user_name);
    xfree(w->job_name);
    hu_bb_request_free(&w->req);
    xfree(w->bb_path);
    xfree(w->new_path);
    xfree(w->new_nodes);
    xfree(w->persist_env);
    xfree(w->msg);
    xfree(w->subst_err);
}

/*
 * The steps that are one request each (register, allocate, begin, teardown)
 * come in two halves: *_body() makes the request, *_done() takes its answer,
 * so that the agent can send the requests of several jobs in one batch
 * (bbh_run_batch) or one at a time (_run).
 */
static json_t *_register_body(work_t *w)
{
    json_t *body, *hints;
    char id[16];

    snprintf(id, sizeof(id), "%u", w->job_id);
    body = json_pack("{s:s s:i s:i}", "id", id, "uid", (int)w->user_id, "gid", (int)w->group_id);
    if (w->user_name)
        json_object_set_new(body, "user", json_string(w->user_name));
    if (w->job_name)
        json_object_set_new(body, "name", json_string(w->job_name));
    if (w->req.has_hints) {
        hints = json_pack("{s:f s:f s:s s:i}", "w_iter", w->req.w_iter, "io_volume",
                          (double)w->req.io_volume, "io", hu_bb_io_str(w->req.io), "priority",
                          w->req.priority);
        if (w->req.phases)
            json_object_set_new(hints, "phases", json_integer(w->req.phases));
        json_object_set_new(body, "hints", hints);
    }
    return body;
}

/* A request's answer: bbmgrd unreachable or failing (5xx, 507 no room yet),
 * try again; refused (4xx), the step fails; both free *resp.  Else
 * STEP_NEXT. */
/* The job's paths from an allocation of bbmgrd's (its "nodes"): the first node's
 * directory ($HARMONIA_BB) and the node names ($HARMONIA_BB_NODES). */
static void _take_paths(work_t *w, json_t *alloc)
{
    json_t *nodes = json_object_get(alloc, "nodes");
    double created = json_number_value(json_object_get(alloc, "created"));

    if (created > 0)
        w->alloc_created = (time_t)created;

    for (size_t i = 0; json_is_array(nodes) && i < json_array_size(nodes); i++) {
        json_t *n = json_array_get(nodes, i);
        const char *name = bbh_json_str(n, "name");
        if (i == 0) {
            xfree(w->new_path);
            xfree(w->new_nodes);
            if (bbh_json_str(n, "path"))
                w->new_path = xstrdup(bbh_json_str(n, "path"));
        }
        if (name)
            xstrfmtcat(w->new_nodes, "%s%s", w->new_nodes ? "," : "", name);
    }
}

static step_rc_t _status_rc(int st, json_t **resp)
{
    if (st >= 0 && st < 400)
        return STEP_NEXT;
    json_decref(*resp);
    *resp = NULL;
    return (st < 0 || st >= 500) ? STEP_AGAIN : STEP_FAIL;
}

static step_rc_t _register_done(work_t *w, int st)
{
    if (st < 0 || st >= 500)
        return STEP_AGAIN;
    if (st >= 400)
        return STEP_FAIL;
    w->registered = true;
    return STEP_NEXT;
}

static step_rc_t _step_register(hm_client_t *cli, work_t *w)
{
    json_t *body = _register_body(w), *resp = NULL;
    int st = bbh_call(cli, "POST", "/v1/jobs", body, &resp, &w->msg);

    json_decref(body);
    json_decref(resp);
    return _register_done(w, st);
}

static json_t *_alloc_body(work_t *w, char *path, size_t len)
{
    json_t *body = json_pack("{s:f}", "capacity", (double)w->req.capacity);

    if (w->req.nodes)
        json_object_set_new(body, "nodes", json_integer(w->req.nodes));
    if (w->req.pool)
        json_object_set_new(body, "pool", json_string(w->req.pool));
    snprintf(path, len, "/v1/jobs/%u/allocation", w->job_id);
    return body;
}

static step_rc_t _alloc_done(work_t *w, int st, json_t *resp)
{
    if (st == 507 || st == 503 || st < 0 || st >= 500) {
        if (st == 507) {
            char sz[32], fz[32], pool[64], text[512];
            uintmax_t cap = 0, free_b = 0;
            int need = 0, up = 0;

            hm_error_text(resp, text, sizeof(text));
            xfree(w->msg);
            /* enough free space in all, but not on enough nodes:
			 * say so, it is not the same wait */
            if ((sscanf(text,
                        "%*[^:]: pool %63s cannot hold %ju bytes on %d node(s) now (%d nodes up, "
                        "%ju bytes free)",
                        pool, &cap, &need, &up, &free_b)
                     == 5
                 || sscanf(text,
                           "pool %63s cannot hold %ju bytes on %d node(s) now (%d nodes up, %ju "
                           "bytes free)",
                           pool, &cap, &need, &up, &free_b)
                        == 5)
                && free_b >= w->req.capacity)
                w->msg =
                    xstrdup_printf("waiting for buffer space on enough nodes: %s needs room on %d "
                                   "node(s); pool %s has %s free, spread over its %d nodes up",
                                   hu_bb_size_str(w->req.capacity, sz, sizeof(sz)), need, pool,
                                   hu_bb_size_str(free_b, fz, sizeof(fz)), up);
            else
                w->msg = xstrdup_printf("waiting for %s of free buffer space%s%s",
                                        hu_bb_size_str(w->req.capacity, sz, sizeof(sz)),
                                        w->req.pool ? " in pool " : "",
                                        w->req.pool ? w->req.pool : "");
        }
        return STEP_AGAIN;
    }
    if (st >= 400)
        return STEP_FAIL;
    _take_paths(w, resp);
    w->allocated = true;
    w->dirs_ready = !json_is_false(json_object_get(resp, "ready"));
    return STEP_NEXT;
}

static step_rc_t _step_alloc(hm_client_t *cli, work_t *w)
{
    json_t *body, *resp = NULL;
    char path[64];
    step_rc_t rc;
    int st;

    if (!w->req.has_buffer)
        return STEP_NEXT;
    body = _alloc_body(w, path, sizeof(path));
    st = bbh_call(cli, "POST", path, body, &resp, &w->msg);
    json_decref(body);
    rc = _alloc_done(w, st, resp);
    json_decref(resp);
    return rc;
}

/*
 * The plugin calls bbmgrd as an administrator, which may attach or destroy any
 * persistent buffer: apply the owner rule (doc/api.md, as Slurm's datawarp
 * plugin) for the job's user here.  STEP_NEXT: the user may act on the buffer
 * (or it does not exist); STEP_AGAIN; STEP_FAIL with w->msg set.
 */
static step_rc_t _check_owner(hm_client_t *cli, work_t *w, const char *name)
{
    json_t *resp = NULL;
    char path[160], *owner;
    uint32_t uid;
    int st;

    if ((w->user_id == 0) || (w->user_id == slurm_conf.slurm_user_id))
        return STEP_NEXT;
    snprintf(path, sizeof(path), "/v1/persistent/%s", name);
    st = bbh_call(cli, "GET", path, NULL, &resp, &w->msg);
    if (st == 404) {
        json_decref(resp);
        xfree(w->msg);
        return STEP_NEXT;
    }
    if (st < 0 || st >= 400) {
        json_decref(resp);
        return st >= 400 && st < 500 ? STEP_FAIL : STEP_AGAIN;
    }
    uid = json_integer_value(json_object_get(resp, "uid"));
    json_decref(resp);
    if (uid == w->user_id)
        return STEP_NEXT;
    owner = uid_to_string_or_null(uid);
    xfree(w->msg);
    if (owner)
        w->msg = xstrdup_printf("persistent buffer '%s' belongs to another user (%s)", name, owner);
    else
        w->msg =
            xstrdup_printf("persistent buffer '%s' belongs to another user (uid %u)", name, uid);
    xfree(owner);
    return STEP_FAIL;
}

static step_rc_t _step_persistent(hm_client_t *cli, work_t *w)
{
    for (int i = 0; i < w->req.npersist; i++) {
        hu_bb_persist_t *p = &w->req.persist[i];
        json_t *body = NULL, *resp = NULL, *nodes;
        char path[160];
        step_rc_t rc;
        int st;

        if ((p->op == HU_BB_PERSIST_USE || p->op == HU_BB_PERSIST_DESTROY)
            && ((rc = _check_owner(cli, w, p->name)) != STEP_NEXT))
            return rc;
        if (p->op == HU_BB_PERSIST_CREATE) {
            body = json_pack("{s:s s:f s:i s:i}", "name", p->name, "capacity", (double)p->capacity,
                             "uid", (int)w->user_id, "gid", (int)w->group_id);
            if (p->pool)
                json_object_set_new(body, "pool", json_string(p->pool));
            st = bbh_call(cli, "POST", "/v1/persistent", body, &resp, &w->msg);
        } else if (p->op == HU_BB_PERSIST_USE) {
            char id[32];
            snprintf(id, sizeof(id), "%u", w->job_id);
            body = json_pack("{s:s}", "job", id);
            snprintf(path, sizeof(path), "/v1/persistent/%s/use", p->name);
            st = bbh_call(cli, "POST", path, body, &resp, &w->msg);
        } else {
            continue; /* destroy: at stage-out */
        }
        json_decref(body);
        if ((rc = _status_rc(st, &resp)) != STEP_NEXT)
            return rc;
        nodes = json_object_get(resp, "nodes");
        if (json_is_array(nodes) && json_array_size(nodes)) {
            const char *pp = bbh_json_str(json_array_get(nodes, 0), "path");
            if (pp) {
                char *up = xstrdup(p->name);
                for (char *c = up; *c; c++)
                    *c = (*c == '-' || *c == '.') ? '_' : toupper((unsigned char)*c);
                xstrfmtcat(w->persist_env, "HARMONIA_PERSISTENT_%s=%s\n", up, pp);
                xfree(up);
                if (!w->bb_path && !w->new_path)
                    w->new_path = xstrdup(pp);
            }
        }
        json_decref(resp);
    }
    return STEP_NEXT;
}

/* Stage-in or stage-out: request the transfers once, then poll until done. */
static step_rc_t _step_stage(hm_client_t *cli, work_t *w, bool in)
{
    const char *kind = in ? "stage_in" : "stage_out";
    hu_bb_stage_t *items = in ? w->req.stage_in : w->req.stage_out;
    int n = in ? w->req.nstage_in : w->req.nstage_out;
    const char *bb = w->new_path ? w->new_path : w->bb_path;
    json_t *resp = NULL;
    const char *state;
    char path[96];
    step_rc_t rc;
    int st;

    if (n == 0)
        return STEP_NEXT;
    snprintf(path, sizeof(path), "/v1/jobs/%u/%s", w->job_id, kind);
    st = bbh_call(cli, "GET", path, NULL, &resp, &w->msg);
    if ((rc = _status_rc(st, &resp)) != STEP_NEXT)
        return rc;
    state = bbh_json_str(resp, "state");
    if (state && !strcmp(state, "none")) {
        json_decref(resp);
        for (int i = 0; i < n; i++) {
            char *src = _expand(items[i].source, bb);
            char *dst = _expand(items[i].destination, bb);
            json_t *body = json_pack("{s:s s:s}", "source", src, "destination", dst);
            /* over the job's buffer nodes (harmonia.conf(5)) */
            if (conf.stage_spread)
                json_object_set_new(body, "spread", json_true());
            if (items[i].type != HU_BB_TYPE_UNSET)
                json_object_set_new(body, "type", json_string(hu_bb_type_str(items[i].type)));
            st = bbh_call(cli, "POST", path, body, NULL, &w->msg);
            json_decref(body);
            xfree(src);
            xfree(dst);
            if (st < 0 || st >= 500)
                return STEP_AGAIN; /* GET first next time */
            if (st >= 400)
                return STEP_FAIL;
        }
        xfree(w->msg);
        w->msg = xstrdup_printf("%s requested", in ? "stage-in" : "stage-out");
        w->stage_wait = true;
        return STEP_AGAIN;
    }
    if (state && !strcmp(state, "done")) {
        json_decref(resp);
        return STEP_NEXT;
    }
    if (state && !strcmp(state, "failed")) {
        json_t *tr = json_object_get(resp, "transfers");
        const char *m = NULL;
        for (size_t i = 0; json_is_array(tr) && i < json_array_size(tr); i++)
            if ((m = bbh_json_str(json_array_get(tr, i), "message")))
                break;
        xfree(w->msg);
        w->msg = xstrdup_printf("%s failed: %s", in ? "stage-in" : "stage-out",
                                m ? m : "no reason given");
        json_decref(resp);
        return STEP_FAIL;
    }
    xfree(w->msg);
    w->msg = xstrdup_printf("%s %s", in ? "stage-in" : "stage-out", state ? state : "in progress");
    json_decref(resp);
    w->stage_wait = true;
    return STEP_AGAIN;
}

/* The buffer's directories are there: a node served by an agent makes the job's
 * directory at its next report after the allocation (GET /v1/jobs/ID/allocation
 * says "ready"); the job must not start before.  A bbmgrd that does not say is
 * ready. */
/* GET /v1/jobs/ID, or what follows it (sub): bbmgrd's status, *resp its reply. */
static int _get_job(hm_client_t *cli, work_t *w, const char *sub, json_t **resp)
{
    char path[96];

    snprintf(path, sizeof(path), "/v1/jobs/%u%s", w->job_id, sub);
    return bbh_call(cli, "GET", path, NULL, resp, &w->msg);
}

static step_rc_t _step_dirs_ready(hm_client_t *cli, work_t *w)
{
    json_t *resp = NULL, *ready;
    int st;

    if (w->dirs_ready || !w->req.has_buffer)
        return STEP_NEXT;
    st = _get_job(cli, w, "/allocation", &resp);
    if (st < 0 || st >= 500) {
        json_decref(resp);
        return STEP_AGAIN;
    }
    ready = st == 200 ? json_object_get(resp, "ready") : NULL;
    if (!json_is_false(ready)) {
        /* bbmgrd may have moved the buffer off a lost node before the job
		 * runs: $HARMONIA_BB and $HARMONIA_BB_NODES are what it says now */
        if (st == 200)
            _take_paths(w, resp);
        json_decref(resp);
        return STEP_NEXT; /* ready, or no allocation (404) */
    }
    json_decref(resp);
    xfree(w->msg);
    w->msg = xstrdup("buffer directories being made by the buffer nodes' agents");
    w->dirs_wait = true;
    return STEP_AGAIN;
}

static step_rc_t _step_reconcile(hm_client_t *cli, work_t *w)
{
    json_t *resp = NULL, *alloc;
    int st = _get_job(cli, w, "", &resp);

    if (st == 404) {
        json_decref(resp);
        return STEP_NEXT; /* bbmgrd forgot it: register again */
    }
    if (st < 0 || st >= 400) {
        json_decref(resp);
        return st >= 400 && st < 500 ? STEP_FAIL : STEP_AGAIN;
    }
    alloc = json_object_get(resp, "allocation");
    if (alloc)
        _take_paths(w, alloc);
    w->registered = true;
    w->allocated = (w->new_path != NULL);
    json_decref(resp);
    return STEP_DONE;
}

static json_t *_begin_body(work_t *w, char *path, size_t len)
{
    snprintf(path, len, "/v1/jobs/%u/begin", w->job_id);
    return json_pack("{s:i}", "nodes", (int)(w->ncompute ? w->ncompute : 1));
}

static step_rc_t _begin_done(work_t *w, int st)
{
    if (st < 0 || st >= 500)
        return STEP_AGAIN;
    return STEP_DONE; /* a refused begin is not fatal to the job */
}

static step_rc_t _step_begin(hm_client_t *cli, work_t *w)
{
    char path[64];
    json_t *body = _begin_body(w, path, sizeof(path));
    int st = bbh_call(cli, "POST", path, body, NULL, &w->msg);

    json_decref(body);
    return _begin_done(w, st);
}

static step_rc_t _step_destroy_persistent(hm_client_t *cli, work_t *w)
{
    for (int i = 0; i < w->req.npersist; i++) {
        hu_bb_persist_t *p = &w->req.persist[i];
        char path[128];
        step_rc_t rc;
        int st;

        if (p->op != HU_BB_PERSIST_DESTROY)
            continue;
        if ((rc = _check_owner(cli, w, p->name)) == STEP_AGAIN)
            return rc;
        if (rc == STEP_FAIL) { /* another user's buffer: kept */
            error("%s: JobId=%u: destroy_persistent: %s", plugin_type, w->job_id, w->msg);
            continue;
        }
        snprintf(path, sizeof(path), "/v1/persistent/%s", p->name);
        st = bbh_call(cli, "DELETE", path, NULL, NULL, &w->msg);
        if (st < 0 || st >= 500)
            return STEP_AGAIN;
        if (st >= 400 && st != 404)
            error("%s: JobId=%u: %s", plugin_type, w->job_id, w->msg);
    }
    return STEP_NEXT;
}

static step_rc_t _teardown_done(work_t *w, int st)
{
    if (st < 0 || st >= 500)
        return STEP_AGAIN;
    w->released = true;
    return STEP_DONE; /* 404: nothing left to end */
}

static step_rc_t _step_teardown(hm_client_t *cli, work_t *w)
{
    char path[64];

    snprintf(path, sizeof(path), "/v1/jobs/%u", w->job_id);
    return _teardown_done(w, bbh_call(cli, "DELETE", path, NULL, NULL, &w->msg));
}

/* A buffer kept after a failed stage-out: released once bbmgrd no longer has
 * the job (bbmgr release, DELETE /v1/jobs/ID). */
static step_rc_t _step_kept(hm_client_t *cli, work_t *w)
{
    json_t *resp = NULL;
    const char *state;
    char path[64];
    int st;

    snprintf(path, sizeof(path), "/v1/jobs/%u", w->job_id);
    st = bbh_call(cli, "GET", path, NULL, &resp, &w->msg);
    state = bbh_json_str(resp, "state");
    if (st == 404 || (st == 200 && state && !strcmp(state, "ended"))) {
        json_decref(resp);
        w->released = true;
        return STEP_DONE;
    }
    json_decref(resp);
    xfree(w->msg); /* the job's record says it all already */
    return STEP_AGAIN;
}

/* Run the current step of w; w->step advances over STEP_NEXT results. */
static step_rc_t _run(hm_client_t *cli, work_t *w)
{
    step_rc_t rc = STEP_NEXT;

    if (w->subst_err && (w->want == WANT_STAGE_IN)) {
        xfree(w->msg);
        w->msg = xstrdup(w->subst_err);
        return STEP_FAIL;
    }
    while (rc == STEP_NEXT) {
        switch (w->want) {
        case WANT_STAGE_IN:
            switch (w->step) {
            case 0:
                rc = _step_register(cli, w);
                break;
            case 1:
                rc = _step_alloc(cli, w);
                break;
            case 2:
                rc = _step_persistent(cli, w);
                break;
            case 3:
                rc = _step_stage(cli, w, true);
                break;
            case 4:
                rc = _step_dirs_ready(cli, w);
                break;
            default:
                return STEP_DONE;
            }
            break;
        case WANT_RECONCILE:
            rc = _step_reconcile(cli, w);
            if (rc == STEP_NEXT) { /* unknown to bbmgrd */
                w->want = WANT_STAGE_IN;
                w->step = 0;
                continue;
            }
            return rc;
        case WANT_BEGIN:
            return _step_begin(cli, w);
        case WANT_STAGE_OUT:
            switch (w->step) {
            case 0:
                rc = _step_stage(cli, w, false);
                break;
            case 1:
                rc = _step_destroy_persistent(cli, w);
                break;
            case 2:
                rc = _step_teardown(cli, w);
                return rc == STEP_DONE ? STEP_DONE : rc;
            default:
                return STEP_DONE;
            }
            break;
        case WANT_TEARDOWN:
            return _step_teardown(cli, w);
        case WANT_KEPT:
            return _step_kept(cli, w);
        default:
            return STEP_DONE;
        }
        if (rc == STEP_NEXT)
            w->step++;
    }
    return rc;
}

/*
 * Batches.  The steps that are one request each, of every job due in a round
 * (registration and allocation at stage-in, begin, teardown; with a GET
 * /v1/pools after teardowns), go to bbmgrd in one POST /v1/batch: one HTTP
 * exchange and one durable commit in bbmgrd for all of them, where one request
 * each cost an exchange and a commit each (doc/api.md).  A burst of
 * submissions or of job ends then costs bbmgrd and this thread a fraction of
 * what it did.  The other steps (persistent buffers, transfers, reconcile) go
 * one request at a time, after the batch, from where it left the job.
 */


typedef enum { BI_REGISTER, BI_ALLOC, BI_BEGIN, BI_TEARDOWN, BI_POOLS } bi_kind_t;

typedef struct {
    int job; /* index in the round's works; -1: pools */
    bi_kind_t kind;
    char path[64];
    const char *method;
} bitem_t;

static bool batch_unsupported = false; /* bbmgrd answered 404/405 (agent thread) */

static void _bitem_add(json_t *reqs, bitem_t *items, int *ni, int job, bi_kind_t kind,
                       const char *method, const char *path, json_t *body)
{
    bitem_t *it = &items[(*ni)++];
    json_t *r = json_pack("{s:s s:s}", "method", method, "path", path);

    it->job = job;
    it->kind = kind;
    it->method = method;
    snprintf(it->path, sizeof(it->path), "%s", path);
    if (body)
        json_object_set_new(r, "body", body);
    json_array_append_new(reqs, r);
}

/* Add the requests of w's next one-request steps to the batch (none: its
 * next step goes alone).  Steps that need no request are passed over. */
static void _plan(work_t *w, int job, json_t *reqs, bitem_t *items, int *ni)
{
    char path[64];
    json_t *body;
    bool destroy = false;

    if (w->subst_err)
        return; /* _run() says why */
    switch (w->want) {
    case WANT_STAGE_IN:
        if (w->step == 0) {
            _bitem_add(reqs, items, ni, job, BI_REGISTER, "POST", "/v1/jobs", _register_body(w));
        }
        if ((w->step == 0 || w->step == 1) && w->req.has_buffer) {
            body = _alloc_body(w, path, sizeof(path));
            _bitem_add(reqs, items, ni, job, BI_ALLOC, "POST", path, body);
        }
        break;
    case WANT_BEGIN:
        body = _begin_body(w, path, sizeof(path));
        _bitem_add(reqs, items, ni, job, BI_BEGIN, "POST", path, body);
        break;
    case WANT_STAGE_OUT:
        for (int i = 0; i < w->req.npersist; i++)
            if (w->req.persist[i].op == HU_BB_PERSIST_DESTROY)
                destroy = true;
        if (w->step == 0 && w->req.nstage_out == 0)
            w->step = 1;
        if (w->step == 1 && !destroy)
            w->step = 2;
        if (w->step != 2)
            break;
        /* fall through */
    case WANT_TEARDOWN:
        snprintf(path, sizeof(path), "/v1/jobs/%u", w->job_id);
        _bitem_add(reqs, items, ni, job, BI_TEARDOWN, "DELETE", path, NULL);
        break;
    default:
        break;
    }
}

/*
 * Run the due work of n jobs: their one-request steps in one batch when there
 * are two requests or more, then whatever each job has left, one request at a
 * time.  rcs[i] gets each job's result.  Returns true when the pools were
 * read in the batch.
 */
extern bool bbh_run_batch(hm_client_t *cli, work_t *ws, step_rc_t *rcs, int n)
{
    bitem_t *items = xcalloc(3 * n + 1, sizeof(*items));
    json_t *reqs = json_array(), *body = NULL, *resp = NULL, *replies;
    bool *planned = xcalloc(n, sizeof(bool)), teardown = false;
    bool pools = false;
    hm_error_t err;
    int ni = 0, st;

    for (int i = 0; i < n; i++) {
        int before = ni;

        rcs[i] = STEP_NEXT;
        if (batch_unsupported)
            continue;
        _plan(&ws[i], i, reqs, items, &ni);
        planned[i] = (ni > before);
        if (ni > before && items[ni - 1].kind == BI_TEARDOWN)
            teardown = true;
    }
    if (teardown)
        _bitem_add(reqs, items, &ni, -1, BI_POOLS, "GET", "/v1/pools", NULL);
    if (ni < 2) {
        /* one request: as well alone */
        for (int i = 0; i < n; i++)
            planned[i] = false;
        goto alone;
    }

    body = json_pack("{s:o}", "requests", reqs);
    reqs = NULL;
    st = hm_request(cli, "POST", "/v1/batch", body, &resp, &err);
    replies = json_object_get(resp, "replies");
    if (st == 200 && json_is_array(replies) && (int)json_array_size(replies) == ni) {
        for (int k = 0; k < ni; k++) {
            bitem_t *it = &items[k];
            json_t *r = json_array_get(replies, k);
            json_t *rb = json_object_get(r, "body");
            int rst = (int)json_integer_value(json_object_get(r, "status"));
            work_t *w;

            if (it->kind == BI_POOLS) {
                if (rst == 200) {
                    bbh_pools_apply(rb);
                    pools = true;
                }
                continue;
            }
            w = &ws[it->job];
            if (rcs[it->job] != STEP_NEXT)
                continue; /* an earlier step of it failed */
            if (rst >= 400)
                bbh_reply_msg(it->method, it->path, rst, rb, &w->msg);
            switch (it->kind) {
            case BI_REGISTER:
                rcs[it->job] = _register_done(w, rst);
                break;
            case BI_ALLOC:
                rcs[it->job] = _alloc_done(w, rst, rb);
                break;
            case BI_BEGIN:
                rcs[it->job] = _begin_done(w, rst);
                break;
            case BI_TEARDOWN:
                rcs[it->job] = _teardown_done(w, rst);
                break;
            default:
                break;
            }
            if (rcs[it->job] == STEP_NEXT)
                w->step++;
        }
    } else if (st == 404 || st == 405) {
        /* a bbmgrd without batches: one request at a time from now */
        info("%s: bbmgrd has no POST /v1/batch: one request at a time", plugin_type);
        batch_unsupported = true;
        for (int i = 0; i < n; i++)
            planned[i] = false;
    } else if (st < 0 || st >= 500) {
        for (int i = 0; i < n; i++) {
            if (!planned[i])
                continue;
            xfree(ws[i].msg);
            ws[i].msg = st < 0 ? xstrdup_printf("bbmgrd unreachable (%s)", err.text)
                               : xstrdup_printf("bbmgrd: POST /v1/batch: %d", st);
            rcs[i] = STEP_AGAIN;
        }
    } else {
        /* refused as a whole (should not happen): each alone */
        char buf[512];
        error("%s: bbmgrd refused a batch of %d requests: %d: %s", plugin_type, ni, st,
              resp ? hm_error_text(resp, buf, sizeof(buf)) : "");
        for (int i = 0; i < n; i++)
            planned[i] = false;
    }

alone:
    for (int i = 0; i < n; i++)
        if (!planned[i] || rcs[i] == STEP_NEXT)
            rcs[i] = _run(cli, &ws[i]);
    json_decref(reqs);
    json_decref(body);
    json_decref(resp);
    xfree(items);
    xfree(planned);
    return pools;
}
