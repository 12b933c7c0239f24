/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The workload fuzzer of the scheduling core (doc/fuzzing-sim.md, "The scheduling
 * core"): random workloads (simfuzz.c) under every policy, each run checked for its
 * invariants.
 *
 *   make -C testsuite/unit check TESTS=test_sim_fuzz     fixed seeds 1..SF_COUNT
 *   SIMFUZZ_SEED=N SIMFUZZ_COUNT=K                       seeds N..N+K-1
 *   SIMFUZZ_SECONDS=S                                    random seeds for S seconds
 *                                                        ('make fuzz-long')
 *   SIMFUZZ_POLICY=a,b                                   only these policies
 *   SIMFUZZ_VERBOSE=1                                    time of each run
 *   SIMFUZZ_DUMP=N                                       print workload N and stop
 *
 * A finding prints its seed and policy; 'SIMFUZZ_DUMP=N ./test_sim_fuzz > w.yaml'
 * then 'bbsim run w.yaml --policy P' reproduces it.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../sim/rng.h"
#include "simfuzz.h"
#include "testutil.h"

#define SF_COUNT 10             /* workloads of the fixed-seed run */
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
            fprintf(stderr, "simfuzz: seed %llu %-22s %8.3f s, longest decision "
                    "%.6f s\n", (unsigned long long)seed, *p, now_s() - t0, dmax);
        if (rc < 0) {
            fprintf(stderr, "simfuzz: seed %llu policy %s: %s\n",
                    (unsigned long long)seed, *p, why);
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
            (unsigned long long)runs, np,
            (unsigned long long)secs, bad);
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

    ck_assert_msg(sf_check(f->yaml, strlen(f->yaml), f->policy, why, sizeof(why),
                           NULL) == 0, "%s (%s): %s", f->what, f->policy, why);
}
END_TEST

int main(void)
{
    const char *dump = getenv("SIMFUZZ_DUMP");
    const tu_tcase_t tcases[] = {
        { "findings", .timeout = 120, .loops = { { test_finding, TU_COUNT(findings) } } },
        { "fuzz", .timeout = 100000, .tests = { test_fixed, test_long, NULL } },
    };

    if (dump && *dump) {
        static char yaml[SF_BUF];
        int len = sf_workload(env_u64("SIMFUZZ_DUMP", 1), yaml, sizeof(yaml));
        if (len < 0)
            return 1;
        fwrite(yaml, 1, (size_t)len, stdout);
        return 0;
    }
    return tu_main("sim_fuzz", tcases, TU_COUNT(tcases));
}
