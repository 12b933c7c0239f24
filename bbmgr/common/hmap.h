/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hmap.h — a small chained hash map from a string or a 64-bit key to a pointer.
 * Not thread-safe: the owner locks.  Keys of string maps are copied.
 */
#ifndef BBMGR_HMAP_H
#define BBMGR_HMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct hmap hmap_t;

hmap_t *hmap_create(void);
void hmap_destroy(hmap_t *m); /* accepts NULL; values are not freed */
size_t hmap_size(const hmap_t *m);

/* String keys. put replaces an existing value. -1/ENOMEM on failure. */
int hmap_put(hmap_t *m, const char *key, void *val);
void *hmap_get(const hmap_t *m, const char *key);
void *hmap_del(hmap_t *m, const char *key); /* returns the removed value */

/* Integer keys (a map holds one kind of key only). */
int hmap_iput(hmap_t *m, uint64_t key, void *val);
void *hmap_iget(const hmap_t *m, uint64_t key);
void *hmap_idel(hmap_t *m, uint64_t key);

/* Iterate: for (void *it = hmap_first(m, &v); it; it = hmap_next(m, it, &v)) */
void *hmap_first(const hmap_t *m, void **val);
void *hmap_next(const hmap_t *m, void *it, void **val);

#endif
