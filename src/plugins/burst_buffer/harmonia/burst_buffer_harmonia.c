/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  burst_buffer_harmonia.c - Harmonia burst buffer plugin for Slurm 22.05.
 *
 *  Translates between slurmctld's burst buffer hooks and Harmonia: the
 *  #BB_HARMONIA directives of a job are collected from its script and from
 *  sbatch --bb, validated at submit time (a bad request is refused with a
 *  message on sbatch's stderr) and kept in canonical form in the job's
 *  burst_buffer field.  Stage-in and stage-out run in the plugin's own agent
 *  thread; their results are applied under slurmctld's job write lock, then
 *  the plugin mutex (that order, always).  No hook waits on anything slow.
 *
 *  burst_buffer.conf is read with Slurm's own burst buffer common code
 *  (AllowUsers, DenyUsers, Pools, Granularity, timeouts, Flags), which also
 *  packs what "scontrol show burst" prints.
\*****************************************************************************/

#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/run_in_daemon.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/plugins/burst_buffer/common/burst_buffer_common.h"

#include "libhutil/directive.h"

const char plugin_name[] = "burst_buffer harmonia plugin";
const char plugin_type[] = "burst_buffer/harmonia";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* Work handed to the agent thread. */
typedef enum {
	OP_STAGE_IN = 1,
	OP_STAGE_OUT,
	OP_TEARDOWN,
} op_type_t;

typedef struct {
	op_type_t op;
	uint32_t job_id;
	uint32_t user_id;
} op_t;

static bb_state_t bb_state;
static List op_queue = NULL;		/* of op_t, protected by op_mutex */
static pthread_mutex_t op_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t op_cond = PTHREAD_COND_INITIALIZER;
static pthread_t agent_tid = 0;
static bool agent_stop = false;

/* Parse a job's burst_buffer text into 'req'.  Returns 0 when the text holds
 * Harmonia directives, -1 when it holds none or is invalid (err filled). */
static int _parse_job_bb(const char *text, hbb_request_t *req, hu_error_t *err)
{
	memset(req, 0, sizeof(*req));
	if (!text || !hbb_has_directives(text, true)) {
		hu_errprintf(err, "no directives");
		return -1;
	}
	if (hbb_parse(req, text, strlen(text), HBB_SRC_BB_OPTION, err) < 0)
		return -1;
	if (hbb_validate(req, err) < 0) {
		hbb_request_free(req);
		return -1;
	}
	return 0;
}

/*
 * True if every directive of the script is already in the --bb text: the
 * job_submit/harmonia plugin merged them and wrote the canonical form there.
 */
static bool _script_merged(const hbb_request_t *script_req, const char *bb)
{
	char *canon, *line, *save = NULL;
	bool merged = true;

	if (!(canon = hbb_format(script_req)))
		return false;
	for (line = strtok_r(canon, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strstr(bb, line)) {
			merged = false;
			break;
		}
	}
	free(canon);
	return merged;
}

/* Find the plugin's record of a job, rebuilding it from the job's canonical
 * burst_buffer text when needed (e.g. after slurmctld restarted).
 * Call with bb_state.bb_mutex held. */
static bb_job_t *_get_bb_job(job_record_t *job_ptr)
{
	bb_job_t *bb_job;
	hbb_request_t req;
	hu_error_t err;

	if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
		return NULL;
	if ((bb_job = bb_job_find(&bb_state, job_ptr->job_id)))
		return bb_job;
	if (_parse_job_bb(job_ptr->burst_buffer, &req, &err) < 0)
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
		bb_job->job_pool = xstrdup(req.pool ? req.pool :
					   bb_state.bb_config.default_pool);
	}
	for (int i = 0; i < req.npersist; i++)
		if (req.persist[i].op == HBB_PERSIST_CREATE)
			bb_job->persist_add += req.persist[i].capacity;
	hbb_request_free(&req);
	return bb_job;
}

static void _queue_op(op_type_t op, uint32_t job_id, uint32_t user_id)
{
	op_t *o = xmalloc(sizeof(*o));

	o->op = op;
	o->job_id = job_id;
	o->user_id = user_id;
	slurm_mutex_lock(&op_mutex);
	list_append(op_queue, o);
	slurm_cond_signal(&op_cond);
	slurm_mutex_unlock(&op_mutex);
}

