/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The workload fuzzer of the scheduling core (doc/fuzzing-sim.md, "The scheduling
 * core"): random workloads (simfuzz.c) under every policy, each run checked for its
 * invariants.
 *
 *   make -C testsuite/unit check TESTS=test_sim_fuzz     fixed seeds 1..SF_COUNT,
 *                                                        auto's guard on guard_seeds
 *   SIMFUZZ_SEED=N SIMFUZZ_COUNT=K                       seeds N..N+K-1
 *   SIMFUZZ_SECONDS=S                                    random seeds for S seconds
 *                                                        ('make fuzz-long')
 *   SIMFUZZ_POLICY=a,b                                   only these policies
 *   SIMFUZZ_VERBOSE=1                                    time of each run
 *   SIMFUZZ_DUMP=N                                       print workload N and stop
 *   SIMFUZZ_COMPARE=K [SIMFUZZ_SEED=N]                   no checks: seeds N..N+K-1
 *                                                        (N: from the clock) under
 *                                                        every policy, each one's
 *                                                        SysEff and Dilation over
 *                                                        fairshare's (min, percentiles,
 *                                                        worst seed) and its longest
 *                                                        decision (bench/bench_sim_fuzz.sh)
 *
 * A finding prints its seed and policy; 'SIMFUZZ_DUMP=N ./test_sim_fuzz > w.yaml'
 * then 'bbsim run w.yaml --policy P' reproduces it.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../sim/rng.h"
#include "simfuzz.h"
#include "testutil.h"

#define SF_COUNT 10 /* workloads of the fixed-seed run */
#define SF_BUF (1 << 16)

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    char *end;
    unsigned long long x;

    if (!v || !*v)
        return dflt;
    errno = 0;
    x = strtoull(v, &end, 0);
    if (errno || *end)
        return dflt;
    return x;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Is 'id' one of the comma-separated ids of 'list'? */
static bool listed(const char *list, const char *id)
{
    size_t n = strlen(id);

    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (!strncmp(p, id, n) && (p[n] == ',' || p[n] == '\0'))
            return true;
    }
    return false;
}

/* Workload 'seed' under every policy; the failures are listed, then fail the test. */
static int fuzz_seed(uint64_t seed)
{
    static char yaml[SF_BUF];
    char why[1024];
    int len = sf_workload(seed, yaml, sizeof(yaml)), bad = 0;

    ck_assert_int_gt(len, 0);
    const char *only = getenv("SIMFUZZ_POLICY");

    for (const char *const *p = sf_policies; *p; p++) {
        double dmax = 0, t0;
        if (only && *only && !listed(only, *p))
            continue;
        t0 = now_s();
        int rc = sf_check(yaml, (size_t)len, *p, why, sizeof(why), &dmax);
        if (getenv("SIMFUZZ_VERBOSE"))
            fprintf(stderr,
                    "simfuzz: seed %llu %-22s %8.3f s, longest decision "
                    "%.6f s\n",
                    (unsigned long long)seed, *p, now_s() - t0, dmax);
        if (rc < 0) {
            fprintf(stderr, "simfuzz: seed %llu policy %s: %s\n", (unsigned long long)seed, *p,
                    why);
            bad++;
        }
    }
    return bad;
}

/* The fixed-seed gate: seeds SIMFUZZ_SEED (1) .. + SIMFUZZ_COUNT (SF_COUNT). */
START_TEST(test_fixed)
{
    uint64_t s0 = env_u64("SIMFUZZ_SEED", 1), n = env_u64("SIMFUZZ_COUNT", SF_COUNT);
    int bad = 0;

    if (getenv("SIMFUZZ_SECONDS"))
        return;
    for (uint64_t s = s0; s < s0 + n; s++)
        bad += fuzz_seed(s);
    ck_assert_msg(bad == 0, "%d run(s) broke an invariant (seeds above)", bad);
}
END_TEST

