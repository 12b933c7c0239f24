#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_bbnoded_busy.sh — device status to decision: how fast a busy buffer node's
# measured bandwidth reaches the grants.
#
# A real bbmgrd (auth none on loopback) and one real bbnoded for a 1 GB/s node;
# the agent reads the block device counters from a file of the bench
# (bbnoded --diskstats), where another writer appears at t = 1 s (600 MB/s) and
# stops at t = 5 s.  Every 0.1 s a job asks for a write phase on the node and
# finishes it at once: the grant's bandwidth is the scheduler's decision at that
# moment.  Printed: the delay from the writer's start (and stop) to the first
# grant that follows it, and a chart of the grants over time.  No timed asserts.
#
# Environment: HARMONIA_BUILDDIR; BENCH_BBNODED_INTERVAL (agents.interval,
# default 0.5s).
set -eu
PYTHONPATH="$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}" exec python3 - "$@" <<'EOF'
import os, shutil, tempfile, threading, time
from benchlib import (FakeDiskstats, bbmgrd_conf, call, start_bbmgrd, start_bbnoded,
                      stop_all)

IV = os.environ.get("BENCH_BBNODED_INTERVAL", "0.5s")


d = tempfile.mkdtemp(prefix="bench-bbnoded-busy.", dir="/tmp")
os.chmod(d, 0o755)
procs = []
try:
    mount = os.path.join(d, "bb01")
    os.makedirs(mount, mode=0o755)
    stats = os.path.join(d, "diskstats")
    dev = FakeDiskstats(stats, mount)
    conf, port = bbmgrd_conf(d, """platform: {node_bandwidth: 10 GB/s, pfs_bandwidth: 100 GB/s}
agents: {interval: %s}
nodes:
  - {names: bb01, capacity: 1TiB, bandwidth: 1 GB/s, mount: "%s", agent: true}
""" % (IV, mount))
    procs.append(start_bbmgrd(conf, port))
    procs.append(start_bbnoded(conf, port, "bb01", "-l", os.path.join(d, "agent.log"),
                               "--diskstats", stats))
    call(port, "POST", "/v1/jobs", {"id": "j", "uid": 0, "gid": 0})
    call(port, "POST", "/v1/jobs/j/allocation", {"capacity": "1GiB"})
    busy = [False]
    stop = threading.Event()

    def writer():      # the other writer: 600 MB/s into the counters while busy
        last = time.time()
        while not stop.is_set():
            now = time.time()
            if busy[0]:
                dev.add(600e6 * (now - last))
            last = now
            stop.wait(0.02)

    threading.Thread(target=writer, daemon=True).start()
    t0 = time.time()
    samples = []
    while time.time() - t0 < 8:
        t = time.time() - t0
        busy[0] = 1 <= t < 5
        ph = call(port, "POST", "/v1/jobs/j/phases", {"volume": "100GB", "wait": 5})
        call(port, "POST", "/v1/phases/%d/finish" % ph["id"], {"bytes": 0})
        samples.append((t, ph["grant"]["bandwidth"] if ph.get("grant") else 0.0))
        time.sleep(max(0, 0.1 - (time.time() - t0 - t)))
    stop.set()
    on = next(t for t, bw in samples if t >= 1 and bw < 0.7e9)
    off = next(t for t, bw in samples if t >= 5 and bw > 0.9e9)
    print("bench_bbnoded_busy: 1 GB/s node, another writer of 600 MB/s from t=1 s to t=5 s,"
          " agents.interval %s" % IV)
    print("writer starts -> grants follow: %.2f s" % (on - 1))
    print("writer stops  -> grants follow: %.2f s" % (off - 5))
    print("grant of a new phase on the node (GB/s), one row per 0.25 s:")
    nxt = 0
    for t, bw in samples:
        if t >= nxt:
            print("%5.2f s %5.2f %s%s" % (t, bw / 1e9, "#" * int(round(bw / 2.5e7)),
                                          "   <- other writer" if 1 <= t < 5 else ""))
            nxt += 0.25
finally:
    stop_all(procs)
    shutil.rmtree(d, ignore_errors=True)
EOF
