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

from conftest import BUILDDIR, sbatch_ok, script, wait_for

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
    array_id = sbatch_ok(
        cluster, "jobbuffer capacity=1GiB",
        "stage_out source=$HARMONIA_BB/out destination=%s/%%A_%%a.txt type=file" % dest,
        body='echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID in $HARMONIA_BB" '
             '> $HARMONIA_BB/out', opts=("--array=0-3",))
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
     " (DataWarp's syntax: write '#BB_HARMONIA jobbuffer capacity=1GiB' instead)"),
    ("jobbufer capacity=1GiB;#DW persistentdw name=ckpt",
     " (DataWarp's syntax: write '#BB_HARMONIA use_persistent name=ckpt' instead)"),
    ("#DW swap 10GiB", " (DataWarp's syntax, with no Harmonia equivalent)"),
], ids=["typo", "bare-capacity", "datawarp", "datawarp-second-item", "datawarp-swap"])
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


# ------------------------------------------------------------------ kept buffers

def show_burst(cluster):
    return cluster.run("scontrol", "show", "burst").stdout


def burst_line(cluster, jobid):
    """The line of "scontrol show burst" that lists the job's buffer, or None."""
    for line in show_burst(cluster).splitlines():
        if line.strip().startswith("JobID=%s " % jobid):
            return line
    return None


def bbmgr_text(cluster, *args):
    """bbmgr ARGS as an administrator types it (text output, options last)."""
    cmd = [os.path.join(BUILDDIR, "bbmgr", "bbmgr")]
    cmd += list(args) + ["--url", cluster.bbmgr_url]
    if cluster.munge_socket:
        cmd += ["--munge-socket", cluster.munge_socket]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30)


def test_failed_stage_out_keeps_the_buffer_until_released(cluster, need_bbmgrd, tmp_path):
    cluster.need_control()
    dest = tmp_path / "results"
    dest.mkdir()
    wait_for(lambda: not cluster.bbmgr("jobs")["jobs"], timeout=60, what="bbmgrd without jobs")
    used0 = pool_used(cluster)
    jobid = sbatch_ok(
        cluster, "jobbuffer capacity=2GiB",
        "stage_out source=$HARMONIA_BB/never-written destination=%s/r type=file" % dest,
        body="echo precious > $HARMONIA_BB/kept")
    wait_for(lambda: cluster.job(jobid).get("BurstBufferState") == "teardown-fail",
             timeout=60, what="stage-out failed")
    text = cluster.run("scontrol", "show", "job", jobid).stdout
    assert "JobState=COMPLETED" in text
    assert "stage-out failed: " in text
    assert "until an administrator frees it with 'bbmgr release %s'" % jobid in text
    # where the data is kept: the job's buffer directory, as the job record says
    where = text.split("its data is kept in the job's buffer (", 1)[1].split(" on ", 1)[0]
    with open(os.path.join(where, "kept")) as f:
        assert f.read() == "precious\n"
    # listed and counted, in Slurm and in bbmgrd
    line = burst_line(cluster, jobid)
    assert line and "State=teardown-fail" in line, show_burst(cluster)
    assert pool_used(cluster) > used0
    assert jobid in bbmgr_text(cluster, "jobs").stdout
    # as such after restarts of both daemons
    cluster.control("slurmctld-restart")
    wait_for(lambda: burst_line(cluster, jobid), timeout=30, what="listed after restart")
    assert cluster.job(jobid)["BurstBufferState"] == "teardown-fail"
    cluster.control("bbmgrd-stop")
    cluster.control("bbmgrd-start")
    assert pool_used(cluster) > used0
    assert jobid in bbmgr_text(cluster, "jobs").stdout
    # the administrator frees it
    p = bbmgr_text(cluster, "release", jobid)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("job %s: released (" % jobid), p.stdout
    wait_for(lambda: pool_used(cluster) == used0, timeout=30, what="space back")
    wait_for(lambda: burst_line(cluster, jobid) is None, timeout=30, what="no longer listed")
    wait_for(lambda: cluster.job(jobid)["BurstBufferState"] == "complete", timeout=30,
             what="job record says so")
    assert not os.path.exists(where)


