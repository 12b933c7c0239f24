# SPDX-License-Identifier: GPL-2.0-or-later
"""The bbsim workload scripts/demo-compare writes for the demo's "model against
reality": with more jobs than the cluster has compute nodes (the demo's 8 jobs on
the private cluster's 4), bbsim must accept it and its SysEfficiency must be the
mean over the jobs, the definition of the measured figure."""
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import types

import pytest

SRCDIR = os.environ.get("HARMONIA_SRCDIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILDDIR = os.environ.get("HARMONIA_BUILDDIR", SRCDIR)
BBSIM = os.path.join(BUILDDIR, "sim", "bbsim")


def demo_compare():
    path = os.path.join(SRCDIR, "scripts", "demo-compare")
    loader = importlib.machinery.SourceFileLoader("demo_compare", path)
    spec = importlib.util.spec_from_loader("demo_compare", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("jobs", [4, 8])
def test_more_jobs_than_compute_nodes(tmp_path, jobs):
    dc = demo_compare()
    plat = {"compute_nodes": 4, "b": 100e6, "pfs": 100e9, "overprovision": 2.0,
            "nodes": [("bb%d" % i, 100e6, 64 << 30) for i in range(1, 5)]}
    mix = dc.Mix(types.SimpleNamespace(volume=64 << 20, phases=3), plat["b"])
    profiles = [mix.profile(k) for k in range(jobs)]
    path = tmp_path / "w.yaml"
    path.write_text(dc.workload_yaml(plat, mix, profiles, None, plat["pfs"]))
    p = subprocess.run([BBSIM, "run", str(path), "--policy", "fairshare", "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)["results"][0]
    rho = [a["work"] / (a["end"] - a["release"]) for a in r["apps"]]
    assert len(rho) == jobs
    assert abs(r["sys_efficiency"] - sum(rho) / jobs) < 1e-6 * jobs, (r["sys_efficiency"], rho)
    assert r["sys_efficiency"] <= 1
