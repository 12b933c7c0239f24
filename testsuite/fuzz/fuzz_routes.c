/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_routes.c — libFuzzer harness for bbmgrd's HTTP API: the route table, the
 * strict JSON body checks and every handler, /v1/batch included, called directly
 * on a real core (bbmgr/daemon/core.c, libhsched, the SQLite state layer), no sockets.
 *
 * An input is one or more requests, separated by a line "--":
 *     [!]METHOD /path[?query ignored]\n
 *     JSON body (optional)
 * '!' makes the caller an ordinary user (uid 1001), otherwise the administrator.
 * The body is parsed as bbmgrd parses it (json_loadb, JSON_REJECT_DUPLICATES, an
 * object or nothing); requests run in order on one core, so a sequence can
 * register a job, allocate, request phases, stage, end.
 *
 * The oracles (abort() on failure):
 *   - every reply has a status in 100..599 and a body (JSON or text);
 *   - an error reply (>= 400) is a JSON object with an "error" member (but see
 *     utf8_valid() below for a known exception);
 *   - a 2xx reply to a request that changes nothing (GET) leaves the queued state
 *     writes unchanged;
 * and ASan, UBSan and LeakSanitizer watch the rest.  The core is rebuilt every 256
 * inputs so that what earlier inputs left does not grow without bound.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "api.h"
#include "config.h"
#include "core.h"
#include "log.h"
#include "routes.h"
#include "state.h"

#define FUZZ_NAME "fuzz_routes"
#include "fuzz.h"

static char tmpdir[] = "/tmp/fuzz_routes.XXXXXX";
static char cfgpath[4200];
static state_t *st;
static core_t *core;
static unsigned runs;

static void write_config(void)
{
    char statedir[4200], mount[4200];
    snprintf(statedir, sizeof(statedir), "%s/state", tmpdir);
    snprintf(mount, sizeof(mount), "%s/bb", tmpdir);
    if (mkdir(mount, 0755) < 0)
        FAIL("mkdir %s: %m", mount);
    snprintf(cfgpath, sizeof(cfgpath), "%s/bbmgr.yaml", tmpdir);
    FILE *f = fopen(cfgpath, "w");
    if (!f)
        FAIL("%s: %m", cfgpath);
    fprintf(f,
            "listen:\n  address: 127.0.0.1\n  port: 0\n"
            "state:\n  dir: %s\n  durable: false\n"
            "auth:\n  type: none\n"
            "log:\n  level: error\n"
            "policy:\n  id: fairshare\n  overprovision: 1.5\n"
            "stage:\n  mode: scheduled\n"
            "devices:\n  - name: nvme\n    msca: [0, 0.02, 0.05]\n"
            "pools:\n  - name: nvme\n    granularity: 1GiB\n"
            "  - name: capacity\n    granularity: 16GiB\n"
            "nodes:\n"
            "  - names: bb[01-04]\n    capacity: 1TiB\n    bandwidth: 2 GB/s\n"
            "    device: nvme\n    mount: %s\n    pool: nvme\n"
            "  - names: hd[1-2]\n    capacity: 8TiB\n    bandwidth: 500 MB/s\n"
            "    mount: %s\n    pool: capacity\n",
            statedir, mount, mount);
    fclose(f);
}

static void core_up(void)
{
    hu_error_t err = { "" };
    char statedir[4200];
    snprintf(statedir, sizeof(statedir), "%s/state", tmpdir);
    cfg_t *cfg = cfg_load(cfgpath, &err);
    if (!cfg)
        FAIL("config: %s", err.text);
    if (!(st = state_open(statedir, false, &err)))
        FAIL("state: %s", err.text);
    if (!(core = core_create(cfg, st, &err)))
        FAIL("core: %s", err.text);
    if (core_recover(core, &err) < 0)
        FAIL("recover: %s", err.text);
    state_flush(st, &err);
}

