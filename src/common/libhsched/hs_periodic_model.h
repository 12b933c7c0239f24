/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hs_periodic_model.h — what the files of the periodic construction share
 * (hs_periodic.c: PerSched, the period search, the export; hs_periodic_profile.c:
 * the profile's changes, its block maxima, the commit of an instance;
 * hs_periodic_ff.c: the first fit of Insert-In-Schedule; hs_pattern.c: the pattern's
 * queries).  Symbols and representation: hs_periodic.c's header comment.
 */
#ifndef HARMONIA_HS_PERIODIC_MODEL_H
#define HARMONIA_HS_PERIODIC_MODEL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hs_periodic_types.h"

#define AVAIL_EPS 1e-12 /* bandwidth below B * AVAIL_EPS counts as none */
#define TIME_EPS 1e-12  /* tolerance on instants, relative to T */
#define CMP_EPS 1e-9    /* relative tolerance when comparing objectives */

struct ctx {
    size_t K;
    const hs_pjob_t *jobs;
    int N;
    double B;
    hs_periodic_params_t prm;
    double *cap;   /* cap_k = min(beta_k b, B) */
    double *tio;   /* time_io_k = vol_k / cap_k */
    double *ratio; /* w_k / time_io_k */
    size_t *order; /* Insert-In-Schedule-Throu order */
};

struct piece { /* normalised, inside one segment: 0 <= a < b <= T */
    double a, b, bw;
};

struct winst {
    double init_w; /* in [0, T[ */
    double span;   /* w_k + distance from end_w to the end of the I/O */
    double io_end; /* normalised end of the last piece */
    size_t p0, np; /* pieces in work.pool, in time order */
};

struct wjob {
    struct winst *in; /* sorted by init_w */
    size_t n, cap;
    struct cand *cd; /* first fit: I/O start ranges of the gaps that can hold
                               an instance, sorted by (xs, owner); kept up to date
                               by ff_try() as instances are added */
    size_t ncd, capcd;
    size_t last; /* index of the instance inserted last (PerSched) */
    double xmin; /* first fit: every I/O start below it was tried and
                               does not fit (ff_insert()) */
    bool active;
};

struct cand {       /* a range of I/O starts of job k (first fit) */
    double xs, xe;  /* [xs, xe], normalised, xs <= xe */
    double g0, gap; /* the gap of job k it lies in */
    double owner;   /* init_w of the instance the gap follows */
    bool first;     /* xs is the gap's earliest start g0 + w_k */
};

struct segsort {
    double a; /* available bandwidth */
    size_t idx;
};

#define BM_SHIFT 6 /* the block maxima: blocks of 64 entries of the arrays */

struct work {
    double T, teps;
    size_t nseg, capseg;
    double *t, *used;   /* the profile: breakpoints and the bandwidth granted
                               from each, in a gap buffer (TL_T(), TL_U()) */
    size_t gap, gaplen; /* the hole: entries [gap, gap + gaplen[ of the arrays */
    size_t hint;        /* the segment tl_find() found last */
    /* a bound on the used[] of each block of 1 << BM_SHIFT entries of the arrays
     * (the hole left out), in a tree, for the first fit's long walks
     * (hs_pp_bm_below()); kept by the profile's changes (hs_periodic_profile.c) */
    double *bm;      /* node 1 the root, block b at bmleaves + b */
    size_t bmleaves; /* a power of two >= the blocks */
    bool bmstale;    /* no tree, or the arrays moved: build it all
                               (hs_pp_bm_refresh()) */
    bool jump;       /* long walks use the tree (ff_jump()): the fast
                               construction of periodic-throu, whose insertions
                               go in time order; those of periodic-cong alternate
                               jobs, so the gap's moves, far apart, would mark
                               most blocks between two long walks */
    size_t K;
    struct wjob *job;
    struct piece *pool; /* pieces of every instance */
    size_t npool, cappool;
    struct piece *tmp; /* pieces of the instance being built */
    size_t ntmp, captmp;
    struct segsort *ss;
    size_t capss;
    uint64_t visits;    /* work units spent by this build (wk_charge()) */
    uint64_t moved;     /* positions of the profile's gap buffer shifted (two
                               words each; charged by hs_pp_commit_instance()) */
    uint64_t budget;    /* > 0: the build may spend this many work units
                               (what is left of max_work); wk_charge() refuses a
                               step that would pass it */
    bool truncated;     /* the budget refused a step: the build stops with
                               the instances it has */
    bool reference;     /* hs_periodic_params_t.reference */
    struct cand *rcand; /* reference first fit: every candidate, rebuilt */
    size_t caprcand;
    /* evaluation (see work_eval()) */
    double W; /* sum_k beta_k n_per(k) w_k */
    double sys, dil;
    int nsched, ninst;
};

