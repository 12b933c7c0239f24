/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_bbmgr_core_starve.c — bbmgrd applies the starvation bound of bbmgr.yaml
 * (policy.starve_factor, policy.starve_floor; doc/policies.md, "Starvation bound")
 * and counts the phases it served (harmonia_starvation_bound_hits_total of
 * /metrics).  The scheduler's clock is moved on (hs_offset) instead of waiting.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "test_bbmgr_core_fixture.h"
#include "testutil.h"

static const char *conf(const char *extra)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf),
             "policy:\n  id: fcfs\n%s"
             "platform:\n  compute_nodes: 2\n  node_bandwidth: 1 GB/s\n"
             "  pfs_bandwidth: 1 GB/s\n",
             extra);
    return buf;
}

/* fcfs: a 100 TB phase (100,000 s alone) holds a later 1 GB one.  'wait' s later
 * (the scheduler's clock), returns the bound hits and the small phase's state. */
static uint64_t run(const char *extra, double wait, phase_state_t *st)
{
    fx_t f;
    cerr_t e = { 0 };
    phase_t *p;
    uint64_t hits;

    fx_init(&f, conf(extra));
    fx_open(&f);
    core_lock(f.c);
    job_t *a = fx_job(f.c, "10", "10s", "100TB");
    job_t *b = fx_job(f.c, "11", "10s", "1GB");
    ck_assert_msg(core_phase_request(f.c, a, 100e12, "write", 10, &e) != NULL, "%s", e.err.text);
    core_settle(f.c);
    ck_assert_msg((p = core_phase_request(f.c, b, 1e9, "write", 10, &e)) != NULL, "%s", e.err.text);
    core_settle(f.c);
    ck_assert_int_eq(p->state, PH_WAITING);
    ck_assert_uint_eq(f.c->bound_hits, 0);
    f.c->hs_offset += wait;
    core_unlock(f.c);
    core_tick(f.c); /* decides when the scheduler's next event is due */
    core_lock(f.c);
    *st = p->state;
    hits = f.c->bound_hits;
    core_unlock(f.c);
    fx_done(&f);
    return hits;
}

START_TEST(test_default_bound)
{
    phase_state_t st;

    /* the default bound of a 1 s phase is the floor, 2 h: not reached at 1 h */
    ck_assert_uint_eq(run("", 3600, &st), 0);
    ck_assert_int_eq(st, PH_WAITING);
    ck_assert_uint_eq(run("", 2 * 3600 + 60, &st), 1);
    ck_assert_int_eq(st, PH_GRANTED);
}
END_TEST

START_TEST(test_configured_bound)
{
    phase_state_t st;

    ck_assert_uint_eq(run("  starve_factor: 10\n  starve_floor: 1m\n", 120, &st), 1);
    ck_assert_int_eq(st, PH_GRANTED);
    /* off: fcfs holds it */
    ck_assert_uint_eq(run("  starve_factor: 0\n", 3 * 3600, &st), 0);
    ck_assert_int_eq(st, PH_WAITING);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "starve", .timeout = 120, .tests = { test_default_bound, test_configured_bound, NULL } },
    };
    return tu_main("bbmgr_core_starve", tcases, TU_COUNT(tcases));
}
