/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * quota.c — a buffer directory limited to its capacity by the file system of its
 * mount: a btrfs subvolume with a qgroup limit, or an ext4/XFS project quota.
 * See quota.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/quota.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "log.h"
#include "quota.h"
#include "util.h"

#ifndef BTRFS_FIRST_FREE_OBJECTID
#define BTRFS_FIRST_FREE_OBJECTID 256
#endif

static int sys_getxattr(int fd, struct fsxattr *fx)
{
    return ioctl(fd, FS_IOC_FSGETXATTR, fx);
}

static int sys_setxattr(int fd, const struct fsxattr *fx)
{
    return ioctl(fd, FS_IOC_FSSETXATTR, fx);
}

static int sys_quotactl(int fd, int cmd, unsigned id, void *addr)
{
#ifdef SYS_quotactl_fd
    return (int)syscall(SYS_quotactl_fd, fd, (unsigned)cmd, (int)id, addr);
#else
    (void)fd, (void)cmd, (void)id, (void)addr;
    errno = ENOSYS;
    return -1;
#endif
}

const quota_sys_t quota_sys = { sys_getxattr, sys_setxattr, sys_quotactl };

/* ------------------------------------------------------------------ project */

int quota_project_set(const quota_sys_t *sys, int fd, uint64_t bytes, unsigned *id, hu_error_t *err)
{
    struct stat st;
    struct fsxattr fx;
    struct if_dqblk dq;
    unsigned pick = 0;
    if (fstat(fd, &st) < 0)
        return util_fail(errno, err, "fstat: %s", strerror(errno));
    /* a free id: nothing charged to it (a limit left by an earlier buffer is
     * replaced); starting from the inode, so that two mounts rarely probe alike.
     * XFS answers ENOENT for an id it has no record of (ext4 gives zeros): free */
    for (unsigned k = 0; k < 64 && !pick; k++) {
        unsigned cand = QUOTA_PROJID_BASE + (unsigned)((st.st_ino + k) % QUOTA_PROJID_SPAN);
        memset(&dq, 0, sizeof(dq));
        if (sys->quotactl(fd, QUOTA_QCMD(Q_GETQUOTA, PRJQUOTA), cand, &dq) < 0) {
            if (errno == ENOENT) {
                pick = cand;
                break;
            }
            return util_fail(errno, err,
                             "project quota of id %u: %s (is the file system "
                             "mounted with project quotas?)",
                             cand, strerror(errno));
        }
        if (dq.dqb_curspace == 0 && dq.dqb_curinodes == 0)
            pick = cand;
    }
    if (!pick)
        return util_fail(EBUSY, err, "no free project id among 64 tried from %u",
                         QUOTA_PROJID_BASE);
    if (sys->getxattr(fd, &fx) < 0)
        return util_fail(errno, err, "FS_IOC_FSGETXATTR: %s", strerror(errno));
    fx.fsx_projid = pick;
    fx.fsx_xflags |= FS_XFLAG_PROJINHERIT;
    if (sys->setxattr(fd, &fx) < 0)
        return util_fail(errno, err, "set project id %u: %s", pick, strerror(errno));
    memset(&dq, 0, sizeof(dq));
    dq.dqb_bhardlimit = dq.dqb_bsoftlimit = (bytes + QIF_DQBLKSIZE - 1) / QIF_DQBLKSIZE;
    dq.dqb_valid = QIF_BLIMITS;
    if (sys->quotactl(fd, QUOTA_QCMD(Q_SETQUOTA, PRJQUOTA), pick, &dq) < 0)
        return util_fail(errno, err, "limit of project %u to %ju bytes: %s", pick, (uintmax_t)bytes,
                         strerror(errno));
    *id = pick;
    return 0;
}

/* ------------------------------------------------------------------ btrfs */

static int btrfs_limit(quota_mount_t *q, int pfd, int fd, uint64_t bytes, hu_error_t *err)
{
    struct btrfs_ioctl_qgroup_limit_args la;
    if (!q->btrfs_on) {
        struct btrfs_ioctl_quota_ctl_args qa = { .cmd = BTRFS_QUOTA_CTL_ENABLE };
        if (ioctl(pfd, BTRFS_IOC_QUOTA_CTL, &qa) < 0)
            return util_fail(errno, err, "enable btrfs quota: %s", strerror(errno));
        q->btrfs_on = true;
    }
    memset(&la, 0, sizeof(la));
    la.qgroupid = 0; /* the subvolume of fd */
    la.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
    la.lim.max_rfer = bytes;
    if (ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &la) < 0) {
        q->btrfs_on = errno != ENOTCONN && errno != EINVAL; /* quota was turned off */
        return util_fail(errno, err, "btrfs qgroup limit of %ju bytes: %s", (uintmax_t)bytes,
                         strerror(errno));
    }
    return 0;
}

