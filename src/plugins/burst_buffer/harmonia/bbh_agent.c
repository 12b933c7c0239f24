/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_agent.c - burst_buffer/harmonia: the agent thread, which applies the
 *  steps' results to the jobs, follows bbmgrd's pools and runs the due work
 *  in rounds.
 *  How the plugin works: burst_buffer_harmonia.c.
\*****************************************************************************/

#include "bbh_model.h"
#include "bbh_jobs.h"
#include "bbh_steps.h"
#include "bbh_show.h"
#include "bbh_sched.h"
#include "bbh_agent.h"

#include <errno.h>

/* Seconds between two reads of the running jobs (learned figures, holds). */
#define RUNNING_EVERY 2

/* ------------------------------------------------------------------ agent */

/*
 * Hold a pending job whose buffer could not be set up, with the reason as its
 * description.  The hold is a user hold (WAIT_HELD_USER): slurmctld lets a job's
 * owner release only those, and the owner is who can mend what failed (a
 * stage-in source, a name) and retry with "scontrol release".  A job that is
 * no longer pending keeps FAIL_BURST_BUFFER_OP.
 */
static void _fail_job(job_record_t *job_ptr, bb_job_t *bb_job, const char *op, const char *msg)
{
    xfree(job_ptr->state_desc);
    job_ptr->state_reason = FAIL_BURST_BUFFER_OP;
    xstrfmtcat(job_ptr->state_desc, "%s: %s: %s", plugin_type, op, msg);
    bb_update_system_comment(job_ptr, (char *)op, (char *)msg, 0);
    if (IS_JOB_PENDING(job_ptr)) {
        job_ptr->priority = 0; /* hold */
        job_ptr->state_reason = WAIT_HELD_USER;
    }
    last_job_update = time(NULL);
    error("%s: %pJ: %s failed: %s", plugin_type, job_ptr, op, msg);
}

static void _set_note(job_record_t *job_ptr, const char *msg)
{
    if (!msg)
        return;
    if (job_ptr->state_desc && strstr(job_ptr->state_desc, msg))
        return;
    xfree(job_ptr->state_desc);
    xstrfmtcat(job_ptr->state_desc, "%s: %s", plugin_type, msg);
    last_job_update = time(NULL);
}

/* The job's buffer is gone from "scontrol show burst".  bb_mutex held. */
static void _free_alloc(job_record_t *job_ptr)
{
    bb_alloc_t *a = bb_find_alloc_rec(&bb_state, job_ptr);

    if (a)
        (void)bb_free_alloc_rec(&bb_state, a);
}

/* A kept buffer stays listed by "scontrol show burst" (also after a restart
 * of slurmctld), in state teardown-fail.  Call with bb_mutex held. */
static void _keep_alloc(job_record_t *job_ptr, bb_job_t *bb_job)
{
    bb_alloc_t *a = bb_find_alloc_rec(&bb_state, job_ptr);

    if (!a && bb_job->total_size)
        a = bb_alloc_job(&bb_state, job_ptr, bb_job);
    if (a)
        a->state = BB_STATE_TEARDOWN_FAIL;
}

/* Apply a step's result; returns true when a job became ready to start.
 * Call with the job write lock and bb_mutex held. */
