/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of bbmgrd's core: placement of allocations on the buffer nodes of a
 * pool (bbmgr/daemon/core_alloc.c), on a real state database.  Four nodes of 10 GiB in a
 * pool of granularity 1 GiB; their mounts do not exist (no directories are made).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "test_bbmgr_core_fixture.h"
#include "testutil.h"

#define GiB (1ULL << 30)

static const char *conf(double overprovision)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf),
             "stage:\n  mode: scheduled\n"
             "policy:\n  id: fairshare\n  overprovision: %g\n"
             "pools:\n  - name: fast\n    granularity: 1GiB\n"
             "  - name: empty\n    granularity: 1GiB\n"
             "nodes:\n  - names: bb[1-4]\n    capacity: 10GiB\n    bandwidth: 1 GB/s\n"
             "    mount: @DIR@/nomount\n    pool: fast\n",
             overprovision);
    return buf;
}

/* A core of that configuration, its lock held. */
static core_t *open_locked(fx_t *f, double overprovision)
{
    fx_init(f, conf(overprovision));
    fx_open(f);
    core_lock(f->c);
    return f->c;
}

static job_t *job(core_t *c, const char *id)
{
    bool created;
    cerr_t e = { 0 };
    ck_assert_msg(core_job_register(c, id, 1001, 1001, NULL, NULL, 1, NULL, &created, &e) == 0,
                  "%s", e.err.text);
    ck_assert(created);
    return core_job(c, id);
}

/* The bytes of node name used, as the core counts them. */
static uint64_t used(core_t *c, const char *name)
{
    int i = core_node_index(c, name);
    ck_assert_int_ge(i, 0);
    return c->nodes[i].used;
}

static bool on_node(const alloc_t *a, core_t *c, const char *name, uint64_t bytes)
{
    for (int k = 0; k < a->n; k++)
        if (!strcmp(c->nodes[a->v[k].node].name, name))
            return a->v[k].bytes == bytes;
    return false;
}

/* core_alloc_create() in pool "fast" that must succeed: whether it created one. */
static bool alloc_ok(core_t *c, job_t *j, uint64_t bytes, int nodes)
{
    cerr_t e = { 0 };
    bool created;

    ck_assert_msg(core_alloc_create(c, j, bytes, nodes, "fast", &created, &e) == 0, "%s",
                  e.err.text);
    return created;
}

/* Placement: the fewest nodes that hold it, each a multiple of the granularity, on
 * the nodes with the most free space; the same request again is no new allocation. */
/* A core error: its code, its field (cut to fit) and its reason, a hu_error_t cut
 * at CERR_MSG_MAX bytes as the API's reasons always were; errno is left alone. */
START_TEST(test_cerr)
{
    cerr_t e = { 0 };
    char longer[600];

    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    errno = EINTR;
    ck_assert_int_eq(core_cerr_set(&e, EEXIST, "name", "buffer '%s' exists", "b1"), -1);
    ck_assert_int_eq(errno, EINTR);
    ck_assert_int_eq(e.code, EEXIST);
    ck_assert_str_eq(e.field, "name");
    ck_assert_str_eq(e.err.text, "buffer 'b1' exists");
    ck_assert_int_eq(core_cerr_set(&e, EINVAL, longer, "%s", longer), -1);
    ck_assert_uint_eq(strlen(e.field), sizeof(e.field) - 1);
    ck_assert_uint_eq(strlen(e.err.text), CERR_MSG_MAX - 1);
    ck_assert_int_eq(core_cerr_set(NULL, EINVAL, NULL, "nowhere"), -1);
}
END_TEST

START_TEST(test_allocate)
{
    fx_t f;
    cerr_t e = { 0 };
    bool created;
    core_t *c = open_locked(&f, 1.0);
    job_t *a = job(c, "100");
    created = alloc_ok(c, a, 15 * GiB, 0);
    ck_assert(created);
    ck_assert_int_eq(a->alloc->n, 2); /* 15 GiB: two nodes of 10 */
    ck_assert_uint_eq(a->alloc->capacity, 15 * GiB);
    ck_assert_uint_eq(a->alloc->reserved, 16 * GiB); /* 8 GiB each, rounded up */
    ck_assert(on_node(a->alloc, c, "bb1", 8 * GiB) && on_node(a->alloc, c, "bb2", 8 * GiB));
    ck_assert_uint_eq(used(c, "bb1"), 8 * GiB);
    ck_assert_uint_eq(used(c, "bb3"), 0);
    created = alloc_ok(c, a, 15 * GiB, 0);
    ck_assert(!created); /* idempotent */
    ck_assert_int_eq(core_alloc_create(c, a, 1 * GiB, 0, "fast", &created, &e), -1);
    ck_assert_int_eq(e.code, EEXIST);

    /* the next goes to the nodes with the most space free: bb3 and bb4 */
    job_t *b = job(c, "101");
    alloc_ok(c, b, 3 * GiB, 2);
    ck_assert_int_eq(b->alloc->n, 2);
    ck_assert(on_node(b->alloc, c, "bb3", 2 * GiB) && on_node(b->alloc, c, "bb4", 2 * GiB));
    ck_assert_uint_eq(used(c, "bb3"), 2 * GiB);

    /* released: the space is free again */
    ck_assert_msg(core_alloc_release(c, a, &e) == 0, "%s", e.err.text);
    ck_assert(a->alloc == NULL);
    ck_assert_uint_eq(used(c, "bb1"), 0);
    ck_assert_uint_eq(used(c, "bb2"), 0);
    core_unlock(c);
    fx_done(&f);
}
END_TEST

