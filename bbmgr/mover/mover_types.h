/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mover_types.h — the mover's public types, shared by all its layers (mover.h
 * has the API that works on them; it includes this file).
 */
#ifndef BBMGR_MOVER_TYPES_H
#define BBMGR_MOVER_TYPES_H

#include <stdint.h>

typedef struct mover mover_t;

typedef enum {
    MV_RUNNING = 0,
    MV_DONE, /* complete, verified, under its final names */
    MV_FAILED,
    MV_CANCELLED,
    MV_DONE_SYNCING, /* done as MV_DONE, and its fsyncs go on: MV_DURABLE or
                           MV_NOT_DURABLE follows */
    MV_DURABLE,      /* a done transfer is on disk (after MV_DONE of a transfer
                           fsync'd before done, or after MV_DONE_SYNCING) */
    MV_NOT_DURABLE,  /* its fsyncs failed, or the re-run of a recovery failed: the
                           copy may not be on disk (message says why) */
} mover_state_t;

#define MOVER_MAX_PARTS 64 /* nodes a transfer can be spread over */

/* For /metrics. */
typedef struct {
    uint64_t bytes;                   /* bytes copied (chunks completed) */
    uint64_t files;                   /* files completed */
    uint64_t chunks;                  /* SFQ requests completed */
    uint64_t backfills;               /* of which backfilled by SFQ(D)+ */
    uint64_t done, failed, cancelled; /* transfers finished, by outcome */
    int running;                      /* transfers in the mover */
    int threads, busy;
} mover_stats_t;

#endif
