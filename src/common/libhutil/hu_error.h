/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hu_error.h — the one formatting function under every error setter of the
 * project: libhutil's hu_errprintf() and the refusals of its hostlist and directive
 * parsers, libhsched's hs_errprintf(), bbmgrd's core_cerr_set() and
 * hreq_reply_error(), bbmgr's util_fail() (under every function of bbmgr that can
 * refuse: the agent protocol's parsers, quota, bufdir_empty(), auth) and the
 * configuration's refusals, bbsim's engine and workload parser.  It formats into a
 * hu_error_t (hutil.h) and is inline, so that libhsched, which links nothing but
 * the C library, uses it too.
 */
#ifndef HARMONIA_HU_ERROR_H
#define HARMONIA_HU_ERROR_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "hutil.h"

/* vprintf into err->text (when err is not NULL), errno unchanged; returns -1 so it
 * can be returned. */
static inline int hu_verrprintf(hu_error_t *err, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static inline int hu_verrprintf(hu_error_t *err, const char *fmt, va_list ap)
{
    if (err) {
        int saved = errno;
        vsnprintf(err->text, sizeof(err->text), fmt, ap);
        errno = saved;
    }
    return -1;
}

#endif
