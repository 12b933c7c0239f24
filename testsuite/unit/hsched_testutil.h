/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hsched_testutil.h — what the libhsched unit tests share: a scheduler made from a
 * platform and a policy id, a phase request that must succeed, a relative comparison.
 */
#ifndef HARMONIA_HSCHED_TESTUTIL_H
#define HARMONIA_HSCHED_TESTUTIL_H

#include <stdint.h>

#include "libhsched/hsched.h"

/* A scheduler on 'p' under the policy 'policy' (its id, parsed); fails the test
 * when either is refused. */
hs_sched_t *ht_sched(const hs_platform_t *p, const char *policy);

/* hs_phase_request() that must succeed. */
void ht_request(hs_sched_t *s, double now, uint64_t id, double vol, hs_dir_t dir, double w_done);

/* |a - b| within 1e-9 of max(1, |b|). */
int ht_close(double a, double b);

#endif
