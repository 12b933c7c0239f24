/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * testutil.h — what the Check unit tests share: a suite from a table of test
 * cases, the runner every main() used to copy, and a reproducible random source.
 *
 *     int main(void)
 *     {
 *         const tu_tcase_t tcases[] = {
 *             { "config", .tests = { test_defaults, test_full, NULL } },
 *             { "slow", .timeout = 60, .tests = { test_big, NULL } },
 *             { "table", .loops = { { test_row, TU_COUNT(rows) } } },
 *         };
 *         return tu_main("bbmgr_config", tcases, TU_COUNT(tcases));
 *     }
 */
#ifndef HARMONIA_TESTUTIL_H
#define HARMONIA_TESTUTIL_H

#include <check.h>
#include <stddef.h>

#define TU_MAX_TESTS 64
#define TU_COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct {
    const char *name;                 /* the TCase's name */
    double timeout;                   /* seconds; 0: Check's default */
    SFun setup, teardown;             /* checked fixture (each test); NULL: none */
    const TTest *tests[TU_MAX_TESTS]; /* START_TEST names, NULL-terminated */
    struct {
        const TTest *test; /* a loop test, run for _i = 0 .. n - 1 */
        int n;             /* (one iteration a row of its table) */
    } loops[4];            /* after the tests; NULL test: none more */
} tu_tcase_t;

/* A suite named 'name' with the test cases of the table. */
Suite *tu_suite(const char *name, const tu_tcase_t *tcases, size_t n);

/* Run every test of 's' (forked, CK_NORMAL output) and free it: EXIT_SUCCESS when
 * none failed, else EXIT_FAILURE. */
int tu_run(Suite *s);

/* tu_run(tu_suite(name, tcases, n)). */
int tu_main(const char *name, const tu_tcase_t *tcases, size_t n);

/* A deterministic pseudo-random number in [0, 1), so that a failure reproduces: every
 * process draws the same sequence. */
double tu_urand(void);

/* Start tu_urand()'s sequence again from 'seed' (nonzero): one case of a loop can
 * then draw the same numbers whatever ran before it. */
void tu_seed(unsigned long long seed);

#endif
