/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bbmgr — admin command of the Harmonia burst-buffer manager.
 */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jansson.h>

#include "harmonia/client.h"
#include "libhutil/hutil.h"
#include "libhutil/options.h"
#include "config.h"
#include "calibrate.h"

typedef struct {
    hm_client_t *c;
    bool json;
} cli_t;

static const char usage_text[] =
    "Usage: bbmgr [OPTIONS] COMMAND [ARGS]\n"
    "Talk to bbmgrd, the Harmonia burst-buffer manager.\n\n"
    "Commands:\n"
    "  status                  daemon state, policy, counts\n"
    "  jobs                    registered and running jobs\n"
    "  job ID                  one job (JSON)\n"
    "  nodes                   buffer nodes: capacity, use, load, state\n"
    "  pools                   pools: capacity, free, granularity\n"
    "  persistent              persistent buffers\n"
    "  schedule [MINUTES]      text Gantt of phases and transfers (default 10)\n"
    "  release JOBID           free the buffer of a job that bbmgrd still holds\n"
    "                          (one kept after a failed stage-out)\n"
    "  drain NODE [REASON]     stop allocating on NODE\n"
    "  resume NODE             allocate on NODE again\n"
    "  policy [ID]             show or change the scheduling policy\n"
    "  history USER [NAME]     learned w_iter and volume for USER's jobs NAME\n"
    "  config check FILE       check a bbmgr.yaml\n"
    "  config --help           every configuration key\n"
    "  config --man            bbmgr.yaml(5) in groff\n"
    "  calibrate [OPTS] PATH   measure a device: BW(c), MSCA(c), profile (--help)\n\n"
    "Options (anywhere on the line, before or after the command):\n";

static const hu_option_t options[] = {
    { "url", required_argument, 'u', "URL",
      "http://HOST:PORT or unix:/PATH ($HARMONIA_URL,\n"
      "default " HM_DEFAULT_URL ")" },
    { "munge-socket", required_argument, 'S', "PATH", "munged's socket ($HARMONIA_MUNGE_SOCKET)" },
    { "no-auth", no_argument, 'n', NULL, "send no credential (bbmgrd with auth: none)" },
    { "json", no_argument, 'j', NULL, "print the daemon's JSON answers" },
    { "version", no_argument, 'V', NULL, "print the version" },
    HU_OPTIONS_END,
};

static void usage(FILE *f)
{
    hu_options_usage(f, options, 26, usage_text);
}

/* What an HTTP status means, for answers that carry no error text. */
static const char *status_text(int st)
{
    switch (st) {
    case 400:
        return "bad request";
    case 401:
        return "not authenticated (no valid credential)";
    case 403:
        return "not allowed (an administrator's command)";
    case 404:
        return "no such object";
    case 405:
        return "method not allowed (bbmgrd too old for this command?)";
    case 409:
        return "conflict with the current state";
    case 413:
        return "request too large";
    case 422:
        return "invalid value";
    case 429:
        return "too many requests: try again later";
    case 500:
        return "internal error in bbmgrd (see its log)";
    case 503:
        return "bbmgrd cannot serve this now (see its log)";
    case 507:
        return "not enough free buffer space";
    default:
        return st >= 500 ? "server error (see bbmgrd's log)" : "request refused";
    }
}

/* A string field of o, "-" when absent or not a string (never "(null)"). */
static const char *str(json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v && *v ? v : "-";
}