/* The id of the subvolume whose root is open at fd, 0 on failure. */
static uint64_t subvol_id(int fd)
{
    struct btrfs_ioctl_ino_lookup_args a;
    memset(&a, 0, sizeof(a));
    a.objectid = BTRFS_FIRST_FREE_OBJECTID;
    return ioctl(fd, BTRFS_IOC_INO_LOOKUP, &a) < 0 ? 0 : a.treeid;
}

#define QGROUP_LEVEL_SHIFT 48 /* the level in the top 16 bits of a qgroup id */
#define LEVEL1(id) ((1ull << QGROUP_LEVEL_SHIFT) | (id))

/* 0/src in (assign) or out of 1/dst.  A relation made with bytes the kernel cannot
 * add at once leaves the accounting inconsistent: a rescan mends it. */
static int btrfs_assign(int fd, uint64_t src, uint64_t dst, bool assign)
{
    struct btrfs_ioctl_qgroup_assign_args a = { .assign = assign, .src = src, .dst = LEVEL1(dst) };
    int rc = ioctl(fd, BTRFS_IOC_QGROUP_ASSIGN, &a);
    if (rc > 0) {
        struct btrfs_ioctl_quota_rescan_args r;
        memset(&r, 0, sizeof(r));
        if (ioctl(fd, BTRFS_IOC_QUOTA_RESCAN, &r) < 0 && errno != EINPROGRESS)
            bl_warning("btrfs quota rescan after qgroup %ju in 1/%ju: %s", (uintmax_t)src,
                       (uintmax_t)dst, strerror(errno));
        rc = 0;
    }
    return rc;
}

/* The level-1 qgroup 1/ID of the new buffer subvolume fd (ID its id), holding
 * its 0/ID, limited to bytes: what its user's own subvolumes below it count in. */
static int btrfs_group(int fd, uint64_t bytes, hu_error_t *err)
{
    uint64_t id = subvol_id(fd);
    struct btrfs_ioctl_qgroup_create_args ca = { .create = 1 };
    struct btrfs_ioctl_qgroup_limit_args la;
    if (!id)
        return util_fail(errno, err, "subvolume id: %s", strerror(errno));
    ca.qgroupid = LEVEL1(id);
    /* EEXIST: one the site made, not ours to use nor to destroy */
    if (ioctl(fd, BTRFS_IOC_QGROUP_CREATE, &ca) < 0)
        return util_fail(errno, err, "create qgroup 1/%ju: %s", (uintmax_t)id, strerror(errno));
    if (btrfs_assign(fd, id, id, true) < 0)
        return util_fail(errno, err, "assign 0/%ju to 1/%ju: %s", (uintmax_t)id, (uintmax_t)id,
                         strerror(errno));
    memset(&la, 0, sizeof(la));
    la.qgroupid = LEVEL1(id);
    la.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
    la.lim.max_rfer = bytes;
    if (ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &la) < 0)
        return util_fail(errno, err, "limit of qgroup 1/%ju: %s", (uintmax_t)id, strerror(errno));
    return 0;
}

/* The uuid of the btrfs file system of fd (f_fsid differs between its
 * subvolumes); -1 when it is not btrfs. */
static int btrfs_uuid(int fd, unsigned char uuid[QUOTA_UUID])
{
    struct statfs sf;
    struct btrfs_ioctl_fs_info_args fi;
    if (fstatfs(fd, &sf) < 0 || (unsigned long)sf.f_type != BTRFS_SUPER_MAGIC)
        return -1;
    memset(&fi, 0, sizeof(fi));
    if (ioctl(fd, BTRFS_IOC_FS_INFO, &fi) < 0)
        return -1;
    memcpy(uuid, fi.fsid, QUOTA_UUID);
    return 0;
}

void quota_tree_init(quota_tree_t *t, int fd, const struct stat *st)
{
    struct statx sx;
    memset(t, 0, sizeof(*t));
    if (btrfs_uuid(fd, t->uuid) < 0)
        return;
    t->btrfs = true;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID))
        t->mnt = sx.stx_mnt_id;
    if (st->st_ino == BTRFS_FIRST_FREE_OBJECTID)
        t->top = subvol_id(fd);
}

bool quota_nested(const quota_tree_t *t, int fd, const struct stat *st)
{
    unsigned char uuid[QUOTA_UUID];
    struct statx sx;
    if (!t->btrfs || !S_ISDIR(st->st_mode) || st->st_ino != BTRFS_FIRST_FREE_OBJECTID
        || btrfs_uuid(fd, uuid) < 0 || memcmp(t->uuid, uuid, QUOTA_UUID))
        return false;
    /* a bind mount of a subvolume of the same file system looks alike but for
     * its mount */
    if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID))
        return sx.stx_mnt_id == t->mnt;
    return t->mnt == 0;
}