def test_bbmgr_release_of_unknown_job_says_why(cluster, need_bbmgrd):
    p = bbmgr_text(cluster, "release", "999999999")
    assert p.returncode == 1
    assert p.stderr.startswith("bbmgr: GET /v1/jobs/999999999: HTTP 404: "), p.stderr
    assert not p.stderr.rstrip().endswith(":"), p.stderr



def test_stage_out_cut_short_by_hurry_says_so(cluster, need_bbmgrd, tmp_path):
    from test_lifecycle2 import slow_mover, stage_out_running
    dest = str(tmp_path / "result")
    with slow_mover(cluster, rate="0.5 MB/s"):
        jobid = stage_out_running(
            cluster, dest, body="mkdir $HARMONIA_BB/out; for i in 1 2 3 4; do "
                                "head -c 1000000 /dev/urandom > $HARMONIA_BB/out/f$i; done")
        cluster.run("scancel", "--hurry", jobid)
        wait_for(lambda: cluster.job(jobid)["BurstBufferState"] == "complete", timeout=30,
                 what="stage-out ended")
    text = cluster.run("scontrol", "show", "job", jobid).stdout
    said = ("cut short by scancel --hurry: %s may hold part of the job's data "
            "(only whole files, no partial file)" % dest)
    comment = [l for l in text.splitlines() if l.strip().startswith("SystemComment=")]
    assert comment and comment[0].rstrip().endswith(
        " burst_buffer/harmonia: stage-out: " + said), text

# ------------------------------------------------------------------ honest output

def test_bbmgr_takes_options_anywhere_and_prints_no_null(cluster, need_bbmgrd):
    rc, jobid, _, err = cluster.sbatch(script("jobbuffer capacity=1GiB", body="sleep 30"))
    assert rc == 0, err
    try:
        cluster.wait_state(jobid, {"RUNNING"})
        for args in (["jobs"], ["nodes"], ["pools"], ["persistent"], ["status"],
                     ["schedule"], ["policy"]):
            p = bbmgr_text(cluster, *args)          # --url after the command
            assert p.returncode == 0, (args, p.stderr)
            assert "(null)" not in p.stdout, (args, p.stdout)
        out = bbmgr_text(cluster, "policy").stdout      # one line, whatever set it
        assert out.startswith("fairshare") and out.count("\n") == 1, out
        p = bbmgr_text(cluster, "jobs", "--json")
        assert p.returncode == 0 and p.stdout.lstrip().startswith("{")
    finally:
        cluster.run("scancel", jobid)
        cluster.wait_state(jobid, {"CANCELLED", "COMPLETED"})


def test_bbstat_is_readable_text(cluster, need_bbmgrd):
    out = cluster.run("scontrol", "show", "bbstat").stdout
    assert "{" not in out and '"' not in out, out
    assert "\n  policy: fairshare\n" in out
    assert "\n  jobs: registered=" in out
    assert "\n  uptime: " in out and out.split("\n  uptime: ")[1].split("\n")[0].endswith(" s")
    burst = show_burst(cluster)
    assert "(null)" not in burst, burst


def bbstat_learned(cluster, jobid):
    """The line of "scontrol show bbstat" with what bbmgrd learned of the job."""
    for line in cluster.run("scontrol", "show", "bbstat").stdout.splitlines():
        if line.startswith("  job %s: learned: " % jobid):
            return line
    return None


