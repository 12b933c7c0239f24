/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gen.c — workload generators: 'bbsim gen iosets|gainaru|harmonia'.
 *
 * Every random draw goes through rng.h with the --seed given, so a seed always
 * produces the same file.  The output is an ordinary workload (doc/workload-format.md)
 * with a comment header recording the generator and its parameters.
 *
 * iosets   IO-Sets (Boito et al.): 60 jobs, nH with w_iter ~ N(10,1), nM ~ N(100,10),
 *          nL ~ N(1000,100) (nL = 40 - nH by default); random releases; with --eta,
 *          the noise study: 20/20/20 jobs with w_iter ~ N(m, eta*m).  Each job alone
 *          can use all of B (the paper's jobs are limited by the PFS, not their
 *          nodes); its I/O share of w_iter is drawn so that the I/O load (sum over
 *          jobs of time_io / w_iter) is --io-load on average.
 * gainaru  Intrepid-like mixes of Gainaru et al. §4.2: few large apps sharing the
 *          machine, or many small apps with a few large ones; I/O-to-compute ratio
 *          time_io / w as a parameter; platform N = sum of the apps' nodes as in §2.2.
 * harmonia Harmonia's synthetic study (Kougkas et al., CLUSTER 2018):
 *          2..8 instances of one benchmark alternating compute and I/O phases, with
 *          a compute-intensive, balanced, I/O-intensive or only-I/O profile, on a
 *          burst-buffer tier that holds about 4 instances' data before it must
 *          drain to the PFS (the paper: 800 GB of buffers, 1.6 TB for 8 instances).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhutil/hutil.h"
#include "libhutil/options.h"
#include "rng.h"
#include "sim.h"

typedef struct {
    const char *name;
    const char *arg; /* NULL: flag */
    const char *help;
} gopt_t;

static const gopt_t iosets_opts[] = {
    { "--nh", "N", "high-frequency jobs, w_iter ~ N(10 s, 1 s) (default 10)" },
    { "--nm", "N", "medium-frequency jobs, w_iter ~ N(100 s, 10 s) (default 20)" },
    { "--nl", "N", "low-frequency jobs, w_iter ~ N(1000 s, 100 s) (default 40 - nh)" },
    { "--eta", "X", "noise study: 20/20/20 jobs with w_iter ~ N(m, X*m)" },
    { "--io-load", "X", "mean sum over jobs of time_io / w_iter (default 0.8)" },
    { "--horizon", "DURATION", "each job runs about this long alone (default 4000 s)" },
    { "--release-window", "DURATION", "releases ~ U(0, this) (default 1000 s)" },
    { "--bandwidth", "BW", "B, the shared I/O bandwidth (default 10 GB/s)" },
    { "--app-nodes", "N",
      "nodes per job; b = B / N so one job alone fills B "
      "(default 64)" },
    { "--seed", "N", "random seed (default 1)" },
    { NULL, NULL, NULL },
};

static const gopt_t persched_opts[] = {
    { "--set", "N", "the PMBS 2017 set, 1..10 (default 1)" },
    { "--periods", "X", "each app runs about X x T_min (default 10)" },
    { "--seed", "N", "ignored (the sets are fixed)" },
    { NULL, NULL, NULL },
};

static const gopt_t gainaru_opts[] = {
    { "--scenario", "large|mixed",
      "few large apps sharing the machine (large), or "
      "many small apps with a few large ones (mixed) (default large)" },
    { "--large", "N", "large apps, 1285..8192 nodes (default 10, mixed: 5)" },
    { "--small", "N", "small apps, 32..1284 nodes (default 0, mixed: 50)" },
    { "--io-ratio", "X",
      "mean time_io / w of an app, drawn in [X/2, 3X/2] "
      "(default 0.2)" },
    { "--sens", "X", "sensibility of w: each w(k,i) ~ U(w, w(1+X)) (default 0)" },
    { "--horizon", "DURATION", "each app runs about this long alone (default 20000 s)" },
    { "--machine-nodes", "N",
      "Intrepid's nodes; apps are scaled to fit (default "
      "40960)" },
    { "--bandwidth", "BW", "B (default 88 GB/s)" },
    { "--node-bandwidth", "BW", "b (default 0.0125 GB/s)" },
    { "--seed", "N", "random seed (default 1)" },
    { NULL, NULL, NULL },
};

