# SPDX-License-Identifier: GPL-2.0-or-later
"""Faults that only a cluster of several hosts can have, on the Docker Compose
cluster: a compute node's container killed under a job with a buffer, the
controller's container restarted during a stage or cut off its network, the
whole cluster restarted with jobs queued, a buffer node's container (and with
it its node agent, bbnoded) stopped, killed or cut off the network during a
job's stage-in, run or stage-out, and the agent alone killed.  Each test
asserts what a user sees (squeue/scontrol states and reason texts, the files
on the PFS), what an administrator sees (bbmgr nodes, the devices) and that
nothing is left behind: no job in bbmgrd, no capacity counted in its pools, no
directory on the buffer devices.  doc/docker.md says what each fault does to
the job.
"""
import re

import pytest

from conftest import WORK, docker, wait_for

BB = "jobbuffer capacity=1GiB"


def leftovers(dc, jobid=None):
    """What bbmgrd and the devices still hold: (jobs, bytes used, directories)."""
    jobs = [j["id"] for j in dc.bbmgr("jobs")["jobs"] if jobid is None or j["id"] == str(jobid)]
    used = sum(p["used"] for p in dc.bbmgr("pools")["pools"])
    dirs = [d for d in dc.buffer_dirs() if jobid is None or d == str(jobid)]
    return jobs, used, dirs


def assert_nothing_left(dc, jobid=None, timeout=60):
    last = []

    def clean():
        last[:] = [leftovers(dc, jobid)]
        jobs, used, dirs = last[0]
        return not jobs and (jobid is not None or used == 0) and not dirs
    try:
        wait_for(clean, timeout, "bbmgrd and the devices to be empty")
    except AssertionError:
        raise AssertionError("left behind (jobs in bbmgrd, bytes used, directories): %s"
                             % (last[0],))


def buffer_nodes(dc, jobid):
    """The buffer nodes of the job's allocation, from bbmgrd."""
    j = dc.sh("ctl", "bbmgr --json jobs").stdout
    import json
    for job in json.loads(j)["jobs"]:
        if job["id"] == str(jobid) and job.get("allocation"):
            return [n["name"] for n in job["allocation"]["nodes"]]
    return []


CONF = "/etc/harmonia/bbmgr.yaml"
RATE = "1 MB/s"


@pytest.fixture(scope="module")
def slow_agents(dc):
    """The agents' movers capped at RATE for the tests of this module that act
    during a copy: mover.max_rate in the cluster's bbmgr.yaml (shared by ctl and
    the buffer nodes, each of which restarts its bbnoded when it changes);
    restored at the end of the module."""
    dc.sh("ctl", "cp {c} {c}.orig && cp {c}.orig {c}.new && printf 'mover:\\n  max_rate: "
          "{r}\\n  chunk: 256KiB\\n' >> {c}.new && mv {c}.new {c}".format(c=CONF, r=RATE))
    dc.sh("ctl", "/opt/harmonia/docker/control agents-wait 60", timeout=90)
    yield
    dc.sh("ctl", "mv {c}.orig {c}".format(c=CONF))
    dc.sh("ctl", "/opt/harmonia/docker/control agents-wait 60", timeout=90)


def make_input(dc, name, mib=6):
    """A directory on the PFS with a file of MIB MiB; its sha256."""
    d = "%s/%s" % (WORK, name)
    p = dc.sh("ctl", "rm -rf {d} && mkdir -p {d} && head -c {n}M /dev/urandom > {d}/big.bin "
              "&& sha256sum {d}/big.bin".format(d=d, n=mib))
    return d, p.stdout.split()[0]


