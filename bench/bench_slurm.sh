#!/usr/bin/env bash
# bench_slurm.sh — sbatch throughput and job start latency for N small jobs, on a
# local cluster with Harmonia's plugins and bbmgrd and on an identically configured
# cluster without them (same node count, same slurm.conf but for the two plugin
# lines), in one run.  Targets: >= 90% of the throughput and <= 50 ms
# added median start latency.  Prints figures and "met"/"NOT met"; asserts nothing.
#
#   BENCH_SLURM_JOBS     jobs per configuration (default 500)
#   BENCH_SLURM_ROUNDS   the jobs go in this many blocks per configuration, the two
#                        configurations alternating A B B A A B ... so that the
#                        machine's noise hits both alike (default 20)
#   BENCH_SLURM_NODES    compute nodes of each cluster (default 4)
#   BENCH_SLURM_STAGE_IN 1: the Harmonia jobs also stage in a 4 KiB file (default 0)
#   BENCH_SLURM_HINTS    1: the Harmonia jobs also give iohints (default 0: without
#                        them job_submit/harmonia asks bbmgrd for learned hints)
#   BENCH_SLURM_PAIRS    pairs of jobs for the paired start latency (default 100,
#                        0: none; see "paired latency" below)
#   BENCH_SLURM_DEBUG_LOGS 1: both clusters log as the tests' clusters do
#                        (SlurmctldDebug=debug, DebugFlags=BurstBuffer, bbmgrd at
#                        debug); default: as a site runs them (info, no DebugFlags)
#   BENCH_SLURM_KEEP     a directory: the raw figures (per job: id, sbatch called,
#                        sbatch returned, round; per round: loop start and end) are
#                        copied there, under plain/ and harmonia/
#
# Both clusters run during the whole bench (an idle cluster costs next to nothing).
# Each job is the same batch script; in the Harmonia run its leading comments are
# "#BB_HARMONIA ..." directives, in the baseline the same lines read "#NO_HARMONIA"
# (plain comments).  The script's first command writes $EPOCHREALTIME.
#   throughput     = jobs / summed wall time of the sbatch loops (one sbatch at a
#                    time, as a user's submission loop)
#   start latency  = the job's first command - the moment sbatch returned (the job
#                    exists and is eligible from then on), in ms
#   daemon CPU     = user+system CPU time of the cluster's daemons (slurmctld,
#                    slurmd, munged, bbmgrd) over its blocks, per job
set -euo pipefail
top=${HARMONIA_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${HARMONIA_BUILDDIR:-$top}
n=${BENCH_SLURM_JOBS:-500}
rounds=${BENCH_SLURM_ROUNDS:-20}
nodes=${BENCH_SLURM_NODES:-4}
stage_in=${BENCH_SLURM_STAGE_IN:-0}
hints=${BENCH_SLURM_HINTS:-0}
pairs=${BENCH_SLURM_PAIRS:-100}
logs=--production-logs
[ "${BENCH_SLURM_DEBUG_LOGS:-0}" = 1 ] && logs=
command -v slurmctld >/dev/null || PATH=$PATH:/usr/sbin
[ -f "$build/src/plugins/burst_buffer/harmonia/.libs/burst_buffer_harmonia.so" ] \
    && [ -x "$build/bbmgr/bbmgrd" ] \
    || { echo "bench_slurm: plugins or bbmgrd not built, skipped"; exit 0; }
[ "$rounds" -ge 1 ] && [ "$n" -ge "$rounds" ] || { echo "bench_slurm: need JOBS >= ROUNDS >= 1" >&2; exit 2; }
work=$(mktemp -d /tmp/harmonia-bench-slurm.XXXXXX)
chmod 755 "$work"
keep=${BENCH_SLURM_KEEP:-}
cleanup() {
    if [ -n "$keep" ]; then
        for m in plain harmonia; do
            mkdir -p "$keep/$m"
            cp "$work/$m/submits" "$work/$m/loops" "$work/$m/cpu" "$keep/$m/" 2>/dev/null || true
            cp "$work/$m/pairs" "$keep/$m/" 2>/dev/null || true
            cp -r "$work/$m/starts" "$keep/$m/" 2>/dev/null || true
        done
    fi
    for m in plain harmonia; do
        "$top/testsuite/cluster/cluster" stop "$work/$m" >/dev/null 2>&1 || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

# ---------------------------------------------------------------- clusters
mkdir -p "$work/in"
head -c 4096 /dev/urandom > "$work/in/small.dat"
chmod -R a+rX "$work/in"
CLUSTER_QUIET=1 "$top/testsuite/cluster/cluster" start "$work/plain" --builddir "$build" \
    --nodes "$nodes" --no-harmonia $logs >/dev/null
CLUSTER_QUIET=1 "$top/testsuite/cluster/cluster" start "$work/harmonia" --builddir "$build" \
    --nodes "$nodes" --bbmgr $logs >/dev/null

# The two slurm.conf must differ only by the plugins (and the names, ports and
# paths that make two clusters on one machine).
norm() {
    sed -e "s|$work/[a-z]*|DIR|g" -e 's/^ClusterName=.*/ClusterName=X/' \
        -e 's/Port=[0-9-]*/Port=P/g' -e '/^$/d' "$1"
}
confdiff=$(diff <(norm "$work/plain/etc/slurm.conf") <(norm "$work/harmonia/etc/slurm.conf") \
           | grep '^[<>]' || true)
if [ "$confdiff" != "> BurstBufferType=burst_buffer/harmonia
> JobSubmitPlugins=harmonia" ]; then
    echo "bench_slurm: the two clusters' slurm.conf differ by more than the plugins:" >&2
    echo "$confdiff" >&2
    exit 1
fi

# ---------------------------------------------------------------- job scripts
directives=("jobbuffer capacity=64MiB")
[ "$hints" = 1 ] && directives+=("iohints w_iter=1m io_volume=16MiB")
[ "$stage_in" = 1 ] && directives+=("stage_in source=$work/in/small.dat destination=\$HARMONIA_BB/small.dat type=file")
for m in plain harmonia; do
    mkdir -p "$work/$m/starts"
    chmod 777 "$work/$m/starts"
    prefix='#NO_HARMONIA'
    [ $m = harmonia ] && prefix='#BB_HARMONIA'
    {
        echo '#!/bin/bash'
        for d in "${directives[@]}"; do echo "$prefix $d"; done
        echo "echo \$EPOCHREALTIME > $work/$m/starts/\$SLURM_JOB_ID"
    } > "$work/$m/job.sh"
    : > "$work/$m/submits"
    : > "$work/$m/loops"
    : > "$work/$m/cpu"
done

# ---------------------------------------------------------------- rounds
# CPU ticks used so far by the daemons of cluster M (pid files under run/).
cpu_ticks() {
    local f p t=0 s
    for f in "$work/$1"/run/*.pid; do
        p=$(cat "$f" 2>/dev/null) || continue
        s=$(cut -d' ' -f14,15 "/proc/$p/stat" 2>/dev/null) || continue
        t=$((t + ${s% *} + ${s#* }))
    done
    echo "$t"
}

# block M COUNT ROUND: submit COUNT jobs to cluster M one after the other, record for
# each "jobid before returned round" and the loop's wall time; wait until the queue is
# empty (stage-out and teardown included) before the next block.
block() {
    local m=$1 count=$2 round=$3 c="$work/$1" i id t0 t1 before deadline ms
    export SLURM_CONF="$c/etc/slurm.conf"
    # Start at a random moment: slurmctld's scheduling passes come on 1 s timers
    # (backfill every second, the main pass after batch_sched_delay=3 s) whose
    # phase differs between the two clusters; a block started right after the
    # other cluster's block would meet its timers at a fixed phase, a bias of
    # hundreds of ms on the start latency one way or the other.
    ms=$(( ${SRANDOM:-$RANDOM} % 3000 ))
    sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    local cpu0; cpu0=$(cpu_ticks "$m")
    t0=$EPOCHREALTIME
    for ((i = 0; i < count; i++)); do
        before=$EPOCHREALTIME
        id=$(sbatch --parsable -o /dev/null -e /dev/null "$c/job.sh")
        echo "${id%%;*} $before $EPOCHREALTIME $round" >> "$c/submits"
    done
    t1=$EPOCHREALTIME
    echo "$round $t0 $t1" >> "$c/loops"
    deadline=$((SECONDS + 300))
    while [ -n "$(squeue -h -o %i 2>/dev/null | head -1)" ] && [ $SECONDS -lt $deadline ]; do
        sleep 0.2
    done
    echo "$(( $(cpu_ticks "$m") - cpu0 ))" >> "$c/cpu"
}

echo "bench_slurm: $n jobs per configuration in $rounds rounds, $nodes nodes per cluster, $(nproc) CPUs"
echo "logs: $([ -n "$logs" ] && echo "as a site runs them (SlurmctldDebug=info, bbmgrd info)" || echo "the tests' (SlurmctldDebug=debug, DebugFlags=BurstBuffer, bbmgrd debug)")"
echo "directives of the Harmonia jobs:"
for d in "${directives[@]}"; do echo "  #BB_HARMONIA $d"; done
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
per=$((n / rounds))
for ((r = 0; r < rounds; r++)); do
    cnt=$per
    [ $r = $((rounds - 1)) ] && cnt=$((n - per * (rounds - 1)))
    if [ $((r % 2)) = 0 ]; then order="plain harmonia"; else order="harmonia plain"; fi
    for m in $order; do block "$m" "$cnt" "$r"; done
    echo "  round $((r + 1))/$rounds ($order, $cnt jobs each) done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---------------------------------------------------------------- paired latency
# The start latency of the rounds above depends on where slurmctld's 1 s
# scheduling timers fall (backfill every second, main passes every few seconds):
# per round it is anywhere in 0-1 s, the same for both clusters only on average,
# which leaves the difference of two medians of 20 rounds uncertain by about
# +-100 ms.  Pairs remove that: in the Harmonia cluster, a job without
# directives and the same job with them are submitted one right after the other
# (in alternating order), at a random moment of an idle cluster, so both meet
# the same timers; the difference of their start latencies is what using a
# buffer added.  The job without directives goes through the same slurmctld with
# the plugins loaded, which return at once for it.
pair_lat() {    # pair index: submit both, wait for both to run and the queue to drain
    local c="$work/harmonia" i=$1 first second ida idb a b
    export SLURM_CONF="$c/etc/slurm.conf"
    ms=$(( ${SRANDOM:-$RANDOM} % 1000 ))
    sleep "0.$(printf '%03d' "$ms")"
    if [ $((i % 2)) = 0 ]; then first=pair-plain.sh; second=job.sh; else first=job.sh; second=pair-plain.sh; fi
    a=$(sbatch --parsable -o /dev/null -e /dev/null "$c/$first"); ta=$EPOCHREALTIME
    b=$(sbatch --parsable -o /dev/null -e /dev/null "$c/$second"); tb=$EPOCHREALTIME
    if [ "$first" = job.sh ]; then idb=${a%%;*}; tbb=$ta; ida=${b%%;*}; taa=$tb
    else ida=${a%%;*}; taa=$ta; idb=${b%%;*}; tbb=$tb; fi
    echo "$ida $taa $idb $tbb" >> "$c/pairs"
    local deadline=$((SECONDS + 60))
    while [ -n "$(squeue -h -o %i 2>/dev/null | head -1)" ] && [ $SECONDS -lt $deadline ]; do
        sleep 0.1
    done
}

if [ "$pairs" -gt 0 ]; then
    sed 's/^#BB_HARMONIA/#NO_HARMONIA/' "$work/harmonia/job.sh" > "$work/harmonia/pair-plain.sh"
    : > "$work/harmonia/pairs"
    for ((i = 0; i < pairs; i++)); do pair_lat "$i"; done
    echo "  $pairs pairs done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
fi

# ---------------------------------------------------------------- figures
python3 - "$work" "$n" "$(getconf CLK_TCK)" <<'PY'
import os, statistics, sys
work, n, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def pct(d, q):
    return d[min(len(d) - 1, int(len(d) * q))] if d else float("nan")

def figures(m):
    c = os.path.join(work, m)
    walls = {int(r): float(t1) - float(t0) for r, t0, t1 in (l.split() for l in open(os.path.join(c, "loops")))}
    wall = sum(walls.values())
    lat, sb, missing, per = [], [], 0, {}
    for line in open(os.path.join(c, "submits")):
        jid, before, after, r = line.split()
        sb.append((float(after) - float(before)) * 1000)
        pr = per.setdefault(int(r), [0, []])
        pr[0] += 1
        try:
            start = float(open(os.path.join(c, "starts", jid)).read())
        except (OSError, ValueError):
            missing += 1
            continue
        lat.append((start - float(after)) * 1000)
        pr[1].append(lat[-1])
    lat.sort(); sb.sort()
    rounds = {r: (n_r / walls[r], statistics.median(l) if l else float("nan")) for r, (n_r, l) in per.items()}
    cpu = sum(int(l) for l in open(os.path.join(c, "cpu"))) / hz
    return dict(rounds=rounds, rate=len(sb) / wall, wall=wall, sbatch_med=statistics.median(sb),
                sbatch_p90=pct(sb, 0.9), cpu_ms=cpu * 1000 / len(sb),
                med=statistics.median(lat) if lat else float("nan"),
                p90=pct(lat, 0.9), mn=lat[0] if lat else float("nan"),
                mx=lat[-1] if lat else float("nan"), ran=len(lat), missing=missing)

p, h = figures("plain"), figures("harmonia")
ratio = h["rate"] / p["rate"]
added = h["med"] - p["med"]
print()
print("per round: throughput without / with Harmonia (ratio), median start latency without / with")
for r in sorted(p["rounds"]):
    (pr, pm), (hr, hm) = p["rounds"][r], h["rounds"][r]
    print("  round %2d: %6.1f / %6.1f jobs/s (%.2f)   %5.0f / %5.0f ms" % (r + 1, pr, hr, hr / pr, pm, hm))
print("sbatch throughput (%d jobs each, summed sbatch-loop wall time):" % n)
print("  without Harmonia %6.1f jobs/s (%.2f s; one sbatch %.1f ms median)" % (p["rate"], p["wall"], p["sbatch_med"]))
print("  with Harmonia    %6.1f jobs/s (%.2f s; one sbatch %.1f ms median)" % (h["rate"], h["wall"], h["sbatch_med"]))
print("  ratio %.3f   target >= 0.90: %s" % (ratio, "met" if ratio >= 0.90 else "NOT met"))
print("  (per-round ratios: median %.2f; one sbatch p90 %.1f / %.1f ms; daemon CPU per job %.2f / %.2f ms)"
      % (statistics.median(h["rounds"][r][0] / p["rounds"][r][0] for r in p["rounds"]),
         p["sbatch_p90"], h["sbatch_p90"], p["cpu_ms"], h["cpu_ms"]))
print("start latency (sbatch returned -> job's first command), ms:")
print("                    median     p90     min     max   jobs run")
for name, f in (("without Harmonia", p), ("with Harmonia", h)):
    print("  %-16s %7.0f %7.0f %7.0f %7.0f   %d/%d" % (name, f["med"], f["p90"], f["mn"], f["mx"], f["ran"], f["ran"] + f["missing"]))
print("  added median %.0f ms, added p90 %.0f ms   target added median <= 50 ms: %s"
      % (added, h["p90"] - p["p90"], "met" if added <= 50 else "NOT met"))

# Paired latency (see pair_lat in the script): per pair, the start latency of the
# job with a buffer minus that of the same job without, submitted together.
pf = os.path.join(work, "harmonia", "pairs")
diffs, la, lb = [], [], []
if os.path.exists(pf):
    def start(jid):
        try:
            return float(open(os.path.join(work, "harmonia", "starts", jid)).read())
        except (OSError, ValueError):
            return None
    for line in open(pf):
        ida, ta, idb, tb = line.split()
        sa, sb_ = start(ida), start(idb)
        if sa is None or sb_ is None:
            continue
        la.append((sa - float(ta)) * 1000)
        lb.append((sb_ - float(tb)) * 1000)
        diffs.append(lb[-1] - la[-1])
if diffs:
    diffs.sort()
    late = sum(1 for d in diffs if d > 100)
    print("paired start latency (%d pairs in the Harmonia cluster, the same job without and with"
          " #BB_HARMONIA submitted together; ms):" % len(diffs))
    print("  median latency without %.0f, with %.0f; added: median %.0f, mean %.0f, p90 %.0f;"
          " %d pair(s) more than 100 ms apart"
          % (statistics.median(la), statistics.median(lb), statistics.median(diffs),
             statistics.mean(diffs), pct(diffs, 0.9), late))
    print("  paired added median <= 50 ms: %s" % ("met" if statistics.median(diffs) <= 50 else "NOT met"))
PY
