/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * api.c — HTTP mechanics of bbmgrd on libmicrohttpd.
 *
 * Request flow: the body is read (at most limits.max_body, else 413 and the
 * connection is closed); the MUNGE credential is decoded; the route's handler runs
 * under the core lock and notes the state sequence number its reply depends on;
 * if that is not yet committed the connection is suspended and resumed by the
 * state writer's commit callback (group commit: one fsync for all of them).  A
 * long-poll suspends the connection until its phase changes or its wait ends.
 * Slow or idle clients are closed after limits.connection_timeout; suspended
 * connections do not hold a thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>

#include "api.h"
#include "auth.h"
#include "jout.h"
#include "log.h"
#include "metrics.h"
#include "routes.h"
#include "util.h"

typedef struct req req_t;

struct req {
    api_t *api;
    struct MHD_Connection *conn;
    char method[12];
    char *path;
    char *body;
    size_t len, cap;
    bool too_large;
    bool early; /* a reply was queued during the upload */
    int stage;  /* 0: new, 1: suspended, 2: reply ready */
    reply_t r;
    caller_t who;
    uint64_t barrier;
    /* waiting lists */
    bool on_commit, on_phase;
    bool counted;       /* in api.inflight */
    req_t *prev, *next; /* api->waiters (both kinds) */
    req_t *pnext;       /* chain of the same phase */
    uint64_t wait_phase;
    bool wake_closed; /* woken by its phase's close: view after the commit */
    double deadline;
    double t0;
    char session[AUTH_TOKEN_HEX + 16]; /* Harmonia-Session reply header, or "" */
    char scheme;                       /* 'm' MUNGE, 's' session, 0 none: counted in send_reply */
};

/* What a connection keeps between its requests (MHD socket context). */
typedef struct conn {
    auth_session_t session;
    /* api->conns, under api->conn_lock */
    struct conn *cprev, *cnext;
    int fd;
    bool peer;    /* a unix socket: uid is its peer's */
    bool counted; /* in api->per_uid */
    char pool;    /* TCP: 'u' in api->tcp_users, 'r' in api->tcp_reserved */
    uid_t uid;
    bool busy;    /* a whole request arrived and is being served */
    bool cut;     /* closed by the request deadline */
    double since; /* opened, or its previous reply sent */
} conn_t;

struct api {
    core_t *core;
    state_t *st;
    struct MHD_Daemon *tcp, *unx, *adm;
    char *unix_path, *admin_path;
    /* connections (limits) */
    pthread_mutex_t conn_lock;
    conn_t *conns;
    hmap_t *per_uid; /* uid -> connections + 1 (intptr) */
    long max_per_uid;
    long tcp_users, tcp_reserved; /* TCP connections from unprivileged and from
                                           privileged source ports */
    long max_users, max_reserved;
    double request_deadline;
    int tcp_port;
    /* live settings */
    pthread_mutex_t wlock;
    size_t max_body;
    double max_wait;
    uid_t slurm_uid;
    bool auth_none;
    bool metrics_public;
    double session_ttl;
    char *munge_socket;
    /* waiters */
    uint64_t committed;
    bool failed, stopping;
    int inflight; /* requests being served, long-polls parked aside */
    req_t *waiters;
    hmap_t *by_phase; /* phase id -> first req */
    /* counters */
    pthread_mutex_t clock_;
    api_counters_t cnt;
};

/* ------------------------------------------------------------------ waiters */
static void inflight(req_t *q, bool in)
{
    if (q->counted != in) {
        q->counted = in;
        __atomic_add_fetch(&q->api->inflight, in ? 1 : -1, __ATOMIC_RELAXED);
    }
}

static void waiter_link(api_t *a, req_t *q)
{
    q->prev = NULL;
    q->next = a->waiters;
    if (a->waiters)
        a->waiters->prev = q;
    a->waiters = q;
    a->cnt.waiters++;
}

