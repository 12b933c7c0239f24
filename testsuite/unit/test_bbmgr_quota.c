/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_bbmgr_quota.c — quota.c's project-quota layer (ext4/XFS mounted with
 * project quotas) with its system calls behind the table quota_sys_t: a free
 * project id is chosen (ids charged with blocks or inodes are passed over, one
 * XFS has no record of is free), set with FS_XFLAG_PROJINHERIT, and limited to
 * the buffer's bytes in 1 KiB blocks; each failure says which step and why.  The
 * real path runs in daemon/test_quota.py, in a virtual machine when the machine's
 * kernel cannot mount project quotas.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/quota.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quota.h"
#include "testutil.h"

static struct {
    unsigned busy_below;   /* ids below it are charged (curspace > 0) */
    unsigned unknown_from; /* ids from it have no record (XFS: ENOENT), if set */
    int get_errno, set_errno, setq_errno;
    unsigned getq_calls;
    struct fsxattr fx; /* what setxattr was given */
    bool fx_set;
    unsigned setq_id;
    struct if_dqblk setq;
} M;

static int m_getxattr(int fd, struct fsxattr *fx)
{
    (void)fd;
    memset(fx, 0, sizeof(*fx));
    fx->fsx_xflags = FS_XFLAG_NOATIME; /* kept */
    return 0;
}

static int m_setxattr(int fd, const struct fsxattr *fx)
{
    (void)fd;
    if (M.set_errno)
        return errno = M.set_errno, -1;
    M.fx = *fx;
    M.fx_set = true;
    return 0;
}

static int m_quotactl(int fd, int cmd, unsigned id, void *addr)
{
    (void)fd;
    struct if_dqblk *dq = addr;
    if (cmd == QUOTA_QCMD(Q_GETQUOTA, PRJQUOTA)) {
        M.getq_calls++;
        if (M.get_errno)
            return errno = M.get_errno, -1;
        if (M.unknown_from && id >= M.unknown_from)
            return errno = ENOENT, -1;
        memset(dq, 0, sizeof(*dq));
        if (id < M.busy_below)
            dq->dqb_curspace = 4096;
        return 0;
    }
    if (cmd == QUOTA_QCMD(Q_SETQUOTA, PRJQUOTA)) {
        if (M.setq_errno)
            return errno = M.setq_errno, -1;
        M.setq_id = id;
        M.setq = *dq;
        return 0;
    }
    return errno = EINVAL, -1;
}

static const quota_sys_t mock = { m_getxattr, m_setxattr, m_quotactl };

/* a directory of ours and the project id its inode starts the probe at */
static int dir_fd(unsigned *first)
{
    char path[] = "/tmp/quota-unit-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(path));
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    struct stat st;
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fstat(fd, &st), 0);
    rmdir(path);
    *first = QUOTA_PROJID_BASE + (unsigned)(st.st_ino % QUOTA_PROJID_SPAN);
    return fd;
}

START_TEST(test_project_id_and_limit)
{
    unsigned first, id = 0;
    hu_error_t why = { "" };
    memset(&M, 0, sizeof(M));
    int fd = dir_fd(&first);
    M.busy_below = first + 3; /* the first three ids are in use */
    ck_assert_int_eq(quota_project_set(&mock, fd, 64 * 1024 * 1024 + 1, &id, &why), 0);
    ck_assert_uint_eq(id, first + 3);
    ck_assert(M.fx_set);
    ck_assert_uint_eq(M.fx.fsx_projid, first + 3);
    ck_assert(M.fx.fsx_xflags & FS_XFLAG_PROJINHERIT);
    ck_assert(M.fx.fsx_xflags & FS_XFLAG_NOATIME);
    ck_assert_uint_eq(M.setq_id, first + 3);
    ck_assert(M.setq.dqb_valid & QIF_BLIMITS);
    ck_assert_uint_eq(M.setq.dqb_bhardlimit, 64 * 1024 + 1); /* 1 KiB blocks, up */
    ck_assert_uint_eq(M.setq.dqb_bsoftlimit, 64 * 1024 + 1);
    close(fd);
}
END_TEST

/* XFS: Q_GETQUOTA of an id it has no record of fails with ENOENT: that id is
 * free (ext4 answers zeros) */