static bool _apply_locked(work_t *w, step_rc_t rc)
{
    bool kick = false;
    job_record_t *job_ptr;
    bb_job_t *bb_job = NULL;
    hjob_t *h;
    time_t now = time(NULL);
    double delay;

    job_ptr = find_job_record(w->job_id);
    h = bbh_hjob_find(w->job_id);
    if (job_ptr)
        bb_job = bbh_get_bb_job(job_ptr);
    if (!h || h->want != w->want) {
        /* a hook asked for something else meanwhile */
        goto out;
    }
    h->registered = h->registered || w->registered;
    if (w->new_path) {
        xfree(h->bb_path);
        h->bb_path = xstrdup(w->new_path);
    }
    if (w->new_nodes) {
        xfree(h->bb_nodes);
        h->bb_nodes = xstrdup(w->new_nodes);
    }
    if (w->persist_env) {
        xfree(h->persist_env);
        h->persist_env = xstrdup(w->persist_env);
    }
    if (w->allocated && job_ptr && bb_job && bb_job->total_size
        && !bb_find_alloc_rec(&bb_state, job_ptr)) {
        bb_alloc_t *a = bb_alloc_job(&bb_state, job_ptr, bb_job);

        /* a record made again shows the buffer's first creation,
		 * also after slurmctld restarted (as 'scontrol reconfigure'
		 * does from Slurm 23.11): bbmgrd's */
        if (!h->alloc_time)
            h->alloc_time = w->alloc_created ? w->alloc_created : now;
        if (a)
            a->create_time = h->alloc_time;
    }
    h->step = w->step;

    switch (rc) {
    case STEP_AGAIN:
        h->tries++;
        if (w->dirs_wait) {
            /* an agent makes them at its next report (every
			 * agents.interval, 0.5 s by default) */
            delay = MIN(DIRS_CHECK, (double)conf.poll_interval);
        } else if (w->stage_wait) {
            /* small transfers end within milliseconds: poll
			 * after 10 ms, then 1.5 times as long each time, up
			 * to PollInterval */
            delay = 0.01 * pow(1.5, MIN(h->polls, 20));
            delay = MIN(delay, (double)conf.poll_interval);
            h->polls++;
        } else if (w->want == WANT_KEPT) {
            delay = KEPT_CHECK;
            if (job_ptr && bb_job)
                _keep_alloc(job_ptr, bb_job);
        } else {
            delay = (w->msg && strstr(w->msg, "unreachable")) ? conf.retry_interval
                                                              : conf.poll_interval;
        }
        h->next_try = hu_mono() + delay;
        xfree(h->note);
        h->note = xstrdup(w->msg);
        if (job_ptr && w->msg)
            _set_note(job_ptr, w->msg);
        goto out;
    case STEP_FAIL:
        h->want = WANT_NOTHING;
        if (job_ptr && bb_job) {
            if (w->want == WANT_STAGE_IN) {
                _fail_job(job_ptr, bb_job, "stage-in", w->msg ? w->msg : "failed");
                bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_PENDING);
                /* give its space back while it is held; a
				 * release (scontrol release) starts the
				 * stage-in again from the beginning */
                h->want = WANT_TEARDOWN;
                h->keep_pending = true;
                h->step = 0;
                h->tries = 0;
                h->next_try = 0;
                agent_work = true;
            } else if (w->want == WANT_STAGE_OUT) {
                /* keep the buffer (its data was not saved),
				 * listed and counted, and let the job end; an
				 * administrator frees it (bbmgr release) */
                char *m = xstrdup_printf("%s; its data is kept in the job's buffer (%s on %s) "
                                         "until an administrator frees it with 'bbmgr release %u'",
                                         w->msg ? w->msg : "failed", h->bb_path ? h->bb_path : "-",
                                         h->bb_nodes ? h->bb_nodes : "-", w->job_id);
                _fail_job(job_ptr, bb_job, "stage-out", m);
                xfree(m);
                job_state_unset_flag(job_ptr, JOB_STAGE_OUT);
                bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_TEARDOWN_FAIL);
                _keep_alloc(job_ptr, bb_job);
                h->want = WANT_KEPT;
                h->step = 0;
                h->next_try = hu_mono() + KEPT_CHECK;
            }
        }
        goto out;
    case STEP_DONE:
    default:
        break;
    }

    h->want = WANT_NOTHING;
    xfree(h->note);
    switch (w->want) {
    case WANT_STAGE_IN:
        if (job_ptr && bb_job && bb_job->state == BB_STATE_STAGING_IN) {
            bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_STAGED_IN);
            xfree(job_ptr->state_desc);
            log_flag(BURST_BUF, "%pJ stage-in complete (%s on %s)", job_ptr,
                     h->bb_path ? h->bb_path : "-", h->bb_nodes ? h->bb_nodes : "-");
            /* A scheduler pass that saw the job wait will not
			 * look again by itself: ask for one.  A job staged
			 * in before any pass looked at it (stage-in started
			 * at submission) is taken by the pass its
			 * submission queued, as any other job. */
            kick = h->seen_wait;
        }
        break;
    case WANT_RECONCILE:
        if (job_ptr && bb_job && bb_job->state == BB_STATE_STAGING_IN) {
            bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_STAGED_IN);
            kick = true;
        }
        break;
    case WANT_KEPT:
        if (job_ptr) {
            _free_alloc(job_ptr);
            if (bb_job)
                bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_COMPLETE);
            bb_update_system_comment(job_ptr, "teardown",
                                     "the buffer kept after the failed stage-out was released", 0);
            last_job_update = now;
            info("%s: %pJ: the buffer kept after its failed stage-out was released", plugin_type,
                 job_ptr);
        }
        bbh_hjob_del(w->job_id);
        break;
    case WANT_STAGE_OUT:
    case WANT_TEARDOWN:
        if (job_ptr && h->keep_pending) {
            _free_alloc(job_ptr);
            log_flag(BURST_BUF, "%pJ: space of the failed stage-in released", job_ptr);
        } else if (job_ptr) {
            _free_alloc(job_ptr);
            if (bb_job)
                bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_COMPLETE);
            if (w->want == WANT_STAGE_OUT || IS_JOB_STAGE_OUT(job_ptr)) {
                job_state_unset_flag(job_ptr, JOB_STAGE_OUT);
                /* a stage-out cut short says so */
                if (!job_ptr->state_desc || !strstr(job_ptr->state_desc, "scancel --hurry"))
                    xfree(job_ptr->state_desc);
                last_job_update = now;
            }
            log_flag(BURST_BUF, "%pJ %s complete", job_ptr,
                     w->want == WANT_STAGE_OUT ? "stage-out" : "teardown");
        }
        bbh_hjob_del(w->job_id);
        break;
    default:
        break;
    }
