# SPDX-License-Identifier: GPL-2.0-or-later
"""No dead ends and no silent drops, as ordinary users (hmtest1, hmtest2) meet
them with their own commands: another user's persistent buffer refused at
sbatch, DataWarp's #DW lines refused with the line to write, a job held for a
failed stage-in released by its owner, a cancelled job that no longer says
"stage-in running", no made-up expected start while a job waits for buffer
space, and --bb errors that name the --bb item."""
import json
import os
import time

from conftest import (BUILDDIR, plain_user, run_as, sbatch_as, script, user_workdir,
                      wait_for)

REFUSED = "sbatch: error: Batch job submission failed: Burst Buffer request invalid"
DENIED = "sbatch: error: Batch job submission failed: Burst Buffer permission denied"
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}


def reason(cluster, jobid):
    return cluster.run("squeue", "-h", "-t", "all", "-j", str(jobid), "-o", "%r").stdout.strip()


def persistent_names(cluster):
    return [p["name"] for p in cluster.bbmgr("persistent")["persistent"]]


def no_jobs(cluster):
    wait_for(lambda: not cluster.bbmgr("jobs")["jobs"], timeout=60, what="bbmgrd without jobs")


# ------------------------------------------------------------------ persistent buffers

def test_another_users_persistent_buffer_is_refused_at_sbatch(cluster, need_bbmgrd):
    a, b = plain_user(cluster, 0), plain_user(cluster, 1)
    name = "own%d" % (int(time.time() * 1000) % 10**6)
    rc, j, _, err = sbatch_as(cluster, a, script("create_persistent name=%s capacity=1GiB"
                                                 % name))
    assert rc == 0, err
    assert cluster.wait_state(j, DONE) == "COMPLETED"
    try:
        before = set(cluster.job_ids())
        for op in ("use_persistent", "destroy_persistent"):
            rc, j, _, err = sbatch_as(cluster, b, script("%s name=%s" % (op, name)))
            assert rc != 0, "accepted as job %s" % j
            assert err.splitlines() == [
                "sbatch: error: #BB_HARMONIA line 3: %s: persistent buffer '%s' belongs to "
                "another user (%s)" % (op, name, a.pw_name), DENIED], err
            # the same through --bb names the item
            rc, j, _, err = sbatch_as(cluster, b, "#!/bin/sh\ntrue\n", "--bb",
                                      "%s name=%s" % (op, name))
            assert rc != 0, "accepted as job %s" % j
            assert err.splitlines()[0] == (
                "sbatch: error: #BB_HARMONIA --bb item 1: %s: persistent buffer '%s' "
                "belongs to another user (%s)" % (op, name, a.pw_name)), err
        assert set(cluster.job_ids()) == before
        # its owner uses it; a name nobody has made yet is accepted (another
        # job may make it first)
        rc, j, _, err = sbatch_as(cluster, a, script("use_persistent name=%s" % name,
                                                     body="test -d $HARMONIA_BB && echo ok"))
        assert rc == 0, err
        assert cluster.wait_state(j, DONE) == "COMPLETED"
        rc, j, _, err = sbatch_as(cluster, b, script("use_persistent name=%sx" % name), "-H")
        assert rc == 0, err
        cluster.run("scancel", j)
    finally:
        rc, j, _, err = sbatch_as(cluster, a, script("destroy_persistent name=%s" % name))
        assert rc == 0, err
        assert cluster.wait_state(j, DONE) == "COMPLETED"
    wait_for(lambda: name not in persistent_names(cluster), what="%s destroyed" % name)


def test_persistent_owner_checked_at_stage_in_when_bbmgrd_was_down(cluster, need_bbmgrd):
    """bbmgrd unreachable at sbatch: the job is accepted (after a bounded wait)
    and the owner rule holds it at stage-in, a hold its user may release."""
    cluster.need_control()
    a, b = plain_user(cluster, 0), plain_user(cluster, 1)
    name = "down%d" % (int(time.time() * 1000) % 10**6)
    rc, j, _, err = sbatch_as(cluster, a, script("create_persistent name=%s capacity=1GiB"
                                                 % name))
    assert rc == 0, err
    assert cluster.wait_state(j, DONE) == "COMPLETED"
    cluster.control("bbmgrd-stop")
    try:
        rc, j, _, err = sbatch_as(cluster, b, script("use_persistent name=%s" % name,
                                                     body="echo ran"))
        assert rc == 0, err
    finally:
        cluster.control("bbmgrd-start")
    want = ("burst_buffer/harmonia: stage-in: persistent buffer '%s' belongs to another "
            "user (%s)" % (name, a.pw_name))
    wait_for(lambda: reason(cluster, j) == want, timeout=60, what="B's job held")
    assert cluster.job(j)["JobState"] == "PENDING"
    # B may retry (the answer is the same) and cancel
    p = run_as(cluster, b, "scontrol", "release", j)
    assert p.returncode == 0, p.stderr
    wait_for(lambda: reason(cluster, j) == want, timeout=60, what="B's job held again")
    run_as(cluster, b, "scancel", j)
    assert cluster.wait_state(j, DONE) == "CANCELLED"
    rc, d, _, err = sbatch_as(cluster, a, script("destroy_persistent name=%s" % name))
    assert rc == 0, err
    assert cluster.wait_state(d, DONE) == "COMPLETED"


