#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_bbnoded_load.sh — bbmgrd's phase grants with 64 buffer-node agents reporting.
#
# A real bbmgrd (durable state, MUNGE) configured with 64 agent nodes, and 1,000
# concurrent jobs driven by bench_bbmgr_load (phase request -> grant -> finish, as
# bench_bbmgr.sh); the same daemon configuration is run twice in the same run:
# without reports, then with 64 light agents (threads of one Python process, each
# POSTing /v1/agents/<node> every second with a device status, authenticated as
# bbnoded is: a MUNGE credential opens a session on the connection, its token
# authenticates the next reports; they move no data).  Printed: ops/s and op p99 of the
# grants, the agents' report p99, the daemon's CPU per op, and the ratios between
# the two runs.  Targets:
# op p99 < 2 ms and >= 5,000 durable ops/s with the agents.  No timed asserts.
#
# Environment: HARMONIA_BUILDDIR; BENCH_SECONDS (default 5); BENCH_THREADS
# (default 4); BENCH_AGENTS (default 64).
#
# BENCH_CALLGRIND=N: instead, bbmgrd runs under valgrind --tool=callgrind and the
# client makes N round trips (default 2000) at each point; printed: the daemon's
# instructions per request (Ir counted from the first to the last of them, requests
# counted by the daemon's /metrics, the agents' reports included), those of the
# scheduler's decisions apart (libhsched's hs_sched_decide(): their number and
# size follow the timing, which callgrind changes), and with the agents a rough
# figure per report.  Unlike times, instruction counts barely move with the
# machine's other load: compare two builds with them (the figure without the
# decisions is the steadiest).  BENCH_KEEP=DIR keeps the callgrind.out files there
# (callgrind_annotate reads them).
. "$(dirname "$0")/bench_lib.sh"
SECS=${BENCH_SECONDS:-5}
THREADS=${BENCH_THREADS:-4}
AGENTS=${BENCH_AGENTS:-64}
CG=${BENCH_CALLGRIND:-}
bench_tmpdir /tmp bbnoded-load
APID=""
cleanup() {
    kill_all "$APID" "$DPID" "$MPID"
    rm -rf "$T"
}
trap cleanup EXIT INT TERM

start_munged --num-threads=4
PORT=$(free_port)
URL="http://127.0.0.1:$PORT"
LAST=$(printf '%03d' "$AGENTS")

start_daemon() {
    bbmgrd_conf "$T/state" munge
    cat >> "$T/bbmgr.yaml" <<EOC
limits: {max_jobs: 200000}
agents: {interval: 1s, down_after: 30s}
nodes:
  - {names: "bb[001-$LAST]", capacity: 4TiB, bandwidth: 4 GB/s, mount: "$T/bb/%n", agent: true}
EOC
    start_bbmgrd
}

# light agents: AGENTS threads, one report a second each (libmunge through ctypes)
cat > "$T/agents.py" <<'EOP'
import ctypes, http.client, json, os, sys, threading, time
port, n, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lib = ctypes.CDLL("libmunge.so.2")
lib.munge_ctx_create.restype = ctypes.c_void_p
lib.munge_ctx_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p]
lib.munge_encode.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.c_void_p,
                             ctypes.c_char_p, ctypes.c_int]
MUNGE_OPT_SOCKET = 8
stop = threading.Event()
lat = []
lock = threading.Lock()

def agent(k):
    node = "bb%03d" % k
    ctx = lib.munge_ctx_create()
    lib.munge_ctx_set(ctx, MUNGE_OPT_SOCKET, os.environ["HARMONIA_MUNGE_SOCKET"].encode())
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    gen = token = None
    body = {"version": 1, "agent": "bench%03d" % k, "results": [],
            "status": {"free_bytes": 4 << 40, "used_bytes": 1 << 30, "busy": k % 2 == 0,
                       "read_bw": 1e8, "write_bw": 2e8, "interval": 1.0, "queue": 1,
                       "errors": 0}}
    time.sleep(k / n)
    while not stop.is_set():
        t0 = time.time()
        hdrs = {"Content-Type": "application/json"}
        if token:       # as bbnoded: one credential per connection, then its session
            hdrs["Authorization"] = "Session " + token
        else:
            payload = ("POST /v1/agents/" + node).encode()
            cred = ctypes.c_char_p()
            lib.munge_encode(ctypes.byref(cred), ctx, payload, len(payload))
            hdrs["Authorization"] = "MUNGE " + cred.value.decode()
            hdrs["Harmonia-Session"] = "open"
        if gen:
            body["dirs"] = gen
        c.request("POST", "/v1/agents/" + node, body=json.dumps(body), headers=hdrs)
        r = c.getresponse()
        js = json.loads(r.read())
        if r.getheader("Harmonia-Session"):
            token = r.getheader("Harmonia-Session").split(";")[0].strip()
        if r.status != 200:
            sys.exit("agent %s: %d %s" % (node, r.status, js))
        gen = js["dirs_gen"]
        with lock:
            lat.append(time.time() - t0)
        stop.wait(max(0, 1.0 - (time.time() - t0)))

