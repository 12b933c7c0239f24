/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hsched_testutil.c — see hsched_testutil.h. */
#include <check.h>
#include <math.h>

#include "hsched_testutil.h"

hs_sched_t *ht_sched(const hs_platform_t *p, const char *policy)
{
    hs_policy_t pol;
    hu_error_t err;
    hs_sched_t *s;

    ck_assert_msg(hs_policy_parse(policy, &pol, &err) == 0, "%s: %s", policy, err.text);
    s = hs_sched_create(p, &pol, &err);
    ck_assert_msg(s != NULL, "create %s: %s", policy, err.text);
    return s;
}

void ht_request(hs_sched_t *s, double now, uint64_t id, double vol, hs_dir_t dir, double w_done)
{
    hu_error_t err;

    ck_assert_msg(hs_phase_request(s, now, id, vol, dir, w_done, &err) == 0, "request %ju: %s",
                  (uintmax_t)id, err.text);
}

int ht_close(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(1., fabs(b));
}
