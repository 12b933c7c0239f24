/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * calibrate.c — 'bbmgr calibrate PATH': the bandwidth curve BW(c) and the MSCA curve
 * MSCA(c) = BW(1)/BW(c) - 1 of the device under PATH, for c = 1..N streams.
 *
 * For each c: c threads each write their own file under PATH (O_DIRECT where the
 * file system allows it, else buffered; fsync'd either way, inside the timing) for
 * --seconds or until --size bytes, then read them back for --seconds (O_DIRECT, or
 * after posix_fadvise(DONTNEED) so the page cache does not answer).  BW(c) is the
 * bytes of all streams over the time from the first start to the last end.  The
 * files are removed after each point.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "libhutil/hutil.h"
#include "libhutil/options.h"
#include "calibrate.h"
#include "util.h"

#define MAX_STREAMS 64
#define ALIGN 4096

typedef struct {
    int max_streams;
    double seconds;
    uint64_t size; /* per stream, cap */
    uint64_t block;
    bool direct;
    bool reads;
    const char *name;
    const char *output;
    const char *format; /* "bbmgr" or "bbsim" */
    const char *path;
} cal_opts_t;

/* All streams of a point start together: they wait for go (1: go, -1: give up). */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int go;
} gate_t;

typedef struct {
    char *file;
    bool reading, direct;
    uint64_t block, size;
    double seconds;
    gate_t *gate;
    void *buf;
    /* out */
    uint64_t bytes;
    double t0, t1;
    int err;
} stream_t;

static volatile sig_atomic_t interrupted;

static void on_int(int sig)
{
    interrupted = 1;
}

static int open_file(stream_t *s)
{
    int flags = s->reading ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC;
    int fd = open(s->file, flags | O_CLOEXEC | (s->direct ? O_DIRECT : 0), 0600);
    if (fd < 0 && s->direct && errno == EINVAL) {
        s->direct = false;
        fd = open(s->file, flags | O_CLOEXEC, 0600);
    }
    return fd;
}

