/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * routes_req.c — the request helpers of the /v1 API (doc/api.md): the HTTP status
 * of a core error, strict validation of JSON bodies and of names and paths, the
 * query, authorisation.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "routes_req.h"
#include "libhutil/directive.h"

/* ------------------------------------------------------------------ errors */
/* The HTTP status of a core error (cerr_t, core.h). */
static int http_status(int code)
{
    switch (code) {
    case EINVAL:
        return 400;
    case EPERM:
        return 403;
    case ENOENT:
        return 404;
    case EEXIST:
    case EBUSY:
        return 409;
    case EDOM:
        return 422;
    case EAGAIN:
        return 503;
    case ENOSPC:
        return 507;
    default:
        return 500;
    }
}

void rq_reply_cerr(reply_t *r, const cerr_t *e)
{
    hreq_reply_error(r, http_status(e->code), e->field, "%s", e->err.text);
}

/* ------------------------------------------------------------------ validation */

static const char *ftype_name(ftype_t t)
{
    static const char *const n[] = { "a string",
                                     "an integer",
                                     "a number",
                                     "a boolean",
                                     "a size (bytes, or a string with a unit)",
                                     "a duration (seconds, or a string with a unit)",
                                     "an object",
                                     "an array" };
    return n[t];
}

/* Strict: every key known, of the right type; required ones present. */
bool rq_check_body(hreq_t *rq, reply_t *r, const field_t *spec, bool body_required)
{
    json_t *b = rq->body;
    const char *k;
    json_t *v;

    if (!b) {
        bool need = body_required;
        for (const field_t *f = spec; f->name && !need; f++)
            need = f->required;
        if (need) {
            hreq_reply_error(r, 400, NULL, "a JSON body is required");
            return false;
        }
        return true;
    }
    json_object_foreach (b, k, v) {
        const field_t *f = spec;
        while (f->name && strcmp(f->name, k))
            f++;
        if (!f->name) {
            char known[300] = "";
            for (const field_t *g = spec; g->name; g++)
                snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s",
                         g == spec ? "" : ", ", g->name);
            hreq_reply_error(r, 400, k, "unknown field (known: %s)", *known ? known : "none");
            return false;
        }
        bool ok;
        switch (f->type) {
        case F_STR:
            ok = json_is_string(v);
            break;
        case F_INT:
            ok = json_is_integer(v);
            break;
        case F_NUM:
            ok = json_is_number(v);
            break;
        case F_BOOL:
            ok = json_is_boolean(v);
            break;
        case F_SIZE:
        case F_DUR:
            ok = json_is_number(v) || json_is_string(v);
            break;
        case F_OBJ:
            ok = json_is_object(v);
            break;
        case F_ARR:
            ok = json_is_array(v);
            break;
        default:
            ok = false;
        }
        if (!ok) {
            hreq_reply_error(r, 400, k, "must be %s", ftype_name(f->type));
            return false;
        }
    }
    for (const field_t *f = spec; f->name; f++)
        if (f->required && !json_object_get(b, f->name)) {
            hreq_reply_error(r, 400, f->name, "is required");
            return false;
        }
    return true;
}

const char *rq_get_str(hreq_t *rq, const char *k)
{
    return rq->body ? json_string_value(json_object_get(rq->body, k)) : NULL;
}

bool rq_has(hreq_t *rq, const char *k)
{
    return rq->body && json_object_get(rq->body, k);
}

bool rq_get_int(hreq_t *rq, reply_t *r, const char *k, long lo, long hi, long *out)
{
    json_t *v = rq->body ? json_object_get(rq->body, k) : NULL;
    if (!v)
        return true;
    json_int_t i = json_integer_value(v);
    if (i < lo || i > hi) {
        hreq_reply_error(r, 400, k, "must be in %ld..%ld", lo, hi);
        return false;
    }
    *out = (long)i;
    return true;
}

/* A quantity: a number, or a string that parse() reads (with a unit); 0 <= value
 * <= max, and > 0 when positive; 'range' is the error when it is out of range. */
