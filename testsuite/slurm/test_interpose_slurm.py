# SPDX-License-Identifier: GPL-2.0-or-later
"""The interposer under real Slurm, as a user meets it: an unmodified shell loop
of sleep and dd into $HARMONIA_BB, submitted with '#BB_HARMONIA iohints ...
interpose=yes', gets libharmonia-preload.so from the plugin; bbmgrd grants one
phase per dd, and 'scontrol show burst' and 'bbmgr jobs', run by the user while
the job still runs, show the w_iter it learned (close to the loop's true one)
and how many phases it saw.  What it learned is the user's next job of the
same name's iohints (job_submit/harmonia, source=learned)."""
import os
import re
import time

import pytest

from conftest import (BUILDDIR, plain_user, run_as, sbatch_as, script, user_workdir,
                      wait_for)

DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}
PERIODS = 5
SLEEP = 1.5          # seconds of "compute" before each dd
HINT_W_ITER = 10     # what the job claims: learned must come from measurement


def burst_line(cluster, pw, jobid):
    """The line of 'scontrol show burst' (run as pw) listing the job, or None."""
    out = run_as(cluster, pw, "scontrol", "show", "burst").stdout
    for line in out.splitlines():
        if line.strip().startswith("JobID=%s " % jobid):
            return line
    return None


def learned_hints(cluster, u, name, wdir, directives, prefix, true_w):
    """A held job of that name with these directives gets the learned iohints
    (after 'iohints ' + prefix), w_iter within 20% of true_w."""
    rc, j, _, err = sbatch_as(cluster, u, script("jobbuffer capacity=1GiB", *directives,
                                                 body="true"), "-J", name, "-H", wdir=wdir)
    assert rc == 0, err
    try:
        hints = cluster.job(j)["BurstBuffer"].splitlines()[1]
        m = re.match(r"#BB_HARMONIA iohints %sw_iter=([0-9.]+)s io_volume=8MiB .*"
                     r"source=learned$" % prefix, hints)
        assert m and abs(float(m.group(1)) - true_w) <= 0.2 * true_w, (hints, true_w)
    finally:
        run_as(cluster, u, "scancel", j)


def test_dd_loop_learned_and_shown_under_slurm(cluster, need_bbmgrd):
    u = plain_user(cluster)
    wdir = user_workdir(cluster, u)
    starts, release = os.path.join(wdir, "starts"), os.path.join(wdir, "release")
    body = ("for i in $(seq %d); do sleep %s; date +%%s.%%N >> %s; "
            "dd if=/dev/zero of=\"$HARMONIA_BB/f$i\" bs=1M count=8 status=none || exit 9; "
            "done\n"
            "n=0; while [ ! -e %s ] && [ $n -lt 600 ]; do n=$((n+1)); sleep 0.1; done\n"
            "echo \"preload=$LD_PRELOAD\"" % (PERIODS, SLEEP, starts, release))
    name = "ddloop%d" % (int(time.time() * 1000) % 10**6)
    rc, j, _, err = sbatch_as(cluster, u, script(
        "jobbuffer capacity=1GiB",
        "iohints w_iter=%ds io_volume=8MiB interpose=yes" % HINT_W_ITER,
        body=body), "-J", name, wdir=wdir)
    assert rc == 0, err
    try:
        # what the user sees in Slurm while the job runs: every phase counted
        want = "LearnedPhases=%d" % PERIODS
        seen = []

        def shown():
            seen[:] = [burst_line(cluster, u, j)]
            return seen[0] if seen[0] and want in seen[0] else None
        try:
            line = wait_for(shown, timeout=90,
                            what="%s on the job's line of scontrol show burst" % want)
        except AssertionError as e:
            burst = run_as(cluster, u, "scontrol", "show", "burst").stdout
            raise AssertionError("%s; last line: %r\njob: %s\nscontrol show burst:\n%s"
                                 % (e, seen[:1], cluster.job(j), burst)) from None
        assert cluster.job(j)["JobState"] == "RUNNING", "seen only after the job ran"
        with open(starts) as f:
            t = [float(x) for x in f.read().split()]
        assert len(t) == PERIODS, t
        true_w = (t[-1] - t[0]) / (PERIODS - 1)
        m = re.search(r" Pool=\S+ LearnedWIter=([0-9.]+)s LearnedVolume=8MiB "
                      r"LearnedPhases=%d " % PERIODS, line)
        assert m, line
        shown = float(m.group(1))
        assert abs(shown - true_w) <= 0.2 * true_w, (line, true_w)
        assert abs(shown - HINT_W_ITER) > 0.5 * HINT_W_ITER, line
        # bbmgr jobs, as the user runs it against the jobs' URL
        url = cluster.harmonia_conf.get("joburl") or cluster.bbmgr_url
        cmd = [os.path.join(BUILDDIR, "bbmgr", "bbmgr"), "jobs", "--url", url]
        if cluster.munge_socket:
            cmd += ["--munge-socket", cluster.munge_socket]
        p = run_as(cluster, u, *cmd)
        assert p.returncode == 0, p.stderr
        row = [x for x in p.stdout.splitlines() if x.split()[:1] == [str(j)]]
        assert row, p.stdout
        m = re.search(r" %d w_iter=([0-9.]+)s volume=8.00MiB$" % PERIODS, row[0])
        assert row[0].split()[1] == u.pw_name and m, row
        w = float(m.group(1))
        assert abs(w - true_w) <= 0.2 * true_w, (row, true_w)
        # bbmgrd granted each phase: the loop's dd were gated, not bypassed
        job = cluster.bbmgr("job", str(j))
        assert job["phases_done"] == PERIODS and job["bytes"] == PERIODS * (8 << 20), job
        assert job["learned"]["phases"] == PERIODS, job
    finally:
        open(release, "w").close()
    assert cluster.wait_state(j, DONE) == "COMPLETED"
    with open(os.path.join(wdir, "slurm-%s.out" % j)) as f:
        out = f.read()
    assert "libharmonia-preload.so" in out and "cannot be preloaded" not in out, out
    # the user's next job of that name without iohints gets what was learned
    wait_for(lambda: cluster.bbmgr("job", str(j)).get("state") == "ended",
             what="job %s ended at bbmgrd" % j)
    learned_hints(cluster, u, name, wdir, (), "", true_w)
    # ... and so does one that asks for the interposer alone ("iohints interpose=yes")
    learned_hints(cluster, u, name, wdir, ("iohints interpose=yes",), "interpose=yes ", true_w)