static void *stream_run(void *arg)
{
    stream_t *s = arg;
    uint64_t off = 0;
    int fd = open_file(s);

    if (fd < 0)
        s->err = errno;
    if (!s->direct && s->reading && fd >= 0)
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    pthread_mutex_lock(&s->gate->lock);
    while (s->gate->go == 0)
        pthread_cond_wait(&s->gate->cond, &s->gate->lock);
    if (s->gate->go < 0 && !s->err)
        s->err = ECANCELED;
    pthread_mutex_unlock(&s->gate->lock);
    s->t0 = hu_mono();
    double deadline = s->t0 + s->seconds;
    while (!s->err && !interrupted && hu_mono() < deadline) {
        if (!s->reading && off >= s->size)
            break;
        ssize_t n = s->reading ? pread(fd, s->buf, s->block, (off_t)off)
                               : pwrite(fd, s->buf, s->block, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EINVAL && s->direct && off == 0) {
            /* O_DIRECT accepted at open, refused at I/O */
            int fl = fcntl(fd, F_GETFL);
            fcntl(fd, F_SETFL, fl & ~O_DIRECT);
            s->direct = false;
            continue;
        }
        if (n < 0) {
            s->err = errno;
            break;
        }
        if (n == 0) { /* end of the file: read it again, uncached */
            if (off == 0)
                break;
            off = 0;
            if (!s->direct)
                posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            continue;
        }
        off += (uint64_t)n;
        s->bytes += (uint64_t)n;
    }
    if (fd >= 0 && !s->reading && !s->err && fsync(fd) < 0)
        s->err = errno;
    s->t1 = hu_mono();
    if (fd >= 0) {
        if (!s->direct)
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
    return NULL;
}

/* One point: c streams writing (or reading) at once.  Returns BW(c) or -1. */
static double run_point(const cal_opts_t *o, const char *dir, int c, bool reading, void **bufs,
                        bool *direct)
{
    stream_t s[MAX_STREAMS];
    pthread_t th[MAX_STREAMS];
    gate_t gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
    double t0 = INFINITY, t1 = 0, bw = -1;
    uint64_t bytes = 0;
    int started = 0;

    memset(s, 0, sizeof(s));
    for (int i = 0; i < c; i++) {
        s[i].reading = reading;
        s[i].direct = *direct;
        s[i].block = o->block;
        s[i].size = o->size;
        s[i].seconds = o->seconds;
        s[i].gate = &gate;
        s[i].buf = bufs[i];
        if (asprintf(&s[i].file, "%s/stream.%d", dir, i) < 0) {
            s[i].file = NULL;
            fprintf(stderr, "bbmgr calibrate: out of memory\n");
            goto out;
        }
    }
    for (started = 0; started < c; started++) {
        if (pthread_create(&th[started], NULL, stream_run, &s[started]) != 0) {
            fprintf(stderr, "bbmgr calibrate: cannot start %d threads\n", c);
            break;
        }
    }
    pthread_mutex_lock(&gate.lock);
    gate.go = started < c ? -1 : 1;
    pthread_cond_broadcast(&gate.cond);
    pthread_mutex_unlock(&gate.lock);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (started < c)
        goto out;
    for (int i = 0; i < c; i++) {
        if (s[i].err) {
            fprintf(stderr, "bbmgr calibrate: %s: %s\n", s[i].file, strerror(s[i].err));
            goto out;
        }
        if (!s[i].direct)
            *direct = false;
        bytes += s[i].bytes;
        t0 = fmin(t0, s[i].t0);
        t1 = fmax(t1, s[i].t1);
    }
    bw = t1 > t0 ? (double)bytes / (t1 - t0) : 0;
out:
    for (int i = 0; i < c; i++)
        free(s[i].file);
    return bw;
}

static void remove_files(const char *dir, int c)
{
    char file[4200];
    for (int i = 0; i < c; i++) {
        snprintf(file, sizeof(file), "%s/stream.%d", dir, i);
        unlink(file);
    }
}

/* ------------------------------------------------------------------ output */
static void fmt_curve(FILE *f, const double *m, int n, bool clamp)
{
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        double v = i == 0 ? 0 : m[i];
        if (clamp && v < 0)
            v = 0;
        if (!clamp && v <= -1)
            v = -0.999;
        fprintf(f, "%s%.3g", i ? ", " : "", fabs(v) < 5e-4 ? 0.0 : round(v * 1000) / 1000);
    }
    fputc(']', f);
}

static void plot(const double *mw, const double *mr, int n, bool reads)
{
    const int rows = 12;
    double lo = 0, hi = 0;
    for (int i = 0; i < n; i++) {
        lo = fmin(lo, mw[i]);
        hi = fmax(hi, mw[i]);
        if (reads) {
            lo = fmin(lo, mr[i]);
            hi = fmax(hi, mr[i]);
        }
    }
    if (hi - lo < 1e-9)
        hi = lo + 1;
    printf("\nMSCA(c) = BW(1)/BW(c) - 1   (W write, R read, * both; 0 = insensitive)\n");
    for (int r = rows; r >= 0; r--) {
        double y = lo + (hi - lo) * r / rows;
        double half = (hi - lo) / rows / 2;
        printf("%8.3f |", y);
        for (int i = 0; i < n; i++) {
            bool w = fabs(mw[i] - y) <= half;
            bool rd = reads && fabs(mr[i] - y) <= half;
            printf("  %c", w && rd ? '*' : w ? 'W' : rd ? 'R' : fabs(y) <= half ? '-' : ' ');
        }
        printf("\n");
    }
    printf("         +");
    for (int i = 0; i < n; i++)
        printf("---");
    printf("\n       c  ");
    for (int i = 0; i < n; i++)
        printf("%3d", i + 1);
    printf("\n");
}

static void bar(double v, double max)
{
    int w = max > 0 ? (int)lround(30 * v / max) : 0;
    for (int i = 0; i < w; i++)
        fputs("#", stdout);
    for (int i = w; i < 30; i++)
        fputc(' ', stdout);
}

