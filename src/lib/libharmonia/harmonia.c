/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * harmonia.c — the application API (harmonia/harmonia.h) on top of the HTTP client.
 *
 * State of a handle: one phase at a time per process.
 *   NONE     no phase
 *   BUSY     one thread talks to bbmgrd for the handle (the lock is released while
 *            it waits; others wait on the condition variable)
 *   PENDING  a phase queued at bbmgrd (harmonia_phase_try_begin said WAIT)
 *   OPEN     the phase runs (gated or ungated); 'users' threads are inside it
 *   CLOSING  harmonia_phase_end() returned; the handle's closer thread reports the
 *            end to bbmgrd (the application computes meanwhile) and then encodes
 *            the credential of the next phase request; NONE when done
 * The hm_client is used by the BUSY or CLOSING thread without the lock, and
 * otherwise only with the lock held in OPEN state (pacing refreshes), so never
 * concurrently.  A begin or end waits while the handle is BUSY or CLOSING, so
 * a job's phases reach bbmgrd in order.  HARMONIA_SYNC_END=1 (or a fork: the
 * child has no closer thread) makes harmonia_phase_end() report synchronously.
 *
 * Coordination between the processes of a job (doc/libharmonia.md): bbmgrd allows
 * one open phase per job (409 on a second).  A process that gets 409 joins the open
 * phase: it reads the phase's id from GET /v1/jobs/{id} and long-polls it.  Every
 * process inside a phase is counted in a small file locked with flock(2)
 * (HARMONIA_COORD_DIR/harmonia-UID-JOBID.phase: "phase count bytes unknown member");
 * the process that brings the count to zero finishes the phase, with the bytes of
 * all.  The file is node-local: across nodes, bbmgrd counts (doc/api.md, Phases of
 * a job on several nodes).  The node's first process in a phase makes the node a
 * member of it at bbmgrd (the phase's creator with POST .../phases "member", the
 * others with POST /v1/phases/{id}/join), under the file's lock, and the file
 * records the member's name; the node's last process leaves with the node's bytes
 * (POST .../finish "member"), and bbmgrd finishes the phase when its last member
 * left.  A node that is refused because it left the phase already (a fast node's
 * next phase while a slower one is still in the last) waits for it to close.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <jansson.h>

#include "harmonia/client.h"
#include "harmonia/harmonia.h"
#include "libhutil/hutil.h"
#include "hmi.h"
#include "pace.h"

#define DEFAULT_CONNECT_TIMEOUT 2.0
#define DEFAULT_FALLBACK_WAIT 5.0
#define DEFAULT_MAX_WAIT 600.0
#define DEFAULT_RETRY_INTERVAL 10.0
#define POLL_CHUNK 10.0      /* seconds per long-poll request */
#define REFRESH_INTERVAL 1.0 /* grant refresh while pacing */
#define RETRY_SLEEP 0.2      /* between attempts while unreachable */

typedef enum { ST_NONE, ST_BUSY, ST_PENDING, ST_OPEN, ST_CLOSING } pstate_t;

enum { ACQ_GRANTED, ACQ_WAITING, ACQ_UNGATED };

/* The process's phase at bbmgrd: what an acquisition starts from (a pending one
 * goes on where the last call left it) and leaves to the handle. */
struct phase_ref {
    uint64_t pid; /* phase at bbmgrd (0: none) */
    bool owner, counted;
    bool member;  /* owner: created with the node as a member */
    bool outside; /* the node left it already: wait for its close */
    uint64_t volume;
    harmonia_dir_t dir;
    double t0, wall0; /* when the phase was first asked for */
};

struct harmonia {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_mutex_t msg_lock;
    bool off;
    hm_client_t *client;
    char *jobid;
    char *url;
    double fallback_wait, max_wait, retry_interval;
    int ntasks;
    bool quiet;
    char *coord_path;
    char member[64]; /* the node's name at bbmgrd, "": no members */
    bool no_members; /* bbmgrd takes no members (an older one) */
    /* reachability of bbmgrd */
    bool degraded;
    double last_attempt; /* monotonic */
    bool told_unreachable, told_refused, told_max_wait;
    /* the process's phase */
    pstate_t st;
    int users;
    struct phase_ref ph;
    uint64_t left_pid; /* the phase this process left last */
    double bytes_sum;
    bool bytes_unknown;
    harmonia_grant_t grant;
    double hmi_last_rate; /* the interposer's last granted rate > 0 (hmi_rate) */
    bool hmi_phase;       /* the open phase is the interposer's (hmi_begin) */
    int members_in;       /* the nodes in the open phase as bbmgrd last said (0: none) */
    int job_nodes;        /* the job's nodes as bbmgrd last said (job_volume) */
    /* pacing */
    hm_tb_t tb;
    double paced;
    double last_refresh;
    /* the closer thread (asynchronous harmonia_phase_end) */
    bool sync_end;
    bool closer_up, closer_stop, close_queued;
    pid_t closer_proc; /* getpid() when it was started */
    pthread_t closer;
    struct close_req {
        uint64_t pid;
        bool counted, owner, member, degraded;
        double total;
    } cq;
};

#define BUSY_STATE(h) ((h)->st == ST_BUSY || (h)->st == ST_CLOSING)

/* What one acquisition (run by the BUSY thread, without the lock) works on. */
typedef struct {
    struct phase_ref ph; /* in and out */
    bool block;
    bool degraded; /* in: manager was unreachable; out: it is */
    bool rejoin;   /* in: the phase the node left may be rejoined (hmi_begin) */
    bool hmi;      /* in: the interposer's phase (hmi_begin): asked for with the
                    * job's learned volume when larger (post_phase) */
    uint64_t ask;  /* the volume asked for (hmi: looked up once), 0: ph.volume */
    json_t *phase; /* out: the phase object when granted */
} acq_t;

/* ------------------------------------------------------------------ helpers */

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = { (time_t)s, (long)((s - floor(s)) * 1e9) };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static double env_double(const char *name, double dflt)
{
    const char *s = getenv(name);
    char *end;
    if (!s || !*s)
        return dflt;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return dflt;
    return v;
}

static const char *dir_names[] = { "write", "read", "readwrite" };

const char *harmonia_dir_name(harmonia_dir_t d)
{
    return (unsigned)d < 3 ? dir_names[d] : "?";
}

