/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sfq_share.c — proportional sharing of a real device through hs_sfq (SFQ(D) /
 * SFQ(D)+, doc/sfq.md).
 *
 * N writer flows (threads; default 6 with weights 1:2:4:8:16:32) each keep 'backlog'
 * write requests of 'size' bytes queued in one hs_sfq_t.  A fixed pool of D I/O worker
 * threads takes what hs_sfq_dispatch() allows and executes it: pwrite() into the
 * flow's own file (O_DIRECT when the file system accepts it, otherwise buffered writes
 * with an fdatasync() every 'sync' bytes of a flow), then hs_sfq_complete().  After a
 * warm-up, bytes completed per flow are counted for 'seconds'; the program prints the
 * achieved byte ratios against the targets (flow i over flow 0, as vPFS+ reports them)
 * and the largest relative error.  Two measures are printed:
 *   all         every byte completed in the window;
 *   backlogged  bytes of the requests dispatched while every flow had a request
 *               queued (the condition under which SFQ promises the ratios).
 * With -e MAX the exit status is 1 when the backlogged measure's error exceeds MAX.
 *
 * The ratios are decided by the dispatcher, not by the device, as long as the workers
 * are saturated; their error is then a bounded lag (a request or two of the smallest
 * flow, doc/sfq.md) over the smallest flow's count.  So that a slow device does not
 * turn that granularity into an error, -n N extends the window past -t seconds until
 * flow 0 has completed N requests, up to -T seconds; if it still has fewer, the
 * exit status is 3 (too few samples to judge).
 *
 * usage: sfq_share [-t seconds] [-n min_requests] [-T max_seconds] [-s size]
 *                  [-D workers] [-m d|plus] [-q backlog] [-w w1,w2,...] [-f file_bytes]
 *                  [-y sync_bytes] [-o auto|direct|buffered] [-e max_err] [-v] [DIR]
 * DIR defaults to $TMPDIR or /tmp; the files live in a fresh DIR/sfq_share.XXXXXX that
 * is removed at the end.
 */
#if HAVE_CONFIG_H
#include "harmonia_config.h"
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libhsched/hs_sfq.h"

#define MAXFLOWS 16
#define MAXWORKERS 256

typedef struct {
    /* configuration */
    double seconds;
    double max_seconds;
    uint64_t min_requests;
    double warmup;
    uint64_t size;
    unsigned int workers;
    hs_sfq_mode_t mode;
    unsigned int backlog;
    uint64_t file_bytes;
    uint64_t sync_bytes;
    int nflows;
    double weight[MAXFLOWS];
    bool direct;
    bool verbose;

    /* shared state, under 'lock' */
    pthread_mutex_t lock;
    pthread_cond_t work;  /* workers: something may be dispatchable */
    pthread_cond_t space; /* writers: a flow's backlog went down */
    hs_sfq_t *q;
    bool stop;
    bool counting;
    uint64_t next_id;
    unsigned int queued[MAXFLOWS];
    unsigned int inflight[MAXFLOWS]; /* queued + outstanding */
    uint64_t offset[MAXFLOWS];
    uint64_t unsynced[MAXFLOWS];
    uint64_t bytes[MAXFLOWS];    /* completed in the window */
    uint64_t bl_bytes[MAXFLOWS]; /* ... and dispatched while all were backlogged */
    uint64_t done0;              /* flow 0's requests completed in the window */
    uint64_t requests;
    uint64_t underruns; /* dispatches while some flow had nothing queued */
    int errnum;

    int fd[MAXFLOWS];
    char dir[4096];
} bench_t;

typedef struct {
    bench_t *b;
    int flow;
} warg_t;

/* A dispatched request: which flow, where, whether all flows were backlogged. */
typedef struct {
    uint64_t id;
    int flow;
    uint64_t off;
    bool backlogged;
} job_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_until(double t)
{
    double d;
    while ((d = t - now()) > 0) {
        struct timespec ts = { (time_t)d, (long)((d - floor(d)) * 1e9) };
        nanosleep(&ts, NULL);
    }
}

