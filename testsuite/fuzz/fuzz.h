/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz.h — what the libFuzzer harnesses share: FAIL() reports a failed oracle
 * (the harness's name, then the message) and aborts, which libFuzzer reports as
 * a crash and keeps the input.  Define FUZZ_NAME before including it.
 */
#ifndef HARMONIA_FUZZ_H
#define HARMONIA_FUZZ_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noreturn, format(printf, 2, 3))) static inline void fuzz_fail(const char *name,
                                                                             const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

#define FAIL(...) fuzz_fail(FUZZ_NAME, __VA_ARGS__)

#endif