const char *harmonia_mode_name(harmonia_mode_t m)
{
    switch (m) {
    case HARMONIA_MODE_OFF:
        return "off";
    case HARMONIA_MODE_MANAGED:
        return "managed";
    case HARMONIA_MODE_FALLBACK:
        return "fallback";
    }
    return "?";
}

static void say(harmonia_t *h, bool *told, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One line on stderr, once per flag and process. */
static void say(harmonia_t *h, bool *told, const char *fmt, ...)
{
    int saved = errno;
    pthread_mutex_lock(&h->msg_lock);
    if (!*told) {
        *told = true;
        if (!h->quiet) {
            char line[1200];
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(line, sizeof(line), fmt, ap);
            va_end(ap);
            fprintf(stderr, "harmonia: %s\n", line);
        }
    }
    pthread_mutex_unlock(&h->msg_lock);
    errno = saved;
}

/* The reason of a transport error without the URL the client puts first. */
static const char *reason(harmonia_t *h, const hm_error_t *err)
{
    const char *t = err->text;
    size_t n = strlen(h->url);
    if (!strncmp(t, h->url, n) && !strncmp(t + n, ": ", 2))
        return t + n + 2;
    return t;
}

static void tell_unreachable(harmonia_t *h, const hm_error_t *err)
{
    say(h, &h->told_unreachable, "bbmgrd unreachable at %s (%s); I/O phases proceed ungated",
        h->url, reason(h, err));
}

/* ------------------------------------------------------------------ init */
static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 63 || !strcmp(s, ".") || !strcmp(s, ".."))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '-' || *s == '.'))
            return false;
    return true;
}

/* The node's name as a member of the job's phases at bbmgrd: HARMONIA_NODE,
 * SLURMD_NODENAME or the host's name; none (the phase ends as the first node's
 * last process leaves it) when none of them is a valid name. */
static void node_name(harmonia_t *h)
{
    const char *env[] = { "HARMONIA_NODE", "SLURMD_NODENAME" };
    char host[256];
    h->member[0] = '\0';
    for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++) {
        const char *s = getenv(env[i]);
        if (s && *s) {
            if (name_ok(s))
                snprintf(h->member, sizeof(h->member), "%s", s);
            return;
        }
    }
    if (gethostname(host, sizeof(host)) == 0) {
        host[sizeof(host) - 1] = '\0';
        if (name_ok(host)) /* at most 63 characters */
            memcpy(h->member, host, strlen(host) + 1);
    }
}

int harmonia_init(harmonia_t **hp, const harmonia_opts_t *opts)
{
    harmonia_opts_t dfl = { 0 };
    harmonia_t *h;
    const char *url, *job, *off;

    if (!hp) {
        errno = EINVAL;
        return -1;
    }
    *hp = NULL;
    if (!opts)
        opts = &dfl;
    if (!(h = calloc(1, sizeof(*h))))
        return -1;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    pthread_mutex_init(&h->msg_lock, NULL);
    url = opts->url ? opts->url : getenv("HARMONIA_URL");
    job = opts->jobid ? opts->jobid : getenv("HARMONIA_JOBID");
    off = getenv("HARMONIA_DISABLE");
    h->quiet = opts->quiet
               || (getenv("HARMONIA_QUIET") && *getenv("HARMONIA_QUIET")
                   && strcmp(getenv("HARMONIA_QUIET"), "0"));
    if (opts->force_off || !url || !*url || !job || !*job || (off && *off && strcmp(off, "0"))) {
        h->off = true;
        *hp = h;
        return 0;
    }
    for (const char *p = job; *p; p++) {
        if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '.') || p - job >= 63) {
            errno = EINVAL;
            goto error;
        }
    }
    if (!(h->jobid = strdup(job)) || !(h->url = strdup(url)))
        goto error;
    {
        const char *se = getenv("HARMONIA_SYNC_END");
        h->sync_end = se && *se && strcmp(se, "0");
    }

    double ct = opts->connect_timeout > 0
                    ? opts->connect_timeout
                    : env_double("HARMONIA_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT);
    h->fallback_wait = opts->fallback_wait > 0
                           ? opts->fallback_wait
                           : env_double("HARMONIA_FALLBACK_WAIT", DEFAULT_FALLBACK_WAIT);
    h->max_wait = opts->max_wait != 0 ? opts->max_wait
                                      : env_double("HARMONIA_MAX_WAIT", DEFAULT_MAX_WAIT);
    h->retry_interval = opts->retry_interval > 0
                            ? opts->retry_interval
                            : env_double("HARMONIA_RETRY_INTERVAL", DEFAULT_RETRY_INTERVAL);
    if (ct <= 0)
        ct = DEFAULT_CONNECT_TIMEOUT;
    if (h->fallback_wait < 0)
        h->fallback_wait = 0;
    if (h->max_wait == 0)
        h->max_wait = DEFAULT_MAX_WAIT;
    h->ntasks = opts->ntasks > 0
                    ? opts->ntasks
                    : (int)env_double("HARMONIA_NTASKS", env_double("SLURM_STEP_NUM_TASKS", 1));
    if (h->ntasks < 1)
        h->ntasks = 1;

    const char *cdir = opts->coord_dir ? opts->coord_dir : getenv("HARMONIA_COORD_DIR");
    struct stat sb;
    if (!cdir || !*cdir)
        cdir = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : "/tmp";
    const char *inc = hmi_job_start();
    if (asprintf(&h->coord_path, "%s/harmonia-%u-%s%s%s.phase", cdir, (unsigned)getuid(), job,
                 *inc ? "." : "", inc)
        < 0) {
        h->coord_path = NULL;
        goto error;
    }

    node_name(h);

    hm_client_opts_t co = {
        .url = url,
        .munge_socket = opts->munge_socket,
        .no_auth = opts->no_auth != 0,
        .connect_timeout_ms = (long)(ct * 1000),
        .timeout_ms = (long)((h->fallback_wait > 2 ? h->fallback_wait : 2) * 1000) + 3000,
    };
    if (!co.no_auth) {
        const char *na = getenv("HARMONIA_NO_AUTH");
        co.no_auth = na && *na && strcmp(na, "0");
    }
    hm_error_t err = { "" };
    if (!(h->client = hm_client_create(&co, &err))) {
        if (errno == ENOMEM)
            goto error;
        /* a bad URL or munge socket: the job still runs, ungated */
        h->degraded = true;
        h->last_attempt = INFINITY;
        say(h, &h->told_unreachable, "bbmgrd unreachable at %s (%s); I/O phases proceed ungated",
            h->url, err.text);
    }
    *hp = h;
    return 0;
error:
    harmonia_finalize(h);
    return -1;
}

