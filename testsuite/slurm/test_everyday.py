# SPDX-License-Identifier: GPL-2.0-or-later
"""What users meet in their first week, from their own commands: symbol
replacement in stage paths and persistent names (job arrays), --bb texts that
hold no Harmonia directive, requests no pool can hold, stage paths checked as
the user, and a job held after a failed stage-in that is released again."""
import os
import pathlib
import pwd
import shutil
import subprocess
import time

import pytest

from conftest import script, wait_for

REFUSED = "sbatch: error: Batch job submission failed: Burst Buffer request invalid"
USERS = ("hmtest1", "hmtest2")


def done(cluster, jobid):
    """The job ended and its stage-out is over."""
    j = cluster.job(jobid)
    return j.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED") and \
        j.get("BurstBufferState") == "complete"


def array_ids(cluster, array_id):
    """The job ids of the array's tasks that have ended, by task id."""
    p = cluster.run("squeue", "-h", "-t", "all", "-r", "-j", str(array_id), "-o", "%A %K %T")
    return {int(k): a for a, k, t in (l.split() for l in p.stdout.splitlines() if l.strip())
            if t == "COMPLETED"}


# ------------------------------------------------------------------ symbols

def test_array_tasks_stage_out_to_their_own_paths(cluster, need_bbmgrd, tmp_path):
    dest = tmp_path / "results"
    dest.mkdir()
    rc, array_id, _, err = cluster.sbatch(script(
        "jobbuffer capacity=1GiB",
        "stage_out source=$HARMONIA_BB/out destination=%s/%%A_%%a.txt type=file" % dest,
        body='echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID in $HARMONIA_BB" '
             '> $HARMONIA_BB/out'), "--array=0-3")
    assert rc == 0, err
    wait_for(lambda: len(array_ids(cluster, array_id)) == 4, timeout=120, what="4 tasks")
    ids = array_ids(cluster, array_id)
    for task, jobid in ids.items():
        wait_for(lambda: done(cluster, jobid), timeout=120, what="task %d done" % task)
    found = sorted(os.listdir(dest))
    assert found == ["%s_%d.txt" % (array_id, t) for t in range(4)]
    buffers = set()
    for t in range(4):
        text = (dest / ("%s_%d.txt" % (array_id, t))).read_text().split()
        assert text[:4] == ["task", str(t), "of", array_id]
        buffers.add(text[-1])
    assert len(buffers) == 4, "array tasks shared a buffer: %s" % buffers


def test_job_symbols_in_stage_paths(cluster, need_bbmgrd, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "input.txt").write_text("from the working directory\n")
    dest = tmp_path / "out"
    dest.mkdir()
    rc, jobid, _, err = cluster.sbatch(script(
        "jobbuffer capacity=1GiB",
        "stage_in source=%d/input.txt destination=$HARMONIA_BB/in.txt type=file",
        "stage_out source=$HARMONIA_BB/in.txt destination=%s/%%u-%%x-%%j-100%%%%.txt "
        "type=file" % dest,
        body="cat $HARMONIA_BB/in.txt"), "-J", "sym-job", "-D", str(work))
    assert rc == 0, err
    # the job keeps what was written; the symbols are replaced for each use
    assert "destination=%s/%%u-%%x-%%j-100%%%%.txt" % dest in cluster.job(jobid)["BurstBuffer"]
    wait_for(lambda: done(cluster, jobid), timeout=60, what="job done")
    user = pwd.getpwuid(os.geteuid()).pw_name
    assert os.listdir(dest) == ["%s-sym-job-%s-100%%.txt" % (user, jobid)]
    assert cluster.out(jobid) == "from the working directory\n"


