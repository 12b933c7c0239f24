#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_bbnoded_lone.sh — a lone job keeps its granted rate on an agent's node,
# phase after phase.
#
# A real bbmgrd (auth none on loopback, policy fairshare) and one real bbnoded for
# a node configured at 250 MB/s.  One job runs bbio-bench (libharmonia: each I/O
# phase asks bbmgrd for a grant and writes at its rate) into its buffer there.  The
# agent reads the node's device counters from a file of the bench (bbnoded
# --diskstats) that follows what bbio-bench writes (the wchar of /proc/PID/io): the
# agent sees the job's own writes on the device, as on a real node.  Printed: the
# rate granted to each phase (and what bbio-bench achieved), next to the figures of
# the issue that asked for this (before: 249.9 MB/s, then 25.0 MB/s, the 0.1 x
# floor); with --svg FILE, the chart of both (doc/bbnoded-lone-rate.svg, linked
# from doc/bbnoded.md).  No timed asserts.
#
# Environment: HARMONIA_BUILDDIR; BENCH_LONE_PHASES (default 4); BENCH_LONE_VOLUME
# (per phase, default 256MiB); BENCH_LONE_DIR (default /var/tmp).
set -eu
PYTHONPATH="$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}" exec python3 - "$@" <<'EOF'
import json, os, shutil, subprocess, sys, tempfile, threading
from benchlib import (B, FakeDiskstats, bbmgrd_conf, call, start_bbmgrd, start_bbnoded,
                      stop_all)

RATE = 250e6                                    # the node's configured bandwidth
PHASES = int(os.environ.get("BENCH_LONE_PHASES", "4"))
VOLUME = os.environ.get("BENCH_LONE_VOLUME", "256MiB")
BEFORE = [249.9e6] + [25.0e6] * 3               # the issue's figures (MB/s)
svg = sys.argv[sys.argv.index("--svg") + 1] if "--svg" in sys.argv else None


def chart(before, after, path):
    """Hand-written SVG: the granted rate of each phase, before and after, as bars."""
    w, h, left, top, bottom = 560, 300, 60, 40, 50
    ph = max(len(before), len(after))
    plot_w, plot_h = w - left - 20, h - top - bottom
    group = plot_w / ph
    bar = group / 3
    y = lambda v: top + plot_h * (1 - min(v, RATE * 1.1) / (RATE * 1.1))
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">' % (w, h, w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="20" font-size="14">Granted rate of a lone job, phase after '
           'phase (node at 250 MB/s)</text>' % left]
    for v in (0, 50e6, 100e6, 150e6, 200e6, 250e6):
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>'
                   % (left, w - 20, y(v), y(v)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%d</text>'
                   % (left - 6, y(v) + 4, v / 1e6))
    out.append('<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">'
               'MB/s</text>' % (top + plot_h / 2, top + plot_h / 2))
    for i in range(ph):
        x0 = left + i * group + bar / 2
        for k, (vals, color) in enumerate(((before, "#b0b0b0"), (after, "#2a6fdb"))):
            if i < len(vals):
                v = vals[i]
                out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>'
                           % (x0 + k * bar, y(v), bar - 2, top + plot_h - y(v), color))
                out.append('<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">'
                           '%.1f</text>' % (x0 + k * bar + bar / 2 - 1, y(v) - 3, v / 1e6))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">phase %d</text>'
                   % (left + i * group + group / 2, top + plot_h + 18, i + 1))
    lx = left
    for label, color in (("before the fix (its own writes counted as another "
                          "writer's)", "#b0b0b0"), ("now (this bench)", "#2a6fdb")):
        out.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/>'
                   % (lx, h - 18, color))
        out.append('<text x="%d" y="%d">%s</text>' % (lx + 14, h - 9, label))
        lx += 340
    out.append('</svg>')
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


d = tempfile.mkdtemp(prefix="bench-bbnoded-lone.",
                     dir=os.environ.get("BENCH_LONE_DIR", "/var/tmp"))
