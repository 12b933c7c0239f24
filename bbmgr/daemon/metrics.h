/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * metrics.h — /metrics in the Prometheus text format (version 0.0.4).
 */
#ifndef BBMGR_METRICS_H
#define BBMGR_METRICS_H

#include <stdint.h>

#include "core.h"
#include "state.h"

/* What the HTTP side counted (api.c), handed to metrics_render(). */
typedef struct {
    uint64_t by_code[600];
    uint64_t lat_hist[12];
    double lat_sum;
    uint64_t lat_count;
    uint64_t auth_failures;
    uint64_t auth_munge;   /* requests authenticated by a MUNGE credential (tried) */
    uint64_t auth_session; /* ... by a connection's session token (tried) */
    uint64_t sessions_opened;
    uint64_t too_large;
    uint64_t waiters;
    uint64_t batch_items; /* requests run as items of POST /v1/batch */
} api_counters_t;

/* The whole exposition, malloc'd; NULL on ENOMEM.  ac: the HTTP side's counters
 * (a copy).  Takes the core lock. */
char *metrics_render(const api_counters_t *ac, core_t *c, state_t *st);

#endif
