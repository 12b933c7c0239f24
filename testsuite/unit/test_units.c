/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_units.c — libhutil's sizes, bandwidths, durations and human formatters
 * (hutil.h).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libhutil/hutil.h"
#include "testutil.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define TiB (1ULL << 40)
#define PiB (1ULL << 50)
#define EiB (1ULL << 60)

/* hu_parse_size() must accept 's' with 'flags' and give 'want' bytes. */
static void size_ok(const char *s, int flags, uint64_t want)
{
    uint64_t v = 12345;
    hu_error_t err = { "" };

    ck_assert_msg(hu_parse_size(s, flags, &v, &err) == 0,
                  "'%s' refused: %s", s, err.text);
    ck_assert_msg(v == want, "'%s' gave %llu, expected %llu", s,
                  (unsigned long long)v, (unsigned long long)want);
}

/* hu_parse_size() must refuse 's' with errno 'eno' and the message 'msg'
 * exactly; the output is not touched. */
static void size_bad(const char *s, int flags, int eno, const char *msg)
{
    uint64_t v = 12345;
    hu_error_t err = { "" };

    errno = 0;
    ck_assert_msg(hu_parse_size(s, flags, &v, &err) == -1, "'%s' accepted", s);
    ck_assert_int_eq(errno, eno);
    ck_assert_str_eq(err.text, msg);
    ck_assert_msg(v == 12345, "output changed on error");
    /* err may be NULL */
    ck_assert_int_eq(hu_parse_size(s, flags, &v, NULL), -1);
}

static void dur_ok(const char *s, int flags, double want)
{
    double d = -1;
    hu_error_t err = { "" };

    ck_assert_msg(hu_parse_duration(s, flags, &d, &err) == 0,
                  "'%s' refused: %s", s, err.text);
    ck_assert_msg(d == want, "'%s' gave %.17g, expected %.17g", s, d, want);
}

static void dur_bad(const char *s, int flags, int eno, const char *msg)
{
    double d = -1;
    hu_error_t err = { "" };

    errno = 0;
    ck_assert_msg(hu_parse_duration(s, flags, &d, &err) == -1, "'%s' accepted", s);
    ck_assert_int_eq(errno, eno);
    ck_assert_str_eq(err.text, msg);
    ck_assert_msg(d == -1, "output changed on error");
}

/* ------------------------------------------------------------------ sizes */

START_TEST(test_size_every_unit)
{
    static const struct {
        const char *unit;
        uint64_t mult;
    } units[] = {
        { "B", 1 },
        { "KB", 1000ULL }, { "MB", 1000000ULL }, { "GB", 1000000000ULL },
        { "TB", 1000000000000ULL }, { "PB", 1000000000000000ULL },
        { "EB", 1000000000000000000ULL },
        { "KiB", KiB }, { "MiB", MiB }, { "GiB", GiB }, { "TiB", TiB },
        { "PiB", PiB }, { "EiB", EiB },
        { "K", KiB }, { "M", MiB }, { "G", GiB }, { "T", TiB }, { "P", PiB },
        { "E", EiB },
    };
    char buf[64];

    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        snprintf(buf, sizeof(buf), "1%s", units[i].unit);
        size_ok(buf, 0, units[i].mult);
        snprintf(buf, sizeof(buf), "7 %s", units[i].unit);
        size_ok(buf, 0, 7 * units[i].mult);
        snprintf(buf, sizeof(buf), "0%s", units[i].unit);
        size_ok(buf, 0, 0);
    }
}
END_TEST

START_TEST(test_size_case)
{
    /* units are case-insensitive; the 'i' of the binary forms too */
    size_ok("1kb", 0, 1000);
    size_ok("1Kb", 0, 1000);
    size_ok("1gb", 0, 1000000000ULL);
    size_ok("1kib", 0, KiB);
    size_ok("1KIB", 0, KiB);
    size_ok("1gIb", 0, GiB);
    size_ok("1g", 0, GiB);
    size_ok("1b", 0, 1);
    size_ok("2eib", 0, 2 * EiB);
}
END_TEST