static void waiter_unlink(api_t *a, req_t *q)
{
    if (!q->on_commit && !q->on_phase)
        return;
    if (q->prev)
        q->prev->next = q->next;
    else
        a->waiters = q->next;
    if (q->next)
        q->next->prev = q->prev;
    q->prev = q->next = NULL;
    if (q->on_phase) {
        req_t *first = hmap_iget(a->by_phase, q->wait_phase);
        if (first == q) {
            if (q->pnext)
                hmap_iput(a->by_phase, q->wait_phase, q->pnext);
            else
                hmap_idel(a->by_phase, q->wait_phase);
        } else {
            for (req_t *p = first; p; p = p->pnext)
                if (p->pnext == q) {
                    p->pnext = q->pnext;
                    break;
                }
        }
        q->pnext = NULL;
    }
    q->on_commit = q->on_phase = false;
    a->cnt.waiters--;
}

/* wlock held */
static void wake(api_t *a, req_t *q)
{
    waiter_unlink(a, q);
    MHD_resume_connection(q->conn);
}

void api_on_commit(uint64_t seq, bool ok, void *arg)
{
    api_t *a = arg;
    pthread_mutex_lock(&a->wlock);
    if (ok && seq > a->committed)
        a->committed = seq;
    if (!ok)
        a->failed = true;
    req_t *q = a->waiters;
    while (q) {
        req_t *n = q->next;
        if (q->on_commit && (q->barrier <= a->committed || a->failed))
            wake(a, q);
        q = n;
    }
    pthread_mutex_unlock(&a->wlock);
}

/* core lock held */
void api_on_phase(uint64_t pid, void *arg)
{
    api_t *a = arg;
    pthread_mutex_lock(&a->wlock);
    req_t *q;
    while ((q = hmap_iget(a->by_phase, pid)))
        wake(a, q);
    pthread_mutex_unlock(&a->wlock);
}

void api_tick(api_t *a)
{
    double now = hu_mono();
    pthread_mutex_lock(&a->wlock);
    req_t *q = a->waiters;
    while (q) {
        req_t *n = q->next;
        if (q->on_phase && q->deadline <= now)
            wake(a, q);
        q = n;
    }
    double deadline = a->request_deadline;
    pthread_mutex_unlock(&a->wlock);
    /* a request not whole within the deadline: its connection is shut down (MHD
     * then sees it end and closes it; the descriptor stays valid until the CLOSED
     * notification, which takes conn_lock) */
    pthread_mutex_lock(&a->conn_lock);
    for (conn_t *cc = a->conns; cc; cc = cc->cnext)
        if (!cc->busy && !cc->cut && now - cc->since > deadline) {
            cc->cut = true;
            shutdown(cc->fd, SHUT_RDWR);
            bl_debug("api: connection of %s%u: no whole request within %.0f s: closed",
                     cc->peer ? "uid " : "tcp ", cc->peer ? (unsigned)cc->uid : 0, deadline);
        }
    pthread_mutex_unlock(&a->conn_lock);
}

bool api_failed(api_t *a)
{
    pthread_mutex_lock(&a->wlock);
    bool f = a->failed;
    pthread_mutex_unlock(&a->wlock);
    return f;
}

static void get_counters(api_t *a, api_counters_t *out)
{
    pthread_mutex_lock(&a->clock_);
    *out = a->cnt;
    pthread_mutex_unlock(&a->clock_);
}

void api_reconfigure(api_t *a, const cfg_t *cfg)
{
    pthread_mutex_lock(&a->wlock);
    a->max_body = cfg->limits_max_body;
    a->max_wait = cfg->limits_max_wait;
    a->slurm_uid = cfg->slurm_uid;
    a->metrics_public = cfg->auth_metrics_public;
    a->session_ttl = cfg->auth_session_ttl;
    a->request_deadline = cfg->limits_request_deadline;
    pthread_mutex_unlock(&a->wlock);
    pthread_mutex_lock(&a->conn_lock);
    a->max_per_uid = cfg->limits_max_connections_per_uid;
    a->max_users = cfg->limits_max_connections;
    a->max_reserved = cfg->limits_reserved_connections;
    pthread_mutex_unlock(&a->conn_lock);
}

/* ------------------------------------------------------------------ responses */
static const double lat_buckets[] = {
    1e-4, 2.5e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2.5e-2, 0.1, 1, 10
};

