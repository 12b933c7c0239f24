/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_sim_decide — cost of one libhsched decision.
 *
 *   bench_sim_decide POLICY K [REPEAT]
 *       Builds a scheduler, makes K jobs arrive and ask for an I/O phase at t = 0,
 *       then times REPEAT decisions at increasing times (each advances the model a
 *       little so nothing is cached).  Prints "POLICY K microseconds-per-decision".
 *
 *   bench_sim_decide [OPTIONS] POLICY      (no option: the defaults below)
 *       bbmgrd's case (bbmgr/daemon/core_jobs.c: core_sched_build(), job_arrive(),
 *       core_phase_request()): a platform of 1,024 compute nodes (b = 1 GB/s,
 *       B = 100 GB/s) with --buffers buffer nodes (4 GB/s, 4 TiB, the nvme MSCA curve
 *       of etc/bbmgr.yaml.example), --jobs registered jobs of 1 node, --pending of
 *       them with an open phase.  Each timed step is what a phase request costs the
 *       daemon: one pending phase finishes, another job asks for a phase (a quarter
 *       of them reads), one decision.  Only the decisions are timed.
 *         --buffers N   buffer nodes (default 8; 0: the plain model)
 *         --jobs J      registered jobs (default 1000)
 *         --pending P   open phases (default 500)
 *         --alloc       every job has a 1-node allocation (default: none, which
 *                       libhsched reads as "all the nodes")
 *         --repeat R    decisions timed (default 2000)
 *         --dt S        model time between two steps, s (default 1e-4; a larger
 *                       one lets phases complete in the model and nodes fill up)
 *         --capacity C  bytes per buffer node (default 4 TiB; a small one makes
 *                       nodes fill up: writers stall)
 *         --pfs B       PFS bandwidth, bytes/s (default 100e9)
 *         --stripe M    buffer nodes a phase is striped over (default 0: 1)
 *         --checksum    also print a hash of every grant's bits (to compare two
 *                       builds of libhsched: the output must not change)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libhsched/hsched.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* FNV-1a over the bytes of a value. */
static void hash_bytes(uint64_t *h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        *h ^= c[i];
        *h *= 0x100000001b3ULL;
    }
}

