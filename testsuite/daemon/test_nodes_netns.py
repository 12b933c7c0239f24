# SPDX-License-Identifier: GPL-2.0-or-later
"""Buffer nodes as hosts: testsuite/cluster/netns-cluster with three buffer-node
hosts (network namespaces of their own, each running bbnoded with its own
directory as its device), bbmgrd on the head host, the tests on the login host.

Each agent's mover is capped to 40 MB/s so that the tests can act while a copy
runs.  Needs root, iproute2, unshare, munged, slurmctld/slurmd and the Slurm
plugins built (the cluster is a whole one); skipped otherwise.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
import http.client

import pytest

from conftest import BUILDDIR, SRCDIR, USER1
from test_mover import GID1, MiB, build_tree, compare_trees, mkdirs, partials, sha, write
from test_nodes import wait_for

NETNS = os.path.join(SRCDIR, "testsuite", "cluster", "netns-cluster")
PLUGIN = os.path.join(BUILDDIR, "src", "plugins", "burst_buffer", "harmonia", ".libs",
                      "burst_buffer_harmonia.so")


def usable():
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "unshare", "munged", "slurmctld", "slurmd"):
        if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool):
            return "no %s" % tool
    if not os.path.exists(PLUGIN):
        return "Slurm plugins not built (configure --with-slurm-source)"
    if subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode != 0:
        return "network namespaces not allowed here"
    return None


pytestmark = pytest.mark.skipif(usable() is not None, reason=usable() or "")


class Cluster:
    def __init__(self, base):
        self.dir = os.path.join(base, "netns")
        self.prefix = "hb%d" % (os.getpid() % 1000)
        self.subnet = "10.237.%d" % (os.getpid() % 200 + 20)
        p = subprocess.run([NETNS, "start", self.dir, "--builddir", BUILDDIR, "--agents", "3",
                            "--prefix", self.prefix, "--subnet", self.subnet,
                            "--mover-rate", "40 MB/s"],
                           capture_output=True, text=True, timeout=180)
        if p.returncode != 0:
            raise RuntimeError("netns-cluster start failed:\n" + p.stdout + p.stderr[-6000:])
        self.port = 8150
        self.host = self.subnet + ".2"
        self.socket = os.path.join(self.dir, "munge", "munge.socket")

    def stop(self):
        subprocess.run([NETNS, "stop", self.dir], capture_output=True, text=True, timeout=180)

    def ctl(self, *args):
        p = subprocess.run([NETNS, "ctl", self.dir] + list(args), capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0, p.stderr

    def node(self, k):
        return "%sbb%d" % (self.prefix, k)

    def log(self, name):
        with open(os.path.join(self.dir, "log", name)) as f:
            return f.read()

    def request(self, method, path, body=None):
        cred = subprocess.run(["munge", "-S", self.socket, "-s", "%s %s" % (method, path)],
                              check=True, capture_output=True, text=True).stdout.strip()
        hdrs = {"Authorization": "MUNGE " + cred}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        c = http.client.HTTPConnection(self.host, self.port, timeout=20)
        try:
            c.request(method, path, body=data, headers=hdrs)
            r = c.getresponse()
            text = r.read().decode()
        finally:
            c.close()
        return r.status, json.loads(text) if text else None

    def ok(self, method, path, body=None):
        st, js = self.request(method, path, body)
        assert st in (200, 201), "%s %s -> %d %s" % (method, path, st, js)
        return js


@pytest.fixture(scope="module")
def cl(users):
    base = tempfile.mkdtemp(prefix="harmonia-netns-")
    os.chmod(base, 0o755)
    c = Cluster(base)
    try:
        yield c
    finally:
        c.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pfs(cl):
    d = tempfile.mkdtemp(prefix="pfs-", dir=os.path.dirname(cl.dir))
    mkdirs(d)       # the user's, 0755: stage-outs write there as the user
    yield d
    shutil.rmtree(d, ignore_errors=True)


_jobs = [0]


def new_job(cl, nodes=1):
    _jobs[0] += 1
    job = "n%d" % _jobs[0]
    cl.ok("POST", "/v1/jobs", {"id": job, "uid": USER1, "gid": GID1})
    a = cl.ok("POST", "/v1/jobs/%s/allocation" % job, {"capacity": "1GiB", "nodes": nodes})
    paths = [n["path"] for n in a["nodes"]]
    for p in paths:
        wait_for(lambda: os.path.isdir(p), "its agent to make " + p)
    return job, paths, [n["name"] for n in a["nodes"]]


def end_job(cl, job, paths):
    cl.ok("DELETE", "/v1/jobs/%s" % job)
    for p in paths:
        wait_for(lambda: not os.path.exists(p), "its agent to remove " + p)


def stage(cl, job, kind, src, dst, typ="directory"):
    return cl.ok("POST", "/v1/jobs/%s/%s" % (job, kind),
                 {"source": src, "destination": dst, "type": typ})["id"]


def xfer(cl, tid):
    return cl.ok("GET", "/v1/transfers/%d" % tid)


def wait_xfer(cl, tid, timeout=60):
    return wait_for(lambda: (lambda x: x["state"] in ("done", "failed", "cancelled") and x)(
        xfer(cl, tid)), "transfer %d" % tid, timeout)


def wait_done(cl, tid):
    x = wait_xfer(cl, tid)
    assert x["state"] == "done", x
    return x


def wait_bytes(cl, tid, n):
    wait_for(lambda: xfer(cl, tid)["bytes_done"] >= n, "transfer %d to copy %d bytes" % (tid, n))


def big_input(pfs, name, files=4, size=16 * MiB):
    d = os.path.join(pfs, name)
    mkdirs(d)
    for i in range(files):
        write(os.path.join(d, "f%d" % i), os.urandom(size), 0o640)
    return d


def stage_in_started(cl, pfs, nbytes):
    """A new job on one buffer node and its stage-in of big_input() into PATH/in,
    once it has copied nbytes: (src, job, paths, names, tid)."""
    src = big_input(pfs, "in")
    job, paths, names = new_job(cl)
    tid = stage(cl, job, "stage_in", src, paths[0] + "/in")
    wait_bytes(cl, tid, nbytes)
    return src, job, paths, names, tid


def test_job_striped_over_two_agent_hosts(cl, pfs):
    """A job on two buffer-node hosts: each host's agent makes its directory, stages
    its part in and out; byte for byte, owners and modes kept."""
    build_tree(os.path.join(pfs, "a"))
    b = big_input(pfs, "b", files=2, size=5 * MiB + 3)
    job, paths, names = new_job(cl, nodes=2)
    assert len(set(names)) >= 2     # (over-provisioned: 1.5 x 2 nodes)
    for p in paths:
        st = os.stat(p)
        assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (USER1, GID1, 0o700)
    t1 = stage(cl, job, "stage_in", os.path.join(pfs, "a"), paths[0] + "/a")
    t2 = stage(cl, job, "stage_in", b, paths[1] + "/b")
    for t in (t1, t2):
        assert wait_xfer(cl, t)["state"] == "done"
    assert compare_trees(os.path.join(pfs, "a"), paths[0] + "/a", owner=(USER1, GID1)) == 5
    assert compare_trees(b, paths[1] + "/b", owner=(USER1, GID1)) == 2
    assert "stage_in %d of job %s" % (t1, job) in cl.log("bbnoded-bb%s.log" % names[0][-1])
    assert "stage_in %d of job %s" % (t2, job) in cl.log("bbnoded-bb%s.log" % names[1][-1])
    o1 = stage(cl, job, "stage_out", paths[0] + "/a", os.path.join(pfs, "out-a"))
    o2 = stage(cl, job, "stage_out", paths[1] + "/b", os.path.join(pfs, "out-b"))
    for t in (o1, o2):
        wait_done(cl, t)
    assert compare_trees(paths[0] + "/a", os.path.join(pfs, "out-a")) == 5
    assert compare_trees(paths[1] + "/b", os.path.join(pfs, "out-b")) == 2
    end_job(cl, job, paths)


def test_agent_sigkill_during_stage_in(cl, pfs):
    src, job, paths, names, tid = stage_in_started(cl, pfs, 8 * MiB)
    host = "bb" + names[0][-1]
    cl.ctl("agent-kill", host)
    assert xfer(cl, tid)["state"] == "running"
    cl.ctl("agent-start", host)
    x = wait_done(cl, tid)
    assert x["bytes_done"] == 64 * MiB
    assert compare_trees(src, paths[0] + "/in", owner=(USER1, GID1)) == 4
    assert not partials(paths[0])
    end_job(cl, job, paths)


def test_agent_link_cut_and_restored(cl, pfs):
    """A cut shorter than agents.down_after changes nothing; a longer one marks the
    node down (drained with the reason, no new placement there) and, the job not
    running yet, moves its share of the buffer to another node, where its
    stage-ins run again (the one cut off and the one done before); restored, the
    node is back and the job's directory left there is removed."""
    src, job, paths, names, tid = stage_in_started(cl, pfs, 4 * MiB)
    host = "bb" + names[0][-1]
    cl.ctl("link-down", host)
    time.sleep(1.0)     # the cut itself: shorter than down_after (3 s)
    cl.ctl("link-up", host)
    wait_done(cl, tid)
    assert cl.ok("GET", "/v1/nodes/%s" % names[0])["state"] == "up"
    assert compare_trees(src, paths[0] + "/in", owner=(USER1, GID1)) == 4
    # a long cut during a stage-in
    tid2 = stage(cl, job, "stage_in", src, paths[0] + "/again")
    wait_bytes(cl, tid2, 4 * MiB)
    cl.ctl("link-down", host)
    try:
        n = wait_for(lambda: (lambda n: n if n["state"] == "drained" else None)(
            cl.ok("GET", "/v1/nodes/%s" % names[0])), "the node to be marked down")
        assert "agent down" in n["reason"], n
        a = wait_for(lambda: (lambda a: a if names[0] not in [m["name"] for m in a["nodes"]]
                              else None)(cl.ok("GET", "/v1/jobs/%s/allocation" % job)),
                     "the job's share to move off " + names[0])
        new = a["nodes"][0]["path"]
        for t in (tid, tid2):
            x = wait_xfer(cl, t)
            assert x["state"] == "done" and x["destination"].startswith(new + "/"), x
        j2, p2, n2 = new_job(cl)
        assert names[0] not in n2
        end_job(cl, j2, p2)
    finally:
        cl.ctl("link-up", host)
    wait_for(lambda: cl.ok("GET", "/v1/nodes/%s" % names[0])["state"] == "up",
             "the node to be back")
    for sub in ("in", "again"):
        assert compare_trees(src, new + "/" + sub, owner=(USER1, GID1)) == 4
    wait_for(lambda: not os.path.exists(paths[0]), "the orphan %s to be removed" % paths[0])
    end_job(cl, job, [new])