static enum MHD_Result send_reply(req_t *q)
{
    api_t *a = q->api;
    reply_t *r = &q->r;
    char *buf;
    size_t len;
    const char *ctype;

    if (r->text) {
        buf = r->text;
        r->text = NULL;
        len = strlen(buf);
        ctype = r->ctype ? r->ctype : "text/plain; charset=utf-8";
    } else {
        if (!r->body) {
            r->status = r->status ? r->status : 204;
            buf = NULL;
            len = 0;
        } else {
            if (!(buf = jout_dumps(r->body, &len)))
                return MHD_NO;
        }
        ctype = "application/json";
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, buf ? buf : (void *)"", buf ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(buf);
        return MHD_NO;
    }
    if (len)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (r->status == 401)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "MUNGE");
    if (q->session[0])
        MHD_add_response_header(resp, "Harmonia-Session", q->session);
    if (q->too_large || r->status == 413)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(q->conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);

    double dt = hu_mono() - q->t0;
    int b = 0;
    while (b < 11 && dt > lat_buckets[b])
        b++;
    pthread_mutex_lock(&a->clock_);
    if (r->status > 0 && r->status < 600)
        a->cnt.by_code[r->status]++;
    a->cnt.lat_hist[b]++;
    a->cnt.lat_sum += dt;
    a->cnt.lat_count++;
    if (r->status == 401)
        a->cnt.auth_failures++;
    if (q->session[0])
        a->cnt.sessions_opened++;
    if (q->scheme == 'm')
        a->cnt.auth_munge++;
    else if (q->scheme == 's')
        a->cnt.auth_session++;
    if (r->status == 413)
        a->cnt.too_large++;
    a->cnt.batch_items += r->items;
    pthread_mutex_unlock(&a->clock_);
    bl_debug("api: %s %s -> %d (%.3f ms, uid %d)", q->method, q->path, r->status, dt * 1e3,
             (int)q->who.uid);
    return ret;
}

/* Hold the reply until its barrier is committed.  Returns true if suspended. */
static bool hold_for_commit(req_t *q)
{
    api_t *a = q->api;
    bool held = false;
    /* A lone request and the writer idle: commit here rather than hand the batch
     * to the writer and be resumed afterwards (the commit callback updates
     * a->committed).  With other requests in flight the writer groups them: an
     * HTTP thread blocked in fsync would stall its other connections (measured:
     * 10-30 % fewer ops/s at 1,000 jobs with 4 clients when committing inline). */
    if (a->st && q->barrier > 0 && __atomic_load_n(&a->inflight, __ATOMIC_RELAXED) <= 1)
        (void)state_try_commit(a->st, q->barrier);
    pthread_mutex_lock(&a->wlock);
    if (a->failed) {
        hreq_reply_error(&q->r, 500, NULL, "the state database failed: the daemon is stopping");
    } else if (q->barrier > a->committed) {
        q->on_commit = true;
        waiter_link(a, q);
        q->stage = 1;
        MHD_suspend_connection(q->conn);
        held = true;
    }
    pthread_mutex_unlock(&a->wlock);
    return held;
}

/* ------------------------------------------------------------------ processing */
static bool json_ctype(struct MHD_Connection *conn)
{
    const char *ct =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!ct)
        return false;
    size_t n = strcspn(ct, ";");
    while (n > 0 && ct[n - 1] == ' ')
        n--;
    return n == strlen("application/json") && !strncasecmp(ct, "application/json", n);
}

static conn_t *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/*
 * Authenticate q: a MUNGE credential (decoded by munged), or the token of the
 * session opened earlier on this connection (auth.h).  A MUNGE request that asks
 * "Harmonia-Session: open" opens (or renews) the connection's session.  The
 * requests of one connection are served one after the other, by one thread, so
 * its conn_t needs no lock.  Returns 0, or the status of the error reply made.
 */
