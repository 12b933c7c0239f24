/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_buffer.c — the burst-buffer tier's pure helpers: device sensitivity to
 * concurrent access (MSCA, doc/design.md §2), the built-in device profiles, and the
 * buffer-node allocator with over-provisioning.  The tier's dynamics (occupancy,
 * drain, stalls) live in hs_bnode.c; doc/buffer-tier.md explains every choice.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsched.h"
#include "policy.h" /* hs_errprintf() */

/* ------------------------------------------------------------------ MSCA */

double hs_msca(const hs_buffer_t *b, hs_dir_t dir, int c)
{
    const double *v;
    int k;

    if (!b || c <= 1)
        return 0.;
    v = b->msca;
    k = b->nmsca;
    if (dir == HS_DIR_READ && b->nmsca_read > 0) {
        v = b->msca_read;
        k = b->nmsca_read;
    }
    if (k <= 0)
        return 0.;
    if (k > 16)
        k = 16;
    return v[(c <= k ? c : k) - 1];
}

double hs_buffer_bw(const hs_buffer_t *b, hs_dir_t dir, int c)
{
    if (!b)
        return 0.;
    return b->bandwidth / (1. + hs_msca(b, dir, c < 1 ? 1 : c));
}

double hs_buffer_if(const hs_buffer_t *b, hs_dir_t dir, int c)
{
    if (c < 1)
        c = 1;
    return (double)c * (1. + hs_msca(b, dir, c));
}

/* ------------------------------------------------------------------ devices */

/*
 * Built-in profiles: MSCA(c) = a ln c for c = 1..16 (rounded to 3 decimals), with
 *   nvme  a = 0.05 (write), 0.03 (read)      MSCA(16) = 0.14 / 0.08
 *   ssd   a = 0.35 (write), 0.20 (read)      MSCA(16) = 0.97 / 0.55
 *   hdd   a = 1/ln 2 (write), 1.8 (read)     MSCA(2) = 1, MSCA(16) = 4 / 4.99
 * They are illustrative: they follow the ordering Harmonia reports (NVMe barely
 * sensitive, SSD more, spinning disks very sensitive, reads worse than writes on
 * disks) with made-up magnitudes.  'bbmgr calibrate' measures real curves, and a
 * workload's 'devices:' overrides these.
 */
static const struct {
    const char *name;
    double w[16];
    double r[16];
} builtin[] = {
    { "nvme",
      { 0.000, 0.035, 0.055, 0.069, 0.080, 0.090, 0.097, 0.104, 0.110, 0.115, 0.120, 0.124, 0.128,
        0.132, 0.135, 0.139 },
      { 0.000, 0.021, 0.033, 0.042, 0.048, 0.054, 0.058, 0.062, 0.066, 0.069, 0.072, 0.075, 0.077,
        0.079, 0.081, 0.083 } },
    { "ssd",
      { 0.000, 0.243, 0.385, 0.485, 0.563, 0.627, 0.681, 0.728, 0.769, 0.806, 0.839, 0.870, 0.898,
        0.924, 0.948, 0.970 },
      { 0.000, 0.139, 0.220, 0.277, 0.322, 0.358, 0.389, 0.416, 0.439, 0.461, 0.480, 0.497, 0.513,
        0.528, 0.542, 0.555 } },
    { "hdd",
      { 0.000, 1.000, 1.585, 2.000, 2.322, 2.585, 2.807, 3.000, 3.170, 3.322, 3.459, 3.585, 3.700,
        3.807, 3.907, 4.000 },
      { 0.000, 1.248, 1.978, 2.495, 2.897, 3.225, 3.503, 3.743, 3.955, 4.145, 4.316, 4.473, 4.617,
        4.750, 4.874, 4.991 } },
};
#define NBUILTIN (sizeof(builtin) / sizeof(builtin[0]))

static const char *const builtin_names[] = { "nvme", "ssd", "hdd", NULL };

const char *const *hs_device_names(void)
{
    return builtin_names;
}

int hs_device_builtin(const char *name, hs_buffer_t *b)
{
    size_t i;

    if (!name || !b) {
        errno = EINVAL;
        return -1;
    }
    for (i = 0; i < NBUILTIN; i++) {
        if (!strcmp(builtin[i].name, name)) {
            memcpy(b->msca, builtin[i].w, sizeof(b->msca));
            memcpy(b->msca_read, builtin[i].r, sizeof(b->msca_read));
            b->nmsca = 16;
            b->nmsca_read = 16;
            snprintf(b->device, sizeof(b->device), "%s", name);
            return 0;
        }
    }
    errno = ENOENT;
    return -1;
}

