/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * util.h — the small helpers every part of bbmgr shares (bbmgrd, bbnoded, bbmgr):
 * one clock for durations and deadlines, one test of path containment.
 */
#ifndef BBMGR_UTIL_H
#define BBMGR_UTIL_H

#include <stdbool.h>

/* Seconds of CLOCK_MONOTONIC: for durations, deadlines and rates (never a date). */
double util_mono(void);

/* Is path root itself or inside it, on the text (root may end in '/')?  Paths
 * reaching here have no "." or ".." components (checked where they come in). */
bool util_path_under(const char *path, const char *root);

#endif
