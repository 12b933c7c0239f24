/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * checksum.c — XXH64 in portable C, CRC-32C in portable C and with SSE4.2 (see
 * checksum.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"

/* ------------------------------------------------------------------ xxh64 */
#define P1 0x9E3779B185EBCA87ULL
#define P2 0xC2B2AE3D27D4EB4FULL
#define P3 0x165667B19E3779F9ULL
#define P4 0x85EBCA77C2B2AE63ULL
#define P5 0x27D4EB2F165667C5ULL

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

/* The n-byte (n <= 8) little-endian integer at p: the compiler makes it one load
 * (and a byte swap on a big-endian machine). */
static inline uint64_t rd_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

#define rd64(p) rd_le(p, 8)
#define rd32(p) ((uint32_t)rd_le(p, 4))

static inline uint64_t round64(uint64_t acc, uint64_t in)
{
    acc += in * P2;
    acc = rotl64(acc, 31);
    return acc * P1;
}

static inline uint64_t merge64(uint64_t acc, uint64_t v)
{
    acc ^= round64(0, v);
    return acc * P1 + P4;
}

uint64_t cksum_xxh64(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data, *end = p + len;
    uint64_t h;

    if (len >= 32) {
        const unsigned char *limit = end - 32;
        uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        do {
            v1 = round64(v1, rd64(p));
            v2 = round64(v2, rd64(p + 8));
            v3 = round64(v3, rd64(p + 16));
            v4 = round64(v4, rd64(p + 24));
            p += 32;
        } while (p <= limit);
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        h = merge64(h, v1);
        h = merge64(h, v2);
        h = merge64(h, v3);
        h = merge64(h, v4);
    } else {
        h = seed + P5;
    }
    h += (uint64_t)len;
    while (p + 8 <= end) {
        h ^= round64(0, rd64(p));
        h = rotl64(h, 27) * P1 + P4;
        p += 8;
    }
    if (p + 4 <= end) {
        h ^= (uint64_t)rd32(p) * P1;
        h = rotl64(h, 23) * P2 + P3;
        p += 4;
    }
    while (p < end) {
        h ^= (*p) * P5;
        h = rotl64(h, 11) * P1;
        p++;
    }
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

/* ------------------------------------------------------------------ crc32c */
/*
 * CRC-32C (Castagnoli; iSCSI, RFC 3720 B.4): polynomial
 * P = x^32+x^28+x^27+x^26+x^25+x^23+x^22+x^20+x^19+x^18+x^14+x^13+x^11+x^10+x^9+x^8+x^6+1,
 * reflected (the first bit of a byte is its lowest-order one, and a 32-bit value v
 * stands for v(x) = sum v_i x^(31-i)), so P without its x^32 is 0x82F63B78.  The
 * register starts at ~0 and the result is inverted; so that calls chain, the crc
 * argument is a previous result (0 to start) and is inverted on entry.
 *
 * Two implementations compute the same function, chosen once at run time:
 *   cksum_crc32c_sw  slicing-by-8 tables, any CPU (~1.5 GB/s here);
 *   crc_hw           the SSE4.2 crc32 instruction on three interleaved streams,
 *                    combined with pclmulqdq (x86-64 with sse4.2 and pclmul;
 *                    ~18 GB/s on a cached 256 KiB block here, bench_checksum).
 *
 * Why three streams: crc32 has a latency of 3 cycles and a throughput of one per
 * cycle, so one chain of it runs at a third of what the CPU can do.  Write r(s, M)
 * for the register (no inversions) after feeding message M into a register that
 * held s.  The CRC is linear over GF(2), so
 *     r(s, M) = s(x) x^(8|M|) mod P  xor  r(0, M)
 * and for M = A B C with |A| = |B| = |C| = n bytes
 *     r(s, ABC) = r(s, A) x^(16n)  xor  r(0, B) x^(8n)  xor  r(0, C)   (mod P).
 * The three r() do not depend on each other: they run interleaved, and the first two
 * are then "shifted by 2n and n zero bytes" (Gopal et al., "Fast CRC Computation
 * for iSCSI Polynomial Using CRC32 Instruction", Intel white paper, 2011).
 *
 * The shift a(x) x^(8n) mod P takes one pclmulqdq and one crc32:
 *   - the carry-less product q = clmul(a, k) of two 32-bit reflected values has
 *     bit j = sum_(i+l=j) a_i k_l, the coefficient of x^(62-j) in a(x) k(x); read
 *     as a 64-bit reflected value (bit j stands for x^(63-j)) it is x a(x) k(x);
 *   - crc32 of a 64-bit operand d into a register of 0 is d(x) x^32 mod P;
 * so crc32(0, clmul(a, k)) = a(x) k(x) x^33 mod P, and with k = x^(8n-33) mod P
 * this is the shift of a by n bytes.  Both shifts go through one crc32, since it
 * is linear in its operand: crc32(0, q0) xor crc32(0, q1) = crc32(0, q0 xor q1).
 *
 * Stream length: n is a multiple of CRC_STEP up to CRC_LONG bytes, as long as
 * the buffer allows: a 256 KiB block is 10 rounds of 3 x 8 KiB, one of
 * 3 x 5376 bytes, and 256 bytes on one stream.  The two constants of every n
 * (64 values) are computed at the first call (131,000 steps of a shift, ~0.1 ms).
 */
#define CRC_POLY 0x82F63B78U
#define CRC_STEP 256u  /* stream lengths are multiples of this */
#define CRC_LONG 8192u /* longest stream: combining is then ~1% */

typedef uint32_t (*crc_fn_t)(uint32_t crc, const void *data, size_t len);

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static _Atomic(crc_fn_t) crc_impl; /* set once by crc_init */

static void crc_init(void);

uint32_t cksum_crc32c_sw(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = data;
    pthread_once(&crc_once, crc_init);
    crc = ~crc;
    while (len >= 8) {
        uint32_t lo = rd32(p) ^ crc, hi = rd32(p + 4);
        crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^ crc_tab[5][(lo >> 16) & 0xff]
              ^ crc_tab[4][lo >> 24] ^ crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff]
              ^ crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#include <wmmintrin.h>
#define CRC_HW 1

/* crc_k[j] for streams of n = (j + 1) CRC_STEP bytes: { x^(16n-33), x^(8n-33) } mod P */
static uint32_t crc_k[CRC_LONG / CRC_STEP][2];

static bool crc_hw_ok(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
}

/* x^m mod P for every m that crc_k holds, one multiplication by x at a time (in
 * the reflected order, multiplying by x is a right shift). */
static void crc_hw_init(void)
{
    uint32_t v = 0x80000000U; /* x^0 */
    for (uint32_t m = 0; m <= 16 * CRC_LONG - 33; m++) {
        uint32_t n = (m + 33) / 8; /* v = x^(8n-33), or x^(16(n/2)-33) */
        if ((m + 33) % (8 * CRC_STEP) == 0) {
            if (n <= CRC_LONG)
                crc_k[n / CRC_STEP - 1][1] = v;
            if (n % (2 * CRC_STEP) == 0)
                crc_k[n / 2 / CRC_STEP - 1][0] = v;
        }
        v = v & 1 ? (v >> 1) ^ CRC_POLY : v >> 1;
    }
}

static inline uint64_t ld64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

__attribute__((target("sse4.2,pclmul"))) static uint32_t crc_hw(uint32_t crc, const void *data,
                                                                size_t len)
{
    const unsigned char *p = data;
    uint64_t c = (uint32_t)~crc;

    /* 8-byte aligned loads never straddle a cache line */
    while (len > 0 && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        len--;
    }
    while (len >= 3 * CRC_STEP) {
        size_t j = len / (3 * CRC_STEP);
        if (j > CRC_LONG / CRC_STEP)
            j = CRC_LONG / CRC_STEP;
        size_t n = j * CRC_STEP;
        const unsigned char *end = p + n;
        uint64_t c1 = 0, c2 = 0;
        do {
            c = _mm_crc32_u64(c, ld64(p));
            c1 = _mm_crc32_u64(c1, ld64(p + n));
            c2 = _mm_crc32_u64(c2, ld64(p + 2 * n));
            p += 8;
        } while (p < end);
        __m128i q0 = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)c),
                                          _mm_cvtsi32_si128((int)crc_k[j - 1][0]), 0);
        __m128i q1 = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)c1),
                                          _mm_cvtsi32_si128((int)crc_k[j - 1][1]), 0);
        c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(_mm_xor_si128(q0, q1))) ^ c2;
        p += 2 * n;
        len -= 3 * n;
    }
    while (len >= 8) {
        c = _mm_crc32_u64(c, ld64(p));
        p += 8;
        len -= 8;
    }
    while (len-- > 0)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
