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
#include <sys/types.h>

/* The trash of a directory of buffers: <parent>/.harmonia-trash (the daemon's,
 * mode 0711: nobody else can list it).  A buffer directory is moved there before
 * it is emptied, under a name nobody can guess (its inode and 64 random bits), so
 * that its name is free at once and no user reaches it by a path again. */
#define BUFDIR_TRASH ".harmonia-trash"

typedef struct {
    const bool *stop;           /* when set (atomically read): stop at the next entry */
    uid_t uid;                  /* each directory is given to uid:gid, mode 0700, before */
    gid_t gid;                  /* it is read: nobody else adds to it while it is emptied */
    unsigned long removed;      /* out: entries removed */
    size_t depth;               /* out: deepest level reached (1: dfd's entries) */
} bufdir_rm_t;

/* Remove everything below the directory open at dfd (not the directory itself),
 * without recursion, each directory locked (o->uid/gid, 0700) before it is read.
 * 0: it is empty.  -1 with errno (EINTR: *o->stop was set) and a sentence in why:
 * what could not be removed, at which depth, and why (a file system mounted inside,
 * an I/O error, a parent that is no longer the one walked down from). */
int bufdir_empty(int dfd, bufdir_rm_t *o, char *why, size_t whylen);

/* out = "<parent>/.harmonia-trash/<ino>.<random>", pfd the open parent; the trash
 * is made (0711) if missing.  -1: it could not be made (errno), or it is not a
 * directory of this process's uid writable by it alone (EPERM), or out is too
 * short (ENAMETOOLONG). */
int bufdir_trash_path(int pfd, const char *parent, ino_t ino, char *out, size_t len);

#endif