harmonia_mode_t harmonia_mode(harmonia_t *h)
{
    harmonia_mode_t m;
    if (!h || h->off)
        return HARMONIA_MODE_OFF;
    pthread_mutex_lock(&h->lock);
    m = h->degraded || (h->st == ST_OPEN && !h->grant.gated) ? HARMONIA_MODE_FALLBACK
                                                             : HARMONIA_MODE_MANAGED;
    pthread_mutex_unlock(&h->lock);
    return m;
}

/* ------------------------------------------------------------------ coordination */
typedef struct {
    uint64_t pid;
    int count;
    double bytes;
    int unknown;
    char member[64]; /* the node is this member at bbmgrd, "": none */
} crec_t;

static int coord_open(harmonia_t *h)
{
    int fd = open(h->coord_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) < 0) {
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

static void coord_read(int fd, crec_t *r)
{
    char buf[200];
    ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    uintmax_t pid;
    int nf;
    memset(r, 0, sizeof(*r));
    if (n <= 0)
        return;
    buf[n] = '\0';
    nf = sscanf(buf, "%ju %d %lf %d %63s", &pid, &r->count, &r->bytes, &r->unknown, r->member);
    if (nf < 4 || (nf == 5 && strcmp(r->member, "-") && !name_ok(r->member))) {
        memset(r, 0, sizeof(*r));
        return;
    }
    r->pid = pid;
    if (nf < 5 || !strcmp(r->member, "-"))
        r->member[0] = '\0';
}

static void coord_write(int fd, const crec_t *r)
{
    char buf[200];
    int n = snprintf(buf, sizeof(buf), "%ju %d %.0f %d %s\n", (uintmax_t)r->pid, r->count, r->bytes,
                     r->unknown, r->member[0] ? r->member : "-");
    if (pwrite(fd, buf, n, 0) == n)
        (void)ftruncate(fd, n);
}

static int join_phase(harmonia_t *h, uint64_t pid, bool rejoin);

/* Count this process in phase pid (a->ph.pid); the node's first process in it
 * makes the node a member at bbmgrd.  1: counted; 0: not counted (a newer phase is
 * recorded, or no file); -1: bbmgrd refused the node (it left the phase already,
 * or the phase closed): a->ph.outside is set. */
static int coord_join(harmonia_t *h, acq_t *a)
{
    crec_t r;
    uint64_t pid = a->ph.pid;
    int fd = coord_open(h);
    if (fd < 0)
        return 0;
    coord_read(fd, &r);
    if (r.pid != pid && r.count > 0 && r.pid > pid) {
        /* a newer phase is recorded: ours closed already (the caller sees it) */
        close(fd);
        return 0;
    }
    if (r.pid != pid)
        r = (crec_t){ pid, 0, 0, 0, "" };
    if (!r.member[0] && a->ph.owner && a->ph.member)
        snprintf(r.member, sizeof(r.member), "%s", h->member);
    else if (!r.member[0] && !a->ph.owner && r.count == 0) {
        /* the node's first process in it (under the lock: the others wait) */
        int st = join_phase(h, pid, a->rejoin);
        if (st == 409) {
            close(fd);
            a->ph.outside = true;
            return -1;
        }
        if (st == 200)
            snprintf(r.member, sizeof(r.member), "%s", h->member);
    }
    r.count++;
    coord_write(fd, &r);
    close(fd);
    return 1;
}

/* Uncount; returns the locked fd (caller closes) and *last when this was the last
 * process of the node in the phase, with the bytes of all in *bytes (< 0: unknown)
 * and the node's member name in member ("" when the node is none). */
static int coord_leave(harmonia_t *h, uint64_t pid, double mine, bool *last, double *bytes,
                       char member[64])
{
    crec_t r;
    int fd = coord_open(h);
    *last = true;
    *bytes = mine;
    if (fd < 0)
        return -1;
    coord_read(fd, &r);
    if (r.pid == pid) {
        r.count--;
        if (mine < 0)
            r.unknown = 1;
        else
            r.bytes += mine;
        *last = r.count <= 0;
        *bytes = r.unknown ? -1 : r.bytes;
        snprintf(member, 64, "%s", r.member);
        if (*last)
            r = (crec_t){ 0, 0, 0, 0, "" };
        coord_write(fd, &r);
    }
    return fd;
}

/* ------------------------------------------------------------------ requests */
static const char *phase_state(json_t *ph)
{
    const char *s = json_string_value(json_object_get(ph, "state"));
    return s ? s : "";
}

static bool state_closed(const char *s)
{
    return !strcmp(s, "finished") || !strcmp(s, "cancelled") || !strcmp(s, "expired");
}

static void grant_from_phase(harmonia_t *h, json_t *ph, harmonia_grant_t *g)
{
    json_t *gr = json_object_get(ph, "grant"), *nodes, *v;
    size_t i;
    const char *s;

    g->phase_id = (uint64_t)json_integer_value(json_object_get(ph, "id"));
    g->gated = 1;
    if (json_is_number(json_object_get(ph, "requested")))
        g->requested = json_number_value(json_object_get(ph, "requested"));
    if (!json_is_object(gr))
        return;
    if (json_is_number(json_object_get(gr, "start")))
        g->start = json_number_value(json_object_get(gr, "start"));
    g->bandwidth = json_number_value(json_object_get(gr, "bandwidth"));
    g->share = json_number_value(json_object_get(gr, "share"));
    g->rate = g->bandwidth > 0 ? g->bandwidth / h->ntasks : 0;
    h->members_in = (int)json_integer_value(json_object_get(json_object_get(ph, "members"), "in"));
    if ((s = json_string_value(json_object_get(gr, "path"))))
        snprintf(g->path, sizeof(g->path), "%s", s);
    if ((s = json_string_value(json_object_get(gr, "target"))))
        snprintf(g->target, sizeof(g->target), "%s", s);
    nodes = json_object_get(gr, "nodes");
    g->nnodes = 0;
    json_array_foreach (nodes, i, v) {
        if (!(s = json_string_value(v)))
            continue;
        if (g->nnodes < 16)
            snprintf(g->nodes[g->nnodes], sizeof(g->nodes[0]), "%s", s);
        g->nnodes++;
    }
}

/*
 * The interposer's processes sharing the job's grant.  A program started
 * without srun's task count (mpirun's ranks: SLURM_STEP_NUM_TASKS is the
 * batch step's or orted's, not the job's) would take the whole grant in every
 * process: the processes of this node in the phase (the coordination file's
 * count) times the nodes in it at bbmgrd (members.in), when more than ntasks.
 * At the phase's begin the other nodes may not have joined yet: until the
 * first refresh (a second) the job's node count stands for them, so that the
 * first node does not take the whole grant meanwhile; a node alone in its
 * job's phase gets it all from then on.
 */
static int hmi_sharers(harmonia_t *h, bool at_begin)
{
    int local = 1, nodes = h->members_in > 1 ? h->members_in : 1;
    if (at_begin && h->job_nodes > nodes)
        nodes = h->job_nodes;
    int fd = coord_open(h);
    if (fd >= 0) {
        crec_t r;
        coord_read(fd, &r);
        close(fd);
        if (r.pid == h->ph.pid && r.count > 1)
            local = r.count;
    }
    long n = (long)local * nodes;
    if (n > 1 << 20)
        n = 1 << 20;
    return n > h->ntasks ? (int)n : h->ntasks;
}

/* The volume the interposer asks for: a job over several nodes asks for its
 * phase with the bytes bbmgrd recorded per phase of the job so far (learned
 * io_volume of GET /v1/jobs/{id}: all its nodes' bytes) when larger than what
 * this node learned of its own: bbmgrd's model then does not count the job's
 * phase done when the first node's bytes are moved (doc/interposer.md). */
static uint64_t job_volume(harmonia_t *h, uint64_t volume)
{
    char path[128];
    hm_error_t err = { "" };
    json_t *resp = NULL, *l;
    snprintf(path, sizeof(path), "/v1/jobs/%s", h->jobid);
    /* the job's nodes: the most of what Slurm's environment says (a rank that
     * mpirun started through a step on one node sees a step of 1 there, its
     * job's count in SLURM_JOB_NUM_NODES) and bbmgrd's count (which can be 1
     * when the node count was not known at the job's registration) */
    static const char *const vars[] = { "SLURM_JOB_NUM_NODES", "SLURM_NNODES",
                                        "SLURM_STEP_NUM_NODES" };
    int nodes = 0;
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *env = getenv(vars[i]);
        int n = env ? atoi(env) : 0;
        if (n > nodes)
            nodes = n;
    }
    h->job_nodes = nodes;
    /* a job Slurm runs on one node asks for its own bytes: no request (a phase of
     * the interposer costs one round trip less) */
    if (nodes == 1)
        return volume;
    if (hm_request(h->client, "GET", path, NULL, &resp, &err) == 200) {
        int n = (int)json_integer_value(json_object_get(resp, "nodes"));
        h->job_nodes = nodes > n ? nodes : n;
    }
    if (h->job_nodes > 1 && json_is_object(l = json_object_get(resp, "learned"))) {
        double v = json_number_value(json_object_get(l, "io_volume"));
        if (v > (double)volume && v < 9e18)
            volume = (uint64_t)v;
    }
    json_decref(resp);
    return volume;
}

