# SPDX-License-Identifier: GPL-2.0-or-later
"""Capacity: a buffer is a reservation.  Without project quotas (this kernel has
none), bbmgrd measures what each buffer directory holds (the blocks of every file
below it, hard links once, sparse files by their blocks) in bounded steps, shows
it in GET /v1/jobs/ID (`bbmgr job ID`) and GET /v1/persistent/NAME, and acts as
capacity.over says: refuse (the default) answers the job's phase requests with the
figures until it frees space; hold accepts them but keeps them waiting, held with
the reason (the "hold" of the job and of the phase, `bbmgr jobs`), until the buffer
is back under; log only warns.  doc/security.md, Capacity.

On buffer nodes served by agents (bbnoded), each agent measures its directories
and reports the figures; bbmgrd sums them over the buffer's nodes and reacts the
same way (the agent cases at the end).

The user writes into the buffer as uid 1001 (a child process that dropped root);
each test waits on the measurement the daemon shows, never on a fixed delay.
Runs as root (the daemon acts as the users); skipped otherwise.
"""
import os
import signal
import subprocess

import pytest

from harmonia_test.wait import wait_for
from conftest import SLURM_UID, USER1, register
from test_mover import GID1
from test_nodes import BBMGR, agent_cluster, agents  # noqa: F401 (a fixture)
from test_nodes import new_job as agent_job
from test_security import as_user

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the capacity tests need root")

MiB = 1 << 20


def cap_daemon(make_daemon, base, **extra):
    """bbmgrd with its embedded mover, two nodes sharing one mount."""
    mount = os.path.join(base, "bb")
    os.makedirs(mount, exist_ok=True)
    d = make_daemon(
        stage={"mode": "mover"}, mover={"threads": 2},
        policy={"id": "fairshare", "overprovision": 1.0},
        pools=[{"name": "nvme", "granularity": "1MiB"}],
        nodes=[{"names": "bb[01-02]", "capacity": "1TiB", "bandwidth": "2 GB/s",
                "mount": mount, "pool": "nvme"}], **extra)
    d.mount = mount
    return d