static int nested_assign(const quota_tree_t *t, int fd, bool assign)
{
    uint64_t id;
    if (!t->top) {
        errno = ENOENT;
        return -1;
    }
    if (!(id = subvol_id(fd)))
        return -1;
    return btrfs_assign(fd, id, t->top, assign);
}

int quota_nested_join(const quota_tree_t *t, int fd)
{
    return nested_assign(t, fd, true) < 0 && errno != EEXIST ? -1 : 0;
}

int quota_nested_leave(const quota_tree_t *t, int fd)
{
    return nested_assign(t, fd, false) < 0 && errno != ENOENT && errno != ENOTCONN ? -1 : 0;
}

int quota_nested_rw(int fd)
{
    __u64 flags = 0;
    if (ioctl(fd, BTRFS_IOC_SUBVOL_GETFLAGS, &flags) < 0)
        return -1;
    if (!(flags & BTRFS_SUBVOL_RDONLY))
        return 0;
    flags &= ~(__u64)BTRFS_SUBVOL_RDONLY;
    return ioctl(fd, BTRFS_IOC_SUBVOL_SETFLAGS, &flags);
}

int quota_tree_drop(const quota_tree_t *t, int fd)
{
    struct btrfs_ioctl_qgroup_create_args ca = { .create = 0 };
    if (!t->top)
        return 0;
    /* only a group holding the buffer's own 0/ID is the one quota_make() made */
    if (btrfs_assign(fd, t->top, t->top, false) < 0)
        return errno == ENOENT || errno == ENOTCONN ? 0 : -1;
    ca.qgroupid = LEVEL1(t->top);
    return ioctl(fd, BTRFS_IOC_QGROUP_CREATE, &ca) < 0 && errno != ENOENT ? -1 : 0;
}

static int btrfs_subvol(int pfd, const char *name, hu_error_t *err)
{
    struct btrfs_ioctl_vol_args va;
    memset(&va, 0, sizeof(va));
    if (strlen(name) >= sizeof(va.name))
        return util_fail(ENAMETOOLONG, err, "name too long for a subvolume");
    memcpy(va.name, name, strlen(name));
    if (ioctl(pfd, BTRFS_IOC_SUBVOL_CREATE, &va) < 0)
        return util_fail(errno, err, "create subvolume: %s", strerror(errno));
    return 0;
}

/* ------------------------------------------------------------------ the mount */

static int kind_of(int pfd, hu_error_t *err)
{
    struct statfs sf;
    struct if_dqinfo di;
    if (fstatfs(pfd, &sf) < 0) {
        util_fail(errno, err, "statfs: %s", strerror(errno));
        return QUOTA_K_NONE;
    }
    if ((unsigned long)sf.f_type == BTRFS_SUPER_MAGIC)
        return QUOTA_K_BTRFS;
    if ((unsigned long)sf.f_type != EXT4_SUPER_MAGIC
        && (unsigned long)sf.f_type != XFS_SUPER_MAGIC) {
        util_fail(EOPNOTSUPP, err,
                  "its file system (type 0x%lx) is neither btrfs, ext4 nor "
                  "XFS",
                  (unsigned long)sf.f_type);
        return QUOTA_K_NONE;
    }
    if (quota_sys.quotactl(pfd, QUOTA_QCMD(Q_GETINFO, PRJQUOTA), 0, &di) < 0) {
        util_fail(errno, err,
                  "%s without project quotas on (%s; mount it with prjquota "
                  "or pquota)",
                  (unsigned long)sf.f_type == XFS_SUPER_MAGIC ? "XFS" : "ext4", strerror(errno));
        return QUOTA_K_NONE;
    }
    return QUOTA_K_PROJECT;
}

/* The directory just made at <pfd>/name, checked to be the daemon's new one. */
static int open_new(int pfd, const char *name, bool subvol, hu_error_t *err)
{
    struct stat st;
    int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return util_fail(errno, err, "open: %s", strerror(errno));
    if (fstat(fd, &st) < 0 || st.st_uid != geteuid()
        || (subvol && st.st_ino != BTRFS_FIRST_FREE_OBJECTID)) {
        close(fd);
        return util_fail(EEXIST, err, "not the directory made for it");
    }
    return fd;
}

static int wanted(const char *enforce)
{
    return !strcmp(enforce, "btrfs")     ? QUOTA_K_BTRFS
           : !strcmp(enforce, "project") ? QUOTA_K_PROJECT
           : !strcmp(enforce, "none")    ? QUOTA_K_NONE
                                         : 0;
}