def test_bbmgrd_restarted_while_agents_copy(cl, pfs):
    src, job, paths, names, tid = stage_in_started(cl, pfs, 4 * MiB)
    cl.ctl("bbmgrd-kill")
    cl.ctl("bbmgrd-start")
    wait_done(cl, tid)
    assert compare_trees(src, paths[0] + "/in", owner=(USER1, GID1)) == 4
    log = cl.log("bbnoded-bb%s.log" % names[0][-1])
    assert log.count("stage_in %d of job %s" % (tid, job)) == 1
    end_job(cl, job, paths)


def test_node_drained_while_busy(cl, pfs):
    src, job, paths, names, tid = stage_in_started(cl, pfs, 4 * MiB)
    cl.ok("POST", "/v1/nodes/%s/drain" % names[0], {"reason": "maintenance"})
    try:
        j2, p2, n2 = new_job(cl)
        assert names[0] not in n2
        end_job(cl, j2, p2)
        wait_done(cl, tid)
        assert compare_trees(src, paths[0] + "/in", owner=(USER1, GID1)) == 4
        # the agent reports on: an administrator's drain is kept
        n = cl.ok("GET", "/v1/nodes/%s" % names[0])
        assert n["state"] == "drained" and n["reason"] == "maintenance", n
        assert n["agent"]["state"] == "up"
    finally:
        cl.ok("POST", "/v1/nodes/%s/resume" % names[0], {})
    end_job(cl, job, paths)


