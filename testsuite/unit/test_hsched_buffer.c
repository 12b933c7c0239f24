/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_hsched_buffer.c — libhsched's burst-buffer tier (doc/buffer-tier.md): MSCA
 * rates, drain and full-buffer stalls worked out by hand, the allocator with
 * over-provisioning, static placement, buffer efficiency, node figures.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "libhsched/hsched.h"
#include "libhsched/policy.h"
#include "hsched_testutil.h"
#include "testutil.h"

#define EPS 1e-9
static void arrive(hs_sched_t *s, double now, uint64_t id, int nodes, const int *alloc, int nalloc)
{
    hs_job_t j = { .id = id, .nodes = nodes, .release = now, .alloc = alloc, .nalloc = nalloc };
    hu_error_t err;

    ck_assert_msg(hs_job_arrive(s, now, &j, &err) == 0, "arrive %ju: %s", (uintmax_t)id, err.text);
}

static void request(hs_sched_t *s, double now, uint64_t id, double vol, hs_dir_t dir)
{
    ht_request(s, now, id, vol, dir, 0);
}


static int decide(hs_sched_t *s, double now, hs_grant_t *g, size_t cap)
{
    int n = hs_sched_decide(s, now, g, cap);
    ck_assert_msg(n >= 0, "decide: %s", strerror(errno));
    return n;
}

/* Jobs 1 and 2 on one compute node each, allocated the buffer nodes a1 and a2,
 * arrive at t = 0 and ask for 'vol' bytes in direction 'dir'; the decision at
 * t = 0 must grant both (into g, room for 'cap'). */
static void two_jobs_granted(hs_sched_t *s, const int *a1, int n1, const int *a2, int n2,
                             double vol, hs_dir_t dir, hs_grant_t *g, size_t cap)
{
    arrive(s, 0, 1, 1, a1, n1);
    arrive(s, 0, 2, 1, a2, n2);
    request(s, 0, 1, vol, dir);
    request(s, 0, 2, vol, dir);
    ck_assert_int_eq(decide(s, 0, g, cap), 2);
}

/* One node with an explicit curve. */
static hs_buffer_t node(double cap, double bw, int nmsca, const double *msca)
{
    hs_buffer_t b;

    memset(&b, 0, sizeof(b));
    strcpy(b.name, "bb");
    b.capacity = cap;
    b.bandwidth = bw;
    b.nmsca = nmsca;
    if (nmsca > 0)
        memcpy(b.msca, msca, sizeof(double) * (size_t)nmsca);
    return b;
}

/* A platform of 'nodes' compute nodes of 100 B/s, with the one buffer node b in
 * front of a PFS of bandwidth bw. */
static hs_platform_t one_buffer(hs_buffer_t *b, int nodes, double bw)
{
    hs_platform_t p = { .nodes = nodes, .node_bw = 100, .bw = bw, .nbuffers = 1, .buffers = b };
    return p;
}