static int authenticate(req_t *q)
{
    api_t *a = q->api;
    hu_error_t why; /* cut at 299 bytes in the answer, as it always was */
    conn_t *cc = conn_of(q->conn);
    const char *hdr =
        MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    double now = hu_mono(), ttl;
    int st;

    pthread_mutex_lock(&a->wlock);
    ttl = a->session_ttl;
    pthread_mutex_unlock(&a->wlock);
    if (auth_is_session(hdr)) {
        st = ttl > 0 ? auth_session_check(cc ? &cc->session : NULL, hdr, now, &q->who.uid,
                                          &q->who.gid, &why)
                     : (hu_errprintf(&why, "sessions are disabled (auth.session_ttl "
                                           "is 0): send a MUNGE credential"),
                        401);
        q->scheme = 's';
    } else {
        st = auth_munge(a->munge_socket, hdr, q->method, q->path, &q->who.uid, &q->who.gid, &why);
        q->scheme = 'm';
        const char *want =
            MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, "Harmonia-Session");
        if (!st && want && !strcasecmp(want, "open") && ttl > 0 && cc) {
            if (auth_session_open(&cc->session, q->who.uid, q->who.gid, now, ttl) == 0)
                snprintf(q->session, sizeof(q->session), "%s; ttl=%.0f", cc->session.token,
                         floor(ttl));
            else
                bl_warning("api: no session opened: getrandom: %s", strerror(errno));
        }
    }
    if (st) {
        hreq_reply_error(&q->r, st, "Authorization", "%.299s", why.text);
        return st;
    }
    q->who.admin = q->who.uid == 0 || q->who.uid == a->slurm_uid;
    return 0;
}

/* Run the request.  Returns true if the connection was suspended. */
static bool process(req_t *q)
{
    api_t *a = q->api;
    reply_t *r = &q->r;
    const char *args[4] = { NULL };
    char *pathcopy = NULL;
    json_t *body = NULL;
    int status = 0;
    bool suspended = false;

    if (q->too_large) {
        hreq_reply_error(r, 413, NULL, "request body larger than limits.max_body (%zu bytes)",
                         a->max_body);
        return false;
    }
    if (a->stopping) {
        hreq_reply_error(r, 503, NULL, "bbmgrd is stopping");
        return false;
    }
    bool is_metrics = !strcmp(q->path, "/metrics");
    /* authentication */
    if (a->auth_none || (is_metrics && a->metrics_public)) {
        q->who.uid = 0;
        q->who.gid = 0;
        q->who.admin = a->auth_none;
    } else if (authenticate(q) != 0) {
        return false;
    }
    if (is_metrics) {
        if (!a->metrics_public && !q->who.admin) {
            hreq_reply_error(r, 403, NULL, "metrics are for SlurmUser and root");
            return false;
        }
        r->status = 200;
        api_counters_t ac;
        get_counters(a, &ac);
        r->text = metrics_render(&ac, a->core, a->st);
        r->ctype = "text/plain; version=0.0.4; charset=utf-8";
        if (!r->text)
            hreq_reply_error(r, 500, NULL, "out of memory");
        return false;
    }
    if (!(pathcopy = strdup(q->path))) {
        hreq_reply_error(r, 500, NULL, "out of memory");
        return false;
    }
    const route_t *rt = routes_match(q->method, pathcopy, args, &status);
    if (!rt) {
        if (status == 405)
            hreq_reply_error(r, 405, NULL, "method %s not allowed on %s", q->method, q->path);
        else
            hreq_reply_error(r, 404, NULL, "no such resource: %s", q->path);
        goto out;
    }
    if (q->len > 0) {
        json_error_t jerr;
        if (!rt->body) {
            hreq_reply_error(r, 400, NULL, "%s %s takes no body", q->method, q->path);
            goto out;
        }
        if (!json_ctype(q->conn)) {
            hreq_reply_error(r, 415, "Content-Type", "the body must be application/json");
            goto out;
        }
        body = json_loadb(q->body, q->len, JSON_REJECT_DUPLICATES, &jerr);
        if (!body) {
            hreq_reply_error(r, 400, NULL, "invalid JSON at line %d column %d: %s", jerr.line,
                             jerr.column, jerr.text);
            goto out;
        }
        if (!json_is_object(body)) {
            hreq_reply_error(r, 400, NULL, "the body must be a JSON object");
            goto out;
        }
    }
    hreq_t rq = {
        .api = a, .who = &q->who, .body = body, .conn = q->conn, .max_wait = a->max_wait
    };
    memcpy(rq.args, args, sizeof(args));
    core_lock(a->core);
    rt->fn(a->core, &rq, r);
    if (r->wait_phase && r->wait > 0 && r->status < 300) {
        pthread_mutex_lock(&a->wlock);
        if (!a->stopping) {
            q->wait_phase = r->wait_phase;
            q->deadline = hu_mono() + fmin(r->wait, a->max_wait);
            q->on_phase = true;
            q->pnext = hmap_iget(a->by_phase, q->wait_phase);
            hmap_iput(a->by_phase, q->wait_phase, q);
            waiter_link(a, q);
            q->stage = 1;
            MHD_suspend_connection(q->conn);
            suspended = true;
            inflight(q, false); /* parked: not in the way of a lone request */
        }
        pthread_mutex_unlock(&a->wlock);
    }
    q->barrier = state_last_seq(a->st);
    core_unlock(a->core);
out:
    json_decref(body);
    free(pathcopy);
    if (suspended)
        return true;
    return hold_for_commit(q);
}