os.chmod(d, 0o755)
procs = []
stop = threading.Event()
try:
    mount = os.path.join(d, "bb01")
    os.makedirs(mount, mode=0o755)
    stats = os.path.join(d, "diskstats")
    dev = FakeDiskstats(stats, mount)
    conf, port = bbmgrd_conf(d, """policy: {id: fairshare}
platform: {compute_nodes: 16, node_bandwidth: 10 GB/s, pfs_bandwidth: 100 GB/s}
agents: {interval: 0.2s, down_after: 60s}
pools:
  - {name: nvme, granularity: 1GiB}
nodes:
  - {names: bb01, capacity: 1TiB, bandwidth: 250 MB/s, mount: "%s", pool: nvme, agent: true}
""" % mount)
    procs.append(start_bbmgrd(conf, port))
    procs.append(start_bbnoded(conf, port, "bb01", "-l", os.path.join(d, "agent.log"),
                               "--diskstats", stats))
    # a user of its own (the agents make no directory for root by default);
    # bbio-bench, run by root here, writes in it all the same
    call(port, "POST", "/v1/jobs", {"id": "lone", "uid": 65534, "gid": 65534})
    a = call(port, "POST", "/v1/jobs/lone/allocation", {"capacity": "1GiB"})
    path = a["nodes"][0]["path"]
    for _ in range(600):        # its agent makes it (60 s at most)
        if os.path.isdir(path):
            break
        stop.wait(0.1)
    env = dict(os.environ, HARMONIA_URL="http://127.0.0.1:%d" % port, HARMONIA_JOBID="lone",
               HARMONIA_NO_AUTH="1", HARMONIA_QUIET="1")
    bench = subprocess.Popen([os.path.join(B, "src", "lib", "libharmonia", "bbio-bench"),
                              "--phases", str(PHASES), "--volume", VOLUME, "--bandwidth",
                              "250 MB/s", "--no-direct", "--dir", path],
                             env=env, stdout=subprocess.PIPE, text=True)

    def follow():      # the device's counters follow what bbio-bench writes
        io = "/proc/%d/io" % bench.pid
        last = 0
        while not stop.is_set():
            try:
                with open(io) as f:
                    w = int(next(l for l in f if l.startswith("wchar:")).split()[1])
            except (OSError, StopIteration, ValueError):
                w = last
            if w > last:
                dev.add(w - last)
                last = w
            stop.wait(0.02)

    grants, seen = {}, [0.0]

    def watch():       # the rate each phase is granted, as bbmgrd grants it
        while not stop.is_set():
            ph = call(port, "GET", "/v1/jobs/lone").get("phase")
            if ph and ph.get("grant") and ph["id"] not in grants:
                grants[ph["id"]] = ph["grant"]["bandwidth"]
            st = call(port, "GET", "/v1/nodes/bb01")["agent"].get("status") or {}
            seen[0] = max(seen[0], st.get("device_write_bw") or 0)
            stop.wait(0.01)

    threads = [threading.Thread(target=f, daemon=True) for f in (follow, watch)]
    for t in threads:
        t.start()
    out, _ = bench.communicate()
    stop.set()
    for t in threads:
        t.join()
    res = json.loads(out)
    granted = [grants[k] for k in sorted(grants)]
    achieved = [p.get("bandwidth") for p in res.get("phase", [])]
    print("bench_bbnoded_lone: one job, %d phases of %s, node configured at 250 MB/s, "
          "policy fairshare" % (PHASES, VOLUME))
    print("bbio-bench: %s, %d of %d phases gated" % (res["harmonia"]["mode"],
                                                   res["harmonia"]["gated_phases"], PHASES))
    print("phase  granted before (issue)  granted now  written now")
    for i, g in enumerate(granted):
        b = "%.1f MB/s" % (BEFORE[i] / 1e6) if i < len(BEFORE) else "-"
        ach = achieved[i] if i < len(achieved) and isinstance(achieved[i], (int, float)) else None
        print("%5d  %22s  %8.1f MB/s  %s" % (i + 1, b, g / 1e6,
                                             "%.1f MB/s" % (ach / 1e6) if ach else "-"))
    print("the agent saw the job's writes on the device: up to %.1f MB/s" % (seen[0] / 1e6))
    if granted:
        print("ratio last/first phase granted now: %.3f (before: %.3f)"
              % (granted[-1] / granted[0], BEFORE[-1] / BEFORE[0]))
    if svg:
        chart(BEFORE, granted, svg)
        print("chart: %s" % svg)
finally:
    stop.set()
    stop_all(procs)
    shutil.rmtree(d, ignore_errors=True)
EOF
