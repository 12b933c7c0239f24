/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_core_internal.h — what hs_core.c (lifecycle, jobs and phases, events, accounting)
 * gives the decision above it (hs_decide.c).
 */
#ifndef HARMONIA_HSCHED_CORE_INTERNAL_H
#define HARMONIA_HSCHED_CORE_INTERNAL_H

#include "hs_model.h"

void job_at(const struct job *j, double now, double *done, double *io_wait);
bool phase_complete(const hs_sched_t *s, const struct job *j);

#endif /* HARMONIA_HSCHED_CORE_INTERNAL_H */
