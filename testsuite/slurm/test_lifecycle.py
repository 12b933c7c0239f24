# SPDX-License-Identifier: GPL-2.0-or-later
"""The life cycle of jobs with buffers on the real cluster with a real bbmgrd:
allocation, environment, stage-in/out, teardown, cancel at each stage,
afterburstbuffer, persistent buffers, waiting for space, and restarts of
bbmgrd and slurmctld."""
import os
import time

import pytest

from harmonia_test import wait
from conftest import job_ended as ended, script, wait_for

DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}


pytestmark = pytest.mark.usefixtures("need_bbmgrd")


def env_of(text):
    return dict(l.split("=", 1) for l in text.splitlines() if l.startswith("HARMONIA_"))


def bbmgr_job(cluster, jobid):
    """bbmgrd's view of a job, or None once it is forgotten (ended jobs)."""
    j = cluster.bbmgr("job", str(jobid), check=False)
    return j if isinstance(j, dict) else None


def reason(cluster, jobid):
    """The pending reason as squeue shows it (the plugin's note when it has one)."""
    return cluster.run("squeue", "-h", "-j", str(jobid), "-o", "%r").stdout.strip()


def test_allocation_environment_and_teardown(cluster):
    rc, jobid, _, err = cluster.sbatch(script(
        "jobbuffer capacity=10GiB nodes=2",
        "iohints w_iter=1m io_volume=1GiB phases=3",
        body="env | grep ^HARMONIA_ | sort; test -d \"$HARMONIA_BB\" && echo bb-ok; sleep 3"))
    assert rc == 0, err
    cluster.wait_state(jobid, {"RUNNING"})
    # bbmgrd has the job, its hints and its allocation while it runs
    job = wait_for(lambda: (lambda j: j if j and j.get("allocation") else None)(
        bbmgr_job(cluster, jobid)), what="allocation in bbmgrd")
    assert job["hints"]["w_iter"] == 60 and job["hints"]["io_volume"] == 1073741824
    assert job["uid"] == os.getuid()
    assert cluster.wait_state(jobid, DONE) == "COMPLETED"
    out = cluster.out(jobid)
    env = env_of(out)
    assert "bb-ok" in out
    assert env["HARMONIA_JOBID"] == jobid
    # the JobURL of harmonia.conf (http://127.0.0.1:PORT on the private cluster)
    assert env["HARMONIA_URL"].startswith("http://")
    hconf = cluster.harmonia_conf
    if hconf:
        assert env["HARMONIA_URL"] == hconf["joburl"]
    nodes = env["HARMONIA_BB_NODES"].split(",")
    # capacity 10GiB on nodes=2 over-provisioned by 1.5 -> 3 nodes
    assert len(nodes) == 3 and len(set(nodes)) == 3
    assert env["HARMONIA_BB"].endswith("/" + jobid)
    if "mungesocket" in hconf:
        assert env["HARMONIA_MUNGE_SOCKET"] == hconf["mungesocket"]
    if cluster.cdir:
        assert env["HARMONIA_MUNGE_SOCKET"] == cluster.munge_socket
    # teardown: the job ended in bbmgrd and its space is free again
    wait_for(lambda: ended(cluster, jobid), what="job ended in bbmgrd")
    assert cluster.job(jobid)["BurstBufferState"] == "complete"


def test_show_burst_lists_bbmgrd_pools(cluster):
    out = cluster.run("scontrol", "show", "burst").stdout
    assert "PoolName[0]=nvme" in out
    assert "TotalSpace=1TiB" in out


def test_bbstat_shows_daemon_status(cluster):
    out = cluster.run("scontrol", "show", "bbstat").stdout
    # harmonia.conf's BbmgrURL (unix:DIR/run/bbmgrd.sock on the private cluster)
    url = cluster.harmonia_conf.get("bbmgrurl", "")
    assert "manager daemon: " + url in out and "not configured" not in out
    if cluster.cdir:
        assert "manager daemon: unix:" in out
    assert "\n  policy: fairshare\n" in out and "{" not in out