START_TEST(test_msca_builtin)
{
    const char *const *names = hs_device_names();
    hs_buffer_t nv, ss, hd;

    ck_assert_str_eq(names[0], "nvme");
    ck_assert_str_eq(names[1], "ssd");
    ck_assert_str_eq(names[2], "hdd");
    ck_assert_ptr_null(names[3]);
    memset(&nv, 0, sizeof(nv));
    ss = hd = nv;
    ck_assert_int_eq(hs_device_builtin("nvme", &nv), 0);
    ck_assert_int_eq(hs_device_builtin("ssd", &ss), 0);
    ck_assert_int_eq(hs_device_builtin("hdd", &hd), 0);
    ck_assert_str_eq(hd.device, "hdd");
    errno = 0;
    ck_assert_int_eq(hs_device_builtin("tape", &hd), -1);
    ck_assert_int_eq(errno, ENOENT);
    for (int c = 1; c <= 20; c++) {
        for (int d = 0; d < 2; d++) {
            hs_dir_t dir = d ? HS_DIR_READ : HS_DIR_WRITE;
            double a = hs_msca(&nv, dir, c), b = hs_msca(&ss, dir, c);
            double h = hs_msca(&hd, dir, c);
            if (c == 1) {
                ck_assert(a == 0 && b == 0 && h == 0);
                continue;
            }
            /* the qualitative ordering Harmonia reports */
            ck_assert(0 < a && a < b && b < h);
            ck_assert(a < 0.15);
        }
        if (c > 1) /* spinning disks: reads worse than writes */
            ck_assert(hs_msca(&hd, HS_DIR_READ, c) > hs_msca(&hd, HS_DIR_WRITE, c));
    }
    ck_assert(hs_msca(&hd, HS_DIR_WRITE, 2) == 1.0);
    ck_assert(hs_msca(&hd, HS_DIR_WRITE, 16) == 4.0);
    ck_assert(hs_msca(&hd, HS_DIR_WRITE, 40) == 4.0); /* held beyond 16 */
    hd.bandwidth = 8;
    ck_assert(ht_close(hs_buffer_bw(&hd, HS_DIR_WRITE, 2), 4));
    ck_assert(ht_close(hs_buffer_if(&hd, HS_DIR_WRITE, 2), 4));
    /* an empty curve is insensitive; the read curve defaults to the write one */
    {
        double m[3] = { 0, 0.5, 2 };
        hs_buffer_t b = node(1, 1, 3, m);
        ck_assert(hs_msca(&b, HS_DIR_READ, 2) == 0.5);
        ck_assert(hs_msca(&b, HS_DIR_WRITE, 7) == 2);
        b.nmsca = 0;
        ck_assert(hs_msca(&b, HS_DIR_WRITE, 7) == 0);
    }
}
END_TEST

/* 2 streams on an hdd-like node, MSCA(2) = 1: BW(2) = B_j/2, each gets B_j/4. */
START_TEST(test_msca_rates)
{
    double m[2] = { 0, 1 };
    hs_buffer_t b = node(1e6, 8, 2, m);
    hs_platform_t p = one_buffer(&b, 10, 100);
    int a0[1] = { 0 };
    hs_grant_t g[3];
    hs_sched_t *s = ht_sched(&p, "fairshare");

    arrive(s, 0, 1, 1, a0, 1);
    arrive(s, 0, 2, 1, a0, 1);
    request(s, 0, 1, 100, HS_DIR_WRITE);
    ck_assert_int_eq(decide(s, 0, g, 3), 1);
    ck_assert(ht_close(g[0].bw, 8)); /* alone: B_j */
    ck_assert_int_eq(g[0].buffer, 0);
    ck_assert_int_eq(g[0].nbuffers, 1);
    request(s, 0, 2, 100, HS_DIR_WRITE);
    ck_assert_int_eq(decide(s, 0, g, 3), 2);
    ck_assert(ht_close(g[0].bw, 2) && ht_close(g[1].bw, 2)); /* B_j / 4 */
    ck_assert(ht_close(hs_sched_next_event(s), 50));
    /* a third stream: MSCA held at 1 beyond the curve: 8 / 2 / 3 each */
    arrive(s, 0, 3, 1, a0, 1);
    request(s, 0, 3, 100, HS_DIR_WRITE);
    ck_assert_int_eq(decide(s, 0, g, 3), 3);
    for (int i = 0; i < 3; i++)
        ck_assert(ht_close(g[i].bw, 8. / 6.));
    hs_sched_destroy(s);

    /* fcfs on the same node: one stream at a time at the full B_j */
    s = ht_sched(&p, "fcfs");
    two_jobs_granted(s, a0, 1, a0, 1, 100, HS_DIR_WRITE, g, 3);
    ck_assert(ht_close(g[0].bw, 8) && g[1].bw == 0);
    ck_assert(ht_close(hs_sched_next_event(s), 12.5));
    hs_sched_destroy(s);
}
END_TEST

