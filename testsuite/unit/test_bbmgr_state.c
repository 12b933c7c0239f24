/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests: SQLite state layer (bbmgr/common/state.c): migrations, group commit, reads. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"
#include "testutil.h"

static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/test_bbmgr_state.XXXXXX");
    ck_assert(mkdtemp(dir) != NULL);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static int count_row(sqlite3_stmt *s, void *arg)
{
    *(int64_t *)arg = sqlite3_column_int64(s, 0);
    return 1;
}

static int64_t count(state_t *st, const char *sql)
{
    int64_t n = -1;
    ck_assert_int_eq(state_query(st, count_row, &n, sql, NULL), 0);
    return n;
}

START_TEST(test_open_migrate)
{
    hu_error_t err = { "" };
    state_t *st = state_open(dir, true, &err);
    ck_assert_msg(st != NULL, "%s", err.text);
    ck_assert_int_eq(state_schema_version(st), STATE_SCHEMA_VERSION);
    /* one daemon per directory */
    state_t *st2 = state_open(dir, true, &err);
    ck_assert(st2 == NULL);
    ck_assert_int_eq(errno, EBUSY);
    state_close(st);
    /* reopening keeps the version, migrations are not re-run */
    st = state_open(dir, true, &err);
    ck_assert_msg(st != NULL, "%s", err.text);
    ck_assert_int_eq(state_schema_version(st), STATE_SCHEMA_VERSION);
    state_close(st);
}
END_TEST

START_TEST(test_migrate_from_v1)
{
    /* a version-1 database (as an older bbmgrd left it) gains the v2 tables */
    char path[128];
    sqlite3 *db;
    hu_error_t e0 = { "" };
    state_t *st0 = state_open(dir, true, &e0);
    ck_assert_msg(st0 != NULL, "%s", e0.text);
    state_close(st0);
    snprintf(path, sizeof(path), "%s/state.db", dir);
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db,
                                  "DROP TABLE history; DROP TABLE persistent_use;"
                                  "DROP TABLE kept_dirs;"
                                  "DROP INDEX transfers_syncing;"
                                  "ALTER TABLE transfers DROP COLUMN durable;"
                                  "ALTER TABLE transfers DROP COLUMN held;"
                                  "ALTER TABLE transfers DROP COLUMN part;"
                                  "ALTER TABLE transfers DROP COLUMN nparts;"
                                  "ALTER TABLE phases DROP COLUMN held;"
                                  "INSERT INTO phases(id,job_id,volume,direction,state,"
                                  "requested) VALUES(1,'old',1,'write','waiting',0);"
                                  "INSERT INTO jobs(id,uid,gid,nodes,state,created,updated)"
                                  " VALUES('old',1,1,1,'registered',0,0);"
                                  "INSERT INTO transfers(id,job_id,kind,source,destination,"
                                  "type,state,requested) VALUES(1,'old','stage_out','/a',"
                                  "'/b','file','done',0);"
                                  "PRAGMA user_version=1;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    hu_error_t err = { "" };
    state_t *st = state_open(dir, true, &err);
    ck_assert_msg(st != NULL, "%s", err.text);
    ck_assert_int_eq(state_schema_version(st), STATE_SCHEMA_VERSION);
    ck_assert_int_eq(count(st, "SELECT count(*) FROM jobs WHERE id='old'"), 1);
    ck_assert_int_eq(count(st, "SELECT count(*) FROM history"), 0);
    /* v8: a phase stored before is not held */
    ck_assert_int_eq(count(st, "SELECT count(*) FROM phases WHERE id=1 AND held=0"), 1);
    /* v3: transfers have a durability, unknown (NULL) for the old ones */
    ck_assert_int_eq(count(st, "SELECT count(*) FROM transfers WHERE durable IS NULL"), 1);
    /* v4: where a moved buffer holds a stage-out's source, NULL for the old ones */
    ck_assert_int_eq(count(st, "SELECT count(*) FROM transfers WHERE held IS NULL"), 1);
    /* v6: the held buffers' directories by identity, none yet */
    ck_assert_int_eq(count(st, "SELECT count(*) FROM kept_dirs"), 0);
    /* v5: not spread (NULL part) for the old ones */
    ck_assert_int_eq(count(st, "SELECT count(*) FROM transfers WHERE part IS NULL"
                               " AND nparts IS NULL"),
                     1);
    state_close(st);
}
END_TEST

START_TEST(test_newer_refused)
{
    char path[128];
    sqlite3 *db;
    snprintf(path, sizeof(path), "%s/state.db", dir);
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "PRAGMA user_version=99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    hu_error_t err = { "" };
    ck_assert(state_open(dir, true, &err) == NULL);
    ck_assert(strstr(err.text, "newer"));
}
END_TEST

static uint64_t last_cb;
static void cb(uint64_t seq, bool ok, void *arg)
{
    ck_assert(ok);
    __atomic_store_n(&last_cb, seq, __ATOMIC_SEQ_CST);
}

START_TEST(test_group_commit)
{
    hu_error_t err = { "" };
    state_t *st = state_open(dir, true, &err);
    ck_assert(st);
    /* 500 statements queued before the writer starts: it must write them as one
     * group, in one transaction (one commit per statement is the bug) */
    uint64_t seq = 0;
    for (int i = 0; i < 500; i++) {
        char id[32];
        snprintf(id, sizeof(id), "j%d", i);
        seq = state_put(st, ST_JOB_PUT, "siissidddsdsddddid", id, (int64_t)1000, (int64_t)1000,
                        "alice", NULL, (int64_t)2, 600.0, NAN, NAN, "write", NAN, "registered", 1.0,
                        1.0, NAN, NAN, (int64_t)0, 0.0);
        ck_assert(seq > 0);
    }
    ck_assert_int_eq(state_start(st, cb, NULL, &err), 0);
    ck_assert_int_eq(state_sync(st), 0);
    ck_assert(state_committed(st) >= seq);
    /* state_sync() waits for the commit; the committer thread calls back
     * right after it, so give the callback a bounded moment to land */
    for (int i = 0; i < 500 && __atomic_load_n(&last_cb, __ATOMIC_SEQ_CST) < seq; i++)
        usleep(10000);
    ck_assert(__atomic_load_n(&last_cb, __ATOMIC_SEQ_CST) >= seq);
    ck_assert_int_eq(count(st, "SELECT count(*) FROM jobs"), 500);
    ck_assert_int_eq(count(st, "SELECT count(*) FROM jobs WHERE name IS NULL AND "
                               "io_volume IS NULL"),
                     500);
    state_stats_t ss;
    state_get_stats(st, &ss);
    ck_assert_int_eq(ss.statements, 500);
    ck_assert_int_eq(ss.commits, 1);
    state_close(st);
    /* durable: a reopen sees it all */
    st = state_open(dir, true, &err);
    ck_assert_int_eq(count(st, "SELECT count(*) FROM jobs"), 500);
    /* a failing statement makes the writer report failure */
    state_put(st, ST_HIST_PRUNE, "ssi", "u", "n", (int64_t)1);
    ck_assert_int_eq(state_flush(st, &err), 0);
    state_close(st);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = { { "state", .timeout = 30, .setup = setup, .teardown = teardown,
                                    .tests = { test_open_migrate, test_migrate_from_v1,
                                               test_newer_refused, test_group_commit, NULL } } };
    return tu_main("bbmgr_state", tcases, TU_COUNT(tcases));
}
