/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  burst_buffer_harmonia.c - Harmonia burst buffer plugin for Slurm (22.05 to 25.11).
 *
 *  Translates between slurmctld's burst buffer hooks and bbmgrd, Harmonia's
 *  manager daemon.  The #BB_HARMONIA directives of a job are collected from
 *  its script and from sbatch --bb, validated at submit time (a bad request is
 *  refused with a message on sbatch's stderr) and kept in canonical form in
 *  the job's burst_buffer field.
 *
 *  Hooks never wait on the network.  Each job with a request has a small
 *  record (hjob_t) saying what the plugin's agent thread must do next for it
 *  (stage-in, begin, stage-out, teardown) and at which step it is.  The agent
 *  runs the steps against bbmgrd with bounded timeouts and no lock held, then
 *  applies the results under slurmctld's job write lock and then the plugin
 *  mutex (that order, always).  Every step is idempotent against bbmgrd, so a
 *  step cut short by a restart of slurmctld or bbmgrd is simply run again.
 *  The agent takes the jobs whose work is due together: their one-request
 *  steps (register and allocate, begin, teardown, and then the pools) go in
 *  one POST /v1/batch, one exchange and one commit in bbmgrd for all of them,
 *  and their results are applied under one taking of the locks.
 *
 *  Stage-in starts as soon as the job is submitted when the main scheduler
 *  would ask for it at its first look (job not held, independent, eligible,
 *  within its accounting limits, its CPUs free): the buffer is then usually
 *  ready when that first pass comes, and the job starts in it as a job without
 *  a buffer would.  Otherwise it starts when a scheduler pass asks and the job
 *  is about to run (its CPUs are free, or backfill expects it within
 *  STAGE_LEAD seconds; a task of a throttled array waits for its turn); the
 *  agent then asks for another pass once the buffer is ready.  A job waiting
 *  for CPUs or for its array's throttle holds no buffer space meanwhile.  While transfers run, their state is
 *  polled after 10 ms, then 1.5 times as long each time, up to PollInterval.
 *
 *  Without harmonia.conf (no manager daemon), requests are validated and jobs
 *  pass through stage-in and stage-out with no buffer behind them.
 *
 *  burst_buffer.conf is read with Slurm's own burst buffer common code
 *  (AllowUsers, DenyUsers, Pools, Flags, timeouts), which also packs what
 *  "scontrol show burst" prints; with bbmgrd, the pools shown are bbmgrd's.
 *
 *  This file holds the plugin's hooks (init, fini, bb_p_*).  The files under
 *  it stand in layers, each using only those below it (HACKING.md, Layers):
 *  bbh_model.c the plugin's state, bbmgrd's client and pools; bbh_jobs.c the
 *  job records; bbh_steps.c the requests to bbmgrd, bbh_show.c "scontrol
 *  show bbstat" and "show burst", bbh_sched.c when a buffer is set up and
 *  the pending reasons; bbh_agent.c the agent thread.  Each has its header.
\*****************************************************************************/

#include "bbh_model.h"
#include "bbh_jobs.h"
#include "bbh_show.h"
#include "bbh_sched.h"
#include "bbh_agent.h"

const char plugin_name[] = "burst_buffer harmonia plugin";
const char plugin_type[] = "burst_buffer/harmonia";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static pthread_t agent_tid = 0;
static char *status_cache = NULL; /* last /v1/status text */


/* ------------------------------------------------------------------ plugin */

static int _load_conf(void)
{
    char *path = get_extra_conf_path("harmonia.conf");
    char *err = NULL;
    bbh_conf_t c;
    int rc = SLURM_SUCCESS;

    if (bbh_conf_load(path, &c, &err) < 0) {
        error("%s: %s", plugin_type, err);
        xfree(err);
        rc = SLURM_ERROR;
    } else {
        bbh_conf_free(&conf);
        conf = c;
        if (conf.configured)
            info("%s: bbmgrd at %s (jobs use %s)", plugin_type, conf.url,
                 conf.job_url ? conf.job_url : "-");
        else
            info("%s: no %s: requests are validated, no buffer is set up", plugin_type, path);
    }
    xfree(path);
    return rc;
}

/* "scontrol show burst" prints GetSysState and GetSysStatus (the datawarp
 * plugin's scripts): say where this plugin gets them, not "(null)".  Call
 * with bb_mutex held, after bb_load_config() and _load_conf(). */
static void _sys_sources(void)
{
    const char *src = conf.configured ? conf.url : "none (no harmonia.conf)";

    if (!bb_state.bb_config.get_sys_state)
        bb_state.bb_config.get_sys_state = xstrdup_printf("%s GET /v1/pools", src);
    if (!bb_state.bb_config.get_sys_status)
        bb_state.bb_config.get_sys_status = xstrdup_printf("%s GET /v1/status", src);
}

extern int init(void)
{
    if (!running_in_slurmctld())
        return SLURM_SUCCESS;

    slurm_mutex_init(&bb_state.bb_mutex);
    slurm_mutex_init(&bb_state.term_mutex);
    slurm_cond_init(&bb_state.term_cond, NULL);
    slurm_mutex_lock(&bb_state.bb_mutex);
    bb_load_config(&bb_state, (char *)plugin_type);
    bb_alloc_cache(&bb_state);
    slurm_mutex_unlock(&bb_state.bb_mutex);
    if (_load_conf() != SLURM_SUCCESS)
        return SLURM_ERROR;
    slurm_mutex_lock(&bb_state.bb_mutex);
    _sys_sources();
    slurm_mutex_unlock(&bb_state.bb_mutex);

    agent_stop = false;
    agent_rescan = true;
    slurm_thread_create(&agent_tid, bbh_agent, NULL);
    log_flag(BURST_BUF, "loaded");
    return SLURM_SUCCESS;
}

extern int fini(void)
{
    if (!agent_tid)
        return SLURM_SUCCESS;

    slurm_mutex_lock(&bb_state.bb_mutex);
    agent_stop = true;
    slurm_cond_broadcast(&agent_cond);
    slurm_mutex_unlock(&bb_state.bb_mutex);
    pthread_join(agent_tid, NULL);
    agent_tid = 0;

    slurm_mutex_lock(&bb_state.bb_mutex);
    for (int i = 0; i < HJOB_HASH; i++) {
        while (hjobs[i]) {
            hjob_t *h = hjobs[i];
            hjobs[i] = h->next;
            bbh_hjob_free(h);
        }
    }
    xfree(status_cache);
    xfree(pool_nodes);
    pool_nodes_cnt = 0;
    json_decref(pools_last);
    pools_last = NULL;
    xfree(eager_ids);
    eager_cnt = eager_cap = 0;
    bbh_sched_fini();
    bbh_conf_free(&conf);
    bb_clear_config(&bb_state.bb_config, true);
    bb_clear_cache(&bb_state);
    slurm_mutex_unlock(&bb_state.bb_mutex);
    return SLURM_SUCCESS;
}

static bool _is_directive(char *tok)
{
    return !xstrncmp(tok, HU_BB_PREFIX, strlen(HU_BB_PREFIX));
}

/*
 * The batch script of one component of a heterogeneous job: the "#!" line,
 * the component's own #SBATCH and #BB_HARMONIA lines (those between its
 * "#SBATCH hetjob" separators), and for the first component the body, in
 * which #BB_HARMONIA lines are commented out.  So each component's buffer
 * request is its own: the buffer belongs to the component that asks for it.
 */
extern char *bb_p_build_het_job_script(char *script, uint32_t het_job_offset)
{
    return bb_common_build_het_job_script(script, het_job_offset, _is_directive);
}

extern uint64_t bb_p_get_system_size(void)
{
    uint64_t size = 0;

    slurm_mutex_lock(&bb_state.bb_mutex);
    for (uint32_t i = 0; i < bb_state.bb_config.pool_cnt; i++)
        size += bb_state.bb_config.pool_ptr[i].total_space;
    slurm_mutex_unlock(&bb_state.bb_mutex);
    return size / (1024 * 1024); /* MB, as the API wants */
}

extern int bb_p_load_state(bool init_config)
{
    if (!init_config)
        return SLURM_SUCCESS;

    slurm_mutex_lock(&bb_state.bb_mutex);
    bb_set_tres_pos(&bb_state);
    bb_state.last_load_time = time(NULL);
    agent_rescan = true;
    slurm_cond_signal(&agent_cond);
    slurm_mutex_unlock(&bb_state.bb_mutex);
    return SLURM_SUCCESS;
}

extern int bb_p_reconfig(void)
{
    int rc;

    slurm_mutex_lock(&bb_state.bb_mutex);
    bb_load_config(&bb_state, (char *)plugin_type);
    /* burst_buffer.conf's Pools= are not what bbmgrd has: show bbmgrd's
	 * last answer until the next one, not the file's figures */
    if (pools_last && conf.configured)
        bbh_pools_apply_locked(pools_last);
    rc = _load_conf();
    _sys_sources();
    agent_rescan = true;
    slurm_cond_signal(&agent_cond);
    slurm_mutex_unlock(&bb_state.bb_mutex);
    return rc;
}

static bool _uid_in(uid_t *list, uid_t uid)
{
    if (!list)
        return false;
    for (int i = 0; list[i]; i++)
        if (list[i] == uid)
            return true;
    return false;
}

static bool _blank(const char *s)
{
    for (; s && *s; s++)
        if (!isspace((unsigned char)*s) && *s != ';')
            return false;
    return true;
}

/* What a --bb text without any Harmonia directive gets as an answer. */
static char *_not_harmonia_msg(const char *bb)
{
    char shown[64], sugg[256], dw_hint[300];
    const char *hint = "";
    size_t n = 0;

    for (const char *p = bb; *p && n < sizeof(shown) - 4; p++)
        shown[n++] = (*p == '\n') ? ';' : *p;
    shown[n] = '\0';
    if (bb[n])
        strcat(shown, "...");
    if (strstr(bb, "#DW") || strstr(bb, "#BB ")) {
        /* the first DataWarp item, and what to write instead */
        for (const char *it = bb; *it;) {
            size_t n = strcspn(it, ";\n");
            int r = hu_bb_dw_equivalent(it, n, sugg, sizeof(sugg));

            if (r > 0) {
                snprintf(dw_hint, sizeof(dw_hint), " (DataWarp's syntax: write '%s' instead)",
                         sugg);
                hint = dw_hint;
                break;
            } else if (r == 0) {
                hint = " (DataWarp's syntax, with no Harmonia equivalent)";
                break;
            }
            it += n + (it[n] != '\0');
        }
        if (!hint[0])
            hint = " (DataWarp and #BB lines are for other burst buffer plugins)";
    } else if (!xstrncasecmp(bb + strspn(bb, " \t;"), "capacity=", 9))
        hint = " (write it as: jobbuffer capacity=SIZE)";
    return xstrdup_printf(
        "#BB_HARMONIA: --bb '%s' holds no Harmonia directive%s; burst_buffer/harmonia accepts "
        "jobbuffer, iohints, stage_in, stage_out, create_persistent, use_persistent and "
        "destroy_persistent, e.g. --bb \"jobbuffer capacity=10GiB\" (see harmonia-directives(5))",
        shown, hint);
}

/*
 * A request that the pools can never hold: a buffer or a persistent buffer
 * larger than its pool, or on more buffer nodes than the pool has.  Its pool
 * is the one named, else burst_buffer.conf's DefaultPool, else the largest.
 * Call with bb_mutex held.
 */
static burst_buffer_pool_t *_req_pool(const char *name, uint32_t *nodes)
{
    burst_buffer_pool_t *best = NULL;

    if (!name)
        name = bb_state.bb_config.default_pool;
    for (uint32_t i = 0; i < bb_state.bb_config.pool_cnt; i++) {
        burst_buffer_pool_t *p = &bb_state.bb_config.pool_ptr[i];
        if (name ? !xstrcmp(p->name, name) : (!best || p->total_space > best->total_space)) {
            best = p;
            *nodes = (pool_nodes && i < pool_nodes_cnt) ? pool_nodes[i] : 0;
        }
    }
    return best;
}

static bool _larger(const char *verb, uint64_t capacity, const burst_buffer_pool_t *p,
                    char **err_msg)
{
    char a[32], b[32];

    if (!p->total_space || capacity <= p->total_space)
        return false;
    xstrfmtcat(*err_msg, "#BB_HARMONIA: %s: capacity %s is larger than pool '%s' (%s)", verb,
               hu_bb_size_str(capacity, a, sizeof(a)), p->name,
               hu_bb_size_str(p->total_space, b, sizeof(b)));
    return true;
}

static int _too_large(const hu_bb_request_t *req, char **err_msg)
{
    burst_buffer_pool_t *p;
    uint32_t nodes = 0;

    if (req->has_buffer && (p = _req_pool(req->pool, &nodes))) {
        if (_larger("jobbuffer", req->capacity, p, err_msg))
            return SLURM_ERROR;
        if (nodes && req->nodes > nodes) {
            xstrfmtcat(
                *err_msg,
                "#BB_HARMONIA: jobbuffer: nodes=%u is more than pool '%s' has (%u buffer nodes)",
                req->nodes, p->name, nodes);
            return SLURM_ERROR;
        }
    }
    for (int i = 0; i < req->npersist; i++) {
        const hu_bb_persist_t *pp = &req->persist[i];
        if (pp->op != HU_BB_PERSIST_CREATE || !(p = _req_pool(pp->pool, &nodes)))
            continue;
        if (_larger("create_persistent", pp->capacity, p, err_msg))
            return SLURM_ERROR;
    }
    return SLURM_SUCCESS;
}

/*
 * The job's bb/harmonia TRES, in MB: its buffer and the persistent buffers it
 * creates (as Slurm's datawarp plugin counts them), so that accounting shows
 * them and association limits on bb/harmonia apply to the creating job.
 */
static uint64_t _tres_mb(const hu_bb_request_t *req)
{
    uint64_t bytes = req->has_buffer ? req->capacity : 0;

    for (int i = 0; i < req->npersist; i++)
        if (req->persist[i].op == HU_BB_PERSIST_CREATE)
            bytes += req->persist[i].capacity;
    return bytes / (1024 * 1024);
}

/*
 * Collect the job's directives (script and --bb), validate them, and replace
 * job_desc->burst_buffer with their canonical form.
 */
extern int bb_p_job_validate(job_desc_msg_t *job_desc, uid_t submit_uid, char **err_msg)
{
    hu_bb_request_t req;
    hu_error_t err;
    bbh_sym_t sym = { 0 };
    char *collected = NULL, *canon = NULL, *user = NULL;
    bool in_script, in_bb;
    int rc = SLURM_SUCCESS;

    memset(&req, 0, sizeof(req));
    /* DataWarp's #DW lines would leave the job without its buffer */
    if (hu_bb_check_foreign(job_desc->script, &err) < 0)
        goto invalid;
    /* a heterogeneous job's components each have their own request */
    collected = bbh_collect_script(job_desc->script, job_desc->het_job_offset);
    in_script = collected && collected[0];
    in_bb = hu_bb_has_directives(job_desc->burst_buffer, true);
    if (!in_script && !in_bb) {
        /* a --bb text with no directive in it would be dropped
		 * without a word: refuse it, saying what is accepted */
        if (!_blank(job_desc->burst_buffer)) {
            *err_msg = _not_harmonia_msg(job_desc->burst_buffer);
            rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
        }
        goto out; /* not a Harmonia job: untouched */
    }

    if (in_script && hu_bb_parse(&req, collected, strlen(collected), HU_BB_SRC_SCRIPT, &err) < 0)
        goto invalid;
    if (in_bb) {
        const char *bb = job_desc->burst_buffer;
        if (in_script && bbh_script_merged(&req, bb)) {
            /* job_submit/harmonia merged the script already */
            hu_bb_request_free(&req);
        }
        if (hu_bb_parse(&req, bb, strlen(bb), HU_BB_SRC_BB_OPTION, &err) < 0)
            goto invalid;
    }
    if (hu_bb_validate(&req, &err) < 0)
        goto invalid;
    /* the paths as the user sees them (nothing about what the user may
	 * not see); %j, %A and %a are not known yet.  job_submit/harmonia,
	 * when configured, checked them already (with the script's line
	 * numbers; those of every component of a heterogeneous job when it
	 * saw the first) */
    if (xstrcasestr(slurm_conf.job_submit_plugins, "harmonia"))
        goto checked;
    sym.job_id = 0;
    sym.user = user = uid_to_string_or_null(job_desc->user_id);
    sym.name = job_desc->name;
    sym.work_dir = job_desc->work_dir;
    if (bbh_check_paths_as(&req, job_desc->user_id, job_desc->group_id, &sym, err_msg) < 0) {
        rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
        goto out;
    }
checked:
    slurm_mutex_lock(&bb_state.bb_mutex);
    if (bb_state.bb_config.allow_users
        && !_uid_in(bb_state.bb_config.allow_users, job_desc->user_id)) {
        *err_msg = xstrdup("#BB_HARMONIA: user not allowed to use burst buffers (AllowUsers in "
                           "burst_buffer.conf)");
        rc = ESLURM_BURST_BUFFER_PERMISSION;
    } else if (_uid_in(bb_state.bb_config.deny_users, job_desc->user_id)) {
        *err_msg = xstrdup(
            "#BB_HARMONIA: user not allowed to use burst buffers (DenyUsers in burst_buffer.conf)");
        rc = ESLURM_BURST_BUFFER_PERMISSION;
    } else if (req.pool && !bb_valid_pool_test(&bb_state, req.pool)) {
        xstrfmtcat(*err_msg, "#BB_HARMONIA: jobbuffer: pool '%s' does not exist", req.pool);
        rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
    } else if (conf.configured && (_too_large(&req, err_msg) != SLURM_SUCCESS)) {
        rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
    }
    if (rc == SLURM_SUCCESS && bb_state.tres_pos > 0 && job_desc->tres_req_cnt)
        job_desc->tres_req_cnt[bb_state.tres_pos] = _tres_mb(&req);
    slurm_mutex_unlock(&bb_state.bb_mutex);
    if (rc != SLURM_SUCCESS)
        goto out;

    if (!(canon = hu_bb_format(&req))) {
        rc = ENOMEM;
        goto out;
    }
    xfree(job_desc->burst_buffer);
    job_desc->burst_buffer = xstrdup(canon);
    log_flag(BURST_BUF, "job of uid %u: burst_buffer:\n%s", job_desc->user_id, canon);
    goto out;

invalid:
    *err_msg = xstrdup(err.text);
    rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
    log_flag(BURST_BUF, "refused a request of uid %u: %s", job_desc->user_id, err.text);
out:
    hu_bb_request_free(&req);
    free(collected);
    free(canon);
    xfree(user);
    return rc;
}

extern int bb_p_job_validate2(job_record_t *job_ptr, char **err_msg)
{
    bb_job_t *bb_job;

    if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
        return SLURM_SUCCESS;
    slurm_mutex_lock(&bb_state.bb_mutex);
    bb_job = bbh_get_bb_job(job_ptr);
    if (bb_job && bb_job->state < BB_STATE_STAGING_IN) {
        bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_PENDING);
        /* the agent looks at it once the submission is over */
        if (eager_cnt == eager_cap) {
            eager_cap = eager_cap ? 2 * eager_cap : 64;
            xrecalloc(eager_ids, eager_cap, sizeof(*eager_ids));
        }
        if (!eager_cnt)
            eager_since = hu_mono();
        eager_ids[eager_cnt++] = job_ptr->job_id;
        agent_work = true;
        slurm_cond_signal(&agent_cond);
    }
    slurm_mutex_unlock(&bb_state.bb_mutex);
    return SLURM_SUCCESS;
}

