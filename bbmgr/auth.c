/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auth.c — MUNGE credential check (libmunge).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <munge.h>

#include "auth.h"

int auth_munge(const char *socket, const char *header, const char *method,
               const char *path, uid_t *uid, gid_t *gid, char *msg, size_t len)
{
    munge_ctx_t ctx = NULL;
    void *payload = NULL;
    int plen = 0, status = 401;
    munge_err_t e;
    char want[512];

    if (!header || !*header) {
        snprintf(msg, len, "missing credential: send 'Authorization: MUNGE <credential>'");
        return 401;
    }
    if (strncasecmp(header, "MUNGE ", 6) != 0) {
        snprintf(msg, len, "unsupported authorization scheme (expected MUNGE)");
        return 401;
    }
    const char *cred = header + 6;
    while (*cred == ' ')
        cred++;
    if (!(ctx = munge_ctx_create())) {
        snprintf(msg, len, "out of memory");
        return 500;
    }
    if (socket && *socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
        snprintf(msg, len, "bad munge socket");
        munge_ctx_destroy(ctx);
        return 500;
    }
    e = munge_decode(cred, ctx, &payload, &plen, uid, gid);
    switch (e) {
    case EMUNGE_SUCCESS:
        status = 0;
        break;
    case EMUNGE_CRED_REPLAYED:
        snprintf(msg, len, "credential replayed");
        break;
    case EMUNGE_CRED_EXPIRED:
        snprintf(msg, len, "credential expired");
        break;
    case EMUNGE_CRED_REWOUND:
        snprintf(msg, len, "credential from the future (clock skew)");
        break;
    case EMUNGE_SOCKET:
    case EMUNGE_TIMEOUT:
        snprintf(msg, len, "munged unavailable: %s", munge_ctx_strerror(ctx));
        status = 503;
        break;
    default:
        snprintf(msg, len, "invalid credential: %s", munge_strerror(e));
        break;
    }
    if (status == 0) {
        snprintf(want, sizeof(want), "%s %.*s", method, (int)strcspn(path, "?"), path);
        if (!payload || (size_t)plen != strlen(want) || memcmp(payload, want, (size_t)plen)) {
            snprintf(msg, len, "credential was made for another request (payload must be "
                     "'%s')", want);
            status = 401;
        }
    }
    free(payload);
    munge_ctx_destroy(ctx);
    return status;
}
