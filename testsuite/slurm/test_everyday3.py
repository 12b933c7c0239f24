# SPDX-License-Identifier: GPL-2.0-or-later
"""Allocation when a job is about to run in a partition that oversubscribes
(OverSubscribe=FORCE, the test cluster's default partition): a job that waits
for CPUs or for its array's throttle holds no buffer, and its pending reason
says what it waits for; the drained space in scontrol show bbstat and bbmgr."""
import time

import pytest

from harmonia_test import wait

from conftest import script, wait_for
from test_everyday import bbmgr_text, exclusive_partition, pool_used, squeue_reason  # noqa: F401


def no_jobs(cluster):
    wait_for(lambda: not cluster.bbmgr("jobs")["jobs"], timeout=60, what="bbmgrd without jobs")


def held(cluster, jobid):
    """The job's buffer as bbmgrd and scontrol show burst list it (or None)."""
    bbmgr = [j for j in cluster.bbmgr("jobs")["jobs"] if j["id"] == jobid]
    burst = [l for l in cluster.run("scontrol", "show", "burst").stdout.splitlines()
             if l.strip().startswith("JobID=%s " % jobid)]
    return bbmgr or burst or None


def partition(cluster, name=None):
    """scontrol show partition's fields of NAME (the first partition by default)."""
    out = cluster.run("scontrol", "show", "partition", "-o", *([name] if name else []))
    return dict(f.split("=", 1) for f in out.stdout.splitlines()[0].split() if "=" in f)


