/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * units.c — sizes, bandwidths and durations as users write them.
 *
 * Numbers are parsed by hand (no strtod) so that the grammar does not depend on
 * the locale and so that integer sizes are exact up to UINT64_MAX.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hu_error.h"
#include "hutil.h"

int hu_errprintf(hu_error_t *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hu_verrprintf(err, fmt, ap);
    va_end(ap);
    return -1;
}

/* A decimal number: digits [ '.' digits ].  Integer part kept exact in 'ip' (with
 * overflow detection), the fraction as numerator/denominator.  Returns the number
 * of characters read, 0 if there are no digits, -1 on integer overflow. */
typedef struct {
    uint64_t ip;
    uint64_t frac_num;
    uint64_t frac_den; /* 1 when no fraction */
    double value;
} number_t;

static int parse_number(const char *s, number_t *n)
{
    const char *p = s;
    int digits = 0;

    memset(n, 0, sizeof(*n));
    n->frac_den = 1;
    while (isdigit((unsigned char)*p)) {
        unsigned d = (unsigned)(*p - '0');
        if (n->ip > (UINT64_MAX - d) / 10)
            return -1;
        n->ip = n->ip * 10 + d;
        p++;
        digits++;
    }
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p)) {
            /* beyond 18 fraction digits, the extra precision is meaningless */
            if (n->frac_den < 1000000000000000000ULL) {
                n->frac_num = n->frac_num * 10 + (uint64_t)(*p - '0');
                n->frac_den *= 10;
            }
            p++;
            digits++;
        }
    }
    if (digits == 0)
        return 0;
    n->value = (double)n->ip + (double)n->frac_num / (double)n->frac_den;
    return (int)(p - s);
}

typedef struct {
    const char *name;
    uint64_t mult;
} unit_t;

/* Longest names first within a family so that "KiB" is not read as "K". */
static const unit_t size_units[] = {
    { "KiB", 1ULL << 10 },
    { "MiB", 1ULL << 20 },
    { "GiB", 1ULL << 30 },
    { "TiB", 1ULL << 40 },
    { "PiB", 1ULL << 50 },
    { "EiB", 1ULL << 60 },
    { "KB", 1000ULL },
    { "MB", 1000000ULL },
    { "GB", 1000000000ULL },
    { "TB", 1000000000000ULL },
    { "PB", 1000000000000000ULL },
    { "EB", 1000000000000000000ULL },
    /* Slurm's own short forms are binary ("--mem=4G") */
    { "K", 1ULL << 10 },
    { "M", 1ULL << 20 },
    { "G", 1ULL << 30 },
    { "T", 1ULL << 40 },
    { "P", 1ULL << 50 },
    { "E", 1ULL << 60 },
    { "B", 1ULL },
    { NULL, 0 },
};

static const unit_t *find_unit(const unit_t *tab, const char *s, size_t len)
{
    for (const unit_t *u = tab; u->name; u++) {
        if (strlen(u->name) == len && strncasecmp(u->name, s, len) == 0)
            return u;
    }
    return NULL;
}

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* s past its leading spaces, or NULL (errno EINVAL, err says why) when it is empty
 * or negative; 'what' names the quantity ("size", "duration") in the error. */
static const char *quantity_start(const char *s, const char *what, hu_error_t *err)
{
    if (!s || !*(s = skip_space(s))) {
        errno = EINVAL;
        hu_errprintf(err, "empty %s", what);
        return NULL;
    }
    if (*s == '-') {
        errno = EINVAL;
        hu_errprintf(err, "%s '%s' is negative", what, s);
        return NULL;
    }
    return s;
}

/* Common front half of the size parsers: number then optional unit.  'rest' gets
 * what follows the unit (for the bandwidth parser). */
static int parse_size_common(const char *s, int flags, number_t *num, const unit_t **unit,
                             const char **rest, hu_error_t *err)
{
    const char *p;
    int n;

    if (!(s = quantity_start(s, "size", err)))
        return -1;
    if (*s == '+')
        s++;
    n = parse_number(s, num);
    if (n < 0) {
        errno = ERANGE;
        return hu_errprintf(err,
                            "size '%s' is too large (sizes must be below "
                            "16 EiB)",
                            s);
    }
    if (n == 0) {
        errno = EINVAL;
        return hu_errprintf(err, "size '%s' does not start with a number", s);
    }
    p = skip_space(s + n);
    size_t ulen = 0;
    while (isalpha((unsigned char)p[ulen]))
        ulen++;
    if (ulen == 0) {
        if (!(flags & HU_SIZE_BARE_BYTES) && *p != '\0' && *p != '/') {
            errno = EINVAL;
            return hu_errprintf(err, "unexpected '%s' after the number in '%s'", p, s);
        }
        if (!(flags & HU_SIZE_BARE_BYTES)) {
            errno = EINVAL;
            return hu_errprintf(err,
                                "size '%s' has no unit (write e.g. '%.*sGiB' "
                                "or '%.*sB')",
                                s, n, s, n, s);
        }
        *unit = &size_units[sizeof(size_units) / sizeof(size_units[0]) - 2];
    } else if (!(*unit = find_unit(size_units, p, ulen))) {
        errno = EINVAL;
        return hu_errprintf(err,
                            "unknown size unit '%.*s' in '%s' (use B, KB, "
                            "MB, GB, TB, PB, EB, KiB, MiB, GiB, TiB, PiB, EiB)",
                            (int)ulen, p, s);
    }
    *rest = skip_space(p + ulen);
    return 0;
}

