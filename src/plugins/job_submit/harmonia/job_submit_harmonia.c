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
 *  Runs with slurmctld's locks held: nothing else here waits.
\*****************************************************************************/

#include "config.h"

#include <string.h>

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

const char plugin_name[] = "Job submit plugin for Harmonia I/O hints";
const char plugin_type[] = "job_submit/harmonia";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

static bbh_conf_t conf;

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
	bbh_conf_free(&conf);
	return SLURM_SUCCESS;
}

/* Percent-encode a query value. */
static char *_qs(const char *s)
{
	char *out = NULL;

	for (; s && *s; s++) {
		unsigned char c = (unsigned char) *s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-_.~", c))
			xstrfmtcat(out, "%c", c);
		else
			xstrfmtcat(out, "%%%02X", c);
	}
	return out ? out : xstrdup("");
}

/* Fill missing hints from bbmgrd's history for this user and job name. */
static void _learn_hints(hbb_request_t *req, uint32_t uid, const char *name)
{
	hm_client_opts_t o = { 0 };
	hm_client_t *cli;
	hm_error_t err;
	json_t *resp = NULL, *w, *v;
	char *user, *path = NULL, *qu, *qn;
	int st;

	if (!conf.configured || req->has_hints || !name ||
	    !(req->has_buffer || req->npersist))
		return;
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
	if (st == 200 && (w = json_object_get(resp, "w_iter")) &&
	    (v = json_object_get(resp, "io_volume")) &&
	    json_is_number(w) && json_is_number(v) &&
	    json_number_value(w) > 0 && json_number_value(v) >= 1) {
		uint64_t vol = (uint64_t) json_number_value(v);
		/* a learned phase must still fit the buffer asked for */
		if (!req->has_buffer || vol <= req->capacity) {
			req->has_hints = true;
			req->hints_learned = true;
			req->w_iter = json_number_value(w);
			req->io_volume = vol;
			debug("%s: learned w_iter=%.1fs io_volume=%"PRIu64" for user %s job %s",
			      plugin_type, req->w_iter, vol, user, name);
		}
	} else if (st < 0) {
		debug("%s: history not available: %s", plugin_type, err.text);
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
static int _normalise(const char *script, const char *bb, uint32_t uid,
		      const char *name, char **canon, char **err_msg)
{
	hbb_request_t req;
	hu_error_t err;
	char *collected;
	int rc = SLURM_SUCCESS;

	*canon = NULL;
	memset(&req, 0, sizeof(req));
	if (!(collected = hbb_collect_script(script)))
		return ENOMEM;
	if (!collected[0] && !hbb_has_directives(bb, true))
		goto out;
	if (collected[0] &&
	    hbb_parse(&req, collected, strlen(collected), HBB_SRC_SCRIPT,
		      &err) < 0)
		goto invalid;
	if (hbb_has_directives(bb, true) &&
	    hbb_parse(&req, bb, strlen(bb), HBB_SRC_BB_OPTION, &err) < 0)
		goto invalid;
	if (hbb_validate(&req, &err) < 0 || hbb_check_paths(&req, &err) < 0)
		goto invalid;
	if (script)
		_learn_hints(&req, uid, name);
	if (hbb_validate(&req, &err) < 0)
		goto invalid;
	if (!(*canon = hbb_format(&req)))
		rc = ENOMEM;
	goto out;
invalid:
	*err_msg = xstrdup(err.text);
	rc = ESLURM_INVALID_BURST_BUFFER_REQUEST;
out:
	hbb_request_free(&req);
	free(collected);
	return rc;
}

extern int job_submit(job_desc_msg_t *job_desc, uint32_t submit_uid,
		      char **err_msg)
{
	char *canon = NULL;
	int rc;

	rc = _normalise(job_desc->script, job_desc->burst_buffer,
			job_desc->user_id, job_desc->name, &canon, err_msg);
	if (rc != SLURM_SUCCESS) {
		debug("%s: refused a request of uid %u: %s", plugin_type,
		      submit_uid, *err_msg ? *err_msg : "");
		return rc;
	}
	if (canon) {
		xfree(job_desc->burst_buffer);
		job_desc->burst_buffer = xstrdup(canon);
		free(canon);
	}
	return SLURM_SUCCESS;
}

/* A change of the burst buffer request of a pending job is checked the same
 * way; other changes are left alone. */
extern int job_modify(job_desc_msg_t *job_desc, job_record_t *job_ptr,
		      uint32_t submit_uid, char **err_msg)
{
	char *canon = NULL;
	int rc;

	if (!job_desc->burst_buffer)
		return SLURM_SUCCESS;
	rc = _normalise(NULL, job_desc->burst_buffer, job_ptr->user_id, NULL,
			&canon, err_msg);
	if (rc != SLURM_SUCCESS)
		return rc;
	if (canon) {
		xfree(job_desc->burst_buffer);
		job_desc->burst_buffer = xstrdup(canon);
		free(canon);
	}
	return SLURM_SUCCESS;
}