# ---------------------------------------------------------------- compute node
def test_compute_node_killed_job_requeued(clean):
    """docker kill of the compute node running a job with a buffer: Slurm marks
    the node DOWN ("Not responding") and requeues the batch job (Restarts=1,
    pending with reason BeginTime: Slurm holds a requeued job back for the
    lifetime of its credential, about 2 minutes); its buffer is torn down at
    once.  Started again (here by an administrator's StartTime=now), it runs on
    another node with a new buffer and completes; nothing is left behind."""
    dc = clean
    jid = dc.sbatch('if [ -e %s/ran-$SLURM_JOB_ID ]; then echo second run on $(hostname); '
                    'ls -d $HARMONIA_BB; else touch %s/ran-$SLURM_JOB_ID; sleep 600; fi'
                    % (WORK, WORK), BB)
    st = dc.wait_state(jid, {"RUNNING"})
    node = st["NodeList"]
    wait_for(lambda: dc.sh("ctl", "test -e %s/ran-%s" % (WORK, jid), check=False).returncode == 0,
             60, "the job's first run to start its script")
    assert buffer_nodes(dc, jid)
    docker("kill", dc.name(node))
    wait_for(lambda: dc.node(node).get("State", "").startswith("DOWN"), 90,
             "node %s DOWN" % node)
    assert dc.node(node)["Reason"].startswith("Not responding")
    st = dc.wait_state(jid, {"PENDING"}, timeout=30)
    wait_for(lambda: dc.job(jid).get("Reason") == "BeginTime", 30, "reason BeginTime")
    assert dc.job(jid)["Restarts"] == "1"
    assert_nothing_left(dc, jid)
    dc.sh("ctl", "scontrol update jobid=%s StartTime=now" % jid)
    st = dc.wait_state(jid, {"COMPLETED", "FAILED"}, timeout=90)
    assert st["JobState"] == "COMPLETED", st
    assert st["NodeList"] != node
    assert st["BurstBufferState"] == "complete"
    out = dc.sh("ctl", "cat %s/slurm-%s.out" % (WORK, jid)).stdout
    assert "second run on " + st["NodeList"] in out
    assert_nothing_left(dc, jid)
    docker("start", dc.name(node))
    wait_for(lambda: dc.node(node).get("State") == "IDLE", 90, "node %s back IDLE" % node)


def test_compute_node_killed_job_not_requeued(clean):
    """The same with --no-requeue: the job ends NODE_FAIL, its buffer is torn
    down, the node returns by itself once its container runs again."""
    dc = clean
    jid = dc.sbatch("touch %s/ran-$SLURM_JOB_ID; sleep 600" % WORK, BB, opts="--no-requeue")
    st = dc.wait_state(jid, {"RUNNING"})
    node = st["NodeList"]
    wait_for(lambda: dc.sh("ctl", "test -e %s/ran-%s" % (WORK, jid), check=False).returncode == 0,
             60, "the job's script to start")
    assert buffer_nodes(dc, jid)
    docker("kill", dc.name(node))
    st = dc.wait_state(jid, {"NODE_FAIL"}, timeout=90)
    assert dc.node(node)["State"].startswith("DOWN")
    assert dc.node(node)["Reason"].startswith("Not responding")
    assert_nothing_left(dc, jid)
    docker("start", dc.name(node))
    wait_for(lambda: dc.node(node).get("State") == "IDLE", 90, "node %s back IDLE" % node)


# ---------------------------------------------------------------- controller
@pytest.mark.parametrize("phase", ["staging-in", "staging-out"])
def test_controller_restarted_mid_stage(clean, slow_agents, phase):
    """docker restart of ctl (slurmctld and bbmgrd) while a stage-in or a
    stage-out runs on a buffer node's agent: both come back from their state
    volumes, the agent's copy goes on (bbmgrd lists it again and takes its
    result), the job has its whole input, ends COMPLETED with its whole output
    on the PFS; nothing is left behind."""
    dc = clean
    src, digest = make_input(dc, "in-ctl")
    dest = "%s/res-ctl-%s" % (WORK, phase)
    dc.sh("ctl", "rm -f %s" % dest)
    jid = dc.sbatch("sha256sum $HARMONIA_BB/in/big.bin; head -c 6M /dev/zero > $HARMONIA_BB/out",
                    BB, "stage_in source=%s destination=$HARMONIA_BB/in type=directory" % src,
                    "stage_out source=$HARMONIA_BB/out destination=%s type=file" % dest)
    wait_for(lambda: dc.job(jid).get("BurstBufferState") == phase, 90,
             "job %s %s" % (jid, phase))
    docker("restart", "-t", "20", dc.name("ctl"), timeout=180)
    dc.wait_ready()
    st = dc.wait_state(jid, {"COMPLETED", "FAILED", "CANCELLED"}, timeout=120)
    assert st["JobState"] == "COMPLETED", st
    assert st["BurstBufferState"] == "complete"
    out = dc.sh("ctl", "cat %s/slurm-%s.out" % (WORK, jid)).stdout
    assert out.split()[0] == digest
    assert dc.sh("ctl", "stat -c %%s %s" % dest).stdout.strip() == str(6 << 20)
    assert_nothing_left(dc, jid)