START_TEST(test_size_fractions)
{
    size_ok("1.5GiB", 0, 1610612736ULL);
    size_ok("1.5 GiB", 0, 3 * GiB / 2);
    size_ok("0.5KB", 0, 500);
    size_ok(".5KiB", 0, 512);
    size_ok("1.KiB", 0, 1024);
    size_ok("1.0009765625KiB", 0, 1025);
    size_ok("2.25MB", 0, 2250000);
    size_ok("0.1B", 0, 0);              /* rounded down to whole bytes */
    size_ok("1.9B", 0, 1);
    size_ok("0.001KB", 0, 1);
    size_ok("0.0001KB", 0, 0);
    /* exact, not off by one through floating point */
    size_ok("0.644702485PB", 0, 644702485000000ULL);
    size_ok("0.267191287EB", 0, 267191287000000000ULL);
    size_ok("0.999999999999999999EB", 0, 999999999999999999ULL);
    size_ok("1.000000000000000001EiB", 0, EiB + 1);
    size_ok("15.999999999999999999EiB", 0, UINT64_MAX - 1);
    /* digits past the 18th of the fraction are ignored */
    size_ok("1.0000000000000000009EB", 0, 1000000000000000000ULL);
    size_ok("15.9999999999999999999EiB", 0, UINT64_MAX - 1);
}
END_TEST

START_TEST(test_size_blanks)
{
    size_ok("1 GiB", 0, GiB);
    size_ok("1\tGiB", 0, GiB);
    size_ok("1   GiB", 0, GiB);
    size_ok("  1GiB", 0, GiB);
    size_ok("1GiB  ", 0, GiB);
    size_ok("+3KB", 0, 3000);
}
END_TEST

START_TEST(test_size_boundaries)
{
    size_ok("0B", 0, 0);
    size_ok("0", HU_SIZE_BARE_BYTES, 0);
    size_ok("1B", 0, 1);
    size_ok("1", HU_SIZE_BARE_BYTES, 1);
    size_ok("9223372036854775808B", 0, 1ULL << 63);
    size_ok("8EiB", 0, 1ULL << 63);
    size_ok("9.223372036854775808EB", 0, 1ULL << 63);
    size_ok("18446744073709551615B", 0, UINT64_MAX);
    size_ok("18446744073709551615", HU_SIZE_BARE_BYTES, UINT64_MAX);
    size_ok("18446744073709551615.9B", 0, UINT64_MAX);
    size_ok("15EiB", 0, 15 * EiB);
    size_ok("16383PiB", 0, 16383 * PiB);
    size_ok("18446744073709551.615KB", 0, UINT64_MAX);
}
END_TEST

START_TEST(test_size_overflow)
{
    size_bad("18446744073709551616B", 0, ERANGE,
             "size '18446744073709551616B' is too large (sizes must be below 16 EiB)");
    size_bad("18446744073709551616", HU_SIZE_BARE_BYTES, ERANGE,
             "size '18446744073709551616' is too large (sizes must be below 16 EiB)");
    size_bad("16EiB", 0, ERANGE,
             "size '16EiB' is too large (sizes must be below 16 EiB)");
    size_bad("16E", 0, ERANGE,
             "size '16E' is too large (sizes must be below 16 EiB)");
    size_bad("16384PiB", 0, ERANGE,
             "size '16384PiB' is too large (sizes must be below 16 EiB)");
    size_bad("99999999999EiB", 0, ERANGE,
             "size '99999999999EiB' is too large (sizes must be below 16 EiB)");
    size_bad("  99999999999999999999999 GB", 0, ERANGE,
             "size '99999999999999999999999 GB' is too large (sizes must be below "
             "16 EiB)");
    size_bad("18446744073709551.616KB", 0, ERANGE,
             "size '18446744073709551.616KB' is too large (sizes must be below "
             "16 EiB)");
}
END_TEST

