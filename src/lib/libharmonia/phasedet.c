/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * phasedet.c — online detection of I/O phases (see phasedet.h).
 */
#include <math.h>
#include <string.h>

#include "phasedet.h"

void hm_pd_params_default(hm_pd_params_t *p)
{
    memset(p, 0, sizeof(*p));
    p->gap_init = 0.25;
    p->gap_min = 0.1;
    p->gap_max = 1.0;
    p->gap_frac = 0.25;
    p->sync_gap = 0.1;
}

void hm_pd_init(hm_pd_t *pd, const hm_pd_params_t *p)
{
    memset(pd, 0, sizeof(*pd));
    if (p)
        pd->p = *p;
    else
        hm_pd_params_default(&pd->p);
    if (pd->p.gap_min <= 0)
        pd->p.gap_min = 0.01;
    if (pd->p.gap_max < pd->p.gap_min)
        pd->p.gap_max = pd->p.gap_min;
    if (pd->p.gap_init <= 0)
        pd->p.gap_init = pd->p.gap_min;
    if (pd->p.gap_frac <= 0)
        pd->p.gap_frac = 0.25;
    if (!(pd->p.sync_gap > 0))
        pd->p.sync_gap = 0.1;
    pd->h.magic = HM_PD_MAGIC;
    pd->h.size = sizeof(pd->h);
    pd->gap = hm_pd_gap(pd);
}

/* The gap in force: at most sync_gap once the open phase's data is synced. */
static void gap_update(hm_pd_t *pd)
{
    double g = hm_pd_gap(pd);
    pd->gap = pd->synced && g > pd->p.sync_gap ? pd->p.sync_gap : g;
}

void hm_pd_set_hints(hm_pd_t *pd, double w_iter, double volume)
{
    pd->p.hint_w_iter = w_iter > 0 ? w_iter : 0;
    pd->p.hint_volume = volume > 0 ? volume : 0;
    gap_update(pd);
}

void hm_pd_set_hist(hm_pd_t *pd, const hm_pd_hist_t *h)
{
    pd->h = *h;
    gap_update(pd);
}