# ------------------------------------------------------------------ #DW

def test_datawarp_lines_in_a_script_are_refused_with_the_line_to_write(cluster):
    u = plain_user(cluster)
    before = set(cluster.job_ids())
    for text, want in [
            ("#!/bin/bash\n#SBATCH -N1\n#DW jobdw type=scratch access_mode=striped "
             "capacity=10GiB\nhostname\n",
             "#BB_HARMONIA line 3: '#DW jobdw' is DataWarp's syntax, which "
             "burst_buffer/harmonia does not read (the job would run without it): write "
             "'#BB_HARMONIA jobbuffer capacity=10GiB' instead (see harmonia-directives(5))"),
            ("#!/bin/bash\n#BB_HARMONIA jobbuffer capacity=1GiB\n"
             "#DW stage_in source=/pfs/a destination=$DW_JOB_STRIPED/a type=file\ntrue\n",
             "#BB_HARMONIA line 3: '#DW stage_in' is DataWarp's syntax, which "
             "burst_buffer/harmonia does not read (the job would run without it): write "
             "'#BB_HARMONIA stage_in source=/pfs/a destination=$HARMONIA_BB/a type=file' "
             "instead (see harmonia-directives(5))")]:
        rc, j, _, err = sbatch_as(cluster, u, text)
        assert rc != 0, "accepted as job %s" % j
        assert err.splitlines() == ["sbatch: error: " + want, REFUSED], err
    assert set(cluster.job_ids()) == before
    # after the first command, #DW is a comment like any other
    rc, j, _, err = sbatch_as(cluster, u, "#!/bin/sh\necho ran\n#DW jobdw capacity=1GiB\n")
    assert rc == 0, err
    assert cluster.wait_state(j, DONE) == "COMPLETED"


# ------------------------------------------------------------------ held, released

def test_owner_releases_a_job_held_for_its_vanished_stage_in_source(cluster, need_bbmgrd):
    u = plain_user(cluster)
    wdir = user_workdir(cluster, u)
    src = os.path.join(wdir, "in")
    run_as(cluster, u, "sh", "-c", "mkdir %s && echo first > %s/data" % (src, src))
    rc, j, _, err = sbatch_as(cluster, u, script(
        "jobbuffer capacity=3GiB",
        "stage_in source=%s destination=$HARMONIA_BB/in type=directory" % src,
        body="cat $HARMONIA_BB/in/data"), "-H", wdir=wdir)
    assert rc == 0, err
    run_as(cluster, u, "rm", "-r", src)            # gone before its stage-in
    p = run_as(cluster, u, "scontrol", "release", j)
    assert p.returncode == 0, p.stderr
    wait_for(lambda: reason(cluster, j).startswith(
        "burst_buffer/harmonia: stage-in: stage-in failed: "), timeout=60,
        what="held for the failed stage-in (now %r)" % reason(cluster, j))
    assert cluster.job(j)["JobState"] == "PENDING"
    # the owner mends the source and retries
    run_as(cluster, u, "sh", "-c", "mkdir %s && echo second > %s/data" % (src, src))
    p = run_as(cluster, u, "scontrol", "release", j)
    assert p.returncode == 0, p.stdout + p.stderr
    assert cluster.wait_state(j, DONE, timeout=90) == "COMPLETED"
    with open(os.path.join(wdir, "slurm-%s.out" % j)) as f:
        assert f.read() == "second\n"


# ------------------------------------------------------------------ waiting for space

def test_job_waiting_for_space_start_unknown_and_cancel_clears_reason(cluster, need_bbmgrd):
    u = plain_user(cluster)
    no_jobs(cluster)
    # A holds 900 GiB of the 1 TiB pool with no time limit: when it ends is
    # not known
    rc, a, _, err = sbatch_as(cluster, u, script("jobbuffer capacity=900GiB", body="sleep 600"))
    assert rc == 0, err
    try:
        cluster.wait_state(a, {"RUNNING"})
        rc, b, _, err = sbatch_as(cluster, u, script("jobbuffer capacity=400GiB", body="true"))
        assert rc == 0, err
        wait_for(lambda: "waiting for" in reason(cluster, b), timeout=30,
                 what="B waiting for space")

        # no made-up start (it was A's end_time: a year away)
        def start():
            p = run_as(cluster, u, "squeue", "--start", "-h", "-j", b, "-o", "%S")
            return p.stdout.strip()
        wait_for(lambda: start() == "N/A", timeout=30,
                 what="B's expected start not known (squeue --start: %r)" % start())
        # cancelled, B no longer says what it was waiting for
        p = run_as(cluster, u, "scancel", b)
        assert p.returncode == 0, p.stderr
        assert cluster.wait_state(b, DONE) == "CANCELLED"
        wait_for(lambda: reason(cluster, b) == "None", timeout=30,
                 what="no reason left on the cancelled job (now %r)" % reason(cluster, b))
    finally:
        cluster.run("scancel", a, check=False)


