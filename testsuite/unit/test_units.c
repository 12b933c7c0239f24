/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_units.c — libhutil's sizes, bandwidths, durations and human formatters
 * (hutil.h).
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
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

/* The cases of a table: an input, its flags and what it must give. */
typedef struct {
    const char *s;
    int flags;
    uint64_t want;
} size_ok_t;
typedef struct {
    const char *s;
    int flags;
    double want;
} dur_ok_t;
typedef struct {
    const char *s;
    int flags;
    int eno;
    const char *msg;
} bad_t;

/* hu_parse_size() must accept each 's' with 'flags' and give 'want' bytes. */
static void sizes_ok(const size_ok_t *t, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        uint64_t v = 12345;
        hu_error_t err = { "" };

        ck_assert_msg(hu_parse_size(t[k].s, t[k].flags, &v, &err) == 0, "'%s' refused: %s", t[k].s,
                      err.text);
        ck_assert_msg(v == t[k].want, "'%s' gave %llu, expected %llu", t[k].s,
                      (unsigned long long)v, (unsigned long long)t[k].want);
    }
}

/* hu_parse_duration() must accept each 's' with 'flags' and give 'want' seconds. */
static void durs_ok(const dur_ok_t *t, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        double d = -1;
        hu_error_t err = { "" };

        ck_assert_msg(hu_parse_duration(t[k].s, t[k].flags, &d, &err) == 0, "'%s' refused: %s",
                      t[k].s, err.text);
        ck_assert_msg(d == t[k].want, "'%s' gave %.17g, expected %.17g", t[k].s, d, t[k].want);
    }
}

/* hu_parse_size() (sizes) or hu_parse_duration() must refuse each 's' with errno
 * 'eno' and the message 'msg' exactly; the output is not touched.  A size is refused
 * with a NULL error too. */
static void refused(bool sizes, const bad_t *t, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        uint64_t v = 12345;
        double d = -1;
        hu_error_t err = { "" };
        int rc;

        errno = 0;
        rc = sizes ? hu_parse_size(t[k].s, t[k].flags, &v, &err)
                   : hu_parse_duration(t[k].s, t[k].flags, &d, &err);
        ck_assert_msg(rc == -1, "'%s' accepted", t[k].s);
        ck_assert_int_eq(errno, t[k].eno);
        ck_assert_str_eq(err.text, t[k].msg);
        ck_assert_msg(v == 12345 && d == -1, "output changed on error");
        /* err may be NULL */
        if (sizes)
            ck_assert_int_eq(hu_parse_size(t[k].s, t[k].flags, &v, NULL), -1);
    }
}

/* ------------------------------------------------------------------ sizes */

START_TEST(test_size_every_unit)
{
    static const struct {
        const char *unit;
        uint64_t mult;
    } units[] = {
        { "B", 1 },
        { "KB", 1000ULL },
        { "MB", 1000000ULL },
        { "GB", 1000000000ULL },
        { "TB", 1000000000000ULL },
        { "PB", 1000000000000000ULL },
        { "EB", 1000000000000000000ULL },
        { "KiB", KiB },
        { "MiB", MiB },
        { "GiB", GiB },
        { "TiB", TiB },
        { "PiB", PiB },
        { "EiB", EiB },
        { "K", KiB },
        { "M", MiB },
        { "G", GiB },
        { "T", TiB },
        { "P", PiB },
        { "E", EiB },
    };
    char buf[64];

    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        snprintf(buf, sizeof(buf), "1%s", units[i].unit);
        sizes_ok(&(size_ok_t){ buf, 0, units[i].mult }, 1);
        snprintf(buf, sizeof(buf), "7 %s", units[i].unit);
        sizes_ok(&(size_ok_t){ buf, 0, 7 * units[i].mult }, 1);
        snprintf(buf, sizeof(buf), "0%s", units[i].unit);
        sizes_ok(&(size_ok_t){ buf, 0, 0 }, 1);
    }
}
END_TEST

