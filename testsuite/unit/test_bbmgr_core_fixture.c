/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The core on a temporary state directory: see test_bbmgr_core_fixture.h. */
#include <check.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_bbmgr_core_fixture.h"

void fx_sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

void fx_init(fx_t *f, const char *yaml)
{
    memset(f, 0, sizeof(*f));
    strcpy(f->dir, "/tmp/test_bbmgr_core.XXXXXX");
    ck_assert(mkdtemp(f->dir) != NULL);
    snprintf(f->path, sizeof(f->path), "%s/bbmgr.yaml", f->dir);
    FILE *fp = fopen(f->path, "w");
    ck_assert(fp != NULL);
    fprintf(fp, "state:\n  dir: %s/state\n  durable: false\n", f->dir);
    for (const char *p = yaml; *p; p++)
        if (!strncmp(p, "@DIR@", 5)) {
            fputs(f->dir, fp);
            p += 4;
        } else {
            fputc(*p, fp);
        }
    ck_assert_int_eq(fclose(fp), 0);
}

void fx_open(fx_t *f)
{
    hu_error_t err = { "" };
    cfg_t *cfg = cfg_load(f->path, &err);
    ck_assert_msg(cfg != NULL, "%s", err.text);
    f->st = state_open(cfg->state_dir, cfg->state_durable, &err);
    ck_assert_msg(f->st != NULL, "%s", err.text);
    ck_assert_msg(state_start(f->st, NULL, NULL, &err) == 0, "%s", err.text);
    f->c = core_create(cfg, f->st, &err);
    ck_assert_msg(f->c != NULL, "%s", err.text);
    ck_assert_msg(core_recover(f->c, &err) == 0, "%s", err.text);
    ck_assert_int_eq(state_sync(f->st), 0);
}

void fx_close(fx_t *f)
{
    if (f->st)
        ck_assert_int_eq(state_sync(f->st), 0);
    state_close(f->st);
    core_destroy(f->c);
    f->st = NULL;
    f->c = NULL;
}

void fx_done(fx_t *f)
{
    if (f->c || f->st)
        fx_close(f);
    if (*f->dir)
        fx_sh("rm -rf '%s'", f->dir);
    *f->dir = '\0';
}

job_t *fx_job(core_t *c, const char *id, const char *w_iter, const char *volume)
{
    bool created;
    cerr_t e = { 0 };
    json_t *hints = json_pack("{s:s s:s}", "w_iter", w_iter, "io_volume", volume);
    ck_assert_msg(core_job_register(c, id, 1001, 1001, "user", "name", 1, hints, &created, &e) == 0,
                  "%s", e.err.text);
    json_decref(hints);
    job_t *j = core_job(c, id);
    ck_assert_msg(core_job_begin(c, j, 1, &e) == 0, "%s", e.err.text);
    return j;
}