/* ------------------------------------------------------------------ allocator */

typedef struct {
    double free;
    int idx;
} cand_t;

static int cmp_cand(const void *a, const void *b)
{
    const cand_t *x = a;
    const cand_t *y = b;

    if (x->free != y->free)
        return x->free > y->free ? -1 : 1; /* most free first */
    return (x->idx > y->idx) - (x->idx < y->idx);
}

int hs_alloc_nodes(const hs_platform_t *plat, const double *reserved, const hs_alloc_request_t *req,
                   int *nodes, int cap, hs_alloc_result_t *res, hu_error_t *err)
{
    cand_t *c = NULL;
    int nc = 0, need, want, nspare = 0, i;
    double cmax = 0, per, factor;

    if (!plat || !req || !res || (cap > 0 && !nodes) || cap < 0)
        return hs_errprintf(err, EINVAL, "allocator: missing argument");
    if (!(req->capacity > 0) || !isfinite(req->capacity) || req->nodes < 0)
        return hs_errprintf(err, EINVAL, "allocator: capacity must be > 0 and nodes >= 0");
    factor = req->overprovision == 0 ? HS_OVERPROVISION_DEFAULT : req->overprovision;
    if (!(factor >= 1) || !isfinite(factor))
        return hs_errprintf(err, EINVAL, "allocator: over-provisioning factor %g must be >= 1",
                            factor);
    if (plat->nbuffers <= 0 || !plat->buffers)
        return hs_errprintf(err, ENOSPC, "no buffer nodes");
    if (!(c = calloc((size_t)plat->nbuffers, sizeof(*c))))
        return hs_errprintf(err, ENOMEM, "out of memory");
    for (i = 0; i < plat->nbuffers; i++) {
        const hs_buffer_t *b = &plat->buffers[i];
        double r = reserved ? reserved[i] : 0;
        if (req->device && req->device[0] && strcmp(req->device, b->device))
            continue;
        c[nc].idx = i;
        c[nc].free = b->capacity - (r > 0 ? r : 0);
        nc++;
        if (b->capacity > cmax)
            cmax = b->capacity;
    }
    if (nc == 0) {
        free(c);
        return hs_errprintf(err, ENOSPC, "no buffer node of device type '%s'",
                            req->device ? req->device : "");
    }
    /* ceil(capacity / node capacity), with a tolerance for exact fits */
    {
        double q = req->capacity / cmax;
        double f = floor(q);
        need = (q - f <= HS_EPS_REL * fmax(q, 1.)) ? (int)fmax(f, 1.) : (int)fmin(f + 1., 1e9);
    }
    if (need < req->nodes)
        need = req->nodes;
    if (need > nc) {
        free(c);
        return hs_errprintf(err, ENOSPC,
                            "%.4g bytes need %d buffer node(s) but only "
                            "%d are eligible",
                            req->capacity, need, nc);
    }
    per = req->capacity / need;
    qsort(c, (size_t)nc, sizeof(*c), cmp_cand);
    if (c[need - 1].free < per * (1 - HS_EPS_REL)) {
        double fr = c[need - 1].free;
        free(c);
        return hs_errprintf(err, ENOSPC,
                            "%d buffer node(s) with %.4g bytes free "
                            "each are needed; the %d-th most free has %.4g",
                            need, per, need, fr);
    }
    want = (int)ceil(need * factor * (1 - HS_EPS_REL));
    if (want < need)
        want = need;
    for (i = need; i < nc && need + nspare < want; i++) {
        if (c[i].free >= per * (1 - HS_EPS_REL))
            c[need + nspare++] = c[i];
    }
    if (need + nspare > cap) {
        free(c);
        return hs_errprintf(err, ERANGE, "allocator: room for %d nodes, %d needed", cap,
                            need + nspare);
    }
    for (i = 0; i < need + nspare; i++)
        nodes[i] = c[i].idx;
    res->n = need + nspare;
    res->nbase = need;
    res->per_node = per;
    free(c);
    return 0;
}

/* vi: ts=4 sw=4 expandtab
 */
