/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_jobs.c - burst_buffer/harmonia: the plugin's record of each job
 *  (hjob_t), what its request means for it, and Slurm's record of its buffer.
 *  How the plugin works: burst_buffer_harmonia.c.
\*****************************************************************************/

#include "bbh_model.h"
#include "bbh_jobs.h"

/* ------------------------------------------------------------------ jobs */

extern hjob_t *bbh_hjob_find(uint32_t job_id)
{
    hjob_t *h;

    for (h = hjobs[job_id % HJOB_HASH]; h; h = h->next)
        if (h->job_id == job_id)
            return h;
    return NULL;
}

/* What the symbols of the job's request stand for (an array task learns its
 * task id when it is split from the array's record). */
extern void bbh_hjob_symbols(hjob_t *h, job_record_t *job_ptr)
{
    h->array_job_id = job_ptr->array_job_id;
    h->array_task_id = job_ptr->array_task_id;
    if (!h->work_dir && job_ptr->details)
        h->work_dir = xstrdup(job_ptr->details->work_dir);
}

extern hjob_t *bbh_hjob_get(job_record_t *job_ptr)
{
    hjob_t *h = bbh_hjob_find(job_ptr->job_id);

    if (h)
        return h;
    h = xmalloc(sizeof(*h));
    h->job_id = job_ptr->job_id;
    h->user_id = job_ptr->user_id;
    h->group_id = job_ptr->group_id;
    h->user_name = uid_to_string_or_null(job_ptr->user_id);
    h->job_name = xstrdup(job_ptr->name);
    h->canon = xstrdup(job_ptr->burst_buffer);
    h->next = hjobs[h->job_id % HJOB_HASH];
    hjobs[h->job_id % HJOB_HASH] = h;
    bbh_hjob_symbols(h, job_ptr);
    return h;
}

extern void bbh_hjob_free(hjob_t *h)
{
    xfree(h->user_name);
    xfree(h->job_name);
    xfree(h->work_dir);
    xfree(h->canon);
    xfree(h->bb_path);
    xfree(h->bb_nodes);
    xfree(h->persist_env);
    xfree(h->note);
    xfree(h->learned);
    xfree(h);
}

extern void bbh_hjob_del(uint32_t job_id)
{
    hjob_t **pp = &hjobs[job_id % HJOB_HASH];

    while (*pp) {
        if ((*pp)->job_id == job_id) {
            hjob_t *h = *pp;
            *pp = h->next;
            bbh_hjob_free(h);
            return;
        }
        pp = &(*pp)->next;
    }
}

/*
 * The job's request as it applies to this job: its symbols replaced (*serr
 * set when the replaced request is not valid).  req is empty when the text
 * cannot be parsed.  Call with bb_mutex held.
 */
extern void bbh_hjob_request(hjob_t *h, hu_bb_request_t *req, char **serr)
{
    hu_error_t err;
    bbh_sym_t sym = {
        .job_id = h->job_id,
        .array_job_id = h->array_job_id,
        .array_task_id = h->array_task_id,
        .user = h->user_name,
        .name = h->job_name,
        .work_dir = h->work_dir,
    };

    if (bbh_parse_job_bb(h->canon, req, &err) < 0)
        memset(req, 0, sizeof(*req));
    else
        (void)bbh_subst_request(req, &sym, serr);
}

/* Ask the agent to do 'want' for the job (call with bb_mutex held). */
extern void bbh_want(job_record_t *job_ptr, want_t want)
{
    hjob_t *h = bbh_hjob_get(job_ptr);

    bbh_hjob_symbols(h, job_ptr);
    h->keep_pending = false;
    h->want = want;
    h->step = 0;
    h->tries = 0;
    h->polls = 0;
    h->next_try = 0;
    agent_work = true;
    slurm_cond_signal(&agent_cond);
}

/* Parse a job's burst_buffer text into 'req'.  Returns 0 when the text holds
 * Harmonia directives, -1 when it holds none or is invalid (err filled). */
