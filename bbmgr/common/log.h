/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log.h — structured logs of bbmgrd: one line per record, to stderr or a file,
 * as text ("TIME LEVEL message") or JSON ({"time","level","msg"}).
 */
#ifndef BBMGR_LOG_H
#define BBMGR_LOG_H

#include <stdbool.h>
#include "libhutil/hutil.h"

typedef enum { BL_ERROR = 0, BL_WARNING, BL_INFO, BL_DEBUG } bl_level_t;

/* (Re)configure: file NULL or "" is stderr; level and format as in bbmgr.yaml.
 * Reopening the same file is what SIGHUP does for logrotate. */
int bl_configure(const char *file, const char *level, const char *format, hu_error_t *err);
void bl_set_level(bl_level_t level);
bool bl_enabled(bl_level_t level);
void bl_close(void);

void bl_log(bl_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define bl_error(...) bl_log(BL_ERROR, __VA_ARGS__)
#define bl_warning(...) bl_log(BL_WARNING, __VA_ARGS__)
#define bl_info(...) bl_log(BL_INFO, __VA_ARGS__)
#define bl_debug(...) \
    do { \
        if (bl_enabled(BL_DEBUG)) \
            bl_log(BL_DEBUG, __VA_ARGS__); \
    } while (0)

#endif
