/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * client.c — HTTP/JSON client of bbmgrd (libcurl + jansson + libmunge).
 *
 * Authentication: the first request on a connection carries a MUNGE credential
 * and "Harmonia-Session: open"; bbmgrd answers with a token bound to that
 * connection (doc/api.md, Sessions), which authenticates the next requests on it
 * until its TTL, without a round trip to munged on either side.  A request made
 * with the token that gets 401 (the TTL passed on the daemon's clock, or curl had
 * to open a new connection, on which the token means nothing) is sent again once
 * with a credential: a 401 means bbmgrd did not act on it.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <curl/curl.h>
#include <munge.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "harmonia/client.h"
#include "libhutil/hutil.h"

struct hm_client {
    CURL *curl;
    char *url;       /* base for requests: "http://host:port" */
    char *unix_path; /* when talking over a unix socket */
    munge_ctx_t munge;
    bool no_auth;
    long connect_timeout_ms;
    long timeout_ms;
    long extra_wait_ms;
    char *pre_payload;    /* hm_client_prepare(): "METHOD /path" */
    char *pre_cred;       /* its credential */
    double pre_time;      /* CLOCK_MONOTONIC when encoded */
    bool sessions;        /* ask for connection sessions (not $HARMONIA_NO_SESSION=1) */
    char session[48];     /* token of the connection's session, or "" */
    double session_until; /* CLOCK_MONOTONIC: use it until then */
    pid_t session_pid;    /* a forked child must not use its parent's session */
    char new_session[48]; /* Harmonia-Session header of the reply being read */
    double new_ttl;
    char errbuf[CURL_ERROR_SIZE];
};


/* The session may authenticate the next request. */
static bool session_ok(const hm_client_t *c)
{
    return c->session[0] && hu_mono() < c->session_until && c->session_pid == getpid();
}

/* "Harmonia-Session: <token>; ttl=<seconds>" of a reply (curl calls this for every
 * header line, status line included). */
static size_t header_cb(char *line, size_t size, size_t nmemb, void *arg)
{
    hm_client_t *c = arg;
    size_t n = size * nmemb;
    static const char name[] = "Harmonia-Session:";
    if (n > sizeof(name) - 1 && !strncasecmp(line, name, sizeof(name) - 1)) {
        const char *v = line + sizeof(name) - 1, *end = line + n, *ttl;
        while (v < end && *v == ' ')
            v++;
        size_t tl = 0;
        while (v + tl < end && (unsigned char)v[tl] > ' ' && v[tl] != ';')
            tl++;
        if (tl > 0 && tl < sizeof(c->new_session)) {
            memcpy(c->new_session, v, tl);
            c->new_session[tl] = '\0';
            c->new_ttl = 0;
            if ((ttl = memmem(v, (size_t)(end - v), "ttl=", 4))) {
                /* the line is not NUL-terminated: parse a bounded copy */
                char num[32];
                size_t k = 0;
                for (ttl += 4; ttl < end && k < sizeof(num) - 1
                               && (isdigit((unsigned char)*ttl) || *ttl == '.');
                     ttl++)
                    num[k++] = *ttl;
                num[k] = '\0';
                c->new_ttl = k ? strtod(num, NULL) : 0;
            }
        }
    }
    return n;
}

static void prepared_drop(hm_client_t *c)
{
    free(c->pre_payload);
    free(c->pre_cred);
    c->pre_payload = c->pre_cred = NULL;
}

typedef struct {
    char *data;
    size_t len, cap;
} buf_t;

static int errprintf(hm_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int errprintf(hm_error_t *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        int saved = errno;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof(err->text), fmt, ap);
        va_end(ap);
        errno = saved;
    }
    return -1;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
    buf_t *b = arg;
    size_t n = size * nmemb;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p)
            return 0;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