static bool get_quantity(hreq_t *rq, reply_t *r, const char *k,
                         int (*parse)(const char *, int, double *, hu_error_t *), int flags,
                         const char *range, bool positive, double max, double *out)
{
    json_t *v = rq->body ? json_object_get(rq->body, k) : NULL;
    hu_error_t e = { "" };
    if (!v)
        return true;
    if (json_is_number(v)) {
        *out = json_number_value(v);
    } else if (parse(json_string_value(v), flags, out, &e) < 0) {
        hreq_reply_error(r, 400, k, "%s", e.text);
        return false;
    }
    if (!isfinite(*out) || *out < 0 || (positive && *out <= 0) || *out > max) {
        hreq_reply_error(r, 400, k, "%s", range);
        return false;
    }
    return true;
}

/* size: a non-negative number of bytes or a string with a unit */
bool rq_get_size(hreq_t *rq, reply_t *r, const char *k, bool positive, double *out)
{
    return get_quantity(rq, r, k, hu_parse_size_d, HU_SIZE_BARE_BYTES,
                        positive ? "must be a positive size" : "must be a size >= 0", positive,
                        9.2e18, out);
}

bool rq_get_dur(hreq_t *rq, reply_t *r, const char *k, double *out)
{
    return get_quantity(rq, r, k, hu_parse_duration, HU_DUR_BARE_SECONDS, "must be a duration >= 0",
                        false, 1e9, out);
}

static bool valid_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 63)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
            return false;
    return s[-1] != '.' || n > 1;
}

bool rq_check_name(reply_t *r, const char *field, const char *s)
{
    if (!valid_name(s) || !strcmp(s, ".") || !strcmp(s, "..")) {
        hreq_reply_error(r, 400, field, "must be 1 to 63 letters, digits, '_', '-' or '.'");
        return false;
    }
    return true;
}

bool rq_check_bufname(reply_t *r, const char *field, const char *s)
{
    if (!hu_bb_name_ok(s)) {
        hreq_reply_error(r, 400, field,
                         "must be a letter, then letters, digits, '_', '-' or '.', "
                         "at most %d",
                         HU_BB_NAME_MAX);
        return false;
    }
    return true;
}

bool rq_check_path(reply_t *r, const char *field, const char *s)
{
    /* the rule of the directives and of the agents (libhutil) */
    if (!hu_bb_path_ok(s)) {
        hreq_reply_error(r, 400, field,
                         "must be an absolute path of at most %d bytes without "
                         "'.' or '..' components or newlines",
                         HU_BB_PATH_MAX);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ authorisation */
bool rq_need_admin(hreq_t *rq, reply_t *r)
{
    if (rq->who->admin)
        return true;
    hreq_reply_error(r, 403, NULL, "only SlurmUser and root may do this (you are uid %u)",
                     (unsigned)rq->who->uid);
    return false;
}

/* The job named in the path, visible to the caller (admin or owner). */
job_t *rq_job_for(core_t *c, hreq_t *rq, reply_t *r)
{
    const char *id = rq->args[0];
    if (!rq_check_name(r, "id", id))
        return NULL;
    job_t *j = core_job(c, id);
    if (!j) {
        hreq_reply_error(r, 404, "id", "no job %s", id);
        return NULL;
    }
    if (!rq->who->admin && rq->who->uid != j->uid) {
        hreq_reply_error(r, 403, NULL, "job %s belongs to another user", id);
        return NULL;
    }
    return j;
}

/* The job of the path, for an administrator only (else NULL, answered). */
job_t *rq_admin_job_for(core_t *c, hreq_t *rq, reply_t *r)
{
    return rq_need_admin(rq, r) ? rq_job_for(c, rq, r) : NULL;
}

bool rq_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !isdigit((unsigned char)*s))
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v == 0)
        return false;
    *out = v;
    return true;
}

double rq_query_wait(hreq_t *rq, reply_t *r, bool *ok)
{
    const char *w = hreq_query(rq, "wait");
    double d = 0;
    hu_error_t e = { "" };
    *ok = true;
    if (!w)
        return 0;
    if (hu_parse_duration(w, HU_DUR_BARE_SECONDS, &d, &e) < 0 || d < 0) {
        hreq_reply_error(r, 400, "wait", "must be a duration in seconds");
        *ok = false;
        return 0;
    }
    return fmin(d, rq->max_wait);
}