out:
    return kick;
}

/* Apply the results of n steps under one taking of the locks (slurmctld's job
 * write lock, then bb_mutex); returns true when a job became ready to start. */
static bool _apply_all(work_t *ws, step_rc_t *rcs, int n)
{
    slurmctld_lock_t job_write_lock = { .job = WRITE_LOCK };
    bool kick = false;

    lock_slurmctld(job_write_lock);
    slurm_mutex_lock(&bb_state.bb_mutex);
    for (int i = 0; i < n; i++)
        kick |= _apply_locked(&ws[i], rcs[i]);
    slurm_mutex_unlock(&bb_state.bb_mutex);
    unlock_slurmctld(job_write_lock);
    return kick;
}

/* A job's buffer is ready: ask the main scheduler for a pass now rather than
 * at the next periodic one (schedule() queues the request; it takes its own
 * locks, none may be held here). */
static void _kick_scheduler(void)
{
    schedule(false);
}

/* Without bbmgrd: every operation completes at once. */
static void _run_local(work_t *w)
{
    step_rc_t rc = STEP_DONE;

    w->step = 99;
    if (_apply_all(w, &rc, 1))
        _kick_scheduler();
}

/* Pick one job whose work is due and that this round has not run yet; fill w.
 * Call with bb_mutex held. */