def test_bbstat_shows_what_was_learned_of_a_running_job(cluster, need_bbmgrd, tmp_path):
    """A loop of four dd, each one phase (harmonia-io): while the job runs, scontrol
    show bbstat says what bbmgrd learned of its phases, not its hints."""
    stop = tmp_path / "stop"
    hio = os.path.join(BUILDDIR, "src", "lib", "libharmonia", "harmonia-io")
    body = ('for i in 1 2 3 4; do sleep 0.5; %s -q -s 4MiB -- dd if=/dev/zero '
            'of="$HARMONIA_BB/f$i" bs=1M count=4 status=none || exit 9; done\n'
            'for i in $(seq 600); do [ -e %s ] && break; sleep 0.1; done' % (hio, stop))
    jobid = sbatch_ok(cluster, "jobbuffer capacity=1GiB", "iohints w_iter=10s io_volume=64MiB",
                      body=body)
    try:
        try:
            line = wait_for(lambda: (lambda l: l if l and "phases=4" in l else None)(
                bbstat_learned(cluster, jobid)), timeout=20, what="learned line in bbstat")
        except Exception:
            raise AssertionError((cluster.run("scontrol", "show", "bbstat").stdout,
                                  cluster.job(jobid), cluster.bbmgr("job", jobid)))
        assert cluster.job(jobid)["JobState"] == "RUNNING", line
        w = float(line.split("w_iter=")[1].split("s ")[0])
        # what it did, not its hints (10 s, 64MiB)
        assert 0.5 <= w < 5 and " volume=4MiB phases=4" in line, line
    finally:
        stop.touch()
        cluster.wait_state(jobid, {"CANCELLED", "COMPLETED", "FAILED"}, timeout=120)


def test_show_burst_sizes_stay_true_after_reconfigure(cluster, need_bbmgrd):
    def pool_line():
        for line in show_burst(cluster).splitlines():
            if line.strip().startswith("Name=harmonia"):
                return line
    wait_for(lambda: not cluster.bbmgr("jobs")["jobs"], timeout=60, what="bbmgrd without jobs")
    rc, jobid, _, err = cluster.sbatch(script("jobbuffer capacity=100GiB", body="sleep 60"))
    assert rc == 0, err
    try:
        cluster.wait_state(jobid, {"RUNNING"})
        before = wait_for(lambda: (lambda l: l if l and "UsedSpace=0 " not in l + " " else None)(
            pool_line()), timeout=30, what="space in use shown")
        assert "TotalSpace=1T" in before, before
        cluster.run("scontrol", "reconfigure")
        # at once, and for the seconds after it, the figures are bbmgrd's
        for _ in range(10):
            line = pool_line()
            assert line == before, (before, line)
            time.sleep(0.2)
    finally:
        cluster.run("scancel", jobid)
        cluster.wait_state(jobid, {"CANCELLED", "COMPLETED"})



def test_show_burst_lists_persistent_buffers(cluster, need_bbmgrd):
    name = "shown-%d" % int(time.time() * 1000)

    def listed():
        for line in show_burst(cluster).splitlines():
            if line.strip().startswith("Name=%s " % name):
                return line
    rc, jobid, _, err = cluster.sbatch(script(
        "create_persistent name=%s capacity=3GiB" % name, body="true"))
    assert rc == 0, err
    wait_for(lambda: done(cluster, jobid), timeout=60, what="created")
    try:
        b = [b for b in cluster.bbmgr("persistent")["persistent"] if b["name"] == name][0]
        line = wait_for(listed, timeout=30, what="listed by scontrol show burst")
        created = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(b["created"]))
        assert "CreateTime=%s " % created in line, (created, line)
        assert "Pool=nvme " in line and "UserID=root(0)" in line, line
        assert " Size=3G" in line, line
        rows = [l.split() for l in bbmgr_text(cluster, "persistent").stdout.splitlines()]
        assert rows[0][:7] == ["NAME", "OWNER", "POOL", "CAPACITY", "NODES", "CREATED", "JOBS"]
        row = [r for r in rows if r[0] == name][0]
        assert row[1] == "root" and row[3] == "3.00" and row[6] == created, row
    finally:
        rc, jid, _, err = cluster.sbatch(script("destroy_persistent name=%s" % name,
                                                body="true"))
        assert rc == 0, err
        wait_for(lambda: done(cluster, jid), timeout=60, what="destroyed")
    wait_for(lambda: listed() is None, timeout=30, what="no longer listed")

# ------------------------------------------------------------------ allocation when due