/* The long run: random seeds for SIMFUZZ_SECONDS (a bound on the run, not a figure
 * checked). */
START_TEST(test_long)
{
    uint64_t secs = env_u64("SIMFUZZ_SECONDS", 0), x, runs = 0;
    time_t t0 = time(NULL);
    int bad = 0;

    if (!secs)
        return;
    x = (uint64_t)t0 ^ ((uint64_t)getpid() << 32);
    while ((uint64_t)(time(NULL) - t0) < secs) {
        uint64_t seed = rng_splitmix64(&x) >> 16;
        bad += fuzz_seed(seed);
        runs++;
    }
    size_t np = 0;
    while (sf_policies[np])
        np++;
    fprintf(stderr, "simfuzz: %llu workloads x %zu policies in %llu s, %d finding(s)\n",
            (unsigned long long)runs, np, (unsigned long long)secs, bad);
    ck_assert_msg(bad == 0, "%d run(s) broke an invariant (seeds above)", bad);
}
END_TEST

/* Each finding of the fuzzer, fixed: the workload and the policy that showed it. */
static const struct finding {
    const char *what, *policy, *yaml;
} findings[] = {
    /* A pattern whose short job has ~16,000 instances per period changes the rates
     * every few seconds during the long job's 4-day phase: bbsim's engine counted
     * those steps as "no progress" and gave up after 10,000 of them (before the
     * decision budget, the pattern took minutes to compute and hid it). */
    { "dense pattern during a long phase", "periodic-throu",
      "platform:\n  nodes: 2\n  node_bandwidth: 128785064 B/s\n"
      "  bandwidth: 6482762568 B/s\napps:\n"
      "  - name: a0\n    nodes: 1\n    iterations: 5\n    release: 6.552885924 s\n"
      "    w: 0.221902241 s\n    io_volume: 47089372430180 B\n"
      "  - name: a1\n    nodes: 1\n    iterations: 2\n    release: 15.061642402 s\n"
      "    w: 21.889030970 s\n    io_volume: 15 B\n" },
};

START_TEST(test_finding)
{
    const struct finding *f = &findings[_i];
    char why[1024];

    ck_assert_msg(sf_check(f->yaml, strlen(f->yaml), f->policy, why, sizeof(why), NULL) == 0,
                  "%s (%s): %s", f->what, f->policy, why);
}
END_TEST

/* Seeds of the fuzzer whose workload showed a finding, once fixed; 'nostarve':
 * run without the starvation bound, which hid it; 'max_work': the decision budget
 * (0: the default). */
static const struct seed_finding {
    uint64_t seed;
    const char *policy;
    bool nostarve;
    uint64_t max_work;
} seed_findings[] = {
    /* A job moving a few bytes per phase (a4 of seed 20261276: 2 to 772 B, 0.02 s
     * of compute) got I/O pieces shorter than the replay's snap onto the pattern's
     * instants (1e-9 T, T = 226,372 s): every decision landed past its pieces, so
     * it was never granted, and bbsim stepped through the pattern's instants (its
     * instances, 0.02 s apart) until its step bound, at t = 2.1 to 2.7 million s.
     * How many instances it gets depends on the budget: at 5,000,000 work units
     * each of these runs hit the step bound before the fix (at the default, since
     * the budget counts every loop, none). */
    { 20261260, "periodic-throu", true, 5000000 }, { 20261260, "periodic-cong", true, 20000000 },
    { 20261276, "periodic-throu", true, 5000000 }, { 20261276, "periodic-cong", true, 5000000 },
    { 20261276, "persched", true, 5000000 },       { 20261276, "persched", true, 2000000 },
};