extern void bb_p_job_set_tres_cnt(job_record_t *job_ptr, uint64_t *tres_cnt, bool locked)
{
    bb_job_t *bb_job;

    if (!tres_cnt || bb_state.tres_pos < 0)
        return;
    slurm_mutex_lock(&bb_state.bb_mutex);
    if ((bb_job = bbh_get_bb_job(job_ptr)))
        tres_cnt[bb_state.tres_pos] = (bb_job->total_size + bb_job->persist_add) / (1024 * 1024);
    slurm_mutex_unlock(&bb_state.bb_mutex);
}

static int _try_one(void *x, void *arg)
{
    job_record_t *job_ptr = x; /* the queue holds job records */
    bb_job_t *bb_job;

    if (!IS_JOB_PENDING(job_ptr) || !job_ptr->burst_buffer || !job_ptr->burst_buffer[0]
        || job_ptr->priority == 0)
        return 0;
    if (job_ptr->array_recs
        && ((job_ptr->array_task_id == NO_VAL) || (job_ptr->array_task_id == INFINITE)))
        return 0;
    if (!(bb_job = bbh_get_bb_job(job_ptr)))
        return 0;
    if (bb_job->state == BB_STATE_STAGING_IN) {
        hjob_t *h = bbh_hjob_find(job_ptr->job_id);

        /* waits for space whose end nobody knows: no expected start
		 * (squeue --start: N/A), not the time of this pass */
        if (h && h->start_unknown && bbh_waits_for_space(job_ptr))
            job_ptr->start_time = 0;
    }
    if (bb_job->state < BB_STATE_STAGING_IN) {
        enum job_state_reason why = bbh_waits_for(job_ptr);

        if (why == WAIT_NO_REASON) {
            bbh_start_stage_in(job_ptr, bb_job);
            bbh_hjob_get(job_ptr)->seen_wait = true;
        }
        bbh_set_reason(job_ptr, why);
    }
    return 0;
}