static bool _next_due(work_t *w, double now, unsigned round)
{
    for (int i = 0; i < HJOB_HASH; i++) {
        for (hjob_t *h = hjobs[i]; h; h = h->next) {
            if (h->want == WANT_NOTHING || h->next_try > now || h->round == round)
                continue;
            memset(w, 0, sizeof(*w));
            /* until _apply() says when: not before a second if
			 * the step cannot run (no client) */
            h->next_try = now + 1.0;
            w->job_id = h->job_id;
            w->user_id = h->user_id;
            w->group_id = h->group_id;
            w->user_name = xstrdup(h->user_name);
            w->job_name = xstrdup(h->job_name);
            w->want = h->want;
            w->step = h->step;
            w->registered = h->registered;
            w->bb_path = xstrdup(h->bb_path);
            w->ncompute = h->ncompute;
            bbh_hjob_request(h, &w->req, &w->subst_err);
            h->round = round; /* not again this round */
            return true;
        }
    }
    return false;
}

/*
 * Take bbmgrd's GET /v1/persistent answer as the persistent buffers "scontrol
 * show burst" lists: by name, with owner, pool, size and creation time.
 */
static void _persist_apply(json_t *resp)
{
    json_t *list = json_object_get(resp, "persistent"), *p;
    bb_alloc_t **old = NULL;
    int nold = 0;
    size_t i;

    if (!json_is_array(list))
        return;
    slurm_mutex_lock(&bb_state.bb_mutex);
    for (int h = 0; h < BB_HASH_SIZE; h++)
        for (bb_alloc_t *a = bb_state.bb_ahash[h]; a; a = a->next)
            if (a->name && !a->job_id) {
                xrecalloc(old, nold + 1, sizeof(*old));
                old[nold++] = a;
            }
    for (int k = 0; k < nold; k++)
        (void)bb_free_alloc_rec(&bb_state, old[k]);
    xfree(old);
    json_array_foreach (list, i, p) {
        const char *name = bbh_json_str(p, "name"), *pool = bbh_json_str(p, "pool");
        double created = json_number_value(json_object_get(p, "created"));
        bb_alloc_t *a;

        if (!name)
            continue;
        a = bb_alloc_name_rec(&bb_state, (char *)name,
                              json_integer_value(json_object_get(p, "uid")));
        a->size = json_number_value(json_object_get(p, "capacity"));
        a->pool = xstrdup(pool);
        if (created > 0)
            a->create_time = (time_t)created;
        else
            a->create_time = time(NULL);
    }
    slurm_mutex_unlock(&bb_state.bb_mutex);
}

/* Refresh the pools and persistent buffers shown by "scontrol show burst"
 * from bbmgrd. */
static void _refresh_pools(hm_client_t *cli)
{
    json_t *resp = NULL;
    char *msg = NULL;
    int st = bbh_call(cli, "GET", "/v1/pools", NULL, &resp, &msg);

    if (st == 200)
        bbh_pools_apply(resp);
    json_decref(resp);
    resp = NULL;
    st = bbh_call(cli, "GET", "/v1/persistent", NULL, &resp, &msg);
    if (st == 200)
        _persist_apply(resp);
    json_decref(resp);
    xfree(msg);
}

/*
 * The running jobs whose I/O phases bbmgrd holds (capacity.over: hold,
 * doc/security.md, Capacity): the reason becomes the job's description
 * ("scontrol show job": Reason=burst_buffer/harmonia: job 42: its buffer
 * holds ...), and is taken back once bbmgrd releases them.  bbmgrd is asked
 * without any lock; the jobs are then updated under one short taking of the
 * job write lock, and only when a job is or was held.
 */
#define HOLD_MARK "(capacity.over: hold)"
#define HOLD_MAX 256
static uint32_t hold_ids[HOLD_MAX];
static int hold_n;

