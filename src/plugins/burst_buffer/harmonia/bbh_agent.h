/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_agent.h - burst_buffer/harmonia: the agent thread (bbh_agent.c).
\*****************************************************************************/

#ifndef _BBH_AGENT_H
#define _BBH_AGENT_H

#include "bbh_model.h"

extern void *bbh_agent(void *arg);

#endif
