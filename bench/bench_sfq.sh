#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# bench_sfq.sh — achieved byte ratios of 6 writer flows with weights 1:2:4:8:16:32
# sharing a real device through hs_sfq (SFQ(D) and SFQ(D)+), as vPFS+ reports them
# (1.99:1 3.97:1 8.10:1 16.21:1 32.73:1 for 2:1 ... 32:1).  doc/sfq.md.
#
# Environment: HARMONIA_BUILDDIR (set by 'make bench'), SFQ_BENCH_DIR (where the files
# go; default $TMPDIR or /tmp), SFQ_BENCH_SECONDS (10 per run).
set -e
builddir=${HARMONIA_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
prog=$builddir/bench/sfq_share
dir=${SFQ_BENCH_DIR:-${TMPDIR:-/tmp}}
secs=${SFQ_BENCH_SECONDS:-10}

if [ ! -x "$prog" ]; then
    echo "bench_sfq.sh: $prog not built (make -C bench sfq_share)" >&2
    exit 1
fi
for run in "-m d -D 4 -s 1M" "-m plus -D 4 -s 1M" "-m d -D 8 -s 256K" \
           "-m d -D 4 -s 1M -o buffered"; do
    echo "-- sfq_share $run -t $secs $dir"
    # shellcheck disable=SC2086
    "$prog" $run -t "$secs" "$dir"
done