static int call(cli_t *cli, const char *method, const char *path, json_t *body, json_t **out)
{
    hm_error_t err = { "" };
    char ebuf[400];
    json_t *resp = NULL;
    int st = hm_request(cli->c, method, path, body, &resp, &err);
    if (st < 0) {
        fprintf(stderr, "bbmgr: %s\n", err.text);
        return -1;
    }
    if (st >= 400) {
        hm_error_text(resp, ebuf, sizeof(ebuf));
        fprintf(stderr, "bbmgr: %s %s: HTTP %d: %s\n", method, path, st,
                ebuf[0] ? ebuf : status_text(st));
        json_decref(resp);
        return -1;
    }
    if (cli->json && resp) {
        char *s = json_dumps(resp, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (s)
            puts(s);
        free(s);
    }
    *out = resp;
    return 0;
}

static const char *sz(json_t *v, char *buf, size_t len)
{
    if (!json_is_number(v))
        return "-";
    return hu_size_str((uint64_t)json_number_value(v), buf, len);
}

static int cmd_status(cli_t *cli)
{
    json_t *o;
    if (call(cli, "GET", "/v1/status", NULL, &o) < 0)
        return 1;
    if (!cli->json) {
        char up[64];
        printf("bbmgrd %s, up %s, policy %s%s, auth %s\n", str(o, "version"),
               hu_duration_str(json_number_value(json_object_get(o, "uptime")), up, sizeof(up)),
               str(o, "policy"),
               json_is_true(json_object_get(o, "policy_override")) ? " (set by API)" : "",
               str(o, "auth"));
        json_t *j = json_object_get(o, "jobs"), *p = json_object_get(o, "phases"),
               *n = json_object_get(o, "nodes"), *s = json_object_get(o, "state");
        printf("jobs: %lld registered, %lld running\n",
               json_integer_value(json_object_get(j, "registered")),
               json_integer_value(json_object_get(j, "running")));
        printf("phases: %lld waiting, %lld granted, %lld finished, %lld expired\n",
               json_integer_value(json_object_get(p, "waiting")),
               json_integer_value(json_object_get(p, "granted")),
               json_integer_value(json_object_get(p, "finished")),
               json_integer_value(json_object_get(p, "expired")));
        printf("nodes: %lld (%lld drained) in %lld pools; %lld persistent buffers\n",
               json_integer_value(json_object_get(n, "total")),
               json_integer_value(json_object_get(n, "drained")),
               json_integer_value(json_object_get(n, "pools")),
               json_integer_value(json_object_get(o, "persistent")));
        json_t *ag = json_object_get(o, "agents"), *dn; /* buffer-node agents */
        size_t k;
        if (ag)
            printf("agents: %lld, %lld up, %zu down\n",
                   json_integer_value(json_object_get(ag, "total")),
                   json_integer_value(json_object_get(ag, "up")),
                   json_array_size(json_object_get(ag, "down")));
        json_array_foreach (json_object_get(ag, "down"), k, dn)
            printf("  %s: %s\n", str(dn, "node"), str(dn, "reason"));
        json_t *held = json_object_get(o, "held"); /* buffers kept after their job */
        char b1[32];
        if (json_array_size(held))
            printf("held buffers: %zu (freed by 'bbmgr release JOB' when kept)\n",
                   json_array_size(held));
        json_array_foreach (held, k, dn)
            printf("  %s: %s, %s\n", str(dn, "job"),
                   sz(json_object_get(dn, "bytes"), b1, sizeof(b1)), str(dn, "reason"));
        printf("state: %s (schema %lld, %s)\n", str(s, "dir"),
               json_integer_value(json_object_get(s, "schema")),
               json_is_true(json_object_get(s, "durable")) ? "durable" : "NOT durable");
    }
    json_decref(o);
    return 0;
}

/* What bbmgrd learned of a job's phases ("learned"), one word each:
 * w_iter=12.1s volume=256.00MiB, or "-" before its first phase ends. */
static const char *learned_str(json_t *j, char *buf, size_t len)
{
    json_t *l = json_object_get(j, "learned"), *w = json_object_get(l, "w_iter");
    json_t *v = json_object_get(l, "io_volume");
    char b[32], *d = b;
    if (!json_is_number(v))
        return "-";
    sz(v, b, sizeof(b));
    for (const char *s = b; *s; s++) /* "4.00 MiB": one word */
        if (*s != ' ')
            *d++ = *s;
    *d = '\0';
    if (json_is_number(w))
        snprintf(buf, len, "w_iter=%.1fs volume=%s", json_number_value(w), b);
    else
        snprintf(buf, len, "w_iter=- volume=%s", b);
    return buf;
}

/* The lines of the list commands (listings[] below). */
static void job_row(json_t *j)
{
    char b1[32], b2[96];
    json_t *a = json_object_get(j, "allocation"), *p = json_object_get(j, "phase");
    const char *hold = json_string_value(json_object_get(j, "hold"));
    printf("%-12s %-10s %-10s %-10s %10s %-9s %6lld %s\n", str(j, "id"), str(j, "user"),
           str(j, "name"), str(j, "state"),
           a ? sz(json_object_get(a, "reserved"), b1, sizeof(b1)) : "-",
           !p                                           ? "-"
           : json_is_string(json_object_get(p, "hold")) ? "held"
                                                        : str(p, "state"),
           json_integer_value(json_object_get(j, "phases_done")), learned_str(j, b2, sizeof(b2)));
    if (hold) /* capacity.over: hold: why its phases wait */
        printf("  hold: %s\n", hold);
}

static void node_row(json_t *n)
{
    char b1[32], b2[32], b3[32], b4[32];
    const char *r = json_string_value(json_object_get(n, "reason"));
    json_t *m = json_object_get(n, "measured");
    printf("%-12s %-10s %-8s %11s %11s %11s %12s %6lld %s\n", str(n, "name"), str(n, "pool"),
           str(n, "state"), sz(json_object_get(n, "capacity"), b1, sizeof(b1)),
           sz(json_object_get(n, "used"), b2, sizeof(b2)),
           json_is_integer(m) ? sz(m, b4, sizeof(b4)) : "-",
           hu_size_str_si(json_number_value(json_object_get(n, "load")), b3, sizeof(b3)),
           json_integer_value(json_object_get(n, "active_phases")), r ? r : "");
    /* what failed teardowns left there (part of USED) while the retries go on */
    if (json_integer_value(json_object_get(n, "leftover")) > 0)
        printf("  leftover: %s of failed teardowns, counted in USED until removed\n",
               sz(json_object_get(n, "leftover"), b1, sizeof(b1)));
}

/* FREE + USED + DRAINED = CAPACITY: DRAINED is what drained nodes hold beyond
 * their used space (no new allocation goes there) */
static void pool_row(json_t *p)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    double cap = json_number_value(json_object_get(p, "capacity"));
    double used = json_number_value(json_object_get(p, "used"));
    double fr = json_number_value(json_object_get(p, "free"));
    json_t *drained = json_integer(cap > used + fr ? (json_int_t)(cap - used - fr) : 0);
    printf("%-12s %6lld %6lld %11s %11s %11s %11s %11s\n", str(p, "name"),
           json_integer_value(json_object_get(p, "nodes")),
           json_integer_value(json_object_get(p, "nodes_up")),
           sz(json_object_get(p, "capacity"), b1, sizeof(b1)),
           sz(json_object_get(p, "free"), b2, sizeof(b2)),
           sz(json_object_get(p, "used"), b4, sizeof(b4)), sz(drained, b5, sizeof(b5)),
           sz(json_object_get(p, "granularity"), b3, sizeof(b3)));
    json_decref(drained);
}

