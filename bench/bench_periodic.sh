#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Time to compute periodic patterns (periodic-throu, periodic-cong, persched) on
# PerSched's set 5 and 60-, 200-, 1000-job mixes, against the plain quadratic
# construction (same patterns) and, with --ref PROGRAM, another implementation on the
# same inputs (doc/performance.md).  Prints figures; no timed assertions.
set -e
builddir=${HARMONIA_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
exec "$builddir/bench/bench_periodic" "$@"
