/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of bbmgrd's core: recovery from the state database
 * (bbmgr/daemon/core_recover.c).  A core makes state (jobs, allocations, a persistent
 * buffer and its user, an open phase, a queued transfer, a drained node), is
 * destroyed, and a new core recovered from the same state.db must show the same
 * model: every job, allocation, node, pool and buffer as the JSON views render it.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_bbmgr_core_fixture.h"
#include "testutil.h"

#define GiB (1ULL << 30)

static const char *const conf =
    "stage:\n  mode: scheduled\n"
    "policy:\n  id: fairshare\n"
    "pools:\n  - name: fast\n    granularity: 1GiB\n"
    "  - name: slow\n    granularity: 4GiB\n"
    "nodes:\n  - names: bb[1-4]\n    capacity: 10GiB\n    bandwidth: 1 GB/s\n"
    "    mount: @DIR@/nomount\n    pool: fast\n"
    "  - names: hd1\n    capacity: 100GiB\n    bandwidth: 200 MB/s\n"
    "    mount: @DIR@/nomount-hd\n    pool: slow\n";

/* Everything the core shows, as one JSON object. */
static json_t *view(core_t *c)
{
    json_t *o = json_object(), *jobs = json_object(), *pbufs = json_object(), *nodes = json_array(),
           *pools = json_array();
    void *v;
    for (void *it = hmap_first(c->jobs, &v); it; it = hmap_next(c->jobs, it, &v))
        json_object_set_new(jobs, ((job_t *)v)->id, core_job_json(c, v, true));
    for (void *it = hmap_first(c->pbufs, &v); it; it = hmap_next(c->pbufs, it, &v))
        json_object_set_new(pbufs, ((pbuf_t *)v)->name, core_pbuf_json(c, v));
    core_node_loads(c);
    for (int i = 0; i < c->nnodes; i++)
        json_array_append_new(nodes, core_node_json(c, i));
    for (int i = 0; i < c->npools; i++)
        json_array_append_new(pools, core_pool_json(c, i));
    json_object_set_new(o, "jobs", jobs);
    json_object_set_new(o, "pbufs", pbufs);
    json_object_set_new(o, "nodes", nodes);
    json_object_set_new(o, "pools", pools);
    json_object_set_new(o, "policy", json_string(c->policy_id));
    return o;
}

/* Where a and b first differ ("" when equal): a path of keys and indices. */
static bool differ(json_t *a, json_t *b, char *path, size_t len)
{
    size_t n = strlen(path);
    if (json_equal(a, b))
        return false;
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        json_object_foreach (a, k, v) {
            snprintf(path + n, len - n, ".%s", k);
            if (differ(v, json_object_get(b, k), path, len))
                return true;
        }
        snprintf(path + n, len - n, " (keys)");
    } else if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a); i++) {
            snprintf(path + n, len - n, "[%zu]", i);
            if (differ(json_array_get(a, i), json_array_get(b, i), path, len))
                return true;
        }
    }
    return true;
}

static job_t *job(core_t *c, const char *id, uid_t uid)
{
    bool created;
    cerr_t e = { 0 };
    json_t *hints = json_pack("{s:s s:s}", "w_iter", "2m", "io_volume", "10GiB");
    ck_assert_msg(core_job_register(c, id, uid, uid, "user", "name", 2, hints, &created, &e) == 0,
                  "%s", e.err.text);
    json_decref(hints);
    return core_job(c, id);
}

