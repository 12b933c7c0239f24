#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_interpose_py.sh — what the interposer (libharmonia-preload.so) costs a
# Python program that makes many small writes into the buffer, one process,
# against the same program without it, with a real bbmgrd (durable state, MUNGE,
# fairshare over 40 GB/s: the grant paces but never slows it):
#   small     os.write() of 64 bytes, BENCH_WRITES times (one system call each:
#             the interposer's cost per call at its largest share)
#   page      os.write() of 4 KiB, BENCH_WRITES times
#   buffered  a text file's write() of 64-byte lines, 8 x BENCH_WRITES times
#             (Python's buffer: a system call per 8 KiB)
# Each pair runs the two commands one after the other (the order alternates) and
# times the whole process (wall: a monotonic clock around it; cpu: user + system
# of the child, wait4); the ratio printed is the median over the pairs of
# with / without, so a drift of the machine's speed cancels.
# Environment: HARMONIA_BUILDDIR; BENCH_RUNS (pairs, default 9); BENCH_WRITES
# (default 400000); BENCH_LOG=FILE keeps the interposer's log of the phases
# (HARMONIA_INTERPOSE_LOG); BENCH_PRELOAD another build of the interposer (the
# agent module next to it).  Target: <= 2% for each program.
. "$(dirname "$0")/bench_lib.sh"
RUNS=${BENCH_RUNS:-9}
WRITES=${BENCH_WRITES:-400000}
PRELOAD=${BENCH_PRELOAD:-"$B/src/lib/libharmonia/.libs/libharmonia-preload.so"}
[ -e "$PRELOAD" ] || { echo "no $PRELOAD: build first"; exit 1; }
bench_tmpdir /tmp interpose-py
BB=$(mktemp -d /dev/shm/bench-interpose-py.XXXXXX)
cleanup() {
    kill_all "$DPID" "$MPID"
    rm -rf "$T" "$BB"
}
trap cleanup EXIT INT TERM

interpose_bbmgrd benchpy "$BB"
cat > "$T/w.py" <<'EOPY'
import os, sys
kind, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if kind == "buffered":
    line = "x" * 63 + "\n"
    with open(path, "w") as f:
        for i in range(8 * n):
            f.write(line)
else:
    b = b"x" * (64 if kind == "small" else 4096)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    w = os.write
    for i in range(n):
        w(fd, b)
    os.close(fd)
EOPY
[ -z "${BENCH_LOG:-}" ] || export HARMONIA_INTERPOSE_LOG="$BENCH_LOG"
echo "machine: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "one Python process writing into the buffer, $RUNS pairs of whole-process runs,"
echo "median of the ratios with / without the interposer (target <= 2%):"
python3 - "$PRELOAD" "$T/w.py" "$BB" "$RUNS" "$WRITES" <<'EOP'
import os, statistics as st, sys, time
pre, prog, bb, runs, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
py = "/usr/bin/python3"

def run(kind, with_pre):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if with_pre:
        env["LD_PRELOAD"] = pre
    t0 = time.monotonic()
    pid = os.spawnve(os.P_NOWAIT, py, [py, prog, kind, os.path.join(bb, kind), n], env)
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    if status != 0:
        sys.exit("%s failed (status %d)" % (kind, status))
    return wall, ru.ru_utime + ru.ru_stime

for kind in ("small", "page", "buffered"):
    run(kind, True), run(kind, False)          # warm-up
    a, b, rw, rc = [], [], [], []
    for i in range(runs):
        order = (True, False) if i % 2 == 0 else (False, True)
        r = {w: run(kind, w) for w in order}
        a.append(r[True]); b.append(r[False])
        rw.append(r[True][0] / r[False][0]); rc.append(r[True][1] / r[False][1])
    mw, mc = st.median(rw), st.median(rc)
    print("  %-9s without %.3f s (cpu %.3f s), with %.3f s (cpu %.3f s): "
          "wall ratio %.4f (%+.1f%%), cpu ratio %.4f (%+.1f%%)"
          % (kind, st.median(x[0] for x in b), st.median(x[1] for x in b),
             st.median(x[0] for x in a), st.median(x[1] for x in a),
             mw, 100 * (mw - 1), mc, 100 * (mc - 1)))
EOP