/* Exact num * mult, rounded down to whole bytes; -1 on overflow.  The fraction
 * is scaled in 128-bit integers: frac_num < 10^18 and mult <= 2^60, so the
 * product fits, and the result is exact ("0.644702485PB" is 644702485000000 B;
 * long double arithmetic gave one byte less). */
static int scale_exact(const number_t *num, uint64_t mult, uint64_t *out)
{
    uint64_t v, f;

    if (num->ip != 0 && mult > UINT64_MAX / num->ip)
        return -1;
    v = num->ip * mult;
    if (num->frac_num) {
#ifdef __SIZEOF_INT128__
        f = (uint64_t)(((unsigned __int128)num->frac_num * mult) / num->frac_den);
#else
        f = (uint64_t)((long double)num->frac_num * (long double)mult / (long double)num->frac_den);
#endif
        if (UINT64_MAX - v < f)
            return -1;
        v += f;
    }
    *out = v;
    return 0;
}

int hu_parse_size(const char *s, int flags, uint64_t *out, hu_error_t *err)
{
    number_t num;
    const unit_t *unit;
    const char *rest;
    uint64_t v;

    if (parse_size_common(s, flags, &num, &unit, &rest, err) < 0)
        return -1;
    if (*rest) {
        errno = EINVAL;
        return hu_errprintf(err, "unexpected '%s' after size", rest);
    }
    if (scale_exact(&num, unit->mult, &v) < 0) {
        errno = ERANGE;
        return hu_errprintf(err,
                            "size '%s' is too large (sizes must be below "
                            "16 EiB)",
                            skip_space(s));
    }
    *out = v;
    return 0;
}

int hu_parse_size_d(const char *s, int flags, double *out, hu_error_t *err)
{
    number_t num;
    const unit_t *unit;
    const char *rest;

    if (parse_size_common(s, flags, &num, &unit, &rest, err) < 0)
        return -1;
    if (*rest) {
        errno = EINVAL;
        return hu_errprintf(err, "unexpected '%s' after size", rest);
    }
    *out = num.value * (double)unit->mult;
    return 0;
}

int hu_parse_bandwidth(const char *s, double *bps, hu_error_t *err)
{
    number_t num;
    const unit_t *unit;
    const char *rest;

    if (parse_size_common(s, 0, &num, &unit, &rest, err) < 0) {
        if (err && strstr(err->text, "has no unit"))
            hu_errprintf(err, "bandwidth '%s' has no unit (write e.g. '3 GB/s')", skip_space(s));
        return -1;
    }
    if (strcmp(rest, "/s") != 0 && strcasecmp(rest, "/sec") != 0 && strcasecmp(rest, "ps") != 0) {
        errno = EINVAL;
        return hu_errprintf(err, "bandwidth '%s' must end in '/s' (e.g. '3 GB/s')", skip_space(s));
    }
    *bps = num.value * (double)unit->mult;
    return 0;
}

static const struct {
    const char *name;
    double mult;
} dur_units[] = {
    { "s", 1 },       { "sec", 1 },      { "secs", 1 },    { "second", 1 },   { "seconds", 1 },
    { "m", 60 },      { "min", 60 },     { "mins", 60 },   { "minute", 60 },  { "minutes", 60 },
    { "h", 3600 },    { "hr", 3600 },    { "hour", 3600 }, { "hours", 3600 }, { "d", 86400 },
    { "day", 86400 }, { "days", 86400 }, { NULL, 0 },
};

