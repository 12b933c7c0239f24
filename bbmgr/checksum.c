/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * checksum.c — XXH64 and CRC-32C in portable C (see checksum.h).
 */
#include <errno.h>
#include <pthread.h>
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

static inline uint64_t rd64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline uint32_t rd32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

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
static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78U : c >> 1;
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

uint32_t cksum_crc32c(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = data;
    pthread_once(&crc_once, crc_init);
    crc = ~crc;
    while (len >= 8) {
        uint32_t lo = rd32(p) ^ crc, hi = rd32(p + 4);
        crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff]
              ^ crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24]
              ^ crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff]
              ^ crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
    return ~crc;
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

int cksum_selftest(void)
{
    /* published test vectors */
    static const char *const s = "123456789";
    unsigned char buf[101];
    if (cksum_xxh64("", 0, 0) != 0xEF46DB3751D8E999ULL
        || cksum_xxh64("a", 1, 0) != 0xD24EC4F1A98C6E5BULL
        || cksum_xxh64("abc", 3, 0) != 0x44BC2CF5AD770999ULL
        || cksum_crc32c(0, s, 9) != 0xE3069283U)
        goto bad;
    /* the bulk loop against the byte loop */
    for (int i = 0; i < 101; i++)
        buf[i] = (unsigned char)(i * 7 + 3);
    uint32_t c = 0;
    for (int i = 0; i < 101; i++)
        c = cksum_crc32c(c, buf + i, 1);
    if (c != cksum_crc32c(0, buf, 101))
        goto bad;
    return 0;
bad:
    errno = EINVAL;
    return -1;
}