static void core_down(void)
{
    hu_error_t err = { "" };
    state_flush(st, &err);
    core_destroy(core);
    state_close(st);
    char cmd[4300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/state'", tmpdir);
    if (system(cmd) != 0)
        FAIL("%s failed", cmd);
}

static void cleanup(void)
{
    char cmd[4300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz_routes: %s failed\n", cmd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if (!mkdtemp(tmpdir))
        FAIL("mkdtemp: %m");
    atexit(cleanup);
    write_config();
    bl_set_level(BL_ERROR);
    core_up();
    return 0;
}

/* Known: an error message naming a path segment that is not UTF-8 cannot be
 * packed into JSON (hreq_reply_error() then leaves no body: bbmgrd answers the status
 * with an empty body).  Tolerated for such paths unless FUZZ_ROUTES_STRICT=1. */
static bool utf8_valid(const char *s)
{
    json_t *j = json_string(s);
    json_decref(j);
    return j != NULL;
}

static void check_reply(const reply_t *r, const char *what, const char *path)
{
    if (r->status < 100 || r->status > 599)
        FAIL("%s: status %d", what, r->status);
    if (r->status >= 400 && !r->body && !utf8_valid(path) && !getenv("FUZZ_ROUTES_STRICT"))
        return;
    if (r->status >= 400) {
        if (!r->body || !json_is_object(r->body))
            FAIL("%s: error %d without a JSON object", what, r->status);
        json_t *e = json_object_get(r->body, "error");
        if (!json_is_string(e) && !json_is_object(e))
            FAIL("%s: error %d without an \"error\" member", what, r->status);
    }
    if (r->body) {
        char *s = json_dumps(r->body, JSON_COMPACT | JSON_REAL_PRECISION(17));
        if (!s)
            FAIL("%s: reply body cannot be encoded", what);
        free(s);
    }
}

static void one_request(const char *req, size_t len)
{
    const char *nl = memchr(req, '\n', len);
    size_t linelen = nl ? (size_t)(nl - req) : len;
    const char *body = nl ? nl + 1 : req + len;
    size_t bodylen = len - (size_t)(body - req);
    char line[1024];

    if (linelen == 0 || linelen >= sizeof(line))
        return;
    memcpy(line, req, linelen);
    line[linelen] = '\0';
    if (memchr(line, '\0', linelen))
        return;
    caller_t who = { .uid = 0, .gid = 0, .admin = true };
    char *m = line;
    if (*m == '!') {
        who = (caller_t){ .uid = 1001, .gid = 1001, .admin = false };
        m++;
    }
    char *path = strchr(m, ' ');
    if (!path)
        return;
    *path++ = '\0';
    char *q = strchr(path, '?');
    if (q)
        *q = '\0';

    char pathcopy[1024];
    snprintf(pathcopy, sizeof(pathcopy), "%s", path);
    const char *args[4] = { 0 };
    int status = 0;
    const route_t *rt = routes_match(m, path, args, &status);
    if (!rt) {
        if (status != 404 && status != 405)
            FAIL("routes_match: no route and status %d", status);
        return;
    }
    json_t *jb = NULL;
    if (bodylen > 0) {
        json_error_t jerr;
        jb = json_loadb(body, bodylen, JSON_REJECT_DUPLICATES, &jerr);
        if (!jb)
            return; /* bbmgrd answers 400 before any handler */
        if (!json_is_object(jb)) {
            json_decref(jb);
            return;
        }
        if (!rt->body) {
            json_decref(jb);
            jb = NULL; /* bbmgrd ignores the body of these */
        }
    }
    hreq_t rq = { .api = NULL, .who = &who, .body = jb, .conn = NULL, .max_wait = 0 };
    memcpy(rq.args, args, sizeof(rq.args));
    reply_t r = { 0 };
    uint64_t before = state_last_seq(st);
    core_lock(core);
    rt->fn(core, &rq, &r);
    core_unlock(core);
    if (!strcmp(m, "GET") && r.status < 300 && state_last_seq(st) != before
        && strcmp(path, "/metrics") != 0)
        FAIL("GET %s changed the state (%d)", path, r.status);
    check_reply(&r, rt->pattern, pathcopy);
    json_decref(r.body);
    free(r.text);
    json_decref(jb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    int n = 0;

    while (p < end && n++ < 16) {
        const char *sep = NULL;
        for (const char *s = p; s + 3 <= end; s++)
            if (s[0] == '\n' && s[1] == '-' && s[2] == '-' && (s + 3 == end || s[3] == '\n')) {
                sep = s;
                break;
            }
        size_t len = (size_t)((sep ? sep : end) - p);
        char *copy = malloc(len + 1);
        if (!copy)
            return 0;
        memcpy(copy, p, len);
        copy[len] = '\0';
        one_request(copy, len);
        free(copy);
        p = sep ? sep + 3 + (sep + 3 < end) : end;
    }
    hu_error_t err = { "" };
    state_flush(st, &err);
    core_tick(core);
    if (++runs % 256 == 0) {
        core_down();
        core_up();
    }
    return 0;
}
