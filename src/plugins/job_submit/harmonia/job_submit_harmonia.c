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
 *  burst buffer plugin would give.  Runs with slurmctld's locks held: no I/O
 *  beyond parsing.
\*****************************************************************************/

#include "config.h"

#include <string.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/slurmctld.h"

#include "libhutil/directive.h"

const char plugin_name[] = "Job submit plugin for Harmonia I/O hints";
const char plugin_type[] = "job_submit/harmonia";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

/* Merge script and --bb directives; on success *canon is the canonical text
 * (malloc'd) or NULL when the job has no Harmonia directives. */
static int _normalise(const char *script, const char *bb, char **canon,
		      char **err_msg)
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

	rc = _normalise(job_desc->script, job_desc->burst_buffer, &canon,
			err_msg);
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
	rc = _normalise(NULL, job_desc->burst_buffer, &canon, err_msg);
	if (rc != SLURM_SUCCESS)
		return rc;
	if (canon) {
		xfree(job_desc->burst_buffer);
		job_desc->burst_buffer = xstrdup(canon);
		free(canon);
	}
	return SLURM_SUCCESS;
}
