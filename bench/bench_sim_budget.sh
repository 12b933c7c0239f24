#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_sim_budget.sh — the longest decision of the periodic policies on the core
# fuzzer's workloads, before and after a change, in one run (doc/performance.md,
# "Decision budget"): seeds $SEED .. $SEED + $COUNT - 1, each run by the two builds'
# testsuite/unit/test_sim_fuzz one after the other (SIMFUZZ_COMPARE=1), so both
# see the same load.  Prints, per policy, the longest decision of each build
# (wall clock, ms) and their ratio, and the seed of each build's longest; nothing
# is asserted.
#   BEFORE=/path/to/old/test_sim_fuzz   the other build's fuzzer (required), e.g.
#       git worktree add --detach /tmp/old main && cd /tmp/old && ./autogen.sh &&
#       ./configure -q --enable-sanitizers && make -j2 && make -C testsuite/unit
#       test_sim_fuzz
#   AFTER=<this build's test_sim_fuzz> COUNT=100 SEED=20261128
#   POLICIES=periodic-throu,periodic-cong,persched
set -e
B=${HARMONIA_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
if [ -z "${AFTER:-}" ]; then
    AFTER=$B/testsuite/unit/test_sim_fuzz
    make -s -C "$B/testsuite/unit" test_sim_fuzz >/dev/null
fi
COUNT=${COUNT:-100}
SEED=${SEED:-20261128}
POLICIES=${POLICIES:-periodic-throu,periodic-cong,persched}
if [ -z "$BEFORE" ] || [ ! -x "$BEFORE" ]; then
    echo "bench_sim_budget.sh: BEFORE must name the other build's test_sim_fuzz" >&2
    exit 2
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM

t0=$(date +%s)
s=$SEED
while [ "$s" -lt $((SEED + COUNT)) ]; do
    for which in before after; do
        if [ $which = before ]; then bin=$BEFORE; else bin=$AFTER; fi
        # the table's rows: policy runs | ... | decide max; fairshare is left out
        SIMFUZZ_COMPARE=1 SIMFUZZ_SEED=$s SIMFUZZ_POLICY=$POLICIES "$bin" \
            2> "$TMP/err" | awk -v s="$s" -v w="$which" \
            '$2 ~ /^[0-9]+$/ && $1 != "fairshare" && $3 == "|" { print w, $1, s, $(NF-1) }' \
            >> "$TMP/rows" || true
        grep -v '^$' "$TMP/err" | sed "s/^/# $which: /" >> "$TMP/notes" || true
    done
    s=$((s + 1))
done
echo "# $COUNT workloads, seeds $SEED..$((SEED + COUNT - 1)), $(( $(date +%s) - t0 )) s;" \
     "longest decision per policy (wall clock), before and after"
awk '
{ k = $2; if (!(k in seen)) { seen[k] = 1; order[n++] = k }
  if ($1 == "before" && $4 + 0 >= bmax[k]) { bmax[k] = $4 + 0; bseed[k] = $3 }
  if ($1 == "after" && $4 + 0 >= amax[k]) { amax[k] = $4 + 0; aseed[k] = $3 } }
END {
  printf "%-16s %14s %12s %14s %12s %10s\n", "policy", "before max ms", "seed",
         "after max ms", "seed", "ratio"
  for (i = 0; i < n; i++) { k = order[i]
    printf "%-16s %14.2f %12s %14.2f %12s %9.1fx\n", k, bmax[k], bseed[k], amax[k],
           aseed[k], (amax[k] > 0 ? bmax[k] / amax[k] : 0) } }' "$TMP/rows"
[ ! -s "$TMP/notes" ] || cat "$TMP/notes"
