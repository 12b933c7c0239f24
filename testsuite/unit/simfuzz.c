/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * simfuzz.c — random workloads for the scheduling core and the invariants of a run
 * (simfuzz.h; doc/fuzzing-sim.md says what is drawn and why).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/rng.h"
#include "simfuzz.h"

/* clang-format off */
const char *const sf_policies[] = {
    "fairshare", "fcfs", "static",
    "roundrobin", "roundrobin-priority",
    "mindilation", "mindilation-priority",
    "maxsyseff", "maxsyseff-priority",
    "minmax:0.5", "minmax:0.5-priority",
    "set10", "set:2", "set-fairshare", "priority-sharing",
    "periodic-throu", "periodic-cong", "persched",
    "harmonia-maxbw", "harmonia-minstall", "harmonia-fairness",
    "harmonia-buffer-eff", "harmonia-priority",
    "auto",
    NULL,
};
/* clang-format on */

/* ------------------------------------------------------------------ workloads */

struct out {
    char *buf;
    size_t cap, len;
    bool over;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (o->over)
        return;
    va_start(ap, fmt);
    n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= o->cap - o->len)
        o->over = true;
    else
        o->len += (size_t)n;
}

/* log-uniform in [lo, hi] */
static double logu(rng_t *r, double lo, double hi)
{
    return exp(rng_uniform(r, log(lo), log(hi)));
}

static bool one_in(rng_t *r, unsigned n)
{
    return rng_below(r, n) == 0;
}

/* A duration as bbsim reads it: seconds with nanoseconds. */
static void put_s(struct out *o, double s)
{
    put(o, "%.9f s", s);
}

/* What the tries drew (1 to 8 applications, one to thirty iterations,
 * compute from 1 ms to 100 s, volumes from 1 MB to 50 GB, released together or
 * apart, node counts that fit the platform together), and the edge cases: one
 * iteration, zero compute, tiny and huge volumes, one job alone, a job on every
 * node. */
int sf_workload(uint64_t seed, char *buf, size_t cap)
{
    struct out o = { buf, cap, 0, false };
    rng_t r;
    int N, napps, left;
    bool together, constw, zerow, allnodes;
    int mode;

    rng_seed(&r, seed);
    N = one_in(&r, 4) ? 1 + (int)rng_below(&r, 8) : 1 + (int)logu(&r, 1, 4096);
    napps = one_in(&r, 6) ? 1 : 1 + (int)rng_below(&r, 8);
    if (napps > N)
        napps = N;
    together = one_in(&r, 3);
    allnodes = one_in(&r, 3);
    put(&o, "# simfuzz workload, seed %llu\nplatform:\n  nodes: %d\n", (unsigned long long)seed, N);
    put(&o, "  node_bandwidth: %.0f B/s\n", logu(&r, 1e7, 1e10));
    put(&o, "  bandwidth: %.0f B/s\napps:\n", logu(&r, 1e8, 1e11));
    /* nodes: at least one each, at most N together (all of them when allnodes) */
    left = allnodes ? N : napps + (int)rng_below(&r, (uint64_t)(N - napps + 1));
    for (int a = 0; a < napps; a++) {
        int nodes, it;

        if (a == napps - 1)
            nodes = left;
        else {
            int spare = left - (napps - a); /* beyond one node each */
            nodes = 1 + (int)rng_below(&r, (uint64_t)spare / 2 + 1);
        }
        left -= nodes;
        it = one_in(&r, 4) ? 1 : 1 + (int)rng_below(&r, 30);
        put(&o, "  - name: a%d\n    nodes: %d\n    iterations: %d\n", a, nodes, it);
        put(&o, "    release: ");
        put_s(&o, together ? 0. : one_in(&r, 2) ? rng_uniform(&r, 0, 100) : logu(&r, 1e-3, 1e3));
        put(&o, "\n");
        /* compute: constant (a periodic job), per iteration, or none */
        zerow = one_in(&r, 8);
        constw = one_in(&r, 2);
        {
            double w0 = logu(&r, 1e-3, 100);
            put(&o, "    w: [");
            for (int i = 0; i < it; i++) {
                double w = zerow ? 0. : constw ? w0 : one_in(&r, 10) ? 0. : logu(&r, 1e-3, 100);
                put(&o, "%s", i ? ", " : "");
                put_s(&o, w);
            }
            put(&o, "]\n");
        }
        /* volumes: 1 MB .. 50 GB, sometimes tiny or huge */
        mode = (int)rng_below(&r, 16);
        {
            double v0 = logu(&r, 1e6, 5e10);
            put(&o, "    io_volume: [");
            for (int i = 0; i < it; i++) {
                double v = mode == 0   ? logu(&r, 1, 1e3)
                           : mode == 1 ? logu(&r, 1e12, 1e14)
                           : constw    ? v0
                                       : logu(&r, 1e6, 5e10);
                put(&o, "%s%.0f B", i ? ", " : "", fmax(1, round(v)));
            }
            put(&o, "]\n");
        }
        if (one_in(&r, 4))
            put(&o, "    priority: %d\n", 1 + (int)rng_below(&r, 10));
    }
    return o.over ? -1 : (int)o.len;
}

