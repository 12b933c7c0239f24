/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * util.h — the small helpers every part of bbmgr shares (bbmgrd, bbnoded, bbmgr):
 * one test of path containment, the release of a list of strings, and the signal
 * and systemd glue of the two daemons.  The clock for durations and deadlines is
 * libhutil's hu_mono().
 */
#ifndef BBMGR_UTIL_H
#define BBMGR_UTIL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "libhutil/hutil.h"

/* Is path root itself or inside it, on the text (root may end in '/')?  Paths
 * reaching here have no "." or ".." components (checked where they come in). */
bool util_path_under(const char *path, const char *root);

/* Write the message (printf-style) into e (hu_verrprintf(); e may be NULL), set
 * errno to err, return -1: the one way a checker of bbmgr fails with a reason. */
int util_fail(int err, hu_error_t *e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Free the n strings of the list v, then v (NULL with n = 0 is fine). */
void util_strv_free(char **v, int n);

/* The daemons' signals: SIGTERM and SIGINT set util_got_stop (to the signal),
 * SIGHUP sets util_got_hup, SIGPIPE is ignored.  The handlers only set the flags;
 * the main loop acts on them. */
extern volatile sig_atomic_t util_got_stop, util_got_hup;
void util_daemon_signals(void);

/* A state message to systemd (Type=notify: READY=1, RELOADING=1, STOPPING=1);
 * nothing when built without libsystemd or not run by systemd. */
void util_notify(const char *msg);

#endif