def test_persistent_name_with_symbols(cluster, need_bbmgrd):
    user = pwd.getpwuid(os.geteuid()).pw_name
    rc, jobid, _, err = cluster.sbatch(script(
        "create_persistent name=%u-scratch-%j capacity=1GiB",
        body="env | grep ^HARMONIA_PERSISTENT_ | cut -d= -f1"))
    assert rc == 0, err
    wait_for(lambda: done(cluster, jobid), timeout=60, what="job done")
    name = "%s-scratch-%s" % (user, jobid)
    try:
        names = [b["name"] for b in cluster.bbmgr("persistent")["persistent"]]
        assert name in names
        assert cluster.out(jobid).strip() == \
            "HARMONIA_PERSISTENT_" + name.upper().replace("-", "_")
    finally:
        rc, jid, _, err = cluster.sbatch(script("destroy_persistent name=%s" % name,
                                                body="true"))
        assert rc == 0, err
        wait_for(lambda: done(cluster, jid), timeout=60, what="destroy done")


# ------------------------------------------------------------------ nothing dropped

@pytest.mark.parametrize("text,hint", [
    ("jobbufer capacity=1GiB", ""),
    ("capacity=1GiB", " (write it as: jobbuffer capacity=SIZE)"),
    ("#DW jobdw type=scratch capacity=1GiB access_mode=striped",
     " (DataWarp and #BB lines are for other burst buffer plugins)"),
], ids=["typo", "bare-capacity", "datawarp"])
def test_bb_text_without_directive_is_refused(cluster, text, hint):
    before = set(cluster.job_ids())
    rc, jobid, _, err = cluster.sbatch(None, "--bb", text, "--wrap", "true")
    assert rc != 0, "accepted as job %s" % jobid
    assert err.splitlines() == [
        "sbatch: error: #BB_HARMONIA: --bb '%s' holds no Harmonia directive%s; "
        "burst_buffer/harmonia accepts jobbuffer, iohints, stage_in, stage_out, "
        "create_persistent, use_persistent and destroy_persistent, "
        "e.g. --bb \"jobbuffer capacity=10GiB\" (see harmonia-directives(5))" % (text, hint),
        REFUSED]
    assert set(cluster.job_ids()) - before == set()


@pytest.mark.parametrize("directive,message", [
    ("jobbuffer capacity=2TiB",
     "#BB_HARMONIA: jobbuffer: capacity 2TiB is larger than pool 'nvme' (1TiB)"),
    ("jobbuffer capacity=1GiB nodes=5",
     "#BB_HARMONIA: jobbuffer: nodes=5 is more than pool 'nvme' has (4 buffer nodes)"),
    ("create_persistent name=huge capacity=5TiB",
     "#BB_HARMONIA: create_persistent: capacity 5TiB is larger than pool 'nvme' (1TiB)"),
], ids=["capacity-default-pool", "nodes", "persistent"])
def test_request_no_pool_can_hold_is_refused(cluster, need_bbmgrd, directive, message):
    wait_for(lambda: "nvme" in cluster.run("scontrol", "show", "burst").stdout,
             what="pools known to slurmctld")
    before = set(cluster.job_ids())
    rc, jobid, _, err = cluster.sbatch(script(directive))
    assert rc != 0, "accepted as job %s" % jobid
    assert err.splitlines() == ["sbatch: error: " + message, REFUSED]
    assert set(cluster.job_ids()) - before == set()


# ------------------------------------------------------------------ paths as the user

@pytest.fixture(scope="module")
def user(cluster):
    if os.geteuid() != 0:
        pytest.skip("needs root to create and act as a test user")
    if not cluster.cdir:
        if not cluster.test_users:
            pytest.skip("needs a user known to the cluster's nodes: HARMONIA_TEST_USERS")
        name = cluster.test_users[0]
    else:
        name = USERS[0]
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "-m", "-s", "/bin/bash", name], check=True,
                       capture_output=True, timeout=30)
        return pwd.getpwnam(name)


def sbatch_as(cluster, pw, text):
    wdir = os.path.join(cluster.workdir, "%s-%d" % (pw.pw_name, int(time.time() * 1e6)))
    os.makedirs(wdir)
    os.chown(wdir, pw.pw_uid, pw.pw_gid)
    path = os.path.join(wdir, "job.sh")
    with open(path, "w") as f:
        f.write(text)
    os.chown(path, pw.pw_uid, pw.pw_gid)
    return cluster.run("runuser", "-u", pw.pw_name, "--", "sbatch", "--parsable", "-D", wdir,
                       "-o", os.path.join(wdir, "slurm-%j.out"), path, check=False)