START_TEST(test_finding_seed)
{
    const struct seed_finding *f = &seed_findings[_i];
    static char yaml[SF_BUF];
    int len = sf_workload(f->seed, yaml, sizeof(yaml));
    char why[1024];
    int rc;

    ck_assert_int_gt(len, 0);
    sf_starve_factor = f->nostarve ? -1 : 0;
    sf_max_work = f->max_work;
    rc = sf_check(yaml, (size_t)len, f->policy, why, sizeof(why), NULL);
    sf_starve_factor = 0;
    sf_max_work = 0;
    ck_assert_msg(rc == 0, "seed %llu (%s): %s", (unsigned long long)f->seed, f->policy, why);
}
END_TEST

/* ------------------------------------------------------------------ decision budget */

/* The decision budget bounds every loop of a periodic decision (doc/performance.md,
 * "Decision budget"): on the workload of seed 20261184, whose mix cost
 * periodic-throu 16 s in one decision with the default budget (a first fit walking
 * the whole profile from every breakpoint, unbudgeted), a small budget is never
 * passed by any pattern (the counter may not exceed it: SF_BUDGET_SLACK = 0), it
 * is hit, and the run still passes every check of sf_check() (each job completes
 * all its phases within the bandwidths). */
#define SF_BUDGET 20000
#define SF_BUDGET_SLACK 0
static const char *const budget_policies[] = { "periodic-throu", "periodic-cong", "persched" };

START_TEST(test_budget_seed)
{
    const char *policy = budget_policies[_i];
    static char yaml[SF_BUF];
    int len = sf_workload(20261184, yaml, sizeof(yaml)), rc;
    char why[1024];
    wl_t *wl;
    wl_jobs_t *jobs;
    sim_result_t r;

    ck_assert_int_gt(len, 0);
    sf_max_work = SF_BUDGET;
    rc = sf_run(yaml, (size_t)len, policy, false, &wl, &jobs, &r, why, sizeof(why));
    ck_assert_msg(rc == 0, "%s: %s", policy, why);
    ck_assert_msg(r.pstats.work_max <= SF_BUDGET + SF_BUDGET_SLACK,
                  "%s: a pattern took %.0f work units, budget %d", policy, r.pstats.work_max,
                  SF_BUDGET);
    ck_assert_msg(r.pstats.budget_hits >= 1, "%s: the budget was never hit", policy);
    sim_result_clear(&r);
    wl_jobs_destroy(jobs);
    wl_destroy(wl);
    rc = sf_check(yaml, (size_t)len, policy, why, sizeof(why), NULL);
    sf_max_work = 0;
    ck_assert_msg(rc == 0, "%s: %s", policy, why);
}
END_TEST

/* ------------------------------------------------------------------ auto's guard */

/* auto is never far worse than doing nothing (doc/policies.md, "auto", "The
 * fairshare guard"): SysEff >= AUTO_SYS x fairshare's, Dilation <= AUTO_DIL x
 * fairshare's. */
#define AUTO_SYS 0.95
#define AUTO_DIL 1.05

/* SysEff and Dilation of 'policy' on workload 'seed'; 0, or -1 with 'why'. */
static int run_metrics(uint64_t seed, const char *policy, double *sys, double *dil, double *dmax,
                       hs_auto_state_t *ast, char *why, size_t cap)
{
    static char yaml[SF_BUF];
    int len = sf_workload(seed, yaml, sizeof(yaml));
    wl_t *wl;
    wl_jobs_t *jobs;
    sim_result_t r;

    if (len < 0) {
        snprintf(why, cap, "workload %llu too long", (unsigned long long)seed);
        return -1;
    }
    if (sf_run(yaml, (size_t)len, policy, false, &wl, &jobs, &r, why, cap) < 0)
        return -1;
    *sys = r.m.sys_efficiency;
    *dil = r.m.dilation;
    if (dmax)
        *dmax = r.decide_wall_max;
    if (ast)
        *ast = r.auto_st;
    sim_result_clear(&r);
    wl_jobs_destroy(jobs);
    wl_destroy(wl);
    return 0;
}

