# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures for the cluster tests: a real private Slurm cluster (munged,
slurmctld, 4 slurmd) started by testsuite/cluster/cluster with Harmonia's
plugins from the build tree.

To run against another cluster (e.g. a docker-based one), set
HARMONIA_SLURM_CONF to its slurm.conf: no private cluster is started then.
"""
import os
import shutil
import subprocess
import tempfile
import time

import pytest

SRCDIR = os.environ.get("HARMONIA_SRCDIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILDDIR = os.environ.get("HARMONIA_BUILDDIR", SRCDIR)
CLUSTER = os.path.join(SRCDIR, "testsuite", "cluster", "cluster")


def _have_cluster_tools():
    return shutil.which("slurmctld", path=os.environ.get("PATH", "") + ":/usr/sbin") and \
        os.path.exists(os.path.join(BUILDDIR, "src/plugins/burst_buffer/harmonia/.libs/burst_buffer_harmonia.so"))


class Cluster:
    def __init__(self, conf, workdir, cdir=None):
        self.conf = conf
        self.workdir = workdir
        self.cdir = cdir            # private cluster's directory (None: external)
        self.env = dict(os.environ, SLURM_CONF=conf)
        self.bbmgr_url = os.environ.get("HARMONIA_BBMGR_URL")
        self.munge_socket = os.environ.get("HARMONIA_MUNGE_SOCKET")
        if cdir and os.path.exists(os.path.join(cdir, "etc", "harmonia.conf")):
            self.bbmgr_url = "unix:" + os.path.join(cdir, "run", "bbmgrd.sock")
            self.munge_socket = os.path.join(cdir, "munge-run", "munge.socket")

    def bbmgr(self, *args, check=True):
        """bbmgr --json ARGS against the cluster's bbmgrd; parsed JSON or text."""
        import json
        cmd = [os.path.join(BUILDDIR, "bbmgr", "bbmgr"), "--url", self.bbmgr_url, "--json"]
        if self.munge_socket:
            cmd += ["--munge-socket", self.munge_socket]
        p = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=30)
        if check and p.returncode != 0:
            raise AssertionError("bbmgr %s failed: %s%s" % (args, p.stdout, p.stderr))
        try:
            return json.loads(p.stdout)
        except ValueError:
            return p.stdout

    def control(self, what):
        """Failure tests: bbmgrd-stop, bbmgrd-start, slurmctld-restart."""
        if not self.cdir:
            pytest.skip("needs the private cluster")
        p = subprocess.run([CLUSTER, what, self.cdir, "--builddir", BUILDDIR],
                           capture_output=True, text=True, timeout=90)
        assert p.returncode == 0, p.stdout + p.stderr

    def out(self, jobid):
        with open(os.path.join(self.workdir, "slurm-%s.out" % jobid)) as f:
            return f.read()

    def run(self, *args, check=True, input=None, timeout=30):
        p = subprocess.run(list(args), env=self.env, capture_output=True, text=True,
                           input=input, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError("%s failed (%d): %s%s" % (" ".join(args), p.returncode,
                                                          p.stdout, p.stderr))
        return p

    def sbatch(self, script=None, *opts, check=False):
        """Submit; returns (returncode, jobid or None, stdout, stderr)."""
        args = ["sbatch", "--parsable", "-o", os.path.join(self.workdir, "slurm-%j.out")]
        args += list(opts)
        if script is not None:
            path = os.path.join(self.workdir, "job-%d.sh" % int(time.time() * 1e6))
            with open(path, "w") as f:
                f.write(script)
            args.append(path)
        p = self.run(*args, check=check)
        jobid = p.stdout.strip().split(";")[0] if p.returncode == 0 else None
        return p.returncode, jobid, p.stdout, p.stderr

    def job(self, jobid):
        """scontrol show job -o as a dict (BurstBuffer may hold newlines)."""
        p = self.run("scontrol", "show", "job", str(jobid))
        text = p.stdout
        d = {}
        # BurstBuffer= runs until BurstBufferState=
        if "BurstBuffer=" in text:
            a = text.index("BurstBuffer=") + len("BurstBuffer=")
            b = text.index("BurstBufferState=")
            d["BurstBuffer"] = text[a:b].strip()
            text = text[:a - len("BurstBuffer=")] + text[b:]
        for tok in text.split():
            if "=" in tok:
                k, v = tok.split("=", 1)
                d.setdefault(k, v)
        return d

    def wait_state(self, jobid, states, timeout=60):
        deadline = time.time() + timeout
        st = None
        while time.time() < deadline:
            st = self.job(jobid).get("JobState")
            if st in states:
                return st
            time.sleep(0.2)
        raise AssertionError("job %s still %s after %ds (wanted %s)" % (jobid, st, timeout, states))

    def job_ids(self):
        p = self.run("squeue", "-h", "-o", "%i")
        return [l.strip() for l in p.stdout.splitlines() if l.strip()]

    def ctld_log(self):
        path = os.path.join(os.path.dirname(os.path.dirname(self.conf)), "log", "slurmctld.log")
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""


@pytest.fixture(scope="session")
def cluster():
    ext = os.environ.get("HARMONIA_SLURM_CONF")
    workdir = tempfile.mkdtemp(prefix="harmonia-slurm-")
    os.chmod(workdir, 0o755)
    if ext:
        yield Cluster(ext, workdir)
        shutil.rmtree(workdir, ignore_errors=True)
        return
    if not _have_cluster_tools():
        pytest.skip("no slurmctld or plugins not built (configure --with-slurm-source)")
    cdir = os.path.join(workdir, "cluster")
    p = subprocess.run([CLUSTER, "start", cdir, "--builddir", BUILDDIR],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError("cluster start failed:\n" + p.stdout + p.stderr)
    c = Cluster(os.path.join(cdir, "etc", "slurm.conf"), workdir, cdir)
    try:
        yield c
    finally:
        subprocess.run([CLUSTER, "stop", cdir], capture_output=True, text=True, timeout=120)
        shutil.rmtree(workdir, ignore_errors=True)