def test_interposer_asked_for_without_hints(cluster, need_bbmgrd):
    """'#BB_HARMONIA iohints interpose=yes' alone: no hint to give, the job runs
    under the interposer all the same."""
    u = plain_user(cluster)
    wdir = user_workdir(cluster, u)
    name = "nohint%d" % (int(time.time() * 1000) % 10**6)
    rc, j, _, err = sbatch_as(cluster, u, script(
        "jobbuffer capacity=1GiB", "iohints interpose=yes",
        body="dd if=/dev/zero of=\"$HARMONIA_BB/f\" bs=1M count=2 status=none; "
             "echo \"preload=$LD_PRELOAD\""), "-J", name, wdir=wdir)
    assert rc == 0, err
    assert "#BB_HARMONIA iohints interpose=yes" in cluster.job(j)["BurstBuffer"]
    assert cluster.wait_state(j, DONE) == "COMPLETED"
    with open(os.path.join(wdir, "slurm-%s.out" % j)) as f:
        out = f.read()
    assert "preload=" in out and "libharmonia-preload.so" in out, out


SHM = "/dev/shm"


def shm_names(uid, jobid):
    """Names in /dev/shm that begin with the job's prefix harmonia-UID-JOBID."""
    pre = "harmonia-%d-%s" % (uid, jobid)
    return sorted(n for n in os.listdir(SHM) if n == pre or n.startswith(pre + "."))


def job_files(uid, jobid, start):
    """The job's own shared files: harmonia-UID-JOBID.START.{phase,learn}, regular
    files of that uid (what the interposer and libharmonia create)."""
    out = []
    for n in shm_names(uid, jobid):
        m = re.match(r"harmonia-%d-%s\.%s\.(phase|learn)$" % (uid, jobid, start), n)
        st = os.lstat(os.path.join(SHM, n))
        if m and st.st_uid == uid and (st.st_mode & 0o170000) == 0o100000:
            out.append(n)
    return out