/* After a long-poll wakes: the phase's current view.  A phase that closed is read
 * from the database: first held for the commit of its close, then read (else the
 * view would be its last committed, open, state). */
static bool process_wake(req_t *q)
{
    api_t *a = q->api;
    hreq_t rq = { .api = a, .who = &q->who, .conn = q->conn, .max_wait = a->max_wait };
    core_lock(a->core);
    if (!q->wake_closed && !core_phase(a->core, q->wait_phase)) {
        q->wake_closed = true;
        q->barrier = state_last_seq(a->st);
        core_unlock(a->core);
        if (hold_for_commit(q))
            return true; /* resumed with wait_phase set: back here */
        core_lock(a->core);
    }
    routes_phase_view(a->core, &rq, q->wait_phase, &q->r);
    q->wait_phase = 0;
    q->r.wait_phase = 0;
    q->barrier = state_last_seq(a->st);
    core_unlock(a->core);
    return hold_for_commit(q);
}

static void conn_busy(api_t *a, struct MHD_Connection *conn, bool busy);

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
    api_t *a = cls;
    req_t *q = *con_cls;

    if (!q) {
        if (!(q = calloc(1, sizeof(*q))) || !(q->path = strdup(url))) {
            free(q);
            return MHD_NO;
        }
        q->api = a;
        q->conn = conn;
        q->t0 = hu_mono();
        inflight(q, true);
        q->who.uid = (uid_t)-1;
        snprintf(q->method, sizeof(q->method), "%s", method);
        *con_cls = q;
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > a->max_body) {
            /* refuse before reading it: the connection is closed after the reply */
            q->too_large = true;
            q->early = true;
            process(q);
            return send_reply(q);
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (q->early) {
            *upload_size = 0;
            return MHD_YES;
        }
        if (!q->too_large) {
            if (q->len + *upload_size > a->max_body) {
                /* a body without Content-Length grew past the limit: MHD cannot
                 * answer in the middle of an upload, so the connection is closed */
                pthread_mutex_lock(&a->clock_);
                a->cnt.too_large++;
                pthread_mutex_unlock(&a->clock_);
                bl_debug("api: %s %s: body over %zu bytes: connection closed", q->method, q->path,
                         a->max_body);
                return MHD_NO;
            }
            if (q->len + *upload_size + 1 > q->cap) {
                size_t cap = q->cap ? q->cap : 1024;
                while (cap < q->len + *upload_size + 1)
                    cap *= 2;
                char *nb = realloc(q->body, cap);
                if (!nb)
                    return MHD_NO;
                q->body = nb;
                q->cap = cap;
            }
            memcpy(q->body + q->len, upload_data, *upload_size);
            q->len += *upload_size;
            q->body[q->len] = '\0';
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (q->early)
        return MHD_YES;
    if (q->stage == 0) {
        conn_busy(a, conn, true);
        if (process(q))
            return MHD_YES;
        return send_reply(q);
    }
    if (q->stage == 1) {
        /* resumed: by a commit (the reply is ready) or a long-poll wake (the
         * phase's view is computed now, then held for its commit like any reply) */
        q->stage = 2;
        if (q->wait_phase) {
            inflight(q, true);
            bool held = process_wake(q);
            if (held)
                return MHD_YES;
        }
        return send_reply(q);
    }
    return send_reply(q);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    api_t *a = cls;
    req_t *q = *con_cls;
    if (!q)
        return;
    conn_busy(a, conn, false);
    pthread_mutex_lock(&a->wlock);
    waiter_unlink(a, q);
    pthread_mutex_unlock(&a->wlock);
    inflight(q, false);
    json_decref(q->r.body);
    free(q->r.text);
    free(q->body);
    free(q->path);
    free(q);
    *con_cls = NULL;
}

/* The TCP peer's port is privileged (below 1024): root opened it on its host. */
static bool privileged_peer(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    unsigned port = 65535;
    if (sa && sa->sa_family == AF_INET)
        port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
    else if (sa && sa->sa_family == AF_INET6)
        port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    return port < 1024;
}

/* A connection opens (lock held): count it for its uid (unix sockets), or in its
 * pool (TCP: users cannot take the privileged ports' pool, where the agents come
 * in); false: over the limit. */
static bool conn_count(api_t *a, conn_t *cc, struct MHD_Connection *conn, const char **why)
{
    struct ucred cr;
    socklen_t len = sizeof(cr);
    if (getsockopt(cc->fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.pid <= 0) {
        /* TCP: the caller is known only once authenticated */
        cc->pool = privileged_peer(conn) ? 'r' : 'u';
        long *n = cc->pool == 'r' ? &a->tcp_reserved : &a->tcp_users;
        if (*n >= (cc->pool == 'r' ? a->max_reserved : a->max_users)) {
            *why = cc->pool == 'r' ? "limits.reserved_connections" : "limits.max_connections";
            cc->pool = 0;
            return false;
        }
        (*n)++;
        return true;
    }
    *why = "limits.max_connections_per_uid";
    cc->peer = true;
    cc->uid = cr.uid;
    if (cr.uid == 0 || cr.uid == a->slurm_uid)
        return true;
    intptr_t n = (intptr_t)hmap_iget(a->per_uid, cr.uid);
    if (n - 1 >= a->max_per_uid)
        return false;
    if (hmap_iput(a->per_uid, cr.uid, (void *)(n ? n + 1 : 2)) < 0)
        return false;
    cc->counted = true;
    return true;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    api_t *a = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_t *cc = calloc(1, sizeof(conn_t)); /* NULL: no session here */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = cc;
        if (!cc || !ci)
            return;
        cc->fd = ci->connect_fd;
        cc->since = hu_mono();
        const char *why = NULL;
        pthread_mutex_lock(&a->conn_lock);
        bool ok = conn_count(a, cc, conn, &why);
        cc->cnext = a->conns;
        if (a->conns)
            a->conns->cprev = cc;
        a->conns = cc;
        if (!ok) {
            cc->cut = true;
            shutdown(cc->fd, SHUT_RDWR);
        }
        pthread_mutex_unlock(&a->conn_lock);
        if (!ok && cc->peer)
            bl_warning("api: uid %u holds %ld connections (%s): one more refused",
                       (unsigned)cc->uid, a->max_per_uid, why);
        else if (!ok)
            bl_warning("api: a TCP connection refused: %s reached", why);
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn_t *cc = *socket_context;
        if (cc) {
            explicit_bzero(cc->session.token, sizeof(cc->session.token));
            pthread_mutex_lock(&a->conn_lock);
            if (cc->cprev)
                cc->cprev->cnext = cc->cnext;
            else if (a->conns == cc)
                a->conns = cc->cnext;
            if (cc->cnext)
                cc->cnext->cprev = cc->cprev;
            if (cc->pool == 'u')
                a->tcp_users--;
            else if (cc->pool == 'r')
                a->tcp_reserved--;
            if (cc->counted) {
                intptr_t n = (intptr_t)hmap_iget(a->per_uid, cc->uid);
                if (n > 2)
                    hmap_iput(a->per_uid, cc->uid, (void *)(n - 1));
                else
                    hmap_idel(a->per_uid, cc->uid);
            }
            pthread_mutex_unlock(&a->conn_lock);
        }
        free(cc);
        *socket_context = NULL;
    }
}

/* The connection's request is whole (busy) or answered (idle again, its deadline
 * starts over). */
static void conn_busy(api_t *a, struct MHD_Connection *conn, bool busy)
{
    conn_t *cc = conn_of(conn);
    if (!cc)
        return;
    pthread_mutex_lock(&a->conn_lock);
    cc->busy = busy;
    if (!busy)
        cc->since = hu_mono();
    pthread_mutex_unlock(&a->conn_lock);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char buf[512];
    vsnprintf(buf, sizeof(buf), fmt, ap);
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    bl_debug("http: %s", buf);
}

/* ------------------------------------------------------------------ listeners */
static int unix_listen(const char *path, uid_t owner, mode_t mode, hu_error_t *err)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct stat sb;
    int fd;

    if (strlen(path) >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return hu_errprintf(err, "%s: path too long for a unix socket", path);
    }
    strcpy(sa.sun_path, path);
    /* its directory (/run/harmonia) may not exist yet outside systemd */
    char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash && slash != dir) {
        *slash = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
            int e = errno;
            free(dir);
            errno = e;
            return hu_errprintf(err, "%s: cannot create its directory: %s", path, strerror(e));
        }
    }
    free(dir);
    if (lstat(path, &sb) == 0) {
        if (!S_ISSOCK(sb.st_mode)) {
            errno = EEXIST;
            return hu_errprintf(err, "%s exists and is not a socket", path);
        }
        unlink(path);
    }
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return hu_errprintf(err, "socket: %s", strerror(errno));
    /* created 0600, then given its mode: the admin socket is never reachable by others */
    mode_t um = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(um);
    if (rc < 0 || (owner != (uid_t)-1 && chown(path, owner, (gid_t)-1) < 0) || chmod(path, mode) < 0
        || listen(fd, 1024) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return hu_errprintf(err, "%s: %s", path, strerror(e));
    }
    return fd;
}

