# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures for the cluster tests: a real private Slurm cluster (munged,
slurmctld, 4 slurmd) started by testsuite/cluster/cluster with Harmonia's
plugins from the build tree.

To run against another cluster (e.g. a docker-based one), set
HARMONIA_SLURM_CONF to its slurm.conf: no private cluster is started then.
The other settings of an external cluster (testsuite/slurm/README.md):
  HARMONIA_BBMGR_URL       its bbmgrd (http://HOST:PORT or unix:/PATH); without
                           it the tests that need bbmgrd skip themselves
  HARMONIA_MUNGE_SOCKET    the munged socket of this (the submitting) host
  HARMONIA_BBMGR_CONF      bbmgrd's bbmgr.yaml, readable and writable from here
                           (its log file, the mover tests rewrite it)
  HARMONIA_CLUSTER_CONTROL a command that, given one more argument bbmgrd-stop,
                           bbmgrd-start or slurmctld-restart, does that on the
                           cluster and returns once it is done
  HARMONIA_TEST_USERS      two ordinary users known to every node (user1,user2)
  HARMONIA_WORKDIR         a directory shared with the compute nodes where the
                           tests write their job scripts, inputs and outputs
                           (default: the system's temporary directory)
HARMONIA_TEST_NETNS=1 (opt-in, root only) starts testsuite/cluster/netns-cluster
for the session instead of the private cluster and runs against it as above.
"""
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time

import pytest

from harmonia_test import wait

SRCDIR = os.environ.get("HARMONIA_SRCDIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILDDIR = os.environ.get("HARMONIA_BUILDDIR", SRCDIR)
CLUSTER = os.path.join(SRCDIR, "testsuite", "cluster", "cluster")
NETNS_CLUSTER = os.path.join(SRCDIR, "testsuite", "cluster", "netns-cluster")
EXTERNAL_KEYS = ("HARMONIA_BBMGR_URL", "HARMONIA_MUNGE_SOCKET", "HARMONIA_BBMGR_CONF",
                 "HARMONIA_CLUSTER_CONTROL", "HARMONIA_TEST_USERS")


def _have_cluster_tools():
    return shutil.which("slurmctld", path=os.environ.get("PATH", "") + ":/usr/sbin") and \
        os.path.exists(os.path.join(BUILDDIR, "src/plugins/burst_buffer/harmonia/.libs/burst_buffer_harmonia.so"))


def pytest_configure(config):
    """With HARMONIA_WORKDIR, pytest's tmp_path (stage-in sources, results) lives
    there too: the cluster's nodes and bbmgrd must see it."""
    wd = os.environ.get("HARMONIA_WORKDIR")
    if wd and not config.option.basetemp:
        config.option.basetemp = tempfile.mkdtemp(prefix="harmonia-pytest-", dir=wd)
        os.chmod(config.option.basetemp, 0o755)


def _read_keyvals(path):
    """Key=Value lines of a Slurm-style file (slurm.conf, harmonia.conf); {} when
    it cannot be read (an external cluster's files need not be visible here)."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if "=" in line and " " not in line.split("=", 1)[0]:
                    k, v = line.split("=", 1)
                    out.setdefault(k.strip().lower(), v.strip())
    except OSError:
        pass
    return out


class Cluster:
    def __init__(self, conf, workdir, cdir=None, settings=None):
        self.conf = conf
        self.workdir = workdir
        self.cdir = cdir            # private cluster's directory (None: external)
        self.env = dict(os.environ, SLURM_CONF=conf)
        # an external cluster's settings: HARMONIA_* from the environment
        ext = os.environ if settings is None else settings
        self.bbmgr_url = ext.get("HARMONIA_BBMGR_URL")
        self.munge_socket = ext.get("HARMONIA_MUNGE_SOCKET")
        self.bbmgr_conf = ext.get("HARMONIA_BBMGR_CONF")
        self.control_cmd = ext.get("HARMONIA_CLUSTER_CONTROL")
        users = ext.get("HARMONIA_TEST_USERS")
        self.test_users = [u for u in users.split(",") if u] if users else None
        if cdir:
            self.bbmgr_url = self.munge_socket = self.bbmgr_conf = self.control_cmd = None
            self.test_users = None
        if cdir and os.path.exists(os.path.join(cdir, "etc", "harmonia.conf")):
            self.bbmgr_url = "unix:" + os.path.join(cdir, "run", "bbmgrd.sock")
            self.munge_socket = os.path.join(cdir, "munge-run", "munge.socket")
            self.bbmgr_conf = os.path.join(cdir, "etc", "bbmgr.yaml")

    @property
    def slurm_conf(self):
        """slurm.conf's settings, keys in lower case ({} if unreadable)."""
        return _read_keyvals(self.conf)

    @property
    def harmonia_conf(self):
        """harmonia.conf (next to slurm.conf) as the plugin reads it, keys in lower
        case; {} when it is not readable from here."""
        return _read_keyvals(os.path.join(os.path.dirname(self.conf), "harmonia.conf"))

    def bbmgrd_log_path(self):
        """bbmgrd's log file (log.file of its bbmgr.yaml), None if unknown."""
        if not self.bbmgr_conf:
            return None
        try:
            import yaml
            with open(self.bbmgr_conf) as f:
                return ((yaml.safe_load(f) or {}).get("log") or {}).get("file")
        except (OSError, ImportError, ValueError, AttributeError):
            return None

    def bb_mounts(self):
        """The buffer nodes' mount directories, as bbmgrd reports them."""
        return [n["mount"] for n in self.bbmgr("nodes")["nodes"] if n.get("mount")]

    def bbmgr_run(self, *args):
        """bbmgr --json ARGS against the cluster's bbmgrd: the finished process."""
        cmd = [os.path.join(BUILDDIR, "bbmgr", "bbmgr"), "--url", self.bbmgr_url, "--json"]
        if self.munge_socket:
            cmd += ["--munge-socket", self.munge_socket]
        return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=30)

    def bbmgr(self, *args, check=True):
        """bbmgr --json ARGS against the cluster's bbmgrd; parsed JSON or text."""
        p = self.bbmgr_run(*args)
        if check and p.returncode != 0:
            raise AssertionError("bbmgr %s failed: %s%s" % (args, p.stdout, p.stderr))
        try:
            return json.loads(p.stdout)
        except ValueError:
            return p.stdout

    def need_control(self):
        """Skip unless the test can stop and restart the cluster's daemons."""
        if not self.cdir and not self.control_cmd:
            pytest.skip("stops and restarts the cluster's daemons: needs the private cluster "
                        "or HARMONIA_CLUSTER_CONTROL")

    def control(self, what):
        """Failure tests: bbmgrd-stop, bbmgrd-start, slurmctld-restart, on the
        private cluster (testsuite/cluster/cluster) or through an external
        cluster's HARMONIA_CLUSTER_CONTROL."""
        if self.cdir:
            cmd = [CLUSTER, what, self.cdir, "--builddir", BUILDDIR]
        else:
            self.need_control()
            cmd = shlex.split(self.control_cmd) + [what]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
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

    def ctld_log_path(self):
        return self.slurm_conf.get("slurmctldlogfile") or os.path.join(
            os.path.dirname(os.path.dirname(self.conf)), "log", "slurmctld.log")

    def need_ctld_log(self):
        """Skip unless slurmctld's log is readable from here."""
        if not os.access(self.ctld_log_path(), os.R_OK):
            pytest.skip("reads slurmctld's log (SlurmctldLogFile), not readable from here")

    def ctld_log(self):
        """slurmctld's log (SlurmctldLogFile of slurm.conf), "" if not readable."""
        path = self.ctld_log_path()
        try:
            with open(path) as f:
                return f.read()
        except OSError:
            return ""


def _workdir():
    wd = tempfile.mkdtemp(prefix="harmonia-slurm-", dir=os.environ.get("HARMONIA_WORKDIR"))
    os.chmod(wd, 0o755)
    return wd


def _start_cluster(tool, cdir):
    """'tool start cdir' (testsuite/cluster/cluster or netns-cluster) with this
    build; its completed process (stdout: the settings it prints)."""
    p = subprocess.run([tool, "start", cdir, "--builddir", BUILDDIR],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError("%s start failed:\n%s%s"
                           % (os.path.basename(tool), p.stdout, p.stderr))
    return p


def _netns_cluster(workdir):
    """HARMONIA_TEST_NETNS=1: testsuite/cluster/netns-cluster for the session;
    yields its settings (the HARMONIA_* lines it prints)."""
    if os.geteuid() != 0:
        pytest.skip("HARMONIA_TEST_NETNS=1 needs root (network namespaces)")
    if not _have_cluster_tools():
        pytest.skip("no slurmctld or plugins not built (configure --with-slurm-source)")
    ndir = os.path.join(workdir, "netns")
    p = _start_cluster(NETNS_CLUSTER, ndir)
    settings = {}
    for line in p.stdout.splitlines():
        m = re.match(r"export (HARMONIA_\w+)=(.*)$", line)
        if m:
            settings[m.group(1)] = " ".join(shlex.split(m.group(2)))
    settings.setdefault("HARMONIA_TEST_USERS", "hmtest1,hmtest2")
    return ndir, settings


@pytest.fixture(scope="session")
def cluster():
    ext = os.environ.get("HARMONIA_SLURM_CONF")
    workdir = _workdir()
    if ext:
        yield Cluster(ext, workdir)
        shutil.rmtree(workdir, ignore_errors=True)
        return
    if os.environ.get("HARMONIA_TEST_NETNS") == "1":
        ndir, settings = _netns_cluster(workdir)
        try:
            yield Cluster(settings["HARMONIA_SLURM_CONF"], workdir, settings=settings)
        finally:
            subprocess.run([NETNS_CLUSTER, "stop", ndir], capture_output=True, text=True,
                           timeout=120)
            shutil.rmtree(workdir, ignore_errors=True)
        return
    if not _have_cluster_tools():
        pytest.skip("no slurmctld or plugins not built (configure --with-slurm-source)")
    cdir = os.path.join(workdir, "cluster")
    _start_cluster(CLUSTER, cdir)
    c = Cluster(os.path.join(cdir, "etc", "slurm.conf"), workdir, cdir)
    try:
        yield c
    finally:
        subprocess.run([CLUSTER, "stop", cdir], capture_output=True, text=True, timeout=120)
        shutil.rmtree(workdir, ignore_errors=True)


# ------------------------------------------------------------------ shared by the tests
def script(*directives, body="hostname"):
    """A one-node batch script with these #BB_HARMONIA directives."""
    lines = ["#!/bin/bash", "#SBATCH -N1"]
    lines += ["#BB_HARMONIA " + d for d in directives]
    lines.append(body)
    return "\n".join(lines) + "\n"


def sbatch_ok(cluster, *directives, body="hostname", opts=()):
    """sbatch script(*directives, body) with these sbatch options; its job id
    (the submission must be accepted)."""
    rc, jobid, _, err = cluster.sbatch(script(*directives, body=body), *opts)
    assert rc == 0, err
    return jobid


def wait_for(pred, timeout=None, what="condition", interval=0.2, report=None):
    """pred()'s first true value, or AssertionError (harmonia_test.wait: one
    generous bound, stretched on sanitizer builds; report() is added to it)."""
    return wait.wait_for(pred, what, timeout, interval, report)


def job_ended(cluster, jobid):
    """True once bbmgrd reports the job ended or no longer knows it (HTTP 404).
    Any other failure (bbmgrd unreachable, an error answer) is an AssertionError:
    a failed request is not an ended job."""
    p = cluster.bbmgr_run("job", str(jobid))
    if p.returncode != 0:
        assert "HTTP 404" in p.stderr, "bbmgr job %s failed: %s" % (jobid, p.stderr)
        return True
    return json.loads(p.stdout).get("state") == "ended"


@pytest.fixture
def need_bbmgrd(cluster):
    """Skip tests that talk to bbmgrd when the cluster has none."""
    if not cluster.bbmgr_url:
        pytest.skip("no bbmgrd with this cluster (external: set HARMONIA_BBMGR_URL)")


# ------------------------------------------------------------------ ordinary users
TEST_USERS = ("hmtest1", "hmtest2")


@contextlib.contextmanager
def bbmgrd_with(cluster, section, lines, what):
    """bbmgrd restarted with a top-level section (`section:` then lines) added to
    its bbmgr.yaml; restored afterwards.  what: why, for the skip."""
    cluster.need_control()
    path = cluster.bbmgr_conf
    if not path or not os.access(path, os.W_OK):
        pytest.skip("%s in bbmgrd's bbmgr.yaml: needs the private cluster "
                    "or HARMONIA_BBMGR_CONF (writable from here)" % what)
    with open(path) as f:
        orig = f.read()
    assert "\n%s:" % section not in orig
    cluster.control("bbmgrd-stop")
    try:
        with open(path, "w") as f:
            f.write(orig + "%s:\n%s" % (section, "".join("  %s\n" % l for l in lines)))
        cluster.control("bbmgrd-start")
        yield
    finally:
        cluster.control("bbmgrd-stop")
        with open(path, "w") as f:
            f.write(orig)
        cluster.control("bbmgrd-start")


def plain_user(cluster, i=0):
    """The i-th ordinary user that submits jobs (pwd entry): created here on the
    private cluster when missing, HARMONIA_TEST_USERS on an external one; the
    test skips without root or without such a user."""
    import pwd
    if os.geteuid() != 0:
        pytest.skip("needs root to create and act as test users")
    names = TEST_USERS
    if not cluster.cdir:
        if not cluster.test_users or len(cluster.test_users) <= i:
            pytest.skip("needs users known to the cluster's nodes: HARMONIA_TEST_USERS")
        names = cluster.test_users
    try:
        return pwd.getpwnam(names[i])
    except KeyError:
        subprocess.run(["useradd", "-m", "-s", "/bin/bash", names[i]], check=True,
                       capture_output=True, timeout=30)
        return pwd.getpwnam(names[i])


def user_workdir(cluster, pw):
    """A new directory of the cluster's work directory owned by user pw."""
    d = os.path.join(cluster.workdir, "%s-%d" % (pw.pw_name, int(time.time() * 1e6)))
    os.makedirs(d)
    os.chown(d, pw.pw_uid, pw.pw_gid)
    return d


def run_as(cluster, pw, *args, input=None):
    """A command (sbatch, scontrol, squeue, sacct, bbmgr ...) run as user pw."""
    return cluster.run("runuser", "-u", pw.pw_name, "--", *args, check=False, input=input)


def sbatch_as(cluster, pw, text, *opts, wdir=None):
    """sbatch TEXT as user pw from wdir (default: a new directory of its own):
    (returncode, job id or None, stdout, stderr); the job's output is
    slurm-JOBID.out in that directory."""
    wdir = wdir or user_workdir(cluster, pw)
    path = os.path.join(wdir, "job-%d.sh" % int(time.time() * 1e6))
    with open(path, "w") as f:
        f.write(text)
    os.chown(path, pw.pw_uid, pw.pw_gid)
    p = run_as(cluster, pw, "sbatch", "--parsable", "-D", wdir,
               "-o", os.path.join(wdir, "slurm-%j.out"), *opts, path)
    jobid = p.stdout.strip().split(";")[0] if p.returncode == 0 else None
    return p.returncode, jobid, p.stdout, p.stderr
