/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_checksum.c — throughput of the mover's checksums (bbmgr/common/checksum.c):
 * XXH64, CRC-32C in software (slicing-by-8) and CRC-32C with SSE4.2, in GB/s
 * (10^9 bytes/s) and as a ratio to XXH64 measured in the same run.
 *
 * Two workloads: one 256 KiB block hashed over and over, which stays in the CPU's
 * cache as the mover's blocks do (it hashes each block right after reading it);
 * and a 64 MiB buffer, which does not, so memory bandwidth enters.  Each figure is
 * the best of several rounds of about 0.2 s.  Prints figures; asserts nothing
 * about time.  Usage: bench_checksum [rounds]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "checksum.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum { XXH, CRC_SW, CRC_HW, NALG };
static const char *const names[NALG] = { "xxh64", "crc32c-sw", "crc32c-hw" };

/* The result goes to a volatile sink, so that no call is optimised away. */
static volatile uint64_t sink;

static void run(int alg, const unsigned char *buf, size_t len)
{
    switch (alg) {
    case XXH:
        sink += cksum_xxh64(buf, len, 0);
        break;
    case CRC_SW:
        sink += cksum_crc32c_sw(0, buf, len);
        break;
    default:
        sink += cksum_crc32c_hw(0, buf, len);
        break;
    }
}

/* Best GB/s over rounds of about 0.2 s each, hashing buf in blocks of blk bytes. */
static double measure(int alg, const unsigned char *buf, size_t len, size_t blk, int rounds)
{
    double best = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = now(), t;
        size_t bytes = 0;
        do {
            for (size_t off = 0; off < len; off += blk)
                run(alg, buf + off, blk);
            bytes += len;
            t = now() - t0;
        } while (t < 0.2);
        if (bytes / t / 1e9 > best)
            best = bytes / t / 1e9;
    }
    return best;
}

int main(int argc, char **argv)
{
    const size_t large = 64u << 20;
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    unsigned char *buf = malloc(large);
    uint64_t x = 0x9E3779B97F4A7C15ULL;

    if (!buf || rounds < 1) {
        fprintf(stderr, "usage: bench_checksum [rounds >= 1]\n");
        return 1;
    }
    for (size_t i = 0; i < large; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (unsigned char)(x >> 32);
    }
    if (cksum_selftest() < 0) {
        fprintf(stderr, "bench_checksum: the checksum self-test failed\n");
        return 1;
    }
    printf("crc32c at run time: %s%s\n", cksum_impl(CKSUM_CRC32C),
           cksum_crc32c_hw_ok() ? "" : " (crc32c-hw below is the software one)");
    printf("%-22s %12s %12s %12s\n", "GB/s (ratio to xxh64)", names[XXH], names[CRC_SW],
           names[CRC_HW]);

    static const struct {
        const char *what;
        size_t len, blk;
    } work[] = {
        { "256 KiB, cached", 256u << 10, 256u << 10 },
        { "64 MiB, 256 KiB calls", 64u << 20, 256u << 10 },
        { "64 MiB, one call", 64u << 20, 64u << 20 },
    };
    for (size_t w = 0; w < sizeof(work) / sizeof(work[0]); w++) {
        double g[NALG];
        for (int a = 0; a < NALG; a++)
            g[a] = measure(a, buf, work[w].len, work[w].blk, rounds);
        printf("%-22s", work[w].what);
        for (int a = 0; a < NALG; a++)
            printf(" %5.1f (%3.1f)", g[a], g[a] / g[XXH]);
        printf("\n");
    }
    free(buf);
    return 0;
}
