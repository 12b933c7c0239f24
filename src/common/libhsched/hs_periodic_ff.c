/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_periodic_ff.c — the first fit of Insert-In-Schedule-Throu/-Cong (Gainaru et al.,
 * RR-8519 §3.2.3): where an instance of a job goes in a pattern being built
 * (hs_periodic.c builds the patterns; doc/periodic.md describes the algorithms).
 *
 * Pure code: no I/O, no clock, no global state.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hs_periodic_ff.h"
#include "hs_periodic_profile.h"
#include "policy.h" /* hs_grow() */

/* ------------------------------------------------------------------ first fit */

#define FF_WALK_SHORT 96 /* steps of a walk before ff_jump() is tried */
#define FF_JUMP_MARGIN \
    1e-6 /* relative: a distance summed along the walk vs the
                                same distance as a difference of instants */
#define FF_BM_COST \
    32 /* work units of one hs_pp_bm_below(): a block of 64
                                entries and a climb of the tree */

/* The rest of a walk of ff_gamma() from the start of segment idx, m the running
 * minimum and dist the distance travelled so far, 'budget' the steps it has left:
 * does it fail?  -1 yes (ff_gamma() returns -1), 0 maybe (let the walk go on),
 * -2 the budget refused a step (wk->truncated).
 * Rather than step through the segments, it jumps from one decrease of the running
 * minimum to the next (hs_pp_bm_below(): the next segment where avail_k < m): in
 * between, the walk's tests do not change but for "the transfer at m ends here",
 * which holds at the end of the stretch if anywhere; that is decided on the
 * distance to the next decrease with a margin for the rounding of the walk's sum,
 * and a doubtful case is left to the walk.  At a decrease, the same tests as the
 * walk's on the same values (no bandwidth, more than the room).  So a -1 is the
 * walk's own answer, in O(log S) per decrease instead of O(1) per segment. */
static int ff_jump(struct work *wk, const struct ctx *c, size_t k, size_t idx, double m,
                   double dist, double lmax, size_t budget)
{
    double vol = c->jobs[k].volume, need = vol / m, t0 = TL_T(wk, idx);
    size_t steps = 0;

    /* building the tree: a pass over the arrays */
    if (wk->bmstale && !wk_charge(wk, 1 + wk->capseg / WK_MOVE))
        return -2;
    if (hs_pp_bm_refresh(wk) < 0)
        return 0; /* no memory for the tree: the walk goes on */
    for (;;) {
        size_t nxt, n;
        double a, d;

        if (!wk_charge(wk, FF_BM_COST))
            return -2;
        nxt = hs_pp_bm_below(wk, c->B, idx, m);
        if (nxt < wk->nseg) {
            n = nxt - idx;
            d = dist + (TL_T(wk, nxt) - t0);
        } else { /* wrap: from segment 0 on, before idx */
            if (!wk_charge(wk, FF_BM_COST))
                return -2;
            if ((nxt = hs_pp_bm_below(wk, c->B, 0, m)) >= idx)
                return 0; /* round the circle */
            n = wk->nseg - idx + nxt;
            d = dist + (wk->T - t0) + TL_T(wk, nxt);
        }
        if ((steps += n + 1) >= budget)
            return 0; /* the walk's step limit: left to it */
        if (need <= d * (1 + FF_JUMP_MARGIN))
            return 0; /* may fit before nxt */
        if (!wk_charge(wk, 1))
            return -2;
        a = seg_avail(wk, c, k, nxt);
        if (a <= 0)
            return -1;
        m = a;
        need = vol / m;
        if (need > lmax + wk->teps)
            return -1;
        idx = nxt;
        dist = d;
        t0 = TL_T(wk, idx);
    }
}

/* Constant-bandwidth placement (Gainaru §3.2.3, "the first instant in the period
 * where vol_io^(k) can be executed contiguously with a constant bandwidth"): from x,
 * the largest constant gamma with
 *     gamma <= avail_k(t) for t in [x, x + vol_k / gamma[   and
 *     vol_k / gamma <= lmax                                  (the gap's room).
 * Walking segments with m = running min of avail_k, the first segment where the
 * transfer at rate m ends inside it gives gamma = m (a larger gamma would have ended
 * in an earlier segment).  A long walk of periodic-throu's fast construction
 * tries ff_jump() on the way.  Returns the duration vol_k / gamma, -1 if no fit (a
 * segment without bandwidth, or more than the room needed), -2 if the walk went
 * round the whole circle without deciding (which the room, shorter than T, does not
 * let happen; ff_skip() does not build on it), -3 if the budget refused a step. */