START_TEST(test_size_errors)
{
    size_bad("-1GiB", 0, EINVAL, "size '-1GiB' is negative");
    size_bad(" -0B", 0, EINVAL, "size '-0B' is negative");
    size_bad("", 0, EINVAL, "empty size");
    size_bad("   ", 0, EINVAL, "empty size");
    size_bad(NULL, 0, EINVAL, "empty size");
    size_bad("GiB", 0, EINVAL, "size 'GiB' does not start with a number");
    size_bad(".", 0, EINVAL, "size '.' does not start with a number");
    size_bad(".GiB", 0, EINVAL, "size '.GiB' does not start with a number");
    size_bad("+", 0, EINVAL, "size '' does not start with a number");
    size_bad("10", 0, EINVAL, "size '10' has no unit (write e.g. '10GiB' or '10B')");
    size_bad("1.5", 0, EINVAL,
             "size '1.5' has no unit (write e.g. '1.5GiB' or '1.5B')");
    size_bad("10 XB", 0, EINVAL,
             "unknown size unit 'XB' in '10 XB' (use B, KB, MB, GB, TB, PB, EB, KiB, "
             "MiB, GiB, TiB, PiB, EiB)");
    size_bad("10GiBs", 0, EINVAL,
             "unknown size unit 'GiBs' in '10GiBs' (use B, KB, MB, GB, TB, PB, EB, "
             "KiB, MiB, GiB, TiB, PiB, EiB)");
    size_bad("10Ki", 0, EINVAL,
             "unknown size unit 'Ki' in '10Ki' (use B, KB, MB, GB, TB, PB, EB, KiB, "
             "MiB, GiB, TiB, PiB, EiB)");
    size_bad("10GiB x", 0, EINVAL, "unexpected 'x' after size");
    size_bad("10GiB/s", 0, EINVAL, "unexpected '/s' after size");
    size_bad("10 GiB 5", 0, EINVAL, "unexpected '5' after size");
    size_bad("1.5.5GiB", 0, EINVAL,
             "unexpected '.5GiB' after the number in '1.5.5GiB'");
    size_bad("1,5GiB", 0, EINVAL, "unexpected ',5GiB' after the number in '1,5GiB'");
    size_bad("1,5", HU_SIZE_BARE_BYTES, EINVAL, "unexpected ',5' after size");
    size_bad("10 ", 0, EINVAL, "size '10 ' has no unit (write e.g. '10GiB' or "
             "'10B')");
}
END_TEST

