/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_periodic_ff.h — the first fit of Insert-In-Schedule (hs_periodic_ff.c), called by
 * hs_periodic.c.
 */
#ifndef HARMONIA_HS_PERIODIC_FF_H
#define HARMONIA_HS_PERIODIC_FF_H

#include "hs_periodic_model.h"

/* Add one instance of job k at the first instant where its I/O
 * fits (Insert-In-Schedule); 1 inserted, 0 no room, -1 ENOMEM. */
int hs_pp_ff_insert(struct work *wk, const struct ctx *c, size_t k);

#endif /* HARMONIA_HS_PERIODIC_FF_H */