START_TEST(test_size_case)
{
    /* units are case-insensitive; the 'i' of the binary forms too */
    static const size_ok_t good[] = {
        { "1kb", 0, 1000 }, { "1Kb", 0, 1000 }, { "1gb", 0, 1000000000ULL },
        { "1kib", 0, KiB }, { "1KIB", 0, KiB }, { "1gIb", 0, GiB },
        { "1g", 0, GiB },   { "1b", 0, 1 },     { "2eib", 0, 2 * EiB },
    };

    sizes_ok(good, TU_COUNT(good));
}
END_TEST

START_TEST(test_size_fractions)
{
    static const size_ok_t good[] = {
        { "1.5GiB", 0, 1610612736ULL },
        { "1.5 GiB", 0, 3 * GiB / 2 },
        { "0.5KB", 0, 500 },
        { ".5KiB", 0, 512 },
        { "1.KiB", 0, 1024 },
        { "1.0009765625KiB", 0, 1025 },
        { "2.25MB", 0, 2250000 },
        { "0.1B", 0, 0 }, /* rounded down to whole bytes */
        { "1.9B", 0, 1 },
        { "0.001KB", 0, 1 },
        { "0.0001KB", 0, 0 },
        /* exact, not off by one through floating point */
        { "0.644702485PB", 0, 644702485000000ULL },
        { "0.267191287EB", 0, 267191287000000000ULL },
        { "0.999999999999999999EB", 0, 999999999999999999ULL },
        { "1.000000000000000001EiB", 0, EiB + 1 },
        { "15.999999999999999999EiB", 0, UINT64_MAX - 1 },
        /* digits past the 18th of the fraction are ignored */
        { "1.0000000000000000009EB", 0, 1000000000000000000ULL },
        { "15.9999999999999999999EiB", 0, UINT64_MAX - 1 },
    };

    sizes_ok(good, TU_COUNT(good));
}
END_TEST

START_TEST(test_size_blanks)
{
    static const size_ok_t good[] = {
        { "1 GiB", 0, GiB },  { "1\tGiB", 0, GiB }, { "1   GiB", 0, GiB },
        { "  1GiB", 0, GiB }, { "1GiB  ", 0, GiB }, { "+3KB", 0, 3000 },
    };

    sizes_ok(good, TU_COUNT(good));
}
END_TEST

START_TEST(test_size_boundaries)
{
    static const size_ok_t good[] = {
        { "0B", 0, 0 },
        { "0", HU_SIZE_BARE_BYTES, 0 },
        { "1B", 0, 1 },
        { "1", HU_SIZE_BARE_BYTES, 1 },
        { "9223372036854775808B", 0, 1ULL << 63 },
        { "8EiB", 0, 1ULL << 63 },
        { "9.223372036854775808EB", 0, 1ULL << 63 },
        { "18446744073709551615B", 0, UINT64_MAX },
        { "18446744073709551615", HU_SIZE_BARE_BYTES, UINT64_MAX },
        { "18446744073709551615.9B", 0, UINT64_MAX },
        { "15EiB", 0, 15 * EiB },
        { "16383PiB", 0, 16383 * PiB },
        { "18446744073709551.615KB", 0, UINT64_MAX },
    };

    sizes_ok(good, TU_COUNT(good));
}
END_TEST

START_TEST(test_size_overflow)
{
    static const bad_t bad[] = {
        { "18446744073709551616B", 0, ERANGE,
          "size '18446744073709551616B' is too large (sizes must be below 16 EiB)" },
        { "18446744073709551616", HU_SIZE_BARE_BYTES, ERANGE,
          "size '18446744073709551616' is too large (sizes must be below 16 EiB)" },
        { "16EiB", 0, ERANGE, "size '16EiB' is too large (sizes must be below 16 EiB)" },
        { "16E", 0, ERANGE, "size '16E' is too large (sizes must be below 16 EiB)" },
        { "16384PiB", 0, ERANGE, "size '16384PiB' is too large (sizes must be below 16 EiB)" },
        { "99999999999EiB", 0, ERANGE,
          "size '99999999999EiB' is too large (sizes must be below 16 EiB)" },
        { "  99999999999999999999999 GB", 0, ERANGE,
          "size '99999999999999999999999 GB' is too large (sizes must be below "
          "16 EiB)" },
        { "18446744073709551.616KB", 0, ERANGE,
          "size '18446744073709551.616KB' is too large (sizes must be below "
          "16 EiB)" },
    };

    refused(true, bad, TU_COUNT(bad));
}
END_TEST