def test_capacity_larger_than_pool_is_refused(cluster):
    rc, jobid, _, err = cluster.sbatch(script("jobbuffer capacity=2TiB pool=nvme"))
    assert rc != 0
    assert err.splitlines()[0] == \
        "sbatch: error: #BB_HARMONIA: jobbuffer: capacity 2TiB is larger than pool 'nvme' (1TiB)"


def test_cancel_while_running_releases_the_buffer(cluster):
    rc, jobid, _, err = cluster.sbatch(script("jobbuffer capacity=4GiB", body="sleep 60"))
    assert rc == 0, err
    cluster.wait_state(jobid, {"RUNNING"})
    wait_for(lambda: (bbmgr_job(cluster, jobid) or {}).get("allocation"), what="allocation")
    cluster.run("scancel", jobid)
    assert cluster.wait_state(jobid, DONE) == "CANCELLED"
    wait_for(lambda: ended(cluster, jobid), what="teardown")


def test_cancel_while_pending_held(cluster):
    rc, jobid, _, err = cluster.sbatch(script("jobbuffer capacity=4GiB"), "--hold")
    assert rc == 0, err
    # the behaviour: a held job stays pending with its buffer not made (a window)
    time.sleep(wait.scaled(1.5))
    st = cluster.job(jobid)
    assert st["JobState"] == "PENDING" and st["BurstBufferState"] == "pending"
    cluster.run("scancel", jobid)
    assert cluster.wait_state(jobid, DONE) == "CANCELLED"
    assert ended(cluster, jobid)


def test_afterburstbuffer_dependency(cluster):
    rc, a, _, err = cluster.sbatch(script("jobbuffer capacity=1GiB", body="sleep 2"))
    assert rc == 0, err
    rc, b, _, err = cluster.sbatch(None, "--dependency=afterburstbuffer:%s" % a,
                                   "--wrap", "true")
    assert rc == 0, err
    assert cluster.wait_state(b, DONE, timeout=60) == "COMPLETED"
    ja, jb = cluster.job(a), cluster.job(b)
    assert ja["BurstBufferState"] == "complete"
    # b started only after a's stage-out was over
    assert jb["StartTime"] >= ja["EndTime"]


def test_job_waits_for_free_space(cluster):
    big = "jobbuffer capacity=700GiB"
    rc, a, _, err = cluster.sbatch(script(big, body="sleep 6"))
    assert rc == 0, err
    cluster.wait_state(a, {"RUNNING"})
    rc, b, _, err = cluster.sbatch(script(big, body="true"))
    assert rc == 0, err
    wait_for(lambda: reason(cluster, b) ==
             "burst_buffer/harmonia: waiting for 700GiB of free buffer space",
             timeout=20, what="space note")
    assert cluster.job(b)["JobState"] == "PENDING"
    assert cluster.wait_state(b, DONE, timeout=90) == "COMPLETED"


def test_persistent_buffer_across_jobs(cluster):
    rc, j1, _, err = cluster.sbatch(script("create_persistent name=shared1 capacity=2GiB"))
    assert rc == 0, err
    assert cluster.wait_state(j1, DONE) == "COMPLETED"
    pb = cluster.bbmgr("persistent")
    names = [p["name"] for p in pb["persistent"]]
    assert "shared1" in names
    rc, j2, _, err = cluster.sbatch(script("use_persistent name=shared1",
                                           body="env | grep ^HARMONIA_ | sort"))
    assert rc == 0, err
    assert cluster.wait_state(j2, DONE) == "COMPLETED"
    env = env_of(cluster.out(j2))
    assert env["HARMONIA_PERSISTENT_SHARED1"].endswith("/persistent/shared1")
    rc, j3, _, err = cluster.sbatch(script("destroy_persistent name=shared1"))
    assert rc == 0, err
    assert cluster.wait_state(j3, DONE) == "COMPLETED"
    wait_for(lambda: "shared1" not in [p["name"] for p in cluster.bbmgr("persistent")["persistent"]],
             what="persistent buffer destroyed")