static void *writer(void *arg)
{
    warg_t *wa = arg;
    bench_t *b = wa->b;
    int f = wa->flow;

    pthread_mutex_lock(&b->lock);
    while (!b->stop) {
        if (b->inflight[f] >= b->backlog) {
            pthread_cond_wait(&b->space, &b->lock);
            continue;
        }
        if (hs_sfq_enqueue(b->q, (uint64_t)f, b->next_id++, b->size) < 0) {
            b->errnum = errno;
            b->stop = true;
            pthread_cond_broadcast(&b->work);
            break;
        }
        b->queued[f]++;
        b->inflight[f]++;
        pthread_cond_signal(&b->work);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

static bool all_backlogged(const bench_t *b)
{
    int i;
    for (i = 0; i < b->nflows; i++) {
        if (b->queued[i] == 0)
            return false;
    }
    return true;
}

static void *worker(void *arg)
{
    bench_t *b = arg;
    void *buf = NULL;

    if (posix_memalign(&buf, 4096, b->size) != 0) {
        pthread_mutex_lock(&b->lock);
        b->errnum = ENOMEM;
        b->stop = true;
        pthread_mutex_unlock(&b->lock);
        return NULL;
    }
    memset(buf, 0xa5, b->size);
    pthread_mutex_lock(&b->lock);
    for (;;) {
        hs_sfq_req_t r;
        job_t j;
        bool sync = false;
        ssize_t n;
        int rc = 0;

        while (!b->stop && (rc = hs_sfq_dispatch(b->q, &r)) == 0)
            pthread_cond_wait(&b->work, &b->lock);
        if (b->stop)
            break;
        if (rc < 0) {
            b->errnum = errno;
            b->stop = true;
            break;
        }
        j.id = r.id;
        j.flow = (int)r.flow;
        j.backlogged = all_backlogged(b); /* before this request leaves the queue */
        if (!j.backlogged)
            b->underruns++;
        b->queued[j.flow]--;
        j.off = b->offset[j.flow];
        b->offset[j.flow] += b->size;
        if (b->offset[j.flow] + b->size > b->file_bytes)
            b->offset[j.flow] = 0;
        if (!b->direct) {
            b->unsynced[j.flow] += b->size;
            if (b->unsynced[j.flow] >= b->sync_bytes) {
                b->unsynced[j.flow] = 0;
                sync = true;
            }
        }
        pthread_mutex_unlock(&b->lock);

        n = pwrite(b->fd[j.flow], buf, b->size, (off_t)j.off);
        if (n == (ssize_t)b->size && sync && fdatasync(b->fd[j.flow]) < 0)
            n = -1;

        pthread_mutex_lock(&b->lock);
        if (n != (ssize_t)b->size) {
            b->errnum = n < 0 ? errno : EIO;
            b->stop = true;
            pthread_cond_broadcast(&b->work);
            pthread_cond_broadcast(&b->space);
            break;
        }
        hs_sfq_complete(b->q, j.id);
        b->inflight[j.flow]--;
        b->requests++;
        if (b->counting) {
            b->bytes[j.flow] += b->size;
            if (j.flow == 0)
                b->done0++;
            if (j.backlogged)
                b->bl_bytes[j.flow] += b->size;
        }
        pthread_cond_broadcast(&b->space);
        pthread_cond_broadcast(&b->work);
    }
    pthread_cond_broadcast(&b->work);
    pthread_mutex_unlock(&b->lock);
    free(buf);
    return NULL;
}

static uint64_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    uint64_t m = 1;

    if (end == s || v <= 0)
        return 0;
    if (*end == 'k' || *end == 'K')
        m = 1024ULL;
    else if (*end == 'm' || *end == 'M')
        m = 1024ULL * 1024;
    else if (*end == 'g' || *end == 'G')
        m = 1024ULL * 1024 * 1024;
    else if (*end != '\0')
        return 0;
    return (uint64_t)(v * (double)m);
}

static int parse_weights(bench_t *b, const char *s)
{
    char *dup = strdup(s), *tok, *save = NULL;
    int n = 0;

    if (!dup)
        return -1;
    for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        double w = strtod(tok, &end);
        if (n >= MAXFLOWS || *end != '\0' || !(w > 0) || !isfinite(w)) {
            free(dup);
            return -1;
        }
        b->weight[n++] = w;
    }
    free(dup);
    if (n < 2)
        return -1;
    b->nflows = n;
    return 0;
}

