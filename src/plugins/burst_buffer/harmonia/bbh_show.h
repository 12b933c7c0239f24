/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_show.h - burst_buffer/harmonia: "scontrol show bbstat" and "show burst"
 *  (bbh_show.c).
\*****************************************************************************/

#ifndef _BBH_SHOW_H
#define _BBH_SHOW_H

#include "bbh_model.h"

extern void bbh_learned_apply(json_t *resp);

#endif