def test_controller_network_disconnected(clean):
    """ctl cut off the cluster's network while a job with a buffer runs and
    finishes its script, then connected again: the job completes and its
    stage-out lands on the PFS."""
    dc = clean
    jid = dc.sbatch("sleep 5; echo result-$SLURM_JOB_ID > $HARMONIA_BB/out; "
                    "touch %s/done-$SLURM_JOB_ID" % WORK, BB,
                    "stage_out source=$HARMONIA_BB/out destination=%s/res-net type=file" % WORK)
    st = dc.wait_state(jid, {"RUNNING"})
    node = st["NodeList"]
    docker("network", "disconnect", dc.network, dc.name("ctl"))
    try:
        # The job's script ends while slurmctld cannot hear from the node.
        wait_for(lambda: dc.sh(node, "test -e %s/done-%s" % (WORK, jid), check=False).returncode == 0,
                 60, "the job's script to end on %s" % node)
        # ctl has left the network (Slurm's commands there cannot resolve it).
        nets = docker("inspect", "-f", "{{json .NetworkSettings.Networks}}",
                      dc.name("ctl")).stdout
        assert dc.network not in nets
    finally:
        docker("network", "connect", "--alias", "ctl", dc.network, dc.name("ctl"))
    st = dc.wait_state(jid, {"COMPLETED", "FAILED"}, timeout=120)
    assert st["JobState"] == "COMPLETED", st
    assert st["BurstBufferState"] == "complete"
    assert dc.sh("ctl", "cat %s/res-net" % WORK).stdout.strip() == "result-%s" % jid
    assert_nothing_left(dc, jid)


# ---------------------------------------------------------------- whole cluster
def test_compose_restart_with_jobs_queued(clean):
    """docker compose restart with jobs queued (held) with buffers and stage-out:
    after the restart every job is still there, held, with its request; once
    released each completes and stages out; nothing is left behind."""
    dc = clean
    jids = [dc.sbatch("echo q-$SLURM_JOB_ID > $HARMONIA_BB/out", BB,
                      "stage_out source=$HARMONIA_BB/out destination=%s/res-q-%d type=file"
                      % (WORK, i), opts="-H") for i in range(4)]
    for j in jids:
        st = dc.wait_state(j, {"PENDING"})
        assert st["Reason"] == "JobHeldUser"
    dc.compose("restart", "-t", "20")
    dc.wait_ready()
    for j in jids:
        st = dc.job(j)
        assert st["JobState"] == "PENDING" and st["Reason"] == "JobHeldUser", st
        assert "jobbuffer capacity=1GiB" in dc.sh("ctl", "scontrol show job %s" % j).stdout
    dc.sh("ctl", "scontrol release %s" % ",".join(jids))
    for i, j in enumerate(jids):
        st = dc.wait_state(j, {"COMPLETED", "FAILED"}, timeout=120)
        assert st["JobState"] == "COMPLETED", st
        assert dc.sh("ctl", "cat %s/res-q-%d" % (WORK, i)).stdout.strip() == "q-%s" % j
    assert_nothing_left(dc)


# ---------------------------------------------------------------- buffer nodes
def bb_node(dc, name):
    """bbmgrd's record of a buffer node (bbmgr --json nodes), with its agent's."""
    return {n["name"]: n for n in dc.bbmgr("nodes")["nodes"]}[name]


def agent_runs(dc, node, kind, jid):
    """The agent of node took a stage_in or stage_out of the job (its log)."""
    log = dc.sh(node, "cat /var/log/harmonia/bbnoded.log", check=False).stdout
    return len(re.findall(r"\b%s \d+ of job %s: " % (kind, jid), log))


def wait_allocation(dc, jid):
    """The job's buffer nodes, once bbmgrd placed its allocation."""
    return wait_for(lambda: buffer_nodes(dc, jid), 90, "the allocation of job %s" % jid)