static void make_state(core_t *c)
{
    cerr_t e = { 0 };
    bool created;
    core_lock(c);
    job_t *a = job(c, "10", 1001), *b = job(c, "11", 1002);
    (void)job(c, "12", 1001);
    ck_assert_msg(core_alloc_create(c, a, 15 * GiB, 0, "fast", &created, &e) == 0, "%s",
                  e.err.text);
    ck_assert_msg(core_alloc_create(c, b, 5 * GiB, 0, "slow", &created, &e) == 0, "%s", e.err.text);
    pbuf_t *p = core_pbuf_create(c, "keep", 1001, 1001, 3 * GiB, "fast", &created, &e);
    ck_assert_msg(p != NULL, "%s", e.err.text);
    ck_assert_msg(core_pbuf_use(c, p, a, &e) == 0, "%s", e.err.text);
    ck_assert_msg(core_job_begin(c, a, 2, &e) == 0, "%s", e.err.text);
    phase_t *ph = core_phase_request(c, a, 1e9, "write", -1, &e);
    ck_assert_msg(ph != NULL, "%s", e.err.text);
    ck_assert_int_eq(ph->state, PH_GRANTED);
    ck_assert_msg(core_phase_finish(c, ph, 1e9, &e) == 0, "%s", e.err.text);
    ck_assert_msg(core_phase_request(c, a, 2e9, "read", -1, &e) != NULL, "%s", e.err.text);
    xfer_t *x = core_stage(c, b, "stage_in", "/pfs/in", "/bb/11/in", "file", 1000, false, &e);
    ck_assert_msg(x != NULL, "%s", e.err.text);
    ck_assert_msg(core_node_drain(c, core_node_index(c, "bb4"), true, "bad disk", &e) == 0, "%s",
                  e.err.text);
    ck_assert_msg(core_set_policy(c, "mindilation", &e) == 0, "%s", e.err.text);
    core_unlock(c);
}

START_TEST(test_recover_same)
{
    fx_t f;
    fx_init(&f, conf);
    fx_open(&f);
    make_state(f.c);
    core_lock(f.c);
    json_t *before = view(f.c);
    core_unlock(f.c);
    fx_close(&f);

    fx_open(&f);
    core_lock(f.c);
    json_t *after = view(f.c);
    job_t *a = core_job(f.c, "10");
    ck_assert(a && a->phase && a->phase->state == PH_GRANTED);
    ck_assert_int_eq(a->nphases, 1);
    ck_assert(f.c->policy_override);
    core_unlock(f.c);
    char path[512] = "";
    ck_assert_msg(!differ(before, after, path, sizeof(path))
                      && !differ(after, before, path, sizeof(path)),
                  "recovered differently at %s", path);
    /* not the empty model */
    ck_assert_int_eq(json_object_size(json_object_get(after, "jobs")), 3);
    ck_assert_int_eq(json_object_size(json_object_get(after, "pbufs")), 1);
    json_decref(before);
    json_decref(after);

    /* and again, from what the second core wrote */
    fx_close(&f);
    fx_open(&f);
    core_lock(f.c);
    after = view(f.c);
    core_unlock(f.c);
    ck_assert_int_eq(json_object_size(json_object_get(after, "jobs")), 3);
    json_decref(after);
    fx_done(&f);
}
END_TEST

/* What ended is not recovered: a job whose end was committed is gone, and its
 * allocation's space is free on its nodes. */
START_TEST(test_recover_ended)
{
    fx_t f;
    cerr_t e = { 0 };
    fx_init(&f, conf);
    fx_open(&f);
    make_state(f.c);
    core_lock(f.c);
    job_t *b = core_job(f.c, "11");
    ck_assert_msg(core_job_end(f.c, b, &e) == 0, "%s", e.err.text);
    core_unlock(f.c);
    fx_close(&f);

    fx_open(&f);
    core_lock(f.c);
    ck_assert(core_job(f.c, "11") == NULL);
    ck_assert(core_job(f.c, "10") != NULL);
    ck_assert_uint_eq(f.c->nodes[core_node_index(f.c, "hd1")].used, 0);
    core_unlock(f.c);
    fx_done(&f);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "recovery", .timeout = 30, .tests = { test_recover_same, test_recover_ended, NULL } },
    };

    return tu_main("bbmgr_core_recover", tcases, TU_COUNT(tcases));
}
