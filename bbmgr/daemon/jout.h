/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jout.h — the JSON text of bbmgrd's replies (jout.c).
 */
#ifndef BBMGR_JOUT_H
#define BBMGR_JOUT_H

#include <stddef.h>
#include <jansson.h>

/* The flags of json_dumps() whose output jout_dumps() reproduces. */
#define JOUT_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(17))

/* body (an object or an array) as json_dumps(body, JOUT_JSON_FLAGS) writes it,
 * then '\n'; *len set.  The caller frees it.  NULL when out of memory or when
 * json_dumps() refuses it. */
char *jout_dumps(json_t *body, size_t *len);

#endif
