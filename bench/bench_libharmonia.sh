#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_libharmonia.sh — what gating every I/O phase costs a job: 1,000 tiny phases
# (a 4 KiB pwrite each, to /dev/shm) separated by compute phases, with libharmonia
# talking to a real bbmgrd (durable state, MUNGE credential on every request, policy
# fairshare: grants at once) against the same job without libharmonia.
# Target: <= 3% of the run time added (Gainaru et al. measured 1-5.3%).
# Environment: HARMONIA_BUILDDIR; BENCH_PHASES (default 1000); BENCH_COMPUTE (compute
# seconds per phase, default 0.05: w_iter of 50 ms, twenty phases a second); BENCH_REPEAT
# (default 1; the median is kept); BENCH_STATE_DIR (bbmgrd's state directory,
# default on the local disk under /tmp: set it under /dev/shm to leave the disk out). A phase costs two requests: the overhead is
# that cost over w_iter (the script prints the w_iter from which it is <= 3%).
. "$(dirname "$0")/bench_lib.sh"
PHASES=${BENCH_PHASES:-1000}
COMPUTE=${BENCH_COMPUTE:-0.05}
REPEAT=${BENCH_REPEAT:-1}
bench_tmpdir /tmp libharmonia
W=$(mktemp -d /dev/shm/bench-libharmonia.XXXXXX)
cleanup() {
    kill_all "$DPID" "$MPID"
    rm -rf "$T" "$W"
    [ -n "${BENCH_STATE_DIR:-}" ] && rm -rf "$BENCH_STATE_DIR" || true
}
trap cleanup EXIT INT TERM

start_munged
PORT=$(free_port)
bbmgrd_conf "${BENCH_STATE_DIR:-$T/state}" munge
cat >> "$T/bbmgr.yaml" <<EOC
nodes:
  - {names: "bb[01-04]", capacity: 4TiB, bandwidth: 4 GB/s, mount: /mnt/bb}
EOC
start_bbmgrd
register_job bench

run() {   # run WITH|WITHOUT -> one line of figures
    if [ "$1" = with ]; then
        HARMONIA_URL="http://127.0.0.1:$PORT" HARMONIA_JOBID=bench HARMONIA_COORD_DIR="$T" \
            "$B/bench/bench_libharmonia" --phases "$PHASES" --compute "$COMPUTE" --dir "$W"
    else
        "$B/bench/bench_libharmonia" --phases "$PHASES" --compute "$COMPUTE" --dir "$W" \
            --no-harmonia
    fi
}
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

echo "job: $PHASES I/O phases of one 4 KiB pwrite, ${COMPUTE} s of compute before each;"
echo "bbmgrd: durable (synchronous=FULL) state in ${BENCH_STATE_DIR:-$T/state}, MUNGE per request,"
echo "        fairshare; $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "median of $REPEAT runs, alternating without/with"
WO=""; WI=""
r=0
while [ $r -lt "$REPEAT" ]; do
    a=$(run without); b=$(run with)
    echo "  without: $a"
    echo "  with:    $b"
    [ "$(field "$b" gated)" = "$PHASES" ] || { echo "not every phase was gated"; exit 1; }
    WO="$WO $(field "$a" run_s)"; WI="$WI $(field "$b" run_s)"
    COST="${COST:-} $(field "$b" phase_cost_mean_us)"
    r=$((r+1))
done
python3 - "$WO" "$WI" "${COST}" "$PHASES" "$COMPUTE" <<'EOP'
import sys, statistics as st
wo = [float(x) for x in sys.argv[1].split()]
wi = [float(x) for x in sys.argv[2].split()]
cost = st.median(float(x) for x in sys.argv[3].split())
n, w = int(sys.argv[4]), float(sys.argv[5])
a, b = st.median(wo), st.median(wi)
ratio = (b - a) / a
print("run time without libharmonia: %.3f s (median)" % a)
print("run time with libharmonia:    %.3f s (median)" % b)
print("overhead: %.2f%% of the run time (%.0f us per phase: begin + end)" % (100 * ratio, cost))
print("target <= 3%%: %s" % ("met" if ratio <= 0.03 else "NOT met"))
print("the per-phase cost over w_iter: %.2f%% at w_iter = %.3g s; <= 3%% from w_iter >= %.3g s"
      % (100 * cost * 1e-6 / w if w > 0 else float("inf"), w, cost * 1e-6 / 0.03))
EOP