static const gopt_t harmonia_opts[] = {
    { "--profile", "P",
      "compute, balanced, io or only-io: compute time per phase "
      "= 4, 1, 1/4 or 0 times the phase's I/O time alone (default balanced)" },
    { "--instances", "N", "concurrent instances, 2..8 (default 4)" },
    { "--iterations", "N", "phases per instance (default 8)" },
    { "--phase-volume", "SIZE", "bytes written per phase (default 25 GB)" },
    { "--device", "TYPE", "buffer device type: nvme, ssd or hdd (default ssd)" },
    { "--buffers", "N",
      "buffer nodes (default 4); together they hold 4 instances' "
      "data" },
    { "--buffer-bandwidth", "BW",
      "bandwidth of one buffer node alone (default "
      "2 GB/s)" },
    { "--bandwidth", "BW",
      "B, the PFS the buffers drain to (default: a quarter of "
      "the buffers' aggregate bandwidth)" },
    { "--over-provisioning", "X", "allocator factor >= 1 (default 2)" },
    { "--seed", "N", "random seed (default 1)" },
    { NULL, NULL, NULL },
};

static void opts_usage(FILE *f, const char *gen, const char *what, const gopt_t *o)
{
    fprintf(f,
            "Usage: bbsim gen %s [options] [--seed N] > WORKLOAD.yaml\n%s\n\n"
            "Options:\n",
            gen, what);
    for (; o->name; o++) {
        char b[64];
        snprintf(b, sizeof(b), "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(f, "  %-26s %s\n", b, o->help);
    }
    fprintf(f, "  %-26s %s\n", "--help", "this text");
}

void gen_usage(FILE *f)
{
    fprintf(f, "Usage: bbsim gen iosets|gainaru|harmonia|persched [options] [--seed N] "
               "> WORKLOAD.yaml\n"
               "  iosets    IO-Sets mixes (60 jobs, nH/nM/nL, or the eta noise study)\n"
               "  gainaru   Intrepid-like mixes of Gainaru et al. §4.2\n"
               "  harmonia  Harmonia's synthetic burst-buffer study (profiles, "
               "2..8 instances)\n"
               "  persched  the ten application sets of PerSched (PMBS 2017)\n"
               "'bbsim gen NAME --help' lists a generator's options.\n");
}

/* Parsed options: name -> value string. */
typedef struct {
    const char *val[16];
} gvals_t;

static int parse_opts(int argc, char **argv, const gopt_t *opts, gvals_t *v, FILE *errf, bool *help)
{
    memset(v, 0, sizeof(*v));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *eq = strchr(a, '=');
        size_t nl = eq ? (size_t)(eq - a) : strlen(a);
        int k;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = true;
            return 0;
        }
        for (k = 0; opts[k].name; k++) {
            if (strlen(opts[k].name) == nl && !strncmp(opts[k].name, a, nl))
                break;
        }
        if (!opts[k].name) {
            fprintf(errf, "bbsim gen %s: unknown option '%s'\n", argv[0], a);
            return 2;
        }
        if (eq)
            v->val[k] = eq + 1;
        else if (i + 1 < argc)
            v->val[k] = argv[++i];
        else {
            fprintf(errf, "bbsim gen %s: option %s needs a value\n", argv[0], a);
            return 2;
        }
    }
    return 0;
}

static int opt_index(const gopt_t *opts, const char *name)
{
    for (int k = 0; opts[k].name; k++)
        if (!strcmp(opts[k].name, name))
            return k;
    return -1;
}

static int get_long(const char *gen, const gopt_t *o, const gvals_t *v, const char *name, long def,
                    long min, long max, long *out, FILE *errf)
{
    const char *s = v->val[opt_index(o, name)];
    char *end;
    if (!s) {
        *out = def;
        return 0;
    }
    errno = 0;
    *out = strtol(s, &end, 10);
    if (errno || end == s || *end || *out < min || *out > max) {
        fprintf(errf, "bbsim gen %s: %s must be an integer in [%ld, %ld], not '%s'\n", gen, name,
                min, max, s);
        return 1;
    }
    return 0;
}

