/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mover_base.c — the bottom of the mover (see mover.c for the task life cycle):
 * the task FIFO and task objects, partial-file names, the small helpers of the
 * messages (mover_xprintf, mover_pjoin, mover_kind_name, mover_tfail), acting as the job's user
 * (mover_become) and the owner of what a transfer creates (mover_set_owner).  It calls
 * nothing of the mover's other files.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "log.h"
#include "mover_base.h"

/* ------------------------------------------------------------------ FIFO */
/* Append t to the task list head..tail and wake one thread waiting on cond. */
void mover_tq_push(task_t **head, task_t **tail, pthread_cond_t *cond, task_t *t)
{
    t->next = NULL;
    if (*tail)
        (*tail)->next = t;
    else
        *head = t;
    *tail = t;
    pthread_cond_signal(cond);
}

void mover_fifo_push(mover_t *m, task_t *t)
{
    mover_tq_push(&m->head, &m->tail, &m->cond, t);
}

/* Take the first task of the list head..tail (NULL if empty). */
task_t *mover_tq_pop(task_t **head, task_t **tail)
{
    task_t *t = *head;
    if (t) {
        *head = t->next;
        if (!*head)
            *tail = NULL;
    }
    return t;
}

task_t *mover_fifo_pop(mover_t *m)
{
    return mover_tq_pop(&m->head, &m->tail);
}

void mover_task_free(task_t *t)
{
    if (t) {
        free(t->msg);
        free(t->path);
        free(t->trash);
        free(t);
    }
}

task_t *mover_task_new(task_kind_t kind, mxfer_t *x)
{
    task_t *t = calloc(1, sizeof(*t));
    if (t) {
        t->kind = kind;
        t->x = x;
        t->ok = true;
    }
    return t;
}

/* ------------------------------------------------------------------ names */
/* The temporary name of a file being copied: .<name>.harmonia-partial-<tid> in its
 * destination directory (a shorter one when the name is long). */
char *mover_tmp_name(const char *dst, uint64_t tid, int idx)
{
    const char *slash = strrchr(dst, '/');
    const char *base = slash ? slash + 1 : dst;
    int dirlen = slash ? (int)(slash - dst) : 0;
    if (strlen(base) + 40 > NAME_MAX)
        return mover_xprintf("%.*s/.harmonia-partial-%ju-%d", dirlen, dst, (uintmax_t)tid, idx);
    return mover_xprintf("%.*s/.%s.harmonia-partial-%ju", dirlen, dst, base, (uintmax_t)tid);
}

char *mover_xprintf(const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

char *mover_pjoin(const char *a, const char *b)
{
    if (!*b)
        return strdup(a);
    return mover_xprintf("%s%s%s", a, a[strlen(a) - 1] == '/' ? "" : "/", b);
}

const char *mover_kind_name(const mxfer_t *x)
{
    return x->stage_out ? "stage_out" : "stage_in";
}

/* An error message for task t, once. */
int mover_tfail(task_t *t, int err, const char *path, const char *what)
{
    char eb[128];
    if (!t->msg)
        t->msg = mover_xprintf("%s %s: %s: %s", mover_kind_name(t->x), path, what,
                               strerror_r(err, eb, sizeof(eb)));
    t->ok = false;
    errno = err;
    return -1;
}

/* ------------------------------------------------------------------ acting as the user */
/* The identity this thread acts as (valid: set by mover_become() and not changed since:
 * only mover_become() changes it), so that consecutive tasks of one user cost no syscall. */
static __thread ident_t cur_id;
static __thread bool cur_valid;

static __thread bool caps_dropped;

/* This thread's effective capabilities: none (none), or its permitted ones back.
 * Acting as a user, the thread keeps no privilege at all: setfsuid() already drops
 * those of file access, and this the others, CAP_SYS_RESOURCE first (so that the
 * user's quota and the file system's reserved blocks apply to what is written on
 * the user's behalf).  Capabilities are per thread. */
static int caps_effective(bool none)
{
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    if (syscall(SYS_capget, &h, d) < 0)
        return -1;
    for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
        d[i].effective = none ? 0 : d[i].permitted;
    if (syscall(SYS_capset, &h, d) < 0)
        return -1;
    caps_dropped = none;
    return 0;
}

static bool ident_eq(const ident_t *a, const ident_t *b)
{
    return a->uid == b->uid && a->gid == b->gid && a->ngroups == b->ngroups
           && !memcmp(a->groups, b->groups, (size_t)a->ngroups * sizeof(gid_t));
}

/* Act as id for file access (this thread only: setfsuid/setfsgid and a raw
 * setgroups, which glibc would otherwise apply to every thread). */
int mover_become(mover_t *m, const ident_t *id)
{
    if (!m->root) {
        if (id->uid != m->self.uid) {
            errno = EPERM;
            return -1;
        }
        return 0;
    }
    if (cur_valid && ident_eq(&cur_id, id))
        return 0;
    cur_valid = false;
    if (caps_dropped && caps_effective(false) < 0)
        return -1;
    if (syscall(SYS_setgroups, (size_t)id->ngroups, id->groups) < 0)
        return -1;
    setfsgid(id->gid);
    if ((gid_t)setfsgid((gid_t)-1) != id->gid)
        goto eperm;
    setfsuid(id->uid);
    if ((uid_t)setfsuid((uid_t)-1) != id->uid)
        goto eperm;
    if (id->uid != m->self.uid && caps_effective(true) < 0)
        return -1;
    cur_id.uid = id->uid;
    cur_id.gid = id->gid;
    cur_id.ngroups = id->ngroups;
    memcpy(cur_id.groups, id->groups, (size_t)id->ngroups * sizeof(gid_t));
    cur_valid = true;
    return 0;
eperm:
    errno = EPERM;
    return -1;
}

/* have: the current owner when known (NULL: unknown), to skip a chown that
 * would change nothing */
void mover_set_owner(mxfer_t *x, const entry_t *e, int fd, const char *path, int flags,
                     const struct stat *have)
{
    uid_t uid = x->stage_out ? e->st.st_uid : x->id.uid;
    gid_t gid = x->stage_out ? e->st.st_gid : x->id.gid;
    if (have && have->st_uid == uid && have->st_gid == gid)
        return;
    int rc = fd >= 0 ? fchown(fd, uid, gid) : fchownat(AT_FDCWD, path, uid, gid, flags);
    /* stage-out as the user: a buffer file owned by someone else stays the user's */
    if (rc < 0 && errno != EPERM)
        bl_debug("mover: transfer %ju: chown %s: %s", (uintmax_t)x->tid, path, strerror(errno));
}
