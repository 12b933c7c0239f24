/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log.c — the daemon's logger.  Its only state is where and how to write: kept
 * here (not in a configuration global), guarded by a mutex.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "log.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out; /* NULL: stderr */
static volatile int cur_level = BL_INFO;
static bool json_fmt;

static const char *const names[] = { "error", "warning", "info", "debug" };

int bl_configure(const char *file, const char *level, const char *format, hu_error_t *err)
{
    FILE *f = NULL;
    int lv = -1;
    for (int i = 0; i < 4; i++)
        if (level && !strcmp(level, names[i]))
            lv = i;
    if (level && lv < 0) {
        errno = EINVAL;
        return hu_errprintf(err, "unknown log level '%s'", level);
    }
    if (file && *file) {
        if (!(f = fopen(file, "a")))
            return hu_errprintf(err, "%s: %s", file, strerror(errno));
        setvbuf(f, NULL, _IOLBF, 0);
    }
    pthread_mutex_lock(&lock);
    if (out)
        fclose(out);
    out = f;
    if (lv >= 0)
        cur_level = lv;
    json_fmt = format && !strcmp(format, "json");
    pthread_mutex_unlock(&lock);
    return 0;
}

void bl_set_level(bl_level_t level)
{
    cur_level = level;
}

bool bl_enabled(bl_level_t level)
{
    return (int)level <= cur_level;
}

void bl_close(void)
{
    pthread_mutex_lock(&lock);
    if (out)
        fclose(out);
    out = NULL;
    pthread_mutex_unlock(&lock);
}

void bl_log(bl_level_t level, const char *fmt, ...)
{
    char msg[2048], ts[64];
    struct timespec now;
    struct tm tm;
    va_list ap;
    int saved = errno;

    if ((int)level > cur_level)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + n, sizeof(ts) - n, ".%06ldZ", now.tv_nsec / 1000);

    pthread_mutex_lock(&lock);
    FILE *f = out ? out : stderr;
    if (json_fmt) {
        json_t *o = json_pack("{s:s s:s s:s}", "time", ts, "level", names[level], "msg", msg);
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (s)
            fprintf(f, "%s\n", s);
        free(s);
        json_decref(o);
    } else {
        fprintf(f, "%s %s %s\n", ts, names[level], msg);
    }
    fflush(f);
    pthread_mutex_unlock(&lock);
    errno = saved;
}
