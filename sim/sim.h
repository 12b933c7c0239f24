/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim.h — bbsim's engine, outputs and generators.
 */
#ifndef BBSIM_SIM_H
#define BBSIM_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "libhsched/hsched.h"
#include "workload.h"

/* ---------------------------------------------------------------- engine */

typedef enum { SEG_COMPUTE = 0, SEG_IO = 1, SEG_STALL = 2 } sim_seg_kind_t;
/* SEG_STALL: I/O slowed by a full buffer node (the writer gets its drain rate). */

/* One interval of a job's life, for the Gantt chart.  An I/O interval has the
 * bandwidth granted during it (0: the phase waits). */
typedef struct {
    double t0, t1;
    double bw;
    sim_seg_kind_t kind;
} sim_seg_t;

typedef struct {
    sim_seg_t *segs;
    int n, cap;
} sim_trace_t;

/* One buffer node's figures at the end of a run. */
typedef struct {
    const char *name; /* borrowed from the workload */
    char device[32];  /* device type, "" for an ideal device */
    hs_buffer_stats_t st;
} sim_dev_t;

typedef struct {
    char policy[64]; /* canonical id */
    hs_metrics_t m;
    int napps;
    const char **names;    /* borrowed from the jobs */
    hs_job_stats_t *stats; /* napps */
    hs_app_metrics_t *app; /* napps */
    uint64_t events;       /* arrivals, phase requests, finishes, leaves */
    uint64_t decisions;    /* hs_sched_decide() calls */
    double wall;           /* seconds spent in the event loop */
    bool has_buffers;
    double buffer_efficiency; /* NAN without buffers */
    sim_trace_t *traces;      /* napps, when recorded */
    double bw;                /* B, for the Gantt shading */
    /* buffer tier (has_buffers) */
    int ndevs;
    sim_dev_t *devs;
    int *nalloc;    /* napps: buffer nodes each job was given */
    double if_mean; /* mean over all phases of If */
    double if_max;
    double buffer_full;   /* sum over jobs of the time slowed by full nodes */
    double alloc_wait;    /* sum over jobs of the wait for buffer nodes */
    double overprovision; /* factor used by the allocator */
    /* schedules computed ahead (periodic, harmonia-*; pstats.plans) */
    hs_policy_kind_t kind;
    hs_policy_stats_t pstats; /* hs_sched_policy_stats() at the end of the run */
    double sched_wall;        /* seconds in the decisions that computed one */
    double sched_wall_max;    /* the longest such decision */
    double decide_wall;       /* seconds in all hs_sched_decide() calls */
    double decide_wall_max;   /* the longest hs_sched_decide() call, s */
    /* auto (hs_sched_auto_state() at the end of the run) */
    hs_auto_state_t auto_st;
    double auto_wall;     /* seconds in the decisions that were epochs */
    double auto_wall_max; /* the longest such decision */
    /* the wait bounds (max_wait, starvation bound): phases that reached theirs */
    uint64_t bound_hits;
} sim_result_t;

typedef struct {
    bool record;        /* keep traces for the Gantt chart */
    uint64_t max_steps; /* 0: automatic bound */
} sim_opts_t;

/* Run 'jobs' on the platform of 'wl' under 'pol'.  Returns 0, or -1 with errno set
 * and err filled (a libhsched error, or a policy that stops making progress). */
int sim_run(const wl_t *wl, const wl_jobs_t *jobs, const hs_policy_t *pol, const sim_opts_t *opts,
            sim_result_t *res, hu_error_t *err);
void sim_result_clear(sim_result_t *res); /* accepts NULL, keeps errno */

/* ---------------------------------------------------------------- outputs */

typedef enum { OUT_TABLE = 0, OUT_JSON, OUT_CSV } sim_format_t;

int sim_output(FILE *f, sim_format_t fmt, const wl_t *wl, uint64_t seed, const sim_result_t *res,
               int nres);

/* SVG Gantt chart of one or several results (one panel per policy). */
int sim_gantt(const char *path, const wl_t *wl, const sim_result_t *res, int nres, hu_error_t *err);

/* ---------------------------------------------------------------- generators */

/* 'argv[0]' is the generator name.  Writes YAML to 'out'.  Returns 0, 1 (bad
 * option value) or 2 (usage), with a message on 'errf'. */
int gen_main(int argc, char **argv, FILE *out, FILE *errf);
void gen_usage(FILE *f);

#endif /* BBSIM_SIM_H */
