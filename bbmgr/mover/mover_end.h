/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mover_end.h — the mover's API of the teardown of buffer directories
 * (mover_end.c; mover.h includes this file).
 */
#ifndef BBMGR_MOVER_END_H
#define BBMGR_MOVER_END_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mover_types.h"

/* Remove the tree at path (a buffer directory at teardown; first moved to trash when
 * not NULL), as the daemon, by descriptors and without recursion (bufdir_empty();
 * uid/gid: its owner, for the logs).  Never
 * blocks: the removal waits in the mover until the transfers of job (when not NULL)
 * have stopped, and until no stage-out reading from under path is still to be made
 * durable; it is dropped (with a warning) if a stage-out from under path could not
 * be made durable.  dev/ino (not both 0): the directory it is for; anything else
 * found at path then is left alone. */
int mover_rmtree(mover_t *m, const char *job, const char *path, const char *trash, uid_t uid,
                 gid_t gid, dev_t dev, ino_t ino);
/* An administrator released the buffer at path: the sources under it that a
 * stage-out which could not be made durable kept are no longer kept, so that a
 * removal of path may run.  Returns how many were. */
int mover_unkeep(mover_t *m, const char *path);
/* The trash of a directory of buffers (bufdir.h): a buffer directory is moved
 * there, to <parent>/.harmonia-trash/<inode>.<random>, before it is emptied, so that
 * its name is free at once and nothing below it is reached through a name again. */
#define MOVER_TRASH ".harmonia-trash"
/* bufdir_trash_path(): out = "<parent>/.harmonia-trash/<ino>.<random>", pfd the open
 * parent; the trash is made (0711) if missing.  -1: it could not be made (errno), or
 * it is not a directory of this process's uid that only it can list or write
 * (EPERM), or out is too short. */
int mover_trash_path(int pfd, const char *parent, ino_t ino, char *out, size_t len);
/* rename(from, to) of a buffer directory a new buffer needs the name of, under the
 * mover's lock: the stage-outs that read from it, and its teardown, follow it (so the
 * late teardown of an earlier buffer of that name never reaches the new one). */
int mover_aside(mover_t *m, const char *from, const char *to);

/* What failed teardowns left (kept in the trash and tried again, mover_rmtree()):
 * the bytes they held when last measured (st_blocks, as bufdir_usage_step()), of
 * those under 'under' (all when NULL), until a later try removes them.  Returns how
 * many there are. */
int mover_leftover(mover_t *m, const char *under, uint64_t *bytes);

#endif