START_TEST(test_size_errors)
{
    static const bad_t bad[] = {
        { "-1GiB", 0, EINVAL, "size '-1GiB' is negative" },
        { " -0B", 0, EINVAL, "size '-0B' is negative" },
        { "", 0, EINVAL, "empty size" },
        { "   ", 0, EINVAL, "empty size" },
        { NULL, 0, EINVAL, "empty size" },
        { "GiB", 0, EINVAL, "size 'GiB' does not start with a number" },
        { ".", 0, EINVAL, "size '.' does not start with a number" },
        { ".GiB", 0, EINVAL, "size '.GiB' does not start with a number" },
        { "+", 0, EINVAL, "size '' does not start with a number" },
        { "10", 0, EINVAL, "size '10' has no unit (write e.g. '10GiB' or '10B')" },
        { "1.5", 0, EINVAL, "size '1.5' has no unit (write e.g. '1.5GiB' or '1.5B')" },
        { "10 XB", 0, EINVAL,
          "unknown size unit 'XB' in '10 XB' (use B, KB, MB, GB, TB, PB, EB, KiB, "
          "MiB, GiB, TiB, PiB, EiB)" },
        { "10GiBs", 0, EINVAL,
          "unknown size unit 'GiBs' in '10GiBs' (use B, KB, MB, GB, TB, PB, EB, "
          "KiB, MiB, GiB, TiB, PiB, EiB)" },
        { "10Ki", 0, EINVAL,
          "unknown size unit 'Ki' in '10Ki' (use B, KB, MB, GB, TB, PB, EB, KiB, "
          "MiB, GiB, TiB, PiB, EiB)" },
        { "10GiB x", 0, EINVAL, "unexpected 'x' after size" },
        { "10GiB/s", 0, EINVAL, "unexpected '/s' after size" },
        { "10 GiB 5", 0, EINVAL, "unexpected '5' after size" },
        { "1.5.5GiB", 0, EINVAL, "unexpected '.5GiB' after the number in '1.5.5GiB'" },
        { "1,5GiB", 0, EINVAL, "unexpected ',5GiB' after the number in '1,5GiB'" },
        { "1,5", HU_SIZE_BARE_BYTES, EINVAL, "unexpected ',5' after size" },
        { "10 ", 0, EINVAL,
          "size '10 ' has no unit (write e.g. '10GiB' or "
          "'10B')" },
    };

    refused(true, bad, TU_COUNT(bad));
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
        { "s", 1 },       { "sec", 1 },      { "secs", 1 },    { "second", 1 },   { "seconds", 1 },
        { "m", 60 },      { "min", 60 },     { "mins", 60 },   { "minute", 60 },  { "minutes", 60 },
        { "h", 3600 },    { "hr", 3600 },    { "hour", 3600 }, { "hours", 3600 }, { "d", 86400 },
        { "day", 86400 }, { "days", 86400 },
    };
    char buf[64];

    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        snprintf(buf, sizeof(buf), "3%s", units[i].unit);
        durs_ok(&(dur_ok_t){ buf, 0, 3 * units[i].mult }, 1);
        snprintf(buf, sizeof(buf), "3 %s", units[i].unit);
        durs_ok(&(dur_ok_t){ buf, 0, 3 * units[i].mult }, 1);
    }
    static const dur_ok_t good[] = {
        { "10S", 0, 10 },
        { "2 Hours", 0, 7200 },
        { "1.5h", 0, 5400 },
        { "0.25m", 0, 15 },
        { "0s", 0, 0 },
        { "  10m", 0, 600 },
        { "10", HU_DUR_BARE_SECONDS, 10 },
        { "2.5", HU_DUR_BARE_SECONDS, 2.5 },
    };

    durs_ok(good, TU_COUNT(good));
}
END_TEST

