/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * harmonia/client.h — the client side of bbmgrd's HTTP/JSON API (libharmonia).
 *
 * Shared by the admin command bbmgr, the Slurm plugins and applications.  One
 * hm_client_t keeps one HTTP connection alive (libcurl easy handle): use one client
 * per thread.  The first request on a connection carries a fresh MUNGE credential
 * whose payload is "METHOD PATH" (without the query string; bbmgrd refuses a
 * credential used for another request, replayed or expired) and asks for a
 * session; the next requests on that connection send the session's token instead
 * (doc/api.md, "Sessions"), and a request whose token is refused is sent again
 * once with a credential.  $HARMONIA_NO_SESSION=1: a credential on every request.
 *
 * Error convention: -1 / NULL with errno set, and err (when given) says why.
 * The API itself is documented in doc/api.md.
 */
#ifndef HARMONIA_CLIENT_H
#define HARMONIA_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(HM_BUILDING_LIBHARMONIA) && !defined(HM_PLUGIN_BUILD)
#define HM_EXPORT __attribute__((visibility("default")))
#else
#define HM_EXPORT
#endif

typedef struct {
    char text[256];
} hm_error_t;

typedef struct hm_client hm_client_t;

typedef struct {
    /* "http://HOST:PORT" or "unix:/path/to/socket".  NULL: $HARMONIA_URL, then
     * HM_DEFAULT_URL. */
    const char *url;
    /* munged's socket; NULL: $HARMONIA_MUNGE_SOCKET, then libmunge's default. */
    const char *munge_socket;
    bool no_auth;            /* send no credential (bbmgrd in 'auth: none') */
    long connect_timeout_ms; /* 0: 2000 */
    long timeout_ms;         /* whole request; 0: 10000 (long-polls add their wait) */
} hm_client_opts_t;

#define HM_DEFAULT_URL "unix:/run/harmonia/bbmgrd.sock"

HM_EXPORT hm_client_t *hm_client_create(const hm_client_opts_t *opts, hm_error_t *err);
HM_EXPORT void hm_client_destroy(hm_client_t *c); /* accepts NULL, keeps errno */
HM_EXPORT const char *hm_client_url(const hm_client_t *c);

/*
 * Send METHOD path (path starts with '/', may carry a query) with an optional JSON
 * body (borrowed).  On a transport error returns -1 (errno: ECONNREFUSED,
 * ETIMEDOUT, EPROTO...); otherwise returns the HTTP status and, when resp is not
 * NULL, *resp is the decoded JSON body (NULL when the body is empty or not JSON).
 * 4xx/5xx are not errors of this function: the caller reads the status and the
 * body's {"error": {"code","field","message"}}.
 */
HM_EXPORT int hm_request(hm_client_t *c, const char *method, const char *path, json_t *body,
                         json_t **resp, hm_error_t *err);

/* Same, returning the raw body text (malloc'd, NUL-terminated) in *text. */
HM_EXPORT int hm_request_text(hm_client_t *c, const char *method, const char *path,
                              const char *body, char **text, hm_error_t *err);

/* Extra wait for the next request only (long-poll), in ms: added to timeout_ms. */
HM_EXPORT void hm_client_set_extra_wait(hm_client_t *c, long ms);

/* Encode now the MUNGE credential of a request expected later ("POST", path
 * without query), so that the request does not wait for munged: the next
 * request with that method and path uses it if it is younger than
 * HM_PREPARED_MAX_AGE seconds (well inside munged's default TTL of 300 s; the
 * credential is still used once only).  No-op without MUNGE.  Returns 0, or -1
 * (the request will then encode its own credential). */
#define HM_PREPARED_MAX_AGE 60.0
HM_EXPORT int hm_client_prepare(hm_client_t *c, const char *method, const char *path);

/* ------------------------------------------------------------------ phases
 * The application side: ask to start an I/O phase and wait for the grant. */
typedef struct {
    uint64_t phase_id;
    bool granted;
    double start;     /* Unix time the grant took effect */
    double bandwidth; /* bytes/s share at grant time (0 if unknown) */
    int nnodes;
    char nodes[16][64]; /* first 16 buffer nodes of the grant */
    char path[1024];    /* the job's buffer directory on the first node */
} hm_grant_t;

/* POST /v1/jobs/{job}/phases then long-poll until granted or wait_s elapsed.
 * dir: "write", "read" or "readwrite".  Returns 0 (grant->granted tells), -1 on
 * error (errno EACCES for 401/403, ENOENT for 404, EINVAL for 400, EIO otherwise). */
HM_EXPORT int hm_phase_begin(hm_client_t *c, const char *job, double volume, const char *dir,
                             double wait_s, hm_grant_t *grant, hm_error_t *err);
HM_EXPORT int hm_phase_end(hm_client_t *c, uint64_t phase_id, double bytes, hm_error_t *err);

/* Text of the error object of a response ("field: message"), or "" if none. */
HM_EXPORT const char *hm_error_text(json_t *resp, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_CLIENT_H */
