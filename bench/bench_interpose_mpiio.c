/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench_interpose_mpiio.c — an unmodified periodic MPI-IO program for
 * bench_interpose_docker.sh: ITERS times, SECONDS of "compute" (a sleep, as the
 * shell loop's), then MIB MiB written into DIR/ckpt.I by all ranks together with
 * MPI_File_write_at_all (each rank its block of the shared file, in 16 MiB
 * collective calls) and MPI_File_sync.  It knows nothing of Harmonia: the
 * interposer, preloaded by the job, finds its phases.  Built at bench time with
 * the cluster's mpicc (Debian's OpenMPI): mpicc -O2 -o mpiio bench_interpose_mpiio.c
 *
 *   mpirun ./mpiio ITERS SECONDS MIB DIR */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 5) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiio ITERS SECONDS MIB DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int iters = atoi(argv[1]);
    double secs = atof(argv[2]);
    long long total = atoll(argv[3]) << 20;
    long long mine = total / size;
    const long long chunk = 16LL << 20;
    char *buf = malloc((size_t)chunk);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    memset(buf, 'a' + rank % 26, (size_t)chunk);
    struct timespec ts = { (time_t)secs, (long)((secs - (time_t)secs) * 1e9) };
    for (int i = 0; i < iters; i++) {
        char path[4096];
        MPI_File f;
        nanosleep(&ts, NULL);
        snprintf(path, sizeof(path), "%s/ckpt.%d", argv[4], i);
        if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                          &f)
            != MPI_SUCCESS)
            MPI_Abort(MPI_COMM_WORLD, 1);
        /* the same number of collective calls on every rank */
        for (long long off = 0; off < mine; off += chunk) {
            int n = (int)(mine - off < chunk ? mine - off : chunk);
            MPI_File_write_at_all(f, (MPI_Offset)(rank * mine + off), buf, n, MPI_BYTE,
                                  MPI_STATUS_IGNORE);
        }
        MPI_File_sync(f);
        MPI_File_close(&f);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