static double ff_gamma(struct work *wk, const struct ctx *c, size_t k, double x, double lmax,
                       double *gamma)
{
    double vol = c->jobs[k].volume;
    double m = INFINITY, dist = 0., cur = x;
    size_t idx = tl_find(wk, x);

    for (size_t steps = 0; steps <= wk->nseg; steps++) {
        double se = seg_end(wk, idx);
        double len = se - cur;
        double a = seg_avail(wk, c, k, idx);
        double need;

        if (!wk_charge(wk, 1))
            return -3;
        if (a <= 0)
            return -1;
        if (a < m)
            m = a;
        need = vol / m;
        if (need > lmax + wk->teps)
            return -1; /* m only decreases: no later end can fit */
        if (need <= dist + len) {
            *gamma = m;
            return need;
        }
        dist += len;
        if (dist >= lmax + wk->teps)
            return -1;
        cur = se;
        if (++idx == wk->nseg) {
            idx = 0;
            cur = 0.;
        }
        if (steps == FF_WALK_SHORT && wk->jump) {
            int jr = ff_jump(wk, c, k, idx, m, dist, lmax, wk->nseg - steps);
            if (jr == -2)
                return -3;
            if (jr < 0)
                return -1;
        }
    }
    return -2;
}

/* Order of the candidates: by xs, then by the owner's init_w (the order in which
 * the instances are stored). */
static bool cand_less(const struct cand *x, const struct cand *y)
{
    if (x->xs != y->xs)
        return x->xs < y->xs;
    return x->owner < y->owner;
}

/* The candidates of the gap after instance i of job k (0, 1, or 2 when the range
 * of I/O starts wraps past T): the I/O can start in [g0 + w_k, g0 + gap - time_io_k]
 * with g0 the end of the instance's I/O. */
static size_t cand_of(const struct work *wk, const struct ctx *c, size_t k, size_t i,
                      struct cand out[2])
{
    const struct wjob *j = &wk->job[k];
    double w = c->jobs[k].w, T = wk->T, tio = c->tio[k];
    double gap = hs_pp_inst_room(wk, j, i) - j->in[i].span;
    double g0 = j->in[i].io_end, xs, len, own = j->in[i].init_w;

    if (gap + wk->teps < w + tio)
        return 0; /* not even with the full bandwidth cap_k */
    xs = norm_t(g0 + w, T);
    len = gap - w - tio + wk->teps;
    if (len < 0)
        len = 0;
    if (xs + len < T) {
        out[0] = (struct cand){ xs, xs + len, g0, gap, own, true };
        return 1;
    }
    out[0] = (struct cand){ xs, T, g0, gap, own, true };
    out[1] = (struct cand){ 0., xs + len - T, g0, gap, own, false };
    return 2;
}

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    return (x->xs > y->xs) - (x->xs < y->xs);
}

/* First candidate not less than 'key' (binary search). */
static size_t cand_lower(const struct wjob *j, const struct cand *key)
{
    size_t lo = 0, hi = j->ncd;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cand_less(&j->cd[mid], key))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int cand_add(struct wjob *j, const struct cand *cd)
{
    size_t pos;

    if (hs_grow(&j->cd, &j->capcd, j->ncd + 1, sizeof(*j->cd)) < 0)
        return -1;
    pos = cand_lower(j, cd);
    memmove(j->cd + pos + 1, j->cd + pos, (j->ncd - pos) * sizeof(*j->cd));
    j->cd[pos] = *cd;
    j->ncd++;
    return 0;
}

static void cand_del(struct wjob *j, const struct cand *cd)
{
    size_t pos = cand_lower(j, cd);

    if (pos < j->ncd && j->cd[pos].xs == cd->xs && j->cd[pos].owner == cd->owner) {
        memmove(j->cd + pos, j->cd + pos + 1, (j->ncd - pos - 1) * sizeof(*j->cd));
        j->ncd--;
    }
}

/* Instance 'pos' of job k was just added: the gap of the instance before it (on the
 * circle) shrank to end at the new init_w, and the new instance has a gap of its
 * own.  'old' are the candidates the previous instance had before (nold of them). */
static int cand_update(struct work *wk, const struct ctx *c, size_t k, size_t pos,
                       const struct cand *old, size_t nold)
{
    struct wjob *j = &wk->job[k];
    struct cand nc[2];
    size_t m;

    for (size_t q = 0; q < nold; q++)
        cand_del(j, &old[q]);
    if (j->n > 1) {
        size_t prev = (pos + j->n - 1) % j->n;
        m = cand_of(wk, c, k, prev, nc);
        for (size_t q = 0; q < m; q++) {
            if (cand_add(j, &nc[q]) < 0)
                return -1;
        }
    }
    m = cand_of(wk, c, k, pos, nc);
    for (size_t q = 0; q < m; q++) {
        if (cand_add(j, &nc[q]) < 0)
            return -1;
    }
    return 0;
}

