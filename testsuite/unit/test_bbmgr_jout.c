/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_bbmgr_jout.c — bbmgrd's JSON writer (bbmgr/daemon/jout.c) against jansson: every
 * body byte for byte what json_dumps(body, JOUT_JSON_FLAGS) writes, then '\n'.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include <jansson.h>

#include "jout.h"
#include "testutil.h"

/* jout_dumps(body) is json_dumps(body) and a newline. */
static void assert_same(json_t *body)
{
    char *want = json_dumps(body, JOUT_JSON_FLAGS);
    ck_assert_ptr_nonnull(want);
    size_t len = 0;
    char *got = jout_dumps(body, &len);
    ck_assert_ptr_nonnull(got);
    ck_assert_uint_eq(len, strlen(want) + 1);
    ck_assert_int_eq(got[len - 1], '\n');
    got[len - 1] = '\0';
    ck_assert_str_eq(got, want);
    free(got);
    free(want);
}

static void assert_real_same(double v)
{
    json_t *a = json_pack("[f]", v);
    ck_assert_ptr_nonnull(a);
    assert_same(a);
    json_decref(a);
}

/* Bodies of every kind a reply holds, as JSON text. */
static const char *const bodies[] = {
    "{}",
    "[]",
    "{\"job\": 12, \"state\": \"running\", \"nodes\": [\"bb01\", \"bb02\"], \"held\": false}",
    "{\"a\": null, \"b\": true, \"c\": [1, -1, 0, 9007199254740993, -9223372036854775808]}",
    "{\"nested\": {\"deeper\": [[], {}, [[[1.5]]], {\"x\": {\"y\": []}}]}}",
    "{\"quote\": \"a \\\"b\\\" c\", \"slash\": \"/x/y\\\\z\", \"ctl\": "
    "\"\\t\\n\\r\\b\\f\\u0001\\u001f\"}",
    "{\"utf8\": \"caf\\u00e9 \\u2014 \\ud83d\\ude00\"}",
    "{\"key with spaces\": 1, \"\": 2, \"z\": 3, \"a\": 4}",
    "{\"t\": 0.1, \"bw\": 1e9, \"size\": 1073741824.0, \"third\": 0.3333333333333333}",
    "[0.0, -0.0, 1.0, -1.0, 100.0, 1e16, 1e17, 1e-4, 1e-5, 123456789.123456789]",
    "[5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e300, -1e-300]",
};

START_TEST(test_body)
{
    json_error_t jerr;
    json_t *body = json_loads(bodies[_i], 0, &jerr);
    ck_assert_msg(body != NULL, "body %d: %s", _i, jerr.text);
    assert_same(body);
    json_decref(body);
}
END_TEST

/* Reals at the edges of the exponents the fast path computes (-4 to 16) and of the
 * 17 digits: powers of ten and their neighbours, halves, integral values. */
START_TEST(test_real_edges)
{
    for (int e = -8; e <= 20; e++) {
        double p = pow(10.0, e);
        assert_real_same(p);
        assert_real_same(-p);
        assert_real_same(nextafter(p, 0));
        assert_real_same(nextafter(p, INFINITY));
        assert_real_same(p / 2);
        assert_real_same(p * 9.999999999999999);
    }
    for (double v = 1; v < 1e17; v *= 3)
        assert_real_same(floor(v));
}
END_TEST

/* Random reals: uniform over the fast path's magnitudes, and random bit patterns
 * over the whole range. */
START_TEST(test_real_random)
{
    tu_seed(20261126);
    for (int i = 0; i < 20000; i++) {
        double mag = pow(10.0, -5 + 23 * tu_urand());
        assert_real_same(mag * tu_urand());
        uint64_t bits = (uint64_t)(tu_urand() * 4294967296.0) << 32
                        | (uint64_t)(tu_urand() * 4294967296.0);
        double v;
        memcpy(&v, &bits, sizeof v);
        if (isfinite(v))
            assert_real_same(v);
    }
}
END_TEST

/* A scalar is not a body: json_dumps() refuses it, and so does jout_dumps(). */
START_TEST(test_scalar_refused)
{
    json_t *n = json_integer(3);
    size_t len = 7;
    char *s = jout_dumps(n, &len);
    char *want = json_dumps(n, JOUT_JSON_FLAGS);
    ck_assert_msg((s == NULL) == (want == NULL), "jout: %s, jansson: %s", s ? s : "NULL",
                  want ? want : "NULL");
    free(s);
    free(want);
    json_decref(n);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "reals", .tests = { test_real_edges, test_real_random, test_scalar_refused, NULL } },
        { "bodies", .loops = { { test_body, TU_COUNT(bodies) } } },
    };
    return tu_main("bbmgr_jout", tcases, TU_COUNT(tcases));
}
