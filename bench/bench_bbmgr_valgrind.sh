#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_bbmgr_valgrind.sh — bbmgrd under valgrind memcheck for a phase load
# (VALGRIND_SECONDS, default 20 for CI; the documented full run is 600:
# VALGRIND_SECONDS=600 make bench), then a clean SIGTERM stop: prints the leak
# summary and fails if anything is definitely or indirectly lost or an error seen.
set -eu
B=${HARMONIA_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
SECS=${VALGRIND_SECONDS:-20}
command -v valgrind >/dev/null || { echo "valgrind not installed: skipped"; exit 0; }
T=$(mktemp -d /tmp/bench-bbmgr-vg.XXXXXX)
chmod 755 "$T"
MPID=""; DPID=""
cleanup() {
    [ -n "$DPID" ] && kill "$DPID" 2>/dev/null || true
    [ -n "$MPID" ] && kill "$MPID" 2>/dev/null || true
    sleep 0.2; rm -rf "$T"
}
trap cleanup EXIT INT TERM
mkdir -m 0700 "$T/key"; mkdir -m 0755 "$T/sock"
mungekey -c -k "$T/key/munge.key" >/dev/null 2>&1
munged --socket="$T/sock/munge.socket" --key-file="$T/key/munge.key" \
    --pid-file="$T/sock/munged.pid" --log-file="$T/munged.log" --seed-file="$T/munged.seed" --force
sleep 0.2
MPID=$(cat "$T/sock/munged.pid")
export HARMONIA_MUNGE_SOCKET="$T/sock/munge.socket"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$T/bbmgr.yaml" <<EOC
listen: {address: 127.0.0.1, port: $PORT, unix_socket: "$T/bbmgrd.sock"}
state: {dir: "$T/state"}
auth: {munge_socket: "$T/sock/munge.socket", slurm_user: "4242"}
log: {level: warning}
stage: {mode: scheduled}
nodes:
  - {names: "bb[01-04]", capacity: 4TiB, bandwidth: 4 GB/s, mount: /mnt/bb}
EOC
BIN="$B/bbmgr/bbmgrd"
[ -x "$B/bbmgr/.libs/bbmgrd" ] && BIN="$B/bbmgr/.libs/bbmgrd"
valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
    --error-exitcode=3 --log-file="$T/vg.log" "$BIN" -f -c "$T/bbmgr.yaml" 2>"$T/bbmgrd.log" &
DPID=$!
i=0
while ! "$B/bbmgr/bbmgr" -u "unix:$T/bbmgrd.sock" status >/dev/null 2>&1; do
    i=$((i+1)); [ $i -gt 300 ] && { cat "$T/bbmgrd.log"; exit 1; }; sleep 0.1
done
out=$("$B/bench/bench_bbmgr_load" --url "http://127.0.0.1:$PORT" --jobs 100 --threads 2 --seconds "$SECS")
# the rest of the API once, so that its paths are covered too
U="unix:$T/bbmgrd.sock"
for c in nodes pools jobs persistent "schedule 5" policy "drain bb02 x" "resume bb02" "policy fcfs"; do
    "$B/bbmgr/bbmgr" -u "$U" $c >/dev/null
done
curl -s "http://127.0.0.1:$PORT/metrics" >/dev/null || true
kill -TERM "$DPID"
rc=0; wait "$DPID" || rc=$?
DPID=""
echo "valgrind load: ${SECS}s, $out"
if [ -s "$T/vg.log" ]; then cat "$T/vg.log"; fi
if [ $rc -ne 0 ]; then echo "valgrind: errors or leaks (exit $rc)"; exit 1; fi
echo "valgrind: no errors, no definite/indirect leaks"
