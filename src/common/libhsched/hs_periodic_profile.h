/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_periodic_profile.h — the profile's block maxima and the commit of an instance
 * (hs_periodic_profile.c), used by the first fit and by hs_periodic.c.
 */
#ifndef HARMONIA_HS_PERIODIC_PROFILE_H
#define HARMONIA_HS_PERIODIC_PROFILE_H

#include "hs_periodic_model.h"

int hs_pp_bm_refresh(struct work *wk);
size_t hs_pp_bm_below(struct work *wk, double B, size_t s, double m);
/* 0 committed, 1 refused by the budget (nothing changed), -1 ENOMEM */
int hs_pp_commit_instance(struct work *wk, size_t k, double init_w, double span, bool run,
                          size_t *index);

#endif /* HARMONIA_HS_PERIODIC_PROFILE_H */
