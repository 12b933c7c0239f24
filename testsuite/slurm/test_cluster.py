# SPDX-License-Identifier: GPL-2.0-or-later
"""The test-cluster scripts themselves: a second private cluster next to the
session's one does not collide with it (and logs as a site would with
--production-logs), and stopping it leaves nothing behind and leaves the other
cluster running."""
import os
import subprocess
import tempfile
import time

import pytest

from conftest import BUILDDIR, CLUSTER, Cluster


def pids_of(cdir):
    out = []
    run = os.path.join(cdir, "run")
    for f in os.listdir(run) if os.path.isdir(run) else []:
        if f.endswith(".pid"):
            try:
                out.append(int(open(os.path.join(run, f)).read().strip()))
            except ValueError:
                pass
    return out


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_second_cluster_does_not_collide(cluster):
    if not cluster.cdir:
        pytest.skip("tests testsuite/cluster/cluster itself (a second private cluster "
                    "next to the session's): needs the private cluster")
    with tempfile.TemporaryDirectory(prefix="harmonia-second-") as tmp:
        os.chmod(tmp, 0o755)
        cdir = os.path.join(tmp, "c")
        p = subprocess.run([CLUSTER, "start", cdir, "--nodes", "2", "--no-bbmgr",
                            "--production-logs", "--builddir", BUILDDIR],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        second = Cluster(os.path.join(cdir, "etc", "slurm.conf"), tmp, cdir)
        try:
            pids = pids_of(cdir)
            assert len(pids) >= 4           # munged, slurmctld, 2 slurmd
            conf1 = open(cluster.conf).read()
            conf2 = open(second.conf).read()
            port = lambda c: [l for l in c.splitlines() if l.startswith("SlurmctldPort=")]
            assert port(conf1) != port(conf2)
            # --production-logs: what a site runs, not the tests' debug logging
            assert "SlurmctldDebug=info" in conf2.splitlines()
            assert not [l for l in conf2.splitlines() if l.startswith("DebugFlags")]
            rc1, j1, _, e1 = cluster.sbatch(None, "--wrap", "true")
            rc2, j2, _, e2 = second.sbatch(None, "--wrap", "true")
            assert rc1 == 0 and rc2 == 0, e1 + e2
            assert cluster.wait_state(j1, {"COMPLETED"}) == "COMPLETED"
            assert second.wait_state(j2, {"COMPLETED"}) == "COMPLETED"
        finally:
            p = subprocess.run([CLUSTER, "stop", cdir], capture_output=True, text=True,
                               timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        time.sleep(0.2)
        assert not os.path.exists(cdir)
        assert not [pid for pid in pids if alive(pid)]
    # the session's cluster is still up
    assert cluster.run("scontrol", "ping").returncode == 0
