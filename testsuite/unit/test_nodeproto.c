/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests: the messages between bbmgrd and bbnoded and the agent's task table
 * (bbmgr/common/nodeproto.c): strict parsing, and the rules that make a duplicated, late
 * or crossed message change nothing.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nodeproto.h"
#include "testutil.h"

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *o = json_loads(text, 0, &e);
    ck_assert_msg(o != NULL, "bad JSON in the test: %s", e.text);
    return o;
}

/* ------------------------------------------------------------------ messages */
START_TEST(test_task_round_trip)
{
    np_task_t t = { .tid = 42,
                    .job = "1234",
                    .weight = 2.5,
                    .uid = 1001,
                    .gid = 1002,
                    .user = "alice",
                    .stage_out = true,
                    .directory = true,
                    .resync = true,
                    .done_at = 1.7e9,
                    .src = "/bb/bb01/1234/out",
                    .dst = "/pfs/out" };
    np_task_t u;
    hu_error_t msg;
    json_t *o = np_task_json(&t);
    ck_assert_int_eq(np_task_parse(o, &u, &msg), 0);
    ck_assert_uint_eq(u.tid, 42);
    ck_assert_str_eq(u.job, "1234");
    ck_assert(u.weight == 2.5 && u.uid == 1001 && u.gid == 1002);
    ck_assert_str_eq(u.user, "alice");
    ck_assert(u.stage_out && u.directory && u.resync && u.done_at == 1.7e9);
    ck_assert_str_eq(u.src, t.src);
    ck_assert_str_eq(u.dst, t.dst);
    ck_assert_int_eq(u.max_bytes, 0); /* not sent: no limit unless the agent sets one */
    json_decref(o);
}
END_TEST

/* A stage-in carries its node's byte limit; a stage-out never has one. */
START_TEST(test_task_max_bytes)
{
    np_task_t t = { .tid = 43,
                    .job = "1234",
                    .weight = 1,
                    .uid = 1001,
                    .gid = 1002,
                    .src = "/pfs/in",
                    .dst = "/bb/bb01/1234/in",
                    .max_bytes = 1 << 30 };
    np_task_t u;
    hu_error_t msg;
    json_t *o = np_task_json(&t);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "max_bytes")), 1 << 30);
    ck_assert_int_eq(np_task_parse(o, &u, &msg), 0);
    ck_assert_int_eq(u.max_bytes, 1 << 30);
    json_decref(o);
    t.stage_out = true;
    t.src = "/bb/bb01/1234/out";
    t.dst = "/pfs/out";
    o = np_task_json(&t);
    ck_assert_ptr_null(json_object_get(o, "max_bytes"));
    json_decref(o);
}
END_TEST

