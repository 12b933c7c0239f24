/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_periodic_profile.c — the bandwidth profile of a periodic pattern being built
 * (hs_periodic.c builds the patterns; doc/periodic.md §4 and §5): its changes
 * (splits, joins and grants, in a gap buffer) and the block maxima that the first
 * fit's long walks jump along (hs_periodic_ff.c), and the commit of an instance.
 * The structures and the profile's accessors are in hs_periodic_model.h.
 *
 * Pure code: no I/O, no clock, no global state.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hs_periodic_profile.h"
#include "policy.h" /* hs_grow() */

/* ------------------------------------------------------------------ block maxima */

/* The tree of block maxima (hs_periodic_model.h, struct work): a leaf is a bound
 * at or above every used[] its block of 1 << BM_SHIFT entries of the arrays holds
 * (the hole left out), an inner node the larger of its children.  The profile's
 * changes keep the bounds without reading the blocks: an entry raised or added
 * raises its leaf, an entry leaving a block (into the hole) leaves its bound
 * valid, and the entries a move of the hole carries give the blocks they land in
 * the bounds of the blocks they left (bm_moved()).  hs_pp_bm_below() lowers a
 * bound to the block's exact maximum when it reads the whole block for nothing.
 * Nothing is kept while the tree is to be rebuilt anyway (PerSched, the plain
 * construction and the first fit's short walks never ask for it). */

static inline double bm_max(double a, double b)
{
    return a > b ? a : b; /* no NaN here; fmax() is a call */
}

/* Leaf b now bounds its block with v (maybe lower than before): its ancestors
 * follow, up to the first one that stays the same. */
static void bm_set(struct work *wk, size_t b, double v)
{
    size_t n = wk->bmleaves + b;

    if (wk->bm[n] == v)
        return;
    wk->bm[n] = v;
    for (n >>= 1; n >= 1; n >>= 1) {
        v = bm_max(wk->bm[2 * n], wk->bm[2 * n + 1]);
        if (v == wk->bm[n])
            break;
        wk->bm[n] = v;
    }
}

/* An entry of the arrays at p now holds v (added or raised). */
static void bm_raise(struct work *wk, size_t p, double v)
{
    if (wk->bmstale)
        return;
    for (size_t n = wk->bmleaves + (p >> BM_SHIFT); n >= 1 && wk->bm[n] < v; n >>= 1)
        wk->bm[n] = v;
}

/* The leaves [b0, b1] changed: their ancestors follow, level by level, up to a
 * level where none changes. */
static void bm_fix(struct work *wk, size_t b0, size_t b1)
{
    size_t n0 = wk->bmleaves + b0, n1 = wk->bmleaves + b1;
    bool changed = true;

    while (changed && n0 > 1) {
        changed = false;
        n0 >>= 1;
        n1 >>= 1;
        for (size_t n = n0; n <= n1; n++) {
            double v = bm_max(wk->bm[2 * n], wk->bm[2 * n + 1]);
            if (v != wk->bm[n]) {
                wk->bm[n] = v;
                changed = true;
            }
        }
    }
}

/* Leaf of block b for the entries now at [p, e[ of the arrays (inside the block),
 * which were at [p + off, e + off[ before the move (off = +-gaplen): the bounds of
 * the blocks they came from bound them.  The block gets that bound if the move
 * filled it whole, else it is raised to it.  Returns whether the leaf changed. */
static bool bm_carry(struct work *wk, size_t b, size_t p, size_t e, ptrdiff_t off)
{
    const size_t B1 = (size_t)1 << BM_SHIFT;
    double *leaf = wk->bm + wk->bmleaves;
    size_t s0 = (size_t)((ptrdiff_t)p + off) >> BM_SHIFT;
    size_t s1 = (size_t)((ptrdiff_t)e - 1 + off) >> BM_SHIFT;
    double v = leaf[s0];

    if (s1 != s0)
        v = bm_max(v, leaf[s1]);
    if (!(p == b << BM_SHIFT && e == (b << BM_SHIFT) + B1))
        v = bm_max(leaf[b], v);
    if (v == leaf[b])
        return false;
    leaf[b] = v;
    return true;
}

/* The hole moved: the entries now at [d0, d1[ of the arrays came from
 * [d0 + off, d1 + off[, off = +-gaplen, which the hole now covers but for
 * [d0, d1[.  The blocks they land in get the bounds of the blocks they left
 * (bm_carry(), in the order that reads a block's bound before it is replaced, as
 * memmove() does), without reading them; the blocks the move emptied whole get
 * -inf.  A bound left too high costs hs_pp_bm_below() one read of its block,
 * after which it is exact until entries move in again. */
