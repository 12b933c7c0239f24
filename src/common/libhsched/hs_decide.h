/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_decide.h — the decision of the model (hs_decide.c), its top file.
 */
#ifndef HARMONIA_HSCHED_DECIDE_H
#define HARMONIA_HSCHED_DECIDE_H

#include "hs_model.h"

int check_grants(hs_view_t *v, size_t n, double B, bool clamp);
double excess_wait(double now, double request, double done, double cap);
void guard_waits(hs_sched_t *s, double now, size_t n);
bool wait_bound_on(const hs_policy_t *pol);
int group_decide(hs_sched_t *s, const hs_ctx_t *ctx, size_t g, double B, bool stripes);

#endif /* HARMONIA_HSCHED_DECIDE_H */
