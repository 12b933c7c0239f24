# SPDX-License-Identifier: GPL-2.0-or-later
"""The Docker Compose cluster as built: what testsuite/slurm cannot see from
inside one container.  One MUNGE key on every host, the shared PFS and the
per-node buffer devices mounted where the configuration says, a node agent
serving each buffer node, accounting with the TRES bb/harmonia, and a network
that is private to the cluster.
"""
import json
import os
import re
import subprocess

from conftest import WORK, docker, wait_for

COMPUTE = ["c1", "c2", "c3", "c4"]
BUFFER = ["bb1", "bb2", "bb3", "bb4"]


def test_one_munge_key(dc):
    """A credential made on any host is decoded on the controller."""
    for host in ["dbd"] + COMPUTE + BUFFER:
        cred = dc.sh(host, "munge -n").stdout.strip()
        q = dc.sh("ctl", "unmunge", input=cred + "\n")
        assert "STATUS:          Success (0)" in q.stdout, (host, q.stdout)


def test_pfs_and_devices_mounted(dc):
    """/pfs is one file system on every host; buffer node bbN's device is the
    volume on /bb/bbN of bbN, of every compute node and, read-only, of ctl (the
    login host), and only there among the buffer nodes."""
    dc.sh("c1", "echo pfs > %s/shared-check" % WORK)
    for host in ["ctl", "dbd", "db"] + COMPUTE + BUFFER:
        assert dc.sh(host, "cat %s/shared-check" % WORK).stdout == "pfs\n", host
    for i, bb in enumerate(BUFFER, 1):
        dc.sh(bb, "echo dev-%s > /bb/%s/.mount-check" % (bb, bb))
        for host in ["ctl"] + COMPUTE:
            assert dc.sh(host, "cat /bb/%s/.mount-check" % bb).stdout == "dev-%s\n" % bb
        p = dc.sh("ctl", "touch /bb/%s/.ctl-check" % bb, check=False)
        assert p.returncode != 0 and "Read-only file system" in p.stderr, p.stderr
        other = BUFFER[i % len(BUFFER)]
        assert dc.sh(other, "test -e /bb/%s" % bb, check=False).returncode != 0
        dc.sh(bb, "rm /bb/%s/.mount-check" % bb)
    mounts = {n["name"]: n["mount"] for n in dc.bbmgr("nodes")["nodes"]}
    assert mounts == {bb: "/bb/" + bb for bb in BUFFER}


def test_agents_serve_the_buffer_nodes(dc):
    """Each buffer node runs its agent (bbnoded), which bbmgrd sees up; a job's
    buffer directory is made by the agent of its node and its stage-in and
    stage-out are copied there, not by bbmgrd."""
    nodes = {n["name"]: n for n in dc.bbmgr("nodes")["nodes"]}
    for bb in BUFFER:
        pid = dc.sh(bb, "cat /run/harmonia/bbnoded.pid").stdout.strip()
        assert dc.sh(bb, "cat /proc/%s/comm" % pid).stdout.strip() == "bbnoded"
        assert nodes[bb]["agent"]["state"] == "up", nodes[bb]
    assert dc.sh("ctl", "bbmgr status").stdout.count("agents: 4, 4 up, 0 down") == 1
    dc.sh("ctl", "rm -rf {w}/agent-in {w}/agent-out && mkdir -p {w}/agent-in "
          "&& echo data > {w}/agent-in/f".format(w=WORK))
    jid = dc.sbatch("cat $HARMONIA_BB/in/f; echo $HARMONIA_BB_NODES; echo out > $HARMONIA_BB/out",
                    "jobbuffer capacity=1GiB",
                    "stage_in source=%s/agent-in destination=$HARMONIA_BB/in type=directory"
                    % WORK,
                    "stage_out source=$HARMONIA_BB/out destination=%s/agent-out type=file"
                    % WORK)
    st = dc.wait_state(jid, {"COMPLETED", "FAILED"})
    assert st["JobState"] == "COMPLETED", st
    out = dc.sh("ctl", "cat %s/slurm-%s.out" % (WORK, jid)).stdout.split()
    assert out[0] == "data"
    first = out[1].split(",")[0]
    log = dc.sh(first, "cat /var/log/harmonia/bbnoded.log").stdout
    assert "buffer directory /bb/%s/%s created" % (first, jid) in log
    assert "stage_in " in log and " of job %s: " % jid in log
    assert "stage_out " in log
    wait_for(lambda: dc.sh("ctl", "cat %s/agent-out" % WORK,
                           check=False).stdout == "out\n", 30, "the stage-out")
    bl = dc.sh("ctl", "grep -c 'of job %s handed to the agent of %s' /var/log/harmonia/bbmgrd.log"
               % (jid, first)).stdout.strip()
    assert bl == "2", bl            # the stage-in and the stage-out


def test_accounting_counts_bb_tres(dc):
    """sacct shows the job's buffer as the TRES bb/harmonia (in MB)."""
    jid = dc.sbatch("true", "jobbuffer capacity=10GiB")
    dc.wait_state(jid, {"COMPLETED"})

    def tres():
        p = dc.sh("ctl", "sacct -n -P -X --noconvert -j %s -o ReqTRES,AllocTRES" % jid)
        fields = p.stdout.strip().split("|")
        # slurmdbd records the request and the allocation in separate messages
        return len(fields) == 2 and all(fields) and fields
    req, alloc = wait_for(tres, 60, "sacct to record the job's TRES")
    assert "bb/harmonia=10240M" in req.split(","), req
    assert "bb/harmonia=10240M" in alloc.split(","), alloc