START_TEST(test_task_refused)
{
    static const struct {
        const char *json, *why;
    } bad[] = {
        { "{\"id\":1,\"job\":\"j\",\"weight\":1,\"uid\":1,\"gid\":1,\"source\":\"pfs/x\","
          "\"destination\":\"/bb/j/x\"}",
          "absolute" },
        { "{\"id\":1,\"job\":\"j\",\"weight\":1,\"uid\":1,\"gid\":1,\"source\":\"/pfs/x\","
          "\"destination\":\"/bb/j/../../etc\"}",
          "absolute" },
        { "{\"id\":1,\"job\":\"j\",\"weight\":0,\"uid\":1,\"gid\":1,\"source\":\"/pfs/x\","
          "\"destination\":\"/bb/j/x\"}",
          "weight" },
        { "{\"id\":0,\"job\":\"j\",\"weight\":1,\"uid\":1,\"gid\":1,\"source\":\"/pfs/x\","
          "\"destination\":\"/bb/j/x\"}",
          "positive" },
        { "{\"id\":1,\"job\":\"j\",\"weight\":1,\"uid\":1,\"gid\":1,\"source\":\"/pfs/x\"}",
          "'destination' is required" },
        { "{\"id\":1,\"job\":\"j\",\"weight\":1,\"uid\":1,\"gid\":1,\"source\":\"/pfs/x\","
          "\"destination\":\"/bb/j/x\",\"mode\":1}",
          "unknown field 'mode'" },
        { "{\"id\":1,\"job\":\"j\",\"weight\":1,\"uid\":-1,\"gid\":1,\"source\":\"/pfs/x\","
          "\"destination\":\"/bb/j/x\"}",
          "'uid'" },
        { "{\"id\":1,\"job\":\"j\",\"weight\":1,\"uid\":1,\"gid\":1,\"source\":\"/pfs/x\","
          "\"destination\":\"/bb/j/x\",\"resync\":true}",
          "only a stage-out" },
        { "{\"id\":1,\"job\":\"j\",\"weight\":1,\"uid\":1,\"gid\":1,\"source\":\"/pfs/x\","
          "\"destination\":\"/bb/j/x\",\"max_bytes\":0}",
          "'max_bytes'" },
        { "{\"id\":1,\"job\":\"j\",\"weight\":1,\"uid\":1,\"gid\":1,\"source\":\"/pfs/x\","
          "\"destination\":\"/bb/j/x\",\"max_bytes\":\"1GiB\"}",
          "'max_bytes'" },
        { "[1]", "must be an object" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        np_task_t t;
        hu_error_t msg = { "" };
        json_t *o = js(bad[i].json);
        ck_assert_int_eq(np_task_parse(o, &t, &msg), -1);
        ck_assert_msg(strstr(msg.text, bad[i].why), "case %zu: '%s' does not say '%s'", i, msg.text,
                      bad[i].why);
        json_decref(o);
    }
}
END_TEST

START_TEST(test_status_result_dir)
{
    np_status_t s = { .free_bytes = 10,
                      .used_bytes = 20,
                      .busy = true,
                      .read_bw = 1e9,
                      .write_bw = 2e9,
                      .interval = 0.5,
                      .queue = 3,
                      .errors = 4 },
                u;
    np_result_t r;
    np_dir_t d;
    hu_error_t msg;
    json_t *o = np_status_json(&s);
    ck_assert_int_eq(np_status_parse(o, &u, &msg), 0);
    ck_assert(u.free_bytes == 10 && u.used_bytes == 20 && u.busy && u.read_bw == 1e9
              && u.write_bw == 2e9 && u.queue == 3 && u.errors == 4);
    json_decref(o);
    o = js("{\"free_bytes\":1,\"used_bytes\":1,\"read_bw\":0}");
    errno = 0;
    ck_assert_int_eq(np_status_parse(o, &u, &msg), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_str_eq(msg.text, "status: 'write_bw' is required"); /* the text as it always was */
    ck_assert_int_eq(np_status_parse(o, &u, NULL), -1);           /* the reason is optional */
    json_decref(o);

    o = js("{\"id\":7,\"state\":\"done_syncing\",\"bytes_done\":5,\"bytes_total\":5}");
    ck_assert_int_eq(np_result_parse(o, &r, &msg), 0);
    ck_assert(r.id == 7 && r.state == MV_DONE_SYNCING && r.bytes_done == 5);
    json_decref(o);
    o = js("{\"id\":7,\"state\":\"finished\",\"bytes_done\":5,\"bytes_total\":5}");
    ck_assert_int_eq(np_result_parse(o, &r, &msg), -1);
    ck_assert_str_eq(msg.text, "result 7: unknown state 'finished'");
    json_decref(o);
    for (int st = MV_RUNNING; st <= MV_NOT_DURABLE; st++)
        ck_assert_int_eq(np_state_parse(np_state_name((mover_state_t)st)), st);

    o = js("{\"name\":\"1234\",\"uid\":1001,\"gid\":1001}");
    ck_assert_int_eq(np_dir_parse(o, &d, &msg), 0);
    ck_assert(!d.persistent && d.uid == 1001 && d.inc == 0);
    json_decref(o);
    /* the incarnation goes through a round trip exactly; a negative one is refused */
    np_dir_t in = { .name = "1234", .uid = 1001, .gid = 1001, .inc = 1764097212.123456 };
    o = np_dir_json(&in);
    ck_assert_int_eq(np_dir_parse(o, &d, &msg), 0);
    ck_assert(d.inc == in.inc && !d.keep);
    json_decref(o);
    /* a held buffer's directory: keep goes through, and must be a boolean */
    np_dir_t kept = { .name = "1234", .keep = true };
    o = np_dir_json(&kept);
    ck_assert_int_eq(np_dir_parse(o, &d, &msg), 0);
    ck_assert(d.keep && !d.persistent);
    json_decref(o);
    /* with its identity (device and inode): both go through, together */
    np_dir_t ident = {
        .name = "ckpt", .persistent = true, .keep = true, .dev = 2049, .ino = 10516002
    };
    o = np_dir_json(&ident);
    ck_assert_int_eq(np_dir_parse(o, &d, &msg), 0);
    ck_assert(d.keep && d.persistent && d.dev == 2049 && d.ino == 10516002);
    json_decref(o);
    /* refused: a keep that is not a boolean, a negative incarnation, reserved names
     * (why: what the message must say, NULL: not checked) */
    static const struct {
        const char *json, *why;
    } refused[] = {
        { "{\"name\":\"1234\",\"uid\":0,\"gid\":0,\"keep\":1}", "'keep' must be a boolean" },
        { "{\"name\":\"1234\",\"uid\":1,\"gid\":1,\"inc\":-1}", NULL },
        { "{\"name\":\"1234\",\"uid\":0,\"gid\":0,\"keep\":true,\"ino\":5}", "go together" },
        { "{\"name\":\"1234\",\"uid\":0,\"gid\":0,\"keep\":true,\"dev\":1}", "go together" },
        { "{\"name\":\"1234\",\"uid\":1,\"gid\":1,\"dev\":1,\"ino\":5}", "with 'keep'" },
        { "{\"name\":\"1234\",\"uid\":0,\"gid\":0,\"keep\":true,\"dev\":1,\"ino\":0}", "'ino'" },
        { "{\"name\":\"persistent\",\"uid\":1,\"gid\":1}", NULL },
        { "{\"name\":\".harmonia-spare\",\"uid\":1,\"gid\":1}", NULL },
        { "{\"name\":\"..\",\"uid\":1,\"gid\":1,\"persistent\":true}", NULL },
        { "{\"name\":\"a/b\",\"uid\":1,\"gid\":1}", NULL },
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
        o = js(refused[i].json);
        ck_assert_int_eq(np_dir_parse(o, &d, &msg), -1);
        if (refused[i].why)
            ck_assert_ptr_nonnull(strstr(msg.text, refused[i].why));
        json_decref(o);
    }
    /* a persistent buffer may be named "persistent" (it lives under persistent/) */
    ck_assert(np_dir_name_ok("persistent", true));
}
END_TEST

/* ------------------------------------------------------------------ task table */
static void listed(np_table_t *t, const uint64_t *ids, size_t n, size_t want_sub, size_t want_can,
                   uint64_t *sub0, uint64_t *can0)
{
    uint64_t *sub, *can;
    size_t ns, nc;
    ck_assert_int_eq(np_table_listed(t, ids, NULL, n, &sub, &ns, &can, &nc), 0);
    ck_assert_uint_eq(ns, want_sub);
    ck_assert_uint_eq(nc, want_can);
    if (sub0 && ns)
        *sub0 = sub[0];
    if (can0 && nc)
        *can0 = can[0];
    free(sub);
    free(can);
}

/* bbmgrd lists no transfer (nothing to start, nothing to cancel): the state
 * that leaves id in. */
static int state_when_unlisted(np_table_t *t, uint64_t id)
{
    listed(t, NULL, 0, 0, 0, NULL, NULL);
    return np_table_state(t, id);
}

static void result(np_table_t *t, uint64_t id, mover_state_t st, int64_t done)
{
    np_result_t r = { .id = id, .state = st, .bytes_done = done, .bytes_total = 100 };
    ck_assert_int_eq(np_table_result(t, &r), 0);
}

/* The agent sends every pending result and bbmgrd acknowledges them. */
static void all_sent_and_acked(np_table_t *t)
{
    uint64_t upto;

    json_decref(np_table_outbox(t, 65536, &upto));
    np_table_acked(t, upto);
}

/* "usage" of a report: what an agent measured a buffer directory to hold */
START_TEST(test_usage)
{
    np_usage_t u = { .name = "4711", .used = (uint64_t)3 << 30, .dev = 2049, .ino = 77 }, v;
    hu_error_t msg;
    json_t *o = np_usage_json(&u);
    ck_assert_ptr_nonnull(json_object_get(o, "job"));
    ck_assert_int_eq(np_usage_parse(o, &v, &msg), 0);
    ck_assert(!v.persistent && !strcmp(v.name, "4711") && v.used == u.used && v.dev == 2049
              && v.ino == 77);
    json_decref(o);
    np_usage_t p = { .name = "persistent", .persistent = true, .used = 0, .dev = 1, .ino = 2 };
    o = np_usage_json(&p);
    ck_assert_int_eq(np_usage_parse(o, &v, &msg), 0);
    ck_assert(v.persistent && !strcmp(v.name, "persistent") && v.used == 0);
    json_decref(o);
    static const struct {
        const char *json, *why;
    } refused[] = {
        { "{\"used\":1,\"dev\":1,\"ino\":1}", "exactly one of" },
        { "{\"job\":\"1\",\"persistent\":\"1\",\"used\":1,\"dev\":1,\"ino\":1}", "exactly one of" },
        { "{\"job\":\"1\",\"dev\":1,\"ino\":1}", "'used'" },
        { "{\"job\":\"1\",\"used\":-1,\"dev\":1,\"ino\":1}", "'used'" },
        { "{\"job\":\"1\",\"used\":1,\"dev\":1,\"ino\":1,\"x\":1}", "'x'" },
        { "{\"job\":\"1\",\"used\":1,\"dev\":-5,\"ino\":1}", "'dev'" },
        { "{\"job\":\"..\",\"used\":1,\"dev\":1,\"ino\":1}", "directory name" },
        { "{\"job\":\"a/b\",\"used\":1,\"dev\":1,\"ino\":1}", "directory name" },
        { "{\"job\":\".harmonia-trash\",\"used\":1,\"dev\":1,\"ino\":1}", NULL },
        { "{\"job\":7,\"used\":1,\"dev\":1,\"ino\":1}", NULL },
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(*refused); i++) {
        o = js(refused[i].json);
        ck_assert_int_eq(np_usage_parse(o, &v, &msg), -1);
        if (refused[i].why && !strstr(msg.text, refused[i].why))
            ck_abort_msg("%s: %s", refused[i].json, msg.text);
        json_decref(o);
    }
}
END_TEST

START_TEST(test_table_listing_is_idempotent)
{
    np_table_t *t = np_table_create();
    uint64_t ids[] = { 5, 6, 5 }, first = 0;
    listed(t, ids, 3, 2, 0, &first, NULL); /* 5 and 6 new, 5 only once */
    ck_assert_uint_eq(first, 5);
    listed(t, ids, 2, 0, 0, NULL, NULL); /* the same listing: nothing again */
    ck_assert_int_eq(np_table_state(t, 5), NPT_RUNNING);
    /* 6 is no longer listed while running: cancelled, once */
    uint64_t can = 0;
    listed(t, ids, 1, 0, 1, NULL, &can);
    ck_assert_uint_eq(can, 6);
    listed(t, ids, 1, 0, 0, NULL, NULL);
    ck_assert_int_eq(np_table_state(t, 6), -1); /* and forgotten */
    np_table_destroy(t);
}
END_TEST

START_TEST(test_table_results_until_acknowledged)
{
    np_table_t *t = np_table_create();
    uint64_t ids[] = { 9 }, upto;
    listed(t, ids, 1, 1, 0, NULL, NULL);
    result(t, 9, MV_RUNNING, 10);
    result(t, 9, MV_RUNNING, 20); /* replaces the older progress */
    ck_assert_uint_eq(np_table_pending(t), 1);
    result(t, 9, MV_DONE, 100);
    result(t, 77, MV_DONE, 100); /* never given: ignored */
    ck_assert_uint_eq(np_table_pending(t), 2);
    ck_assert_int_eq(np_table_state(t, 9), NPT_FINISHED);
    json_t *a = np_table_outbox(t, 65536, &upto);
    ck_assert_uint_eq(json_array_size(a), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(a, 0), "bytes_done")), 20);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 1), "state")), "done");
    json_decref(a);
    /* the reply was lost: bbmgrd still lists 9 (it has not seen the result); the
     * agent must not run it again, nor forget it */
    listed(t, ids, 1, 0, 0, NULL, NULL);
    ck_assert_int_eq(state_when_unlisted(t, 9), NPT_FINISHED);
    /* acknowledged, and no longer listed: forgotten */
    np_table_acked(t, upto);
    ck_assert_uint_eq(np_table_pending(t), 0);
    ck_assert_int_eq(state_when_unlisted(t, 9), -1);
    np_table_destroy(t);
}
END_TEST