def slurm(cl, *args):
    env = dict(os.environ, SLURM_CONF=os.path.join(cl.dir, "etc", "slurm.conf"))
    return subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=30)


def sbatch(cl, pfs, script):
    """Submit script (its text, written to PFS/job.sh) as USER1; its output goes to
    PFS/slurm-JOBID.out.  Returns the job id."""
    job_sh = os.path.join(pfs, "job.sh")
    with open(job_sh, "w") as f:
        f.write(script)
    # as the unprivileged user: agents refuse work for root (agents.min_uid)
    p = slurm(cl, "setpriv", "--reuid=%d" % USER1, "--regid=%d" % GID1, "--clear-groups",
              "sbatch", "--parsable", "-o", os.path.join(pfs, "slurm-%j.out"), job_sh)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip().split(";")[0]


def job_state(cl, jobid):
    text = slurm(cl, "scontrol", "show", "job", jobid).stdout
    return dict(t.split("=", 1) for t in text.split() if "=" in t)


# A Slurm job goes through scheduling, allocation, stage-in and start before it
# writes: one generous bound for those waits (the machine may be loaded and the
# daemons built with sanitizers).
SLURM_WAIT = 120


def job_report(cl, pfs, jobid):
    """What a person would look at when a job did not get where it should: the
    job, the queue, the nodes, the buffer, the job's output, bbmgrd's log tail."""
    parts = []
    for cmd in (("scontrol", "show", "job", jobid), ("squeue", "-a"), ("sinfo", "-N", "-l"),
                ("scontrol", "show", "burst")):
        p = slurm(cl, *cmd)
        parts.append("$ %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    out = os.path.join(pfs, "slurm-%s.out" % jobid)
    if os.path.exists(out):
        with open(out) as f:
            parts.append("%s:\n%s" % (out, f.read()))
    try:
        parts.append("bbmgrd.out (tail):\n" + "\n".join(cl.log("bbmgrd.out").splitlines()[-40:]))
    except OSError as e:
        parts.append("bbmgrd.out: %s" % e)
    return "\n".join(parts)


def wait_job(cl, jobid, states=("complete", None)):
    """The job ended and its stage-out is over (BurstBufferState in states)."""
    try:
        return wait_for(lambda: (lambda s: s.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED")
                                 and s.get("BurstBufferState") in states and s)(
                                     job_state(cl, jobid)),
                        "job %s to end with its stage-out" % jobid, timeout=SLURM_WAIT)
    except AssertionError as e:
        raise AssertionError("%s\n%s" % (e, job_report(cl, cl.dir, jobid))) from None


def test_slurm_job_with_buffers_on_agent_hosts(cl, pfs):
    """A Slurm job whose buffer is spread over buffer-node hosts (StageSpread=yes in
    this cluster's harmonia.conf): its stage-in is copied by the agents of its
    nodes, each its share of the files, and the job (on a compute host) finds the
    whole tree at $HARMONIA_BB/in, the others' files as links; it writes a result
    on each of its nodes; the stage-outs gather them, and give the input back byte
    for byte; its directories are gone afterwards."""
    src = os.path.join(pfs, "in")
    build_tree(src)
    write(os.path.join(src, "big2"), os.urandom(12 * MiB), 0o640)
    out, back = os.path.join(pfs, "out"), os.path.join(pfs, "back")
    jobid = sbatch(cl, pfs, "#!/bin/bash\n#SBATCH -N1\n"
                   "#BB_HARMONIA jobbuffer capacity=1GiB nodes=2\n"
                   "#BB_HARMONIA stage_in source=%s destination=$HARMONIA_BB/in type=directory\n"
                   "#BB_HARMONIA stage_out source=$HARMONIA_BB/out destination=%s type=directory\n"
                   "#BB_HARMONIA stage_out source=$HARMONIA_BB/in destination=%s type=directory\n"
                   "set -e\necho BB=$HARMONIA_BB\necho NODES=$HARMONIA_BB_NODES\n"
                   "echo LINKS=$(find $HARMONIA_BB/in -type l | wc -l)\n"
                   "i=0\nfor n in ${HARMONIA_BB_NODES//,/ }; do\n"
                   "  d=${HARMONIA_BB%%/*/*}/$n/$SLURM_JOB_ID/out\n"
                   "  mkdir -p $d\n"
                   "  (cd $HARMONIA_BB/in && find -L . -type f | sort | xargs sha256sum) > $d/rank$i\n"
                   "  i=$((i + 1))\ndone\n" % (src, out, back))
    j = wait_job(cl, jobid)
    with open(os.path.join(pfs, "slurm-%s.out" % jobid)) as f:
        text = f.read()
    assert j["JobState"] == "COMPLETED", (j, text)
    lines = dict(l.split("=", 1) for l in text.split() if "=" in l)
    nodes = lines["NODES"].split(",")
    assert len(nodes) >= 2 and all(n.startswith(cl.prefix + "bb") for n in nodes), lines
    assert lines["BB"] == os.path.join(cl.dir, "bb", nodes[0], jobid)
    assert int(lines["LINKS"]) >= 1, text
    ranks = ["rank%d" % i for i in range(len(nodes))]
    # the job's directories are removed once its stage-outs are done and durable
    for n in nodes:
        wait_for(lambda: not os.path.exists(os.path.join(cl.dir, "bb", n, jobid)),
                 "the stage-outs and the removal of the job's directory on " + n,
                 timeout=SLURM_WAIT)
    assert sorted(os.listdir(out)) == ranks
    # the input staged out again is the input (the links gathered as the files)
    assert compare_trees(src, back) == 6
    for r in ranks:
        with open(os.path.join(out, r)) as f:
            sums = dict(l.split()[::-1] for l in f)
        assert sums["./big2"] == sha(os.path.join(src, "big2"))
        assert len(sums) == 8   # the 6 files and the source's own 2 links, followed
    staged = [n for n in nodes if "stage_in" in cl.log("bbnoded-bb%s.log" % n[-1])]
    assert len(staged) >= 2, "the stage-in ran on %s only" % staged


def test_slurm_stage_out_data_lost_with_its_node(cl, pfs):
    """The agent holding a job's only copy of its results dies before the
    stage-out: the stage-out fails, and Slurm shows why ("buffer node X down:
    stage-out data lost"); the buffer is kept, and so is its directory when the
    agent comes back."""
    jobid = sbatch(cl, pfs, "#!/bin/bash\n#SBATCH -N1\n"
                   "#BB_HARMONIA jobbuffer capacity=1GiB\n"
                   "#BB_HARMONIA stage_out source=$HARMONIA_BB/out destination=%s type=directory\n"
                   "mkdir $HARMONIA_BB/out && echo result > $HARMONIA_BB/out/result\n"
                   "echo BB=$HARMONIA_BB > %s/wrote-$SLURM_JOB_ID\n"
                   "sleep 5\n" % (os.path.join(pfs, "out"), pfs))
    # the job says where its buffer is once it wrote there (a PFS file: the
    # buffer's path is the job's own word, not a guess from bbmgrd's allocation)
    wrote = os.path.join(pfs, "wrote-" + jobid)
    try:
        wait_for(lambda: os.path.exists(wrote) and os.path.getsize(wrote) > 0,
                 "the job to write its result", timeout=SLURM_WAIT)
    except AssertionError as e:
        raise AssertionError("%s\n%s" % (e, job_report(cl, pfs, jobid))) from None
    with open(wrote) as f:
        bb = f.read().strip().split("=", 1)[1]
    alloc = cl.ok("GET", "/v1/jobs/%s/allocation" % jobid)
    node = alloc["nodes"][0]["name"]
    assert bb == alloc["nodes"][0]["path"], (bb, alloc)
    host = "bb" + node[-1]
    result = os.path.join(bb, "out", "result")
    assert os.path.exists(result)
    cl.ctl("agent-kill", host)
    try:
        # a failed stage-out keeps the job's buffer (teardown-fail) and the job's
        # record says why and where the data is (harmonia-directives(5))
        wait_job(cl, jobid, states=("teardown-fail",))
        why = "buffer node %s down (no report): stage-out data lost" % node
        text = slurm(cl, "scontrol", "show", "job", jobid).stdout
        assert "stage-out failed: " in text and why in text, text
        assert not os.path.exists(os.path.join(pfs, "out", "result"))
    finally:
        cl.ctl("agent-start", host)
    wait_for(lambda: cl.ok("GET", "/v1/nodes/%s" % node)["state"] == "up", "the node back")
    # the buffer (the only copy of the results) is still there, on its node
    with open(result) as f:
        assert f.read() == "result\n"
    slurm(cl, "scancel", jobid)
