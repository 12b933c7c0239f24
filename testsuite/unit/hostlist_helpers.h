/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hostlist_helpers.h — what the host-list tests share (test_hu_hostlist,
 * test_bbmgr_hostlist). */
#ifndef HARMONIA_HOSTLIST_HELPERS_H
#define HARMONIA_HOSTLIST_HELPERS_H

#include "libhutil/hu_hostlist.h"

/* expr expanded with o: the names joined by ' ', or "ERR:" and err's text (fail and
 * err, either may be NULL, as hu_hostlist_expand() left them).  A static buffer. */
const char *hl_joined(const char *expr, const hu_hostlist_opts_t *o, hu_hostlist_fail_t *fail,
                      hu_error_t *err);

#endif