/*
 * Drain and stall, by hand: one node C = 100 B, B_j = 10 B/s, PFS B = 1 B/s; one
 * job writes 150 B at t = 0.  Empty node: writes at 10, drains at 1 (the PFS), so
 * it fills at t = 100/9; from then on the writer gets the drain rate, 1 B/s, for
 * the 150 - 1000/9 = 350/9 B left: done at t = 50.  Alone: 15 s; If = 50/15; the
 * stall is 35 s, of which 350/9 s with the buffer full.  The node then drains its
 * 100 B at 1 B/s: empty at t = 150.  Buffer efficiency over the job's life:
 * (100 x 100/9 / 2 + 100 x 350/9) / (100 x 50) = 8/9.
 */
START_TEST(test_drain_stall)
{
    hs_buffer_t b = node(100, 10, 0, NULL);
    hs_platform_t p = one_buffer(&b, 1, 1);
    int a0[1] = { 0 };
    hs_grant_t g[1];
    hs_job_stats_t st;
    hs_buffer_stats_t bst;
    hs_node_state_t ns;
    hs_job_t j = { .id = 1, .nodes = 1, .release = 0, .alloc = a0, .nalloc = 1, .instances = 1 };
    hu_error_t err;
    hs_sched_t *s = ht_sched(&p, "fairshare");
    double t;

    ck_assert_int_eq(hs_job_arrive(s, 0, &j, &err), 0);
    request(s, 0, 1, 150, HS_DIR_WRITE);
    ck_assert_int_eq(decide(s, 0, g, 1), 1);
    ck_assert(ht_close(g[0].bw, 10) && !g[0].buffer_full);
    ck_assert_int_eq(hs_buffer_stats(s, 0, &bst), 0);
    ck_assert(ht_close(bst.inflow, 10) && ht_close(bst.drain, 1));
    t = hs_sched_next_event(s);
    ck_assert(ht_close(t, 100. / 9.)); /* the node is full */
    ck_assert_int_eq(hs_sched_advance(s, t), 0);
    ck_assert_int_eq(hs_core_node_state(s, 0, &ns), 0);
    ck_assert(ht_close(ns.occupancy, 100) && ns.full);
    ck_assert_int_eq(decide(s, t, g, 1), 1);
    ck_assert(ht_close(g[0].bw, 1) && g[0].buffer_full); /* stall */
    t = hs_sched_next_event(s);
    ck_assert(ht_close(t, 50));
    ck_assert_int_eq(hs_sched_advance(s, t), 0);
    ck_assert_int_eq(hs_sched_completed(s, NULL, 0), 1);
    ck_assert_int_eq(hs_phase_finish(s, t, 1), 0);
    ck_assert_int_eq(hs_job_stats(s, 1, &st), 0);
    ck_assert(ht_close(st.io_time, 50));
    ck_assert(ht_close(st.io_dedicated, 15));
    ck_assert(ht_close(st.if_sum, 50. / 15.) && ht_close(st.if_max, 50. / 15.));
    ck_assert_msg(ht_close(st.buffer_full, 350. / 9.), "buffer_full %.17g", st.buffer_full);
    ck_assert(ht_close(st.buf_held / st.buf_alloc, 8. / 9.));
    ck_assert(ht_close(st.buf_alloc, 100. * 50.));
    ck_assert_int_eq(hs_job_leave(s, t, 1), 0);
    /* the node drains in the background after the job is gone */
    ck_assert_int_eq(decide(s, t, g, 1), 0);
    ck_assert_int_eq(hs_buffer_stats(s, 0, &bst), 0);
    ck_assert(ht_close(bst.occupancy, 100) && ht_close(bst.drain, 1));
    ck_assert(ht_close(bst.written, 150) && ht_close(bst.drained, 50));
    ck_assert(ht_close(bst.full_time, 350. / 9.));
    ck_assert(ht_close(bst.concurrency_mean, 1) && bst.concurrency_max == 1);
    t = hs_sched_next_event(s);
    ck_assert(ht_close(t, 150));
    ck_assert_int_eq(hs_sched_advance(s, t), 0);
    ck_assert_int_eq(decide(s, t, g, 1), 0);
    ck_assert_int_eq(hs_buffer_stats(s, 0, &bst), 0);
    ck_assert(bst.occupancy == 0 && bst.drain == 0 && ht_close(bst.drained, 150));
    ck_assert(hs_sched_next_event(s) == INFINITY);
    /* the departed job's figures stay */
    ck_assert_int_eq(hs_job_stats(s, 1, &st), 0);
    ck_assert(ht_close(st.buf_held / st.buf_alloc, 8. / 9.));
    hs_sched_destroy(s);
}
END_TEST

