/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_bbmgr_core_budget.c — bbmgrd's decisions are bounded: a
 * periodic policy whose pattern would take seconds to minutes (a short job with
 * ~10^4 instances in the long job's period) stops at libhsched's decision budget,
 * and bbmgrd counts it (the counter harmonia_decision_budget_hits_total of /metrics
 * prints) and logs it.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "libhsched/hs_periodic.h"
#include "test_bbmgr_core_fixture.h"
#include "testutil.h"

#define GiB (1ULL << 30)

static const char *conf(const char *policy)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf),
             "policy:\n  id: %s\n"
             "platform:\n  compute_nodes: 2\n  node_bandwidth: 128785064 B/s\n"
             "  pfs_bandwidth: 6482762568 B/s\n"
             "pools:\n  - name: fast\n    granularity: 1GiB\n"
             "nodes:\n  - names: bb[1-2]\n    capacity: 10GiB\n    bandwidth: 1 GB/s\n"
             "    mount: @DIR@/nomount\n    pool: fast\n",
             policy);
    return buf;
}

static const char *const policies[] = { "periodic-throu", "periodic-cong", "persched" };

/* The fuzzer's workload of test_sim_fuzz's findings, as bbmgrd jobs: a 47 TB phase
 * every 4 days and a 15 B one every 22 s. */
START_TEST(test_budget_counted)
{
    fx_t f;
    cerr_t e = { 0 };

    fx_init(&f, conf(policies[_i]));
    fx_open(&f);
    core_lock(f.c);
    job_t *a = fx_job(f.c, "10", "365645s", "47089372430180B");
    job_t *b = fx_job(f.c, "11", "22s", "15B");
    ck_assert_uint_eq(f.c->budget_hits, 0);
    ck_assert_msg(core_phase_request(f.c, a, 47089372430180., "write", 0.22, &e) != NULL, "%s",
                  e.err.text);
    ck_assert_msg(core_phase_request(f.c, b, 15, "write", 21.9, &e) != NULL, "%s", e.err.text);
    core_settle(f.c);
    ck_assert_uint_ge(f.c->budget_hits, 1);
    core_unlock(f.c);
    fx_done(&f);
}
END_TEST

/* bbmgr.yaml's policy.decision_budget is the policy's budget (default 2,000,000,
 * libhsched's own default) */
START_TEST(test_budget_from_config)
{
    fx_t f;
    char c[1200];

    fx_init(&f, conf("periodic-throu"));
    fx_open(&f);
    ck_assert_uint_eq(f.c->policy.max_work, HS_PERIODIC_MAX_WORK);
    ck_assert_uint_eq(f.c->policy.max_work, 2000000);
    fx_done(&f);
    snprintf(c, sizeof(c), "%s", conf("periodic-throu"));
    char *p = strstr(c, "platform:");
    ck_assert_ptr_nonnull(p);
    memmove(p + 25, p, strlen(p) + 1);
    memcpy(p, "  decision_budget: 20000\n", 25);
    fx_init(&f, c);
    fx_open(&f);
    ck_assert_uint_eq(f.c->policy.max_work, 20000);
    fx_done(&f);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "budget", .timeout = 300, .loops = { { test_budget_counted, TU_COUNT(policies) } } },
        { "config", .tests = { test_budget_from_config, NULL } },
    };
    return tu_main("bbmgr_core_budget", tcases, TU_COUNT(tcases));
}