hm_client_t *hm_client_create(const hm_client_opts_t *opts, hm_error_t *err)
{
    hm_client_opts_t dfl = { 0 };
    hm_client_t *c;
    const char *url, *sock;

    if (!opts)
        opts = &dfl;
    pthread_once(&curl_once, curl_init_once);
    if (curl_init_rc != CURLE_OK) {
        errno = ENOMEM;
        errprintf(err, "curl_global_init: %s", curl_easy_strerror(curl_init_rc));
        return NULL;
    }
    url = opts->url ? opts->url : getenv("HARMONIA_URL");
    if (!url || !*url)
        url = HM_DEFAULT_URL;
    sock = opts->munge_socket ? opts->munge_socket : getenv("HARMONIA_MUNGE_SOCKET");

    if (!(c = calloc(1, sizeof(*c))))
        goto nomem;
    c->no_auth = opts->no_auth;
    const char *ns = getenv("HARMONIA_NO_SESSION");
    c->sessions = !(ns && *ns == '1');
    c->connect_timeout_ms = opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 2000;
    c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 10000;
    if (!strncmp(url, "unix:", 5)) {
        if (url[5] != '/') {
            errno = EINVAL;
            errprintf(err, "%s: a unix socket URL needs an absolute path", url);
            goto error;
        }
        if (!(c->unix_path = strdup(url + 5)) || !(c->url = strdup("http://localhost")))
            goto nomem;
    } else if (!strncmp(url, "http://", 7)) {
        size_t n = strlen(url);
        if (!(c->url = strdup(url)))
            goto nomem;
        while (n > 7 && c->url[n - 1] == '/')
            c->url[--n] = '\0';
    } else {
        errno = EINVAL;
        errprintf(err, "%s: URL must start with http:// or unix:/", url);
        goto error;
    }
    if (!c->no_auth) {
        if (!(c->munge = munge_ctx_create()))
            goto nomem;
        if (sock && *sock) {
            munge_err_t e = munge_ctx_set(c->munge, MUNGE_OPT_SOCKET, sock);
            if (e != EMUNGE_SUCCESS) {
                errno = EINVAL;
                errprintf(err, "munge socket %s: %s", sock, munge_strerror(e));
                goto error;
            }
        }
    }
    if (!(c->curl = curl_easy_init()))
        goto nomem;
    return c;
nomem:
    errno = ENOMEM;
    errprintf(err, "out of memory");
error:
    hm_client_destroy(c);
    return NULL;
}

void hm_client_destroy(hm_client_t *c)
{
    if (c) {
        int saved = errno;
        if (c->curl)
            curl_easy_cleanup(c->curl);
        if (c->munge)
            munge_ctx_destroy(c->munge);
        prepared_drop(c);
        free(c->url);
        free(c->unix_path);
        free(c);
        errno = saved;
    }
}

const char *hm_client_url(const hm_client_t *c)
{
    return c ? c->url : NULL;
}

int hm_client_prepare(hm_client_t *c, const char *method, const char *path)
{
    char *payload = NULL, *cred = NULL;
    if (!c || !method || !path) {
        errno = EINVAL;
        return -1;
    }
    if (c->no_auth || session_ok(c))
        return 0; /* the session will authenticate it */
    prepared_drop(c);
    if (asprintf(&payload, "%s %.*s", method, (int)strcspn(path, "?"), path) < 0) {
        errno = ENOMEM;
        return -1;
    }
    if (munge_encode(&cred, c->munge, payload, (int)strlen(payload)) != EMUNGE_SUCCESS) {
        free(payload);
        free(cred);
        errno = EPERM;
        return -1;
    }
    c->pre_payload = payload;
    c->pre_cred = cred;
    c->pre_time = hu_mono();
    return 0;
}

void hm_client_set_extra_wait(hm_client_t *c, long ms)
{
    if (c)
        c->extra_wait_ms = ms > 0 ? ms : 0;
}

