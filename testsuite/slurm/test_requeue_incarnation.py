# SPDX-License-Identifier: GPL-2.0-or-later
"""A requeued job keeps its Slurm job id: its second run is a new incarnation of the
same id in bbmgrd.  It must get a buffer of its own (nothing of the first run in it),
a working stage-in, and the teardown of the first run must not touch it; at the end
its buffer goes too (doc/mover.md, Incarnations).

The first run writes into its buffer (200000 files, so that removing it takes a
while) and stages a file out at its end (the requeue is an end for the burst
buffer: stage-out, then teardown); the mover is slowed so that the first run's
stage-out and teardown are still going on when the second run may start."""
import os
import subprocess

import pytest

from conftest import wait_for
from test_lifecycle2 import (DONE, api, buffer_dirs, ended, make_tree, out_of, sbatch_as,
                             slow_mover, user_dir, users)  # noqa: F401

pytestmark = pytest.mark.usefixtures("need_bbmgrd")

BODY = r"""n=${SLURM_RESTART_COUNT:-0}
echo "run $n"
ls -A "$HARMONIA_BB" | sort | sed 's/^/has /'
(cd "$HARMONIA_BB/in" && find . -type f | sort | xargs sha256sum) | sed 's/^/sum /'
mkdir -p "$HARMONIA_BB/out"
head -c 3000000 /dev/urandom > "$HARMONIA_BB/out/result-$n"
echo "run $n" > "$HARMONIA_BB/mark-$n"
if [ "$n" = 0 ]; then
    # many files: the teardown of this run's buffer takes a while
    mkdir "$HARMONIA_BB/many" && (cd "$HARMONIA_BB/many" && seq 1 200000 | xargs touch)
    echo waiting
    sleep 600
fi
echo finished
"""


def test_requeued_job_gets_a_new_buffer(cluster, users, tmp_path):
    pw = users[0]
    wdir = user_dir(cluster, pw, "requeue")
    src = os.path.join(wdir, "in")
    files = make_tree(src, owner=pw, big=200000)
    out = os.path.join(wdir, "out")
    text = "\n".join([
        "#!/bin/bash", "#SBATCH -N1", "#SBATCH --requeue",
        "#BB_HARMONIA jobbuffer capacity=1GiB",
        "#BB_HARMONIA stage_in source=%s destination=$HARMONIA_BB/in type=directory" % src,
        "#BB_HARMONIA stage_out source=$HARMONIA_BB/out destination=%s type=directory" % out,
        BODY])
    with slow_mover(cluster, rate="2 MB/s"):
        jobid = sbatch_as(cluster, pw, wdir, text + "\n")
        wait_for(lambda: "waiting" in out_of_or_empty(wdir, jobid), timeout=120,
                 what="first run")
        first = out_of(wdir, jobid)
        assert "has in" in first and "has mark-0" not in first, first
        cluster.run("scontrol", "requeue", jobid)
        wait_for(lambda: cluster.job(jobid)["JobState"] in ("PENDING", "REQUEUED"),
                 timeout=60, what="requeued")
        # Slurm delays a requeued job's start (the credential's lifetime): now
        wait_for(lambda: cluster.run("scontrol", "update", "jobid=%s" % jobid,
                                     "StartTime=now", check=False).returncode == 0,
                 timeout=30, what="start time reset")
        assert cluster.wait_state(jobid, DONE, timeout=240) == "COMPLETED", \
            out_of_or_empty(wdir, jobid)
        wait_for(lambda: cluster.job(jobid)["BurstBufferState"] == "complete", timeout=120,
                 what="second stage-out")
    second = out_of(wdir, jobid)
    lines = second.splitlines()
    assert "run 1" in lines, second
    # the second run's buffer held its stage-in and nothing of the first run
    assert [ln for ln in lines if ln.startswith("has ")] == ["has in"], second
    sums = sorted(ln.split()[2][2:] for ln in lines if ln.startswith("sum "))
    assert sums == sorted(files), second
    assert lines[-1] == "finished"
    # its stage-out is there (the first run's, with its own name, may be too)
    assert os.path.exists(os.path.join(out, "result-1"))
    wait_for(lambda: ended(cluster, jobid), timeout=60, what="teardown")
    wait_for(lambda: not buffer_dirs(cluster, jobid), timeout=60, what="buffer removed")
    # nothing left in the trash once the teardowns are over
    for m in cluster.bb_mounts():
        trash = os.path.join(m, ".harmonia-trash")
        wait_for(lambda: not os.path.isdir(trash) or not os.listdir(trash), timeout=60,
                 what="trash of %s emptied" % m, report=lambda: trash_report(cluster, trash))
    code, js = api(cluster, "GET", "/v1/pools")
    assert code == 200


def trash_report(cluster, trash):
    """What is left in a trash directory (two levels) and the end of bbmgrd's log."""
    left = []
    for name in sorted(os.listdir(trash)):
        p = os.path.join(trash, name)
        st = os.lstat(p)
        inner = sorted(os.listdir(p))[:10] if os.path.isdir(p) and st.st_mode & 0o500 else "-"
        left.append("%s mode %o uid %d: %s" % (name, st.st_mode & 0o7777, st.st_uid, inner))
    with open(cluster.bbmgrd_log_path()) as f:
        log = "\n".join(l for l in f.read().splitlines() if "GET /v1/" not in l and "decision:" not in l)[-6000:]
    db = os.path.join(os.path.dirname(os.path.dirname(cluster.conf)), "bbmgr", "state.db")
    try:
        rows = subprocess.run(["sqlite3", db, "select * from kept_dirs; select id,kind,state,"
                               "durable,source,held,message from transfers;"],
                              capture_output=True, text=True).stdout
    except OSError as e:
        rows = "(sqlite3: %s)" % e
    return "left: %s\ndb:\n%s\nbbmgrd log:\n%s" % ("; ".join(left), rows, log)


def out_of_or_empty(wdir, jobid):
    try:
        return out_of(wdir, jobid)
    except OSError:
        return ""
