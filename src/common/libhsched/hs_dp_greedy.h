/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_dp_greedy.h — the fallback of Harmonia's DP (hs_dp_greedy.c), called by hs_dp.c.
 */
#ifndef HARMONIA_HS_DP_GREEDY_H
#define HARMONIA_HS_DP_GREEDY_H

#include "hs_dp_model.h"

/* Fallback (hs_dp_greedy.c).  Fills 'asg' (node, slot per phase); returns 0, or -1
 * with errno = ENOSPC / ENOMEM.  '*steps' gets the work done. */
int hs_dp_greedy(const struct dpx *x, int *anode, int *aslot, double *steps);

#endif /* HARMONIA_HS_DP_GREEDY_H */