static void persistent_row(json_t *b)
{
    char b1[32];
    json_int_t uid = json_integer_value(json_object_get(b, "uid"));
    struct passwd *pw = getpwuid((uid_t)uid);
    char owner[32], created[32] = "-", *users = NULL;
    size_t len = 0, k;
    json_t *u;
    FILE *f = open_memstream(&users, &len);
    time_t t = (time_t)json_number_value(json_object_get(b, "created"));
    struct tm tm;
    if (pw)
        snprintf(owner, sizeof(owner), "%s", pw->pw_name);
    else
        snprintf(owner, sizeof(owner), "%lld", (long long)uid);
    if (t > 0 && localtime_r(&t, &tm))
        strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%S", &tm);
    json_array_foreach (json_object_get(b, "users"), k, u)
        if (f && json_is_string(u))
            fprintf(f, "%s%s", k ? "," : "", json_string_value(u));
    if (f)
        fclose(f);
    printf("%-20s %-10s %-10s %11s %6zu %-19s %s\n", str(b, "name"), owner, str(b, "pool"),
           sz(json_object_get(b, "capacity"), b1, sizeof(b1)),
           json_array_size(json_object_get(b, "nodes")), created, users && *users ? users : "-");
    free(users);
}

/* The list commands: WHAT is the command, the path /v1/WHAT and the array of the
 * answer whose elements are the lines. */
static const struct listing {
    const char *what;
    const char *header;
    void (*row)(json_t *);
} listings[] = {
    { "jobs", "JOBID        USER       NAME       STATE          BUFFER PHASE     PHASES LEARNED",
      job_row },
    { "nodes",
      "NODE         POOL       STATE       CAPACITY        USED    MEASURED       LOAD/s PHASES "
      "REASON",
      node_row },
    { "pools",
      "POOL          NODES     UP    CAPACITY        FREE        USED     DRAINED GRANULARITY",
      pool_row },
    { "persistent",
      "NAME                 OWNER      POOL          CAPACITY  NODES CREATED             JOBS",
      persistent_row },
};

static const struct listing *listing(const char *cmd)
{
    for (size_t i = 0; i < sizeof(listings) / sizeof(listings[0]); i++)
        if (!strcmp(listings[i].what, cmd))
            return &listings[i];
    return NULL;
}