/* A finished task listed again with a higher run (part 0 of a spread stage-in
 * whose links must name a part's new node) is run again, once per run; the same
 * run listed again is not, nor a higher run while its result is unacknowledged. */
START_TEST(test_table_new_run_of_a_finished_task)
{
    np_table_t *t = np_table_create();
    uint64_t ids[] = { 4 }, *sub, *can;
    unsigned run1[] = { 1 }, run2[] = { 2 };
    size_t ns, nc;
    listed(t, ids, 1, 1, 0, NULL, NULL);
    result(t, 4, MV_DONE, 100);
    /* not yet acknowledged: a new run waits */
    ck_assert_int_eq(np_table_listed(t, ids, run1, 1, &sub, &ns, &can, &nc), 0);
    ck_assert_uint_eq(ns, 0);
    free(sub);
    free(can);
    all_sent_and_acked(t);
    ck_assert_int_eq(np_table_listed(t, ids, run1, 1, &sub, &ns, &can, &nc), 0);
    ck_assert_uint_eq(ns, 1);
    ck_assert_uint_eq(sub[0], 4);
    free(sub);
    free(can);
    ck_assert_int_eq(np_table_state(t, 4), NPT_RUNNING);
    result(t, 4, MV_DONE, 100);
    all_sent_and_acked(t);
    /* the same run again: nothing; the next one: again */
    ck_assert_int_eq(np_table_listed(t, ids, run1, 1, &sub, &ns, &can, &nc), 0);
    ck_assert_uint_eq(ns, 0);
    free(sub);
    free(can);
    ck_assert_int_eq(np_table_listed(t, ids, run2, 1, &sub, &ns, &can, &nc), 0);
    ck_assert_uint_eq(ns, 1);
    free(sub);
    free(can);
    np_table_destroy(t);
}
END_TEST