/* Reads come from data already in the buffer: they do not fill it, and use the
 * read curve. */
START_TEST(test_read)
{
    double m[2] = { 0, 1 }, mr[2] = { 0, 3 };
    hs_buffer_t b = node(100, 10, 2, m);
    hs_platform_t p = one_buffer(&b, 4, 1);
    int a0[1] = { 0 };
    hs_grant_t g[2];
    hs_buffer_stats_t bst;
    hs_sched_t *s;

    memcpy(b.msca_read, mr, sizeof(mr));
    b.nmsca_read = 2;
    s = ht_sched(&p, "fairshare");
    two_jobs_granted(s, a0, 1, a0, 1, 500, HS_DIR_READ, g, 2);
    ck_assert(ht_close(g[0].bw, 10. / 4. / 2.)); /* MSCA_read(2) = 3 */
    ck_assert_int_eq(hs_buffer_stats(s, 0, &bst), 0);
    ck_assert(bst.inflow == 0 && bst.drain == 0 && bst.streams == 2);
    ck_assert(ht_close(hs_sched_next_event(s), 400)); /* never full */
    hs_sched_destroy(s);
}
END_TEST

/* hs_alloc_nodes() must refuse rq (room for cap nodes): the errno it sets. */
static int alloc_refused(const hs_platform_t *p, const double *reserved,
                         const hs_alloc_request_t *rq, int cap)
{
    hs_alloc_result_t r;
    hu_error_t err;
    int nodes[8];

    ck_assert_int_le(cap, 8);
    errno = 0;
    ck_assert_int_eq(hs_alloc_nodes(p, reserved, rq, nodes, cap, &r, &err), -1);
    return errno;
}