extern int bb_p_job_try_stage_in(list_t *job_queue)
{
    slurm_mutex_lock(&bb_state.bb_mutex);
    if (bb_state.last_load_time) {
        bbh_not_bb_apply();
        list_for_each(job_queue, _try_one, NULL);
    }
    slurm_mutex_unlock(&bb_state.bb_mutex);
    return SLURM_SUCCESS;
}

/* RET 1: stage-in complete (or nothing to stage); 0: under way; -1: not started */
extern int bb_p_job_test_stage_in(job_record_t *job_ptr, bool test_only)
{
    bb_job_t *bb_job;
    hjob_t *h;
    int rc;

    if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
        return 1;
    if (job_ptr->array_recs
        && ((job_ptr->array_task_id == NO_VAL) || (job_ptr->array_task_id == INFINITE)))
        return -1; /* the array's meta record is not a job */

    slurm_mutex_lock(&bb_state.bb_mutex);
    bb_job = bbh_get_bb_job(job_ptr);
    if (!bb_job) {
        rc = 1; /* not ours (another plugin's text) */
    } else {
        if (bb_job->state == BB_STATE_COMPLETE) /* requeued */
            bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_PENDING);
        h = bbh_hjob_find(job_ptr->job_id);
        if (bb_job->state < BB_STATE_STAGING_IN) {
            rc = -1;
            if (!test_only && job_ptr->priority != 0) {
                enum job_state_reason why = bbh_waits_for(job_ptr);

                if (why == WAIT_NO_REASON) {
                    bbh_start_stage_in(job_ptr, bb_job);
                    bbh_hjob_get(job_ptr)->seen_wait = true;
                    rc = 0;
                } else {
                    bbh_not_bb_add(job_ptr, why);
                }
            }
        } else if (bb_job->state == BB_STATE_STAGING_IN) {
            rc = 0;
            if (h)
                h->seen_wait = true;
            /* no room for its buffer yet: to the backfill
			 * scheduler, its stage-in has not started, so that
			 * the job's expected start (squeue --start) is when
			 * the space is expected to be free */
            if (test_only && bbh_waits_for_space(job_ptr))
                rc = -1;
        } else if (bb_job->state == BB_STATE_STAGED_IN) {
            /* after a restart, the buffer path must be known again
			 * before the job may start */
            rc = (conf.configured && (!h || h->want == WANT_RECONCILE)) ? 0 : 1;
            if (conf.configured && !h)
                bbh_want(job_ptr, WANT_RECONCILE);
        } else {
            rc = -1;
        }
    }
    slurm_mutex_unlock(&bb_state.bb_mutex);
    return rc;
}

