/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the data mover's transfer states (bbmgr/mover/mover.c), as bbmgrd's core
 * receives them from mover_poll(): a small tree copied by the real mover between
 * two directories of a temporary directory, as a job's user (uid 1001, no account
 * needed), with the states reported in order, and a cancelled copy.  The mover acts
 * as the user (setfsuid): the tests need root.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mover.h"
#include "test_bbmgr_core_fixture.h"
#include "testutil.h"

#define UID 1001

typedef struct {
    mover_state_t v[64];
    int n;
    int64_t done, total;
    bool final;
} reports_t;

static void on_report(uint64_t tid, const char *job, mover_state_t st, int64_t done, int64_t total,
                      const char *msg, void *arg)
{
    reports_t *r = arg;
    ck_assert_uint_eq(tid, 1);
    ck_assert_str_eq(job, "7");
    if (r->n < 64)
        r->v[r->n++] = st;
    r->done = done;
    r->total = total;
    r->final = st == MV_DONE || st == MV_FAILED || st == MV_CANCELLED || st == MV_DURABLE
               || st == MV_NOT_DURABLE;
}

/* Poll as bbmgrd's timer does (every 10 ms here) until pred holds; 120 s at most
 * (the write-back of a done stage-out runs at idle I/O priority: a busy disk
 * delays it). */
static void poll_until(mover_t *m, reports_t *r, bool (*pred)(const reports_t *))
{
    struct timespec ts = { 0, 10 * 1000 * 1000 };
    for (int i = 0; i < 12000 && !pred(r); i++) {
        mover_poll(m, on_report, r);
        nanosleep(&ts, NULL);
    }
    ck_assert_msg(pred(r), "no report after 120 s (%d so far)", r->n);
}

static bool is_final(const reports_t *r)
{
    return r->final && r->v[r->n - 1] != MV_DONE_SYNCING;
}

static bool is_running(const reports_t *r)
{
    return r->n > 0 && r->v[r->n - 1] == MV_RUNNING;
}

/* The mover of a configuration of mover keys (YAML text). */
static mover_t *mover(fx_t *f, const char *keys, cfg_t **cfg)
{
    hu_error_t err = { "" };
    char yaml[512];
    snprintf(yaml, sizeof(yaml), "mover:\n  threads: 2\n  chunk: 1MiB\n%s", keys);
    fx_init(f, yaml);
    ck_assert_int_eq(chmod(f->dir, 0755), 0);
    *cfg = cfg_load(f->path, &err);
    ck_assert_msg(*cfg != NULL, "%s", err.text);
    mover_t *m = mover_create(*cfg, &err);
    ck_assert_msg(m != NULL, "%s", err.text);
    return m;
}

/* Each kind of copy, the states it reports in order: running (while it copies, as
 * long as the poll sees it), done, then durable where its fsyncs are promised. */
static const struct {
    const char *keys; /* mover keys */
    bool stage_out;
    mover_state_t want[2]; /* after the running ones */
    int nwant;
} cases[] = {
    { "", false, { MV_DONE }, 1 },
    { "", true, { MV_DONE_SYNCING, MV_DURABLE }, 2 },
    { "  durable_before_done: true\n", true, { MV_DONE, MV_DURABLE }, 2 },
    { "  durable_stage_in: true\n", false, { MV_DONE, MV_DURABLE }, 2 },
};

