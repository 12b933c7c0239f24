#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_sim_decide_max.sh — the longest decision of every policy (the decision-time target,
# doc/performance.md "Decision budget"): on the workloads of the core's fuzzer
# (seeds 1..$SEEDS of testsuite/unit/test_sim_fuzz) and on IO-Sets mixes of 60, 200
# and 1,000 jobs.  Prints figures only; each run is cut at $RUN_LIMIT s (printed as
# "cut"), nothing is asserted.
#   SEEDS=20 SIZES="60 200 1000" POLICIES="fairshare persched ..." RUN_LIMIT=600
set -e
B=${HARMONIA_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
BBSIM=$B/sim/bbsim
FUZZ=$B/testsuite/unit/test_sim_fuzz
SEEDS=${SEEDS:-20}
SIZES=${SIZES:-60 200 1000}
RUN_LIMIT=${RUN_LIMIT:-600}
POLICIES=${POLICIES:-fairshare fcfs static roundrobin mindilation maxsyseff minmax:0.5 \
set10 set-fairshare priority-sharing periodic-throu periodic-cong persched \
harmonia-maxbw harmonia-minstall harmonia-fairness harmonia-buffer-eff \
harmonia-priority auto}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

longest() {     # longest WORKLOAD POLICY -> "seconds budget_hits" or "cut"/"error"
    if timeout "$RUN_LIMIT" "$BBSIM" run "$1" --policy "$2" --format json \
            > "$TMP/r.json" 2> "$TMP/err"; then
        /usr/bin/python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))["results"][0]
print("%.4f %s" % (r["decision_max_s"], r.get("budget_hits", "-")))' "$TMP/r.json"
    elif [ $? -eq 124 ]; then echo "cut -"; else echo "error -"; fi
}

echo "-- longest decision (s) and decisions cut by the budget, per policy"
echo "   (fuzzer: the worst over seeds 1..$SEEDS; build: $B)"
make -s -C "$B/testsuite/unit" test_sim_fuzz >/dev/null 2>&1 || true
s=1
while [ "$s" -le "$SEEDS" ]; do
    SIMFUZZ_DUMP=$s "$FUZZ" > "$TMP/f$s.yaml"
    s=$((s + 1))
done
for n in $SIZES; do
    h=$((n / 3)); m=$((n / 3)); l=$((n - 2 * (n / 3)))
    "$BBSIM" gen iosets --nh $h --nm $m --nl $l --seed 1 > "$TMP/m$n.yaml"
done
printf '%-22s %16s' policy "fuzzer"
for n in $SIZES; do printf ' %16s' "$n jobs"; done
echo
for p in $POLICIES; do
    worst=0; whits=0; s=1
    while [ "$s" -le "$SEEDS" ]; do
        set -- $(longest "$TMP/f$s.yaml" "$p")
        if [ "$1" = cut ] || [ "$1" = error ]; then worst=$1; break; fi
        worst=$(echo "$worst $1" | awk '{ print ($2 > $1) ? $2 : $1 }')
        [ "$2" = - ] || whits=$((whits + $2))
        s=$((s + 1))
    done
    printf '%-22s %9s (%4s)' "$p" "$worst" "$whits"
    for n in $SIZES; do
        set -- $(longest "$TMP/m$n.yaml" "$p")
        printf ' %9s (%4s)' "$1" "$2"
    done
    echo
done
