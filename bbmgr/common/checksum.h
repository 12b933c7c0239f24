/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * checksum.h — fast non-cryptographic checksums for the data mover.
 *
 * They detect accidental corruption (a short or misplaced write, a bad block, a
 * buggy copy path), not tampering: anyone who can write the data can forge a
 * matching checksum.  Both are written from their published definitions:
 *
 *   xxh64   XXH64 of Yann Collet's xxHash (seed 0), ~ several GB/s in software;
 *   crc32c  CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the SSE4.2
 *           crc32 instruction on three streams where the CPU has it (with
 *           pclmulqdq), slicing-by-8 elsewhere; chosen once, at the first call.
 */
#ifndef BBMGR_CHECKSUM_H
#define BBMGR_CHECKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { CKSUM_XXH64 = 0, CKSUM_CRC32C = 1 } cksum_alg_t;

uint64_t cksum_xxh64(const void *data, size_t len, uint64_t seed);
uint32_t cksum_crc32c(uint32_t crc, const void *data, size_t len);

/* One call for the mover: the checksum of a buffer with algorithm alg. */
uint64_t cksum(cksum_alg_t alg, const void *data, size_t len);

/* -1 / EINVAL for an unknown name (xxh64, crc32c). */
int cksum_parse(const char *name, cksum_alg_t *alg);

/* The implementation cksum() uses for alg, for the log: "xxh64", "crc32c-sse42"
 * or "crc32c-sw". */
const char *cksum_impl(cksum_alg_t alg);

/* The two CRC-32C implementations behind cksum_crc32c(), for tests and benchmarks.
 * cksum_crc32c_hw() is the SSE4.2 one where cksum_crc32c_hw_ok(), else the
 * software one. */
uint32_t cksum_crc32c_sw(uint32_t crc, const void *data, size_t len);
uint32_t cksum_crc32c_hw(uint32_t crc, const void *data, size_t len);
bool cksum_crc32c_hw_ok(void);

/* Known-answer test of both algorithms, and of both CRC-32C implementations where
 * the CPU runs both: 0, or -1 if this build computes them wrong. */
int cksum_selftest(void);

#endif
