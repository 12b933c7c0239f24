# SPDX-License-Identifier: GPL-2.0-or-later
"""Buffer-node agents: a real bbmgrd and real bbnoded processes on loopback, each
agent with its own directory as its device (doc/bbnoded.md).

Runs as root (the agents act as uid 1001 with setfsuid); skipped otherwise.
"""
import os
import signal
import stat
import subprocess
import threading
import time

import pytest

from harmonia_test.wait import scaled, wait_for
from conftest import BBMGR, BUILDDIR, SLURM_UID, USER1, register, sanitizer_reports
from test_mover import (GID1, MiB, build_tree, compare_trees, mkdirs, partials, sha, stage,
                        wait_bytes, wait_xfer, write, xfer)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the agent tests need root")

BBNODED = os.path.join(BUILDDIR, "bbmgr", "bbnoded")
NODES = ("bb01", "bb02", "bb03")


class Agent:
    def __init__(self, d, node):
        self.d = d
        self.node = node
        self.log = os.path.join(d.dir, "bbnoded-%s.log" % node)
        self.proc = None

    def start(self, extra=()):
        self.logf = open(self.log, "a")
        self.proc = subprocess.Popen([BBNODED, "-c", self.d.config, "-n", self.node]
                                     + list(extra or getattr(self, "quiet", ())),
                                     stdout=self.logf, stderr=subprocess.STDOUT)
        return self

    def log_text(self):
        with open(self.log) as f:
            return f.read()

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            if sig in (signal.SIGKILL, signal.SIGTERM):
                self.proc.wait(timeout=20)
        rc = self.proc.returncode if self.proc else None
        if sig in (signal.SIGKILL, signal.SIGTERM):
            self.proc = None
        return rc


@pytest.fixture
def agents():
    made = []
    yield made
    bad = []
    for a in made:
        if a.proc and a.proc.poll() is None:
            a.proc.send_signal(signal.SIGCONT)
            a.kill(signal.SIGTERM)
        if os.path.exists(a.log):
            bad += sanitizer_reports(a.log, a.log_text())
    assert not bad, "\n".join(bad)


def agent_cluster(make_daemon, agents, base, start=NODES, down_after="30s", extra=None,
                  platform=None, limits=None, **mover):
    root = os.path.join(base, "bbnodes")
    for n in NODES:
        os.makedirs(os.path.join(root, n), mode=0o755, exist_ok=True)
    conf = {"threads": 4, "chunk": "1MiB", "depth": 16}
    conf.update(mover)
    d = make_daemon(
        stage={"mode": "mover"}, mover=conf,
        agents={"down_after": down_after, "interval": "0.2s"},
        limits=dict({"max_body": "64KiB", "connection_timeout": "5s", "max_wait": "10s"},
                    **(limits or {})),
        pools=[{"name": "nvme", "granularity": "1GiB"}],
        platform=platform or {"compute_nodes": 1024, "node_bandwidth": "1 GB/s",
                              "pfs_bandwidth": "100 GB/s"},
        nodes=[{"names": "bb[01-03]", "capacity": "1TiB", "bandwidth": "1 GB/s",
                "mount": root + "/%n", "pool": "nvme", "agent": True}])
    d.root = root
    by_name = {}
    for n in NODES:
        a = Agent(d, n)
        agents.append(a)
        by_name[n] = a
        # the device's counters as the test says (a quiet device unless it gives its
        # own): the machine's other I/O must not move placement or grants here
        stats = os.path.join(base, "diskstats-" + n)
        FakeDevice(stats, os.path.join(root, n))
        a.quiet = ("--diskstats", stats)
        if n in start:
            a.start((extra or {}).get(n, ()))
    for n in start:
        wait_agent(d, n, "up")
    return d, by_name


def node(d, name):
    return d.ok("GET", "/v1/nodes/%s" % name, uid=SLURM_UID)


def wait_agent(d, name, state, timeout=None):
    return wait_for(lambda: (lambda n: n if n["agent"]["state"] == state else None)(
        node(d, name)), "the agent of %s %s" % (name, state), timeout,
        report=lambda: "%s\n%s" % (node(d, name), d.log_text()[-3000:]))


def new_job(d, jobid, nodes=1, capacity="1GiB", wait=True):
    register(d, jobid, uid=USER1, gid=GID1)
    a = d.ok("POST", "/v1/jobs/%s/allocation" % jobid, {"capacity": capacity, "nodes": nodes},
             uid=SLURM_UID, expect=(201,))
    paths = [n["path"] for n in a["nodes"]]
    if wait:
        for p in paths:
            wait_for(lambda: os.path.isdir(p), "its agent to make " + p)
    return paths, [n["name"] for n in a["nodes"]]


def assert_only_agents_copied(d):
    """bbmgrd's own mover copied nothing: every byte of harmonia_mover_bytes_total
    is one of an agent's (harmonia_agent_bytes_total)."""
    total = d.metric("harmonia_mover_bytes_total")
    agents = sum(d.metric('harmonia_agent_bytes_total{node="%s"}' % n) for n in NODES)
    assert total > 0 and total == agents, (total, agents)