/*
 * The agent: takes queued operations one at a time, does the slow part with no
 * lock held, then applies the result under the job write lock and the plugin
 * mutex.  Without bbmgrd (a later stage of the project), stage-in and stage-out
 * have no data to move and complete at once.
 */
static void _apply_op(op_t *o)
{
	slurmctld_lock_t job_write_lock = { .job = WRITE_LOCK };
	job_record_t *job_ptr;
	bb_job_t *bb_job;

	lock_slurmctld(job_write_lock);
	slurm_mutex_lock(&bb_state.bb_mutex);
	job_ptr = find_job_record(o->job_id);
	bb_job = bb_job_find(&bb_state, o->job_id);
	switch (o->op) {
	case OP_STAGE_IN:
		if (job_ptr && bb_job &&
		    (bb_job->state == BB_STATE_STAGING_IN)) {
			bb_set_job_bb_state(job_ptr, bb_job,
					    BB_STATE_STAGED_IN);
			log_flag(BURST_BUF, "%pJ stage-in complete", job_ptr);
			queue_job_scheduler();
		}
		break;
	case OP_STAGE_OUT:
		if (job_ptr && bb_job) {
			bb_set_job_bb_state(job_ptr, bb_job,
					    BB_STATE_STAGED_OUT);
			bb_set_job_bb_state(job_ptr, bb_job,
					    BB_STATE_COMPLETE);
		}
		if (job_ptr) {
			job_ptr->job_state &= (~JOB_STAGE_OUT);
			xfree(job_ptr->state_desc);
			last_job_update = time(NULL);
			log_flag(BURST_BUF, "%pJ stage-out complete", job_ptr);
		}
		break;
	case OP_TEARDOWN:
		if (job_ptr && bb_job)
			bb_set_job_bb_state(job_ptr, bb_job,
					    BB_STATE_COMPLETE);
		if (job_ptr)
			job_ptr->job_state &= (~JOB_STAGE_OUT);
		break;
	}
	slurm_mutex_unlock(&bb_state.bb_mutex);
	unlock_slurmctld(job_write_lock);
}

static void *_agent(void *arg)
{
	while (1) {
		op_t *o;

		slurm_mutex_lock(&op_mutex);
		while (!agent_stop && !list_count(op_queue))
			slurm_cond_wait(&op_cond, &op_mutex);
		if (agent_stop) {
			slurm_mutex_unlock(&op_mutex);
			break;
		}
		o = list_dequeue(op_queue);
		slurm_mutex_unlock(&op_mutex);
		if (o) {
			_apply_op(o);
			xfree(o);
		}
	}
	return NULL;
}

extern int init(void)
{
	if (!running_in_slurmctld())
		return SLURM_SUCCESS;

	slurm_mutex_init(&bb_state.bb_mutex);
	slurm_mutex_init(&bb_state.term_mutex);
	slurm_cond_init(&bb_state.term_cond, NULL);
	slurm_mutex_lock(&bb_state.bb_mutex);
	bb_load_config(&bb_state, (char *) plugin_type);
	bb_alloc_cache(&bb_state);
	slurm_mutex_unlock(&bb_state.bb_mutex);

	op_queue = list_create(xfree_ptr);
	agent_stop = false;
	slurm_thread_create(&agent_tid, _agent, NULL);
	log_flag(BURST_BUF, "loaded");
	return SLURM_SUCCESS;
}

extern int fini(void)
{
	if (!op_queue)
		return SLURM_SUCCESS;

	slurm_mutex_lock(&op_mutex);
	agent_stop = true;
	slurm_cond_broadcast(&op_cond);
	slurm_mutex_unlock(&op_mutex);
	if (agent_tid)
		pthread_join(agent_tid, NULL);
	agent_tid = 0;
	FREE_NULL_LIST(op_queue);

	slurm_mutex_lock(&bb_state.bb_mutex);
	bb_clear_config(&bb_state.bb_config, true);
	bb_clear_cache(&bb_state);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return SLURM_SUCCESS;
}

extern uint64_t bb_p_get_system_size(void)
{
	uint64_t size = 0;

	slurm_mutex_lock(&bb_state.bb_mutex);
	size = bb_state.total_space;
	for (uint32_t i = 0; i < bb_state.bb_config.pool_cnt; i++)
		size += bb_state.bb_config.pool_ptr[i].total_space;
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return size / (1024 * 1024);	/* MB, as the API wants */
}