/* GET /v1/WHAT; unless --json, the header and a line per element. */
static int cmd_list(cli_t *cli, const struct listing *l)
{
    json_t *o, *e;
    size_t i;
    char path[64];
    snprintf(path, sizeof(path), "/v1/%s", l->what);
    if (call(cli, "GET", path, NULL, &o) < 0)
        return 1;
    if (!cli->json) {
        puts(l->header);
        json_array_foreach (json_object_get(o, l->what), i, e)
            l->row(e);
    }
    json_decref(o);
    return 0;
}

/* Whether two phases of the schedule share a buffer node. */
static bool share_node(json_t *a, json_t *b)
{
    size_t i, k;
    json_t *x, *y;
    json_array_foreach (json_object_get(a, "nodes"), i, x)
        json_array_foreach (json_object_get(b, "nodes"), k, y)
            if (json_is_string(x) && json_is_string(y)
                && !strcmp(json_string_value(x), json_string_value(y)))
                return true;
    return false;
}

/*
 * The projected start of a waiting phase: the earliest expected end of a
 * granted phase on one of its nodes (else of any granted phase), when the
 * policy decides again; now when nothing is granted.  No sooner than that.
 */
static double projected_start(json_t *phases, json_t *w, double now)
{
    double near = INFINITY, any = INFINITY;
    size_t i;
    json_t *g;
    json_array_foreach (phases, i, g) {
        json_t *e = json_object_get(g, "expected_end");
        if (strcmp(str(g, "state"), "granted") || !json_is_number(e))
            continue;
        double end = json_number_value(e);
        any = fmin(any, end);
        if (share_node(g, w))
            near = fmin(near, end);
    }
    double t = isfinite(near) ? near : isfinite(any) ? any : now;
    return fmax(t, now);
}

/* A text Gantt: one row per open phase and queued transfer, 60 columns for
 * 'minutes' minutes from now.  '#' granted, '.' waiting until its projected
 * start '>', 'S' a transfer start; START in seconds from now. */
static int cmd_schedule(cli_t *cli, double minutes)
{
    json_t *o, *p, *phases;
    size_t i;
    char path[64], start[32];
    const int W = 60;
    double horizon = minutes * 60;
    snprintf(path, sizeof(path), "/v1/schedule?horizon=%.0f", horizon);
    if (call(cli, "GET", path, NULL, &o) < 0)
        return 1;
    if (!cli->json) {
        double now = json_number_value(json_object_get(o, "now"));
        phases = json_object_get(o, "phases");
        printf("policy %s; now .. +%.0f min, one column = %.0f s ('#' granted, '.' waiting, "
               "'>' its projected start, 'S' stage)\n",
               str(o, "policy"), minutes, horizon / W);
        printf("START: seconds from now; a granted phase started then, a waiting one starts "
               "no sooner than a granted phase ahead of it ends (~)\n");
        printf("%-8s %-12s %-9s %8s |", "PHASE", "JOB", "STATE", "START");
        for (int k = 0; k < W; k += 10)
            printf("%-10s", k == 0 ? "now" : "");
        printf("|\n");
        json_array_foreach (phases, i, p) {
            char row[61];
            memset(row, ' ', (size_t)W);
            row[W] = '\0';
            const char *state = str(p, "state");
            if (!strcmp(state, "granted")) {
                json_t *e = json_object_get(p, "expected_end"), *st = json_object_get(p, "start");
                double end = json_is_number(e) ? json_number_value(e) : now + horizon;
                int last = (int)fmin(W - 1, floor((end - now) / horizon * W));
                for (int k = 0; k <= last; k++)
                    row[k] = '#';
                if (json_is_number(st))
                    snprintf(start, sizeof(start), "%+.0f", json_number_value(st) - now);
                else
                    snprintf(start, sizeof(start), "-");
            } else {
                double t = projected_start(phases, p, now);
                int k = (int)fmax(0, fmin(W - 1, floor((t - now) / horizon * W)));
                for (int c = 0; c < k; c++)
                    row[c] = '.';
                row[k] = '>';
                snprintf(start, sizeof(start), "~+%.0f", t - now);
            }
            printf("%-8lld %-12s %-9s %8s |%s|\n", json_integer_value(json_object_get(p, "id")),
                   str(p, "job"), state, start, row);
        }
        json_array_foreach (json_object_get(o, "transfers"), i, p) {
            char row[61];
            memset(row, ' ', (size_t)W);
            row[W] = '\0';
            double t = json_number_value(json_object_get(p, "start"));
            int k = (int)fmax(0, fmin(W - 1, floor((t - now) / horizon * W)));
            row[k] = 'S';
            snprintf(start, sizeof(start), "%+.0f", t - now);
            printf("%-8s %-12s %-9s %8s |%s|\n", str(p, "kind"), str(p, "job"), str(p, "state"),
                   start, row);
        }
    }
    json_decref(o);
    return 0;
}

