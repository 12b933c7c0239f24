/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests: the mover's checksums (bbmgr/common/checksum.c).
 *
 * Known answers come from outside this code: XXH64 from the reference xxHash
 * library (libxxhash 0.8.1), CRC-32C from the check value of "123456789", the iSCSI
 * vectors of RFC 3720 B.4 and a bit-at-a-time CRC written from the definition (in
 * Python).  The SSE4.2 implementation is then held to the software one on random
 * data for every length and alignment that changes its path.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "testutil.h"

#define BIG (4u << 20)

typedef uint32_t (*crc_fn_t)(uint32_t crc, const void *data, size_t len);

/* the loop tests run once for each */
static const crc_fn_t impls[] = { cksum_crc32c_sw, cksum_crc32c_hw, cksum_crc32c };

static unsigned char *rnd;      /* BIG + 64 random bytes */
static unsigned char *pat;      /* 262144 + 77 bytes: (i * 131 + (i >> 8)) & 0xff */
static unsigned char seq[1027]; /* 0..255 four times, then "xyz" */

static void setup(void)
{
    uint64_t x = 0x9E3779B97F4A7C15ULL;

    rnd = malloc(BIG + 64);
    pat = malloc(262144 + 77);
    ck_assert_ptr_nonnull(rnd);
    ck_assert_ptr_nonnull(pat);
    for (size_t i = 0; i < BIG + 64; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        rnd[i] = (unsigned char)(x >> 32);
    }
    for (size_t i = 0; i < 262144 + 77; i++)
        pat[i] = (unsigned char)((i * 131 + (i >> 8)) & 0xff);
    for (size_t i = 0; i < 1024; i++)
        seq[i] = (unsigned char)i;
    memcpy(seq + 1024, "xyz", 3);
}

static void teardown(void)
{
    free(rnd);
    free(pat);
}

START_TEST(test_xxh64_known)
{
    static const char *const spam = "Nobody inspects the spammish repetition";

    ck_assert_uint_eq(cksum_xxh64("", 0, 0), 0xEF46DB3751D8E999ULL);
    ck_assert_uint_eq(cksum_xxh64("a", 1, 0), 0xD24EC4F1A98C6E5BULL);
    ck_assert_uint_eq(cksum_xxh64("abc", 3, 0), 0x44BC2CF5AD770999ULL);
    ck_assert_uint_eq(cksum_xxh64("123456789", 9, 0), 0x8CB841DB40E6AE83ULL);
    ck_assert_uint_eq(cksum_xxh64(spam, strlen(spam), 0), 0xFBCEA83C8A378BF1ULL);
    ck_assert_uint_eq(cksum_xxh64(seq, 100, 0), 0x6AC1E58032166597ULL);
    ck_assert_uint_eq(cksum_xxh64(seq, 1027, 0), 0xE146CB31B65BC21AULL);
    ck_assert_uint_eq(cksum_xxh64("abc", 3, 1), 0xBEA9CA8199328908ULL);
    ck_assert_uint_eq(cksum_xxh64(seq, 100, 0x9E3779B185EBCA87ULL), 0x00278BDA0EE3F586ULL);
    /* each side of the 32-byte stripe */
    ck_assert_uint_eq(cksum_xxh64(pat, 31, 0), 0x1ADD2D10328C4897ULL);
    ck_assert_uint_eq(cksum_xxh64(pat, 32, 0), 0x333288D992CF3B16ULL);
    ck_assert_uint_eq(cksum_xxh64(pat, 33, 0), 0x379B60150F2CFC7FULL);
    ck_assert_uint_eq(cksum_xxh64(pat, 63, 0), 0x230F593878FE3703ULL);
    ck_assert_uint_eq(cksum_xxh64(pat, 64, 0), 0x60A3644CA073E2CBULL);
    ck_assert_uint_eq(cksum_xxh64(pat, 65, 0), 0x8A8D527218171F2EULL);
    ck_assert_uint_eq(cksum_xxh64(pat, 262144, 0), 0x3796E9E2B55E2E56ULL);
    ck_assert_uint_eq(cksum_xxh64(pat, 262144 + 77, 0), 0x4713A2D89AE7F0BAULL);
}
END_TEST

START_TEST(test_crc32c_known)
{
    unsigned char b[32];
    crc_fn_t f = impls[_i];

    ck_assert_uint_eq(f(0, "", 0), 0);
    ck_assert_uint_eq(f(0, "123456789", 9), 0xE3069283U);
    memset(b, 0, sizeof(b));
    ck_assert_uint_eq(f(0, b, 32), 0x8A9136AAU);
    memset(b, 0xff, sizeof(b));
    ck_assert_uint_eq(f(0, b, 32), 0x62A8AB43U);
    for (int i = 0; i < 32; i++)
        b[i] = (unsigned char)i;
    ck_assert_uint_eq(f(0, b, 32), 0x46DD794EU);
    for (int i = 0; i < 32; i++)
        b[i] = (unsigned char)(31 - i);
    ck_assert_uint_eq(f(0, b, 32), 0x113FDB5CU);
    ck_assert_uint_eq(f(0, seq, 100), 0xC1CAEBE5U);
    ck_assert_uint_eq(f(0, seq, 1027), 0x1B222F45U);
    /* long enough for the interleaved streams */
    ck_assert_uint_eq(f(0, pat, 262144), 0x58D59851U);
    ck_assert_uint_eq(f(0, pat, 262144 + 77), 0x0910A6CAU);
}
END_TEST