static int post_phase(harmonia_t *h, acq_t *a, double wait, json_t **resp, hm_error_t *err)
{
    char path[128];
    json_t *body;
    int st;
    if (a->hmi && !a->ask)
        a->ask = job_volume(h, a->ph.volume);
    uint64_t volume = a->ask ? a->ask : a->ph.volume;

    snprintf(path, sizeof(path), "/v1/jobs/%s/phases", h->jobid);
    body = json_pack("{s:I s:s}", "volume", (json_int_t)(volume > INT64_MAX ? INT64_MAX : volume),
                     "direction", harmonia_dir_name(a->ph.dir));
    if (!body) {
        errno = ENOMEM;
        return -1;
    }
    a->ph.member = h->member[0] && !h->no_members;
    if (a->ph.member)
        json_object_set_new(body, "member", json_string(h->member));
    if (wait > 0) {
        json_object_set_new(body, "wait", json_real(wait));
        hm_client_set_extra_wait(h->client, (long)(wait * 1000));
    }
    st = hm_request(h->client, "POST", path, body, resp, err);
    json_decref(body);
    return st;
}

/* The phase's view; with wait, long-polled while it waits (and, until_closed,
 * while it is granted: bbmgrd answers when it closes). */
static int get_phase(harmonia_t *h, uint64_t pid, double wait, bool until_closed, json_t **resp,
                     hm_error_t *err)
{
    char path[128];
    if (wait > 0) {
        snprintf(path, sizeof(path), "/v1/phases/%ju?wait=%.3f%s", (uintmax_t)pid, wait,
                 until_closed ? "&until=closed" : "");
        hm_client_set_extra_wait(h->client, (long)(wait * 1000));
    } else
        snprintf(path, sizeof(path), "/v1/phases/%ju", (uintmax_t)pid);
    return hm_request(h->client, "GET", path, NULL, resp, err);
}

/* The job's open phase from GET /v1/jobs/{id}: its id, or 0 if none. */
static int get_open_phase(harmonia_t *h, uint64_t *pid, hm_error_t *err)
{
    char path[128];
    json_t *resp = NULL;
    snprintf(path, sizeof(path), "/v1/jobs/%s", h->jobid);
    int st = hm_request(h->client, "GET", path, NULL, &resp, err);
    *pid = 0;
    if (st == 200) {
        json_t *ph = json_object_get(resp, "phase");
        if (json_is_object(ph) && !state_closed(phase_state(ph)))
            *pid = (uint64_t)json_integer_value(json_object_get(ph, "id"));
    }
    json_decref(resp);
    return st;
}

/* Make the node a member of phase pid: the HTTP status (409: it left it already,
 * or the phase closed), or -1 (unreachable, or no member name: the node is none).
 * With rejoin, a node that left the phase is a member again (the interposer's
 * node whose detector ended its phase too soon: hmi_begin()). */
