/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_bbmgr_bufdir.c — bufdir.c's removal of a tree that a user controls: any
 * depth (paths beyond PATH_MAX) on a small thread stack, symbolic links never
 * followed, directories the user made read-only, wide directories (more
 * subdirectories than one batch), a stop request.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bufdir.h"
#include "testutil.h"

static char base[PATH_MAX];

static void setup(void)
{
    snprintf(base, sizeof(base), "%s/bufdir-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(base));
}

static void teardown(void)
{
    int fd = open(base, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        bufdir_rm_t o = { .uid = geteuid(), .gid = getegid() };
        bufdir_empty(fd, &o, NULL);
        close(fd);
    }
    rmdir(base);
}

static int entries(int fd)
{
    int n = 0, d = openat(fd, ".", O_RDONLY | O_DIRECTORY);
    DIR *dir = fdopendir(d);
    struct dirent *e;
    while ((e = readdir(dir)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(dir);
    return n;
}

/* base/top/d/d/.../d (depth levels) with a file at the bottom; its fd. */
static int make_chain(const char *top, int depth)
{
    int root = open(base, O_RDONLY | O_DIRECTORY), fd;
    ck_assert_int_eq(mkdirat(root, top, 0700), 0);
    fd = openat(root, top, O_RDONLY | O_DIRECTORY);
    int cur = dup(fd);
    for (int i = 0; i < depth; i++) {
        ck_assert_int_eq(mkdirat(cur, "d", 0700), 0);
        int n = openat(cur, "d", O_RDONLY | O_DIRECTORY);
        ck_assert_int_ge(n, 0);
        close(cur);
        cur = n;
    }
    int f = openat(cur, "leaf", O_WRONLY | O_CREAT, 0600);
    ck_assert_int_ge(f, 0);
    close(f);
    fchmod(cur, 0500); /* read-only at the bottom, as a copy from the PFS may be */
    close(cur);
    close(root);
    return fd;
}

typedef struct {
    int fd;
    bufdir_rm_t o;
    int rc;
    hu_error_t why;
} job_t;

static void *run(void *arg)
{
    job_t *j = arg;
    j->rc = bufdir_empty(j->fd, &j->o, &j->why);
    return NULL;
}

/* bufdir_empty() on a thread of 'stack' bytes */
static int empty_on(int fd, size_t stack, job_t *j)
{
    pthread_attr_t a;
    pthread_t t;
    memset(j, 0, sizeof(*j));
    j->fd = fd;
    j->o.uid = geteuid();
    j->o.gid = getegid();
    pthread_attr_init(&a);
    ck_assert_int_eq(pthread_attr_setstacksize(&a, stack), 0);
    ck_assert_int_eq(pthread_create(&t, &a, run, j), 0);
    pthread_join(t, NULL);
    pthread_attr_destroy(&a);
    return j->rc;
}

START_TEST(test_deep_chain_small_stack)
{
    /* 2,500 levels: a path of 5,000 bytes below top, beyond PATH_MAX; 64 KiB of
     * stack, on which a recursive walk dies at a few hundred levels */
    int fd = make_chain("top", 2500);
    job_t j;
    ck_assert_msg(empty_on(fd, 65536, &j) == 0, "%s", j.why.text);
    ck_assert_int_eq(entries(fd), 0);
    ck_assert_uint_eq(j.o.removed, 2501);
    ck_assert_uint_eq(j.o.depth, 2501);
    close(fd);
}
END_TEST

START_TEST(test_links_not_followed_wide_and_odd)
{
    char p[PATH_MAX + 64];
    int root = open(base, O_RDONLY | O_DIRECTORY);
    /* outside the tree: must survive */
    ck_assert_int_eq(mkdirat(root, "outside", 0755), 0);
    int f = openat(root, "outside/precious", O_WRONLY | O_CREAT, 0600);
    ck_assert_int_ge(f, 0);
    close(f);
    ck_assert_int_eq(mkdirat(root, "t", 0700), 0);
    int fd = openat(root, "t", O_RDONLY | O_DIRECTORY);
    snprintf(p, sizeof(p), "%s/outside", base);
    ck_assert_int_eq(symlinkat(p, fd, "link"), 0);
    ck_assert_int_eq(mkfifoat(fd, "fifo", 0600), 0);
    ck_assert_int_eq(mkdirat(fd, "wide", 0700), 0);
    int w = openat(fd, "wide", O_RDONLY | O_DIRECTORY);
    for (int i = 0; i < 2500; i++) { /* more than one batch, each non-empty */
        snprintf(p, sizeof(p), "s%d", i);
        ck_assert_int_eq(mkdirat(w, p, 0700), 0);
        snprintf(p, sizeof(p), "s%d/f", i);
        int g = openat(w, p, O_WRONLY | O_CREAT, 0600);
        ck_assert_int_ge(g, 0);
        close(g);
        if (i % 7 == 0) {
            snprintf(p, sizeof(p), "s%d", i);
            fchmodat(w, p, 0500, 0); /* read-only: made writable to be emptied */
        }
    }
    close(w);
    job_t j;
    ck_assert_msg(empty_on(fd, 65536, &j) == 0, "%s", j.why.text);
    ck_assert_int_eq(entries(fd), 0);
    struct stat st;
    ck_assert_int_eq(fstatat(root, "outside/precious", &st, 0), 0);
    close(fd);
    close(root);
}
END_TEST

START_TEST(test_stop_requested)
{
    int fd = make_chain("s", 50);
    bool stop = true;
    bufdir_rm_t o = { .stop = &stop, .uid = geteuid(), .gid = getegid() };
    hu_error_t why;
    ck_assert_int_eq(bufdir_empty(fd, &o, &why), -1);
    ck_assert_int_eq(errno, EINTR);
    ck_assert_int_eq(entries(fd), 1); /* nothing removed */
    stop = false;
    ck_assert_int_eq(bufdir_empty(fd, &o, &why), 0);
    ck_assert_int_eq(entries(fd), 0);
    close(fd);
}
END_TEST

START_TEST(test_trash_path)
{
    char a[PATH_MAX], b[PATH_MAX], tiny[8];
    int root = open(base, O_RDONLY | O_DIRECTORY);
    struct stat st;
    ck_assert_int_eq(bufdir_trash_path(root, base, 42, a, sizeof(a)), 0);
    ck_assert_int_eq(bufdir_trash_path(root, base, 42, b, sizeof(b)), 0);
    ck_assert_str_ne(a, b); /* unguessable: never the same name twice */
    ck_assert_int_eq(fstatat(root, BUFDIR_TRASH, &st, AT_SYMLINK_NOFOLLOW), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0711);
    ck_assert_int_eq(bufdir_trash_path(root, base, 42, tiny, sizeof(tiny)), -1);
    ck_assert_int_eq(errno, ENAMETOOLONG);
    /* a trash others can list or write is refused */
    ck_assert_int_eq(fchmodat(root, BUFDIR_TRASH, 0755, 0), 0);
    ck_assert_int_eq(bufdir_trash_path(root, base, 42, a, sizeof(a)), -1);
    ck_assert_int_eq(errno, EPERM);
    close(root);
}
END_TEST

START_TEST(test_spares_and_create)
{
    int root = open(base, O_RDONLY | O_DIRECTORY), n = 0;
    unsigned top = 0;
    bool off = false;
    bufdir_spares_t sp = { &n, &top, &off };
    struct stat st;
    const char *what = NULL;
    bufdir_spares_fill(root, base, sp, 5);
    ck_assert_int_eq(n, 5);
    ck_assert_int_eq(fstatat(root, BUFDIR_SPARE "/4", &st, AT_SYMLINK_NOFOLLOW), 0);
    /* a spare renamed into place, given to its owner (our own uid here) */
    ck_assert_int_eq(bufdir_create(root, "job1", root, base, &sp, geteuid(), getegid(), &st, &what),
                     0);
    ck_assert_int_eq(n, 4);
    ck_assert_uint_eq(st.st_mode & 07777, 0700);
    ck_assert_int_ne(fstatat(root, BUFDIR_SPARE "/4", &st, AT_SYMLINK_NOFOLLOW), 0);
    /* never an existing name, whatever is there */
    ck_assert_int_eq(
        bufdir_create(root, "job1", root, base, NULL, geteuid(), getegid(), &st, &what), -1);
    ck_assert_int_eq(errno, EEXIST);
    ck_assert_str_eq(what, "mkdir");
    ck_assert_int_eq(symlinkat("/tmp", root, "job2"), 0);
    ck_assert_int_eq(bufdir_create(root, "job2", root, base, &sp, geteuid(), getegid(), &st, &what),
                     -1);
    ck_assert_int_eq(fstatat(root, "job2", &st, AT_SYMLINK_NOFOLLOW), 0);
    ck_assert(S_ISLNK(st.st_mode)); /* nothing renamed over the link, nothing followed */
    /* a spare directory others can reach is not used */
    ck_assert_int_eq(fchmodat(root, BUFDIR_SPARE, 0755, 0), 0);
    ck_assert(!bufdir_spare_take(root, base, sp, root, "job3"));
    ck_assert(off);
    close(root);
}
END_TEST

static uint64_t blocks_at(int fd, const char *name)
{
    struct stat st;
    ck_assert_int_eq(fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
    return (uint64_t)st.st_blocks * 512;
}

static void write_file(int fd, const char *name, size_t len)
{
    char buf[4096];
    int f = openat(fd, name, O_WRONLY | O_CREAT | O_EXCL, 0600);
    ck_assert_int_ge(f, 0);
    memset(buf, 'x', sizeof(buf));
    for (size_t done = 0; done < len; done += sizeof(buf))
        ck_assert_int_eq(write(f, buf, sizeof(buf)), (ssize_t)sizeof(buf));
    ck_assert_int_eq(fsync(f), 0);
    close(f);
}

/* The usage walk: st_blocks of everything below, hard links once, symbolic links
 * not followed, in steps of a bounded number of entries, the same total whatever
 * the step. */
START_TEST(test_usage_bounded_steps)
{
    int root = open(base, O_RDONLY | O_DIRECTORY), top, sub;
    uint64_t want = 0, got = 0, got1 = 0;
    ck_assert_int_eq(mkdirat(root, "u", 0700), 0);
    top = openat(root, "u", O_RDONLY | O_DIRECTORY);
    write_file(top, "a", 1 << 20);
    ck_assert_int_eq(linkat(top, "a", top, "hard", 0), 0);
    ck_assert_int_eq(symlinkat("/usr", top, "link"), 0);
    ck_assert_int_eq(mkdirat(top, "s", 0700), 0);
    sub = openat(top, "s", O_RDONLY | O_DIRECTORY);
    ck_assert_int_eq(mkdirat(sub, "t", 0700), 0);
    int t = openat(sub, "t", O_RDONLY | O_DIRECTORY);
    write_file(t, "b", 256 << 10);
    for (int i = 0; i < 40; i++) {
        char n[16];
        snprintf(n, sizeof(n), "f%d", i);
        write_file(t, n, 4096);
        want += blocks_at(t, n);
    }
    want += blocks_at(root, "u") + blocks_at(top, "a") + blocks_at(top, "link")
            + blocks_at(top, "s") + blocks_at(sub, "t") + blocks_at(t, "b");
    ck_assert_uint_ge(want, (1 << 20) + (256 << 10));
    bufdir_usage_t *u = bufdir_usage_new();
    ck_assert_int_eq(bufdir_usage_step(u, top, &(unsigned long){ 1000000 }, &got), 1);
    ck_assert_uint_eq(got, want);
    /* one entry per step: many steps, the same total, then a new walk */
    int steps = 0, r;
    while ((r = bufdir_usage_step(u, top, &(unsigned long){ 1 }, &got1)) == 0)
        steps++;
    ck_assert_int_eq(r, 1);
    ck_assert_int_ge(steps, 46);
    ck_assert_uint_eq(got1, want);
    write_file(top, "c", 64 << 10);
    ck_assert_int_eq(bufdir_usage_step(u, top, &(unsigned long){ 1000000 }, &got), 1);
    ck_assert_uint_eq(got, want + blocks_at(top, "c"));
    bufdir_usage_free(u);
    close(t);
    close(sub);
    close(top);
    close(root);
}
END_TEST

int main(void)
{
    const tu_tcase_t tcases[] = {
        { "bufdir", .timeout = 300, .setup = setup, .teardown = teardown,
          .tests = { test_deep_chain_small_stack, test_links_not_followed_wide_and_odd,
                     test_stop_requested, test_trash_path, test_spares_and_create,
                     test_usage_bounded_steps, NULL } },
    };
    return tu_main("bbmgr_bufdir", tcases, TU_COUNT(tcases));
}