START_TEST(test_table_syncing_outlives_its_listing)
{
    np_table_t *t = np_table_create();
    uint64_t ids[] = { 3 };
    listed(t, ids, 1, 1, 0, NULL, NULL);
    result(t, 3, MV_DONE_SYNCING, 100);
    all_sent_and_acked(t);
    /* bbmgrd closed the transfer (done): no longer listed, but its durability is
     * still to come: not cancelled, not forgotten */
    ck_assert_int_eq(state_when_unlisted(t, 3), NPT_SYNCING);
    result(t, 3, MV_DURABLE, 100);
    ck_assert_int_eq(np_table_state(t, 3), NPT_FINISHED);
    all_sent_and_acked(t);
    ck_assert_int_eq(state_when_unlisted(t, 3), -1);
    np_table_destroy(t);
}
END_TEST

START_TEST(test_table_restart_reruns)
{
    np_table_t *t = np_table_create();
    uint64_t ids[] = { 11, 12 };
    listed(t, ids, 2, 2, 0, NULL, NULL);
    np_table_destroy(t);
    /* a new agent process knows nothing: what bbmgrd still lists is run again */
    t = np_table_create();
    listed(t, ids, 2, 2, 0, NULL, NULL);
    np_table_destroy(t);
}
END_TEST

START_TEST(test_table_outbox_budget)
{
    np_table_t *t = np_table_create();
    uint64_t ids[64], upto;
    char big[3000];
    memset(big, 'm', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    for (int i = 0; i < 64; i++)
        ids[i] = (uint64_t)i + 1;
    listed(t, ids, 64, 64, 0, NULL, NULL);
    np_result_t r = {
        .id = 1, .state = MV_FAILED, .bytes_done = 0, .bytes_total = -1, .message = big
    };
    ck_assert_int_eq(np_table_result(t, &r), 0);
    for (int i = 2; i <= 64; i++)
        result(t, (uint64_t)i, MV_DONE, 100);
    /* at least one result goes; alone larger than the budget, without its message */
    json_t *a = np_table_outbox(t, 100, &upto);
    ck_assert_uint_eq(json_array_size(a), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 0), "message")),
                     "(message dropped: larger than a report may be)");
    json_decref(a);
    np_table_acked(t, upto);
    ck_assert_uint_eq(np_table_pending(t), 63);
    /* within a budget, a message is cut to NP_MESSAGE_MAX */
    np_table_t *t2 = np_table_create();
    listed(t2, ids, 1, 1, 0, NULL, NULL);
    ck_assert_int_eq(np_table_result(t2, &r), 0);
    a = np_table_outbox(t2, 5000, &upto);
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(json_array_get(a, 0), "message"))),
                      NP_MESSAGE_MAX);
    json_decref(a);
    np_table_destroy(t2);
    /* then by budget, oldest first; only what was sent is acknowledged */
    a = np_table_outbox(t, 1000, &upto);
    size_t n = json_array_size(a);
    ck_assert(n >= 2 && n < 63);
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(a, 0), "id")), 2);
    json_decref(a);
    np_table_acked(t, upto);
    ck_assert_uint_eq(np_table_pending(t), 63 - n);
    np_table_destroy(t);
}
END_TEST