static struct MHD_Daemon *start_daemon(api_t *a, const cfg_t *cfg, int fd,
                                       const struct sockaddr *sa, bool ipv6, hu_error_t *err)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME
                     | MHD_USE_ERROR_LOG | (ipv6 ? MHD_USE_IPv6 : 0);
    struct MHD_OptionItem opts[] = {
        { MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, a },
        { fd >= 0 ? MHD_OPTION_LISTEN_SOCKET : MHD_OPTION_SOCK_ADDR, fd >= 0 ? fd : 0,
          fd >= 0 ? NULL : (void *)sa },
        { MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)cfg->limits_threads, NULL },
        /* TCP: both pools, each counted in on_connection() */
        { MHD_OPTION_CONNECTION_LIMIT,
          (intptr_t)(cfg->limits_max_connections + (sa ? cfg->limits_reserved_connections : 0)),
          NULL },
        { MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)ceil(cfg->limits_connection_timeout), NULL },
        { MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, a },
        { MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, a },
        { MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL },
        { MHD_OPTION_END, 0, NULL },
    };
    struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, a, MHD_OPTION_ARRAY,
                                            opts, MHD_OPTION_END);
    if (!d) {
        errno = EADDRINUSE;
        hu_errprintf(err, "cannot start the HTTP listener%s%s", fd >= 0 ? " on " : "",
                     fd >= 0 ? a->unix_path : "");
    }
    return d;
}