def test_throttled_array_holds_one_buffer_at_a_time(cluster, need_bbmgrd, tmp_path):
    wait_for(lambda: not cluster.bbmgr("jobs")["jobs"], timeout=60, what="bbmgrd without jobs")
    marks = tmp_path / "marks"
    marks.mkdir()
    # each task holds its buffer while it runs, until the test lets it end
    rc, array_id, _, err = cluster.sbatch(script(
        "jobbuffer capacity=100GiB",
        body="touch %s/$SLURM_ARRAY_TASK_ID.started; "
             "while [ ! -e %s/$SLURM_ARRAY_TASK_ID.go ]; do sleep 0.1; done" % (marks, marks)),
        "--array=0-3%1")
    assert rc == 0, err
    done_tasks = set()
    for _ in range(4):
        started = lambda: {f.split(".")[0] for f in os.listdir(marks)
                           if f.endswith(".started")} - done_tasks
        task = wait_for(started, timeout=60, what="a task running").pop()
        # one task runs; the others wait for the throttle and hold nothing
        held = [j for j in cluster.bbmgr("jobs")["jobs"] if j.get("allocation")
                and j.get("state") != "ended"]
        assert len(held) == 1, held
        done_tasks.add(task)
        (marks / ("%s.go" % task)).write_text("")
    assert done_tasks == {"0", "1", "2", "3"}
    wait_for(lambda: len(array_ids(cluster, array_id)) == 4, timeout=60, what="all tasks done")


def test_pending_reason_tells_space_on_enough_nodes_from_total_space(cluster, need_bbmgrd):
    wait_for(lambda: not cluster.bbmgr("jobs")["jobs"], timeout=60, what="bbmgrd without jobs")
    # A spreads over all four buffer nodes: each keeps a little room, more in all
    # than B asks for, but not enough on the nodes B needs
    rc, a, _, err = cluster.sbatch(script("jobbuffer capacity=600GiB nodes=4", body="sleep 8"))
    assert rc == 0, err
    cluster.wait_state(a, {"RUNNING"})
    free = sum(p["free"] for p in cluster.bbmgr("pools")["pools"])
    assert free >= 400 * 2**30, free
    rc, b, _, err = cluster.sbatch(script("jobbuffer capacity=400GiB", body="true"))
    assert rc == 0, err
    r = wait_for(lambda: (lambda r: r if "waiting" in r else None)(squeue_reason(cluster, b)),
                 timeout=20, what="space note")
    assert r.startswith("burst_buffer/harmonia: waiting for buffer space on enough nodes: "
                        "400GiB needs room on "), r
    assert "pool nvme has " in r, r
    assert cluster.wait_state(b, {"COMPLETED", "FAILED"}, timeout=90) == "COMPLETED"


def test_bbmgr_pools_shows_drained_space(cluster, need_bbmgrd):
    wait_for(lambda: not cluster.bbmgr("jobs")["jobs"], timeout=60, what="bbmgrd without jobs")
    node = cluster.bbmgr("nodes")["nodes"][0]["name"]
    p = bbmgr_text(cluster, "drain", node, "test")
    assert p.returncode == 0, p.stderr
    try:
        lines = bbmgr_text(cluster, "pools").stdout.splitlines()
        head = lines[0].split()
        assert head == ["POOL", "NODES", "UP", "CAPACITY", "FREE", "USED", "DRAINED",
                        "GRANULARITY"], lines
        row = lines[1].split()
        cells = [" ".join(row[k:k + 2]) for k in (3, 5, 7, 9)]
        # free + used + drained = capacity, one of the four 256 GiB nodes drained
        assert cells == ["1.00 TiB", "768.00 GiB", "0 B", "256.00 GiB"], lines
    finally:
        assert bbmgr_text(cluster, "resume", node).returncode == 0


@pytest.fixture
def exclusive_partition(cluster):
    """A partition that does not oversubscribe, on every node of the cluster."""
    if not cluster.cdir:
        pytest.skip("creates a partition: the private cluster only")
    name = "noshare"
    cluster.run("scontrol", "create", "PartitionName=%s" % name, "Nodes=ALL",
                "OverSubscribe=NO", "State=UP")
    yield name
    cluster.run("scontrol", "delete", "PartitionName=%s" % name, check=False)


