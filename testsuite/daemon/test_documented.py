# SPDX-License-Identifier: GPL-2.0-or-later
"""What bbmgr.yaml(5), bbmgrd(8), doc/api.md and doc/policies.md promise, each
against a real bbmgrd and munged: limits (max_jobs, max_persistent, grant_timeout,
history_keep, max_wait, max_connections), state.durable: false, log.format: json,
the log reopened on SIGHUP, the read routes with their query arguments, bbmgr
history, and every policy id granting a phase inside bbmgrd.

Waits are on the daemon's own answers (a phase's state, a log line) with one
generous overall timeout; a time bound is asserted only where it is the
behaviour (max_wait)."""
import json
import os
import signal
import socket
import subprocess
import time

import pytest

from harmonia_test import wait
from harmonia_test.daemon import BBMGR, SLURM_UID, USER1, USER2, register

GiB = 1 << 30


def wait_for(pred, timeout=None, what="condition"):
    """pred()'s first true value (polling the daemon; harmonia_test.wait)."""
    return wait.wait_for(pred, what, timeout)


def phase(d, job, uid=USER1, **body):
    body.setdefault("volume", "1GiB")
    return d.ok("POST", "/v1/jobs/%s/phases" % job, body, uid=uid, expect=(201,))


# ------------------------------------------------------------------ limits

def test_max_jobs_503_then_room_again(make_daemon):
    d = make_daemon(limits={"max_jobs": 2})
    register(d, "a")
    register(d, "b")
    st, e = d.request("POST", "/v1/jobs", {"id": "c", "uid": USER1}, uid=SLURM_UID)
    assert st == 503, (st, e)
    assert e["error"]["code"] == 503 and "max_jobs" in e["error"]["message"], e
    d.ok("DELETE", "/v1/jobs/a", uid=SLURM_UID)
    register(d, "c")


def test_max_persistent_503(make_daemon):
    d = make_daemon(limits={"max_persistent": 1})
    d.ok("POST", "/v1/persistent", {"name": "p1", "capacity": "1GiB"}, uid=USER1,
         expect=(201,))
    st, e = d.request("POST", "/v1/persistent", {"name": "p2", "capacity": "1GiB"},
                      uid=USER1)
    assert st == 503, (st, e)
    assert "max_persistent" in e["error"]["message"], e
    d.ok("DELETE", "/v1/persistent/p1", uid=USER1)
    d.ok("POST", "/v1/persistent", {"name": "p2", "capacity": "1GiB"}, uid=USER1,
         expect=(201,))


def test_grant_timeout_expires_a_granted_phase(make_daemon):
    d = make_daemon(limits={"grant_timeout": "1s"})
    register(d, "a")
    p = phase(d, "a")
    assert p["state"] == "granted"
    before = d.metric('harmonia_phases_total{event="expired"}')
    wait_for(lambda: d.ok("GET", "/v1/phases/%d" % p["id"], uid=USER1)["state"] == "expired",
             what="the phase to expire")
    assert d.metric('harmonia_phases_total{event="expired"}') == before + 1
    # the job may ask again: its share was given back
    assert phase(d, "a")["state"] == "granted"


def test_grant_reestablished_after_restart(make_daemon):
    """A grant younger than grant_timeout survives a crash and restart."""
    d = make_daemon(limits={"grant_timeout": "1h"})
    register(d, "a")
    p = phase(d, "a")
    assert p["state"] == "granted"
    d.restart()
    got = d.ok("GET", "/v1/phases/%d" % p["id"], uid=USER1)
    assert got["state"] == "granted" and got["grant"] is not None, got
    assert d.ok("GET", "/v1/jobs/a", uid=USER1)["phase"]["id"] == p["id"]


def test_grant_older_than_timeout_expired_at_restart(make_daemon):
    d = make_daemon(limits={"grant_timeout": "1s"})
    register(d, "a")
    p = phase(d, "a")
    d.kill()
    # the grant ages past grant_timeout while the daemon is down
    time.sleep(1.5)
    d.start()
    got = wait_for(lambda: (lambda x: x if x["state"] != "granted" else None)(
        d.ok("GET", "/v1/phases/%d" % p["id"], uid=USER1)), what="expiry after restart")
    assert got["state"] == "expired", got