def test_bbmgrd_down_at_stage_in_then_back(cluster):
    cluster.need_control()
    cluster.control("bbmgrd-stop")
    try:
        rc, jobid, _, err = cluster.sbatch(script("jobbuffer capacity=1GiB", body="echo ran"))
        assert rc == 0, err     # submission does not need bbmgrd
        wait_for(lambda: reason(cluster, jobid).startswith(
                 "burst_buffer/harmonia: bbmgrd unreachable ("), timeout=20,
                 what="unreachable note")
        assert cluster.job(jobid)["JobState"] == "PENDING"
    finally:
        cluster.control("bbmgrd-start")
    assert cluster.wait_state(jobid, DONE, timeout=60) == "COMPLETED"
    assert cluster.out(jobid) == "ran\n"


def test_slurmctld_restart_while_running(cluster):
    cluster.need_control()
    rc, jobid, _, err = cluster.sbatch(script("jobbuffer capacity=2GiB", body="sleep 6; echo ok"))
    assert rc == 0, err
    cluster.wait_state(jobid, {"RUNNING"})
    cluster.control("slurmctld-restart")
    assert cluster.wait_state(jobid, DONE, timeout=90) == "COMPLETED"
    assert cluster.job(jobid)["BurstBufferState"] == "complete"
    wait_for(lambda: ended(cluster, jobid), what="teardown after restart")


PHASE = r'''
ph() {  # one I/O phase of $1 bytes through bbmgrd's API, as the job's user
    local url=${HARMONIA_URL#http://} path="/v1/jobs/$HARMONIA_JOBID/phases" id
    id=$(curl -s -X POST "http://$url$path" -H "Content-Type: application/json" \
         -H "Authorization: MUNGE $(munge -n -s "POST $path" -S "$MUNGE_SOCKET")" \
         -d "{\"volume\": $1, \"wait\": 10}" | sed -n 's/^{"id": *\([0-9]*\).*/\1/p')
    path="/v1/phases/$id/finish"
    curl -s -X POST "http://$url$path" -H "Content-Type: application/json" \
         -H "Authorization: MUNGE $(munge -n -s "POST $path" -S "$MUNGE_SOCKET")" \
         -d '{}' >/dev/null
}
'''


def test_hints_learned_from_history(cluster):
    """A job run that did I/O phases teaches bbmgrd its w_iter and volume; the
    next job of the same user and name without iohints gets them, marked.
    The job authenticates with the munged of its node: $HARMONIA_MUNGE_SOCKET as
    the plugin gives it (harmonia.conf MungeSocket, or slurm.conf AuthInfo)."""
    body = PHASE + "MUNGE_SOCKET=${HARMONIA_MUNGE_SOCKET:-/run/munge/munge.socket.2}\n" \
        "ph 1048576; sleep 1; ph 1048576; sleep 1; ph 1048576\n"
    rc, j1, _, err = cluster.sbatch(script("jobbuffer capacity=1GiB", body=body),
                                    "-J", "learnme")
    assert rc == 0, err
    assert cluster.wait_state(j1, DONE) == "COMPLETED", cluster.out(j1)
    wait_for(lambda: ended(cluster, j1), what="first job ended")
    rc, j2, _, err = cluster.sbatch(script("jobbuffer capacity=1GiB", body="true"),
                                    "-J", "learnme")
    assert rc == 0, err
    lines = cluster.job(j2)["BurstBuffer"].splitlines()
    assert lines[0] == "#BB_HARMONIA jobbuffer capacity=1GiB"
    assert lines[1].startswith("#BB_HARMONIA iohints w_iter=")
    assert lines[1].endswith(" io_volume=1MiB io=write priority=1 source=learned")
    w_iter = float(lines[1].split("w_iter=")[1].split("s ")[0])
    assert 0.5 < w_iter < 5
    # a name with no history gets nothing learned
    rc, j3, _, err = cluster.sbatch(script("jobbuffer capacity=1GiB", body="true"),
                                    "-J", "nohistory")
    assert rc == 0, err
    assert cluster.job(j3)["BurstBuffer"] == "#BB_HARMONIA jobbuffer capacity=1GiB"