static void _env_add(job_record_t *job_ptr, const char *name, const char *val)
{
    job_details_t *d = job_ptr->details;

    if (!d || !val)
        return;
    xrecalloc(d->env_sup, d->env_cnt + 2, sizeof(char *));
    d->env_sup[d->env_cnt++] = xstrdup_printf("%s=%s", name, val);
}

/*
 * name=val in the job's SPANK environment, which slurmd gives its Prolog and
 * Epilog (not its tasks): an earlier value (a requeued job) is replaced.  The
 * name must begin with SPANK_ (slurmd prefixes any other name with it).
 */
static void _spank_env_set(job_record_t *job_ptr, const char *name, const char *val)
{
    size_t n = strlen(name);

    for (uint32_t i = 0; i < job_ptr->spank_job_env_size; i++) {
        if (!xstrncmp(job_ptr->spank_job_env[i], name, n) && job_ptr->spank_job_env[i][n] == '=') {
            xfree(job_ptr->spank_job_env[i]);
            job_ptr->spank_job_env[i] = xstrdup_printf("%s=%s", name, val);
            return;
        }
    }
    xrecalloc(job_ptr->spank_job_env, job_ptr->spank_job_env_size + 1, sizeof(char *));
    job_ptr->spank_job_env[job_ptr->spank_job_env_size++] = xstrdup_printf("%s=%s", name, val);
}

