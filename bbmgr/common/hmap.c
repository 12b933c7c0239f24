/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hmap.c — chained hash map, power-of-two buckets, FNV-1a / splitmix hashes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h"

typedef struct entry {
    struct entry *next;
    uint64_t hash;
    uint64_t ikey;
    const char *skey; /* NULL in an integer map, else key: the copy */
    void *val;
    char key[];
} entry_t;

struct hmap {
    entry_t **b;
    size_t nb, n;
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static uint64_t hash_int(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

hmap_t *hmap_create(void)
{
    hmap_t *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->nb = 64;
    if (!(m->b = calloc(m->nb, sizeof(entry_t *)))) {
        free(m);
        return NULL;
    }
    return m;
}

void hmap_destroy(hmap_t *m)
{
    if (!m)
        return;
    int saved = errno;
    for (size_t i = 0; i < m->nb; i++) {
        entry_t *e = m->b[i];
        while (e) {
            entry_t *n = e->next;
            free(e);
            e = n;
        }
    }
    free(m->b);
    free(m);
    errno = saved;
}

size_t hmap_size(const hmap_t *m)
{
    return m ? m->n : 0;
}

static void grow(hmap_t *m)
{
    size_t nb = m->nb * 2;
    entry_t **b = calloc(nb, sizeof(entry_t *));
    if (!b)
        return; /* keep working with longer chains */
    for (size_t i = 0; i < m->nb; i++) {
        entry_t *e = m->b[i];
        while (e) {
            entry_t *n = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
            e = n;
        }
    }
    free(m->b);
    m->b = b;
    m->nb = nb;
}

static entry_t **find(const hmap_t *m, uint64_t h, const char *skey, uint64_t ikey)
{
    entry_t **pp = &m->b[h & (m->nb - 1)];
    for (; *pp; pp = &(*pp)->next) {
        entry_t *e = *pp;
        if (e->hash != h)
            continue;
        if (skey ? (e->skey && !strcmp(e->skey, skey)) : (!e->skey && e->ikey == ikey))
            return pp;
    }
    return pp;
}

static int put(hmap_t *m, uint64_t h, const char *skey, uint64_t ikey, void *val)
{
    entry_t **pp = find(m, h, skey, ikey);
    if (*pp) {
        (*pp)->val = val;
        return 0;
    }
    /* One allocation holds the entry and the copy of a string key. */
    size_t klen = skey ? strlen(skey) + 1 : 0;
    entry_t *e = calloc(1, sizeof(*e) + klen);
    if (!e) {
        errno = ENOMEM;
        return -1;
    }
    e->hash = h;
    e->ikey = ikey;
    e->skey = skey ? memcpy(e->key, skey, klen) : NULL;
    e->val = val;
    *pp = e;
    if (++m->n > m->nb)
        grow(m);
    return 0;
}

static void *del(hmap_t *m, uint64_t h, const char *skey, uint64_t ikey)
{
    entry_t **pp = find(m, h, skey, ikey);
    entry_t *e = *pp;
    if (!e)
        return NULL;
    void *v = e->val;
    *pp = e->next;
    free(e);
    m->n--;
    return v;
}

int hmap_put(hmap_t *m, const char *key, void *val)
{
    return put(m, hash_str(key), key, 0, val);
}

void *hmap_get(const hmap_t *m, const char *key)
{
    entry_t *e = *find(m, hash_str(key), key, 0);
    return e ? e->val : NULL;
}

void *hmap_del(hmap_t *m, const char *key)
{
    return del(m, hash_str(key), key, 0);
}

int hmap_iput(hmap_t *m, uint64_t key, void *val)
{
    return put(m, hash_int(key), NULL, key, val);
}

void *hmap_iget(const hmap_t *m, uint64_t key)
{
    entry_t *e = *find(m, hash_int(key), NULL, key);
    return e ? e->val : NULL;
}

void *hmap_idel(hmap_t *m, uint64_t key)
{
    return del(m, hash_int(key), NULL, key);
}

static void *scan(const hmap_t *m, size_t from, void **val)
{
    for (size_t i = from; i < m->nb; i++)
        if (m->b[i]) {
            if (val)
                *val = m->b[i]->val;
            return m->b[i];
        }
    return NULL;
}

void *hmap_first(const hmap_t *m, void **val)
{
    return m ? scan(m, 0, val) : NULL;
}

void *hmap_next(const hmap_t *m, void *it, void **val)
{
    entry_t *e = it;
    if (e->next) {
        if (val)
            *val = e->next->val;
        return e->next;
    }
    return scan(m, (e->hash & (m->nb - 1)) + 1, val);
}