static void usage(FILE *fp)
{
    fprintf(fp, "usage: sfq_share [-t seconds] [-n min_requests] [-T max_seconds] [-s size]\n"
                "                 [-D workers] [-m d|plus] [-q backlog] [-w w1,w2,...]\n"
                "                 [-f file_bytes] [-y sync_bytes] [-o auto|direct|buffered]\n"
                "                 [-e max_err] [-v] [DIR]\n"
                "  -t  measured seconds (10); a warm-up of 10%% (at most 1 s) precedes it\n"
                "  -n  go on past -t until flow 0 completed this many requests (0)\n"
                "  -T  but stop at this many seconds (3 * -t); exit 3 if -n was not reached\n"
                "  -s  request size (1M); multiples of 4K for O_DIRECT\n"
                "  -D  depth = I/O worker threads (4)\n"
                "  -m  d: SFQ(D); plus: SFQ(D)+ with one slot per request size (plus)\n"
                "  -q  requests each flow keeps queued or in flight (4*D)\n"
                "  -w  weights (1,2,4,8,16,32)\n"
                "  -f  bytes per flow file, offsets wrap (64M)\n"
                "  -y  buffered mode: fdatasync every this many bytes of a flow (8M)\n"
                "  -o  O_DIRECT when possible (auto), always, or never\n"
                "  -e  exit 1 if the max relative error (backlogged measure) exceeds this\n");
}

static int open_files(bench_t *b, int direct_mode)
{
    int i;

    b->direct = direct_mode != 0;
    for (i = 0; i < b->nflows; i++) {
        char path[4200];
        int flags = O_WRONLY | O_CREAT | O_TRUNC;
        snprintf(path, sizeof(path), "%s/flow%d", b->dir, i);
        b->fd[i] = -1;
        if (b->direct) {
            b->fd[i] = open(path, flags | O_DIRECT, 0600);
            if (b->fd[i] >= 0) {
                /* some file systems accept the flag and fail the write */
                void *buf;
                if (posix_memalign(&buf, 4096, 4096) == 0) {
                    memset(buf, 0, 4096);
                    if (pwrite(b->fd[i], buf, 4096, 0) != 4096) {
                        close(b->fd[i]);
                        b->fd[i] = -1;
                    }
                    free(buf);
                }
            }
            if (b->fd[i] < 0) {
                if (direct_mode == 2) {
                    fprintf(stderr, "sfq_share: O_DIRECT on %s: %s\n", path,
                            strerror(errno ? errno : EINVAL));
                    return -1;
                }
                while (--i >= 0) {
                    close(b->fd[i]);
                    b->fd[i] = -1;
                }
                return open_files(b, 0);
            }
        } else if ((b->fd[i] = open(path, flags, 0600)) < 0) {
            fprintf(stderr, "sfq_share: %s: %s\n", path, strerror(errno));
            return -1;
        }
    }
    return 0;
}

static void cleanup_files(bench_t *b)
{
    int i;
    for (i = 0; i < b->nflows; i++) {
        char path[4200];
        if (b->fd[i] >= 0)
            close(b->fd[i]);
        snprintf(path, sizeof(path), "%s/flow%d", b->dir, i);
        unlink(path);
    }
    rmdir(b->dir);
}

static double report(const bench_t *b, const char *label, const uint64_t *bytes, double secs)
{
    double maxerr = 0;
    int i;

    printf("%-11s", label);
    for (i = 1; i < b->nflows; i++) {
        double target = b->weight[i] / b->weight[0];
        double ratio = bytes[0] ? (double)bytes[i] / (double)bytes[0] : INFINITY;
        double err = fabs(ratio / target - 1);
        if (!(err <= maxerr))
            maxerr = err;
        printf(" %7.2f:1", ratio);
    }
    printf("   max err %6.2f%%\n", 100 * maxerr);
    if (b->verbose) {
        for (i = 0; i < b->nflows; i++)
            printf("    flow %d  weight %-6g  %10.1f MiB  %8.1f MiB/s\n", i, b->weight[i],
                   bytes[i] / 1048576.0, bytes[i] / 1048576.0 / secs);
    }
    return maxerr;
}