struct hs_pattern {
    double T;
    int K;
    hs_pattern_stats_t st;
    double *w;             /* w_k */
    int *n;                /* n_per(k) */
    hs_pinstance_t **inst; /* per job, sorted by init_w */
    hs_ppiece_t *pieces;   /* storage of every instance's pieces (unwrapped) */
    hs_ppiece_t **rep;     /* per job, normalised pieces sorted by start */
    size_t *nrep;
    hs_ppiece_t *repstore;
    double *chg; /* sorted change instants in [0, T[ */
    size_t nchg;
};

/* ------------------------------------------------------------------ helpers */

/* x mod T in [0, T[ (the period is a circle, Gainaru §3.2.1). */
static inline double norm_t(double x, double T)
{
    double r = fmod(x, T);

    if (r < 0)
        r += T;
    if (r >= T)
        r = 0;
    return r;
}

/* Distance travelled on the circle from x to y, in [0, T[. */
static inline double dist_t(double x, double y, double T)
{
    return norm_t(y - x, T);
}

/* ------------------------------------------------------------------ budget */

/* Work units (doc/performance.md, "Decision budget"): one per segment or
 * candidate a loop visits; the other loops of a build are charged in the same
 * unit: a sort of n items n log2 n, a memmove of n words n / WK_MOVE, a scan
 * of K jobs K / WK_JOBS, WK_PIECE per piece committed. */
#define WK_MOVE 16 /* words (8 bytes) a memmove shifts per work unit */
#define WK_JOBS 4  /* jobs a scan of the jobs goes through per work unit */
#define WK_PIECE \
    2 /* work units per piece of an instance committed: its
                               copy, its place in the profile, its export */

/* Charge n work units to the build.  Within its budget (or unbounded): true.
 * Otherwise nothing is charged, the build is marked truncated and the caller
 * must give up the step it was about to take (returning "no room"): every loop
 * of a build asks before each step, so the units spent never exceed the budget,
 * and a step refused leaves the pattern as it was (valid: every instance in it
 * was placed within the bandwidth left by the earlier ones). */
static inline bool wk_charge(struct work *wk, uint64_t n)
{
    if (wk->truncated)
        return false;
    if (wk->budget > 0 && (wk->visits + n > wk->budget || wk->visits + n < n)) {
        wk->truncated = true;
        return false;
    }
    wk->visits += n;
    return true;
}

/* n log2 n, the charge of sorting n items (at least n). */
static inline uint64_t wk_sortcost(size_t n)
{
    uint64_t c = 1;

    for (size_t m = n; m > 1; m >>= 1)
        c++;
    return (uint64_t)n * c;
}

/* ------------------------------------------------------------------ profile */

/* The profile is kept in a gap buffer: segment i (0 <= i < nseg) is stored at
 * i, or at i + gaplen from the hole on.  A breakpoint added or removed at i moves
 * the hole there first, which costs the distance from the previous change: the
 * first fit inserts a job's instances in time order (hs_pp_ff_insert(), xmin), so a
 * pattern of periodic-throu moves the hole about once around the period per job
 * instead of moving the whole tail of the profile at every breakpoint. */
static inline size_t tl_at(const struct work *wk, size_t i)
{
    return i < wk->gap ? i : i + wk->gaplen;
}

#define TL_T(wk, i) ((wk)->t[tl_at((wk), (i))])
#define TL_U(wk, i) ((wk)->used[tl_at((wk), (i))])

static inline double seg_end(const struct work *wk, size_t i)
{
    return i + 1 < wk->nseg ? TL_T(wk, i + 1) : wk->T;
}

/* Largest i with t[i] <= x, for x in [0, T[.  The walks, the starts of the first
 * fit and the pieces of an instance go forward, so the search gallops forward from
 * the segment of the last search (1, 2, 4, ... segments on) before halving:
 * O(log d) for a distance d, O(1) for that segment and the next; a binary search
 * over the whole profile only when x lies before it. */
static inline size_t tl_find(struct work *wk, double x)
{
    size_t lo = 0, hi = wk->nseg, h = wk->hint;

    if (h < hi && TL_T(wk, h) <= x) {
        size_t step = 1;

        lo = h;
        while (lo + step < hi) {
            if (TL_T(wk, lo + step) > x) {
                hi = lo + step;
                break;
            }
            lo += step;
            step *= 2;
        }
    }
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (TL_T(wk, mid) <= x)
            lo = mid;
        else
            hi = mid;
    }
    return wk->hint = lo;
}

/* Bandwidth job k may still get on segment i:
 *   avail_k(i) = min(cap_k, B - used[i])        (Gainaru §3.2.1 (i) and (ii))
 * values below B * AVAIL_EPS count as 0. */
static inline double seg_avail(const struct work *wk, const struct ctx *c, size_t k, size_t i)
{
    double a = c->B - TL_U(wk, i);

    if (a > c->cap[k])
        a = c->cap[k];
    return a > c->B * AVAIL_EPS ? a : 0.;
}

/* hs_periodic_model.c */
int hs_pp_tmp_push(struct work *wk, double a, double b, double bw);
double hs_pp_inst_room(const struct work *wk, const struct wjob *j, size_t i);
size_t hs_pp_inst_upper(const struct wjob *j, double init_w);

#endif
