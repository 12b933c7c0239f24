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