START_TEST(test_allocator)
{
    hs_buffer_t bb[4];
    hs_platform_t p = { .nodes = 4, .node_bw = 1, .bw = 1, .nbuffers = 4, .buffers = bb };
    hs_alloc_request_t rq = { .capacity = 200, .overprovision = 1 };
    hs_alloc_result_t r;
    hu_error_t err;
    int nodes[8];

    for (int i = 0; i < 4; i++) {
        bb[i] = node(100, 1, 0, NULL);
        strcpy(bb[i].device, i < 2 ? "ssd" : "hdd");
    }
    /* exact fit: 200 B on 100 B nodes -> 2, no over-provisioning */
    ck_assert_int_eq(hs_alloc_nodes(&p, NULL, &rq, nodes, 8, &r, &err), 0);
    ck_assert(r.n == 2 && r.nbase == 2 && r.per_node == 100);
    ck_assert(nodes[0] == 0 && nodes[1] == 1);
    /* over-provisioning x2 with spare nodes */
    rq.capacity = 100;
    rq.overprovision = 2;
    ck_assert_int_eq(hs_alloc_nodes(&p, NULL, &rq, nodes, 8, &r, &err), 0);
    ck_assert(r.n == 2 && r.nbase == 1 && nodes[0] == 0 && nodes[1] == 1);
    rq.overprovision = 0; /* default factor 2.0 */
    ck_assert_int_eq(hs_alloc_nodes(&p, NULL, &rq, nodes, 8, &r, &err), 0);
    ck_assert_int_eq(r.n, 2);
    /* without spare: the others are fully reserved */
    {
        double res[4] = { 100, 100, 100, 0 };
        ck_assert_int_eq(hs_alloc_nodes(&p, res, &rq, nodes, 8, &r, &err), 0);
        ck_assert(r.n == 1 && r.nbase == 1 && nodes[0] == 3);
    }
    /* some spare: base on the most free node, then the spare ones, most free first */
    {
        double res[4] = { 50, 0, 0, 100 };
        rq.capacity = 50;
        rq.overprovision = 3;
        ck_assert_int_eq(hs_alloc_nodes(&p, res, &rq, nodes, 8, &r, &err), 0);
        ck_assert(r.n == 3 && r.nbase == 1);
        ck_assert(nodes[0] == 1 && nodes[1] == 2 && nodes[2] == 0);
        ck_assert_int_eq(r.per_node, 50);
    }
    /* node count: at least 'nodes' */
    rq.capacity = 150;
    rq.nodes = 3;
    rq.overprovision = 1;
    ck_assert_int_eq(hs_alloc_nodes(&p, NULL, &rq, nodes, 8, &r, &err), 0);
    ck_assert(r.n == 3 && ht_close(r.per_node, 50));
    rq.nodes = 0;
    /* refusal: no room now, too big for the tier, too few of a device type */
    {
        double res[4] = { 60, 60, 60, 60 };
        rq.capacity = 50;
        ck_assert_int_eq(alloc_refused(&p, res, &rq, 8), ENOSPC);
    }
    rq.capacity = 500;
    ck_assert_int_eq(alloc_refused(&p, NULL, &rq, 8), ENOSPC);
    rq.capacity = 250;
    rq.device = "hdd";
    ck_assert_int_eq(alloc_refused(&p, NULL, &rq, 8), ENOSPC);
    rq.capacity = 150;
    ck_assert_int_eq(hs_alloc_nodes(&p, NULL, &rq, nodes, 8, &r, &err), 0);
    ck_assert(r.n == 2 && nodes[0] == 2 && nodes[1] == 3);
    rq.device = NULL;
    /* bad requests */
    rq.capacity = 0;
    ck_assert_int_eq(alloc_refused(&p, NULL, &rq, 8), EINVAL);
    rq.capacity = 10;
    rq.overprovision = 0.5;
    ck_assert_int_eq(alloc_refused(&p, NULL, &rq, 8), EINVAL);
    rq.overprovision = 4;
    ck_assert_int_eq(alloc_refused(&p, NULL, &rq, 2), ERANGE);
}
END_TEST

/* static: a job's phases always go to the nodes it got at arrival (striped over
 * all of them), whatever the load; fairshare places each phase on the least
 * loaded node of the allocation. */
START_TEST(test_static_keeps_nodes)
{
    double m[2] = { 0, 1 };
    hs_buffer_t bb[4];
    hs_platform_t p = { .nodes = 8, .node_bw = 100, .bw = 100, .nbuffers = 4, .buffers = bb };
    int a01[2] = { 0, 1 }, a0[1] = { 0 };
    hs_grant_t g[3];
    hs_sched_t *s;

    for (int i = 0; i < 4; i++)
        bb[i] = node(1e9, 8, 2, m);
    s = ht_sched(&p, "static");
    arrive(s, 0, 1, 1, a0, 1);
    arrive(s, 0, 2, 1, a0, 1);
    arrive(s, 0, 3, 1, a01, 2);
    for (int ph = 0; ph < 2; ph++) {
        double t = ph * 1000;
        request(s, t, 1, 100, HS_DIR_WRITE);
        request(s, t, 2, 100, HS_DIR_WRITE);
        request(s, t, 3, 100, HS_DIR_WRITE);
        ck_assert_int_eq(decide(s, t, g, 3), 3);
        /* jobs 1 and 2 share node 0 with job 3's first stripe: 3 streams, MSCA 1 */
        ck_assert(g[0].buffer == 0 && g[0].nbuffers == 1);
        ck_assert(g[1].buffer == 0 && g[1].nbuffers == 1);
        ck_assert(g[2].buffer == 0 && g[2].nbuffers == 2);
        ck_assert(ht_close(g[0].bw, 8. / 2. / 3.));
        ck_assert(ht_close(g[1].bw, 8. / 2. / 3.));
        /* job 3 is held by its slower stripe (node 0); what it leaves there
         * is not used by the others (they get their max-min share already) */
        ck_assert(ht_close(g[2].bw, 2 * 8. / 2. / 3.));
        ck_assert_int_eq(hs_sched_advance(s, t + 500), 0);
        for (uint64_t id = 1; id <= 3; id++)
            ck_assert_int_eq(hs_phase_finish(s, t + 500, id), 0);
    }
    hs_sched_destroy(s);

    /* fairshare with an over-provisioned allocation {0, 1}: least loaded node */
    s = ht_sched(&p, "fairshare");
    two_jobs_granted(s, a01, 2, a01, 2, 100, HS_DIR_WRITE, g, 3);
    ck_assert(g[0].buffer == 0 && g[1].buffer == 1);
    ck_assert(ht_close(g[0].bw, 8) && ht_close(g[1].bw, 8)); /* no interference */
    hs_sched_destroy(s);
}
END_TEST