START_TEST(test_duration_clock)
{
    static const dur_ok_t good[] = {
        { "01:30", 0, 90 },         { "00:59", 0, 59 },
        { "90:00", 0, 5400 }, /* minutes above 59 in MM:SS: Slurm too */
        { "1:02:03", 0, 3723 },     { "01:02:03", 0, 3723 },
        { "100:00:00", 0, 360000 }, { "2-03:04:05", 0, 2 * 86400 + 3 * 3600 + 4 * 60 + 5 },
        { "0-00:00:01", 0, 1 },     { "00:00", 0, 0 },
    };
    static const bad_t bad[] = {
        { "00:61", 0, EINVAL, "duration '00:61' has minutes or seconds above 59" },
        { "00:60", 0, EINVAL, "duration '00:60' has minutes or seconds above 59" },
        { "1:60:00", 0, EINVAL, "duration '1:60:00' has minutes or seconds above 59" },
        { "1:00:60", 0, EINVAL, "duration '1:00:60' has minutes or seconds above 59" },
        { "1-02:03", 0, EINVAL, "duration '1-02:03' is not [[D-]HH:]MM:SS" },
        { "1:2:3:4", 0, EINVAL, "duration '1:2:3:4' is not [[D-]HH:]MM:SS" },
        { ":30", 0, EINVAL, "duration ':30' is not [[D-]HH:]MM:SS" },
        { "1:", 0, EINVAL, "duration '1:' is not [[D-]HH:]MM:SS" },
        { "1::2", 0, EINVAL, "duration '1::2' is not [[D-]HH:]MM:SS" },
        { "a-01:00:00", 0, EINVAL, "duration 'a-01:00:00' is not [[D-]HH:]MM:SS" },
        { "01:00-1", 0, EINVAL, "duration '01:00-1' is not [[D-]HH:]MM:SS" },
        { "100001-00:00:00", 0, EINVAL, "duration '100001-00:00:00' is not [[D-]HH:]MM:SS" },
        { "1.5:00", 0, EINVAL, "duration '1.5:00' is not [[D-]HH:]MM:SS" },
        { "01:00 ", 0, EINVAL, "duration '01:00 ' is not [[D-]HH:]MM:SS" },
        { "99999999:00", 0, EINVAL, "duration '99999999:00' is not [[D-]HH:]MM:SS" },
    };

    durs_ok(good, TU_COUNT(good));
    refused(false, bad, TU_COUNT(bad));
}
END_TEST

START_TEST(test_duration_errors)
{
    static const bad_t bad[] = {
        { "10", 0, EINVAL,
          "duration '10' has no unit (write e.g. '10s', '10m' "
          "or '10h')" },
        { "10 weeks", 0, EINVAL, "unknown duration unit 'weeks' in '10 weeks' (use s, m, h or d)" },
        { "10ms", 0, EINVAL, "unknown duration unit 'ms' in '10ms' (use s, m, h or d)" },
        { "-5s", 0, EINVAL, "duration '-5s' is negative" },
        { " -5", HU_DUR_BARE_SECONDS, EINVAL, "duration '-5' is negative" },
        { "", 0, EINVAL, "empty duration" },
        { NULL, 0, EINVAL, "empty duration" },
        { "s", 0, EINVAL, "duration 's' does not start with a number" },
        { "+5s", 0, EINVAL, "duration '+5s' does not start with a number" },
        { "99999999999999999999s", 0, ERANGE, "duration '99999999999999999999s' is too large" },
    };

    refused(false, bad, TU_COUNT(bad));
}
END_TEST

/* ------------------------------------------------------------------ formatters */

/* A formatter's cases: the value, the room given (0: all of buf) and the text. */
typedef struct {
    double v;
    size_t room;
    const char *want;
} fmt_case_t;
typedef const char *(*fmt_f)(double v, char *buf, size_t size);

static const char *size_str_si(double v, char *buf, size_t size)
{
    return hu_size_str_si(v, buf, size);
}

static void formats(const char *what, fmt_f f, const fmt_case_t *t, size_t n)
{
    char buf[32];

    for (size_t k = 0; k < n; k++) {
        const char *got = f(t[k].v, buf, t[k].room ? t[k].room : sizeof(buf));
        ck_assert_msg(strcmp(got, t[k].want) == 0, "%s(%.17g): '%s', want '%s'", what, t[k].v, got,
                      t[k].want);
    }
}