static int cmd_drain(cli_t *cli, const char *node, const char *reason, bool drain)
{
    json_t *o, *body = NULL;
    char path[256];
    snprintf(path, sizeof(path), "/v1/nodes/%s/%s", node, drain ? "drain" : "resume");
    if (reason)
        body = json_pack("{s:s}", "reason", reason);
    int rc = call(cli, "POST", path, body, &o);
    json_decref(body);
    if (rc < 0)
        return 1;
    if (!cli->json)
        printf("%s: %s\n", node, str(o, "state"));
    json_decref(o);
    return 0;
}

static int cmd_policy(cli_t *cli, const char *id)
{
    json_t *o, *body = NULL;
    int rc;
    if (id) {
        body = json_pack("{s:s}", "id", id);
        rc = call(cli, "PUT", "/v1/policy", body, &o);
        json_decref(body);
    } else {
        rc = call(cli, "GET", "/v1/policy", NULL, &o);
    }
    if (rc < 0)
        return 1;
    if (!cli->json && json_is_true(json_object_get(o, "override")))
        printf("%s (set by API; bbmgr.yaml says %s)\n", str(o, "id"), str(o, "configured"));
    else if (!cli->json)
        printf("%s\n", str(o, "id"));
    json_decref(o);
    return 0;
}

/* Free what bbmgrd still holds for a job: its allocation (DELETE /v1/jobs/ID), the
 * buffer kept after a failed stage-out or for a job Slurm no longer knows; or, once
 * the job ended, its buffer kept because a stage-out from it could not be made
 * durable (DELETE /v1/held/ID). */
static int cmd_release(cli_t *cli, const char *id)
{
    json_t *o, *a, *h;
    char path[256], b1[32], size[32] = "-";
    const char *what = "released";
    cli_t quiet = { cli->c, false }; /* --json: print the release's answer only */
    size_t i;
    if (call(&quiet, "GET", "/v1/status", NULL, &o) < 0)
        return 1;
    json_array_foreach (json_object_get(o, "held"), i, h)
        if (!strcmp(str(h, "job"), id)) {
            what = "kept buffer released and removed";
            snprintf(size, sizeof(size), "%s", sz(json_object_get(h, "bytes"), b1, sizeof(b1)));
        }
    json_decref(o);
    snprintf(path, sizeof(path), *size != '-' ? "/v1/held/%s" : "/v1/jobs/%s", id);
    if (*size == '-') {
        if (call(&quiet, "GET", path, NULL, &o) < 0)
            return 1;
        if ((a = json_object_get(o, "allocation")))
            snprintf(size, sizeof(size), "%s", sz(json_object_get(a, "reserved"), b1, sizeof(b1)));
        bool ended = !strcmp(str(o, "state"), "ended");
        json_decref(o);
        if (ended) {
            if (!cli->json)
                printf("job %s: nothing to release (ended)\n", id);
            return 0;
        }
    }
    if (call(cli, "DELETE", path, NULL, &o) < 0)
        return 1;
    if (!cli->json)
        printf("job %s: %s (%s)\n", id, what, size);
    json_decref(o);
    return 0;
}

static int cmd_history(cli_t *cli, const char *user, const char *name)
{
    json_t *o;
    char path[600];
    snprintf(path, sizeof(path), "/v1/history?user=%s&name=%s", user, name ? name : "");
    if (call(cli, "GET", path, NULL, &o) < 0)
        return 1;
    if (!cli->json) {
        char b1[32], b2[32];
        json_t *w = json_object_get(o, "w_iter"), *v = json_object_get(o, "io_volume");
        printf("%s/%s: %lld jobs, w_iter %s, io_volume %s\n", user, name ? name : "",
               json_integer_value(json_object_get(o, "jobs")),
               json_is_number(w) ? hu_duration_str(json_number_value(w), b1, sizeof(b1)) : "-",
               sz(v, b2, sizeof(b2)));
    }
    json_decref(o);
    return 0;
}

