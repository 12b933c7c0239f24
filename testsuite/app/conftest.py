# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures of the app suite (libharmonia, harmonia-io, bbio-bench).

The daemon suite's fixtures (a private munged, real bbmgrd processes on loopback,
per-test temporary directories, stop by PID) come from the harmonia_test package.
"""
import json
import os
import subprocess

import pytest

from harmonia_test import daemon as daemon_fixtures
from harmonia_test.daemon import (BUILDDIR, SLURM_UID, daemon, make_daemon,  # noqa: F401
                                  munge, register, tmp_base)

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
