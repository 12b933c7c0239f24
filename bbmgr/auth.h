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

#include <stddef.h>
#include <sys/types.h>

/* Decode header (the Authorization value) with munged at socket ("" or NULL:
 * libmunge's default).  Returns 0 with uid/gid, or an HTTP status (401, 503) and
 * a reason in msg. */
int auth_munge(const char *socket, const char *header, const char *method,
               const char *path, uid_t *uid, gid_t *gid, char *msg, size_t len);

#endif
