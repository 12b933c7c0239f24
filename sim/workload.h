/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * workload.h — bbsim's workload files (doc/design.md §5, doc/workload-format.md).
 *
 * A workload is a YAML file with a 'platform:' mapping and an 'apps:' sequence.  The
 * loader is strict: unknown keys, missing units, non-positive bandwidths, apps larger
 * than the platform, anchors/aliases and YAML syntax errors are refused with an error
 * text "FILE:LINE:COL: reason" (1-based line and column of the offending node).
 *
 * The loader only reads and checks; wl_expand() turns the description into concrete
 * jobs (count replicas, per-iteration compute times and volumes, random draws made
 * with a seed through the PRNG of rng.h, reproducible across libc versions).
 *
 * Nothing here depends on libhsched: the fuzzer builds this file alone.
 */
#ifndef BBSIM_WORKLOAD_H
#define BBSIM_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "../src/common/libhutil/hutil.h"
#include "workload_model.h"

typedef enum { WL_IO_WRITE = 0, WL_IO_READ = 1 } wl_io_t;

typedef struct {
    char *name;
    int nodes;
    wl_dist_t release; /* drawn once per replica */
    int iterations;
    wl_value_t w;      /* seconds of compute before each phase */
    wl_value_t volume; /* bytes of each phase */
    int count;         /* replicas (>= 1) */
    wl_io_t io;
    double w_iter;          /* hint (s), 0: none */
    int priority;           /* 0: none, else 1..10 */
    int line, col;          /* where the app's mapping starts (1-based) */
    double buffer_capacity; /* bytes of buffer asked for (0: its largest phase) */
    int buffer_nodes;       /* at least this many buffer nodes (0: from capacity) */
} wl_app_t;

typedef struct {
    char *name;       /* a name or a host list ("bb[01-04]") */
    double capacity;  /* bytes */
    double bandwidth; /* bytes/s */
    char *device;     /* name of a device profile, or NULL */
    int count;
    int line, col;
} wl_buffer_t;

/* One buffer node after host-list expansion (in file order). */
typedef struct {
    char *name;
    int entry; /* index in buffers[] */
} wl_bnode_t;

typedef struct {
    char *name;
    double msca[16]; /* MSCA(c), c = 1..16 (write, and read by default) */
    int nmsca;
    double msca_read[16]; /* read curve (nmsca_read == 0: the write curve) */
    int nmsca_read;
    int line, col;
} wl_device_t;

/* Device types known without a 'devices:' entry (libhsched's built-in curves). */
#define WL_BUILTIN_DEVICES \
    { \
        "nvme", "ssd", "hdd", NULL \
    }

typedef struct {
    int nodes;      /* N */
    double node_bw; /* b, bytes/s */
    double bw;      /* B, bytes/s */
    wl_buffer_t *buffers;
    int nbuffers;
    wl_device_t *devices;
    int ndevices;
    int buffers_line, buffers_col; /* mark of 'buffers:' (0 when absent) */
    wl_bnode_t *bnodes;            /* the buffer nodes, host lists expanded */
    int nbnodes;
    double overprovision; /* over_provisioning (0: the default, 2.0) */
} wl_platform_t;

typedef struct {
    char *file; /* name used in messages */
    wl_platform_t plat;
    wl_app_t *apps;
    int napps;
    double period_min; /* scheduler.period_min, s (0: not given) */
    /* scheduler.auto_* (0 / "": auto's defaults) */
    char auto_candidates[256];
    int auto_objective;
    double auto_factor, auto_hysteresis, auto_interval, auto_horizon;
    double max_wait; /* scheduler.max_wait, s (0: off) */
} wl_t;

/* Parse a workload from memory ('name' is used in messages).  Returns NULL with errno
 * set (EINVAL: bad input, ENOMEM) and err filled with "NAME:LINE:COL: reason". */
wl_t *wl_load_buffer(const char *buf, size_t len, const char *name, hu_error_t *err);

/* Same from a file ("-" reads stdin). */
wl_t *wl_load_file(const char *path, hu_error_t *err);

void wl_destroy(wl_t *wl); /* accepts NULL, keeps errno */

/* ---------------------------------------------------------------- expansion */

typedef struct {
    char *name; /* "app" or "app#3" for replicas */
    int app;    /* index in wl->apps */
    int nodes;
    double release;
    int iterations;
    double *w;      /* iterations values, s (>= 0) */
    double *volume; /* iterations values, bytes (> 0) */
    wl_io_t io;
    double w_iter; /* hint or 0 */
    int priority;
    double buffer_capacity; /* bytes asked for (the app's, or the largest phase) */
    int buffer_nodes;
} wl_job_t;

typedef struct {
    wl_job_t *jobs;
    int njobs;
} wl_jobs_t;

/* Draw every random value with 'seed'.  Returns NULL with errno set. */
wl_jobs_t *wl_expand(const wl_t *wl, uint64_t seed, hu_error_t *err);
void wl_jobs_destroy(wl_jobs_t *jobs);

#endif /* BBSIM_WORKLOAD_H */
