/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_interpose_calls — the time of one I/O call, for bench_interpose.sh to run
 * with and without libharmonia-preload.so: N pwrite(2) of SIZE bytes to FILE,
 * timed in a loop; prints "ns_per_call=X calls=N".
 *
 *     bench_interpose_calls FILE N SIZE
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s FILE N SIZE\n", argv[0]);
        return 2;
    }
    long n = atol(argv[2]);
    size_t size = (size_t)atol(argv[3]);
    char *buf = calloc(1, size ? size : 1);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || !buf || n <= 0) {
        perror(argv[1]);
        return 1;
    }
    /* warm up: resolve the call, classify the descriptor, open a phase */
    for (int i = 0; i < 1000; i++)
        if (pwrite(fd, buf, size, 0) < 0)
            return 1;
    double t0 = now();
    for (long i = 0; i < n; i++)
        if (pwrite(fd, buf, size, 0) < 0) {
            perror("pwrite");
            return 1;
        }
    double t = now() - t0;
    close(fd);
    printf("ns_per_call=%.1f calls=%ld\n", t / n * 1e9, n);
    return 0;
}
