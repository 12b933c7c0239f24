/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * api.h — bbmgrd's HTTP side (libmicrohttpd): listeners, authentication, routing,
 * strict JSON bodies, replies held until their state is committed, long-polls.
 */
#ifndef BBMGR_API_H
#define BBMGR_API_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

#include "config.h"
#include "core.h"
#include "hreq.h"
#include "state.h"

api_t *api_create(core_t *core, state_t *st, const cfg_t *cfg, hu_error_t *err);
void api_stop(api_t *a); /* answers waiters, stops listening */
void api_destroy(api_t *a);
int api_tcp_port(api_t *a);
void api_tick(api_t *a);   /* long-poll deadlines */
bool api_failed(api_t *a); /* a commit failed: the daemon must exit */
void api_reconfigure(api_t *a, const cfg_t *cfg);

/* Callbacks for the state writer and the core. */
void api_on_commit(uint64_t seq, bool ok, void *arg);
void api_on_phase(uint64_t phase_id, void *arg);

#endif