static int get_u64(const char *gen, const gopt_t *o, const gvals_t *v, const char *name,
                   uint64_t *out, FILE *errf)
{
    const char *s = v->val[opt_index(o, name)];
    char *end;
    if (!s) {
        *out = 1;
        return 0;
    }
    errno = 0;
    *out = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') {
        fprintf(errf, "bbsim gen %s: %s must be a non-negative integer, not '%s'\n", gen, name, s);
        return 1;
    }
    return 0;
}

static int get_double(const char *gen, const gopt_t *o, const gvals_t *v, const char *name,
                      double def, double min, double max, double *out, FILE *errf)
{
    const char *s = v->val[opt_index(o, name)];
    char *end;
    if (!s) {
        *out = def;
        return 0;
    }
    errno = 0;
    *out = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(*out) || *out < min || *out > max) {
        fprintf(errf, "bbsim gen %s: %s must be a number in [%g, %g], not '%s'\n", gen, name, min,
                max, s);
        return 1;
    }
    return 0;
}

typedef enum { GQ_DURATION, GQ_BANDWIDTH } gq_kind_t;

/* A positive duration or bandwidth ("--horizon 2h", "--bandwidth 10 GB/s"). */
static int get_quantity(const char *gen, const gopt_t *o, const gvals_t *v, const char *name,
                        gq_kind_t kind, double def, double *out, FILE *errf)
{
    const char *s = v->val[opt_index(o, name)];
    hu_error_t e = { .text = "" };
    int rc;
    if (!s) {
        *out = def;
        return 0;
    }
    if (kind == GQ_BANDWIDTH)
        rc = hu_parse_bandwidth(s, out, &e);
    else
        rc = hu_parse_duration(s, 0, out, &e);
    if (rc < 0 || !(*out > 0)) {
        fprintf(errf, "bbsim gen %s: %s: bad %s '%s'%s%s\n", gen, name,
                kind == GQ_BANDWIDTH ? "bandwidth" : "duration", s, e.text[0] ? ": " : "", e.text);
        return 1;
    }
    return 0;
}

static void header(FILE *out, int argc, char **argv)
{
    fprintf(out, "# Generated by: bbsim gen");
    for (int i = 0; i < argc; i++)
        fprintf(out, " %s", argv[i]);
    fprintf(out, "\n");
}

/* Units written out, without exponents. */
static void put_bw(FILE *out, const char *key, double bps)
{
    fprintf(out, "  %s: %.6f GB/s\n", key, bps / 1e9);
}

/* ---------------------------------------------------------------- iosets */

