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
#include "state.h"

typedef struct api api_t;

typedef struct {
    uid_t uid;
    gid_t gid;
    bool admin;                 /* root or SlurmUser (or auth: none) */
} caller_t;

typedef struct {
    int status;
    json_t *body;               /* JSON reply */
    char *text;                 /* or a text reply (malloc'd) */
    const char *ctype;
    uint64_t wait_phase;        /* long-poll: wait for this phase to change */
    double wait;                /* seconds */
    unsigned items;             /* POST /v1/batch: items run (counted in send_reply) */
} reply_t;

typedef struct {
    api_t *api;
    const caller_t *who;
    const char *args[4];        /* path segments matched by '*' */
    json_t *body;               /* parsed JSON object, or NULL when no body */
    void *conn;                 /* the MHD connection (query arguments); NULL for the
                                 * items of a batch: hreq_query() then finds nothing */
    double max_wait;            /* cap of a long-poll; 0 in a batch: never waits */
} hreq_t;

int reply_error(reply_t *r, int status, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void reply_json(reply_t *r, int status, json_t *body);      /* takes body */

const char *hreq_query(hreq_t *rq, const char *key);   /* NULL if absent or no conn */

api_t *api_create(core_t *core, state_t *st, const cfg_t *cfg, hu_error_t *err);
void api_stop(api_t *a);            /* answers waiters, stops listening */
void api_destroy(api_t *a);
int api_tcp_port(api_t *a);
void api_tick(api_t *a);            /* long-poll deadlines */
bool api_failed(api_t *a);          /* a commit failed: the daemon must exit */
void api_reconfigure(api_t *a, const cfg_t *cfg);

/* Callbacks for the state writer and the core. */
void api_on_commit(uint64_t seq, bool ok, void *arg);
void api_on_phase(uint64_t phase_id, void *arg);

/* metrics.c reads these */
typedef struct {
    uint64_t by_code[600];
    uint64_t lat_hist[12];
    double lat_sum;
    uint64_t lat_count;
    uint64_t auth_failures;
    uint64_t auth_munge;        /* requests authenticated by a MUNGE credential (tried) */
    uint64_t auth_session;      /* ... by a connection's session token (tried) */
    uint64_t sessions_opened;
    uint64_t too_large;
    uint64_t waiters;
    uint64_t batch_items;       /* requests run as items of POST /v1/batch */
} api_counters_t;
void api_get_counters(api_t *a, api_counters_t *out);

#endif