/* A listener on the unix socket path (its own MHD daemon); *copy: the path. */
static struct MHD_Daemon *unix_start(api_t *a, const cfg_t *cfg, const char *path, uid_t owner,
                                     mode_t mode, char **copy, hu_error_t *err)
{
    int fd = unix_listen(path, owner, mode, err);
    struct MHD_Daemon *d = NULL;
    if (fd < 0)
        return NULL;
    if (!(*copy = strdup(path)) || !(d = start_daemon(a, cfg, fd, NULL, false, err)))
        close(fd);
    return d;
}

api_t *api_create(core_t *core, state_t *st, const cfg_t *cfg, hu_error_t *err)
{
    api_t *a = calloc(1, sizeof(*a));

    if (!a) {
        errno = ENOMEM;
        hu_errprintf(err, "out of memory");
        return NULL;
    }
    a->core = core;
    a->st = st;
    pthread_mutex_init(&a->wlock, NULL);
    pthread_mutex_init(&a->clock_, NULL);
    pthread_mutex_init(&a->conn_lock, NULL);
    a->auth_none = !strcmp(cfg->auth_type, "none");
    a->committed = state_committed(st);
    if (!(a->by_phase = hmap_create()) || !(a->per_uid = hmap_create())
        || !(a->munge_socket = strdup(cfg->auth_munge_socket))) {
        errno = ENOMEM;
        hu_errprintf(err, "out of memory");
        goto error;
    }
    api_reconfigure(a, cfg);
    if (*cfg->listen_address) {
        struct sockaddr_storage ss = { 0 };
        bool v6 = false;
        const char *addr = strcmp(cfg->listen_address, "localhost") ? cfg->listen_address
                                                                    : "127.0.0.1";
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
            s4->sin_family = AF_INET;
            s4->sin_port = htons((uint16_t)cfg->listen_port);
        } else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
            s6->sin6_family = AF_INET6;
            s6->sin6_port = htons((uint16_t)cfg->listen_port);
            v6 = true;
        } else {
            errno = EINVAL;
            hu_errprintf(err, "listen.address %s: not an address", addr);
            goto error;
        }
        if (!(a->tcp = start_daemon(a, cfg, -1, (struct sockaddr *)&ss, v6, err))) {
            hu_errprintf(err, "cannot listen on %s port %ld: address in use or not local",
                         cfg->listen_address, cfg->listen_port);
            goto error;
        }
        const union MHD_DaemonInfo *di = MHD_get_daemon_info(a->tcp, MHD_DAEMON_INFO_BIND_PORT);
        a->tcp_port = di ? di->port : (int)cfg->listen_port;
    }
    if (*cfg->listen_unix
        && !(a->unx = unix_start(a, cfg, cfg->listen_unix, (uid_t)-1, 0666, &a->unix_path, err)))
        goto error;
    /* root and the SlurmUser only (file mode), with connections of its own */
    if (*cfg->listen_admin_socket
        && !(a->adm = unix_start(a, cfg, cfg->listen_admin_socket, cfg->slurm_uid, 0600,
                                 &a->admin_path, err)))
        goto error;
    return a;