/* "[[D-]HH:]MM:SS" (Slurm's time format). */
static int parse_clock(const char *s, double *seconds, hu_error_t *err)
{
    unsigned long f[4] = { 0 };
    int nf = 0;
    unsigned long days = 0;
    const char *p = s;
    const char *dash = strchr(s, '-');

    if (dash) {
        char *end;
        if (!isdigit((unsigned char)*s))
            goto bad;
        days = strtoul(s, &end, 10);
        if (end != dash || days > 100000)
            goto bad;
        p = dash + 1;
    }
    while (1) {
        int digits = 0;
        unsigned long v = 0;
        while (isdigit((unsigned char)*p)) {
            if (v > 1000000)
                goto bad;
            v = v * 10 + (unsigned long)(*p - '0');
            p++;
            digits++;
        }
        if (!digits || nf == 3)
            goto bad;
        f[nf++] = v;
        if (*p == ':') {
            p++;
            continue;
        }
        if (*p != '\0')
            goto bad;
        break;
    }
    /* "D-" goes with HH:MM:SS only: "1-02:03" is not read as 1 day + 2m03s */
    if (nf < 2 || (dash && nf < 3))
        goto bad;
    if (nf == 2) { /* MM:SS */
        if (f[1] >= 60)
            goto range;
        *seconds = (double)days * 86400 + f[0] * 60.0 + f[1];
    } else { /* HH:MM:SS */
        if (f[1] >= 60 || f[2] >= 60)
            goto range;
        *seconds = (double)days * 86400 + f[0] * 3600.0 + f[1] * 60.0 + f[2];
    }
    return 0;
bad:
    errno = EINVAL;
    return hu_errprintf(err, "duration '%s' is not [[D-]HH:]MM:SS", s);
range:
    errno = EINVAL;
    return hu_errprintf(err, "duration '%s' has minutes or seconds above 59", s);
}

int hu_parse_duration(const char *s, int flags, double *seconds, hu_error_t *err)
{
    number_t num;
    const char *p;
    int n;

    if (!(s = quantity_start(s, "duration", err)))
        return -1;
    if (strchr(s, ':'))
        return parse_clock(s, seconds, err);
    n = parse_number(s, &num);
    if (n < 0) {
        errno = ERANGE;
        return hu_errprintf(err, "duration '%s' is too large", s);
    }
    if (n == 0) {
        errno = EINVAL;
        return hu_errprintf(err, "duration '%s' does not start with a number", s);
    }
    p = skip_space(s + n);
    if (*p == '\0') {
        if (!(flags & HU_DUR_BARE_SECONDS)) {
            errno = EINVAL;
            return hu_errprintf(err,
                                "duration '%s' has no unit (write e.g. '%ss', "
                                "'%sm' or '%sh')",
                                s, s, s, s);
        }
        *seconds = num.value;
        return 0;
    }
    for (int i = 0; dur_units[i].name; i++) {
        if (strcasecmp(p, dur_units[i].name) == 0) {
            *seconds = num.value * dur_units[i].mult;
            if (!isfinite(*seconds)) {
                errno = ERANGE;
                return hu_errprintf(err, "duration '%s' is too large", s);
            }
            return 0;
        }
    }
    errno = EINVAL;
    return hu_errprintf(err, "unknown duration unit '%s' in '%s' (use s, m, h or d)", p, s);
}

const char *hu_size_str(uint64_t bytes, char *buf, size_t len)
{
    static const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    int i = 0;
    double v = (double)bytes;

    while (v >= 1024 && i < 6) {
        v /= 1024;
        i++;
    }
    if (i == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.2f %s", v, u[i]);
    return buf;
}

const char *hu_size_str_exact(uint64_t bytes, char *buf, size_t len)
{
    const char *unit = "B";
    uint64_t best = bytes;

    /* the table's units of two letters or more: not Slurm's short forms, not B
     * (a binary and a decimal unit never give the same number) */
    for (const unit_t *u = size_units; bytes && u->name; u++) {
        if (strlen(u->name) >= 2 && bytes % u->mult == 0 && bytes / u->mult < best) {
            best = bytes / u->mult;
            unit = u->name;
        }
    }
    snprintf(buf, len, "%llu%s", (unsigned long long)best, unit);
    return buf;
}

const char *hu_size_str_si(double bytes, char *buf, size_t len)
{
    static const char *u[] = { "B", "KB", "MB", "GB", "TB", "PB", "EB" };
    int i = 0;
    double v = bytes;

    while (v >= 1000 && i < 6) {
        v /= 1000;
        i++;
    }
    snprintf(buf, len, i == 0 ? "%.0f %s" : "%.2f %s", v, u[i]);
    return buf;
}

const char *hu_duration_str(double seconds, char *buf, size_t len)
{
    if (!isfinite(seconds) || seconds < 0) {
        snprintf(buf, len, "-");
        return buf;
    }
    if (seconds >= 1e15) { /* beyond 30 million years: no exact h/m/s */
        snprintf(buf, len, "%.3gs", seconds);
        return buf;
    }
    unsigned long long t = (unsigned long long)(seconds + 0.5);
    unsigned long long h = t / 3600, m = (t / 60) % 60, s = t % 60;
    if (h)
        snprintf(buf, len, "%lluh%02llum%02llus", h, m, s);
    else if (m)
        snprintf(buf, len, "%llum%02llus", m, s);
    else if (seconds < 10)
        snprintf(buf, len, "%.3gs", seconds);
    else
        snprintf(buf, len, "%llus", s);
    return buf;
}
