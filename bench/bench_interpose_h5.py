#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bench_interpose_h5.py — an unmodified periodic h5py checkpoint loop for
bench_interpose_docker.sh: ITERS times, SECONDS of "compute" (a sleep, as the
shell loop's), then a checkpoint of MIB MiB (one float64 dataset) written to
DIR/ckpt.I.h5 with h5py and made durable (fsync).  It knows nothing of Harmonia:
the interposer, preloaded by the job, finds its phases.

    python3 bench_interpose_h5.py ITERS SECONDS MIB DIR
"""
import os
import sys
import time

import h5py
import numpy

iters, secs, mib, where = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
state = numpy.arange(mib << 17, dtype="f8")      # MIB MiB of float64
for i in range(iters):
    time.sleep(secs)
    state += 1.0
    path = os.path.join(where, "ckpt.%d.h5" % i)
    with h5py.File(path, "w") as f:
        f.create_dataset("state", data=state)
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
