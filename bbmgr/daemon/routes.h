/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * routes.h — the /v1 API (doc/api.md): its routes and their handlers.
 */
#ifndef BBMGR_ROUTES_H
#define BBMGR_ROUTES_H

#include "core.h"
#include "hreq.h"
#include "routes_req.h"

/* Find the route for method+path; *args gets the '*' segments (pointing into
 * 'path', which is modified).  NULL and *status = 404 or 405 when none. */
const route_t *routes_match(const char *method, char *path, const char **args, int *status);

/* The phase view a long-poll returns when it wakes (lock held). */
void routes_phase_view(core_t *c, hreq_t *rq, uint64_t pid, reply_t *r);

#endif
