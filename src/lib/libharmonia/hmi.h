/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hmi.h — what harmonia.c gives the interposer beyond the public API (internal:
 * not exported from libharmonia), and the table the interposer's agent module
 * (libharmonia-preload-agent.so, agent.c) hands the interposer (preload.c).
 *
 * The interposer is preloaded into every process of a job, so it links nothing
 * but the C library: libharmonia's client (curl, jansson, munge) is in the agent
 * module, which the interposer opens (dlopen, RTLD_LOCAL) only in a process that
 * does I/O on a path that matters.
 */
#ifndef HARMONIA_HMI_H
#define HARMONIA_HMI_H

#include "harmonia/harmonia.h"

double hmi_rate(harmonia_t *h, double moved);
int hmi_hints(harmonia_t *h, double *w_iter, double *volume);

typedef struct {
    int (*init)(harmonia_t **h);                    /* harmonia_init(h, NULL) */
    harmonia_mode_t (*mode)(harmonia_t *h);
    int (*begin)(harmonia_t *h, uint64_t volume, harmonia_dir_t dir, harmonia_grant_t *g);
    int (*end)(harmonia_t *h, uint64_t bytes);
    double (*rate)(harmonia_t *h, double moved);    /* hmi_rate */
    int (*hints)(harmonia_t *h, double *w_iter, double *volume);
    void (*finalize)(harmonia_t *h);
} hmi_api_t;

#define HMI_AGENT_MODULE "libharmonia-preload-agent.so"
#define HMI_AGENT_SYMBOL "hmi_agent_api"

/* The agent module's one exported function. */
const hmi_api_t *hmi_agent_api(void);

#endif /* HARMONIA_HMI_H */