/* Messages quoting users' file names: control bytes, bytes that are not UTF-8 and
 * C1 controls become '?'; the report measured as JSON always fits its budget. */
START_TEST(test_table_outbox_hostile_names)
{
    static const struct {
        const char *in, *out;
    } rows[] = {
        { "plain é ü 日本", "plain é ü 日本" },
        { "a\x01\x1f\x7f b", "a??? b" },
        { "\xff\xfe x", "?? x" },
        { "\xc2\x85 c1", "?? c1" }, /* U+0085, a C1 control */
        { "\xc0\xaf overlong", "?? overlong" },
        { "\xed\xa0\x80 surrogate", "??? surrogate" },
        { "cut \xe6\x97", "cut ??" },
        { "\"quote\" \\", "\"quote\" \\" },
    };
    char out[NP_MESSAGE_MAX + 1];
    for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++)
        ck_assert_str_eq(np_message_clean(rows[i].in, out), rows[i].out);
    /* a multi-byte character is never cut in two */
    char big[3 * NP_MESSAGE_MAX];
    for (size_t i = 0; i + 3 <= sizeof(big) - 1; i += 3)
        memcpy(big + i, "\xe6\x97\xa5", 3);
    big[sizeof(big) - 1] = '\0';
    ck_assert_uint_eq(strlen(np_message_clean(big, out)), NP_MESSAGE_MAX / 3 * 3);

    np_table_t *t = np_table_create();
    uint64_t ids[200], upto;
    char evil[1200];
    for (size_t i = 0; i < sizeof(evil) - 1; i++)
        evil[i] = (char)(1 + i % 31);
    evil[sizeof(evil) - 1] = '\0';
    for (int i = 0; i < 200; i++)
        ids[i] = (uint64_t)i + 1;
    listed(t, ids, 200, 200, 0, NULL, NULL);
    for (int i = 1; i <= 200; i++) {
        np_result_t r = {
            .id = (uint64_t)i, .state = MV_FAILED, .bytes_total = -1, .message = evil
        };
        ck_assert_int_eq(np_table_result(t, &r), 0);
    }
    size_t sent = 0;
    while (np_table_pending(t)) {
        json_t *a = np_table_outbox(t, 8192, &upto);
        char *s = json_dumps(a, JSON_COMPACT);
        ck_assert_ptr_nonnull(s);
        ck_assert_uint_le(strlen(s), 8192);
        ck_assert(json_array_size(a) >= 1);
        sent += json_array_size(a);
        free(s);
        json_decref(a);
        np_table_acked(t, upto);
    }
    ck_assert_uint_eq(sent, 200);
    np_table_destroy(t);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "messages", .tests = { test_task_round_trip, test_task_max_bytes, test_task_refused,
                                 test_status_result_dir, test_usage, NULL } },
        { "table",
          .tests = { test_table_listing_is_idempotent, test_table_results_until_acknowledged,
                     test_table_syncing_outlives_its_listing, test_table_restart_reruns,
                     test_table_new_run_of_a_finished_task, test_table_outbox_budget,
                     test_table_outbox_hostile_names, NULL } },
    };

    return tu_main("nodeproto", tcases, TU_COUNT(tcases));
}
