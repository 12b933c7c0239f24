/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  burst_buffer_harmonia.c - Harmonia burst buffer plugin for Slurm 22.05.
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
\*****************************************************************************/

#include "config.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/run_in_daemon.h"
#include "src/common/select.h"
#include "src/common/slurm_protocol_defs.h"
#include "src/common/node_conf.h"
#include "src/common/parse_time.h"
#include "src/common/uid.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/acct_policy.h"
#include "src/plugins/burst_buffer/common/burst_buffer_common.h"

#include "harmonia/client.h"
#include "libhutil/directive.h"

#include "bbh_conf.h"
#include "bbh_job.h"

const char plugin_name[] = "burst_buffer harmonia plugin";
const char plugin_type[] = "burst_buffer/harmonia";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* What the agent must do for a job. */
typedef enum {
	WANT_NOTHING = 0,
	WANT_STAGE_IN,		/* register, allocate, persistent, stage-in */
	WANT_RECONCILE,		/* after a restart: learn the allocation again */
	WANT_BEGIN,		/* tell bbmgrd the job runs */
	WANT_STAGE_OUT,		/* stage-out, destroy persistent, teardown */
	WANT_TEARDOWN,		/* cancel: end the job in bbmgrd */
	WANT_KEPT,		/* failed stage-out: the buffer is kept until
				 * an administrator releases it (bbmgr release) */
} want_t;

#define KEPT_CHECK 10.0		/* seconds between looks at a kept buffer */
#define DIRS_CHECK 0.25		/* seconds between looks at directories being made */

/* Result of one agent step. */
typedef enum {
	STEP_NEXT,		/* go on with the next step now */
	STEP_AGAIN,		/* try this step again later */
	STEP_DONE,		/* the whole operation is over */
	STEP_FAIL,		/* permanent failure */
} step_rc_t;

#define HJOB_HASH 256

typedef struct hjob {
	uint32_t job_id;
	uint32_t user_id;
	uint32_t group_id;
	uint32_t array_job_id;	/* %A, %a */
	uint32_t array_task_id;
	char *user_name;
	char *job_name;
	char *work_dir;		/* %d */
	char *canon;		/* canonical directive text */
	want_t want;
	int step;
	double next_try;	/* CLOCK_MONOTONIC seconds */
	time_t alloc_time;	/* when bbmgrd first allocated its buffer */
	unsigned round;		/* agent round that last ran it */
	int tries;
	int polls;		/* stage polls since the transfers were asked */
	bool seen_wait;		/* a scheduler pass saw it waiting for stage-in */
	bool registered;
	bool keep_pending;	/* teardown of a failed stage-in: the job stays */
	char *bb_path;		/* $HARMONIA_BB */
	char *bb_nodes;		/* buffer nodes, comma separated */
	char *persist_env;	/* "HARMONIA_PERSISTENT_<name>=<path>\n"... */
	uint32_t ncompute;
	char *note;		/* what the agent waits for (state_desc) */
	struct hjob *next;
} hjob_t;

static bb_state_t bb_state;
static bbh_conf_t conf;
static hjob_t *hjobs[HJOB_HASH];	/* protected by bb_state.bb_mutex */
static pthread_cond_t agent_cond = PTHREAD_COND_INITIALIZER;
static pthread_t agent_tid = 0;
static bool agent_stop = false;
static bool agent_rescan = true;	/* scan all jobs (start, reconfig) */
static bool agent_work = false;		/* a hook asked for work since the last round */
static uint32_t *eager_ids = NULL;	/* submitted jobs whose stage-in may start */
static int eager_cnt = 0, eager_cap = 0;	/* (bb_state.bb_mutex) */
static double eager_since = 0;		/* when eager_ids[0] came (monotonic) */
/*
 * The agent lets submissions gather this long before it starts their
 * stage-in, so that a burst of them goes to bbmgrd in one batch (one exchange
 * and one commit for all) rather than one by one.  Well under the time
 * slurmctld takes to look at a new job (batch_sched_delay, sched_min_interval),
 * so their buffers are still ready before the first scheduler pass.
 */
#define EAGER_GATHER 0.03		/* seconds */
static char *status_cache = NULL;	/* last /v1/status text */
static uint32_t *pool_nodes = NULL;	/* buffer nodes per pool (bb_mutex) */
static uint32_t pool_nodes_cnt = 0;
static json_t *pools_last = NULL;	/* bbmgrd's last GET /v1/pools (bb_mutex) */

static void _start_stage_in(job_record_t *job_ptr, bb_job_t *bb_job);

/* ------------------------------------------------------------------ jobs */

static hjob_t *_hjob_find(uint32_t job_id)
{
	hjob_t *h;

	for (h = hjobs[job_id % HJOB_HASH]; h; h = h->next)
		if (h->job_id == job_id)
			return h;
	return NULL;
}

/* What the symbols of the job's request stand for (an array task learns its
 * task id when it is split from the array's record). */
static void _hjob_symbols(hjob_t *h, job_record_t *job_ptr)
{
	h->array_job_id = job_ptr->array_job_id;
	h->array_task_id = job_ptr->array_task_id;
	if (!h->work_dir && job_ptr->details)
		h->work_dir = xstrdup(job_ptr->details->work_dir);
}

static hjob_t *_hjob_get(job_record_t *job_ptr)
{
	hjob_t *h = _hjob_find(job_ptr->job_id);

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
	_hjob_symbols(h, job_ptr);
	return h;
}

static void _hjob_free(hjob_t *h)
{
	xfree(h->user_name);
	xfree(h->job_name);
	xfree(h->work_dir);
	xfree(h->canon);
	xfree(h->bb_path);
	xfree(h->bb_nodes);
	xfree(h->persist_env);
	xfree(h->note);
	xfree(h);
}