/* The interposer (doc/interposer.md) when the job asks for it (iohints
 * interpose=yes) or the site's Interpose is on and the job does not refuse it. */
static void _interpose_env(job_record_t *job_ptr, hjob_t *h)
{
    hu_bb_request_t req;
    hu_error_t err;
    bool on = conf.interpose;

    if (bbh_parse_job_bb(h->canon, &req, &err) == 0 && req.interpose)
        on = req.interpose > 0;
    hu_bb_request_free(&req);
    if (!on)
        return;
    _env_add(job_ptr, "LD_PRELOAD",
             conf.interpose_library ? conf.interpose_library : HARMONIA_PRELOAD);
    if (conf.interpose_paths)
        _env_add(job_ptr, "HARMONIA_INTERPOSE_PATHS", conf.interpose_paths);
}

/*
 * A component of a heterogeneous job: its buffer's variables also go, named
 * NAME_HET_GROUP_<offset> as Slurm names its own per-component variables, to
 * the batch script, which runs in the first component (and so do
 * HARMONIA_URL and HARMONIA_MUNGE_SOCKET when that one has no request).
 * Slurm launches the script once every component has started.
 */
static void _het_env(job_record_t *job_ptr, hjob_t *h, const char *id)
{
    job_record_t *leader;
    char name[64];
    const char *vars[][2] = {
        { "HARMONIA_JOBID", id },
        { "HARMONIA_BB", h ? h->bb_path : NULL },
        { "HARMONIA_BB_NODES", h ? h->bb_nodes : NULL },
    };

    if (!job_ptr->het_job_id)
        return;
    leader = (job_ptr->het_job_id == job_ptr->job_id) ? job_ptr
                                                      : find_job_record(job_ptr->het_job_id);
    if (!leader)
        return;
    for (int i = 0; i < ARRAY_SIZE(vars); i++) {
        snprintf(name, sizeof(name), "%s_HET_GROUP_%u", vars[i][0], job_ptr->het_job_offset);
        _env_add(leader, name, vars[i][1]);
    }
    if ((leader != job_ptr) && conf.configured
        && (!leader->burst_buffer || !leader->burst_buffer[0])) {
        _env_add(leader, "HARMONIA_URL", conf.job_url);
        if (conf.munge_socket)
            _env_add(leader, "HARMONIA_MUNGE_SOCKET", conf.munge_socket);
    }
}