/* The seeds of 1..200 where auto broke the inequality before the guards (20 of
 * them: 113 at SysEff 0.29x and Dilation 14,200x fairshare's, 17 at 0.06x and
 * 1,049x, 164 at 1.05x and 1.61x) or with the first guard only (116), and three
 * where it did not. */
static const uint64_t guard_seeds[] = {
    17,
    18,
    44,
    58,
    65,
    78,
    80,
    81,
    86,
    95,
    99,
    108,
    113,
    116,
    121,
    141,
    155,
    158,
    164,
    169,
    185,
    1,
    2,
    3,
    /* the look ahead requested the pending phases in the order of the jobs, not of
     * their requests: fcfs looked better than it was (Dilation 3.35x) */
    20261683,
    /* a switch let the grants in flight keep their rate, which no candidate was
     * judged on (Dilation 1.85x, 1.42x) */
    20261615,
    20262077,
    /* the look ahead chose roundrobin, projected at 0.69x fairshare's SysEff for a
     * lower Dilation (SysEff 0.74x) */
    37,
    /* a job computing 86 s against a hint of 7 s: the look ahead had it request
     * its phase at once until the request showed it (Dilation 1.15x) */
    20261571,
    /* fairshare midway ended worse than fairshare from the start, behind the
     * backlog mindilation left (Dilation 1.11x, 1.15x); 20261211 and 30001493,
     * of the same kind, break the bound again since the guard no longer keeps a
     * policy on projections (doc/fuzzing-sim.md) */
    30000194,
    30001498,
    /* seeds never looked at before where the guard kept the policy in force on
     * its projections with a job off its hints, and it ended beyond the bound
     * (40000256: mindilation projected at Dilation 1.87 against fairshare's 2.27
     * ran at 3.50 against 2.93); fairshare from then on keeps it */
    40000099,
    40000256,
    40000380,
    50000538,
    50001238,
    60001024,
    60001205,
    60001811,
    60001815,
    60001848,
    70000298,
    70000562,
    70000750,
    70001590,
    80000208,
    80000963,
    90001003,
    90001560,
    /* auto took a job's last phase to have ended at its next decision, a whole
     * compute later: the look ahead had that job request its next phase late
     * (90001550: mindilation projected at Dilation 1.009 ran at 5.42, a short job
     * behind a phase of 0.2 s the look ahead had not yet requested; Dilation
     * 3.57x), and the guard saw a compute off its hints late (60001197, 60001820:
     * SysEff 0.92x, 0.73x) */
    60001197,
    60001820,
    90001550,
    /* a phase 1.5 to 2 times off its job's hints was taken as at them: the look
     * ahead kept its policy on that job's hints (50001562: Dilation 1.95x;
     * 70000419: 1.27x; 90000980: SysEff 0.91x) */
    50001562,
    70000419,
    90000980,
    /* seeds never looked at before that broke the bound before the guard ran
     * fairshare whenever a job is off its hints, or dated a job's last phase end */
    100000223,
    100001854,
    110000032,
    110000082,
    110000893,
    120001529,
    /* fairshare from a switch midway (a job off its hints) ended worse than
     * fairshare from the start: the jobs the policy before it held back stayed
     * behind (30001462: Dilation 1.18x), and the look ahead asked
     * for a pending phase's remaining bytes only (100000707: a 2 MB phase held
     * 43 s, SysEff 0.13x); the jobs ahead of fairshare now give back to those
     * behind, and the look ahead asks for the whole phase */
    30001462,
    30001493,
    30001693,
    30001954,
    40000764,
    50000440,
    50000630,
    70001535,
    80000938,
    90001832,
    100000707,
    110001731,
    120000009,
    120000202,
    /* the same, on seeds never looked at before (200000001-, 210000001-,
     * 220000001-, 230000001-, 5,000 each: 17 broke the bound, 7 do now) */
    200002754,
    200003401,
    200004198,
    210000291,
    210004684,
    210004750,
    220004649,
    230001950,
    230003565,
    230003568,
    /* the look ahead chose candidates projected at 0.9x to 0.95x fairshare's
     * SysEff for a lower Dilation, which ran below 0.95x (90000343: 0.907x;
     * 200001046: 0.928x; 210002063: 0.889x, Dilation 1.75x; 230004910: 0.928x);
     * the choice is bounded at 0.95x now */
    90000343,
    200001046,
    210002063,
    230004910,
    /* seeds never run before the guard's lag repayment and the 0.95x bound were
     * fixed (400000001-, 410000001-, 420000001-, 430000001-, 5,000 each: 30 broke
     * the bound on main, 4 do now) */
    400000436,
    400000576,
    400001419,
    400002467,
    410001288,
    410001685,
    410002296,
    410002573,
    410003361,
    410003902,
    410003978,
    410004329,
    410004521,
    420000479,
    420000714,
    420001011,
    420002635,
    420002746,
    420002979,
    430000632,
    430001236,
    430001674,
    430002150,
    430003733,
    430003967,
    430004434,
};

