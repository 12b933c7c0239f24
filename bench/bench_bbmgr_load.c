/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_bbmgr_load — load generator for bbmgrd: phase grant round trips
 * (POST /v1/jobs/J/phases, then POST /v1/phases/P/finish) over keep-alive
 * connections, authenticated as libharmonia does: one MUNGE credential opens a
 * session on the connection, whose token authenticates the next requests
 * (doc/api.md, Sessions); with --per-request, every request carries its own MUNGE
 * credential instead (the client and the daemon each make a round trip to munged).
 *
 *   bench_bbmgr_load --url URL --jobs N --threads T --seconds S [--prefix P] [--per-request]
 *   bench_bbmgr_load --url URL --jobs N --threads T --phases M --closed [--prefix P]
 *   bench_bbmgr_load --fsync-test DIR [--phases COUNT]
 *
 * --fsync-test times COUNT (default 2000) 4 KiB writes, each followed by
 * fdatasync(), into a file of DIR that is rewritten in place (as SQLite rewrites
 * its WAL once checkpointed): the disk's floor under a durable commit.
 *
 * --closed finishes each phase right after its grant (history grows, few open).
 *
 * N jobs are registered (as the caller, who must be root or SlurmUser) and spread
 * over T threads; each thread walks its jobs round-robin, finishing a job's open
 * phase or opening a new one, so about half of the N jobs hold an open phase at any
 * time (N concurrent jobs in the scheduler).  Each thread has one request in flight.
 * Prints one line of key=value figures.
 *
 * The client is meant to measure the daemon, not itself: it speaks HTTP/1.1 on a
 * plain socket (requests formatted with snprintf, replies parsed for the status,
 * Content-Length and the phase id only) and reuses one MUNGE context per thread;
 * with --per-request, munge_encode() is the only per-request cost it cannot avoid
 * (one round trip to munged).  Its own CPU time is printed (client_cpu_s, from getrusage) so that a
 * run shows what the client took from the machine.
 *
 * op latency: from before the credential is made to the complete reply (what a
 * job's library sees); http latency: from the request's send to the reply.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <munge.h>

typedef struct {
    double *v;
    size_t n, cap;
} vec_t;

typedef struct {
    int idx;
    const char *prefix;
    int jfirst, jcount;
    double seconds;
    long phases; /* stop after this many round trips (0: by time) */
    int closed;  /* finish each phase before the next job's */
    vec_t lat;   /* per request, credential included */
    vec_t http;  /* per request, HTTP exchange only */
    vec_t rt;    /* per round trip */
    long errors;
} worker_t;

/* one keep-alive connection */
typedef struct {
    int fd;
    munge_ctx_t munge;
    char buf[65536];
    size_t len;       /* bytes in buf */
    char session[64]; /* token of this connection's session, or "" */
} conn_t;

static struct sockaddr_storage g_addr;
static socklen_t g_addrlen;
static char g_host[300];
static int g_no_auth;
static int g_per_request;
static const char *g_munge_socket;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void push(vec_t *v, double x)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 4096;
        if (!(v->v = realloc(v->v, v->cap * sizeof(double)))) {
            perror("realloc");
            exit(1);
        }
    }
    v->v[v->n++] = x;
}

static int parse_url(const char *url)
{
    char host[256], port[16] = "80";
    const char *p = url;
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;

    if (strncmp(p, "http://", 7) != 0) {
        fprintf(stderr, "bench: --url must be http://HOST:PORT\n");
        return -1;
    }
    p += 7;
    size_t n = strcspn(p, ":/");
    if (n == 0 || n >= sizeof(host))
        return -1;
    memcpy(host, p, n);
    host[n] = '\0';
    p += n;
    if (*p == ':') {
        p++;
        size_t m = strcspn(p, "/");
        if (m == 0 || m >= sizeof(port))
            return -1;
        memcpy(port, p, m);
        port[m] = '\0';
    }
    if (getaddrinfo(host, port, &hints, &ai) != 0) {
        fprintf(stderr, "bench: cannot resolve %s\n", host);
        return -1;
    }
    memcpy(&g_addr, ai->ai_addr, ai->ai_addrlen);
    g_addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    snprintf(g_host, sizeof(g_host), "%s:%s", host, port);
    return 0;
}