extern int bb_p_load_state(bool init_config)
{
	if (!init_config)
		return SLURM_SUCCESS;

	slurm_mutex_lock(&bb_state.bb_mutex);
	bb_set_tres_pos(&bb_state);
	bb_state.last_load_time = time(NULL);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return SLURM_SUCCESS;
}

extern char *bb_p_get_status(uint32_t argc, char **argv)
{
	char *status = NULL;
	int njobs = 0;

	slurm_mutex_lock(&bb_state.bb_mutex);
	for (int i = 0; i < BB_HASH_SIZE; i++)
		for (bb_job_t *j = bb_state.bb_jhash[i]; j; j = j->next)
			njobs++;
	xstrfmtcat(status, "Harmonia burst buffer plugin\n"
		   "  jobs with buffer requests: %d\n"
		   "  manager daemon: not configured\n", njobs);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return status;
}

extern int bb_p_state_pack(uid_t uid, buf_t *buffer, uint16_t protocol_version)
{
	slurm_mutex_lock(&bb_state.bb_mutex);
	packstr(bb_state.name, buffer);
	bb_pack_state(&bb_state, buffer, protocol_version);
	if (((bb_state.bb_config.flags & BB_FLAG_PRIVATE_DATA) == 0) ||
	    validate_operator(uid))
		uid = 0;	/* User can see all data */
	(void) bb_pack_bufs(uid, &bb_state, buffer, protocol_version);
	(void) bb_pack_usage(uid, &bb_state, buffer, protocol_version);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return SLURM_SUCCESS;
}

extern int bb_p_reconfig(void)
{
	slurm_mutex_lock(&bb_state.bb_mutex);
	bb_load_config(&bb_state, (char *) plugin_type);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return SLURM_SUCCESS;
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

/*
 * Collect the job's directives (script and --bb), validate them, and replace
 * job_desc->burst_buffer with their canonical form.
 */
extern int bb_p_job_validate(job_desc_msg_t *job_desc, uid_t submit_uid,
			     char **err_msg)
{
	hbb_request_t req;
	hu_error_t err;
	char *collected = NULL, *canon = NULL;
	bool in_script, in_bb;
	int rc = SLURM_SUCCESS;

	memset(&req, 0, sizeof(req));
	collected = hbb_collect_script(job_desc->script);
	in_script = collected && collected[0];
	in_bb = hbb_has_directives(job_desc->burst_buffer, true);
	if (!in_script && !in_bb)
		goto out;	/* not a Harmonia job: untouched */

	if (in_script &&
	    hbb_parse(&req, collected, strlen(collected), HBB_SRC_SCRIPT,
		      &err) < 0)
		goto invalid;
	if (in_bb) {
		const char *bb = job_desc->burst_buffer;
		if (in_script && _script_merged(&req, bb)) {
			/* job_submit/harmonia merged the script already */
			hbb_request_free(&req);
		}
		if (hbb_parse(&req, bb, strlen(bb), HBB_SRC_BB_OPTION,
			      &err) < 0)
			goto invalid;
	}
	if (hbb_validate(&req, &err) < 0 || hbb_check_paths(&req, &err) < 0)
		goto invalid;

	slurm_mutex_lock(&bb_state.bb_mutex);
	if (bb_state.bb_config.allow_users &&
	    !_uid_in(bb_state.bb_config.allow_users, job_desc->user_id)) {
		*err_msg = xstrdup("#BB_HARMONIA: user not allowed to use burst buffers (AllowUsers in burst_buffer.conf)");
		rc = ESLURM_BURST_BUFFER_PERMISSION;
	} else if (_uid_in(bb_state.bb_config.deny_users, job_desc->user_id)) {
		*err_msg = xstrdup("#BB_HARMONIA: user not allowed to use burst buffers (DenyUsers in burst_buffer.conf)");
		rc = ESLURM_BURST_BUFFER_PERMISSION;
	} else if (req.pool && !bb_valid_pool_test(&bb_state, req.pool)) {
		xstrfmtcat(*err_msg, "#BB_HARMONIA: jobbuffer: pool '%s' does not exist",
			   req.pool);
		rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
	} else if (bb_state.tres_pos > 0 && job_desc->tres_req_cnt) {
		job_desc->tres_req_cnt[bb_state.tres_pos] =
			req.capacity / (1024 * 1024);
	}
	slurm_mutex_unlock(&bb_state.bb_mutex);
	if (rc != SLURM_SUCCESS)
		goto out;

	if (!(canon = hbb_format(&req))) {
		rc = ENOMEM;
		goto out;
	}
	xfree(job_desc->burst_buffer);
	job_desc->burst_buffer = xstrdup(canon);
	log_flag(BURST_BUF, "job of uid %u: burst_buffer:\n%s",
		 job_desc->user_id, canon);
	goto out;

invalid:
	*err_msg = xstrdup(err.text);
	rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
	log_flag(BURST_BUF, "refused a request of uid %u: %s",
		 job_desc->user_id, err.text);
out:
	hbb_request_free(&req);
	free(collected);
	free(canon);
	return rc;
}

extern int bb_p_job_validate2(job_record_t *job_ptr, char **err_msg)
{
	bb_job_t *bb_job;

	if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
		return SLURM_SUCCESS;
	slurm_mutex_lock(&bb_state.bb_mutex);
	bb_job = _get_bb_job(job_ptr);
	if (bb_job)
		bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_PENDING);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return SLURM_SUCCESS;
}

