#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_interpose.sh — what the interposer (libharmonia-preload.so) costs an
# unmodified program, with a real bbmgrd (durable state, MUNGE, fairshare over
# 40 GB/s: a lone job's grant never slows it):
#  1. the time one pwrite(2) of 4 KiB takes through the C library directly, through
#     the interposer on a file outside the paths that matter (outside a phase), and
#     inside a phase (a file in the buffer: detector, lock and bucket on every
#     call); ns per call, measured in one process (bench_interpose_calls);
#  2. the run time of a periodic program (a shell loop: sleep, then dd of 64 MiB
#     into the buffer; one dd process per phase, each asking bbmgrd for its phase)
#     with w_iter 10 s and 1 s, against the same loop without the interposer:
#     paired runs of farm-bench --vs when it is on PATH (the median of the ratios),
#     else alternating runs timed here.  Targets: <= 1% at 10 s, <= 3% at 1 s;
#  3. the same with one Python process doing every phase (no process start-up
#     per phase).  BENCH_ONLY_PY=1 runs 1 and 3 only.
# Environment: HARMONIA_BUILDDIR; BENCH_CALLS (default 2000000); BENCH_RUNS (paired
# runs, default 3); BENCH_PHASES_10 (default 3) and BENCH_PHASES_1 (default 10).
. "$(dirname "$0")/bench_lib.sh"
CALLS=${BENCH_CALLS:-2000000}
RUNS=${BENCH_RUNS:-3}
P10=${BENCH_PHASES_10:-3}
P1=${BENCH_PHASES_1:-10}
PRELOAD="$B/src/lib/libharmonia/.libs/libharmonia-preload.so"
[ -e "$PRELOAD" ] || { echo "no $PRELOAD: build first"; exit 1; }
bench_tmpdir /tmp interpose
BB=$(mktemp -d /dev/shm/bench-interpose-bb.XXXXXX)
OUT=$(mktemp -d /dev/shm/bench-interpose-out.XXXXXX)
cleanup() {
    kill_all "$DPID" "$MPID"
    rm -rf "$T" "$BB" "$OUT"
}
trap cleanup EXIT INT TERM

interpose_bbmgrd bench "$BB"
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
CALLSBIN="$B/bench/bench_interpose_calls"

echo "machine: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "1. one pwrite(2) of 4 KiB to /dev/shm, $CALLS calls each way in interleaved blocks"
echo "   (one process; the fastest block of each):"
R=$(LD_PRELOAD="$PRELOAD" "$CALLSBIN" "$OUT/f" "$BB/f" "$CALLS" 4096)
python3 - "$(field "$R" direct_ns)" "$(field "$R" outside_ns)" "$(field "$R" inside_ns)" <<'EOP'
import sys
n0, n1, n2 = (float(x) for x in sys.argv[1:])
print("   the C library's pwrite, directly:            %7.1f ns" % n0)
print("   through the interposer, outside the buffer:  %7.1f ns (+%.1f ns a call)" % (n1, n1 - n0))
print("   through the interposer, in a phase:          %7.1f ns (+%.1f ns a call)" % (n2, n2 - n0))
EOP

loop() {    # loop COMPUTE PHASES -> the periodic program, as one sh -c string
    echo "for i in \$(seq $2); do sleep $1; dd if=/dev/zero of=$BB/ck bs=1M count=64 status=none; done"
}
ratio() {   # ratio COMPUTE PHASES LABEL
    prog=$(loop "$1" "$2")
    if command -v farm-bench >/dev/null 2>&1; then
        farm-bench -n "$RUNS" --warmup 1 --timeout 1800 \
            --vs "env -u LD_PRELOAD sh -c '$prog'" \
            -- env LD_PRELOAD="$PRELOAD" sh -c "$prog" > "$T/fb.$3" 2>&1 || true
        echo "   $3 (farm-bench, $RUNS paired runs; A = with the interposer, B = without):"
        sed 's/^/     /' "$T/fb.$3"
    else
        wo=""; wi=""
        for r in $(seq "$RUNS"); do
            t0=$(date +%s.%N); env -u LD_PRELOAD sh -c "$prog"; t1=$(date +%s.%N)
            LD_PRELOAD="$PRELOAD" sh -c "$prog"; t2=$(date +%s.%N)
            wo="$wo $(echo "$t1 - $t0" | bc)"; wi="$wi $(echo "$t2 - $t1" | bc)"
        done
        python3 - "$wo" "$wi" "$3" <<'EOP'
import sys, statistics as st
a = st.median(float(x) for x in sys.argv[1].split())
b = st.median(float(x) for x in sys.argv[2].split())
print("   %s: without %.3f s, with %.3f s (medians): ratio %.4f (%+.2f%%)"
      % (sys.argv[3], a, b, b / a, 100 * (b / a - 1)))
EOP
    fi
}
pyloop() {  # pyloop COMPUTE PHASES -> one Python process writing 64 MiB every w_iter
    cat > "$T/loop$2.py" <<EOPY
import time
b = bytes(1 << 20)
for i in range($2):
    time.sleep($1)
    with open("$BB/py", "wb") as f:
        for k in range(64):
            f.write(b)
EOPY
    echo "/usr/bin/python3 $T/loop$2.py"
}
if [ "${BENCH_ONLY_PY:-}" = "" ]; then
echo "2. a periodic program, dd of 64 MiB into the buffer every w_iter (phases granted by bbmgrd):"
ratio 9.9 "$P10" "w_iter 10 s, $P10 phases (target <= 1%)"
ratio 0.9 "$P1" "w_iter 1 s, $P1 phases (target <= 3%)"
fi
echo "3. the same, one Python process writing 64 MiB every w_iter (the phases in one process):"
loop() { pyloop "$@"; }
ratio 9.9 "$P10" "python, w_iter 10 s, $P10 phases (target <= 1%)"
ratio 0.9 "$P1" "python, w_iter 1 s, $P1 phases (target <= 3%)"
N=$("$B/bbmgr/bbmgr" -u "unix:$T/bbmgrd.sock" status >/dev/null 2>&1; python3 - "$PORT" <<'EOP'
import sys, json, http.client, subprocess, os
port = int(sys.argv[1])
cred = subprocess.run(["munge", "-S", os.environ["HARMONIA_MUNGE_SOCKET"], "-s",
                       "GET /v1/jobs/bench/phases"],
                      check=True, capture_output=True, text=True).stdout.strip()
c = http.client.HTTPConnection("127.0.0.1", port)
c.request("GET", "/v1/jobs/bench/phases", headers={"Authorization": "MUNGE " + cred})
ph = json.loads(c.getresponse().read())["phases"]
print(len(ph), sum(1 for p in ph if p["state"] == "finished"))
EOP
)
echo "bbmgrd saw (phases, finished): $N"
