/* SPDX-License-Identifier: GPL-2.0-or-later */
/* testutil.c — see testutil.h. */
#include <stdlib.h>

#include "testutil.h"

Suite *tu_suite(const char *name, const tu_tcase_t *tcases, size_t n)
{
    Suite *s = suite_create(name);

    for (size_t i = 0; i < n; i++) {
        TCase *tc = tcase_create(tcases[i].name);
        if (tcases[i].timeout > 0)
            tcase_set_timeout(tc, tcases[i].timeout);
        if (tcases[i].setup || tcases[i].teardown)
            tcase_add_checked_fixture(tc, tcases[i].setup, tcases[i].teardown);
        for (size_t k = 0; k < TU_MAX_TESTS && tcases[i].tests[k]; k++)
            tcase_add_test(tc, tcases[i].tests[k]);
        for (size_t k = 0; k < TU_COUNT(tcases[i].loops) && tcases[i].loops[k].test; k++)
            tcase_add_loop_test(tc, tcases[i].loops[k].test, 0, tcases[i].loops[k].n);
        suite_add_tcase(s, tc);
    }
    return s;
}

int tu_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int tu_main(const char *name, const tu_tcase_t *tcases, size_t n)
{
    return tu_run(tu_suite(name, tcases, n));
}

/* xorshift64*, one sequence a process from a fixed seed */
static unsigned long long tu_rng_state = 88172645463325252ULL;

double tu_urand(void)
{
    tu_rng_state ^= tu_rng_state >> 12;
    tu_rng_state ^= tu_rng_state << 25;
    tu_rng_state ^= tu_rng_state >> 27;
    return (double)((tu_rng_state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

void tu_seed(unsigned long long seed)
{
    tu_rng_state = seed;
}
