/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_periodic_model.c — the helpers of the periodic construction's model that every
 * file of it uses (hs_periodic_model.h): the scratch pieces, an instance's room, where
 * a new instance goes.  Calls nothing above it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hs_periodic_model.h"
#include "policy.h" /* hs_grow() */

int hs_pp_tmp_push(struct work *wk, double a, double b, double bw)
{
    if (b <= a)
        return 0;
    if (hs_grow(&wk->tmp, &wk->captmp, wk->ntmp + 1, sizeof(*wk->tmp)) < 0)
        return -1;
    wk->tmp[wk->ntmp++] = (struct piece){ a, b, bw };
    return 0;
}

/* Distance from instance i's init_w to the next instance's init_w (T when alone):
 * the instance owns [init_w, init_w + D[ (Gainaru §3.2.1: [initW_i, initW_{i+1}[). */
double hs_pp_inst_room(const struct work *wk, const struct wjob *j, size_t i)
{
    double d;

    if (j->n == 1)
        return wk->T;
    d = dist_t(j->in[i].init_w, j->in[(i + 1) % j->n].init_w, wk->T);
    return d > 0 ? d : wk->T;
}

/* Index of the first instance of j whose init_w is above 'init_w' (j->n if none):
 * where a new instance starting its compute at init_w goes, after those with an
 * equal init_w.  Binary search, O(log n_per(k)). */
size_t hs_pp_inst_upper(const struct wjob *j, double init_w)
{
    size_t lo = 0, hi = j->n;

    /* PerSched and the first fit append in time order most of the time */
    if (hi == 0 || j->in[hi - 1].init_w <= init_w)
        return hi;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (j->in[mid].init_w <= init_w)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
