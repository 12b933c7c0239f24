/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * rng.h — bbsim's own pseudo-random numbers, so that a seed gives the same workload
 * on every machine and libc: xoshiro256** seeded through splitmix64
 * (Blackman & Vigna, public domain algorithms, written from their description).
 */
#ifndef BBSIM_RNG_H
#define BBSIM_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct {
    uint64_t s[4];
    int have_spare;
    double spare;
} rng_t;

static inline uint64_t rng_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void rng_seed(rng_t *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = rng_splitmix64(&x);
    r->have_spare = 0;
    r->spare = 0.;
}

static inline uint64_t rng_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t rng_next(rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rng_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rng_rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1). */
static inline double rng_uniform01(rng_t *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

static inline double rng_uniform(rng_t *r, double lo, double hi)
{
    return lo + (hi - lo) * rng_uniform01(r);
}

/* Standard normal (Marsaglia's polar method: no trigonometric functions). */
static inline double rng_normal01(rng_t *r)
{
    double u, v, s;
    if (r->have_spare) {
        r->have_spare = 0;
        return r->spare;
    }
    do {
        u = 2. * rng_uniform01(r) - 1.;
        v = 2. * rng_uniform01(r) - 1.;
        s = u * u + v * v;
    } while (s >= 1. || s == 0.);
    s = sqrt(-2. * log(s) / s);
    r->spare = v * s;
    r->have_spare = 1;
    return u * s;
}

static inline double rng_normal(rng_t *r, double mean, double sd)
{
    return mean + sd * rng_normal01(r);
}

static inline double rng_exponential(rng_t *r, double mean)
{
    return -mean * log(1. - rng_uniform01(r));
}

/* Uniform integer in [0, n). */
static inline uint64_t rng_below(rng_t *r, uint64_t n)
{
    return n ? (uint64_t)(rng_uniform01(r) * (double)n) % n : 0;
}

#endif /* BBSIM_RNG_H */
