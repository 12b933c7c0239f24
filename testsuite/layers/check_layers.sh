#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# check_layers.sh — the layering HACKING.md states ("Layers"), held against the
# sources' includes and the build's objects (layers.py says how).  Run by
# 'make check' after the build; by hand: testsuite/layers/layers.py SRCDIR BUILDDIR.
: "${HARMONIA_SRCDIR:?set by make check}" "${HARMONIA_BUILDDIR:?set by make check}"
py="${PYTHON3:-python3}"
layers="$HARMONIA_SRCDIR/testsuite/layers/layers.py"
"$py" "$layers" "$HARMONIA_SRCDIR" "$HARMONIA_BUILDDIR" || exit 1

# The check itself: in a copy of bbmgr/'s sources where a lower file of bbmgrd
# (core_jobs.c) includes a higher one's header (core_json.h), it must fail and
# name that include.
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
(cd "$HARMONIA_SRCDIR" && find bbmgr -name '*.[ch]' -o -name '*.def') | while read -r f; do
    mkdir -p "$tmp/$(dirname "$f")" && cp "$HARMONIA_SRCDIR/$f" "$tmp/$f" || exit 1
done
mkdir -p "$tmp/src/include/harmonia" &&
    cp "$HARMONIA_SRCDIR/src/include/harmonia/client.h" "$tmp/src/include/harmonia/" &&
    sed -i 's/^#include "core_jobs.h"$/&\n#include "core_json.h"/' \
        "$tmp/bbmgr/daemon/core_jobs.c" || exit 1
if out=$("$py" "$layers" "$tmp" "$HARMONIA_BUILDDIR"); then
    echo "layers: core_jobs.c including core_json.h was not refused"
    exit 1
fi
case "$out" in
*"bbmgr/daemon/core_jobs.c includes bbmgr/daemon/core_json.h: bbmgrd's files are in layers"*)
    echo "layers: a lower file of bbmgrd including a higher one's header is refused" ;;
*)
    printf '%s\n' "$out"
    echo "layers: core_jobs.c including core_json.h was refused for another reason"
    exit 1 ;;
esac

# The same for libhsched: in a copy of its sources where the buffer nodes
# (hs_bnode.c) include the decision's header (hs_decide.h), above them, it must
# fail and name that include.
hs="$tmp/hs"
mkdir -p "$hs/src/common/libhsched" "$hs/src/include/harmonia" &&
    cp "$HARMONIA_SRCDIR"/src/common/libhsched/*.[ch] "$hs/src/common/libhsched/" &&
    cp "$HARMONIA_SRCDIR/src/include/harmonia/client.h" "$hs/src/include/harmonia/" &&
    sed -i 's/^#include "hs_bnode.h"$/&\n#include "hs_decide.h"/' \
        "$hs/src/common/libhsched/hs_bnode.c" || exit 1
if out=$("$py" "$layers" "$hs" "$HARMONIA_BUILDDIR"); then
    echo "layers: hs_bnode.c including hs_decide.h was not refused"
    exit 1
fi
case "$out" in
*"src/common/libhsched/hs_bnode.c includes src/common/libhsched/hs_decide.h: libhsched's files are in layers"*)
    echo "layers: a lower file of libhsched including a higher one's header is refused" ;;
*)
    printf '%s\n' "$out"
    echo "layers: hs_bnode.c including hs_decide.h was refused for another reason"
    exit 1 ;;
esac

# The same for the burst buffer plugin: in a copy of its sources where the job
# records (bbh_jobs.c) include the agent's header (bbh_agent.h), above them, it
# must fail and name that include.
pl="$tmp/pl"
mkdir -p "$pl/src/plugins/burst_buffer/harmonia" "$pl/src/include/harmonia" &&
    cp "$HARMONIA_SRCDIR"/src/plugins/burst_buffer/harmonia/*.[ch] \
        "$pl/src/plugins/burst_buffer/harmonia/" &&
    cp "$HARMONIA_SRCDIR/src/include/harmonia/client.h" "$pl/src/include/harmonia/" &&
    sed -i 's/^#include "bbh_jobs.h"$/&\n#include "bbh_agent.h"/' \
        "$pl/src/plugins/burst_buffer/harmonia/bbh_jobs.c" || exit 1
if out=$("$py" "$layers" "$pl" "$HARMONIA_BUILDDIR"); then
    echo "layers: bbh_jobs.c including bbh_agent.h was not refused"
    exit 1
fi
case "$out" in
*"src/plugins/burst_buffer/harmonia/bbh_jobs.c includes src/plugins/burst_buffer/harmonia/bbh_agent.h: the burst buffer plugin's files are in layers"*)
    echo "layers: a lower file of the burst buffer plugin including a higher one's header is refused" ;;
*)
    printf '%s\n' "$out"
    echo "layers: bbh_jobs.c including bbh_agent.h was refused for another reason"
    exit 1 ;;
esac

# The prefixes of extern functions: in a copy of bbmgr/'s and sim/'s objects where
# routes.c's routes_match() is renamed match(), it must fail and name that function.
pre="$tmp/prefix"
mkdir -p "$pre" &&
    (cd "$HARMONIA_BUILDDIR" && find bbmgr sim -name '*.o' -exec cp --parents {} "$pre" \;) &&
    objcopy --redefine-sym routes_match=match \
        "$pre/bbmgr/daemon/.libs/libbbmgrd_la-routes.o" || exit 1
if out=$("$py" "$layers" "$HARMONIA_SRCDIR" "$pre"); then
    echo "layers: an extern function of bbmgrd without a prefix was not refused"
    exit 1
fi
case "$out" in
*"bbmgr/daemon/routes.c defines match(): every extern function carries its file's or folder's prefix"*)
    echo "layers: an extern function of bbmgrd without its folder's prefix is refused" ;;
*)
    printf '%s\n' "$out"
    echo "layers: routes.c's match() was refused for another reason"
    exit 1 ;;
esac
