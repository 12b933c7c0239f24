/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests: bbmgr.yaml key table, parser and checks (bbmgr/common/config.c). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "testutil.h"

static char path[] = "/tmp/test_bbmgr_config.XXXXXX";

static cfg_t *load(const char *text, hu_error_t *err)
{
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    cfg_t *cfg = cfg_load(path, err);
    unlink(path);
    strcpy(path, "/tmp/test_bbmgr_config.XXXXXX");
    return cfg;
}

/* the error text after "FILE:" */
static const char *where(hu_error_t *err)
{
    const char *p = strstr(err->text, "XXXXXX");
    p = strchr(err->text, ':');
    return p ? p + 1 : err->text;
}

START_TEST(test_defaults)
{
    hu_error_t err = { "" };
    cfg_t *cfg = load("", &err);
    ck_assert_msg(cfg != NULL, "%s", err.text);
    ck_assert_str_eq(cfg->listen_address, "127.0.0.1");
    ck_assert_int_eq(cfg->listen_port, 7470);
    ck_assert_str_eq(cfg->policy_id, "auto");
    ck_assert(cfg->state_durable);
    ck_assert_int_eq(cfg->limits_max_body, 64 * 1024);
    ck_assert(cfg->limits_connection_timeout == 10.0);
    ck_assert(cfg->limits_grant_timeout == 3600.0);
    ck_assert_int_eq(cfg->npools, 1);
    ck_assert_str_eq(cfg->pools[0].name, "default");
    ck_assert_int_eq(cfg->nnodes, 0);
    cfg_destroy(cfg);
}
END_TEST

START_TEST(test_full)
{
    hu_error_t err = { "" };
    cfg_t *cfg = load("listen:\n  port: 0\n  unix_socket: \"\"\n"
                      "auth:\n  slurm_user: 4242\n"
                      "policy:\n  id: minmax:0.5\n  overprovision: 1.5\n"
                      "limits:\n  max_wait: 2m\n  max_body: 1MiB\n"
                      "devices:\n  - name: nvme\n    msca: [0, 0.1, 0.25]\n"
                      "pools:\n  - name: fast\n    granularity: 1GiB\n"
                      "nodes:\n  - names:\n      - bb[01-03]\n      - bbx\n    capacity: 2TiB\n"
                      "    bandwidth: 3 GB/s\n    device: nvme\n    mount: /bb\n"
                      "    pool: fast\n",
                      &err);
    ck_assert_msg(cfg != NULL, "%s", err.text);
    ck_assert_int_eq(cfg->slurm_uid, 4242);
    ck_assert(cfg->policy_overprovision == 1.5);
    ck_assert(cfg->limits_max_wait == 120);
    ck_assert_int_eq(cfg->limits_max_body, 1 << 20);
    ck_assert_int_eq(cfg->nnodes, 1);
    ck_assert_int_eq(cfg->nodes[0].names.n, 4);
    ck_assert_str_eq(cfg->nodes[0].names.v[3], "bbx");
    ck_assert_int_eq(cfg->nodes[0].capacity, 2ULL << 40);
    ck_assert(cfg->nodes[0].bandwidth == 3e9);
    ck_assert_int_eq(cfg->devices[0].msca.n, 3);
    ck_assert(cfg->devices[0].msca.v[2] == 0.25);
    ck_assert_int_eq(cfg_pool_index(cfg, "fast"), 0);
    ck_assert_int_eq(cfg_device_index(cfg, "nvme"), 0);
    cfg_destroy(cfg);
}
END_TEST

struct bad {
    const char *text;
    const char *want; /* "LINE:COL: substring" prefix match on line:col */
};

START_TEST(test_errors)
{
    static const struct bad bad[] = {
        { "listen:\n  port: 99999\n", "2:9: listen.port: port must be" },
        { "listen:\n  porte: 1\n", "2:3: unknown key 'porte' in section 'listen'" },
        { "nope: 1\n", "1:1: unknown section 'nope'" },
        { "state:\n  durable: maybe\n", "2:12: state.durable: 'maybe' is not a boolean" },
        { "limits:\n  max_wait: soon\n", "2:13: limits.max_wait: 'soon' is not a duration" },
        { "limits:\n  max_body: 10\n", "2:13: limits.max_body: '10' is not a size" },
        { "limits:\n  max_body: 1MiB\n  max_body: 2MiB\n", "3:3: duplicate key" },
        { "listen: [1]\n", "1:9: listen: expected a mapping" },
        { "nodes:\n  - names: a\n", "2:5: nodes: missing required key 'capacity'" },
        { "nodes: {}\n", "1:8: nodes: expected a list" },
        { "auth:\n  slurm_user: no-such-user-here\n", "2:15: auth.slurm_user: no such user" },
        { "a: [\n", "2:1: " },
        { "listen:\n  address: 10.1.2.3\nauth:\n  type: none\n", " auth.type none is refused" },
        { "- 1\n", "1:1: the file must be a mapping" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        hu_error_t err = { "" };
        cfg_t *cfg = load(bad[i].text, &err);
        ck_assert_msg(cfg == NULL, "case %zu accepted", i);
        ck_assert_int_eq(errno, EINVAL);
        ck_assert_msg(strncmp(where(&err), bad[i].want, strlen(bad[i].want)) == 0,
                      "case %zu: got '%s', want '%s'", i, err.text, bad[i].want);
    }
}
END_TEST

START_TEST(test_restart_needed)
{
    hu_error_t err = { "" };
    cfg_t *a = load("listen:\n  port: 1\npolicy:\n  id: fcfs\n", &err);
    cfg_t *b = load("listen:\n  port: 2\npolicy:\n  id: fairshare\n", &err);
    char buf[256];
    ck_assert(a && b);
    ck_assert_int_eq(cfg_restart_needed(a, b, buf, sizeof(buf)), 1);
    ck_assert_str_eq(buf, "listen.port");
    cfg_destroy(a);
    cfg_destroy(b);
}
END_TEST

START_TEST(test_docs)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cfg_print_help(f);
    fclose(f);
    ck_assert(strstr(buf, "limits.grant_timeout"));
    ck_assert(strstr(buf, "(required)"));
    free(buf);
    f = open_memstream(&buf, &len);
    cfg_print_man(f);
    fclose(f);
    ck_assert(strstr(buf, ".TH BBMGR.YAML 5"));
    ck_assert(strstr(buf, ".B overprovision"));
    free(buf);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = { { "config", .tests = { test_defaults, test_full, test_errors,
                                                         test_restart_needed, test_docs, NULL } } };
    return tu_main("bbmgr_config", tcases, TU_COUNT(tcases));
}
