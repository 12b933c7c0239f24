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

#include <stdlib.h>
#include <string.h>

#include "harmonia/harmonia.h"

double hmi_rate(harmonia_t *h, double moved);
/* harmonia_phase_begin(); with rejoin, when the job's open phase is one this node
 * left, the node joins it again (POST /v1/phases/{id}/join "rejoin") instead of
 * waiting for its close: for the interposer's detected phases only, whose end
 * may come too soon (a rank waiting inside a collective call).  The grant's
 * phase_id says which phase it is in. */
int hmi_begin(harmonia_t *h, uint64_t volume, harmonia_dir_t dir, harmonia_grant_t *g, int rejoin);
int hmi_hints(harmonia_t *h, double *w_iter, double *volume);

typedef struct {
    int (*init)(harmonia_t **h); /* harmonia_init(h, NULL) */
    harmonia_mode_t (*mode)(harmonia_t *h);
    int (*begin)(harmonia_t *h, uint64_t volume, harmonia_dir_t dir, harmonia_grant_t *g);
    int (*end)(harmonia_t *h, uint64_t bytes);
    double (*rate)(harmonia_t *h, double moved); /* hmi_rate */
    int (*hints)(harmonia_t *h, double *w_iter, double *volume);
    void (*finalize)(harmonia_t *h);
    /* fn runs first in every thread the module starts (libharmonia's closer):
     * the interposer marks it as its own, as the agent thread is */
    void (*thread_hook)(void (*fn)(void));
    /* hmi_begin */
    int (*begin_rejoin)(harmonia_t *h, uint64_t volume, harmonia_dir_t dir, harmonia_grant_t *g,
                        int rejoin);
} hmi_api_t;

#define HMI_AGENT_MODULE "libharmonia-preload-agent.so"
#define HMI_AGENT_SYMBOL "hmi_agent_api"

/* The job's incarnation, as the burst_buffer plugin puts it in the job's
 * environment (HARMONIA_JOB_START: its start time, digits), or "": it is part of
 * the names of the files a job's processes share (the phase, what was learned),
 * so that a job that reuses an earlier job's id (ids start again at 1 on a new
 * cluster or after the controller's state is lost, a requeued job starts anew)
 * never joins that job's phase. */
static inline const char *hmi_job_start(void)
{
    const char *s = getenv("HARMONIA_JOB_START");
    if (!s || !*s || strlen(s) > 20)
        return "";
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return "";
    return s;
}

/* The agent module's one exported function. */
const hmi_api_t *hmi_agent_api(void);

#endif /* HARMONIA_HMI_H */
