/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auth.c — MUNGE credential check (libmunge), and connection-bound sessions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <munge.h>

#include "auth.h"

int auth_munge(const char *socket, const char *header, const char *method, const char *path,
               uid_t *uid, gid_t *gid, hu_error_t *err)
{
    munge_ctx_t ctx = NULL;
    void *payload = NULL;
    int plen = 0, status = 401;
    munge_err_t e;
    char want[512];

    if (!header || !*header) {
        hu_errprintf(err, "missing credential: send 'Authorization: MUNGE <credential>'");
        return 401;
    }
    if (strncasecmp(header, "MUNGE ", 6) != 0) {
        hu_errprintf(err, "unsupported authorization scheme (expected MUNGE)");
        return 401;
    }
    const char *cred = header + 6;
    while (*cred == ' ')
        cred++;
    if (!(ctx = munge_ctx_create())) {
        hu_errprintf(err, "out of memory");
        return 500;
    }
    if (socket && *socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
        hu_errprintf(err, "bad munge socket");
        munge_ctx_destroy(ctx);
        return 500;
    }
    e = munge_decode(cred, ctx, &payload, &plen, uid, gid);
    switch (e) {
    case EMUNGE_SUCCESS:
        status = 0;
        break;
    case EMUNGE_CRED_REPLAYED:
        hu_errprintf(err, "credential replayed");
        break;
    case EMUNGE_CRED_EXPIRED:
        hu_errprintf(err, "credential expired");
        break;
    case EMUNGE_CRED_REWOUND:
        hu_errprintf(err, "credential from the future (clock skew)");
        break;
    case EMUNGE_SOCKET:
    case EMUNGE_TIMEOUT:
        hu_errprintf(err, "munged unavailable: %s", munge_ctx_strerror(ctx));
        status = 503;
        break;
    default:
        hu_errprintf(err, "invalid credential: %s", munge_strerror(e));
        break;
    }
    if (status == 0) {
        snprintf(want, sizeof(want), "%s %.*s", method, (int)strcspn(path, "?"), path);
        if (!payload || (size_t)plen != strlen(want) || memcmp(payload, want, (size_t)plen)) {
            hu_errprintf(err,
                         "credential was made for another request (payload must be "
                         "'%s')",
                         want);
            status = 401;
        }
    }
    free(payload);
    munge_ctx_destroy(ctx);
    return status;
}

bool auth_is_session(const char *header)
{
    return header && !strncasecmp(header, "Session ", 8);
}

int auth_session_open(auth_session_t *s, uid_t uid, gid_t gid, double now, double ttl)
{
    unsigned char r[AUTH_TOKEN_HEX / 2];
    size_t got = 0;
    while (got < sizeof(r)) {
        ssize_t n = getrandom(r + got, sizeof(r) - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof(r); i++)
        snprintf(s->token + 2 * i, 3, "%02x", r[i]);
    s->uid = uid;
    s->gid = gid;
    s->expires = now + ttl;
    return 0;
}

int auth_session_check(const auth_session_t *s, const char *header, double now, uid_t *uid,
                       gid_t *gid, hu_error_t *err)
{
    const char *tok = header + 8;
    unsigned char diff = 0;
    while (*tok == ' ')
        tok++;
    if (strlen(tok) != AUTH_TOKEN_HEX) {
        hu_errprintf(err, "malformed session token (expected %d hex digits)", AUTH_TOKEN_HEX);
        return 401;
    }
    if (!s || !s->token[0]) {
        hu_errprintf(err, "no session on this connection: authenticate with "
                          "'Authorization: MUNGE <credential>' (and 'Harmonia-Session: open')");
        return 401;
    }
    /* constant time: how many leading digits match must not show in the timing */
    for (int i = 0; i < AUTH_TOKEN_HEX; i++)
        diff |= (unsigned char)(tok[i] ^ s->token[i]);
    if (diff) {
        hu_errprintf(err, "session token does not match this connection's session");
        return 401;
    }
    if (now >= s->expires) {
        hu_errprintf(err, "session expired (auth.session_ttl): authenticate again with MUNGE");
        return 401;
    }
    *uid = s->uid;
    *gid = s->gid;
    return 0;
}