#endif /* x86-64 */

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ CRC_POLY : c >> 1;
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
    crc_fn_t fn = cksum_crc32c_sw;
#ifdef CRC_HW
    if (crc_hw_ok()) {
        crc_hw_init();
        fn = crc_hw;
    }
#endif
    atomic_store_explicit(&crc_impl, fn, memory_order_release);
}

static crc_fn_t crc_resolve(void)
{
    crc_fn_t fn = atomic_load_explicit(&crc_impl, memory_order_acquire);
    if (!fn) {
        pthread_once(&crc_once, crc_init);
        fn = atomic_load_explicit(&crc_impl, memory_order_acquire);
    }
    return fn;
}

uint32_t cksum_crc32c(uint32_t crc, const void *data, size_t len)
{
    return crc_resolve()(crc, data, len);
}

bool cksum_crc32c_hw_ok(void)
{
    return crc_resolve() != cksum_crc32c_sw;
}

uint32_t cksum_crc32c_hw(uint32_t crc, const void *data, size_t len)
{
#ifdef CRC_HW
    if (cksum_crc32c_hw_ok())
        return crc_hw(crc, data, len);
#endif
    return cksum_crc32c_sw(crc, data, len);
}

/* ------------------------------------------------------------------ common */
uint64_t cksum(cksum_alg_t alg, const void *data, size_t len)
{
    return alg == CKSUM_CRC32C ? cksum_crc32c(0, data, len) : cksum_xxh64(data, len, 0);
}