def test_job_cancelled_during_its_stage_in_loses_that_reason(cluster, need_bbmgrd):
    from test_lifecycle2 import slow_mover
    u = plain_user(cluster)
    wdir = user_workdir(cluster, u)
    src = os.path.join(wdir, "big.bin")
    run_as(cluster, u, "dd", "if=/dev/zero", "of=" + src, "bs=1M", "count=8")
    with slow_mover(cluster, rate="0.5 MB/s"):
        rc, j, _, err = sbatch_as(cluster, u, script(
            "jobbuffer capacity=1GiB",
            "stage_in source=%s destination=$HARMONIA_BB/big.bin type=file" % src))
        assert rc == 0, err
        wait_for(lambda: reason(cluster, j) == "burst_buffer/harmonia: stage-in running",
                 timeout=60, what="stage-in running (now %r)" % reason(cluster, j))
        p = run_as(cluster, u, "scancel", j)
        assert p.returncode == 0, p.stderr
        assert cluster.wait_state(j, DONE) == "CANCELLED"
        wait_for(lambda: reason(cluster, j) == "None", timeout=30,
                 what="no reason left on the cancelled job (now %r)" % reason(cluster, j))


# ------------------------------------------------------------------ --bb items

def test_bb_item_errors_name_the_item(cluster):
    u = plain_user(cluster)
    rc, j, _, err = sbatch_as(
        cluster, u, "#!/bin/sh\ntrue\n", "--bb",
        "jobbuffer capacity=1GiB;stage_in source=/nonexistent/x destination=$HARMONIA_BB/x")
    assert rc != 0, "accepted as job %s" % j
    assert err.splitlines()[0] == (
        "sbatch: error: #BB_HARMONIA --bb item 2: stage_in: source '/nonexistent/x' does "
        "not exist (No such file or directory)"), err
    rc, j, _, err = sbatch_as(cluster, u, "#!/bin/sh\ntrue\n", "--bb",
                              "stage_out source=$HARMONIA_BB/x destination=/tmp/x")
    assert rc != 0, "accepted as job %s" % j
    assert err.splitlines()[0] == (
        "sbatch: error: #BB_HARMONIA --bb item 1: stage_out needs a buffer: add a jobbuffer "
        "or use_persistent directive"), err
    # a script's lines keep their numbers
    rc, j, _, err = sbatch_as(cluster, u, script(
        "jobbuffer capacity=1GiB",
        "stage_in source=/nonexistent/x destination=$HARMONIA_BB/x"))
    assert rc != 0
    assert err.splitlines()[0] == (
        "sbatch: error: #BB_HARMONIA line 4: stage_in: source '/nonexistent/x' does not "
        "exist (No such file or directory)"), err


# ------------------------------------------------------------------ bbmgr job after the end

def bbmgr_as(cluster, pw, *args):
    cmd = [os.path.join(BUILDDIR, "bbmgr", "bbmgr"), "--url", cluster.bbmgr_url]
    if cluster.munge_socket:
        cmd += ["--munge-socket", cluster.munge_socket]
    return run_as(cluster, pw, *(cmd + list(args)))


def test_bbmgr_job_right_after_the_end_shows_its_last_state(cluster, need_bbmgrd):
    u = plain_user(cluster)
    rc, j, _, err = sbatch_as(cluster, u, script("jobbuffer capacity=1GiB",
                                                 body="echo x > $HARMONIA_BB/f"))
    assert rc == 0, err
    assert cluster.wait_state(j, DONE) == "COMPLETED"
    # torn down: bbmgrd no longer lists it
    wait_for(lambda: j not in [x["id"] for x in cluster.bbmgr("jobs")["jobs"]],
             what="job %s torn down" % j)
    p = bbmgr_as(cluster, u, "job", j)
    assert p.returncode == 0, p.stderr
    last = json.loads(p.stdout)
    assert last["id"] == j and last["state"] == "ended", last
    assert last["allocation"] is None and last["ended"] > 0, last
    assert last["user"] == u.pw_name, last
    # another user is told it is not theirs, not that it does not exist
    p = bbmgr_as(cluster, plain_user(cluster, 1), "job", j)
    assert p.returncode != 0 and "HTTP 403" in p.stderr, p.stderr


# ------------------------------------------------------------------ honest displays

def test_bbstat_says_who_asked(cluster, need_bbmgrd):
    u = plain_user(cluster)
    p = run_as(cluster, u, "scontrol", "show", "bbstat")
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stdout.splitlines() if l.startswith("  caller: ")]
    assert len(lines) == 1, p.stdout
    # Slurm 22.05 does not tell the plugin who asks; later ones do
    who = lines[0].split(", through slurmctld (which asks bbmgrd as uid ")
    assert len(who) == 2 and who[1].rstrip(")").isdigit(), lines
    assert who[0] in ("  caller: %s (uid %d)" % (u.pw_name, u.pw_uid),
                      "  caller: not known (this Slurm does not tell the plugin who runs "
                      "scontrol)"), lines
    assert "admin=yes" not in p.stdout, p.stdout