/* Try an I/O start at x with 'lmax' of room: on success, cut [x, x + dur[ at the
 * breakpoints (one piece per segment) and commit the instance.  Returns 1 if
 * inserted, 0 if it does not fit there, -1 (ENOMEM).  *nofit tells whether a 0
 * came from the room check or from a walk that stopped on a segment (what
 * ff_skip() builds on), not from the degenerate cases (an empty I/O, a walk round
 * the circle). */
static int ff_try(struct work *wk, const struct ctx *c, size_t k, double x, double lmax,
                  bool *nofit)
{
    double w = c->jobs[k].w, gamma, dur, cur, left, init_w;
    struct wjob *j = &wk->job[k];
    struct cand old[2];
    size_t idx, pos, nold = 0;
    int rc;

    *nofit = true;
    if (lmax + wk->teps < c->tio[k])
        return 0;
    if ((dur = ff_gamma(wk, c, k, x, lmax, &gamma)) < 0) {
        *nofit = dur == -1;
        return 0;
    }
    *nofit = false;
    wk->ntmp = 0;
    cur = x;
    idx = tl_find(wk, cur);
    left = dur;
    while (left > 0) {
        double se = seg_end(wk, idx);
        double end = (se - cur >= left) ? fmin(cur + left, se) : se;
        if (hs_pp_tmp_push(wk, cur, end, gamma) < 0)
            return -1;
        left -= se - cur;
        cur = se;
        if (++idx == wk->nseg) {
            idx = 0;
            cur = 0.;
        }
    }
    if (wk->ntmp == 0)
        return 0;
    init_w = norm_t(x - w, wk->T);
    if (j->n > 0 && !wk->reference) { /* the gap the new instance goes into */
        size_t ip = hs_pp_inst_upper(j, init_w);
        nold = cand_of(wk, c, k, (ip + j->n - 1) % j->n, old);
    }
    /* cand_update(): up to 2 removals and 4 insertions in the sorted candidates,
     * each a memmove of up to all of them (6 words each): the most expensive loop
     * of periodic-throu's and periodic-cong's decisions on the fuzzer's dense
     * patterns, where a job has 10^4 to 10^5 instances */
    if (!wk->reference && !wk_charge(wk, 1 + 36 * (uint64_t)j->ncd / WK_MOVE))
        return 0;
    if ((rc = hs_pp_commit_instance(wk, k, init_w, w + dur, !wk->reference, &pos)) != 0)
        return rc < 0 ? -1 : 0;
    if (!wk->reference && cand_update(wk, c, k, pos, old, nold) < 0)
        return -1;
    return 1;
}

/* The last start tried (or skipped) in a gap, when it does not fit: the bandwidth
 * job k may get on the segment it starts in, and its room. */
struct ffprev {
    bool nofit; /* it does not fit (ff_try()'s *nofit, or skipped) */
    double a, lmax;
};

/* Can the start at the breakpoint after the previous start's segment be skipped
 * without a walk?  Yes if the previous start does not fit, the new segment offers
 * job k no more bandwidth (a <= prev->a) and the new start no more room
 * (lmax <= prev->lmax): then the new start does not fit either.  Proof: from x'
 * (the breakpoint) the walk sees the segments the walk from x saw after x's
 * segment, with the same running minima (x's segment, a_x >= a_x', does not lower
 * them) and a distance travelled no longer (the same lengths added to 0 instead of
 * to x' - x, and rounding to nearest is monotonic).  So were x' to fit at some
 * segment, the walk from x would have got there without meeting a segment without
 * bandwidth or a minimum needing more than its room (it had at least x' 's room),
 * and would have fitted there too.  Likewise when x stopped on a segment, x' stops
 * on it or before.  A skipped start is thus one that does not fit, and the rule
 * chains along a gap: only the starts where avail_k rises (or the room grows) are
 * walked.  The fast construction only (the plain one walks every start); the
 * patterns are the same (test_periodic_fast).  Updates prev to the new start. */
static bool ff_skip(struct ffprev *prev, double a, double lmax)
{
    bool skip = prev->nofit && a <= prev->a && lmax <= prev->lmax;

    prev->a = a;
    prev->lmax = lmax;
    return skip;
}

