# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared pytest fixtures and helpers of Harmonia's test suites.

harmonia_test.daemon: a private munged and real bbmgrd processes (the daemon and
app suites).  testsuite/pytest.ini puts testsuite/ on the import path.
"""
