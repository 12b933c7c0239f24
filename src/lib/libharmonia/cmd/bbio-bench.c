/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bbio-bench — the synthetic benchmark of the Harmonia and IO-Sets papers, for real.
 *
 * Alternates compute phases (a busy loop of a given duration) and I/O phases
 * (writes or reads of a given volume into $HARMONIA_BB), each I/O phase bracketed by
 * harmonia_phase_begin()/harmonia_phase_end() and paced by harmonia_write()/_read().
 * Prints one JSON object: per-phase times (compute, wait, io, end, total), stall
 * time and achieved bandwidth, and totals.
 *
 * Profiles (as 'bbsim gen harmonia --profile'): compute time per phase = 4, 1, 1/4
 * or 0 times the phase's dedicated I/O time volume/bandwidth (--bandwidth, default
 * 1 GB/s): compute, balanced, io, only-io.  --compute or --w-iter override them.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "harmonia/harmonia.h"
#include "libhutil/hutil.h"
#include "libhutil/options.h"

#define ALIGN 4096

typedef struct {
    const char *profile;
    double ratio;     /* compute / dedicated I/O time */
    double compute;   /* seconds per phase, < 0: from the profile */
    double w_iter;    /* seconds, < 0: unused */
    double bandwidth; /* reference, bytes/s */
    uint64_t volume;
    uint64_t phase_volume; /* asked of bbmgrd; 0: volume */
    uint64_t block;
    int phases;
    const char *dir;
    harmonia_dir_t direction;
    bool fsync_always, no_harmonia, no_direct, keep, quiet;
} opts_t;

typedef struct {
    int fd;
    bool direct;
    char *path;
    char *tmpdir;
    void *buf;
} io_t;


static const char usage_text[] =
    "Usage: bbio-bench [OPTIONS]\n"
    "Alternate compute phases and I/O phases through libharmonia; print JSON.\n\n";

static const hu_option_t options[] = {
    { "profile", required_argument, 'p', "P",
      "compute, balanced (default), io or only-io: compute\n"
      "time = 4, 1, 1/4 or 0 x volume/bandwidth" },
    { "phases", required_argument, 'n', "N", "I/O phases (default 8)" },
    { "volume", required_argument, 's', "SIZE", "bytes per I/O phase (default 64MiB)" },
    { "phase-volume", required_argument, 4, "SIZE",
      "the phase's volume asked of bbmgrd, when several\n"
      "processes each move their --volume in one phase of\n"
      "the job (default: --volume)" },
    { "compute", required_argument, 'c', "DUR", "compute time per phase (overrides the profile)" },
    { "w-iter", required_argument, 'w', "DUR",
      "iteration length: compute = w_iter - volume/bandwidth" },
    { "bandwidth", required_argument, 'B', "BW",
      "reference bandwidth of the profiles (default 1 GB/s)" },
    { "dir", required_argument, 'D', "DIR",
      "where to write (default $HARMONIA_BB, else a temporary\n"
      "directory under /var/tmp, removed at the end)" },
    { "direction", required_argument, 'd', "DIR", "write (default) or read" },
    { "block", required_argument, 'b', "SIZE", "size of one write/read (default 1MiB)" },
    { "fsync", no_argument, 'f', NULL,
      "fsync at the end of every phase (always done when\nO_DIRECT is not available)" },
    { "no-direct", no_argument, 1, NULL, "buffered I/O (fsync'd) even where O_DIRECT works" },
    { "no-harmonia", no_argument, 2, NULL, "do not use libharmonia at all (for comparisons)" },
    { "keep", no_argument, 3, NULL, "keep the data file" },
    { "quiet", no_argument, 'q', NULL, "no libharmonia messages" },
    HU_OPTIONS_END,
};

static void usage(FILE *f)
{
    hu_options_usage(f, options, 24, usage_text);
}

/* ------------------------------------------------------------------ compute */
static volatile double sink;

static double busy(double seconds)
{
    double t0 = hu_mono(), t;
    double x = sink;
    if (seconds <= 0)
        return 0;
    do {
        for (int i = 0; i < 20000; i++)
            x = x * 1.0000001 + 1e-9;
        sink = x;
        t = hu_mono();
    } while (t - t0 < seconds);
    return t - t0;
}

/* ------------------------------------------------------------------ I/O */
static int io_open(io_t *io, const opts_t *o, int flags)
{
    int fd = -1;
    if (io->direct) {
        fd = open(io->path, flags | O_DIRECT | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EINVAL)
            io->direct = false; /* tmpfs and friends */
        else if (fd < 0)
            return -1;
    }
    if (fd < 0)
        fd = open(io->path, flags | O_CLOEXEC, 0600);
    return fd;
}

