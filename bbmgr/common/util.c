/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util.c — helpers shared by every part of bbmgr (see util.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "libhutil/hu_error.h"
#include "util.h"

int util_fail(int err, hu_error_t *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hu_verrprintf(e, fmt, ap);
    va_end(ap);
    errno = err;
    return -1;
}

void util_strv_free(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

volatile sig_atomic_t util_got_stop, util_got_hup;

static void on_stop(int sig)
{
    util_got_stop = sig;
}

static void on_hup(int sig)
{
    (void)sig;
    util_got_hup = 1;
}

void util_daemon_signals(void)
{
    struct sigaction sa = { 0 };
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sa.sa_handler = on_hup;
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
}

void util_notify(const char *msg)
{
#ifdef HAVE_LIBSYSTEMD
    sd_notify(0, msg);
#else
    (void)msg;
#endif
}

bool util_path_under(const char *path, const char *root)
{
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        n--;
    return !strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/');
}
