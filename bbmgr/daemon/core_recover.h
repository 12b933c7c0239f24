/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * core_recover.h — recovery of bbmgrd's core from the state database at start (its reads
 * are in state.h), and of the stage-outs whose durability a stop interrupted
 * (core_recover.c).  Above every operation of the core but the views.
 */
#ifndef BBMGR_CORE_RECOVER_H
#define BBMGR_CORE_RECOVER_H

#include "core_model.h"

int core_recover(core_t *c, hu_error_t *err);
/* At the first tick with a mover (core.c): the stage-outs done but not durable
 * when bbmgrd stopped are handed to the mover again, the trash is swept. */
void core_recover_durability(core_t *c);

#endif