static int gen_iosets(int argc, char **argv, FILE *out, FILE *errf)
{
    const gopt_t *o = iosets_opts;
    gvals_t v;
    bool help = false;
    long nh, nm, nl, app_nodes;
    double eta = -1, load, horizon, window, B;
    uint64_t seed;
    rng_t r;
    int rc;
    int idx = 0;
    static const double means[3] = { 10, 100, 1000 };
    static const char *const cls[3] = { "high", "medium", "low" };

    if ((rc = parse_opts(argc, argv, o, &v, errf, &help)))
        return rc;
    if (help) {
        opts_usage(out, "iosets",
                   "IO-Sets workloads (Boito et al.): jobs whose "
                   "w_iter is around 10 s, 100 s or 1000 s.",
                   o);
        return 0;
    }
    if (v.val[opt_index(o, "--eta")] && get_double("iosets", o, &v, "--eta", 0, 0, 100, &eta, errf))
        return 1;
    if (get_long("iosets", o, &v, "--nh", eta >= 0 ? 20 : 10, 0, 100000, &nh, errf)
        || get_long("iosets", o, &v, "--nm", 20, 0, 100000, &nm, errf)
        || get_long("iosets", o, &v, "--nl", eta >= 0 ? 20 : (nh <= 40 ? 40 - nh : 0), 0, 100000,
                    &nl, errf)
        || get_double("iosets", o, &v, "--io-load", 0.8, 1e-6, 1e6, &load, errf)
        || get_quantity("iosets", o, &v, "--horizon", GQ_DURATION, 4000, &horizon, errf)
        || get_quantity("iosets", o, &v, "--release-window", GQ_DURATION, 1000, &window, errf)
        || get_quantity("iosets", o, &v, "--bandwidth", GQ_BANDWIDTH, 10e9, &B, errf)
        || get_long("iosets", o, &v, "--app-nodes", 64, 1, 1000000, &app_nodes, errf)
        || get_u64("iosets", o, &v, "--seed", &seed, errf))
        return 1;
    if (nh + nm + nl == 0) {
        fprintf(errf, "bbsim gen iosets: no jobs (nh + nm + nl = 0)\n");
        return 1;
    }
    rng_seed(&r, seed);
    long n = nh + nm + nl;
    long counts[3] = { nh, nm, nl };
    header(out, argc, argv);
    fprintf(out, "# IO-Sets mix: nH=%ld nM=%ld nL=%ld%s, I/O load %.3g, seed %llu\n", nh, nm, nl,
            eta >= 0 ? " (eta noise study)" : "", load, (unsigned long long)seed);
    if (eta >= 0)
        fprintf(out, "# w_iter ~ N(m, %.3g m) for m = 10, 100, 1000 s\n", eta);
    fprintf(out, "platform:\n  nodes: %ld\n", n * app_nodes);
    put_bw(out, "node_bandwidth", B / (double)app_nodes);
    put_bw(out, "bandwidth", B);
    fprintf(out, "apps:\n");
    for (int c = 0; c < 3; c++) {
        for (long k = 0; k < counts[c]; k++) {
            double sd = eta >= 0 ? eta * means[c] : means[c] / 10;
            double wit = rng_normal(&r, means[c], sd);
            double f, w, vol, rel;
            long it;
            if (wit < 0.1 * means[c])
                wit = 0.1 * means[c]; /* truncated: keeps the order of magnitude */
            f = rng_uniform(&r, 0.5, 1.5) * load / (double)n;
            if (f > 0.9)
                f = 0.9;
            w = wit * (1 - f);
            vol = f * wit * B;
            rel = rng_uniform(&r, 0, window);
            it = lround(horizon / wit);
            if (it < 1)
                it = 1;
            fprintf(out,
                    "  - name: %s%03d\n    nodes: %ld\n    release: %.3f s\n"
                    "    iterations: %ld\n    w: %.6f s\n    io_volume: %.3f MB\n"
                    "    w_iter: %.6f s\n",
                    cls[c], idx++, app_nodes, rel, it, w, vol / 1e6, wit);
        }
    }
    return ferror(out) ? 1 : 0;
}

/* ---------------------------------------------------------------- gainaru */

