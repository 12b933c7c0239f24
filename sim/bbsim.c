/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bbsim.c — command line of the simulator (doc/design.md §5, a contract).
 *
 *   bbsim run WORKLOAD.yaml --policy ID [--policy ID ...] [--format table|json|csv]
 *             [--seed N] [--gantt OUT.svg]
 *   bbsim gen iosets|gainaru|harmonia|persched [options] --seed N > WORKLOAD.yaml
 *
 * Exit codes: 0 ok, 1 bad input (workload, option value, simulation failure),
 * 2 usage.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "libhutil/hutil.h"
#include "libhutil/options.h"

#define MAX_POLICIES 64

static void usage(FILE *f)
{
    fprintf(f, "Usage: bbsim run WORKLOAD.yaml --policy ID [--policy ID ...]\n"
               "                 [--format table|json|csv] [--seed N] [--gantt OUT.svg]\n"
               "       bbsim gen iosets|gainaru|harmonia|persched [options] [--seed N] "
               "> WORKLOAD.yaml\n"
               "       bbsim --help | run --help | gen NAME --help\n"
               "\n"
               "bbsim simulates concurrent HPC jobs that alternate computation and I/O\n"
               "phases on a shared I/O system, under the I/O scheduling policies of\n"
               "libhsched, and prints SysEfficiency, Dilation, stretch, I/O slowdown,\n"
               "utilization and fairness for each policy side by side.\n"
               "Exit status: 0 ok, 1 bad input, 2 usage error.  See bbsim(1).\n");
}

static void run_usage(FILE *f)
{
    const char *const *ids = hs_policy_ids();
    fprintf(f, "Usage: bbsim run WORKLOAD.yaml --policy ID [--policy ID ...] [options]\n"
               "\n"
               "Runs the workload once per --policy (same random draws for all) and\n"
               "prints the results side by side.\n"
               "\n"
               "Options:\n"
               "  --policy ID        a policy id (repeatable), e.g. fairshare, fcfs,\n"
               "                     mindilation, maxsyseff, minmax:0.5, set10,\n"
               "                     mindilation-priority, auto (a model-predictive\n"
               "                     choice among policies, doc/policies.md)\n"
               "  --format FMT       table (default), json or csv\n"
               "  --seed N           seed of the random variations (default 1)\n"
               "  --gantt OUT.svg    draw who did I/O when (one panel per policy)\n"
               "  --period-min DUR   periodic policies: start the period search at\n"
               "                     this T_min (e.g. 495000 s) instead of the longest\n"
               "                     w + time_io (overrides scheduler.period_min)\n"
               "  --max-wait DUR     every policy: a phase that waited this long for\n"
               "                     bandwidth gets a share (overrides scheduler.max_wait)\n"
               "  --starve-factor K  every policy: a phase that waited more than\n"
               "                     max(K x its time alone, --starve-floor) for\n"
               "                     bandwidth gets a share (default 200; 0: off)\n"
               "  --starve-floor DUR the floor of that bound (default 7200 s)\n"
               "  --decision-budget N  policies that compute schedules (periodic): at\n"
               "                     most N work units per decision (default 2000000;\n"
               "                     0: unbounded, as the papers computed them)\n"
               "  --auto-objective O auto: syseff (default), stretch or ioslowdown\n"
               "                     (overrides scheduler.auto_objective)\n"
               "  --help             this text\n"
               "\n"
               "Policy ids known to libhsched:");
    for (int i = 0; ids && ids[i]; i++)
        fprintf(f, " %s", ids[i]);
    fprintf(f, "\n");
}

/* Value of "--opt VALUE" or "--opt=VALUE"; NULL and *bad when missing. */
static const char *optval(int argc, char **argv, int *i, const char *name, int *bad)
{
    size_t nl = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, nl))
        return NULL;
    if (a[nl] == '=')
        return a + nl + 1;
    if (a[nl] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        fprintf(stderr, "bbsim run: option %s needs a value\n", name);
        *bad = 1;
        return NULL;
    }
    return argv[++*i];
}

