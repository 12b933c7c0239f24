/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_agentproto.c — the messages between bbmgrd and its buffer-node agents, in
 * both directions (bbmgr/common/nodeproto.h, doc/api.md "Buffer-node agents").
 *
 * The first byte picks the report's budget, the rest is one JSON object read as
 * both a reply of bbmgrd (what bbnoded takes: "tasks", "dirs") and a report of an
 * agent (what bbmgrd takes: "status", "results").  Oracles:
 *  - what parses comes back the same through its JSON (tasks, directories,
 *    status, results), and obeys the path and name rules (libhutil);
 *  - the task table: a listing given twice submits nothing the second time;
 *  - the outbox: every result put in comes out once, in at most budget bytes of
 *    compact JSON a report (one alone may be larger only without its message),
 *    every message valid UTF-8 without control characters, at most
 *    NP_MESSAGE_MAX bytes;
 *  - np_message_clean() of the raw bytes: the same guarantees.
 */
#define FUZZ_NAME "fuzz_agentproto"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "fuzz.h"
#include "libhutil/directive.h"
#include "nodeproto.h"

static void check_message(const char *m)
{
    if (strlen(m) > NP_MESSAGE_MAX)
        FAIL("a message of %zu bytes", strlen(m));
    for (const unsigned char *s = (const unsigned char *)m; *s; s++)
        if (*s < 0x20 || *s == 0x7f)
            FAIL("control byte 0x%02x in a cleaned message", *s);
    json_t *j = json_string(m);
    if (!j)
        FAIL("a cleaned message is not UTF-8");
    json_decref(j);
}

static void tasks(json_t *arr, np_table_t *tab)
{
    hu_error_t msg;
    size_t i, n = 0;
    json_t *o;
    uint64_t *ids = calloc(json_array_size(arr) + 1, sizeof(*ids));
    unsigned *runs = calloc(json_array_size(arr) + 1, sizeof(*runs));
    if (!ids || !runs)
        goto out;
    json_array_foreach (arr, i, o) {
        np_task_t t, u;
        if (np_task_parse(o, &t, &msg) < 0)
            continue;
        if (!hu_bb_path_ok(t.src) || !hu_bb_path_ok(t.dst) || t.tid == 0)
            FAIL("task %ju taken against the path rule", (uintmax_t)t.tid);
        json_t *back = np_task_json(&t);
        if (!back || np_task_parse(back, &u, &msg) < 0)
            FAIL("task %ju does not parse back: %s", (uintmax_t)t.tid, msg.text);
        if (t.max_bytes < 0 || (t.stage_out && t.max_bytes))
            FAIL("task %ju taken with a byte limit %jd", (uintmax_t)t.tid, (intmax_t)t.max_bytes);
        if (u.tid != t.tid || u.uid != t.uid || u.gid != t.gid || u.run != t.run
            || u.max_bytes != t.max_bytes || u.stage_out != t.stage_out
            || u.directory != t.directory || u.resync != t.resync || u.nparts != t.nparts
            || u.part != t.part || strcmp(u.src, t.src) || strcmp(u.dst, t.dst)
            || strcmp(u.job, t.job) || (!u.user) != (!t.user) || (u.user && strcmp(u.user, t.user)))
            FAIL("task %ju changed through its JSON", (uintmax_t)t.tid);
        for (int k = 0; k < t.nparts; k++)
            if (strcmp(u.roots[k], t.roots[k]))
                FAIL("task %ju: root %d changed through its JSON", (uintmax_t)t.tid, k);
        json_decref(back);
        runs[n] = t.run;
        ids[n++] = t.tid;
    }
    uint64_t *sub, *can;
    size_t nsub, ncan;
    for (int pass = 0; pass < 2; pass++) {
        if (np_table_listed(tab, ids, runs, n, &sub, &nsub, &can, &ncan) < 0)
            goto out;
        if (pass == 1 && (nsub || ncan))
            FAIL("the same listing again submitted %zu and cancelled %zu", nsub, ncan);
        free(sub);
        free(can);
    }
out:
    free(ids);
    free(runs);
}

static void dirs(json_t *arr)
{
    hu_error_t msg;
    size_t i;
    json_t *o;
    json_array_foreach (arr, i, o) {
        np_dir_t d, e;
        if (np_dir_parse(o, &d, &msg) < 0)
            continue;
        if (d.ino && !d.keep)
            FAIL("directory '%s' taken with an identity but without keep", d.name);
        if (!np_dir_name_ok(d.name, d.persistent) || (d.persistent && !hu_bb_name_ok(d.name))
            || !strncmp(d.name, ".harmonia", 9))
            FAIL("directory '%s' taken against the name rule", d.name);
        json_t *back = np_dir_json(&d);
        if (!back || np_dir_parse(back, &e, &msg) < 0 || strcmp(e.name, d.name)
            || e.persistent != d.persistent || e.uid != d.uid || e.gid != d.gid || e.keep != d.keep
            || e.dev != d.dev || e.ino != d.ino)
            FAIL("directory '%s' changed through its JSON", d.name);
        json_decref(back);
    }
}

/* A report's figures ("usage"): what parses goes through its JSON unchanged, and
 * names a directory by the rule of directory names. */
