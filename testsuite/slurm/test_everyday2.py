# SPDX-License-Identifier: GPL-2.0-or-later
"""Documented behaviour of burst_buffer/harmonia that users and administrators
meet through Slurm's own commands: changing a job's request with scontrol
update, scontrol reconfigure, and the expected start time of a job whose
buffer does not fit yet (squeue --start)."""
import time

from conftest import sbatch_ok, script, wait_for
from test_everyday import done as ended, pool_used


def no_jobs(cluster):
    wait_for(lambda: not cluster.bbmgr("jobs")["jobs"], timeout=60, what="bbmgrd without jobs")


def squeue(cluster, jobid, fmt):
    return cluster.run("squeue", "-h", "-t", "all", "-j", str(jobid), "-o", fmt).stdout.strip()


def slurm_time(text):
    """A time as scontrol and squeue print it (local time), in epoch seconds."""
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))


# ------------------------------------------------------------------ scontrol update

def test_update_of_the_request_is_refused_and_leaves_it_as_it_was(cluster, need_bbmgrd):
    rc, jobid, _, err = cluster.sbatch(script("jobbuffer capacity=1GiB", body="echo ran"), "-H")
    assert rc == 0, err
    try:
        before = cluster.job(jobid)["BurstBuffer"]
        assert before == "#BB_HARMONIA jobbuffer capacity=1GiB", before
        for text in ("jobbuffer capacity=2GiB", "jobbufer capacity=2GiB",
                     "jobbuffer capacity=0GiB"):
            p = cluster.run("scontrol", "update", "job", jobid, "BurstBuffer=" + text,
                            check=False)
            assert p.returncode == 1, (text, p.stdout)
            assert p.stderr.strip() == \
                "Requested operation not supported on this system for job %s" % jobid, \
                (text, p.stderr)
            assert cluster.job(jobid)["BurstBuffer"] == before
        # the request it was submitted with is the one it runs with
        cluster.run("scontrol", "release", jobid)
        assert cluster.wait_state(jobid, {"COMPLETED", "FAILED"}, timeout=60) == "COMPLETED"
        assert cluster.out(jobid) == "ran\n"
    finally:
        cluster.run("scancel", jobid, check=False)
    # once ended, the job cannot be updated at all
    p = cluster.run("scontrol", "update", "job", jobid, "BurstBuffer=", check=False)
    assert p.returncode == 1 and "Job has already finished" in p.stderr, p.stderr


# ------------------------------------------------------------------ scontrol reconfigure

def test_reconfigure_keeps_buffers_and_the_plugins_working(cluster, need_bbmgrd, tmp_path):
    no_jobs(cluster)
    used0 = pool_used(cluster)
    marks = tmp_path / "marks"
    marks.mkdir()
    dest = tmp_path / "out"
    dest.mkdir()
    a = sbatch_ok(
        cluster, "jobbuffer capacity=100GiB",
        "stage_out source=$HARMONIA_BB/r destination=%s/a.txt type=file" % dest,
        body="echo before > $HARMONIA_BB/r; touch %s/started; "
             "while [ ! -e %s/go ]; do sleep 0.1; done; echo after >> $HARMONIA_BB/r"
             % (marks, marks))
    try:
        wait_for(lambda: (marks / "started").exists(), timeout=60, what="job A running")
        line = lambda: [l for l in cluster.run("scontrol", "show", "burst").stdout.splitlines()
                        if l.strip().startswith("JobID=%s " % a)]
        before = wait_for(line, what="A's buffer listed")
        used = pool_used(cluster)
        assert used - used0 == 100 * 2 ** 30, (used0, used)
        cluster.run("scontrol", "reconfigure")
        # the buffer of the running job is the same, in Slurm and in bbmgrd
        assert line() == before
        assert pool_used(cluster) == used
        # the plugins still refuse what they refused and serve what they served
        rc, jid, _, err = cluster.sbatch(None, "--bb", "jobbufer capacity=1GiB", "--wrap", "true")
        assert rc != 0 and "holds no Harmonia directive" in err, (jid, err)
        rc, b, _, err = cluster.sbatch(script(
            "jobbuffer capacity=1GiB",
            "stage_out source=$HARMONIA_BB/r destination=%s/b.txt type=file" % dest,
            body="echo b > $HARMONIA_BB/r"))
        assert rc == 0, err
        assert cluster.wait_state(b, {"COMPLETED", "FAILED"}, timeout=60) == "COMPLETED"
        wait_for(lambda: ended(cluster, b), timeout=60, what="B's stage-out")
        assert (dest / "b.txt").read_text() == "b\n"
    finally:
        (marks / "go").write_text("")
    # A kept its buffer through the reconfiguration: what it wrote before and
    # after is staged out together, and its space comes back
    assert cluster.wait_state(a, {"COMPLETED", "FAILED"}, timeout=60) == "COMPLETED"
    wait_for(lambda: ended(cluster, a), timeout=60, what="A's stage-out")
    assert (dest / "a.txt").read_text() == "before\nafter\n"
    wait_for(lambda: pool_used(cluster) == used0, timeout=30, what="space back")


# ------------------------------------------------------------------ expected start