def owned_dir(path):
    st = os.stat(path)
    return (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (USER1, GID1, 0o700)


def test_job_striped_over_two_agents(make_daemon, agents, tmp_base):
    """Each agent makes the job's directory on its own device (the job's owner, 0700),
    runs the stage-in and the stage-out of the data placed on it, and removes the
    directory when the job ends; bbmgrd's own mover copies nothing."""
    d, _ = agent_cluster(make_daemon, agents, tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    build_tree(os.path.join(pfs, "a"))
    mkdirs(os.path.join(pfs, "b"))
    write(os.path.join(pfs, "b", "big"), os.urandom(9 * MiB + 7), 0o604)
    paths, names = new_job(d, "s1", nodes=2, wait=False)
    assert len(paths) == 2 and len(set(names)) == 2
    for p, n in zip(paths, names):
        assert p == os.path.join(d.root, n, "s1")
        wait_for(lambda: os.path.isdir(p), "the agent of %s to make %s" % (n, p))
        assert owned_dir(p)
    t1 = stage(d, "s1", "stage_in", os.path.join(pfs, "a"), paths[0] + "/a")
    t2 = stage(d, "s1", "stage_in", os.path.join(pfs, "b"), paths[1] + "/b")
    for t in (t1, t2):
        x = wait_xfer(d, t)
        assert x["state"] == "done", x["message"]
    assert compare_trees(os.path.join(pfs, "a"), paths[0] + "/a", owner=(USER1, GID1)) == 5
    assert compare_trees(os.path.join(pfs, "b"), paths[1] + "/b", owner=(USER1, GID1)) == 1
    # the copies were the agents', not bbmgrd's
    assert_only_agents_copied(d)
    logs = {a.node: a.log_text() for a in agents}
    assert "stage_in %d of job s1" % t1 in logs[names[0]]
    assert "stage_in %d of job s1" % t2 in logs[names[1]]
    # the job writes on both nodes, then both are staged out to the PFS
    write(os.path.join(paths[1], "b", "result"), os.urandom(3 * MiB), 0o640)
    o1 = stage(d, "s1", "stage_out", paths[0] + "/a", os.path.join(pfs, "out-a"))
    o2 = stage(d, "s1", "stage_out", paths[1] + "/b", os.path.join(pfs, "out-b"))
    for t in (o1, o2):
        x = wait_xfer(d, t)
        assert x["state"] == "done", x["message"]
    wait_for(lambda: all(d.ok("GET", "/v1/transfers/%d" % t, uid=SLURM_UID)["durable"]
                         for t in (o1, o2)), "the stage-outs to be durable")
    assert compare_trees(paths[0] + "/a", os.path.join(pfs, "out-a")) == 5
    assert compare_trees(paths[1] + "/b", os.path.join(pfs, "out-b")) == 2
    assert sha(os.path.join(pfs, "b", "big")) == sha(os.path.join(pfs, "out-b", "big"))
    # device status reached bbmgrd
    n = node(d, names[0])["agent"]
    assert n["state"] == "up" and n["status"]["free_bytes"] > 0
    text = d.request("GET", "/metrics", auth=False)[1]
    assert 'harmonia_agent_up{node="%s"} 1' % names[0] in text
    # the end of the job: each agent removes its directory
    d.ok("DELETE", "/v1/jobs/s1", uid=SLURM_UID)
    for p in paths:
        wait_for(lambda: not os.path.exists(p), "the removal of %s:\n%s" % (
            p, "".join(a.log_text()[-1500:] for a in agents)))
    assert not partials(d.root)


def test_stage_in_spread_over_the_jobs_nodes_and_gathered_back(make_daemon, agents, tmp_base):
    """A spread stage-in into a 3-node allocation runs one part on each node's agent:
    the files go to the nodes by size (largest first, each to the node with the
    fewest bytes so far), and the directory on the first node names every file (the
    others' as symbolic links to them), so the job finds the whole tree at
    $HARMONIA_BB/in.  A spread stage-out gathers each node's files back, the links
    into the job's nodes left to the node that holds the data: the round trip gives
    the source back, byte for byte."""
    d, _ = agent_cluster(make_daemon, agents, tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    src = os.path.join(pfs, "in")
    mkdirs(pfs)
    build_tree(src)     # 20 MiB, 4 MiB and small files, links, a FIFO
    sizes = {"m12": 12, "m10": 10, "m8": 8, "m6": 6}
    mkdirs(os.path.join(src, "data"))
    for name, mib in sizes.items():
        write(os.path.join(src, "data", name), os.urandom(mib * MiB), 0o640)
    paths, names = new_job(d, "sp", nodes=3, capacity="3GiB")
    r = d.ok("POST", "/v1/jobs/sp/stage_in", {"source": src, "destination": paths[0] + "/in",
                                              "type": "directory", "spread": True},
             uid=SLURM_UID, expect=(201,))
    assert (r["part"], r["nparts"], r["destination"]) == (0, 3, paths[0] + "/in")
    xs = d.ok("GET", "/v1/jobs/sp/stage_in", uid=SLURM_UID)["transfers"]
    assert [(x["part"], x["destination"]) for x in xs] == \
        [(k, paths[k] + "/in") for k in range(3)]
    for x in xs:
        assert wait_xfer(d, x["id"])["state"] == "done", x
    # largest first, each to the node with the fewest bytes so far:
    # twenty -> 0, m12 -> 1, m10 -> 2, m8 -> 2, m6 -> 1, four -> 1, one, rootfile -> 0 ...
    on = {"sub/deeper/twenty": 0, "data/m12": 1, "data/m10": 2, "data/m8": 2, "data/m6": 1,
          "sub/four": 1}
    for rel, k in on.items():
        real = os.path.join(paths[k], "in", rel)
        assert os.path.isfile(real) and not os.path.islink(real), rel
        assert sha(real) == sha(os.path.join(src, rel))
        for other in range(1, 3):
            if other != k:
                assert not os.path.lexists(os.path.join(paths[other], "in", rel)), rel
        seen = os.path.join(paths[0], "in", rel)
        if k:
            assert os.readlink(seen) == real, rel
            assert os.lstat(seen).st_uid == USER1
        assert sha(seen) == sha(os.path.join(src, rel))
    used = [sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(p + "/in")
                for f in fs if not os.path.islink(os.path.join(dp, f))) for p in paths]
    assert max(used) - min(used) <= 4 * MiB + 100, used
    # every part ran on its node's agent
    logs = {a.node: a.log_text() for a in agents}
    for x, n in zip(xs, names):
        assert "stage_in %d of job sp" % x["id"] in logs[n]
    assert_only_agents_copied(d)
    # the job writes on each of its nodes; both trees are gathered back
    for k, p in enumerate(paths):
        mkdirs(os.path.join(p, "out"))
        write(os.path.join(p, "out", "rank%d" % k), os.urandom(MiB + k), 0o640, uid=USER1,
              gid=GID1)
    back = stage(d, "sp", "stage_out", paths[0] + "/in", os.path.join(pfs, "back"))
    out = d.ok("POST", "/v1/jobs/sp/stage_out", {"source": paths[0] + "/out",
                                                 "destination": os.path.join(pfs, "out"),
                                                 "type": "directory", "spread": True},
               uid=SLURM_UID, expect=(201,))["id"]
    xs = d.ok("GET", "/v1/jobs/sp/stage_out", uid=SLURM_UID)["transfers"]
    assert len(xs) == 4      # back (not spread: the links are copied as links), out x 3
    for x in xs:
        x = wait_xfer(d, x["id"])
        assert x["state"] == "done", x["message"]
    assert sorted(os.listdir(os.path.join(pfs, "out"))) == ["rank0", "rank1", "rank2"]
    for k, p in enumerate(paths):
        assert sha(os.path.join(p, "out", "rank%d" % k)) == \
            sha(os.path.join(pfs, "out", "rank%d" % k))
    assert os.readlink(os.path.join(pfs, "back", "data", "m12")) == paths[1] + "/in/data/m12"
    # spread: the round trip gives the source back
    gather = d.ok("POST", "/v1/jobs/sp/stage_out", {"source": paths[0] + "/in",
                                                    "destination": os.path.join(pfs, "again"),
                                                    "type": "directory", "spread": True},
                  uid=SLURM_UID, expect=(201,))
    assert gather["nparts"] == 3 and out + 3 == gather["id"]
    for x in d.ok("GET", "/v1/jobs/sp/stage_out", uid=SLURM_UID)["transfers"]:
        assert wait_xfer(d, x["id"])["state"] == "done", x
    assert compare_trees(src, os.path.join(pfs, "again")) == 9
    for rel in on:
        assert not os.path.islink(os.path.join(pfs, "again", rel)), rel
        assert sha(os.path.join(pfs, "again", rel)) == sha(os.path.join(src, rel))
    d.ok("DELETE", "/v1/jobs/sp", uid=SLURM_UID)
    for p in paths:
        wait_for(lambda: not os.path.exists(p), "the removal of " + p)


def stage_in_started(make_daemon, agents, tmp_base, jobid, files, max_rate):
    """A cluster of agents copying at max_rate (depth 4), and job 'jobid' whose stage-in
    of 'files' files of 8 MiB (pfs/in) to its first buffer node has been asked for:
    (d, agents by name, pfs, the job's paths, its node names, the transfer id)."""
    d, by = agent_cluster(make_daemon, agents, tmp_base, max_rate=max_rate, depth=4)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(os.path.join(pfs, "in"))
    for i in range(files):
        write(os.path.join(pfs, "in", "f%d" % i), os.urandom(8 * MiB), 0o640)
    paths, names = new_job(d, jobid)
    tid = stage(d, jobid, "stage_in", os.path.join(pfs, "in"), paths[0] + "/in")
    return d, by, pfs, paths, names, tid


def written_mid_copy(root, at_least):
    """The partial files under root once the copy has written at_least bytes into
    root (allocated blocks of its files, partial or finished) and a file is still
    partial, else None."""
    found, written = partials(root), 0
    for dirpath, _, filenames in os.walk(root):
        for n in filenames:
            try:
                written += os.lstat(os.path.join(dirpath, n)).st_blocks * 512
            except FileNotFoundError:   # renamed into place meanwhile
                pass
    return found if found and written >= at_least else None


def test_agent_killed_during_stage_in(make_daemon, agents, tmp_base):
    """SIGKILL of the agent mid-copy: its next process is given the same task (same
    id) and runs it again from the start; nothing partial or corrupt is left."""
    d, by, pfs, paths, names, tid = stage_in_started(make_daemon, agents, tmp_base, "k1",
                                                     files=4, max_rate="40 MB/s")
    # mid-copy as the buffer node's disk shows it: the agent records progress every
    # second (REPORT_SECONDS), longer than these 32 MiB take at 40 MB/s, so bbmgrd's
    # bytes_done may go from its first figure straight to the end
    wait_for(lambda: written_mid_copy(paths[0], 8 * MiB), "8 MiB of transfer %d written" % tid,
             report=lambda: "%s\n%s" % (xfer(d, tid), d.log_text()[-3000:]))
    a = by[names[0]]
    a.kill()
    assert xfer(d, tid)["state"] == "running"
    assert partials(paths[0]), "expected a partial file mid-transfer"
    a.start()
    x = wait_xfer(d, tid)
    assert x["state"] == "done", x
    assert x["bytes_done"] == x["bytes_total"] == 32 * MiB
    assert compare_trees(os.path.join(pfs, "in"), paths[0] + "/in", owner=(USER1, GID1)) == 4
    assert not partials(paths[0])
    assert "restarted" in d.log_text()


def test_bbmgrd_restarted_while_agents_copy(make_daemon, agents, tmp_base):
    """bbmgrd killed mid-copy and restarted: the transfer is dispatched again with
    its id; the agent that still runs it does not start it twice, and its result
    reaches the new bbmgrd."""
    d, by, pfs, paths, names, tid = stage_in_started(make_daemon, agents, tmp_base, "r1",
                                                     files=3, max_rate="30 MB/s")
    wait_bytes(d, tid, 4 * MiB)
    d.restart()
    x = wait_xfer(d, tid)
    assert x["state"] == "done", x
    assert compare_trees(os.path.join(pfs, "in"), paths[0] + "/in", owner=(USER1, GID1)) == 3
    log = by[names[0]].log_text()
    assert log.count("stage_in %d of job r1" % tid) == 1, log[-3000:]
    assert owned_dir(paths[0])


def test_allocation_ready_once_its_agents_made_the_directories(make_daemon, agents,
                                                              tmp_base):
    """An allocation on agents' nodes says "ready": false until every agent of it
    has applied a directory set holding the job's directory (a job must not start
    before: burst_buffer/harmonia waits for it), then true, with the directories
    there."""
    d, by = agent_cluster(make_daemon, agents, tmp_base)
    for a in by.values():
        a.kill(signal.SIGSTOP)      # silent (within down_after): nothing made
    try:
        paths, names = new_job(d, "r1", nodes=3, wait=False)
        a = d.ok("GET", "/v1/jobs/r1/allocation", uid=SLURM_UID)
        assert a["ready"] is False, a
        time.sleep(0.5)
        assert d.ok("GET", "/v1/jobs/r1/allocation", uid=SLURM_UID)["ready"] is False
        assert not any(os.path.exists(p) for p in paths)
        by[names[0]].kill(signal.SIGCONT)
        for p in paths[:1]:
            wait_for(lambda: os.path.isdir(p), "its agent to make " + p)
        time.sleep(0.5)
        assert d.ok("GET", "/v1/jobs/r1/allocation", uid=SLURM_UID)["ready"] is False
    finally:
        for a in by.values():
            a.kill(signal.SIGCONT)
    a = wait_for(lambda: (lambda a: a["ready"] and a)(
        d.ok("GET", "/v1/jobs/r1/allocation", uid=SLURM_UID)), "the allocation ready")
    assert all(os.path.isdir(p) and owned_dir(p) for p in paths)


def test_agent_down_then_back(make_daemon, agents, tmp_base):
    """An agent that stops reporting is marked down after agents.down_after: its node
    is drained with the reason, a stage-out whose data was only there fails saying
    so, new allocations go elsewhere.  When it reports again its node is used again,
    after its directories were checked: orphans removed, live jobs' kept."""
    d, by = agent_cluster(make_daemon, agents, tmp_base, down_after="1.5s")
    paths, names = new_job(d, "d1")
    live, _ = new_job(d, "d2")
    for job in ("d1", "d2"):    # running: their buffers stay where they are
        d.ok("POST", "/v1/jobs/%s/begin" % job, {}, uid=SLURM_UID)
    write(os.path.join(paths[0], "data"), os.urandom(MiB), 0o600)
    bad = by[names[0]]
    # a directory bbmgrd knows nothing of, on the same device
    orphan = os.path.join(d.root, names[0], "gone-job")
    mkdirs(orphan, 0o700)
    write(os.path.join(orphan, "x"), b"x", 0o600)
    bad.kill(signal.SIGSTOP)
    n = wait_for(lambda: node(d, names[0])["state"] == "drained" and node(d, names[0]),
                 "the node to be drained")
    assert n["agent"]["state"] == "down"
    assert "agent down" in n["reason"], n
    # bbmgr status says so, with the reason
    r = subprocess.run([BBMGR, "-u", "http://127.0.0.1:%d" % d.port, "-S", d.munge.socket,
                        "status"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    assert "agents: 3, 2 up, 1 down" in r.stdout, r.stdout
    assert "%s: buffer node agent down: no report for" % names[0] in r.stdout, r.stdout
    tid = stage(d, "d1", "stage_out", paths[0] + "/data", os.path.join(tmp_base, "out"),
                "file")
    x = wait_xfer(d, tid)
    assert x["state"] == "failed", x
    assert "buffer node %s down" % names[0] in x["message"]
    assert "stage-out data lost" in x["message"]
    # no new placement on it
    for i in range(4):
        p, ns = new_job(d, "n%d" % i)
        assert names[0] not in ns
    bad.proc.send_signal(signal.SIGCONT)
    n = wait_agent(d, names[0], "up")
    wait_for(lambda: node(d, names[0])["state"] == "up", "the node to be back")
    wait_for(lambda: not os.path.exists(orphan), "the orphan to be removed")
    assert os.path.exists(os.path.join(paths[0], "data"))   # job d1 still lives
    if live[0].startswith(os.path.join(d.root, names[0])):
        assert os.path.isdir(live[0])


def test_agent_admission(make_daemon, agents, tmp_base, munge):
    """Only the daemon user, only for a node served by an agent, only well-formed."""
    root = os.path.join(tmp_base, "bbnodes")
    os.makedirs(os.path.join(root, "bb01"))
    d = make_daemon(
        stage={"mode": "mover"},
        pools=[{"name": "nvme", "granularity": "1GiB"}],
        nodes=[{"names": "bb01", "capacity": "1TiB", "bandwidth": "1 GB/s",
                "mount": root + "/bb01", "pool": "nvme", "agent": True},
               {"names": "hd1", "capacity": "1TiB", "bandwidth": "1 GB/s",
                "mount": root + "/hd", "pool": "nvme"}])
    status = {"free_bytes": 1, "used_bytes": 1, "read_bw": 0, "write_bw": 0}
    body = {"version": 1, "agent": "a1", "status": status, "results": []}
    st, js = d.request("POST", "/v1/agents/bb01", body, uid=USER1)
    assert st == 403 and "daemon user" in js["error"]["message"], js
    st, js = d.request("POST", "/v1/agents/hd1", body)
    assert st == 403 and "not served by an agent" in js["error"]["message"], js
    st, js = d.request("POST", "/v1/agents/bb01", dict(body, version=2))
    assert st == 400, js
    st, js = d.request("POST", "/v1/agents/bb01", dict(body, results=[{"id": 5}]))
    assert st == 400 and "state" in js["error"]["message"], js
    # a result for a task nobody gave it changes nothing; the reply lists the
    # directories the mount must hold and no task
    st, js = d.request("POST", "/v1/agents/bb01", dict(body, results=[
        {"id": 99, "state": "done", "bytes_done": 1, "bytes_total": 1}]))
    assert st == 200, js
    assert js["tasks"] == [] and js["dirs"] == [] and js["node"] == "bb01"
    # the same generation: no directory list again
    st, js2 = d.request("POST", "/v1/agents/bb01", dict(body, dirs=js["dirs_gen"]))
    assert st == 200 and "dirs" not in js2
    # a second agent for a mount already served refuses to start
    a1 = Agent(d, "bb01")
    agents.append(a1)
    a1.start()
    # the requests above already made bb01 'up': wait for a1 itself to hold the
    # mount (it logs 'ready' once its lock is taken)
    wait_for(lambda: os.path.exists(a1.log) and " ready" in a1.log_text(),
             "the first agent holds the mount")
    wait_agent(d, "bb01", "up")
    a2 = Agent(d, "bb01")
    a2.log = a1.log + ".2"
    agents.append(a2)
    a2.start()
    assert a2.proc.wait(timeout=10) == 1
    assert "another bbnoded serves it" in a2.log_text()
    a2.proc = None
    # an agent on a node not served by one refuses to start
    a = Agent(d, "hd1")
    agents.append(a)
    a.start()
    assert a.proc.wait(timeout=10) == 1
    assert "not served by an agent" in a.log_text()
    a.proc = None


def test_config_needs_a_mount_per_agent_node(make_daemon, tmp_base):
    d = make_daemon(start=False, nodes=[
        {"names": "bb[01-02]", "capacity": "1TiB", "bandwidth": "1 GB/s",
         "mount": "/srv/bb", "pool": "nvme", "agent": True}])
    r = subprocess.run([os.path.join(BUILDDIR, "bbmgr", "bbmgrd"), "-C", "-c", d.config],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "%n" in r.stderr, r.stderr


class FakeDevice:
    """/proc/diskstats as the agent reads it, for the block device of one mount:
    another writer on the device is a write counter that grows."""

    def __init__(self, path, mount):
        st = os.stat(mount)
        self.path, self.major, self.minor = path, os.major(st.st_dev), os.minor(st.st_dev)
        self.sectors = 0
        self.write()

    def write(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            f.write("   1       0 ram0 0 0 0 0 0 0 0 0 0 0 0\n")
            f.write("%4d %7d fakedev 10 0 80 5 20 0 %d 7 0 12 12\n" % (
                self.major, self.minor, self.sectors))
        os.rename(tmp, self.path)

    def add(self, nbytes):
        self.sectors += nbytes // 512
        self.write()


def phase_bw(d, jobid):
    ph = d.ok("POST", "/v1/jobs/%s/phases" % jobid, {"volume": "100GB", "wait": 5},
              uid=SLURM_UID, expect=(201,))
    assert ph["state"] == "granted", ph
    d.ok("POST", "/v1/phases/%d/finish" % ph["id"], {"bytes": 0}, uid=SLURM_UID)
    return ph["grant"]["bandwidth"], ph["grant"]["nodes"]


def one_job_on_a_measured_device(make_daemon, agents, base, jobid):
    """Three agents, bb01's device counters those of a FakeDevice, and job jobid's
    buffer on bb01: (daemon, device)."""
    root = os.path.join(base, "bbnodes")
    stats = os.path.join(base, "diskstats")
    os.makedirs(os.path.join(root, "bb01"), mode=0o755)
    dev = FakeDevice(stats, os.path.join(root, "bb01"))
    d, _ = agent_cluster(make_daemon, agents, base, extra={"bb01": ["--diskstats", stats]},
                         platform={"compute_nodes": 1024, "node_bandwidth": "10 GB/s",
                                   "pfs_bandwidth": "100 GB/s"})
    _, names = new_job(d, jobid)
    assert names == ["bb01"]
    return d, dev


def test_busy_device_gets_less_bandwidth(make_daemon, agents, tmp_base):
    """I/O on a node's device that bbmgrd did not give (another writer) is measured
    by its agent; within a few reports the scheduler counts on what is left, and a
    new phase there is granted that, not the configured bandwidth; when the writer
    stops, the configured bandwidth comes back."""
    d, dev = one_job_on_a_measured_device(make_daemon, agents, tmp_base, "g1")
    bw, nodes = phase_bw(d, "g1")
    assert nodes == ["bb01"] and abs(bw - 1e9) < 1e7, bw
    # the other two nodes get as much: bb01 is first again by free space, then name
    assert new_job(d, "f2", wait=False)[1] == ["bb02"]
    assert new_job(d, "f3", wait=False)[1] == ["bb03"]
    # another writer: 600 MB/s on bb01's device
    t0 = time.time()
    last = t0

    def busy():
        # the writer's bytes are added as time passes, in steps as small as this
        # loop's; a loaded machine makes the steps uneven, so an interval may see
        # more than 600 MB/s: wait for the scheduler's view to settle where it
        # should (1 GB/s less about 0.6), not for the first reading below 0.55
        nonlocal last
        now = time.time()
        dev.add(int(600e6 * (now - last)))
        last = now
        n = node(d, "bb01")
        return 0.25e9 <= n["bandwidth"] <= 0.55e9 and n["agent"]["foreign_bw"] > 4.5e8 and n

    n = wait_for(busy, "bb01's bandwidth to follow its device", timeout=10,
                 report=lambda: node(d, "bb01"))
    delay = time.time() - t0
    print("device status to decision: %.2f s" % delay)
    bw, _ = phase_bw(d, "g1")
    assert bw <= 0.6e9, bw
    # placement too: a new buffer goes to an idle node, not to the busy one
    assert new_job(d, "g2", wait=False)[1] == ["bb02"]
    # the writer stops: the configured bandwidth is counted on again
    n = wait_for(lambda: node(d, "bb01")["bandwidth"] > 0.95e9 and node(d, "bb01"),
                 "bb01's bandwidth to come back", timeout=10)
    bw, _ = phase_bw(d, "g1")
    assert abs(bw - 1e9) < 1e7, bw
    assert new_job(d, "g3", wait=False)[1] == ["bb01"]


def test_persistent_buffer_on_an_agent(make_daemon, agents, tmp_base):
    """A persistent buffer on an agent's node: made there for its owner, a stage-in
    into it is fsync'd before done and then durable (as bbmgrd's own mover makes
    it), and it is removed with its content when destroyed."""
    d, _ = agent_cluster(make_daemon, agents, tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    write(os.path.join(pfs, "ckpt"), os.urandom(2 * MiB), 0o640)
    b = d.ok("POST", "/v1/persistent", {"name": "ckpt", "capacity": "1GiB", "uid": USER1,
                                        "gid": GID1}, uid=SLURM_UID, expect=(201,))
    path = b["nodes"][0]["path"]
    assert path == os.path.join(d.root, b["nodes"][0]["name"], "persistent", "ckpt")
    # (made, then given to its owner: wait for both)
    wait_for(lambda: os.path.isdir(path) and owned_dir(path), "the agent to make " + path)
    register(d, "p1", uid=USER1, gid=GID1)
    d.ok("POST", "/v1/persistent/ckpt/use", {"job": "p1"}, uid=SLURM_UID)
    tid = stage(d, "p1", "stage_in", os.path.join(pfs, "ckpt"), path + "/ckpt", "file")
    x = wait_xfer(d, tid)
    assert x["state"] == "done", x
    wait_for(lambda: d.ok("GET", "/v1/transfers/%d" % tid, uid=SLURM_UID)["durable"],
             "the stage-in into the persistent buffer to be durable: %s\n%s" % (
                 d.ok("GET", "/v1/transfers/%d" % tid, uid=SLURM_UID),
                 "".join(a.log_text()[-2000:] for a in agents)))
    assert sha(os.path.join(pfs, "ckpt")) == sha(path + "/ckpt")
    d.ok("DELETE", "/v1/jobs/p1", uid=SLURM_UID)
    d.ok("DELETE", "/v1/persistent/ckpt", uid=SLURM_UID)
    wait_for(lambda: not os.path.exists(path), "the agent to remove " + path)


def test_agent_restarted_while_a_stage_out_is_not_durable(make_daemon, agents, tmp_base):
    """The job ended with a stage-out done but not yet durable (its fsyncs are held
    up by a shim): bbmgrd holds the buffer.  The agent is killed and started again in
    that window: the held buffer's directory is not an orphan to it.  It makes the
    stage-out durable again from the buffer, then removes the buffer, and bbmgrd
    frees the space: nothing stays counted, nothing is lost."""
    from test_mover import build_shim, preloaded
    from test_mover_sync import db_xfer, teardown_waits, wait_db_durable, wait_gone
    so = build_shim(tmp_base)
    with preloaded(so, HARMONIA_SHIM_FSYNC_MATCH="out-slow", HARMONIA_SHIM_FSYNC_SECONDS=60):
        d, by = agent_cluster(make_daemon, agents, tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    mkdirs(os.path.join(pfs, "in"))
    for i in range(3):
        write(os.path.join(pfs, "in", "f%d" % i), os.urandom(MiB + i), 0o640)
    paths, names = new_job(d, "h1")
    tid = stage(d, "h1", "stage_in", os.path.join(pfs, "in"), paths[0] + "/in")
    assert wait_xfer(d, tid)["state"] == "done"
    out = os.path.join(pfs, "out-slow")
    tid = stage(d, "h1", "stage_out", paths[0] + "/in", out)
    x = wait_xfer(d, tid)
    assert x["state"] == "done" and x["durable"] is False, x
    d.ok("DELETE", "/v1/jobs/h1", uid=SLURM_UID)
    teardown_waits(d, "h1", tid)
    assert os.path.isdir(paths[0]) and db_xfer(d, tid) == ("done", 0)
    a = by[names[0]]
    a.kill()
    a.start()       # without the shim
    wait_db_durable(d, tid)
    wait_for(lambda: d.ok("GET", "/v1/status", uid=SLURM_UID)["held"] == [],
             "bbmgrd to free the held buffer",
             report=lambda: "%s\n%s\n%s" % (d.ok("GET", "/v1/status", uid=SLURM_UID)["held"],
                                            d.log_text()[-3000:], a.log_text()[-3000:]))
    assert wait_gone(paths[0]), "the held buffer was not removed once durable"
    assert compare_trees(os.path.join(pfs, "in"), out, owner=(USER1, GID1)) == 3
    assert "could not be made durable" not in d.log_text()


def test_kept_buffer_survives_an_agent_restart(make_daemon, agents, tmp_base):
    """A stage-out that could not be made durable (fsync fails: EIO from a shim)
    keeps its job's buffer for good: its data may exist only there.  An agent
    started again must not take that directory for an orphan; `bbmgr release JOB`
    is what removes it and frees its space."""
    from test_mover import build_shim, preloaded
    so = build_shim(tmp_base)
    with preloaded(so, HARMONIA_SHIM_FSYNC_EIO="out-eio"):
        d, by = agent_cluster(make_daemon, agents, tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    mkdirs(os.path.join(pfs, "in"))
    write(os.path.join(pfs, "in", "a"), os.urandom(MiB + 7), 0o640)
    paths, names = new_job(d, "k2")
    tid = stage(d, "k2", "stage_in", os.path.join(pfs, "in"), paths[0] + "/in")
    assert wait_xfer(d, tid)["state"] == "done"
    tid = stage(d, "k2", "stage_out", paths[0] + "/in", os.path.join(pfs, "out-eio"))
    x = wait_xfer(d, tid, states=("failed",))
    assert x["message"].startswith("not durable: "), x

    def held():
        return d.ok("GET", "/v1/status", uid=SLURM_UID)["held"]
    d.ok("DELETE", "/v1/jobs/k2", uid=SLURM_UID)
    wait_for(lambda: [h for h in held() if h["job"] == "k2" and h["kept"]],
             "bbmgrd to keep the buffer of k2", report=lambda: "%s\n%s" % (
                 held(), d.log_text()[-3000:]))
    a = by[names[0]]
    a.kill()
    a.start()       # without the shim
    # two reports of the new agent (interval 0.2 s), then the directory is still there
    wait_for(lambda: a.log_text().count("connected as node") >= 2 or
             "is no longer in bbmgrd's state" in a.log_text(), "the new agent's first report")
    time.sleep(1)
    assert os.path.isfile(paths[0] + "/in/a"), a.log_text()[-3000:]
    assert [h["job"] for h in held()] == ["k2"]
    # what the administrator sees, and does: the buffer goes, its space is free again
    def bbmgr(*args):
        r = subprocess.run([BBMGR, "-u", "http://127.0.0.1:%d" % d.port] + list(args),
                           capture_output=True, text=True,
                           env=dict(os.environ, HARMONIA_MUNGE_SOCKET=d.munge.socket))
        assert r.returncode == 0, r.stderr
        return r
    st = bbmgr("status").stdout
    assert ("held buffers: 1 (freed by 'bbmgr release JOB' when kept)\n  k2: 1.00 GiB, a "
            "stage-out from it could not be made durable") in st, st
    r = bbmgr("release", "k2")
    assert r.stdout == "job k2: kept buffer released and removed (1.00 GiB)\n", r.stdout
    wait_for(lambda: not os.path.exists(paths[0]), "the agent to remove " + paths[0])
    assert held() == []
    assert d.ok("GET", "/v1/nodes/%s" % names[0], uid=SLURM_UID)["used"] == 0


def test_stage_in_moves_to_another_node_when_its_node_is_lost(make_daemon, agents, tmp_base):
    """The agent of a job's buffer node stops for good during the job's stage-in
    (before the job runs): after agents.down_after the node is drained, the job's
    share of the buffer moves to an idle node with room, and its stage-ins into the
    lost node — the one copying and the one done already, whose data was only
    there — run again into the job's directory on the new node.  The job's
    allocation names the new node; the lost node's directory goes when its agent
    is back."""
    d, by = agent_cluster(make_daemon, agents, tmp_base, down_after="1s",
                          max_rate="20 MB/s", depth=4)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(os.path.join(pfs, "in"))
    mkdirs(os.path.join(pfs, "small"))
    for i in range(3):
        write(os.path.join(pfs, "in", "f%d" % i), os.urandom(8 * MiB + i), 0o640)
    write(os.path.join(pfs, "small", "s"), os.urandom(1000), 0o600)
    paths, names = new_job(d, "m1")
    assert names == ["bb01"]
    t1 = stage(d, "m1", "stage_in", os.path.join(pfs, "small"), paths[0] + "/small")
    assert wait_xfer(d, t1)["state"] == "done"
    t2 = stage(d, "m1", "stage_in", os.path.join(pfs, "in"), paths[0] + "/in")
    wait_bytes(d, t2, 4 * MiB)
    by["bb01"].kill()
    # what an administrator and the plugin see
    wait_for(lambda: node(d, "bb01")["state"] == "drained", "bb01 drained")
    a = wait_for(lambda: (lambda a: a if a["nodes"][0]["name"] != "bb01" else None)(
        d.ok("GET", "/v1/jobs/m1/allocation", uid=SLURM_UID)), "the share of m1 to move",
        report=lambda: d.log_text()[-3000:])
    assert [n["name"] for n in a["nodes"]] == ["bb02"], a
    new = a["nodes"][0]["path"]
    assert new == os.path.join(d.root, "bb02", "m1")
    # ready (what the plugin waits for before the job starts) once the new
    # directory is made and both stage-ins are done again
    wait_for(lambda: d.ok("GET", "/v1/jobs/m1/allocation", uid=SLURM_UID)["ready"],
             "the allocation to be ready again", timeout=scaled(60))
    for tid in (t1, t2):
        x = xfer(d, tid)
        assert x["state"] == "done" and x["destination"].startswith(new + "/"), x
    assert owned_dir(new)
    assert compare_trees(os.path.join(pfs, "in"), new + "/in", owner=(USER1, GID1)) == 3
    assert compare_trees(os.path.join(pfs, "small"), new + "/small", owner=(USER1, GID1)) == 1
    assert not partials(new)
    assert "buffer node bb01 down (no report): its share of the buffer moved to bb02, " \
           "2 stage-in(s) run again there" in d.log_text()
    assert node(d, "bb01")["used"] == 0 and node(d, "bb02")["used"] == 1 << 30
    # the lost node comes back: the job's old directory there is an orphan
    by["bb01"].start()
    wait_agent(d, "bb01", "up")
    wait_for(lambda: not os.path.exists(paths[0]), "bb01's agent to remove " + paths[0])
    assert os.path.isdir(new)


def test_lone_job_keeps_its_rate_phase_after_phase(make_daemon, agents, tmp_base):
    """A lone job writes into its buffer at the rate it was granted: the agent sees
    that traffic on its device, but it is bbmgrd's own grant, not another writer's,
    so the next phases are granted the full rate again (they used to be granted
    the 0.1 x floor: the job throttled by its own writes).  Another writer beyond
    the grants still counts."""
    d, dev = one_job_on_a_measured_device(make_daemon, agents, tmp_base, "l1")
    rates = []

    def write_at(rate, polls, extra=0.0):
        """The device writes rate (+ extra) bytes/s, in small even steps (a thread),
        until the agent reported `polls` more times; bb01 as bbmgrd sees it then."""
        start = node(d, "bb01")["agent"]["polls"]
        stop = threading.Event()

        def writer():
            last = time.monotonic()
            while not stop.is_set():
                time.sleep(0.005)
                now = time.monotonic()
                dev.add(int((rate + extra) * (now - last)))
                last = now
        t = threading.Thread(target=writer)
        t.start()
        try:
            wait_for(lambda: node(d, "bb01")["agent"]["polls"] >= start + polls,
                     "%d reports of bb01" % polls)
            return node(d, "bb01")
        finally:
            stop.set()
            t.join()
    for k in range(4):
        ph = d.ok("POST", "/v1/jobs/l1/phases", {"volume": "100GB", "wait": 5}, uid=SLURM_UID,
                  expect=(201,))
        assert ph["state"] == "granted", ph
        bw = ph["grant"]["bandwidth"]
        rates.append(bw)
        # the application writes its phase into the buffer at its granted rate
        n = write_at(bw, 8)
        assert n["bandwidth"] > 0.95e9, (k, n)
        assert n["agent"]["foreign_bw"] < 0.1e9, (k, n)
        d.ok("POST", "/v1/phases/%d/finish" % ph["id"], {"bytes": 0}, uid=SLURM_UID)
    print("granted rate of phases 1-4: %s MB/s" % ", ".join("%.0f" % (r / 1e6) for r in rates))
    assert all(abs(r - 1e9) < 1e7 for r in rates), rates
    # a writer beyond what was granted is still another writer: 500 MB/s more than
    # the job's grant is counted against the node
    ph = d.ok("POST", "/v1/jobs/l1/phases", {"volume": "100GB", "wait": 5}, uid=SLURM_UID,
              expect=(201,))
    bw = ph["grant"]["bandwidth"]
    n = wait_for(lambda: (lambda n: n if n["bandwidth"] < 0.7e9 else None)(
        write_at(bw, 2, extra=500e6)), "bb01's bandwidth to count the other writer",
        report=lambda: node(d, "bb01"))
    assert 0.3e9 < n["agent"]["foreign_bw"] < 0.8e9, n


def test_metrics_count_what_the_agents_move(make_daemon, agents, tmp_base):
    """/metrics counts the agents' copies in harmonia_mover_bytes_total and
    harmonia_mover_transfers_total (they were 0 after agents staged gigabytes),
    and each node's in harmonia_agent_bytes_total."""
    d, _ = agent_cluster(make_daemon, agents, tmp_base)
    pfs = os.path.join(tmp_base, "pfs")
    mkdirs(pfs)
    write(os.path.join(pfs, "in"), os.urandom(9 * MiB + 7), 0o644)
    paths, names = new_job(d, "m1")
    tid = stage(d, "m1", "stage_in", os.path.join(pfs, "in"), paths[0] + "/in", "file")
    x = wait_xfer(d, tid)
    assert x["state"] == "done", x
    size = 9 * MiB + 7
    assert d.metric("harmonia_mover_bytes_total") >= size
    assert d.metric('harmonia_mover_transfers_total{outcome="done"}') == 1
    assert d.metric('harmonia_agent_bytes_total{node="%s"}' % names[0]) >= size
    tid = stage(d, "m1", "stage_out", paths[0] + "/in", os.path.join(pfs, "out"), "file")
    assert wait_xfer(d, tid)["state"] == "done"
    assert d.metric("harmonia_mover_bytes_total") >= 2 * size
    assert d.metric('harmonia_mover_transfers_total{outcome="done"}') == 2
