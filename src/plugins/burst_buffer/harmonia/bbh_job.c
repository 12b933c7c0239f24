/* SPDX-License-Identifier: GPL-2.0-or-later */
/*****************************************************************************\
 *  bbh_job.c - what a job's request means for that job: symbol replacement
 *  in stage paths and persistent buffer names, and the check of stage paths
 *  as the job's user.  Shared by burst_buffer/harmonia and
 *  job_submit/harmonia.
\*****************************************************************************/

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* setresuid, setresgid */
#endif
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "slurm/slurm.h"
#include "src/common/group_cache.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "bbh_job.h"

#define CHECK_TIMEOUT_MS 5000 /* a hung file system must not hold sbatch */

/* "#SBATCH hetjob" (or packjob, or #SLURM): where a component of a
 * heterogeneous job's script ends, as sbatch and slurmctld read it. */
static bool _het_separator(const char *line, const char *end)
{
    size_t n = end - line;

    if (!((n > 7 && !strncmp(line, "#SBATCH", 7)) || (n > 6 && !strncmp(line, "#SLURM", 6))))
        return false;
    return memmem(line, n, "hetjob", 6) || memmem(line, n, "packjob", 7);
}

/*
 * Walk the script's leading comments (where directives are read), counting
 * components; with 'keep' not NO_VAL, blank the lines of the other components
 * and the separators.  RET the number of components.
 */
static uint32_t _het_scan(char *script, uint32_t keep)
{
    char *p;
    uint32_t comp = 0;
    int lineno = 0;

    for (p = script; *p;) {
        char *eol = strchrnul(p, '\n'), *q = p;

        lineno++;
        while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        if ((q < eol) && (*q != '#'))
            break; /* the first command */
        if ((lineno > 1) && (q < eol)) {
            bool sep = _het_separator(q, eol);

            if (sep)
                comp++;
            if ((keep != NO_VAL) && (sep || (comp != keep)))
                memset(p, ' ', eol - p);
        }
        p = *eol ? eol + 1 : eol;
    }
    return comp + 1;
}

extern uint32_t bbh_het_components(const char *script)
{
    char *copy;
    uint32_t n;

    if (!script || !(copy = strdup(script)))
        return 1;
    n = _het_scan(copy, NO_VAL);
    free(copy);
    return n;
}

extern char *bbh_collect_script(const char *script, uint32_t het_job_offset)
{
    char *copy, *out;

    if (!script || (het_job_offset == NO_VAL))
        return hu_bb_collect_script(script);
    if (!(copy = strdup(script)))
        return NULL;
    /* a script without separators is all one component's */
    if (_het_scan(copy, het_job_offset) > 1)
        out = hu_bb_collect_script(copy);
    else
        out = hu_bb_collect_script(script);
    free(copy);
    return out;
}

static bool _is_symbol(char c)
{
    return c && strchr("%Aadjux", c);
}

extern bool bbh_has_symbol(const char *s)
{
    for (; s && *s; s++)
        if (s[0] == '%' && _is_symbol(s[1]))
            return true;
    return false;
}

extern char *bbh_subst(const char *s, const bbh_sym_t *sym, size_t *unresolved)
{
    char *out = xstrdup("");
    size_t len = 0;

    if (unresolved)
        *unresolved = (size_t)-1;
    for (const char *p = s; p && *p; p++) {
        bool known = true;

        if (p[0] != '%' || !_is_symbol(p[1])) {
            xstrcatchar(out, *p);
            len++;
            continue;
        }
        p++;
        switch (*p) {
        case '%':
            xstrcatchar(out, '%');
            break;
        case 'A':
        case 'a':
        case 'j':
            /* not known before the job has its id */
            if (!(known = (sym->job_id != 0)))
                break;
            xstrfmtcat(out, "%u",
                       (*p == 'j')         ? sym->job_id
                       : (*p == 'a')       ? sym->array_task_id
                       : sym->array_job_id ? sym->array_job_id
                                           : sym->job_id);
            break;
        case 'd':
            xstrcat(out, sym->work_dir ? sym->work_dir : "");
            break;
        case 'u':
            xstrcat(out, sym->user ? sym->user : "");
            break;
        case 'x':
            xstrcat(out, sym->name ? sym->name : "");
            break;
        }
        if (!known) {
            if (unresolved && *unresolved == (size_t)-1)
                *unresolved = len;
            xstrcatchar(out, '%');
            xstrcatchar(out, *p);
        }
        len = strlen(out);
    }
    return out;
}

static void _replace(char **field, const bbh_sym_t *sym)
{
    char *s;

    if (!*field || !bbh_has_symbol(*field))
        return;
    s = bbh_subst(*field, sym, NULL);
    free(*field);
    *field = strdup(s); /* the request's strings are malloc'd */
    xfree(s);
}