th = [threading.Thread(target=agent, args=(k + 1,), daemon=True) for k in range(n)]
for t in th:
    t.start()
try:
    while True:
        time.sleep(0.5)
        with lock:
            v = sorted(lat)
        with open(out, "w") as f:
            f.write("reports=%d report_p99_ms=%.3f\n" % (
                len(v), 1e3 * v[int(0.99 * (len(v) - 1))] if v else 0))
except KeyboardInterrupt:
    pass
EOP

# the daemon's API requests answered and its decisions so far ("REQUESTS DECISIONS"),
# from /metrics on its unix socket
requests() {
    curl -s --unix-socket "$T/bbmgrd.sock" http://bbmgrd/metrics |
        awk '/^harmonia_api_requests_total/ { n += $2 }
             /^harmonia_decision_seconds_count/ { d = $2 } END { print n + 0, d + 0 }'
}
cpu_s() { awk '{print $14 + $15}' "/proc/$1/stat"; }     # utime + stime, ticks
tck=$(getconf CLK_TCK)
# callgrind's instruction count of process $1 since its last zeroing (dumped)
cg_ir() {
    rm -f "$T"/callgrind.out.*
    callgrind_control -d "$1" >/dev/null 2>&1
    i=0
    until grep -qs '^totals:' "$T"/callgrind.out.*; do
        i=$((i+1)); [ $i -gt 600 ] && { echo "no callgrind dump" >&2; exit 1; }; sleep 0.1
    done
    awk '/^totals:/ { print $2 }' "$(ls -t "$T"/callgrind.out.* | head -1)"
}

if [ -n "$CG" ]; then
    [ "$CG" -gt 1 ] 2>/dev/null || CG=2000
    export BBMGRD_WRAP="valgrind --tool=callgrind --callgrind-out-file=$T/callgrind.out.%p"
    echo "bbmgrd under callgrind: durable, MUNGE sessions, $AGENTS agent nodes, 1000 jobs,"
    echo "        client $THREADS threads, $CG round trips per point; Ir = instructions"
fi
run_callgrind() {   # A: the number of agents reporting meanwhile
    "$B/bench/bench_bbmgr_load" --url "$URL" --jobs 1000 --threads "$THREADS" --seconds 2 >/dev/null
    set -- $(requests); r0=$1 dc0=$2
    rep0=$([ -n "$APID" ] && sed 's/.*reports=\([0-9]*\).*/\1/' "$T/agents.out" || echo 0)
    callgrind_control -z "$DPID" >/dev/null 2>&1
    out=$("$B/bench/bench_bbmgr_load" --url "$URL" --jobs 1000 --threads "$THREADS" \
          --phases "$CG" --no-register)
    rep1=$([ -n "$APID" ] && sed 's/.*reports=\([0-9]*\).*/\1/' "$T/agents.out" || echo 0)
    ir=$(cg_ir "$DPID")
    set -- $(requests); r1=$1 dc1=$2
    f=$(ls -t "$T"/callgrind.out.* | head -1)
    # the scheduler's decisions (libhsched), whose number and size follow the timing
    dir=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
          awk '/hs_sched_decide \[/ { gsub(",", "", $1); print $1; exit }')
    [ -n "${BENCH_KEEP:-}" ] && cp "$f" "$BENCH_KEEP/callgrind.out.agents$A"
    rm -f "$T"/callgrind.out.*
    n=$((r1 - r0 - 1)); reps=$((rep1 - rep0)); dec=$((dc1 - dc0))
    python3 -c "
