/* SPDX-License-Identifier: GPL-2.0-or-later */
/* util.c — helpers shared by every part of bbmgr (see util.h). */
#include <string.h>
#include <time.h>

#include "util.h"

double util_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

bool util_path_under(const char *path, const char *root)
{
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        n--;
    return !strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/');
}
