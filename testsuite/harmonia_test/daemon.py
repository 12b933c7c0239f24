# SPDX-License-Identifier: GPL-2.0-or-later
"""Shared fixtures of the daemon and app suites: a private munged and real
bbmgrd processes.

Every test gets its own temporary directory, munge key and socket, loopback port
and state directory; everything started is stopped by PID in teardown.
"""
import http.client
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

SRCDIR = os.environ.get("HARMONIA_SRCDIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILDDIR = os.environ.get("HARMONIA_BUILDDIR", SRCDIR)
BBMGRD = os.path.join(BUILDDIR, "bbmgr", "bbmgrd")
BBMGR = os.path.join(BUILDDIR, "bbmgr", "bbmgr")

SLURM_UID = 4242        # the configured SlurmUser (a uid: no account needed)
USER1 = 1001
USER2 = 1002


@pytest.fixture(scope="module")
def users():
    """Accounts for uids 1001 and 1002 (made for this module when missing, removed after
    it): a test that runs a real program as USER1 or USER2 needs a passwd entry for
    it, e.g. slurmctld makes a job's credential from it.  Their groups are gids 1001
    and 1002, the groups of the test files of USER1 and USER2."""
    made = []
    for uid, gid, name in ((USER1, USER1, "hmsec1"), (USER2, USER2, "hmsec2")):
        try:
            pwd.getpwuid(uid)
            continue
        except KeyError:
            pass
        if not shutil.which("useradd") or not shutil.which("groupadd"):
            pytest.skip("no account for uid %d and no useradd to make one" % uid)
        if subprocess.run(["getent", "group", str(gid)], capture_output=True).returncode:
            subprocess.run(["groupadd", "-g", str(gid), name], check=True)
            made.append(("group", name))
        subprocess.run(["useradd", "-M", "-N", "-u", str(uid), "-g", str(gid),
                        "-s", "/usr/sbin/nologin", name], check=True)
        made.append(("user", name))
    yield
    for kind, name in reversed(made):
        subprocess.run(["userdel" if kind == "user" else "groupdel", name],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Munge:
    def __init__(self, base):
        self.dir = os.path.join(base, "munge")
        keydir = os.path.join(self.dir, "key")
        sockdir = os.path.join(self.dir, "sock")
        os.makedirs(keydir, mode=0o700)
        os.makedirs(sockdir, mode=0o755)
        os.chmod(self.dir, 0o755)
        self.key = os.path.join(keydir, "munge.key")
        self.socket = os.path.join(sockdir, "munge.socket")
        self.pidfile = os.path.join(sockdir, "munged.pid")
        subprocess.run(["mungekey", "-c", "-k", self.key], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run(["munged", "--socket=" + self.socket, "--key-file=" + self.key,
                        "--pid-file=" + self.pidfile,
                        "--log-file=" + os.path.join(self.dir, "munged.log"),
                        "--seed-file=" + os.path.join(self.dir, "munged.seed"),
                        "--force"], check=True)
        for _ in range(100):
            if os.path.exists(self.socket) and os.path.exists(self.pidfile):
                break
            time.sleep(0.02)
        with open(self.pidfile) as f:
            self.pid = int(f.read().strip())

    def cred(self, method, path, uid=None, gid=None, ttl=None, payload=None):
        """A credential for METHOD PATH, as user uid (root may encode for anyone)."""
        if payload is None:
            payload = "%s %s" % (method, path.split("?")[0])
        cmd = ["munge", "-S", self.socket, "-s", payload]
        if uid is not None:
            cmd += ["-U", str(uid), "-G", str(gid if gid is not None else uid)]
        if ttl is not None:
            cmd += ["-t", str(ttl)]
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()

    def stop(self):
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


DEFAULT_NODES = [
    {"names": "bb[01-04]", "capacity": "1TiB", "bandwidth": "2 GB/s", "device": "nvme",
     "mount": "/mnt/bb", "pool": "nvme"},
    {"names": "hd[1-2]", "capacity": "8TiB", "bandwidth": "500 MB/s", "mount": "/mnt/hd",
     "pool": "capacity"},
]


def render_yaml(d, indent=0):
    """Enough YAML for our configs (dicts, lists of dicts, scalars)."""
    out = []
    pad = " " * indent
    for k, v in d.items():
        if isinstance(v, dict):
            out.append("%s%s:" % (pad, k))
            out.append(render_yaml(v, indent + 2))
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            out.append("%s%s:" % (pad, k))
            for item in v:
                first = True
                for ik, iv in item.items():
                    lead = "- " if first else "  "
                    first = False
                    out.append("%s  %s%s: %s" % (pad, lead, ik, scalar(iv)))
        else:
            out.append("%s%s: %s" % (pad, k, scalar(v)))
    return "\n".join(x for x in out if x != "")


def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(scalar(x) for x in v) + "]"
    if isinstance(v, (int, float)):
        return str(v)
    return json.dumps(v)


class Daemon:
    def __init__(self, base, munge, name="bbmgrd", **overrides):
        self.base = base
        self.munge = munge
        self.dir = os.path.join(base, name)
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        self.unix = os.path.join(self.dir, "bbmgrd.sock")
        self.state = os.path.join(self.dir, "state")
        self.config = os.path.join(self.dir, "bbmgr.yaml")
        self.log = os.path.join(self.dir, "bbmgrd.log")
        self.proc = None
        self.conf = {
            "listen": {"address": "127.0.0.1", "port": self.port, "unix_socket": self.unix},
            "state": {"dir": self.state, "durable": True},
            "auth": {"type": "munge", "munge_socket": munge.socket if munge else "",
                     "slurm_user": str(SLURM_UID)},
            "log": {"level": "debug"},
            "policy": {"id": "fairshare", "overprovision": 1.0},
            "limits": {"max_body": "4KiB", "connection_timeout": "2s", "max_wait": "10s"},
            "stage": {"mode": "scheduled"},
            "devices": [{"name": "nvme", "msca": [0, 0.02, 0.05]}],
            "pools": [{"name": "nvme", "granularity": "1GiB"},
                      {"name": "capacity", "granularity": "16GiB"}],
            "nodes": DEFAULT_NODES,
        }
        for k, v in overrides.items():
            if isinstance(v, dict) and isinstance(self.conf.get(k), dict):
                self.conf[k].update(v)
            else:
                self.conf[k] = v
        self.write_config()

    def write_config(self, text=None):
        with open(self.config, "w") as f:
            f.write(text if text is not None else render_yaml(self.conf) + "\n")

    def start(self, wait=True, extra=()):
        self.logf = open(self.log, "a")
        self.proc = subprocess.Popen([BBMGRD, "-f", "-c", self.config] + list(extra),
                                     stdout=self.logf, stderr=subprocess.STDOUT)
        if wait:
            self.wait_ready()
        return self

    def log_text(self):
        with open(self.log) as f:
            return f.read()

    def wait_ready(self, timeout=10):
        t0 = time.time()
        marks = self.log_text().count(" info ready")
        while time.time() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError("bbmgrd exited %d:\n%s" % (self.proc.returncode,
                                                               self.log_text()[-3000:]))
            if self.log_text().count(" info ready") > self.ready_count():
                self._ready = self.log_text().count(" info ready")
                return
            time.sleep(0.02)
        raise RuntimeError("bbmgrd not ready:\n" + self.log_text()[-3000:])

    def ready_count(self):
        return getattr(self, "_ready", 0)

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=20)
        rc = self.proc.returncode if self.proc else None
        self.proc = None
        return rc

    def stop(self):
        return self.kill(signal.SIGTERM)

    def restart(self):
        self.kill(signal.SIGKILL)
        return self.start()

    # ---- HTTP
    def conn(self, timeout=15):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, uid=0, auth=True, raw=None, headers=None,
                conn=None, cred=None, timeout=15):
        """Returns (status, decoded JSON or text)."""
        hdrs = {}
        if auth:
            hdrs["Authorization"] = "MUNGE " + (cred or self.munge.cred(method, path, uid=uid))
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        if raw is not None:
            data = raw if isinstance(raw, bytes) else raw.encode()
            hdrs.setdefault("Content-Type", "application/json")
        if headers:
            hdrs.update(headers)
        own = conn is None
        c = conn or self.conn(timeout)
        try:
            c.request(method, path, body=data, headers=hdrs)
            resp = c.getresponse()
            text = resp.read().decode()
        finally:
            if own:
                c.close()
        ctype = resp.getheader("Content-Type") or ""
        if ctype.startswith("application/json") and text:
            return resp.status, json.loads(text)
        return resp.status, text

    def metric(self, name):
        """The value of one line of /metrics (name with its labels)."""
        text = self.request("GET", "/metrics", auth=False)[1]
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        raise AssertionError("no metric %s in /metrics" % name)

    def ok(self, method, path, body=None, uid=0, expect=(200, 201), **kw):
        st, js = self.request(method, path, body, uid=uid, **kw)
        assert st in expect, "%s %s -> %d %s" % (method, path, st, js)
        return js


# How a sanitizer's report starts in a log (ASan, UBSan and LSan builds).
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer")


def sanitizer_reports(log, text):
    """The reports of a sanitizer in 'text', the content of the log file 'log'."""
    return ["%s: %s" % (log, text[text.index(m):][:2000]) for m in SANITIZER_MARKS if m in text]


@pytest.fixture
def tmp_base():
    d = tempfile.mkdtemp(prefix="harmonia-daemon-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def munge(tmp_base):
    m = Munge(tmp_base)
    yield m
    m.stop()


@pytest.fixture
def make_daemon(tmp_base, munge):
    made = []

    def make(start=True, **overrides):
        d = Daemon(tmp_base, munge, name="bbmgrd%d" % len(made), **overrides)
        made.append(d)
        if start:
            d.start()
        return d
    yield make
    bad = []
    for d in made:
        # a clean stop in every test; sanitizer reports (ASan/UBSan/LSan builds) fail it
        if d.proc and d.proc.poll() is None:
            d.stop()
        if os.path.exists(d.log):
            bad += sanitizer_reports(d.log, d.log_text())
    assert not bad, "\n".join(bad)


@pytest.fixture
def daemon(make_daemon):
    return make_daemon()


def register(d, jobid, uid=USER1, **kw):
    body = {"id": jobid, "uid": uid}
    body.update(kw)
    return d.ok("POST", "/v1/jobs", body, uid=SLURM_UID, expect=(201,))


def fcfs_one_job_holds_the_io(make_daemon):
    """A daemon under fcfs with no buffer tier and B = b (one job saturates the I/O
    system), job a (USER1) granted a phase of 1 GiB and job b (USER2) registered:
    (the daemon, job a's phase)."""
    d = make_daemon(policy={"id": "fcfs"}, platform={"pfs_bandwidth": "1 GB/s"}, nodes=[])
    register(d, "a")
    register(d, "b", uid=USER2)
    pa = d.ok("POST", "/v1/jobs/a/phases", {"volume": "1GiB"}, uid=USER1)
    assert pa["state"] == "granted"
    return d, pa
