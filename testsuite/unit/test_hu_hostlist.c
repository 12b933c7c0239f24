/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests: libhutil's host-list expander (hu_hostlist.c), in both modes: strict
 * (bbmgr.yaml's node sets) and plain (bbsim's buffer nodes). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist_helpers.h"
#include "testutil.h"

static const hu_hostlist_opts_t strict = {
    .max_names = 1000,
    .max_name_len = 63,
    .max_bound = 999999999,
    .flags = HU_HOSTLIST_STRICT,
};
static const hu_hostlist_opts_t plain = { .max_names = 16, .max_name_len = 20 };

static hu_hostlist_fail_t fail;
static hu_error_t err;

/* The names joined by ' ', or "ERR:text" (fail and err kept). */
static const char *expand(const char *expr, const hu_hostlist_opts_t *o)
{
    const char *s = hl_joined(expr, o, &fail, &err);
    if (strncmp(s, "ERR:", 4))
        ck_assert_int_eq(fail.why, HU_HL_OK);
    return s;
}

START_TEST(test_ranges)
{
    ck_assert_str_eq(expand("bb1", &strict), "bb1");
    ck_assert_str_eq(expand("bb[1-3]", &strict), "bb1 bb2 bb3");
    ck_assert_str_eq(expand("bb[1-2,5,7-8]", &strict), "bb1 bb2 bb5 bb7 bb8");
    ck_assert_str_eq(expand("r[1-2]n[0-1]", &strict), "r1n0 r1n1 r2n0 r2n1");
    ck_assert_str_eq(expand("io[3]x,a", &strict), "io3x a");
    ck_assert_str_eq(expand(" a , b ", &strict), "a b");
    ck_assert_str_eq(expand("[1-2]", &plain), "1 2");
    ck_assert_str_eq(expand("a b,c[1-2]d", &plain), "a b c1d c2d");
    /* plain: "[1,]" is "[1]" */
    ck_assert_str_eq(expand("x[1,]", &plain), "x1");
}
END_TEST

START_TEST(test_padding)
{
    /* the width of the lower bound, in both modes */
    ck_assert_str_eq(expand("bb[01-03,07]", &strict), "bb01 bb02 bb03 bb07");
    ck_assert_str_eq(expand("bb[08-11]", &strict), "bb08 bb09 bb10 bb11");
    ck_assert_str_eq(expand("bb[8-10]", &plain), "bb8 bb9 bb10");
    ck_assert_str_eq(expand("n[0-1]", &plain), "n0 n1");
    ck_assert_str_eq(expand("n[000-001]", &plain), "n000 n001");
    ck_assert_str_eq(expand("n[98-100]", &strict), "n98 n99 n100");
}
END_TEST

/* Each refusal: its reason, errno and default wording. */
#define REFUSED(expr, o, reason, eno, text) \
    do { \
        ck_assert_str_eq(expand((expr), (o)), "ERR:" text); \
        ck_assert_int_eq(fail.why, (reason)); \
        ck_assert_int_eq(errno, (eno)); \
    } while (0)

