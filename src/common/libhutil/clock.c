/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * clock.c — the one monotonic clock of Harmonia's programs and libraries.
 */
#include <time.h>

#include "hutil.h"

double hu_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