static void _apply_holds(json_t *resp)
{
    slurmctld_lock_t job_write_lock = { .job = WRITE_LOCK };
    json_t *jobs = json_object_get(resp, "jobs");
    char *why[HOLD_MAX];
    uint32_t ids[HOLD_MAX];
    int n = 0;

    for (size_t i = 0; i < json_array_size(jobs) && n < HOLD_MAX; i++) {
        json_t *j = json_array_get(jobs, i);
        const char *h = bbh_json_str(j, "hold"), *id = bbh_json_str(j, "id");
        char *end = NULL;
        unsigned long v;

        if (!h || !id || !strstr(h, HOLD_MARK))
            continue;
        errno = 0;
        v = strtoul(id, &end, 10);
        if (errno || !end || *end || !v || v > UINT32_MAX)
            continue;
        ids[n] = (uint32_t)v;
        why[n++] = xstrdup(h);
    }
    if (!n && !hold_n)
        return;
    lock_slurmctld(job_write_lock);
    for (int i = 0; i < hold_n; i++) {
        job_record_t *job_ptr;
        bool still = false;

        for (int k = 0; k < n && !still; k++)
            still = ids[k] == hold_ids[i];
        if (still || !(job_ptr = find_job_record(hold_ids[i])))
            continue;
        if (job_ptr->state_desc && strstr(job_ptr->state_desc, HOLD_MARK)) {
            xfree(job_ptr->state_desc);
            last_job_update = time(NULL);
            info("%s: %pJ: its I/O phases are no longer held", plugin_type, job_ptr);
        }
    }
    for (int k = 0; k < n; k++) {
        job_record_t *job_ptr = find_job_record(ids[k]);

        if (job_ptr && IS_JOB_RUNNING(job_ptr))
            _set_note(job_ptr, why[k]);
    }
    unlock_slurmctld(job_write_lock);
    for (int k = 0; k < n; k++) {
        hold_ids[k] = ids[k];
        xfree(why[k]);
    }
    hold_n = n;
}

/* After start or reconfigure: rebuild the records of every job with a request
 * (jobs recovered from slurmctld's state). */
static void _scan_jobs(void)
{
    slurmctld_lock_t job_read_lock = { .job = READ_LOCK };
    list_itr_t *it;
    job_record_t *job_ptr;

    lock_slurmctld(job_read_lock);
    slurm_mutex_lock(&bb_state.bb_mutex);
    it = list_iterator_create(job_list);
    while ((job_ptr = list_next(it))) {
        if (job_ptr->burst_buffer && job_ptr->burst_buffer[0] && !IS_JOB_COMPLETED(job_ptr))
            (void)bbh_get_bb_job(job_ptr);
        else if (job_ptr->burst_buffer
                 && (IS_JOB_STAGE_OUT(job_ptr)
                     || !xstrcmp(job_ptr->burst_buffer_state, "teardown-fail")))
            (void)bbh_get_bb_job(job_ptr); /* a kept buffer */
    }
    list_iterator_destroy(it);
    slurm_mutex_unlock(&bb_state.bb_mutex);
    unlock_slurmctld(job_read_lock);
}

/*
 * One read of bbmgrd's running jobs, when the plugin follows a job (or a job
 * was held): what it learned of their I/O phases, which "scontrol show burst"
 * shows next to their buffers (bbh_show.c), and the jobs whose phases it holds.
 * A failed read is tried again at the next refresh.
 */
static void _refresh_running(hm_client_t *cli)
{
    json_t *resp = NULL;
    char *msg = NULL;
    bool any = hold_n > 0;

    slurm_mutex_lock(&bb_state.bb_mutex);
    for (int i = 0; i < HJOB_HASH && !any; i++)
        any = hjobs[i] != NULL;
    slurm_mutex_unlock(&bb_state.bb_mutex);
    if (any && bbh_call(cli, "GET", "/v1/jobs?state=running", NULL, &resp, &msg) == 200) {
        bbh_learned_apply(resp);
        _apply_holds(resp);
    }
    json_decref(resp);
    xfree(msg);
}

/* Seconds until the earliest due work (at most 1).  Call with bb_mutex held. */
static double _next_wait(void)
{
    double now = hu_mono(), wait = 1.0;

    for (int i = 0; i < HJOB_HASH; i++)
        for (hjob_t *h = hjobs[i]; h; h = h->next)
            if (h->want != WANT_NOTHING)
                wait = MIN(wait, h->next_try - now);
    return MAX(wait, 0.0);
}

