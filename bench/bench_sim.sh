#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_sim.sh — bbsim figures: events/s on a 1,000-job workload, the cost of one
# decision for K = 10 .. 10,000 jobs doing I/O, and the wall time of a full IO-Sets
# study.  Prints figures only; nothing is asserted on time.
set -e
B=${HARMONIA_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
BBSIM=$B/sim/bbsim
DECIDE=$B/bench/bench_sim_decide
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

echo "-- events/s, 1,000 jobs (bbsim gen iosets --nh 400 --nm 300 --nl 300), target >= 1M"
"$BBSIM" gen iosets --nh 400 --nm 300 --nl 300 --seed 1 > "$TMP/k1000.yaml"
for pol in fairshare mindilation set10; do
    "$BBSIM" run "$TMP/k1000.yaml" --policy "$pol" --format json > "$TMP/r.json"
    /usr/bin/python3 - "$TMP/r.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["results"][0]
print(f"{e['policy']:14s} {e['events']:9d} events in {e['wall_seconds']:.3f} s = "
      f"{e['events'] / e['wall_seconds'] / 1e6:.2f} M events/s "
      f"({e['decisions']} decisions)")
PY
done

echo "-- decision cost, K jobs all doing I/O"
for pol in fairshare mindilation maxsyseff set10; do
    for k in 10 100 1000 10000; do
        "$DECIDE" "$pol" "$k"
    done
done

echo "-- full IO-Sets study: nH = 0..40 (step 1), 20 seeds, fairshare + set10, target < 60 s"
start=$(date +%s.%N)
nh=0
while [ $nh -le 40 ]; do
    seed=1
    while [ $seed -le 20 ]; do
        "$BBSIM" gen iosets --nh $nh --seed $seed > "$TMP/s.yaml"
        "$BBSIM" run "$TMP/s.yaml" --policy fairshare --policy set10 --format csv \
            > /dev/null
        seed=$((seed + 1))
    done
    nh=$((nh + 1))
done
end=$(date +%s.%N)
echo "$start $end" | awk '{ printf "820 workloads x 2 policies: %.1f s wall\n", $2 - $1 }'

echo "-- schedules computed inside the scheduler (bbsim times the decisions)"
"$BBSIM" gen harmonia --instances 8 --profile balanced --seed 1 > "$TMP/h.yaml"
"$BBSIM" run "$TMP/h.yaml" --policy harmonia-maxbw --policy harmonia-buffer-eff \
    --format json | python3 -c '
import json, sys
for r in json.load(sys.stdin)["results"]:
    print("%-20s DP decision: %d placements (%d exact, up to %d phases), mean %.3f ms, longest %.3f ms"
          % (r["policy"], r["schedules"], r["dp_exact"], r["dp_max_phases"],
             1e3 * r["dp_decision_s_mean"], 1e3 * r["schedule_compute_max_s"]))'
"$BBSIM" gen gainaru --scenario large --seed 1 > "$TMP/g.yaml"
"$BBSIM" run "$TMP/g.yaml" --policy persched --policy periodic-throu \
    --policy periodic-cong --format json | python3 -c '
import json, sys
for r in json.load(sys.stdin)["results"]:
    print("%-16s period %.1f s (T_min %.1f s), %d patterns in %.3f s (longest %.3f s)"
          % (r["policy"], r["period"], r["period_min"], r["schedules"],
             r["schedule_compute_s"], r["schedule_compute_max_s"]))'

echo "-- auto: one decision epoch (7 candidates simulated), targets 5 ms at 100 jobs, 50 ms at 1,000"
"$B/bench/bench_sim_auto" 100 1000