def test_expected_start_of_a_job_whose_buffer_does_not_fit(cluster, need_bbmgrd):
    no_jobs(cluster)
    # A holds 900 GiB of the 1 TiB pool for at most 10 minutes
    rc, a, _, err = cluster.sbatch(script("jobbuffer capacity=900GiB", body="sleep 600"),
                                   "--time=10")
    assert rc == 0, err
    try:
        cluster.wait_state(a, {"RUNNING"})
        a_end = slurm_time(cluster.job(a)["EndTime"])
        rc, b, _, err = cluster.sbatch(script("jobbuffer capacity=400GiB", body="echo ran"),
                                       "--time=5")
        assert rc == 0, err
        wait_for(lambda: "waiting for" in squeue(cluster, b, "%r"), timeout=30,
                 what="B waiting for space")

        # B is expected when A's buffer is free: at A's end, not now or before
        def expected():
            j = cluster.job(b)
            if j.get("JobState") != "PENDING" or j.get("StartTime") in (None, "Unknown"):
                return None
            t = slurm_time(j["StartTime"])
            return t if abs(t - a_end) <= 5 else None
        t = wait_for(expected, timeout=30, what="B's StartTime at A's end (%s)" %
                     time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(a_end)))
        assert t > time.time() + 60
        shown = squeue(cluster, b, "%S")
        assert abs(slurm_time(shown) - a_end) <= 5, (shown, a_end)
        # the space frees: B starts, its start time moves to now
        cluster.run("scancel", a)
        assert cluster.wait_state(b, {"COMPLETED", "FAILED"}, timeout=90) == "COMPLETED"
        started = slurm_time(cluster.job(b)["StartTime"])
        assert time.time() - 90 <= started <= time.time(), started
        assert cluster.out(b) == "ran\n"
    finally:
        cluster.run("scancel", a, check=False)


# ------------------------------------------------------------------ nodes out of service

def test_show_burst_and_bbstat_show_drained_nodes(cluster, need_bbmgrd):
    from test_everyday import bbmgr_text
    no_jobs(cluster)
    nodes = cluster.bbmgr("nodes")["nodes"]
    node = nodes[0]["name"]
    pool = [p for p in cluster.bbmgr("pools")["pools"] if p["name"] == nodes[0]["pool"]][0]

    def pool_line():
        for line in cluster.run("scontrol", "show", "burst").stdout.splitlines():
            if line.strip().startswith("PoolName[") and "]=%s " % pool["name"] in line:
                return line.split()
    p = bbmgr_text(cluster, "drain", node, "disk check")
    assert p.returncode == 0, p.stderr
    try:
        # TotalSpace - FreeSpace - UsedSpace is the drained space: 1 TiB, 768 GiB
        # free, none used, 256 GiB drained
        line = wait_for(lambda: (lambda l: l if l and "FreeSpace=768GiB" in l else None)(
            pool_line()), timeout=30, what="the drained node's space out of FreeSpace")
        assert line[2:] == ["TotalSpace=1TiB", "FreeSpace=768GiB", "UsedSpace=0"], line
        out = cluster.run("scontrol", "show", "bbstat").stdout
        assert "\n  buffer nodes: %d, %d up, 1 drained (256GiB out of service), 0 with their " \
               "agent down\n" % (len(nodes), len(nodes) - 1) in out, out
        assert "\n    %s: drained (disk check), 256GiB out of service, 0 allocation(s) kept\n" \
               % node in out, out
        assert "{" not in out and '"' not in out, out
    finally:
        assert bbmgr_text(cluster, "resume", node).returncode == 0
    wait_for(lambda: (lambda l: l and "FreeSpace=1TiB" in l)(pool_line()), timeout=30,
             what="space back")
    out = cluster.run("scontrol", "show", "bbstat").stdout
    assert "\n  buffer nodes: %d, %d up, 0 drained (0B out of service)" % (
        len(nodes), len(nodes)) in out, out


def test_restart_keeps_what_show_burst_says_of_a_buffer(cluster, need_bbmgrd, tmp_path):
    """After slurmctld restarts (as 'scontrol reconfigure' does from Slurm
    23.11), a running job's buffer is listed as before, its CreateTime the
    allocation's, not the restart's."""
    cluster.need_control()
    no_jobs(cluster)
    marks = tmp_path / "marks"
    marks.mkdir()
    a = sbatch_ok(cluster, "jobbuffer capacity=10GiB",
                  body="touch %s/started; while [ ! -e %s/go ]; do sleep 0.1; done"
                  % (marks, marks))
    try:
        wait_for(lambda: (marks / "started").exists(), timeout=60, what="job running")
        line = lambda: [l for l in cluster.run("scontrol", "show", "burst").stdout.splitlines()
                        if l.strip().startswith("JobID=%s " % a)]
        before = wait_for(line, what="the buffer listed")
        # CreateTime has seconds: a restart in the same second would not tell
        time.sleep(1.1)
        cluster.control("slurmctld-restart")
        assert wait_for(line, what="the buffer listed after the restart") == before
    finally:
        (marks / "go").write_text("")
    assert cluster.wait_state(a, {"COMPLETED", "FAILED"}, timeout=60) == "COMPLETED"
