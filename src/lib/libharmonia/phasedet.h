/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * phasedet.h — online detection of a job's I/O phases (internal to the interposer;
 * pure: no I/O, no clock, no threads, no allocation; times are parameters).
 *
 * The detector sees the I/O calls of a process on the paths that matter, as
 * (start time, end time, bytes).  A phase begins with the first call after an
 * idle time of at least the gap, and ends when no call has been made (and none is
 * in flight) for the gap; its start is the first call's start and its end the
 * last call's end.  From the phases closed so far it estimates the job's w_iter
 * (the mean interval between the starts of consecutive phases, over the last
 * HM_PD_NHIST intervals), the volume per phase (the mean of the last phases) and
 * the idle time between phases, which sets the gap (a quarter of the median idle
 * time, within [gap_min, gap_max], and at least twice the longest pause seen
 * inside a phase).  The job's iohints, when given, are the estimates before any
 * phase is seen.  doc/interposer.md has its measured accuracy.
 *
 * The learned part (hm_pd_hist_t) is plain data: the interposer keeps it in a
 * file shared by the processes of a job, so that a job made of many short
 * processes (a shell loop of dd) learns as one program does; a phase recorded by
 * several processes (the ranks of an MPI program) is merged into one.
 */
#ifndef HARMONIA_PHASEDET_H
#define HARMONIA_PHASEDET_H

#include <stdint.h>

#define HM_PD_NHIST 16

typedef struct {
    double gap_init;    /* s; the gap before anything is known (0.25) */
    double gap_min;     /* s; never shorter (0.1) */
    double gap_max;     /* s; never longer (1) */
    double gap_frac;    /* of the median idle time between phases (0.25) */
    double sync_gap;    /* s; the gap once the phase's data is synced (0.1) */
    double hint_w_iter; /* s; the job's iohints (0: none) */
    double hint_volume; /* bytes; the job's iohints (0: none) */
} hm_pd_params_t;

typedef struct {
    double start, end; /* first call's start, last call's end */
    double bytes;
    double pause; /* longest time between two calls inside the phase */
} hm_pd_phase_t;

/* What was learned about the job (plain data; merged across its processes). */
typedef struct {
    uint32_t magic;     /* HM_PD_MAGIC when valid */
    uint32_t size;      /* sizeof(hm_pd_hist_t) */
    uint64_t nphases;   /* phases recorded */
    hm_pd_phase_t last; /* the last one (nphases > 0) */
    double first_start;
    double interval[HM_PD_NHIST]; /* between consecutive starts (ring) */
    double idle[HM_PD_NHIST];     /* from one end to the next start (ring) */
    double volume[HM_PD_NHIST];   /* bytes of the phases (ring) */
    uint32_t ninterval, nidle, nvolume;
    double pause; /* longest pause inside a phase, recent phases */
} hm_pd_hist_t;

#define HM_PD_MAGIC 0x48504431u /* "HPD1" */

typedef struct {
    hm_pd_params_t p;
    hm_pd_hist_t h;
    int open;          /* a phase is open */
    hm_pd_phase_t cur; /* the open phase */
    double last_end;   /* end of the last call (open phase) */
    double gap;        /* hm_pd_gap(), kept up to date (every call reads it) */
    int synced;        /* the open phase's data made durable since its last byte */
} hm_pd_t;

/* Flags of hm_pd_start() */
#define HM_PD_BEGIN 1 /* this call opens a phase */
#define HM_PD_ENDED 2 /* the previous phase ended (in *closed) */

void hm_pd_params_default(hm_pd_params_t *p);
void hm_pd_init(hm_pd_t *pd, const hm_pd_params_t *p);

/* A call starts at t while inflight others are not done: returns HM_PD_BEGIN
 * when it opens a phase, with HM_PD_ENDED when a phase idle for the gap (and with
 * no call in flight) had not been closed yet by hm_pd_poll() (it is copied to
 * *closed, which may be NULL). */
int hm_pd_start(hm_pd_t *pd, double t, int inflight, hm_pd_phase_t *closed);

/* The call ended at t having moved bytes (>= 0). */
void hm_pd_done(hm_pd_t *pd, double t, double bytes);

/* At time now, with inflight calls not yet done: 1 when the open phase has
 * been idle for the gap and is closed now (copied to *closed), else 0. */
int hm_pd_poll(hm_pd_t *pd, double now, int inflight, hm_pd_phase_t *closed);

/*
 * A call that makes the phase's data durable (fsync, fdatasync) ended at t.  A
 * program syncs what it wrote at the end of a checkpoint: when the open phase has
 * moved at least half the volume learned per phase, it ends after sync_gap of
 * idle time instead of the gap, which the pauses inside a phase (a rank waiting
 * for another inside a collective call) may have pushed to gap_max.  The next
 * call that moves bytes gives the phase its gap back.  A sync in the first phase
 * (nothing learned) changes nothing.
 */
void hm_pd_sync(hm_pd_t *pd, double t);

/* Close the open phase now (the process exits); 1 when there was one. */
int hm_pd_flush(hm_pd_t *pd, hm_pd_phase_t *closed);

/* The current gap, s. */
double hm_pd_gap(const hm_pd_t *pd);

/* Set the hints (the job's iohints, read once a phase is granted), or the
 * history (what the job's other processes learned); the gap follows. */
void hm_pd_set_hints(hm_pd_t *pd, double w_iter, double volume);
void hm_pd_set_hist(hm_pd_t *pd, const hm_pd_hist_t *h);

/* Record a closed phase into a history: a phase that overlaps the last one
 * recorded (another process's view of the same phase) is merged into it. */
void hm_pd_record(hm_pd_hist_t *h, const hm_pd_phase_t *ph, double gap);

/*
 * A job on several nodes: a node's phase may end too soon, while its process
 * waits for another node (a rank inside a collective call) and the job's phase
 * is still open at bbmgrd.  Its next I/O then continues that phase (the node
 * rejoins it) when its idle time since the last phase recorded is short against
 * the job's idle time between phases: under hm_pd_rejoin_idle(), half the median
 * idle time learned (a real idle time is never under half the typical one but in
 * an irregular job), or, before any is learned, four gaps (the gap is a quarter of
 * the typical idle time).  hm_pd_may_rejoin(): 1 when the open phase (just
 * begun) qualifies; hm_pd_rejoin(): it continues the last phase recorded: it
 * starts at that one's start, its idle time is a pause inside it (which the gap
 * learns), and recorded it merges into it with its new bytes only.
 */
double hm_pd_rejoin_idle(const hm_pd_t *pd);
int hm_pd_may_rejoin(const hm_pd_t *pd);
void hm_pd_rejoin(hm_pd_t *pd);

/* Estimates from a history (falling back on the hints; 0: unknown). */
double hm_pd_w_iter(const hm_pd_t *pd);
double hm_pd_volume(const hm_pd_t *pd);
/* 1 when the intervals so far look periodic (at least 2, coefficient of
 * variation below 0.5), 0 otherwise. */
int hm_pd_periodic(const hm_pd_t *pd);

/* A valid history (a file's content may be anything). */
int hm_pd_hist_valid(const hm_pd_hist_t *h);

#endif /* HARMONIA_PHASEDET_H */
