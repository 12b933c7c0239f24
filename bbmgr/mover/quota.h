/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * quota.h — a buffer's capacity enforced by the file system of its mount
 * (capacity.enforce of bbmgr.yaml), for bbnoded and bbmgrd's embedded mode alike:
 * the buffer directory is made limited to the buffer's bytes on that mount, so
 * that a write past them fails with EDQUOT in the application.
 *
 *   btrfs    the directory is a subvolume (BTRFS_IOC_SUBVOL_CREATE) with a qgroup
 *            limit of referenced bytes (BTRFS_IOC_QGROUP_LIMIT); quota is enabled
 *            on the file system if it is not (BTRFS_IOC_QUOTA_CTL).  The same
 *            limit is put on a level-1 qgroup of its own, 1/ID (ID: the buffer's
 *            subvolume id), that holds the buffer's 0/ID and every subvolume its
 *            user makes below it (the usage walk assigns them, quota_nested_join()).
 *            Its teardown is the usual one: emptied by descriptors, nested
 *            subvolumes too, then rmdir(), which deletes an empty subvolume; 1/ID
 *            is destroyed before (quota_tree_drop()).
 *   project  ext4 or XFS mounted with project quotas: the directory gets a free
 *            project id of QUOTA_PROJID_BASE .. + QUOTA_PROJID_SPAN with
 *            FS_XFLAG_PROJINHERIT (FS_IOC_FSSETXATTR) and a block limit
 *            (quotactl_fd(Q_SETQUOTA, PRJQUOTA), which XFS takes too).
 *
 * Anything else (or a failure under "auto") leaves the buffer measured only, the
 * reason logged once per mount.  doc/security.md, Capacity.
 */
#ifndef BBMGR_QUOTA_H
#define BBMGR_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/fs.h>
#include <sys/stat.h>
#include "libhutil/hutil.h"

/* QCMD() of <linux/quota.h> without its signed overflow (Q_GETQUOTA << 8) */
#define QUOTA_QCMD(cmd, type) ((int)(((unsigned)(cmd) << 8) | ((unsigned)(type)&0xffu)))

#define QUOTA_PROJID_BASE 0x40000000u
#define QUOTA_PROJID_SPAN 0x00100000u

/* What one mount was found to support (the caller's, one per mount). */
typedef struct {
    signed char kind; /* 0: not looked at yet, else QUOTA_K_* */
    bool said;        /* "measured only" logged */
    bool btrfs_on;    /* quota enabled on the btrfs file system */
} quota_mount_t;
enum { QUOTA_K_NONE = 1, QUOTA_K_BTRFS, QUOTA_K_PROJECT };

/* The system calls of the project-quota layer (a table so that its unit test
 * runs where no file system has project quotas). */
struct if_dqblk;
typedef struct {
    int (*getxattr)(int fd, struct fsxattr *fx);               /* FS_IOC_FSGETXATTR */
    int (*setxattr)(int fd, const struct fsxattr *fx);         /* FS_IOC_FSSETXATTR */
    int (*quotactl)(int fd, int cmd, unsigned id, void *addr); /* quotactl_fd() */
} quota_sys_t;
extern const quota_sys_t quota_sys;

/* Give the directory open at fd (the daemon's, new) a project id of its own and a
 * limit of bytes (rounded up to 1 KiB blocks), inherited below it.  0 with the id
 * in *id; -1 with errno and the reason in why. */
int quota_project_set(const quota_sys_t *sys, int fd, uint64_t bytes, unsigned *id,
                      hu_error_t *err);

/* Can the mount (its directory open at pfd) honour enforce?  0: yes, or enforce
 * does not require it ("auto", "none"); -1 with errno and in why the reason,
 * naming the mount.  What the mount is, is kept in q. */
int quota_check(quota_mount_t *q, const char *enforce, int pfd, const char *mount, hu_error_t *err);

/* Are spare directories (bufdir.h) of use on the mount open at mfd?  Not where
 * its buffer directories are made limited (a subvolume, a project id of their
 * own): quota_make() makes those itself. */
bool quota_spares(quota_mount_t *q, const char *enforce, int mfd);

/* Make the buffer directory <pfd>/name (the daemon's, mode 0700) limited to bytes
 * as enforce ("auto", "btrfs", "project", "none") says on the mount named mount.
 * 1: made and limited, or made and left unlimited under "auto" (logged): the
 * caller gives it to its owner (bufdir_own()); 0: nothing made, the mount does not
 * enforce (logged once): the caller makes it the usual way; -1: enforce asked for
 * btrfs or project and it cannot be: nothing left at the name, errno and in why
 * the reason naming the mount. */
int quota_make(quota_mount_t *q, const char *enforce, int pfd, const char *name, const char *mount,
               uint64_t bytes, hu_error_t *err);

/* ------------------------------------------------------------------ nested subvolumes
 * A user may make btrfs subvolumes of their own below a buffer directory: each
 * has a device number of its own.  The walks of a buffer (removal, usage,
 * stage-out) enter such a directory only when quota_nested() says it is the root
 * of a subvolume of the buffer's own file system, reached without crossing a
 * mount; never anything else of another device. */
#define QUOTA_UUID 16
typedef struct {
    bool btrfs;                     /* the buffer's file system is btrfs */
    unsigned char uuid[QUOTA_UUID]; /* its uuid (BTRFS_IOC_FS_INFO) */
    uint64_t mnt;                   /* the mount id of the buffer's top (statx), 0: unknown */
    uint64_t top; /* the top's subvolume id (its group 1/top), 0: not a subvolume */
} quota_tree_t;

/* What tells the nested subvolumes of the tree whose top is open at fd (st). */
void quota_tree_init(quota_tree_t *t, int fd, const struct stat *st);
/* Is the directory open at fd (st), of another device than its parent, the root
 * of a subvolume of t's file system, on the same mount? */
bool quota_nested(const quota_tree_t *t, int fd, const struct stat *st);
/* The nested subvolume open at fd counted in (join) or taken out of (leave) the
 * buffer's level-1 qgroup.  0, or -1 with errno (ENOENT: the buffer has none). */
int quota_nested_join(const quota_tree_t *t, int fd);
int quota_nested_leave(const quota_tree_t *t, int fd);
/* The nested subvolume open at fd made writable if it is a read-only one (its
 * owner may snapshot it so), to be emptied.  0 or -1 with errno. */
int quota_nested_rw(int fd);
/* The buffer's level-1 qgroup destroyed (fd: its top, emptied).  0 or -1, errno. */
int quota_tree_drop(const quota_tree_t *t, int fd);

#endif
