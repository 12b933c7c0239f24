#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_bbnoded.sh — aggregate stage-in bandwidth with 1, 2 and 3 buffer-node agents.
#
# A real bbmgrd (auth none on loopback, stage.mode mover) and N real bbnoded
# processes, each with its own directory as its device and its mover capped to the
# same rate (mover.max_rate, default 100 MB/s: the figure measures the design, one
# mover per node, not this machine's one disk).  N jobs, one per node, each stage
# in SIZE bytes (files of 64 MiB, read from the page cache) at the same moment; the
# time runs from the requests to the last 'done'.  Printed per N: the aggregate
# MB/s and its ratio to N times the one-agent figure of the same run (the target is
# >= 0.9).  Then one job on N buffer nodes stages in N x SIZE with one spread
# stage-in (doc/bbnoded.md, Data layout): the same ratio for one request.  No timed
# asserts.
#
# Environment: HARMONIA_BUILDDIR; BENCH_BBNODED_DIR (default /var/tmp);
# BENCH_BBNODED_RATE (default "100 MB/s"); BENCH_BBNODED_SIZE (MiB per node,
# default 512); BENCH_BBNODED_ROUNDS (default 2; the best round per N is kept).
set -eu
PYTHONPATH="$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}" exec python3 - "$@" <<'EOF'
import os, shutil, sys, tempfile, time
from benchlib import bbmgrd_conf, call, start_bbmgrd, start_bbnoded, stop_all

RATE = os.environ.get("BENCH_BBNODED_RATE", "100 MB/s")
SIZE = int(os.environ.get("BENCH_BBNODED_SIZE", "512")) << 20
ROUNDS = int(os.environ.get("BENCH_BBNODED_ROUNDS", "2"))
FILE = 64 << 20


def start_cluster(base, n, prefix):
    """bbmgrd and n agents (bb01..), each mover capped to RATE: (dir, port, procs)."""
    d = tempfile.mkdtemp(dir=base, prefix=prefix)
    os.chmod(d, 0o755)
    for k in range(n):
        os.makedirs(os.path.join(d, "bb%02d" % (k + 1)), mode=0o755)
    conf, port = bbmgrd_conf(d, """mover: {threads: 4, chunk: 4MiB, max_rate: "%s"}
agents: {interval: 0.1s, down_after: 60s}
pools:
  - {name: nvme, granularity: 1GiB}
nodes:
  - {names: "bb[01-%02d]", capacity: 1TiB, bandwidth: 1 GB/s, mount: "%s/%%n", pool: nvme, agent: true}
""" % (RATE, n, d))
    procs = [start_bbmgrd(conf, port)]
    for k in range(n):
        procs.append(start_bbnoded(conf, port, "bb%02d" % (k + 1)))
    return d, port, procs


def job_paths(port, job, nodes, capacity):
    """Register job, allocate its buffer, wait for its directories: their paths."""
    call(port, "POST", "/v1/jobs", {"id": job, "uid": os.getuid(), "gid": os.getgid()})
    a = call(port, "POST", "/v1/jobs/%s/allocation" % job, {"capacity": capacity,
                                                           "nodes": nodes})
    paths = [x["path"] for x in a["nodes"]]
    for p in paths:
        while not os.path.isdir(p):
            time.sleep(0.01)
    return paths


def run(base, pfs, n):
    """n jobs of one node each, n agents: one stage-in of SIZE each, at once."""
    d, port, procs = start_cluster(base, n, "run%d-" % n)
    try:
        paths = [("b%d" % k, job_paths(port, "b%d" % k, 1, "1GiB")[0]) for k in range(n)]
        t0 = time.time()
        tids = [call(port, "POST", "/v1/jobs/%s/stage_in" % job,
                     {"source": pfs, "destination": p + "/in", "type": "directory"})["id"]
                for job, p in paths]
        left = set(tids)
        while left:
            for t in list(left):
                x = call(port, "GET", "/v1/transfers/%d" % t)
                if x["state"] in ("failed", "cancelled"):
                    sys.exit("transfer %d %s: %s" % (t, x["state"], x.get("message")))
                if x["state"] == "done":
                    left.discard(t)
            time.sleep(0.01)
        return n * SIZE / (time.time() - t0)
    finally:
        stop_all(procs)
        shutil.rmtree(d, ignore_errors=True)


def run_spread(base, src, n):
    """One job on n buffer nodes, one stage-in of n x SIZE spread over them."""
    d, port, procs = start_cluster(base, n, "spread%d-" % n)
    try:
        paths = job_paths(port, "s", n, "%dGiB" % (2 * n))
        t0 = time.time()
        call(port, "POST", "/v1/jobs/s/stage_in", {"source": src, "destination": paths[0] + "/in",
                                                    "type": "directory", "spread": True})
        while True:
            st = call(port, "GET", "/v1/jobs/s/stage_in")
            if st["state"] == "failed":
                sys.exit("spread stage-in failed: %s" % [x.get("message")
                                                         for x in st["transfers"]])
            if st["state"] == "done":
                break
            time.sleep(0.01)
        return n * SIZE / (time.time() - t0), len(paths)
    finally:
        stop_all(procs)
        shutil.rmtree(d, ignore_errors=True)


base = tempfile.mkdtemp(dir=os.environ.get("BENCH_BBNODED_DIR", "/var/tmp"),
                        prefix="bench-bbnoded.")
os.chmod(base, 0o755)
try:
    pfs = os.path.join(base, "pfs")
    os.makedirs(pfs)
    block = os.urandom(1 << 20)
    for i in range(SIZE // FILE):
        with open(os.path.join(pfs, "f%03d" % i), "wb") as f:
            for _ in range(FILE >> 20):
                f.write(block)
    # the spread runs: n x SIZE in files of 16 MiB (links to the same data)
    SMALL = 16 << 20
    small = os.path.join(base, "small")
    os.makedirs(small)
    for i in range(3 * SIZE // SMALL):
        with open(os.path.join(small, "s%03d" % i), "wb") as f:
            for _ in range(SMALL >> 20):
                f.write(block)
    spread_src = {}
    for n in (1, 2, 3):
        spread_src[n] = os.path.join(base, "spread%d" % n)
        os.makedirs(spread_src[n])
        for i in range(n * SIZE // SMALL):
            os.link(os.path.join(small, "s%03d" % i), os.path.join(spread_src[n], "s%03d" % i))
    best, spread, used = {}, {}, {}
    for r in range(ROUNDS):
        for n in (1, 2, 3):
            best[n] = max(best.get(n, 0), run(base, pfs, n))
            bw, used[n] = run_spread(base, spread_src[n], n)
            spread[n] = max(spread.get(n, 0), bw)
    print("bench_bbnoded: stage-in of %d MiB per node, each agent's mover capped to %s"
          % (SIZE >> 20, RATE))
    print("%-7s %12s %22s %16s %22s" % ("agents", "MB/s", "ratio to N x 1 agent",
                                        "one job, spread", "ratio to N x 1 agent"))
    for n in (1, 2, 3):
        print("%-7d %12.0f %22.3f %16.0f %22.3f" % (n, best[n] / 1e6, best[n] / (n * best[1]),
                                                    spread[n] / 1e6,
                                                    spread[n] / (n * best[1])))
    print("(one job, spread: one job on N buffer nodes, one stage-in of N x %d MiB in "
          "files of 16 MiB, asked with \"spread\": true; the job's allocation had %s nodes)"
          % (SIZE >> 20, ", ".join(str(used[n]) for n in (1, 2, 3))))
finally:
    shutil.rmtree(base, ignore_errors=True)
EOF
