/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * agent.h — bbnoded's work: one buffer node's mount, its mover, its exchanges with
 * bbmgrd (doc/bbnoded.md; the messages are in nodeproto.h and doc/api.md).
 *
 * One thread calls agent_step() every interval: it collects the mover's results,
 * measures the device, sends both to bbmgrd with the results not yet acknowledged,
 * and applies the reply (directories to make, transfers to start or cancel,
 * directories to remove).  The mover's own threads do the copies.
 */
#ifndef BBMGR_AGENT_H
#define BBMGR_AGENT_H

#include <stdbool.h>

#include "config.h"
#include "libhutil/hutil.h"

typedef struct agent agent_t;

typedef struct {
    const cfg_t *cfg;
    const char *node;      /* this node's name, as in bbmgr.yaml */
    const char *url;       /* bbmgrd, http://host:port; NULL: from cfg */
    const char *diskstats; /* block device counters; NULL: /proc/diskstats */
} agent_opts_t;

agent_t *agent_create(const agent_opts_t *o, hu_error_t *err);
/* Stops the mover (unfinished transfers are run again when bbmgrd lists them to
 * the next agent process).  Accepts NULL. */
void agent_destroy(agent_t *a);

/* One exchange with bbmgrd: 0, or -1 when bbmgrd could not be reached or refused
 * (logged; the results wait for the next exchange). */
int agent_step(agent_t *a);

/* Seconds until the next exchange (bbmgrd's agents.interval). */
double agent_interval(const agent_t *a);

#endif
