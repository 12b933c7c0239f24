/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_model.c — the helpers every file of libhsched uses (policy.h): an error with
 * its text, a growing array.  The bottom of the library: calls nothing above it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "libhutil/hu_error.h"

#include "hsched.h"
#include "policy.h"

int hs_errprintf(hu_error_t *err, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hu_verrprintf(err, fmt, ap);
    va_end(ap);
    errno = errnum;
    return -1;
}

int hs_grow(void *ptrp, size_t *cap, size_t need, size_t elsize)
{
    void **p = ptrp;
    size_t ncap;
    void *np;

    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    if (ncap > SIZE_MAX / elsize || !(np = realloc(*p, ncap * elsize))) {
        errno = ENOMEM;
        return -1;
    }
    *p = np;
    *cap = ncap;
    return 0;
}
