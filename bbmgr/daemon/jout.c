/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * jout.c — the JSON text of bbmgrd's replies.
 *
 * A reply's body, byte for byte what json_dumps(body, JSON_COMPACT |
 * JSON_REAL_PRECISION(17)) writes (jansson 2.14: keys in insertion order, reals by
 * "%.17g" with ".0" added to integral ones and the exponent's '+' and leading
 * zeros removed), at a fraction of its cost: glibc formats a "%.17g" with
 * multi-precision arithmetic, several thousand instructions for each of the six to
 * eight reals of a phase, about a tenth of a grant's work.  jout_real() computes
 * the 17 digits of the reals it can (exponent -4 to 16: every time, bandwidth and
 * size of a reply) exactly in 128-bit integers, the others by snprintf; strings
 * with bytes over 0x7f leave the whole body to json_dumps().
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jout.h"

typedef struct {
    char *p;
    size_t n, cap;
    bool bad; /* out of memory, or json_dumps() must write it */
} jout_t;

static void jout_put(jout_t *b, const char *s, size_t n)
{
    size_t need = b->n + n + 2; /* + the reply's '\n' and NUL */
    if (!b->bad && need > b->cap) {
        size_t cap = b->cap ? b->cap : 512;
        while (cap < need)
            cap *= 2;
        char *np = realloc(b->p, cap);
        b->bad = !np;
        if (np) {
            b->p = np;
            b->cap = cap;
        }
    }
    if (b->bad)
        return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void jout_str(jout_t *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *run = s;
    jout_put(b, "\"", 1);
    for (;; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch >= 0x20 && ch != '"' && ch != '\\' && ch < 0x80)
            continue;
        jout_put(b, run, (size_t)(s - run));
        run = s + 1;
        if (!ch)
            break;
        if (ch >= 0x80) { /* UTF-8: jansson checks and writes it */
            b->bad = true;
            return;
        }
        char e[6] = { '\\', (char)ch, 0 };
        size_t n = 2;
        switch (ch) {
        case '"':
        case '\\':
            break;
        case '\b':
            e[1] = 'b';
            break;
        case '\f':
            e[1] = 'f';
            break;
        case '\n':
            e[1] = 'n';
            break;
        case '\r':
            e[1] = 'r';
            break;
        case '\t':
            e[1] = 't';
            break;
        default:
            memcpy(e + 1, "u00", 3);
            e[4] = hex[ch >> 4];
            e[5] = hex[ch & 15];
            n = 6;
        }
        jout_put(b, e, n);
    }
    jout_put(b, "\"", 1);
}

/* The 17 significant digits of v (> 0, normal) into d and its decimal exponent
 * (v ~ d[0].d[1..16] x 10^exp), correctly rounded (ties to even, as glibc's
 * printf); false when v is outside the exponents -4..16 ("%.17g" then writes an
 * exponent). */
static bool g17_digits(double v, char d[17], int *exp)
{
    /* clang-format off */
    static const uint64_t pow5[21] = {
        1ULL, 5ULL, 25ULL, 125ULL, 625ULL, 3125ULL, 15625ULL, 78125ULL, 390625ULL,
        1953125ULL, 9765625ULL, 48828125ULL, 244140625ULL, 1220703125ULL, 6103515625ULL,
        30517578125ULL, 152587890625ULL, 762939453125ULL, 3814697265625ULL,
        19073486328125ULL, 95367431640625ULL
    };
    /* clang-format on */
    const uint64_t lo = 10000000000000000ULL, hi = 100000000000000000ULL;
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    int be = (int)((bits >> 52) & 0x7ff);
    if (be == 0 || be == 0x7ff || (bits >> 63))
        return false;
    uint64_t m = (bits & ((1ULL << 52) - 1)) | (1ULL << 52);
    int q = be - 1075;                                       /* v = m * 2^q */
    int e10 = (int)floor((be - 1023) * 0.30102999566398120); /* or one less */
    for (int tries = 0; tries < 3; tries++) {
        if (e10 < -4 || e10 > 16)
            return false;
        int k = 16 - e10, s = q + k; /* v * 10^k = m * 5^k * 2^s */
        unsigned __int128 p = (unsigned __int128)m * pow5[k], n, f;
        if (s >= 0) {
            if (s > 60)
                return false;
            n = f = p << s;
        } else {
            int sh = -s;
            if (sh > 120)
                return false;
            f = p >> sh;
            unsigned __int128 rem = p - (f << sh), half = (unsigned __int128)1 << (sh - 1);
            n = f + (rem > half || (rem == half && (f & 1)));
        }
        if (f < lo) {
            e10--;
            continue;
        }
        if (f >= hi) {
            e10++;
            continue;
        }
        if (n == hi) { /* rounded up to the next power of ten */
            n = lo;
            e10++;
            if (e10 > 16)
                return false;
        }
        uint64_t x = (uint64_t)n;
        for (int i = 16; i >= 0; i--, x /= 10)
            d[i] = (char)('0' + x % 10);
        *exp = e10;
        return true;
    }
    return false;
}

