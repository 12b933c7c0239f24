/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * agent.c — bbnoded's work (see agent.h, doc/bbnoded.md).
 *
 * The mount belongs to the agent: it holds the job directories <mount>/<jobid>
 * (the job's uid/gid, mode 0700), the persistent buffers <mount>/persistent/<name>
 * and the spare directories <mount>/.harmonia-spare/N; anything else there that
 * looks like a buffer directory and is not in the set bbmgrd sent is an orphan and
 * is removed (by the mover, by descriptors).  Every path is opened relative to the
 * mount's descriptor without following symbolic links; directories, spares, the
 * trash and teardowns are bufdir.c's, shared with bbmgrd's embedded mode.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>
#include <jansson.h>
#include <munge.h>

#include "agent.h"
#include "bufdir.h"
#include "hmap.h"
#include "log.h"
#include "mover.h"
#include "nodeproto.h"
#include "quota.h"
#include "util.h"

#define SPARE_IDLE 1.0 /* seconds without a new directory before making spares */
#define SPARE_PER_STEP 8
#define REPLY_MAX (64u << 20) /* largest reply read from bbmgrd */
#define REMOVING_MAX 256
#define AGENT_PORT_LO 600 /* local ports 600-1023 (privileged) */
/* Entries the walk measuring the buffer directories looks at per agent_step()
 * (bufdir_usage_step()): a tree of millions of files never stalls the agent. */
#define AGENT_USAGE_STEP 16384
#define AGENT_BUDGET_MIN 128 /* bytes of results in a report, at least */

typedef struct {
    int64_t last; /* bytes_done last seen */
    bool out;     /* stage-out: reads the device */
} prog_t;

typedef struct {
    char name[256];
    bool persistent;
    double at;
} removing_t;

/* A directory of bbmgrd's set: which incarnation (np_dir_t.inc) it is, on disk. */
typedef struct {
    char key[300]; /* its key in agent.made */
    double inc;
    dev_t dev;
    ino_t ino;
    uint64_t used; /* what its last complete walk measured */
    bool pending;  /* used is to be reported ("usage") */
} made_t;

/* A kept directory by identity (<mount>/.harmonia-kept). */
typedef struct {
    dev_t dev;
    ino_t ino;
} kid_t;

#define KEPT_FILE ".harmonia-kept"
#define KEPT_MAX 100000
#define AGENT_KEPT_REPORT 64 /* identities a report says at most (NODES_KEPT_MAX) */

struct agent {
    const cfg_t *cfg;
    char node[64];
    char *mount;
    int mfd;
    int lockfd; /* <mount>/.harmonia-agent.lock, flock()ed */
    char url[1024];
    char path[128]; /* POST /v1/agents/<node>: the credential's payload */
    char id[33];    /* this process */
    mover_t *m;
    np_table_t *tab;
    CURL *curl;
    munge_ctx_t munge; /* NULL: auth.type none */
    char session[64];  /* token of the connection's session ("": none) */
    char dirs_gen[64];
    double interval;
    hmap_t *prog;            /* tid -> prog_t */
    uint64_t rbytes, wbytes; /* bytes read/written by transfers since the last status */
    double last_status;
    uint64_t errors;
    long last_http; /* to log a change of bbmgrd's answer once */
    size_t budget;  /* bytes of results a report may carry: halved at each
                                   413 of bbmgrd (its limits.max_body may be smaller
                                   than ours), grown back after each accepted report */
    int spares;
    unsigned spare_top;
    bool spare_off;
    quota_mount_t quota; /* what the mount enforces (capacity.enforce) */
    double spare_idle_from;
    removing_t removing[REMOVING_MAX];
    int nremoving;
    hmap_t *made; /* "j:<name>"/"p:<name>" -> made_t: the directories of
                                   the set and the incarnation each was made for */
    kid_t *kept;  /* identities of the directories bbmgrd lists with keep */
    size_t nkept;
    json_t *kept_report; /* directories listed with keep without their identity,
                                   as found at their names: "kept" of the next report */
    char *diskstats;     /* block device counters (/proc/diskstats) */
    unsigned dev_major, dev_minor;
    bool dev_seen; /* rsect/wsect hold the previous reading */
    unsigned long long rsect, wsect;
    /* the walk measuring what the directories of the set hold (usage_step()): the
     * keys of agent.made to walk, the one walked */
    bufdir_usage_t *uw;
    char **uw_list;
    size_t uw_n, uw_i;
    bool usage_off; /* bbmgrd refused the "usage" key (older than it) */
};

static void usage_forget(agent_t *a);

/* ------------------------------------------------------------------ kept data
 * A directory bbmgrd lists with keep holds data that may exist nowhere else (a
 * stage-out from it could not be made durable).  Its device and inode are recorded
 * in <mount>/.harmonia-kept (root's, 0600), so that it is found by identity, never
 * by name, across restarts of the agent: moved to the trash when a new buffer
 * takes its name, it stays there, and the sweep of the trash at start leaves it
 * alone.  bbmgrd lists it with that identity once the agent reported it (kept_note,
 * "kept" of a report); it goes when bbmgrd no longer lists it (its release): at its
 * name as an orphan, in the trash by kept_release(). */
static bool kept_has(const agent_t *a, dev_t dev, ino_t ino)
{
    for (size_t i = 0; i < a->nkept; i++)
        if (a->kept[i].dev == dev && a->kept[i].ino == ino)
            return true;
    return false;
}

static void kept_save(agent_t *a)
{
    static const char tmp[] = KEPT_FILE ".new";
    int fd = openat(a->mfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    bool ok = f != NULL;
    for (size_t i = 0; ok && i < a->nkept; i++)
        ok = fprintf(f, "%ju %ju\n", (uintmax_t)a->kept[i].dev, (uintmax_t)a->kept[i].ino) > 0;
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    if (f)
        fclose(f);
    else if (fd >= 0)
        close(fd);
    if (!ok || renameat(a->mfd, tmp, a->mfd, KEPT_FILE) < 0) {
        bl_error("%s/" KEPT_FILE ": %s (kept directories are not recorded)", a->mount,
                 strerror(errno));
        a->errors++;
    }
}

static void kept_load(agent_t *a)
{
    int fd = openat(a->mfd, KEPT_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    FILE *f;
    uintmax_t dev, ino;
    if (fd < 0)
        return;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)
        || !(f = fdopen(fd, "r"))) {
        bl_warning("%s/" KEPT_FILE ": not a file of uid %u with mode 0600: not read", a->mount,
                   (unsigned)geteuid());
        close(fd);
        return;
    }
    while (a->nkept < KEPT_MAX && fscanf(f, "%ju %ju", &dev, &ino) == 2) {
        kid_t *v = realloc(a->kept, (a->nkept + 1) * sizeof(*v));
        if (!v)
            break;
        a->kept = v;
        v[a->nkept++] = (kid_t){ (dev_t)dev, (ino_t)ino };
    }
    fclose(f);
}

static void kept_add(agent_t *a, const struct stat *st)
{
    if (kept_has(a, st->st_dev, st->st_ino) || a->nkept >= KEPT_MAX)
        return;
    kid_t *v = realloc(a->kept, (a->nkept + 1) * sizeof(*v));
    if (!v)
        return;
    a->kept = v;
    v[a->nkept++] = (kid_t){ st->st_dev, st->st_ino };
    kept_save(a);
}

static void kept_del(agent_t *a, const struct stat *st)
{
    for (size_t i = 0; i < a->nkept; i++)
        if (a->kept[i].dev == st->st_dev && a->kept[i].ino == st->st_ino) {
            a->kept[i] = a->kept[--a->nkept];
            kept_save(a);
            return;
        }
}

/* What an earlier process of this agent left in the trash (its removal cut by a
 * stop): removed now, as a teardown is; kept data (by identity) is left. */
typedef struct {
    agent_t *a;
    const char *parent;
} sweep_t;

static int sweep_one(int tfd, const char *name, const struct stat *st, void *arg)
{
    sweep_t *w = arg;
    char path[1400];
    (void)tfd;
    snprintf(path, sizeof(path), "%s/" MOVER_TRASH "/%s", w->parent, name);
    if (kept_has(w->a, st->st_dev, st->st_ino)) {
        bl_warning("%s: the data of a held buffer, kept (moved aside when its name was "
                   "taken; removed when bbmgrd releases it)",
                   path);
        return 0;
    }
    bl_info("%s: left in the trash by an earlier run: removed", path);
    if (mover_rmtree(w->a->m, NULL, path, NULL, st->st_uid, st->st_gid, st->st_dev, st->st_ino) < 0)
        bl_warning("removal of %s: %s", path, strerror(errno));
    return 0;
}

static void trash_sweep(agent_t *a, bool persistent)
{
    char parent[1200];
    int pfd = persistent
                  ? openat(a->mfd, "persistent", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                  : dup(a->mfd);
    sweep_t w = { .a = a, .parent = parent };
    if (pfd < 0)
        return;
    snprintf(parent, sizeof(parent), "%s%s", a->mount, persistent ? "/persistent" : "");
    bufdir_trash_each(pfd, parent, sweep_one, &w);
    close(pfd);
}

/* ------------------------------------------------------------------ create */
static int default_url(const cfg_t *cfg, char *buf, size_t len)
{
    if (*cfg->agents_manager)
        return snprintf(buf, len, "%s", cfg->agents_manager) < (int)len ? 0 : -1;
    const char *h = cfg->listen_address;
    if (!*h)
        return -1;
    return snprintf(buf, len, strchr(h, ':') ? "http://[%s]:%ld" : "http://%s:%ld", h,
                    cfg->listen_port)
                   < (int)len
               ? 0
               : -1;
}

agent_t *agent_create(const agent_opts_t *o, hu_error_t *err)
{
    agent_t *a = calloc(1, sizeof(*a));
    const cfg_nodeset_t *ns = NULL;
    char base[900];
    struct stat st;

    if (!a) {
        hu_errprintf(err, "out of memory");
        return NULL;
    }
    a->mfd = a->lockfd = -1;
    a->cfg = o->cfg;
    a->interval = o->cfg->agents_interval;
    snprintf(a->node, sizeof(a->node), "%s", o->node);
    for (int s = 0; s < o->cfg->nnodes && !ns; s++)
        for (int i = 0; i < o->cfg->nodes[s].names.n && !ns; i++)
            if (!strcmp(o->cfg->nodes[s].names.v[i], o->node)) {
                ns = &o->cfg->nodes[s];
                a->mount = cfg_node_mount(ns->mount, o->node);
            }
    if (!ns) {
        hu_errprintf(err, "node %s is not in the configuration (%s, section nodes)", o->node,
                     o->cfg->path);
        goto fail;
    }
    if (!ns->agent) {
        hu_errprintf(err,
                     "node %s is not served by an agent: set agent: true in its node "
                     "set (%s)",
                     o->node, o->cfg->path);
        goto fail;
    }
    if (!a->mount) {
        hu_errprintf(err, "out of memory");
        goto fail;
    }
    a->mfd = open(a->mount, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (a->mfd < 0 || fstat(a->mfd, &st) < 0) {
        hu_errprintf(err, "mount %s of node %s: %s", a->mount, o->node, strerror(errno));
        goto fail;
    }
    /* one agent per mount: a second one would run the same transfers */
    a->lockfd =
        openat(a->mfd, ".harmonia-agent.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (a->lockfd < 0 || flock(a->lockfd, LOCK_EX | LOCK_NB) < 0) {
        hu_errprintf(err, "mount %s of node %s: %s", a->mount, o->node,
                     errno == EWOULDBLOCK ? "another bbnoded serves it" : strerror(errno));
        goto fail;
    }
    a->dev_major = major(st.st_dev);
    a->dev_minor = minor(st.st_dev);
    if (!(a->diskstats = strdup(o->diskstats ? o->diskstats : "/proc/diskstats"))) {
        hu_errprintf(err, "out of memory");
        goto fail;
    }
    if (st.st_uid != geteuid() || (st.st_mode & 022)) {
        hu_errprintf(err,
                     "mount %s of node %s must belong to uid %u and not be writable by "
                     "others (it is uid %u, mode %04o)",
                     a->mount, o->node, (unsigned)geteuid(), (unsigned)st.st_uid,
                     (unsigned)(st.st_mode & 07777));
        goto fail;
    }
    if (o->url) {
        snprintf(base, sizeof(base), "%s", o->url);
    } else if (default_url(o->cfg, base, sizeof(base)) < 0) {
        hu_errprintf(err, "no address of bbmgrd: set agents.manager (or listen.address) or "
                          "give --manager");
        goto fail;
    }
    while (*base && base[strlen(base) - 1] == '/')
        base[strlen(base) - 1] = '\0';
    snprintf(a->path, sizeof(a->path), "POST /v1/agents/%s", o->node);
    snprintf(a->url, sizeof(a->url), "%s/v1/agents/%s", base, o->node);
    unsigned char rnd[16];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
        hu_errprintf(err, "getrandom: %s", strerror(errno));
        goto fail;
    }
    for (int i = 0; i < 16; i++)
        snprintf(a->id + 2 * i, 3, "%02x", rnd[i]);
    if (strcmp(o->cfg->auth_type, "none")) {
        if (!(a->munge = munge_ctx_create())) {
            hu_errprintf(err, "munge: out of memory");
            goto fail;
        }
        if (*o->cfg->auth_munge_socket
            && munge_ctx_set(a->munge, MUNGE_OPT_SOCKET, o->cfg->auth_munge_socket)
                   != EMUNGE_SUCCESS) {
            hu_errprintf(err, "munge: bad socket %s", o->cfg->auth_munge_socket);
            goto fail;
        }
    }
    if (!(a->tab = np_table_create()) || !(a->prog = hmap_create()) || !(a->made = hmap_create())
        || !(a->curl = curl_easy_init())) {
        hu_errprintf(err, "out of memory");
        goto fail;
    }
    if (!(a->m = mover_create(o->cfg, err)))
        goto fail;
    kept_load(a);
    trash_sweep(a, false);
    trash_sweep(a, true);
    a->last_status = hu_mono();
    a->spare_idle_from = hu_mono() + SPARE_IDLE;
    bl_info("bbnoded %s: mount %s, bbmgrd at %s, agent %s", a->node, a->mount, base, a->id);
    return a;
fail:
    agent_destroy(a);
    return NULL;
}

void agent_destroy(agent_t *a)
{
    void *v;
    if (!a)
        return;
    mover_destroy(a->m);
    np_table_destroy(a->tab);
    if (a->prog) {
        for (void *it = hmap_first(a->prog, &v); it; it = hmap_next(a->prog, it, &v))
            free(v);
        hmap_destroy(a->prog);
    }
    if (a->made) {
        for (void *it = hmap_first(a->made, &v); it; it = hmap_next(a->made, it, &v))
            free(v);
        hmap_destroy(a->made);
    }
    if (a->curl)
        curl_easy_cleanup(a->curl);
    if (a->munge)
        munge_ctx_destroy(a->munge);
    if (a->lockfd >= 0)
        close(a->lockfd);
    if (a->mfd >= 0)
        close(a->mfd);
    usage_forget(a);
    free(a->mount);
    free(a->kept);
    json_decref(a->kept_report);
    free(a->diskstats);
    free(a);
}

double agent_interval(const agent_t *a)
{
    return a->interval;
}

/* ------------------------------------------------------------------ results */
static void on_result(uint64_t tid, const char *job, mover_state_t st, int64_t done, int64_t total,
                      const char *msg, void *arg)
{
    agent_t *a = arg;
    prog_t *p = hmap_iget(a->prog, tid);
    (void)job;
    if (p && done > p->last) {
        if (p->out)
            a->rbytes += (uint64_t)(done - p->last);
        else
            a->wbytes += (uint64_t)(done - p->last);
        p->last = done;
    }
    if (st != MV_RUNNING && p)
        free(hmap_idel(a->prog, tid));
    if (st == MV_FAILED || st == MV_NOT_DURABLE)
        a->errors++;
    np_result_t r = {
        .id = tid, .state = st, .bytes_done = done, .bytes_total = total, .message = msg
    };
    char clean[NP_MESSAGE_MAX + 1];
    if (np_table_result(a->tab, &r) < 0)
        bl_error("transfer %ju: result lost: out of memory", (uintmax_t)tid);
    if (st == MV_FAILED) /* users name the files a message quotes: cleaned for the log */
        bl_warning("transfer %ju of job %s failed: %s", (uintmax_t)tid, job,
                   np_message_clean(msg ? msg : "", clean));
}

/* ------------------------------------------------------------------ status */
/* Sectors (512 bytes) read and written by the mount's block device so far: 0, or
 * -1 when the device is not in the counters (no block device under the mount). */
static int device_sectors(agent_t *a, unsigned long long *rs, unsigned long long *ws)
{
    FILE *f = fopen(a->diskstats, "re");
    char line[512];
    int ret = -1;
    if (!f)
        return -1;
    while (ret < 0 && fgets(line, sizeof(line), f)) {
        unsigned maj, min;
        unsigned long long v[7];
        char name[64];
        if (sscanf(line, "%u %u %63s %llu %llu %llu %llu %llu %llu %llu", &maj, &min, name, &v[0],
                   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6])
                == 10
            && maj == a->dev_major && min == a->dev_minor) {
            *rs = v[2];
            *ws = v[6];
            ret = 0;
        }
    }
    fclose(f);
    return ret;
}

static json_t *status_json(agent_t *a)
{
    np_status_t s = { .device_read_bw = -1, .device_write_bw = -1 };
    unsigned long long rs, ws;
    struct statvfs vfs;
    mover_stats_t ms;
    double now = hu_mono(), dt = now - a->last_status;

    if (fstatvfs(a->mfd, &vfs) == 0) {
        s.free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
        s.used_bytes = (uint64_t)(vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize;
    } else {
        a->errors++;
    }
    mover_get_stats(a->m, &ms);
    mover_leftover(a->m, NULL, &s.leftover_bytes);
    s.busy = ms.busy > 0;
    s.queue = ms.running;
    s.errors = a->errors;
    if (dt > 0) {
        s.read_bw = (double)a->rbytes / dt;
        s.write_bw = (double)a->wbytes / dt;
        s.interval = dt;
    }
    if (device_sectors(a, &rs, &ws) == 0) {
        if (a->dev_seen && dt > 0 && rs >= a->rsect && ws >= a->wsect) {
            s.device_read_bw = (double)(rs - a->rsect) * 512.0 / dt;
            s.device_write_bw = (double)(ws - a->wsect) * 512.0 / dt;
        }
        a->rsect = rs;
        a->wsect = ws;
        a->dev_seen = true;
    } else {
        a->dev_seen = false;
    }
    a->rbytes = a->wbytes = 0;
    a->last_status = now;
    return np_status_json(&s);
}

/* ------------------------------------------------------------------ directories */
/* Spare directories (bufdir.h): made while no directory was asked for. */
static bufdir_spares_t spares_of(agent_t *a)
{
    return (bufdir_spares_t){ &a->spares, &a->spare_top, &a->spare_off };
}

static void spares_fill(agent_t *a)
{
    if (hu_mono() >= a->spare_idle_from
        && quota_spares(&a->quota, a->cfg->capacity_enforce, a->mfd))
        bufdir_spares_fill(a->mfd, a->mount, spares_of(a), SPARE_PER_STEP);
}


/* dirfd of <mount>/persistent (made 0755 if missing), or of the mount itself. */
static int parent_fd(agent_t *a, bool persistent)
{
    if (!persistent)
        return dup(a->mfd);
    if (mkdirat(a->mfd, "persistent", 0755) < 0 && errno != EEXIST)
        return -1;
    return openat(a->mfd, "persistent", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static void made_key(const np_dir_t *d, char *key, size_t len)
{
    snprintf(key, len, "%c:%s", d->persistent ? 'p' : 'j', d->name);
}

/* Is st, at d's name, a directory of an earlier buffer of the name (another owner,
 * or made for another incarnation)?  Never adopted for d. */
static bool dir_earlier(agent_t *a, const np_dir_t *d, const struct stat *st)
{
    char key[300];
    made_key(d, key, sizeof(key));
    const made_t *r = hmap_get(a->made, key);
    return st->st_uid != d->uid || st->st_gid != d->gid
           || (d->inc > 0 && r && r->inc > 0 && r->inc != d->inc && r->dev == st->st_dev
               && r->ino == st->st_ino);
}

static void made_set(agent_t *a, const np_dir_t *d, const struct stat *st)
{
    char key[300];
    made_t *r;
    made_key(d, key, sizeof(key));
    if (!(r = hmap_get(a->made, key))) {
        if (!(r = calloc(1, sizeof(*r))) || hmap_put(a->made, key, r) < 0) {
            free(r);
            return; /* out of memory: the next report tries again */
        }
        snprintf(r->key, sizeof(r->key), "%s", key);
    }
    r->inc = d->inc;
    r->dev = st->st_dev;
    r->ino = st->st_ino;
}

/* Forget the directories that left bbmgrd's set. */
static bool in_set(const np_dir_t *v, size_t n, const char *name, bool persistent);

static void made_prune(agent_t *a, const np_dir_t *v, size_t n)
{
    made_t *gone[256];
    int ngone;
    void *val;
    do {
        ngone = 0;
        for (void *it = hmap_first(a->made, &val); it && ngone < 256;
             it = hmap_next(a->made, it, &val)) {
            made_t *r = val;
            if (!in_set(v, n, r->key + 2, r->key[0] == 'p'))
                gone[ngone++] = r;
        }
        for (int i = 0; i < ngone; i++) {
            hmap_del(a->made, gone[i]->key);
            free(gone[i]);
        }
    } while (ngone == 256);
}

/* The directory d names is there, of an earlier buffer of that name: made for
 * another incarnation (a job id used again by a requeued job, a persistent name
 * destroyed and made again within one report) or owned by someone else.  Moved
 * aside to <parent>/.harmonia-trash/<inode> and removed from there, so that the
 * name is free at once for a new, empty directory.  false: it could not be. */
/* <mount>/[persistent/].harmonia-trash/<ino> (mover_trash_path) */
static int trash_path(agent_t *a, int pfd, bool persistent, ino_t ino, char *out, size_t len)
{
    char parent[1200];
    snprintf(parent, sizeof(parent), "%s%s", a->mount, persistent ? "/persistent" : "");
    return mover_trash_path(pfd, parent, ino, out, len);
}

static bool dir_aside(agent_t *a, int pfd, const np_dir_t *d, const struct stat *st, bool queued)
{
    const char *where = d->persistent ? "persistent/" : "";
    char from[1400], trash[1400];
    if (trash_path(a, pfd, d->persistent, st->st_ino, trash, sizeof(trash)) < 0)
        goto fail;
    snprintf(from, sizeof(from), "%s/%s%s", a->mount, where, d->name);
    /* a removal of it already queued follows it there (mover_aside) */
    if (mover_aside(a->m, from, trash) < 0)
        goto fail;
    bl_info("buffer directory %s (inode %ju, uid %u) belongs to an earlier buffer of that "
            "name: moved to %s, a new one is made",
            from, (uintmax_t)st->st_ino, (unsigned)st->st_uid, trash);
    if (kept_has(a, st->st_dev, st->st_ino))
        bl_warning("%s: the data of a held buffer, kept there until it is released", trash);
    else if (!queued
             && mover_rmtree(a->m, NULL, trash, NULL, st->st_uid, st->st_gid, st->st_dev,
                             st->st_ino)
                    < 0)
        bl_warning("removal of %s: %s", trash, strerror(errno));
    return true;
fail:
    bl_warning("buffer directory %s/%s%s of an earlier buffer: not moved aside: %s", a->mount,
               where, d->name, strerror(errno));
    return false;
}

/* agents.min_uid: the uid 0, the gid 0 and the uids below min_uid are never acted
 * for, so that a reply of anything answering on bbmgrd's address cannot make the
 * agent act as root or a system account; min_uid 0 turns the check off (a test
 * cluster whose jobs run as root, never a site). */
static bool agent_refuses_owner(const agent_t *a, uid_t uid, gid_t gid)
{
    long min = a->cfg->agents_min_uid;
    return min > 0 && (uid == 0 || gid == 0 || (long)uid < min);
}

/* again: the name was handed to the mover for removal since it was last listed (its
 * job ended, the same id came back): what is there is the earlier buffer's. */
static void dir_make(agent_t *a, const np_dir_t *d, bool again)
{
    struct stat st;
    const char *where = d->persistent ? "persistent/" : "";
    if (agent_refuses_owner(a, d->uid, d->gid)) {
        bl_error("buffer directory %s/%s%s for uid %u gid %u refused: root's, or below "
                 "agents.min_uid (%ld)",
                 a->mount, where, d->name, (unsigned)d->uid, (unsigned)d->gid,
                 a->cfg->agents_min_uid);
        a->errors++;
        return;
    }
    int pfd = parent_fd(a, d->persistent);
    if (pfd < 0) {
        bl_warning("%s/persistent: %s", a->mount, strerror(errno));
        a->errors++;
        return;
    }
    if (fstatat(pfd, d->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        char key[300];
        made_t *r;
        if (!S_ISDIR(st.st_mode)) {
            bl_warning("buffer directory %s/%s%s: exists and is not a directory", a->mount, where,
                       d->name);
            a->errors++;
            close(pfd);
            return;
        }
        made_key(d, key, sizeof(key));
        r = hmap_get(a->made, key);
        /* never adopted: a directory of another owner, or the one this agent made
         * for another incarnation of the name; one it does not know (it started
         * since) and of the right owner is taken as this one */
        bool earlier = again || dir_earlier(a, d, &st);
        if (!earlier) {
            if (!r || r->dev != st.st_dev || r->ino != st.st_ino || !r->inc)
                made_set(a, d, &st);
            close(pfd);
            return;
        }
        if (!dir_aside(a, pfd, d, &st, again)) {
            a->errors++;
            close(pfd);
            return;
        }
    }
    a->spare_idle_from = hu_mono() + SPARE_IDLE;
    bufdir_spares_t sp = spares_of(a);
    const char *what;
    hu_error_t qwhy;
    /* capacity.enforce: limited by the file system where it can (quota.c); a
     * bbmgrd that does not say the capacity leaves it measured only */
    int q = d->capacity ? quota_make(&a->quota, a->cfg->capacity_enforce, pfd, d->name, a->mount,
                                     d->capacity, &qwhy)
                        : 0;
    if (q < 0) {
        bl_error("buffer directory %s/%s%s (owner %u:%u) not made: %s", a->mount, where, d->name,
                 (unsigned)d->uid, (unsigned)d->gid, qwhy.text);
        a->errors++;
    } else if ((q > 0 ? bufdir_own(pfd, d->name, d->uid, d->gid, &st, &what)
                      : bufdir_create(pfd, d->name, a->mfd, a->mount, d->persistent ? NULL : &sp,
                                      d->uid, d->gid, &st, &what))
               < 0) {
        bl_warning("buffer directory %s/%s%s (owner %u:%u): %s: %s", a->mount, where, d->name,
                   (unsigned)d->uid, (unsigned)d->gid, what, strerror(errno));
        a->errors++;
    } else {
        made_set(a, d, &st);
        bl_debug("buffer directory %s/%s%s created for uid %u", a->mount, where, d->name,
                 (unsigned)d->uid);
    }
    close(pfd);
}

static bool in_set(const np_dir_t *v, size_t n, const char *name, bool persistent)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].persistent == persistent && !strcmp(v[i].name, name))
            return true;
    return false;
}

/* Was the directory handed to the mover for removal lately (its removal may still
 * wait for the job's transfers)? */
static bool removing(agent_t *a, const char *name, bool persistent)
{
    double now = hu_mono();
    int k = 0;
    bool found = false;
    for (int i = 0; i < a->nremoving; i++) {
        if (now - a->removing[i].at > 300)
            continue;
        if (a->removing[i].persistent == persistent && !strcmp(a->removing[i].name, name))
            found = true;
        a->removing[k++] = a->removing[i];
    }
    a->nremoving = k;
    if (!found && k < REMOVING_MAX) {
        snprintf(a->removing[k].name, sizeof(a->removing[k].name), "%s", name);
        a->removing[k].persistent = persistent;
        a->removing[k].at = now;
        a->nremoving++;
    }
    return found;
}

/* Was it handed to the mover for removal lately (a pure look: removing() adds)? */
static bool removing_has(agent_t *a, const char *name, bool persistent)
{
    double now = hu_mono();
    for (int i = 0; i < a->nremoving; i++)
        if (now - a->removing[i].at <= 300 && a->removing[i].persistent == persistent
            && !strcmp(a->removing[i].name, name))
            return true;
    return false;
}

/* The directory is in bbmgrd's set again (a job id used again: a job released
 * after a failed stage-in, a requeued job): when it leaves the set, it is an
 * orphan to remove again. */
static void removing_forget(agent_t *a, const char *name, bool persistent)
{
    int k = 0;
    for (int i = 0; i < a->nremoving; i++)
        if (a->removing[i].persistent != persistent || strcmp(a->removing[i].name, name))
            a->removing[k++] = a->removing[i];
    a->nremoving = k;
}

/* Remove what is not in the set: directories only, of usable names, never the
 * reserved ones. */
static void orphans_remove(agent_t *a, const np_dir_t *v, size_t n, bool persistent)
{
    /* a descriptor of its own: a dup() would share the mount's directory offset */
    int pfd = openat(a->mfd, persistent ? "persistent" : ".",
                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = pfd >= 0 ? fdopendir(pfd) : NULL;
    struct dirent *e;
    char path[1400];
    if (!d) {
        if (pfd >= 0)
            close(pfd);
        return;
    }
    while ((e = readdir(d))) {
        struct stat st;
        if (!np_dir_name_ok(e->d_name, persistent) || !strncmp(e->d_name, ".harmonia", 9)
            || in_set(v, n, e->d_name, persistent)
            || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0
            || !S_ISDIR(st.st_mode)
            /* a buffer's directory is never root's (agents.min_uid): root's are the
             * file system's or the site's (lost+found); unless root's jobs are
             * served (min_uid 0, a test cluster) */
            || (st.st_uid == 0 && a->cfg->agents_min_uid > 0) || removing(a, e->d_name, persistent))
            continue;
        snprintf(path, sizeof(path), "%s/%s%s", a->mount, persistent ? "persistent/" : "",
                 e->d_name);
        if (kept_has(a, st.st_dev, st.st_ino)) /* released by an administrator */
            kept_del(a, &st);
        bl_info("buffer directory %s is no longer in bbmgrd's state: removed", path);
        if (!persistent)
            mover_job_end(a->m, e->d_name);
        /* a stage-out from it that could not be made durable kept it here; bbmgrd
         * lists such a buffer (keep) until an administrator releases it */
        mover_unkeep(a->m, path);
        /* moved to the trash when its removal starts (after its job's transfers),
         * or at once if the name is listed again before (dir_make) */
        char trash[1400];
        bool tr = trash_path(a, dirfd(d), persistent, st.st_ino, trash, sizeof(trash)) == 0;
        if (mover_rmtree(a->m, persistent ? NULL : e->d_name, path, tr ? trash : NULL, st.st_uid,
                         st.st_gid, st.st_dev, st.st_ino)
            < 0)
            bl_warning("removal of %s: %s", path, strerror(errno));
    }
    closedir(d);
}

/* ------------------------------------------------------------------ exchange */
typedef struct {
    char *buf;
    size_t len;
    bool too_big;
} rbuf_t;

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    rbuf_t *b = arg;
    size_t add = size * n;
    if (b->len + add > REPLY_MAX) {
        b->too_big = true;
        return 0;
    }
    char *nb = realloc(b->buf, b->len + add + 1);
    if (!nb)
        return 0;
    memcpy(nb + b->len, p, add);
    b->buf = nb;
    b->len += add;
    b->buf[b->len] = '\0';
    return add;
}

/* "Harmonia-Session: <token>; ttl=N" of a reply: the token of the session bbmgrd
 * opened on the connection (doc/api.md, Sessions). */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    agent_t *a = arg;
    size_t len = size * n;
    static const char name[] = "Harmonia-Session:";
    if (len > sizeof(name) && !strncasecmp(p, name, sizeof(name) - 1)) {
        const char *v = p + sizeof(name) - 1;
        size_t vl = len - (sizeof(name) - 1);
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        size_t tl = 0;
        while (tl < vl && tl < sizeof(a->session) - 1 && v[tl] != ';' && v[tl] != '\r'
               && v[tl] != '\n' && v[tl] != ' ')
            tl++;
        memcpy(a->session, v, tl);
        a->session[tl] = '\0';
    }
    return len;
}

/* POST body; 0 with the HTTP status in *code and the reply in *out, or -1.
 * The first request of a connection carries a MUNGE credential and opens a
 * session; the next ones send its token (one munged round trip per connection,
 * not per report).  A refused token is dropped and the request sent again with a
 * credential. */
static int post_once(agent_t *a, const char *body, long *code, rbuf_t *out);
static int post(agent_t *a, const char *body, long *code, rbuf_t *out)
{
    bool had = *a->session;
    int ret = post_once(a, body, code, out);
    if (ret == 0 && *code == 401 && had) {
        a->session[0] = '\0';
        free(out->buf);
        memset(out, 0, sizeof(*out));
        ret = post_once(a, body, code, out);
    }
    return ret;
}

static int post_once(agent_t *a, const char *body, long *code, rbuf_t *out)
{
    struct curl_slist *h = NULL;
    char *cred = NULL, *hdr = NULL;
    CURLcode rc;
    int ret = -1;

    h = curl_slist_append(h, "Content-Type: application/json");
    if (a->munge && *a->session) {
        if (!(hdr = malloc(strlen(a->session) + 32)))
            goto out;
        sprintf(hdr, "Authorization: Session %s", a->session);
        h = curl_slist_append(h, hdr);
    } else if (a->munge) {
        h = curl_slist_append(h, "Harmonia-Session: open");
        munge_err_t e = munge_encode(&cred, a->munge, a->path, (int)strlen(a->path));
        if (e != EMUNGE_SUCCESS) {
            bl_error("munge: %s", munge_ctx_strerror(a->munge));
            goto out;
        }
        if (!(hdr = malloc(strlen(cred) + 32)))
            goto out;
        sprintf(hdr, "Authorization: MUNGE %s", cred);
        h = curl_slist_append(h, hdr);
    }
    curl_easy_reset(a->curl);
    curl_easy_setopt(a->curl, CURLOPT_URL, a->url);
    curl_easy_setopt(a->curl, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(a->curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(a->curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(a->curl, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(a->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(a->curl, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(a->curl, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(a->curl, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(a->curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(a->curl, CURLOPT_PROTOCOLS_STR, "http,https");
    if (geteuid() == 0) {
        /* from a privileged port: bbmgrd keeps connections for those that users'
         * connections cannot take (limits.reserved_connections) */
        curl_easy_setopt(a->curl, CURLOPT_LOCALPORT, (long)AGENT_PORT_LO);
        curl_easy_setopt(a->curl, CURLOPT_LOCALPORTRANGE, (long)(1024 - AGENT_PORT_LO));
    }
    if ((rc = curl_easy_perform(a->curl)) != CURLE_OK) {
        a->session[0] = '\0'; /* a new connection comes next */
        if (a->last_http != -(long)rc)
            bl_warning("bbmgrd at %s: %s (retried every %.2f s)", a->url,
                       out->too_big ? "reply too large" : curl_easy_strerror(rc), a->interval);
        a->last_http = -(long)rc;
        goto out;
    }
    curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, code);
    ret = 0;
out:
    curl_slist_free_all(h);
    free(hdr);
    free(cred);
    return ret;
}

/* Is path inside <mount>/ (a job's or a persistent buffer's directory)?  On the text:
 * task paths are absolute without "." or ".." (np_task_parse()). */
static bool in_mount(const agent_t *a, const char *path)
{
    size_t n = strlen(a->mount);
    while (n > 1 && a->mount[n - 1] == '/')
        n--;
    return !strncmp(path, a->mount, n) && path[n] == '/' && path[n + 1];
}

/* The id of a listed task, even one that does not parse (0: none). */
static uint64_t task_id(json_t *o)
{
    json_t *id = json_object_get(o, "id");
    return json_is_integer(id) && json_integer_value(id) > 0 ? (uint64_t)json_integer_value(id) : 0;
}

/* A listed task this agent will not run: failed with the reason, once (the table
 * knows it from then on); why is cut at 299 bytes, as it always was. */
static void refuse(agent_t *a, uint64_t id, const char *job, const char *why)
{
    char msg[400];
    snprintf(msg, sizeof(msg), "bbnoded %s refused the transfer: %.299s", a->node, why);
    bl_error("transfer %ju refused: %.299s", (uintmax_t)id, why);
    on_result(id, job, MV_FAILED, 0, -1, msg, a);
}

static void submit(agent_t *a, json_t *tasks, uint64_t id)
{
    np_task_t t;
    mover_spec_t spec;
    char msg[300];
    hu_error_t err;
    size_t i;
    json_t *o;
    json_array_foreach (tasks, i, o) {
        if (task_id(o) != id)
            continue;
        if (np_task_parse(o, &t, &err) < 0) {
            refuse(a, id, "?", err.text); /* its job field is not known to be sane */
            return;
        }
        spec = t;
        if (agent_refuses_owner(a, t.uid, t.gid)) {
            /* whoever answers on bbmgrd's address cannot make the agent act as
             * root or a system account */
            snprintf(msg, sizeof(msg), "uid %u gid %u: root's, or below agents.min_uid (%ld)",
                     (unsigned)t.uid, (unsigned)t.gid, a->cfg->agents_min_uid);
            refuse(a, id, t.job, msg);
            return;
        }
        if (!in_mount(a, t.stage_out ? t.src : t.dst)) {
            /* the buffer side of a transfer is always on this node: anything else is
             * refused whoever asks */
            snprintf(msg, sizeof(msg), "bbnoded %s: %s %s is not under its mount %s", a->node,
                     t.stage_out ? "source" : "destination", t.stage_out ? t.src : t.dst, a->mount);
            bl_error("transfer %ju refused: %s", (uintmax_t)id, msg);
            on_result(id, t.job, MV_FAILED, 0, -1, msg, a);
            return;
        }
        prog_t *p = calloc(1, sizeof(*p));
        if (p) {
            p->out = t.stage_out;
            free(hmap_iget(a->prog, id));
            if (hmap_iput(a->prog, id, p) < 0)
                free(p);
        }
        if (mover_submit(a->m, &spec) < 0 && errno != EEXIST) {
            snprintf(msg, sizeof(msg), "bbnoded %s: %s", a->node, strerror(errno));
            on_result(id, t.job, MV_FAILED, 0, -1, msg, a);
            return;
        }
        bl_info("%s %ju of job %s: %s -> %s%s", t.stage_out ? "stage_out" : "stage_in",
                (uintmax_t)id, t.job, t.src, t.dst, t.resync ? " (made durable again)" : "");
        return;
    }
}

/* d is listed with keep.  With its identity (dev, ino): recorded, wherever it is.
 * Without (bbmgrd does not know it yet): the directory at its name is recorded and
 * reported (report), unless it is the directory of the live buffer listed with
 * that name (live), made already. */
static void kept_note(agent_t *a, const np_dir_t *d, const np_dir_t *live, json_t *report)
{
    struct stat st;
    if (d->ino) {
        st.st_dev = (dev_t)d->dev;
        st.st_ino = (ino_t)d->ino;
        kept_add(a, &st);
        return;
    }
    int pfd = d->persistent
                  ? openat(a->mfd, "persistent", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                  : dup(a->mfd);
    if (pfd < 0)
        goto out;
    /* a buffer's directory is never root's (agents.min_uid), unless root's jobs are
     * served (min_uid 0, a test cluster) */
    if (fstatat(pfd, d->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)
        && (st.st_uid != 0 || a->cfg->agents_min_uid == 0)
        && (!live || dir_earlier(a, live, &st))) {
        np_dir_t r = { .name = d->name,
                       .persistent = d->persistent,
                       .uid = st.st_uid,
                       .gid = st.st_gid,
                       .keep = true,
                       .dev = (uint64_t)st.st_dev,
                       .ino = (uint64_t)st.st_ino };
        kept_add(a, &st);
        if (report && json_array_size(report) < AGENT_KEPT_REPORT)
            json_array_append_new(report, np_dir_json(&r));
    }
out:
    if (pfd >= 0)
        close(pfd);
}

/* The live directory of that name in the listing (not kept), or NULL. */
static const np_dir_t *live_listed(const np_dir_t *v, size_t n, const char *name, bool persistent)
{
    for (size_t i = 0; i < n; i++)
        if (!v[i].keep && v[i].persistent == persistent && !strcmp(v[i].name, name))
            return &v[i];
    return NULL;
}

/* Released kept data: a recorded identity no longer listed, found in the trash. */
typedef struct {
    agent_t *a;
    const char *parent;
    const kid_t *gone;
    size_t ngone;
} release_t;

static int release_one(int tfd, const char *name, const struct stat *st, void *arg)
{
    release_t *r = arg;
    char path[1400];
    (void)tfd;
    for (size_t i = 0; i < r->ngone; i++)
        if (r->gone[i].dev == st->st_dev && r->gone[i].ino == st->st_ino) {
            snprintf(path, sizeof(path), "%s/" MOVER_TRASH "/%s", r->parent, name);
            bl_info("%s: the data of a held buffer, released by bbmgrd: removed", path);
            mover_unkeep(r->a->m, path);
            if (mover_rmtree(r->a->m, NULL, path, NULL, st->st_uid, st->st_gid, st->st_dev,
                             st->st_ino)
                < 0)
                bl_warning("removal of %s: %s", path, strerror(errno));
            break;
        }
    return 0;
}

/* After a listing whose every kept entry has its identity: each recorded identity
 * not listed was released (bbmgrd forgot its held buffer).  One still at its name
 * was removed as an orphan (orphans_remove()); one in the trash is removed here,
 * that identity and nothing else. */
static void kept_release(agent_t *a, const np_dir_t *v, size_t n)
{
    kid_t *gone = NULL;
    size_t ngone = 0, k = 0;
    for (size_t i = 0; i < a->nkept; i++) {
        bool listed = false;
        for (size_t j = 0; j < n && !listed; j++)
            listed = v[j].keep && v[j].dev == (uint64_t)a->kept[i].dev
                     && v[j].ino == (uint64_t)a->kept[i].ino;
        if (listed) {
            a->kept[k++] = a->kept[i];
            continue;
        }
        kid_t *g = realloc(gone, (ngone + 1) * sizeof(*g));
        if (!g) {
            a->kept[k++] = a->kept[i]; /* kept: released at the next listing */
            continue;
        }
        gone = g;
        gone[ngone++] = a->kept[i];
    }
    if (!ngone)
        return;
    a->nkept = k;
    kept_save(a);
    for (int p = 0; p < 2; p++) {
        char parent[1200];
        int pfd = p ? openat(a->mfd, "persistent", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    : dup(a->mfd);
        release_t r = { .a = a, .parent = parent, .gone = gone, .ngone = ngone };
        if (pfd < 0)
            continue;
        snprintf(parent, sizeof(parent), "%s%s", a->mount, p ? "/persistent" : "");
        bufdir_trash_each(pfd, parent, release_one, &r);
        close(pfd);
    }
    free(gone);
}

static void apply(agent_t *a, json_t *rep)
{
    json_t *dirs = json_object_get(rep, "dirs"), *tasks = json_object_get(rep, "tasks");
    json_t *gen = json_object_get(rep, "dirs_gen"), *iv = json_object_get(rep, "interval");
    np_dir_t *dv = NULL;
    size_t nd = 0, i;
    bool dirs_ok = json_is_array(dirs) && json_is_string(gen);
    hu_error_t err;
    json_t *o;

    if (json_is_number(iv) && json_number_value(iv) >= 0.05 && json_number_value(iv) <= 1)
        a->interval = json_number_value(iv);
    /* 1. directories bbmgrd wants: made before any transfer into them starts; the
     * kept ones first, recorded by identity (before a new buffer of the name moves
     * one aside) */
    bool all_ids = true;
    if (dirs_ok && (dv = calloc(json_array_size(dirs) + 1, sizeof(*dv)))) {
        json_array_foreach (dirs, i, o) {
            if (np_dir_parse(o, &dv[nd], &err) < 0) {
                bl_error("bbmgrd sent a bad directory: %.299s (no directory removed)", err.text);
                dirs_ok = false;
                continue;
            }
            nd++;
        }
        json_t *report = json_array();
        for (size_t k = 0; k < nd; k++)
            if (dv[k].keep) { /* held by bbmgrd: left as it is, recorded */
                kept_note(a, &dv[k], live_listed(dv, nd, dv[k].name, dv[k].persistent), report);
                all_ids = all_ids && dv[k].ino;
            }
        json_decref(a->kept_report);
        a->kept_report = json_array_size(report) ? report : NULL;
        if (!a->kept_report)
            json_decref(report);
        for (size_t k = 0; k < nd; k++) {
            if (dv[k].keep)
                continue;
            bool again = removing_has(a, dv[k].name, dv[k].persistent);
            removing_forget(a, dv[k].name, dv[k].persistent);
            dir_make(a, &dv[k], again);
        }
    }
    /* 2. transfers */
    if (json_is_array(tasks)) {
        uint64_t *ids = calloc(json_array_size(tasks) + 1, sizeof(uint64_t)), *sub, *can;
        unsigned *runs = calloc(json_array_size(tasks) + 1, sizeof(unsigned));
        size_t n = 0, nsub, ncan;
        np_task_t t;
        json_array_foreach (tasks, i, o) {
            /* one that does not parse but has an id is failed with the reason when
             * first listed (submit()); without an id it cannot be answered */
            uint64_t id = task_id(o);
            if (!id)
                bl_debug("bbmgrd sent a task without an id (ignored)");
            else if (ids && runs) {
                runs[n] = np_task_parse(o, &t, NULL) == 0 ? t.run : 0;
                ids[n++] = id;
            }
        }
        if (ids && runs && np_table_listed(a->tab, ids, runs, n, &sub, &nsub, &can, &ncan) == 0) {
            for (size_t k = 0; k < nsub; k++)
                submit(a, tasks, sub[k]);
            for (size_t k = 0; k < ncan; k++) {
                bl_info("transfer %ju: no longer listed by bbmgrd: cancelled", (uintmax_t)can[k]);
                mover_cancel(a->m, can[k], "cancelled by bbmgrd");
            }
            free(sub);
            free(can);
        }
        free(ids);
        free(runs);
    }
    /* 3. orphans, after the transfers (a removal waits for those of its job) */
    if (dirs_ok && dv) {
        orphans_remove(a, dv, nd, false);
        orphans_remove(a, dv, nd, true);
        /* released kept data, by identity: only once bbmgrd says every identity it
         * keeps (one it does not know yet may be any recorded one) */
        if (all_ids)
            kept_release(a, dv, nd);
        made_prune(a, dv, nd);
        snprintf(a->dirs_gen, sizeof(a->dirs_gen), "%s", json_string_value(gen));
    }
    free(dv);
}

/* ------------------------------------------------------------------ usage
 * What each buffer directory of the set holds, measured in bounded steps by the
 * walk embedded mode uses (bufdir_usage_step()), on the directory found by its
 * identity (the one made or adopted for the set), and reported as "usage" after
 * each complete walk (doc/security.md, Capacity). */
static void usage_forget(agent_t *a)
{
    for (size_t i = 0; i < a->uw_n; i++)
        free(a->uw_list[i]);
    free(a->uw_list);
    a->uw_list = NULL;
    a->uw_n = a->uw_i = 0;
    bufdir_usage_free(a->uw);
    a->uw = NULL;
}

static void usage_relist(agent_t *a)
{
    void *v;
    usage_forget(a);
    size_t n = hmap_size(a->made);
    if (!n || !(a->uw_list = calloc(n, sizeof(char *))) || !(a->uw = bufdir_usage_new()))
        return;
    for (void *it = hmap_first(a->made, &v); it && a->uw_n < n; it = hmap_next(a->made, it, &v))
        if ((a->uw_list[a->uw_n] = strdup(((made_t *)v)->key)))
            a->uw_n++;
}

static void usage_step(agent_t *a)
{
    unsigned long budget = AGENT_USAGE_STEP;
    bool listed = false;
    while (budget > 0) {
        if (a->uw_i >= a->uw_n) {
            if (listed)
                return;
            usage_relist(a);
            listed = true;
            if (!a->uw_n)
                return;
        }
        const char *key = a->uw_list[a->uw_i];
        made_t *r = hmap_get(a->made, key);
        bool pers = key[0] == 'p';
        int pfd =
            !r     ? -1
            : pers ? openat(a->mfd, "persistent", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                   : dup(a->mfd);
        int dfd = pfd < 0 ? -1
                          : openat(pfd, key + 2,
                                   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        uint64_t bytes = 0;
        int ret = -1;
        /* the directory of the set, by identity: another one at its name (moved
         * there by its owner) is not measured for it */
        if (dfd >= 0 && fstat(dfd, &st) == 0 && st.st_dev == r->dev && st.st_ino == r->ino)
            ret = bufdir_usage_step(a->uw, dfd, &budget, &bytes);
        else { /* gone: a walk of it left half-way is dropped */
            bufdir_usage_free(a->uw);
            if (!(a->uw = bufdir_usage_new())) {
                usage_forget(a);
                return;
            }
        }
        if (dfd >= 0)
            close(dfd);
        if (pfd >= 0)
            close(pfd);
        if (ret == 0)
            return;
        if (ret > 0) {
            r->used = bytes;
            r->pending = true;
        }
        a->uw_i++;
        budget = budget > 0 ? budget - 1 : 0;
    }
}

/* The figures of the walks completed since the last accepted report, as many as
 * fit in budget bytes of compact JSON and NP_USAGE_MAX; their entries in sent. */
static json_t *usage_report(agent_t *a, size_t budget, made_t **sent, size_t *nsent)
{
    json_t *arr = json_array();
    size_t size = 2;
    void *v;
    *nsent = 0;
    for (void *it = hmap_first(a->made, &v); arr && it && *nsent < NP_USAGE_MAX;
         it = hmap_next(a->made, it, &v)) {
        made_t *r = v;
        if (!r->pending)
            continue;
        np_usage_t u = { .name = r->key + 2,
                         .persistent = r->key[0] == 'p',
                         .used = r->used,
                         .dev = (uint64_t)r->dev,
                         .ino = (uint64_t)r->ino };
        json_t *o = np_usage_json(&u);
        char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
        size_t len = txt ? strlen(txt) + 1 : 0;
        free(txt);
        if (!len || size + len > budget) {
            json_decref(o);
            break;
        }
        size += len;
        json_array_append_new(arr, o);
        sent[(*nsent)++] = r;
    }
    if (arr && !json_array_size(arr)) {
        json_decref(arr);
        arr = NULL;
    }
    return arr;
}

int agent_step(agent_t *a)
{
    uint64_t upto = 0;
    long code = 0;
    rbuf_t out = { 0 };
    int ret = -1;

    mover_poll(a->m, on_result, a);
    spares_fill(a);
    usage_step(a);
    size_t full = a->cfg->limits_max_body > 1024 ? a->cfg->limits_max_body - 768 : 256;
    if (!a->budget || a->budget > full)
        a->budget = full;
    size_t budget = a->budget;
    /* the figures take at most half of what results may: the report fits */
    made_t *sent[NP_USAGE_MAX];
    size_t nsent = 0;
    json_t *usage = a->usage_off ? NULL : usage_report(a, budget / 2, sent, &nsent);
    if (usage) {
        char *txt = json_dumps(usage, JSON_COMPACT);
        size_t ulen = txt ? strlen(txt) + 10 : budget;
        free(txt);
        budget = budget > ulen + AGENT_BUDGET_MIN ? budget - ulen : AGENT_BUDGET_MIN;
    }
    json_t *req = json_pack("{s:i s:s s:o s:o}", "version", NP_VERSION, "agent", a->id, "status",
                            status_json(a), "results", np_table_outbox(a->tab, budget, &upto));
    if (req && usage)
        json_object_set(req, "usage", usage);
    json_decref(usage);
    if (req && *a->dirs_gen)
        json_object_set_new(req, "dirs", json_string(a->dirs_gen));
    if (req && a->kept_report)
        json_object_set(req, "kept", a->kept_report);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body) {
        bl_error("out of memory");
        return -1;
    }
    if (post(a, body, &code, &out) == 0) {
        json_error_t je;
        json_t *rep = code == 200 && out.buf ? json_loads(out.buf, 0, &je) : NULL;
        if (code == 200 && json_is_object(rep)) {
            np_table_acked(a->tab, upto);
            for (size_t k = 0; k < nsent; k++) /* before apply() forgets any */
                sent[k]->pending = false;
            a->budget = a->budget < full / 2 ? 2 * a->budget : full;
            apply(a, rep);
            if (a->last_http != 200)
                bl_info("bbmgrd at %s: connected as node %s", a->url, a->node);
            a->last_http = 200;
            ret = 0;
        } else {
            if (code == 413 && a->budget > AGENT_BUDGET_MIN) {
                /* bbmgrd takes less than we thought: fewer results next time, down
                 * to one without its message (np_table_outbox) */
                a->budget = a->budget / 2 > AGENT_BUDGET_MIN ? a->budget / 2 : AGENT_BUDGET_MIN;
                bl_warning("bbmgrd at %s refused a report of %zu bytes as too large: the "
                           "next ones carry at most %zu bytes of results",
                           a->url, strlen(body), a->budget);
            }
            json_t *err = code == 400 && usage && out.buf ? json_loads(out.buf, 0, NULL) : NULL;
            const char *field =
                json_string_value(json_object_get(json_object_get(err, "error"), "field"));
            if (field && !strcmp(field, "usage")) {
                /* a bbmgrd older than the key: the reports go on without it */
                bl_warning("bbmgrd at %s does not take the measured use of buffers "
                           "(\"usage\"): not reported, its capacity is not checked on this "
                           "node until bbmgrd is updated",
                           a->url);
                a->usage_off = true;
            }
            json_decref(err);
            if (a->last_http != code)
                bl_error("bbmgrd at %s answered %ld: %.300s", a->url, code, out.buf ? out.buf : "");
            a->last_http = code;
        }
        json_decref(rep);
    }
    free(out.buf);
    free(body);
    return ret;
}