/* ------------------------------------------------------------------ checks */

static int fail(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return -1;
}

uint64_t sf_max_work;
double sf_starve_factor;

int sf_run(const char *yaml, size_t len, const char *policy, bool record, wl_t **wlp,
           wl_jobs_t **jobsp, sim_result_t *res, char *why, size_t cap)
{
    hu_error_t err = { .text = "" };
    hu_error_t herr = { .text = "" };
    hs_policy_t pol;
    sim_opts_t opts = { .record = record };
    wl_t *wl;
    wl_jobs_t *jobs;

    *wlp = NULL;
    *jobsp = NULL;
    if (!(wl = wl_load_buffer(yaml, len, "fuzz.yaml", &err)))
        return fail(why, cap, "refused: %s", err.text);
    if (!(jobs = wl_expand(wl, 1, &err))) {
        wl_destroy(wl);
        return fail(why, cap, "expand: %s", err.text);
    }
    if (hs_policy_parse(policy, &pol, &herr) < 0) {
        wl_jobs_destroy(jobs);
        wl_destroy(wl);
        return fail(why, cap, "policy: %s", herr.text);
    }
    pol.max_wait = wl->max_wait;
    if (sf_max_work)
        pol.max_work = sf_max_work;
    if (sf_starve_factor != 0)
        pol.starve_factor = sf_starve_factor;
    if (sim_run(wl, jobs, &pol, &opts, res, &err) < 0) {
        wl_jobs_destroy(jobs);
        wl_destroy(wl);
        return fail(why, cap, "run: %s", err.text);
    }
    *wlp = wl;
    *jobsp = jobs;
    return 0;
}

struct edge {
    double t, bw;
};

static int edge_cmp(const void *a, const void *b)
{
    const struct edge *x = a, *y = b;

    if (x->t != y->t)
        return (x->t > y->t) - (x->t < y->t);
    return (x->bw > y->bw) - (x->bw < y->bw); /* ends (negative) first */
}

/* Every I/O segment within its job's cap, and the sum at any instant within B. */
static int check_shares(const wl_t *wl, const wl_jobs_t *jobs, const sim_result_t *r, char *why,
                        size_t cap)
{
    double B = wl->plat.bw, tolB = 1e-6 * B;
    struct edge *e;
    size_t ne = 0, n = 0;
    double sum = 0;
    int rc = 0;

    for (int j = 0; j < r->napps; j++)
        n += (size_t)r->traces[j].n;
    if (!(e = malloc(2 * n * sizeof(*e) + 1)))
        return fail(why, cap, "out of memory");
    for (int j = 0; j < r->napps && rc == 0; j++) {
        double c = fmin(jobs->jobs[j].nodes * wl->plat.node_bw, B);
        for (int i = 0; i < r->traces[j].n; i++) {
            const sim_seg_t *s = &r->traces[j].segs[i];
            if (s->kind == SEG_COMPUTE || s->bw <= 0)
                continue;
            if (!(s->bw <= c * (1 + 1e-9)))
                rc = fail(why, cap,
                          "job %s got %.17g B/s over [%.9g, %.9g] s, more "
                          "than its cap %.17g",
                          jobs->jobs[j].name, s->bw, s->t0, s->t1, c);
            e[ne++] = (struct edge){ s->t0, s->bw };
            e[ne++] = (struct edge){ s->t1, -s->bw };
        }
    }
    qsort(e, ne, sizeof(*e), edge_cmp);
    for (size_t i = 0; i < ne && rc == 0; i++) {
        sum += e[i].bw;
        if (i + 1 < ne && e[i + 1].t == e[i].t)
            continue;
        if (sum > B + tolB)
            rc = fail(why, cap,
                      "the jobs together got %.17g B/s at t = %.9g s, more "
                      "than B = %.17g",
                      sum, e[i].t, B);
    }
    free(e);
    return rc;
}

