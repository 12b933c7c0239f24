/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * agent.c — libharmonia-preload-agent.so: libharmonia's client for the
 * interposer's agent thread (hmi.h), opened by the interposer with dlopen only
 * in a process that does I/O on a path that matters.
 */
#include <errno.h>
#include <pthread.h>

#include "hmi.h"

/*
 * Every thread the module starts (linked with --wrap=pthread_create) first runs
 * the interposer's hook: libharmonia's closer thread shares the agent's
 * descriptor table, so its calls on its own files must go straight to the C
 * library, never through the wrappers that look descriptors up in the
 * program's table.
 */
static void (*thread_enter)(void);

static void thread_hook(void (*fn)(void))
{
    thread_enter = fn;
}

typedef struct {
    void *(*fn)(void *);
    void *arg;
} tramp_t;

static void *tramp_main(void *p)
{
    tramp_t t = *(tramp_t *)p;
    free(p);
    if (thread_enter)
        thread_enter();
    return t.fn(t.arg);
}

int __real_pthread_create(pthread_t *th, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *th, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *th, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    tramp_t *t = malloc(sizeof(*t));
    if (!t)
        return EAGAIN;
    t->fn = fn;
    t->arg = arg;
    int rc = __real_pthread_create(th, a, tramp_main, t);
    if (rc != 0)
        free(t);
    return rc;
}

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
    .thread_hook = thread_hook,
    .begin_rejoin = hmi_begin,
};

__attribute__((visibility("default"))) const hmi_api_t *hmi_agent_api(void)
{
    return &api;
}
