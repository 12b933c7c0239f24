/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  job_submit_harmonia.c - check and normalise a job's Harmonia I/O hints.
 *
 *  Collects the #BB_HARMONIA directives of a job (batch script and sbatch
 *  --bb), checks the whole request with the grammar shared with
 *  burst_buffer/harmonia and bbmgrd, and writes it back in canonical form into
 *  the job's burst_buffer field: hints normalised (w_iter in seconds, sizes in
 *  exact units, io and priority defaulted), which "scontrol show job" shows as
 *  BurstBuffer=.  A bad request is refused here with the same message the
 *  burst buffer plugin would give, including hints that contradict the buffer
 *  request (an I/O phase larger than the buffer).
 *
 *  A job with a buffer but no iohints gets the hints bbmgrd learned from the
 *  same user's earlier jobs of the same name (GET /v1/history), marked
 *  "source=learned".  That one call is bounded (HistoryTimeout, 1 s by
 *  default); when bbmgrd cannot answer the job is accepted without learned
 *  hints (the burst buffer plugin registers the job with bbmgrd later on).
 *  Its answers are kept for a short while per user and job name (10 s when
 *  bbmgrd knew defaults, 1 s when it did not): a burst of submissions of the
 *  same job pays one round trip a second instead of one each, and a job that
 *  ends adds to the history of the next job of its name submitted more than a
 *  second later, as before.
 *  Runs with slurmctld's locks held: nothing else here waits.
\*****************************************************************************/

#include "config.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/log.h"
#include "src/common/read_config.h"
#include "src/common/uid.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"

#include "harmonia/client.h"
#include "libhutil/directive.h"

#include "bbh_conf.h"
#include "bbh_job.h"
#include "slurm_compat.h"

const char plugin_name[] = "Job submit plugin for Harmonia I/O hints";
const char plugin_type[] = "job_submit/harmonia";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static bbh_conf_t conf;

/* Answers of GET /v1/history, per uid and job name (hist_lock). */
#define HIST_TTL_KNOWN 10.0 /* seconds: bbmgrd had learned defaults */
#define HIST_TTL_NONE 1.0   /* seconds: it had none */
#define HIST_MAX 256
typedef struct hist {
    uint32_t uid;
    char *name;
    bool known;
    double w_iter;
    uint64_t io_volume;
    double expires; /* CLOCK_MONOTONIC */
    struct hist *next;
} hist_t;
static pthread_mutex_t hist_lock = PTHREAD_MUTEX_INITIALIZER;
static hist_t *hist_list = NULL;
static int hist_cnt = 0;

static void _hist_free(hist_t *e)
{
    xfree(e->name);
    xfree(e);
}

/* Drop expired entries (all of them when 'all').  Call with hist_lock held. */
static void _hist_purge(bool all)
{
    double now = hu_mono();
    hist_t **pp = &hist_list;

    while (*pp) {
        hist_t *e = *pp;
        if (all || e->expires <= now) {
            *pp = e->next;
            _hist_free(e);
            hist_cnt--;
        } else {
            pp = &e->next;
        }
    }
}

/* A fresh cached answer: true with *known, *w_iter, *vol filled. */
static bool _hist_get(uint32_t uid, const char *name, bool *known, double *w_iter, uint64_t *vol)
{
    double now = hu_mono();
    bool hit = false;

    slurm_mutex_lock(&hist_lock);
    for (hist_t *e = hist_list; e; e = e->next) {
        if (e->uid == uid && !xstrcmp(e->name, name) && e->expires > now) {
            *known = e->known;
            *w_iter = e->w_iter;
            *vol = e->io_volume;
            hit = true;
            break;
        }
    }
    slurm_mutex_unlock(&hist_lock);
    return hit;
}

static void _hist_put(uint32_t uid, const char *name, bool known, double w_iter, uint64_t vol)
{
    hist_t *e;

    slurm_mutex_lock(&hist_lock);
    _hist_purge(false);
    for (hist_t **pp = &hist_list; *pp; pp = &(*pp)->next) {
        if ((*pp)->uid == uid && !xstrcmp((*pp)->name, name)) {
            e = *pp;
            *pp = e->next;
            _hist_free(e);
            hist_cnt--;
            break;
        }
    }
    if (hist_cnt >= HIST_MAX)
        _hist_purge(true);
    e = xmalloc(sizeof(*e));
    e->uid = uid;
    e->name = xstrdup(name);
    e->known = known;
    e->w_iter = w_iter;
    e->io_volume = vol;
    e->expires = hu_mono() + (known ? HIST_TTL_KNOWN : HIST_TTL_NONE);
    e->next = hist_list;
    hist_list = e;
    hist_cnt++;
    slurm_mutex_unlock(&hist_lock);
}

