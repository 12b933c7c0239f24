# SPDX-License-Identifier: GPL-2.0-or-later
# bench_lib.sh — what the shell benchmarks that run a real bbmgrd share; sourced
# first (". bench_lib.sh"): strict mode, B (the build tree: HARMONIA_BUILDDIR, or
# the tree above the script) and the helpers below, which work in T (the bench's
# own directory, bench_tmpdir) and keep the pids of munged and bbmgrd in MPID and
# DPID for the bench's cleanup.
set -eu
B=${HARMONIA_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
MPID=""
DPID=""

# T: a new directory bench-NAME.XXXXXX under DIR, readable by the jobs' users.
bench_tmpdir() {
    T=$(mktemp -d "$1/bench-$2.XXXXXX")
    chmod 755 "$T"
}

# A free TCP port on 127.0.0.1.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# munged with its own key and socket under $T (extra munged options in "$@");
# sets MPID and exports HARMONIA_MUNGE_SOCKET.
start_munged() {
    mkdir -m 0700 "$T/key"; mkdir -m 0755 "$T/sock"
    mungekey -c -k "$T/key/munge.key" >/dev/null 2>&1
    munged --socket="$T/sock/munge.socket" --key-file="$T/key/munge.key" \
        --pid-file="$T/sock/munged.pid" --log-file="$T/munged.log" \
        --seed-file="$T/munged.seed" "$@" --force
    sleep 0.2
    MPID=$(cat "$T/sock/munged.pid")
    export HARMONIA_MUNGE_SOCKET="$T/sock/munge.socket"
}

# The start of $T/bbmgr.yaml for a durable bbmgrd on 127.0.0.1:$PORT and
# $T/bbmgrd.sock, state in STATE_DIR, authentication AUTH (munge: through the
# bench's munged, SlurmUser uid 4242), warnings only, policy fairshare; the bench
# appends its limits and nodes.
bbmgrd_conf() {
    cat > "$T/bbmgr.yaml" <<EOC
listen: {address: 127.0.0.1, port: $PORT, unix_socket: "$T/bbmgrd.sock"}
state: {dir: "$1", durable: true}
auth: {type: $2, munge_socket: "$T/sock/munge.socket", slurm_user: "4242"}
log: {level: warning}
policy: {id: fairshare}
EOC
}

# bbmgrd -c $T/bbmgr.yaml in the background (its stderr in $T/bbmgrd.log), DPID;
# returns once it answers on $T/bbmgrd.sock (the file's listen.unix_socket), exits
# with its log when it does not within 5 s (60 s under a BBMGRD_WRAP: a command
# and its options put before bbmgrd, such as valgrind; unquoted).
start_bbmgrd() {
    # shellcheck disable=SC2086
    ${BBMGRD_WRAP:-} "$B/bbmgr/bbmgrd" -f -c "$T/bbmgr.yaml" 2>>"$T/bbmgrd.log" &
    DPID=$!
    i=0
    lim=$([ -n "${BBMGRD_WRAP:-}" ] && echo 1200 || echo 100)
    while ! "$B/bbmgr/bbmgr" -u "unix:$T/bbmgrd.sock" status >/dev/null 2>&1; do
        i=$((i+1)); [ $i -gt "$lim" ] && { cat "$T/bbmgrd.log"; exit 1; }; sleep 0.05
    done
}

# Stops that bbmgrd and removes its state ($T/state).
stop_bbmgrd() {
    kill "$DPID"; wait "$DPID" 2>/dev/null || true; DPID=""; rm -rf "$T/state"
}

# Stops the processes whose pids are given (empty ones are skipped), for a cleanup
# trap: the caller then removes its directories.
kill_all() {
    for p in "$@"; do
        [ -n "$p" ] && kill "$p" 2>/dev/null || true
    done
    sleep 0.2
}

# Registers the job JOBID of one node, owned by the caller, with the bbmgrd on
# $PORT as slurmctld does (a MUNGE credential of root, an administrator).
register_job() {    # register_job JOBID
    python3 - "$PORT" "$1" <<'EOP'
import sys, json, http.client, subprocess, os
port, job = int(sys.argv[1]), sys.argv[2]
cred = subprocess.run(["munge", "-S", os.environ["HARMONIA_MUNGE_SOCKET"], "-s", "POST /v1/jobs"],
                      check=True, capture_output=True, text=True).stdout.strip()
c = http.client.HTTPConnection("127.0.0.1", port)
c.request("POST", "/v1/jobs", json.dumps({"id": job, "uid": os.getuid(), "nodes": 1}),
          {"Authorization": "MUNGE " + cred, "Content-Type": "application/json"})
r = c.getresponse()
assert r.status in (200, 201), (r.status, r.read())
EOP
}

# For the interposer's benchmarks: munged, a durable bbmgrd with MUNGE whose 4
# buffer nodes and platform run at 40 GB/s (a lone job's grant paces it but never
# slows it) and the job JOBID registered; exports the job's HARMONIA_URL,
# HARMONIA_JOBID, HARMONIA_BB=BB and HARMONIA_COORD_DIR=$T.
interpose_bbmgrd() {    # interpose_bbmgrd JOBID BB
    start_munged
    PORT=$(free_port)
    bbmgrd_conf "$T/state" munge
    cat >> "$T/bbmgr.yaml" <<EOC
nodes:
  - {names: "bb[01-04]", capacity: 4TiB, bandwidth: 40 GB/s, mount: /mnt/bb}
platform: {node_bandwidth: 40 GB/s, pfs_bandwidth: 40 GB/s}
EOC
    start_bbmgrd
    register_job "$1"
    export HARMONIA_URL="http://127.0.0.1:$PORT" HARMONIA_JOBID="$1" HARMONIA_BB="$2" \
        HARMONIA_COORD_DIR="$T"
}
