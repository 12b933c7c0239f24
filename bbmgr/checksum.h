/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * checksum.h — fast non-cryptographic checksums for the data mover.
 *
 * They detect accidental corruption (a short or misplaced write, a bad block, a
 * buggy copy path), not tampering: anyone who can write the data can forge a
 * matching checksum.  Both are written from their published definitions:
 *
 *   xxh64   XXH64 of Yann Collet's xxHash (seed 0), ~ several GB/s in software;
 *   crc32c  CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), slicing-by-8.
 */
#ifndef BBMGR_CHECKSUM_H
#define BBMGR_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

typedef enum { CKSUM_XXH64 = 0, CKSUM_CRC32C = 1 } cksum_alg_t;

uint64_t cksum_xxh64(const void *data, size_t len, uint64_t seed);
uint32_t cksum_crc32c(uint32_t crc, const void *data, size_t len);

/* One call for the mover: the checksum of a buffer with algorithm alg. */
uint64_t cksum(cksum_alg_t alg, const void *data, size_t len);

/* -1 / EINVAL for an unknown name (xxh64, crc32c). */
int cksum_parse(const char *name, cksum_alg_t *alg);

/* Known-answer test of both algorithms: 0, or -1 if this build computes them wrong. */
int cksum_selftest(void);

#endif
