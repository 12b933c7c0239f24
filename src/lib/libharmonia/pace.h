/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pace.h — a token bucket (internal to libharmonia; pure: time is a parameter).
 *
 * Tokens are bytes.  The bucket holds at most 'burst' tokens and fills at 'rate'
 * bytes/s.  hm_tb_take() debits n bytes at once (the balance may go negative) and
 * returns how long the caller must sleep before moving them, so that over any
 * interval [t0, t1] the bytes taken are at most burst + rate * (t1 - t0) plus the
 * last request.  rate <= 0 means unlimited (never a delay).
 */
#ifndef HARMONIA_PACE_H
#define HARMONIA_PACE_H

typedef struct {
    double rate;   /* bytes/s; <= 0: unlimited */
    double burst;  /* bucket size, bytes */
    double tokens; /* balance, bytes (negative: debt) */
    double last;   /* time of the last refill, s */
} hm_tb_t;

/* A full bucket at time now. */
void hm_tb_init(hm_tb_t *tb, double rate, double burst, double now);

/* Change the rate from now on (refills at the old rate up to now first). */
void hm_tb_set_rate(hm_tb_t *tb, double rate, double burst, double now);

/* Debit n bytes at time now; returns the seconds to wait (>= 0) before moving them. */
double hm_tb_take(hm_tb_t *tb, double n, double now);

/* The burst libharmonia uses for a rate: 50 ms of it, at least 256 KiB. */
double hm_tb_burst_for(double rate);

#endif /* HARMONIA_PACE_H */