static int check_one(const wl_t *wl, const wl_jobs_t *jobs, const sim_result_t *r, char *why,
                     size_t cap)
{
    const hs_metrics_t *m = &r->m;
    const double f[] = { m->sys_efficiency, m->upper_limit,   m->dilation,
                         m->stretch_max,    m->stretch_mean,  m->io_slowdown_mean,
                         m->utilization,    m->fairness,      m->stall_time,
                         m->makespan,       m->dilation_mean, m->io_slowdown_max,
                         m->io_wait };

    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        if (!isfinite(f[i]))
            return fail(why, cap, "metric %zu is %g", i, f[i]);
    }
    if (m->dilation < 1 - 1e-9)
        return fail(why, cap, "dilation %.17g < 1", m->dilation);
    if (m->sys_efficiency > m->upper_limit * (1 + 1e-9))
        return fail(why, cap, "SysEff %.17g above its upper limit %.17g", m->sys_efficiency,
                    m->upper_limit);
    if (m->upper_limit > 1 + 1e-9)
        return fail(why, cap, "upper limit %.17g above 1", m->upper_limit);
    for (int j = 0; j < r->napps; j++) {
        const wl_job_t *jb = &jobs->jobs[j];
        const hs_job_stats_t *st = &r->stats[j];
        double vol = 0;

        for (int i = 0; i < jb->iterations; i++)
            vol += jb->volume[i];
        if (st->phases != jb->iterations)
            return fail(why, cap, "job %s completed %d of %d phases", jb->name, st->phases,
                        jb->iterations);
        if (!isfinite(st->end))
            return fail(why, cap, "job %s has no end", jb->name);
        if (fabs(st->bytes - vol) > 1e-6 * vol)
            return fail(why, cap, "job %s moved %.17g bytes of %.17g", jb->name, st->bytes, vol);
        if (!(r->app[j].dilation >= 1 - 1e-9) || !isfinite(r->app[j].dilation))
            return fail(why, cap, "job %s has dilation %.17g", jb->name, r->app[j].dilation);
    }
    return check_shares(wl, jobs, r, why, cap);
}

int sf_check(const char *yaml, size_t len, const char *policy, char *why, size_t cap,
             double *decide_max)
{
    wl_t *wl, *wl2;
    wl_jobs_t *jobs, *jobs2;
    sim_result_t a, b;
    int rc;

    if (sf_run(yaml, len, policy, true, &wl, &jobs, &a, why, cap) < 0)
        return -1;
    if (decide_max)
        *decide_max = a.decide_wall_max;
    rc = check_one(wl, jobs, &a, why, cap);
    if (rc == 0 && sf_run(yaml, len, policy, false, &wl2, &jobs2, &b, why, cap) == 0) {
        if (memcmp(&a.m, &b.m, sizeof(a.m)) != 0)
            rc = fail(why, cap,
                      "two runs differ: SysEff %.17g vs %.17g, dilation "
                      "%.17g vs %.17g",
                      a.m.sys_efficiency, b.m.sys_efficiency, a.m.dilation, b.m.dilation);
        for (int j = 0; j < a.napps && rc == 0; j++) {
            if (a.stats[j].end != b.stats[j].end)
                rc = fail(why, cap, "two runs differ: job %s ends at %.17g vs %.17g",
                          jobs->jobs[j].name, a.stats[j].end, b.stats[j].end);
        }
        sim_result_clear(&b);
        wl_jobs_destroy(jobs2);
        wl_destroy(wl2);
    } else if (rc == 0)
        rc = -1;
    sim_result_clear(&a);
    wl_jobs_destroy(jobs);
    wl_destroy(wl);
    return rc;
}