extern int bbh_parse_job_bb(const char *text, hu_bb_request_t *req, hu_error_t *err)
{
    memset(req, 0, sizeof(*req));
    if (!text || !hu_bb_has_directives(text, true)) {
        hu_errprintf(err, "no directives");
        return -1;
    }
    if (hu_bb_parse(req, text, strlen(text), HU_BB_SRC_BB_OPTION, err) < 0)
        return -1;
    if (hu_bb_validate(req, err) < 0) {
        hu_bb_request_free(req);
        return -1;
    }
    return 0;
}

/*
 * True if every directive of the script is already in the --bb text: the
 * job_submit/harmonia plugin merged them and wrote the canonical form there.
 */
extern bool bbh_script_merged(const hu_bb_request_t *script_req, const char *bb)
{
    char *canon, *line, *save = NULL;
    bool merged = true;

    if (!(canon = hu_bb_format(script_req)))
        return false;
    for (line = strtok_r(canon, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strstr(bb, line)) {
            merged = false;
            break;
        }
    }
    free(canon);
    return merged;
}

/*
 * Find the plugin's record of a job, rebuilding it from the job's canonical
 * burst_buffer text and burst_buffer_state when needed (e.g. after slurmctld
 * restarted: the agent then reconciles with bbmgrd).
 * Call with bb_state.bb_mutex held.
 */
extern bb_job_t *bbh_get_bb_job(job_record_t *job_ptr)
{
    bb_job_t *bb_job;
    hu_bb_request_t req;
    hu_error_t err;
    int state;

    if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
        return NULL;
    if ((bb_job = bb_job_find(&bb_state, job_ptr->job_id)))
        return bb_job;
    if (bbh_parse_job_bb(job_ptr->burst_buffer, &req, &err) < 0)
        return NULL;

    bb_job = bb_job_alloc(&bb_state, job_ptr->job_id);
    bb_job->account = xstrdup(job_ptr->account);
    if (job_ptr->part_ptr)
        bb_job->partition = xstrdup(job_ptr->part_ptr->name);
    if (job_ptr->qos_ptr)
        bb_job->qos = xstrdup(job_ptr->qos_ptr->name);
    bb_job->user_id = job_ptr->user_id;
    bb_job->state = BB_STATE_PENDING;
    if (req.has_buffer) {
        bb_job->req_size = req.capacity;
        bb_job->total_size = req.capacity;
        bb_job->use_job_buf = true;
        bb_job->job_pool = xstrdup(req.pool ? req.pool : bb_state.bb_config.default_pool);
    }
    for (int i = 0; i < req.npersist; i++)
        if (req.persist[i].op == HU_BB_PERSIST_CREATE)
            bb_job->persist_add += req.persist[i].capacity;
    hu_bb_request_free(&req);

    /* After a restart, take up where the job was. */
    state = job_ptr->burst_buffer_state ? bb_state_num(job_ptr->burst_buffer_state) : 0;
    if (state && state != BB_STATE_PENDING) {
        bb_job->state = state;
        if (conf.configured) {
            if (state == BB_STATE_STAGING_IN)
                bbh_want(job_ptr, WANT_STAGE_IN);
            else if (state == BB_STATE_STAGED_IN || state == BB_STATE_RUNNING)
                bbh_want(job_ptr, WANT_RECONCILE);
            else if (state == BB_STATE_POST_RUN || state == BB_STATE_STAGING_OUT)
                bbh_want(job_ptr, WANT_STAGE_OUT);
            else if (state == BB_STATE_TEARDOWN)
                bbh_want(job_ptr, WANT_TEARDOWN);
            else if (state == BB_STATE_TEARDOWN_FAIL)
                bbh_want(job_ptr, WANT_KEPT);
        } else if (state == BB_STATE_STAGING_IN) {
            bb_job->state = BB_STATE_STAGED_IN;
        }
        info("%s: %pJ recovered in burst buffer state %s", plugin_type, job_ptr,
             bb_state_string(state));
    }
    return bb_job;
}

/* Start stage-in for one pending job with a request.  bb_mutex held. */
extern void bbh_start_stage_in(job_record_t *job_ptr, bb_job_t *bb_job)
{
    bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_STAGING_IN);
    bbh_want(job_ptr, WANT_STAGE_IN);
}
