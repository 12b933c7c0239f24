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
# grants, the agents' report p99, and the ratios between the two runs.  Targets:
# op p99 < 2 ms and >= 5,000 durable ops/s with the agents.  No timed asserts.
#
# Environment: HARMONIA_BUILDDIR; BENCH_SECONDS (default 5); BENCH_THREADS
# (default 4); BENCH_AGENTS (default 64).
. "$(dirname "$0")/bench_lib.sh"
SECS=${BENCH_SECONDS:-5}
THREADS=${BENCH_THREADS:-4}
AGENTS=${BENCH_AGENTS:-64}
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

echo "bbmgrd: durable, MUNGE sessions for the jobs, $AGENTS agent nodes, 1000 jobs, $(nproc) cores,"
echo "        client $THREADS threads, ${SECS}s per point; op = phase request or finish"
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
    "$B/bench/bench_bbmgr_load" --url "$URL" --jobs 1000 --threads "$THREADS" --seconds 0.2 >/dev/null
    out=$("$B/bench/bench_bbmgr_load" --url "$URL" --jobs 1000 --threads "$THREADS" \
          --seconds "$SECS" --no-register)
    extra=""
    if [ -n "$APID" ]; then
        extra=" $(cat "$T/agents.out")"
        kill "$APID"; wait "$APID" 2>/dev/null || true; APID=""
    fi
    echo "agents=$A $out$extra"
    eval "$(echo "$out" | tr ' ' '\n' | grep -E '^(ops_per_s|op_p99_ms)=' | sed "s/^/R${A}_/")"
    stop_bbmgrd
done
python3 -c "
a, z = $AGENTS, 0
print('ratio ops_per_s with/without agents = %.2f' % ($(eval echo \$R${AGENTS}_ops_per_s) / $R0_ops_per_s))
p = $(eval echo \$R${AGENTS}_op_p99_ms); o = $(eval echo \$R${AGENTS}_ops_per_s)
print('target op p99 < 2 ms with %d agents: %s (%.3f ms)' % (a, 'met' if p < 2 else 'NOT met', p))
print('target >= 5000 durable ops/s with %d agents: %s (%.0f/s)' % (a, 'met' if o >= 5000 else 'NOT met', o))"
