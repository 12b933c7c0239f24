/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * harmonia/harmonia.h — the application API of libharmonia.
 *
 * A job's processes bracket each I/O phase with harmonia_phase_begin() and
 * harmonia_phase_end(): begin asks bbmgrd (the Harmonia burst-buffer manager) for
 * the phase and blocks until the phase is granted; end reports it done.  Between
 * the two, harmonia_pace() / harmonia_write() keep the process at its granted rate.
 *
 *     harmonia_t *h;
 *     harmonia_grant_t g;
 *     harmonia_init(&h, NULL);                      // reads the job's environment
 *     harmonia_phase_begin(h, 10ULL << 30, HARMONIA_WRITE, &g);
 *     ... harmonia_write(h, fd, buf, n) ...
 *     harmonia_phase_end(h, HARMONIA_BYTES_VOLUME);
 *     harmonia_finalize(h);
 *
 * Rules (doc/libharmonia.md has the details):
 *  - Not under Harmonia (HARMONIA_URL or HARMONIA_JOBID unset, or HARMONIA_DISABLE
 *    set): every call is a no-op that succeeds.
 *  - bbmgrd unreachable: phases proceed ungated after at most HARMONIA_FALLBACK_WAIT
 *    seconds (default 5); one line on stderr per process; the manager is tried again
 *    quietly at later phases.  A refusal (4xx) also lets the phase proceed ungated.
 *    The application's I/O never fails and never hangs because of the manager.
 *  - One open phase per job: the first process to ask creates the job's phase, the
 *    others join it and share its grant; the phase is finished by the last of the
 *    processes that joined it (counted in a lock file, HARMONIA_COORD_DIR).
 *  - Thread-safe: one harmonia_t may be shared by the threads of a process; threads
 *    calling phase_begin while the process's phase is open join it.
 *
 * Error convention: -1 with errno set (EINVAL, ENOMEM) for misuse only.
 */
#ifndef HARMONIA_HARMONIA_H
#define HARMONIA_HARMONIA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(HM_BUILDING_LIBHARMONIA) && !defined(HM_PLUGIN_BUILD)
#define HARMONIA_EXPORT __attribute__((visibility("default")))
#else
#define HARMONIA_EXPORT
#endif

typedef struct harmonia harmonia_t;

typedef enum {
    HARMONIA_WRITE = 0,
    HARMONIA_READ = 1,
    HARMONIA_READWRITE = 2,
} harmonia_dir_t;

typedef enum {
    HARMONIA_MODE_OFF = 0,      /* not under Harmonia: no-op */
    HARMONIA_MODE_MANAGED = 1,  /* phases are gated by bbmgrd */
    HARMONIA_MODE_FALLBACK = 2, /* bbmgrd unreachable or refusing: ungated for now */
} harmonia_mode_t;

/* harmonia_phase_try_begin(): the phase waits for its grant; call again later. */
#define HARMONIA_WAIT 1

/* harmonia_phase_end(): "as many bytes as the phase's volume". */
#define HARMONIA_BYTES_VOLUME UINT64_MAX

typedef struct {
    uint64_t phase_id; /* bbmgrd's phase id; 0 when the phase is ungated */
    int gated;         /* 1: granted by bbmgrd; 0: proceeds ungated (off/fallback) */
    int joined;        /* 1: joined a phase another process (or thread) opened */
    double requested;  /* Unix time of the request */
    double start;      /* Unix time the grant took effect (or the phase proceeded) */
    double wait;       /* seconds this call waited */
    double bandwidth;  /* bytes/s granted to the job's phase (0: unknown, not paced) */
    double share;      /* bandwidth over the I/O system's bandwidth (0: unknown) */
    double rate;       /* this process's pacing rate: bandwidth / ntasks (0: none) */
    int nnodes;        /* buffer nodes of the grant (first 16 in nodes[]) */
    char nodes[16][64];
    char path[1024]; /* the job's buffer directory ("" if none) */
    char target[16]; /* "buffer", "pfs" or "" */
} harmonia_grant_t;