/* Policies see the node state through policy.h; two jobs on a PFS-sized drain. */
START_TEST(test_pfs_shared_by_drains)
{
    hs_buffer_t bb[2];
    hs_platform_t p = { .nodes = 8, .node_bw = 100, .bw = 3, .nbuffers = 2, .buffers = bb };
    int a0[1] = { 0 }, a1[1] = { 1 };
    hs_grant_t g[2];
    hs_buffer_stats_t b0, b1;
    hs_sched_t *s;

    bb[0] = node(1000, 10, 0, NULL);
    bb[1] = node(1000, 1, 0, NULL);
    s = ht_sched(&p, "fairshare");
    ck_assert_int_eq(hs_core_nbuffers(s), 2);
    two_jobs_granted(s, a0, 1, a1, 1, 100, HS_DIR_WRITE, g, 2);
    ck_assert(ht_close(g[0].bw, 10) && ht_close(g[1].bw, 1));
    /* drains: node 1 passes its 1 B/s through, node 0 gets the other 2 */
    ck_assert_int_eq(hs_buffer_stats(s, 0, &b0), 0);
    ck_assert_int_eq(hs_buffer_stats(s, 1, &b1), 0);
    ck_assert(ht_close(b1.drain, 1) && ht_close(b0.drain, 2));
    ck_assert(ht_close(hs_sched_next_event(s), 10));
    hs_sched_destroy(s);
}
END_TEST

/* An allocation naming a node twice is refused (it would be counted twice in the
 * per-node scratch of a decision, sized by the number of nodes). */
START_TEST(test_alloc_node_twice_refused)
{
    hs_buffer_t bufs[2] = { node(100, 10, 0, NULL), node(100, 10, 0, NULL) };
    hs_platform_t p = { .nodes = 4, .node_bw = 10, .bw = 100, .buffers = bufs, .nbuffers = 2 };
    hs_sched_t *s = ht_sched(&p, "static");
    int twice[3] = { 1, 0, 1 }, ok[2] = { 1, 0 };
    hs_job_t j = { .id = 1, .nodes = 1, .release = 0, .alloc = twice, .nalloc = 3 };
    hu_error_t err;

    ck_assert_int_eq(hs_job_arrive(s, 0, &j, &err), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_str_eq(err.text, "job 1: buffer index 1 listed twice");
    arrive(s, 0, 1, 1, ok, 2);
    hs_sched_destroy(s);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "buffer", .timeout = 60,
          .tests = { test_msca_builtin, test_msca_rates, test_drain_stall, test_read,
                     test_allocator, test_static_keeps_nodes, test_pfs_shared_by_drains,
                     test_alloc_node_twice_refused, NULL } },
    };

    return tu_main("hsched_buffer", tcases, TU_COUNT(tcases));
}