static void usages(json_t *arr)
{
    hu_error_t msg;
    size_t i;
    json_t *o;
    json_array_foreach (arr, i, o) {
        np_usage_t u, v;
        if (np_usage_parse(o, &u, &msg) < 0)
            continue;
        if (!np_dir_name_ok(u.name, u.persistent) || !strncmp(u.name, ".harmonia", 9))
            FAIL("usage of '%s' taken against the name rule", u.name);
        if (u.used > INT64_MAX || u.dev > INT64_MAX || u.ino > INT64_MAX)
            FAIL("usage of '%s' taken with a figure of 2^63 or more", u.name);
        json_t *back = np_usage_json(&u);
        if (!back || np_usage_parse(back, &v, &msg) < 0 || strcmp(v.name, u.name)
            || v.persistent != u.persistent || v.used != u.used || v.dev != u.dev || v.ino != u.ino)
            FAIL("usage of '%s' changed through its JSON", u.name);
        json_decref(back);
    }
}

/* The agent's side of a report: results into the outbox, out in reports. */
static void results(json_t *arr, size_t budget)
{
    hu_error_t msg;
    size_t i, n = 0;
    json_t *o;
    np_table_t *tab = np_table_create();
    uint64_t *ids = calloc(json_array_size(arr) + 1, sizeof(*ids)), *sub, *can;
    size_t nsub, ncan;
    np_result_t *rv = calloc(json_array_size(arr) + 1, sizeof(*rv));
    if (!tab || !ids || !rv)
        goto out;
    json_array_foreach (arr, i, o) {
        np_result_t r;
        if (np_result_parse(o, &r, &msg) < 0)
            continue;
        json_t *back = np_result_json(&r);
        np_result_t u;
        /* a message that is not UTF-8 cannot be in parsed JSON: it comes back */
        if (!back || np_result_parse(back, &u, &msg) < 0 || u.id != r.id || u.state != r.state
            || u.bytes_done != r.bytes_done || u.bytes_total != r.bytes_total
            || (!u.message) != (!r.message) || (u.message && strcmp(u.message, r.message)))
            FAIL("result %ju changed through its JSON", (uintmax_t)r.id);
        json_decref(back);
        bool seen = false;
        for (size_t k = 0; k < n; k++)
            seen |= ids[k] == r.id;
        if (r.id == 0 || seen || r.state == MV_RUNNING)
            continue; /* one final result per listed task */
        rv[n] = r;
        ids[n++] = r.id;
    }
    if (np_table_listed(tab, ids, NULL, n, &sub, &nsub, &can, &ncan) < 0)
        goto out;
    free(sub);
    free(can);
    for (size_t k = 0; k < n; k++)
        if (np_table_result(tab, &rv[k]) < 0)
            goto out;
    size_t out = 0, reports = 0;
    while (np_table_pending(tab) && reports++ <= n) {
        uint64_t upto;
        json_t *a = np_table_outbox(tab, budget, &upto);
        char *s = json_dumps(a, JSON_COMPACT);
        if (!a || !s)
            FAIL("no outbox");
        size_t m = json_array_size(a);
        if (m == 0)
            FAIL("an outbox of %zu results gave none", np_table_pending(tab));
        if (strlen(s) > budget && m > 1)
            FAIL("a report of %zu results is %zu bytes, budget %zu", m, strlen(s), budget);
        for (size_t k = 0; k < m; k++) {
            const char *mm = json_string_value(json_object_get(json_array_get(a, k), "message"));
            if (mm)
                check_message(mm);
        }
        out += m;
        free(s);
        json_decref(a);
        np_table_acked(tab, upto);
    }
    if (out != n || np_table_pending(tab))
        FAIL("%zu results in, %zu out, %zu left", n, out, np_table_pending(tab));
out:
    np_table_destroy(tab);
    free(ids);
    free(rv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char clean[NP_MESSAGE_MAX + 1];
    hu_error_t msg;
    if (size < 1 || size > 1 << 20)
        return 0;
    size_t budget = 128 + (size_t)data[0] * 64;
    /* the raw bytes as a message quoting a user's file names */
    char *raw = strndup((const char *)data + 1, size - 1);
    if (!raw)
        return 0;
    check_message(np_message_clean(raw, clean));
    free(raw);

    json_error_t je;
    json_t *o = json_loadb((const char *)data + 1, size - 1, 0, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        return 0;
    }
    np_table_t *tab = np_table_create();
    if (tab) {
        tasks(json_object_get(o, "tasks"), tab);
        np_table_destroy(tab);
    }
    dirs(json_object_get(o, "dirs"));
    dirs(json_object_get(o, "kept")); /* a report's identities of kept directories */
    usages(json_object_get(o, "usage"));
    np_status_t st, st2;
    json_t *s = json_object_get(o, "status");
    if (s && np_status_parse(s, &st, &msg) == 0) {
        json_t *back = np_status_json(&st);
        if (!back || np_status_parse(back, &st2, &msg) < 0 || st2.free_bytes != st.free_bytes
            || st2.used_bytes != st.used_bytes || st2.queue != st.queue || st2.errors != st.errors
            || st2.busy != st.busy)
            FAIL("status changed through its JSON: %s", msg.text);
        if (!(np_status_foreign(&st) >= 0))
            FAIL("negative foreign bandwidth");
        json_decref(back);
    }
    results(json_object_get(o, "results"), budget);
    json_decref(o);
    return 0;
}