error:
    api_stop(a);
    api_destroy(a);
    return NULL;
}

int api_tcp_port(api_t *a)
{
    return a->tcp_port;
}

void api_stop(api_t *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->wlock);
    a->stopping = true;
    while (a->waiters)
        wake(a, a->waiters);
    pthread_mutex_unlock(&a->wlock);
    /* let the resumed connections get their answer */
    for (int i = 0; i < 20; i++) {
        pthread_mutex_lock(&a->wlock);
        bool busy = a->waiters != NULL;
        pthread_mutex_unlock(&a->wlock);
        if (!busy)
            break;
        usleep(10000);
    }
    /* the listeners (TCP, unix socket, admin socket): no new connection on any,
     * then the ones in flight get a moment, then they stop */
    struct MHD_Daemon **ds[] = { &a->tcp, &a->unx, &a->adm };
    for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++)
        if (*ds[i])
            MHD_quiesce_daemon(*ds[i]);
    usleep(50000);
    for (size_t i = 0; i < sizeof(ds) / sizeof(ds[0]); i++) {
        if (*ds[i])
            MHD_stop_daemon(*ds[i]);
        *ds[i] = NULL;
    }
    if (a->unix_path)
        unlink(a->unix_path);
    if (a->admin_path)
        unlink(a->admin_path);
}

void api_destroy(api_t *a)
{
    if (!a)
        return;
    int saved = errno;
    hmap_destroy(a->by_phase);
    hmap_destroy(a->per_uid);
    free(a->unix_path);
    free(a->admin_path);
    pthread_mutex_destroy(&a->conn_lock);
    free(a->munge_socket);
    pthread_mutex_destroy(&a->wlock);
    pthread_mutex_destroy(&a->clock_);
    free(a);
    errno = saved;
}
