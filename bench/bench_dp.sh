#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Harmonia DP decision time versus pending phases (10..10,000) and buffer nodes
# (4, 16, 64), the exact DP's curve, and the 1,000 x 64 point against the 10 ms
# target.  Prints figures; no timed assertions.
set -e
builddir=${HARMONIA_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
exec "$builddir/bench/bench_dp" "$@"
