/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hutil.h — small helpers shared by every part of Harmonia: sizes, durations,
 * bandwidths, an error text and the monotonic clock.  No allocation, no global state.
 */
#ifndef HARMONIA_HUTIL_H
#define HARMONIA_HUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An error text filled by the parsers (flux-core's errprintf idea). */
typedef struct {
    char text[512];
} hu_error_t;

/* Seconds on CLOCK_MONOTONIC: durations, deadlines and rates, never dates. */
double hu_mono(void);

/* printf into err (if not NULL); always returns -1 so it can be returned. */
int hu_errprintf(hu_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Sizes: "<number>[ ]<unit>" where number is a non-negative decimal (fractions
 * allowed: "1.5GiB") and unit is one of
 *   B, KB, MB, GB, TB, PB, EB          (powers of 10^3)
 *   KiB, MiB, GiB, TiB, PiB, EiB       (powers of 2^10)
 *   K, M, G, T, P, E (binary, as Slurm writes sizes)
 * Units are case-insensitive except the 'i' forms, which accept 'i' or 'I'.
 * A bare number is refused unless flags has HU_SIZE_BARE_BYTES (then it is bytes).
 * Errors (-1, errno = EINVAL or ERANGE, err filled): empty, no digits, unknown unit,
 * missing unit, negative, overflow past UINT64_MAX, trailing garbage.
 * Zero is accepted here; callers that refuse zero say so themselves.
 */
#define HU_SIZE_BARE_BYTES 0x1
int hu_parse_size(const char *s, int flags, uint64_t *out, hu_error_t *err);

/* Same grammar, as a double (for model inputs such as "128.2 GB"). */
int hu_parse_size_d(const char *s, int flags, double *out, hu_error_t *err);

/* Bandwidth: a size followed by "/s" ("3 GB/s", "500MiB/s"). */
int hu_parse_bandwidth(const char *s, double *bytes_per_sec, hu_error_t *err);

/*
 * Durations: "<number>[ ]<unit>" with unit s, m, h, d (also sec, min, hour(s),
 * day(s)), or "[[D-]HH:]MM:SS" as Slurm writes times.  A bare number is seconds only
 * with HU_DUR_BARE_SECONDS.  Fractions allowed with a unit ("1.5h").
 */
#define HU_DUR_BARE_SECONDS 0x1
int hu_parse_duration(const char *s, int flags, double *seconds, hu_error_t *err);

/* Human forms: "1.50 GiB" (binary), "1.61 GB" (decimal) and "1h02m03s". Return buf. */
const char *hu_size_str(uint64_t bytes, char *buf, size_t len);
const char *hu_size_str_si(double bytes, char *buf, size_t len);
/* The exact form, with the units hu_parse_size() reads: the largest unit, binary or
 * decimal, that divides 'bytes' ("1TB", not "976562500KiB"; "1000KiB", not
 * "1024KB"; "1536B"), no space; hu_parse_size() gives 'bytes' back.  Returns buf. */
const char *hu_size_str_exact(uint64_t bytes, char *buf, size_t len);
const char *hu_duration_str(double seconds, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* HARMONIA_HUTIL_H */