START_TEST(test_bad)
{
    REFUSED("", &strict, HU_HL_EMPTY_LIST, EINVAL, "empty host list");
    REFUSED("a,,b", &strict, HU_HL_EMPTY_NAME, EINVAL, "empty host name");
    REFUSED("a,", &strict, HU_HL_TRAILING_COMMA, EINVAL, "trailing ',' in host list");
    REFUSED("a/b", &strict, HU_HL_BAD_CHAR, EINVAL, "invalid character '/' in host name");
    ck_assert_int_eq(fail.c, '/');
    REFUSED("a[1[2]]", &strict, HU_HL_NESTED, EINVAL, "nested '[' in host list");
    REFUSED("a[1-2", &strict, HU_HL_UNBALANCED_OPEN, EINVAL, "unbalanced '[' in host list");
    REFUSED("a]", &strict, HU_HL_UNBALANCED_CLOSE, EINVAL, "unbalanced ']' in host list");
    REFUSED("a[]", &strict, HU_HL_EMPTY_RANGE, EINVAL, "empty range '[]' in host list");
    REFUSED("a[x]", &strict, HU_HL_RANGE_START, EINVAL, "range must start with a digit, not 'x'");
    REFUSED("a[1-]", &strict, HU_HL_NO_UPPER, EINVAL, "missing upper bound in range");
    REFUSED("a[1-1000000000]", &strict, HU_HL_BOUND_TOO_LARGE, ERANGE, "range bound too large");
    REFUSED("a[3-1]", &strict, HU_HL_DECREASING, EINVAL, "range 3-1 is decreasing");
    ck_assert_uint_eq(fail.lo, 3);
    ck_assert_uint_eq(fail.hi, 1);
    REFUSED("a[1x]", &strict, HU_HL_UNEXPECTED, EINVAL, "unexpected 'x' in range");
    REFUSED("a[1,]", &strict, HU_HL_EMPTY_AFTER_COMMA, EINVAL, "empty range after ','");
    /* plain: brackets checked as they are expanded */
    REFUSED("a]b", &plain, HU_HL_UNBALANCED_CLOSE, EINVAL, "unbalanced ']' in host list");
    REFUSED("a]b[3-1]", &plain, HU_HL_DECREASING, EINVAL, "range 3-1 is decreasing");
    REFUSED("a[1[2]]", &plain, HU_HL_UNEXPECTED, EINVAL, "unexpected '[' in range");
    /* plain: what follows the numbers before their order */
    REFUSED("a[3-1x]", &plain, HU_HL_UNEXPECTED, EINVAL, "unexpected 'x' in range");
    REFUSED("a[3-1x]", &strict, HU_HL_DECREASING, EINVAL, "range 3-1 is decreasing");
    /* the earlier item fails first */
    REFUSED("a[2-1],b[", &strict, HU_HL_DECREASING, EINVAL, "range 2-1 is decreasing");
}
END_TEST

START_TEST(test_limits)
{
    /* a user's "n[1-999999999]" is refused before any name is made */
    REFUSED("n[1-999999999]", &strict, HU_HL_TOO_MANY, ERANGE,
            "host list expands to more than 1000 names");
    /* the range is measured before its first name: the bad suffix is not reached */
    REFUSED("n[1-999999999]x[", &strict, HU_HL_TOO_MANY, ERANGE,
            "host list expands to more than 1000 names");
    REFUSED("n[0-999999999999999999999]", &plain, HU_HL_BOUND_TOO_LARGE, ERANGE,
            "range bound too large");
    /* 1000 names is the limit, 1001 is past it, also through products */
    ck_assert(strncmp(expand("n[1-1000]", &strict), "ERR", 3));
    REFUSED("n[1-1000],m", &strict, HU_HL_TOO_MANY, ERANGE,
            "host list expands to more than 1000 names");
    ck_assert(strncmp(expand("a[1-4]b[1-4]c", &plain), "ERR", 3));
    REFUSED("a[1-4]b[1-5]c", &plain, HU_HL_TOO_MANY, ERANGE,
            "host list expands to more than 16 names");
    /* names: 20 bytes in plain, zero padding included */
    ck_assert_str_eq(expand("n[000000000000000001-2]", &plain),
                     "n000000000000000001 n000000000000000002");
    ck_assert_str_eq(expand("a[0000000000000000001-2]", &plain),
                     "a0000000000000000001 a0000000000000000002");
    REFUSED("ab[0000000000000000001-2]", &plain, HU_HL_NAME_TOO_LONG, EINVAL, "host name too long");
    REFUSED("abcdefghijklmnopqrstu", &plain, HU_HL_NAME_TOO_LONG, EINVAL, "host name too long");
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = { { "hu_hostlist", .tests = { test_ranges, test_padding, test_bad,
                                                              test_limits, NULL } } };
    return tu_main("hu_hostlist", tcases, TU_COUNT(tcases));
}