def wait_agent_down(dc, node):
    """agents.down_after (4 s) without a report: bbmgrd drains the node saying why."""
    n = wait_for(lambda: (lambda n: n["state"] == "drained" and n)(bb_node(dc, node)), 30,
                 "bbmgrd to drain %s" % node)
    assert n["reason"].startswith("buffer node agent down: no report for "), n
    assert n["agent"]["state"] == "down", n
    out = dc.sh("ctl", "bbmgr status").stdout
    assert "agents: 4, 3 up, 1 down\n  %s: buffer node agent down: no report for " % node in out, out
    return n


def wait_agent_up(dc, node):
    """The agent reports again: the drain it caused is lifted."""
    wait_for(lambda: (lambda n: n["state"] == "up" and n["agent"]["state"] == "up"
                      and not n.get("reason"))(bb_node(dc, node)), 60,
             "%s back up in bbmgrd" % node)


def lose(dc, node, action):
    """The buffer node's container stopped (bbnoded gets TERM), killed, or cut off
    the cluster's network (bbnoded runs on, unheard)."""
    if action == "disconnect":
        docker("network", "disconnect", dc.network, dc.name(node))
    else:
        docker(action, dc.name(node))
        assert not dc.running(node)


def restore(dc, node, action):
    if action == "disconnect":
        nets = docker("inspect", "-f", "{{json .NetworkSettings.Networks}}", dc.name(node)).stdout
        if dc.network not in nets:
            docker("network", "connect", "--alias", node, dc.network, dc.name(node))
    elif not dc.running(node):
        docker("start", dc.name(node))


def on_device(dc, node, jid):
    """The job's directory on the node's device, as ctl (read-only) sees it."""
    p = dc.sh("ctl", "ls -A /bb/%s/%s" % (node, jid), check=False)
    return p.stdout.split() if p.returncode == 0 else None


def partials(dc, dest):
    """Temporary files of a mover's copy to dest left next to it (the mover
    writes .NAME.harmonia-partial-TID and renames it NAME once whole)."""
    d, name = dest.rsplit("/", 1)
    return dc.sh("ctl", "find %s -maxdepth 1 -name '.%s.harmonia-partial-*'"
                 % (d, name)).stdout.split()


# The job: its input's digest, then (once the test touches go-JOBID) the digest
# again, and OUT MiB of results in $HARMONIA_BB/out with their digest.
JOB = ("sha256sum $HARMONIA_BB/in/big.bin; touch {w}/started-$SLURM_JOB_ID; "
       "while [ ! -e {w}/go-$SLURM_JOB_ID ]; do sleep 0.2; done; "
       "sha256sum $HARMONIA_BB/in/big.bin; head -c {out}M /dev/urandom > $HARMONIA_BB/out; "
       "sha256sum $HARMONIA_BB/out")


def submit(dc, src, dest, out_mib):
    jid = dc.sbatch(JOB.format(w=WORK, out=out_mib), BB,
                    "stage_in source=%s destination=$HARMONIA_BB/in type=directory" % src,
                    "stage_out source=$HARMONIA_BB/out destination=%s type=file" % dest)
    dc.sh("ctl", "rm -f %s && touch %s/go-%s" % (dest, WORK, jid))
    return jid


def job_output(dc, jid):
    """(input digests, results digest) the job printed."""
    lines = dc.sh("ctl", "cat %s/slurm-%s.out" % (WORK, jid)).stdout.splitlines()
    return [l.split()[0] for l in lines[:2]], lines[2].split()[0] if len(lines) > 2 else None


def bbmgrd_log_count(dc, text):
    """How many lines of bbmgrd's log hold text."""
    return int(dc.sh("ctl", "grep -c -F '%s' /var/log/harmonia/bbmgrd.log" % text,
                     check=False).stdout.strip() or 0)


def sha(dc, path):
    return dc.sh("ctl", "sha256sum %s" % path).stdout.split()[0]


def lose_during(dc, action, kind, in_mib, out_mib, tag):
    """A job started with an input of IN_MIB MiB and OUT_MIB MiB of results, and
    its first buffer node lost (lose()) once that node's agent copies its KIND
    (stage_in or stage_out): (job id, node, input digest, destination)."""
    src, digest = make_input(dc, "in-bb", mib=in_mib)
    dest = "%s/res-bb-%s-%s" % (WORK, tag, action)
    jid = submit(dc, src, dest, out_mib)
    node = wait_allocation(dc, jid)[0]
    wait_for(lambda: agent_runs(dc, node, kind, jid), 90, "the agent's " + kind)
    if action:
        lose(dc, node, action)
    return jid, node, digest, dest