static void bm_moved(struct work *wk, size_t d0, size_t d1, ptrdiff_t off)
{
    const size_t B1 = (size_t)1 << BM_SHIFT;
    size_t s0 = (size_t)((ptrdiff_t)d0 + off), s1 = (size_t)((ptrdiff_t)d1 + off);
    size_t b0 = d0 >> BM_SHIFT, b1 = (d1 - 1) >> BM_SHIFT;
    bool changed = false;

    if (wk->bmstale)
        return;
    if (off > 0) { /* to lower positions: blocks in increasing order */
        for (size_t b = b0; b <= b1; b++) {
            size_t p = b << BM_SHIFT, e = p + B1;
            changed |= bm_carry(wk, b, p < d0 ? d0 : p, e > d1 ? d1 : e, off);
        }
    } else {
        for (size_t b = b1 + 1; b-- > b0;) {
            size_t p = b << BM_SHIFT, e = p + B1;
            changed |= bm_carry(wk, b, p < d0 ? d0 : p, e > d1 ? d1 : e, off);
        }
    }
    if (changed)
        bm_fix(wk, b0, b1);
    /* what the move emptied, [s0, s1[ less [d0, d1[ (in the hole now): the
     * blocks it holds whole */
    if (s0 < d1 && s1 > d0)
        off > 0 ? (s0 = d1) : (s1 = d0);
    b0 = (s0 + B1 - 1) >> BM_SHIFT;
    b1 = s1 >> BM_SHIFT;
    if (b0 < b1) {
        for (size_t b = b0; b < b1; b++)
            wk->bm[wk->bmleaves + b] = -INFINITY;
        bm_fix(wk, b0, b1 - 1);
    }
}

/* Largest used[] of block b, the hole left out (-inf if none). */
static double bm_block(const struct work *wk, size_t b)
{
    size_t p0 = b << BM_SHIFT, p1 = p0 + ((size_t)1 << BM_SHIFT);
    size_t h0 = wk->gap, h1 = wk->gap + wk->gaplen;
    double mx = -INFINITY;

    if (p1 > wk->capseg)
        p1 = wk->capseg;
    for (size_t p = p0; p < p1; p++) {
        if (p >= h0 && p < h1) {
            p = h1 - 1;
            continue;
        }
        mx = bm_max(mx, wk->used[p]);
    }
    return mx;
}

/* Build the tree if there is none or the arrays were reallocated or reset (the
 * changes since keep it valid otherwise).  Returns -1 (ENOMEM). */
int hs_pp_bm_refresh(struct work *wk)
{
    size_t nb = (wk->capseg + ((size_t)1 << BM_SHIFT) - 1) >> BM_SHIFT, L = 1;

    if (!wk->bmstale)
        return 0;
    while (L < nb)
        L *= 2;
    if (L != wk->bmleaves) {
        double *bm = realloc(wk->bm, 2 * L * sizeof(*bm));

        if (!bm)
            return -1;
        wk->bm = bm;
        wk->bmleaves = L;
    }
    for (size_t b = 0; b < L; b++)
        wk->bm[L + b] = b < nb ? bm_block(wk, b) : -INFINITY;
    for (size_t n = L - 1; n >= 1; n--)
        wk->bm[n] = bm_max(wk->bm[2 * n], wk->bm[2 * n + 1]);
    wk->bmstale = false;
    return 0;
}

/* First segment i >= s (no wrap) where B - used[i] < m, nseg if none; the tree must
 * be built (hs_pp_bm_refresh()).  For 0 < m <= cap_k, with m above B * AVAIL_EPS,
 * these are the segments where avail_k < m (seg_avail()); B - u does not increase
 * with u, so a block holds none if B minus its bound is >= m.  A block read whole
 * without finding one gets its exact maximum as its bound (a bound above it sent
 * the search there for nothing). */
size_t hs_pp_bm_below(struct work *wk, double B, size_t s, double m)
{
    size_t p, pend, n, L = wk->bmleaves, h0 = wk->gap, h1 = wk->gap + wk->gaplen;

    if (s >= wk->nseg)
        return wk->nseg;
    p = tl_at(wk, s);
    for (;;) {
        size_t blk = p >> BM_SHIFT;
        bool whole = p == blk << BM_SHIFT;
        double mx = -INFINITY;

        pend = (blk + 1) << BM_SHIFT;
        if (pend > wk->capseg)
            pend = wk->capseg;
        for (; p < pend; p++) {
            if (p >= h0 && p < h1) {
                p = h1 - 1;
                continue;
            }
            if (B - wk->used[p] < m)
                return p < h0 ? p : p - wk->gaplen;
            mx = bm_max(mx, wk->used[p]);
        }
        if (whole)
            bm_set(wk, blk, mx);
        /* the next block holding one: right of this one in the tree */
        n = L + blk;
        do {
            while (n & 1)
                n >>= 1;
            if (n == 0)
                return wk->nseg;
            n++;
        } while (!(B - wk->bm[n] < m));
        while (n < L)
            n = B - wk->bm[2 * n] < m ? 2 * n : 2 * n + 1;
        p = (n - L) << BM_SHIFT;
    }
}