extern int init(void)
{
    char *path = get_extra_conf_path("harmonia.conf");
    char *err = NULL;
    int rc = SLURM_SUCCESS;

    if (bbh_conf_load(path, &conf, &err) < 0) {
        error("%s: %s", plugin_type, err);
        xfree(err);
        rc = SLURM_ERROR;
    }
    xfree(path);
    return rc;
}

extern int fini(void)
{
    slurm_mutex_lock(&hist_lock);
    _hist_purge(true);
    slurm_mutex_unlock(&hist_lock);
    bbh_conf_free(&conf);
    return SLURM_SUCCESS;
}

/* Percent-encode a query value. */
static char *_qs(const char *s)
{
    char *out = NULL;

    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
            || strchr("-_.~", c))
            xstrfmtcat(out, "%c", c);
        else
            xstrfmtcat(out, "%%%02X", c);
    }
    return out ? out : xstrdup("");
}

/* Fill missing hints from bbmgrd's history for this user and job name. */
static void _learn_hints(hu_bb_request_t *req, uint32_t uid, const char *name)
{
    hm_client_opts_t o = { 0 };
    hm_client_t *cli;
    hm_error_t err;
    json_t *resp = NULL, *w, *v;
    char *user, *path = NULL, *qu, *qn;
    bool known = false;
    double w_iter = 0;
    uint64_t vol = 0;
    int st;

    if (!conf.configured || req->has_hints || !name || !(req->has_buffer || req->npersist))
        return;
    if (_hist_get(uid, name, &known, &w_iter, &vol)) {
        /* a learned phase must still fit the buffer asked for */
        if (known && (!req->has_buffer || vol <= req->capacity)) {
            req->has_hints = true;
            req->hints_learned = true;
            req->w_iter = w_iter;
            req->io_volume = vol;
        }
        return;
    }
    if (!(user = uid_to_string_or_null(uid)))
        return;
    o.url = conf.url;
    o.munge_socket = conf.munge_socket;
    o.connect_timeout_ms = 500;
    o.timeout_ms = 1000;
    if (!(cli = hm_client_create(&o, &err))) {
        xfree(user);
        return;
    }
    qu = _qs(user);
    qn = _qs(name);
    xstrfmtcat(path, "/v1/history?user=%s&name=%s", qu, qn);
    st = hm_request(cli, "GET", path, NULL, &resp, &err);
    if (st == 200 && (w = json_object_get(resp, "w_iter"))
        && (v = json_object_get(resp, "io_volume")) && json_is_number(w) && json_is_number(v)
        && json_number_value(w) > 0 && json_number_value(v) >= 1) {
        vol = (uint64_t)json_number_value(v);
        _hist_put(uid, name, true, json_number_value(w), vol);
        /* a learned phase must still fit the buffer asked for */
        if (!req->has_buffer || vol <= req->capacity) {
            req->has_hints = true;
            req->hints_learned = true;
            req->w_iter = json_number_value(w);
            req->io_volume = vol;
            debug("%s: learned w_iter=%.1fs io_volume=%" PRIu64 " for user %s job %s", plugin_type,
                  req->w_iter, vol, user, name);
        }
    } else if (st < 0) {
        debug("%s: history not available: %s", plugin_type, err.text);
    } else if (st == 200 || st == 404) {
        _hist_put(uid, name, false, 0, 0); /* nothing learned yet */
    }
    json_decref(resp);
    hm_client_destroy(cli);
    xfree(path);
    xfree(qu);
    xfree(qn);
    xfree(user);
}

/* Merge script and --bb directives; on success *canon is the canonical text
 * (malloc'd) or NULL when the job has no Harmonia directives. */