static int gen_gainaru(int argc, char **argv, FILE *out, FILE *errf)
{
    const gopt_t *o = gainaru_opts;
    static const char *const scenarios[] = { "large", "mixed", NULL };
    gvals_t v;
    bool help = false;
    const char *scen;
    bool mixed;
    long nlarge, nsmall, machine;
    double ratio, sens, horizon, B, b;
    uint64_t seed;
    rng_t r;
    int rc;
    long *nodes = NULL;
    long n, sum = 0;

    if ((rc = parse_opts(argc, argv, o, &v, errf, &help)))
        return rc;
    if (help) {
        opts_usage(out, "gainaru",
                   "Intrepid-like application mixes (Gainaru et al. "
                   "§4.2).",
                   o);
        return 0;
    }
    scen = v.val[opt_index(o, "--scenario")];
    if (scen && hu_option_choice(errf, "bbsim gen gainaru", "--scenario", scen, scenarios) < 0)
        return 1;
    mixed = scen && !strcmp(scen, "mixed");
    if (get_long("gainaru", o, &v, "--large", mixed ? 5 : 10, 0, 10000, &nlarge, errf)
        || get_long("gainaru", o, &v, "--small", mixed ? 50 : 0, 0, 100000, &nsmall, errf)
        || get_double("gainaru", o, &v, "--io-ratio", 0.2, 1e-6, 100, &ratio, errf)
        || get_double("gainaru", o, &v, "--sens", 0, 0, 100, &sens, errf)
        || get_quantity("gainaru", o, &v, "--horizon", GQ_DURATION, 20000, &horizon, errf)
        || get_long("gainaru", o, &v, "--machine-nodes", 40960, 1, 100000000, &machine, errf)
        || get_quantity("gainaru", o, &v, "--bandwidth", GQ_BANDWIDTH, 88e9, &B, errf)
        || get_quantity("gainaru", o, &v, "--node-bandwidth", GQ_BANDWIDTH, 0.0125e9, &b, errf)
        || get_u64("gainaru", o, &v, "--seed", &seed, errf))
        return 1;
    n = nlarge + nsmall;
    if (n == 0) {
        fprintf(errf, "bbsim gen gainaru: no apps (--large + --small = 0)\n");
        return 1;
    }
    if (!(nodes = calloc((size_t)n, sizeof(*nodes)))) {
        fprintf(errf, "bbsim gen gainaru: out of memory\n");
        return 1;
    }
    rng_seed(&r, seed);
    for (long k = 0; k < n; k++) {
        nodes[k] = k < nlarge ? 1285 + (long)rng_below(&r, 8192 - 1285 + 1)
                              : 32 + (long)rng_below(&r, 1284 - 32 + 1);
        sum += nodes[k];
    }
    if (sum > machine) { /* scale the mix down to the machine */
        long s2 = 0;
        for (long k = 0; k < n; k++) {
            nodes[k] = (long)floor((double)nodes[k] * (double)machine / (double)sum);
            if (nodes[k] < 1)
                nodes[k] = 1;
            s2 += nodes[k];
        }
        sum = s2;
    }
    header(out, argc, argv);
    fprintf(out,
            "# Intrepid-like %s mix: %ld large + %ld small apps, I/O ratio "
            "%.3g, seed %llu\n# platform nodes = sum of the apps' nodes "
            "(Gainaru §2.2)\n",
            mixed ? "mixed" : "large", nlarge, nsmall, ratio, (unsigned long long)seed);
    fprintf(out, "platform:\n  nodes: %ld\n", sum);
    put_bw(out, "node_bandwidth", b);
    put_bw(out, "bandwidth", B);
    fprintf(out, "apps:\n");
    for (long k = 0; k < n; k++) {
        double w = rng_uniform(&r, 100, 1000);
        double rk = rng_uniform(&r, 0.5, 1.5) * ratio;
        double bwk = fmin((double)nodes[k] * b, B);
        double vol = rk * w * bwk;
        double wmean = w * (1 + sens / 2);
        long it = lround(horizon / (wmean * (1 + rk)));
        double rel = rng_uniform(&r, 0, w);
        if (it < 2)
            it = 2;
        fprintf(out,
                "  - name: %s%03ld\n    nodes: %ld\n    release: %.3f s\n"
                "    iterations: %ld\n",
                k < nlarge ? "large" : "small", k, nodes[k], rel, it);
        if (sens > 0)
            fprintf(out, "    w: {dist: uniform, min: %.6f s, max: %.6f s}\n", w, w * (1 + sens));
        else
            fprintf(out, "    w: %.6f s\n", w);
        fprintf(out, "    io_volume: %.3f MB\n", vol / 1e6);
    }
    free(nodes);
    return ferror(out) ? 1 : 0;
}

/* ---------------------------------------------------------------- harmonia */

