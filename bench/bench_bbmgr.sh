#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_bbmgr.sh — bbmgrd figures: phase grant round trips (request -> grant ->
# finish) with 1, 100 and 1,000 concurrent jobs, durable state (synchronous=FULL)
# and MUNGE authentication as libharmonia does it (one credential opens a session on
# the keep-alive connection; its token authenticates the next requests: doc/api.md,
# Sessions); then, at 1,000 jobs, a MUNGE credential on every request, and no
# authentication at all; RSS with 10,000 jobs and 100,000 phases in history.
# Environment: HARMONIA_BUILDDIR; BENCH_SECONDS (default 5) per load point;
# BENCH_THREADS (default 4) client threads; BENCH_PHASES (default 100000).
# Besides the client's figures, each point prints the CPU seconds the daemon,
# munged and the client used during the timed load (on a 2-core machine they share
# the cores); the fsync latency of the state directory's disk (4 KiB rewrite +
# fdatasync, mean/p50/p99) is measured before and after the load points: the floor
# under a durable commit, and how busy the disk was.
# doc/performance.md explains the figures.
. "$(dirname "$0")/bench_lib.sh"
SECS=${BENCH_SECONDS:-5}
THREADS=${BENCH_THREADS:-4}
PHASES=${BENCH_PHASES:-100000}
bench_tmpdir /tmp bbmgr
cleanup() {
    kill_all "$DPID" "$MPID"
    rm -rf "$T"
}
trap cleanup EXIT INT TERM

start_munged --num-threads=4

PORT=$(free_port)
AUTH=munge
start_daemon() {
    bbmgrd_conf "$T/state" "$AUTH"
    cat >> "$T/bbmgr.yaml" <<EOC
limits: {max_jobs: 200000}
nodes:
  - {names: "bb[01-08]", capacity: 4TiB, bandwidth: 4 GB/s, mount: /mnt/bb}
EOC
    start_bbmgrd
}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$DPID/status"; }

URL="http://127.0.0.1:$PORT"
cpu_s() { awk '{print $14 + $15}' "/proc/$1/stat"; }     # utime + stime, ticks
tck=$(getconf CLK_TCK)
# the disk: 2000 x (4 KiB rewrite + fdatasync) where the state will be
fsync_disk() { echo "disk ($1): $("$B/bench/bench_bbmgr_load" --fsync-test "$T" --phases 2000)"; }
fsync_disk before
echo "bbmgrd: durable (synchronous=FULL, WAL), MUNGE + connection sessions, policy fairshare,"
echo "        $(nproc) cores; client: $THREADS threads, keep-alive, ${SECS}s per point"
echo "        op = one HTTP request (phase request or finish); rt = request -> grant -> finish"
for N in 1 100 1000; do
    start_daemon
    th=$THREADS; [ "$N" -lt "$th" ] && th=$N
    # register (and warm up) first, so that the CPU figures cover the load only
    "$B/bench/bench_bbmgr_load" --url "$URL" --jobs $N --threads $th --seconds 0.2 >/dev/null
    d0=$(cpu_s $DPID); m0=$(cpu_s $MPID)
    out=$("$B/bench/bench_bbmgr_load" --url "$URL" --jobs $N --threads $th --seconds "$SECS" \
          --no-register)
    d1=$(cpu_s $DPID); m1=$(cpu_s $MPID)
    cpu="daemon_cpu_s=$(python3 -c "print('%.2f' % (($d1 - $d0) / $tck))") munged_cpu_s=$(python3 -c "print('%.2f' % (($m1 - $m0) / $tck))")"
    echo "concurrent_jobs=$N $out $cpu"
    eval "$(echo "$out" | tr ' ' '\n' | grep -E '^(ops_per_s|op_p99_ms|rt_p99_ms)=' | sed "s/^/R${N}_/")"
    stop_bbmgrd
done
fsync_disk after
echo "ratio ops_per_s 1000/1 jobs = $(python3 -c "print(round($R1000_ops_per_s/$R1_ops_per_s, 2))")"
echo "ratio ops_per_s 1000/100 jobs = $(python3 -c "print(round($R1000_ops_per_s/$R100_ops_per_s, 2))")"
echo "ratio op_p99 1000/1 jobs = $(python3 -c "print(round($R1000_op_p99_ms/$R1_op_p99_ms, 2))")"
python3 -c "
ok1 = $R1000_op_p99_ms < 2.0; ok2 = $R1000_ops_per_s >= 5000
print('target op p99 < 2 ms at 1000 jobs: %s (%.3f ms)' % ('met' if ok1 else 'NOT met', $R1000_op_p99_ms))
print('target >= 5000 phase ops/s at 1000 jobs: %s (%.0f/s)' % ('met' if ok2 else 'NOT met', $R1000_ops_per_s))"

# the same at 1,000 jobs with a MUNGE credential on every request (no sessions)
start_daemon
"$B/bench/bench_bbmgr_load" --url "$URL" --jobs 1000 --threads $THREADS --seconds 0.2 \
    --per-request >/dev/null
d0=$(cpu_s $DPID); m0=$(cpu_s $MPID)
out=$("$B/bench/bench_bbmgr_load" --url "$URL" --jobs 1000 --threads $THREADS \
      --seconds "$SECS" --no-register --per-request)
d1=$(cpu_s $DPID); m1=$(cpu_s $MPID)
echo "per_request_munge concurrent_jobs=1000 $out daemon_cpu_s=$(python3 -c "print('%.2f' % (($d1 - $d0) / $tck))") munged_cpu_s=$(python3 -c "print('%.2f' % (($m1 - $m0) / $tck))")"
eval "$(echo "$out" | tr ' ' '\n' | grep -E '^(ops_per_s|op_p99_ms)=' | sed "s/^/P_/")"
stop_bbmgrd
echo "ratio ops_per_s per-request/session MUNGE at 1000 jobs = $(python3 -c "print(round($P_ops_per_s/$R1000_ops_per_s, 2))")"

# the same at 1,000 jobs without MUNGE: what the daemon itself costs
AUTH=none
start_daemon
HARMONIA_NO_AUTH=1 "$B/bench/bench_bbmgr_load" --url "$URL" --jobs 1000 --threads $THREADS \
    --seconds 0.2 >/dev/null
d0=$(cpu_s $DPID)
out=$(HARMONIA_NO_AUTH=1 "$B/bench/bench_bbmgr_load" --url "$URL" --jobs 1000 --threads $THREADS \
      --seconds "$SECS" --no-register)
d1=$(cpu_s $DPID)
echo "auth=none concurrent_jobs=1000 $out daemon_cpu_s=$(python3 -c "print('%.2f' % (($d1 - $d0) / $tck))")"
eval "$(echo "$out" | tr ' ' '\n' | grep -E '^(ops_per_s|op_p99_ms)=' | sed "s/^/N_/")"
stop_bbmgrd
AUTH=munge
echo "ratio ops_per_s munge-session/none at 1000 jobs = $(python3 -c "print(round($R1000_ops_per_s/$N_ops_per_s, 2))")"

# memory: 10,000 registered jobs, PHASES phases in history
start_daemon
r0=$(rss_kb)
out=$("$B/bench/bench_bbmgr_load" --url "$URL" --jobs 10000 --threads $THREADS --phases "$PHASES" --closed --prefix m)
r1=$(rss_kb)
echo "memory: rss_start_kb=$r0 rss_10000_jobs_${PHASES}_phases_kb=$r1 ($out)"
python3 -c "print('target RSS < 200 MB: %s (%.1f MB)' % ('met' if $r1 < 200*1024 else 'NOT met', $r1/1024))"
stop_bbmgrd