static int join_phase(harmonia_t *h, uint64_t pid, bool rejoin)
{
    char path[128];
    hm_error_t err;
    json_t *body, *resp = NULL;
    if (!h->member[0] || h->no_members || !h->client)
        return -1;
    snprintf(path, sizeof(path), "/v1/phases/%ju/join", (uintmax_t)pid);
    if (!(body = json_pack("{s:s}", "member", h->member)))
        return -1;
    if (rejoin && json_object_set_new(body, "rejoin", json_true()) < 0) {
        json_decref(body);
        return -1;
    }
    int st = hm_request(h->client, "POST", path, body, &resp, &err);
    json_decref(body);
    json_decref(resp);
    if (st == 404 || st == 405)
        h->no_members = true; /* an older bbmgrd: as before, no members */
    if (rejoin && st == 400)
        st = 409; /* a bbmgrd without rejoin: the node left it, as before */
    return st;
}

/* Finish phase pid, or, as member (not ""), leave it with the node's bytes. */
static int finish_phase(harmonia_t *h, uint64_t pid, double bytes, const char *member,
                        hm_error_t *err)
{
    char path[128];
    json_t *body = NULL, *resp = NULL;
    snprintf(path, sizeof(path), "/v1/phases/%ju/finish", (uintmax_t)pid);
    if ((bytes >= 0 || *member) && !(body = json_object())) {
        errno = ENOMEM;
        return -1;
    }
    if ((bytes >= 0 && json_object_set_new(body, "bytes", json_integer((json_int_t)bytes)) < 0)
        || (*member && json_object_set_new(body, "member", json_string(member)) < 0)) {
        json_decref(body);
        errno = ENOMEM;
        return -1;
    }
    int st = hm_request(h->client, "POST", path, body, &resp, err);
    json_decref(body);
    json_decref(resp);
    return st;
}

/* Whether an error reply names that field. */
static bool error_field_is(json_t *resp, const char *field)
{
    const char *f = json_string_value(json_object_get(json_object_get(resp, "error"), "field"));
    return f && !strcmp(f, field);
}

static void refused(harmonia_t *h, int st, json_t *resp)
{
    char ebuf[300];
    say(h, &h->told_refused,
        "bbmgrd at %s refused the phase of job %s (HTTP %d%s%s); "
        "I/O phases proceed ungated",
        h->url, h->jobid, st, *hm_error_text(resp, ebuf, sizeof(ebuf)) ? ": " : "", ebuf);
}

/* Leave a phase this process gave up on (closed under it, or max wait passed). */
static void drop_phase(harmonia_t *h, acq_t *a, bool cancel)
{
    hm_error_t err;
    bool last = true;
    double bytes;
    char member[64];
    int fd = -1;
    snprintf(member, sizeof(member), "%s", a->ph.owner && a->ph.member ? h->member : "");
    if (a->ph.counted)
        fd = coord_leave(h, a->ph.pid, 0, &last, &bytes, member);
    if (cancel && (a->ph.counted ? last : a->ph.owner))
        finish_phase(h, a->ph.pid, 0, member, &err);
    if (fd >= 0)
        close(fd);
    a->ph.pid = 0;
    a->ph.owner = a->ph.counted = a->ph.member = a->ph.outside = false;
}

/*
 * Get the phase granted.  Runs without the lock (the handle is BUSY).  Returns
 * ACQ_GRANTED (a->phase set), ACQ_WAITING (non-blocking, a->ph.pid queued) or
 * ACQ_UNGATED (manager unreachable or refusing, or max wait passed).
 */
static int acquire(harmonia_t *h, acq_t *a)
{
    double now = hu_mono(), last_ok = now;
    int conflicts = 0;
    hm_error_t err = { "" };
    json_t *resp = NULL;
    bool was_degraded = a->degraded;

    if (!h->client)
        return ACQ_UNGATED;
    if (was_degraded && now - h->last_attempt < h->retry_interval)
        return ACQ_UNGATED;
    h->last_attempt = now;
    if (a->rejoin && a->ph.pid == 0 && h->left_pid && !h->no_members && h->member[0]) {
        /* the phase the node left, first: one join (and the phase's view below)
         * rather than a request refused with 409, the job's view, then the join */
        a->ph.pid = h->left_pid;
        a->ph.owner = false;
        if (coord_join(h, a) > 0)
            a->ph.counted = true;
        else
            a->ph.pid = 0; /* closed, refused or superseded: as any phase */
        a->ph.outside = false;
    }
    for (;;) {
        int st;
        double left = h->max_wait > 0 ? a->ph.t0 + h->max_wait - hu_mono() : POLL_CHUNK;
        double chunk = !a->block ? 0 : left < POLL_CHUNK ? left : POLL_CHUNK;

        json_decref(resp);
        resp = NULL;
        if (a->block && h->max_wait > 0 && left <= 0) {
            say(h, &h->told_max_wait,
                "phase of job %s not granted after %.0f s "
                "(HARMONIA_MAX_WAIT); it proceeds ungated",
                h->jobid, h->max_wait);
            if (a->ph.pid)
                drop_phase(h, a, true);
            a->degraded = false;
            return ACQ_UNGATED;
        }
        if (a->ph.pid == 0) {
            st = post_phase(h, a, chunk, &resp, &err);
            if (st < 0)
                goto unreachable;
            last_ok = hu_mono();
            a->degraded = false;
            if (st == 200 || st == 201) {
                a->ph.pid = (uint64_t)json_integer_value(json_object_get(resp, "id"));
                a->ph.owner = true;
                a->ph.counted = coord_join(h, a) > 0;
            } else if (st == 400 && a->ph.member && error_field_is(resp, "member")) {
                h->no_members = true; /* an older bbmgrd: as before, no members */
                continue;
            } else if (st == 409 && ++conflicts <= 100) {
                uint64_t pid;
                st = get_open_phase(h, &pid, &err);
                if (st < 0)
                    goto unreachable;
                if (st != 200) {
                    refused(h, st, NULL);
                    goto ungated;
                }
                if (pid == 0)
                    continue; /* closed meanwhile: ask again */
                a->ph.pid = pid;
                a->ph.owner = false;
                /* never the phase this process left: its next phase is the next
                 * (unless the interposer's detector ended it too soon) */
                if (pid == h->left_pid && !h->no_members && !a->rejoin)
                    a->ph.outside = true;
                else
                    a->ph.counted = coord_join(h, a) > 0;
                /* count first, then look: a phase closed before we were counted
                 * shows as closed below, and we ask again; a phase the node left
                 * already is waited for until it closes */
                json_decref(resp); /* the 409 body */
                resp = NULL;
                st = get_phase(h, pid, a->ph.outside ? chunk : 0, a->ph.outside, &resp, &err);
                if (st < 0)
                    goto unreachable;
            } else if (st == 503) {
                goto busy;
            } else {
                refused(h, st, resp);
                goto ungated;
            }
        } else {
            st = get_phase(h, a->ph.pid, chunk, a->ph.outside, &resp, &err);
            if (st < 0)
                goto unreachable;
            last_ok = hu_mono();
            a->degraded = false;
            if (st == 503)
                goto busy;
            if (st == 404) {
                drop_phase(h, a, false);
                continue;
            }
            if (st != 200) {
                refused(h, st, resp);
                goto ungated;
            }
        }
        const char *s = phase_state(resp);
        if (!strcmp(s, "granted") && !a->ph.outside) {
            a->phase = resp;
            return ACQ_GRANTED;
        }
        if (state_closed(s)) {
            drop_phase(h, a, false);
            continue;
        }
        if (!a->block) {
            json_decref(resp);
            return ACQ_WAITING;
        }
        if (a->ph.outside)
            sleep_s(RETRY_SLEEP); /* the long poll came back open: not at once */
        continue;
    busy:
        /* bbmgrd stopping or munged down at its end: as unreachable */
        snprintf(err.text, sizeof(err.text), "HTTP 503");
    unreachable:
        if (was_degraded || hu_mono() - last_ok >= h->fallback_wait) {
            tell_unreachable(h, &err);
            a->degraded = true;
            goto ungated;
        }
        sleep_s(RETRY_SLEEP);
    }
ungated:
    json_decref(resp);
    return ACQ_UNGATED;
}