/* Move n bytes with fd (O_DIRECT when io->direct): whole aligned blocks direct, the
 * tail buffered.  Returns bytes moved or -1. */
static int64_t io_move(harmonia_t *h, io_t *io, int fd, uint64_t n, uint64_t block, bool reading)
{
    uint64_t done = 0;
    while (done < n) {
        uint64_t len = n - done < block ? n - done : block;
        if (io->direct && len % ALIGN) {
            int fl = fcntl(fd, F_GETFL);
            fcntl(fd, F_SETFL, fl & ~O_DIRECT);
        }
        ssize_t r = reading ? harmonia_read(h, fd, io->buf, len)
                            : harmonia_write(h, fd, io->buf, len);
        if (r < 0 && errno == EINVAL && io->direct && done == 0) {
            /* the file system refused O_DIRECT I/O after accepting the open */
            int fl = fcntl(fd, F_GETFL);
            fcntl(fd, F_SETFL, fl & ~O_DIRECT);
            io->direct = false;
            continue;
        }
        if (r < 0)
            return -1;
        done += (uint64_t)r;
        if ((uint64_t)r < len)
            break; /* end of file */
    }
    return (int64_t)done;
}

static int64_t io_phase(harmonia_t *h, io_t *io, const opts_t *o)
{
    bool reading = o->direction == HARMONIA_READ;
    int fd = io_open(io, o, reading ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC);
    if (fd < 0)
        return -1;
    if (reading && !io->direct)
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    int64_t n = io_move(h, io, fd, o->volume, o->block, reading);
    if (n >= 0 && !reading && (o->fsync_always || !io->direct) && fsync(fd) < 0)
        n = -1;
    int saved = errno;
    close(fd);
    errno = saved;
    return n;
}

/* Reading: the file is written once before the first phase, outside any phase. */
static int io_prepare(io_t *io, const opts_t *o)
{
    opts_t w = *o;
    w.direction = HARMONIA_WRITE;
    w.fsync_always = true;
    int64_t n = io_phase(NULL, io, &w);
    if (n < 0)
        return -1;
    return 0;
}

static int io_setup(io_t *io, const opts_t *o)
{
    const char *dir = o->dir ? o->dir : getenv("HARMONIA_BB");
    memset(io, 0, sizeof(*io));
    io->fd = -1;
    io->direct = !o->no_direct;
    if (!dir || !*dir) {
        char tmpl[] = "/var/tmp/bbio-bench.XXXXXX";
        if (!mkdtemp(tmpl))
            return -1;
        if (!(io->tmpdir = strdup(tmpl)))
            return -1;
        dir = io->tmpdir;
    }
    if (asprintf(&io->path, "%s/bbio-bench.%d.dat", dir, (int)getpid()) < 0) {
        io->path = NULL;
        return -1;
    }
    if (posix_memalign(&io->buf, ALIGN, o->block) != 0) {
        io->buf = NULL;
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < o->block; i++)
        ((unsigned char *)io->buf)[i] = (unsigned char)(i * 131 + 7);
    return 0;
}

static void io_cleanup(io_t *io, const opts_t *o)
{
    if (io->path && !o->keep)
        unlink(io->path);
    if (io->tmpdir)
        rmdir(io->tmpdir);
    free(io->path);
    free(io->tmpdir);
    free(io->buf);
}