/* The SSE4.2 implementation against the software one: every length to 1 KiB from
 * every alignment (the byte loops, the 8-byte loop, the first three-stream rounds),
 * then the lengths around each change of stream length and the mover's sizes. */
START_TEST(test_crc32c_hw_sw)
{
    /* clang-format off */
    static const size_t odd[] = {
        767, 768, 769, 775, 776, 1535, 1536, 1537, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1,
        3 * 8192 + 768, 3 * 8192 + 767, 6 * 8192 + 13, 100003, 262144 - 1, 262144,
        262144 + 1, 262144 + 77, 1000000, BIG - 3, BIG,
    };
    /* clang-format on */

    if (!cksum_crc32c_hw_ok())
        fprintf(stderr, "test_crc32c_hw_sw: no SSE4.2 + PCLMUL here, hw is sw\n");
    for (size_t off = 0; off < 16; off++)
        for (size_t len = 0; len <= 1024; len++)
            ck_assert_msg(cksum_crc32c_hw(0, rnd + off, len) == cksum_crc32c_sw(0, rnd + off, len),
                          "offset %zu length %zu", off, len);
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
        for (size_t off = 0; off < 16; off += (odd[i] > 262144 ? 5 : 1))
            ck_assert_msg(cksum_crc32c_hw(0x12345678U, rnd + off, odd[i])
                              == cksum_crc32c_sw(0x12345678U, rnd + off, odd[i]),
                          "offset %zu length %zu", off, odd[i]);
}
END_TEST

/* crc(crc(0, a), b) == crc(0, ab), for each implementation and across them. */
START_TEST(test_crc32c_chain)
{
    static const size_t len[] = { 0, 1, 7, 8, 9, 100, 767, 768, 1000, 24576, 30000, 262144 };
    crc_fn_t f = impls[_i];
    uint64_t x = 88172645463325252ULL;

    for (size_t i = 0; i < sizeof(len) / sizeof(len[0]); i++) {
        for (size_t j = 0; j < sizeof(len) / sizeof(len[0]); j++) {
            size_t n = len[i], m = len[j], off = (i * 7 + j) % 16;
            uint32_t whole = cksum_crc32c_sw(0, rnd + off, n + m);
            ck_assert_uint_eq(f(f(0, rnd + off, n), rnd + off + n, m), whole);
            ck_assert_uint_eq(cksum_crc32c_sw(f(0, rnd + off, n), rnd + off + n, m), whole);
            ck_assert_uint_eq(f(cksum_crc32c_sw(0, rnd + off, n), rnd + off + n, m), whole);
        }
    }
    /* random cuts of 256 KiB */
    for (int k = 0; k < 20; k++) {
        size_t done = 0, total = 262144;
        uint32_t c = 0;
        while (done < total) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t n = x % 40000;
            if (n > total - done)
                n = total - done;
            c = f(c, rnd + 3 + done, n);
            done += n;
        }
        ck_assert_uint_eq(c, cksum_crc32c_sw(0, rnd + 3, total));
    }
}
END_TEST

START_TEST(test_cksum)
{
    ck_assert_uint_eq(cksum(CKSUM_XXH64, rnd, 262144), cksum_xxh64(rnd, 262144, 0));
    ck_assert_uint_eq(cksum(CKSUM_CRC32C, rnd, 262144), cksum_crc32c_sw(0, rnd, 262144));
    ck_assert_int_eq(cksum_selftest(), 0);
    ck_assert_str_eq(cksum_impl(CKSUM_XXH64), "xxh64");
    ck_assert_str_eq(cksum_impl(CKSUM_CRC32C), cksum_crc32c_hw_ok() ? "crc32c-sse42" : "crc32c-sw");
}
END_TEST

START_TEST(test_parse)
{
    static const char *const bad[] = { "",      "XXH64",    "xxh",    "xxh64 ",
                                       "crc32", "crc32c\n", "CRC32C", "sha256" };
    cksum_alg_t alg = CKSUM_CRC32C;

    ck_assert_int_eq(cksum_parse("xxh64", &alg), 0);
    ck_assert_int_eq(alg, CKSUM_XXH64);
    ck_assert_int_eq(cksum_parse("crc32c", &alg), 0);
    ck_assert_int_eq(alg, CKSUM_CRC32C);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        errno = 0;
        ck_assert_int_eq(cksum_parse(bad[i], &alg), -1);
        ck_assert_int_eq(errno, EINVAL);
        ck_assert_int_eq(alg, CKSUM_CRC32C); /* untouched on failure */
    }
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "checksum", .timeout = 60 /* sanitizer builds */, .setup = setup, .teardown = teardown,
          .tests = { test_xxh64_known, test_crc32c_hw_sw, test_cksum, test_parse, NULL },
          .loops = { { test_crc32c_known, (int)TU_COUNT(impls) },
                     { test_crc32c_chain, (int)TU_COUNT(impls) } } },
    };

    return tu_main("bbmgr_checksum", tcases, TU_COUNT(tcases));
}