/* The stage paths as the job's user sees them (bbh_check_paths_as). */
static int _check_paths(const hu_bb_request_t *req, job_desc_msg_t *job_desc, char **err_msg)
{
    bbh_sym_t sym = { 0 };
    char *user = uid_to_string_or_null(job_desc->user_id);
    int rc;

    sym.user = user;
    sym.name = job_desc->name;
    sym.work_dir = job_desc->work_dir;
    rc = bbh_check_paths_as(req, job_desc->user_id, job_desc->group_id, &sym, err_msg);
    xfree(user);
    return rc;
}

/*
 * use_persistent and destroy_persistent of a buffer that exists and belongs to
 * another user are refused here, at submission, rather than held at stage-in
 * (the burst buffer plugin applies the same owner rule then, for the buffers
 * made meanwhile).  One call per name, each bounded by OWNER_TIMEOUT_MS and
 * none started after that long in all (slurmctld's locks are held: at most
 * twice that); when bbmgrd does not answer in time (or is down) no other call
 * is made, the job is accepted and that later check holds it if need be (a
 * user hold, with the reason, that its owner may release).  A name that does not
 * exist yet may be created by another of the user's jobs: accepted.
 */
#define OWNER_TIMEOUT_MS 1000
static int _check_owners(const hu_bb_request_t *req, uint32_t uid, char **err_msg)
{
    hm_client_opts_t o = { 0 };
    hm_client_t *cli = NULL;
    hm_error_t herr;
    int rc = 0;
    double until = hu_mono() + OWNER_TIMEOUT_MS / 1000.0;

    if (!conf.configured || (uid == 0) || (uid == slurm_conf.slurm_user_id))
        return 0;
    for (int i = 0; i < req->npersist && !rc; i++) {
        const hu_bb_persist_t *p = &req->persist[i];
        json_t *resp = NULL;
        char *path = NULL, *qn, *owner;
        char w[48];
        uint32_t owner_uid;
        int st;

        if (p->op == HU_BB_PERSIST_CREATE || strchr(p->name, '%'))
            continue; /* symbols: known at stage-in only */
        if (hu_mono() >= until)
            break; /* the rest: checked at stage-in */
        if (!cli) {
            o.url = conf.url;
            o.munge_socket = conf.munge_socket;
            o.connect_timeout_ms = OWNER_TIMEOUT_MS / 2;
            o.timeout_ms = OWNER_TIMEOUT_MS;
            if (!(cli = hm_client_create(&o, &herr)))
                break;
        }
        qn = _qs(p->name);
        xstrfmtcat(path, "/v1/persistent/%s", qn);
        st = hm_request(cli, "GET", path, NULL, &resp, &herr);
        xfree(path);
        xfree(qn);
        if (st != 200) {
            if (st < 0 || st >= 500) {
                debug("%s: owner of persistent buffer '%s' not known (%s): checked at stage-in",
                      plugin_type, p->name, st < 0 ? herr.text : "bbmgrd error");
                json_decref(resp);
                break; /* do not wait again */
            }
            json_decref(resp);
            continue; /* 404: not made yet */
        }
        owner_uid = json_integer_value(json_object_get(resp, "uid"));
        json_decref(resp);
        if (owner_uid == uid)
            continue;
        owner = uid_to_string_or_null(owner_uid);
        xstrfmtcat(*err_msg,
                   "#BB_HARMONIA %s: %s: persistent buffer '%s' belongs to another user (",
                   hu_bb_where(p->line, p->bb_item, w, sizeof(w)),
                   p->op == HU_BB_PERSIST_USE ? "use_persistent" : "destroy_persistent", p->name);
        if (owner)
            xstrfmtcat(*err_msg, "%s)", owner);
        else
            xstrfmtcat(*err_msg, "uid %u)", owner_uid);
        xfree(owner);
        rc = -1;
    }
    hm_client_destroy(cli);
    return rc;
}

/* Checks the request in the script and in *bb_field (the job's burst_buffer
 * string) and, when there is one, replaces *bb_field with its canonical form. */