/* The mount's kind looked at if not yet (r: why it is none); -1: enforce asks for
 * another one (why names the mount). */
static int check(quota_mount_t *q, const char *enforce, int want, int pfd, const char *mount,
                 hu_error_t *r, hu_error_t *err)
{
    if (!q->kind)
        q->kind = (signed char)kind_of(pfd, r);
    if (want && want != QUOTA_K_NONE && q->kind != want) {
        if (q->kind != QUOTA_K_NONE)
            hu_errprintf(r, "its file system is %s",
                         q->kind == QUOTA_K_BTRFS ? "btrfs" : "one with project quotas");
        else if (!r->text[0])
            kind_of(pfd, r);
        q->kind = 0; /* looked at again next time (the site may mend it) */
        return util_fail(EOPNOTSUPP, err,
                         "capacity.enforce: %s: buffer mount %s cannot "
                         "enforce it: %s",
                         enforce, mount, r->text);
    }
    return 0;
}

int quota_check(quota_mount_t *q, const char *enforce, int pfd, const char *mount, hu_error_t *err)
{
    hu_error_t r = { "" };
    int want = wanted(enforce);
    return want == QUOTA_K_NONE ? 0 : check(q, enforce, want, pfd, mount, &r, err);
}

bool quota_spares(quota_mount_t *q, const char *enforce, int mfd)
{
    hu_error_t r = { "" };
    int want = wanted(enforce);
    if (want == QUOTA_K_NONE)
        return true;
    if (!q->kind)
        q->kind = (signed char)kind_of(mfd, &r);
    return q->kind == QUOTA_K_NONE;
}

int quota_make(quota_mount_t *q, const char *enforce, int pfd, const char *name, const char *mount,
               uint64_t bytes, hu_error_t *err)
{
    hu_error_t r = { "" };
    int want = wanted(enforce);
    if (want == QUOTA_K_NONE || bytes == 0) /* 0: no limit said (never "nothing") */
        return 0;
    if (check(q, enforce, want, pfd, mount, &r, err) < 0)
        return -1;
    if (q->kind == QUOTA_K_NONE) {
        if (!q->said)
            bl_info("buffer mount %s: capacities are measured, not enforced by the file "
                    "system: %s (said once)",
                    mount, r.text);
        q->said = true;
        return 0;
    }
    bool btrfs = q->kind == QUOTA_K_BTRFS;
    if (btrfs ? btrfs_subvol(pfd, name, &r) < 0 : mkdirat(pfd, name, 0700) < 0) {
        int e = errno;
        if (!btrfs)
            hu_errprintf(&r, "mkdir: %s", strerror(e));
        if (e != EEXIST && !want) {
            if (!q->said)
                bl_warning("buffer mount %s: %s: capacities measured instead (said once)", mount,
                           r.text);
            q->said = true;
            return 0;
        }
        return util_fail(e, err, "buffer mount %s: %s", mount, r.text);
    }
    int fd = open_new(pfd, name, btrfs, &r);
    unsigned id = 0;
    int rc = fd < 0  ? -1
             : btrfs ? btrfs_limit(q, pfd, fd, bytes, &r)
                     : quota_project_set(&quota_sys, fd, bytes, &id, &r);
    int e = errno;
    if (rc == 0 && btrfs && btrfs_group(fd, bytes, &r) < 0) {
        /* the subvolume's own limit holds; its user's subvolumes are measured */
        bl_warning("buffer mount %s: %s: %s: subvolumes made below it are measured, not "
                   "limited",
                   mount, name, r.text);
        errno = e;
    }
    if (fd >= 0 && (rc == 0 || !want) && fchmod(fd, 0700) < 0) {
        e = errno;
        hu_errprintf(&r, "chmod: %s", strerror(errno));
        rc = -1;
        want = q->kind; /* not usable at all */
    }
    if (fd >= 0)
        close(fd);
    if (rc == 0) {
        bl_debug("buffer mount %s: %s limited to %ju bytes (%s%u)", mount, name, (uintmax_t)bytes,
                 btrfs ? "btrfs subvolume" : "project ", id);
        return 1;
    }
    if (!want) {
        if (!q->said)
            bl_warning("buffer mount %s: %s: capacities measured instead (said once)", mount,
                       r.text);
        q->said = true;
        return fd >= 0 ? 1 : 0;
    }
    if (unlinkat(pfd, name, AT_REMOVEDIR) < 0) /* empty: a subvolume too */
        bl_warning("buffer mount %s: remove %s after a failed limit: %s", mount, name,
                   strerror(errno));
    return util_fail(e, err, "capacity.enforce: %s: buffer mount %s: %s", enforce, mount, r.text);
}
