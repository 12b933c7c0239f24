# SPDX-License-Identifier: GPL-2.0-or-later
"""capacity.over: hold, as an ordinary user (hmtest1) meets it with sbatch and
scontrol: a job that wrote more than its buffer's capacity asks for an I/O phase
(harmonia-io); bbmgrd holds the phase instead of refusing it, the user sees why
in `scontrol show job` (the job's reason) and `scontrol show bbstat`, and once
the excess is deleted the held phase is granted and the job completes.
doc/security.md, Capacity."""
import os

from conftest import (BUILDDIR, bbmgrd_with, plain_user, run_as, sbatch_as, script,
                      user_workdir, wait_for)

DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}
MiB = 1 << 20


def test_over_capacity_job_is_held_with_its_reason(cluster, need_bbmgrd):
    u = plain_user(cluster)
    hio = os.path.join(BUILDDIR, "src", "lib", "libharmonia", "harmonia-io")
    with bbmgrd_with(cluster, "capacity", ["over: hold"], "sets capacity.over"):
        work = user_workdir(cluster, u)
        rc, j, _, err = sbatch_as(cluster, u, script(
            "jobbuffer capacity=4MiB",
            body='dd if=/dev/zero of="$HARMONIA_BB/big" bs=1M count=12 conv=fsync '
                 'status=none\n'
                 # the user frees the space from the job's node: the buffer may
                 # be on another host than the one the test runs on (Docker)
                 '(for i in $(seq 1200); do [ -e rmnow ] && break; sleep 0.1; done; '
                 'rm -f "$HARMONIA_BB/big") &\n'
                 'for i in $(seq 1200); do [ -e go ] && break; sleep 0.1; done\n'
                 '%s -q -s 1MiB -- true && echo granted\nwait' % hio), wdir=work)
        assert rc == 0, err
        try:
            cluster.wait_state(j, {"RUNNING"})
            # its buffer measured over its capacity: then the job asks for a phase
            usage = wait_for(lambda: (lambda x: x if x and x["over"] else None)(
                cluster.bbmgr("job", j).get("usage")), timeout=60,
                what="job %s measured over its capacity" % j)
            assert usage["used"] >= 12 * MiB and usage["capacity"] == 4 * MiB, usage
            run_as(cluster, u, "touch", os.path.join(work, "go"))

            # the user sees why: the job's reason, and bbstat
            def held_reason():
                p = run_as(cluster, u, "scontrol", "show", "job", j)
                return p.stdout if "(capacity.over:_hold)" in p.stdout else None
            text = wait_for(held_reason, timeout=60, what="job %s's reason to say it is held" % j)
            # (scontrol shows the blanks of a reason as underscores)
            used = cluster.bbmgr("job", j)["usage"]["used"]
            assert ("Reason=burst_buffer/harmonia: job %s: its buffer holds %d bytes, over its "
                    "capacity of %d bytes: its I/O phases wait, held, until it frees space"
                    % (j, used, 4 * MiB)).replace(" ", "_") in text, text
            assert "JobState=RUNNING" in text, text
            stat = run_as(cluster, u, "scontrol", "show", "bbstat").stdout
            assert "  job %s: hold: job %s: its buffer holds" % (j, j) in stat, stat
            assert cluster.bbmgr("job", j)["phase"]["hold"], cluster.bbmgr("job", j)
            # the user deletes the excess: the held phase is granted, the job ends
            run_as(cluster, u, "touch", os.path.join(work, "rmnow"))
            assert cluster.wait_state(j, DONE, timeout=120) == "COMPLETED", cluster.job(j)
            with open(os.path.join(work, "slurm-%s.out" % j)) as f:
                assert f.read().strip().endswith("granted")
        finally:
            cluster.run("scancel", j, check=False)
            cluster.wait_state(j, DONE, timeout=120)