/* A duration option's value, > 0 and finite; else a message naming 'name' (with an
 * example 'eg') and -1. */
static int duration_opt(const char *name, const char *v, const char *eg, double *out)
{
    hu_error_t herr = { .text = "" };
    if (hu_parse_duration(v, HU_DUR_BARE_SECONDS, out, &herr) < 0 || !(*out > 0)
        || !isfinite(*out)) {
        fprintf(stderr, "bbsim run: %s must be a duration > 0 (e.g. %s), not '%s'\n", name, eg, v);
        return -1;
    }
    return 0;
}

static int cmd_run(int argc, char **argv)
{
    const char *path = NULL, *gantt = NULL, *v;
    hs_policy_t pols[MAX_POLICIES];
    int npol = 0;
    sim_format_t fmt = OUT_TABLE;
    uint64_t seed = 1;
    double period_min = 0, max_wait = 0, starve_factor = 0, starve_floor = 0;
    uint64_t max_work = 0;
    int auto_objective = -1;
    hu_error_t err = { .text = "" };
    wl_t *wl = NULL;
    wl_jobs_t *jobs = NULL;
    sim_result_t *res = NULL;
    int nres = 0;
    int rc = 1;

    for (int i = 1; i < argc; i++) {
        int bad = 0;
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            run_usage(stdout);
            return 0;
        }
        if ((v = optval(argc, argv, &i, "--policy", &bad))) {
            hu_error_t herr = { .text = "" };
            if (npol >= MAX_POLICIES) {
                fprintf(stderr, "bbsim run: at most %d policies\n", MAX_POLICIES);
                return 2;
            }
            if (hs_policy_parse(v, &pols[npol], &herr) < 0) {
                fprintf(stderr, "bbsim run: --policy %s: %s\n", v,
                        herr.text[0] ? herr.text : "unknown policy");
                return 2;
            }
            npol++;
        } else if ((v = optval(argc, argv, &i, "--format", &bad))) {
            static const char *const formats[] = { "table", "json", "csv", NULL };
            int k = hu_option_choice(stderr, "bbsim run", "--format", v, formats);
            if (k < 0)
                return 2;
            fmt = (sim_format_t)k; /* formats[] is in its order */
        } else if ((v = optval(argc, argv, &i, "--seed", &bad))) {
            char *end;
            errno = 0;
            seed = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-') {
                fprintf(stderr,
                        "bbsim run: --seed must be a non-negative integer, "
                        "not '%s'\n",
                        v);
                return 2;
            }
        } else if ((v = optval(argc, argv, &i, "--gantt", &bad)))
            gantt = v;
        else if ((v = optval(argc, argv, &i, "--max-wait", &bad))) {
            if (duration_opt("--max-wait", v, "60 s", &max_wait) < 0)
                return 2;
        } else if ((v = optval(argc, argv, &i, "--starve-factor", &bad))) {
            char *end;
            errno = 0;
            starve_factor = strtod(v, &end);
            if (errno || end == v || *end || !(starve_factor >= 0) || !isfinite(starve_factor)) {
                fprintf(stderr,
                        "bbsim run: --starve-factor must be a number >= 0 "
                        "(0: off), not '%s'\n",
                        v);
                return 2;
            }
            if (starve_factor == 0)
                starve_factor = -1; /* off */
        } else if ((v = optval(argc, argv, &i, "--starve-floor", &bad))) {
            if (duration_opt("--starve-floor", v, "600 s", &starve_floor) < 0)
                return 2;
        } else if ((v = optval(argc, argv, &i, "--decision-budget", &bad))) {
            char *end;
            errno = 0;
            unsigned long long x = strtoull(v, &end, 10);
            if (errno || end == v || *end || *v == '-') {
                fprintf(stderr,
                        "bbsim run: --decision-budget must be a number of "
                        "work units >= 0, not '%s'\n",
                        v);
                return 2;
            }
            max_work = x ? (uint64_t)x : UINT64_MAX;
        } else if ((v = optval(argc, argv, &i, "--auto-objective", &bad))) {
            if (hs_auto_objective_parse(v, &auto_objective) < 0) {
                fprintf(stderr,
                        "bbsim run: --auto-objective must be syseff, "
                        "stretch or ioslowdown, not '%s'\n",
                        v);
                return 2;
            }
        } else if ((v = optval(argc, argv, &i, "--period-min", &bad))) {
            if (duration_opt("--period-min", v, "16000 s", &period_min) < 0)
                return 2;
        } else if (bad)
            return 2;
        else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "bbsim run: unknown option '%s' (see bbsim run --help)\n", a);
            return 2;
        } else if (!path)
            path = a;
        else {
            fprintf(stderr, "bbsim run: one workload only ('%s' and '%s')\n", path, a);
            return 2;
        }
        if (bad)
            return 2;
    }
    if (!path) {
        fprintf(stderr, "bbsim run: missing WORKLOAD.yaml (see bbsim run --help)\n");
        return 2;
    }
    if (npol == 0) {
        fprintf(stderr, "bbsim run: at least one --policy is required "
                        "(e.g. --policy fairshare)\n");
        return 2;
    }
    if (!(wl = wl_load_file(path, &err))) {
        fprintf(stderr, "bbsim: %s\n", err.text);
        goto done;
    }
    if (!(jobs = wl_expand(wl, seed, &err))) {
        fprintf(stderr, "bbsim: %s\n", err.text);
        goto done;
    }
    if (!(res = calloc((size_t)npol, sizeof(*res)))) {
        fprintf(stderr, "bbsim: out of memory\n");
        goto done;
    }
    if (!(period_min > 0))
        period_min = wl->period_min;
    for (int p = 0; p < npol; p++) {
        sim_opts_t opts = { .record = gantt != NULL };
        pols[p].period_min = period_min;
        pols[p].max_wait = max_wait > 0 ? max_wait : wl->max_wait;
        pols[p].max_work = max_work;
        pols[p].starve_factor = starve_factor;
        pols[p].starve_floor = starve_floor;
        if (pols[p].kind == HS_POL_AUTO) {
            snprintf(pols[p].auto_candidates, sizeof(pols[p].auto_candidates), "%s",
                     wl->auto_candidates);
            pols[p].auto_objective = auto_objective >= 0 ? auto_objective : wl->auto_objective;
            pols[p].auto_factor = wl->auto_factor;
            pols[p].auto_hysteresis = wl->auto_hysteresis;
            pols[p].auto_interval = wl->auto_interval;
            pols[p].auto_horizon = wl->auto_horizon;
        }
        if (sim_run(wl, jobs, &pols[p], &opts, &res[p], &err) < 0) {
            fprintf(stderr, "bbsim: %s\n", err.text);
            goto done;
        }
        nres++;
    }
    if (sim_output(stdout, fmt, wl, seed, res, nres) < 0) {
        fprintf(stderr, "bbsim: cannot write the results: %s\n", strerror(errno));
        goto done;
    }
    if (gantt && sim_gantt(gantt, wl, res, nres, &err) < 0) {
        fprintf(stderr, "bbsim: %s\n", err.text);
        goto done;
    }
    rc = 0;
done:
    for (int p = 0; p < nres; p++)
        sim_result_clear(&res[p]);
    free(res);
    wl_jobs_destroy(jobs);
    wl_destroy(wl);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("bbsim %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "run"))
        return cmd_run(argc - 1, argv + 1);
    if (!strcmp(argv[1], "gen")) {
        int rc;
        if (argc < 3) {
            gen_usage(stderr);
            return 2;
        }
        rc = gen_main(argc - 2, argv + 2, stdout, stderr);
        if (fflush(stdout) != 0 && rc == 0)
            rc = 1;
        return rc;
    }
    fprintf(stderr, "bbsim: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