def test_stage_paths_are_checked_as_the_user(cluster, user):
    # a directory only root may look into, in a directory everyone may
    secret = pathlib.Path(cluster.workdir) / ("root-only-%d" % int(time.time() * 1e6))
    secret.mkdir()
    (secret / "file").write_text("x")
    (secret / "dir").mkdir()
    os.chmod(secret, 0o700)
    answers = {}
    for name, directive in [
            ("missing", "stage_in source=%s/nothere destination=$HARMONIA_BB/x"),
            ("file-as-dir", "stage_in source=%s/file destination=$HARMONIA_BB/x type=directory"),
            ("dir-as-file", "stage_in source=%s/dir destination=$HARMONIA_BB/x type=file"),
            ("out-missing", "stage_out source=$HARMONIA_BB/x destination=%s/nothere/x"),
            ("out-dir", "stage_out source=$HARMONIA_BB/x destination=%s/dir/x")]:
        p = sbatch_as(cluster, user, script("jobbuffer capacity=1GiB", directive % secret))
        assert p.returncode != 0, "%s accepted: %s" % (name, p.stdout)
        # the same answer whatever is (or is not) behind the closed directory
        answers[name] = p.stderr.replace("/nothere", "/P").replace("/file", "/P") \
            .replace("/dir", "/P")
    assert len({answers[k] for k in ("missing", "file-as-dir", "dir-as-file")}) == 1, answers
    assert answers["out-missing"] == answers["out-dir"], answers
    assert answers["missing"].splitlines() == [
        "sbatch: error: #BB_HARMONIA line 4: stage_in: source '%s/P' is not accessible "
        "to you (Permission denied)" % secret, REFUSED]
    assert answers["out-dir"].splitlines() == [
        "sbatch: error: #BB_HARMONIA line 4: stage_out: the directory of destination "
        "'%s/P/x' is not accessible to you (Permission denied)" % secret, REFUSED]
    # root sees the directory: its answers differ as before
    rc, _, _, err = cluster.sbatch(script(
        "jobbuffer capacity=1GiB",
        "stage_in source=%s/file destination=$HARMONIA_BB/x type=directory" % secret))
    assert rc != 0
    assert err.splitlines()[0] == ("sbatch: error: #BB_HARMONIA line 4: stage_in: source "
                                   "'%s/file' is not a directory (type=directory)" % secret)


# ------------------------------------------------------------------ failed stage-in

def pool_used(cluster):
    return sum(p["used"] for p in cluster.bbmgr("pools")["pools"])


def squeue_reason(cluster, jobid):
    return cluster.run("squeue", "-h", "-t", "all", "-j", str(jobid), "-o", "%r").stdout.strip()


def test_release_of_job_held_for_failed_stage_in_retries_it(cluster, need_bbmgrd, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    (src / "data").write_text("first\n")
    rc, jobid, _, err = cluster.sbatch(script(
        "jobbuffer capacity=3GiB",
        "stage_in source=%s destination=$HARMONIA_BB/in type=directory" % src,
        body="cat $HARMONIA_BB/in/data"), "-H")
    assert rc == 0, err
    used0 = pool_used(cluster)
    shutil.rmtree(src)                          # gone before its stage-in
    cluster.run("scontrol", "release", jobid)
    wait_for(lambda: squeue_reason(cluster, jobid).startswith(
        "burst_buffer/harmonia: stage-in: stage-in failed: "), timeout=60,
        what="held for the failed stage-in")
    assert cluster.job(jobid)["JobState"] == "PENDING"
    # a held job holds no space
    wait_for(lambda: pool_used(cluster) == used0, timeout=30, what="space of the held job back")
    src.mkdir()
    (src / "data").write_text("second\n")
    cluster.run("scontrol", "release", jobid)
    assert cluster.wait_state(jobid, {"COMPLETED", "FAILED"}, timeout=60) == "COMPLETED"
    assert cluster.out(jobid) == "second\n"