static void jout_real(jout_t *b, double v)
{
    char out[64], d[17];
    size_t n = 0;
    int x;
    if (v == 0) { /* "%.17g": "0" or "-0" */
        if (signbit(v))
            jout_put(b, "-0.0", 4);
        else
            jout_put(b, "0.0", 3);
        return;
    }
    if (g17_digits(fabs(v), d, &x)) {
        if (v < 0)
            out[n++] = '-';
        if (x >= 0) {
            memcpy(out + n, d, (size_t)x + 1);
            n += (size_t)x + 1;
        } else {
            memcpy(out + n, "0.0000", (size_t)(1 - x)); /* "0." and -x-1 zeros */
            n += (size_t)(1 - x);
        }
        int first = x >= 0 ? x + 1 : 0, last = 16;
        while (last >= first && d[last] == '0')
            last--;
        if (last >= first) {
            if (x >= 0)
                out[n++] = '.';
            memcpy(out + n, d + first, (size_t)(last - first + 1));
            n += (size_t)(last - first + 1);
        } else {                      /* x >= 0 here: d[0] is not '0' */
            memcpy(out + n, ".0", 2); /* jansson: a real keeps its point */
            n += 2;
        }
        jout_put(b, out, n);
        return;
    }
    /* as jansson's jsonp_dtostr() */
    int len = snprintf(out, sizeof(out), "%.17g", v);
    if (len < 0 || (size_t)len >= sizeof(out) - 3) {
        b->bad = true;
        return;
    }
    n = (size_t)len;
    if (!strchr(out, '.') && !strchr(out, 'e')) {
        memcpy(out + n, ".0", 3);
        n += 2;
    }
    char *e = strchr(out, 'e');
    if (e) {
        char *start = e + 1, *end = start + 1;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        if (end != start) {
            memmove(start, end, n - (size_t)(end - out) + 1);
            n -= (size_t)(end - start);
        }
    }
    jout_put(b, out, n);
}

static void jout_value(jout_t *b, json_t *v, int depth)
{
    char num[32];
    if (b->bad || depth > 64) {
        b->bad = true;
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        bool first = true;
        jout_put(b, "{", 1);
        json_object_foreach (v, k, x) {
            if (!first)
                jout_put(b, ",", 1);
            first = false;
            jout_str(b, k);
            jout_put(b, ":", 1);
            jout_value(b, x, depth + 1);
        }
        jout_put(b, "}", 1);
        break;
    }
    case JSON_ARRAY:
        jout_put(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                jout_put(b, ",", 1);
            jout_value(b, json_array_get(v, i), depth + 1);
        }
        jout_put(b, "]", 1);
        break;
    case JSON_STRING:
        if (strlen(json_string_value(v)) != json_string_length(v))
            b->bad = true; /* a NUL inside: jansson writes it as \u0000 */
        else
            jout_str(b, json_string_value(v));
        break;
    case JSON_INTEGER: { /* "%" JSON_INTEGER_FORMAT */
        json_int_t i = json_integer_value(v);
        unsigned long long u = i < 0 ? 0ULL - (unsigned long long)i : (unsigned long long)i;
        char *e = num + sizeof(num), *p = e;
        do
            *--p = (char)('0' + u % 10);
        while (u /= 10);
        if (i < 0)
            *--p = '-';
        jout_put(b, p, (size_t)(e - p));
        break;
    }
    case JSON_REAL:
        jout_real(b, json_real_value(v));
        break;
    case JSON_TRUE:
        jout_put(b, "true", 4);
        break;
    case JSON_FALSE:
        jout_put(b, "false", 5);
        break;
    case JSON_NULL:
        jout_put(b, "null", 4);
        break;
    }
}

char *jout_dumps(json_t *body, size_t *len)
{
    jout_t b = { NULL, 0, 0, false };
    if (json_is_object(body) || json_is_array(body))
        jout_value(&b, body, 0);
    else
        b.bad = true;
    if (b.bad) {
        free(b.p);
        char *s = json_dumps(body, JOUT_JSON_FLAGS);
        if (!s)
            return NULL;
        b.n = strlen(s);
        char *grown = realloc(s, b.n + 2);
        if (!grown) {
            free(s);
            return NULL;
        }
        b.p = grown;
    }
    b.p[b.n++] = '\n';
    b.p[b.n] = '\0';
    *len = b.n;
    return b.p;
}
