#!/usr/bin/env bash
# bench_slurm.sh — sbatch throughput and job start latency for N small jobs on the
# local cluster, with Harmonia's plugins and bbmgrd, and on the same cluster setup
# without them, measured in one run.  Targets (issue): >= 90% of the throughput and
# <= 50 ms added median start latency.  Prints figures; asserts nothing.
#   BENCH_SLURM_JOBS (default 500)
set -euo pipefail
top=${HARMONIA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${HARMONIA_BUILDDIR:-$top}
n=${BENCH_SLURM_JOBS:-500}
command -v slurmctld >/dev/null || PATH=$PATH:/usr/sbin
[ -f "$build/src/plugins/burst_buffer/harmonia/.libs/burst_buffer_harmonia.so" ] \
    || { echo "bench_slurm: plugins not built, skipped"; exit 0; }
work=$(mktemp -d /tmp/harmonia-bench-slurm.XXXXXX)
chmod 755 "$work"
trap 'for m in plain harmonia; do "$top/testsuite/cluster/cluster" stop "$work/$m" >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT

run() {   # run MODE OPTS...: prints "submit_s median_start_ms p90_start_ms"
    local mode=$1; shift
    local c="$work/$mode"
    CLUSTER_QUIET=1 "$top/testsuite/cluster/cluster" start "$c" --builddir "$build" "$@" >/dev/null
    export SLURM_CONF="$c/etc/slurm.conf"
    local bb=()
    [ "$mode" = harmonia ] && bb=(--bb "jobbuffer capacity=1GiB;iohints w_iter=1m io_volume=100MiB")
    local t0 t1 id
    mkdir -p "$c/starts"
    : > "$c/submits"
    t0=$(date +%s.%N)
    for ((i = 0; i < n; i++)); do
        id=$(sbatch --parsable -o /dev/null "${bb[@]}" \
             --wrap "date +%s.%N > $c/starts/\$SLURM_JOB_ID")
        echo "$id $(date +%s.%N)" >> "$c/submits"
    done
    t1=$(date +%s.%N)
    # wait for all to finish (bounded)
    local deadline=$((SECONDS + 600))
    while [ -n "$(squeue -h -o %i | head -1)" ] && [ $SECONDS -lt $deadline ]; do sleep 1; done
    # start latency: the job's first instruction minus the moment sbatch returned
    python3 - "$c" <<'PY' | { read cnt med p90; echo "$t0 $t1 $cnt $med $p90"; }
import os, statistics, sys
c = sys.argv[1]
d = []
for line in open(os.path.join(c, "submits")):
    jid, t = line.split()
    try:
        d.append((float(open(os.path.join(c, "starts", jid)).read()) - float(t)) * 1000)
    except (OSError, ValueError):
        pass
d.sort()
print("%d %.0f %.0f" % (len(d), statistics.median(d) if d else -1, d[int(len(d) * 0.9)] if d else -1))
PY
    "$top/testsuite/cluster/cluster" stop "$c" >/dev/null 2>&1
}

read p0 p1 pc pmed pp90 < <(run plain --no-harmonia)
read h0 h1 hc hmed hp90 < <(run harmonia)
python3 - "$n" "$p0" "$p1" "$pc" "$pmed" "$pp90" "$h0" "$h1" "$hc" "$hmed" "$hp90" <<'PY'
import sys
n = int(sys.argv[1]); p0, p1 = map(float, sys.argv[2:4]); pc, pmed, pp90 = map(float, sys.argv[4:7])
h0, h1 = map(float, sys.argv[7:9]); hc, hmed, hp90 = map(float, sys.argv[9:12])
pr, hr = n / (p1 - p0), n / (h1 - h0)
print("sbatch throughput, %d jobs:  without Harmonia %.0f jobs/s   with %.0f jobs/s   ratio %.2f (target >= 0.90)" % (n, pr, hr, hr / pr))
print("start latency (sbatch returned -> job's first instruction), median / p90:")
print("  without Harmonia %.0f / %.0f ms (%d jobs)   with %.0f / %.0f ms (%d jobs)   added median %.0f ms (target <= 50 ms)"
      % (pmed, pp90, pc, hmed, hp90, hc, hmed - pmed))
PY
