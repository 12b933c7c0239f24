/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_client.c — libFuzzer harness for libharmonia's reading of bbmgrd's
 * replies: the Harmonia-Session header (header_cb), error bodies
 * (hm_error_text), and phase bodies as the client (grant_fill) and the
 * application API (grant_from_phase, fuzz_client_app.c) read them.  client.c is
 * compiled into this file to reach its static functions; no socket is opened.
 *
 * The input is used whole as a header line and as a JSON reply body.
 * The oracles (abort() on failure):
 *   - header_cb() consumes the whole line; a session token it keeps is
 *     NUL-terminated, not empty, without spaces, controls or ';';
 *   - hm_error_text() writes a NUL-terminated text within its buffer;
 *   - a grant read from a phase has 0..N nodes and NUL-terminated names and path;
 * and ASan, UBSan and LeakSanitizer watch the rest.
 */
#include "../../src/lib/libharmonia/client.c"

#define FUZZ_NAME "fuzz_client"
#include "fuzz.h"

void fuzz_client_app_grant(json_t *ph, int ntasks);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* 1. a header line (curl gives it without a terminating NUL) */
    char *line = malloc(size ? size : 1);
    if (!line)
        return 0;
    memcpy(line, data, size);
    struct hm_client c;
    memset(&c, 0, sizeof(c));
    if (header_cb(line, 1, size, &c) != size)
        FAIL("header_cb did not consume the line");
    if (!memchr(c.new_session, '\0', sizeof(c.new_session)))
        FAIL("session token not terminated");
    for (const char *p = c.new_session; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == ';')
            FAIL("session token holds 0x%02x", (unsigned char)*p);
    free(line);

    /* 2. a reply body */
    json_t *j = json_loadb((const char *)data, size, 0, NULL);
    if (!j)
        return 0;
    char buf[64];
    memset(buf, 'x', sizeof(buf));
    hm_error_text(j, buf, sizeof(buf));
    if (!memchr(buf, '\0', sizeof(buf)))
        FAIL("hm_error_text: not terminated");
    hm_grant_t g;
    memset(&g, 0, sizeof(g));
    grant_fill(j, &g);
    if (g.nnodes < 0)
        FAIL("grant_fill: %d nodes", g.nnodes);
    for (int i = 0; i < g.nnodes && i < 16; i++)
        if (!memchr(g.nodes[i], '\0', sizeof(g.nodes[i])))
            FAIL("grant_fill: node %d not terminated", i);
    if (!memchr(g.path, '\0', sizeof(g.path)))
        FAIL("grant_fill: path not terminated");
    fuzz_client_app_grant(j, 1 + (int)(size % 7));
    json_decref(j);
    return 0;
}
