/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bufdir.h — the buffer directories of a mount, by descriptors: the one module
 * through which bbnoded and bbmgrd's embedded mode (through the mover's teardown)
 * walk the trees that users control.
 *
 * Every call is relative to a directory already open (*at() calls), never follows
 * a symbolic link (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW), never blocks on what it opens
 * (O_NONBLOCK), never leaves the file system of the directory it starts from, and
 * keeps no state on the stack that grows with the tree: a tree of any depth, with
 * paths of any length (far beyond PATH_MAX), is walked with one descriptor and a
 * heap list of (device, inode, name) per level.  doc/security.md, "Teardown".
 */
#ifndef BBMGR_BUFDIR_H
#define BBMGR_BUFDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "libhutil/hutil.h"

/* The trash of a directory of buffers: <parent>/.harmonia-trash (the daemon's,
 * mode 0711: nobody else can list it).  A buffer directory is moved there before
 * it is emptied, under a name nobody can guess (its inode and 64 random bits), so
 * that its name is free at once and no user reaches it by a path again. */
#define BUFDIR_TRASH ".harmonia-trash"

typedef struct {
    const bool *stop;      /* when set (atomically read): stop at the next entry */
    uid_t uid;             /* each directory is given to uid:gid, mode 0700, before */
    gid_t gid;             /* it is read: nobody else adds to it while it is emptied */
    unsigned long removed; /* out: entries removed */
    size_t depth;          /* out: deepest level reached (1: dfd's entries) */
} bufdir_rm_t;

/* Remove everything below the directory open at dfd (not the directory itself),
 * without recursion, each directory locked (o->uid/gid, 0700) before it is read.
 * 0: it is empty.  -1 with errno (EINTR: *o->stop was set) and a sentence in why:
 * what could not be removed, at which depth, and why (a file system mounted inside,
 * an I/O error, a parent that is no longer the one walked down from). */
int bufdir_empty(int dfd, bufdir_rm_t *o, hu_error_t *why);

/* out = "<parent>/.harmonia-trash/<ino>.<random>", pfd the open parent; the trash
 * is made (0711) if missing.  -1: it could not be made (errno), or it is not a
 * directory of this process's uid writable by it alone (EPERM), or out is too
 * short (ENAMETOOLONG). */
int bufdir_trash_path(int pfd, const char *parent, ino_t ino, char *out, size_t len);

/* Spare directories: up to BUFDIR_SPARE_MAX empty directories (the daemon's, 0700)
 * in <mount>/.harmonia-spare/N, made while no buffer directory is asked for, so
 * that making one is a rename.  The state is the caller's (a node of bbmgrd, an
 * agent): how many are ready (named top - n .. top - 1) and whether the spare
 * directory is unusable (logged once). */
#define BUFDIR_SPARE ".harmonia-spare"
#define BUFDIR_SPARE_MAX 32
typedef struct {
    int *n;
    unsigned *top;
    bool *off;
} bufdir_spares_t;

/* Make up to 'budget' spares in the mount open at mfd (named 'mount' in logs). */
void bufdir_spares_fill(int mfd, const char *mount, bufdir_spares_t s, int budget);
/* Rename a spare to <pfd>/name: true when done (the caller gives it its owner). */
bool bufdir_spare_take(int mfd, const char *mount, bufdir_spares_t s, int pfd, const char *name);

/* Make the buffer directory <pfd>/name for uid:gid, mode 0700: a spare of the
 * mount mfd renamed into place when s is given and one is ready, else mkdirat().
 * Never an existing directory (the name must be free: move an earlier one aside
 * first), and given to its owner only once checked to be the daemon's new one.
 * 0 with its fstat in *st, or -1 with errno and in *what the step that failed. */
int bufdir_create(int pfd, const char *name, int mfd, const char *mount, const bufdir_spares_t *s,
                  uid_t uid, gid_t gid, struct stat *st, const char **what);
/* The second half of bufdir_create(): <pfd>/name, a directory this process just
 * made (quota.c: a subvolume, a directory with a project id), checked to be its
 * own, given to uid:gid with mode 0700. */
int bufdir_own(int pfd, const char *name, uid_t uid, gid_t gid, struct stat *st, const char **what);

/* Call fn for each directory in <pfd>/.harmonia-trash (entries that are not
 * directories are passed over), with the trash's descriptor, the entry's name and
 * its lstat.  Nothing when the trash is missing or not the daemon's alone (0,
 * with a warning naming 'parent' for the latter).  fn returns 0 to go on. */
typedef int (*bufdir_trash_f)(int tfd, const char *name, const struct stat *st, void *arg);
int bufdir_trash_each(int pfd, const char *parent, bufdir_trash_f fn, void *arg);

/* The space a buffer directory takes, measured by a walk done in bounded steps so
 * that a tree of millions of entries never stalls the caller: st_blocks * 512 of
 * every entry below it (and of the directory itself), a file of several links
 * counted once per walk, nothing followed or entered on another file system, one
 * descriptor held between steps (the directory being read).  The walk is the
 * caller's (one per buffer directory); it starts again after each total. */
typedef struct bufdir_usage bufdir_usage_t;
bufdir_usage_t *bufdir_usage_new(void);
void bufdir_usage_free(bufdir_usage_t *u);
/* Walk on from where the last step stopped (the first step: from the directory
 * open at dfd, which is only read then), looking at up to *budget entries
 * (less those looked at, on return).  1:
 * the walk is complete, its total in *bytes and the next step starts a new walk;
 * 0: not complete yet; -1 with errno: it was abandoned (the tree moved under it:
 * ESTALE; the directory could not be read), the next step starts a new walk. */
int bufdir_usage_step(bufdir_usage_t *u, int dfd, unsigned long *budget, uint64_t *bytes);

#endif