def assert_completed(dc, jid, digest, dest):
    """The job COMPLETED, read its whole input, and its results are on the PFS."""
    st = dc.wait_state(jid, {"COMPLETED", "FAILED"}, timeout=120)
    assert st["JobState"] == "COMPLETED", st
    wait_for(lambda: dc.job(jid).get("BurstBufferState") == "complete", 60, "the stage-out")
    ins, res = job_output(dc, jid)
    assert ins == [digest, digest]
    assert sha(dc, dest) == res


@pytest.mark.parametrize("action", ["stop", "kill", "disconnect"])
def test_buffer_node_lost_during_stage_in(clean, slow_agents, action):
    """The agent of the job's buffer node lost (container stopped or killed, or
    cut off the network) while it copies the job's stage-in, for longer than
    agents.down_after: bbmgrd drains the node ("buffer node agent down: no report
    for N s", bbmgr nodes and bbmgr status) and, the job not running yet, moves
    its share of the buffer to another buffer node, where the stage-in runs
    again; the job is never held: it starts with $HARMONIA_BB on the new node,
    reads its whole input and completes with its stage-out while the lost node
    is still away.  Its old directory stays on the lost device while the agent
    is away; back, the agent removes it; nothing is left behind."""
    dc = clean
    jid, node, digest, dest = lose_during(dc, action, "stage_in", 3, 1, "in")
    try:
        wait_agent_down(dc, node)
        moved = wait_for(lambda: (lambda n: n if n and node not in n else None)(
            buffer_nodes(dc, jid)), 30, "the job's share to move off " + node)
        assert_completed(dc, jid, digest, dest)
        assert bbmgrd_log_count(dc, "job %s: buffer node %s down (no report): its share of "
                                "the buffer moved to %s" % (jid, node, moved[0])) == 1
        assert "stage-in failed" not in dc.job(jid).get("Reason", "")
        assert on_device(dc, node, jid) is not None
    finally:
        restore(dc, node, action)
    wait_agent_up(dc, node)
    wait_for(lambda: on_device(dc, node, jid) is None, 30, "the agent to remove the directory")
    assert not partials(dc, dest)
    assert_nothing_left(dc, jid)


@pytest.mark.parametrize("action", ["stop", "kill", "disconnect"])
def test_buffer_node_lost_while_job_runs(clean, slow_agents, action):
    """The agent of the job's buffer node lost while the job runs (its stage-in
    done), for longer than agents.down_after, and back before the job ends: the
    node is drained while the agent is away ("agent down") and put back in
    service when it reports; the job, which reaches its buffer through the
    compute node's mount, runs on, keeps its data (the agent, back, keeps the
    directories of live jobs), and completes with its stage-out; nothing is left
    behind."""
    dc = clean
    src, digest = make_input(dc, "in-bb", mib=1)
    dest = "%s/res-bb-run-%s" % (WORK, action)
    jid = dc.sbatch(JOB.format(w=WORK, out=1), BB,
                    "stage_in source=%s destination=$HARMONIA_BB/in type=directory" % src,
                    "stage_out source=$HARMONIA_BB/out destination=%s type=file" % dest)
    dc.sh("ctl", "rm -f %s" % dest)
    wait_for(lambda: dc.sh("ctl", "test -e %s/started-%s" % (WORK, jid),
                           check=False).returncode == 0, 90, "the job's script")
    node = buffer_nodes(dc, jid)[0]
    lose(dc, node, action)
    try:
        wait_agent_down(dc, node)
        assert dc.job(jid)["JobState"] == "RUNNING"
        assert on_device(dc, node, jid) == ["in"]
    finally:
        restore(dc, node, action)
    wait_agent_up(dc, node)
    assert on_device(dc, node, jid) == ["in"]
    dc.sh("ctl", "touch %s/go-%s" % (WORK, jid))
    assert_completed(dc, jid, digest, dest)
    assert_nothing_left(dc, jid)


