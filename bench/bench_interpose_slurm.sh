#!/usr/bin/env bash
# bench_interpose_slurm.sh — the point of the interposer: J concurrent
# periodic jobs, each N iterations of C seconds of "compute" then V MiB written
# into its buffer, on the private cluster of testsuite/cluster/cluster, under the
# policies fairshare, set10 and auto; each time once as UNMODIFIED programs (a
# shell loop of sleep + dd, with iohints interpose=yes: the interposer finds and
# gates their phases) and once calling libharmonia (bbio-bench, interpose=no).
# Prints, per policy and kind, the mean and maximum completion time (job end -
# submission of the batch of jobs), the gain of each policy over fairshare
# (fairshare's time / the policy's) and the ratio of the interposer's gain to
# libharmonia's (1: the unmodified programs get all of what the library gets).
# Asserts nothing.
#
#   BENCH_IP_JOBS     concurrent jobs (default 4)
#   BENCH_IP_ITERS    iterations per job (default 4)
#   BENCH_IP_COMPUTE  seconds of compute per iteration (default 2)
#   BENCH_IP_VOLUME   MiB written per iteration (default 256)
#   BENCH_IP_POLICIES policies (default "fairshare set10 auto")
set -euo pipefail
top=${HARMONIA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${HARMONIA_BUILDDIR:-$top}
jobs=${BENCH_IP_JOBS:-4}
iters=${BENCH_IP_ITERS:-4}
compute=${BENCH_IP_COMPUTE:-2}
vol=${BENCH_IP_VOLUME:-256}
policies=${BENCH_IP_POLICIES:-fairshare set10 auto}
command -v slurmctld >/dev/null || PATH=$PATH:/usr/sbin
[ -f "$build/src/plugins/burst_buffer/harmonia/.libs/burst_buffer_harmonia.so" ] \
    && [ -x "$build/bbmgr/bbmgrd" ] \
    || { echo "bench_interpose_slurm: plugins or bbmgrd not built, skipped"; exit 0; }
bbio=$build/src/lib/libharmonia/bbio-bench
work=$(mktemp -d /tmp/harmonia-bench-ip.XXXXXX)
chmod 755 "$work"
cdir=
cleanup() {
    [ -z "$cdir" ] || "$top/testsuite/cluster/cluster" stop "$cdir" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# run POLICY KIND: J jobs at once; prints "mean max" of their completion times
run() {
    local policy=$1 kind=$2 out=$work/$1-$2 body hints t0 i ids=()
    mkdir -p "$out"
    cdir=$work/cluster
    CLUSTER_QUIET=1 "$top/testsuite/cluster/cluster" start "$cdir" --builddir "$build" \
        --policy "$policy" --production-logs >/dev/null
    export SLURM_CONF=$cdir/etc/slurm.conf
    if [ "$kind" = interposer ]; then
        hints="iohints w_iter=$((compute + 1))s io_volume=${vol}MiB interpose=yes"
        body="for i in \$(seq $iters); do sleep $compute; dd if=/dev/zero of=\"\$HARMONIA_BB/data\" bs=1M count=$vol conv=fsync status=none; done"
    else
        hints="iohints w_iter=$((compute + 1))s io_volume=${vol}MiB interpose=no"
        body="$bbio -q --no-direct -n $iters -s ${vol}MiB -c ${compute}s -D \"\$HARMONIA_BB\" >/dev/null"
    fi
    cat > "$out/job.sh" <<JOB
#!/bin/bash
#SBATCH -N1
#BB_HARMONIA jobbuffer capacity=$((vol * 2))MiB
#BB_HARMONIA $hints
$body
date +%s.%N > $out/end.\$SLURM_JOB_ID
JOB
    t0=$(date +%s.%N)
    for ((i = 0; i < jobs; i++)); do
        ids+=("$(sbatch --parsable -o "$out/slurm-%j.out" "$out/job.sh")")
    done
    for id in "${ids[@]}"; do
        while [ ! -e "$out/end.$id" ]; do
            squeue -h -j "$id" -t all -o %T 2>/dev/null | grep -qE 'FAILED|CANCELLED|TIMEOUT' \
                && { echo "job $id failed: $(cat "$out/slurm-$id.out")" >&2; exit 1; }
            sleep 0.5
        done
    done
    # the phases bbmgrd granted and saw finish (the jobs' last states)
    local done=0 n
    for id in "${ids[@]}"; do
        n=$("$build/bbmgr/bbmgr" --json --url "unix:$cdir/run/bbmgrd.sock" \
                --munge-socket "$cdir/munge-run/munge.socket" job "$id" |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["phases_done"])')
        done=$((done + n))
    done
    "$top/testsuite/cluster/cluster" stop "$cdir" >/dev/null 2>&1
    cdir=
    echo "$done" > "$out/phases"
    for id in "${ids[@]}"; do cat "$out/end.$id"; done |
        awk -v t0="$t0" -v ph="$done" '{ d = $1 - t0; s += d; if (d > m) m = d }
            END { printf "%.2f %.2f %d\n", s / NR, m, ph }'
}

printf 'bench_interpose_slurm: %d jobs at once, %d iterations of %ss compute + %d MiB each\n' \
    "$jobs" "$iters" "$compute" "$vol"
printf '%-10s %-11s %9s %9s %s\n' policy kind mean_s max_s phases_finished
declare -A mean max
for p in $policies; do
    for k in interposer libharmonia; do
        read -r mean[$p-$k] max[$p-$k] ph < <(run "$p" "$k")
        printf '%-10s %-11s %9s %9s %d of %d\n' "$p" "$k" "${mean[$p-$k]}" "${max[$p-$k]}" \
            "$ph" $((jobs * iters))
    done
done
base=${policies%% *}
for p in $policies; do
    [ "$p" = "$base" ] && continue
    awk -v p="$p" -v b="$base" \
        -v im="${mean[$base-interposer]}" -v ix="${max[$base-interposer]}" \
        -v pm="${mean[$p-interposer]}" -v px="${max[$p-interposer]}" \
        -v lm="${mean[$base-libharmonia]}" -v lx="${max[$base-libharmonia]}" \
        -v qm="${mean[$p-libharmonia]}" -v qx="${max[$p-libharmonia]}" 'BEGIN {
        gim = im / pm; gix = ix / px; glm = lm / qm; glx = lx / qx
        printf "%s over %s: gain in mean %.3f (interposer) vs %.3f (libharmonia), ratio %.3f; in max %.3f vs %.3f, ratio %.3f\n",
               p, b, gim, glm, gim / glm, gix, glx, gix / glx }'
done