static int cmd_config(int argc, char **argv)
{
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "help"))) {
        cfg_print_help(stdout);
        return 0;
    }
    if (argc >= 1 && !strcmp(argv[0], "--man")) {
        cfg_print_man(stdout);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[0], "check")) {
        hu_error_t err = { "" };
        cfg_t *cfg = cfg_load(argv[1], &err);
        if (!cfg) {
            fprintf(stderr, "%s\n", err.text);
            return 1;
        }
        int n = 0;
        for (int i = 0; i < cfg->nnodes; i++)
            n += cfg->nodes[i].names.n;
        printf("%s: OK (%d buffer nodes in %d pools, policy %s, auth %s)\n", argv[1], n,
               cfg->npools, cfg->policy_id, cfg->auth_type);
        cfg_destroy(cfg);
        return 0;
    }
    fprintf(stderr, "Usage: bbmgr config check FILE | config --help | config --man\n");
    return 2;
}

int main(int argc, char **argv)
{
    hm_client_opts_t opts = { 0 };
    cli_t cli = { NULL, false };
    hm_error_t err = { "" };
    int opt, rc;
    hu_getopt_t g;

    const char *na = getenv("HARMONIA_NO_AUTH");
    opts.no_auth = na && *na && strcmp(na, "0");
    /* Options go anywhere on the line ("bbmgr jobs --json"), except after
     * "config" and "calibrate", whose own options follow them: the options
     * are taken (and permuted) up to those two words only. */
    int end = argc;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "config") || !strcmp(argv[i], "calibrate")) {
            end = i + 1;
            break;
        }
        if (!strcmp(argv[i], "-u") || !strcmp(argv[i], "--url") || !strcmp(argv[i], "-S")
            || !strcmp(argv[i], "--munge-socket"))
            i++; /* its value */
    }
    hu_getopt_init(&g, options, "");
    while ((opt = getopt_long(end, argv, g.shortopts, g.longopts, NULL)) != -1) {
        switch (opt) {
        case 'u':
            opts.url = optarg;
            break;
        case 'S':
            opts.munge_socket = optarg;
            break;
        case 'n':
            opts.no_auth = true;
            break;
        case 'j':
            cli.json = true;
            break;
        case 'V':
            printf("bbmgr %s\n", PACKAGE_VERSION);
            return 0;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind >= end) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[optind];
    int nargs = argc - optind - 1;
    char **args = argv + optind + 1;
    if (!strcmp(cmd, "config"))
        return cmd_config(nargs, args);
    if (!strcmp(cmd, "calibrate"))
        return cmd_calibrate(nargs, args);
    if (!(cli.c = hm_client_create(&opts, &err))) {
        fprintf(stderr, "bbmgr: %s\n", err.text);
        return 1;
    }
    const struct listing *l = listing(cmd);
    if (l && nargs == 0)
        rc = cmd_list(&cli, l);
    else if (!strcmp(cmd, "status") && nargs == 0)
        rc = cmd_status(&cli);
    else if (!strcmp(cmd, "job") && nargs == 1) {
        char path[256];
        json_t *o;
        snprintf(path, sizeof(path), "/v1/jobs/%s", args[0]);
        cli.json = true;
        rc = call(&cli, "GET", path, NULL, &o) < 0 ? 1 : 0;
        if (!rc)
            json_decref(o);
    } else if (!strcmp(cmd, "schedule") && nargs <= 1) {
        double m = nargs ? strtod(args[0], NULL) : 10;
        rc = m > 0 ? cmd_schedule(&cli, m) : 2;
    } else if (!strcmp(cmd, "release") && nargs == 1)
        rc = cmd_release(&cli, args[0]);
    else if (!strcmp(cmd, "drain") && nargs >= 1 && nargs <= 2)
        rc = cmd_drain(&cli, args[0], nargs == 2 ? args[1] : NULL, true);
    else if (!strcmp(cmd, "resume") && nargs == 1)
        rc = cmd_drain(&cli, args[0], NULL, false);
    else if (!strcmp(cmd, "policy") && nargs <= 1)
        rc = cmd_policy(&cli, nargs ? args[0] : NULL);
    else if (!strcmp(cmd, "history") && nargs >= 1 && nargs <= 2)
        rc = cmd_history(&cli, args[0], nargs == 2 ? args[1] : NULL);
    else {
        usage(stderr);
        rc = 2;
    }
    hm_client_destroy(cli.c);
    return rc;
}
