# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures of the daemon suite: those of harmonia_test.daemon (a private munged,
real bbmgrd processes, per-test directories)."""
from harmonia_test.daemon import *  # noqa: F401,F403 (fixtures are found by name)