/* Insert-In-Schedule (Gainaru §3.2.3): add one instance of job k at the first instant
 * x of [0, T[ where its I/O fits with a constant bandwidth, its compute chunk
 * [x - w_k, x[ lying in free time of job k.  In a gap [g0, g0 + gap[ of job k (after
 * an instance's I/O, before the next compute; the whole circle when n_per(k) = 0),
 * the I/O can start in [g0 + w_k, g0 + gap - time_io_k], with room
 * lmax = gap - (x - g0).  The earliest feasible instant is g0 + w_k or a breakpoint
 * of the profile (moving x earlier inside a segment keeps the same gamma feasible),
 * so those are tried in increasing x; the first that fits wins (ff_skip() tells,
 * in the fast construction, which of them need not be tried).
 * Returns 1 (inserted), 0 (no room), -1 (ENOMEM). */
int hs_pp_ff_insert(struct work *wk, const struct ctx *c, size_t k)
{
    struct wjob *j = &wk->job[k];
    double w = c->jobs[k].w, T = wk->T, from = wk->reference ? 0. : j->xmin;
    const struct cand *cds = j->cd;
    size_t ncd = j->ncd, r0 = 0;
    struct ffprev prev = { false, 0., 0. };
    int rc;

    if (j->n == 0) {
        /* alone in its cycle: the I/O must end before x - w + T */
        prev.nofit = false;
        for (size_t i = 0; i < wk->nseg; i++) {
            if (!wk_charge(wk, 1))
                return 0;
            if (!wk->reference && ff_skip(&prev, seg_avail(wk, c, k, i), T - w))
                continue;
            if ((rc = ff_try(wk, c, k, TL_T(wk, i), T - w, &prev.nofit)) != 0) {
                j->xmin = TL_T(wk, i);
                return rc;
            }
        }
        return 0;
    }
    if (wk->reference) {
        /* every gap of the job, rebuilt and sorted: O(n_per(k) log n_per(k)) */
        if (hs_grow(&wk->rcand, &wk->caprcand, 2 * j->n, sizeof(*wk->rcand)) < 0)
            return -1;
        if (!wk_charge(wk, 2 * (uint64_t)j->n + wk_sortcost(2 * j->n)))
            return 0;
        for (size_t i = 0; i < j->n; i++)
            ncd += cand_of(wk, c, k, i, wk->rcand + ncd);
        qsort(wk->rcand, ncd, sizeof(*wk->rcand), cand_cmp);
        cds = wk->rcand;
    } else if (from > 0.) {
        /* the starts below xmin were tried at an earlier insertion of this job and
         * did not fit; the profile only fills up and the gaps only shrink since, so
         * they still do not (a start that fits now would have fitted then, and so
         * would the breakpoint or gap start before it in its segment, which was
         * tried): the first fit resumes at xmin.  The gaps of a job are disjoint,
         * so their ranges are sorted by xe too. */
        size_t lo = 0, hi = ncd;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cds[mid].xe < from)
                lo = mid + 1;
            else
                hi = mid;
        }
        r0 = lo;
    }
    for (size_t r = r0; r < ncd; r++) {
        const struct cand cd = cds[r];
        size_t idx;
        double x0 = cd.xs > from ? cd.xs : from;

        if (!wk_charge(wk, 1))
            return 0;
        prev.nofit = false;
        if (cd.first && cd.xs >= from) {
            if ((rc = ff_try(wk, c, k, cd.xs, cd.gap - w, &prev.nofit)) != 0) {
                j->xmin = cd.xs;
                return rc;
            }
            if (wk->truncated)
                return 0;
            prev.a = seg_avail(wk, c, k, tl_find(wk, cd.xs));
            prev.lmax = cd.gap - w;
        }
        /* the breakpoints after x0: the first is in the segment after cd.xs's */
        idx = tl_find(wk, x0);
        if (TL_T(wk, idx) < x0 || (cd.first && TL_T(wk, idx) == cd.xs))
            idx++;
        for (; idx < wk->nseg && TL_T(wk, idx) <= cd.xe; idx++) {
            double x = TL_T(wk, idx), lmax = cd.gap - dist_t(cd.g0, x, T);
            if (!wk_charge(wk, 1))
                return 0;
            if (!wk->reference && ff_skip(&prev, seg_avail(wk, c, k, idx), lmax))
                continue;
            wk->hint = idx; /* where tl_find() finds x */
            if ((rc = ff_try(wk, c, k, x, lmax, &prev.nofit)) != 0) {
                if (rc > 0)
                    j->xmin = x;
                return rc;
            }
            if (wk->truncated)
                return 0;
        }
    }
    return 0;
}

/* vi: ts=4 sw=4 expandtab
 */