static void hash_grants(uint64_t *h, const hs_grant_t *g, int n)
{
    for (int i = 0; i < n; i++) {
        hash_bytes(h, &g[i].id, sizeof(g[i].id));
        hash_bytes(h, &g[i].bw, sizeof(g[i].bw));
        hash_bytes(h, &g[i].share, sizeof(g[i].share));
        hash_bytes(h, &g[i].buffer, sizeof(g[i].buffer));
        hash_bytes(h, &g[i].start, sizeof(g[i].start));
        hash_bytes(h, &g[i].remaining, sizeof(g[i].remaining));
        hash_bytes(h, &g[i].weight, sizeof(g[i].weight));
        hash_bytes(h, &g[i].buffer_full, sizeof(g[i].buffer_full));
        hash_bytes(h, &g[i].nbuffers, sizeof(g[i].nbuffers));
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rng(void) /* xorshift64: the same sequence on every build */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int legacy(const char *policy, int k, int rep)
{
    hs_policy_t pol;
    hu_error_t err;
    hs_platform_t plat = { .nodes = 0, .node_bw = 1e9, .bw = 100e9 };
    hs_sched_t *s;
    hs_grant_t *g;
    double t0, dt;

    if (k < 1 || hs_policy_parse(policy, &pol, &err) < 0) {
        fprintf(stderr, "bench_sim_decide: bad policy or K\n");
        return 2;
    }
    if (rep <= 0)
        rep = k >= 10000 ? 20 : k >= 1000 ? 200 : 2000;
    plat.nodes = 64 * k;
    if (!(s = hs_sched_create(&plat, &pol, &err)) || !(g = calloc(k, sizeof(*g)))) {
        fprintf(stderr, "bench_sim_decide: %s\n", err.text);
        return 1;
    }
    for (int i = 0; i < k; i++) {
        double w = i % 3 == 0 ? 10 : i % 3 == 1 ? 100 : 1000;
        hs_job_t j = {
            .id = (uint64_t)i, .nodes = 64, .release = 0, .w = w, .volume = 1e12, .instances = 10
        };
        if (hs_job_arrive(s, 0, &j, &err) < 0
            || hs_phase_request(s, 0, (uint64_t)i, 1e12 * (1 + i % 7), HS_DIR_WRITE, w, &err) < 0) {
            fprintf(stderr, "bench_sim_decide: %s\n", err.text);
            return 1;
        }
    }
    t0 = now();
    for (int r = 0; r < rep; r++) {
        double t = 1e-3 * (r + 1);
        if (hs_sched_advance(s, t) < 0 || hs_sched_decide(s, t, g, (size_t)k) < 0) {
            perror("hs_sched_decide");
            return 1;
        }
    }
    dt = now() - t0;
    printf("%-14s K=%-6d %10.2f us/decision\n", policy, k, 1e6 * dt / rep);
    free(g);
    hs_sched_destroy(s);
    return 0;
}

struct daemon_opts {
    int buffers, jobs, pending, rep, stripe;
    bool alloc, checksum;
    double dt, capacity, pfs;
};

static int daemon_like(const char *policy, const struct daemon_opts *o)
{
    static const double nvme[] = { 0, 0.02, 0.05, 0.09, 0.14 };
    hs_policy_t pol;
    hu_error_t err = { "" };
    hs_buffer_t *bufs = calloc(o->buffers > 0 ? o->buffers : 1, sizeof(*bufs));
    hs_platform_t plat = {
        .nodes = 1024, .node_bw = 1e9, .bw = o->pfs, .nbuffers = o->buffers, .buffers = bufs
    };
    uint64_t *pend = calloc(o->jobs, sizeof(*pend)); /* open phases (job ids) */
    uint64_t *idle = calloc(o->jobs, sizeof(*idle)); /* jobs computing */
    int npend = 0, nidle = 0;
    hs_grant_t *g = calloc(o->jobs, sizeof(*g));
    uint64_t h = 0xcbf29ce484222325ULL;
    double t = 0, spent = 0;
    double *dts = calloc(o->rep > 0 ? o->rep : 1, sizeof(*dts));
    hs_sched_t *s;

    if (hs_policy_parse(policy, &pol, &err) < 0 || o->jobs < 1 || o->pending < 1
        || o->pending > o->jobs || o->buffers < 0) {
        fprintf(stderr, "bench_sim_decide: bad policy or sizes %s\n", err.text);
        return 2;
    }
    if (!bufs || !pend || !idle || !g || !dts || o->rep < 1)
        return 1;
    for (int i = 0; i < o->buffers; i++) {
        snprintf(bufs[i].name, sizeof(bufs[i].name), "bb%02d", i + 1);
        bufs[i].capacity = o->capacity;
        bufs[i].bandwidth = 4e9;
        memcpy(bufs[i].msca, nvme, sizeof(nvme));
        bufs[i].nmsca = (int)(sizeof(nvme) / sizeof(nvme[0]));
    }
    if (!(s = hs_sched_create(&plat, &pol, &err))) {
        fprintf(stderr, "bench_sim_decide: %s\n", err.text);
        return 1;
    }
    /* bbmgrd's hs ids start at 1 and grow */
    for (int i = 0; i < o->jobs; i++) {
        int node = o->buffers > 0 ? i % o->buffers : 0;
        int two[2] = { node, o->buffers > 0 ? (i + 3) % o->buffers : 0 };
        hs_job_t j = { .id = (uint64_t)i + 1,
                       .nodes = 1 + i % 3 * (o->stripe > 1),
                       .release = 0,
                       .stripe = o->stripe };
        if (o->alloc && o->buffers > 0) {
            /* with --stripe, a 2-node allocation (when there are 2 nodes) */
            j.nalloc = o->stripe > 1 && o->buffers > 1 ? 2 : 1;
            j.alloc = o->stripe > 1 ? two : &node;
        }
        if (hs_job_arrive(s, 0, &j, &err) < 0) {
            fprintf(stderr, "bench_sim_decide: %s\n", err.text);
            return 1;
        }
        idle[nidle++] = j.id;
    }

    /* one step: job 'id' asks for a phase, the daemon decides */
    for (int r = -o->pending; r < o->rep; r++) {
        int x, n;
        uint64_t id;
        double t0;
        t += o->dt;
        if (r >= 0) { /* steady state: a phase ends first */
            x = (int)(rng() % (uint64_t)npend);
            id = pend[x];
            pend[x] = pend[--npend];
            if (hs_phase_finish(s, t, id) < 0) {
                perror("hs_phase_finish");
                return 1;
            }
            idle[nidle++] = id;
        }
        x = (int)(rng() % (uint64_t)nidle);
        id = idle[x];
        idle[x] = idle[--nidle];
        pend[npend++] = id;
        if (hs_phase_request(s, t, id, 1e9 * (double)(1 + rng() % 64),
                             rng() % 4 == 0 ? HS_DIR_READ : HS_DIR_WRITE, (double)(rng() % 1000),
                             &err)
            < 0) {
            fprintf(stderr, "bench_sim_decide: %s\n", err.text);
            return 1;
        }
        t0 = now();
        n = hs_sched_decide(s, t, g, (size_t)o->jobs);
        if (r >= 0) {
            dts[r] = now() - t0;
            spent += dts[r];
        }
        if (n < 0) {
            perror("hs_sched_decide");
            return 1;
        }
        if (o->checksum)
            hash_grants(&h, g, n);
    }
    /* the median too: the mean counts the decisions the VM preempted */
    qsort(dts, o->rep, sizeof(*dts), cmp_double);
    printf("%-14s buffers=%d jobs=%d pending=%d%s median %.2f mean %10.2f us/decision", policy,
           o->buffers, o->jobs, o->pending, o->alloc ? " alloc" : "", 1e6 * dts[o->rep / 2],
           1e6 * spent / o->rep);
    if (o->checksum)
        printf(" checksum=%016llx", (unsigned long long)h);
    printf("\n");
    hs_sched_destroy(s);
    free(bufs);
    free(pend);
    free(idle);
    free(g);
    free(dts);
    return 0;
}

int main(int argc, char **argv)
{
    struct daemon_opts o = { .buffers = 8,
                             .jobs = 1000,
                             .pending = 500,
                             .rep = 2000,
                             .dt = 1e-4,
                             .capacity = 4.0 * 1024 * 1024 * 1024 * 1024,
                             .pfs = 100e9 };
    bool daemon = false;
    int i;

    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        daemon = true;
        if (!strcmp(a, "--alloc"))
            o.alloc = true;
        else if (!strcmp(a, "--checksum"))
            o.checksum = true;
        else if (v && !strcmp(a, "--buffers"))
            o.buffers = atoi(argv[++i]);
        else if (v && !strcmp(a, "--jobs"))
            o.jobs = atoi(argv[++i]);
        else if (v && !strcmp(a, "--pending"))
            o.pending = atoi(argv[++i]);
        else if (v && !strcmp(a, "--repeat"))
            o.rep = atoi(argv[++i]);
        else if (v && !strcmp(a, "--dt"))
            o.dt = atof(argv[++i]);
        else if (v && !strcmp(a, "--capacity"))
            o.capacity = atof(argv[++i]);
        else if (v && !strcmp(a, "--pfs"))
            o.pfs = atof(argv[++i]);
        else if (v && !strcmp(a, "--stripe"))
            o.stripe = atoi(argv[++i]);
        else {
            fprintf(stderr, "bench_sim_decide: unknown option %s\n", a);
            return 2;
        }
    }
    if (i + 1 == argc) /* POLICY alone: bbmgrd's case, default sizes */
        return daemon_like(argv[i], &o);
    if (!daemon && i + 2 <= argc && i + 3 >= argc)
        return legacy(argv[i], atoi(argv[i + 1]), i + 2 < argc ? atoi(argv[i + 2]) : 0);
    fprintf(stderr, "Usage: bench_sim_decide POLICY K [REPEAT]\n"
                    "       bench_sim_decide [--buffers N] [--jobs J] [--pending P] [--alloc]\n"
                    "                        [--repeat R] [--dt S] [--capacity C]\n"
                    "                        [--pfs B] [--stripe M] [--checksum] POLICY\n");
    return 2;
}
