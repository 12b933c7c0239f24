/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of bbsim's workload loader (sim/workload.c): a valid file, every class
 * of bad input with its exact "FILE:LINE:COL: reason", and reproducible expansion.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/workload.h"
#include "testutil.h"

#define PLATFORM \
    "platform:\n  nodes: 512\n  node_bandwidth: 50 MB/s\n" \
    "  bandwidth: 3 GB/s\n"

static wl_t *load(const char *text, hu_error_t *err)
{
    return wl_load_buffer(text, strlen(text), "t.yaml", err);
}

static void expect_error(const char *text, const char *msg)
{
    hu_error_t err;
    wl_t *wl = load(text, &err);
    ck_assert_msg(wl == NULL, "accepted: %s", text);
    ck_assert_str_eq(err.text, msg);
}

START_TEST(test_valid)
{
    hu_error_t err;
    wl_t *wl = load(PLATFORM "apps:\n"
                             "  - name: a\n    nodes: 256\n    release: 5 s\n"
                             "    iterations: 3\n    w: 70 s\n    io_volume: 128.2 GB\n"
                             "  - name: b\n    nodes: 32\n    count: 4\n"
                             "    w: [1 s, 2 s]\n    io_volume: [1 GB, 2 GB]\n    io: read\n"
                             "    w_iter: 3 s\n"
                             "  - name: c\n    nodes: 1\n    iterations: 5\n"
                             "    w: {dist: normal, mean: 10 s, sd: 1 s}\n"
                             "    io_volume: {dist: uniform, min: 1 GB, max: 2 GB}\n"
                             "    release: {dist: exponential, mean: 1 m}\n",
                    &err);
    ck_assert_msg(wl != NULL, "%s", err.text);
    ck_assert_int_eq(wl->plat.nodes, 512);
    ck_assert(fabs(wl->plat.node_bw - 50e6) < 1);
    ck_assert(fabs(wl->plat.bw - 3e9) < 1);
    ck_assert_int_eq(wl->napps, 3);
    ck_assert_str_eq(wl->apps[0].name, "a");
    ck_assert(fabs(wl->apps[0].volume.one.a - 128.2e9) < 1);
    ck_assert(fabs(wl->apps[0].release.a - 5) < 1e-9);
    ck_assert_int_eq(wl->apps[1].iterations, 2);
    ck_assert_int_eq(wl->apps[1].count, 4);
    ck_assert_int_eq(wl->apps[1].io, WL_IO_READ);
    ck_assert_int_eq(wl->apps[1].w.nlist, 2);
    ck_assert_int_eq(wl->apps[2].w.one.kind, WL_DIST_NORMAL);
    ck_assert_int_eq(wl->apps[2].release.kind, WL_DIST_EXPONENTIAL);
    ck_assert(fabs(wl->apps[2].release.a - 60) < 1e-9);

    wl_jobs_t *j1 = wl_expand(wl, 42, &err);
    wl_jobs_t *j2 = wl_expand(wl, 42, &err);
    wl_jobs_t *j3 = wl_expand(wl, 43, &err);
    ck_assert(j1 && j2 && j3);
    ck_assert_int_eq(j1->njobs, 1 + 4 + 1);
    ck_assert_str_eq(j1->jobs[1].name, "b#1");
    ck_assert_str_eq(j1->jobs[4].name, "b#4");
    ck_assert(fabs(j1->jobs[1].w[1] - 2) < 1e-12);
    ck_assert(fabs(j1->jobs[1].volume[1] - 2e9) < 1);
    for (int i = 0; i < 5; i++) {
        ck_assert(j1->jobs[5].w[i] == j2->jobs[5].w[i]);
        ck_assert(j1->jobs[5].w[i] >= 0);
        ck_assert(j1->jobs[5].volume[i] >= 1e9 && j1->jobs[5].volume[i] <= 2e9);
    }
    ck_assert(j1->jobs[5].w[0] != j3->jobs[5].w[0]);
    wl_jobs_destroy(j1);
    wl_jobs_destroy(j2);
    wl_jobs_destroy(j3);
    wl_destroy(wl);
}
END_TEST

