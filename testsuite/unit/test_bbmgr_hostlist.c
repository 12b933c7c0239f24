/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests: Slurm-style host list expansion as bbmgr.yaml's node names use it
 * (libhutil's hu_hostlist.c with config.c's cfg_hostlist_opts). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "hostlist_helpers.h"
#include "testutil.h"

static const char *joined(const char *expr)
{
    return hl_joined(expr, &cfg_hostlist_opts, NULL, NULL);
}

START_TEST(test_expand)
{
    ck_assert_str_eq(joined("bb1"), "bb1");
    ck_assert_str_eq(joined("bb[1-3]"), "bb1 bb2 bb3");
    ck_assert_str_eq(joined("bb[01-03,07]"), "bb01 bb02 bb03 bb07");
    ck_assert_str_eq(joined("bb[8-10]x"), "bb8x bb9x bb10x");
    ck_assert_str_eq(joined("r[1-2]n[0-1]"), "r1n0 r1n1 r2n0 r2n1");
    ck_assert_str_eq(joined("a, b,c[1-2]"), "a b c1 c2");
    ck_assert_str_eq(joined("io-node_1.x"), "io-node_1.x");
    /* zero padding wider than a number's own digits (found by fuzz_hostlist:
     * a bound of 41 digits overran the number's buffer) */
    ck_assert_str_eq(joined("a[00000000000000000000000000000000000000001-2]"),
                     "a00000000000000000000000000000000000000001 "
                     "a00000000000000000000000000000000000000002");
}
END_TEST

START_TEST(test_errors)
{
    ck_assert(strstr(joined(""), "ERR:empty"));
    ck_assert(strstr(joined("bb["), "ERR:"));
    ck_assert(strstr(joined("bb]"), "ERR:"));
    ck_assert(strstr(joined("bb[]"), "ERR:"));
    ck_assert(strstr(joined("bb[3-1]"), "decreasing"));
    ck_assert(strstr(joined("bb[1-]"), "ERR:"));
    ck_assert(strstr(joined("bb[a-b]"), "ERR:"));
    ck_assert(strstr(joined("bb[[1]]"), "nested"));
    ck_assert(strstr(joined("a,"), "trailing"));
    ck_assert(strstr(joined("a b"), "invalid character"));
    ck_assert(strstr(joined("n[0-999999999]"), "more than"));
    char wide[320] = "n[";
    memset(wide + 2, '0', 300);
    strcpy(wide + 302, "1]");
    ck_assert(strstr(joined(wide), "too long"));
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = { { "hostlist", .tests = { test_expand, test_errors, NULL } } };
    return tu_main("bbmgr_hostlist", tcases, TU_COUNT(tcases));
}