static void _hjob_del(uint32_t job_id)
{
	hjob_t **pp = &hjobs[job_id % HJOB_HASH];

	while (*pp) {
		if ((*pp)->job_id == job_id) {
			hjob_t *h = *pp;
			*pp = h->next;
			_hjob_free(h);
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
static int _parse_job_bb(const char *text, hu_bb_request_t *req, hu_error_t *err);
static void _hjob_request(hjob_t *h, hu_bb_request_t *req, char **serr)
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

	if (_parse_job_bb(h->canon, req, &err) < 0)
		memset(req, 0, sizeof(*req));
	else
		(void) bbh_subst_request(req, &sym, serr);
}

/* Ask the agent to do 'want' for the job (call with bb_mutex held). */
static void _want(job_record_t *job_ptr, want_t want)
{
	hjob_t *h = _hjob_get(job_ptr);

	_hjob_symbols(h, job_ptr);
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
static int _parse_job_bb(const char *text, hu_bb_request_t *req, hu_error_t *err)
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
static bool _script_merged(const hu_bb_request_t *script_req, const char *bb)
{
	char *canon, *line, *save = NULL;
	bool merged = true;

	if (!(canon = hu_bb_format(script_req)))
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

/*
 * Find the plugin's record of a job, rebuilding it from the job's canonical
 * burst_buffer text and burst_buffer_state when needed (e.g. after slurmctld
 * restarted: the agent then reconciles with bbmgrd).
 * Call with bb_state.bb_mutex held.
 */
static bb_job_t *_get_bb_job(job_record_t *job_ptr)
{
	bb_job_t *bb_job;
	hu_bb_request_t req;
	hu_error_t err;
	int state;

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
		if (req.persist[i].op == HU_BB_PERSIST_CREATE)
			bb_job->persist_add += req.persist[i].capacity;
	hu_bb_request_free(&req);

	/* After a restart, take up where the job was. */
	state = job_ptr->burst_buffer_state ?
		bb_state_num(job_ptr->burst_buffer_state) : 0;
	if (state && state != BB_STATE_PENDING) {
		bb_job->state = state;
		if (conf.configured) {
			if (state == BB_STATE_STAGING_IN)
				_want(job_ptr, WANT_STAGE_IN);
			else if (state == BB_STATE_STAGED_IN ||
				 state == BB_STATE_RUNNING)
				_want(job_ptr, WANT_RECONCILE);
			else if (state == BB_STATE_POST_RUN ||
				 state == BB_STATE_STAGING_OUT)
				_want(job_ptr, WANT_STAGE_OUT);
			else if (state == BB_STATE_TEARDOWN)
				_want(job_ptr, WANT_TEARDOWN);
			else if (state == BB_STATE_TEARDOWN_FAIL)
				_want(job_ptr, WANT_KEPT);
		} else if (state == BB_STATE_STAGING_IN) {
			bb_job->state = BB_STATE_STAGED_IN;
		}
		info("%s: %pJ recovered in burst buffer state %s", plugin_type,
		     job_ptr, bb_state_string(state));
	}
	return bb_job;
}

/* ------------------------------------------------------------------ bbmgrd */

/* *msg: what a refused request says ("bbmgrd: METHOD PATH: status: error"). */
static void _reply_msg(const char *method, const char *path, int status,
		       json_t *resp, char **msg)
{
	char buf[512];

	if (!msg)
		return;
	xfree(*msg);
	*msg = xstrdup_printf("bbmgrd: %s %s: %d: %s", method, path, status,
			      resp ? hm_error_text(resp, buf, sizeof(buf)) : "");
}

/* One request; returns the HTTP status or -1 (transport error, *msg set). */
static int _call(hm_client_t *cli, const char *method, const char *path,
		 json_t *body, json_t **resp, char **msg)
{
	hm_error_t err;
	int status;

	if (resp)
		*resp = NULL;
	status = hm_request(cli, method, path, body, resp, &err);
	if (status < 0) {
		xfree(*msg);
		*msg = xstrdup_printf("bbmgrd unreachable (%s)", err.text);
		return -1;
	}
	if (status >= 400)
		_reply_msg(method, path, status, resp ? *resp : NULL, msg);
	return status;
}

static const char *_json_str(json_t *o, const char *key)
{
	json_t *v = o ? json_object_get(o, key) : NULL;
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* $HARMONIA_BB/x -> <path>/x */
static char *_expand(const char *s, const char *bb_path)
{
	const char *rest = NULL;

	if (!strncmp(s, "$HARMONIA_BB", 12))
		rest = s + 12;
	else if (!strncmp(s, "${HARMONIA_BB}", 14))
		rest = s + 14;
	if (!rest || !bb_path)
		return xstrdup(s);
	return xstrdup_printf("%s%s", bb_path, rest);
}

/* What an agent step needs, copied out of the hjob under the mutex. */
typedef struct {
	uint32_t job_id;
	uint32_t user_id, group_id;
	char *user_name, *job_name;
	hu_bb_request_t req;
	want_t want;
	int step;
	bool registered;
	char *bb_path;
	uint32_t ncompute;
	/* results */
	char *new_path, *new_nodes, *persist_env;
	char *msg;
	char *subst_err;	/* the request after symbol replacement is bad */
	bool allocated;
	bool released;		/* the job's space went back to its pools */
	bool stage_wait;	/* transfers asked for or under way */
	bool dirs_ready;	/* the allocation's reply said its directories are made */
	bool dirs_wait;		/* they are not yet */
} work_t;

static void _work_free(work_t *w)
{
	xfree(w->user_name);
	xfree(w->job_name);
	hu_bb_request_free(&w->req);
	xfree(w->bb_path);
	xfree(w->new_path);
	xfree(w->new_nodes);
	xfree(w->persist_env);
	xfree(w->msg);
	xfree(w->subst_err);
}

/*
 * The steps that are one request each (register, allocate, begin, teardown)
 * come in two halves: *_body() makes the request, *_done() takes its answer,
 * so that the agent can send the requests of several jobs in one batch
 * (_run_batch) or one at a time (_run).
 */
static json_t *_register_body(work_t *w)
{
	json_t *body, *hints;
	char id[16];

	snprintf(id, sizeof(id), "%u", w->job_id);
	body = json_pack("{s:s s:i s:i}", "id", id, "uid", (int) w->user_id,
			 "gid", (int) w->group_id);
	if (w->user_name)
		json_object_set_new(body, "user", json_string(w->user_name));
	if (w->job_name)
		json_object_set_new(body, "name", json_string(w->job_name));
	if (w->req.has_hints) {
		hints = json_pack("{s:f s:f s:s s:i}",
				  "w_iter", w->req.w_iter,
				  "io_volume", (double) w->req.io_volume,
				  "io", hu_bb_io_str(w->req.io),
				  "priority", w->req.priority);
		if (w->req.phases)
			json_object_set_new(hints, "phases",
					    json_integer(w->req.phases));
		json_object_set_new(body, "hints", hints);
	}
	return body;
}

static step_rc_t _register_done(work_t *w, int st)
{
	if (st < 0 || st >= 500)
		return STEP_AGAIN;
	if (st >= 400)
		return STEP_FAIL;
	w->registered = true;
	return STEP_NEXT;
}

static step_rc_t _step_register(hm_client_t *cli, work_t *w)
{
	json_t *body = _register_body(w), *resp = NULL;
	int st = _call(cli, "POST", "/v1/jobs", body, &resp, &w->msg);

	json_decref(body);
	json_decref(resp);
	return _register_done(w, st);
}

static json_t *_alloc_body(work_t *w, char *path, size_t len)
{
	json_t *body = json_pack("{s:f}", "capacity", (double) w->req.capacity);

	if (w->req.nodes)
		json_object_set_new(body, "nodes", json_integer(w->req.nodes));
	if (w->req.pool)
		json_object_set_new(body, "pool", json_string(w->req.pool));
	snprintf(path, len, "/v1/jobs/%u/allocation", w->job_id);
	return body;
}

static step_rc_t _alloc_done(work_t *w, int st, json_t *resp)
{
	json_t *nodes;

	if (st == 507 || st == 503 || st < 0 || st >= 500) {
		if (st == 507) {
			char sz[32], fz[32], pool[64], text[512];
			uintmax_t cap = 0, free_b = 0;
			int need = 0, up = 0;

			hm_error_text(resp, text, sizeof(text));
			xfree(w->msg);
			/* enough free space in all, but not on enough nodes:
			 * say so, it is not the same wait */
			if ((sscanf(text, "%*[^:]: pool %63s cannot hold %ju bytes on %d node(s) now (%d nodes up, %ju bytes free)",
				    pool, &cap, &need, &up, &free_b) == 5 ||
			     sscanf(text, "pool %63s cannot hold %ju bytes on %d node(s) now (%d nodes up, %ju bytes free)",
				    pool, &cap, &need, &up, &free_b) == 5) &&
			    free_b >= w->req.capacity)
				w->msg = xstrdup_printf("waiting for buffer space on enough nodes: %s needs room on %d node(s); pool %s has %s free, spread over its %d nodes up",
							hu_bb_size_str(w->req.capacity, sz, sizeof(sz)),
							need, pool,
							hu_bb_size_str(free_b, fz, sizeof(fz)),
							up);
			else
				w->msg = xstrdup_printf("waiting for %s of free buffer space%s%s",
							hu_bb_size_str(w->req.capacity, sz, sizeof(sz)),
							w->req.pool ? " in pool " : "",
							w->req.pool ? w->req.pool : "");
		}
		return STEP_AGAIN;
	}
	if (st >= 400)
		return STEP_FAIL;
	nodes = json_object_get(resp, "nodes");
	for (size_t i = 0; json_is_array(nodes) && i < json_array_size(nodes); i++) {
		json_t *n = json_array_get(nodes, i);
		const char *name = _json_str(n, "name");
		if (i == 0 && _json_str(n, "path"))
			w->new_path = xstrdup(_json_str(n, "path"));
		if (name)
			xstrfmtcat(w->new_nodes, "%s%s", w->new_nodes ? "," : "",
				   name);
	}
	w->allocated = true;
	w->dirs_ready = !json_is_false(json_object_get(resp, "ready"));
	return STEP_NEXT;
}

static step_rc_t _step_alloc(hm_client_t *cli, work_t *w)
{
	json_t *body, *resp = NULL;
	char path[64];
	step_rc_t rc;
	int st;

	if (!w->req.has_buffer)
		return STEP_NEXT;
	body = _alloc_body(w, path, sizeof(path));
	st = _call(cli, "POST", path, body, &resp, &w->msg);
	json_decref(body);
	rc = _alloc_done(w, st, resp);
	json_decref(resp);
	return rc;
}

/*
 * The plugin calls bbmgrd as an administrator, which may attach or destroy any
 * persistent buffer: apply the owner rule (doc/api.md, as Slurm's datawarp
 * plugin) for the job's user here.  STEP_NEXT: the user may act on the buffer
 * (or it does not exist); STEP_AGAIN; STEP_FAIL with w->msg set.
 */
static step_rc_t _check_owner(hm_client_t *cli, work_t *w, const char *name)
{
	json_t *resp = NULL;
	char path[160], *owner;
	uint32_t uid;
	int st;

	if ((w->user_id == 0) || (w->user_id == slurm_conf.slurm_user_id))
		return STEP_NEXT;
	snprintf(path, sizeof(path), "/v1/persistent/%s", name);
	st = _call(cli, "GET", path, NULL, &resp, &w->msg);
	if (st == 404) {
		json_decref(resp);
		xfree(w->msg);
		return STEP_NEXT;
	}
	if (st < 0 || st >= 400) {
		json_decref(resp);
		return st >= 400 && st < 500 ? STEP_FAIL : STEP_AGAIN;
	}
	uid = json_integer_value(json_object_get(resp, "uid"));
	json_decref(resp);
	if (uid == w->user_id)
		return STEP_NEXT;
	owner = uid_to_string_or_null(uid);
	xfree(w->msg);
	if (owner)
		w->msg = xstrdup_printf("persistent buffer '%s' belongs to another user (%s)",
					name, owner);
	else
		w->msg = xstrdup_printf("persistent buffer '%s' belongs to another user (uid %u)",
					name, uid);
	xfree(owner);
	return STEP_FAIL;
}

static step_rc_t _step_persistent(hm_client_t *cli, work_t *w)
{
	for (int i = 0; i < w->req.npersist; i++) {
		hu_bb_persist_t *p = &w->req.persist[i];
		json_t *body = NULL, *resp = NULL, *nodes;
		char path[160];
		step_rc_t rc;
		int st;

		if ((p->op == HU_BB_PERSIST_USE || p->op == HU_BB_PERSIST_DESTROY) &&
		    ((rc = _check_owner(cli, w, p->name)) != STEP_NEXT))
			return rc;
		if (p->op == HU_BB_PERSIST_CREATE) {
			body = json_pack("{s:s s:f s:i s:i}", "name", p->name,
					 "capacity", (double) p->capacity,
					 "uid", (int) w->user_id,
					 "gid", (int) w->group_id);
			if (p->pool)
				json_object_set_new(body, "pool",
						    json_string(p->pool));
			st = _call(cli, "POST", "/v1/persistent", body, &resp,
				   &w->msg);
		} else if (p->op == HU_BB_PERSIST_USE) {
			char id[32];
			snprintf(id, sizeof(id), "%u", w->job_id);
			body = json_pack("{s:s}", "job", id);
			snprintf(path, sizeof(path), "/v1/persistent/%s/use",
				 p->name);
			st = _call(cli, "POST", path, body, &resp, &w->msg);
		} else {
			continue;	/* destroy: at stage-out */
		}
		json_decref(body);
		if (st < 0 || st >= 500 || st == 507) {
			json_decref(resp);
			return STEP_AGAIN;
		}
		if (st >= 400) {
			json_decref(resp);
			return STEP_FAIL;
		}
		nodes = json_object_get(resp, "nodes");
		if (json_is_array(nodes) && json_array_size(nodes)) {
			const char *pp = _json_str(json_array_get(nodes, 0),
						   "path");
			if (pp) {
				char *up = xstrdup(p->name);
				for (char *c = up; *c; c++)
					*c = (*c == '-' || *c == '.') ? '_' :
					     toupper((unsigned char) *c);
				xstrfmtcat(w->persist_env,
					   "HARMONIA_PERSISTENT_%s=%s\n", up, pp);
				xfree(up);
				if (!w->bb_path && !w->new_path)
					w->new_path = xstrdup(pp);
			}
		}
		json_decref(resp);
	}
	return STEP_NEXT;
}

/* Stage-in or stage-out: request the transfers once, then poll until done. */
static step_rc_t _step_stage(hm_client_t *cli, work_t *w, bool in)
{
	const char *kind = in ? "stage_in" : "stage_out";
	hu_bb_stage_t *items = in ? w->req.stage_in : w->req.stage_out;
	int n = in ? w->req.nstage_in : w->req.nstage_out;
	const char *bb = w->new_path ? w->new_path : w->bb_path;
	json_t *resp = NULL;
	const char *state;
	char path[96];
	int st;

	if (n == 0)
		return STEP_NEXT;
	snprintf(path, sizeof(path), "/v1/jobs/%u/%s", w->job_id, kind);
	st = _call(cli, "GET", path, NULL, &resp, &w->msg);
	if (st < 0 || st >= 500) {
		json_decref(resp);
		return STEP_AGAIN;
	}
	if (st >= 400) {
		json_decref(resp);
		return STEP_FAIL;
	}
	state = _json_str(resp, "state");
	if (state && !strcmp(state, "none")) {
		json_decref(resp);
		for (int i = 0; i < n; i++) {
			char *src = _expand(items[i].source, bb);
			char *dst = _expand(items[i].destination, bb);
			json_t *body = json_pack("{s:s s:s}", "source", src,
						 "destination", dst);
			if (items[i].type != HU_BB_TYPE_UNSET)
				json_object_set_new(body, "type",
					json_string(hu_bb_type_str(items[i].type)));
			st = _call(cli, "POST", path, body, NULL, &w->msg);
			json_decref(body);
			xfree(src);
			xfree(dst);
			if (st < 0 || st >= 500)
				return STEP_AGAIN;	/* GET first next time */
			if (st >= 400)
				return STEP_FAIL;
		}
		xfree(w->msg);
		w->msg = xstrdup_printf("%s requested", in ? "stage-in" : "stage-out");
		w->stage_wait = true;
		return STEP_AGAIN;
	}
	if (state && !strcmp(state, "done")) {
		json_decref(resp);
		return STEP_NEXT;
	}
	if (state && !strcmp(state, "failed")) {
		json_t *tr = json_object_get(resp, "transfers");
		const char *m = NULL;
		for (size_t i = 0; json_is_array(tr) && i < json_array_size(tr); i++)
			if ((m = _json_str(json_array_get(tr, i), "message")))
				break;
		xfree(w->msg);
		w->msg = xstrdup_printf("%s failed: %s", in ? "stage-in" : "stage-out",
					m ? m : "no reason given");
		json_decref(resp);
		return STEP_FAIL;
	}
	xfree(w->msg);
	w->msg = xstrdup_printf("%s %s", in ? "stage-in" : "stage-out",
				state ? state : "in progress");
	json_decref(resp);
	w->stage_wait = true;
	return STEP_AGAIN;
}

/* The buffer's directories are there: a node served by an agent makes the job's
 * directory at its next report after the allocation (GET /v1/jobs/ID/allocation
 * says "ready"); the job must not start before.  A bbmgrd that does not say is
 * ready. */
static step_rc_t _step_dirs_ready(hm_client_t *cli, work_t *w)
{
	json_t *resp = NULL, *ready;
	char path[64];
	int st;

	if (w->dirs_ready || !w->req.has_buffer)
		return STEP_NEXT;
	snprintf(path, sizeof(path), "/v1/jobs/%u/allocation", w->job_id);
	st = _call(cli, "GET", path, NULL, &resp, &w->msg);
	if (st < 0 || st >= 500) {
		json_decref(resp);
		return STEP_AGAIN;
	}
	ready = st == 200 ? json_object_get(resp, "ready") : NULL;
	if (!json_is_false(ready)) {
		json_decref(resp);
		return STEP_NEXT;	/* ready, or no allocation (404) */
	}
	json_decref(resp);
	xfree(w->msg);
	w->msg = xstrdup("buffer directories being made by the buffer nodes' agents");
	w->dirs_wait = true;
	return STEP_AGAIN;
}

static step_rc_t _step_reconcile(hm_client_t *cli, work_t *w)
{
	json_t *resp = NULL, *alloc, *nodes;
	char path[64];
	int st;

	snprintf(path, sizeof(path), "/v1/jobs/%u", w->job_id);
	st = _call(cli, "GET", path, NULL, &resp, &w->msg);
	if (st == 404) {
		json_decref(resp);
		return STEP_NEXT;	/* bbmgrd forgot it: register again */
	}
	if (st < 0 || st >= 400) {
		json_decref(resp);
		return st >= 400 && st < 500 ? STEP_FAIL : STEP_AGAIN;
	}
	alloc = json_object_get(resp, "allocation");
	nodes = alloc ? json_object_get(alloc, "nodes") : NULL;
	for (size_t i = 0; json_is_array(nodes) && i < json_array_size(nodes); i++) {
		json_t *n = json_array_get(nodes, i);
		if (i == 0 && _json_str(n, "path"))
			w->new_path = xstrdup(_json_str(n, "path"));
		if (_json_str(n, "name"))
			xstrfmtcat(w->new_nodes, "%s%s", w->new_nodes ? "," : "",
				   _json_str(n, "name"));
	}
	w->registered = true;
	w->allocated = (w->new_path != NULL);
	json_decref(resp);
	return STEP_DONE;
}

static json_t *_begin_body(work_t *w, char *path, size_t len)
{
	snprintf(path, len, "/v1/jobs/%u/begin", w->job_id);
	return json_pack("{s:i}", "nodes", (int) (w->ncompute ? w->ncompute : 1));
}

static step_rc_t _begin_done(work_t *w, int st)
{
	if (st < 0 || st >= 500)
		return STEP_AGAIN;
	return STEP_DONE;	/* a refused begin is not fatal to the job */
}

static step_rc_t _step_begin(hm_client_t *cli, work_t *w)
{
	char path[64];
	json_t *body = _begin_body(w, path, sizeof(path));
	int st = _call(cli, "POST", path, body, NULL, &w->msg);

	json_decref(body);
	return _begin_done(w, st);
}

static step_rc_t _step_destroy_persistent(hm_client_t *cli, work_t *w)
{
	for (int i = 0; i < w->req.npersist; i++) {
		hu_bb_persist_t *p = &w->req.persist[i];
		char path[128];
		step_rc_t rc;
		int st;

		if (p->op != HU_BB_PERSIST_DESTROY)
			continue;
		if ((rc = _check_owner(cli, w, p->name)) == STEP_AGAIN)
			return rc;
		if (rc == STEP_FAIL) {	/* another user's buffer: kept */
			error("%s: JobId=%u: destroy_persistent: %s",
			      plugin_type, w->job_id, w->msg);
			continue;
		}
		snprintf(path, sizeof(path), "/v1/persistent/%s", p->name);
		st = _call(cli, "DELETE", path, NULL, NULL, &w->msg);
		if (st < 0 || st >= 500)
			return STEP_AGAIN;
		if (st >= 400 && st != 404)
			error("%s: JobId=%u: %s", plugin_type, w->job_id, w->msg);
	}
	return STEP_NEXT;
}

static step_rc_t _teardown_done(work_t *w, int st)
{
	if (st < 0 || st >= 500)
		return STEP_AGAIN;
	w->released = true;
	return STEP_DONE;	/* 404: nothing left to end */
}

static step_rc_t _step_teardown(hm_client_t *cli, work_t *w)
{
	char path[64];

	snprintf(path, sizeof(path), "/v1/jobs/%u", w->job_id);
	return _teardown_done(w, _call(cli, "DELETE", path, NULL, NULL,
				       &w->msg));
}

/* A buffer kept after a failed stage-out: released once bbmgrd no longer has
 * the job (bbmgr release, DELETE /v1/jobs/ID). */
static step_rc_t _step_kept(hm_client_t *cli, work_t *w)
{
	json_t *resp = NULL;
	const char *state;
	char path[64];
	int st;

	snprintf(path, sizeof(path), "/v1/jobs/%u", w->job_id);
	st = _call(cli, "GET", path, NULL, &resp, &w->msg);
	state = _json_str(resp, "state");
	if (st == 404 || (st == 200 && state && !strcmp(state, "ended"))) {
		json_decref(resp);
		w->released = true;
		return STEP_DONE;
	}
	json_decref(resp);
	xfree(w->msg);		/* the job's record says it all already */
	return STEP_AGAIN;
}

/* Run the current step of w; w->step advances over STEP_NEXT results. */
static step_rc_t _run(hm_client_t *cli, work_t *w)
{
	step_rc_t rc = STEP_NEXT;

	if (w->subst_err && (w->want == WANT_STAGE_IN)) {
		xfree(w->msg);
		w->msg = xstrdup(w->subst_err);
		return STEP_FAIL;
	}
	while (rc == STEP_NEXT) {
		switch (w->want) {
		case WANT_STAGE_IN:
			switch (w->step) {
			case 0: rc = _step_register(cli, w); break;
			case 1: rc = _step_alloc(cli, w); break;
			case 2: rc = _step_persistent(cli, w); break;
			case 3: rc = _step_stage(cli, w, true); break;
			case 4: rc = _step_dirs_ready(cli, w); break;
			default: return STEP_DONE;
			}
			break;
		case WANT_RECONCILE:
			rc = _step_reconcile(cli, w);
			if (rc == STEP_NEXT) {	/* unknown to bbmgrd */
				w->want = WANT_STAGE_IN;
				w->step = 0;
				continue;
			}
			return rc;
		case WANT_BEGIN:
			return _step_begin(cli, w);
		case WANT_STAGE_OUT:
			switch (w->step) {
			case 0: rc = _step_stage(cli, w, false); break;
			case 1: rc = _step_destroy_persistent(cli, w); break;
			case 2: rc = _step_teardown(cli, w);
				return rc == STEP_DONE ? STEP_DONE : rc;
			default: return STEP_DONE;
			}
			break;
		case WANT_TEARDOWN:
			return _step_teardown(cli, w);
		case WANT_KEPT:
			return _step_kept(cli, w);
		default:
			return STEP_DONE;
		}
		if (rc == STEP_NEXT)
			w->step++;
	}
	return rc;
}

/* ------------------------------------------------------------------ agent */

/* Hold a pending job whose buffer could not be set up (FAIL_BURST_BUFFER_OP). */
static void _fail_job(job_record_t *job_ptr, bb_job_t *bb_job, const char *op,
		      const char *msg)
{
	xfree(job_ptr->state_desc);
	job_ptr->state_reason = FAIL_BURST_BUFFER_OP;
	xstrfmtcat(job_ptr->state_desc, "%s: %s: %s", plugin_type, op, msg);
	bb_update_system_comment(job_ptr, (char *) op, (char *) msg, 0);
	if (IS_JOB_PENDING(job_ptr))
		job_ptr->priority = 0;	/* hold */
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
		(void) bb_free_alloc_rec(&bb_state, a);
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
	h = _hjob_find(w->job_id);
	if (job_ptr)
		bb_job = _get_bb_job(job_ptr);
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
	if (w->allocated && job_ptr && bb_job && bb_job->total_size &&
	    !bb_find_alloc_rec(&bb_state, job_ptr)) {
		bb_alloc_t *a = bb_alloc_job(&bb_state, job_ptr, bb_job);

		/* a record made again shows the buffer's first creation */
		if (!h->alloc_time)
			h->alloc_time = now;
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
			delay = MIN(DIRS_CHECK, (double) conf.poll_interval);
		} else if (w->stage_wait) {
			/* small transfers end within milliseconds: poll
			 * after 10 ms, then 1.5 times as long each time, up
			 * to PollInterval */
			delay = 0.01 * pow(1.5, MIN(h->polls, 20));
			delay = MIN(delay, (double) conf.poll_interval);
			h->polls++;
		} else if (w->want == WANT_KEPT) {
			delay = KEPT_CHECK;
			if (job_ptr && bb_job)
				_keep_alloc(job_ptr, bb_job);
		} else {
			delay = (w->msg && strstr(w->msg, "unreachable")) ?
				conf.retry_interval : conf.poll_interval;
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
				_fail_job(job_ptr, bb_job, "stage-in",
					  w->msg ? w->msg : "failed");
				bb_set_job_bb_state(job_ptr, bb_job,
						    BB_STATE_PENDING);
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
				char *m = xstrdup_printf("%s; its data is kept in the job's buffer (%s on %s) until an administrator frees it with 'bbmgr release %u'",
							 w->msg ? w->msg : "failed",
							 h->bb_path ? h->bb_path : "-",
							 h->bb_nodes ? h->bb_nodes : "-",
							 w->job_id);
				_fail_job(job_ptr, bb_job, "stage-out", m);
				xfree(m);
				job_ptr->job_state &= (~JOB_STAGE_OUT);
				bb_set_job_bb_state(job_ptr, bb_job,
						    BB_STATE_TEARDOWN_FAIL);
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
		if (job_ptr && bb_job &&
		    bb_job->state == BB_STATE_STAGING_IN) {
			bb_set_job_bb_state(job_ptr, bb_job,
					    BB_STATE_STAGED_IN);
			xfree(job_ptr->state_desc);
			log_flag(BURST_BUF, "%pJ stage-in complete (%s on %s)",
				 job_ptr, h->bb_path ? h->bb_path : "-",
				 h->bb_nodes ? h->bb_nodes : "-");
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
			bb_set_job_bb_state(job_ptr, bb_job,
					    BB_STATE_STAGED_IN);
			kick = true;
		}
		break;
	case WANT_KEPT:
		if (job_ptr) {
			_free_alloc(job_ptr);
			if (bb_job)
				bb_set_job_bb_state(job_ptr, bb_job,
						    BB_STATE_COMPLETE);
			bb_update_system_comment(job_ptr, "teardown",
						 "the buffer kept after the failed stage-out was released",
						 0);
			last_job_update = now;
			info("%s: %pJ: the buffer kept after its failed stage-out was released",
			     plugin_type, job_ptr);
		}
		_hjob_del(w->job_id);
		break;
	case WANT_STAGE_OUT:
	case WANT_TEARDOWN:
		if (job_ptr && h->keep_pending) {
			_free_alloc(job_ptr);
			log_flag(BURST_BUF, "%pJ: space of the failed stage-in released",
				 job_ptr);
		} else if (job_ptr) {
			_free_alloc(job_ptr);
			if (bb_job)
				bb_set_job_bb_state(job_ptr, bb_job,
						    BB_STATE_COMPLETE);
			if (w->want == WANT_STAGE_OUT || IS_JOB_STAGE_OUT(job_ptr)) {
				job_ptr->job_state &= (~JOB_STAGE_OUT);
				/* a stage-out cut short says so */
				if (!job_ptr->state_desc ||
				    !strstr(job_ptr->state_desc, "scancel --hurry"))
					xfree(job_ptr->state_desc);
				last_job_update = now;
			}
			log_flag(BURST_BUF, "%pJ %s complete", job_ptr,
				 w->want == WANT_STAGE_OUT ? "stage-out" :
				 "teardown");
		}
		_hjob_del(w->job_id);
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
			if (h->want == WANT_NOTHING || h->next_try > now ||
			    h->round == round)
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
			_hjob_request(h, &w->req, &w->subst_err);
			h->round = round;	/* not again this round */
			return true;
		}
	}
	return false;
}

/* Take bbmgrd's GET /v1/pools answer as the pools "scontrol show burst"
 * shows. */
static void _pools_apply_locked(json_t *resp)
{
	json_t *pools = json_object_get(resp, "pools");

	if (!json_is_array(pools))
		return;
	if (pools_last != resp) {
		json_decref(pools_last);
		pools_last = json_incref(resp);
	}
	for (uint32_t i = 0; i < bb_state.bb_config.pool_cnt; i++)
		xfree(bb_state.bb_config.pool_ptr[i].name);
	xfree(bb_state.bb_config.pool_ptr);
	bb_state.bb_config.pool_cnt = json_array_size(pools);
	bb_state.bb_config.pool_ptr = xcalloc(bb_state.bb_config.pool_cnt + 1,
					      sizeof(burst_buffer_pool_t));
	bb_state.total_space = bb_state.used_space = bb_state.unfree_space = 0;
	uint64_t free_space;
	xfree(pool_nodes);
	pool_nodes_cnt = bb_state.bb_config.pool_cnt;
	pool_nodes = xcalloc(pool_nodes_cnt + 1, sizeof(*pool_nodes));
	for (size_t i = 0; i < json_array_size(pools); i++) {
		json_t *p = json_array_get(pools, i);
		burst_buffer_pool_t *bp = &bb_state.bb_config.pool_ptr[i];
		pool_nodes[i] = json_integer_value(json_object_get(p, "nodes"));
		const char *name = _json_str(p, "name");
		bp->name = xstrdup(name ? name : "?");
		bp->total_space = json_number_value(json_object_get(p, "capacity"));
		bp->used_space = json_number_value(json_object_get(p, "used"));
		free_space = json_number_value(json_object_get(p, "free"));
		bp->unfree_space = bp->total_space > free_space ?
				   bp->total_space - free_space : 0;
		bp->granularity = json_number_value(json_object_get(p, "granularity"));
		if (!bp->granularity)
			bp->granularity = 1;
		bb_state.total_space += bp->total_space;
		bb_state.used_space += bp->used_space;
		bb_state.unfree_space += bp->unfree_space;
	}
	bb_state.last_update_time = time(NULL);
}

static void _pools_apply(json_t *resp)
{
	slurm_mutex_lock(&bb_state.bb_mutex);
	_pools_apply_locked(resp);
	slurm_mutex_unlock(&bb_state.bb_mutex);
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
		(void) bb_free_alloc_rec(&bb_state, old[k]);
	xfree(old);
	json_array_foreach(list, i, p) {
		const char *name = _json_str(p, "name"), *pool = _json_str(p, "pool");
		double created = json_number_value(json_object_get(p, "created"));
		bb_alloc_t *a;

		if (!name)
			continue;
		a = bb_alloc_name_rec(&bb_state, (char *) name,
				      json_integer_value(json_object_get(p, "uid")));
		a->size = json_number_value(json_object_get(p, "capacity"));
		a->pool = xstrdup(pool);
		if (created > 0)
			a->create_time = (time_t) created;
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
	int st = _call(cli, "GET", "/v1/pools", NULL, &resp, &msg);

	if (st == 200)
		_pools_apply(resp);
	json_decref(resp);
	resp = NULL;
	st = _call(cli, "GET", "/v1/persistent", NULL, &resp, &msg);
	if (st == 200)
		_persist_apply(resp);
	json_decref(resp);
	xfree(msg);
}

/*
 * Batches.  The steps that are one request each, of every job due in a round
 * (registration and allocation at stage-in, begin, teardown; with a GET
 * /v1/pools after teardowns), go to bbmgrd in one POST /v1/batch: one HTTP
 * exchange and one durable commit in bbmgrd for all of them, where one request
 * each cost an exchange and a commit each (doc/api.md).  A burst of
 * submissions or of job ends then costs bbmgrd and this thread a fraction of
 * what it did.  The other steps (persistent buffers, transfers, reconcile) go
 * one request at a time, after the batch, from where it left the job.
 */
#define BATCH_JOBS 32		/* jobs per batch (well within max_body) */

typedef enum { BI_REGISTER, BI_ALLOC, BI_BEGIN, BI_TEARDOWN, BI_POOLS } bi_kind_t;

typedef struct {
	int job;		/* index in the round's works; -1: pools */
	bi_kind_t kind;
	char path[64];
	const char *method;
} bitem_t;

static bool batch_unsupported = false;	/* bbmgrd answered 404/405 (agent thread) */

static void _bitem_add(json_t *reqs, bitem_t *items, int *ni, int job,
		       bi_kind_t kind, const char *method, const char *path,
		       json_t *body)
{
	bitem_t *it = &items[(*ni)++];
	json_t *r = json_pack("{s:s s:s}", "method", method, "path", path);

	it->job = job;
	it->kind = kind;
	it->method = method;
	snprintf(it->path, sizeof(it->path), "%s", path);
	if (body)
		json_object_set_new(r, "body", body);
	json_array_append_new(reqs, r);
}

/* Add the requests of w's next one-request steps to the batch (none: its
 * next step goes alone).  Steps that need no request are passed over. */
static void _plan(work_t *w, int job, json_t *reqs, bitem_t *items, int *ni)
{
	char path[64];
	json_t *body;
	bool destroy = false;

	if (w->subst_err)
		return;		/* _run() says why */
	switch (w->want) {
	case WANT_STAGE_IN:
		if (w->step == 0) {
			_bitem_add(reqs, items, ni, job, BI_REGISTER, "POST",
				   "/v1/jobs", _register_body(w));
		}
		if ((w->step == 0 || w->step == 1) && w->req.has_buffer) {
			body = _alloc_body(w, path, sizeof(path));
			_bitem_add(reqs, items, ni, job, BI_ALLOC, "POST",
				   path, body);
		}
		break;
	case WANT_BEGIN:
		body = _begin_body(w, path, sizeof(path));
		_bitem_add(reqs, items, ni, job, BI_BEGIN, "POST", path, body);
		break;
	case WANT_STAGE_OUT:
		for (int i = 0; i < w->req.npersist; i++)
			if (w->req.persist[i].op == HU_BB_PERSIST_DESTROY)
				destroy = true;
		if (w->step == 0 && w->req.nstage_out == 0)
			w->step = 1;
		if (w->step == 1 && !destroy)
			w->step = 2;
		if (w->step != 2)
			break;
		/* fall through */
	case WANT_TEARDOWN:
		snprintf(path, sizeof(path), "/v1/jobs/%u", w->job_id);
		_bitem_add(reqs, items, ni, job, BI_TEARDOWN, "DELETE", path,
			   NULL);
		break;
	default:
		break;
	}
}

/*
 * Run the due work of n jobs: their one-request steps in one batch when there
 * are two requests or more, then whatever each job has left, one request at a
 * time.  rcs[i] gets each job's result.  Returns true when the pools were
 * read in the batch.
 */
static bool _run_batch(hm_client_t *cli, work_t *ws, step_rc_t *rcs, int n)
{
	bitem_t *items = xcalloc(3 * n + 1, sizeof(*items));
	json_t *reqs = json_array(), *body = NULL, *resp = NULL, *replies;
	bool *planned = xcalloc(n, sizeof(bool)), teardown = false;
	bool pools = false;
	hm_error_t err;
	int ni = 0, st;

	for (int i = 0; i < n; i++) {
		int before = ni;

		rcs[i] = STEP_NEXT;
		if (batch_unsupported)
			continue;
		_plan(&ws[i], i, reqs, items, &ni);
		planned[i] = (ni > before);
		if (ni > before && items[ni - 1].kind == BI_TEARDOWN)
			teardown = true;
	}
	if (teardown)
		_bitem_add(reqs, items, &ni, -1, BI_POOLS, "GET", "/v1/pools",
			   NULL);
	if (ni < 2) {
		/* one request: as well alone */
		memset(planned, 0, n * sizeof(bool));
		goto alone;
	}

	body = json_pack("{s:o}", "requests", reqs);
	reqs = NULL;
	st = hm_request(cli, "POST", "/v1/batch", body, &resp, &err);
	replies = json_object_get(resp, "replies");
	if (st == 200 && json_is_array(replies) &&
	    (int) json_array_size(replies) == ni) {
		for (int k = 0; k < ni; k++) {
			bitem_t *it = &items[k];
			json_t *r = json_array_get(replies, k);
			json_t *rb = json_object_get(r, "body");
			int rst = (int) json_integer_value(json_object_get(r, "status"));
			work_t *w;

			if (it->kind == BI_POOLS) {
				if (rst == 200) {
					_pools_apply(rb);
					pools = true;
				}
				continue;
			}
			w = &ws[it->job];
			if (rcs[it->job] != STEP_NEXT)
				continue;	/* an earlier step of it failed */
			if (rst >= 400)
				_reply_msg(it->method, it->path, rst, rb, &w->msg);
			switch (it->kind) {
			case BI_REGISTER:
				rcs[it->job] = _register_done(w, rst);
				break;
			case BI_ALLOC:
				rcs[it->job] = _alloc_done(w, rst, rb);
				break;
			case BI_BEGIN:
				rcs[it->job] = _begin_done(w, rst);
				break;
			case BI_TEARDOWN:
				rcs[it->job] = _teardown_done(w, rst);
				break;
			default:
				break;
			}
			if (rcs[it->job] == STEP_NEXT)
				w->step++;
		}
	} else if (st == 404 || st == 405) {
		/* a bbmgrd without batches: one request at a time from now */
		info("%s: bbmgrd has no POST /v1/batch: one request at a time",
		     plugin_type);
		batch_unsupported = true;
		memset(planned, 0, n * sizeof(bool));
	} else if (st < 0 || st >= 500) {
		for (int i = 0; i < n; i++) {
			if (!planned[i])
				continue;
			xfree(ws[i].msg);
			ws[i].msg = st < 0 ?
				xstrdup_printf("bbmgrd unreachable (%s)", err.text) :
				xstrdup_printf("bbmgrd: POST /v1/batch: %d", st);
			rcs[i] = STEP_AGAIN;
		}
	} else {
		/* refused as a whole (should not happen): each alone */
		char buf[512];
		error("%s: bbmgrd refused a batch of %d requests: %d: %s",
		      plugin_type, ni, st,
		      resp ? hm_error_text(resp, buf, sizeof(buf)) : "");
		memset(planned, 0, n * sizeof(bool));
	}

alone:
	for (int i = 0; i < n; i++)
		if (!planned[i] || rcs[i] == STEP_NEXT)
			rcs[i] = _run(cli, &ws[i]);
	json_decref(reqs);
	json_decref(body);
	json_decref(resp);
	xfree(items);
	xfree(planned);
	return pools;
}

/* After start or reconfigure: rebuild the records of every job with a request
 * (jobs recovered from slurmctld's state). */
static void _scan_jobs(void)
{
	slurmctld_lock_t job_read_lock = { .job = READ_LOCK };
	ListIterator it;
	job_record_t *job_ptr;

	lock_slurmctld(job_read_lock);
	slurm_mutex_lock(&bb_state.bb_mutex);
	it = list_iterator_create(job_list);
	while ((job_ptr = list_next(it))) {
		if (job_ptr->burst_buffer && job_ptr->burst_buffer[0] &&
		    !IS_JOB_COMPLETED(job_ptr))
			(void) _get_bb_job(job_ptr);
		else if (job_ptr->burst_buffer &&
			 (IS_JOB_STAGE_OUT(job_ptr) ||
			  !xstrcmp(job_ptr->burst_buffer_state,
				   "teardown-fail")))
			(void) _get_bb_job(job_ptr);	/* a kept buffer */
	}
	list_iterator_destroy(it);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	unlock_slurmctld(job_read_lock);
}

static hm_client_t *_client(long timeout_s)
{
	hm_client_opts_t o = { 0 };
	hm_error_t err;
	hm_client_t *cli;

	o.url = conf.url;
	o.munge_socket = conf.munge_socket;
	o.connect_timeout_ms = 2000;
	o.timeout_ms = timeout_s * 1000;
	if (!(cli = hm_client_create(&o, &err)))
		error("%s: cannot create the bbmgrd client: %s", plugin_type,
		      err.text);
	return cli;
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

/*
 * A task of a job array whose throttle (--array=...%N) is reached: N tasks run
 * or have their buffer set up.  It takes no buffer space others could use;
 * its stage-in starts when a running task ends.  Call with bb_mutex held.
 */
static bool _array_throttled(job_record_t *job_ptr)
{
	job_record_t *meta;
	uint32_t busy;

	if (!job_ptr->array_job_id)
		return false;
	/* not from the job's reason: this plugin sets it too (_set_reason) */
	meta = job_ptr->array_recs ? job_ptr :
	       find_job_record(job_ptr->array_job_id);
	if (!meta || !meta->array_recs || !meta->array_recs->max_run_tasks)
		return false;
	busy = meta->array_recs->tot_run_tasks;
	for (int i = 0; i < HJOB_HASH; i++)
		for (hjob_t *h = hjobs[i]; h; h = h->next) {
			bb_job_t *b;
			if (h->array_job_id != job_ptr->array_job_id ||
			    h->job_id == job_ptr->job_id ||
			    !(b = bb_job_find(&bb_state, h->job_id)))
				continue;
			if (b->state == BB_STATE_STAGING_IN ||
			    b->state == BB_STATE_STAGED_IN)
				busy++;
		}
	return busy >= meta->array_recs->max_run_tasks;
}

/*
 * CPUs of each node (by node index) that running or suspended jobs hold, as a
 * partition that oversubscribes counts them: the select plugin's count of
 * allocated CPUs is the union of its rows, which says nothing of how many of
 * them are left there.  Built again when the jobs on the nodes change, at most
 * once a second otherwise.  Call with bb_mutex and the job and node read
 * locks.
 */
static uint32_t *held_cpus = NULL;
static int held_cpus_cnt = 0;
static time_t held_cpus_time = 0;
static uint64_t held_cpus_sig = 0;

static int _add_held_cpus(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	job_resources_t *r = job_ptr->job_resrcs;
	int i, k = 0, n;

	if ((!IS_JOB_RUNNING(job_ptr) && !IS_JOB_SUSPENDED(job_ptr)) || !r ||
	    !r->node_bitmap || !r->cpus)
		return 0;
	n = MIN(bit_size(r->node_bitmap), held_cpus_cnt);
	for (i = 0; (i < n) && (k < r->nhosts); i++)
		if (bit_test(r->node_bitmap, i))
			held_cpus[i] += r->cpus[k++];
	return 0;
}

static void _held_cpus_update(void)
{
	node_record_t *node_ptr;
	uint64_t sig = 0;
	time_t now = time(NULL);

	for (int i = 0; (node_ptr = next_node(&i)); i++)
		sig = sig * 31 + node_ptr->run_job_cnt * 7 +
		      node_ptr->sus_job_cnt;
	if (held_cpus && (held_cpus_cnt == node_record_count) &&
	    (sig == held_cpus_sig) && (now == held_cpus_time))
		return;
	if (held_cpus_cnt != node_record_count) {
		xfree(held_cpus);
		held_cpus = xcalloc(node_record_count, sizeof(*held_cpus));
		held_cpus_cnt = node_record_count;
	} else {
		memset(held_cpus, 0, held_cpus_cnt * sizeof(*held_cpus));
	}
	list_for_each(job_list, _add_held_cpus, NULL);
	held_cpus_sig = sig;
	held_cpus_time = now;
}

/*
 * How many jobs may share a CPU of the partition with this job: N with
 * OverSubscribe=FORCE:N, or YES:N and a job that asks --oversubscribe; else 1.
 */
static uint16_t _share_rows(part_record_t *part, struct job_details *d)
{
	uint16_t n = part->max_share & ~SHARED_FORCE;

	if ((part->max_share & SHARED_FORCE) && (n > 1))
		return n;
	if ((n > 1) && (d->share_res == 1))
		return n;
	return 1;
}

/*
 * Could the job get CPUs now?  Enough of its partition's nodes (up, not
 * drained) have the job's CPUs per node free (whole nodes with
 * OverSubscribe=EXCLUSIVE or --exclusive).  In a partition that
 * oversubscribes N times, a node has N times its CPUs, less those the jobs
 * on it hold.  Both are necessary conditions only: "no" means the job cannot
 * start now.  With preemption configured a job may start by preempting
 * others: yes.  Call with the job and node read locks.
 */
static bool _cpus_free(job_record_t *job_ptr)
{
	part_record_t *part = job_ptr->part_ptr;
	struct job_details *d = job_ptr->details;
	uint32_t need, per_node, found = 0;
	uint16_t rows;
	bool whole;
	node_record_t *node_ptr;

	if (!part || !part->node_bitmap || !d || !avail_node_bitmap)
		return true;
	if (slurm_conf.preempt_type &&
	    xstrcmp(slurm_conf.preempt_type, "preempt/none"))
		return true;
	rows = _share_rows(part, d);
	whole = (d->whole_node == 1) ||
		((rows == 1) && ((part->max_share == 0) || (d->share_res == 0)));
	need = d->min_nodes ? d->min_nodes : 1;
	per_node = MAX((d->min_cpus + need - 1) / need, 1);
	if (rows > 1)
		_held_cpus_update();
	else
		(void) select_g_select_nodeinfo_set_all(); /* cheap if unchanged */
	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		uint32_t used = 0, cpus;

		if (!bit_test(part->node_bitmap, node_ptr->index) ||
		    !bit_test(avail_node_bitmap, node_ptr->index))
			continue;
		cpus = node_ptr->config_ptr ? node_ptr->config_ptr->cpus :
					      node_ptr->cpus;
		if (rows > 1) {
			cpus *= rows;
			used = whole ? (node_ptr->run_job_cnt +
					node_ptr->sus_job_cnt) :
				       held_cpus[node_ptr->index];
		} else if (!IS_NODE_IDLE(node_ptr)) {
			uint16_t alloc = 0;
			(void) select_g_select_nodeinfo_get(
				node_ptr->select_nodeinfo,
				SELECT_NODEDATA_SUBCNT, NODE_STATE_ALLOCATED,
				&alloc);
			used = alloc;
		}
		if (whole ? (used == 0) : (cpus > used && cpus - used >= per_node))
			if (++found >= need)
				return true;
	}
	return false;
}

/*
 * Is the job about to run?  Its CPUs are free now, or the backfill scheduler
 * expects them to be within STAGE_LEAD seconds (as Slurm's lua plugin, in
 * expected-start order: bb_p_job_try_stage_in gets the jobs sorted by it).  A
 * job that waits for CPUs holds no buffer space others could use meanwhile.
 * A start time now or past says nothing: the main scheduler sets it to the
 * time of its pass for any job it finds waiting for its buffer.  Call with
 * the job and node read locks.
 */
#define STAGE_LEAD 300
static bool _about_to_run(job_record_t *job_ptr)
{
	time_t now = time(NULL);

	if (_cpus_free(job_ptr))
		return true;
	return (job_ptr->start_time > now) &&
	       (job_ptr->start_time <= now + STAGE_LEAD);
}

/*
 * What a job whose stage-in has not started waits for, when it is not its
 * buffer: its array's throttle or CPUs (WAIT_NO_REASON when it may have its
 * buffer now).  Call with bb_mutex and the job and node read locks.
 */
static enum job_state_reason _waits_for(job_record_t *job_ptr)
{
	if (_array_throttled(job_ptr))
		return WAIT_ARRAY_TASK_LIMIT;
	if (!_about_to_run(job_ptr))
		return WAIT_RESOURCES;
	return WAIT_NO_REASON;
}

/* Give a job that waits for something else than its buffer that reason, where
 * slurmctld said BurstBufferResources.  Call as _waits_for. */
static void _set_reason(job_record_t *job_ptr, enum job_state_reason why)
{
	if ((why == WAIT_NO_REASON) || !IS_JOB_PENDING(job_ptr) ||
	    (job_ptr->state_reason != WAIT_BURST_BUFFER_RESOURCE))
		return;
	job_ptr->state_reason = why;
	xfree(job_ptr->state_desc);
	last_job_update = time(NULL);
}

/*
 * Jobs that a main scheduler pass found waiting for CPUs or for their array's
 * throttle, not for their buffer (bb_mutex).  select_nodes() gives every job
 * whose stage-in has not started the reason BurstBufferResources, after it
 * asked bb_p_job_test_stage_in.  So that hook clears the job's start time
 * (saved here), which makes the pass end with bb_p_job_try_stage_in, under
 * the same locks; that one gives the job back its start time and its true
 * reason (_not_bb_apply).
 */
typedef struct {
	uint32_t job_id;
	time_t start_time;
	enum job_state_reason why;
} not_bb_t;
static not_bb_t *not_bb = NULL;
static int not_bb_cnt = 0, not_bb_cap = 0;

static void _not_bb_add(job_record_t *job_ptr, enum job_state_reason why)
{
	int i;

	for (i = 0; i < not_bb_cnt; i++)
		if (not_bb[i].job_id == job_ptr->job_id)
			break;
	if (i == not_bb_cnt) {
		if (not_bb_cnt == not_bb_cap) {
			not_bb_cap = MAX(16, 2 * not_bb_cap);
			xrecalloc(not_bb, not_bb_cap, sizeof(*not_bb));
		}
		not_bb[i].job_id = job_ptr->job_id;
		not_bb[i].start_time = job_ptr->start_time;
		not_bb_cnt++;
	}
	not_bb[i].why = why;
	job_ptr->start_time = 0;
}

static void _not_bb_apply(void)
{
	time_t now = time(NULL);

	for (int i = 0; i < not_bb_cnt; i++) {
		job_record_t *job_ptr = find_job_record(not_bb[i].job_id);
		bb_job_t *bb_job;

		if (!job_ptr || !IS_JOB_PENDING(job_ptr) ||
		    !(bb_job = bb_job_find(&bb_state, job_ptr->job_id)) ||
		    (bb_job->state >= BB_STATE_STAGING_IN))
			continue;
		if (not_bb[i].start_time > now)	/* backfill's estimate */
			job_ptr->start_time = not_bb[i].start_time;
		_set_reason(job_ptr, not_bb[i].why);
	}
	not_bb_cnt = 0;
}

/*
 * May the stage-in of a job just submitted start now, rather than when a
 * scheduler pass first considers the job?  The same tests as the main
 * scheduler makes before it asks for stage-in (select_nodes): not held,
 * independent, eligible, within the accounting limits, partition up.  Anything
 * unusual (reservation, federation, array meta record) is left to the
 * scheduler.  Call with the job write lock and without bb_mutex (the
 * accounting check takes the association locks).
 */
static bool _eager_ok(job_record_t *job_ptr)
{
	struct job_details *d = job_ptr->details;

	if (!IS_JOB_PENDING(job_ptr) || (job_ptr->priority == 0) || !d ||
	    !job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
		return false;
	if (job_ptr->array_recs && ((job_ptr->array_task_id == NO_VAL) ||
				    (job_ptr->array_task_id == INFINITE)))
		return false;
	if ((d->begin_time > time(NULL)) ||
	    (d->depend_list && list_count(d->depend_list)))
		return false;
	if (job_ptr->resv_name || job_ptr->fed_details || job_ptr->het_job_id)
		return false;
	switch (job_ptr->state_reason) {
	case WAIT_HELD:
	case WAIT_HELD_USER:
	case WAIT_MAX_REQUEUE:
	case WAIT_DEPENDENCY:
	case WAIT_DEP_INVALID:
	case WAIT_TIME:
	case FAIL_BURST_BUFFER_OP:
	case FAIL_ACCOUNT:
	case FAIL_QOS:
	case FAIL_BAD_CONSTRAINTS:
		return false;
	default:
		break;
	}
	if (!job_ptr->part_ptr ||
	    !(job_ptr->part_ptr->state_up & PARTITION_SCHED))
		return false;
	return acct_policy_job_runnable_pre_select(job_ptr, false);
}

/* Start the stage-in of the jobs submitted since the last round that may start
 * it now (see _eager_ok): their buffer is then usually ready before the first
 * scheduler pass looks at them, which starts them at once. */
static void _eager_stage_in(void)
{
	slurmctld_lock_t job_write_lock = { .job = WRITE_LOCK, .node = READ_LOCK,
					    .part = READ_LOCK };
	uint32_t *ids;
	int cnt;

	slurm_mutex_lock(&bb_state.bb_mutex);
	ids = eager_ids;
	cnt = eager_cnt;
	eager_ids = NULL;
	eager_cnt = eager_cap = 0;
	slurm_mutex_unlock(&bb_state.bb_mutex);
	if (!cnt) {
		xfree(ids);
		return;
	}
	lock_slurmctld(job_write_lock);
	for (int i = 0; i < cnt; i++) {
		job_record_t *job_ptr = find_job_record(ids[i]);
		bb_job_t *bb_job;

		if (!job_ptr || !_eager_ok(job_ptr))
			continue;
		slurm_mutex_lock(&bb_state.bb_mutex);
		if ((bb_job = _get_bb_job(job_ptr)) &&
		    (bb_job->state == BB_STATE_PENDING)) {
			enum job_state_reason why = _waits_for(job_ptr);

			if (why == WAIT_NO_REASON) {
				log_flag(BURST_BUF, "%pJ: stage-in starts at submission",
					 job_ptr);
				_start_stage_in(job_ptr, bb_job);
			}
			/* waits for CPUs or its array's throttle: stage-in
			 * when they are free (bb_p_job_try_stage_in) */
			_set_reason(job_ptr, why);
		}
		slurm_mutex_unlock(&bb_state.bb_mutex);
	}
	unlock_slurmctld(job_write_lock);
	xfree(ids);
}

static void *_agent(void *arg)
{
	hm_client_t *cli = NULL;
	work_t *ws = xcalloc(BATCH_JOBS, sizeof(*ws));
	step_rc_t *rcs = xcalloc(BATCH_JOBS, sizeof(*rcs));
	time_t last_pools = 0;
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
			ts.tv_sec += (time_t) wait;
			ts.tv_nsec += (long) ((wait - (time_t) wait) * 1e9);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			if (wait > 0)
				pthread_cond_timedwait(&agent_cond,
						       &bb_state.bb_mutex, &ts);
		}
		/* submissions just in: let the burst gather (EAGER_GATHER) */
		while (!agent_stop && eager_cnt &&
		       hu_mono() - eager_since < EAGER_GATHER) {
			double until = eager_since + EAGER_GATHER - hu_mono();
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long) (until * 1e9);
			while (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&agent_cond, &bb_state.bb_mutex,
					       &ts);
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
			agent_rescan = true;	/* jobs not loaded yet */
		if (bb_state.last_load_time)
			_eager_stage_in();

		if (conf.configured && !cli)
			cli = _client(conf.timeout);
		now = time(NULL);
		/* every 10 s, and within a second of a new allocation (not
		 * after each one: a burst of small jobs would pay one more
		 * round trip each) */
		if (cli && (now - last_pools >= 10 ||
			    (pools_stale && now != last_pools))) {
			_refresh_pools(cli);
			last_pools = now;
			pools_stale = false;
		}
		/* Run every due job once per round, BATCH_JOBS at a time. */
		round++;
		mnow = hu_mono();
		while (1) {
			int n = 0;
			bool released = false, allocated = false;

			slurm_mutex_lock(&bb_state.bb_mutex);
			while (n < BATCH_JOBS && !agent_stop &&
			       _next_due(&ws[n], mnow, round))
				n++;
			slurm_mutex_unlock(&bb_state.bb_mutex);
			if (!n)
				break;
			if (!conf.configured) {
				for (int i = 0; i < n; i++)
					_run_local(&ws[i]);
			} else if (cli) {
				bool pools = _run_batch(cli, ws, rcs, n);
				for (int i = 0; i < n; i++) {
					released |= ws[i].released;
					/* persistent buffers made or gone are
					 * listed again soon, as allocations */
					allocated |= ws[i].allocated ||
						     ws[i].req.npersist;
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
				_work_free(&ws[i]);
		}
	}
	xfree(ws);
	xfree(rcs);
	hm_client_destroy(cli);
	return NULL;
}

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
			info("%s: bbmgrd at %s (jobs use %s)", plugin_type,
			     conf.url, conf.job_url ? conf.job_url : "-");
		else
			info("%s: no %s: requests are validated, no buffer is set up",
			     plugin_type, path);
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
	bb_load_config(&bb_state, (char *) plugin_type);
	bb_alloc_cache(&bb_state);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	if (_load_conf() != SLURM_SUCCESS)
		return SLURM_ERROR;
	slurm_mutex_lock(&bb_state.bb_mutex);
	_sys_sources();
	slurm_mutex_unlock(&bb_state.bb_mutex);

	agent_stop = false;
	agent_rescan = true;
	slurm_thread_create(&agent_tid, _agent, NULL);
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
			_hjob_free(h);
		}
	}
	xfree(status_cache);
	xfree(pool_nodes);
	pool_nodes_cnt = 0;
	json_decref(pools_last);
	pools_last = NULL;
	xfree(eager_ids);
	eager_cnt = eager_cap = 0;
	xfree(not_bb);
	not_bb_cnt = not_bb_cap = 0;
	xfree(held_cpus);
	held_cpus_cnt = 0;
	bbh_conf_free(&conf);
	bb_clear_config(&bb_state.bb_config, true);
	bb_clear_cache(&bb_state);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return SLURM_SUCCESS;
}

extern uint64_t bb_p_get_system_size(void)
{
	uint64_t size = 0;

	slurm_mutex_lock(&bb_state.bb_mutex);
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
	agent_rescan = true;
	slurm_cond_signal(&agent_cond);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return SLURM_SUCCESS;
}

/* One JSON value as text: numbers as numbers, objects as "k=v, k=v". */
static void _value_text(json_t *v, char **out)
{
	const char *k;
	json_t *x;
	bool first = true;

	if (json_is_string(v)) {
		xstrcat(*out, json_string_value(v));
	} else if (json_is_integer(v)) {
		xstrfmtcat(*out, "%"PRId64, (int64_t) json_integer_value(v));
	} else if (json_is_real(v)) {
		xstrfmtcat(*out, "%.3f", json_real_value(v));
	} else if (json_is_boolean(v)) {
		xstrcat(*out, json_is_true(v) ? "yes" : "no");
	} else if (json_is_object(v)) {
		json_object_foreach(v, k, x) {
			xstrfmtcat(*out, "%s%s=", first ? "" : ", ", k);
			_value_text(x, out);
			first = false;
		}
	} else if (json_is_null(v)) {
		xstrcat(*out, "-");
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++) {
			xstrcat(*out, i ? "; " : "");
			_value_text(json_array_get(v, i), out);
		}
		if (!json_array_size(v))
			xstrcat(*out, "none");
	} else {
		char *d = json_dumps(v, JSON_COMPACT);
		xstrcat(*out, d ? d : "-");
		free(d);
	}
}

/* bbmgrd's GET /v1/status as "  key: value" lines, in the daemon's order. */
static void _status_text(json_t *st, char **out)
{
	const char *k;
	json_t *v;

	json_object_foreach(st, k, v) {
		xstrfmtcat(*out, "  %s: ", k);
		if (!xstrcmp(k, "started") && json_is_number(v)) {
			time_t t = (time_t) json_number_value(v);
			char buf[64];
			slurm_make_time_str(&t, buf, sizeof(buf));
			xstrcat(*out, buf);
		} else if (!xstrcmp(k, "uptime") && json_is_number(v)) {
			xstrfmtcat(*out, "%.0f s", json_number_value(v));
		} else {
			_value_text(v, out);
		}
		xstrcat(*out, "\n");
	}
}

/* The node agents bbmgrd reports down (status "agents": {"down": [{node,
 * reason}]}), or NULL. */
static json_t *_agents_down(json_t *status)
{
	json_t *down = json_object_get(json_object_get(status, "agents"), "down");

	return json_is_array(down) ? down : NULL;
}

/*
 * The buffer nodes out of service, from bbmgrd's GET /v1/nodes and its status:
 * drained nodes (no new allocation; their space beyond what their kept
 * allocations use is neither free nor used, so TotalSpace - FreeSpace -
 * UsedSpace of "scontrol show burst") with their reason, and nodes whose
 * agent is down.
 */
static void _nodes_text(json_t *nodes, json_t *status, char **out)
{
	json_t *list = json_object_get(nodes, "nodes"), *down = _agents_down(status);
	uint64_t drained = 0;
	int ndrained = 0, n = json_array_size(list);
	char sz[32];
	char *lines = NULL;

	for (int i = 0; i < n; i++) {
		json_t *nd = json_array_get(list, i);
		const char *reason = _json_str(nd, "reason");
		uint64_t cap = json_number_value(json_object_get(nd, "capacity"));
		uint64_t used = json_number_value(json_object_get(nd, "used"));
		if (xstrcmp(_json_str(nd, "state"), "drained"))
			continue;
		/* what its kept allocations use stays counted as used */
		cap = cap > used ? cap - used : 0;
		ndrained++;
		drained += cap;
		xstrfmtcat(lines, "    %s: drained (%s), %s out of service, %"PRId64" allocation(s) kept\n",
			   _json_str(nd, "name") ? _json_str(nd, "name") : "?",
			   reason && reason[0] ? reason : "no reason given",
			   hu_bb_size_str(cap, sz, sizeof(sz)),
			   (int64_t) json_integer_value(json_object_get(nd, "allocations")));
	}
	for (size_t i = 0; down && i < json_array_size(down); i++) {
		json_t *d = json_array_get(down, i);
		const char *reason = _json_str(d, "reason");
		xstrfmtcat(lines, "    %s: node agent down (%s)\n",
			   _json_str(d, "node") ? _json_str(d, "node") : "?",
			   reason && reason[0] ? reason : "no reason given");
	}
	xstrfmtcat(*out, "  buffer nodes: %d, %d up, %d drained (%s out of service), %d with their agent down\n",
		   n, n - ndrained, ndrained, hu_bb_size_str(drained, sz, sizeof(sz)),
		   down ? (int) json_array_size(down) : 0);
	if (lines)
		xstrcat(*out, lines);
	xfree(lines);
}

/*
 * The space of each pool, from bbmgrd's GET /v1/pools: total = free + used +
 * drained, drained being what drained nodes hold beyond what their kept
 * allocations use.  "scontrol show burst" has no field for it in Slurm's
 * fixed format: there it is TotalSpace - FreeSpace - UsedSpace.
 */
static void _pools_text(json_t *resp, char **out)
{
	json_t *pools = json_object_get(resp, "pools");
	char t[32], f[32], u[32], d[32];

	for (size_t i = 0; i < json_array_size(pools); i++) {
		json_t *p = json_array_get(pools, i);
		uint64_t cap = json_number_value(json_object_get(p, "capacity"));
		uint64_t used = json_number_value(json_object_get(p, "used"));
		uint64_t fr = json_number_value(json_object_get(p, "free"));
		uint64_t drained = cap > used + fr ? cap - used - fr : 0;

		xstrfmtcat(*out, "  pool %s: %s total = %s free + %s used + %s drained\n",
			   _json_str(p, "name") ? _json_str(p, "name") : "?",
			   hu_bb_size_str(cap, t, sizeof(t)),
			   hu_bb_size_str(fr, f, sizeof(f)),
			   hu_bb_size_str(used, u, sizeof(u)),
			   hu_bb_size_str(drained, d, sizeof(d)));
	}
}

/* "scontrol show bbstat": bbmgrd's status (bounded wait, no lock held). */
extern char *bb_p_get_status(uint32_t argc, char **argv)
{
	char *out = NULL, *text = NULL;
	int njobs = 0, nwait = 0;

	slurm_mutex_lock(&bb_state.bb_mutex);
	for (int i = 0; i < HJOB_HASH; i++)
		for (hjob_t *h = hjobs[i]; h; h = h->next) {
			njobs++;
			if (h->want != WANT_NOTHING)
				nwait++;
		}
	slurm_mutex_unlock(&bb_state.bb_mutex);
	xstrfmtcat(out, "Harmonia burst buffer plugin\n"
		   "  jobs followed: %d (%d with work under way)\n", njobs, nwait);
	if (!conf.configured) {
		xstrcat(out, "  manager daemon: not configured (no harmonia.conf)\n");
		return out;
	}
	xstrfmtcat(out, "  manager daemon: %s\n", conf.url);
	hm_client_t *cli = _client(2);
	hm_error_t err;
	int st = cli ? hm_request_text(cli, "GET", "/v1/status", NULL, &text, &err)
		     : -1;
	if (st == 200 && text) {
		json_t *j = json_loads(text, 0, NULL);
		char *ntext = NULL;
		if (json_is_object(j))
			_status_text(j, &out);
		else
			xstrfmtcat(out, "  %s\n", text);
		if (hm_request_text(cli, "GET", "/v1/nodes", NULL, &ntext,
				    &err) == 200 && ntext) {
			json_t *nodes = json_loads(ntext, 0, NULL);
			if (json_is_object(nodes))
				_nodes_text(nodes, j, &out);
			json_decref(nodes);
		}
		free(ntext);
		ntext = NULL;
		if (hm_request_text(cli, "GET", "/v1/pools", NULL, &ntext,
				    &err) == 200 && ntext) {
			json_t *pools = json_loads(ntext, 0, NULL);
			_pools_text(pools, &out);
			json_decref(pools);
		}
		free(ntext);
		json_decref(j);
	} else if (st < 0) {
		xstrfmtcat(out, "  bbmgrd unreachable: %s\n",
			   cli ? err.text : "no client");
	} else {
		xstrfmtcat(out, "  bbmgrd answered %d: %s\n", st, text ? text : "");
	}
	free(text);
	hm_client_destroy(cli);
	return out;
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
	int rc;

	slurm_mutex_lock(&bb_state.bb_mutex);
	bb_load_config(&bb_state, (char *) plugin_type);
	/* burst_buffer.conf's Pools= are not what bbmgrd has: show bbmgrd's
	 * last answer until the next one, not the file's figures */
	if (pools_last && conf.configured)
		_pools_apply_locked(pools_last);
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
		if (!isspace((unsigned char) *s) && *s != ';')
			return false;
	return true;
}

/* What a --bb text without any Harmonia directive gets as an answer. */
static char *_not_harmonia_msg(const char *bb)
{
	char shown[64];
	const char *hint = "";
	size_t n = 0;

	for (const char *p = bb; *p && n < sizeof(shown) - 4; p++)
		shown[n++] = (*p == '\n') ? ';' : *p;
	shown[n] = '\0';
	if (bb[n])
		strcat(shown, "...");
	if (strstr(bb, "#DW") || strstr(bb, "#BB "))
		hint = " (DataWarp and #BB lines are for other burst buffer plugins)";
	else if (!xstrncasecmp(bb + strspn(bb, " \t;"), "capacity=", 9))
		hint = " (write it as: jobbuffer capacity=SIZE)";
	return xstrdup_printf("#BB_HARMONIA: --bb '%s' holds no Harmonia directive%s; burst_buffer/harmonia accepts jobbuffer, iohints, stage_in, stage_out, create_persistent, use_persistent and destroy_persistent, e.g. --bb \"jobbuffer capacity=10GiB\" (see harmonia-directives(5))",
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
		if (name ? !xstrcmp(p->name, name) :
		    (!best || p->total_space > best->total_space)) {
			best = p;
			*nodes = (pool_nodes && i < pool_nodes_cnt) ?
				 pool_nodes[i] : 0;
		}
	}
	return best;
}

static bool _larger(const char *verb, uint64_t capacity,
		    const burst_buffer_pool_t *p, char **err_msg)
{
	char a[32], b[32];

	if (!p->total_space || capacity <= p->total_space)
		return false;
	xstrfmtcat(*err_msg, "#BB_HARMONIA: %s: capacity %s is larger than pool '%s' (%s)",
		   verb, hu_bb_size_str(capacity, a, sizeof(a)), p->name,
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
			xstrfmtcat(*err_msg, "#BB_HARMONIA: jobbuffer: nodes=%u is more than pool '%s' has (%u buffer nodes)",
				   req->nodes, p->name, nodes);
			return SLURM_ERROR;
		}
	}
	for (int i = 0; i < req->npersist; i++) {
		const hu_bb_persist_t *pp = &req->persist[i];
		if (pp->op != HU_BB_PERSIST_CREATE ||
		    !(p = _req_pool(pp->pool, &nodes)))
			continue;
		if (_larger("create_persistent", pp->capacity, p, err_msg))
			return SLURM_ERROR;
	}
	return SLURM_SUCCESS;
}

/*
 * Collect the job's directives (script and --bb), validate them, and replace
 * job_desc->burst_buffer with their canonical form.
 */
extern int bb_p_job_validate(job_desc_msg_t *job_desc, uid_t submit_uid,
			     char **err_msg)
{
	hu_bb_request_t req;
	hu_error_t err;
	bbh_sym_t sym = { 0 };
	char *collected = NULL, *canon = NULL, *user = NULL;
	bool in_script, in_bb;
	int rc = SLURM_SUCCESS;

	memset(&req, 0, sizeof(req));
	collected = hu_bb_collect_script(job_desc->script);
	in_script = collected && collected[0];
	in_bb = hu_bb_has_directives(job_desc->burst_buffer, true);
	if (!in_script && !in_bb) {
		/* a --bb text with no directive in it would be dropped
		 * without a word: refuse it, saying what is accepted */
		if (!_blank(job_desc->burst_buffer)) {
			*err_msg = _not_harmonia_msg(job_desc->burst_buffer);
			rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
		}
		goto out;	/* not a Harmonia job: untouched */
	}

	if (in_script &&
	    hu_bb_parse(&req, collected, strlen(collected), HU_BB_SRC_SCRIPT,
		      &err) < 0)
		goto invalid;
	if (in_bb) {
		const char *bb = job_desc->burst_buffer;
		if (in_script && _script_merged(&req, bb)) {
			/* job_submit/harmonia merged the script already */
			hu_bb_request_free(&req);
		}
		if (hu_bb_parse(&req, bb, strlen(bb), HU_BB_SRC_BB_OPTION,
			      &err) < 0)
			goto invalid;
	}
	if (hu_bb_validate(&req, &err) < 0)
		goto invalid;
	/* the paths as the user sees them (nothing about what the user may
	 * not see); %j, %A and %a are not known yet.  job_submit/harmonia,
	 * when configured, checked them already (with the script's line
	 * numbers) */
	if (xstrcasestr(slurm_conf.job_submit_plugins, "harmonia"))
		goto checked;
	sym.job_id = 0;
	sym.user = user = uid_to_string_or_null(job_desc->user_id);
	sym.name = job_desc->name;
	sym.work_dir = job_desc->work_dir;
	if (bbh_check_paths_as(&req, job_desc->user_id, job_desc->group_id,
			       &sym, err_msg) < 0) {
		rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
		goto out;
	}
checked:
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
	} else if (conf.configured &&
		   (_too_large(&req, err_msg) != SLURM_SUCCESS)) {
		rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
	}
	if (rc == SLURM_SUCCESS && bb_state.tres_pos > 0 &&
	    job_desc->tres_req_cnt)
		job_desc->tres_req_cnt[bb_state.tres_pos] =
			req.capacity / (1024 * 1024);
	slurm_mutex_unlock(&bb_state.bb_mutex);
	if (rc != SLURM_SUCCESS)
		goto out;

	if (!(canon = hu_bb_format(&req))) {
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
	bb_job = _get_bb_job(job_ptr);
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

/*
 * Is the job's stage-in waiting for bbmgrd to find room for its buffer (its
 * allocation answered 507)?  Call with bb_mutex held.
 */
static bool _waits_for_space(job_record_t *job_ptr)
{
	hjob_t *h = _hjob_find(job_ptr->job_id);

	return h && h->want == WANT_STAGE_IN && h->note &&
	       !xstrncmp(h->note, "waiting for ", 12) &&
	       !bb_find_alloc_rec(&bb_state, job_ptr);
}

struct alloc_end {
	time_t end;
	uint64_t size;
};

static int _end_cmp(const void *a, const void *b)
{
	time_t x = ((const struct alloc_end *) a)->end;
	time_t y = ((const struct alloc_end *) b)->end;

	return (x > y) - (x < y);
}

/*
 * An estimate from the free capacity bbmgrd reported: now if the pool can hold
 * the job's buffer, else the time at which enough of the Harmonia jobs holding
 * space in that pool will have ended (their end_time, soonest first), else
 * one hour from now.  A job that bbmgrd already found no room for (not on
 * enough nodes, although the pool's free space is enough) waits at least
 * for the first of them to end.
 */
extern time_t bb_p_job_get_est_start(job_record_t *job_ptr)
{
	time_t now = time(NULL), est = now;
	struct alloc_end *ends = NULL;
	int nends = 0;
	bb_job_t *bb_job;
	uint64_t free_space = 0, need;
	const char *pool;
	bool waiting;

	if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
		return now;
	slurm_mutex_lock(&bb_state.bb_mutex);
	bb_job = _get_bb_job(job_ptr);
	if (!bb_job || !bb_job->total_size || !conf.configured)
		goto out;
	waiting = _waits_for_space(job_ptr);
	if (bb_job->state >= BB_STATE_STAGING_IN && !waiting)
		goto out;
	pool = bb_job->job_pool;
	need = bb_job->total_size;
	for (uint32_t i = 0; i < bb_state.bb_config.pool_cnt; i++) {
		burst_buffer_pool_t *p = &bb_state.bb_config.pool_ptr[i];
		if (!pool || !xstrcmp(p->name, pool) || i == 0) {
			free_space = p->total_space > p->unfree_space ?
				     p->total_space - p->unfree_space : 0;
			if (!pool || !xstrcmp(p->name, pool))
				break;
		}
	}
	if (waiting && free_space >= need)
		free_space = need - 1;	/* room on enough nodes: a job must end */
	if (free_space >= need)
		goto out;
	/* the allocations of that pool by end time, soonest first */
	est = now + 3600;
	for (int i = 0; i < BB_HASH_SIZE; i++)
		for (bb_alloc_t *a = bb_state.bb_ahash[i]; a; a = a->next) {
			job_record_t *j = a->job_id ?
				find_job_record(a->job_id) : NULL;
			if (!j || j == job_ptr || (pool && xstrcmp(a->pool, pool)))
				continue;
			xrecalloc(ends, nends + 1, sizeof(*ends));
			ends[nends].end = MAX(j->end_time, now + 1);
			ends[nends++].size = a->size;
		}
	if (nends)
		qsort(ends, nends, sizeof(*ends), _end_cmp);
	for (int i = 0; i < nends; i++) {
		free_space += ends[i].size;
		if (free_space >= need) {
			est = ends[i].end;
			break;
		}
	}
	xfree(ends);
	log_flag(BURST_BUF, "%pJ: expected start in %ld s (%s buffer space)",
		 job_ptr, (long) (est - now), waiting ? "waits for" : "no");
out:
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return est;
}

/* Start stage-in for one pending job with a request.  bb_mutex held. */
static void _start_stage_in(job_record_t *job_ptr, bb_job_t *bb_job)
{
	bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_STAGING_IN);
	_want(job_ptr, WANT_STAGE_IN);
}

static int _try_one(void *x, void *arg)
{
	job_record_t *job_ptr = x;	/* the queue holds job records */
	bb_job_t *bb_job;

	if (!IS_JOB_PENDING(job_ptr) || !job_ptr->burst_buffer ||
	    !job_ptr->burst_buffer[0] || job_ptr->priority == 0)
		return 0;
	if (job_ptr->array_recs && ((job_ptr->array_task_id == NO_VAL) ||
				    (job_ptr->array_task_id == INFINITE)))
		return 0;
	if (!(bb_job = _get_bb_job(job_ptr)))
		return 0;
	if (bb_job->state < BB_STATE_STAGING_IN) {
		enum job_state_reason why = _waits_for(job_ptr);

		if (why == WAIT_NO_REASON) {
			_start_stage_in(job_ptr, bb_job);
			_hjob_get(job_ptr)->seen_wait = true;
		}
		_set_reason(job_ptr, why);
	}
	return 0;
}

extern int bb_p_job_try_stage_in(List job_queue)
{
	slurm_mutex_lock(&bb_state.bb_mutex);
	if (bb_state.last_load_time) {
		_not_bb_apply();
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
		h = _hjob_find(job_ptr->job_id);
		if (bb_job->state < BB_STATE_STAGING_IN) {
			rc = -1;
			if (!test_only && job_ptr->priority != 0) {
				enum job_state_reason why = _waits_for(job_ptr);

				if (why == WAIT_NO_REASON) {
					_start_stage_in(job_ptr, bb_job);
					_hjob_get(job_ptr)->seen_wait = true;
					rc = 0;
				} else {
					_not_bb_add(job_ptr, why);
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
			if (test_only && _waits_for_space(job_ptr))
				rc = -1;
		} else if (bb_job->state == BB_STATE_STAGED_IN) {
			/* after a restart, the buffer path must be known again
			 * before the job may start */
			rc = (conf.configured && (!h || h->want == WANT_RECONCILE))
				? 0 : 1;
			if (conf.configured && !h)
				_want(job_ptr, WANT_RECONCILE);
		} else {
			rc = -1;
		}
	}
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return rc;
}

static void _env_add(job_record_t *job_ptr, const char *name, const char *val)
{
	struct job_details *d = job_ptr->details;

	if (!d || !val)
		return;
	xrecalloc(d->env_sup, d->env_cnt + 2, sizeof(char *));
	d->env_sup[d->env_cnt++] = xstrdup_printf("%s=%s", name, val);
}

/* The job starts: give it its buffer's environment; tell bbmgrd. */
extern int bb_p_job_begin(job_record_t *job_ptr)
{
	bb_job_t *bb_job;
	hjob_t *h;
	char id[32];

	if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
		return SLURM_SUCCESS;
	slurm_mutex_lock(&bb_state.bb_mutex);
	if (!(bb_job = _get_bb_job(job_ptr)))
		goto out;
	bb_set_job_bb_state(job_ptr, bb_job, BB_STATE_RUNNING);
	snprintf(id, sizeof(id), "%u", job_ptr->job_id);
	_env_add(job_ptr, "HARMONIA_JOBID", id);
	if (!conf.configured)
		goto out;
	_env_add(job_ptr, "HARMONIA_URL", conf.job_url);
	/* a site whose munged is not at libmunge's default socket (MungeSocket in
	 * harmonia.conf, or slurm.conf AuthInfo) tells its jobs where it is */
	if (conf.munge_socket)
		_env_add(job_ptr, "HARMONIA_MUNGE_SOCKET", conf.munge_socket);
	h = _hjob_get(job_ptr);
	_env_add(job_ptr, "HARMONIA_BB", h->bb_path);
	_env_add(job_ptr, "HARMONIA_BB_NODES", h->bb_nodes);
	if (h->persist_env) {
		char *copy = xstrdup(h->persist_env), *save = NULL, *l;
		for (l = strtok_r(copy, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save)) {
			char *eq = strchr(l, '=');
			if (eq) {
				*eq = '\0';
				_env_add(job_ptr, l, eq + 1);
			}
		}
		xfree(copy);
	}
	h->ncompute = job_ptr->node_cnt;
	_want(job_ptr, WANT_BEGIN);
out:
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
		_want(job_ptr, WANT_STAGE_OUT);
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
			if (!_hjob_find(job_ptr->job_id))
				bb_job_del(&bb_state, job_ptr->job_id);
			rc = 1;
		} else if (bb_job->state >= BB_STATE_POST_RUN) {
			rc = 0;
		} else if (IS_JOB_FINISHED(job_ptr) &&
			   !IS_JOB_STAGE_OUT(job_ptr)) {
			rc = 1;	/* ended before it ran (cancelled) */
		} else {
			rc = 0;
		}
	}
	slurm_mutex_unlock(&bb_state.bb_mutex);
	return rc;
}

/*
 * scancel --hurry during stage-out: the job says that its stage-out was cut
 * short and where (bbmgrd removes the partial files; whole files already
 * copied stay).  Call with bb_mutex held.
 */
static void _stage_out_cut(job_record_t *job_ptr)
{
	hu_bb_request_t req;
	hjob_t *h = _hjob_get(job_ptr);
	char *dests = NULL, *serr = NULL, *msg;

	_hjob_symbols(h, job_ptr);
	_hjob_request(h, &req, &serr);
	for (int i = 0; i < req.nstage_out; i++)
		xstrfmtcat(dests, "%s%s", dests ? ", " : "",
			   req.stage_out[i].destination);
	hu_bb_request_free(&req);
	xfree(serr);
	if (!dests)
		return;
	msg = xstrdup_printf("cut short by scancel --hurry: %s may hold part of the job's data (only whole files, no partial file)",
			     dests);
	bb_update_system_comment(job_ptr, "stage-out", msg, 0);
	xfree(job_ptr->state_desc);
	xstrfmtcat(job_ptr->state_desc, "%s: stage-out %s", plugin_type, msg);
	last_job_update = time(NULL);
	info("%s: %pJ: stage-out %s", plugin_type, job_ptr, msg);
	xfree(msg);
	xfree(dests);
}

extern int bb_p_job_cancel(job_record_t *job_ptr)
{
	bb_job_t *bb_job;
	hjob_t *h;

	if (!job_ptr->burst_buffer || !job_ptr->burst_buffer[0])
		return SLURM_SUCCESS;
	slurm_mutex_lock(&bb_state.bb_mutex);
	bb_job = _get_bb_job(job_ptr);
	h = _hjob_find(job_ptr->job_id);
	if (bb_job) {
		if (bb_job->state < BB_STATE_STAGING_IN &&
		    (!h || !h->registered)) {
			bb_set_job_bb_state(job_ptr, bb_job,
					    BB_STATE_COMPLETE);
			if (h && conf.configured)
				_want(job_ptr, WANT_TEARDOWN);
			else if (h)
				_hjob_del(job_ptr->job_id);
		} else if (bb_job->state < BB_STATE_COMPLETE) {
			if (bb_job->state == BB_STATE_POST_RUN ||
			    bb_job->state == BB_STATE_STAGING_OUT)
				_stage_out_cut(job_ptr);
			bb_set_job_bb_state(job_ptr, bb_job,
					    BB_STATE_TEARDOWN);
			_want(job_ptr, WANT_TEARDOWN);
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
		if (_parse_job_bb(burst_buffer, &req, &err) < 0)
			return NULL;
		if (req.has_buffer)
			mb = req.capacity / (1024 * 1024);
		hu_bb_request_free(&req);
	} else {
		tmp = xstrdup(burst_buffer);
		for (tok = strtok_r(tmp, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
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
		xstrfmtcat(tres, "%d=%"PRIu64, bb_state.tres_id, mb);
	return tres;
}