def test_network_is_private(dc):
    """The cluster's network is internal (no route out) and no container
    publishes a port on the host."""
    net = json.loads(docker("network", "inspect", dc.network).stdout)[0]
    assert net["Internal"] is True
    for host in ["db", "dbd", "ctl"] + COMPUTE + BUFFER:
        ports = docker("port", dc.name(host)).stdout.strip()
        assert ports == "", (host, ports)
        nets = json.loads(docker("inspect", "-f", "{{json .NetworkSettings.Networks}}",
                                 dc.name(host)).stdout)
        assert list(nets) == [dc.network], (host, list(nets))


def test_each_user_has_a_private_writable_pfs_directory(dc):
    """/home is not shared between the hosts: a test user works in /pfs/$USER,
    which exists on every host, is writable by its owner (from ctl, where the
    user submits, and from the compute node running the job) and closed to
    the other user."""
    for user, other in (("hmtest1", "hmtest2"), ("hmtest2", "hmtest1")):
        home = "/pfs/" + user
        dc.sh("ctl", "runuser -u %s -- sh -c 'echo mine > %s/by-user'" % (user, home))
        for host in COMPUTE:
            assert dc.sh(host, "cat %s/by-user" % home).stdout == "mine\n", host
        p = dc.sh("ctl", "runuser -u %s -- sh -c 'echo x > %s/intruder'" % (other, home),
                  check=False)
        assert p.returncode != 0 and "Permission denied" in p.stderr, p.stderr
        # a job of the user, submitted from /pfs/$USER as a user does, writes there
        p = dc.sh("ctl", "cd %s && runuser -u %s -- sbatch --parsable -o %s/job-%%j.out "
                  "--wrap 'echo from-job > %s/by-job; hostname'" % (home, user, home, home))
        jid = p.stdout.strip().split(";")[0]
        st = dc.wait_state(jid, {"COMPLETED", "FAILED"})
        assert st["JobState"] == "COMPLETED", st
        assert dc.sh("ctl", "cat %s/by-job" % home).stdout == "from-job\n"
        out = dc.sh("ctl", "stat -c %%U %s/job-%s.out" % (home, jid)).stdout.strip()
        assert out == user


def test_up_prints_a_hint_that_works(dc):
    """'up' on the running cluster ends with a command to try; run as printed,
    in a shell without HARMONIA_DOCKER_PROJECT, it reaches this cluster."""
    env = dict(os.environ)
    env["HARMONIA_DOCKER_PROJECT"] = dc.project
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run([os.path.join(top, "scripts", "cluster-docker"), "up"], env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    m = re.search(r"up in \d+ s \(image [^)]*\): (.*)$", p.stderr.strip().splitlines()[-1])
    assert m, p.stderr
    hint = m.group(1).replace("scripts/cluster-docker", os.path.join(top, "scripts",
                                                                     "cluster-docker"))
    env.pop("HARMONIA_DOCKER_PROJECT")
    q = subprocess.run(["sh", "-c", hint], env=env, capture_output=True, text=True,
                       timeout=60)
    assert q.returncode == 0, "%s: %s%s" % (hint, q.stdout, q.stderr)
    assert "PARTITION" in q.stdout and "debug" in q.stdout, q.stdout


def test_up_removes_what_a_killed_run_left(dc):
    """A run killed before its 'down' leaves stopped containers and volumes with
    its Slurm state (another release's or cluster's, whose clustername slurmctld
    refuses: 'CLUSTER NAME MISMATCH').  'up' removes them, says so, and starts a
    cluster that works; the controller's state is its own."""
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    image = docker("inspect", "-f", "{{.Config.Image}}", dc.name("ctl")).stdout.strip()
    dc.compose("stop", "--timeout", "10")
    assert not dc.running("ctl")
    # the state of another cluster, as a killed run of another release leaves it
    docker("run", "--rm", "--network", "none", "-v",
           "%s_ctl-state:/s" % dc.project, "--entrypoint", "/bin/sh", image, "-c",
           "echo 'other|3759' > /s/clustername")
    env = dict(os.environ, HARMONIA_DOCKER_PROJECT=dc.project)
    p = subprocess.run([os.path.join(top, "scripts", "cluster-docker"), "up"], env=env,
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    assert re.search(r"its controller is not running, but \d+ container\(s\) and \d+ "
                     r"volume\(s\) of it remain .*removing them", p.stderr), p.stderr
    name = dc.sh("ctl", "cat /var/lib/slurm/slurmctld/clustername").stdout
    assert not name.startswith("other"), name
    q = dc.sh("ctl", "sinfo -h -o %P")
    assert "debug" in q.stdout, q.stdout
    dc.wait_ready()
    # the fault tests that follow work on the new PFS volume
    dc.sh("ctl", "mkdir -p %s && chmod 0755 %s" % (WORK, WORK))
