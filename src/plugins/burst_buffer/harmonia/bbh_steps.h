/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_steps.h - burst_buffer/harmonia: the agent's steps, the requests to
 *  bbmgrd for each job (bbh_steps.c).
\*****************************************************************************/

#ifndef _BBH_STEPS_H
#define _BBH_STEPS_H

#include "bbh_model.h"

extern bool bbh_run_batch(hm_client_t *cli, work_t *ws, step_rc_t *rcs, int n);
extern void bbh_work_free(work_t *w);

#endif