START_TEST(test_errors)
{
    expect_error(PLATFORM "apps:\n  - name: a\n    nodes: 1\n    iterations: 1\n"
                          "    w: 1 s\n    io_volume: 1 GB\n  - name: b\n    nodes: 1\n"
                          "    iterations: 1\n    w: 1 s\n    io_volume: 1 GB\n"
                          "  - name: c\n    foo: 1\n",
                 "t.yaml:17:5: unknown key 'foo' in apps[2]");
    expect_error("platform:\n  nodes: 512\n  node_bandwidth: 50 MB/s\n"
                 "  bandwidth: 0 GB/s\napps: []\n",
                 "t.yaml:4:14: bandwidth must be > 0");
    expect_error("platform:\n  nodes: 512\n  node_bandwidth: -5 MB/s\n"
                 "  bandwidth: 1 GB/s\napps: []\n",
                 "t.yaml:3:19: node_bandwidth must be > 0");
    expect_error(PLATFORM "apps:\n  - name: a\n    nodes: 1\n    iterations: 1\n"
                          "    w: 12\n    io_volume: 1 GB\n",
                 "t.yaml:9:8: missing unit in '12'");
    expect_error(PLATFORM "apps:\n  - name: x\n    nodes: 600\n    iterations: 1\n"
                          "    w: 1 s\n    io_volume: 1 GB\n",
                 "t.yaml:7:12: app 'x' needs 600 nodes but the platform has 512");
    /* together: the second app takes the sum past N */
    expect_error(PLATFORM "apps:\n  - name: x\n    nodes: 500\n    iterations: 1\n"
                          "    w: 1 s\n    io_volume: 1 GB\n"
                          "  - name: y\n    nodes: 13\n    iterations: 1\n"
                          "    w: 1 s\n    io_volume: 1 GB\n",
                 "t.yaml:12:12: apps need 513 nodes together with app 'y' (nodes x "
                 "count, summed) but the platform has 512: every job keeps its own "
                 "nodes for its whole run");
    expect_error("platform: [1, 2\n",
                 "t.yaml:2:1: YAML syntax error: did not find expected ',' or ']' "
                 "while parsing a flow sequence");
    expect_error("a: &x 1\nb: *x\n", "t.yaml:1:4: anchors and aliases are not supported");
    expect_error("", "t.yaml:1:1: empty workload: expected 'platform:' and 'apps:'");
    expect_error(PLATFORM "  nodes: 3\n", "t.yaml:5:3: duplicate key 'nodes' in platform");
    expect_error(PLATFORM "apps:\n  - name: a\n    nodes: 1\n    iterations: 3\n"
                          "    w: [1 s, 2 s]\n    io_volume: 1 GB\n",
                 "t.yaml:9:8: apps[0]: 'w' has 2 values but iterations is 3");
    expect_error(PLATFORM "apps:\n  - name: a\n    nodes: 1\n"
                          "    w: 1 s\n    io_volume: 1 GB\n",
                 "t.yaml:6:5: missing key 'iterations' in apps[0]");
    expect_error(PLATFORM "apps:\n  - name: a\n    nodes: 1\n    iterations: 1\n"
                          "    w: {dist: cauchy, mean: 1 s}\n    io_volume: 1 GB\n",
                 "t.yaml:9:15: unknown distribution 'cauchy' (normal, uniform or "
                 "exponential)");
    expect_error(PLATFORM "apps:\n  - name: a\n    nodes: 1\n    iterations: 1\n"
                          "    w: 1 s\n    io_volume: 0 GB\n",
                 "t.yaml:10:16: io_volume must be > 0");
    expect_error(PLATFORM "bogus: 1\n", "t.yaml:5:1: unknown key 'bogus' in the workload");
}
END_TEST

START_TEST(test_limits)
{
    /* deep nesting is refused, not recursed into */
    char buf[512];
    size_t n = 0;
    for (int i = 0; i < 100 && n < sizeof(buf) - 2; i++)
        buf[n++] = '[';
    buf[n] = '\0';
    hu_error_t err;
    ck_assert(load(buf, &err) == NULL);
    ck_assert_msg(strstr(err.text, "nesting deeper") != NULL, "%s", err.text);
    /* binary garbage */
    const char bin[] = "\xff\xfe\x00\x01platform";
    ck_assert(wl_load_buffer(bin, sizeof(bin) - 1, "b", &err) == NULL);
    ck_assert(strncmp(err.text, "b:", 2) == 0);
    wl_destroy(NULL);
    wl_jobs_destroy(NULL);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = { { "core",
                                    .tests = { test_valid, test_errors, test_limits, NULL } } };
    return tu_main("sim_workload", tcases, TU_COUNT(tcases));
}