/* What the pool can never hold, and pools that cannot hold anything: the error's
 * code and (when not NULL) the field it names. */
typedef struct {
    uint64_t bytes;
    int nodes;
    const char *pool, *field;
    int code;
} refusal_t;

static const refusal_t refusals[] = {
    { 41 * GiB, 0, "fast", NULL, EDOM },
    { 1 * GiB, 5, "fast", "nodes", EDOM },
    { 1 * GiB, 0, "empty", NULL, EDOM },
    { 1 * GiB, 0, "nosuch", NULL, ENOENT },
};

/* Refusals: ENOSPC while the pool is full now (and the allocation fits once space
 * is freed), EDOM for what the pool can never hold and for a pool without nodes,
 * ENOENT for an unknown pool; a refusal takes no space. */
START_TEST(test_refuse)
{
    fx_t f;
    cerr_t e = { 0 };
    bool created;
    core_t *c = open_locked(&f, 1.0);
    job_t *a = job(c, "200"), *b = job(c, "201");
    alloc_ok(c, a, 40 * GiB, 0);
    ck_assert_int_eq(a->alloc->n, 4);
    ck_assert_int_eq(core_alloc_create(c, b, 1 * GiB, 0, "fast", &created, &e), -1);
    ck_assert_int_eq(e.code, ENOSPC);
    ck_assert_str_eq(e.field, "capacity");
    ck_assert(b->alloc == NULL && !created);
    for (size_t k = 0; k < TU_COUNT(refusals); k++) {
        const refusal_t *r = &refusals[k];

        ck_assert_int_eq(core_alloc_create(c, b, r->bytes, r->nodes, r->pool, &created, &e), -1);
        ck_assert_int_eq(e.code, r->code);
        if (r->field)
            ck_assert_str_eq(e.field, r->field);
    }
    ck_assert_uint_eq(used(c, "bb1"), 10 * GiB);

    /* a drained node takes no new allocation */
    ck_assert_msg(core_alloc_release(c, a, &e) == 0, "%s", e.err.text);
    ck_assert_msg(core_node_drain(c, core_node_index(c, "bb1"), true, "test", &e) == 0, "%s",
                  e.err.text);
    ck_assert_int_eq(core_alloc_create(c, b, 31 * GiB, 0, "fast", &created, &e), -1);
    ck_assert_int_eq(e.code, ENOSPC);
    created = alloc_ok(c, b, 30 * GiB, 0);
    ck_assert(created && !on_node(b->alloc, c, "bb1", 10 * GiB));
    ck_assert_uint_eq(used(c, "bb1"), 0);
    core_unlock(c);
    fx_done(&f);
}
END_TEST

/* policy.overprovision: an allocation is spread over that many times the nodes it
 * needs (as many as are up), never fewer than it needs. */
static const struct {
    double over;
    uint64_t capacity;
    int nodes;    /* asked, 0: any */
    int n;        /* nodes it gets */
    uint64_t per; /* bytes on each */
} over_cases[] = {
    { 1.0, 5 * GiB, 0, 1, 5 * GiB },  { 2.0, 5 * GiB, 0, 2, 3 * GiB },
    { 1.5, 5 * GiB, 2, 3, 2 * GiB },  { 3.0, 5 * GiB, 2, 4, 2 * GiB }, /* 6 wanted, 4 up */
    { 2.0, 25 * GiB, 0, 4, 7 * GiB }, /* 3 needed, 6 wanted, 4 up */
};

/* A node whose agent measures other I/O on its device (core_node_set_bandwidth with
 * what it has left) is placed on last, whatever its free space; one that has too
 * little free space for its share is passed over for the next by bandwidth. */
