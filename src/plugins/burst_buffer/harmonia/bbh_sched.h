/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_sched.h - burst_buffer/harmonia: when a job's buffer is set up and the
 *  pending reasons (bbh_sched.c).
\*****************************************************************************/

#ifndef _BBH_SCHED_H
#define _BBH_SCHED_H

#include "bbh_model.h"

extern void bbh_eager_stage_in(void);
extern void bbh_not_bb_add(job_record_t *job_ptr, enum job_state_reason why);
extern void bbh_not_bb_apply(void);
extern void bbh_sched_fini(void);
extern void bbh_set_reason(job_record_t *job_ptr, enum job_state_reason why);
extern enum job_state_reason bbh_waits_for(job_record_t *job_ptr);
extern bool bbh_waits_for_space(job_record_t *job_ptr);

#endif