def test_job_waiting_for_cpus_holds_no_buffer(cluster, need_bbmgrd, exclusive_partition):
    part = exclusive_partition
    nodes = int(cluster.run("sinfo", "-h", "-p", part, "-o", "%D").stdout.split()[0])
    cpus = int(cluster.run("sinfo", "-h", "-p", part, "-o", "%c").stdout.split()[0].rstrip("+"))
    wait_for(lambda: not cluster.bbmgr("jobs")["jobs"], timeout=60, what="bbmgrd without jobs")
    used0 = pool_used(cluster)
    rc, blocker, _, err = cluster.sbatch(None, "-p", part, "-N", str(nodes),
                                         "--ntasks-per-node", str(cpus), "--wrap", "sleep 120")
    assert rc == 0, err
    try:
        cluster.wait_state(blocker, {"RUNNING"})
        rc, jobid, _, err = cluster.sbatch(script("jobbuffer capacity=100GiB", body="echo ran"),
                                           "-p", part)
        assert rc == 0, err
        # the scheduler has looked at it: it waits for CPUs and holds no space
        wait_for(lambda: squeue_reason(cluster, jobid) not in ("", "None"), timeout=30,
                 what="a scheduler pass")
        job = cluster.job(jobid)
        assert job["JobState"] == "PENDING" and job["BurstBufferState"] == "pending", job
        assert pool_used(cluster) == used0
        assert not [j for j in cluster.bbmgr("jobs")["jobs"] if j["id"] == jobid]
    finally:
        cluster.run("scancel", blocker)
    # CPUs free: its buffer is set up and it runs
    assert cluster.wait_state(jobid, {"COMPLETED", "FAILED"}, timeout=60) == "COMPLETED"
    assert cluster.out(jobid) == "ran\n"


def test_bbmgr_schedule_shows_projected_starts(cluster, need_bbmgrd):
    from test_lifecycle2 import api
    wait_for(lambda: not cluster.bbmgr("jobs")["jobs"], timeout=60, what="bbmgrd without jobs")
    nbb = len(cluster.bbmgr("nodes")["nodes"])
    before = bbmgr_text(cluster, "policy").stdout.split()[0]
    assert bbmgr_text(cluster, "policy", "fcfs").returncode == 0      # exclusive phases
    jobs, granted, waiting = [], [], None
    try:
        for _ in range(nbb + 1):
            rc, j, _, err = cluster.sbatch(script("jobbuffer capacity=1GiB nodes=%d" % nbb,
                                                  body="sleep 60"))
            assert rc == 0, err
            jobs.append(j)
        for j in jobs:
            cluster.wait_state(j, {"RUNNING"})
            wait_for(lambda: [x for x in cluster.bbmgr("jobs")["jobs"]
                              if x["id"] == j and x["state"] == "running"], what="running")
        # phases granted until the buffer nodes are taken, each ending in about
        # 20 s; the next one waits for them
        for j in jobs:
            _, ph = api(cluster, "POST", "/v1/jobs/%s/phases" % j, {"volume": 2e10, "wait": 0})
            if ph["state"] != "granted":
                waiting = ph
                break
            granted.append(ph)
        assert granted and waiting, (granted, waiting)
        sched = cluster.bbmgr("schedule")
        first_end = min(p["expected_end"] for p in sched["phases"] if p["state"] == "granted")
        out = bbmgr_text(cluster, "schedule", "1").stdout
        rows = {l.split()[0]: l for l in out.splitlines() if l.split() and l.split()[0].isdigit()}
        w = rows[str(waiting["id"])].split()
        assert w[2] == "waiting", out
        # it starts no sooner than the first granted phase ahead of it ends
        assert w[3].startswith("~+"), out
        assert abs(int(w[3][2:]) - (first_end - sched["now"])) <= 2, (first_end, sched["now"], out)
        assert 0 < int(w[3][2:]) < 60, out
        assert ">" in rows[str(waiting["id"])], out
        for g in granted:
            assert rows[str(g["id"])].split()[2] == "granted", out
    finally:
        for ph in granted + ([waiting] if waiting else []):
            api(cluster, "POST", "/v1/phases/%d/finish" % ph["id"], {}, check=False)
        for j in jobs:
            cluster.run("scancel", j)
        bbmgr_text(cluster, "policy", before)
