/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_bbmgr_load — load generator for bbmgrd: phase grant round trips
 * (POST /v1/jobs/J/phases, then POST /v1/phases/P/finish) over keep-alive
 * connections, each request with its own MUNGE credential.
 *
 *   bench_bbmgr_load --url URL --jobs N --threads T --seconds S [--prefix P]
 *   bench_bbmgr_load --url URL --jobs N --threads T --phases M --closed [--prefix P]
 *
 * --closed finishes each phase right after its grant (history grows, few open).
 *
 * N jobs are registered (as the caller, who must be root or SlurmUser) and spread
 * over T threads; each thread walks its jobs round-robin, finishing a job's open
 * phase or opening a new one, so about half of the N jobs hold an open phase at any
 * time (N concurrent jobs in the scheduler).  Prints one line of key=value figures.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harmonia/client.h"

typedef struct {
    int idx;
    const char *url;
    const char *prefix;
    int jfirst, jcount;
    double seconds;
    long phases;                /* stop after this many round trips (0: by time) */
    int closed;                 /* finish each phase before the next job's */
    double *lat;                /* per request */
    size_t nlat, caplat;
    double *rt;                 /* per round trip */
    size_t nrt, caprt;
    long errors;
} worker_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void push(double **v, size_t *n, size_t *cap, double x)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 4096;
        *v = realloc(*v, *cap * sizeof(double));
        if (!*v) {
            perror("realloc");
            exit(1);
        }
    }
    (*v)[(*n)++] = x;
}

static hm_client_t *client(const char *url)
{
    const char *na = getenv("HARMONIA_NO_AUTH");
    hm_client_opts_t o = { .url = url, .timeout_ms = 30000, .no_auth = na && *na == '1' };
    hm_error_t err;
    hm_client_t *c = hm_client_create(&o, &err);
    if (!c) {
        fprintf(stderr, "bench: %s\n", err.text);
        exit(1);
    }
    return c;
}

static void *do_register(void *arg)
{
    worker_t *w = arg;
    hm_client_t *c = client(w->url);
    hm_error_t err;
    for (int j = w->jfirst; j < w->jfirst + w->jcount; j++) {
        char id[64], path[128];
        snprintf(id, sizeof(id), "%s%d", w->prefix, j);
        json_t *b = json_pack("{s:s s:i s:s s:s s:{s:f s:f}}", "id", id, "uid", 1000 + j % 50,
                              "user", "bench", "name", "load", "hints", "w_iter", 10.0,
                              "io_volume", 1e9);
        int st = hm_request(c, "POST", "/v1/jobs", b, NULL, &err);
        json_decref(b);
        snprintf(path, sizeof(path), "/v1/jobs/%s/begin", id);
        int st2 = hm_request(c, "POST", path, NULL, NULL, &err);
        if ((st != 201 && st != 200) || st2 != 200) {
            fprintf(stderr, "bench: register %s: %d/%d %s\n", id, st, st2, err.text);
            exit(1);
        }
    }
    hm_client_destroy(c);
    return NULL;
}

