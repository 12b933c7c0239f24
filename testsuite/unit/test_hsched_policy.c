/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_hsched_policy.c — policy ids (doc/design.md §3): parse, canonical names, the id
 * list, clear messages for bad ids, and which kinds this build implements.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhsched/hsched.h"
#include "hsched_testutil.h"
#include "testutil.h"

static const hs_platform_t plat = { .nodes = 4, .node_bw = 1, .bw = 2 };

static void expand(const char *id, char *buf, size_t len)
{
    const char *p;

    if ((p = strstr(id, "<gamma>")))
        snprintf(buf, len, "%.*s0.25%s", (int)(p - id), id, p + 7);
    else if ((p = strstr(id, "<base>")))
        snprintf(buf, len, "%.*s2%s", (int)(p - id), id, p + 6);
    else
        snprintf(buf, len, "%s", id);
}

/* Every listed id parses, and its canonical name parses back to the same policy. */
START_TEST(test_ids_roundtrip)
{
    const char *const *ids = hs_policy_ids();
    int n = 0;

    for (; *ids; ids++, n++) {
        char id[64], name[64];
        hs_policy_t p, q;
        hu_error_t err;

        expand(*ids, id, sizeof(id));
        ck_assert_msg(hs_policy_parse(id, &p, &err) == 0, "%s: %s", id, err.text);
        hs_policy_name(&p, name, sizeof(name));
        ck_assert_str_eq(name, id);
        ck_assert_int_eq(hs_policy_parse(name, &q, &err), 0);
        ck_assert_int_eq(p.kind, q.kind);
        ck_assert_int_eq(p.priority, q.priority);
        ck_assert(p.gamma == q.gamma);
        ck_assert(p.set_base == q.set_base);
    }
    ck_assert_int_eq(n, 24);
}
END_TEST

START_TEST(test_parse_values)
{
    hs_policy_t p;
    hu_error_t err;
    char buf[64];

    ck_assert_int_eq(hs_policy_parse("fairshare", &p, &err), 0);
    ck_assert_int_eq(p.kind, HS_POL_FAIRSHARE);
    ck_assert(!p.priority);
    ck_assert_int_eq(hs_policy_parse("minmax:0.27", &p, &err), 0);
    ck_assert_int_eq(p.kind, HS_POL_MINMAX);
    ck_assert_double_eq_tol(p.gamma, 0.27, 1e-15);
    ck_assert(!p.priority);
    ck_assert_str_eq(hs_policy_name(&p, buf, sizeof(buf)), "minmax:0.27");
    ck_assert_int_eq(hs_policy_parse("minmax:0", &p, &err), 0);
    ck_assert_int_eq(hs_policy_parse("minmax:1", &p, &err), 0);
    ck_assert_double_eq(p.gamma, 1);
    ck_assert_int_eq(hs_policy_parse("minmax:0.5-priority", &p, &err), 0);
    ck_assert(p.priority);
    ck_assert_double_eq(p.gamma, 0.5);
    /* the other spelling is accepted; the canonical name is <id>-priority */
    ck_assert_int_eq(hs_policy_parse("minmax-priority:0.5", &p, &err), 0);
    ck_assert(p.priority);
    ck_assert_str_eq(hs_policy_name(&p, buf, sizeof(buf)), "minmax:0.5-priority");
    ck_assert_int_eq(hs_policy_parse("mindilation-priority", &p, &err), 0);
    ck_assert_int_eq(p.kind, HS_POL_MINDILATION);
    ck_assert(p.priority);
    ck_assert_int_eq(hs_policy_parse("set10", &p, &err), 0);
    ck_assert_int_eq(p.kind, HS_POL_SET);
    ck_assert_double_eq(p.set_base, 10);
    ck_assert_int_eq(hs_policy_parse("set:2", &p, &err), 0);
    ck_assert_int_eq(p.kind, HS_POL_SET);
    ck_assert_double_eq(p.set_base, 2);
    ck_assert_str_eq(hs_policy_name(&p, buf, sizeof(buf)), "set:2");
    ck_assert_int_eq(hs_policy_parse("set:10", &p, &err), 0);
    ck_assert_str_eq(hs_policy_name(&p, buf, sizeof(buf)), "set10");
    ck_assert_int_eq(hs_policy_parse("set:1.5", &p, &err), 0);
    ck_assert_double_eq(p.set_base, 1.5);
    /* harmonia-priority is a policy of its own, not a -priority variant */
    ck_assert_int_eq(hs_policy_parse("harmonia-priority", &p, &err), 0);
    ck_assert_int_eq(p.kind, HS_POL_HARMONIA_PRIORITY);
    ck_assert(!p.priority);
    ck_assert_int_eq(hs_policy_parse("static", &p, &err), 0);
    ck_assert_int_eq(p.kind, HS_POL_STATIC);
}
END_TEST

static void bad(const char *id, const char *needle)
{
    hs_policy_t p = { .kind = HS_POL_FCFS };
    hu_error_t err = { "" };

    errno = 0;
    ck_assert_msg(hs_policy_parse(id, &p, &err) == -1, "'%s' accepted", id ? id : "");
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_msg(strstr(err.text, needle) != NULL, "'%s': message '%s' lacks '%s'",
                  id ? id : "(null)", err.text, needle);
    ck_assert_int_eq(p.kind, HS_POL_FCFS); /* no side effect on failure */
}