extern void *bbh_agent(void *arg)
{
    hm_client_t *cli = NULL;
    work_t *ws = xcalloc(BATCH_JOBS, sizeof(*ws));
    step_rc_t *rcs = xcalloc(BATCH_JOBS, sizeof(*rcs));
    time_t last_pools = 0, last_running = 0;
    bool pools_stale = false;
    unsigned round = 0;

    while (1) {
        time_t now;
        double mnow;

        slurm_mutex_lock(&bb_state.bb_mutex);
        if (!agent_stop && !agent_work) {
            /* no new work since the last round: sleep until a hook
			 * signals or the earliest retry/poll is due (1 s at
			 * most) */
            double wait = _next_wait();
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += (time_t)wait;
            ts.tv_nsec += (long)((wait - (time_t)wait) * 1e9);
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            if (wait > 0)
                pthread_cond_timedwait(&agent_cond, &bb_state.bb_mutex, &ts);
        }
        /* submissions just in: let the burst gather (EAGER_GATHER) */
        while (!agent_stop && eager_cnt && hu_mono() - eager_since < EAGER_GATHER) {
            double until = eager_since + EAGER_GATHER - hu_mono();
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += (long)(until * 1e9);
            while (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&agent_cond, &bb_state.bb_mutex, &ts);
        }
        agent_work = false;
        if (agent_stop) {
            slurm_mutex_unlock(&bb_state.bb_mutex);
            break;
        }
        bool rescan = agent_rescan;
        agent_rescan = false;
        slurm_mutex_unlock(&bb_state.bb_mutex);

        if (rescan && bb_state.last_load_time)
            _scan_jobs();
        else if (rescan)
            agent_rescan = true; /* jobs not loaded yet */
        if (bb_state.last_load_time)
            bbh_eager_stage_in();

        if (conf.configured && !cli)
            cli = bbh_client(conf.timeout);
        now = time(NULL);
        /* every 10 s, and within a second of a new allocation (not
		 * after each one: a burst of small jobs would pay one more
		 * round trip each) */
        if (cli && (now - last_pools >= 10 || (pools_stale && now != last_pools))) {
            _refresh_pools(cli);
            last_pools = now;
            pools_stale = false;
        }
        if (cli && now - last_running >= RUNNING_EVERY) {
            _refresh_running(cli);
            last_running = now;
        }
        /* Run every due job once per round, BATCH_JOBS at a time. */
        round++;
        mnow = hu_mono();
        while (1) {
            int n = 0;
            bool released = false, allocated = false;

            slurm_mutex_lock(&bb_state.bb_mutex);
            while (n < BATCH_JOBS && !agent_stop && _next_due(&ws[n], mnow, round))
                n++;
            slurm_mutex_unlock(&bb_state.bb_mutex);
            if (!n)
                break;
            if (!conf.configured) {
                for (int i = 0; i < n; i++)
                    _run_local(&ws[i]);
            } else if (cli) {
                bool pools = bbh_run_batch(cli, ws, rcs, n);
                for (int i = 0; i < n; i++) {
                    released |= ws[i].released;
                    /* persistent buffers made or gone are
					 * listed again soon, as allocations */
                    allocated |= ws[i].allocated || ws[i].req.npersist;
                }
                /* the pools shown by "scontrol show burst" are
				 * true before Slurm learns the jobs are done */
                if (released && !pools)
                    _refresh_pools(cli);
                if (released) {
                    last_pools = time(NULL);
                    pools_stale = false;
                }
                if (_apply_all(ws, rcs, n))
                    _kick_scheduler();
                if (allocated)
                    pools_stale = true;
            }
            for (int i = 0; i < n; i++)
                bbh_work_free(&ws[i]);
        }
    }
    xfree(ws);
    xfree(rcs);
    hm_client_destroy(cli);
    return NULL;
}