START_TEST(test_size_double)
{
    double d;
    hu_error_t err;

    ck_assert_int_eq(hu_parse_size_d("128.2 GB", 0, &d, &err), 0);
    ck_assert_double_eq_tol(d, 128.2e9, 1);
    ck_assert_int_eq(hu_parse_size_d("1.5GiB", 0, &d, &err), 0);
    ck_assert_double_eq(d, 1610612736.0);
    ck_assert_int_eq(hu_parse_size_d("16EiB", 0, &d, &err), 0);
    ck_assert_double_eq(d, 18446744073709551616.0);
    ck_assert_int_eq(hu_parse_size_d("42", HU_SIZE_BARE_BYTES, &d, &err), 0);
    ck_assert_double_eq(d, 42.0);
    ck_assert_int_eq(hu_parse_size_d("42", 0, &d, &err), -1);
    ck_assert_str_eq(err.text, "size '42' has no unit (write e.g. '42GiB' or '42B')");
    ck_assert_int_eq(hu_parse_size_d("4 GB x", 0, &d, &err), -1);
    ck_assert_str_eq(err.text, "unexpected 'x' after size");
    ck_assert_int_eq(hu_parse_size_d("-4GB", 0, &d, &err), -1);
    ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* ------------------------------------------------------------------ bandwidths */

START_TEST(test_bandwidth)
{
    double bps = 0;
    hu_error_t err = { "" };

    ck_assert_int_eq(hu_parse_bandwidth("3 GB/s", &bps, &err), 0);
    ck_assert_double_eq(bps, 3e9);
    ck_assert_int_eq(hu_parse_bandwidth("500MiB/s", &bps, &err), 0);
    ck_assert_double_eq(bps, 500.0 * MiB);
    ck_assert_int_eq(hu_parse_bandwidth("1.5 GiB/sec", &bps, &err), 0);
    ck_assert_double_eq(bps, 1.5 * GiB);
    ck_assert_int_eq(hu_parse_bandwidth("2 KB /s", &bps, &err), 0);
    ck_assert_double_eq(bps, 2000.0);

    bps = 7;
    errno = 0;
    ck_assert_int_eq(hu_parse_bandwidth("3 GB", &bps, &err), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_str_eq(err.text, "bandwidth '3 GB' must end in '/s' (e.g. '3 GB/s')");
    ck_assert_double_eq(bps, 7);
    ck_assert_int_eq(hu_parse_bandwidth("3 GB/m", &bps, &err), -1);
    ck_assert_str_eq(err.text, "bandwidth '3 GB/m' must end in '/s' (e.g. '3 GB/s')");
    ck_assert_int_eq(hu_parse_bandwidth("3/s", &bps, &err), -1);
    ck_assert_str_eq(err.text, "bandwidth '3/s' has no unit (write e.g. '3 GB/s')");
    ck_assert_int_eq(hu_parse_bandwidth("3", &bps, &err), -1);
    ck_assert_str_eq(err.text, "bandwidth '3' has no unit (write e.g. '3 GB/s')");
    ck_assert_int_eq(hu_parse_bandwidth("-3 GB/s", &bps, &err), -1);
    ck_assert_str_eq(err.text, "size '-3 GB/s' is negative");
    ck_assert_int_eq(hu_parse_bandwidth("3 XB/s", &bps, &err), -1);
    ck_assert_str_eq(err.text, "unknown size unit 'XB' in '3 XB/s' (use B, KB, MB, "
                     "GB, TB, PB, EB, KiB, MiB, GiB, TiB, PiB, EiB)");
    ck_assert_int_eq(hu_parse_bandwidth("", &bps, &err), -1);
    ck_assert_str_eq(err.text, "empty size");
    ck_assert_int_eq(hu_parse_bandwidth(NULL, &bps, NULL), -1);
    ck_assert_double_eq(bps, 7);
}
END_TEST

/* ------------------------------------------------------------------ durations */

START_TEST(test_duration_units)
{
    static const struct {
        const char *unit;
        double mult;
    } units[] = {
        { "s", 1 }, { "sec", 1 }, { "secs", 1 }, { "second", 1 }, { "seconds", 1 },
        { "m", 60 }, { "min", 60 }, { "mins", 60 }, { "minute", 60 },
        { "minutes", 60 },
        { "h", 3600 }, { "hr", 3600 }, { "hour", 3600 }, { "hours", 3600 },
        { "d", 86400 }, { "day", 86400 }, { "days", 86400 },
    };
    char buf[64];

    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        snprintf(buf, sizeof(buf), "3%s", units[i].unit);
        dur_ok(buf, 0, 3 * units[i].mult);
        snprintf(buf, sizeof(buf), "3 %s", units[i].unit);
        dur_ok(buf, 0, 3 * units[i].mult);
    }
    dur_ok("10S", 0, 10);
    dur_ok("2 Hours", 0, 7200);
    dur_ok("1.5h", 0, 5400);
    dur_ok("0.25m", 0, 15);
    dur_ok("0s", 0, 0);
    dur_ok("  10m", 0, 600);
    dur_ok("10", HU_DUR_BARE_SECONDS, 10);
    dur_ok("2.5", HU_DUR_BARE_SECONDS, 2.5);
}
END_TEST

START_TEST(test_duration_clock)
{
    dur_ok("01:30", 0, 90);
    dur_ok("00:59", 0, 59);
    dur_ok("90:00", 0, 5400);             /* minutes above 59 in MM:SS: Slurm too */
    dur_ok("1:02:03", 0, 3723);
    dur_ok("01:02:03", 0, 3723);
    dur_ok("100:00:00", 0, 360000);
    dur_ok("2-03:04:05", 0, 2 * 86400 + 3 * 3600 + 4 * 60 + 5);
    dur_ok("0-00:00:01", 0, 1);
    dur_ok("00:00", 0, 0);

    dur_bad("00:61", 0, EINVAL, "duration '00:61' has minutes or seconds above 59");
    dur_bad("00:60", 0, EINVAL, "duration '00:60' has minutes or seconds above 59");
    dur_bad("1:60:00", 0, EINVAL,
            "duration '1:60:00' has minutes or seconds above 59");
    dur_bad("1:00:60", 0, EINVAL,
            "duration '1:00:60' has minutes or seconds above 59");
    dur_bad("1-02:03", 0, EINVAL, "duration '1-02:03' is not [[D-]HH:]MM:SS");
    dur_bad("1:2:3:4", 0, EINVAL, "duration '1:2:3:4' is not [[D-]HH:]MM:SS");
    dur_bad(":30", 0, EINVAL, "duration ':30' is not [[D-]HH:]MM:SS");
    dur_bad("1:", 0, EINVAL, "duration '1:' is not [[D-]HH:]MM:SS");
    dur_bad("1::2", 0, EINVAL, "duration '1::2' is not [[D-]HH:]MM:SS");
    dur_bad("a-01:00:00", 0, EINVAL, "duration 'a-01:00:00' is not [[D-]HH:]MM:SS");
    dur_bad("01:00-1", 0, EINVAL, "duration '01:00-1' is not [[D-]HH:]MM:SS");
    dur_bad("100001-00:00:00", 0, EINVAL,
            "duration '100001-00:00:00' is not [[D-]HH:]MM:SS");
    dur_bad("1.5:00", 0, EINVAL, "duration '1.5:00' is not [[D-]HH:]MM:SS");
    dur_bad("01:00 ", 0, EINVAL, "duration '01:00 ' is not [[D-]HH:]MM:SS");
    dur_bad("99999999:00", 0, EINVAL, "duration '99999999:00' is not [[D-]HH:]MM:SS");
}
END_TEST

START_TEST(test_duration_errors)
{
    dur_bad("10", 0, EINVAL, "duration '10' has no unit (write e.g. '10s', '10m' "
            "or '10h')");
    dur_bad("10 weeks", 0, EINVAL,
            "unknown duration unit 'weeks' in '10 weeks' (use s, m, h or d)");
    dur_bad("10ms", 0, EINVAL,
            "unknown duration unit 'ms' in '10ms' (use s, m, h or d)");
    dur_bad("-5s", 0, EINVAL, "duration '-5s' is negative");
    dur_bad(" -5", HU_DUR_BARE_SECONDS, EINVAL, "duration '-5' is negative");
    dur_bad("", 0, EINVAL, "empty duration");
    dur_bad(NULL, 0, EINVAL, "empty duration");
    dur_bad("s", 0, EINVAL, "duration 's' does not start with a number");
    dur_bad("+5s", 0, EINVAL, "duration '+5s' does not start with a number");
    dur_bad("99999999999999999999s", 0, ERANGE,
            "duration '99999999999999999999s' is too large");
}
END_TEST

/* ------------------------------------------------------------------ formatters */

START_TEST(test_human_sizes)
{
    char buf[32];

    ck_assert_str_eq(hu_size_str(0, buf, sizeof(buf)), "0 B");
    ck_assert_str_eq(hu_size_str(1, buf, sizeof(buf)), "1 B");
    ck_assert_str_eq(hu_size_str(1023, buf, sizeof(buf)), "1023 B");
    ck_assert_str_eq(hu_size_str(1024, buf, sizeof(buf)), "1.00 KiB");
    ck_assert_str_eq(hu_size_str(3 * GiB / 2, buf, sizeof(buf)), "1.50 GiB");
    ck_assert_str_eq(hu_size_str(200 * GiB, buf, sizeof(buf)), "200.00 GiB");
    ck_assert_str_eq(hu_size_str(1ULL << 63, buf, sizeof(buf)), "8.00 EiB");
    ck_assert_str_eq(hu_size_str(UINT64_MAX, buf, sizeof(buf)), "16.00 EiB");
    ck_assert_str_eq(hu_size_str(3 * GiB / 2, buf, 5), "1.50");     /* truncated */

    ck_assert_str_eq(hu_size_str_si(0, buf, sizeof(buf)), "0 B");
    ck_assert_str_eq(hu_size_str_si(999, buf, sizeof(buf)), "999 B");
    ck_assert_str_eq(hu_size_str_si(1000, buf, sizeof(buf)), "1.00 KB");
    ck_assert_str_eq(hu_size_str_si(1.61e9, buf, sizeof(buf)), "1.61 GB");
    ck_assert_str_eq(hu_size_str_si(128.2e9, buf, sizeof(buf)), "128.20 GB");
    ck_assert_str_eq(hu_size_str_si(1e18, buf, sizeof(buf)), "1.00 EB");
    ck_assert_str_eq(hu_size_str_si(2e21, buf, sizeof(buf)), "2000.00 EB");
}
END_TEST

START_TEST(test_human_durations)
{
    char buf[32];

    ck_assert_str_eq(hu_duration_str(3723, buf, sizeof(buf)), "1h02m03s");
    ck_assert_str_eq(hu_duration_str(3600, buf, sizeof(buf)), "1h00m00s");
    ck_assert_str_eq(hu_duration_str(90000, buf, sizeof(buf)), "25h00m00s");
    ck_assert_str_eq(hu_duration_str(62, buf, sizeof(buf)), "1m02s");
    ck_assert_str_eq(hu_duration_str(59.6, buf, sizeof(buf)), "1m00s");
    ck_assert_str_eq(hu_duration_str(45, buf, sizeof(buf)), "45s");
    ck_assert_str_eq(hu_duration_str(1.5, buf, sizeof(buf)), "1.5s");
    ck_assert_str_eq(hu_duration_str(0.001234, buf, sizeof(buf)), "0.00123s");
    ck_assert_str_eq(hu_duration_str(0, buf, sizeof(buf)), "0s");
    ck_assert_str_eq(hu_duration_str(-1, buf, sizeof(buf)), "-");
    ck_assert_str_eq(hu_duration_str(NAN, buf, sizeof(buf)), "-");
    ck_assert_str_eq(hu_duration_str(INFINITY, buf, sizeof(buf)), "-");
    /* beyond what whole hours can show: no undefined conversion */
    ck_assert_str_eq(hu_duration_str(1e30, buf, sizeof(buf)), "1e+30s");
    ck_assert_str_eq(hu_duration_str(1e15, buf, sizeof(buf)), "1e+15s");
}
END_TEST

START_TEST(test_errprintf)
{
    hu_error_t err;
    char big[1000];

    errno = ERANGE;
    ck_assert_int_eq(hu_errprintf(&err, "x=%d", 42), -1);
    ck_assert_int_eq(errno, ERANGE);            /* errno kept */
    ck_assert_str_eq(err.text, "x=42");
    ck_assert_int_eq(hu_errprintf(NULL, "x"), -1);
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    hu_errprintf(&err, "%s", big);
    ck_assert_uint_eq(strlen(err.text), sizeof(err.text) - 1);  /* truncated */
}
END_TEST

static Suite *units_suite(void)
{
    Suite *s = suite_create("libhutil units");
    TCase *tc;

    tc = tcase_create("sizes");
    tcase_add_test(tc, test_size_every_unit);
    tcase_add_test(tc, test_size_case);
    tcase_add_test(tc, test_size_fractions);
    tcase_add_test(tc, test_size_blanks);
    tcase_add_test(tc, test_size_boundaries);
    tcase_add_test(tc, test_size_overflow);
    tcase_add_test(tc, test_size_errors);
    tcase_add_test(tc, test_size_double);
    suite_add_tcase(s, tc);

    tc = tcase_create("bandwidths");
    tcase_add_test(tc, test_bandwidth);
    suite_add_tcase(s, tc);

    tc = tcase_create("durations");
    tcase_add_test(tc, test_duration_units);
    tcase_add_test(tc, test_duration_clock);
    tcase_add_test(tc, test_duration_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("formatters");
    tcase_add_test(tc, test_human_sizes);
    tcase_add_test(tc, test_human_durations);
    tcase_add_test(tc, test_errprintf);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(units_suite());
}

/*
 * vi: ts=4 sw=4 expandtab
 */