extern int bbh_subst_request(hu_bb_request_t *req, const bbh_sym_t *sym, char **err)
{
    hu_bb_request_t again;
    hu_error_t e;
    char *canon;
    bool any = false;

    for (int i = 0; i < req->nstage_in; i++)
        any |= bbh_has_symbol(req->stage_in[i].source)
               || bbh_has_symbol(req->stage_in[i].destination);
    for (int i = 0; i < req->nstage_out; i++)
        any |= bbh_has_symbol(req->stage_out[i].source)
               || bbh_has_symbol(req->stage_out[i].destination);
    for (int i = 0; i < req->npersist; i++)
        any |= bbh_has_symbol(req->persist[i].name);
    if (!any)
        return 0;

    for (int i = 0; i < req->nstage_in; i++) {
        _replace(&req->stage_in[i].source, sym);
        _replace(&req->stage_in[i].destination, sym);
    }
    for (int i = 0; i < req->nstage_out; i++) {
        _replace(&req->stage_out[i].source, sym);
        _replace(&req->stage_out[i].destination, sym);
    }
    for (int i = 0; i < req->npersist; i++)
        _replace(&req->persist[i].name, sym);

    /* the replaced values must still be valid directives */
    if (!(canon = hu_bb_format(req))) {
        *err = xstrdup("out of memory");
        return -1;
    }
    memset(&again, 0, sizeof(again));
    if ((hu_bb_parse(&again, canon, strlen(canon), HU_BB_SRC_CANONICAL, &e) < 0)
        || (hu_bb_validate(&again, &e) < 0)) {
        *err = xstrdup_printf("after symbol replacement: %s", e.text);
        hu_bb_request_free(&again);
        free(canon);
        return -1;
    }
    free(canon);
    hu_bb_request_free(req);
    *req = again;
    return 0;
}

/* ------------------------------------------------------------------ paths */

typedef enum {
    PC_ANY,  /* must exist */
    PC_FILE, /* must be a regular file */
    PC_DIR,  /* must be a directory */
} pc_kind_t;

typedef struct {
    char *path; /* what is looked at */
    pc_kind_t kind;
    int line;
    bool bb_item;      /* line is a --bb item number */
    bool out;          /* a stage_out destination's directory */
    const char *shown; /* the path as written */
} pc_item_t;

typedef struct {
    int idx;  /* -1: all checked */
    int what; /* 1: stat failed (err), 2: wrong type */
    int err;
} pc_reply_t;

/* The directory of a path ("/pfs/out/" names out: its directory is /pfs). */
static char *_dirname(const char *path)
{
    size_t n = strlen(path);

    while (n > 1 && path[n - 1] == '/') /* "/pfs/out/" names out */
        n--;
    while (n > 0 && path[n - 1] != '/') /* its name */
        n--;
    while (n > 1 && path[n - 1] == '/') /* the slashes before it */
        n--;
    return n ? xstrndup(path, n) : xstrdup("/");
}

/* A path part up to the last '/' before 'cut' (a symbol not known yet). */
static char *_cut(const char *path, size_t cut)
{
    char *s = xstrndup(path, cut), *slash = strrchr(s, '/');

    if (!slash || slash == s) {
        xfree(s);
        return xstrdup("/");
    }
    *slash = '\0';
    return s;
}

/* In the child, with the user's credentials: only system calls here. */
static void _child(int fd, pc_item_t *items, int n)
{
    struct stat st;
    pc_reply_t r = { -1, 0, 0 };

    for (int i = 0; i < n; i++) {
        if (stat(items[i].path, &st) < 0) {
            r.idx = i;
            r.what = 1;
            r.err = errno;
            break;
        }
        if ((items[i].kind == PC_FILE && !S_ISREG(st.st_mode))
            || (items[i].kind == PC_DIR && !S_ISDIR(st.st_mode))) {
            r.idx = i;
            r.what = 2;
            break;
        }
    }
    if (write(fd, &r, sizeof(r)) != sizeof(r))
        _exit(1);
    _exit(0);
}

static void _item_add(pc_item_t **items, int *n, char *path, pc_kind_t kind, const hu_bb_stage_t *s,
                      bool out, const char *shown)
{
    xrecalloc(*items, *n + 1, sizeof(**items));
    (*items)[*n].path = path;
    (*items)[*n].kind = kind;
    (*items)[*n].line = s->line;
    (*items)[*n].bb_item = s->bb_item;
    (*items)[*n].out = out;
    (*items)[*n].shown = shown;
    (*n)++;
}

