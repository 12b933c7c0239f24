/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_jobs.h - burst_buffer/harmonia: the plugin's record of each job
 *  (bbh_jobs.c).
\*****************************************************************************/

#ifndef _BBH_JOBS_H
#define _BBH_JOBS_H

#include "bbh_model.h"

extern bb_job_t *bbh_get_bb_job(job_record_t *job_ptr);
extern void bbh_hjob_del(uint32_t job_id);
extern hjob_t *bbh_hjob_find(uint32_t job_id);
extern void bbh_hjob_free(hjob_t *h);
extern hjob_t *bbh_hjob_get(job_record_t *job_ptr);
extern void bbh_hjob_request(hjob_t *h, hu_bb_request_t *req, char **serr);
extern void bbh_hjob_symbols(hjob_t *h, job_record_t *job_ptr);
extern int bbh_parse_job_bb(const char *text, hu_bb_request_t *req, hu_error_t *err);
extern bool bbh_script_merged(const hu_bb_request_t *script_req, const char *bb);
extern void bbh_start_stage_in(job_record_t *job_ptr, bb_job_t *bb_job);
extern void bbh_want(job_record_t *job_ptr, want_t want);

#endif