/* The job starts: give it its buffer's environment; tell bbmgrd. */
extern int bb_p_job_begin(job_record_t *job_ptr)
{
    bb_job_t *bb_job;
    hjob_t *h;
    char id[32], start[32];

    if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
        return SLURM_SUCCESS;
    slurm_mutex_lock(&bb_state.bb_mutex);
    if (!(bb_job = bbh_get_bb_job(job_ptr)))
        goto out;
    bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_RUNNING);
    snprintf(id, sizeof(id), "%u", job_ptr->job_id);
    _env_add(job_ptr, "HARMONIA_JOBID", id);
    /* this run of the job: its processes' shared files are named by it
	 * (libharmonia), so that a later job with the same id never joins them */
    snprintf(start, sizeof(start), "%ld", (long)job_ptr->start_time);
    _env_add(job_ptr, "HARMONIA_JOB_START", start);
    /* ... and harmonia-epilog removes this run's files, not those of a job
	 * with the same id of another cluster sharing the node */
    _spank_env_set(job_ptr, "SPANK_HARMONIA_JOB_START", start);
    if (!conf.configured) {
        _het_env(job_ptr, NULL, id);
        goto out;
    }
    _env_add(job_ptr, "HARMONIA_URL", conf.job_url);
    /* a site whose munged is not at libmunge's default socket (MungeSocket in
	 * harmonia.conf, or slurm.conf AuthInfo) tells its jobs where it is */
    if (conf.munge_socket)
        _env_add(job_ptr, "HARMONIA_MUNGE_SOCKET", conf.munge_socket);
    h = bbh_hjob_get(job_ptr);
    _env_add(job_ptr, "HARMONIA_BB", h->bb_path);
    _env_add(job_ptr, "HARMONIA_BB_NODES", h->bb_nodes);
    _interpose_env(job_ptr, h);
    if (h->persist_env) {
        char *copy = xstrdup(h->persist_env), *save = NULL, *l;
        for (l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
            char *eq = strchr(l, '=');
            if (eq) {
                *eq = '\0';
                _env_add(job_ptr, l, eq + 1);
            }
        }
        xfree(copy);
    }
    _het_env(job_ptr, h, id);
    /* slurmctld calls this before it counts the job's nodes (node_cnt is not
	 * the selected count yet, in 22.05 and 24.11): the nodes it selected are
	 * in node_bitmap already */
    h->ncompute = job_ptr->node_cnt;
    if (job_ptr->node_bitmap && bit_set_count(job_ptr->node_bitmap) > (int)h->ncompute)
        h->ncompute = bit_set_count(job_ptr->node_bitmap);
    bbh_want(job_ptr, WANT_BEGIN);