ir, n, reps, d, dir = $ir, $n, $reps, $dec, ${dir:-0}
print('agents=$A requests=%d reports=%d Ir=%d Ir_per_request=%.0f decisions=%d '
      'Ir_per_decision=%.0f Ir_per_request_without_decisions=%.0f'
      % (n, reps, ir, ir / n, d, dir / max(d, 1), (ir - dir) / n))"
    eval "CG${A}_ir=$ir CG${A}_n=$n CG${A}_reps=$reps CG${A}_dir=${dir:-0}"
}

[ -n "$CG" ] || {
echo "bbmgrd: durable, MUNGE sessions for the jobs, $AGENTS agent nodes, 1000 jobs, $(nproc) cores,"
echo "        client $THREADS threads, ${SECS}s per point; op = phase request or finish"
}
for A in 0 "$AGENTS"; do
    start_daemon
    if [ "$A" -gt 0 ]; then
        python3 "$T/agents.py" "$PORT" "$A" "$T/agents.out" &
        APID=$!
        i=0
        until [ -s "$T/agents.out" ] && grep -q "reports=[1-9]" "$T/agents.out"; do
            i=$((i+1)); [ $i -gt 200 ] && { echo "agents did not report"; exit 1; }; sleep 0.05
        done
        sleep 1.5   # every agent has reported once
    fi
    if [ -n "$CG" ]; then
        run_callgrind "$A"
        [ -n "$APID" ] && { kill "$APID"; wait "$APID" 2>/dev/null || true; APID=""; }
        stop_bbmgrd
        continue
    fi
    "$B/bench/bench_bbmgr_load" --url "$URL" --jobs 1000 --threads "$THREADS" --seconds 0.2 >/dev/null
    d0=$(cpu_s "$DPID")
    out=$("$B/bench/bench_bbmgr_load" --url "$URL" --jobs 1000 --threads "$THREADS" \
          --seconds "$SECS" --no-register)
    d1=$(cpu_s "$DPID")
    ops=$(echo "$out" | tr ' ' '\n' | sed -n 's/^ops=//p')
    out="$out daemon_cpu_s=$(python3 -c "print('%.2f daemon_cpu_us_per_op=%.1f' % (($d1 - $d0) / $tck, ($d1 - $d0) / $tck / max($ops, 1) * 1e6))")"
    extra=""
    if [ -n "$APID" ]; then
        extra=" $(cat "$T/agents.out")"
        kill "$APID"; wait "$APID" 2>/dev/null || true; APID=""
    fi
    echo "agents=$A $out$extra"
    eval "$(echo "$out" | tr ' ' '\n' | grep -E '^(ops_per_s|op_p99_ms)=' | sed "s/^/R${A}_/")"
    stop_bbmgrd
done
if [ -n "$CG" ]; then
    python3 -c "
a, n, r = $(eval echo \$CG${AGENTS}_ir), $(eval echo \$CG${AGENTS}_n), $(eval echo \$CG${AGENTS}_reps)
ad = $(eval echo \$CG${AGENTS}_dir)
z, m, zd = $CG0_ir, $CG0_n, $CG0_dir
per = (z - zd) / m          # a grant request without the agents, decisions aside
print('Ir per grant request without the decisions (no agents) = %.0f' % per)
if r:
    print('Ir per agent report = %.0f (the Ir with the agents, decisions aside, beyond '
          'their requests at that rate; rough)' % ((a - ad - (n - r) * per) / r))"
    exit 0
fi
python3 -c "
a, z = $AGENTS, 0
print('ratio ops_per_s with/without agents = %.2f' % ($(eval echo \$R${AGENTS}_ops_per_s) / $R0_ops_per_s))
p = $(eval echo \$R${AGENTS}_op_p99_ms); o = $(eval echo \$R${AGENTS}_ops_per_s)
print('target op p99 < 2 ms with %d agents: %s (%.3f ms)' % (a, 'met' if p < 2 else 'NOT met', p))
print('target >= 5000 durable ops/s with %d agents: %s (%.0f/s)' % (a, 'met' if o >= 5000 else 'NOT met', o))"
