#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_mover.sh — throughput of bbmgrd's data mover against cp -a on the same disk:
# a tree of BENCH_MOVER_FILES files of BENCH_MOVER_FILE_MIB MiB (default 64 x 32 MiB
# = 2 GiB, in 8 sub-directories) is copied by cp -a, then staged in and out by one
# job through a real bbmgrd (stage.mode mover, auth none on loopback), then staged
# in by 8 concurrent jobs, each 1/8 of the data (against 8 concurrent cp -a).
# Prints MB/s and the ratio to cp; no timed asserts.
#
# Environment: HARMONIA_BUILDDIR; BENCH_MOVER_FILES (multiple of 8, default 64);
# BENCH_MOVER_FILE_MIB (default 32); BENCH_MOVER_DIR (where the temporary tree
# goes, default /var/tmp: the disk under test); BENCH_MOVER_VERIFY (checksum,
# size, none; default checksum); BENCH_MOVER_THREADS (default 4).
# Page cache: as root the caches are dropped before every run
# (sync; echo 3 > /proc/sys/vm/drop_caches); where that is not allowed every run
# reads a source already in the page cache (noted in the output).
set -eu
B=${HARMONIA_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
NF=${BENCH_MOVER_FILES:-64}
FMIB=${BENCH_MOVER_FILE_MIB:-32}
VERIFY=${BENCH_MOVER_VERIFY:-checksum}
THREADS=${BENCH_MOVER_THREADS:-4}
T=$(mktemp -d "${BENCH_MOVER_DIR:-/var/tmp}/bench-mover.XXXXXX")
chmod 755 "$T"
DPID=""
cleanup() {
    [ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT INT TERM

[ $((NF % 8)) -eq 0 ] || { echo "BENCH_MOVER_FILES must be a multiple of 8" >&2; exit 2; }
BYTES=$((NF * FMIB * 1048576))
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

# ---- the tree: 8 directories of NF/8 files, random data
python3 - "$T/pfs/tree" "$NF" "$FMIB" <<'EOF'
import os, sys
root, nf, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for d in range(8):
    os.makedirs(os.path.join(root, "d%d" % d), exist_ok=True)
for i in range(nf):
    with open(os.path.join(root, "d%d" % (i % 8), "f%03d" % i), "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))
EOF
sync
echo "mover benchmark: $NF files x $FMIB MiB = $((BYTES / 1048576)) MiB in $T"
echo "  disk: $(df -h "$T" | awk 'NR==2 {print $1" ("$2")"}'), $(nproc) cores; page cache $CACHE"
echo "  mover: verify $VERIFY, $THREADS threads, chunk 4 MiB, SFQ(D)+ depth 64 x 256 KiB"

# ---- cp -a
drop
t0=$(now); cp -a "$T/pfs/tree" "$T/cp1"; t1=$(now); sync; t2=$(now)
CP=$(python3 -c "print($t1 - $t0)"); CPS=$(python3 -c "print($t2 - $t0)")
rm -rf "$T/cp1"; drop
t0=$(now)
for d in 0 1 2 3 4 5 6 7; do mkdir -p "$T/cp8"; cp -a "$T/pfs/tree/d$d" "$T/cp8/d$d" & done
wait
t1=$(now); sync; t2=$(now)
CP8=$(python3 -c "print($t1 - $t0)"); CP8S=$(python3 -c "print($t2 - $t0)")
rm -rf "$T/cp8"; drop
printf '  %-34s %6s MB/s (%.2f s); with sync: %s MB/s\n' "cp -a" "$(mbs $BYTES "$CP")" "$CP" \
    "$(mbs $BYTES "$CPS")"
printf '  %-34s %6s MB/s (%.2f s); with sync: %s MB/s\n' "8 x cp -a (1/8 each, concurrent)" \
    "$(mbs $BYTES "$CP8")" "$CP8" "$(mbs $BYTES "$CP8S")"

# ---- bbmgrd
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$T/bb"
cat > "$T/bbmgr.yaml" <<EOC
listen: {address: 127.0.0.1, port: $PORT, unix_socket: ""}
state: {dir: "$T/state", durable: true}
auth: {type: none}
log: {level: info}
policy: {id: fairshare}
stage: {mode: mover}
mover: {threads: $THREADS, chunk: 4MiB, depth: 64, verify: $VERIFY}
pools: [{name: default, granularity: 1MiB}]
nodes:
  - {names: "bb[01-08]", capacity: 1TiB, bandwidth: 2 GB/s, mount: "$T/bb"}
EOC
"$B/bbmgr/bbmgrd" -f -c "$T/bbmgr.yaml" 2>>"$T/bbmgrd.log" &
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
wait_done() {   # TID... -> seconds from the first request to the last finish
    for tid in "$@"; do
        while :; do
            st=$(curl -sf "$URL/v1/transfers/$tid" | jq -r .state)
            case $st in
                done) break ;;
                failed|cancelled) curl -sf "$URL/v1/transfers/$tid" >&2; exit 1 ;;
            esac
            sleep 0.02
        done
    done
    for tid in "$@"; do curl -sf "$URL/v1/transfers/$tid"; done \
        | jq -s '(map(.finished) | max) - (map(.requested) | min)'
}

BB=$(job one)
drop
tid=$(stage one stage_in "$T/pfs/tree" "$BB/in")
SI=$(wait_done "$tid")
drop
tid=$(stage one stage_out "$BB/in" "$T/out")
SO=$(wait_done "$tid")
printf '  %-34s %6s MB/s (%.2f s) = %s x cp -a, %s x cp -a+sync\n' "stage-in, 1 job" \
    "$(mbs $BYTES "$SI")" "$SI" "$(ratio "$SI" "$CP")" "$(ratio "$SI" "$CPS")"
printf '  %-34s %6s MB/s (%.2f s) = %s x cp -a, %s x cp -a+sync\n' "stage-out, 1 job" \
    "$(mbs $BYTES "$SO")" "$SO" "$(ratio "$SO" "$CP")" "$(ratio "$SO" "$CPS")"
rm -rf "$T/out"
post DELETE /v1/jobs/one '' >/dev/null
for d in 0 1 2 3 4 5 6 7; do eval "BB$d=\$(job j$d)"; done
drop
tids=""
for d in 0 1 2 3 4 5 6 7; do
    eval "bb=\$BB$d"
    tids="$tids $(stage "j$d" stage_in "$T/pfs/tree/d$d" "$bb/in")"
done
# shellcheck disable=SC2086
S8=$(wait_done $tids)
printf '  %-34s %6s MB/s (%.2f s) = %s x 8 cp -a, %s x 8 cp -a+sync, %s x cp -a\n' \
    "stage-in, 8 concurrent jobs" "$(mbs $BYTES "$S8")" "$S8" "$(ratio "$S8" "$CP8")" \
    "$(ratio "$S8" "$CP8S")" "$(ratio "$S8" "$CP")"
curl -sf "$URL/metrics" | grep -E '^harmonia_mover_(bytes|files|requests|backfills)_total' \
    | sed 's/^/  /'
echo "  (the mover fsyncs and verifies every file before renaming it into place; cp -a"
echo "   does neither: 'with sync' adds one final sync to cp's time)"
