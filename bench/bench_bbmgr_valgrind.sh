#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_bbmgr_valgrind.sh — bbmgrd under valgrind memcheck for a mixed load
# (VALGRIND_SECONDS, default 20 for CI; the documented full run is 600:
# VALGRIND_SECONDS=600 sh bench/bench_bbmgr_valgrind.sh), then a clean SIGTERM
# stop.  Prints valgrind's LEAK SUMMARY and ERROR SUMMARY and fails if anything is
# definitely or indirectly lost or a memory error was seen.
#
# The load, for the whole duration, from two clients at once:
#  * bench_bbmgr_load: phase request/grant/finish round trips (MUNGE credential on
#    every request) over 100 registered jobs, one request in flight;
#  * bench_bbmgr_mixed.py (as root): the rest of the API in a loop — job
#    registration, hints, allocations, stage-in/out copied by the mover, phases
#    (long-poll wait, progress, finish, cancel), persistent buffers, GET of jobs,
#    nodes, pools, schedule, policy, status, history and /metrics, policy changes,
#    node drain/resume, bad requests (4xx, malformed HTTP, dropped connections)
#    and a SIGHUP reload every VALGRIND_HUP_EVERY seconds (default 60; a new node
#    group, a broken file that must be refused, the original), leaving a running
#    job behind for the shutdown;
# then the bbmgr CLI over the unix socket.  VALGRIND_KEEP=1 keeps the directory.
. "$(dirname "$0")/bench_lib.sh"
S=${HARMONIA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
SECS=${VALGRIND_SECONDS:-20}
HUP=${VALGRIND_HUP_EVERY:-60}
command -v valgrind >/dev/null || { echo "valgrind not installed: skipped"; exit 0; }
bench_tmpdir /tmp bbmgr-vg
LPID=""; RPID=""
cleanup() {
    kill_all "$RPID" "$LPID" "$DPID" "$MPID"
    if [ "${VALGRIND_KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT INT TERM
mkdir -m 0755 "$T/bb" "$T/hd" "$T/bx" "$T/pfs"
start_munged
PORT=$(free_port)
# "nodes" last: the reloads of bench_bbmgr_mixed.py append a node group to it
cat > "$T/bbmgr.yaml" <<EOC
listen: {address: 127.0.0.1, port: $PORT, unix_socket: "$T/bbmgrd.sock"}
state: {dir: "$T/state"}
auth: {munge_socket: "$T/sock/munge.socket", slurm_user: "4242"}
log: {level: warning}
policy: {id: fairshare}
limits: {max_body: 4KiB, connection_timeout: 5s, max_wait: 10s}
stage: {mode: mover}
mover: {threads: 2, chunk: 1MiB, depth: 16}
devices:
  - {name: nvme, msca: [0, 0.02, 0.05]}
pools:
  - {name: nvme, granularity: 1GiB}
  - {name: capacity, granularity: 16GiB}
nodes:
  - {names: "bb[01-04]", capacity: 4TiB, bandwidth: 4 GB/s, device: nvme, mount: "$T/bb", pool: nvme}
  - {names: "hd[1-2]", capacity: 8TiB, bandwidth: 500 MB/s, mount: "$T/hd", pool: capacity}
EOC
BIN="$B/bbmgr/bbmgrd"
[ -x "$B/bbmgr/.libs/bbmgrd" ] && BIN="$B/bbmgr/.libs/bbmgrd"
valgrind --leak-check=full --show-leak-kinds=definite,indirect \
    --errors-for-leak-kinds=definite,indirect --error-exitcode=3 --num-callers=30 \
    --log-file="$T/vg.log" "$BIN" -f -c "$T/bbmgr.yaml" 2>"$T/bbmgrd.log" &
DPID=$!
T0=$(date +%s)
i=0
while ! "$B/bbmgr/bbmgr" -u "unix:$T/bbmgrd.sock" status >/dev/null 2>&1; do
    i=$((i+1)); [ $i -gt 600 ] && { cat "$T/bbmgrd.log"; exit 1; }; sleep 0.1
done
# the process's RSS (valgrind's shadow memory included) every 15 s: growth under a
# steady load would be a leak that the daemon still frees at exit
( while kill -0 "$DPID" 2>/dev/null; do
      sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$DPID/status" 2>/dev/null >>"$T/rss"; sleep 15
  done ) &
RPID=$!
"$B/bench/bench_bbmgr_load" --url "http://127.0.0.1:$PORT" --jobs 100 --threads 1 \
    --seconds "$SECS" >"$T/load.out" 2>"$T/load.err" &
LPID=$!
mixed="mixed: skipped (needs root)"; mrc=0
if [ "$(id -u)" = 0 ]; then
    python3 "$S/bench/bench_bbmgr_mixed.py" --url "http://127.0.0.1:$PORT" \
        --munge-socket "$T/sock/munge.socket" --seconds "$SECS" --pfs "$T/pfs" \
        --config "$T/bbmgr.yaml" --mount2 "$T/bx" --pid "$DPID" --hup-every "$HUP" \
        >"$T/mixed.out" 2>"$T/mixed.err" || mrc=$?
    mixed=$(cat "$T/mixed.out")
fi
lrc=0; wait "$LPID" || lrc=$?
LPID=""
out=$(cat "$T/load.out")
# the rest of the API once more, through the CLI and the unix socket
U="unix:$T/bbmgrd.sock"
for c in status nodes pools jobs persistent "schedule 5" policy "drain bb02 x" "resume bb02" \
         "policy fcfs" "policy fairshare"; do
    "$B/bbmgr/bbmgr" -u "$U" $c >/dev/null || echo "bbmgr $c: failed"
done
curl -s "http://127.0.0.1:$PORT/metrics" >/dev/null || true
kill -TERM "$DPID"
rc=0; wait "$DPID" || rc=$?
DPID=""
kill "$RPID" 2>/dev/null || true; RPID=""
T1=$(date +%s)
echo "valgrind load: ${SECS}s of load, $((T1 - T0))s under valgrind in all"
echo "phase load: $out"
echo "mixed load: $mixed"
[ -s "$T/rss" ] && awk 'NR==1{f=$1} {if($1>m)m=$1; l=$1; n++} END{printf "RSS under valgrind (%d samples, 15 s apart): first %.1f MB, max %.1f MB, last %.1f MB\n", n, f/1024, m/1024, l/1024}' "$T/rss"
[ -s "$T/load.err" ] && { echo "--- phase load stderr"; head -20 "$T/load.err"; }
[ -s "$T/mixed.err" ] && { echo "--- mixed load stderr"; head -40 "$T/mixed.err"; }
echo "--- valgrind"
grep -E 'ERROR SUMMARY|LEAK SUMMARY|definitely lost:|indirectly lost:|possibly lost:|still reachable:|suppressed:|All heap blocks were freed|total heap usage' "$T/vg.log" | sed 's/^==[0-9]*== *//'
fail=0
errs=$(sed -n 's/.*ERROR SUMMARY: \([0-9,]*\) errors.*/\1/p' "$T/vg.log" | tail -1 | tr -d ,)
def=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$T/vg.log" | tail -1 | tr -d ,)
ind=$(sed -n 's/.*indirectly lost: \([0-9,]*\) bytes.*/\1/p' "$T/vg.log" | tail -1 | tr -d ,)
[ -n "$errs" ] || { echo "valgrind: no ERROR SUMMARY in its log"; fail=1; }
if [ "${errs:-0}" != 0 ] || [ "${def:-0}" != 0 ] || [ "${ind:-0}" != 0 ] || [ $rc -ne 0 ]; then
    echo "--- valgrind log (first 400 lines)"; head -400 "$T/vg.log"
    echo "valgrind: errors or leaks (exit $rc, errors ${errs:-?}, definitely lost ${def:-0} B," \
         "indirectly lost ${ind:-0} B)"
    fail=1
fi
if [ $lrc -ne 0 ] || [ $mrc -ne 0 ]; then
    echo "--- bbmgrd log (last 40 lines)"; tail -40 "$T/bbmgrd.log"
    echo "load: unexpected replies (phase load exit $lrc, mixed load exit $mrc)"
    fail=1
fi
[ $fail = 0 ] || exit 1
echo "valgrind: no errors, no definite/indirect leaks"
