#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Time to compute periodic patterns (persched, periodic-throu, periodic-cong) for
# 10, 50 and 200 jobs, with the period found.  Prints figures; no timed assertions.
set -e
builddir=${HARMONIA_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
exec "$builddir/bench/bench_periodic" "$@"