START_TEST(test_busy_node_last)
{
    fx_t f;
    core_t *c = open_locked(&f, 1.0);
    job_t *a = job(c, "300"), *b = job(c, "301"), *d = job(c, "302");
    ck_assert_int_eq(core_node_set_bandwidth(c, core_node_index(c, "bb1"), 0.3e9), 0);
    ck_assert_int_eq(core_node_set_bandwidth(c, core_node_index(c, "bb2"), 0.96e9), 0);
    /* bb1 has 30 % left, bb2 96 % (to the nearest tenth: as good as idle) */
    alloc_ok(c, a, 15 * GiB, 0);
    ck_assert(on_node(a->alloc, c, "bb2", 8 * GiB) && on_node(a->alloc, c, "bb3", 8 * GiB));
    /* the idle nodes with room go first: bb4 (10 GiB free), then bb2 or bb3 (2 GiB) */
    alloc_ok(c, b, 4 * GiB, 2);
    ck_assert(on_node(b->alloc, c, "bb4", 2 * GiB) && on_node(b->alloc, c, "bb2", 2 * GiB));
    /* 9 GiB on one node: only bb1 (busy) still has room */
    alloc_ok(c, d, 9 * GiB, 1);
    ck_assert(on_node(d->alloc, c, "bb1", 9 * GiB));
    core_unlock(c);
    fx_done(&f);
}
END_TEST

/* A lost node's share (its agent is down before the job runs) goes in its place to
 * a node outside the allocation; with none that has room, to a surviving node of
 * the allocation; with neither, nowhere (the allocation is unchanged). */
START_TEST(test_move_share)
{
    fx_t f;
    cerr_t e = { 0 };
    core_t *c = open_locked(&f, 1.0);
    job_t *a = job(c, "400");
    int bb[5];
    for (int i = 1; i <= 4; i++) {
        char name[8];
        snprintf(name, sizeof(name), "bb%d", i);
        bb[i] = core_node_index(c, name);
    }
    alloc_ok(c, a, 4 * GiB, 2);
    ck_assert(a->alloc->v[0].node == bb[1] && a->alloc->v[1].node == bb[2]);
    ck_assert_int_eq(core_node_drain(c, bb[1], true, "agent down", &e), 0);
    ck_assert_int_eq(core_alloc_move_share(c, a, bb[1]), bb[3]); /* outside, in its place */
    ck_assert(a->alloc->n == 2 && a->alloc->v[0].node == bb[3] && a->alloc->v[1].node == bb[2]);
    ck_assert_uint_eq(used(c, "bb1"), 0);
    ck_assert_uint_eq(used(c, "bb3"), 2 * GiB);
    ck_assert_int_eq(core_node_drain(c, bb[3], true, "agent down", &e), 0);
    ck_assert_int_eq(core_node_drain(c, bb[4], true, "maintenance", &e), 0);
    ck_assert_int_eq(core_alloc_move_share(c, a, bb[3]), bb[2]); /* the survivor */
    ck_assert(a->alloc->n == 1 && a->alloc->v[0].node == bb[2]);
    ck_assert_uint_eq(a->alloc->v[0].bytes, 4 * GiB);
    ck_assert_uint_eq(used(c, "bb2"), 4 * GiB);
    ck_assert_uint_eq(used(c, "bb3"), 0);
    ck_assert_int_eq(core_node_drain(c, bb[2], true, "agent down", &e), 0);
    ck_assert_int_eq(core_alloc_move_share(c, a, bb[2]), -1); /* nowhere: unchanged */
    ck_assert(a->alloc->n == 1 && a->alloc->v[0].node == bb[2]);
    ck_assert_uint_eq(used(c, "bb2"), 4 * GiB);
    core_unlock(c);
    fx_done(&f);
}
END_TEST

START_TEST(test_overprovision)
{
    fx_t f;
    cerr_t e = { 0 };
    bool created;
    core_t *c = open_locked(&f, over_cases[_i].over);
    job_t *a = job(c, "300");
    ck_assert_msg(
        core_alloc_create(c, a, over_cases[_i].capacity, over_cases[_i].nodes, "fast", &created, &e)
            == 0,
        "%s", e.err.text);
    ck_assert_int_eq(a->alloc->n, over_cases[_i].n);
    for (int k = 0; k < a->alloc->n; k++)
        ck_assert_uint_eq(a->alloc->v[k].bytes, over_cases[_i].per);
    ck_assert_uint_eq(a->alloc->reserved, over_cases[_i].per * (uint64_t)over_cases[_i].n);
    core_unlock(c);
    fx_done(&f);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "placement", .timeout = 30,
          .tests = { test_cerr, test_allocate, test_refuse, test_busy_node_last, test_move_share,
                     NULL },
          .loops = { { test_overprovision, (int)TU_COUNT(over_cases) } } },
    };

    return tu_main("bbmgr_core_alloc", tcases, TU_COUNT(tcases));
}