extern void bb_p_job_set_tres_cnt(job_record_t *job_ptr, uint64_t *tres_cnt,
				  bool locked)
{
	bb_job_t *bb_job;

	if (!tres_cnt || bb_state.tres_pos < 0)
		return;
	slurm_mutex_lock(&bb_state.bb_mutex);
	if ((bb_job = _get_bb_job(job_ptr)))
		tres_cnt[bb_state.tres_pos] = bb_job->total_size / (1024 * 1024);
	slurm_mutex_unlock(&bb_state.bb_mutex);
}

extern time_t bb_p_job_get_est_start(job_record_t *job_ptr)
{
	return time(NULL);
}

/* Start stage-in for the pending jobs that have a request (the scheduler calls
 * this once per pass with its queue). */
static int _try_one(void *x, void *arg)
{
	job_record_t *job_ptr = x;	/* the queue holds job records */
	bb_job_t *bb_job;

	if (!IS_JOB_PENDING(job_ptr) || !job_ptr->burst_buffer ||
	    !job_ptr->burst_buffer[0])
		return 0;
	if (job_ptr->array_recs && ((job_ptr->array_task_id == NO_VAL) ||
				    (job_ptr->array_task_id == INFINITE)))
		return 0;
	if (!(bb_job = _get_bb_job(job_ptr)))
		return 0;
	if (bb_job->state < BB_STATE_STAGING_IN) {
		bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_STAGING_IN);
		_queue_op(OP_STAGE_IN, job_ptr->job_id, job_ptr->user_id);
	}
	return 0;
}

extern int bb_p_job_try_stage_in(List job_queue)
{
	slurm_mutex_lock(&bb_state.bb_mutex);
	if (bb_state.last_load_time)
		list_for_each(job_queue, _try_one, NULL);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return SLURM_SUCCESS;
}

/* RET 1: stage-in complete (or nothing to stage); 0: under way; -1: not started */
extern int bb_p_job_test_stage_in(job_record_t *job_ptr, bool test_only)
{
	bb_job_t *bb_job;
	int rc;

	if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
		return 1;
	if (job_ptr->array_recs && ((job_ptr->array_task_id == NO_VAL) ||
				    (job_ptr->array_task_id == INFINITE)))
		return -1;	/* the array's meta record is not a job */

	slurm_mutex_lock(&bb_state.bb_mutex);
	bb_job = _get_bb_job(job_ptr);
	if (!bb_job) {
		rc = 1;		/* not ours (another plugin's text) */
	} else {
		if (bb_job->state == BB_STATE_COMPLETE)	/* requeued */
			bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_PENDING);
		if (bb_job->state < BB_STATE_STAGING_IN) {
			rc = -1;
			if (!test_only) {
				bb_set_job_bb_state(job_ptr, bb_job,
						    BB_STATE_STAGING_IN);
				_queue_op(OP_STAGE_IN, job_ptr->job_id,
					  job_ptr->user_id);
				rc = 0;
			}
		} else if (bb_job->state == BB_STATE_STAGING_IN) {
			rc = 0;
		} else if (bb_job->state == BB_STATE_STAGED_IN) {
			rc = 1;
		} else {
			rc = -1;
		}
	}
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return rc;
}

extern int bb_p_job_begin(job_record_t *job_ptr)
{
	bb_job_t *bb_job;

	if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
		return SLURM_SUCCESS;
	slurm_mutex_lock(&bb_state.bb_mutex);
	if ((bb_job = _get_bb_job(job_ptr)))
		bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_RUNNING);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return SLURM_SUCCESS;
}