START_TEST(test_project_id_unknown_to_xfs)
{
    unsigned first, id = 0;
    hu_error_t why = { "" };
    memset(&M, 0, sizeof(M));
    int fd = dir_fd(&first);
    M.busy_below = first + 1;
    M.unknown_from = first + 1;
    ck_assert_int_eq(quota_project_set(&mock, fd, 1 << 20, &id, &why), 0);
    ck_assert_uint_eq(id, first + 1);
    ck_assert_uint_eq(M.fx.fsx_projid, first + 1);
    ck_assert_uint_eq(M.setq_id, first + 1);
    ck_assert_uint_eq(M.getq_calls, 2);
    close(fd);
}
END_TEST

START_TEST(test_project_failures_said)
{
    unsigned first, id = 0;
    hu_error_t why = { "" };
    memset(&M, 0, sizeof(M));
    int fd = dir_fd(&first);
    /* no project quota on the mount: the probe fails, nothing is set */
    M.get_errno = ESRCH;
    ck_assert_int_eq(quota_project_set(&mock, fd, 1 << 20, &id, &why), -1);
    ck_assert_int_eq(errno, ESRCH);
    ck_assert_ptr_nonnull(strstr(why.text, "mounted with project quotas"));
    ck_assert(!M.fx_set);
    /* every id tried is in use */
    memset(&M, 0, sizeof(M));
    M.busy_below = UINT32_MAX;
    ck_assert_int_eq(quota_project_set(&mock, fd, 1 << 20, &id, &why), -1);
    ck_assert_int_eq(errno, EBUSY);
    ck_assert_ptr_nonnull(strstr(why.text, "no free project id"));
    ck_assert_uint_eq(M.getq_calls, 64);
    /* the id cannot be set */
    memset(&M, 0, sizeof(M));
    M.set_errno = EPERM;
    ck_assert_int_eq(quota_project_set(&mock, fd, 1 << 20, &id, &why), -1);
    ck_assert_ptr_nonnull(strstr(why.text, "set project id"));
    /* the limit cannot be set */
    memset(&M, 0, sizeof(M));
    M.setq_errno = EINVAL;
    ck_assert_int_eq(quota_project_set(&mock, fd, 1 << 20, &id, &why), -1);
    ck_assert_int_eq(errno, EINVAL);
    ck_assert_ptr_nonnull(strstr(why.text, "limit of project"));
    ck_assert_ptr_nonnull(strstr(why.text, "1048576 bytes"));
    close(fd);
}
END_TEST

/* Not btrfs nor a mount with project quotas: "auto" makes nothing (the caller
 * makes the directory as before), "project" and "btrfs" refuse naming the mount. */
START_TEST(test_make_elsewhere)
{
    char path[] = "/tmp/quota-unit-XXXXXX";
    hu_error_t why = { "" };
    quota_mount_t q = { 0 };
    ck_assert_ptr_nonnull(mkdtemp(path));
    int pfd = open(path, O_RDONLY | O_DIRECTORY);
    ck_assert_int_eq(quota_make(&q, "none", pfd, "b", path, 1 << 20, &why), 0);
    ck_assert_int_eq(quota_make(&q, "auto", pfd, "b", path, 1 << 20, &why), 0);
    ck_assert(q.said);
    ck_assert_int_eq(quota_make(&q, "auto", pfd, "b", path, 1 << 20, &why), 0);
    ck_assert_int_eq(quota_make(&q, "btrfs", pfd, "b", path, 1 << 20, &why), -1);
    ck_assert_ptr_nonnull(strstr(why.text, "capacity.enforce: btrfs"));
    ck_assert_ptr_nonnull(strstr(why.text, path));
    ck_assert_int_eq(quota_make(&q, "project", pfd, "b", path, 1 << 20, &why), -1);
    ck_assert_ptr_nonnull(strstr(why.text, "capacity.enforce: project"));
    ck_assert_int_eq(faccessat(pfd, "b", F_OK, 0), -1); /* nothing made */
    close(pfd);
    rmdir(path);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "quota", .tests = { test_project_id_and_limit, test_project_id_unknown_to_xfs,
                              test_project_failures_said, test_make_elsewhere, NULL } },
    };
    return tu_main("bbmgr_quota", tcases, TU_COUNT(tcases));
}