static int write_profile(const cal_opts_t *o, FILE *f, const double *bw_w, const double *bw_r,
                         const double *mw, const double *mr, int n, bool direct)
{
    struct utsname u;
    char when[64], b[64];
    time_t t = time(NULL);
    struct tm tm;
    bool bbsim = !strcmp(o->format, "bbsim");
    uname(&u);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", localtime_r(&t, &tm));
    fprintf(f, "# Device profile measured by 'bbmgr calibrate %s' on %s, %s\n", o->path, u.nodename,
            when);
    fprintf(f, "# %s I/O, %.3g s per point, blocks of %s; BW(1) write %s/s",
            direct ? "direct (O_DIRECT)" : "buffered+fsync", o->seconds,
            hu_size_str(o->block, b, sizeof(b)), hu_size_str_si(bw_w[0], when, sizeof(when)));
    if (o->reads)
        fprintf(f, ", read %s/s", hu_size_str_si(bw_r[0], when, sizeof(when)));
    fprintf(f, "\n# BW(c) write:");
    for (int i = 0; i < n; i++)
        fprintf(f, " %.4g", bw_w[i]);
    if (o->reads) {
        fprintf(f, "\n# BW(c) read: ");
        for (int i = 0; i < n; i++)
            fprintf(f, " %.4g", bw_r[i]);
    }
    fprintf(f, "\n");
    if (bbsim) {
        fprintf(f,
                "# for a bbsim workload (platform: devices:); a buffers: entry uses it with\n"
                "# device: %s and bandwidth: BW(1)\n",
                o->name);
    } else {
        fprintf(f,
                "# for bbmgr.yaml (devices:); nodes use it with device: %s.  bbmgr.yaml takes\n"
                "# one curve, MSCA >= 0: the write curve, negative values clamped to 0.\n",
                o->name);
        if (o->reads) {
            fprintf(f, "# read curve (bbsim's msca_read): ");
            fmt_curve(f, mr, n, false);
            fprintf(f, "\n");
        }
    }
    fprintf(f, "devices:\n  - name: %s\n    msca: ", o->name);
    fmt_curve(f, mw, n, !bbsim);
    fprintf(f, "\n");
    if (bbsim && o->reads) {
        fprintf(f, "    msca_read: ");
        fmt_curve(f, mr, n, false);
        fprintf(f, "\n");
    }
    return ferror(f) ? -1 : 0;
}

/* ------------------------------------------------------------------ main */
static const char usage_text[] =
    "Usage: bbmgr calibrate [OPTIONS] PATH\n"
    "Measure the device under PATH with 1..N concurrent writers and readers and\n"
    "print BW(c) and MSCA(c) = BW(1)/BW(c) - 1; write a device profile.\n\n";

static const hu_option_t options[] = {
    { "max-streams", required_argument, 'c', "N",
      "streams up to N (1.." HU_XSTR(MAX_STREAMS) ", default 16)" },
    { "seconds", required_argument, 't', "S", "per point and direction (0.1..60, default 1.5)" },
    { "size", required_argument, 's', "SIZE",
      "largest file per stream (default: 1GiB, at most a\nquarter of the free space over N)" },
    { "block", required_argument, 'b', "SIZE", "request size (default 1MiB)" },
    { "name", required_argument, 'n', "NAME", "profile name (default: calibrated)" },
    { "output", required_argument, 'o', "FILE",
      "write the device profile there (default: stdout only)" },
    { "format", required_argument, 'f', "F",
      "bbmgr (default: devices: for bbmgr.yaml, write curve)\n"
      "or bbsim (devices: of a workload, msca and msca_read)" },
    { "no-direct", no_argument, 1, NULL, "buffered I/O even where O_DIRECT works" },
    { "no-read", no_argument, 2, NULL, "writes only" },
    HU_OPTIONS_END,
};

static void usage(FILE *f)
{
    hu_options_usage(f, options, 24, usage_text);
}

