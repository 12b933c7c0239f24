/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * routes_req.h — what every file of the /v1 API uses (routes.c, routes_admin.c):
 * what a route is, and the request helpers (routes_req.c).  Every helper that
 * returns false (or NULL, or < 0) has answered the request with the error.
 */
#ifndef BBMGR_ROUTES_REQ_H
#define BBMGR_ROUTES_REQ_H

#include <stdbool.h>
#include <stdint.h>

#include "core.h"
#include "hreq.h"

/* ---- a route */
typedef void (*route_f)(core_t *c, hreq_t *rq, reply_t *r);

typedef struct {
    const char *method;
    const char *pattern; /* '*' matches one path segment */
    route_f fn;
    bool body; /* takes a JSON body (optional unless noted in docs) */
} route_t;

/* ---- errors */
/* Answers with a core error (cerr_t, core.h) and the HTTP status of its code. */
void rq_reply_cerr(reply_t *r, const cerr_t *e);

/* ---- the JSON body */
typedef enum { F_STR, F_INT, F_NUM, F_BOOL, F_SIZE, F_DUR, F_OBJ, F_ARR } ftype_t;

typedef struct {
    const char *name;
    ftype_t type;
    bool required;
} field_t;

/* Strict: every key known (spec ends with a NULL name), of the right type; required
 * ones present. */
bool rq_check_body(hreq_t *rq, reply_t *r, const field_t *spec, bool body_required);
/* Member k of the body; NULL when absent.  rq_has(): whether it is there. */
const char *rq_get_str(hreq_t *rq, const char *k);
bool rq_has(hreq_t *rq, const char *k);
/* Member k into *out when present (else *out unchanged): an integer in lo..hi, a
 * size (bytes or a string with a unit; > 0 when positive), a duration. */
bool rq_get_int(hreq_t *rq, reply_t *r, const char *k, long lo, long hi, long *out);
bool rq_get_size(hreq_t *rq, reply_t *r, const char *k, bool positive, double *out);
bool rq_get_dur(hreq_t *rq, reply_t *r, const char *k, double *out);
/* A name (job id, buffer name) and an absolute path, 'field' naming them. */
bool rq_check_name(reply_t *r, const char *field, const char *s);
bool rq_check_path(reply_t *r, const char *field, const char *s);
/* A new persistent buffer's name: the one name rule (hu_bb_name_ok()). */
bool rq_check_bufname(reply_t *r, const char *field, const char *s);

/* ---- the path and the query */
/* A positive decimal integer (an id in the path). */
bool rq_parse_u64(const char *s, uint64_t *out);
/* The query's wait= (a duration, at most the request's max_wait); 0 when absent. */
double rq_query_wait(hreq_t *rq, reply_t *r, bool *ok);

/* ---- authorisation */
bool rq_need_admin(hreq_t *rq, reply_t *r);
/* The job named in the path, visible to the caller (admin or owner); for an
 * administrator only with rq_admin_job_for(). */
job_t *rq_job_for(core_t *c, hreq_t *rq, reply_t *r);
job_t *rq_admin_job_for(core_t *c, hreq_t *rq, reply_t *r);

#endif
