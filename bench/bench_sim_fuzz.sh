#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_sim_fuzz.sh — every policy against doing nothing (fairshare) on random
# workloads of the core's fuzzer (doc/fuzzing-sim.md, "auto
# against fairshare"): per policy, its SysEff and Dilation over fairshare's on the
# same workload (minimum / percentiles / worst seed) and its longest decision.
# Prints figures; the exit status says whether auto kept its guard (SysEff >= 0.95x
# and Dilation <= 1.05x fairshare's) on every workload.
#   COUNT=1000 SEED=<first seed; default: from the clock> POLICIES=a,b (default all)
set -e
B=${HARMONIA_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
FUZZ=$B/testsuite/unit/test_sim_fuzz
make -s -C "$B/testsuite/unit" test_sim_fuzz >/dev/null
SIMFUZZ_COMPARE=${COUNT:-1000} SIMFUZZ_SEED=${SEED:-0} SIMFUZZ_POLICY=${POLICIES:-} \
    "$FUZZ"