def test_shared_files_removed_at_job_end(cluster, need_bbmgrd):
    """The files a job's processes share in /dev/shm (harmonia-UID-JOBID.START.phase
    and .learn) are gone once the job is COMPLETED: the node's epilog removes them.
    It removes nothing else: not another running job's, not a file of another
    user under a matching name, not a directory, not a name that only begins the
    same way, not another run's of the same job id (another cluster's), and a
    symlink the user planted under the job's name is not followed (what it points
    to is kept)."""
    u, other = plain_user(cluster), plain_user(cluster, 1)
    wdir = user_workdir(cluster, u)

    def job(tag):
        ready, release = os.path.join(wdir, tag + ".ready"), os.path.join(wdir, tag + ".rel")
        body = ("for i in 1 2; do dd if=/dev/zero of=\"$HARMONIA_BB/f$i\" bs=1M count=2 "
                "status=none || exit 9; sleep 0.6; done\n"
                "{ echo \"$HARMONIA_JOB_START\"; ls /dev/shm | "
                "grep \"^harmonia-$(id -u)-$SLURM_JOB_ID[.]\"; } > %s.tmp; mv %s.tmp %s\n"
                "n=0; while [ ! -e %s ] && [ $n -lt 600 ]; do n=$((n+1)); sleep 0.1; done\n"
                % (ready, ready, ready, release))
        rc, j, _, err = sbatch_as(cluster, u, script(
            "jobbuffer capacity=1GiB", "iohints interpose=yes", body=body), wdir=wdir)
        assert rc == 0, err
        return j, ready, release

    a, a_ready, a_rel = job("a")
    b, b_ready, b_rel = job("b")
    start = {}
    planted = []
    try:
        for j, ready in ((a, a_ready), (b, b_ready)):
            wait_for(lambda: os.path.exists(ready), timeout=90,
                     what="job %s did its I/O" % j)
            with open(ready) as f:
                seen_by_job = f.read().split()
            assert len(seen_by_job) > 1, "job %s left no shared file in /dev/shm: %s" % (
                j, seen_by_job)
            start[j] = seen_by_job[0]
            if not job_files(u.pw_uid, j, start[j]):
                pytest.skip("the nodes' /dev/shm is not this host's (job %s saw %s)"
                            % (j, seen_by_job))
        a_own = job_files(u.pw_uid, a, start[a])
        # what the user (and another user) left in /dev/shm under A's names
        victim = os.path.join(wdir, "victim")
        with open(victim, "w") as f:
            f.write("keep me\n")
        os.chown(victim, u.pw_uid, u.pw_gid)

        def plant(name, owner, kind):
            p = os.path.join(SHM, name)
            if kind == "symlink":
                os.symlink(victim, p)
            elif kind == "dir":
                os.mkdir(p)
            else:
                with open(p, "w") as f:
                    f.write("x")
            os.lchown(p, owner.pw_uid, owner.pw_gid)
            planted.append(p)
        pre = "harmonia-%d-%s" % (u.pw_uid, a)
        plant(pre + ".learn", u, "symlink")             # matches: a symlink
        plant("%s.%s.phase.old" % (pre, start[a]), u, "file")  # does not match
        plant("%s.%s.phase" % (pre, int(start[a]) - 7), u, "file")  # another run
        plant(pre + "0.%s.phase" % start[a], u, "file")  # another job id
        plant("harmonia-%d-%s.%s.phase" % (other.pw_uid, a, start[a]), other, "file")
        open(a_rel, "w").close()
        assert cluster.wait_state(a, DONE) == "COMPLETED"
        left = [n for n in a_own if os.path.lexists(os.path.join(SHM, n))]
        assert not left, "job %s is COMPLETED, its files remain: %s" % (a, left)
        assert not job_files(u.pw_uid, a, start[a]), shm_names(u.pw_uid, a)
        for p in planted:
            assert os.path.lexists(p), "%s (not the job's file) was removed" % p
        with open(victim) as f:
            assert f.read() == "keep me\n"
        assert os.path.islink(os.path.join(SHM, pre + ".learn"))
        # the other job still runs: its files are there
        assert cluster.job(b)["JobState"] == "RUNNING"
        assert job_files(u.pw_uid, b, start[b]), shm_names(u.pw_uid, b)
        # a job's own name, but a symlink, a directory or another user's file
        pre = "harmonia-%d-%s.%s" % (u.pw_uid, b, start[b])
        for n in job_files(u.pw_uid, b, start[b]):
            os.unlink(os.path.join(SHM, n))
        plant(pre + ".learn", u, "symlink")
        plant(pre + ".phase", other, "file")
        plant("harmonia-%d-%s.learn" % (u.pw_uid, b), u, "dir")
        open(b_rel, "w").close()
        assert cluster.wait_state(b, DONE) == "COMPLETED"
        for p in planted:
            assert os.path.lexists(p), "%s (not the job's file) was removed" % p
        with open(victim) as f:
            assert f.read() == "keep me\n"
    finally:
        for p in (a_rel, b_rel):
            open(p, "w").close()
        for j in (a, b):        # what an old build's run left behind
            try:
                cluster.wait_state(j, DONE)
            except AssertionError:
                continue
            if j in start:
                planted += [os.path.join(SHM, n) for n in job_files(u.pw_uid, j, start[j])]
        for p in planted:
            if os.path.isdir(p) and not os.path.islink(p):
                os.rmdir(p)
            elif os.path.lexists(p):
                os.unlink(p)