START_TEST(test_auto_guard)
{
    uint64_t seed = guard_seeds[_i];
    double fs, fd, as, ad;
    char why[1024];

    ck_assert_msg(run_metrics(seed, "fairshare", &fs, &fd, NULL, NULL, why, sizeof(why)) == 0,
                  "seed %llu fairshare: %s", (unsigned long long)seed, why);
    ck_assert_msg(run_metrics(seed, "auto", &as, &ad, NULL, NULL, why, sizeof(why)) == 0,
                  "seed %llu auto: %s", (unsigned long long)seed, why);
    ck_assert_msg(as >= AUTO_SYS * fs && ad <= AUTO_DIL * fd,
                  "seed %llu: auto SysEff %.6g (%.4gx fairshare's %.6g), Dilation "
                  "%.6g (%.4gx fairshare's %.6g)",
                  (unsigned long long)seed, as, as / fs, fs, ad, ad / fd, fd);
}
END_TEST

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* q-quantile of sorted v[0..n-1] (nearest rank) */
static double quant(const double *v, size_t n, double q)
{
    size_t k = (size_t)ceil(q * (double)n);
    return v[k ? k - 1 : 0];
}

/* auto's look ahead is the run when the jobs keep to their hints
 * (hs_auto_state_t.lookahead_*, doc/policies.md, "auto"): workloads of the fuzzer
 * whose every job repeats one compute and one volume (its hints), 4 to 6 job ends
 * checked in each; every end is where the projection of the policy that ran had
 * it, within rounding.  Of the 945 such workloads among seeds 1-300 and
 * 1000-3999, auto checked 623 job ends on 335, all exact; over the 81,200 seeds of
 * doc/fuzzing-sim.md every workload with an error has a job off its hints. */
#define LA_EPS 1e-6
static const uint64_t lookahead_seeds[] = {
    106,
    1442,
    1625,
    1769,
    2311,
    /* a job without compute hints has its w_iter estimated from its requests,
     * which the look ahead's copy did not have: set10 classed its pending phase
     * in another set than the run did (errors 0.089 and 0.0075) */
    320003173,
    330003837,
};

START_TEST(test_lookahead_exact)
{
    uint64_t seed = lookahead_seeds[_i];
    double sy, dl;
    hs_auto_state_t ast;
    char why[1024];

    ck_assert_msg(run_metrics(seed, "auto", &sy, &dl, NULL, &ast, why, sizeof(why)) == 0,
                  "seed %llu auto: %s", (unsigned long long)seed, why);
    ck_assert_msg(
        ast.lookahead_checked >= 4 && ast.lookahead_err_max <= LA_EPS,
        "seed %llu: %llu job ends checked, largest error %.6g (mean %.6g)",
        (unsigned long long)seed, (unsigned long long)ast.lookahead_checked, ast.lookahead_err_max,
        ast.lookahead_err_sum / (double)(ast.lookahead_checked ? ast.lookahead_checked : 1));
}
END_TEST