static int conn_open(conn_t *c)
{
    int one = 1;
    c->len = 0;
    c->session[0] = '\0'; /* a session belongs to the connection it was opened on */
    if ((c->fd = socket(g_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return -1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(c->fd, (struct sockaddr *)&g_addr, g_addrlen) < 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

static conn_t *conn_create(void)
{
    conn_t *c = calloc(1, sizeof(*c));
    if (!c)
        exit(1);
    c->fd = -1;
    if (!g_no_auth) {
        if (!(c->munge = munge_ctx_create())) {
            fprintf(stderr, "bench: munge_ctx_create failed\n");
            exit(1);
        }
        if (g_munge_socket && *g_munge_socket
            && munge_ctx_set(c->munge, MUNGE_OPT_SOCKET, g_munge_socket) != EMUNGE_SUCCESS) {
            fprintf(stderr, "bench: bad munge socket %s\n", g_munge_socket);
            exit(1);
        }
    }
    return c;
}

static void conn_destroy(conn_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    if (c->munge)
        munge_ctx_destroy(c->munge);
    free(c);
}

/* Find "\r\n\r\n" in buf[0..len). */
static char *end_of_headers(char *buf, size_t len)
{
    for (size_t i = 3; i < len; i++)
        if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r')
            return buf + i + 1;
    return NULL;
}

/*
 * One request; *t_sent is set when the request is on the wire.  Returns the HTTP
 * status, or -1 (connection or munge error; text in err).  The body of the reply
 * (NUL-terminated, valid until the next call) is returned in *rbody.
 */
static int request(conn_t *c, const char *method, const char *path, const char *body,
                   double *t_sent, char **rbody, char *err, size_t errlen)
{
    char req[4096], auth[1024] = "";
    int n, tries;

    for (tries = 0; tries < 3; tries++) {
        if (c->fd < 0 && conn_open(c) < 0) {
            snprintf(err, errlen, "connect: %s", strerror(errno));
            return -1;
        }
        bool by_session = c->munge && c->session[0];
        if (by_session) {
            snprintf(auth, sizeof(auth), "Authorization: Session %s\r\n", c->session);
        } else if (c->munge) {
            char payload[512], *cred = NULL;
            int pl = snprintf(payload, sizeof(payload), "%s %s", method, path);
            munge_err_t e = munge_encode(&cred, c->munge, payload, pl);
            if (e != EMUNGE_SUCCESS) {
                snprintf(err, errlen, "munge_encode: %s", munge_strerror(e));
                return -1;
            }
            snprintf(auth, sizeof(auth), "Authorization: MUNGE %s\r\n%s", cred,
                     g_per_request ? "" : "Harmonia-Session: open\r\n");
            free(cred);
        }
        n = snprintf(req, sizeof(req),
                     "%s %s HTTP/1.1\r\nHost: %s\r\n%s"
                     "%sContent-Length: %zu\r\n\r\n%s",
                     method, path, g_host, auth, body ? "Content-Type: application/json\r\n" : "",
                     body ? strlen(body) : 0, body ? body : "");
        if (n < 0 || (size_t)n >= sizeof(req)) {
            snprintf(err, errlen, "request too long");
            return -1;
        }
        *t_sent = now();
        size_t off = 0;
        while (off < (size_t)n) {
            ssize_t w = send(c->fd, req + off, (size_t)n - off, MSG_NOSIGNAL);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        if (off < (size_t)n)
            goto reconnect;
        /* read the reply: headers, then Content-Length bytes */
        c->len = 0;
        char *hend = NULL;
        size_t clen = 0;
        for (;;) {
            if (!hend && (hend = end_of_headers(c->buf, c->len))) {
                char *cl = NULL;
                for (char *h = c->buf; h < hend; h = strchr(h, '\n') + 1) {
                    if (!strncasecmp(h, "Content-Length:", 15)) {
                        cl = h + 15;
                        break;
                    }
                }
                clen = cl ? strtoul(cl, NULL, 10) : 0;
                if ((size_t)(hend - c->buf) + clen >= sizeof(c->buf)) {
                    snprintf(err, errlen, "reply too large");
                    return -1;
                }
            }
            if (hend && c->len >= (size_t)(hend - c->buf) + clen)
                break;
            if (c->len >= sizeof(c->buf) - 1) {
                snprintf(err, errlen, "reply headers too large");
                return -1;
            }
            ssize_t r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                if (c->len == 0)
                    goto reconnect; /* an idle keep-alive connection closed */
                snprintf(err, errlen, "connection closed mid-reply");
                close(c->fd);
                c->fd = -1;
                return -1;
            }
            c->len += (size_t)r;
        }
        c->buf[(hend - c->buf) + clen] = '\0';
        if (rbody)
            *rbody = hend;
        int status = 0;
        if (sscanf(c->buf, "HTTP/1.%*d %d", &status) != 1) {
            snprintf(err, errlen, "bad status line");
            return -1;
        }
        /* "Connection: close" from the server: reopen next time */
        for (char *h = c->buf; h < hend; h = strchr(h, '\n') + 1) {
            if (!strncasecmp(h, "Harmonia-Session:", 17)) {
                const char *t = h + 17 + strspn(h + 17, " ");
                size_t tl = strcspn(t, "; \r\n");
                if (tl < sizeof(c->session)) {
                    memcpy(c->session, t, tl);
                    c->session[tl] = '\0';
                }
            }
            if (!strncasecmp(h, "Connection: close", 17)) {
                close(c->fd);
                c->fd = -1;
                break;
            }
        }
        if (status == 401 && by_session) {
            c->session[0] = '\0'; /* expired: authenticate again with MUNGE */
            continue;
        }
        return status;
    reconnect:
        close(c->fd);
        c->fd = -1;
    }
    snprintf(err, errlen, "connection lost");
    return -1;
}

static void *do_register(void *arg)
{
    worker_t *w = arg;
    conn_t *c = conn_create();
    char err[256], *rb;
    double ts;
    for (int j = w->jfirst; j < w->jfirst + w->jcount; j++) {
        char body[512], path[128];
        snprintf(body, sizeof(body),
                 "{\"id\":\"%s%d\",\"uid\":%d,\"user\":\"bench\","
                 "\"name\":\"load\",\"hints\":{\"w_iter\":10.0,\"io_volume\":1e9}}",
                 w->prefix, j, 1000 + j % 50);
        int st = request(c, "POST", "/v1/jobs", body, &ts, &rb, err, sizeof(err));
        snprintf(path, sizeof(path), "/v1/jobs/%s%d/begin", w->prefix, j);
        int st2 = st > 0 ? request(c, "POST", path, NULL, &ts, &rb, err, sizeof(err)) : -1;
        if ((st != 201 && st != 200) || st2 != 200) {
            fprintf(stderr, "bench: register %s%d: %d/%d %s\n", w->prefix, j, st, st2,
                    st < 0 || st2 < 0 ? err : rb);
            exit(1);
        }
    }
    conn_destroy(c);
    return NULL;
}

/* The phase id in a reply {"id": N, ...} (the first "id" key: the phase's). */
static uint64_t reply_id(const char *body)
{
    const char *p = strstr(body, "\"id\":");
    return p ? strtoull(p + 5, NULL, 10) : 0;
}

static void *do_load(void *arg)
{
    worker_t *w = arg;
    conn_t *c = conn_create();
    char err[256];
    uint64_t *open = calloc((size_t)w->jcount, sizeof(uint64_t));
    double *t_open = calloc((size_t)w->jcount, sizeof(double));
    double t_end = now() + w->seconds;
    long done = 0;
    int k = 0;

    while (w->phases ? done < w->phases : now() < t_end) {
        char path[128], *rb = NULL;
        double t0 = now(), ts = t0;
        int st;
        if (!open[k]) {
            snprintf(path, sizeof(path), "/v1/jobs/%s%d/phases", w->prefix, w->jfirst + k);
            st = request(c, "POST", path, "{\"volume\":1e9}", &ts, &rb, err, sizeof(err));
            if (st == 201) {
                open[k] = reply_id(rb);
                t_open[k] = t0;
            }
        } else {
            snprintf(path, sizeof(path), "/v1/phases/%ju/finish", (uintmax_t)open[k]);
            st = request(c, "POST", path, NULL, &ts, &rb, err, sizeof(err));
            if (st == 200) {
                open[k] = 0;
                done++;
            }
        }
        double t1 = now();
        if (st != 200 && st != 201) {
            w->errors++;
            if (w->errors < 5)
                fprintf(stderr, "bench: %s: %d %s\n", path, st, st < 0 ? err : rb);
            if (st < 0)
                break;
        } else {
            push(&w->lat, t1 - t0);
            push(&w->http, t1 - ts);
            if (!open[k] && t_open[k] > 0) {
                /* request -> grant -> finish, measured from the request's send */
                push(&w->rt, t1 - t_open[k]);
                t_open[k] = 0;
            }
        }
        if (!w->closed || !open[k])
            k = (k + 1) % w->jcount;
    }
    /* leave nothing open */
    for (k = 0; k < w->jcount; k++)
        if (open[k]) {
            char path[128], *rb;
            double ts;
            snprintf(path, sizeof(path), "/v1/phases/%ju/finish", (uintmax_t)open[k]);
            request(c, "POST", path, NULL, &ts, &rb, err, sizeof(err));
        }
    free(open);
    free(t_open);
    conn_destroy(c);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const vec_t *v, double p)
{
    if (v->n == 0)
        return NAN;
    size_t i = (size_t)ceil(p * (double)v->n) - 1;
    return v->v[i < v->n ? i : v->n - 1];
}

/* All workers' samples of one kind, sorted. */
static vec_t merge(worker_t *w, int threads, size_t off)
{
    vec_t all = { 0 };
    for (int i = 0; i < threads; i++) {
        vec_t *v = (vec_t *)((char *)&w[i] + off);
        for (size_t k = 0; k < v->n; k++)
            push(&all, v->v[k]);
        free(v->v);
    }
    if (all.n)
        qsort(all.v, all.n, sizeof(double), cmp);
    return all;
}

static int fsync_test(const char *dir, long count)
{
    char path[4096], buf[4096];
    vec_t v = { 0 };
    snprintf(path, sizeof(path), "%s/fsync-test.%d", dir, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    memset(buf, 'x', sizeof(buf));
    for (long i = 0; i < count; i++) {
        double t0 = now();
        if (pwrite(fd, buf, sizeof(buf), (off_t)(i % 256) * (off_t)sizeof(buf)) < 0
            || fdatasync(fd) < 0) {
            perror("write/fdatasync");
            close(fd);
            unlink(path);
            return 1;
        }
        push(&v, now() - t0);
    }
    close(fd);
    unlink(path);
    double sum = 0;
    for (size_t i = 0; i < v.n; i++)
        sum += v.v[i];
    qsort(v.v, v.n, sizeof(double), cmp);
    printf("fsync_writes=%zu fsync_mean_ms=%.3f fsync_p50_ms=%.3f fsync_p99_ms=%.3f\n", v.n,
           sum / (double)v.n * 1e3, pct(&v, 0.5) * 1e3, pct(&v, 0.99) * 1e3);
    free(v.v);
    return 0;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec
           + ru.ru_stime.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        { "url", 1, NULL, 'u' },         { "jobs", 1, NULL, 'j' },   { "threads", 1, NULL, 't' },
        { "seconds", 1, NULL, 's' },     { "phases", 1, NULL, 'p' }, { "prefix", 1, NULL, 'x' },
        { "no-register", 0, NULL, 'R' }, { "closed", 0, NULL, 'C' }, { "fsync-test", 1, NULL, 'F' },
        { "per-request", 0, NULL, 'M' }, { NULL, 0, NULL, 0 }
    };
    const char *fsync_dir = NULL;
    const char *url = NULL, *prefix = "b";
    int jobs = 1, threads = 1, opt, reg = 1, closed = 0;
    double seconds = 5;
    long phases = 0;
    while ((opt = getopt_long(argc, argv, "u:j:t:s:p:x:RCF:M", lo, NULL)) != -1) {
        switch (opt) {
        case 'u':
            url = optarg;
            break;
        case 'j':
            jobs = atoi(optarg);
            break;
        case 't':
            threads = atoi(optarg);
            break;
        case 's':
            seconds = atof(optarg);
            break;
        case 'p':
            phases = atol(optarg);
            break;
        case 'x':
            prefix = optarg;
            break;
        case 'R':
            reg = 0;
            break;
        case 'C':
            closed = 1;
            break;
        case 'F':
            fsync_dir = optarg;
            break;
        case 'M':
            g_per_request = 1;
            break;
        default:
            return 2;
        }
    }
    if (fsync_dir)
        return fsync_test(fsync_dir, phases > 0 ? phases : 2000);
    if (threads > jobs)
        threads = jobs;
    if (jobs < 1 || threads < 1 || !url || parse_url(url) < 0)
        return 2;
    const char *na = getenv("HARMONIA_NO_AUTH");
    g_no_auth = na && *na == '1';
    g_munge_socket = getenv("HARMONIA_MUNGE_SOCKET");
    worker_t *w = calloc((size_t)threads, sizeof(worker_t));
    pthread_t *th = calloc((size_t)threads, sizeof(pthread_t));
    for (int i = 0; i < threads; i++) {
        w[i].idx = i;
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
    double cpu0 = cpu_seconds();
    t0 = now();
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, do_load, &w[i]);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    double dt = now() - t0;
    double cpu = cpu_seconds() - cpu0;
    long errors = 0;
    for (int i = 0; i < threads; i++)
        errors += w[i].errors;
    vec_t lat = merge(w, threads, offsetof(worker_t, lat));
    vec_t http = merge(w, threads, offsetof(worker_t, http));
    vec_t rt = merge(w, threads, offsetof(worker_t, rt));
    printf("jobs=%d threads=%d register_s=%.2f seconds=%.2f ops=%zu ops_per_s=%.0f "
           "roundtrips=%zu roundtrips_per_s=%.0f op_p50_ms=%.3f op_p99_ms=%.3f "
           "http_p50_ms=%.3f http_p99_ms=%.3f rt_p50_ms=%.3f rt_p99_ms=%.3f "
           "client_cpu_s=%.2f client_cpu_us_per_op=%.1f errors=%ld\n",
           jobs, threads, treg, dt, lat.n, lat.n / dt, rt.n, rt.n / dt, pct(&lat, 0.5) * 1e3,
           pct(&lat, 0.99) * 1e3, pct(&http, 0.5) * 1e3, pct(&http, 0.99) * 1e3,
           pct(&rt, 0.5) * 1e3, pct(&rt, 0.99) * 1e3, cpu, lat.n ? cpu / (double)lat.n * 1e6 : 0.0,
           errors);
    free(lat.v);
    free(http.v);
    free(rt.v);
    free(w);
    free(th);
    return errors ? 1 : 0;
}
