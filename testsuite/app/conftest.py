# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures of the app suite (libharmonia, harmonia-io, bbio-bench).

The daemon suite's fixtures (a private munged, real bbmgrd processes on loopback,
per-test temporary directories, stop by PID) are loaded from
testsuite/daemon/conftest.py by path and re-exported, not copied.
"""
import importlib.util
import json
import os
import subprocess

import pytest

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "harmonia_daemon_fixtures", os.path.join(_here, "..", "daemon", "conftest.py"))
daemon_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(daemon_fixtures)

# fixtures (pytest finds them by name in this module) and helpers
tmp_base = daemon_fixtures.tmp_base
munge = daemon_fixtures.munge
make_daemon = daemon_fixtures.make_daemon
daemon = daemon_fixtures.daemon
register = daemon_fixtures.register
SLURM_UID = daemon_fixtures.SLURM_UID
BUILDDIR = daemon_fixtures.BUILDDIR

LIBDIR = os.path.join(BUILDDIR, "src", "lib", "libharmonia")
HARMONIA_IO = os.path.join(LIBDIR, "harmonia-io")
BBIO_BENCH = os.path.join(LIBDIR, "bbio-bench")


def clean_env():
    """The test process's environment without anything of Harmonia or Slurm."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("HARMONIA_") and not k.startswith("SLURM_")}


def job_env(d, jobid, **extra):
    """The environment a job step sees under Harmonia (as the plugin sets it)."""
    env = clean_env()
    env.update(HARMONIA_URL="http://127.0.0.1:%d" % d.port, HARMONIA_JOBID=jobid,
               HARMONIA_MUNGE_SOCKET=d.munge.socket,
               HARMONIA_COORD_DIR=os.path.join(d.base, "coord"))
    os.makedirs(env["HARMONIA_COORD_DIR"], exist_ok=True)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_bench(args, env, timeout=60, **kw):
    p = subprocess.run([BBIO_BENCH] + list(args), env=env, capture_output=True, text=True,
                       timeout=timeout, **kw)
    assert p.returncode == 0, "bbio-bench %s -> %d\n%s" % (args, p.returncode, p.stderr)
    return json.loads(p.stdout), p.stderr


@pytest.fixture
def job(daemon):
    """A registered job (owned by the caller, root) on a running bbmgrd."""
    register(daemon, "app1", uid=os.getuid(), nodes=1)
    return daemon, "app1"