/* SIMFUZZ_COMPARE=K: every policy against fairshare on K workloads; 0, or 1 when a
 * run failed or auto broke its guard. */
static int compare(uint64_t s0, uint64_t k)
{
    size_t np = 0;
    const char *only = getenv("SIMFUZZ_POLICY");
    int bad = 0, broke = 0;
    uint64_t la_runs = 0, la_jobs = 0, la_off = 0, la_seed = 0;
    double la_max = 0;
    hs_auto_state_t ast;

    while (sf_policies[np])
        np++;
    double *rs = calloc(np * k + 1, sizeof(double)), *rd = calloc(np * k + 1, sizeof(double));
    double *dmax = calloc(np + 1, sizeof(double)), *worst_s = calloc(np + 1, sizeof(double));
    double *worst_d = calloc(np + 1, sizeof(double));
    uint64_t *seed_s = calloc(np + 1, sizeof(uint64_t)), *seed_d = calloc(np + 1, sizeof(uint64_t));
    size_t *cnt = calloc(np + 1, sizeof(size_t));
    double t0 = now_s();

    if (!rs || !rd || !dmax || !worst_s || !worst_d || !seed_s || !seed_d || !cnt) {
        fprintf(stderr, "simfuzz: out of memory\n");
        return 1;
    }
    for (size_t p = 0; p < np; p++) {
        worst_s[p] = INFINITY;
        worst_d[p] = 0;
    }
    for (uint64_t s = s0; s < s0 + k; s++) {
        double fs, fd, dm;
        char why[1024];

        if (run_metrics(s, "fairshare", &fs, &fd, &dm, NULL, why, sizeof(why)) < 0) {
            fprintf(stderr, "simfuzz: seed %llu fairshare: %s\n", (unsigned long long)s, why);
            bad++;
            continue;
        }
        for (size_t p = 0; p < np; p++) {
            double ps, pd, x, y;
            if (only && *only && !listed(only, sf_policies[p])
                && strcmp(sf_policies[p], "fairshare"))
                continue;
            if (!strcmp(sf_policies[p], "fairshare"))
                ps = fs, pd = fd;
            else if (run_metrics(s, sf_policies[p], &ps, &pd, &dm, &ast, why, sizeof(why)) < 0) {
                fprintf(stderr, "simfuzz: seed %llu %s: %s\n", (unsigned long long)s,
                        sf_policies[p], why);
                bad++;
                continue;
            }
            x = fs > 0 ? ps / fs : 1;
            y = fd > 0 ? pd / fd : 1;
            rs[p * k + cnt[p]] = x;
            rd[p * k + cnt[p]] = y;
            cnt[p]++;
            if (dm > dmax[p])
                dmax[p] = dm;
            if (x < worst_s[p])
                worst_s[p] = x, seed_s[p] = s;
            if (y > worst_d[p])
                worst_d[p] = y, seed_d[p] = s;
            if (!strcmp(sf_policies[p], "auto") && ast.lookahead_checked > 0) {
                la_runs++;
                la_jobs += ast.lookahead_checked;
                la_off += ast.lookahead_err_max > LA_EPS;
                if (ast.lookahead_err_max > la_max)
                    la_max = ast.lookahead_err_max, la_seed = s;
                if (ast.lookahead_err_max > LA_EPS && getenv("SIMFUZZ_VERBOSE"))
                    fprintf(stderr,
                            "simfuzz: seed %llu auto: look ahead error %.4g (%llu job "
                            "ends checked)\n",
                            (unsigned long long)s, ast.lookahead_err_max,
                            (unsigned long long)ast.lookahead_checked);
            }
            if (!strcmp(sf_policies[p], "auto") && (x < AUTO_SYS || y > AUTO_DIL)) {
                fprintf(stderr,
                        "simfuzz: seed %llu auto: SysEff %.4gx, Dilation "
                        "%.4gx fairshare's\n",
                        (unsigned long long)s, x, y);
                broke++;
            }
        }
    }
    printf("# %llu workloads, seeds %llu..%llu, %.0f s; each policy's SysEff and "
           "Dilation over fairshare's on the same workload\n",
           (unsigned long long)k, (unsigned long long)s0, (unsigned long long)(s0 + k - 1),
           now_s() - t0);
    printf("%-22s %6s | %7s %7s %7s %7s %12s | %8s %8s %8s %8s %12s | %10s\n", "policy", "runs",
           "Smin", "S p1", "S p5", "S p50", "worst seed", "Dmax", "D p99", "D p95", "D p50",
           "worst seed", "decide max");
    for (size_t p = 0; p < np; p++) {
        double *a = rs + p * k, *b = rd + p * k;
        size_t n = cnt[p];
        if (!n)
            continue;
        qsort(a, n, sizeof(double), cmp_dbl);
        qsort(b, n, sizeof(double), cmp_dbl);
        printf("%-22s %6zu | %7.3f %7.3f %7.3f %7.3f %12llu | %8.3g %8.3f %8.3f %8.3f "
               "%12llu | %8.2f ms\n",
               sf_policies[p], n, a[0], quant(a, n, 0.01), quant(a, n, 0.05), quant(a, n, 0.5),
               (unsigned long long)seed_s[p], b[n - 1], quant(b, n, 0.99), quant(b, n, 0.95),
               quant(b, n, 0.5), (unsigned long long)seed_d[p], 1e3 * dmax[p]);
    }
    if (la_runs)
        printf("# auto's look ahead against the run: %llu workload(s) with %llu job end(s) "
               "checked; error above %g on %llu (largest %.3g, seed %llu)\n",
               (unsigned long long)la_runs, (unsigned long long)la_jobs, LA_EPS,
               (unsigned long long)la_off, la_max, (unsigned long long)la_seed);
    printf("# auto below %.2fx fairshare's SysEff or above %.2fx its Dilation on %d "
           "workload(s); %d run(s) failed\n",
           AUTO_SYS, AUTO_DIL, broke, bad);
    free(rs);
    free(rd);
    free(dmax);
    free(worst_s);
    free(worst_d);
    free(seed_s);
    free(seed_d);
    free(cnt);
    return bad || broke ? 1 : 0;
}