static int _normalise(const char *script, char **bb_field, uint32_t uid, const char *name,
                      job_desc_msg_t *job_desc, char **err_msg)
{
    hu_bb_request_t req;
    hu_error_t err;
    const char *bb = *bb_field;
    char *collected, *canon;
    int rc = SLURM_SUCCESS;

    memset(&req, 0, sizeof(req));
    /* DataWarp's #DW lines would leave the job without its buffer */
    if (hu_bb_check_foreign(script, &err) < 0) {
        *err_msg = xstrdup(err.text);
        return ESLURM_INVALID_BURST_BUFFER_REQUEST;
    }
    if (!(collected = bbh_collect_script(script, job_desc ? job_desc->het_job_offset : NO_VAL)))
        return ENOMEM;
    if (!collected[0] && !hu_bb_has_directives(bb, true))
        goto out;
    if (collected[0] && hu_bb_parse(&req, collected, strlen(collected), HU_BB_SRC_SCRIPT, &err) < 0)
        goto invalid;
    if (hu_bb_has_directives(bb, true)
        && hu_bb_parse(&req, bb, strlen(bb), HU_BB_SRC_BB_OPTION, &err) < 0)
        goto invalid;
    if (hu_bb_validate(&req, &err) < 0)
        goto invalid;
    if (job_desc && _check_paths(&req, job_desc, err_msg) < 0) {
        rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
        goto out;
    }
    if (_check_owners(&req, uid, err_msg) < 0) {
        rc = ESLURM_BURST_BUFFER_PERMISSION;
        goto out;
    }
    if (script)
        _learn_hints(&req, uid, name);
    if (hu_bb_validate(&req, &err) < 0)
        goto invalid;
    if (!(canon = hu_bb_format(&req))) {
        rc = ENOMEM;
        goto out;
    }
    xfree(*bb_field);
    *bb_field = xstrdup(canon);
    free(canon);
    goto out;
invalid:
    *err_msg = xstrdup(err.text);
    rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
out:
    hu_bb_request_free(&req);
    free(collected);
    return rc;
}

/*
 * Only the first component of a heterogeneous job brings the script: check
 * the requests of the later components here, each for itself, where their
 * line numbers are those the user wrote (slurmctld gives each of them, later,
 * a script of its own lines, which burst_buffer/harmonia takes as its request).
 */
static int _check_later_components(job_desc_msg_t *job_desc, char **err_msg)
{
    uint32_t n;
    int rc = SLURM_SUCCESS;

    if ((job_desc->het_job_offset != 0) || !job_desc->script)
        return SLURM_SUCCESS;
    n = bbh_het_components(job_desc->script);
    for (uint32_t k = 1; (k < n) && (rc == SLURM_SUCCESS); k++) {
        hu_bb_request_t req;
        hu_error_t err;
        char *msg = NULL, *collected;

        if (!(collected = bbh_collect_script(job_desc->script, k)))
            return ENOMEM;
        memset(&req, 0, sizeof(req));
        if (collected[0]) {
            if ((hu_bb_parse(&req, collected, strlen(collected), HU_BB_SRC_SCRIPT, &err) < 0)
                || (hu_bb_validate(&req, &err) < 0))
                msg = xstrdup(err.text);
            else
                (void)_check_paths(&req, job_desc, &msg);
        }
        if (msg) {
            xstrfmtcat(*err_msg, "hetjob component %u: %s", k, msg);
            rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
            xfree(msg);
        }
        hu_bb_request_free(&req);
        free(collected);
    }
    return rc;
}

extern int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid, char **err_msg)
{
    int rc;

    rc = _normalise(job_desc->script, &job_desc->burst_buffer, job_desc->user_id, job_desc->name,
                    job_desc, err_msg);
    if (rc == SLURM_SUCCESS)
        rc = _check_later_components(job_desc, err_msg);
    if (rc != SLURM_SUCCESS)
        debug("%s: refused a request of uid %u: %s", plugin_type, submit_uid,
              *err_msg ? *err_msg : "");
    return rc;
}

/* A change of the burst buffer request is checked the same way; other changes
 * are left alone.  Slurm 22.05 refuses such a change (ESLURM_NOT_SUPPORTED)
 * before it calls this, except clearing the request of a completed job, so
 * this is for the Slurm versions that let it through. */
extern int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr, uint32_t submit_uid,
                      char **err_msg)
{
    if (!job_desc->burst_buffer)
        return SLURM_SUCCESS;
    return _normalise(NULL, &job_desc->burst_buffer, job_ptr->user_id, NULL, NULL, err_msg);
}

/* The API symbols of older Slurm releases (slurm_compat.h). */
#define SLURM_COMPAT_JOB_SUBMIT_API
#include "slurm_compat.h"