/* ------------------------------------------------------------------ phases */
static void fill_ungated(harmonia_grant_t *g, double wall0, double t0)
{
    memset(g, 0, sizeof(*g));
    g->requested = wall0;
    g->start = wall();
    g->wait = hu_mono() - t0;
}

static int begin(harmonia_t *h, uint64_t volume, harmonia_dir_t dir, harmonia_grant_t *g,
                 bool block, bool rejoin, bool hmi)
{
    harmonia_grant_t dummy;
    acq_t a = { 0 };
    double t0 = hu_mono(), wall0 = wall();
    int rc;

    if (!h || (unsigned)dir > HARMONIA_READWRITE) {
        errno = EINVAL;
        return -1;
    }
    if (!g)
        g = &dummy;
    if (h->off) {
        fill_ungated(g, wall0, t0);
        return 0;
    }
    pthread_mutex_lock(&h->lock);
    while (BUSY_STATE(h))
        pthread_cond_wait(&h->cond, &h->lock);
    if (h->st == ST_OPEN) {
        h->users++;
        *g = h->grant;
        g->joined = 1;
        g->wait = hu_mono() - t0;
        pthread_mutex_unlock(&h->lock);
        return 0;
    }
    if (h->st == ST_PENDING)
        a.ph = h->ph;
    else
        a.ph = (struct phase_ref){ .volume = volume, .dir = dir, .t0 = t0, .wall0 = wall0 };
    a.block = block;
    a.rejoin = rejoin;
    a.hmi = hmi;
    a.degraded = h->degraded;
    h->st = ST_BUSY;
    pthread_mutex_unlock(&h->lock);

    rc = acquire(h, &a);

    pthread_mutex_lock(&h->lock);
    h->degraded = a.degraded;
    h->ph = a.ph;
    if (rc == ACQ_WAITING) {
        h->st = ST_PENDING;
        fill_ungated(g, a.ph.wall0, t0);
    } else {
        h->st = ST_OPEN;
        h->users = 1;
        h->bytes_sum = 0;
        h->bytes_unknown = false;
        h->paced = 0;
        fill_ungated(&h->grant, a.ph.wall0, a.ph.t0);
        h->hmi_phase = hmi;
        h->members_in = 0;
        if (rc == ACQ_GRANTED) {
            grant_from_phase(h, a.phase, &h->grant);
            h->grant.joined = !a.ph.owner;
            json_decref(a.phase);
            if (hmi && h->grant.bandwidth > 0)
                h->grant.rate = h->grant.bandwidth / hmi_sharers(h, true);
        }
        h->grant.wait = hu_mono() - a.ph.t0;
        h->last_refresh = hu_mono();
        hm_tb_init(&h->tb, h->grant.rate, hm_tb_burst_for(h->grant.rate), hu_mono());
        *g = h->grant;
        g->wait = hu_mono() - t0;
        if (hmi && g->gated && g->rate > 0)
            h->hmi_last_rate = g->rate;
        else if (hmi && g->gated && !h->degraded && h->job_nodes > 1 && h->hmi_last_rate > 0)
            g->rate = h->hmi_last_rate; /* as hmi_rate() */
    }
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
    return rc == ACQ_WAITING ? HARMONIA_WAIT : 0;
}

int harmonia_phase_begin(harmonia_t *h, uint64_t volume, harmonia_dir_t dir,
                         harmonia_grant_t *grant)
{
    return begin(h, volume, dir, grant, true, false, false);
}

int harmonia_phase_try_begin(harmonia_t *h, uint64_t volume, harmonia_dir_t dir,
                             harmonia_grant_t *grant)
{
    return begin(h, volume, dir, grant, false, false, false);
}

int hmi_begin(harmonia_t *h, uint64_t volume, harmonia_dir_t dir, harmonia_grant_t *grant,
              int rejoin)
{
    return begin(h, volume, dir, grant, true, rejoin != 0, true);
}

/* Report the end of phase pid to bbmgrd (as the node's last process in it, with
 * the bytes of all: the node leaves it, or finishes it when the node is no
 * member).  Runs without the lock, on the BUSY/CLOSING thread. */
