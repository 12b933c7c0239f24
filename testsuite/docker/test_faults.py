# SPDX-License-Identifier: GPL-2.0-or-later
"""Faults that only a cluster of several hosts can have, on the Docker Compose
cluster: a compute node's container killed under a job with a buffer, the
controller's container restarted during a stage-in or cut off its network, the
whole cluster restarted with jobs queued, a buffer node's container stopped or
killed.  Each test asserts what a user sees (squeue/scontrol states and reason
texts, the files on the PFS) and that nothing is left behind: no job in bbmgrd,
no capacity counted in its pools, no directory on the buffer devices.
doc/docker.md says what each fault does to the job.
"""
import contextlib

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


@contextlib.contextmanager
def slow_mover(dc, rate="1 MB/s"):
    """bbmgrd on ctl restarted with its mover capped at 'rate'; restored afterwards."""
    conf = "/etc/harmonia/bbmgr.yaml"
    dc.sh("ctl", "cp %s %s.orig && printf 'mover:\\n  max_rate: %s\\n  chunk: 256KiB\\n' >> %s"
          % (conf, conf, rate, conf))
    dc.sh("ctl", "/opt/harmonia/docker/control bbmgrd-stop && /opt/harmonia/docker/control bbmgrd-start")
    try:
        yield
    finally:
        dc.wait_ready()
        dc.sh("ctl", "mv %s.orig %s" % (conf, conf))
        dc.sh("ctl", "/opt/harmonia/docker/control bbmgrd-stop && /opt/harmonia/docker/control bbmgrd-start")


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
def test_controller_restarted_mid_stage(clean, phase):
    """docker restart of ctl (slurmctld and bbmgrd) while a stage-in or a
    stage-out runs: both come back from their state volumes, the stage
    completes, the job has its whole input, ends COMPLETED with its whole
    output on the PFS; nothing is left behind."""
    dc = clean
    src, digest = make_input(dc, "in-ctl")
    dest = "%s/res-ctl-%s" % (WORK, phase)
    dc.sh("ctl", "rm -f %s" % dest)
    with slow_mover(dc, "1 MB/s"):
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
@pytest.mark.parametrize("action", ["stop", "kill", "disconnect"])
@pytest.mark.parametrize("phase", ["stage-in", "running", "stage-out"])
def test_buffer_node_container_lost(clean, phase, action):
    """A buffer node's container stopped, killed or cut off the network during
    the job's stage-in, run or stage-out.  Without the node agent (bbnoded) no
    process of the buffer node takes part in a job: its device is a volume that
    ctl and the compute nodes mount, and bbmgrd's embedded mover moves the
    data.  So the job completes with its data, and bbmgrd still counts the
    node as up."""
    dc = clean
    src, digest = make_input(dc, "in-bb", mib=4)
    with slow_mover(dc, "1 MB/s"):
        jid = dc.sbatch("sha256sum $HARMONIA_BB/in/big.bin; touch %s/started-$SLURM_JOB_ID; "
                        "sleep 3; head -c 4M /dev/zero > $HARMONIA_BB/out" % WORK, BB,
                        "stage_in source=%s destination=$HARMONIA_BB/in type=directory" % src,
                        "stage_out source=$HARMONIA_BB/out destination=%s/res-bb-%s type=file"
                        % (WORK, phase))
        if phase == "stage-in":
            wait_for(lambda: dc.job(jid).get("BurstBufferState") == "staging-in", 60, "staging-in")
        elif phase == "running":
            wait_for(lambda: dc.sh("ctl", "test -e %s/started-%s" % (WORK, jid),
                                   check=False).returncode == 0, 90, "the job's script")
        else:
            wait_for(lambda: dc.job(jid).get("BurstBufferState") == "staging-out", 90,
                     "staging-out")
        nodes = buffer_nodes(dc, jid)
        assert nodes
        if action == "disconnect":
            docker("network", "disconnect", dc.network, dc.name(nodes[0]))
        else:
            docker(action, dc.name(nodes[0]))
            assert not dc.running(nodes[0])
        try:
            st = dc.wait_state(jid, {"COMPLETED", "FAILED"}, timeout=120)
        finally:
            if action == "disconnect":
                docker("network", "connect", "--alias", nodes[0], dc.network,
                       dc.name(nodes[0]))
    assert st["JobState"] == "COMPLETED", st
    assert st["BurstBufferState"] == "complete"
    out = dc.sh("ctl", "cat %s/slurm-%s.out" % (WORK, jid)).stdout
    assert out.split()[0] == digest
    assert dc.sh("ctl", "stat -c %%s %s/res-bb-%s" % (WORK, phase)).stdout.strip() == str(4 << 20)
    up = {n["name"]: n for n in dc.bbmgr("nodes")["nodes"]}
    assert up[nodes[0]]["state"] == "up"
    assert_nothing_left(dc, jid)