int cmd_calibrate(int argc, char **argv)
{
    cal_opts_t o = {
        .max_streams = 16,
        .seconds = 1.5,
        .block = 1 << 20,
        .direct = true,
        .reads = true,
        .name = "calibrated",
        .format = "bbmgr",
    };
    double bw_w[MAX_STREAMS] = { 0 }, bw_r[MAX_STREAMS] = { 0 };
    double mw[MAX_STREAMS] = { 0 }, mr[MAX_STREAMS] = { 0 };
    void *bufs[MAX_STREAMS] = { 0 };
    char *dir = NULL;
    hu_error_t err;
    char *end, b1[64], b2[64];
    int opt, rc = 1, n = 0;
    bool direct;
    hu_getopt_t g;

    /* "calibrate" is argv[-1] for bbmgr's dispatcher: start getopt afresh */
    optind = 0;
    argc++;
    argv--;
    hu_getopt_init(&g, options, "");
    while ((opt = getopt_long(argc, argv, g.shortopts, g.longopts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            o.max_streams = (int)strtol(optarg, &end, 10);
            if (*end || o.max_streams < 1 || o.max_streams > MAX_STREAMS) {
                fprintf(stderr, "bbmgr calibrate: --max-streams must be 1..%d\n", MAX_STREAMS);
                return 2;
            }
            break;
        case 't':
            if (hu_parse_duration(optarg, HU_DUR_BARE_SECONDS, &o.seconds, &err) < 0
                || o.seconds < 0.1 || o.seconds > 60) {
                fprintf(stderr, "bbmgr calibrate: --seconds must be 0.1..60\n");
                return 2;
            }
            break;
        case 's':
        case 'b': {
            uint64_t v;
            if (hu_parse_size(optarg, HU_SIZE_BARE_BYTES, &v, &err) < 0 || v < ALIGN) {
                fprintf(stderr, "bbmgr calibrate: --%s: %s\n", opt == 's' ? "size" : "block",
                        v < ALIGN ? "at least 4KiB" : err.text);
                return 2;
            }
            if (opt == 'b' && v > (64u << 20)) {
                fprintf(stderr, "bbmgr calibrate: --block: at most 64MiB\n");
                return 2;
            }
            *(opt == 's' ? &o.size : &o.block) = v / ALIGN * ALIGN;
            break;
        }
        case 'n':
            o.name = optarg;
            break;
        case 'o':
            o.output = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "bbmgr") && strcmp(optarg, "bbsim")) {
                fprintf(stderr, "bbmgr calibrate: --format must be bbmgr or bbsim\n");
                return 2;
            }
            o.format = optarg;
            break;
        case 1:
            o.direct = false;
            break;
        case 2:
            o.reads = false;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return 2;
    }
    o.path = argv[optind];
    for (const char *p = o.name; *p; p++)
        if (!(isalnum((unsigned char)*p) || strchr("_-.", *p)) || p - o.name > 62) {
            fprintf(stderr, "bbmgr calibrate: --name: 1-63 letters, digits, _ - .\n");
            return 2;
        }

    struct statvfs vfs;
    if (statvfs(o.path, &vfs) < 0) {
        fprintf(stderr, "bbmgr calibrate: %s: %s\n", o.path, strerror(errno));
        return 1;
    }
    uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    if (!o.size) {
        o.size = 1ULL << 30;
        if (o.size > avail / 4 / (uint64_t)o.max_streams)
            o.size = avail / 4 / (uint64_t)o.max_streams / ALIGN * ALIGN;
    }
    if (o.size < o.block) {
        fprintf(stderr, "bbmgr calibrate: %s: not enough free space (%s) for %d streams\n", o.path,
                hu_size_str(avail, b1, sizeof(b1)), o.max_streams);
        return 1;
    }
    if ((uint64_t)o.max_streams * o.size > avail) {
        fprintf(stderr, "bbmgr calibrate: %s: %d x %s does not fit in %s free\n", o.path,
                o.max_streams, hu_size_str(o.size, b1, sizeof(b1)),
                hu_size_str(avail, b2, sizeof(b2)));
        return 1;
    }
    if (asprintf(&dir, "%s/.bbmgr-calibrate.%d", o.path, (int)getpid()) < 0) {
        dir = NULL;
        goto done;
    }
    if (mkdir(dir, 0700) < 0) {
        fprintf(stderr, "bbmgr calibrate: %s: %s\n", dir, strerror(errno));
        free(dir);
        dir = NULL;
        goto done;
    }
    for (int i = 0; i < o.max_streams; i++) {
        if (posix_memalign(&bufs[i], ALIGN, o.block) != 0) {
            bufs[i] = NULL;
            fprintf(stderr, "bbmgr calibrate: out of memory\n");
            goto done;
        }
        for (size_t k = 0; k < o.block; k++)
            ((unsigned char *)bufs[i])[k] = (unsigned char)(k * 31 + i * 7 + 1);
    }
    struct sigaction sa = { .sa_handler = on_int }, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    direct = o.direct;
    printf("bbmgr calibrate %s: 1..%d streams, %.3g s per point, blocks of %s, "
           "files up to %s per stream\n",
           o.path, o.max_streams, o.seconds, hu_size_str(o.block, b1, sizeof(b1)),
           hu_size_str(o.size, b2, sizeof(b2)));
    fflush(stdout);
    for (int c = 1; c <= o.max_streams && !interrupted; c++) {
        double w = run_point(&o, dir, c, false, bufs, &direct);
        if (w < 0)
            break;
        double r = 0;
        if (o.reads && !interrupted && (r = run_point(&o, dir, c, true, bufs, &direct)) < 0)
            break;
        remove_files(dir, c);
        bw_w[c - 1] = w;
        bw_r[c - 1] = r;
        n = c;
        fprintf(stderr, "  c=%-2d write %s/s%s%s%s\n", c, hu_size_str_si(w, b1, sizeof(b1)),
                o.reads ? ", read " : "", o.reads ? hu_size_str_si(r, b2, sizeof(b2)) : "",
                o.reads ? "/s" : "");
    }
    remove_files(dir, o.max_streams);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (interrupted || n < o.max_streams || bw_w[0] <= 0) {
        fprintf(stderr, "bbmgr calibrate: %s\n",
                interrupted ? "interrupted" : "measurement failed");
        goto done;
    }
    if (o.direct && !direct)
        printf("note: %s does not allow O_DIRECT: buffered I/O, fsync'd, page cache "
               "dropped with posix_fadvise before reads\n",
               o.path);

    double maxbw = 0;
    for (int i = 0; i < n; i++) {
        mw[i] = i == 0 ? 0 : bw_w[0] / bw_w[i] - 1;
        mr[i] = i == 0 || bw_r[i] <= 0 ? 0 : bw_r[0] / bw_r[i] - 1;
        maxbw = fmax(maxbw, fmax(bw_w[i], bw_r[i]));
    }
    printf("\n  c   write BW      MSCA_w  %s   %-30s\n", o.reads ? "read BW       MSCA_r" : "",
           "write bandwidth");
    for (int i = 0; i < n; i++) {
        printf(" %2d  %10s/s %7.3f", i + 1, hu_size_str_si(bw_w[i], b1, sizeof(b1)), mw[i]);
        if (o.reads)
            printf("  %10s/s %7.3f", hu_size_str_si(bw_r[i], b2, sizeof(b2)), mr[i]);
        printf("  |");
        bar(bw_w[i], maxbw);
        printf("|\n");
    }
    plot(mw, mr, n, o.reads);
    printf("\n");
    if (write_profile(&o, stdout, bw_w, bw_r, mw, mr, n, direct) < 0)
        goto done;
    if (o.output) {
        FILE *f = fopen(o.output, "w");
        if (!f || write_profile(&o, f, bw_w, bw_r, mw, mr, n, direct) < 0 || fclose(f) != 0) {
            fprintf(stderr, "bbmgr calibrate: %s: %s\n", o.output, strerror(errno));
            goto done;
        }
        printf("# written to %s\n", o.output);
    }
    rc = 0;
done:
    if (dir) {
        remove_files(dir, o.max_streams);
        rmdir(dir);
    }
    free(dir);
    for (int i = 0; i < MAX_STREAMS; i++)
        free(bufs[i]);
    return rc;
}