int main(void)
{
    const char *dump = getenv("SIMFUZZ_DUMP");
    const tu_tcase_t tcases[] = {
        { "findings", .timeout = 120,
          .loops = { { test_finding, TU_COUNT(findings) },
                     { test_finding_seed, TU_COUNT(seed_findings) } } },
        { "budget", .timeout = 120, .loops = { { test_budget_seed, TU_COUNT(budget_policies) } } },
        { "fuzz", .timeout = 100000, .tests = { test_fixed, test_long, NULL } },
        { "auto_guard", .timeout = 120, .loops = { { test_auto_guard, TU_COUNT(guard_seeds) } } },
        { "lookahead", .timeout = 120,
          .loops = { { test_lookahead_exact, TU_COUNT(lookahead_seeds) } } },
    };
    const char *cmp = getenv("SIMFUZZ_COMPARE");

    if (dump && *dump) {
        static char yaml[SF_BUF];
        int len = sf_workload(env_u64("SIMFUZZ_DUMP", 1), yaml, sizeof(yaml));
        if (len < 0)
            return 1;
        fwrite(yaml, 1, (size_t)len, stdout);
        return 0;
    }
    if (cmp && *cmp) {
        uint64_t s0 = env_u64("SIMFUZZ_SEED", 0);
        if (!s0) {
            uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
            s0 = rng_splitmix64(&x) >> 24;
        }
        return compare(s0, env_u64("SIMFUZZ_COMPARE", 1000));
    }
    return tu_main("sim_fuzz", tcases, TU_COUNT(tcases));
}
