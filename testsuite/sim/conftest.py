# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures of the bbsim suite: the binary (from HARMONIA_BUILDDIR) and helpers."""
import json
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("HARMONIA_SRCDIR", os.path.normpath(os.path.join(HERE, "..", "..")))
BUILDDIR = os.environ.get("HARMONIA_BUILDDIR", SRCDIR)
BBSIM = os.path.join(BUILDDIR, "sim", "bbsim")
EXAMPLES = os.path.join(SRCDIR, "sim", "examples")


class Sim:
    path = BBSIM
    examples = EXAMPLES

    def __call__(self, *args, check=None, timeout=120, input=None):
        p = subprocess.run([BBSIM] + [str(a) for a in args], capture_output=True,
                           text=True, timeout=timeout, input=input)
        if check is not None:
            assert p.returncode == check, (p.returncode, p.stdout[-2000:], p.stderr)
        return p

    def gen(self, tmp_path, *args, name="w.yaml"):
        p = self("gen", *args, check=0)
        f = tmp_path / name
        f.write_text(p.stdout)
        return f

    def json(self, workload, policies, *extra):
        args = ["run", workload, "--format", "json"]
        for pol in policies:
            args += ["--policy", pol]
        p = self(*args, *extra, check=0)
        return json.loads(p.stdout)


@pytest.fixture(scope="session")
def bbsim():
    if not os.access(BBSIM, os.X_OK):
        pytest.skip(f"{BBSIM} not built (make -C sim)")
    return Sim()
