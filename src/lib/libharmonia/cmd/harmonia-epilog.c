/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * harmonia-epilog — Slurm Epilog: remove the files a job's processes shared.
 *
 *   Epilog=/usr/sbin/harmonia-epilog          (slurm.conf, or a link in epilog.d/)
 *
 * libharmonia and the interposer (libharmonia-preload.so) keep the state the
 * processes of one job share in two small files of /dev/shm (/tmp when there is no
 * /dev/shm): harmonia-UID-JOBID.START.phase and harmonia-UID-JOBID.START.learn
 * (START is HARMONIA_JOB_START, absent when it is not set).  Nothing in the job can
 * tell which of its processes is the last one of the job on the node (a later srun
 * step would create them again), so slurmd removes them, as root, once the job has
 * ended on the node: it runs this program with SLURM_JOB_ID and SLURM_JOB_UID set,
 * and SPANK_HARMONIA_JOB_START (the burst_buffer plugin's, the job's START): then
 * only that run's files go (and those without START), not those of a job with the
 * same id and user of another cluster sharing the node; without it, any START.
 *
 * The directory is writable by every user, so every name in it is hostile: only
 * the entries of that directory itself whose name is exactly one of the job's
 * are looked at (the four names when START is known, else a listing of the
 * directory), with fstatat(AT_SYMLINK_NOFOLLOW), and only a regular
 * file owned by the job's user is removed (unlinkat, which never follows a
 * symlink).  A symlink, a directory, another user's file are left alone.
 *
 * Exit status: 0 when the files are gone (or there were none), also when one could
 * not be removed (told on stderr: a leftover file must not drain the node); 1 when
 * the environment is not an epilog's (SLURM_JOB_ID, SLURM_JOB_UID missing or not
 * numbers) or the directory cannot be read; 2 on a bad command line.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *prog = "harmonia-epilog";

/* A decimal number of at most 10 digits that fits in 32 bits, not UINT32_MAX
 * (Slurm's "no value"), from an environment variable; false with a message. */
static bool env_u32(const char *var, bool zero_ok, uint32_t *out)
{
    const char *s = getenv(var);
    if (!s || !*s) {
        fprintf(stderr, "%s: %s is not set (run me as slurm.conf's Epilog)\n", prog, var);
        return false;
    }
    uint64_t v = 0;
    size_t n = 0;
    for (const char *p = s; *p; p++, n++) {
        if (*p < '0' || *p > '9' || n >= 10) {
            fprintf(stderr, "%s: %s='%s' is not a number\n", prog, var, s);
            return false;
        }
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v >= UINT32_MAX || (v == 0 && !zero_ok)) {
        fprintf(stderr, "%s: %s='%s' is out of range\n", prog, var, s);
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

/* Is name one of the job's shared files of any start: PREFIX then ".phase" or
 * ".learn", or "." 1..20 digits then ".phase" or ".learn"? */
static bool job_name(const char *name, const char *prefix, size_t plen)
{
    if (strncmp(name, prefix, plen) != 0)
        return false;
    const char *p = name + plen;
    if (p[0] == '.' && p[1] >= '0' && p[1] <= '9') {
        size_t d = strspn(++p, "0123456789");
        if (d > 20)
            return false;
        p += d;
    }
    return strcmp(p, ".phase") == 0 || strcmp(p, ".learn") == 0;
}

/* The job's start as the burst_buffer plugin gives it to the Epilog
 * (SPANK_HARMONIA_JOB_START: 1..20 digits), or NULL: any start then. */
static const char *job_start(void)
{
    const char *s = getenv("SPANK_HARMONIA_JOB_START");
    if (!s)
        return NULL;
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 20 || s[n]) {
        fprintf(stderr,
                "%s: SPANK_HARMONIA_JOB_START='%.40s' is not a start time: "
                "the job's files of any start are removed\n",
                prog, s);
        return NULL;
    }
    return s;
}

#define NAME_LEN 96     /* longer than any of the job's names */
#define MAX_LISTED 4096 /* names of the job kept from one listing */

/* Remove dir/name (dfd) if it is a regular file owned by uid: never a symlink (not
 * followed: fstatat without following, unlinkat removes the name itself), a
 * directory or another user's file.  A failure is told, not fatal. */
static void remove_one(int dfd, const char *dir, const char *name, uint32_t uid)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return;
    if (!S_ISREG(st.st_mode) || st.st_uid != uid)
        return;
    if (unlinkat(dfd, name, 0) != 0 && errno != ENOENT)
        fprintf(stderr, "%s: cannot remove %s/%s: %s\n", prog, dir, name, strerror(errno));
}