static int gen_harmonia(int argc, char **argv, FILE *out, FILE *errf)
{
    const gopt_t *o = harmonia_opts;
    static const char *const profiles[] = { "compute", "balanced", "io", "only-io", NULL };
    static const double ratio[] = { 4, 1, 0.25, 0 };
    static const char *const devices[] = WL_BUILTIN_DEVICES;
    gvals_t v;
    bool help = false;
    const char *prof, *dev;
    int pi = 1;
    long inst, iters, nbuf;
    double vol, bbw, B, over;
    uint64_t seed;
    rng_t r;
    int rc;

    if ((rc = parse_opts(argc, argv, o, &v, errf, &help)))
        return rc;
    if (help) {
        opts_usage(out, "harmonia",
                   "Harmonia's synthetic study: instances of a "
                   "benchmark alternating compute and I/O phases on a burst-buffer "
                   "tier.",
                   o);
        return 0;
    }
    prof = v.val[opt_index(o, "--profile")];
    if (prof
        && (pi = hu_option_choice(errf, "bbsim gen harmonia", "--profile", prof, profiles)) < 0)
        return 1;
    dev = v.val[opt_index(o, "--device")];
    if (!dev)
        dev = "ssd";
    if (hu_option_choice(errf, "bbsim gen harmonia", "--device", dev, devices) < 0)
        return 1;
    if (get_long("harmonia", o, &v, "--instances", 4, 2, 8, &inst, errf)
        || get_long("harmonia", o, &v, "--iterations", 8, 1, 100000, &iters, errf)
        || get_long("harmonia", o, &v, "--buffers", 4, 1, 4096, &nbuf, errf)
        || get_quantity("harmonia", o, &v, "--buffer-bandwidth", GQ_BANDWIDTH, 2e9, &bbw, errf)
        || get_double("harmonia", o, &v, "--over-provisioning", 2, 1, 1000, &over, errf)
        || get_u64("harmonia", o, &v, "--seed", &seed, errf))
        return 1;
    {
        const char *sv = v.val[opt_index(o, "--phase-volume")];
        hu_error_t e = { .text = "" };
        vol = 25e9;
        if (sv && (hu_parse_size_d(sv, 0, &vol, &e) < 0 || !(vol > 0))) {
            fprintf(errf, "bbsim gen harmonia: --phase-volume: bad size '%s'%s%s\n", sv,
                    e.text[0] ? ": " : "", e.text);
            return 1;
        }
    }
    if (get_quantity("harmonia", o, &v, "--bandwidth", GQ_BANDWIDTH, (double)nbuf * bbw / 4, &B,
                     errf))
        return 1;
    rng_seed(&r, seed);
    {
        double tio = vol / bbw; /* a phase alone on one node */
        double w = ratio[pi] * tio;
        double data = (double)iters * vol;    /* one instance's data */
        double cap = 4 * data / (double)nbuf; /* the tier holds 4 instances */
        header(out, argc, argv);
        fprintf(out,
                "# Harmonia synthetic study: %ld instances, profile %s "
                "(compute = %.3g x the I/O time alone), %ld phases of %.4g GB each;\n"
                "# %ld %s buffer nodes of %.4g GB (4 instances' data), PFS %.4g "
                "GB/s, over-provisioning %.3g, seed %llu\n",
                inst, profiles[pi], ratio[pi], iters, vol / 1e9, nbuf, dev, cap / 1e9, B / 1e9,
                over, (unsigned long long)seed);
        fprintf(out, "platform:\n  nodes: %ld\n", inst * 16);
        put_bw(out, "node_bandwidth", bbw / 4); /* 16 nodes: 4x a buffer node */
        put_bw(out, "bandwidth", B);
        fprintf(out, "  over_provisioning: %.6g\n", over);
        fprintf(out,
                "  buffers:\n    - name: bb[1-%ld]\n      capacity: %.6f GB\n"
                "      bandwidth: %.6f GB/s\n      device: %s\n",
                nbuf, cap / 1e9, bbw / 1e9, dev);
        fprintf(out, "apps:\n");
        for (long k = 0; k < inst; k++) {
            double rel = rng_uniform(&r, 0, tio);
            fprintf(out,
                    "  - name: inst%ld\n    nodes: 16\n    release: %.3f s\n"
                    "    iterations: %ld\n",
                    k + 1, rel, iters);
            if (w > 0)
                fprintf(out, "    w: {dist: uniform, min: %.6f s, max: %.6f s}\n", 0.75 * w,
                        1.25 * w);
            else
                fprintf(out, "    w: 0 s\n");
            fprintf(out, "    io_volume: %.6f GB\n    buffer_capacity: %.6f GB\n", vol / 1e9,
                    2 * vol / 1e9);
        }
    }
    return ferror(out) ? 1 : 0;
}

/* ---------------------------------------------------------------- persched */

/* PMBS 2017 (Aupy, Gainaru, Le Fèvre), Table of applications: w and I/O volume
 * per instance and cores, on a machine of B = 3 GB/s and b = 0.01 GB/s per node of
 * 64 cores, compute scaled by 64 as in the paper's runs. */