int main(int argc, char **argv)
{
    bench_t *b;
    pthread_t wt[MAXFLOWS], io[MAXWORKERS];
    warg_t wa[MAXFLOWS];
    hs_sfq_params_t prm;
    const char *base = getenv("TMPDIR");
    int opt, i, direct_mode = 1, nwriters = 0, nworkers = 0, rc = 0;
    double max_err = -1, t0, t1, t2, secs, e_all, e_bl;
    uint64_t total = 0;
    hs_sfq_stats_t st;

    if (!(b = calloc(1, sizeof(*b)))) {
        perror("sfq_share");
        return 2;
    }
    b->seconds = 10;
    b->max_seconds = 0;
    b->size = 1 << 20;
    b->workers = 4;
    b->mode = HS_SFQ_D;
    b->backlog = 0;
    b->file_bytes = 64ULL << 20;
    b->sync_bytes = 8ULL << 20;
    parse_weights(b, "1,2,4,8,16,32");
    while ((opt = getopt(argc, argv, "t:n:T:s:D:m:q:w:f:y:o:e:vh")) != -1) {
        switch (opt) {
        case 't':
            b->seconds = strtod(optarg, NULL);
            break;
        case 'n':
            b->min_requests = strtoull(optarg, NULL, 10);
            break;
        case 'T':
            b->max_seconds = strtod(optarg, NULL);
            break;
        case 's':
            b->size = parse_size(optarg);
            break;
        case 'D':
            b->workers = (unsigned int)strtoul(optarg, NULL, 10);
            break;
        case 'm':
            if (!strcmp(optarg, "d"))
                b->mode = HS_SFQ_D;
            else if (!strcmp(optarg, "plus"))
                b->mode = HS_SFQ_D_PLUS;
            else
                goto badarg;
            break;
        case 'q':
            b->backlog = (unsigned int)strtoul(optarg, NULL, 10);
            break;
        case 'w':
            if (parse_weights(b, optarg) < 0)
                goto badarg;
            break;
        case 'f':
            b->file_bytes = parse_size(optarg);
            break;
        case 'y':
            b->sync_bytes = parse_size(optarg);
            break;
        case 'o':
            if (!strcmp(optarg, "auto"))
                direct_mode = 1;
            else if (!strcmp(optarg, "direct"))
                direct_mode = 2;
            else if (!strcmp(optarg, "buffered"))
                direct_mode = 0;
            else
                goto badarg;
            break;
        case 'e':
            max_err = strtod(optarg, NULL);
            break;
        case 'v':
            b->verbose = true;
            break;
        case 'h':
            usage(stdout);
            free(b);
            return 0;
        default:
            goto badarg;
        }
    }
    if (!(b->seconds > 0) || b->size == 0 || b->workers == 0 || b->workers > MAXWORKERS
        || b->file_bytes < b->size || b->sync_bytes == 0 || optind < argc - 1)
        goto badarg;
    if (b->backlog == 0)
        b->backlog = 4 * b->workers;
    if (!(b->max_seconds > 0))
        b->max_seconds = 3 * b->seconds;
    if (b->max_seconds < b->seconds)
        b->max_seconds = b->seconds;
    if (optind < argc)
        base = argv[optind];
    if (!base || !*base)
        base = "/tmp";
    b->warmup = fmin(1.0, 0.1 * b->seconds);

    snprintf(b->dir, sizeof(b->dir), "%s/sfq_share.XXXXXX", base);
    if (!mkdtemp(b->dir)) {
        fprintf(stderr, "sfq_share: mkdtemp %s: %s\n", b->dir, strerror(errno));
        free(b);
        return 2;
    }
    for (i = 0; i < MAXFLOWS; i++)
        b->fd[i] = -1;
    if (open_files(b, direct_mode) < 0) {
        rc = 2;
        goto out;
    }

    /* One slot per request in both modes (equal sizes): D slots = D workers busy. */
    hs_sfq_params_init(&prm, b->mode);
    prm.depth = b->workers;
    prm.slot_bytes = b->size;
    if (!(b->q = hs_sfq_create(&prm))) {
        perror("sfq_share: hs_sfq_create");
        rc = 2;
        goto out;
    }
    for (i = 0; i < b->nflows; i++)
        hs_sfq_flow_add(b->q, (uint64_t)i, b->weight[i]);
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->work, NULL);
    pthread_cond_init(&b->space, NULL);
    b->next_id = 1;

    printf("sfq_share: %s, %d flows, weights", b->mode == HS_SFQ_D ? "SFQ(D)" : "SFQ(D)+",
           b->nflows);
    for (i = 0; i < b->nflows; i++)
        printf("%s%g", i ? ":" : " ", b->weight[i]);
    printf(", D=%u workers, %ju KiB requests, backlog %u, %s, %.1f s in %s\n", b->workers,
           (uintmax_t)(b->size >> 10), b->backlog, b->direct ? "O_DIRECT" : "buffered+fdatasync",
           b->seconds, b->dir);
    fflush(stdout);

    for (i = 0; i < b->nflows; i++) {
        wa[i].b = b;
        wa[i].flow = i;
        if (pthread_create(&wt[i], NULL, writer, &wa[i]) != 0)
            break;
        nwriters++;
    }
    for (i = 0; i < (int)b->workers && nwriters == b->nflows; i++) {
        if (pthread_create(&io[i], NULL, worker, b) != 0)
            break;
        nworkers++;
    }
    t0 = now();
    if (nwriters == b->nflows && nworkers == (int)b->workers) {
        sleep_until(t0 + b->warmup);
        pthread_mutex_lock(&b->lock);
        b->counting = true;
        t1 = now();
        pthread_mutex_unlock(&b->lock);
        sleep_until(t1 + b->seconds);
        for (;;) {
            bool enough;
            pthread_mutex_lock(&b->lock);
            enough = b->done0 >= b->min_requests || b->stop;
            pthread_mutex_unlock(&b->lock);
            if (enough || now() >= t1 + b->max_seconds)
                break;
            sleep_until(fmin(now() + 0.05, t1 + b->max_seconds));
        }
    } else
        t1 = t0;
    pthread_mutex_lock(&b->lock);
    b->counting = false;
    b->stop = true;
    t2 = now();
    pthread_cond_broadcast(&b->work);
    pthread_cond_broadcast(&b->space);
    pthread_mutex_unlock(&b->lock);
    for (i = 0; i < nwriters; i++)
        pthread_join(wt[i], NULL);
    for (i = 0; i < nworkers; i++)
        pthread_join(io[i], NULL);
    if (nwriters != b->nflows || nworkers != (int)b->workers) {
        fprintf(stderr, "sfq_share: cannot start threads\n");
        rc = 2;
        goto out;
    }
    if (b->errnum) {
        fprintf(stderr, "sfq_share: I/O error: %s\n", strerror(b->errnum));
        rc = 2;
        goto out;
    }
    secs = t2 - t1;
    for (i = 0; i < b->nflows; i++)
        total += b->bytes[i];
    hs_sfq_stats(b->q, &st);
    printf("measured %.2f s: %.1f MiB, %.1f MiB/s, %ju requests (%ju of flow 0), %ju "
           "dispatches with a flow not backlogged, %ju backfills\n",
           secs, total / 1048576.0, total / 1048576.0 / secs, (uintmax_t)b->requests,
           (uintmax_t)b->done0, (uintmax_t)b->underruns, (uintmax_t)st.backfills);
    printf("%-11s", "target");
    for (i = 1; i < b->nflows; i++)
        printf(" %7.2f:1", b->weight[i] / b->weight[0]);
    printf("\n");
    e_all = report(b, "all", b->bytes, secs);
    e_bl = report(b, "backlogged", b->bl_bytes, secs);
    printf("max relative error: %.2f%% (all), %.2f%% (backlogged)\n", 100 * e_all, 100 * e_bl);
    if (b->done0 < b->min_requests) {
        printf("TOO FEW SAMPLES: flow 0 completed %ju requests in %.1f s, wanted %ju\n",
               (uintmax_t)b->done0, secs, (uintmax_t)b->min_requests);
        rc = 3;
    } else if (max_err >= 0 && !(e_bl <= max_err)) {
        printf("FAIL: error above %.2f%%\n", 100 * max_err);
        rc = 1;
    }
out:
    cleanup_files(b);
    hs_sfq_destroy(b->q);
    free(b);
    return rc;
badarg:
    usage(stderr);
    free(b);
    return 2;
}