static char *_message(pc_item_t *it, pc_reply_t *r)
{
    const char *kind = it->kind == PC_FILE ? "file" : "directory";
    char w[48];
    const char *where = hu_bb_where(it->line, it->bb_item, w, sizeof(w));

    if (it->out) {
        if (r->what == 1 && r->err != ENOENT && r->err != ENOTDIR)
            return xstrdup_printf("#BB_HARMONIA %s: stage_out: the directory of destination '%s' "
                                  "is not accessible to you (%s)",
                                  where, it->shown, strerror(r->err));
        return xstrdup_printf(
            "#BB_HARMONIA %s: stage_out: the directory of destination '%s' does not exist", where,
            it->shown);
    }
    if (r->what == 2)
        return xstrdup_printf("#BB_HARMONIA %s: stage_in: source '%s' is not a %s (type=%s)", where,
                              it->shown, it->kind == PC_FILE ? "regular file" : "directory", kind);
    if (r->err == ENOENT || r->err == ENOTDIR)
        return xstrdup_printf("#BB_HARMONIA %s: stage_in: source '%s' does not exist (%s)", where,
                              it->shown, strerror(r->err));
    return xstrdup_printf("#BB_HARMONIA %s: stage_in: source '%s' is not accessible to you (%s)",
                          where, it->shown, strerror(r->err));
}

extern int bbh_check_paths_as(const hu_bb_request_t *req, uid_t uid, gid_t gid,
                              const bbh_sym_t *sym, char **err)
{
    pc_item_t *items = NULL;
    pc_reply_t r = { -1, 0, 0 };
    gid_t *gids = NULL;
    int n = 0, ngids = 0, fds[2] = { -1, -1 }, rc = 0, status;
    struct pollfd pfd;
    pid_t pid;
    size_t cut;

    for (int i = 0; i < req->nstage_in; i++) {
        const hu_bb_stage_t *s = &req->stage_in[i];
        char *p = bbh_subst(s->source, sym, &cut);
        pc_kind_t kind = s->type == HU_BB_TYPE_FILE        ? PC_FILE
                         : s->type == HU_BB_TYPE_DIRECTORY ? PC_DIR
                                                           : PC_ANY;
        if (cut != (size_t)-1) {
            char *c = _cut(p, cut);
            xfree(p);
            p = c;
            kind = PC_DIR;
        }
        _item_add(&items, &n, p, kind, s, false, s->source);
    }
    for (int i = 0; i < req->nstage_out; i++) {
        const hu_bb_stage_t *s = &req->stage_out[i];
        char *p = bbh_subst(s->destination, sym, &cut);
        char *d = _dirname(p);
        if (cut != (size_t)-1 && cut < strlen(d)) {
            xfree(d);
            d = _cut(p, cut);
        }
        xfree(p);
        _item_add(&items, &n, d, PC_DIR, s, true, s->destination);
    }
    if (!n)
        goto out;

    if ((geteuid() != 0) && (geteuid() != uid)) {
        /* cannot act as the user: stage-in (run as the user) tells */
        debug("%s: cannot check stage paths as uid %u: left to stage-in", __func__, uid);
        goto out;
    }
    if (geteuid() == 0)
        ngids = group_cache_lookup(uid, gid, NULL, &gids);
    if (pipe(fds) < 0) {
        error("%s: pipe: %m", __func__);
        goto out;
    }
    if ((pid = fork()) < 0) {
        error("%s: fork: %m", __func__);
        goto out;
    }
    if (pid == 0) {
        close(fds[0]);
        if (geteuid() == 0
            && ((setgroups(ngids > 0 ? ngids : 0, gids) < 0) || (setresgid(gid, gid, gid) < 0)
                || (setresuid(uid, uid, uid) < 0)))
            _exit(2);
        _child(fds[1], items, n);
    }
    close(fds[1]);
    fds[1] = -1;
    pfd.fd = fds[0];
    pfd.events = POLLIN;
    while ((rc = poll(&pfd, 1, CHECK_TIMEOUT_MS)) < 0 && errno == EINTR)
        ;
    if (rc <= 0 || read(fds[0], &r, sizeof(r)) != sizeof(r)) {
        if (rc == 0)
            error("%s: stage paths of uid %u not checked within %d ms: left to stage-in", __func__,
                  uid, CHECK_TIMEOUT_MS);
        kill(pid, SIGKILL);
        r.idx = -1;
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    rc = 0;
    if (r.idx >= 0 && r.idx < n) {
        *err = _message(&items[r.idx], &r);
        rc = -1;
    }
out:
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    for (int i = 0; i < n; i++)
        xfree(items[i].path);
    xfree(items);
    xfree(gids);
    return rc;
}