static void close_phase(harmonia_t *h, const struct close_req *r, bool *degraded)
{
    hm_error_t err = { "" };
    double total = r->total;
    bool last = r->owner;
    char member[64];
    int fd = -1;

    *degraded = r->degraded;
    if (!r->pid)
        return;
    snprintf(member, sizeof(member), "%s", r->owner && r->member ? h->member : "");
    if (r->counted)
        fd = coord_leave(h, r->pid, total, &last, &total, member);
    /* a phase bbmgrd granted is reported ended even when a refresh of its grant
     * failed since (the handle degraded: bbmgrd slow or gone): one attempt, or
     * bbmgrd would keep its share until limits.grant_timeout; an answer means
     * bbmgrd is back */
    if (last && h->client) {
        int st = finish_phase(h, r->pid, total, member, &err);
        if (st < 0) {
            tell_unreachable(h, &err);
            *degraded = true;
            h->last_attempt = hu_mono();
        } else
            *degraded = false;
    }
    if (fd >= 0)
        close(fd);
}

/* Back to NONE after a close (lock held). */
static void closed(harmonia_t *h, bool degraded)
{
    h->degraded = degraded;
    h->st = ST_NONE;
    if (h->ph.pid && !h->ph.outside)
        h->left_pid = h->ph.pid;
    h->ph.pid = 0;
    h->ph.owner = h->ph.counted = h->ph.member = h->ph.outside = false;
    h->users = 0;
    memset(&h->grant, 0, sizeof(h->grant));
    pthread_cond_broadcast(&h->cond);
}

/* The closer thread: reports queued phase ends, then prepares the credential of
 * the next phase request so that harmonia_phase_begin() does not wait for munged. */
