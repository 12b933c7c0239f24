/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * routes_admin.h — the routes of routes_admin.c: nodes, pools, schedule, policy,
 * status, history, held buffers, the agents' poll (routes.c has the others).
 */
#ifndef BBMGR_ROUTES_ADMIN_H
#define BBMGR_ROUTES_ADMIN_H

#include <stddef.h>

#include "routes_req.h"

extern const route_t routes_admin[];
extern const size_t routes_admin_n;

#endif
