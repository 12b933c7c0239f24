#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_mover.sh — throughput of bbmgrd's data mover against cp -a on the same disk.
#
# The tree: 2 GiB of random data in 8 directories of mixed file sizes, each
# directory 2 x 64 MiB, 16 x 4 MiB, 48 x 1 MiB, 256 x 64 KiB and 64 files of
# 0-4095 bytes (3,088 files, 2 GiB + 1 MiB).  Each round measures, in this order:
#
#   cp -a of the tree                       stage-in and stage-out by 1 job
#   8 concurrent cp -a, 1 directory each    stage-in and stage-out by 8 concurrent
#                                           jobs, 1 directory each (their 8
#                                           requests made at once)
#
# through a real bbmgrd (stage.mode mover, auth none on loopback).  Every figure is
# a ratio of times measured in the same round: mover time against cp -a time (cp
# stops its clock with the data in the page cache) and against cp -a followed by
# one sync (the data on disk).  No timed asserts.  Stage-in copies the PFS tree
# into the job's buffer, stage-out copies the buffer back to a PFS directory.
# A stage-out is timed twice: to 'done' (complete, verified, under its final names)
# and to 'durable' (its fsyncs done: with mover.durable_before_done false they run
# after done); the second is read by polling every 5 ms (both are recorded at the
# daemon's next 50 ms tick; a poll may wait for a commit of the daemon's state,
# some 10-100 ms while the disk is busy).
#
# Environment: HARMONIA_BUILDDIR; BENCH_MOVER_DIR (where the temporary tree goes,
# default /var/tmp: the disk under test); BENCH_MOVER_ROUNDS (default 3);
# BENCH_MOVER_SCALE (divides the number of files of each size, default 1: 8 for a
# quick 256 MiB run); BENCH_MOVER_VERIFY (checksum, size, none; default checksum);
# BENCH_MOVER_THREADS (default 8); BENCH_MOVER_DEPTH (default 128);
# BENCH_MOVER_DURABLE_IN (mover.durable_stage_in, default false);
# BENCH_MOVER_DURABLE_OUT (mover.durable_before_done, default false);
# BENCH_MOVER_CHECKSUM (mover.checksum, default the daemon's default);
# BENCH_MOVER_BBMGRD (the daemon to run, default the build's).
# Page cache: as root the caches are dropped before every run
# (sync; echo 3 > /proc/sys/vm/drop_caches); where that is not allowed every run
# reads a source already in the page cache (noted in the output).
. "$(dirname "$0")/bench_lib.sh"
ROUNDS=${BENCH_MOVER_ROUNDS:-3}
SCALE=${BENCH_MOVER_SCALE:-1}
VERIFY=${BENCH_MOVER_VERIFY:-checksum}
THREADS=${BENCH_MOVER_THREADS:-8}
DEPTH=${BENCH_MOVER_DEPTH:-128}
DURABLE_IN=${BENCH_MOVER_DURABLE_IN:-false}
DURABLE_OUT=${BENCH_MOVER_DURABLE_OUT:-false}
# (only when set: daemons from before that key refuse it)
DOUT=${BENCH_MOVER_DURABLE_OUT:+, durable_before_done: $BENCH_MOVER_DURABLE_OUT}
CKSUM=${BENCH_MOVER_CHECKSUM:+, checksum: $BENCH_MOVER_CHECKSUM}
bench_tmpdir "${BENCH_MOVER_DIR:-/var/tmp}" mover
cleanup() {
    [ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT INT TERM

now() { python3 -c 'import time; print("%.6f" % time.time())'; }
mbs() { python3 -c "print('%.0f' % ($1 / ($2) / 1e6))"; }
ratio() { python3 -c "print('%.2f' % (($2) / ($1)))"; }    # time_cp / time_x
if sync && echo 3 > /proc/sys/vm/drop_caches 2>/dev/null; then
    CACHE="dropped before each run"
    drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
else
    CACHE="NOT dropped (no permission): sources are read from the page cache"
    drop() { sync; }
fi

# ---- the tree: 8 directories of mixed sizes, random data; prints bytes and files
read -r BYTES NFILES <<EOF
$(python3 - "$T/pfs/tree" "$SCALE" <<'PY'
import os, random, sys
root, scale = sys.argv[1], int(sys.argv[2])
KiB, MiB = 1 << 10, 1 << 20
rnd = random.Random(42)
sizes = [(2, 64 * MiB), (16, 4 * MiB), (48, MiB), (256, 64 * KiB)]
nbytes = nfiles = 0
for d in range(8):
    dd = os.path.join(root, "d%d" % d)
    os.makedirs(os.path.join(dd, "small"), exist_ok=True)
    files = [("big%d" % i, s) for n, s in sizes for i in range(max(1, n // scale))]
    files = [("%s-%d" % (name, s), s) for name, s in files]
    files += [(os.path.join("small", "t%02d" % i), rnd.randrange(4096))
              for i in range(max(1, 64 // scale))]
    for name, size in files:
        with open(os.path.join(dd, name), "wb") as f:
            left = size
            while left:
                n = min(left, 8 * MiB)
                f.write(os.urandom(n))
                left -= n
        nbytes += size
        nfiles += 1
print(nbytes, nfiles)
PY
)
EOF
sync
echo "mover benchmark: $NFILES files, $((BYTES / 1048576)) MiB (mixed sizes, 8 directories) in $T"
echo "  disk: $(df -h "$T" | awk 'NR==2 {print $1" ("$2")"}'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); page cache $CACHE"
echo "  mover: verify $VERIFY${CKSUM}, $THREADS threads, chunk 4 MiB, SFQ(D)+ depth $DEPTH x 256 KiB, durable_stage_in $DURABLE_IN, durable_before_done $DURABLE_OUT"

# ---- bbmgrd
PORT=$(free_port)
mkdir -p "$T/bb"
cat > "$T/bbmgr.yaml" <<EOC
listen: {address: 127.0.0.1, port: $PORT, unix_socket: ""}
state: {dir: "$T/state", durable: true}
auth: {type: none}
log: {level: info}
policy: {id: fairshare}
stage: {mode: mover}
mover: {threads: $THREADS, chunk: 4MiB, depth: $DEPTH, verify: $VERIFY$CKSUM, durable_stage_in: $DURABLE_IN$DOUT}
pools: [{name: default, granularity: 1MiB}]
nodes:
  - {names: "bb[01-08]", capacity: 1TiB, bandwidth: 2 GB/s, mount: "$T/bb"}
EOC
"${BENCH_MOVER_BBMGRD:-$B/bbmgr/bbmgrd}" -f -c "$T/bbmgr.yaml" 2>>"$T/bbmgrd.log" &
DPID=$!
URL="http://127.0.0.1:$PORT"
i=0
until curl -sf "$URL/v1/status" >/dev/null 2>&1; do
    i=$((i+1)); [ $i -gt 200 ] && { cat "$T/bbmgrd.log"; exit 1; }; sleep 0.05
done
UID0=$(id -u); GID0=$(id -g)
post() { curl -sf -X "$1" -H 'Content-Type: application/json' -d "$3" "$URL$2"; }
job() {     # job ID -> its buffer directory
    post POST /v1/jobs "{\"id\":\"$1\",\"uid\":$UID0,\"gid\":$GID0}" >/dev/null
    post POST "/v1/jobs/$1/allocation" '{"capacity":"10GiB"}' | jq -r '.nodes[0].path'
}
stage() {   # JOB KIND SRC DST -> transfer id
    post POST "/v1/jobs/$1/$2" "{\"source\":\"$3\",\"destination\":\"$4\",\"type\":\"directory\"}" \
        | jq -r .id
}
stage8() {  # in|out -> the 8 transfer ids; the 8 requests are made at once, as the
            # 8 cp -a start at once (one after the other they spread over ~0.5 s
            # here: each reply waits for its commit to the state database)
    pids=""
    for d in 0 1 2 3 4 5 6 7; do
        eval "bb=\$BB$d"
        if [ "$1" = in ]; then
            stage "j$r-$d" stage_in "$T/pfs/tree/d$d" "$bb/in" > "$T/tid$d" &
        else
            stage "j$r-$d" stage_out "$bb/in" "$T/out8/d$d" > "$T/tid$d" &
        fi
        pids="$pids $!"
    done
    # shellcheck disable=SC2086
    wait $pids      # not a bare wait: bbmgrd is a child too
    for d in 0 1 2 3 4 5 6 7; do cat "$T/tid$d"; done
}
spread() {  # TID... -> seconds between the first and the last request
    for tid in "$@"; do curl -sf "$URL/v1/transfers/$tid"; done \
        | jq -s '(map(.requested) | max) - (map(.requested) | min) | . * 1000 | round / 1000'
}
wait_xfers() {  # done|durable TID... -> seconds from the first request to the last
                # 'finished' (done), and with durable also to the last 'durable'.
    # One process polls every 5 ms on one connection (a curl per poll would add tens
    # of ms per transfer).  'finished' is the daemon's time; 'durable' has no time
    # of its own: a transfer counts as durable at the start of the first poll that
    # says so (a reply may wait for a commit of the daemon's state, some 10-100 ms
    # while the disk is busy).  'durable' null: a daemon without it, durable at done.
    python3 - "$PORT" "$@" <<'PY'
import http.client, json, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
def get(tid):
    c.request("GET", "/v1/transfers/" + tid)
    return json.loads(c.getresponse().read())
want, tids = sys.argv[2], sys.argv[3:]
xs = {}
while len(xs) < len(tids):
    for tid in tids:
        if tid not in xs:
            x = get(tid)
            if x["state"] in ("failed", "cancelled"):
                sys.exit("transfer %s: %s" % (tid, json.dumps(x)))
            if x["state"] == "done":
                xs[tid] = x
    time.sleep(0.005)
first = min(x["requested"] for x in xs.values())
out = [max(x["finished"] for x in xs.values()) - first]
if want == "durable":
    left, seen = set(tids), []
    while left:
        for tid in list(left):
            t = time.time()
            if get(tid).get("durable") is not False:
                seen.append(t)
                left.discard(tid)
        if left:
            time.sleep(0.005)
    out.append(max(seen) - first)
print(" ".join("%.6f" % v for v in out))
PY
}
line() {    # LABEL SECONDS CP CPS
    printf '  %-30s %5s MB/s (%6.2f s) = %s x cp -a, %s x cp -a+sync\n' "$1" \
        "$(mbs "$BYTES" "$2")" "$2" "$(ratio "$2" "$3")" "$(ratio "$2" "$4")"
    echo "$1|$(ratio "$2" "$3")|$(ratio "$2" "$4")" >> "$T/ratios"
}

: > "$T/ratios"
r=1
while [ "$r" -le "$ROUNDS" ]; do
    echo "round $r (load $(cut -d' ' -f1-3 /proc/loadavg))"
    # -- 1 job
    drop
    t0=$(now); cp -a "$T/pfs/tree" "$T/cp1"; t1=$(now); sync; t2=$(now)
    CP=$(python3 -c "print($t1 - $t0)"); CPS=$(python3 -c "print($t2 - $t0)")
    rm -rf "$T/cp1"
    printf '  %-30s %5s MB/s (%6.2f s); with sync: %s MB/s (%.2f s)\n' "cp -a" \
        "$(mbs "$BYTES" "$CP")" "$CP" "$(mbs "$BYTES" "$CPS")" "$CPS"
    BB=$(job "one$r")
    drop
    tid=$(stage "one$r" stage_in "$T/pfs/tree" "$BB/in")
    SI=$(wait_xfers done "$tid")
    drop
    tid=$(stage "one$r" stage_out "$BB/in" "$T/out")
    read -r SO SOD <<EOF
$(wait_xfers durable "$tid")
EOF
    line "stage-in, 1 job" "$SI" "$CP" "$CPS"
    line "stage-out, 1 job (done)" "$SO" "$CP" "$CPS"
    line "stage-out, 1 job (durable)" "$SOD" "$CP" "$CPS"
    rm -rf "$T/out"
    post DELETE "/v1/jobs/one$r" '' >/dev/null
    # -- 8 jobs, one directory each
    drop
    mkdir -p "$T/cp8"
    t0=$(now)
    pids=""
    for d in 0 1 2 3 4 5 6 7; do cp -a "$T/pfs/tree/d$d" "$T/cp8/d$d" & pids="$pids $!"; done
    # shellcheck disable=SC2086
    wait $pids      # not a bare wait: bbmgrd is a child too
    t1=$(now); sync; t2=$(now)
    CP8=$(python3 -c "print($t1 - $t0)"); CP8S=$(python3 -c "print($t2 - $t0)")
    rm -rf "$T/cp8"
    printf '  %-30s %5s MB/s (%6.2f s); with sync: %s MB/s (%.2f s)\n' \
        "8 x cp -a (1/8 each)" "$(mbs "$BYTES" "$CP8")" "$CP8" "$(mbs "$BYTES" "$CP8S")" "$CP8S"
    for d in 0 1 2 3 4 5 6 7; do eval "BB$d=\$(job j$r-$d)"; done
    drop
    tids=$(stage8 in)
    # shellcheck disable=SC2086
    S8I=$(wait_xfers done $tids)
    # shellcheck disable=SC2086
    SPI=$(spread $tids)
    drop
    mkdir -p "$T/out8"
    tids=$(stage8 out)
    # shellcheck disable=SC2086
    read -r S8O S8OD <<EOF
$(wait_xfers durable $tids)
EOF
    # shellcheck disable=SC2086
    SPO=$(spread $tids)
    line "stage-in, 8 jobs" "$S8I" "$CP8" "$CP8S"
    line "stage-out, 8 jobs (done)" "$S8O" "$CP8" "$CP8S"
    line "stage-out, 8 jobs (durable)" "$S8OD" "$CP8" "$CP8S"
    echo "  (the 8 requests of a run came within $SPI s (stage-in) and $SPO s (stage-out))"
    rm -rf "$T/out8"
    for d in 0 1 2 3 4 5 6 7; do post DELETE "/v1/jobs/j$r-$d" '' >/dev/null; done
    r=$((r + 1))
done
echo "summary over $ROUNDS round(s): min-max of mover time / cp time"
python3 - "$T/ratios" <<'PY'
import sys
rows = {}
for l in open(sys.argv[1]):
    k, a, b = l.strip().split("|")
    rows.setdefault(k, []).append((float(a), float(b)))
for k, v in rows.items():
    a = [x[0] for x in v]; b = [x[1] for x in v]
    print("  %-30s vs cp -a %.2f-%.2f   vs cp -a+sync %.2f-%.2f" % (k, min(a), max(a), min(b), max(b)))
PY
curl -sf "$URL/metrics" | grep -E '^harmonia_mover_(bytes|files|requests|backfills)_total' \
    | sed 's/^/  /'
if [ "$DURABLE_OUT" = true ]; then
    echo "  (stage-out copies are fsync'd before 'done' (done = durable);"
else
    echo "  (stage-out copies are fsync'd after 'done', before 'durable';"
fi
if [ "$DURABLE_IN" = true ]; then
    echo "   stage-in copies are fsync'd before 'done'; cp -a fsyncs nothing: 'with sync' adds one"
else
    echo "   stage-in copies are not fsync'd; cp -a fsyncs nothing: 'with sync' adds one"
fi
case $VERIFY in
    checksum) v="reads each copy back and compares checksums with the source read" ;;
    size) v="checks the size of each copy (copy_file_range)" ;;
    *) v="does not verify the copies" ;;
esac
echo "   final sync to cp's time; the mover also $v)"
