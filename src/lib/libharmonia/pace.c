/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pace.c — token bucket used by harmonia_pace() (see pace.h).
 */
#include "pace.h"

static void refill(hm_tb_t *tb, double now)
{
    if (now > tb->last) {
        if (tb->rate > 0) {
            tb->tokens += tb->rate * (now - tb->last);
            if (tb->tokens > tb->burst)
                tb->tokens = tb->burst;
        }
        tb->last = now;
    }
}

void hm_tb_init(hm_tb_t *tb, double rate, double burst, double now)
{
    tb->rate = rate;
    tb->burst = burst > 0 ? burst : 0;
    tb->tokens = tb->burst;
    tb->last = now;
}

void hm_tb_set_rate(hm_tb_t *tb, double rate, double burst, double now)
{
    refill(tb, now);
    tb->rate = rate;
    tb->burst = burst > 0 ? burst : 0;
    if (tb->rate <= 0 || tb->tokens > tb->burst)
        tb->tokens = tb->burst;
}

double hm_tb_take(hm_tb_t *tb, double n, double now)
{
    if (tb->rate <= 0 || n <= 0)
        return 0;
    refill(tb, now);
    tb->tokens -= n;
    return tb->tokens < 0 ? -tb->tokens / tb->rate : 0;
}

double hm_tb_burst_for(double rate)
{
    double b = rate * 0.05;
    return b < 262144 ? 262144 : b;
}