START_TEST(test_human_sizes)
{
    char buf[32];
    static const fmt_case_t si[] = {
        { 0, 0, "0 B" },           { 999, 0, "999 B" },         { 1000, 0, "1.00 KB" },
        { 1.61e9, 0, "1.61 GB" },  { 128.2e9, 0, "128.20 GB" }, { 1e18, 0, "1.00 EB" },
        { 2e21, 0, "2000.00 EB" },
    };

    /* the binary sizes are whole uint64_t: some are not exact as a double */
    /* the exact form reads back as the same bytes, with the smallest number */
    ck_assert_str_eq(hu_size_str_exact(0, buf, sizeof(buf)), "0B");
    ck_assert_str_eq(hu_size_str_exact(1000, buf, sizeof(buf)), "1KB");
    ck_assert_str_eq(hu_size_str_exact(1024, buf, sizeof(buf)), "1KiB");
    ck_assert_str_eq(hu_size_str_exact(1024000, buf, sizeof(buf)), "1000KiB");
    ck_assert_str_eq(hu_size_str_exact(3ULL << 29, buf, sizeof(buf)), "1536MiB");
    ck_assert_str_eq(hu_size_str_exact(UINT64_MAX, buf, sizeof(buf)), "18446744073709551615B");
    ck_assert_str_eq(hu_size_str(0, buf, sizeof(buf)), "0 B");
    ck_assert_str_eq(hu_size_str(1, buf, sizeof(buf)), "1 B");
    ck_assert_str_eq(hu_size_str(1023, buf, sizeof(buf)), "1023 B");
    ck_assert_str_eq(hu_size_str(1024, buf, sizeof(buf)), "1.00 KiB");
    ck_assert_str_eq(hu_size_str(3 * GiB / 2, buf, sizeof(buf)), "1.50 GiB");
    ck_assert_str_eq(hu_size_str(200 * GiB, buf, sizeof(buf)), "200.00 GiB");
    ck_assert_str_eq(hu_size_str(1ULL << 63, buf, sizeof(buf)), "8.00 EiB");
    ck_assert_str_eq(hu_size_str(UINT64_MAX, buf, sizeof(buf)), "16.00 EiB");
    ck_assert_str_eq(hu_size_str(3 * GiB / 2, buf, 5), "1.50"); /* truncated */

    formats("hu_size_str_si", size_str_si, si, TU_COUNT(si));
}
END_TEST

START_TEST(test_human_durations)
{
    static const fmt_case_t t[] = {
        { 3723, 0, "1h02m03s" },
        { 3600, 0, "1h00m00s" },
        { 90000, 0, "25h00m00s" },
        { 62, 0, "1m02s" },
        { 59.6, 0, "1m00s" },
        { 45, 0, "45s" },
        { 1.5, 0, "1.5s" },
        { 0.001234, 0, "0.00123s" },
        { 0, 0, "0s" },
        { -1, 0, "-" },
        { NAN, 0, "-" },
        { INFINITY, 0, "-" },
        /* beyond what whole hours can show: no undefined conversion */
        { 1e30, 0, "1e+30s" },
        { 1e15, 0, "1e+15s" },
    };

    formats("hu_duration_str", hu_duration_str, t, TU_COUNT(t));
}
END_TEST

START_TEST(test_errprintf)
{
    hu_error_t err;
    char big[1000];

    errno = ERANGE;
    ck_assert_int_eq(hu_errprintf(&err, "x=%d", 42), -1);
    ck_assert_int_eq(errno, ERANGE); /* errno kept */
    ck_assert_str_eq(err.text, "x=42");
    ck_assert_int_eq(hu_errprintf(NULL, "x"), -1);
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    hu_errprintf(&err, "%s", big);
    ck_assert_uint_eq(strlen(err.text), sizeof(err.text) - 1); /* truncated */
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "sizes", .tests = { test_size_every_unit, test_size_case, test_size_fractions,
                              test_size_blanks, test_size_boundaries, test_size_overflow,
                              test_size_errors, test_size_double, NULL } },
        { "bandwidths", .tests = { test_bandwidth, NULL } },
        { "durations",
          .tests = { test_duration_units, test_duration_clock, test_duration_errors, NULL } },
        { "formatters", .tests = { test_human_sizes, test_human_durations, test_errprintf, NULL } },
    };

    return tu_main("libhutil units", tcases, TU_COUNT(tcases));
}

/*
 * vi: ts=4 sw=4 expandtab
 */