extern int bb_p_job_revoke_alloc(job_record_t *job_ptr)
{
	bb_job_t *bb_job;

	if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
		return SLURM_SUCCESS;
	slurm_mutex_lock(&bb_state.bb_mutex);
	if ((bb_job = _get_bb_job(job_ptr)) &&
	    (bb_job->state == BB_STATE_RUNNING))
		bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_STAGED_IN);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return SLURM_SUCCESS;
}

extern int bb_p_job_start_stage_out(job_record_t *job_ptr)
{
	bb_job_t *bb_job;

	if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
		return SLURM_SUCCESS;
	slurm_mutex_lock(&bb_state.bb_mutex);
	bb_job = _get_bb_job(job_ptr);
	if (bb_job && (bb_job->state < BB_STATE_POST_RUN)) {
		bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_STAGING_OUT);
		job_ptr->job_state |= JOB_STAGE_OUT;
		xfree(job_ptr->state_desc);
		xstrfmtcat(job_ptr->state_desc, "%s: Stage-out in progress",
			   plugin_type);
		_queue_op(OP_STAGE_OUT, job_ptr->job_id, job_ptr->user_id);
	}
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return SLURM_SUCCESS;
}

/* RET 1: post-run done (or none); 0: in progress; -1: error */
extern int bb_p_job_test_post_run(job_record_t *job_ptr)
{
	bb_job_t *bb_job;
	int rc = 1;

	if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
		return 1;
	slurm_mutex_lock(&bb_state.bb_mutex);
	bb_job = _get_bb_job(job_ptr);
	if (bb_job && (bb_job->state == BB_STATE_POST_RUN ||
		       bb_job->state == BB_STATE_STAGING_OUT))
		rc = 0;
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return rc;
}

/* RET 1: stage-out complete (or none); 0: in progress; -1: error */
extern int bb_p_job_test_stage_out(job_record_t *job_ptr)
{
	bb_job_t *bb_job;
	int rc = 1;

	if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
		return 1;
	slurm_mutex_lock(&bb_state.bb_mutex);
	bb_job = bb_job_find(&bb_state, job_ptr->job_id);
	if (bb_job) {
		if (bb_job->state == BB_STATE_COMPLETE) {
			bb_job_del(&bb_state, job_ptr->job_id);
			rc = 1;
		} else if (bb_job->state >= BB_STATE_POST_RUN) {
			rc = 0;
		} else if (IS_JOB_FINISHED(job_ptr) && !IS_JOB_STAGE_OUT(job_ptr)) {
			rc = 1;	/* ended before it ran (cancelled) */
		} else {
			rc = 0;
		}
	}
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return rc;
}

extern int bb_p_job_cancel(job_record_t *job_ptr)
{
	bb_job_t *bb_job;

	if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
		return SLURM_SUCCESS;
	slurm_mutex_lock(&bb_state.bb_mutex);
	bb_job = _get_bb_job(job_ptr);
	if (bb_job) {
		if (bb_job->state < BB_STATE_STAGING_IN) {
			bb_set_job_bb_state(job_ptr, bb_job,
					    BB_STATE_COMPLETE);
		} else if (bb_job->state < BB_STATE_COMPLETE) {
			bb_set_job_bb_state(job_ptr, bb_job,
					    BB_STATE_TEARDOWN);
			_queue_op(OP_TEARDOWN, job_ptr->job_id,
				  job_ptr->user_id);
		}
	}
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return SLURM_SUCCESS;
}

extern int bb_p_run_script(char *func, uint32_t job_id, uint32_t argc,
			   char **argv, char **resp_msg)
{
	if (resp_msg)
		*resp_msg = xstrdup("burst_buffer/harmonia runs no scripts");
	return SLURM_ERROR;
}

/* "#BB_HARMONIA jobbuffer capacity=..." -> "<bb TRES id>=<MB>" */
extern char *bb_p_xlate_bb_2_tres_str(char *burst_buffer)
{
	hbb_request_t req;
	hu_error_t err;
	char *tres = NULL;

	if (!burst_buffer || bb_state.tres_id < 1)
		return NULL;
	if (_parse_job_bb(burst_buffer, &req, &err) < 0)
		return NULL;
	if (req.has_buffer)
		xstrfmtcat(tres, "%d=%"PRIu64, bb_state.tres_id,
			   req.capacity / (1024 * 1024));
	hbb_request_free(&req);
	return tres;
}