def fill(path, name, size):
    """As the user: write size bytes of data (real blocks) into path/name."""
    def run():
        with open(os.path.join(path, name), "wb") as f:
            for _ in range(size // MiB):
                f.write(b"\x5a" * MiB)
            os.fsync(f.fileno())
    as_user(USER1, GID1, run)


def remove(path, name):
    as_user(USER1, GID1, os.unlink, os.path.join(path, name))


def usage_of(d, path):
    return d.ok("GET", path, uid=USER1)["usage"]


def wait_usage(d, path, pred, what):
    return wait_for(lambda: (lambda u: u if u and pred(u) else None)(usage_of(d, path)),
                    what, report=lambda: "%s\n%s" % (usage_of(d, path), d.log_text()[-2000:]))


def phase(d, jobid):
    return d.request("POST", "/v1/jobs/%s/phases" % jobid,
                     {"volume": "1MiB", "direction": "write"}, uid=USER1)


def finish(d, p):
    d.ok("POST", "/v1/phases/%d/finish" % p["id"], {"bytes": MiB}, uid=USER1)


def job_with_buffer(d, jobid, capacity):
    register(d, jobid, uid=USER1, gid=GID1)
    a = d.ok("POST", "/v1/jobs/%s/allocation" % jobid, {"capacity": capacity}, uid=SLURM_UID,
             expect=(201,))
    return a["nodes"][0]["path"]


def freed_then_granted(d, jobid, path, name):
    """The user deletes path/name: once measured back under, a new phase of jobid
    is granted."""
    remove(path, name)
    wait_usage(d, "/v1/jobs/" + jobid, lambda u: not u["over"], "the job to be back under")
    st, p = phase(d, jobid)
    assert st == 201 and p["state"] == "granted" and p.get("hold") is None, p
    finish(d, p)
    assert d.proc.poll() is None


def test_job_over_capacity_refused(make_daemon, tmp_base):
    """A job with an 8 MiB buffer writes 24 MiB into it: its next phase request is
    refused (507) naming both figures, `bbmgr job` shows the use over the capacity;
    once the user deletes the excess its phases are granted again.  Hard links
    count once and a sparse file by its blocks."""
    d = cap_daemon(make_daemon, tmp_base)
    bb = job_with_buffer(d, "cap1", "8MiB")
    fill(bb, "a", 4 * MiB)
    as_user(USER1, GID1, os.link, os.path.join(bb, "a"), os.path.join(bb, "a2"))
    as_user(USER1, GID1, lambda: open(os.path.join(bb, "sparse"), "wb").truncate(64 << 30))
    u = wait_usage(d, "/v1/jobs/cap1", lambda u: u["used"] >= 4 * MiB,
                   "the 4 MiB written to be measured")
    assert u["used"] < 5 * MiB and not u["over"] and u["capacity"] == 8 * MiB
    st, p = phase(d, "cap1")
    assert st == 201 and p["state"] == "granted", p
    finish(d, p)
    fill(bb, "b", 20 * MiB)
    # A measuring round may run while "b" is being written: wait for one that saw it all.
    u = wait_usage(d, "/v1/jobs/cap1", lambda u: u["used"] >= 24 * MiB,
                   "the 24 MiB written to be measured")
    assert u["over"], u
    st, e = phase(d, "cap1")
    assert st == 507, (st, e)
    text = str(e)
    assert "over its capacity" in text and str(8 * MiB) in text and "capacity.over" in text
    assert "capacity: job cap1 holds" in d.log_text()
    freed_then_granted(d, "cap1", bb, "b")


def persistent_over(d, name, jobid):
    """Persistent buffer name (4 MiB), used by job jobid, filled with 12 MiB and
    measured over: its path."""
    b = d.ok("POST", "/v1/persistent", {"name": name, "capacity": "4MiB", "pool": "nvme"},
             uid=USER1, expect=(201,))
    path = b["nodes"][0]["path"]
    register(d, jobid, uid=USER1, gid=GID1)
    d.ok("POST", "/v1/persistent/%s/use" % name, {"job": jobid}, uid=USER1)
    fill(path, "big", 12 * MiB)
    u = wait_usage(d, "/v1/persistent/" + name, lambda u: u["used"] >= 12 * MiB,
                   "the 12 MiB written to be measured")
    assert u["over"] and u["capacity"] == 4 * MiB, u
    return path


def test_persistent_over_capacity_refused(make_daemon, tmp_base):
    """A persistent buffer filled past its capacity refuses the phases of the jobs
    that use it, and shows its use."""
    d = cap_daemon(make_daemon, tmp_base)
    persistent_over(d, "pcap", "pj")
    st, e = phase(d, "pj")
    assert st == 507 and "persistent buffer pcap" in str(e), (st, e)


def test_over_capacity_logged_only(make_daemon, tmp_base):
    """capacity.over: log: the use is shown and warned about, phases go on."""
    d = cap_daemon(make_daemon, tmp_base, capacity={"over": "log"})
    bb = job_with_buffer(d, "cap2", "2MiB")
    fill(bb, "a", 6 * MiB)
    wait_usage(d, "/v1/jobs/cap2", lambda u: u["over"], "the job to be over its capacity")
    st, p = phase(d, "cap2")
    assert st == 201 and p["state"] == "granted", p
    assert "capacity: job cap2 holds" in d.log_text()


def phase_state(d, p):
    return d.ok("GET", "/v1/phases/%d" % p["id"], uid=USER1)


def wait_granted(d, p, what):
    """The held phase p, once granted without a new request."""
    return wait_for(lambda: (lambda q: q if q["state"] == "granted" else None)(phase_state(d, p)),
                    "the held phase to be granted once " + what,
                    report=lambda: "%s\n%s" % (phase_state(d, p), d.log_text()[-2000:]))


def test_job_over_capacity_held(make_daemon, tmp_base):
    """capacity.over: hold: a job with an 8 MiB buffer writes 24 MiB into it: its
    next phase request is accepted (201) but waits, held, with the reason naming
    both figures, in GET /v1/jobs/ID ("hold"), in the phase and in `bbmgr jobs`
    (PHASE "held" and a "hold:" line); once the user deletes the excess the held
    phase is granted without a new request."""
    d = cap_daemon(make_daemon, tmp_base, capacity={"over": "hold"})
    bb = job_with_buffer(d, "hold1", "8MiB")
    assert d.ok("GET", "/v1/jobs/hold1", uid=USER1)["hold"] is None
    fill(bb, "a", 24 * MiB)
    u = wait_usage(d, "/v1/jobs/hold1", lambda u: u["used"] >= 24 * MiB,
                   "the 24 MiB written to be measured")
    assert u["over"], u
    st, p = phase(d, "hold1")
    assert st == 201 and p["state"] == "waiting", (st, p)
    why = p["hold"]
    assert "over its capacity" in why and str(8 * MiB) in why and str(u["used"]) in why, p
    assert "capacity.over: hold" in why, p
    j = d.ok("GET", "/v1/jobs/hold1", uid=USER1)
    assert j["hold"] == why and j["phase"]["hold"] == why, j
    out = bbmgr_cli(d, "jobs")
    row = [l for l in out.splitlines() if l.startswith("hold1 ")]
    assert row and row[0].split()[6] == "held", out
    assert "  hold: " + why in out, out
    assert "capacity: phase %d of job hold1 held" % p["id"] in d.log_text()
    # still held at the next measure: nothing granted it meanwhile
    at = u["measured"]
    wait_usage(d, "/v1/jobs/hold1", lambda u: u["measured"] > at, "a later measure")
    assert phase_state(d, p)["state"] == "waiting"
    remove(bb, "a")
    g = wait_granted(d, p, "the job is back under")
    assert g["hold"] is None, g
    assert d.ok("GET", "/v1/jobs/hold1", uid=USER1)["hold"] is None
    finish(d, g)
    st, p = phase(d, "hold1")
    assert st == 201 and p["state"] == "granted" and p["hold"] is None, p
    finish(d, p)
    assert d.proc.poll() is None


def test_held_phase_stays_held_across_restarts(make_daemon, tmp_base):
    """A held phase is stored held: after bbmgrd is killed and started again, the
    phase is still waiting, held (with a reason that says the buffers are measured
    again), and the first measure since the start holds it with the figures; it is
    granted only once the user frees the space, not by the restart."""
    d = cap_daemon(make_daemon, tmp_base, capacity={"over": "hold"})
    bb = job_with_buffer(d, "hold3", "4MiB")
    fill(bb, "a", 12 * MiB)
    wait_usage(d, "/v1/jobs/hold3", lambda u: u["over"], "the job to be over its capacity")
    st, p = phase(d, "hold3")
    assert st == 201 and p["state"] == "waiting" and p["hold"], (st, p)
    d.kill()
    d.start()
    q = phase_state(d, p)
    assert q["state"] == "waiting" and q["hold"], q
    u = wait_usage(d, "/v1/jobs/hold3", lambda u: u["over"] and u["used"] >= 12 * MiB,
                   "the first measure after the restart")
    q = phase_state(d, p)
    assert q["state"] == "waiting" and str(u["used"]) in q["hold"], q
    d.kill(signal.SIGTERM)
    d.start()
    assert phase_state(d, p)["state"] == "waiting"
    remove(bb, "a")
    g = wait_granted(d, p, "the job is back under after the restarts")
    assert g["hold"] is None, g
    finish(d, g)
    assert d.proc.poll() is None


def test_held_phase_cancelled(make_daemon, tmp_base):
    """A held phase can be given up (finish): it is cancelled, the job's next phase
    after it is back under is granted, and the scheduler holds nothing of it."""
    d = cap_daemon(make_daemon, tmp_base, capacity={"over": "hold"})
    bb = job_with_buffer(d, "hold2", "2MiB")
    fill(bb, "a", 6 * MiB)
    wait_usage(d, "/v1/jobs/hold2", lambda u: u["over"], "the job to be over its capacity")
    st, p = phase(d, "hold2")
    assert st == 201 and p["hold"], p
    c = d.ok("POST", "/v1/phases/%d/finish" % p["id"], {}, uid=USER1)
    assert c["state"] == "cancelled", c
    freed_then_granted(d, "hold2", bb, "a")


def test_persistent_over_capacity_held(make_daemon, tmp_base):
    """capacity.over: hold: the phases of a job using an over-full persistent
    buffer wait, held, naming the buffer; granted once it is back under."""
    d = cap_daemon(make_daemon, tmp_base, capacity={"over": "hold"})
    path = persistent_over(d, "phold", "phj")
    st, p = phase(d, "phj")
    assert st == 201 and p["state"] == "waiting", (st, p)
    assert "persistent buffer phold" in p["hold"], p
    remove(path, "big")
    g = wait_granted(d, p, "the buffer is back under")
    finish(d, g)


# ------------------------------------------------------------------ agent mode
# Buffer nodes served by bbnoded (test_nodes.py's cluster: a real bbmgrd and three
# real agents): each agent measures its buffer directories and reports the figures
# ("usage" of its report); bbmgrd sums them over the job's nodes.

def bbmgr_cli(d, *args):
    r = subprocess.run([BBMGR, "-u", "http://127.0.0.1:%d" % d.port] + list(args),
                       capture_output=True, text=True,
                       env=dict(os.environ, HARMONIA_MUNGE_SOCKET=d.munge.socket))
    assert r.returncode == 0, r.stderr
    return r.stdout


def agent_job_over(d, jobid):
    """A job striped over two agents' nodes with an 8 MiB buffer, 6 MiB written on
    each: (its paths, its nodes, its usage once the 12 MiB are counted)."""
    paths, names = agent_job(d, jobid, nodes=2, capacity="8MiB")
    assert len(set(names)) == 2
    fill(paths[0], "a", 6 * MiB)
    fill(paths[1], "b", 6 * MiB)
    u = wait_usage(d, "/v1/jobs/%s" % jobid, lambda u: u["used"] >= 12 * MiB,
                   "the agents' figures to count the 12 MiB written")
    return paths, names, u


def test_agent_job_over_capacity_refused(make_daemon, agents, tmp_base):
    """A job striped over two agents' nodes, with an 8 MiB buffer: its user writes
    6 MiB on each node, the sum (12 MiB) is shown and its phases are refused (507)
    with the figures; after deleting one file it is back under and granted."""
    d, _ = agent_cluster(make_daemon, agents, tmp_base)
    paths, names, u = agent_job_over(d, "acap1")
    assert u["over"] and u["capacity"] == 8 * MiB, u
    st, e = phase(d, "acap1")
    assert st == 507, (st, e)
    text = str(e)
    assert "over its capacity" in text and str(8 * MiB) in text and "capacity.over" in text
    assert "capacity: job acap1 holds" in d.log_text()
    # bbmgr nodes: USED stays what is allocated (1 GiB: the pool's granularity),
    # MEASURED is what the node's buffer directories hold
    out = bbmgr_cli(d, "nodes")
    rows = {l.split()[0]: l.split() for l in out.splitlines()[1:]}
    assert out.splitlines()[0].split()[3:6] == ["CAPACITY", "USED", "MEASURED"], out
    for n in names:
        assert rows[n][5:7] == ["1.00", "GiB"], out
        m = d.ok("GET", "/v1/nodes/%s" % n, uid=SLURM_UID)["measured"]
        assert 6 * MiB <= m < 7 * MiB, (n, m)
        assert rows[n][8] == "MiB" and 6 <= float(rows[n][7]) < 7, out
    remove(paths[1], "b")
    u = wait_usage(d, "/v1/jobs/acap1", lambda u: not u["over"], "the job to be back under")
    assert 6 * MiB <= u["used"] < 8 * MiB, u
    st, p = phase(d, "acap1")
    assert st == 201, (st, p)
    assert d.proc.poll() is None


def test_agent_persistent_over_capacity_refused(make_daemon, agents, tmp_base):
    """A persistent buffer on an agent's node filled past its capacity refuses the
    phases of the jobs that use it, and shows its use."""
    d, _ = agent_cluster(make_daemon, agents, tmp_base)
    b = d.ok("POST", "/v1/persistent", {"name": "apcap", "capacity": "4MiB", "pool": "nvme"},
             uid=USER1, expect=(201,))
    path = b["nodes"][0]["path"]
    wait_for(lambda: os.path.isdir(path), "its agent to make " + path)
    register(d, "apj", uid=USER1, gid=GID1)
    d.ok("POST", "/v1/persistent/apcap/use", {"job": "apj"}, uid=USER1)
    fill(path, "big", 12 * MiB)
    u = wait_usage(d, "/v1/persistent/apcap", lambda u: u["used"] >= 12 * MiB,
                   "the 12 MiB written to be measured")
    assert u["over"] and u["capacity"] == 4 * MiB, u
    st, e = phase(d, "apj")
    assert st == 507 and "persistent buffer apcap" in str(e), (st, e)


def test_agent_job_over_capacity_held(make_daemon, agents, tmp_base):
    """capacity.over: hold on agents' nodes: a job striped over two of them with
    an 8 MiB buffer writes 6 MiB on each: its phase request waits, held, with the
    summed figure; after deleting one file the held phase is granted."""
    d, _ = agent_cluster(lambda **kw: make_daemon(capacity={"over": "hold"}, **kw), agents,
                         tmp_base)
    paths, names, u = agent_job_over(d, "ahold1")
    st, p = phase(d, "ahold1")
    assert st == 201 and p["state"] == "waiting", (st, p)
    why = p["hold"]
    assert str(u["used"]) in why and str(8 * MiB) in why and "capacity.over: hold" in why, p
    assert d.ok("GET", "/v1/jobs/ahold1", uid=USER1)["hold"] == why
    assert "  hold: " + why in bbmgr_cli(d, "jobs")
    remove(paths[1], "b")
    g = wait_granted(d, p, "the job is back under")
    finish(d, g)
    assert d.proc.poll() is None
