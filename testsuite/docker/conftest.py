# SPDX-License-Identifier: GPL-2.0-or-later
"""Fixtures of the fault tests of the Docker Compose cluster (testsuite/docker).

They run on the Docker host and act on the containers (docker kill, stop,
restart, network disconnect); every Slurm and bbmgr command runs inside the
controller container (docker exec): nothing on the host talks to a container's
address.  scripts/cluster-docker test starts them with HARMONIA_DOCKER_PROJECT
set to the running cluster's Compose project; without it they skip.
"""
import json
import os
import subprocess
import time

import pytest

PROJECT = os.environ.get("HARMONIA_DOCKER_PROJECT")
COMPOSE_FILE = os.environ.get("HARMONIA_DOCKER_COMPOSE_FILE",
                              os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                           "docker-compose.yml"))
WORK = "/pfs/faults"        # on the shared "PFS" volume, seen by every host


def docker(*args, check=True, timeout=120):
    p = subprocess.run(["docker"] + list(args), capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError("docker %s failed (%d): %s%s" % (" ".join(args), p.returncode,
                                                             p.stdout, p.stderr))
    return p


def wait_for(pred, timeout=60, what="condition", interval=0.5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError("timed out after %ds waiting for %s" % (timeout, what))


class DockerCluster:
    def __init__(self, project):
        self.project = project
        self.network = project + "_cluster"
        self.seq = 0

    def name(self, service):
        return "%s-%s" % (self.project, service)

    def sh(self, service, command, check=True, timeout=60, input=None):
        """bash -c COMMAND in the service's container."""
        args = ["docker", "exec"] + (["-i"] if input is not None else []) + \
            [self.name(service), "bash", "-c", command]
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                           input=input)
        if check and p.returncode != 0:
            raise AssertionError("%s: %s failed (%d): %s%s" % (service, command, p.returncode,
                                                               p.stdout, p.stderr))
        return p

    def running(self, service):
        p = docker("inspect", "-f", "{{.State.Running}}", self.name(service), check=False)
        return p.stdout.strip() == "true"

    def compose(self, *args, timeout=300):
        cmd = ["docker-compose"]
        if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
            cmd = ["docker", "compose"]
        p = subprocess.run(cmd + ["-p", self.project, "-f", COMPOSE_FILE] + list(args),
                           capture_output=True, text=True, timeout=timeout)
        assert p.returncode == 0, p.stdout + p.stderr
        return p

    # -- Slurm, inside ctl
    def sbatch(self, body, *directives, opts=""):
        """Submit a one-node job with these #BB_HARMONIA directives; its job id."""
        self.seq += 1
        path = "%s/job-%d-%d.sh" % (WORK, os.getpid(), self.seq)
        text = "#!/bin/bash\n#SBATCH -N1\n" + "".join("#BB_HARMONIA %s\n" % d for d in directives) \
            + body + "\n"
        self.sh("ctl", "cat > %s" % path, input=text)
        p = self.sh("ctl", "sbatch --parsable -o %s/slurm-%%j.out %s %s" % (WORK, opts, path))
        return p.stdout.strip().split(";")[0]

    def job(self, jobid):
        """scontrol show job as a dict ({} once Slurm has forgotten it)."""
        p = self.sh("ctl", "scontrol show job %s" % jobid, check=False)
        text = p.stdout
        d = {}
        if "BurstBuffer=" in text and "BurstBufferState=" in text:
            a = text.index("BurstBuffer=")
            b = text.index("BurstBufferState=")
            text = text[:a] + text[b:]
        for tok in text.split():
            if "=" in tok:
                k, v = tok.split("=", 1)
                d.setdefault(k, v)
        return d

    def wait_state(self, jobid, states, timeout=90):
        last = {}

        def ok():
            last.update(self.job(jobid))
            return last.get("JobState") in states
        try:
            wait_for(ok, timeout, "job %s in %s" % (jobid, states))
        except AssertionError:
            raise AssertionError("job %s: %s/%s (reason %s) after %ds, wanted %s" % (
                jobid, last.get("JobState"), last.get("BurstBufferState"), last.get("Reason"),
                timeout, states))
        return last

    def node(self, name):
        p = self.sh("ctl", "scontrol show node %s" % name)
        d = {}
        for tok in p.stdout.replace("\n", " ").split(" "):
            if "=" in tok:
                k, v = tok.split("=", 1)
                d.setdefault(k, v)
        # Reason= runs to the end of its line
        for line in p.stdout.splitlines():
            line = line.strip()
            if line.startswith("Reason="):
                d["Reason"] = line[len("Reason="):]
        return d

    def bbmgr(self, *args):
        p = self.sh("ctl", "bbmgr --json " + " ".join(args))
        return json.loads(p.stdout)

    def buffer_dirs(self):
        """What the buffer devices hold besides the agents' spares, locks and kept-data
        records: job directories and persistent buffers (the empty 'persistent' directory is
        not listed, nor the trash directories themselves: what is in a trash is
        listed).  Read on ctl, which mounts every device read-only."""
        p = self.sh("ctl", "find /bb/bb1 /bb/bb2 /bb/bb3 /bb/bb4 -mindepth 1 -maxdepth 3 "
                    "-not -path '*/.harmonia-spare*' -not -path '/bb/bb?/persistent' "
                    "-not -name .harmonia-agent.lock -not -name .harmonia-kept "
                    "-not -path '/bb/bb?/.harmonia-trash' "
                    "-not -path '/bb/bb?/persistent/.harmonia-trash' "
                    "-not -path '/bb/bb?/*/*/*' -o -path '/bb/bb?/persistent/.harmonia-trash/*' "
                    "-not -path '/bb/bb?/persistent/.harmonia-trash/*/*'")
        return [l.split("/")[-1] for l in p.stdout.splitlines() if l]

    def wait_ready(self, timeout=180):
        """The controller's daemons up, the four compute nodes idle, the four
        buffer nodes' agents reporting."""
        def ready():
            if not self.running("ctl"):
                return False
            if self.sh("ctl", "test -e /run/harmonia/ready && test -S /run/harmonia/bbmgrd.sock",
                       check=False).returncode != 0:
                return False
            p = self.sh("ctl", "sinfo -h -N -t idle,mix,alloc -o %N", check=False)
            if p.returncode != 0 or len(set(p.stdout.split())) < 4:
                return False
            # every buffer node's agent reports, with the current bbmgr.yaml
            return self.sh("ctl", "/opt/harmonia/docker/control agents-up",
                           check=False).returncode == 0
        wait_for(ready, timeout, "the cluster to be ready")


@pytest.fixture(scope="session")
def dc():
    if not PROJECT:
        pytest.skip("no Docker cluster: run through scripts/cluster-docker test")
    c = DockerCluster(PROJECT)
    if not c.running("ctl"):
        pytest.skip("the Docker cluster '%s' is not running (scripts/cluster-docker up)" % PROJECT)
    c.wait_ready()
    c.sh("ctl", "mkdir -p %s && chmod 0755 %s" % (WORK, WORK))
    return c


@pytest.fixture
def clean(dc):
    """Each test starts and ends with no job queued and every container up."""
    dc.sh("ctl", "scancel --full $(squeue -h -o %A) 2>/dev/null; true", check=False)
    yield dc
    for s in ["ctl", "c1", "c2", "c3", "c4", "bb1", "bb2", "bb3", "bb4"]:
        if not dc.running(s):
            docker("start", dc.name(s))
    dc.sh("ctl", "scancel --full $(squeue -h -o %A) 2>/dev/null; true", check=False)
    dc.wait_ready()
