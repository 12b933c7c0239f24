/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_interpose_calls — the time the interposer adds to one I/O call, measured
 * in one process (run it with libharmonia-preload.so preloaded): pwrite(2) of
 * SIZE bytes through the C library directly (libc's own pwrite, found with
 * dlopen(RTLD_NOLOAD)), through the interposer on OUT (a file outside the paths
 * that matter) and through it on IN (a file in the buffer: inside a phase), in
 * interleaved blocks of N/20 calls; the fastest block of each, in ns per call:
 *
 *     bench_interpose_calls OUT IN N SIZE
 *     -> direct_ns=X outside_ns=Y inside_ns=Z
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef ssize_t (*pwrite_f)(int, const void *, size_t, off_t);

static double block(pwrite_f f, int fd, const char *buf, size_t size, long n)
{
    double t0 = now();
    for (long i = 0; i < n; i++)
        if (f(fd, buf, size, 0) < 0) {
            perror("pwrite");
            exit(1);
        }
    return (now() - t0) / n * 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s OUT IN N SIZE\n", argv[0]);
        return 2;
    }
    long n = atol(argv[3]) / 20;
    size_t size = (size_t)atol(argv[4]);
    char *buf = calloc(1, size ? size : 1);
    int out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int in = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    pwrite_f direct = libc ? (pwrite_f)dlsym(libc, "pwrite") : NULL;
    if (out < 0 || in < 0 || !buf || n <= 0 || !direct) {
        perror("set-up");
        return 1;
    }
    double best[3] = { 1e30, 1e30, 1e30 };
    /* warm up: resolve, classify both descriptors, open the phase */
    block(pwrite, out, buf, size, 1000);
    block(pwrite, in, buf, size, 1000);
    for (int r = 0; r < 20; r++) {
        double v[3] = { block(direct, out, buf, size, n), block(pwrite, out, buf, size, n),
                        block(pwrite, in, buf, size, n) };
        for (int k = 0; k < 3; k++)
            if (v[k] < best[k])
                best[k] = v[k];
    }
    printf("direct_ns=%.1f outside_ns=%.1f inside_ns=%.1f\n", best[0], best[1], best[2]);
    return 0;
}
