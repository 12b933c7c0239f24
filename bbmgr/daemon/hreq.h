/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hreq.h — one request of bbmgrd's HTTP API as a route's handler sees it (the
 * caller, the path's arguments, the JSON body, the query) and the reply it gives
 * (a status and a JSON or text body).  api.c makes them from the connection and
 * sends the reply; the routes fill it.  Below both: it knows neither.
 */
#ifndef BBMGR_HREQ_H
#define BBMGR_HREQ_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>

typedef struct api api_t;

typedef struct {
    uid_t uid;
    gid_t gid;
    bool admin; /* root or SlurmUser (or auth: none) */
} caller_t;

typedef struct {
    int status;
    json_t *body; /* JSON reply */
    char *text;   /* or a text reply (malloc'd) */
    const char *ctype;
    uint64_t wait_phase; /* long-poll: wait for this phase to change */
    double wait;         /* seconds */
    unsigned items;      /* POST /v1/batch: items run (counted in send_reply) */
} reply_t;

typedef struct {
    api_t *api;
    const caller_t *who;
    const char *args[4]; /* path segments matched by '*' */
    json_t *body;        /* parsed JSON object, or NULL when no body */
    void *conn;          /* the MHD connection (query arguments); NULL for the
                                 * items of a batch: hreq_query() then finds nothing */
    double max_wait;     /* cap of a long-poll; 0 in a batch: never waits */
} hreq_t;

/* A reply writer, not an error type: r becomes the error body every route answers
 * with ({"error": {code, status, field, message}}), the message formatted by
 * hu_verrprintf() (libhutil/hu_error.h); returns -1. */
int hreq_reply_error(reply_t *r, int status, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void hreq_reply_json(reply_t *r, int status, json_t *body); /* takes body */

const char *hreq_query(hreq_t *rq, const char *key); /* NULL if absent or no conn */

#endif
