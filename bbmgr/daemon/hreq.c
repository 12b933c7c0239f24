/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hreq.c — the request and the reply of one call of the HTTP API (see hreq.h):
 * the error body every route answers with, and the query of the request.
 */
#include <stdarg.h>
#include <stdio.h>
#include <microhttpd.h>

#include "libhutil/hu_error.h"
#include "hreq.h"

static const char *status_text(int s)
{
    switch (s) {
    case 400:
        return "bad_request";
    case 401:
        return "unauthorized";
    case 403:
        return "forbidden";
    case 404:
        return "not_found";
    case 405:
        return "method_not_allowed";
    case 409:
        return "conflict";
    case 411:
        return "length_required";
    case 413:
        return "payload_too_large";
    case 415:
        return "unsupported_media_type";
    case 422:
        return "unprocessable";
    case 500:
        return "internal_error";
    case 503:
        return "unavailable";
    case 507:
        return "insufficient_storage";
    default:
        return "error";
    }
}

void hreq_reply_json(reply_t *r, int status, json_t *body)
{
    json_decref(r->body);
    r->status = status;
    r->body = body;
}

int hreq_reply_error(reply_t *r, int status, const char *field, const char *fmt, ...)
{
    hu_error_t msg;
    va_list ap;
    va_start(ap, fmt);
    hu_verrprintf(&msg, fmt, ap);
    va_end(ap);
    hreq_reply_json(r, status,
                    json_pack("{s:{s:i s:s s:o s:s}}", "error", "code", status, "status",
                              status_text(status), "field",
                              field && *field ? json_string(field) : json_null(), "message",
                              msg.text));
    r->wait_phase = 0;
    return -1;
}

const char *hreq_query(hreq_t *rq, const char *key)
{
    /* no connection: an item of a batch, whose own query arguments are not its */
    if (!rq->conn)
        return NULL;
    return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, key);
}