START_TEST(test_states)
{
    fx_t f;
    cfg_t *cfg;
    char keys[256];
    /* 3 MiB at 2 MB/s: it is seen running */
    snprintf(keys, sizeof(keys), "%s  max_rate: 2 MB/s\n", cases[_i].keys);
    mover_t *m = mover(&f, keys, &cfg);
    const char *from = cases[_i].stage_out ? "bb" : "pfs", *to = cases[_i].stage_out ? "pfs" : "bb";
    fx_sh("cd %s && mkdir -p bb pfs %s/tree/sub && head -c 2000000 /dev/urandom > %s/tree/a"
          " && head -c 1000000 /dev/urandom > %s/tree/sub/b && ln -s b %s/tree/sub/link"
          " && chown -R %d:%d bb pfs",
          f.dir, from, from, from, from, UID, UID);
    char src[256], dst[256];
    snprintf(src, sizeof(src), "%s/%s/tree", f.dir, from);
    snprintf(dst, sizeof(dst), "%s/%s/tree", f.dir, to);
    mover_spec_t spec = { .tid = 1,
                          .job = "7",
                          .weight = 1,
                          .uid = UID,
                          .gid = UID,
                          .stage_out = cases[_i].stage_out,
                          .directory = true,
                          .src = src,
                          .dst = dst };
    reports_t r = { .n = 0 };
    ck_assert_int_eq(mover_submit(m, &spec), 0);
    ck_assert(mover_has(m, 1));
    poll_until(m, &r, is_final);
    int k = 0;
    while (k < r.n && r.v[k] == MV_RUNNING)
        k++;
    ck_assert_msg(k >= 1, "no running state before %d", r.v[0]);
    ck_assert_int_eq(r.n - k, cases[_i].nwant);
    for (int i = 0; i < cases[_i].nwant; i++)
        ck_assert_int_eq(r.v[k + i], cases[_i].want[i]);
    ck_assert_int_eq(r.done, 3000000);
    ck_assert_int_eq(r.total, 3000000);
    /* nothing more: the transfer is forgotten after its last state */
    mover_poll(m, on_report, &r);
    ck_assert_int_eq(r.n, k + cases[_i].nwant);
    ck_assert(!mover_has(m, 1));
    /* the same tree, the user's */
    fx_sh("diff -r %s %s", src, dst);
    fx_sh("test \"$(stat -c %%u:%%g %s/sub/b)\" = %d:%d", dst, UID, UID);
    fx_sh("test \"$(readlink %s/sub/link)\" = b", dst);
    mover_destroy(m);
    cfg_destroy(cfg);
    fx_done(&f);
}
END_TEST

/* A copy cancelled while it runs reports cancelled, and leaves no partial file. */
START_TEST(test_cancel)
{
    fx_t f;
    cfg_t *cfg;
    mover_t *m = mover(&f, "  max_rate: 1 MB/s\n", &cfg);
    fx_sh("cd %s && mkdir -p bb pfs && head -c 20000000 /dev/zero > pfs/big"
          " && chown -R %d:%d bb pfs",
          f.dir, UID, UID);
    char src[256], dst[256];
    snprintf(src, sizeof(src), "%s/pfs/big", f.dir);
    snprintf(dst, sizeof(dst), "%s/bb/big", f.dir);
    mover_spec_t spec = {
        .tid = 1, .job = "7", .weight = 1, .uid = UID, .gid = UID, .src = src, .dst = dst
    };
    reports_t r = { .n = 0 };
    ck_assert_int_eq(mover_submit(m, &spec), 0);
    poll_until(m, &r, is_running);
    mover_cancel(m, 1, "cancelled by the test");
    poll_until(m, &r, is_final);
    ck_assert_int_eq(r.v[r.n - 1], MV_CANCELLED);
    ck_assert_int_lt(r.done, 20000000);
    ck_assert(!mover_has(m, 1));
    fx_sh("test -z \"$(ls -A %s/bb)\"", f.dir);
    mover_destroy(m);
    cfg_destroy(cfg);
    fx_done(&f);
}
END_TEST

int main(void)
{
    if (geteuid() != 0) {
        /* a skip: the last line is the reason testsuite/allowed-skips names */
        printf("the mover tests need root\n");
        return 77;
    }
    const tu_tcase_t tcases[] = {
        { "transfers", .timeout = 300, .tests = { test_cancel, NULL },
          .loops = { { test_states, (int)TU_COUNT(cases) } } },
    };

    return tu_main("bbmgr_core_mover", tcases, TU_COUNT(tcases));
}