@pytest.mark.parametrize("action", ["stop", "kill", "disconnect"])
def test_buffer_node_lost_during_stage_out(clean, slow_agents, action):
    """The agent of the job's buffer node lost while it copies the job's
    stage-out, for longer than agents.down_after: bbmgrd drains the node and
    fails the stage-out; the job ends COMPLETED with BurstBufferState
    teardown-fail and its record says why and where the data is ("stage-out
    failed: buffer node bbN down (no report): stage-out data lost; its data is
    kept in the job's buffer (/bb/bbN/JOBID on ...) until an administrator frees
    it with 'bbmgr release JOBID'"); bbmgrd keeps the buffer. A stopped or killed
    agent wrote nothing under the destination's name; one cut off the network
    runs on and finishes the copy it had begun (bbmgrd cannot know: it ignores
    the late result). Back, the node is up again, the buffer is still on the
    device with the job's results; 'bbmgr release' frees it and the agent
    removes it; nothing is left behind."""
    dc = clean
    jid, node, digest, dest = lose_during(dc, action, "stage_out", 1, 3, "out")
    try:
        wait_agent_down(dc, node)
        st = wait_for(lambda: (lambda j: j.get("BurstBufferState") == "teardown-fail" and j)(
            dc.job(jid)), 30, "the failed stage-out")
        assert st["JobState"] == "COMPLETED", st
        text = dc.sh("ctl", "scontrol show job %s" % jid).stdout
        why = ("burst_buffer/harmonia: stage-out: stage-out failed: buffer node %s down "
               "(no report): stage-out data lost; its data is kept in the job's buffer "
               "(/bb/%s/%s on " % (node, node, jid))
        assert why in text, text
        assert "until an administrator frees it with 'bbmgr release %s'" % jid in text, text
        assert leftovers(dc, jid)[0] == [jid]
    finally:
        restore(dc, node, action)
    wait_agent_up(dc, node)
    ins, res = job_output(dc, jid)
    assert ins == [digest, digest]
    # the only copy of the results, kept on its device
    assert sha(dc, "/bb/%s/%s/out" % (node, jid)) == res
    if action == "disconnect":
        assert sha(dc, dest) == res
        assert not partials(dc, dest)
    else:
        assert dc.sh("ctl", "test -e %s" % dest, check=False).returncode != 0
        # a stopped agent removes its temporary file; a killed one cannot, and
        # nobody runs the failed copy again: it stays, hidden, next to the
        # destination (the user may delete it)
        left = partials(dc, dest)
        assert len(left) == (1 if action == "kill" else 0), left
        dc.sh("ctl", "rm -f %s" % " ".join(left))
    p = dc.sh("ctl", "bbmgr release %s" % jid)
    assert p.stdout.startswith("job %s: released (" % jid), p.stdout
    wait_for(lambda: dc.job(jid).get("BurstBufferState") == "complete", 30,
             "the job's record to say so")
    assert_nothing_left(dc, jid)


def test_buffer_node_agent_killed_during_stage_in(clean, slow_agents):
    """The agent alone killed (SIGKILL) during a stage-in, restarted at once (as
    systemd's Restart= would, here by the container's entry point): bbmgrd lists
    the stage-in to the new process, which runs it again from the start; the
    node is never drained, the job completes with its whole input."""
    dc = clean
    jid, node, digest, dest = lose_during(dc, None, "stage_in", 3, 1, "agent-killed")
    down = "buffer node %s: buffer node agent down" % node
    downs = bbmgrd_log_count(dc, down)
    pid = dc.sh(node, "cat /run/harmonia/bbnoded.pid").stdout.strip()
    dc.sh(node, "kill -KILL %s" % pid)
    wait_for(lambda: agent_runs(dc, node, "stage_in", jid) == 2, 30,
             "the new agent to run the stage-in again")
    assert dc.sh(node, "cat /run/harmonia/bbnoded.pid").stdout.strip() != pid
    assert_completed(dc, jid, digest, dest)
    n = bb_node(dc, node)
    assert n["state"] == "up" and n["agent"]["state"] == "up", n
    assert bbmgrd_log_count(dc, down) == downs
    assert not partials(dc, dest)
    assert_nothing_left(dc, jid)