START_TEST(test_parse_errors)
{
    bad(NULL, "empty");
    bad("", "empty");
    bad("foo", "unknown policy 'foo'");
    bad("Fairshare", "unknown policy");
    bad("fairshare ", "unknown policy");
    bad("minmax", "needs a threshold");
    bad("minmax-priority", "needs a threshold");
    bad("minmax:", "not a number");
    bad("minmax:abc", "not a number");
    bad("minmax:0.5x", "not a number");
    bad("minmax:1.5", "out of range");
    bad("minmax:-0.1", "out of range");
    bad("minmax:1.01-priority", "out of range");
    bad("minmax:nan", "not a number");
    bad("minmax: 0.5", "not a number");
    bad("set:1", "> 1");
    bad("set:0.5", "> 1");
    bad("set:abc", "> 1");
    bad("set:", "> 1");
    bad("fcfs-priority", "no -priority variant");
    bad("fairshare-priority", "no -priority variant");
    bad("set10-priority", "no -priority variant");
    bad("persched-priority", "no -priority variant");
    bad("-priority", "unknown policy");
}
END_TEST

START_TEST(test_name_unknown)
{
    hs_policy_t p = { .kind = (hs_policy_kind_t)99 };
    char buf[32];

    ck_assert_str_eq(hs_policy_name(&p, buf, sizeof(buf)), "unknown(99)");
    ck_assert_ptr_null(hs_policy_name(&p, NULL, 0));
}
END_TEST

/* The periodic and Harmonia policies are in this build (hs_pol_periodic.c,
 * hs_pol_harmonia.c): they create, on platforms with and without buffers. */
START_TEST(test_not_available)
{
    static const char *ids[] = { "periodic-throu",      "periodic-cong",     "persched",
                                 "harmonia-maxbw",      "harmonia-minstall", "harmonia-fairness",
                                 "harmonia-buffer-eff", "harmonia-priority", NULL };
    hs_buffer_t buf = { .capacity = 100, .bandwidth = 1 };
    hs_platform_t bplat = plat;
    int i;

    bplat.nbuffers = 1;
    bplat.buffers = &buf;
    for (i = 0; ids[i]; i++) {
        hs_sched_destroy(ht_sched(&plat, ids[i]));
        hs_sched_destroy(ht_sched(&bplat, ids[i])); /* with buffers */
    }
}
END_TEST

START_TEST(test_all_online_create)
{
    static const char *ids[] = { "fairshare",
                                 "fcfs",
                                 "static",
                                 "roundrobin",
                                 "roundrobin-priority",
                                 "mindilation",
                                 "mindilation-priority",
                                 "maxsyseff",
                                 "maxsyseff-priority",
                                 "minmax:0.3",
                                 "minmax:0.3-priority",
                                 "set10",
                                 "set:2",
                                 "set-fairshare",
                                 "priority-sharing",
                                 NULL };
    int i;

    for (i = 0; ids[i]; i++) {
        hs_sched_t *s = ht_sched(&plat, ids[i]);

        ck_assert_int_eq(hs_sched_decide(s, 0, NULL, 0), 0);
        ck_assert(isinf(hs_sched_next_event(s)));
        hs_sched_destroy(s);
    }
}
END_TEST

/* A hand-built -priority on a policy without that variant is refused. */
START_TEST(test_bad_struct)
{
    hs_policy_t p = { .kind = HS_POL_FCFS, .priority = true };
    hu_error_t err;

    ck_assert_ptr_null(hs_sched_create(&plat, &p, &err));
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_ptr_nonnull(strstr(err.text, "no -priority variant"));
    p.kind = HS_POL_SET;
    p.priority = false;
    p.set_base = 0.5;
    ck_assert_ptr_null(hs_sched_create(&plat, &p, &err));
    ck_assert_int_eq(errno, EINVAL);
    p.kind = (hs_policy_kind_t)-3;
    ck_assert_ptr_null(hs_sched_create(&plat, &p, &err));
    ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* hs_iosets_class() is public (hsched.h): round(log_base w_iter), clamped, and a
 * w_iter that is not > 0 counts as the least positive one. */
START_TEST(test_iosets_class)
{
    ck_assert_int_eq(hs_iosets_class(1000, 10), 3);
    ck_assert_int_eq(hs_iosets_class(0.01, 10), -2);
    ck_assert_int_eq(hs_iosets_class(40, 10), 2); /* log10 40 = 1.6 */
    ck_assert_int_eq(hs_iosets_class(5, 2), 2);   /* log2 5 = 2.32 */
    ck_assert_int_eq(hs_iosets_class(1, 10), 0);
    ck_assert_int_eq(hs_iosets_class(0, 10), hs_iosets_class(-1, 10));
    ck_assert_int_lt(hs_iosets_class(0, 10), -300);
    ck_assert_int_eq(hs_iosets_class(1e300, 1.0000001), 100000);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "policy", .tests = { test_ids_roundtrip, test_parse_values, test_parse_errors,
                               test_name_unknown, test_not_available, test_all_online_create,
                               test_bad_struct, test_iosets_class, NULL } },
    };

    return tu_main("hsched_policy", tcases, TU_COUNT(tcases));
}