/* The job's run is not known: list the directory (dfd) for the job's names of any
 * start, then remove them (the directory is not changed while it is read).
 * 1 when it cannot be read. */
static int remove_listed(int dfd, const char *dir, const char *prefix, size_t plen, uint32_t uid)
{
    int lfd = dup(dfd);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        fprintf(stderr, "%s: cannot read %s: %s\n", prog, dir, strerror(errno));
        if (lfd >= 0)
            close(lfd);
        return 1;
    }
    char(*names)[NAME_LEN] = NULL;
    size_t n = 0, cap = 0;
    bool more = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strlen(e->d_name) >= NAME_LEN || !job_name(e->d_name, prefix, plen))
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 4;
            void *nn = nc <= MAX_LISTED ? realloc(names, nc * sizeof(*names)) : NULL;
            if (!nn) {
                more = true;
                break;
            }
            names = nn;
            cap = nc;
        }
        snprintf(names[n++], NAME_LEN, "%s", e->d_name);
    }
    closedir(d);
    for (size_t i = 0; i < n; i++)
        remove_one(dfd, dir, names[i], uid);
    free(names);
    if (more)
        fprintf(stderr, "%s: more than %d names of job %s in %s: the others are left\n", prog,
                MAX_LISTED, prefix, dir);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        bool help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
        if (!help)
            fprintf(stderr, "%s: unexpected argument '%s'\n", prog, argv[1]);
        fprintf(help ? stdout : stderr,
                "Usage: %s   (slurm.conf's Epilog, run by slurmd as root)\n"
                "Removes /dev/shm/harmonia-$SLURM_JOB_UID-$SLURM_JOB_ID[.START].{phase,learn}:\n"
                "regular files of that user only; never follows a symlink.\n",
                prog);
        return help ? 0 : 2;
    }
    uint32_t uid, job;
    if (!env_u32("SLURM_JOB_UID", true, &uid) || !env_u32("SLURM_JOB_ID", false, &job))
        return 1;

    /* where libharmonia puts them by default: /dev/shm, else /tmp */
    struct stat sb;
    const char *dir = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : "/tmp";
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        fprintf(stderr, "%s: cannot open %s: %s\n", prog, dir, strerror(errno));
        return 1;
    }
    if (fstat(dfd, &sb) != 0 || sb.st_uid != 0) {
        fprintf(stderr, "%s: %s is not owned by root: left alone\n", prog, dir);
        close(dfd);
        return 1;
    }
    const char *start = job_start();
    char prefix[64];
    size_t plen =
        (size_t)snprintf(prefix, sizeof(prefix), "harmonia-%" PRIu32 "-%" PRIu32, uid, job);
    int rc = 0;
    if (start) {
        /* the job's run is known: its four names, no listing */
        static const char *const tails[] = { ".phase", ".learn" };
        char name[NAME_LEN];
        for (size_t i = 0; i < 2; i++) {
            snprintf(name, sizeof(name), "%s.%s%s", prefix, start, tails[i]);
            remove_one(dfd, dir, name, uid);
            snprintf(name, sizeof(name), "%s%s", prefix, tails[i]);
            remove_one(dfd, dir, name, uid);
        }
    } else {
        rc = remove_listed(dfd, dir, prefix, plen, uid);
    }
    close(dfd);
    return rc;
}