out:
    slurm_mutex_unlock(&bb_state.bb_mutex);
    return SLURM_SUCCESS;
}

/* A hook of a job: 'none' for a job without a request, else what fn says
 * (bb_mutex held while it runs). */
static int _locked(job_record_t *job_ptr, int (*fn)(job_record_t *), int none)
{
    int rc;

    if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
        return none;
    slurm_mutex_lock(&bb_state.bb_mutex);
    rc = fn(job_ptr);
    slurm_mutex_unlock(&bb_state.bb_mutex);
    return rc;
}

static int _revoke_alloc(job_record_t *job_ptr)
{
    bb_job_t *bb_job = bbh_get_bb_job(job_ptr);

    if (bb_job && (bb_job->state == BB_STATE_RUNNING))
        bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_STAGED_IN);
    return SLURM_SUCCESS;
}

extern int bb_p_job_revoke_alloc(job_record_t *job_ptr)
{
    return _locked(job_ptr, _revoke_alloc, SLURM_SUCCESS);
}

static int _start_stage_out(job_record_t *job_ptr)
{
    bb_job_t *bb_job = bbh_get_bb_job(job_ptr);

    if (bb_job && (bb_job->state < BB_STATE_POST_RUN)) {
        bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_STAGING_OUT);
        job_state_set_flag(job_ptr, JOB_STAGE_OUT);
        xfree(job_ptr->state_desc);
        xstrfmtcat(job_ptr->state_desc, "%s: Stage-out in progress", plugin_type);
        bbh_want(job_ptr, WANT_STAGE_OUT);
    }
    return SLURM_SUCCESS;
}

extern int bb_p_job_start_stage_out(job_record_t *job_ptr)
{
    return _locked(job_ptr, _start_stage_out, SLURM_SUCCESS);
}

static int _post_run(job_record_t *job_ptr)
{
    bb_job_t *bb_job = bbh_get_bb_job(job_ptr);

    if (bb_job && (bb_job->state == BB_STATE_POST_RUN || bb_job->state == BB_STATE_STAGING_OUT))
        return 0;
    return 1;
}

/* RET 1: post-run done (or none); 0: in progress; -1: error */
extern int bb_p_job_test_post_run(job_record_t *job_ptr)
{
    return _locked(job_ptr, _post_run, 1);
}

static int _stage_out(job_record_t *job_ptr)
{
    bb_job_t *bb_job = bb_job_find(&bb_state, job_ptr->job_id);

    if (!bb_job)
        return 1;
    if (bb_job->state == BB_STATE_COMPLETE) {
        if (!bbh_hjob_find(job_ptr->job_id))
            bb_job_del(&bb_state, job_ptr->job_id);
        return 1;
    }
    if (bb_job->state >= BB_STATE_POST_RUN)
        return 0;
    if (IS_JOB_FINISHED(job_ptr) && !IS_JOB_STAGE_OUT(job_ptr))
        return 1; /* ended before it ran (cancelled) */
    return 0;
}

/* RET 1: stage-out complete (or none); 0: in progress; -1: error */
extern int bb_p_job_test_stage_out(job_record_t *job_ptr)
{
    return _locked(job_ptr, _stage_out, 1);
}

/*
 * scancel --hurry during stage-out: the job says that its stage-out was cut
 * short and where (bbmgrd removes the partial files; whole files already
 * copied stay).  Call with bb_mutex held.
 */