static void *do_load(void *arg)
{
    worker_t *w = arg;
    hm_client_t *c = client(w->url);
    hm_error_t err;
    uint64_t *open = calloc((size_t)w->jcount, sizeof(uint64_t));
    double *t_open = calloc((size_t)w->jcount, sizeof(double));
    double t_end = now() + w->seconds;
    long done = 0;
    int k = 0;

    while (w->phases ? done < w->phases : now() < t_end) {
        char path[128];
        json_t *resp = NULL;
        double t0 = now();
        int st;
        if (!open[k]) {
            snprintf(path, sizeof(path), "/v1/jobs/%s%d/phases", w->prefix, w->jfirst + k);
            json_t *b = json_pack("{s:f}", "volume", 1e9);
            st = hm_request(c, "POST", path, b, &resp, &err);
            json_decref(b);
            if (st == 201) {
                open[k] = (uint64_t)json_integer_value(json_object_get(resp, "id"));
                t_open[k] = t0;
            }
        } else {
            snprintf(path, sizeof(path), "/v1/phases/%ju/finish", (uintmax_t)open[k]);
            st = hm_request(c, "POST", path, NULL, NULL, &err);
            if (st == 200) {
                open[k] = 0;
                done++;
            }
        }
        double t1 = now();
        json_decref(resp);
        if (st != 200 && st != 201) {
            w->errors++;
            if (w->errors < 5)
                fprintf(stderr, "bench: %s: %d %s\n", path, st, st < 0 ? err.text : "");
            if (st < 0)
                break;
        } else {
            push(&w->lat, &w->nlat, &w->caplat, t1 - t0);
            if (!open[k] && t_open[k] > 0) {
                /* request -> grant -> finish, measured from the request's send */
                push(&w->rt, &w->nrt, &w->caprt, t1 - t_open[k]);
                t_open[k] = 0;
            }
        }
        if (!w->closed || !open[k])
            k = (k + 1) % w->jcount;
    }
    /* leave nothing open */
    for (k = 0; k < w->jcount; k++)
        if (open[k]) {
            char path[128];
            snprintf(path, sizeof(path), "/v1/phases/%ju/finish", (uintmax_t)open[k]);
            hm_request(c, "POST", path, NULL, NULL, &err);
        }
    free(open);
    free(t_open);
    hm_client_destroy(c);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
    if (n == 0)
        return NAN;
    size_t i = (size_t)ceil(p * (double)n) - 1;
    return v[i < n ? i : n - 1];
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "url", 1, NULL, 'u' }, { "jobs", 1, NULL, 'j' }, { "threads", 1, NULL, 't' },
        { "seconds", 1, NULL, 's' }, { "phases", 1, NULL, 'p' }, { "prefix", 1, NULL, 'x' },
        { "no-register", 0, NULL, 'R' }, { "closed", 0, NULL, 'C' }, { NULL, 0, NULL, 0 }
    };
    const char *url = NULL, *prefix = "b";
    int jobs = 1, threads = 1, opt, reg = 1, closed = 0;
    double seconds = 5;
    long phases = 0;
    while ((opt = getopt_long(argc, argv, "u:j:t:s:p:x:RC", lo, NULL)) != -1) {
        switch (opt) {
        case 'u': url = optarg; break;
        case 'j': jobs = atoi(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 's': seconds = atof(optarg); break;
        case 'p': phases = atol(optarg); break;
        case 'x': prefix = optarg; break;
        case 'R': reg = 0; break;
        case 'C': closed = 1; break;
        default: return 2;
        }
    }
    if (threads > jobs)
        threads = jobs;
    if (jobs < 1 || threads < 1)
        return 2;
    worker_t *w = calloc((size_t)threads, sizeof(worker_t));
    pthread_t *th = calloc((size_t)threads, sizeof(pthread_t));
    for (int i = 0; i < threads; i++) {
        w[i].idx = i;
        w[i].url = url;
        w[i].prefix = prefix;
        w[i].jfirst = i * jobs / threads;
        w[i].jcount = (i + 1) * jobs / threads - w[i].jfirst;
        w[i].seconds = seconds;
        w[i].phases = phases ? phases / threads : 0;
        w[i].closed = closed;
    }
    double t0 = now();
    if (reg) {
        for (int i = 0; i < threads; i++)
            pthread_create(&th[i], NULL, do_register, &w[i]);
        for (int i = 0; i < threads; i++)
            pthread_join(th[i], NULL);
    }
    double treg = now() - t0;
    t0 = now();
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, do_load, &w[i]);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    double dt = now() - t0;
    size_t nl = 0, nr = 0;
    long errors = 0;
    for (int i = 0; i < threads; i++) {
        nl += w[i].nlat;
        nr += w[i].nrt;
        errors += w[i].errors;
    }
    double *lat = malloc((nl + 1) * sizeof(double)), *rt = malloc((nr + 1) * sizeof(double));
    size_t a = 0, b = 0;
    for (int i = 0; i < threads; i++) {
        memcpy(lat + a, w[i].lat, w[i].nlat * sizeof(double));
        a += w[i].nlat;
        memcpy(rt + b, w[i].rt, w[i].nrt * sizeof(double));
        b += w[i].nrt;
        free(w[i].lat);
        free(w[i].rt);
    }
    qsort(lat, nl, sizeof(double), cmp);
    qsort(rt, nr, sizeof(double), cmp);
    printf("jobs=%d threads=%d register_s=%.2f seconds=%.2f ops=%zu ops_per_s=%.0f "
           "roundtrips=%zu roundtrips_per_s=%.0f op_p50_ms=%.3f op_p99_ms=%.3f "
           "rt_p50_ms=%.3f rt_p99_ms=%.3f errors=%ld\n", jobs, threads, treg, dt, nl,
           nl / dt, nr, nr / dt, pct(lat, nl, 0.5) * 1e3, pct(lat, nl, 0.99) * 1e3,
           pct(rt, nr, 0.5) * 1e3, pct(rt, nr, 0.99) * 1e3, errors);
    free(lat);
    free(rt);
    free(w);
    free(th);
    return errors ? 1 : 0;
}