/* ------------------------------------------------------------------ profile */

/* Move the hole to segment position 'pos' (0 <= pos <= nseg). */
static void tl_move_gap(struct work *wk, size_t pos)
{
    size_t g = wk->gap, gl = wk->gaplen;

    wk->moved += pos < g ? g - pos : pos - g;
    if (pos < g) {
        memmove(wk->t + pos + gl, wk->t + pos, (g - pos) * sizeof(double));
        memmove(wk->used + pos + gl, wk->used + pos, (g - pos) * sizeof(double));
        wk->gap = pos;
        bm_moved(wk, pos + gl, g + gl, -(ptrdiff_t)gl);
    } else if (pos > g) {
        memmove(wk->t + g, wk->t + g + gl, (pos - g) * sizeof(double));
        memmove(wk->used + g, wk->used + g + gl, (pos - g) * sizeof(double));
        wk->gap = pos;
        bm_moved(wk, g, pos, (ptrdiff_t)gl);
    }
}

/* Room for one more segment: the capacity doubles, the entries after the hole go to
 * the end of the new arrays. */
static int tl_room(struct work *wk)
{
    size_t cap = wk->capseg, ncap = cap ? 2 * cap : 64, tail;
    double *t, *u;

    if (wk->gaplen > 0)
        return 0;
    if (!(t = realloc(wk->t, ncap * sizeof(double))))
        return -1;
    wk->t = t;
    if (!(u = realloc(wk->used, ncap * sizeof(double))))
        return -1;
    wk->used = u;
    tail = wk->nseg - wk->gap;
    wk->moved += wk->nseg; /* realloc() may copy the arrays */
    memmove(t + ncap - tail, t + wk->gap, tail * sizeof(double));
    memmove(u + ncap - tail, u + wk->gap, tail * sizeof(double));
    wk->capseg = ncap;
    wk->gaplen = ncap - wk->nseg;
    wk->bmstale = true;
    return 0;
}

/* Make x (in [0, T[) a breakpoint; *idx receives the segment starting at x. */
static int tl_split(struct work *wk, double x, size_t *idx)
{
    size_t i = tl_find(wk, x);
    double u;

    if (TL_T(wk, i) == x) {
        *idx = i;
        return 0;
    }
    if (tl_room(wk) < 0)
        return -1;
    u = TL_U(wk, i);
    tl_move_gap(wk, i + 1);
    wk->t[wk->gap] = x;
    wk->used[wk->gap] = u;
    bm_raise(wk, wk->gap, u);
    wk->gap++;
    wk->gaplen--;
    wk->nseg++;
    *idx = i + 1;
    return 0;
}

/* Remove breakpoint i > 0 (its segment joins the previous one). */
static void tl_join(struct work *wk, size_t i)
{
    tl_move_gap(wk, i);
    wk->gaplen++;
    wk->nseg--;
}

/* Grant bw on [a, b[, a piece inside one segment: used[s] += bw.  Neighbours left
 * with exactly the same total are joined (the pieces keep their own bounds), which
 * keeps the profile short where the I/O system is saturated. */
static int tl_add(struct work *wk, const struct piece *p)
{
    size_t ia, ib;

    if (tl_split(wk, p->a, &ia) < 0)
        return -1;
    if (p->b < wk->T && p->b < seg_end(wk, ia)) {
        if (tl_split(wk, p->b, &ib) < 0)
            return -1;
    }
    TL_U(wk, ia) += p->bw;
    bm_raise(wk, tl_at(wk, ia), TL_U(wk, ia));
    if (ia + 1 < wk->nseg && TL_U(wk, ia + 1) == TL_U(wk, ia))
        tl_join(wk, ia + 1);
    if (ia > 0 && TL_U(wk, ia - 1) == TL_U(wk, ia))
        tl_join(wk, ia);
    return 0;
}

/* The pieces p[0..n-1] of an instance of the first fit, which follow one another
 * along the profile (one per segment, from a start inside the first to an end
 * inside the last, round T to 0 at most once): what tl_add() on each in turn does,
 * in one pass.  The two splits first; then each segment gets its piece's bw (the
 * same sum: tl_add() on a piece whose segment was just joined to the previous one
 * splits it again with that segment's total, equal to its own); then the same
 * neighbours are compared and joined, from the highest index down so that the
 * indices still to visit do not move.  Returns 1 done, 0 not such a run (nothing
 * granted: tl_add() on each does the rest), -1 ENOMEM. */
