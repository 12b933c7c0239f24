/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auth.h — MUNGE credentials on HTTP requests.
 *
 * A request carries "Authorization: MUNGE <credential>"; the credential's payload
 * must be "METHOD PATH" (path without the query), so that a credential cannot be
 * moved to another request.  munged refuses replays and expired credentials.
 */
#ifndef BBMGR_AUTH_H
#define BBMGR_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "libhutil/hutil.h"

/* Decode header (the Authorization value) with munged at socket ("" or NULL:
 * libmunge's default).  Returns 0 with uid/gid, or an HTTP status (401, 503) and
 * a reason in msg. */
int auth_munge(const char *socket, const char *header, const char *method, const char *path,
               uid_t *uid, gid_t *gid, hu_error_t *err);

/*
 * Connection-bound sessions (doc/api.md, "Sessions").  A request authenticated
 * with MUNGE that carries "Harmonia-Session: open" gets back a random 128-bit
 * token in its reply's Harmonia-Session header.  Later requests on the SAME
 * connection may send "Authorization: Session <token>" instead of a credential,
 * until the session's TTL.  The token is kept with the connection, not in a table:
 * on any other connection it means nothing, so a token read off the wire cannot
 * be used elsewhere, and a proxy pooling several users' requests on one upstream
 * connection cannot lend one user's identity to another (they do not know the
 * token).  This is what makes a MUNGE decode once per connection instead of once
 * per request safe: munged (and its replay cache) is out of the per-request path.
 */
#define AUTH_TOKEN_HEX 32

typedef struct {
    char token[AUTH_TOKEN_HEX + 1]; /* "" when there is no session */
    uid_t uid;
    gid_t gid;
    double expires; /* CLOCK_MONOTONIC seconds */
} auth_session_t;

/* Open a session for uid/gid until now + ttl: 0, or -1 with errno (getrandom). */
int auth_session_open(auth_session_t *s, uid_t uid, gid_t gid, double now, double ttl);

/* Check "Session <token>" (header) against the connection's session s (NULL: the
 * connection has none).  Returns 0 with uid/gid, or 401 with a reason in msg. */
int auth_session_check(const auth_session_t *s, const char *header, double now, uid_t *uid,
                       gid_t *gid, hu_error_t *err);

/* True if header uses the Session scheme. */
bool auth_is_session(const char *header);

#endif
