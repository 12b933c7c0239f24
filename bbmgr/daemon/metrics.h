/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * metrics.h — /metrics in the Prometheus text format (version 0.0.4).
 */
#ifndef BBMGR_METRICS_H
#define BBMGR_METRICS_H

#include "api.h"
#include "core.h"
#include "state.h"

/* The whole exposition, malloc'd; NULL on ENOMEM.  Takes the core lock. */
char *metrics_render(api_t *a, core_t *c, state_t *st);

#endif