def ended_job(d, jid, user="alice", name="sim", phases=2):
    register(d, jid, user=user, name=name)
    for _ in range(phases):
        p = phase(d, jid, volume="2GiB")
        d.ok("POST", "/v1/phases/%d/finish" % p["id"], uid=USER1)
    d.ok("DELETE", "/v1/jobs/%s" % jid, uid=SLURM_UID)


def test_history_keep_prunes(make_daemon):
    d = make_daemon(limits={"history_keep": 2})
    for i in range(4):
        ended_job(d, "h%d" % i)
    h = d.ok("GET", "/v1/history?user=alice&name=sim", uid=SLURM_UID)
    assert h["jobs"] == 2, h
    assert h["io_volume"] == 2 * GiB
    # bbmgr history USER NAME says the same
    p = subprocess.run([BBMGR, "--url", "http://127.0.0.1:%d" % d.port,
                        "--munge-socket", d.munge.socket, "--json", "history", "alice", "sim"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["jobs"] == 2


def test_max_wait_caps_a_long_poll(make_daemon):
    d = make_daemon(policy={"id": "fcfs"}, platform={"pfs_bandwidth": "1 GB/s"}, nodes=[],
                    limits={"max_wait": "1s"})
    register(d, "a")
    register(d, "b", uid=USER2)
    # a's phase is long (1 TiB at 1 GB/s): under fcfs b waits for it whatever the
    # load of the machine, so only max_wait can end b's long poll
    assert phase(d, "a", volume="1TiB")["state"] == "granted"
    pb = phase(d, "b", uid=USER2)
    assert pb["state"] == "waiting"
    t0 = time.time()
    got = d.ok("GET", "/v1/phases/%d?wait=30" % pb["id"], uid=USER2, timeout=40)
    # the behaviour under test is the bound: 1 s asked of the daemon, 30 s by the client
    assert got["state"] == "waiting" and time.time() - t0 < 15


def test_max_connections(make_daemon):
    d = make_daemon(limits={"max_connections": 4, "connection_timeout": "30s"})
    held = []
    for _ in range(4):
        s = socket.create_connection(("127.0.0.1", d.port))
        s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n")    # never finished
        held.append(s)
    # a fifth connection is not served while the four are held
    with pytest.raises((ConnectionError, OSError)):
        d.request("GET", "/v1/status", uid=USER1, timeout=5)
    for s in held:
        s.close()
    wait_for(lambda: _status_ok(d), what="service after the connections closed")


def _status_ok(d):
    try:
        return d.request("GET", "/v1/status", uid=USER1)[0] == 200
    except OSError:
        return False


# ------------------------------------------------------------------ state and log

def test_state_not_durable_still_kept_across_a_clean_restart(make_daemon):
    d = make_daemon(state={"durable": False})
    assert d.ok("GET", "/v1/status", uid=USER1)["state"]["durable"] is False
    register(d, "a")
    assert d.stop() == 0
    d.start()
    assert d.ok("GET", "/v1/jobs/a", uid=USER1)["id"] == "a"


def test_log_format_json(make_daemon):
    d = make_daemon(start=False, log={"format": "json", "level": "info"})
    d.start(wait=False)
    wait_for(lambda: '"msg":"ready"' in d.log_text(), what="ready (JSON)")
    register(d, "a")
    lines = [l for l in d.log_text().splitlines() if l.strip()]
    assert lines
    for l in lines:
        o = json.loads(l)
        assert {"time", "level", "msg"} <= set(o), o
    assert any(json.loads(l)["msg"] == "ready" for l in lines)


def test_log_reopened_on_sighup(make_daemon, tmp_path):
    path = str(tmp_path / "bbmgrd.log")
    d = make_daemon(start=False, log={"file": path, "level": "info"})
    d.start(wait=False)
    wait_for(lambda: os.path.exists(path) and "ready" in open(path).read(), what="log")
    os.rename(path, path + ".1")
    d.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: os.path.exists(path) and os.path.getsize(path) > 0,
             what="a new log file after SIGHUP")
    size_old = os.path.getsize(path + ".1")
    register(d, "a")
    d.ok("GET", "/v1/status", uid=USER1)
    assert os.path.getsize(path + ".1") == size_old


# ------------------------------------------------------------------ read routes

def test_get_pool_by_name(daemon):
    p = daemon.ok("GET", "/v1/pools/nvme", uid=USER1)
    assert p["name"] == "nvme"
    pools = {x["name"]: x for x in daemon.ok("GET", "/v1/pools", uid=USER1)["pools"]}
    assert p == pools["nvme"]
    st, e = daemon.request("GET", "/v1/pools/nosuch", uid=USER1)
    assert st == 404 and e["error"]["field"] == "name", e


def test_jobs_by_state(daemon):
    register(daemon, "r1")
    register(daemon, "r2")
    daemon.ok("POST", "/v1/jobs/r2/begin", {}, uid=SLURM_UID)

    def ids(q):
        return sorted(j["id"] for j in daemon.ok("GET", "/v1/jobs" + q, uid=SLURM_UID)["jobs"])
    assert ids("") == ["r1", "r2"]
    assert ids("?state=running") == ["r2"]
    assert ids("?state=registered") == ["r1"]


def test_job_phases_limit(daemon):
    register(daemon, "a")
    made = []
    for _ in range(3):
        p = phase(daemon, "a")
        daemon.ok("POST", "/v1/phases/%d/finish" % p["id"], uid=USER1)
        made.append(p["id"])
    got = daemon.ok("GET", "/v1/jobs/a/phases?limit=2", uid=USER1)
    assert [p["id"] for p in got["phases"]] == made[::-1][:2]
    got = daemon.ok("GET", "/v1/jobs/a/phases", uid=USER1)
    assert [p["id"] for p in got["phases"]] == made[::-1]


# ------------------------------------------------------------------ policies

POLICIES = ["fairshare", "fcfs", "static", "roundrobin", "mindilation", "maxsyseff",
            "minmax:0.5", "mindilation-priority", "roundrobin-priority",
            "maxsyseff-priority", "minmax:0.5-priority", "set10", "set:2",
            "set-fairshare", "priority-sharing", "periodic-throu", "periodic-cong",
            "persched", "harmonia-maxbw", "harmonia-minstall", "harmonia-fairness",
            "harmonia-buffer-eff", "harmonia-priority"]


@pytest.mark.parametrize("pid", POLICIES)
def test_every_policy_grants_inside_bbmgrd(make_daemon, pid):
    """doc/policies.md's ids, each in bbmgrd: a job with hints and an allocation
    asks for a phase and is granted a positive bandwidth."""
    d = make_daemon(policy={"id": pid})
    assert d.ok("GET", "/v1/policy", uid=USER1)["id"] == pid
    register(d, "a", hints={"w_iter": "60s", "io_volume": "1GiB", "phases": 4})
    d.ok("POST", "/v1/jobs/a/allocation", {"capacity": "10GiB"}, uid=SLURM_UID)
    p = phase(d, "a", wait=20)
    if p["state"] != "granted":
        p = d.ok("GET", "/v1/phases/%d?wait=20" % p["id"], uid=USER1, timeout=30)
    assert p["state"] == "granted", p
    assert p["grant"] is not None and p["grant"]["bandwidth"] > 0, p


# ------------------------------------------------------------------ bbmgr calibrate

@pytest.fixture
def small_tmpfs(tmp_path):
    """A 64 MiB tmpfs of its own (root: mount)."""
    if os.geteuid() != 0:
        pytest.skip("mounts a tmpfs: needs root")
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)],
                       capture_output=True, text=True, timeout=30)
    if p.returncode != 0:       # a container without CAP_SYS_ADMIN
        pytest.skip("cannot mount a tmpfs here: " + p.stderr.strip())
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True, timeout=30)


def test_calibrate_on_a_small_tmpfs(make_daemon, small_tmpfs, tmp_path):
    """bbmgr calibrate measures the device, writes a profile bbmgrd loads, and
    leaves nothing behind."""
    import yaml
    out = tmp_path / "profile.yaml"
    p = subprocess.run([BBMGR, "calibrate", "-c", "3", "-t", "0.1", "-s", "4MiB",
                        "-n", "fast", "-o", str(out), str(small_tmpfs)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    prof = yaml.safe_load(out.read_text())
    dev = prof["devices"][0]
    assert dev["name"] == "fast" and len(dev["msca"]) == 3, prof
    assert dev["msca"][0] == 0 and all(m >= 0 for m in dev["msca"]), prof
    assert os.listdir(small_tmpfs) == []
    d = make_daemon(devices=prof["devices"],
                    nodes=[{"names": "bb1", "capacity": "1TiB", "bandwidth": "1 GB/s",
                            "device": "fast", "mount": "/mnt/bb", "pool": "nvme"}])
    assert [n["name"] for n in d.ok("GET", "/v1/nodes", uid=USER1)["nodes"]] == ["bb1"]
