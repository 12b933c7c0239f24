#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# check_layers.sh — the layering HACKING.md states ("Layers"), held against the
# sources' includes and the build's objects (layers.py says how).  Run by
# 'make check' after the build; by hand: testsuite/layers/layers.py SRCDIR BUILDDIR.
: "${HARMONIA_SRCDIR:?set by make check}" "${HARMONIA_BUILDDIR:?set by make check}"
exec "${PYTHON3:-python3}" "$HARMONIA_SRCDIR/testsuite/layers/layers.py" \
    "$HARMONIA_SRCDIR" "$HARMONIA_BUILDDIR"
