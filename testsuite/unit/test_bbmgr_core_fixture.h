/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_bbmgr_core_fixture.h — a bbmgrd core on a temporary state directory, for the
 * unit tests of the core (test_bbmgr_core_*.c): the configuration is written to a
 * file and loaded as bbmgrd loads it, the state database is a real SQLite file, and
 * the core is created and recovered as at bbmgrd's start.
 */
#ifndef TEST_BBMGR_CORE_FIXTURE_H
#define TEST_BBMGR_CORE_FIXTURE_H

#include <check.h>

#include "core.h" /* white-box tests of the core: they read its state */

typedef struct {
    char dir[64];   /* the temporary directory (removed by fx_done) */
    char path[128]; /* its bbmgr.yaml */
    state_t *st;
    core_t *c;
} fx_t;

/* Make the directory and write bbmgr.yaml: "state: dir" points into it, then yaml,
 * where every "@DIR@" stands for the directory (e.g. in mounts). */
void fx_init(fx_t *f, const char *yaml);
/* Open the state database and create and recover the core, as bbmgrd does. */
void fx_open(fx_t *f);
/* Commit what is queued, stop the state writer and destroy the core. */
void fx_close(fx_t *f);
/* fx_close() if open, and remove the directory. */
void fx_done(fx_t *f);

/* Run cmd (a shell command, printf format) and assert that it succeeded. */
void fx_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Register job 'id' (uid 1001, one node) with the hints w_iter and io_volume (as
 * the API takes them, e.g. "22s", "15B") and begin it; asserts each step. */
job_t *fx_job(core_t *c, const char *id, const char *w_iter, const char *volume);

#endif