static int request_once(hm_client_t *c, const char *method, const char *path, const char *body,
                        char **text, bool *by_session, hm_error_t *err)
{
    struct curl_slist *hdrs = NULL;
    buf_t out = { 0 };
    char *full = NULL, *cred = NULL, *payload = NULL, *hdr = NULL;
    long status = 0;
    CURLcode rc;
    size_t plen;
    int ret = -1;

    if (!c || !method || !path || path[0] != '/') {
        errno = EINVAL;
        return errprintf(err, "invalid argument");
    }
    if (asprintf(&full, "%s%s", c->url, path) < 0)
        goto nomem;
    *by_session = false;
    if (!c->no_auth && session_ok(c)) {
        *by_session = true;
        if (asprintf(&hdr, "Authorization: Session %s", c->session) < 0)
            goto nomem;
        if (!(hdrs = curl_slist_append(hdrs, hdr)))
            goto nomem;
    } else if (!c->no_auth) {
        plen = strcspn(path, "?");
        if (asprintf(&payload, "%s %.*s", method, (int)plen, path) < 0)
            goto nomem;
        munge_err_t e = EMUNGE_SUCCESS;
        bool fresh = c->pre_cred && hu_mono() - c->pre_time < HM_PREPARED_MAX_AGE;
        if (fresh && !strcmp(c->pre_payload, payload)) {
            cred = c->pre_cred; /* encoded ahead of time, used once */
            c->pre_cred = NULL;
            prepared_drop(c);
        } else {
            if (!fresh)
                prepared_drop(c);
            e = munge_encode(&cred, c->munge, payload, (int)strlen(payload));
        }
        if (e != EMUNGE_SUCCESS) {
            errno = EPERM;
            errprintf(err, "munge_encode: %s", munge_strerror(e));
            goto out;
        }
        if (asprintf(&hdr, "Authorization: MUNGE %s", cred) < 0)
            goto nomem;
        if (!(hdrs = curl_slist_append(hdrs, hdr)))
            goto nomem;
        if (c->sessions && !(hdrs = curl_slist_append(hdrs, "Harmonia-Session: open")))
            goto nomem;
    }
    if (body && !(hdrs = curl_slist_append(hdrs, "Content-Type: application/json")))
        goto nomem;
    /* curl sends "Expect: 100-continue" for large bodies: not worth a round trip. */
    if (!(hdrs = curl_slist_append(hdrs, "Expect:")))
        goto nomem;

    CURL *h = c->curl;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, full);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    if (c->unix_path)
        curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->unix_path);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms + c->extra_wait_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
    c->new_session[0] = '\0';
    double t_sent = hu_mono();
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    c->errbuf[0] = '\0';
    rc = curl_easy_perform(h);
    c->extra_wait_ms = 0;
    if (rc != CURLE_OK) {
        switch (rc) {
        case CURLE_COULDNT_CONNECT:
            errno = ECONNREFUSED;
            break;
        case CURLE_OPERATION_TIMEDOUT:
            errno = ETIMEDOUT;
            break;
        case CURLE_OUT_OF_MEMORY:
            errno = ENOMEM;
            break;
        default:
            errno = EPROTO;
            break;
        }
        errprintf(err, "%s%s: %s", c->unix_path ? "unix:" : "",
                  c->unix_path ? c->unix_path : c->url,
                  c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
        goto out;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (c->new_session[0] && c->new_ttl > 0) {
        /* counted from before the request left: never later than the daemon's end */
        memcpy(c->session, c->new_session, sizeof(c->session));
        c->session_until = t_sent + c->new_ttl * 0.9;
        c->session_pid = getpid();
    } else if (status == 401 && *by_session) {
        c->session[0] = '\0';
    }
    if (text) {
        if (!out.data && !(out.data = strdup("")))
            goto nomem;
        *text = out.data;
        out.data = NULL;
    }
    ret = (int)status;
    goto out;
nomem:
    errno = ENOMEM;
    errprintf(err, "out of memory");
out:
    curl_slist_free_all(hdrs);
    free(out.data);
    free(full);
    free(payload);
    free(hdr);
    free(cred);
    return ret;
}

int hm_request_text(hm_client_t *c, const char *method, const char *path, const char *body,
                    char **text, hm_error_t *err)
{
    bool by_session = false;
    int status = request_once(c, method, path, body, text, &by_session, err);
    if (status == 401 && by_session) {
        /* the session is gone (TTL, or a new connection): once more with MUNGE */
        if (text) {
            free(*text);
            *text = NULL;
        }
        status = request_once(c, method, path, body, text, &by_session, err);
    }
    return status;
}

int hm_request(hm_client_t *c, const char *method, const char *path, json_t *body, json_t **resp,
               hm_error_t *err)
{
    char *btext = NULL, *text = NULL;
    int status;

    if (resp)
        *resp = NULL;
    if (body && !(btext = json_dumps(body, JSON_COMPACT))) {
        errno = ENOMEM;
        return errprintf(err, "cannot encode the request body");
    }
    status = hm_request_text(c, method, path, btext, &text, err);
    free(btext);
    if (status < 0)
        return -1;
    if (resp && text && *text)
        *resp = json_loads(text, 0, NULL);
    free(text);
    return status;
}

const char *hm_error_text(json_t *resp, char *buf, size_t len)
{
    const char *field = NULL, *msg = NULL;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    if (resp
        && json_unpack(resp, "{s:{s?s s?s}}", "error", "field", &field, "message", &msg) == 0) {
        if (field && *field)
            snprintf(buf, len, "%s: %s", field, msg ? msg : "invalid");
        else
            snprintf(buf, len, "%s", msg ? msg : "error");
    }
    return buf;
}

static int status_errno(int status)
{
    switch (status) {
    case 400:
    case 413:
    case 422:
        return EINVAL;
    case 401:
    case 403:
        return EACCES;
    case 404:
        return ENOENT;
    case 409:
        return EEXIST;
    case 507:
        return ENOSPC;
    default:
        return EIO;
    }
}

static void grant_fill(json_t *ph, hm_grant_t *g)
{
    json_int_t id = 0;
    const char *state = NULL;
    json_t *grant = NULL, *nodes = NULL, *v;
    size_t i;

    json_unpack(ph, "{s?I s?s s?o}", "id", &id, "state", &state, "grant", &grant);
    g->phase_id = (uint64_t)id;
    g->granted = state && (!strcmp(state, "granted") || !strcmp(state, "finished"));
    if (grant && json_is_object(grant)) {
        const char *path = NULL;
        json_unpack(grant, "{s?F s?F s?o s?s}", "start", &g->start, "bandwidth", &g->bandwidth,
                    "nodes", &nodes, "path", &path);
        if (path)
            snprintf(g->path, sizeof(g->path), "%s", path);
        g->nnodes = 0;
        json_array_foreach (nodes, i, v) {
            const char *n = json_string_value(v);
            if (!n)
                continue;
            if (g->nnodes < 16)
                snprintf(g->nodes[g->nnodes], sizeof(g->nodes[0]), "%s", n);
            g->nnodes++;
        }
    }
}

int hm_phase_begin(hm_client_t *c, const char *job, double volume, const char *dir, double wait_s,
                   hm_grant_t *grant, hm_error_t *err)
{
    char path[256], ebuf[200];
    json_t *body, *resp = NULL;
    int status;

    if (!c || !job || !grant || volume < 0) {
        errno = EINVAL;
        return errprintf(err, "invalid argument");
    }
    memset(grant, 0, sizeof(*grant));
    snprintf(path, sizeof(path), "/v1/jobs/%s/phases", job);
    if (!(body = json_pack("{s:f s:s s:f}", "volume", volume, "direction", dir ? dir : "write",
                           "wait", wait_s > 0 ? wait_s : 0.0))) {
        errno = ENOMEM;
        return errprintf(err, "out of memory");
    }
    hm_client_set_extra_wait(c, (long)(wait_s * 1000));
    status = hm_request(c, "POST", path, body, &resp, err);
    json_decref(body);
    if (status < 0)
        return -1;
    if (status != 200 && status != 201) {
        errno = status_errno(status);
        errprintf(err, "HTTP %d: %s", status, hm_error_text(resp, ebuf, sizeof(ebuf)));
        json_decref(resp);
        return -1;
    }
    grant_fill(resp, grant);
    json_decref(resp);
    return 0;
}

int hm_phase_end(hm_client_t *c, uint64_t phase_id, double bytes, hm_error_t *err)
{
    char path[128], ebuf[200];
    json_t *body = NULL, *resp = NULL;
    int status;

    snprintf(path, sizeof(path), "/v1/phases/%ju/finish", (uintmax_t)phase_id);
    if (bytes >= 0 && !(body = json_pack("{s:f}", "bytes", bytes))) {
        errno = ENOMEM;
        return errprintf(err, "out of memory");
    }
    status = hm_request(c, "POST", path, body, &resp, err);
    json_decref(body);
    if (status < 0)
        return -1;
    if (status != 200) {
        errno = status_errno(status);
        errprintf(err, "HTTP %d: %s", status, hm_error_text(resp, ebuf, sizeof(ebuf)));
        json_decref(resp);
        return -1;
    }
    json_decref(resp);
    return 0;
}