typedef struct {
    const char *url;          /* NULL: $HARMONIA_URL ("http://H:P" or "unix:/path") */
    const char *jobid;        /* NULL: $HARMONIA_JOBID */
    const char *munge_socket; /* NULL: $HARMONIA_MUNGE_SOCKET, then munge's default */
    int no_auth;              /* send no MUNGE credential (bbmgrd 'auth: none') */
    double connect_timeout;   /* s; 0: $HARMONIA_CONNECT_TIMEOUT or 2 */
    double fallback_wait;     /* s; 0: $HARMONIA_FALLBACK_WAIT or 5 */
    double max_wait;          /* s; 0: $HARMONIA_MAX_WAIT or 600; < 0: no limit */
    double retry_interval;    /* s; 0: $HARMONIA_RETRY_INTERVAL or 10 */
    const char *coord_dir;    /* NULL: $HARMONIA_COORD_DIR, then /dev/shm, /tmp */
    int ntasks;               /* processes sharing a grant; 0: $HARMONIA_NTASKS,
                                   $SLURM_NTASKS, then 1 */
    int quiet;                /* no message on stderr (the fallback still happens) */
    int force_off;            /* ignore the environment: no-op mode */
} harmonia_opts_t;

/* Make a handle (opts NULL: everything from the environment).  Does not contact
 * bbmgrd.  Returns 0, or -1 with errno (ENOMEM, EINVAL for a bad opts value). */
HARMONIA_EXPORT int harmonia_init(harmonia_t **h, const harmonia_opts_t *opts);

/* Begin an I/O phase of volume bytes; block until granted (or proceeding ungated:
 * manager unreachable, refused, or HARMONIA_MAX_WAIT passed).  grant may be NULL.
 * A thread calling it while another thread of the process has the phase open joins
 * that phase (each begin is paired with one end).  Returns 0, or -1 with errno
 * EINVAL (bad arguments). */
HARMONIA_EXPORT int harmonia_phase_begin(harmonia_t *h, uint64_t volume, harmonia_dir_t dir,
                                         harmonia_grant_t *grant);

/* Non-blocking variant: 0 when the phase may start (grant filled), HARMONIA_WAIT
 * when it is queued (call again with the same arguments, or harmonia_phase_begin()
 * to block, or harmonia_phase_end() to cancel), -1 on misuse. */
HARMONIA_EXPORT int harmonia_phase_try_begin(harmonia_t *h, uint64_t volume, harmonia_dir_t dir,
                                             harmonia_grant_t *grant);

/* End the phase: bytes actually moved by this process (HARMONIA_BYTES_VOLUME: the
 * volume asked for).  A queued phase is cancelled.  0, or -1 (EINVAL: no phase).
 * It returns at once: the handle's own thread reports the end to bbmgrd while the
 * application computes; the next begin or end of the handle, and
 * harmonia_finalize(), wait for that report.  HARMONIA_SYNC_END=1 in the
 * environment (read by harmonia_init()) reports before returning instead. */
HARMONIA_EXPORT int harmonia_phase_end(harmonia_t *h, uint64_t bytes);

/* Pacing: account for bytes about to be moved in the open phase and sleep as needed
 * to stay within the granted rate (a token bucket; burst: 50 ms of rate, at least
 * 256 KiB).  No-op outside a gated phase.  Returns seconds slept, or -1 (EINVAL). */
HARMONIA_EXPORT double harmonia_pace(harmonia_t *h, size_t bytes);

/* write(2)/read(2) the whole buffer (retrying short transfers and EINTR), paced in
 * chunks.  Chunks are multiples of 4096 bytes, so O_DIRECT alignment is kept.
 * Returns bytes moved (short only at end of file for reads), or -1 with errno. */
HARMONIA_EXPORT ssize_t harmonia_write(harmonia_t *h, int fd, const void *buf, size_t n);
HARMONIA_EXPORT ssize_t harmonia_read(harmonia_t *h, int fd, void *buf, size_t n);

HARMONIA_EXPORT harmonia_mode_t harmonia_mode(harmonia_t *h);
HARMONIA_EXPORT const char *harmonia_mode_name(harmonia_mode_t m);
HARMONIA_EXPORT const char *harmonia_dir_name(harmonia_dir_t d);

/* End an open phase (as phase_end with the volume), wait until bbmgrd has the
 * report of the last phase end, stop the handle's thread and free the handle.
 * Accepts NULL, keeps errno. */
HARMONIA_EXPORT void harmonia_finalize(harmonia_t *h);

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_HARMONIA_H */
