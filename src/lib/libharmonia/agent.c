/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * agent.c — libharmonia-preload-agent.so: libharmonia's client for the
 * interposer's agent thread (hmi.h), opened by the interposer with dlopen only
 * in a process that does I/O on a path that matters.
 */
#include "hmi.h"

static int init(harmonia_t **h)
{
    return harmonia_init(h, NULL);
}

static const hmi_api_t api = {
    .init = init,
    .mode = harmonia_mode,
    .begin = harmonia_phase_begin,
    .end = harmonia_phase_end,
    .rate = hmi_rate,
    .hints = hmi_hints,
    .finalize = harmonia_finalize,
};

__attribute__((visibility("default"))) const hmi_api_t *hmi_agent_api(void)
{
    return &api;
}