int cksum_parse(const char *name, cksum_alg_t *alg)
{
    if (!strcmp(name, "xxh64"))
        *alg = CKSUM_XXH64;
    else if (!strcmp(name, "crc32c"))
        *alg = CKSUM_CRC32C;
    else {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

const char *cksum_impl(cksum_alg_t alg)
{
    if (alg == CKSUM_CRC32C)
        return cksum_crc32c_hw_ok() ? "crc32c-sse42" : "crc32c-sw";
    return "xxh64";
}

/* Known answers: the check value of "123456789" and the iSCSI vectors of RFC 3720
 * B.4; then one call against one byte at a time (chaining and the bulk loops). */
static int crc_selftest(crc_fn_t f)
{
    unsigned char b[101];
    uint32_t c = 0;

    if (f(0, "123456789", 9) != 0xE3069283U)
        return -1;
    memset(b, 0, 32);
    if (f(0, b, 32) != 0x8A9136AAU)
        return -1;
    memset(b, 0xff, 32);
    if (f(0, b, 32) != 0x62A8AB43U)
        return -1;
    for (int i = 0; i < 32; i++)
        b[i] = (unsigned char)i;
    if (f(0, b, 32) != 0x46DD794EU)
        return -1;
    for (int i = 0; i < 32; i++)
        b[i] = (unsigned char)(31 - i);
    if (f(0, b, 32) != 0x113FDB5CU)
        return -1;
    for (int i = 0; i < 101; i++)
        b[i] = (unsigned char)(i * 7 + 3);
    for (int i = 0; i < 101; i++)
        c = f(c, b + i, 1);
    return c == f(0, b, 101) ? 0 : -1;
}

int cksum_selftest(void)
{
    /* XXH64: from the reference implementation */
    if (cksum_xxh64("", 0, 0) != 0xEF46DB3751D8E999ULL
        || cksum_xxh64("a", 1, 0) != 0xD24EC4F1A98C6E5BULL
        || cksum_xxh64("abc", 3, 0) != 0x44BC2CF5AD770999ULL)
        goto bad;
    if (crc_selftest(cksum_crc32c_sw) < 0)
        goto bad;
    if (cksum_crc32c_hw_ok()) {
        /* the interleaved streams and their combination: a buffer that takes a
         * full round, a shorter one and a tail, from an odd address */
        enum { LEN = 3 * CRC_LONG + 3 * 5 * CRC_STEP + 13 };
        unsigned char *buf = malloc(LEN + 3);
        uint32_t x = 2463534242U;
        int ok;
        if (!buf)
            return -1; /* errno ENOMEM */
        for (size_t i = 0; i < LEN + 3; i++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            buf[i] = (unsigned char)x;
        }
        ok = crc_selftest(cksum_crc32c_hw) == 0
             && cksum_crc32c_hw(0, buf + 3, LEN) == cksum_crc32c_sw(0, buf + 3, LEN);
        free(buf);
        if (!ok)
            goto bad;
    }
    return 0;
bad:
    errno = EINVAL;
    return -1;
}