static void _stage_out_cut(job_record_t *job_ptr)
{
    hu_bb_request_t req;
    hjob_t *h = bbh_hjob_get(job_ptr);
    char *dests = NULL, *serr = NULL, *msg;

    bbh_hjob_symbols(h, job_ptr);
    bbh_hjob_request(h, &req, &serr);
    for (int i = 0; i < req.nstage_out; i++)
        xstrfmtcat(dests, "%s%s", dests ? ", " : "", req.stage_out[i].destination);
    hu_bb_request_free(&req);
    xfree(serr);
    if (!dests)
        return;
    msg = xstrdup_printf("cut short by scancel --hurry: %s may hold part of the job's data (only "
                         "whole files, no partial file)",
                         dests);
    bb_update_system_comment(job_ptr, "stage-out", msg, 0);
    xfree(job_ptr->state_desc);
    xstrfmtcat(job_ptr->state_desc, "%s: stage-out %s", plugin_type, msg);
    last_job_update = time(NULL);
    info("%s: %pJ: stage-out %s", plugin_type, job_ptr, msg);
    xfree(msg);
    xfree(dests);
}

/*
 * A job cancelled before it ran: what the plugin said of its buffer while it
 * waited ("stage-in running", "waiting for ... of free buffer space") is no
 * longer true, so it goes; a reason of its own (scancel --hurry's) stays.
 */
static void _clear_reason(job_record_t *job_ptr)
{
    if (!job_ptr->state_desc || xstrncmp(job_ptr->state_desc, plugin_type, strlen(plugin_type))
        || strstr(job_ptr->state_desc, "scancel --hurry"))
        return;
    xfree(job_ptr->state_desc);
    switch (job_ptr->state_reason) {
    case WAIT_BURST_BUFFER_RESOURCE:
    case WAIT_BURST_BUFFER_STAGING:
    case FAIL_BURST_BUFFER_OP:
    case WAIT_HELD_USER:
        job_ptr->state_reason = WAIT_NO_REASON;
        break;
    default:
        break;
    }
    last_job_update = time(NULL);
}

extern int bb_p_job_cancel(job_record_t *job_ptr)
{
    bb_job_t *bb_job;
    hjob_t *h;

    if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
        return SLURM_SUCCESS;
    slurm_mutex_lock(&bb_state.bb_mutex);
    bb_job = bbh_get_bb_job(job_ptr);
    h = bbh_hjob_find(job_ptr->job_id);
    if (!(job_ptr->bit_flags & JOB_KILL_HURRY))
        _clear_reason(job_ptr);
    if (bb_job) {
        if (bb_job->state < BB_STATE_STAGING_IN && (!h || !h->registered)) {
            bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_COMPLETE);
            if (h && conf.configured)
                bbh_want(job_ptr, WANT_TEARDOWN);
            else if (h)
                bbh_hjob_del(job_ptr->job_id);
        } else if (bb_job->state < BB_STATE_COMPLETE) {
            if (bb_job->state == BB_STATE_POST_RUN || bb_job->state == BB_STATE_STAGING_OUT)
                _stage_out_cut(job_ptr);
            bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_TEARDOWN);
            bbh_want(job_ptr, WANT_TEARDOWN);
        }
    }
    slurm_mutex_unlock(&bb_state.bb_mutex);
    return SLURM_SUCCESS;
}

extern int bb_p_run_script(char *func, uint32_t job_id, uint32_t argc, char **argv,
                           job_info_msg_t *job_info, char **resp_msg)
{
    if (resp_msg)
        *resp_msg = xstrdup("burst_buffer/harmonia runs no scripts");
    return SLURM_ERROR;
}

/*
 * A reservation's BurstBuffer= (the only caller, reservation.c) -> "<bb TRES
 * id>=<MB>".  Either Slurm's documented form, comma-separated
 * "[plugin:]#[units]" ("harmonia:10G", "100GB"; other plugins' tokens and node
 * counts are not our capacity), as the lua and datawarp plugins read it, or
 * "#BB_HARMONIA jobbuffer capacity=..." directives.
 */
extern char *bb_p_xlate_bb_2_tres_str(char *burst_buffer)
{
    hu_bb_request_t req;
    hu_error_t err;
    char *tres = NULL, *tmp, *tok, *save = NULL;
    uint64_t mb = 0, size;

    if (!burst_buffer || bb_state.tres_id < 1)
        return NULL;
    if (hu_bb_has_directives(burst_buffer, true)) {
        if (bbh_parse_job_bb(burst_buffer, &req, &err) < 0)
            return NULL;
        if (req.has_buffer)
            mb = req.capacity / (1024 * 1024);
        hu_bb_request_free(&req);
    } else {
        tmp = xstrdup(burst_buffer);
        for (tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            if (strchr(tok, ':')) {
                if (xstrncmp(tok, "harmonia:", 9))
                    continue;
                tok += 9;
            }
            size = bb_get_size_num(tok, 1);
            if (!(size & BB_SIZE_IN_NODES))
                mb += (size + (1024 * 1024) - 1) / (1024 * 1024);
        }
        xfree(tmp);
    }
    if (mb)
        xstrfmtcat(tres, "%d=%" PRIu64, bb_state.tres_id, mb);
    return tres;
}

/* The API symbols of older Slurm releases (slurm_compat.h). */
#define SLURM_COMPAT_BB_API
#include "slurm_compat.h"