/* ------------------------------------------------------------------ main */
static int parse_args(int argc, char **argv, opts_t *o)
{
    hu_getopt_t g;
    hu_error_t err;
    char *end;
    int opt;

    hu_getopt_init(&g, options, "");
    while ((opt = getopt_long(argc, argv, g.shortopts, g.longopts, NULL)) != -1) {
        switch (opt) {
        case 'p':
            o->profile = optarg;
            if (!strcmp(optarg, "compute"))
                o->ratio = 4;
            else if (!strcmp(optarg, "balanced"))
                o->ratio = 1;
            else if (!strcmp(optarg, "io"))
                o->ratio = 0.25;
            else if (!strcmp(optarg, "only-io"))
                o->ratio = 0;
            else {
                fprintf(stderr,
                        "bbio-bench: --profile must be compute, balanced, io or "
                        "only-io, not '%s'\n",
                        optarg);
                return -1;
            }
            break;
        case 'n':
            errno = 0;
            o->phases = (int)strtol(optarg, &end, 10);
            if (errno || *end || o->phases < 1 || o->phases > 1000000) {
                fprintf(stderr, "bbio-bench: --phases must be 1..1000000\n");
                return -1;
            }
            break;
        case 's':
        case 'b':
        case 4: {
            uint64_t v = 1;
            if (hu_parse_size(optarg, HU_SIZE_BARE_BYTES, &v, &err) < 0 || v == 0) {
                fprintf(stderr, "bbio-bench: --%s: %s\n",
                        opt == 's'   ? "volume"
                        : opt == 'b' ? "block"
                                     : "phase-volume",
                        v == 0 ? "must be > 0" : err.text);
                return -1;
            }
            if (opt == 's')
                o->volume = v;
            else if (opt == 4)
                o->phase_volume = v;
            else if (v > (1ULL << 30)) {
                fprintf(stderr, "bbio-bench: --block: at most 1GiB\n");
                return -1;
            } else
                o->block = (v + ALIGN - 1) / ALIGN * ALIGN;
            break;
        }
        case 'c':
        case 'w': {
            double d;
            if (hu_parse_duration(optarg, HU_DUR_BARE_SECONDS, &d, &err) < 0) {
                fprintf(stderr, "bbio-bench: --%s: %s\n", opt == 'c' ? "compute" : "w-iter",
                        err.text);
                return -1;
            }
            if (opt == 'c')
                o->compute = d;
            else
                o->w_iter = d;
            break;
        }
        case 'B':
            if (hu_parse_bandwidth(optarg, &o->bandwidth, &err) < 0 || o->bandwidth <= 0) {
                fprintf(stderr, "bbio-bench: --bandwidth: %s\n",
                        o->bandwidth <= 0 ? "must be > 0" : err.text);
                return -1;
            }
            break;
        case 'D':
            o->dir = optarg;
            break;
        case 'd':
            if (!strcmp(optarg, "write"))
                o->direction = HARMONIA_WRITE;
            else if (!strcmp(optarg, "read"))
                o->direction = HARMONIA_READ;
            else {
                fprintf(stderr, "bbio-bench: --direction must be write or read\n");
                return -1;
            }
            break;
        case 'f':
            o->fsync_always = true;
            break;
        case 1:
            o->no_direct = true;
            break;
        case 2:
            o->no_harmonia = true;
            break;
        case 3:
            o->keep = true;
            break;
        case 'q':
            o->quiet = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "bbio-bench: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts_t o = {
        .profile = "balanced",
        .ratio = 1,
        .compute = -1,
        .w_iter = -1,
        .bandwidth = 1e9,
        .volume = 64ULL << 20,
        .block = 1ULL << 20,
        .phases = 8,
        .direction = HARMONIA_WRITE,
    };
    harmonia_opts_t hopts = { 0 };
    harmonia_t *h = NULL;
    io_t io;
    json_t *out = NULL, *phases = NULL;
    int rc = 1;

    if (parse_args(argc, argv, &o) < 0)
        return 2;
    double dedicated = (double)o.volume / o.bandwidth;
    double compute = o.compute >= 0  ? o.compute
                     : o.w_iter >= 0 ? fmax(0, o.w_iter - dedicated)
                                     : o.ratio * dedicated;
    const char *profile = o.compute >= 0 ? "custom" : o.w_iter >= 0 ? "w_iter" : o.profile;

    if (io_setup(&io, &o) < 0) {
        fprintf(stderr, "bbio-bench: %s: %s\n", io.path ? io.path : "setup", strerror(errno));
        goto done;
    }
    if (o.direction == HARMONIA_READ && io_prepare(&io, &o) < 0) {
        fprintf(stderr, "bbio-bench: %s: %s\n", io.path, strerror(errno));
        goto done;
    }
    hopts.quiet = o.quiet;
    if (!o.no_harmonia && harmonia_init(&h, &hopts) < 0) {
        fprintf(stderr, "bbio-bench: harmonia_init: %s\n", strerror(errno));
        goto done;
    }
    phases = json_array();
    double t_start = hu_mono();
    double sum_c = 0, sum_w = 0, sum_io = 0, sum_end = 0, bytes = 0, best_bw = 0;
    int gated = 0;
    double *pbytes = calloc((size_t)o.phases, sizeof(double));
    double *pio = calloc((size_t)o.phases, sizeof(double));
    if (!phases || !pbytes || !pio) {
        fprintf(stderr, "bbio-bench: out of memory\n");
        free(pbytes);
        free(pio);
        goto done;
    }
    for (int i = 0; i < o.phases; i++) {
        harmonia_grant_t g = { 0 };
        double c = busy(compute);
        double t0 = hu_mono();
        if (h
            && harmonia_phase_begin(h, o.phase_volume ? o.phase_volume : o.volume, o.direction, &g)
                   < 0) {
            fprintf(stderr, "bbio-bench: harmonia_phase_begin: %s\n", strerror(errno));
            goto free_done;
        }
        double t1 = hu_mono();
        int64_t n = io_phase(h, &io, &o);
        if (n < 0) {
            fprintf(stderr, "bbio-bench: %s: %s\n", io.path, strerror(errno));
            if (h)
                harmonia_phase_end(h, 0);
            goto free_done;
        }
        double t2 = hu_mono();
        if (h)
            harmonia_phase_end(h, (uint64_t)n);
        double t3 = hu_mono();
        double bw = t2 > t1 ? n / (t2 - t1) : 0;
        pbytes[i] = (double)n;
        pio[i] = t2 - t1;
        if (bw > best_bw)
            best_bw = bw;
        sum_c += c;
        sum_w += t1 - t0;
        sum_io += t2 - t1;
        sum_end += t3 - t2;
        bytes += n;
        gated += g.gated;
        json_array_append_new(
            phases, json_pack("{s:i s:f s:f s:f s:f s:f s:I s:f s:b s:b s:I s:f}", "phase", i + 1,
                              "compute", c, "wait", t1 - t0, "io", t2 - t1, "end", t3 - t2, "total",
                              c + (t3 - t0), "bytes", (json_int_t)n, "bandwidth", bw, "gated",
                              g.gated != 0, "joined", g.joined != 0, "phase_id",
                              (json_int_t)g.phase_id, "granted_bandwidth", g.bandwidth));
    }
    double run = hu_mono() - t_start;
    /* stall: time the compute waits on I/O beyond its dedicated time, the dedicated
     * time of a phase being its bytes at the best bandwidth seen in the run */
    double stall = 0;
    for (int i = 0; i < o.phases; i++) {
        json_t *p = json_array_get(phases, (size_t)i);
        double ded = best_bw > 0 ? pbytes[i] / best_bw : pio[i];
        double s = json_real_value(json_object_get(p, "wait")) + pio[i]
                   + json_real_value(json_object_get(p, "end")) - ded;
        s = s > 0 ? s : 0;
        json_object_set_new(p, "stall", json_real(s));
        stall += s;
    }
    out = json_pack("{s:s s:s s:s s:i s:I s:I s:f s:f s:f s:s s:b s:b}", "program", "bbio-bench",
                    "version", PACKAGE_VERSION, "profile", profile, "phases", o.phases, "volume",
                    (json_int_t)o.volume, "block", (json_int_t)o.block, "compute_per_phase",
                    compute, "reference_bandwidth", o.bandwidth, "dedicated_io_time", dedicated,
                    "direction", harmonia_dir_name(o.direction), "direct", io.direct, "fsync",
                    o.fsync_always || !io.direct);
    json_object_set_new(out, "phase_volume",
                        json_integer((json_int_t)(o.phase_volume ? o.phase_volume : o.volume)));
    json_object_set_new(out, "dir",
                        json_string(o.dir                   ? o.dir
                                    : getenv("HARMONIA_BB") ? getenv("HARMONIA_BB")
                                                            : io.tmpdir));
    json_object_set_new(out, "harmonia",
                        json_pack("{s:s s:s? s:s? s:i}", "mode",
                                  o.no_harmonia ? "disabled" : harmonia_mode_name(harmonia_mode(h)),
                                  "jobid", o.no_harmonia ? NULL : getenv("HARMONIA_JOBID"), "url",
                                  o.no_harmonia ? NULL : getenv("HARMONIA_URL"), "gated_phases",
                                  gated));
    json_object_set_new(out, "phase", phases);
    phases = NULL;
    json_object_set_new(
        out, "totals",
        json_pack("{s:f s:f s:f s:f s:f s:f s:f s:f s:f s:f}", "run_time", run, "compute_time",
                  sum_c, "wait_time", sum_w, "io_time", sum_io, "end_time", sum_end, "stall_time",
                  stall, "bytes", bytes, "bandwidth", sum_io > 0 ? bytes / sum_io : 0.0,
                  "effective_bandwidth",
                  sum_w + sum_io + sum_end > 0 ? bytes / (sum_w + sum_io + sum_end) : 0.0, "rho",
                  run > 0 ? sum_c / run : 0.0));
    if (json_dumpf(out, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(9)) < 0
        || fputc('\n', stdout) == EOF || fflush(stdout) == EOF) {
        fprintf(stderr, "bbio-bench: writing the result: %s\n", strerror(errno));
        goto free_done;
    }
    rc = 0;
free_done:
    free(pbytes);
    free(pio);
done:
    json_decref(phases);
    json_decref(out);
    harmonia_finalize(h);
    io_cleanup(&io, &o);
    return rc;
}
