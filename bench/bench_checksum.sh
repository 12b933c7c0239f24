#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Throughput of the mover's checksums (xxh64, crc32c in software and with SSE4.2)
# on a cached 256 KiB block and on a 64 MiB buffer, in GB/s and as a ratio to
# xxh64.  Prints figures; no timed assertions.
set -e
builddir=${HARMONIA_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
exec "$builddir/bench/bench_checksum" "$@"