static void *closer_main(void *arg)
{
    harmonia_t *h = arg;
    char path[128];

    snprintf(path, sizeof(path), "/v1/jobs/%s/phases", h->jobid);
    pthread_mutex_lock(&h->lock);
    for (;;) {
        while (!h->close_queued && !h->closer_stop)
            pthread_cond_wait(&h->cond, &h->lock);
        if (!h->close_queued)
            break;
        struct close_req r = h->cq;
        bool degraded;
        h->close_queued = false;
        pthread_mutex_unlock(&h->lock);
        close_phase(h, &r, &degraded);
        if (!degraded && h->client)
            (void)hm_client_prepare(h->client, "POST", path);
        pthread_mutex_lock(&h->lock);
        closed(h, degraded);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* Start the closer thread once (lock held); false: report synchronously. */
static bool closer_ready(harmonia_t *h)
{
    if (h->sync_end)
        return false;
    if (h->closer_up)
        return h->closer_proc == getpid();
    if (pthread_create(&h->closer, NULL, closer_main, h) != 0) {
        h->sync_end = true;
        return false;
    }
    h->closer_up = true;
    h->closer_proc = getpid();
    return true;
}

/* The start of a call on a handle: -1 (errno EINVAL) without one, 0 when
 * libharmonia is off (nothing to do), else 1 with h->lock held. */
static int enter(harmonia_t *h)
{
    if (!h) {
        errno = EINVAL;
        return -1;
    }
    if (h->off)
        return 0;
    pthread_mutex_lock(&h->lock);
    return 1;
}

int harmonia_phase_end(harmonia_t *h, uint64_t bytes)
{
    bool cancel, degraded;
    struct close_req r;

    int in = enter(h);
    if (in <= 0)
        return in;
    while (BUSY_STATE(h))
        pthread_cond_wait(&h->cond, &h->lock);
    if (h->st == ST_NONE || (h->st == ST_OPEN && h->users < 1)) {
        pthread_mutex_unlock(&h->lock);
        errno = EINVAL;
        return -1;
    }
    cancel = h->st == ST_PENDING;
    if (!cancel) {
        if (bytes == HARMONIA_BYTES_VOLUME)
            h->bytes_sum += (double)h->ph.volume;
        else
            h->bytes_sum += (double)bytes;
        if (--h->users > 0) {
            pthread_mutex_unlock(&h->lock);
            return 0;
        }
    }
    r = (struct close_req){ .pid = h->ph.pid,
                            .counted = h->ph.counted,
                            .owner = h->ph.owner,
                            .member = h->ph.member,
                            .degraded = h->degraded,
                            .total = cancel ? 0 : h->bytes_sum };
    if (r.pid && !cancel && closer_ready(h)) {
        /* the closer reports it; the next begin or end waits for that */
        h->st = ST_CLOSING;
        h->cq = r;
        h->close_queued = true;
        pthread_cond_broadcast(&h->cond);
        pthread_mutex_unlock(&h->lock);
        return 0;
    }
    h->st = ST_BUSY;
    pthread_mutex_unlock(&h->lock);

    close_phase(h, &r, &degraded);

    pthread_mutex_lock(&h->lock);
    closed(h, degraded);
    pthread_mutex_unlock(&h->lock);
    return 0;
}

/* ------------------------------------------------------------------ pacing */
/* Re-read the phase's grant (its bandwidth follows the policy's decisions); with
 * one process per grant, report the bytes moved so far at the same time. */
static void refresh(harmonia_t *h)
{
    hm_error_t err = { "" };
    json_t *resp = NULL, *body = NULL;
    char path[128];
    int st;

    if (!h->client || !h->ph.pid || h->degraded)
        return;
    if (h->ntasks == 1 && h->ph.owner && h->ph.counted) {
        snprintf(path, sizeof(path), "/v1/phases/%ju/progress", (uintmax_t)h->ph.pid);
        body = json_pack("{s:I}", "bytes", (json_int_t)h->paced);
        st = hm_request(h->client, "POST", path, body, &resp, &err);
        json_decref(body);
    } else
        st = get_phase(h, h->ph.pid, 0, false, &resp, &err);
    if (st < 0) {
        tell_unreachable(h, &err);
        h->degraded = true;
        h->last_attempt = hu_mono();
        h->grant.rate = 0; /* the manager is gone: ungated */
        hm_tb_set_rate(&h->tb, 0, 0, hu_mono());
    } else if (st == 200 && !strcmp(phase_state(resp), "granted")) {
        harmonia_grant_t g = h->grant;
        grant_from_phase(h, resp, &g);
        if (h->hmi_phase && g.bandwidth > 0)
            g.rate = g.bandwidth / hmi_sharers(h, false);
        if (g.rate != h->grant.rate)
            hm_tb_set_rate(&h->tb, g.rate, hm_tb_burst_for(g.rate), hu_mono());
        h->grant.bandwidth = g.bandwidth;
        h->grant.share = g.share;
        h->grant.rate = g.rate;
    }
    json_decref(resp);
}

double harmonia_pace(harmonia_t *h, size_t bytes)
{
    double d, now;
    int in = enter(h);
    if (in <= 0)
        return in;
    if (h->st != ST_OPEN || !h->grant.gated) {
        pthread_mutex_unlock(&h->lock);
        return 0;
    }
    now = hu_mono();
    if (now - h->last_refresh >= REFRESH_INTERVAL) {
        h->last_refresh = now;
        refresh(h);
        now = hu_mono();
    }
    h->paced += (double)bytes;
    d = hm_tb_take(&h->tb, (double)bytes, now);
    pthread_mutex_unlock(&h->lock);
    sleep_s(d);
    return d;
}

/* For the interposer (libharmonia-preload.so; internal, not exported): the
 * granted per-process rate of the open phase (0: none, ungated), refreshed from
 * bbmgrd when due with 'moved' bytes moved by the process in the phase so far;
 * the interposer paces with its own bucket. */
double hmi_rate(harmonia_t *h, double moved)
{
    double r = 0;
    if (!h || h->off)
        return 0;
    pthread_mutex_lock(&h->lock);
    if (h->st == ST_OPEN && h->grant.gated) {
        double now = hu_mono();
        h->paced = moved;
        if (now - h->last_refresh >= REFRESH_INTERVAL) {
            h->last_refresh = now;
            refresh(h);
        }
        r = h->grant.rate;
        /* a job over several nodes: a granted phase bbmgrd shows with no
         * bandwidth while this node still moves bytes (its model counts the
         * phase's volume moved by the nodes' progress so far): paced at the last
         * rate the node was granted, in this phase or its previous one, rather
         * than unpaced; unpaced before any grant with a rate, and ungated as
         * before when bbmgrd is away (doc/interposer.md) */
        if (r > 0)
            h->hmi_last_rate = r;
        else if (!h->degraded && h->ph.pid && h->job_nodes > 1 && h->hmi_last_rate > 0)
            r = h->hmi_last_rate;
    }
    pthread_mutex_unlock(&h->lock);
    return r;
}

/* For the interposer: the job's iohints (w_iter s, io_volume bytes; 0 when not
 * given) from GET /v1/jobs/{id}, asked while a gated phase is open (the client is
 * then used under the lock only).  0, or -1 when not known. */
int hmi_hints(harmonia_t *h, double *w_iter, double *volume)
{
    hm_error_t err = { "" };
    json_t *resp = NULL, *hints;
    char path[128];
    int rc = -1;

    *w_iter = *volume = 0;
    if (!h || h->off)
        return -1;
    pthread_mutex_lock(&h->lock);
    if (h->st == ST_OPEN && h->grant.gated && h->client && !h->degraded) {
        snprintf(path, sizeof(path), "/v1/jobs/%s", h->jobid);
        if (hm_request(h->client, "GET", path, NULL, &resp, &err) == 200
            && json_is_object(hints = json_object_get(resp, "hints"))) {
            *w_iter = json_number_value(json_object_get(hints, "w_iter"));
            *volume = json_number_value(json_object_get(hints, "io_volume"));
            rc = 0;
        }
    }
    pthread_mutex_unlock(&h->lock);
    json_decref(resp);
    return rc;
}

static size_t chunk_for(harmonia_t *h)
{
    double rate = 0;
    if (h && !h->off) {
        pthread_mutex_lock(&h->lock);
        if (h->st == ST_OPEN && h->grant.gated)
            rate = h->grant.rate;
        pthread_mutex_unlock(&h->lock);
    }
    if (rate <= 0)
        return (size_t)64 << 20;
    double c = rate * 0.05;
    if (c < (1 << 20))
        c = 1 << 20;
    if (c > (double)(16 << 20))
        c = 16 << 20;
    return (size_t)c & ~(size_t)4095;
}

/* Moves n bytes between fd and buf (write() when out, else read()), paced in chunks:
 * the bytes moved (short at end of file), or -1 when an error comes first. */
static ssize_t paced_io(harmonia_t *h, int fd, char *p, size_t n, bool out)
{
    size_t done = 0, chunk = chunk_for(h);
    while (done < n) {
        size_t len = n - done < chunk ? n - done : chunk;
        if (h)
            harmonia_pace(h, len);
        size_t moved = 0;
        while (moved < len) {
            ssize_t r = out ? write(fd, p + done + moved, len - moved)
                            : read(fd, p + done + moved, len - moved);
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                return done + moved > 0 ? (ssize_t)(done + moved) : -1;
            }
            if (r == 0)
                return (ssize_t)(done + moved);
            moved += (size_t)r;
        }
        done += len;
    }
    return (ssize_t)done;
}

ssize_t harmonia_write(harmonia_t *h, int fd, const void *buf, size_t n)
{
    return paced_io(h, fd, (char *)buf, n, true);
}

ssize_t harmonia_read(harmonia_t *h, int fd, void *buf, size_t n)
{
    return paced_io(h, fd, buf, n, false);
}

/* ------------------------------------------------------------------ finalize */
void harmonia_finalize(harmonia_t *h)
{
    if (!h)
        return;
    int saved = errno;
    if (!h->off && (h->st == ST_OPEN || h->st == ST_PENDING)) {
        pthread_mutex_lock(&h->lock);
        if (h->st == ST_OPEN && h->users > 1)
            h->users = 1;
        pthread_mutex_unlock(&h->lock);
        harmonia_phase_end(h, HARMONIA_BYTES_VOLUME);
    }
    if (h->closer_up) {
        pthread_mutex_lock(&h->lock);
        while (h->st == ST_CLOSING && h->closer_proc == getpid())
            pthread_cond_wait(&h->cond, &h->lock);
        h->closer_stop = true;
        pthread_cond_broadcast(&h->cond);
        pthread_mutex_unlock(&h->lock);
        if (h->closer_proc == getpid())
            pthread_join(h->closer, NULL);
    }
    hm_client_destroy(h->client);
    free(h->jobid);
    free(h->url);
    free(h->coord_path);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->msg_lock);
    free(h);
    errno = saved;
}