def take_cpus(cluster, part, times=1):
    """Jobs that take every CPU of every node of PART, TIMES over, running."""
    fields = partition(cluster, part)
    nodes = int(fields["TotalNodes"])
    blockers = []
    try:
        for _ in range(times):
            rc, b, _, err = cluster.sbatch(None, "-p", part, "-N", str(nodes),
                                           "--ntasks-per-node",
                                           str(int(fields["TotalCPUs"]) // nodes),
                                           "--wrap", "sleep 300")
            assert rc == 0, err
            blockers.append(b)
        for b in blockers:
            cluster.wait_state(b, {"RUNNING"})
    except BaseException:
        cancel(cluster, blockers)
        raise
    return blockers


def cancel(cluster, jobs):
    for j in jobs:
        cluster.run("scancel", j, check=False)


@pytest.fixture
def full_partition(cluster):
    """The default partition (OverSubscribe=FORCE:N) with every CPU of every
    node taken N times over: the name of the partition and the blockers."""
    fields = partition(cluster)
    assert fields["OverSubscribe"].startswith("FORCE:"), fields["OverSubscribe"]
    part = fields["PartitionName"]
    blockers = take_cpus(cluster, part, int(fields["OverSubscribe"].split(":")[1]))
    yield part, blockers
    cancel(cluster, blockers)


def waits_for_cpus(cluster, part):
    """A job with a buffer submitted to PART, whose CPUs are all taken: over
    several scheduler passes it says Resources (not BurstBufferResources) and
    holds no buffer.  Its id."""
    no_jobs(cluster)
    used0 = pool_used(cluster)
    rc, jobid, _, err = cluster.sbatch(script("jobbuffer capacity=100GiB", body="echo ran"),
                                       "-p", part)
    assert rc == 0, err
    try:
        wait_for(lambda: squeue_reason(cluster, jobid) == "Resources", timeout=30,
                 what="the pending reason Resources")
        for _ in range(10):
            time.sleep(wait.scaled(0.5))   # several scheduler passes (bf_interval=1)
            job = cluster.job(jobid)
            assert job["JobState"] == "PENDING" and job["BurstBufferState"] == "pending", job
            assert squeue_reason(cluster, jobid) == "Resources", job
            assert held(cluster, jobid) is None, held(cluster, jobid)
            assert pool_used(cluster) == used0
    except BaseException:
        cancel(cluster, [jobid])    # the next tests start without it
        raise
    return jobid


def test_job_waiting_for_cpus_in_forced_partition_holds_no_buffer(cluster, need_bbmgrd,
                                                                  full_partition):
    part, blockers = full_partition
    jobid = waits_for_cpus(cluster, part)
    # CPUs free: its buffer is set up and it runs
    cancel(cluster, blockers)
    assert cluster.wait_state(jobid, {"COMPLETED", "FAILED"}, timeout=60) == "COMPLETED"
    assert cluster.out(jobid) == "ran\n"


def test_job_waiting_for_cpus_in_exclusive_partition_says_resources(cluster, need_bbmgrd,
                                                                  exclusive_partition):
    blockers = take_cpus(cluster, exclusive_partition)
    try:
        jobid = waits_for_cpus(cluster, exclusive_partition)
    finally:
        cancel(cluster, blockers)
    assert cluster.wait_state(jobid, {"COMPLETED", "FAILED"}, timeout=60) == "COMPLETED"


def test_throttled_array_in_forced_partition_holds_no_buffer(cluster, need_bbmgrd,
                                                             full_partition):
    part, blockers = full_partition
    no_jobs(cluster)
    rc, array_id, _, err = cluster.sbatch(script("jobbuffer capacity=100GiB", body="true"),
                                          "-p", part, "--array=0-3%1")
    assert rc == 0, err
    # its tasks wait for CPUs and say so (the throttle lets one of them run)
    wait_for(lambda: set(squeue_reason(cluster, array_id).split()) == {"Resources"},
             timeout=30, what="the pending reason Resources")
    for _ in range(10):
        time.sleep(wait.scaled(0.5))   # several scheduler passes (bf_interval=1)
        jobs = cluster.bbmgr("jobs")["jobs"]
        assert not jobs, jobs
        assert not [l for l in cluster.run("scontrol", "show", "burst").stdout.splitlines()
                    if l.strip().startswith("JobID=")]
        assert set(squeue_reason(cluster, array_id).split()) == {"Resources"}, \
            cluster.run("squeue", "-r", "-o", "%i %T %r").stdout
    cancel(cluster, blockers)
    wait_for(lambda: not cluster.run("squeue", "-h", "-j", array_id).stdout.strip(),
             timeout=120, what="all tasks done")


# ------------------------------------------------------------------ drained space

GiB = 2**30


def test_bbstat_and_bbmgr_add_free_used_and_drained_up_to_total(cluster, need_bbmgrd):
    no_jobs(cluster)
    nodes = cluster.bbmgr("nodes")["nodes"]
    node = nodes[0]["name"]
    pool = [p for p in cluster.bbmgr("pools")["pools"] if p["name"] == nodes[0]["pool"]][0]
    cap = [n["capacity"] for n in nodes if n["name"] == node][0]
    p = bbmgr_text(cluster, "drain", node, "disk check")
    assert p.returncode == 0, p.stderr
    job = None
    try:
        rc, job, _, err = cluster.sbatch(script("jobbuffer capacity=100GiB pool=%s"
                                                % pool["name"], body="sleep 300"))
        assert rc == 0, err
        cluster.wait_state(job, {"RUNNING"})
        # bbmgrd: free + used + drained = capacity, in its JSON and its table
        p = [p for p in cluster.bbmgr("pools")["pools"] if p["name"] == pool["name"]][0]
        assert p["used"] == 100 * GiB and p["free"] == pool["capacity"] - cap - 100 * GiB, p
        row = [l.split() for l in bbmgr_text(cluster, "pools").stdout.splitlines()
               if l.split()[:1] == [pool["name"]]][0]
        cells = [" ".join(row[k:k + 2]) for k in (3, 5, 7, 9)]
        assert cells == ["1.00 TiB", "668.00 GiB", "100.00 GiB", "256.00 GiB"], row
        # scontrol show bbstat says the same, in one line per pool
        out = cluster.run("scontrol", "show", "bbstat").stdout
        assert "\n  pool %s: 1TiB total = 668GiB free + 100GiB used + 256GiB drained\n" \
            % pool["name"] in out, out
    finally:
        if job:
            cluster.run("scancel", job)
        assert bbmgr_text(cluster, "resume", node).returncode == 0
    wait_for(lambda: "\n  pool %s: 1TiB total = 1TiB free + 0B used + 0B drained\n"
             % pool["name"] in cluster.run("scontrol", "show", "bbstat").stdout,
             timeout=60, what="the space back in bbstat")


def test_job_on_two_nodes_is_two_nodes_at_bbmgrd(cluster, need_bbmgrd):
    """sbatch -N 2: bbmgrd counts the job on its two compute nodes (bbmgr jobs),
    the count its phases' volume is shared over, not one node."""
    rc, jobid, _, err = cluster.sbatch(script("jobbuffer capacity=1GiB", body="sleep 60"),
                                       "-N", "2")
    assert rc == 0, err
    try:
        cluster.wait_state(jobid, {"RUNNING"})
        job = wait_for(lambda: [j for j in cluster.bbmgr("jobs")["jobs"]
                                if j["id"] == jobid and j["state"] == "running"],
                       timeout=60, what="the job running at bbmgrd")[0]
        assert job["nodes"] == 2, job
    finally:
        cancel(cluster, [jobid])