int hm_pd_hist_valid(const hm_pd_hist_t *h)
{
    if (h->magic != HM_PD_MAGIC || h->size != sizeof(*h))
        return 0;
    if (h->ninterval > 1u << 30 || h->nidle > 1u << 30 || h->nvolume > 1u << 30)
        return 0;
    for (int i = 0; i < HM_PD_NHIST; i++)
        if (!(h->interval[i] >= 0) || !(h->idle[i] >= 0) || !(h->volume[i] >= 0))
            return 0; /* negative or NaN */
    return h->pause >= 0 && h->last.bytes >= 0;
}

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The median of the last min(n, HM_PD_NHIST) values of a ring (n > 0). */
static double median(const double *ring, uint32_t n)
{
    double v[HM_PD_NHIST];
    int k = n < HM_PD_NHIST ? (int)n : HM_PD_NHIST;
    for (int i = 0; i < k; i++) { /* insertion sort, 16 values at most */
        double x = ring[i];
        int j = i;
        while (j > 0 && v[j - 1] > x) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = x;
    }
    return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

static double mean(const double *ring, uint32_t n)
{
    int k = n < HM_PD_NHIST ? (int)n : HM_PD_NHIST;
    double s = 0;
    for (int i = 0; i < k; i++)
        s += ring[i];
    return s / k;
}

static void push(double *ring, uint32_t *n, double v)
{
    ring[*n % HM_PD_NHIST] = v;
    (*n)++;
}

/* The smallest of the last min(n, HM_PD_NHIST) values of a ring (n > 0). */
static double least(const double *ring, uint32_t n)
{
    int k = n < HM_PD_NHIST ? (int)n : HM_PD_NHIST;
    double m = ring[0];
    for (int i = 1; i < k; i++)
        if (ring[i] < m)
            m = ring[i];
    return m;
}

double hm_pd_gap(const hm_pd_t *pd)
{
    const hm_pd_params_t *p = &pd->p;
    double gap, shortest;

    if (pd->h.nidle > 0) {
        /* a fraction of the typical idle time, and half the shortest recent one */
        shortest = least(pd->h.idle, pd->h.nidle);
        gap = p->gap_frac * median(pd->h.idle, pd->h.nidle);
        if (gap > shortest / 2)
            gap = shortest / 2;
    } else if (p->hint_w_iter > 0) {
        shortest = p->hint_w_iter / 2; /* no phase length known yet */
        gap = p->gap_frac * shortest;
    } else {
        shortest = INFINITY;
        gap = p->gap_init;
    }
    /* longer than the pauses seen inside phases, while inside the idle time */
    if (gap < 2 * pd->h.pause)
        gap = 2 * pd->h.pause < shortest / 2 ? 2 * pd->h.pause : shortest / 2;
    return clamp(gap, p->gap_min, p->gap_max);
}

void hm_pd_record(hm_pd_hist_t *h, const hm_pd_phase_t *ph, double gap)
{
    if (h->nphases > 0 && ph->start < h->last.end + gap && ph->end > h->last.start - gap) {
        /* the same phase, seen by another process */
        if (ph->start < h->last.start) {
            if (h->ninterval > 0)
                h->interval[(h->ninterval - 1) % HM_PD_NHIST] += h->last.start - ph->start;
            h->last.start = ph->start;
        }
        if (ph->end > h->last.end)
            h->last.end = ph->end;
        if (ph->pause > h->last.pause)
            h->last.pause = ph->pause;
        if (ph->pause > h->pause)
            h->pause = ph->pause; /* a pause inside the phase (a rejoined one's wait) */
        h->last.bytes += ph->bytes;
        if (h->nvolume > 0)
            h->volume[(h->nvolume - 1) % HM_PD_NHIST] = h->last.bytes;
        return;
    }
    if (h->nphases == 0)
        h->first_start = ph->start;
    else if (ph->start > h->last.start) {
        push(h->interval, &h->ninterval, ph->start - h->last.start);
        if (ph->start > h->last.end)
            push(h->idle, &h->nidle, ph->start - h->last.end);
    }
    push(h->volume, &h->nvolume, ph->bytes);
    /* the pause inside phases: the largest of the recent ones, decaying */
    h->pause = ph->pause > h->pause * 0.75 ? ph->pause : h->pause * 0.75;
    h->last = *ph;
    h->nphases++;
}

static void close_phase(hm_pd_t *pd, hm_pd_phase_t *closed)
{
    pd->cur.end = pd->last_end > pd->cur.start ? pd->last_end : pd->cur.start;
    pd->synced = 0;
    /* the views of other processes merge within the gap, not a synced one */
    hm_pd_record(&pd->h, &pd->cur, hm_pd_gap(pd));
    pd->gap = hm_pd_gap(pd);
    if (closed)
        *closed = pd->cur;
    pd->open = 0;
}

int hm_pd_start(hm_pd_t *pd, double t, int inflight, hm_pd_phase_t *closed)
{
    int flags = 0;
    if (pd->open && inflight <= 0 && t - pd->last_end >= pd->gap) {
        close_phase(pd, closed);
        flags |= HM_PD_ENDED;
    }
    if (!pd->open) {
        pd->open = 1;
        pd->cur = (hm_pd_phase_t){ .start = t, .end = t };
        pd->last_end = t;
        return flags | HM_PD_BEGIN;
    }
    if (t - pd->last_end > pd->cur.pause)
        pd->cur.pause = t - pd->last_end;
    return flags;
}

void hm_pd_done(hm_pd_t *pd, double t, double bytes)
{
    if (!pd->open)
        return;
    if (t > pd->last_end)
        pd->last_end = t;
    if (bytes > 0) {
        pd->cur.bytes += bytes;
        if (pd->synced) {
            pd->synced = 0; /* the phase goes on after its sync */
            gap_update(pd);
        }
    }
}

void hm_pd_sync(hm_pd_t *pd, double t)
{
    if (!pd->open)
        return;
    if (t > pd->last_end)
        pd->last_end = t;
    /* a sync before half the bytes of a phase (or in the first phase, when
     * nothing says how many to expect) is one inside a phase: it goes on */
    if (pd->h.nvolume == 0 || pd->cur.bytes < 0.5 * mean(pd->h.volume, pd->h.nvolume))
        return;
    pd->synced = 1;
    gap_update(pd);
}

int hm_pd_poll(hm_pd_t *pd, double now, int inflight, hm_pd_phase_t *closed)
{
    if (!pd->open || inflight > 0 || now - pd->last_end < pd->gap)
        return 0;
    close_phase(pd, closed);
    return 1;
}

int hm_pd_flush(hm_pd_t *pd, hm_pd_phase_t *closed)
{
    if (!pd->open)
        return 0;
    close_phase(pd, closed);
    return 1;
}

double hm_pd_rejoin_idle(const hm_pd_t *pd)
{
    if (pd->h.nidle > 0)
        return 0.5 * median(pd->h.idle, pd->h.nidle);
    return 4 * pd->gap;
}

int hm_pd_may_rejoin(const hm_pd_t *pd)
{
    if (!pd->open || pd->h.nphases == 0)
        return 0;
    double idle = pd->cur.start - pd->h.last.end;
    return idle >= 0 && idle < hm_pd_rejoin_idle(pd);
}

void hm_pd_rejoin(hm_pd_t *pd)
{
    if (!pd->open || pd->h.nphases == 0)
        return;
    double idle = pd->cur.start - pd->h.last.end;
    /* the open phase is the last one's continuation: recorded, it merges into it
     * (its bytes are the new ones only), and its idle time is a pause inside it */
    if (pd->h.last.start < pd->cur.start)
        pd->cur.start = pd->h.last.start;
    if (idle > pd->cur.pause)
        pd->cur.pause = idle;
}

double hm_pd_w_iter(const hm_pd_t *pd)
{
    if (pd->h.ninterval > 0)
        return mean(pd->h.interval, pd->h.ninterval);
    return pd->p.hint_w_iter;
}

double hm_pd_volume(const hm_pd_t *pd)
{
    if (pd->h.nvolume > 0)
        return mean(pd->h.volume, pd->h.nvolume);
    return pd->p.hint_volume;
}

int hm_pd_periodic(const hm_pd_t *pd)
{
    const hm_pd_hist_t *h = &pd->h;
    if (h->ninterval < 2)
        return 0;
    int k = h->ninterval < HM_PD_NHIST ? (int)h->ninterval : HM_PD_NHIST;
    double m = mean(h->interval, h->ninterval), v = 0;
    for (int i = 0; i < k; i++)
        v += (h->interval[i] - m) * (h->interval[i] - m);
    v /= k;
    return m > 0 && v < 0.25 * m * m;
}