static const struct {
    const char *name;
    double w;   /* s */
    double vol; /* GB */
    int nodes;
} ps_apps[4] = {
    { "turbulence1", 70 * 64., 128.2, 512 },
    { "turbulence2", 1.2 * 64., 235.8, 64 },
    { "astrophysics", 240 * 64., 423.4, 128 },
    { "plasmaphysics", 7554 * 64., 34304, 512 },
};

/* Sets 1..10: how many of each app (turbulence1, turbulence2, astrophysics,
 * plasmaphysics). */
static const int ps_sets[10][4] = {
    { 0, 10, 0, 0 }, { 0, 8, 1, 0 }, { 0, 6, 2, 0 }, { 0, 4, 3, 0 }, { 0, 2, 0, 1 },
    { 0, 2, 4, 0 },  { 1, 2, 0, 0 }, { 0, 0, 1, 1 }, { 0, 0, 5, 0 }, { 1, 0, 1, 0 },
};

static int gen_persched(int argc, char **argv, FILE *out, FILE *errf)
{
    const gopt_t *o = persched_opts;
    const double b = 0.01e9, B = 3e9;
    gvals_t v;
    bool help = false;
    long set, sum = 0;
    double periods, tmin = 0;
    uint64_t seed;

    if (parse_opts(argc, argv, o, &v, errf, &help) < 0)
        return 2;
    if (help) {
        opts_usage(out, "persched",
                   "The application sets of PerSched (PMBS 2017): "
                   "all apps released at 0, iterations for about --periods x T_min.",
                   o);
        return 0;
    }
    if (get_long("persched", o, &v, "--set", 1, 1, 10, &set, errf)
        || get_double("persched", o, &v, "--periods", 10, 0.01, 1e4, &periods, errf)
        || get_u64("persched", o, &v, "--seed", &seed, errf))
        return 1;
    for (int a = 0; a < 4; a++) {
        double cap = fmin(ps_apps[a].nodes * b, B);
        if (ps_sets[set - 1][a] == 0)
            continue;
        sum += (long)ps_sets[set - 1][a] * ps_apps[a].nodes;
        tmin = fmax(tmin, ps_apps[a].w + ps_apps[a].vol * 1e9 / cap);
    }
    header(out, argc, argv);
    fprintf(out,
            "# PerSched (PMBS 2017) set %ld; T_min = %.3f s (the paper's runs: "
            "see doc/reproductions.md)\nplatform:\n  nodes: %ld\n",
            set, tmin, sum);
    put_bw(out, "node_bandwidth", b);
    put_bw(out, "bandwidth", B);
    fprintf(out, "apps:\n");
    for (int a = 0; a < 4; a++) {
        double cap = fmin(ps_apps[a].nodes * b, B);
        long it = lround(periods * tmin / (ps_apps[a].w + ps_apps[a].vol * 1e9 / cap));
        if (ps_sets[set - 1][a] == 0)
            continue;
        if (it < 1)
            it = 1;
        fprintf(out,
                "  - name: %s\n    nodes: %d\n    release: 0 s\n"
                "    iterations: %ld\n    w: %.3f s\n    io_volume: %.1f GB\n"
                "    count: %d\n",
                ps_apps[a].name, ps_apps[a].nodes, it, ps_apps[a].w, ps_apps[a].vol,
                ps_sets[set - 1][a]);
    }
    return ferror(out) ? 1 : 0;
}

int gen_main(int argc, char **argv, FILE *out, FILE *errf)
{
    if (argc < 1 || !argv[0] || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        gen_usage(argc < 1 ? errf : out);
        return argc < 1 ? 2 : 0;
    }
    if (!strcmp(argv[0], "iosets"))
        return gen_iosets(argc, argv, out, errf);
    if (!strcmp(argv[0], "gainaru"))
        return gen_gainaru(argc, argv, out, errf);
    if (!strcmp(argv[0], "harmonia"))
        return gen_harmonia(argc, argv, out, errf);
    if (!strcmp(argv[0], "persched"))
        return gen_persched(argc, argv, out, errf);
    fprintf(errf, "bbsim gen: unknown generator '%s' (iosets, gainaru, harmonia, persched)\n",
            argv[0]);
    return 2;
}
