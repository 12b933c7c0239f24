/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_client_app.c — the application API's reading of a phase reply
 * (harmonia.c's grant_from_phase), for fuzz_client.c.  harmonia.c is compiled
 * into this file to reach its static functions.
 */
#include "../../src/lib/libharmonia/harmonia.c"

#define FUZZ_NAME "fuzz_client"
#include "fuzz.h"

void fuzz_client_app_grant(json_t *ph, int ntasks);

void fuzz_client_app_grant(json_t *ph, int ntasks)
{
    struct harmonia h;
    harmonia_grant_t g;
    memset(&h, 0, sizeof(h));
    memset(&g, 0, sizeof(g));
    h.ntasks = ntasks;
    grant_from_phase(&h, ph, &g);
    if (g.nnodes < 0 || !memchr(g.path, '\0', sizeof(g.path))
        || !memchr(g.target, '\0', sizeof(g.target)))
        FAIL("grant_from_phase: %d nodes, or path or target not terminated", g.nnodes);
    for (int i = 0; i < g.nnodes && i < 16; i++)
        if (!memchr(g.nodes[i], '\0', sizeof(g.nodes[i])))
            FAIL("grant_from_phase: node %d not terminated", i);
}