static int tl_add_run(struct work *wk, const struct piece *p, size_t n)
{
    size_t s0, s, wrap = n, q, e, ns;

    if (tl_split(wk, p[0].a, &s0) < 0)
        return -1;
    ns = wk->nseg;
    if (p[n - 1].b < wk->T && tl_split(wk, p[n - 1].b, &s) < 0)
        return -1;
    if (wk->nseg > ns && s <= s0)
        s0++; /* the end, after a wrap, split a segment before */
    for (q = 0, s = s0; q < n; q++, s++) {
        if (s == wk->nseg) {
            if (wrap < n)
                return 0;
            wrap = q;
            s = 0;
        }
        if (TL_T(wk, s) != p[q].a || seg_end(wk, s) != p[q].b)
            return 0;
    }
    for (q = 0, s = s0; q < n; q++, s++) {
        size_t at;

        if (q == wrap)
            s = 0;
        at = tl_at(wk, s);
        wk->used[at] += p[q].bw;
        bm_raise(wk, at, wk->used[at]);
    }
    /* the pairs (i - 1, i) from the one after the last piece down to the one
     * before the first, the part after the wrap (the lower indices) last */
    e = s0 + wrap;
    for (s = e < wk->nseg ? e : wk->nseg - 1; s >= s0 && s > 0; s--) {
        if (TL_U(wk, s - 1) == TL_U(wk, s))
            tl_join(wk, s);
    }
    if (wrap < n) {
        e = n - wrap;
        for (s = e < wk->nseg ? e : wk->nseg - 1; s > 0; s--) {
            if (TL_U(wk, s - 1) == TL_U(wk, s))
                tl_join(wk, s);
        }
    }
    return 1;
}

/* ------------------------------------------------------------------ instances */

/* Commit the pieces of wk->tmp (time order) as a new instance of job k starting its
 * compute at init_w, whose I/O ends 'span' after init_w; 'run': they follow one
 * another along the profile (tl_add_run()).  Its index goes to *index; returns 0,
 * 1 when the budget cannot pay for it (nothing changed, wk->truncated), -1 ENOMEM. */
int hs_pp_commit_instance(struct work *wk, size_t k, double init_w, double span, bool run,
                          size_t *index)
{
    struct wjob *j = &wk->job[k];
    size_t pos;
    int rc = 0;
    /* what the commit may cost, known before it starts: the pieces go in in
     * time order (one turn of the circle at most), so the hole of the profile
     * travels at most about twice round it and once more per piece; the
     * instances of the job after the new one shift; the export of the pattern
     * later visits each piece and instance a few times */
    uint64_t most = WK_PIECE * (uint64_t)(wk->ntmp + 1)
                    + (8 * ((uint64_t)wk->nseg + 2 * wk->ntmp + 2) + 7 * (uint64_t)j->n
                       + 2 * (uint64_t)wk->capseg)
                          / WK_MOVE;

    if (wk->budget > 0 && (wk->truncated || wk->visits + most > wk->budget)) {
        wk->truncated = true;
        return 1;
    }
    wk->moved = 0;
    if (hs_grow(&j->in, &j->cap, j->n + 1, sizeof(*j->in)) < 0
        || hs_grow(&wk->pool, &wk->cappool, wk->npool + wk->ntmp, sizeof(*wk->pool)) < 0
        || (run && (rc = tl_add_run(wk, wk->tmp, wk->ntmp)) < 0))
        return -1;
    for (size_t i = 0; rc == 0 && i < wk->ntmp; i++) {
        if (tl_add(wk, &wk->tmp[i]) < 0)
            return -1;
    }
    memcpy(wk->pool + wk->npool, wk->tmp, wk->ntmp * sizeof(*wk->tmp));
    if (wk->reference) {
        for (pos = 0; pos < j->n && j->in[pos].init_w <= init_w; pos++)
            ;
    } else
        pos = hs_pp_inst_upper(j, init_w);
    memmove(j->in + pos + 1, j->in + pos, (j->n - pos) * sizeof(*j->in));
    j->in[pos] = (struct winst){
        .init_w = init_w,
        .span = span,
        .io_end = wk->tmp[wk->ntmp - 1].b >= wk->T ? 0. : wk->tmp[wk->ntmp - 1].b,
        .p0 = wk->npool,
        .np = wk->ntmp,
    };
    wk->npool += wk->ntmp;
    j->n++;
    *index = pos;
    /* what it cost: the entries shifted, the pieces (and their export) */
    wk->visits +=
        WK_PIECE * (uint64_t)(wk->ntmp + 1) + (2 * wk->moved + 7 * (j->n - pos)) / WK_MOVE;
    return 0;
}

/* vi: ts=4 sw=4 expandtab
 */
